"""Attendance: which players watch which tables, across every lobby replica (what `paiju.lobby.presence` asks).

A replica that serves a player's `WatchTable` streams marks the player present at the table in a NATS key-value
bucket (`KeyValueAttendance`, ``paiju-presence-<lobby stream>``), one key per table, player and replica
(``<table>.<player>.<replica>``), written again every `REFRESH_SECONDS` while the streams last and deleted when the
last one ends. The bucket's entries expire `PRESENCE_SECONDS` after they were last written, so the marks of a
replica that died go by themselves, and the server leaves an expiry marker that every replica hears
(`departures`): the player's seat is then covered after the grace time like anyone's who left, unless they came
back through another replica meanwhile. So a player's presence survives the replica they were connected to: their
client reconnects to another one, which marks them present again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import structlog

from paiju.platform.retry import report

PRESENCE_SECONDS = 15.0
"""How long a mark lasts unless written again (how long a dead replica's players count as present)."""
REFRESH_SECONDS = 5.0
"""How often a replica writes its marks again (three times a lease: one lost write costs nothing)."""
MARKER_SECONDS = 60.0
"""How long the bucket keeps the marker of an expired mark (the departures' notice)."""
OPEN_ATTEMPTS = 60
OPEN_RETRY_SECONDS = 0.5
log = structlog.get_logger("paiju.lobby.attendance")


class Attendance(Protocol):
    async def arrive(self, table_id: str, player: str) -> None:
        """A watch of ``player`` at ``table_id`` opened on this replica."""
        ...

    async def leave(self, table_id: str, player: str) -> bool:
        """A watch of ``player`` at ``table_id`` on this replica ended; whether it was their last one here."""
        ...

    async def here(self, table_id: str, player: str) -> bool:
        """Whether ``player`` watches ``table_id`` now, through any replica."""
        ...

    def departures(self) -> AsyncIterator[tuple[str, str]]:
        """The (table, player) whose mark expired on a replica that no longer renews it (it died)."""
        ...


class LocalAttendance:
    """Attendance in this process's memory (one lobby; tests)."""

    def __init__(self) -> None:
        self._present: dict[tuple[str, str], int] = {}

    async def arrive(self, table_id: str, player: str) -> None:
        key = (table_id, player)
        self._present[key] = self._present.get(key, 0) + 1

    async def leave(self, table_id: str, player: str) -> bool:
        key = (table_id, player)
        self._present[key] -= 1
        if self._present[key]:
            return False
        del self._present[key]
        return True

    async def here(self, table_id: str, player: str) -> bool:
        return bool(self._present.get((table_id, player)))

    async def departures(self) -> AsyncIterator[tuple[str, str]]:
        await asyncio.Event().wait()  # one process: nobody else's marks expire
        yield "", ""  # pragma: no cover - never reached


class KeyValueAttendance(LocalAttendance):
    """Attendance shared by every lobby replica in a key-value bucket (see the module)."""

    def __init__(self, kv: Any, replica: str, *, refresh: float = REFRESH_SECONDS) -> None:
        super().__init__()
        self._kv = kv
        self._replica = replica
        self._refresh = refresh
        self._handing_over = False

    @classmethod
    async def open(
        cls, client: Any, stream: str, replica: str, *, replicas: int = 1, presence: float = PRESENCE_SECONDS
    ) -> KeyValueAttendance:
        import nats.errors
        from nats.js.api import KeyValueConfig
        from nats.js.errors import BucketNotFoundError

        js = client.jetstream()
        bucket = f"paiju-presence-{stream}"
        for attempt in range(OPEN_ATTEMPTS):
            try:
                try:
                    kv = await js.key_value(bucket)
                except BucketNotFoundError:
                    kv = await js.create_key_value(
                        KeyValueConfig(
                            bucket=bucket,
                            history=1,
                            ttl=presence,
                            replicas=replicas,
                            limit_marker_ttl=MARKER_SECONDS,
                        )
                    )
                return cls(kv, replica, refresh=presence / 3)
            except (nats.errors.TimeoutError, nats.errors.NoRespondersError):
                if attempt == OPEN_ATTEMPTS - 1:  # a bucket just created on a cluster answers once it has a leader
                    raise
                await asyncio.sleep(OPEN_RETRY_SECONDS)
        raise AssertionError("unreachable")

    def _key(self, table_id: str, player: str) -> str:
        return f"{table_id}.{player}.{self._replica}"

    async def arrive(self, table_id: str, player: str) -> None:
        await super().arrive(table_id, player)
        await self._kv.put(self._key(table_id, player), b"")

    def hand_over(self) -> None:
        """This replica stops: its marks are left to expire, so that every other replica hears of each player who
        does not come back through one of them (a mark taken away on purpose would tell nobody)."""
        self._handing_over = True

    async def leave(self, table_id: str, player: str) -> bool:
        last = await super().leave(table_id, player)
        if last and not self._handing_over:
            with contextlib.suppress(Exception):  # NATS away: the mark expires by itself
                await self._kv.delete(self._key(table_id, player))
        return last

    async def here(self, table_id: str, player: str) -> bool:
        if await super().here(table_id, player):
            return True
        # the marks of this table and player on any replica (a consumer filtered to them, headers only)
        watcher = await self._kv.watch(f"{table_id}.{player}.*", ignore_deletes=True, meta_only=True)
        try:
            return await watcher.updates(timeout=5.0) is not None
        finally:
            with contextlib.suppress(Exception):
                await watcher.stop()

    async def keep(self, stopping: asyncio.Event) -> None:
        """Write this replica's marks again every refresh until ``stopping`` (then they are left to expire: see
        `hand_over`)."""
        while not stopping.is_set():
            for table_id, player in list(self._present):
                try:
                    await self._kv.put(self._key(table_id, player), b"")
                except Exception as e:  # NATS away: try again at the next refresh
                    report(log, "a presence mark could not be renewed", e, table=table_id)
                    break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=self._refresh)

    async def departures(self) -> AsyncIterator[tuple[str, str]]:
        """Every mark that expires from now on (the server's expiry marker; a mark taken away on purpose is a
        deletion, which the replica that took it away has handled)."""
        from nats.js.kv import KV_DEL, KV_PURGE

        watcher = await self._kv.watchall()
        last: dict[str, str | None] = {}  # each mark's last operation (a deletion's own expiry is no departure)
        try:
            started = False
            while True:
                entry = await watcher.updates(timeout=None)
                if entry is None:
                    started = True  # what the bucket held before: not news
                    continue
                if entry.operation != KV_PURGE:
                    last[entry.key] = entry.operation
                    continue
                if last.pop(entry.key, None) != KV_DEL and started:
                    table_id, player, *_ = entry.key.split(".")
                    yield table_id, player
        finally:
            with contextlib.suppress(Exception):
                await watcher.stop()


async def cover_departures(attendance: Attendance, departed: Callable[[str, str], None]) -> None:
    """Hand each departure to ``departed`` for as long as the lobby runs (a broken watch is opened again)."""
    while True:
        try:
            async for table_id, player in attendance.departures():
                departed(table_id, player)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            report(log, "the departures could not be watched; watching again", e)
            await asyncio.sleep(OPEN_RETRY_SECONDS * 4)
