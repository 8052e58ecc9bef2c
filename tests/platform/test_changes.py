"""`paiju.platform.store.Changes`: how every watcher waits for its aggregate's next change — woken by a change of
its own aggregate only, every waiter of it at once, by a timeout when it gives one, and nothing left behind by
waiters that leave (a stream that ends, a timeout), however many come and go."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from paiju.platform.store import Changes


def run(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(body())


def test_a_change_wakes_every_waiter_of_its_aggregate_and_no_other() -> None:
    async def body() -> None:
        changes = Changes()
        mine = [asyncio.create_task(changes.wait("g1")) for _ in range(50)]
        other = asyncio.create_task(changes.wait("g2"))
        await asyncio.sleep(0)
        assert changes.waiting("g1") == 50 and changes.waiting("g2") == 1
        changes.notify("g1")
        await asyncio.gather(*mine)
        assert not other.done()
        assert changes.waiting("g1") == 0 and changes.waiting("g2") == 1
        changes.notify_all()
        await other
        assert changes.waiting("g2") == 0

    run(body)


def test_a_wait_begun_after_a_change_waits_for_the_next() -> None:
    async def body() -> None:
        changes = Changes()
        changes.notify("g")  # nobody waits: nothing is remembered
        late = asyncio.create_task(changes.wait("g"))
        await asyncio.sleep(0.01)
        assert not late.done()
        changes.notify("g")
        await late

    run(body)


def test_waiters_that_leave_leave_nothing_behind() -> None:
    async def body() -> None:
        changes = Changes()
        watchers = [asyncio.create_task(changes.wait("idle")) for _ in range(200)]  # of an idle game, come and gone
        await asyncio.sleep(0)
        assert changes.waiting("idle") == 200
        for task in watchers:
            task.cancel()
        ended = await asyncio.gather(*watchers, return_exceptions=True)
        assert all(isinstance(e, asyncio.CancelledError) for e in ended)
        assert changes.waiting("idle") == 0
        await changes.wait("idle", 0.01)  # a timeout ends the wait, and takes the waiter out
        assert changes.waiting("idle") == 0
        staying = asyncio.create_task(changes.wait("idle"))
        leaving = asyncio.create_task(changes.wait("idle", 0.01))
        await leaving
        assert changes.waiting("idle") == 1  # the one that timed out is gone, the other still waits
        changes.notify("idle")
        await staying

    run(body)


def test_a_waiter_cancelled_once_woken_is_not_looked_for() -> None:
    async def body() -> None:
        changes = Changes()
        task = asyncio.create_task(changes.wait("g"))
        await asyncio.sleep(0)
        changes.notify("g")
        task.cancel()  # woken and cancelled before it ran: it ends either way, nothing is left
        with pytest.raises(asyncio.CancelledError):
            await task
        assert changes.waiting("g") == 0

    run(body)


def test_the_waits_follow_the_running_loop() -> None:
    changes = Changes()

    async def once() -> None:
        waiting = asyncio.create_task(changes.wait("g"))
        await asyncio.sleep(0)
        changes.notify("g")
        await waiting

    asyncio.run(once())
    asyncio.run(once())  # a second loop (a test's next one): its waits are made on it, not on the first


def test_a_wait_closed_unfinished_takes_its_waiter_out() -> None:
    async def body() -> None:
        changes = Changes()
        waiting = changes.wait("g")
        waiting.send(None)  # suspended on its future, as a task would be
        assert changes.waiting("g") == 1
        waiting.close()  # dropped unfinished (GeneratorExit at the wait): no error, nothing left
        assert changes.waiting("g") == 0

    run(body)
