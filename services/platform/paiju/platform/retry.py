"""Loops that keep working while their dependencies come and go: a backoff between failed steps, and a report of
each failure that says what happened without filling the log (a dependency away for minutes fails a step every
few seconds: a warning a minute, not a traceback each, `paiju.platform.repeats`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from paiju.platform import repeats
from paiju.platform.edge import DEPENDENCY_GONE
from paiju.platform.errors import Reason, Refused


class Backoff:
    """Waits after failures in a row: ``first``, twice that, ... up to ``most``; back to ``first`` after a success.
    Capped low, so that a loop is working again within seconds of its dependency's return."""

    def __init__(self, first: float = 0.2, most: float = 5.0) -> None:
        self._first = first
        self._most = most
        self._next = first

    def succeeded(self) -> None:
        self._next = self._first

    def failed(self) -> float:
        """The wait after one more failure."""
        delay, self._next = self._next, min(self._most, self._next * 2)
        return delay

    async def wait(self, stop: asyncio.Event | None = None) -> None:
        """Wait after one more failure (less when ``stop`` is set meanwhile)."""
        delay = self.failed()
        if stop is None:
            await asyncio.sleep(delay)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)


def report(log: Any, message: str, error: BaseException, **facts: Any) -> None:
    """Log a failed step: a dependency's failure (NATS or PostgreSQL away) as a warning naming the error, its repeats
    held back (`paiju.platform.repeats`: about a line a minute while the dependency stays away); anything else — a
    fault of ours — with its traceback, every time."""
    if isinstance(error, DEPENDENCY_GONE):
        repeats.REPEATS.warn(log, message, error=repr(error), **facts)
    else:
        log.error(message, exc_info=error, **facts)


async def until_done(
    step: Callable[[], Awaitable[None]],
    log: Any,
    *,
    every: float,
    waiting: str,
    failed: str,
    refused: Callable[[Refused], None] = lambda error: None,
    **facts: Any,
) -> None:
    """Run ``step`` until it returns, trying again every ``every`` seconds after anything else: a dependency away
    (logged as ``waiting`` when it is a refusal for one, else through `report` as ``failed``) or a failure nobody
    foresaw (`report`: with its traceback). Only a refusal of the step itself ends it (``refused`` is told of it):
    work that must happen is never dropped in silence."""
    while True:
        try:
            await step()
            return
        except Refused as e:
            if e.reason is not Reason.DEPENDENCY_UNAVAILABLE:
                refused(e)
                return
            repeats.REPEATS.warn(log, waiting, error=e.message, **facts)
        except Exception as e:
            report(log, failed, e, **facts)
        await asyncio.sleep(every)
