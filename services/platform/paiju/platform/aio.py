"""Small asyncio helpers the services share."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def unless(work: Awaitable[T], stop: asyncio.Event) -> T | None:
    """What ``work`` gives, or ``None`` when ``stop`` is set first (``work`` is then cancelled): how a stream waiting
    for the next change ends when its server begins shutting down."""
    if stop.is_set():
        if asyncio.iscoroutine(work):
            work.close()  # never started: nothing to cancel
        return None
    done_work = asyncio.ensure_future(work)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait((done_work, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (done_work, stopping):
            task.cancel()
    return done_work.result() if done_work in done else None
