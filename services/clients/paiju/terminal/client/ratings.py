"""After a rated match, each player's rating change, as the lobby's table tells it (docs/rules/ratings.md).

The match's end reaches the lobby (its table says the match is over, on the table's watch), scoring's rater rates it
from the lobby's stream a moment later, and the lobby, which follows scoring's rating ledgers, sends the table again
on the same watch with the rating changes in its last result (`MatchResult.ratings`: each seat's rating before and
after). The client waits on that stream for them (`PATIENCE` at most) and asks nothing; the bots' ratings are fixed
(D-RATE-8) and not shown. A match that is not rated (a table opened without a mode, a ranked match with bots: D-RATE-7,
D-RATE-9) says so, at once when the table's mode says it cannot be rated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from paiju.terminal.client.render import Seats
from paiju.v1 import lobby_events_pb2, lobby_pb2

PATIENCE = 6.0
"""Seconds the client waits for the table's ratings after the table said the match is over."""
MODES = {lobby_events_pb2.MATCH_MODE_CASUAL: "casual", lobby_events_pb2.MATCH_MODE_RANKED: "ranked"}
NOT_RATED = (
    "Ratings: this match has not been rated (yet): `paiju ratings history PLAYER GAME` shows a player's rated matches."
)


@dataclass(frozen=True)
class Change:
    """One person's rating change in a rated match."""

    seat: int
    before_mu: float
    before_sigma: float
    after_mu: float
    after_sigma: float

    @property
    def before(self) -> float:
        """The conservative estimate before (μ − 3σ, D-RATE-5)."""
        return self.before_mu - 3 * self.before_sigma

    @property
    def after(self) -> float:
        return self.after_mu - 3 * self.after_sigma


def change_lines(changes: Sequence[Change], seats: Seats, mode: str) -> list[str]:
    """The rating changes in words, one line per person (pure)."""
    lines = [f"Ratings ({mode}; shown as μ − 3σ, bots keep their fixed ratings):"]
    for c in sorted(changes, key=lambda c: c.seat):
        delta = c.after - c.before
        lines.append(
            f"  {seats.label(c.seat)}: {c.before:.2f} → {c.after:.2f} ({delta:+.2f}; μ {c.after_mu:.2f}, "
            f"σ {c.after_sigma:.2f})"
        )
    return lines


def may_be_rated(table: lobby_pb2.Table) -> bool:
    """Whether the table's last match can be rated at all: a person played it at a table opened as ranked or casual
    (D-RATE-9), and a ranked one had no bot (D-RATE-7)."""
    people = any(s.player_id and not s.bot for s in table.seats)
    if not people or table.mode not in MODES:
        return False
    return table.mode != lobby_events_pb2.MATCH_MODE_RANKED or not any(s.bot for s in table.seats)


def match_changes(table: lobby_pb2.Table, game_id: str) -> tuple[str, list[Change]] | None:
    """The rating changes of the people of ``table``'s match ``game_id`` and its mode's name, when the table's last
    result holds them (pure); ``None`` when it does not (not rated, or not yet)."""
    result = table.last_result
    if result.game_id != game_id or not result.HasField("ratings") or result.ratings.mode not in MODES:
        return None
    changes = [
        Change(s.seat, s.before.mu, s.before.sigma, s.after.mu, s.after.sigma)
        for s in result.ratings.seats
        if not s.bot
    ]
    return (MODES[result.ratings.mode], changes) if changes else None


def rating_report(table: lobby_pb2.Table | None, game_id: str, *, seats: Seats) -> list[str]:
    """What the client says of the ratings after the match ``game_id``, from the table as the lobby last sent it."""
    found = match_changes(table, game_id) if table is not None else None
    if found is None:
        return [NOT_RATED]
    mode, changes = found
    return change_lines(changes, seats, mode)
