"""The lobby's read model in PostgreSQL: one row per table, projected from the LOBBY stream.

Each event is applied in the same transaction as the projection's checkpoint (the last stream sequence
applied), so a restart resumes exactly where the last commit left off: an event is never applied twice and
never lost. Rows hold the API's `Table` message, so listing tables is one indexed query.
"""

from __future__ import annotations

import asyncio
import contextlib
from importlib import resources
from typing import Any

import asyncpg
import structlog

from paiju.engine.store import EventStore, Recorded
from paiju.lobby import table as tb
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.lobby.service import table_message
from paiju.postgres import load_migrations, migrate
from paiju.v1 import lobby_events_pb2, lobby_pb2

PROJECTION = "tables"
log = structlog.get_logger("paiju.lobby.readmodel")


async def migrate_lobby(pool: asyncpg.Pool[Any]) -> None:
    """Apply the lobby's migrations (at start; safe with several lobby replicas starting at once)."""
    await migrate(pool, "lobby", load_migrations(resources.files("paiju.lobby") / "migrations"))


async def checkpoint(database: Any, projection: str) -> int:
    """The last stream sequence ``projection`` applied (0: none yet)."""
    found = await database.fetchval("SELECT sequence FROM lobby_checkpoints WHERE projection = $1", projection)
    return int(found or 0)


async def advance(database: Any, projection: str, sequence: int) -> None:
    """Record that ``projection`` applied the stream up to ``sequence`` (inside the caller's transaction)."""
    await database.execute(
        """
        INSERT INTO lobby_checkpoints (projection, sequence) VALUES ($1, $2)
        ON CONFLICT (projection) DO UPDATE SET sequence = EXCLUDED.sequence
        """,
        projection,
        sequence,
    )


class TableReadModel:
    """Projects table events into ``lobby_tables`` and answers table lists."""

    def __init__(self, pool: asyncpg.Pool[Any], store: EventStore) -> None:
        self._pool = pool
        self._store = store
        self._states: dict[str, tb.Table] = {}
        self._wake = asyncio.Event()

    async def checkpoint(self) -> int:
        return await checkpoint(self._pool, PROJECTION)

    async def catch_up(self) -> int:
        """Apply every event stored after the checkpoint; returns how many were applied."""
        after = await self.checkpoint()
        events = await self._store.read_all(after_sequence=after)
        for recorded in events:
            await self._apply(recorded)
        return len(events)

    async def run(self, stop: asyncio.Event) -> None:
        """Keep the read model current until ``stop``: woken by the stream's feed, with a slow poll as a net."""
        await self._store.follow(lambda _: self._wake.set())
        while not stop.is_set():
            try:
                await self.catch_up()
            except Exception:  # a failed batch is retried from the checkpoint; nothing half-applied stays
                log.exception("table projection failed; retrying")
                await asyncio.sleep(1.0)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=2.0)

    async def _state_before(self, recorded: Recorded) -> tb.Table:
        """The table as it stood before ``recorded`` (from memory, or read from the store after a restart)."""
        state = self._states.get(recorded.aggregate)
        if state is not None:
            return state
        table = tb.Table()
        for earlier in await self._store.load(recorded.aggregate):
            if earlier.sequence >= recorded.sequence:
                break
            table = tb.evolve(table, LOBBY_EVENTS.decode(lobby_events_pb2.LobbyEnvelope.FromString(earlier.data).event))
        return table

    async def _apply(self, recorded: Recorded) -> None:
        if not recorded.aggregate.startswith("table-"):
            async with self._pool.acquire() as connection, connection.transaction():
                await advance(connection, PROJECTION, recorded.sequence)
            return
        before = await self._state_before(recorded)
        envelope = lobby_events_pb2.LobbyEnvelope.FromString(recorded.data)
        table = tb.evolve(before, LOBBY_EVENTS.decode(envelope.event))
        snapshot = table_message(table, recorded.version).SerializeToString()
        bots = table.status is tb.Status.PLAYING and any(s.played_by_bot for s in table.seats)
        async with self._pool.acquire() as connection, connection.transaction():
            await connection.execute(
                """
                INSERT INTO lobby_tables (table_id, game, status, bots, opened_seq, version, snapshot, updated_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, now())
                ON CONFLICT (table_id) DO UPDATE SET
                    status = EXCLUDED.status, bots = EXCLUDED.bots, version = EXCLUDED.version,
                    snapshot = EXCLUDED.snapshot, updated_at = now()
                """,
                table.table_id,
                table.game,
                table.status.value,
                bots,
                recorded.sequence,
                recorded.version,
                snapshot,
            )
            await advance(connection, PROJECTION, recorded.sequence)
        self._states[recorded.aggregate] = table

    async def list_tables(self, game: str | None, status: str | None, limit: int) -> list[lobby_pb2.Table]:
        rows = await self._pool.fetch(
            """
            SELECT snapshot FROM lobby_tables
            WHERE ($1::text IS NULL OR game = $1) AND ($2::text IS NULL OR status = $2)
            ORDER BY opened_seq DESC LIMIT $3
            """,
            game,
            status,
            limit,
        )
        return [lobby_pb2.Table.FromString(bytes(row["snapshot"])) for row in rows]

    async def playing_tables_with_bots(self) -> list[str]:
        rows = await self._pool.fetch(
            "SELECT table_id FROM lobby_tables WHERE status = 'playing' AND bots ORDER BY opened_seq"
        )
        return [str(row["table_id"]) for row in rows]
