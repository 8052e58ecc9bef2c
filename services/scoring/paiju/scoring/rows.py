"""The rows scoring's read models get from a game (`paiju.scoring.fold`): deals, ledger lines, matches and what they
add to a player's statistics (pure data)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from paiju.v1 import engine_pb2


@dataclass(frozen=True, slots=True)
class DealRow:
    game_id: str
    deal: int
    game: str
    players: tuple[str, ...]
    started_at: datetime | None
    ended_at: datetime
    order: tuple[int, ...] = ()
    caught: tuple[int, ...] = ()
    outcome: str = ""
    team_points: tuple[int, ...] = ()
    individual_points: tuple[int, ...] = ()
    dealer: int | None = None
    trump: str = ""
    level_rank: str = ""
    attackers_points: int | None = None
    winner: str = ""
    levels_up: int | None = None
    levels: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One line of a ledger: ``kind`` is ``team`` (who = team 0/1), ``individual`` (who = seat) or ``levels``
    (who = team 0/1; ``points`` the levels gained in the deal, ``total`` the level index after it)."""

    game_id: str
    deal: int
    kind: str
    who: int
    player: str
    points: int
    total: int


@dataclass(frozen=True, slots=True)
class MatchRow:
    game_id: str
    game: str
    players: tuple[str, ...]
    ended_at: datetime
    deals: int
    team_points: tuple[int, ...] = ()
    individual_points: tuple[int, ...] = ()
    levels: tuple[int, ...] = ()
    difference: int = 0
    vp: tuple[Decimal, Decimal] = (Decimal(15), Decimal(15))
    winner_team: int | None = None


@dataclass(frozen=True, slots=True)
class StatDelta:
    """What one deal or match adds to a player's statistics in one game."""

    player_id: str
    game: str
    deals: int = 0
    matches: int = 0
    matches_won: int = 0
    place: int = 0
    """The finishing place 1..6 of a 砸六家 deal (0: none)."""
    caught: int = 0
    individual_points: int = 0
    team_points: int = 0
    attacking_deals: int = 0
    attacking_deals_won: int = 0
    defending_deals: int = 0
    defending_deals_won: int = 0
    levels_gained: int = 0
    score: int = 0
    """Leaderboard score: 砸六家 individual + team points (D-ZLJ-7); 拖拉机 levels gained."""


@dataclass(frozen=True, slots=True)
class ShuffleRow:
    """A fair game's committed shuffle (`paiju.rules.fair`): its commitment when recorded, its seed when revealed."""

    game_id: str
    number: int
    deal: int
    commitment: bytes | None = None
    server_seed: bytes | None = None


Row = DealRow | LedgerRow | MatchRow | StatDelta | ShuffleRow


def team(seat: int) -> int:
    """0 for team A (even seats), 1 for team B (odd seats): the same in both games (砸六家 §1, 拖拉机 §1)."""
    return seat % 2


def time_of(envelope: engine_pb2.Envelope) -> datetime:
    """When the engine recorded an event."""
    return envelope.recorded_at.ToDatetime(tzinfo=UTC)
