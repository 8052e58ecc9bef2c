"""The matchmaker's loop (`Matchmaker.run`) never spins while a dependency is away: with NATS gone, a round of
forming and the wait for the queue's next change both fail at once (a publish fails at once when nothing is
buffered, and the repository's cache is reset), and each failure is followed by a backoff, doubling, before the
next try. Before, the loop went round again at once: one lobby logged some 12,000 warnings a second and grew by
20 MB a second until the machine ran out of memory."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import structlog

from paiju.lobby import matchmaking as mm
from paiju.lobby.attendance import LocalAttendance
from paiju.platform.errors import Unavailable
from paiju.platform.retry import Backoff

from ..support.waiting import wait_until
from .test_gone import matchmaker

FIRST = 0.05
"""The backoff's first wait in these tests (the service's is 0.2 s): 0.05, 0.1, 0.2 ... between tries."""


class QuickBackoff(Backoff):
    def __init__(self) -> None:
        super().__init__(FIRST, 1.0)


@pytest.mark.parametrize("failing", ["forming", "waiting"])
def test_a_failing_round_or_wait_is_tried_again_after_a_growing_backoff_not_at_once(
    failing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mm, "Backoff", QuickBackoff, raising=False)

    async def scenario() -> None:
        maker = matchmaker(LocalAttendance())
        rounds: list[float] = []
        formed = maker.form_once

        async def form_once() -> Any:
            rounds.append(time.monotonic())
            if failing == "forming":
                raise Unavailable("NATS is out of reach")
            return await formed()

        async def next_change(loaded: Any) -> Any:
            raise Unavailable("NATS is out of reach")  # at once, as a reset cache with NATS gone

        monkeypatch.setattr(maker, "form_once", form_once)
        monkeypatch.setattr(maker.history, "next_change", next_change)
        stopping = asyncio.Event()
        with structlog.testing.capture_logs() as logs:
            running = asyncio.create_task(maker.run(stopping))
            await wait_until(lambda: len(rounds) >= 4, "four rounds", every=0.01)
            stopping.set()
            await asyncio.wait_for(running, 5)
        await maker.close()
        # three backoffs between the four rounds, each twice the one before: a lower bound, whatever the machine
        waited = rounds[3] - rounds[0]
        assert waited >= FIRST * (1 + 2 + 4) * 0.99, f"four rounds in {waited:.3f} s: the loop did not back off"
        warnings = [e for e in logs if e["log_level"] == "warning"]
        assert len(warnings) == 1, warnings  # the first failure; its repeats within a minute held back
        assert all(not e.get("exc_info") for e in warnings), "a dependency away is a warning, not a traceback"

    asyncio.run(scenario())


def test_a_queue_that_cannot_be_read_when_the_loop_starts_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """NATS away as the lobby starts: the loop's first read of the queue fails, and is tried again after a backoff
    like any round, instead of ending the loop (which nothing restarts: the game's lease held, its matches never
    formed)."""
    monkeypatch.setattr(mm, "Backoff", QuickBackoff, raising=False)

    async def scenario() -> None:
        maker = matchmaker(LocalAttendance())
        reads: list[float] = []
        read = maker.history.load

        async def load(*args: Any, **kwargs: Any) -> Any:
            reads.append(time.monotonic())
            if len(reads) == 1:
                raise Unavailable("NATS is out of reach")
            return await read(*args, **kwargs)

        monkeypatch.setattr(maker.history, "load", load)
        stopping = asyncio.Event()
        running = asyncio.create_task(maker.run(stopping))
        await wait_until(lambda: len(reads) >= 2 or running.done(), "the queue read again", every=0.01)
        assert not running.done(), "the loop goes on"
        stopping.set()
        await asyncio.wait_for(running, 5)
        await maker.close()

    asyncio.run(scenario())
