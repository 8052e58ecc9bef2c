"""The lobby's read model in PostgreSQL, projected from the LOBBY stream: one row per table, one per account.

Two projections, each a stream consumer of the platform (`paiju.platform.consumer`) with its own checkpoint in
``lobby_checkpoints``: ``tables`` (`lobby_tables`) and ``accounts`` (`lobby_accounts`). A batch's rows and its
checkpoint are written in one transaction, so a restart resumes exactly where the last commit left off: an event
is never applied twice and never lost. A projection added later starts with no checkpoint, so it reads the stream
from its start: that is how a deployment that had tables before it had the accounts table gets its old accounts.

Table rows hold the API's `Table` message, so listing tables is one indexed query. Account rows hold each name's
look (`paiju.lobby.accounts.name_skeleton`), so registration finds an existing name that looks like a new one
(`TableReadModel.confusable_with`), also one registered before names were claimed.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

import asyncpg
import structlog

from paiju.lobby import table as tb
from paiju.lobby.accounts import AccountRegistered, account_key, name_skeleton
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.lobby.service import table_message
from paiju.platform.consumer import Consumer, PostgresTracking, Tracked
from paiju.platform.postgres import load_migrations, migrate
from paiju.platform.store import EventStore, Recorded
from paiju.v1 import lobby_events_pb2, lobby_pb2

PROJECTION = "tables"
ACCOUNTS = "accounts"
CHECKPOINTS = "lobby_checkpoints"
"""The lobby's table of stream consumers' checkpoints (`paiju.platform.consumer.PostgresTracking`)."""
BATCH = 1000
"""Events handled per batch at most (stream sequences read per batch when catching up)."""
LINGER_SECONDS = 0.0
"""The projections' batches wait for no more events than have arrived (a batch is what came while the last one was
applied): table lists and bot seat leases read them right after a table moves."""
LISTED = {tb.Status.PLAYING: 2, tb.Status.OPEN: 1}
"""A table's place in the listing: in play first, then filling seats, then the others (``listed``, 0)."""
PAGE_TOKEN = re.compile(r"^p1\.([0-2])\.([0-9]{1,19})$")
"""A page token: ``p1.<listed>.<opened_seq>`` of the last table of the page before (opaque to clients)."""
log = structlog.get_logger("paiju.lobby.readmodel")


async def migrate_lobby(pool: asyncpg.Pool[Any]) -> None:
    """Apply the lobby's migrations (at start; safe with several lobby replicas starting at once)."""
    await migrate(pool, "lobby", load_migrations(resources.files("paiju.lobby") / "migrations"))


async def checkpoint(database: Any, projection: str) -> int:
    """The last stream sequence ``projection`` applied (0: none yet)."""
    found = await database.fetchval(f"SELECT sequence FROM {CHECKPOINTS} WHERE projection = $1", projection)
    return int(found or 0)


class TablesProjection:
    """``lobby_tables``: one row per table holding the API's `Table` message, so listing tables is one indexed
    query."""

    name = PROJECTION

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self._states: dict[str, tuple[tb.Table, int]] = {}  # each table as last applied here, and its version

    async def _state_before(self, recorded: Recorded) -> tb.Table:
        """The table as it stood before ``recorded``: from memory when this process applied the event before it
        (another replica may have applied later batches), else read from the store."""
        state = self._states.get(recorded.aggregate)
        if state is not None and state[1] == recorded.version - 1:
            return state[0]
        table = tb.Table()
        for earlier in await self._store.load(recorded.aggregate):
            if earlier.version >= recorded.version:
                break
            table = tb.evolve(table, LOBBY_EVENTS.decode(lobby_events_pb2.LobbyEnvelope.FromString(earlier.data).event))
        return table

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        changed: dict[str, tuple[tb.Table, int, Recorded]] = {}  # table, the batch's first sequence of it, last event
        for recorded in batch:
            if not recorded.aggregate.startswith("table-"):
                continue
            known = changed.get(recorded.aggregate)
            before = known[0] if known is not None else await self._state_before(recorded)
            envelope = lobby_events_pb2.LobbyEnvelope.FromString(recorded.data)
            table = tb.evolve(before, LOBBY_EVENTS.decode(envelope.event))
            changed[recorded.aggregate] = (table, known[1] if known else recorded.sequence, recorded)
        for table, first, recorded in changed.values():  # one row written per table and batch: its latest state
            snapshot = table_message(table, recorded.version).SerializeToString()
            bots = table.status is tb.Status.PLAYING and any(s.played_by_bot for s in table.seats)
            await tracked.connection.execute(
                """
                INSERT INTO lobby_tables
                    (table_id, game, status, bots, opened_seq, version, snapshot, updated_at, owner, listed, players)
                VALUES ($1, $2, $3, $4, $5, $6, $7, now(), $8, $9, $10)
                ON CONFLICT (table_id) DO UPDATE SET
                    status = EXCLUDED.status, bots = EXCLUDED.bots, version = EXCLUDED.version,
                    snapshot = EXCLUDED.snapshot, updated_at = now(), listed = EXCLUDED.listed,
                    players = EXCLUDED.players
                """,
                table.table_id,
                table.game,
                table.status.value,
                bots,
                first,  # the row's first write is the table's opening: the listing's newest-first order
                recorded.version,
                snapshot,
                table.owner,
                LISTED.get(table.status, 0),
                [s.player_id for s in table.seats if s.player_id and not s.bot],
            )
        for aggregate, (table, _, recorded) in changed.items():
            self._states[aggregate] = (table, recorded.version)  # a rolled-back batch is read again: same states

    async def clear(self, tracked: Tracked) -> None:
        await tracked.connection.execute("DELETE FROM lobby_tables")
        self._states.clear()


