"""Migrations against a real PostgreSQL (a fresh database per test): once each, atomic, refused when foreign."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest

from paiju.platform.postgres import connect
from paiju.platform.postgres.migrations import Migration, MigrationError, applied, load_migrations, migrate

LOBBY = (
    Migration(1, "players", "CREATE TABLE players (id text PRIMARY KEY, name text NOT NULL);"),
    Migration(
        2,
        "tables",
        "CREATE TABLE tables (id text PRIMARY KEY, game text NOT NULL);\n"
        "INSERT INTO tables VALUES ('t1', 'zlj'), ('t2', 'tractor');",
    ),
    Migration(3, "seats", "ALTER TABLE tables ADD COLUMN seats integer NOT NULL DEFAULT 6;"),
)


T = TypeVar("T")


def run(body: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(body)


async def _with(dsn: str, body: Callable[[asyncpg.Connection[Any]], Awaitable[T]]) -> T:
    connection = await asyncpg.connect(dsn)
    try:
        return await body(connection)
    finally:
        await connection.close()


async def _tables(connection: asyncpg.Connection[Any]) -> set[str]:
    rows = await connection.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return {row["tablename"] for row in rows}


def test_applies_each_in_order_then_nothing(database_dsn: str) -> None:
    async def body(connection: asyncpg.Connection[Any]) -> None:
        first = await migrate(connection, "lobby", LOBBY)
        assert [m.version for m in first] == [1, 2, 3]
        assert await migrate(connection, "lobby", LOBBY) == ()
        assert await _tables(connection) == {"players", "tables", "schema_migrations"}
        assert await connection.fetchval("SELECT count(*) FROM tables WHERE seats = 6") == 2
        rows = await connection.fetch("SELECT version, name, checksum FROM schema_migrations ORDER BY version")
        assert [(r["version"], r["name"], r["checksum"]) for r in rows] == [
            (m.version, m.name, m.checksum) for m in LOBBY
        ]

    run(_with(database_dsn, body))


def test_new_migrations_are_applied_later(database_dsn: str) -> None:
    async def body(connection: asyncpg.Connection[Any]) -> None:
        assert len(await migrate(connection, "lobby", LOBBY[:1])) == 1
        assert [m.version for m in await migrate(connection, "lobby", LOBBY)] == [2, 3]
        assert await applied(connection, "lobby") == {m.version: m.checksum for m in LOBBY}

    run(_with(database_dsn, body))


def test_concurrent_runners_apply_each_migration_exactly_once(database_dsn: str) -> None:
    # The first migration holds the lock a while, so that the other runners wait for it rather than finish first;
    # none of these statements may run twice (CREATE TABLE without IF NOT EXISTS, counted inserts).
    migrations = (
        Migration(1, "slow", "SELECT pg_sleep(0.3); CREATE TABLE runs (version integer NOT NULL);"),
        Migration(2, "second", "CREATE TABLE standings (id integer); INSERT INTO runs VALUES (2);"),
        Migration(3, "third", "INSERT INTO runs VALUES (3);"),
    )
    runners = 8

    async def one() -> tuple[Migration, ...]:
        return await _with(database_dsn, lambda connection: migrate(connection, "scoring", migrations))

    async def body() -> None:
        results = await asyncio.gather(*(one() for _ in range(runners)))
        done = sorted(m.version for result in results for m in result)
        assert done == [1, 2, 3]
        assert sum(1 for result in results if result) == 1
        counts = await _with(database_dsn, lambda c: c.fetch("SELECT version, count(*) FROM runs GROUP BY 1"))
        assert {r["version"]: r["count"] for r in counts} == {2: 1, 3: 1}
        rows = await _with(database_dsn, lambda c: c.fetchval("SELECT count(*) FROM schema_migrations"))
        assert rows == 3

    run(body())


def test_concurrent_components_share_the_table(database_dsn: str) -> None:
    scoring = (Migration(1, "standings", "CREATE TABLE standings (player text PRIMARY KEY, points integer);"),)

    async def body() -> None:
        pool = await connect(database_dsn, max_size=4)
        async with pool:
            lobby_done, scoring_done = await asyncio.gather(
                migrate(pool, "lobby", LOBBY), migrate(pool, "scoring", scoring)
            )
            assert len(lobby_done) == 3
            assert len(scoring_done) == 1
            assert set(await applied(pool, "lobby")) == {1, 2, 3}
            assert set(await applied(pool, "scoring")) == {1}

    run(body())


def test_failing_migration_rolls_back_entirely(database_dsn: str) -> None:
    broken = (
        *LOBBY[:2],
        Migration(
            3,
            "half",
            "CREATE TABLE bots (id text); INSERT INTO tables VALUES ('t3', 'zlj'); SELECT 1 / 0;",
        ),
    )

    async def body(connection: asyncpg.Connection[Any]) -> None:
        with pytest.raises(MigrationError, match=r"0003_half of lobby failed.*DivisionByZero"):
            await migrate(connection, "lobby", broken)
        # 1 and 2 stay applied; nothing of 3 is left: no table, no row, no record.
        assert set(await applied(connection, "lobby")) == {1, 2}
        assert "bots" not in await _tables(connection)
        assert await connection.fetchval("SELECT count(*) FROM tables") == 2
        # The lock is released and the connection usable: the fixed migration goes through.
        assert [m.version for m in await migrate(connection, "lobby", LOBBY)] == [3]

    run(_with(database_dsn, body))


def test_unknown_migration_in_the_database_is_refused(database_dsn: str) -> None:
    async def body(connection: asyncpg.Connection[Any]) -> None:
        await migrate(connection, "lobby", LOBBY)
        with pytest.raises(MigrationError, match=r"has migration 0003 of lobby, which this code does not know"):
            await migrate(connection, "lobby", LOBBY[:2])

    run(_with(database_dsn, body))


def test_changed_migration_is_refused(database_dsn: str) -> None:
    edited = (LOBBY[0], Migration(2, "tables", LOBBY[1].sql + "\n-- edited"), LOBBY[2])

    async def body(connection: asyncpg.Connection[Any]) -> None:
        await migrate(connection, "lobby", LOBBY[:2])
        with pytest.raises(MigrationError, match=r"0002_tables of lobby changed since it was applied"):
            await migrate(connection, "lobby", edited)
        assert set(await applied(connection, "lobby")) == {1, 2}  # 3 was not applied either

    run(_with(database_dsn, body))


def test_pending_migration_below_the_latest_is_refused(database_dsn: str) -> None:
    async def body(connection: asyncpg.Connection[Any]) -> None:
        # Two branches: one added 0003, already deployed; the other 0002, merged later.
        third = Migration(3, "bots", "SELECT 1;")
        await migrate(connection, "lobby", (LOBBY[0], third))
        with pytest.raises(MigrationError, match=r"0002_tables of lobby is pending but 0003 is already applied"):
            await migrate(connection, "lobby", (LOBBY[0], LOBBY[1], third))
        assert set(await applied(connection, "lobby")) == {1, 3}

    run(_with(database_dsn, body))


def test_refuses_a_connection_inside_a_transaction(database_dsn: str) -> None:
    async def body(connection: asyncpg.Connection[Any]) -> None:
        async with connection.transaction():
            with pytest.raises(MigrationError, match="outside any transaction"):
                await migrate(connection, "lobby", LOBBY)

    run(_with(database_dsn, body))


def test_waits_for_the_lock_and_gives_up_after_the_timeout(database_dsn: str) -> None:
    from paiju.platform.postgres.migrations import LOCK_KEY

    async def body() -> None:
        holder = await asyncpg.connect(database_dsn)
        try:
            await holder.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)
            with pytest.raises(MigrationError, match="another process has been migrating"):
                await _with(database_dsn, lambda c: migrate(c, "lobby", LOBBY, lock_timeout=0.3))
            assert await _with(database_dsn, lambda c: applied(c, "lobby")) == {}
        finally:
            await holder.close()
        assert len(await _with(database_dsn, lambda c: migrate(c, "lobby", LOBBY, lock_timeout=5))) == 3

    run(body())


def test_load_migrations_from_a_folder(tmp_path: Path) -> None:
    (tmp_path / "0002_tables.sql").write_text(LOBBY[1].sql)
    (tmp_path / "0001_players.sql").write_text(LOBBY[0].sql)
    (tmp_path / "0010_later.sql").write_text("SELECT 1;\r\n")
    (tmp_path / "README.md").write_text("not a migration")
    loaded = load_migrations(tmp_path)
    assert [m.label for m in loaded] == ["0001_players", "0002_tables", "0010_later"]
    assert loaded[:2] == LOBBY[:2]
    assert loaded[2].checksum == Migration(10, "later", "SELECT 1;\n").checksum


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (["1_players.sql"], "not named NNNN_name.sql"),
        (["0001_Players.sql"], "not named NNNN_name.sql"),
        (["0001_players.sql", "0001_other.sql"], "two migrations have version 1"),
        (["0000_zero.sql"], "versions start at 1"),
    ],
)
def test_load_migrations_refuses_bad_folders(tmp_path: Path, files: list[str], message: str) -> None:
    for name in files:
        (tmp_path / name).write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=message):
        load_migrations(tmp_path)


def test_load_migrations_needs_the_folder(tmp_path: Path) -> None:
    with pytest.raises(MigrationError, match="no migrations folder"):
        load_migrations(tmp_path / "missing")


def test_pool_defaults(database_dsn: str) -> None:
    async def body() -> None:
        pool = await connect(database_dsn, application_name="paiju-test")
        async with pool:
            assert await pool.fetchval("SELECT current_setting('application_name')") == "paiju-test"
            value = {"seats": [0, 1, 2], "game": "砸六家"}
            assert await pool.fetchval("SELECT $1::jsonb", value) == value

    run(body())
