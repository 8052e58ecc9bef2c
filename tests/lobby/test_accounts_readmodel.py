"""The lobby read model's accounts (`paiju.lobby.readmodel`, migration 0002): every registered account projected
from the LOBBY stream with its name's skeleton, and `confusable_with` finding an existing name that looks like a
new one — also for accounts registered before the accounts table existed, on a deployment whose table
projection was already past them. Real PostgreSQL (a database per test), the in-memory event store."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

import asyncpg
import pytest

from paiju.lobby import table as tb
from paiju.lobby.accounts import (
    Account,
    ClaimName,
    NameClaim,
    Register,
    account_key,
    claim_key,
    decide_account,
    decide_claim,
    evolve_account,
    evolve_claim,
    guest_name,
    name_skeleton,
)
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.lobby.readmodel import TableReadModel, checkpoint, migrate_lobby
from paiju.platform.postgres import connect, load_migrations, migrate
from paiju.platform.repository import Aggregates
from paiju.platform.store import MemoryEventStore


class Lobby:
    """A LOBBY stream in memory with its accounts, name claims and tables."""

    def __init__(self) -> None:
        self.store = MemoryEventStore()
        self.accounts: Aggregates[Account | None] = Aggregates(
            self.store, LOBBY_EVENTS, lambda: None, decide_account, evolve_account
        )
        self.claims: Aggregates[NameClaim | None] = Aggregates(
            self.store, LOBBY_EVENTS, lambda: None, decide_claim, evolve_claim
        )
        self.tables: Aggregates[tb.Table] = Aggregates(self.store, LOBBY_EVENTS, tb.Table, tb.decide, tb.evolve)

    async def register(self, name: str, *, guest: bool = False, claim: bool = True) -> None:
        """Register ``name`` (claiming its skeleton first, unless as before claims existed, or for a guest)."""
        key = account_key(name)
        if claim and not guest:
            await self.claims.act(claim_key(name), ClaimName(name_skeleton(name), key, name), uuid.uuid4().hex, key)
        await self.accounts.act(key, Register(key, name, "" if guest else "scrypt$h", guest), uuid.uuid4().hex, key)

    async def open_table(self, table_id: str) -> None:
        await self.tables.act(table_id, tb.OpenTable(table_id, "Friday", "zlj", "owner"), uuid.uuid4().hex, "owner")
        await self.tables.act(table_id, tb.TakeSeat("owner", "Owner"), uuid.uuid4().hex, "owner")

    async def last_sequence(self) -> int:
        return (await self.store.read_all())[-1].sequence


def run(
    database_dsn: str, body: Callable[[asyncpg.Pool[Any], Lobby], Awaitable[None]], *, migrated: bool = True
) -> None:
    async def main() -> None:
        pool = await connect(database_dsn)
        try:
            if migrated:
                await migrate_lobby(pool)
            await body(pool, Lobby())
        finally:
            await pool.close()

    asyncio.run(main())


async def accounts(pool: asyncpg.Pool[Any]) -> dict[str, tuple[str, str, bool]]:
    rows = await pool.fetch("SELECT player_id, name, skeleton, guest FROM lobby_accounts")
    return {row["player_id"]: (row["name"], row["skeleton"], row["guest"]) for row in rows}


def test_accounts_are_projected_with_their_skeletons(database_dsn: str) -> None:
    async def body(pool: asyncpg.Pool[Any], lobby: Lobby) -> None:
        guest = guest_name()
        for name in ("alice", "Bob", "张三"):
            await lobby.register(name)
        await lobby.register(guest, guest=True)
        await lobby.open_table("table-t1")
        model = TableReadModel(pool, lobby.store)
        assert await model.catch_up() == 9  # 3 claims, 4 accounts, 2 table events
        assert await accounts(pool) == {
            account_key("alice"): ("alice", "alice", False),
            account_key("Bob"): ("Bob", "bob", False),
            account_key("张三"): ("张三", "张三", False),
            account_key(guest): (guest, name_skeleton(guest), True),
        }
        assert [t.table_id for t in await model.list_tables(None, None, 10)] == ["table-t1"]
        assert await model.checkpoint() == await lobby.last_sequence()
        assert await model.catch_up() == 0

    run(database_dsn, body)


def test_a_backlog_is_read_in_bounded_batches(database_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The read model never holds a whole backlog: it reads `BATCH` stream sequences at a time, and a backlog of
    several batches ends projected as one read at once would."""
    from paiju.lobby import readmodel

    monkeypatch.setattr(readmodel, "BATCH", 2)

    async def body(pool: asyncpg.Pool[Any], lobby: Lobby) -> None:
        for name in ("alice", "Bob", "carol"):
            await lobby.register(name)
        await lobby.open_table("table-t1")
        model = TableReadModel(pool, lobby.store)
        reads: list[int] = []
        real = lobby.store.read_all

        async def counted(after_sequence: int = 0, limit: int | None = None, **options: Any) -> Any:
            batch = await real(after_sequence, limit, **options)
            reads.append(len(batch))
            return batch

        monkeypatch.setattr(lobby.store, "read_all", counted)
        assert await model.catch_up() == 8  # 3 claims, 3 accounts, 2 table events
        assert max(reads) <= 2 and len(reads) >= 4
        assert len(await accounts(pool)) == 3
        assert await model.checkpoint() == await lobby.last_sequence()

    run(database_dsn, body)


