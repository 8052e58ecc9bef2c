"""After a rated match, each player's rating change, from scoring's `RatingsService` (docs/rules/ratings.md).

The match's end reaches the lobby (its table says the match is over, on the table's watch), scoring's rater rates it
from the lobby's stream a moment later, and each person's rated matches (`GetRatingHistory`) then hold it: its
rating before and after. The client asks once the table says the match is over, and again after short pauses while
the rater has not reached it yet (`PATIENCE` in all); the bots' ratings are fixed (D-RATE-8) and not shown. A match
that is not rated (a table opened without a mode, a ranked match with bots: D-RATE-7, D-RATE-9) says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from paiju.sdk import RETRYABLE, backoff
from paiju.terminal.client.render import Seats
from paiju.v1 import lobby_events_pb2, lobby_pb2, ratings_pb2, ratings_pb2_grpc

PATIENCE = 6.0
"""Seconds the client waits for scoring to rate the match after the table said it is over."""
MODES = ((lobby_events_pb2.MATCH_MODE_CASUAL, "casual"), (lobby_events_pb2.MATCH_MODE_RANKED, "ranked"))


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


async def _history(stub: Any, token: str, player: str, game: str, mode: int) -> Any:
    request = ratings_pb2.GetRatingHistoryRequest(player_id=player, game=game, mode=mode, limit=5)  # type: ignore[arg-type]
    return await stub.GetRatingHistory(request, metadata=(("authorization", f"Bearer {token}"),), timeout=10)


async def match_changes(
    address: str, token: str, table: lobby_pb2.Table, game_id: str, game: str, *, patience: float = PATIENCE
) -> tuple[str, list[Change]] | None:
    """The rating changes of the people of ``table``'s match ``game_id`` and its mode's name, once scoring has rated
    it; ``None`` when it is not rated within ``patience`` seconds (or scoring cannot be reached)."""
    people = [(s.seat, s.player_id) for s in table.seats if s.player_id and not s.bot]
    if not people:
        return None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    failures = 0
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = ratings_pb2_grpc.RatingsServiceStub(channel)
        while True:
            for mode, name in MODES:
                changes: list[Change] = []
                for seat, player in people:
                    try:
                        history = await _history(stub, token, player, game, mode)
                    except grpc.aio.AioRpcError as e:
                        if e.code() not in RETRYABLE and e.code() != grpc.StatusCode.NOT_FOUND:
                            return None
                        break
                    rated = next((m for m in history.matches if m.game_id == game_id), None)
                    if rated is None:
                        break
                    changes.append(Change(seat, rated.before.mu, rated.before.sigma, rated.after.mu, rated.after.sigma))
                if len(changes) == len(people):
                    return name, changes
            failures += 1
            pause = backoff(failures, base=0.2, most=2.0)
            if loop.time() + pause > deadline:
                return None
            await asyncio.sleep(pause)


async def rating_report(
    address: str, token: str, table: lobby_pb2.Table, game_id: str, game: str, *, seats: Seats
) -> list[str]:
    """What the client says of the ratings after the match ``game_id`` at ``table``."""
    found = await match_changes(address, token, table, game_id, game)
    if found is None:
        return [
            "Ratings: this match has not been rated (yet): `paiju ratings history PLAYER GAME` shows a player's "
            "rated matches."
        ]
    mode, changes = found
    return change_lines(changes, seats, mode)
