"""A queued player who follows the queue nowhere is withdrawn after the grace (GONE), and a withdrawal that fails is
tried again, never dropped in silence (`Matchmaker.departed`). The queue lives in the real repository over the
in-memory event store (the one that passes the store's contract suite); attendance is the in-memory one, made to
fail where the test says."""

from __future__ import annotations

import asyncio

import pytest
import structlog

from paiju.lobby import matchmaking as mm
from paiju.lobby import queue as qu
from paiju.lobby import table as tb
from paiju.lobby.attendance import LocalAttendance
from paiju.lobby.service import new_memberships, new_parties, new_queue, new_tables
from paiju.platform.errors import Unavailable
from paiju.platform.store.memory import MemoryEventStore

from ..support.waiting import wait_until


class FailingAttendance(LocalAttendance):
    """Attendance whose `here` raises each of ``failures`` in turn, then answers."""

    def __init__(self, failures: list[BaseException]) -> None:
        super().__init__()
        self.failures = list(failures)
        self.asked = 0

    async def here(self, table_id: str, player: str) -> bool:
        self.asked += 1
        if self.failures:
            raise self.failures.pop(0)
        return await super().here(table_id, player)


def matchmaker(attendance: LocalAttendance) -> mm.Matchmaker:
    store = MemoryEventStore()
    parties = mm.Parties(new_parties(store), new_memberships(store))
    return mm.Matchmaker(
        new_queue(store), new_tables(store), parties, mm.Ratings(), lambda: 0, attendance=attendance, grace_seconds=0
    )


async def queued(maker: mm.Matchmaker, player: str) -> bool:
    return (await maker.history.load()).state.entry_of(player) is not None


async def enqueue(maker: mm.Matchmaker, player: str) -> None:
    entry = qu.Enqueue(f"entry-{player}", "zlj", tb.Mode.CASUAL, (qu.QueuedPlayer(player, "Ann", 2500),), "", 0, 100)
    await maker.history.act(entry, f"c-{player}", player)


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("an answer nobody foresaw"), Unavailable("NATS is out of reach"), TimeoutError()],
    ids=["unforeseen", "unavailable", "timeout"],
)
def test_a_withdrawal_that_fails_is_tried_again_until_the_entry_goes(
    failure: BaseException, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mm, "GONE_RETRY_SECONDS", 0.01)

    async def scenario() -> None:
        attendance = FailingAttendance([failure, failure])
        maker = matchmaker(attendance)
        await enqueue(maker, "ann")
        with structlog.testing.capture_logs() as logs:
            maker.departed("ann")

            async def gone() -> bool:
                return not await queued(maker, "ann")

            await wait_until(gone, "Ann's entry withdrawn after two failures", every=0.01)
        await maker.close()
        assert attendance.asked == 3
        told = [
            e
            for e in logs
            if e["event"] in ("a withdrawal failed; it is tried again", "a withdrawal waits for a dependency")
        ]
        if isinstance(failure, RuntimeError):  # a fault of ours: each failure, with its traceback
            assert len(told) == 2, logs
            assert all(e["log_level"] == "error" and e.get("exc_info") for e in told)
        else:  # a dependency away: the first failure, its repeat within the minute held back
            assert len(told) == 1, logs
        outcome = (await maker.history.load()).state
        assert outcome.entry_of("ann") is None

    asyncio.run(scenario())


def test_a_player_following_the_queue_again_keeps_the_entry() -> None:
    async def scenario() -> None:
        attendance = FailingAttendance([])
        maker = matchmaker(attendance)
        await enqueue(maker, "ann")
        await attendance.arrive(mm.QUEUE_ATTENDANCE, "ann")  # back (through any replica) before the grace ends
        maker.departed("ann")
        await wait_until(lambda: attendance.asked >= 1, "the grace's check", every=0.01)
        await asyncio.sleep(0.05)  # room for a withdrawal that must not come
        assert await queued(maker, "ann")
        await maker.close()

    asyncio.run(scenario())
