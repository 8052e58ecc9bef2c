"""What scoring keeps of one game, folded event by event: the rows its read models get (pure, no I/O).

A `GameFold` follows one game's envelopes in order and answers, for each, the rows to write:
- a `DealRow` when a deal ends: 砸六家 finishing order, caught, outcome, team and individual points (§7-§8);
  拖拉机 dealer, trump, level rank, attackers' points, the winning side, levels up and the levels after (§9);
- `LedgerRow`s: the 砸六家 team ledger and individual ledger, each deal's points and the running totals
  (D-ZLJ-7: both kept and shown separately); the 拖拉机 levels after each deal (levels over time);
- a `MatchRow` when the match ends: 砸六家 team and individual totals, 拖拉机 final levels; the difference
  (拖拉机: levels A − B, §10; 砸六家: team points A − B, paiju decision S-1) and both teams' victory points;
- `StatDelta`s, one per seated player, to add to the player's statistics.

The seats' players come from the engine's `SeatsAssigned` events, so statistics follow people, not seats.
The fold's own state is plain data (`to_json` / `from_json`) so a projection can keep it beside its rows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from paiju.contract.games import TRACTOR_EVENTS, ZLJ_EVENTS
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.settlement import level_name
from paiju.rules.zlj import model as zlj_model
from paiju.scoring.victory import victory_points
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


Row = DealRow | LedgerRow | MatchRow | StatDelta


def _team(seat: int) -> int:
    """0 for team A (even seats), 1 for team B (odd seats): the same in both games (砸六家 §1, 拖拉机 §1)."""
    return seat % 2


TEAM_INDEX = {zlj_model.Team.A: 0, zlj_model.Team.B: 1}
"""Team A (seats 0, 2, 4) is first in every pair of team figures, team B (1, 3, 5) second (§1)."""


def _time(envelope: engine_pb2.Envelope) -> datetime:
    return envelope.recorded_at.ToDatetime(tzinfo=UTC)


@dataclass(slots=True)
class GameFold:
    """The running state of one game for scoring (plain data)."""

    game_id: str
    game: str = ""
    players: list[str] = field(default_factory=list)
    deal: int = 0
    deal_started_at: str = ""
    deals_done: int = 0
    team_totals: list[int] = field(default_factory=list)
    individual_totals: list[int] = field(default_factory=list)
    levels: list[int] = field(default_factory=list)
    dealer: int | None = None
    trump: str = ""
    level_rank: str = ""
    ended: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GameFold:
        return cls(**data)

    def apply(self, envelope: engine_pb2.Envelope) -> list[Row]:
        """The rows ``envelope`` (this game's next event) adds, the fold moved past it."""
        which = envelope.WhichOneof("payload")
        if which == "seats_assigned":
            for assignment in envelope.seats_assigned.seats:
                while len(self.players) <= assignment.seat:
                    self.players.append("")
                self.players[assignment.seat] = assignment.player_id
            return []
        if which == "zlj":
            self.game = "zlj"
            return self._zlj(envelope, ZLJ_EVENTS.decode(envelope.zlj))
        if which == "tractor":
            self.game = "tractor"
            return self._tractor(envelope, TRACTOR_EVENTS.decode(envelope.tractor))
        return []

    # --- 砸六家 -------------------------------------------------------------------------------------

    def _start_deal(self, envelope: engine_pb2.Envelope, deal: int) -> None:
        self.deal = deal
        self.deal_started_at = _time(envelope).isoformat()

    def _zlj(self, envelope: engine_pb2.Envelope, event: Any) -> list[Row]:
        if isinstance(event, zlj_model.MatchStarted):
            self.team_totals = [0, 0]
            self.individual_totals = [0] * 6
            return []
        if isinstance(event, zlj_model.HandsDealt):
            self._start_deal(envelope, event.deal)
            return []
        if isinstance(event, zlj_model.DealEnded):
            return self._zlj_deal(envelope, event.result)
        if isinstance(event, zlj_model.MatchEnded):
            return self._zlj_match(envelope, event)
        return []

    def _player(self, seat: int) -> str:
        return self.players[seat] if seat < len(self.players) else ""

    def _zlj_deal(self, envelope: engine_pb2.Envelope, result: zlj_model.DealResult) -> list[Row]:
        ended_at = _time(envelope)
        self.deals_done += 1
        rows: list[Row] = [
            DealRow(
                self.game_id,
                result.deal,
                "zlj",
                tuple(self.players),
                datetime.fromisoformat(self.deal_started_at) if self.deal_started_at else None,
                ended_at,
                order=result.order,
                caught=tuple(sorted(result.caught)),
                outcome=result.outcome.name,
                team_points=result.team_points,
                individual_points=result.individual,
            )
        ]
        for team, points in enumerate(result.team_points):
            self.team_totals[team] += points
            rows.append(LedgerRow(self.game_id, result.deal, "team", team, "", points, self.team_totals[team]))
        places = {seat: place for place, seat in enumerate(result.order, start=1)}
        for seat, points in enumerate(result.individual):
            self.individual_totals[seat] += points
            player = self._player(seat)
            rows.append(
                LedgerRow(self.game_id, result.deal, "individual", seat, player, points, self.individual_totals[seat])
            )
            if player:
                team_points = result.team_points[TEAM_INDEX[zlj_model.team_of(seat)]]
                rows.append(
                    StatDelta(
                        player,
                        "zlj",
                        deals=1,
                        place=places.get(seat, 0),
                        caught=int(seat in result.caught),
                        individual_points=points,
                        team_points=team_points,
                        score=points + team_points,
                    )
                )
        return rows

    def _zlj_match(self, envelope: engine_pb2.Envelope, event: zlj_model.MatchEnded) -> list[Row]:
        self.ended = True
        team_points = tuple(event.team_points)
        difference = team_points[0] - team_points[1]
        winner = None if difference == 0 else (0 if difference > 0 else 1)
        rows: list[Row] = [
            MatchRow(
                self.game_id,
                "zlj",
                tuple(self.players),
                _time(envelope),
                self.deals_done,
                team_points=team_points,
                individual_points=tuple(event.individual),
                difference=difference,
                vp=victory_points(difference),
                winner_team=winner,
            )
        ]
        rows += self._match_stats("zlj", winner)
        return rows

    def _match_stats(self, game: str, winner: int | None) -> list[Row]:
        return [
            StatDelta(player, game, matches=1, matches_won=int(winner is not None and _team(seat) == winner))
            for seat, player in enumerate(self.players)
            if player
        ]

    # --- 拖拉机 -------------------------------------------------------------------------------------

    def _tractor(self, envelope: engine_pb2.Envelope, event: Any) -> list[Row]:
        if isinstance(event, tractor_model.GameStarted):
            self.levels = [0, 0]
            return []
        if isinstance(event, tractor_model.HandsDealt):
            self._start_deal(envelope, event.deal)
            self.dealer, self.trump, self.level_rank = None, "", ""
            return []
        if isinstance(event, tractor_model.TrumpDeclared):
            self.dealer = event.dealer
            self.trump = event.trump.name if event.trump is not None else ""
            self.level_rank = level_name(event.level)
            return []
        if isinstance(event, tractor_model.DealSettled):
            return self._tractor_deal(envelope, event)
        if isinstance(event, tractor_model.GameEnded):
            return self._tractor_match(envelope, event)
        return []

    def _tractor_deal(self, envelope: engine_pb2.Envelope, event: tractor_model.DealSettled) -> list[Row]:
        self.deals_done += 1
        dealer_team = _team(self.dealer or 0)
        winning_team = dealer_team if event.winner == "defenders" else 1 - dealer_team
        before = list(self.levels) if self.levels else [0, 0]
        self.levels = list(event.levels)
        rows: list[Row] = [
            DealRow(
                self.game_id,
                self.deal,
                "tractor",
                tuple(self.players),
                datetime.fromisoformat(self.deal_started_at) if self.deal_started_at else None,
                _time(envelope),
                dealer=self.dealer,
                trump=self.trump,
                level_rank=self.level_rank,
                attackers_points=event.attackers_points,
                winner=event.winner,
                levels_up=event.levels_up,
                levels=tuple(event.levels),
            )
        ]
        for team in (0, 1):
            gained = self.levels[team] - before[team]
            rows.append(LedgerRow(self.game_id, self.deal, "levels", team, "", gained, self.levels[team]))
        for seat, player in enumerate(self.players):
            if not player:
                continue
            team = _team(seat)
            attacking = team != dealer_team
            won = team == winning_team
            gained = self.levels[team] - before[team]
            rows.append(
                StatDelta(
                    player,
                    "tractor",
                    deals=1,
                    attacking_deals=int(attacking),
                    attacking_deals_won=int(attacking and won),
                    defending_deals=int(not attacking),
                    defending_deals_won=int(not attacking and won),
                    levels_gained=gained,
                    score=gained,
                )
            )
        return rows

    def _tractor_match(self, envelope: engine_pb2.Envelope, event: tractor_model.GameEnded) -> list[Row]:
        self.ended = True
        levels = tuple(event.levels)
        difference = levels[0] - levels[1]
        rows: list[Row] = [
            MatchRow(
                self.game_id,
                "tractor",
                tuple(self.players),
                _time(envelope),
                self.deals_done,
                levels=levels,
                difference=difference,
                vp=victory_points(difference),
                winner_team=event.winner,
            )
        ]
        rows += self._match_stats("tractor", event.winner)
        return rows
