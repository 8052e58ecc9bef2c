"""Tables that expire: a table a player opened with no person seated and no match in play closes after the lobby's
idle time (`PAIJU_IDLE_TABLE_MINUTES`, 30), so that abandoned tables and floods of empty ones leave the listing.

Driven by events, not by a scan of every table: each table event the store's feed brings (from any replica) sets
the table's deadline to the event's arrival plus the idle time, in a heap. One task sleeps until the earliest
deadline (or until an earlier one is set); a table whose deadline has passed is read once — if it is still
expirable (`paiju.lobby.table.expirable`) and nothing has happened to it since, it is expired (`ExpireTable`, command
id ``expire:<table>:<version>``: every replica may try, the first append wins and the others find it done); a table
that is not expirable (someone sits, a match runs) is dropped until its next event sets a deadline again. A starting
lobby schedules the tables its read model holds as expirable, once, from the time of their last change. Tables an
operator opened, and tournament tables, never expire; a table the queue opened expires once its match has ended,
whoever sits at it (`paiju.lobby.table.expirable`).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections.abc import Callable
from typing import Any

import structlog

from paiju.lobby import table as tb
from paiju.platform import repeats
from paiju.platform.repository import Aggregates, CommandIdReused
from paiju.platform.store import Recorded

log = structlog.get_logger("paiju.lobby.expiry")


class TableExpiry:
    """The deadlines of the tables that may expire, and the task that expires them (see the module)."""

    def __init__(
        self, tables: Aggregates[tb.Table], idle_seconds: float, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._tables = tables
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._deadlines: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []
        self._wake = asyncio.Event()
        self.expired = 0
        """Tables this replica expired."""

    async def follow(self, store: Any) -> None:
        """Hear every table event of the lobby's stream (before the service answers its first call)."""
        if self.idle_seconds > 0:
            await store.follow(self._heard)

    def _heard(self, recorded: Recorded) -> None:
        if recorded.aggregate.startswith("table-"):
            self.schedule(recorded.aggregate, self._clock() + self.idle_seconds)

    def schedule(self, table_id: str, deadline: float) -> None:
        """Look at ``table_id`` at ``deadline`` (a later event moves it on)."""
        if self.idle_seconds <= 0:
            return
        known = self._deadlines.get(table_id)
        self._deadlines[table_id] = deadline
        if known is not None and known <= deadline:
            return  # its entry in the heap comes first, and is pushed on to this deadline then: one entry a table
        earliest = self._heap[0][0] if self._heap else None
        heapq.heappush(self._heap, (deadline, table_id))
        if earliest is None or deadline < earliest:
            self._wake.set()

    def pending(self) -> int:
        """Tables with a deadline."""
        return len(self._deadlines)

    async def run(self, stop: asyncio.Event) -> None:
        """Expire the tables whose deadline passes, until ``stop``."""
        if self.idle_seconds <= 0:
            return
        while not stop.is_set():
            now = self._clock()
            due: list[str] = []
            while self._heap and self._heap[0][0] <= now:
                deadline, table_id = heapq.heappop(self._heap)
                current = self._deadlines.get(table_id)
                if current is None or current < deadline:
                    continue  # handled, or an earlier entry of it was pushed since
                if current > deadline:  # moved on by a later event: wait for that
                    heapq.heappush(self._heap, (current, table_id))
                    continue
                del self._deadlines[table_id]
                due.append(table_id)
            for table_id in due:
                try:
                    await self._expire(table_id)
                except Exception as e:  # a failed expiry is tried again after a while, never lost in silence
                    repeats.REPEATS.warn(log, "could not expire a table", table=table_id, error=repr(e))
                    self.schedule(table_id, self._clock() + min(60.0, self.idle_seconds))
            wait = (self._heap[0][0] - self._clock()) if self._heap else None
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                waiting = asyncio.ensure_future(self._wake.wait())
                stopping = asyncio.ensure_future(stop.wait())
                try:
                    await asyncio.wait(
                        {waiting, stopping},
                        timeout=None if wait is None else max(0.0, wait),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:
                    waiting.cancel()
                    stopping.cancel()

    async def _expire(self, table_id: str) -> None:
        loaded = await self._tables.refresh(table_id)
        if not tb.expirable(loaded.state):
            return  # someone sits, or a match runs: its next event sets a deadline again
        idle = int(self.idle_seconds)
        try:
            await self._tables.act(table_id, tb.ExpireTable(idle), f"expire:{table_id}:{loaded.version}", "lobby")
        except CommandIdReused:
            return
        except tb.LobbyError:
            return  # it moved meanwhile (another replica expired it, or someone sat down)
        self.expired += 1
        log.info("table expired", table=table_id, idle_seconds=idle)
