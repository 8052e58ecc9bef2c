"""Attendance: which players watch which tables, across every lobby replica (what `paiju.lobby.presence` asks).

A replica that serves a player's `WatchTable` streams marks the player present at the table in a NATS key-value
bucket (`KeyValueAttendance`, ``paiju-presence-<lobby stream>``): one key per table, player and replica
(``<table>.<player>.<replica>``), written when the player's first stream there opens and deleted when the last one
ends. Beside its marks each replica keeps a heartbeat key (``r.<replica>``), written every `REFRESH_SECONDS` with a
time to live of `PRESENCE_SECONDS`: so the bucket is written once per arrival and departure and once per replica
every few seconds, however many players watch. When a replica dies its heartbeat expires, and the server leaves an
expiry marker that every replica hears (`departures`): each of the dead replica's players is then covered after the
grace time like anyone who left, unless they came back through another replica meanwhile, and its marks are taken
away. A mark counts only while its replica's heartbeat lives. So a player's presence survives the replica they were
connected to: their client reconnects to another one, which marks them present again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import structlog

from paiju.platform.nats import key_value, once_led
from paiju.platform.retry import report

PRESENCE_SECONDS = 15.0
"""How long a replica's heartbeat lives unless written again (how long a dead replica's players count as present)."""
REFRESH_SECONDS = 5.0
"""How often a replica writes its heartbeat (three times a lease: one lost write costs nothing)."""
MARKER_SECONDS = 60.0
"""How long the bucket keeps the marker of an expired heartbeat (the departures' notice)."""
DEPARTURES_RETRY_SECONDS = 2.0
"""How long a broken watch of the departures waits before it is opened again."""
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

    def __init__(self, kv: Any, js: Any, bucket: str, replica: str, *, presence: float = PRESENCE_SECONDS) -> None:
        super().__init__()
        self._kv = kv
        self._js = js
        self._bucket = bucket
        self._replica = replica
        self._presence = presence
        self._handing_over = False
        self._marks_written: dict[str, int] = {}
        """The revision of each mark of this replica's, as last written."""
        self._unmarked: dict[str, int | None] = {}
        """Marks whose delete failed, with the revision deleted (`_delete_owed`)."""

    @classmethod
    async def open(
        cls, client: Any, stream: str, replica: str, *, replicas: int = 1, presence: float = PRESENCE_SECONDS
    ) -> KeyValueAttendance:
        from nats.js.api import KeyValueConfig

        bucket = f"paiju-presence-{stream}"
        config = KeyValueConfig(bucket=bucket, history=1, replicas=replicas, limit_marker_ttl=MARKER_SECONDS)
        kv = await once_led(lambda: key_value(client, config))
        attendance = cls(kv, client.jetstream(), bucket, replica, presence=presence)
        await once_led(attendance.beat)
        return attendance

    def _key(self, table_id: str, player: str) -> str:
        return f"{table_id}.{player}.{self._replica}"

    async def beat(self) -> None:
        """Write this replica's heartbeat (it lives `PRESENCE_SECONDS`)."""
        await self._js.publish(f"$KV.{self._bucket}.r.{self._replica}", b"", msg_ttl=self._presence)

    async def arrive(self, table_id: str, player: str) -> None:
        """Counted here and marked in the bucket; when the mark cannot be written (NATS away) the arrival is not
        counted either, and raises: the watch fails, and its client opens it again."""
        await super().arrive(table_id, player)
        key = self._key(table_id, player)
        try:
            written = await self._kv.put(key, b"")
        except BaseException:
            await LocalAttendance.leave(self, table_id, player)
            raise
        self._marks_written[key] = written
        self._unmarked.pop(key, None)  # marked again: nothing owed (a delete under way fails its compare-and-set)

    def hand_over(self) -> None:
        """This replica stops: its heartbeat is left to expire, so that every other replica hears of each player who
        does not come back through one of them (a mark taken away on purpose would tell nobody)."""
        self._handing_over = True

    async def leave(self, table_id: str, player: str) -> bool:
        """The player's last watch here ended: their mark is deleted. A delete that fails (NATS away) is owed, and
        made at the next heartbeat that gets through (`keep`): this replica's heartbeat goes on living, and a mark
        left behind would make the player present to every other replica for as long as this one runs."""
        last = await super().leave(table_id, player)
        if last:
            key = self._key(table_id, player)
            written = self._marks_written.pop(key, None)
            if not self._handing_over:
                try:
                    await self._kv.delete(key)
                except Exception as e:
                    self._unmarked[key] = written
                    report(log, "a mark could not be deleted; deleting it at the next heartbeat", e, key=key)
        return last

    async def here(self, table_id: str, player: str) -> bool:
        """Present through this replica (its own count: a mark of its own whose delete is owed does not count), or
        marked by another replica whose heartbeat lives."""
        if await super().here(table_id, player):
            return True
        for _, _, replica in await self._marks(f"{table_id}.{player}.*"):
            if replica != self._replica and await self._alive(replica):
                return True
        return False

    async def _delete_owed(self) -> None:
        """Delete the marks whose delete failed, each only if not written again since (compare-and-set)."""
        from nats.js.errors import KeyWrongLastSequenceError

        for key, written in list(self._unmarked.items()):
            with contextlib.suppress(KeyWrongLastSequenceError):  # written again since: not ours to delete
                await self._kv.delete(key, last=written)
            if self._unmarked.get(key) == written:
                del self._unmarked[key]

    async def _alive(self, replica: str) -> bool:
        """Whether ``replica``'s heartbeat lives: its key's last message is a heartbeat, not the server's expiry
        marker (which the key-value client's ``get`` would show as an empty value)."""
        from nats.js.errors import NotFoundError

        try:
            last = await self._js.get_last_msg(f"KV_{self._bucket}", f"$KV.{self._bucket}.r.{replica}")
        except NotFoundError:
            return False
        headers = last.headers or {}
        return "Nats-Marker-Reason" not in headers and "KV-Operation" not in headers

    async def _marks(self, keys: str) -> list[list[str]]:
        """The marks matching ``keys`` (a key filter), each as [table, player, replica]."""
        watcher = await self._kv.watch(keys, ignore_deletes=True, meta_only=True)
        found = []
        try:
            while (entry := await watcher.updates(timeout=5.0)) is not None:
                found.append(entry.key.split("."))
            return found
        finally:
            with contextlib.suppress(Exception):
                await watcher.stop()

    async def keep(self, stopping: asyncio.Event) -> None:
        """Write this replica's heartbeat every refresh until ``stopping`` (then it is left to expire: see
        `hand_over`), and the deletes of marks owed since the last one (`leave`)."""
        while not stopping.is_set():
            try:
                await self.beat()
                await self._delete_owed()
            except Exception as e:  # NATS away: try again at the next refresh
                report(log, "the presence heartbeat could not be written", e, replica=self._replica)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=self._presence / 3)

    async def departures(self) -> AsyncIterator[tuple[str, str]]:
        """The players of every replica whose heartbeat expires from now on (the server's expiry marker), and, once
        at the start, those marked by replicas with no heartbeat left (they died while no replica listened); their
        marks are taken away."""
        from nats.js.kv import KV_PURGE

        watcher = await self._kv.watch("r.*")
        try:
            alive = set()
            while (entry := await watcher.updates(timeout=5.0)) is not None:
                if entry.operation is None:
                    alive.add(entry.key[2:])
            for table_id, player, replica in await self._marks("*.*.*"):
                if replica not in alive and replica != self._replica:
                    yield table_id, player
                    with contextlib.suppress(Exception):
                        await self._kv.delete(f"{table_id}.{player}.{replica}")
            while True:
                entry = await watcher.updates(timeout=None)
                if entry is None or entry.operation != KV_PURGE:
                    continue
                gone = entry.key[2:]
                for table_id, player, replica in await self._marks(f"*.*.{gone}"):
                    yield table_id, player
                    with contextlib.suppress(Exception):
                        await self._kv.delete(f"{table_id}.{player}.{replica}")
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
            await asyncio.sleep(DEPARTURES_RETRY_SECONDS)
