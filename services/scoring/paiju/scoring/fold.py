"""What scoring keeps of one game, folded event by event: the rows its read models get (pure, no I/O).

A `GameFold` follows one game's envelopes in order and answers, for each, the rows to write:
- a `DealRow` when a deal ends: 砸六家 finishing order, caught, outcome, team and individual points (§7-§8);
  拖拉机 dealer, trump, level rank, attackers' points, the winning side, levels up and the levels after (§9);
- `LedgerRow`s: the 砸六家 team ledger and individual ledger, each deal's points and the running totals
  (D-ZLJ-7: both kept and shown separately); the 拖拉机 levels after each deal (levels over time);
- a `MatchRow` when the match ends: 砸六家 team and individual totals, 拖拉机 final levels; the difference
  (拖拉机: levels A − B, §10; 砸六家: team points A − B, paiju decision S-1) and both teams' victory points;
- `StatDelta`s, one per seated player, to add to the player's statistics;
- a `ShuffleRow` for each commitment and each revealed seed of a fair game (`paiju.rules.fair`), for the result
  sheets.

The seats' players come from the engine's `SeatsAssigned` events, so statistics follow people, not seats. Each
game's own events are folded by its module (`paiju.scoring.zlj`, `paiju.scoring.tractor`), found in the registry of
`paiju.scoring.games`; the rows are `paiju.scoring.rows`.
The fold's own state is plain data (`to_json` / `from_json`) so a projection can keep it beside its rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from paiju.rules.fair import SeedCommitted, SeedRevealed
from paiju.scoring.games import GAMES
from paiju.scoring.rows import DealRow, LedgerRow, MatchRow, Row, ShuffleRow, StatDelta, team, time_of
from paiju.v1 import engine_pb2

__all__ = [
    "DealRow",
    "GameFold",
    "LedgerRow",
    "MatchRow",
    "Row",
    "ShuffleRow",
    "StatDelta",
]


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
        """The fold as plain data: what `dataclasses.asdict` gives (the same keys in the same order, the lists
        copied), written out, since a projection writes a fold after each batch that touches its game."""
        return {
            "game_id": self.game_id,
            "game": self.game,
            "players": list(self.players),
            "deal": self.deal,
            "deal_started_at": self.deal_started_at,
            "deals_done": self.deals_done,
            "team_totals": list(self.team_totals),
            "individual_totals": list(self.individual_totals),
            "levels": list(self.levels),
            "dealer": self.dealer,
            "trump": self.trump,
            "level_rank": self.level_rank,
            "ended": self.ended,
        }

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
        if which is None or which not in GAMES:  # a game's events are the member named after it
            return []
        game = GAMES[which]
        self.game = game.name
        event = game.contract.events.decode(getattr(envelope, which))
        if isinstance(event, SeedCommitted):
            return [ShuffleRow(self.game_id, event.number, event.deal, commitment=event.commitment)]
        if isinstance(event, SeedRevealed):
            return [ShuffleRow(self.game_id, event.number, event.deal, server_seed=event.server_seed)]
        return game.fold(self, envelope, event)

    def start_deal(self, envelope: engine_pb2.Envelope, deal: int) -> None:
        self.deal = deal
        self.deal_started_at = time_of(envelope).isoformat()

    def player(self, seat: int) -> str:
        return self.players[seat] if seat < len(self.players) else ""

    def match_stats(self, winner: int | None) -> list[Row]:
        """What the end of the match adds to each seated player's statistics (``winner``: the winning team)."""
        return [
            StatDelta(player, self.game, matches=1, matches_won=int(winner is not None and team(seat) == winner))
            for seat, player in enumerate(self.players)
            if player
        ]
