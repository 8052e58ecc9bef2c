"""Ordered SQL migrations, applied once each, per component, under an advisory lock.

A component (``lobby``, ``scoring``…) keeps its migrations as files ``NNNN_name.sql`` in a package folder,
loaded with `load_migrations` (e.g. ``load_migrations(importlib.resources.files("paiju.lobby.migrations"))``)
and applied at start-up by `migrate`. Each migration runs in its own transaction together with its row in
``schema_migrations`` (component, version, name, checksum, applied_at): it is applied entirely or not at
all. Several components share one database and one ``schema_migrations`` table, each with its own versions.

Replicas may start at once: `migrate` holds a PostgreSQL session advisory lock while it reads what is applied
and applies what is missing, so each migration is applied exactly once, by whichever replica comes first;
the others then find nothing left to do.

`migrate` refuses to touch a database (`MigrationError`) that has a migration of the component that the code
does not know (the code is older than the database), whose recorded checksum differs from the file's
(an applied migration was edited: add a new one instead), or when a pending migration is numbered below one
already applied (two branches took neighbouring numbers: renumber the new one).

Statements that cannot run inside a transaction block (``CREATE INDEX CONCURRENTLY``, ``VACUUM``) cannot be
migrations.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from typing import Any

import asyncpg

TABLE = "schema_migrations"
LOCK_KEY = 0x7061_696A_755F_6D67  # "paiju_mg": one lock for every component (they share the table)
MIGRATION_TIMEOUT = 3600.0
"""Seconds one migration may run (a pool's shorter ``command_timeout`` does not apply to migrations)."""
FILE_NAME = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")

_CREATE_TABLE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    component  text        NOT NULL,
    version    integer     NOT NULL CHECK (version > 0),
    name       text        NOT NULL,
    checksum   text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (component, version)
)
"""


class MigrationError(RuntimeError):
    """Migrations could not be loaded or applied, or the database does not match the code (message says why)."""


@dataclass(frozen=True)
class Migration:
    """One migration: ``version`` and ``name`` from its file name ``NNNN_name.sql``, and its SQL."""

    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        """SHA-256 of the SQL (line endings normalised to ``\\n``), hex."""
        return hashlib.sha256(self.sql.replace("\r\n", "\n").encode()).hexdigest()

    @property
    def label(self) -> str:
        """``NNNN_name``, as the file is called."""
        return f"{self.version:04d}_{self.name}"


def load_migrations(folder: Traversable) -> tuple[Migration, ...]:
    """The migrations in ``folder`` (a `pathlib.Path` or an ``importlib.resources.files(...)`` folder), in order.

    Every ``*.sql`` file must be named ``NNNN_name.sql`` (four digits, then lower-case letters, digits and
    underscores), with no version twice; other files are ignored.
    """
    if not folder.is_dir():
        raise MigrationError(f"no migrations folder at {folder}")
    migrations: list[Migration] = []
    for entry in folder.iterdir():
        if not entry.name.endswith(".sql"):
            continue
        match = FILE_NAME.match(entry.name)
        if match is None:
            raise MigrationError(f"migration file {entry.name!r} is not named NNNN_name.sql (in {folder})")
        migrations.append(Migration(int(match["version"]), match["name"], entry.read_text(encoding="utf-8")))
    return _ordered(migrations)


def _ordered(migrations: Iterable[Migration]) -> tuple[Migration, ...]:
    ordered = tuple(sorted(migrations, key=lambda m: m.version))
    for migration in ordered:
        if migration.version <= 0:
            raise MigrationError(f"migration {migration.label}: versions start at 1")
    for before, after in itertools.pairwise(ordered):
        if before.version == after.version:
            raise MigrationError(f"two migrations have version {before.version}: {before.label} and {after.label}")
    return ordered


async def migrate(
    database: asyncpg.Connection[Any] | asyncpg.Pool[Any],
    component: str,
    migrations: Iterable[Migration],
    *,
    lock_timeout: float = 300.0,
) -> tuple[Migration, ...]:
    """Apply ``component``'s pending ``migrations`` in order; returns those this call applied (often none).

    ``database``: a connection (not inside a transaction) or a pool to take one from. Waits up to
    ``lock_timeout`` seconds for another process that is migrating the same database. Raises `MigrationError`
    if the database does not match the code (see the module's docstring) or a migration fails; a failed
    migration leaves nothing behind, and those before it stay applied.
    """
    if not component:
        raise MigrationError("a component name is required")
    known = _ordered(migrations)
    if isinstance(database, asyncpg.Pool):
        async with database.acquire() as connection:
            return await _migrate(connection, component, known, lock_timeout)  # type: ignore[arg-type]
    return await _migrate(database, component, known, lock_timeout)


async def applied(database: asyncpg.Connection[Any] | asyncpg.Pool[Any], component: str) -> dict[int, str]:
    """The versions of ``component`` recorded in ``schema_migrations`` with their checksums (none if no table)."""
    if not await database.fetchval("SELECT to_regclass($1) IS NOT NULL", TABLE):
        return {}
    rows = await database.fetch(f"SELECT version, checksum FROM {TABLE} WHERE component = $1", component)
    return {row["version"]: row["checksum"] for row in rows}


async def _migrate(
    connection: asyncpg.Connection[Any], component: str, known: Sequence[Migration], lock_timeout: float
) -> tuple[Migration, ...]:
    if connection.is_in_transaction():
        raise MigrationError("migrate needs a connection outside any transaction (each migration is its own)")
    try:
        await _lock(connection, lock_timeout)
        await connection.execute(_CREATE_TABLE)
        done = await applied(connection, component)
        pending = _pending(component, known, done)
        for migration in pending:
            try:
                async with connection.transaction():
                    await connection.execute(migration.sql, timeout=MIGRATION_TIMEOUT)
                    await connection.execute(
                        f"INSERT INTO {TABLE} (component, version, name, checksum) VALUES ($1, $2, $3, $4)",
                        component,
                        migration.version,
                        migration.name,
                        migration.checksum,
                    )
            except asyncpg.PostgresError as error:
                raise MigrationError(
                    f"migration {migration.label} of {component} failed and was rolled back: "
                    f"{type(error).__name__}: {error}"
                ) from error
        return pending
    finally:
        await _unlock(connection)


async def _lock(connection: asyncpg.Connection[Any], timeout: float) -> None:
    """Wait for the migrations' session advisory lock, up to ``timeout`` seconds (PostgreSQL's lock_timeout).

    The lock is taken inside a transaction only to scope ``SET LOCAL``: a session-level lock outlives it.
    """
    try:
        async with connection.transaction():
            await connection.execute(f"SET LOCAL lock_timeout = {max(1, round(timeout * 1000))}")
            await connection.execute("SELECT pg_advisory_lock($1)", LOCK_KEY, timeout=timeout + 30)
    except asyncpg.LockNotAvailableError:
        raise MigrationError(f"another process has been migrating this database for over {timeout:g} s") from None


async def _unlock(connection: asyncpg.Connection[Any]) -> None:
    """Release the lock; if the session cannot say so (cancelled mid-query, broken), end it: that releases it."""
    if connection.is_closed():
        return
    try:
        await connection.execute("SELECT pg_advisory_unlock($1)", LOCK_KEY)
    except asyncio.CancelledError:
        connection.terminate()
        raise
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
        connection.terminate()  # whatever failed before (if anything) is the error worth reporting


def _pending(component: str, known: Sequence[Migration], done: dict[int, str]) -> tuple[Migration, ...]:
    """What is left to apply, after checking that the database's migrations are the code's."""
    by_version = {m.version: m for m in known}
    for version, checksum in sorted(done.items()):
        migration = by_version.get(version)
        if migration is None:
            raise MigrationError(
                f"the database has migration {version:04d} of {component}, which this code does not know: "
                "is the code older than the database?"
            )
        if migration.checksum != checksum:
            raise MigrationError(
                f"migration {migration.label} of {component} changed since it was applied "
                f"(checksum {checksum[:12]}… in the database, {migration.checksum[:12]}… now): "
                "never edit an applied migration, add a new one"
            )
    pending = tuple(m for m in known if m.version not in done)
    latest = max(done, default=0)
    if pending and pending[0].version < latest:
        raise MigrationError(
            f"migration {pending[0].label} of {component} is pending but {latest:04d} is already applied: "
            "give it a number after the latest"
        )
    return pending