def test_confusable_with_finds_a_name_that_looks_the_same(database_dsn: str) -> None:
    async def body(pool: asyncpg.Pool[Any], lobby: Lobby) -> None:
        guest = guest_name()
        for name in ("alice", "bob", "paypal"):
            await lobby.register(name)
        await lobby.register(guest, guest=True)
        model = TableReadModel(pool, lobby.store)
        await model.catch_up()
        assert await model.confusable_with("\u0410lice") == "alice"  # a Cyrillic А
        assert await model.confusable_with("\u0430lice") == "alice"
        assert await model.confusable_with("B0B") == "bob"
        assert await model.confusable_with("paypa1") == "paypal"
        assert await model.confusable_with("alicia") is None
        assert await model.confusable_with("李四") is None
        # the same name, folded, is the account's own: the account aggregate refuses it as taken
        assert await model.confusable_with("ALICE") is None
        assert await model.confusable_with("alice") is None
        # guests are not in the way of anyone
        assert await model.confusable_with(guest.replace("e", "\u0435")) is None  # Cyrillic е

    run(database_dsn, body)


def test_old_accounts_reach_the_table_of_a_deployment_already_past_them(database_dsn: str) -> None:
    """A deployment from before the accounts table: its table projection's checkpoint is past every account
    registered so far (which had no name claims). Migrated, the read model's next catch-up projects them all
    — the accounts projection starts from the stream's start — without applying old table events again."""

    async def body(pool: asyncpg.Pool[Any], lobby: Lobby) -> None:
        first = [m for m in load_migrations(resources.files("paiju.lobby") / "migrations") if m.version == 1]
        await migrate(pool, "lobby", first)  # the schema as it was
        for name in ("alice", "\u0410lice", "Bob"):  # before claims, two confusable names could both register
            await lobby.register(name, claim=False)
        await lobby.register(guest_name(), guest=True)
        await lobby.open_table("table-old")
        before = await lobby.last_sequence()
        # what the old projection left: its rows (this marker stands for them) and its checkpoint past everything
        await pool.execute(
            "INSERT INTO lobby_tables (table_id, game, status, bots, opened_seq, version, snapshot)"
            " VALUES ('table-old', 'zlj', 'open', false, 5, 2, '\\x')"
        )
        await pool.execute("INSERT INTO lobby_checkpoints (projection, sequence) VALUES ('tables', $1)", before)

        upto_2 = [m for m in load_migrations(resources.files("paiju.lobby") / "migrations") if m.version <= 2]
        await migrate(pool, "lobby", upto_2)  # 0002
        model = TableReadModel(pool, lobby.store)
        assert await model.checkpoint() == 0  # the accounts projection has applied nothing yet
        accounts_projection = model.consumers[1]  # (the tables projection would need 0003's columns)
        await accounts_projection.catch_up()
        projected = await accounts(pool)
        assert len(projected) == 4
        assert {name for name, _, guest in projected.values() if not guest} == {"alice", "\u0410lice", "Bob"}
        assert await model.confusable_with("ALICE") == "\u0410lice"  # alice's own name, but also Аlice's look
        assert await model.confusable_with("b\u03bfb") == "Bob"  # Greek ο
        # the table projection did not apply its old events again: the marker row is as it was
        row = await pool.fetchrow("SELECT version, snapshot FROM lobby_tables WHERE table_id = 'table-old'")
        assert row is not None
        assert (row["version"], bytes(row["snapshot"])) == (2, b"")
        assert await checkpoint(pool, "tables") == await checkpoint(pool, "accounts") == before

        # 0003 rebuilds the tables from the stream once, each with its owner and its place in the listing; from
        # here on both projections move together
        await migrate_lobby(pool)
        assert await pool.fetchval("SELECT count(*) FROM lobby_tables") == 0
        await lobby.register("Carol")
        await lobby.open_table("table-new")
        await model.catch_up()
        assert account_key("Carol") in await accounts(pool)
        rows = await pool.fetch("SELECT table_id, owner, listed FROM lobby_tables ORDER BY table_id")
        assert [tuple(row) for row in rows] == [("table-new", "owner", 1), ("table-old", "owner", 1)]
        after = await lobby.last_sequence()
        assert await checkpoint(pool, "tables") == await checkpoint(pool, "accounts") == after

    run(database_dsn, body, migrated=False)


def test_replaying_accounts_changes_nothing(database_dsn: str) -> None:
    """Projecting an account twice (a replica racing, or the accounts projection replayed) keeps one row."""

    async def body(pool: asyncpg.Pool[Any], lobby: Lobby) -> None:
        for name in ("alice", "Bob"):
            await lobby.register(name)
        model = TableReadModel(pool, lobby.store)
        await model.catch_up()
        projected = await accounts(pool)
        await pool.execute("DELETE FROM lobby_checkpoints WHERE projection = 'accounts'")
        await TableReadModel(pool, lobby.store).catch_up()
        assert await accounts(pool) == projected
        assert await checkpoint(pool, "accounts") == await lobby.last_sequence()

    run(database_dsn, body)


def test_events_that_change_no_row_still_move_the_checkpoints(database_dsn: str) -> None:
    async def body(pool: asyncpg.Pool[Any], lobby: Lobby) -> None:
        key = account_key("alice")
        await lobby.claims.act(claim_key("alice"), ClaimName("alice", key, "alice"), uuid.uuid4().hex, key)
        model = TableReadModel(pool, lobby.store)
        assert await model.catch_up() == 1
        assert await checkpoint(pool, "tables") == await checkpoint(pool, "accounts") == 1
        assert await accounts(pool) == {}

    run(database_dsn, body)
