"""The lobby's read model in PostgreSQL, projected from the LOBBY stream: one row per table, one per account.

Two projections share one pass over the stream, each with its own checkpoint (the last stream sequence it
applied): ``tables`` (`lobby_tables`) and ``accounts`` (`lobby_accounts`). Each event is applied in the same
transaction as the checkpoints of the projections it was due to, so a restart resumes exactly where the last
commit left off: an event is never applied twice and never lost. A projection added later starts with no
checkpoint, so it reads the stream from its start while the others skip what they already applied: that is how
a deployment that had tables before it had the accounts table gets its old accounts.

Table rows hold the API's `Table` message, so listing tables is one indexed query. Account rows hold each name's
look (`paiju.lobby.accounts.name_skeleton`), so registration finds an existing name that looks like a new one
(`TableReadModel.confusable_with`), also one registered before names were claimed.
"""

from __future__ import annotations

import asyncio
import contextlib
from importlib import resources
from typing import Any

import asyncpg
import structlog

from paiju.lobby import table as tb
from paiju.lobby.accounts import AccountRegistered, account_key, name_skeleton
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.lobby.service import table_message
from paiju.platform.postgres import load_migrations, migrate
from paiju.platform.retry import Backoff, report
from paiju.platform.store import EventStore, Recorded
from paiju.v1 import lobby_events_pb2, lobby_pb2

PROJECTION = "tables"
ACCOUNTS = "accounts"
PROJECTIONS = (PROJECTION, ACCOUNTS)
BATCH = 1000
"""Stream sequences read per batch."""
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
    """Projects the LOBBY stream into ``lobby_tables`` and ``lobby_accounts``; answers table lists and finds
    confusable names."""

    def __init__(self, pool: asyncpg.Pool[Any], store: EventStore) -> None:
        self._pool = pool
        self._store = store
        self._states: dict[str, tb.Table] = {}
        self._wake = asyncio.Event()

    async def checkpoint(self) -> int:
        """The last stream sequence every projection of this model applied."""
        return min((await self._checkpoints()).values())

    async def _checkpoints(self) -> dict[str, int]:
        """Each projection's checkpoint."""
        return {projection: await checkpoint(self._pool, projection) for projection in PROJECTIONS}

    async def catch_up(self) -> int:
        """Apply every event stored after the earliest checkpoint, each to the projections that have not applied
        it yet, `BATCH` stream sequences at a time (never the whole backlog in memory); returns how many events
        were read."""
        read = 0
        while batch := await self._catch_up_batch():
            read += batch
            if batch < BATCH // 2:
                break  # the backlog's end (what came since is the next catch-up's)
        return read

    async def _catch_up_batch(self) -> int:
        at = await self._checkpoints()
        events = await self._store.read_all(after_sequence=min(at.values()), limit=BATCH)
        unrecorded = 0  # the last event that needed no row written and is not in the checkpoints yet
        for recorded in events:
            due = [projection for projection, sequence in at.items() if recorded.sequence > sequence]
            unrecorded = 0 if await self._apply(recorded, due) else recorded.sequence
        if unrecorded:
            async with self._pool.acquire() as connection, connection.transaction():
                for projection, sequence in at.items():
                    if unrecorded > sequence:
                        await advance(connection, projection, unrecorded)
        return len(events)

    async def run(self, stop: asyncio.Event) -> None:
        """Keep the read model current until ``stop``: woken by the stream's feed, with a slow poll as a net."""
        await self._store.follow(lambda _: self._wake.set())
        backoff = Backoff()
        while not stop.is_set():
            try:
                await self.catch_up()
                backoff.succeeded()
            except Exception as e:  # a failed batch is retried from the checkpoint; nothing half-applied stays
                report(log, "table projection failed; retrying", e)
                await backoff.wait(stop)
                continue
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

    async def _apply(self, recorded: Recorded, due: list[str]) -> bool:
        """Apply ``recorded`` to the projections ``due`` to it, with their checkpoints, in one transaction.
        Returns False, writing nothing (not even the checkpoints: the caller records them for a run of such
        events at once), when it changes no row."""
        if PROJECTION in due and recorded.aggregate.startswith("table-"):
            await self._apply_table(recorded, due)
            return True
        if ACCOUNTS in due and recorded.aggregate.startswith("account-"):
            event = LOBBY_EVENTS.decode(lobby_events_pb2.LobbyEnvelope.FromString(recorded.data).event)
            if isinstance(event, AccountRegistered):
                async with self._pool.acquire() as connection, connection.transaction():
                    await connection.execute(
                        """
                        INSERT INTO lobby_accounts (player_id, name, skeleton, guest) VALUES ($1, $2, $3, $4)
                        ON CONFLICT (player_id) DO NOTHING
                        """,
                        event.player_id,
                        event.name,
                        name_skeleton(event.name),
                        event.guest,
                    )
                    for projection in due:
                        await advance(connection, projection, recorded.sequence)
                return True
        return False

    async def _apply_table(self, recorded: Recorded, due: list[str]) -> None:
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
            for projection in due:
                await advance(connection, projection, recorded.sequence)
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

    async def confusable_with(self, name: str) -> str | None:
        """The name of an existing account (not a guest's) that looks like ``name`` — one skeleton — but is not
        ``name`` itself (folded: ``ALICE`` is ``alice``'s own name, which the account aggregate refuses as taken),
        or ``None``. Covers every account the projection has applied, those registered before names were claimed
        included; a name registered a moment ago may not be here yet (the name claims cover those)."""
        rows = await self._pool.fetch(
            "SELECT name FROM lobby_accounts WHERE skeleton = $1 AND NOT guest ORDER BY name",
            name_skeleton(name),
        )
        own = account_key(name)
        for row in rows:
            if account_key(row["name"]) != own:
                return str(row["name"])
        return None