class AccountsProjection:
    """``lobby_accounts``: one row per account holding its name's look (`paiju.lobby.accounts.name_skeleton`), so
    registration finds an existing name that looks like a new one, also one registered before names were
    claimed."""

    name = ACCOUNTS

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        for recorded in batch:
            if not recorded.aggregate.startswith("account-"):
                continue
            event = LOBBY_EVENTS.decode(lobby_events_pb2.LobbyEnvelope.FromString(recorded.data).event)
            if isinstance(event, AccountRegistered):
                await tracked.connection.execute(
                    """
                    INSERT INTO lobby_accounts (player_id, name, skeleton, guest) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (player_id) DO NOTHING
                    """,
                    event.player_id,
                    event.name,
                    name_skeleton(event.name),
                    event.guest,
                )

    async def clear(self, tracked: Tracked) -> None:
        await tracked.connection.execute("DELETE FROM lobby_accounts")


class TableReadModel:
    """The lobby's read model: its two projections of the LOBBY stream, each a stream consumer with its checkpoint
    in ``lobby_checkpoints``; answers table lists and finds confusable names."""

    def __init__(self, pool: asyncpg.Pool[Any], store: EventStore) -> None:
        self._pool = pool
        tracking = PostgresTracking(pool, CHECKPOINTS)
        self.consumers = [
            Consumer(store, tracking, TablesProjection(store), batch=BATCH, linger=LINGER_SECONDS),
            Consumer(store, tracking, AccountsProjection(), batch=BATCH, linger=LINGER_SECONDS),
        ]

    async def checkpoint(self) -> int:
        """The last stream sequence every projection of this model applied."""
        return min([await c.checkpoint() for c in self.consumers])

    async def catch_up(self) -> int:
        """Apply what was stored after each projection's checkpoint; the stream events new to the model (each
        projection reads them once)."""
        return max([await c.catch_up() for c in self.consumers])

    async def run(self, stop: asyncio.Event) -> None:
        """Keep both projections current until ``stop``."""
        await asyncio.gather(*(c.run(stop) for c in self.consumers))

    async def list_tables(
        self, game: str | None, status: str | None, limit: int, after: str = ""
    ) -> list[lobby_pb2.Table]:
        """The tables of one page: those in play first, then those filling seats, then the others (expired ones
        only when ``status`` asks for them), newest first within each; ``after``: the page token of the page before
        (`page_token`; `ValueError` when it is not one)."""
        return [table for table, _ in await self.page_of_tables(game, status, limit, after)]

    async def page_of_tables(
        self, game: str | None, status: str | None, limit: int, after: str = ""
    ) -> list[tuple[lobby_pb2.Table, str]]:
        """`list_tables` with the page token that follows each table."""
        listed, seq = 3, 2**63 - 1
        if after:
            found = PAGE_TOKEN.match(after)
            if found is None or int(found.group(2)) > 2**63 - 1:
                raise ValueError("not a page token of this listing")
            listed, seq = int(found.group(1)), int(found.group(2))
        rows = await self._pool.fetch(
            """
            SELECT snapshot, listed, opened_seq FROM lobby_tables
            WHERE ($1::text IS NULL OR game = $1)
              AND (($2::text IS NULL AND status <> 'expired') OR status = $2)
              AND (listed, opened_seq) < ($4::smallint, $5::bigint)
            ORDER BY listed DESC, opened_seq DESC LIMIT $3
            """,
            game,
            status,
            limit,
            listed,
            seq,
        )
        return [
            (lobby_pb2.Table.FromString(bytes(row["snapshot"])), f"p1.{row['listed']}.{row['opened_seq']}")
            for row in rows
        ]

    async def open_tables_of(self, owner: str) -> set[str]:
        """The ids of the tables ``owner`` opened that are open or in play (as far as the projection has applied)."""
        rows = await self._pool.fetch(
            "SELECT table_id FROM lobby_tables WHERE owner = $1 AND status IN ('open', 'playing')", owner
        )
        return {str(row["table_id"]) for row in rows}

    async def idle_tables(self) -> list[tuple[str, float]]:
        """The tables that may expire (open or finished, a player's or the queue's, not a tournament's), each with the
        time of its row's last change (Unix seconds): what a starting lobby schedules, once."""
        rows = await self._pool.fetch(
            """
            SELECT table_id, extract(epoch FROM updated_at) AS at FROM lobby_tables
            WHERE status IN ('open', 'finished') AND (owner LIKE 'account-%' OR owner = $1)
            """,
            tb.QUEUE_OWNER,
        )
        return [(str(row["table_id"]), float(row["at"])) for row in rows]

    async def account_names(self, after: str, limit: int) -> list[tuple[str, str]]:
        """Registered accounts (not guests) by player id, ``limit`` after ``after``: (player id, name)."""
        rows = await self._pool.fetch(
            "SELECT player_id, name FROM lobby_accounts WHERE NOT guest AND player_id > $1 ORDER BY player_id LIMIT $2",
            after,
            limit,
        )
        return [(str(row["player_id"]), str(row["name"])) for row in rows]

    async def playing_tables_with_bots(self) -> list[str]:
        rows = await self._pool.fetch(
            "SELECT table_id FROM lobby_tables WHERE status = 'playing' AND bots ORDER BY opened_seq"
        )
        return [str(row["table_id"]) for row in rows]

    async def playing_table_of(self, player_id: str) -> str | None:
        """A table where ``player_id`` sits in a running match, or ``None`` (D-MM-1)."""
        found = await self._pool.fetchval(
            "SELECT table_id FROM lobby_tables WHERE status = 'playing' AND $1 = ANY(players) LIMIT 1", player_id
        )
        return None if found is None else str(found)

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
