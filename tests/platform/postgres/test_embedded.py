"""The embedded PostgreSQL server: starts, stops cleanly, keeps its data across restarts, reports failures."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from paiju.platform.postgres import embedded
from paiju.platform.postgres.embedded import EmbeddedPostgresError


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A fresh folder for a data directory, reachable by the unprivileged user of a root run (see conftest)."""
    parent = Path(tempfile.mkdtemp(prefix="paiju-test-pgdata-"))
    parent.chmod(0o755)
    try:
        yield parent / "postgres"
    finally:
        shutil.rmtree(parent, ignore_errors=True)


async def _query(dsn: str, statement: str) -> Any:
    connection = await asyncpg.connect(dsn)
    try:
        if ";" in statement:
            return await connection.execute(statement)
        return await connection.fetchval(statement)
    finally:
        await connection.close()


def query(dsn: str, statement: str) -> Any:
    return asyncio.run(_query(dsn, statement))


def test_restart_on_the_same_data_dir_keeps_the_data(data_dir: Path) -> None:
    with embedded.start(data_dir, durable=False) as server:
        query(server.dsn, "CREATE TABLE deals (id integer); INSERT INTO deals VALUES (1), (2), (3)")
        first_port = server.port
    assert not server.running()
    assert not (data_dir / "postmaster.pid").exists()  # shut down, not killed
    assert "database system is shut down" in (data_dir / embedded.LOG_NAME).read_text()

    with embedded.start(data_dir, durable=False) as again:
        assert query(again.dsn, "SELECT sum(id) FROM deals") == 6
        assert again.dsn.startswith("postgresql://postgres@127.0.0.1:")
    assert first_port > 0


def test_durable_server_restarts_too(data_dir: Path) -> None:
    with embedded.start(data_dir) as server:
        query(server.dsn, "CREATE TABLE kept AS SELECT 42 AS answer")
    with embedded.start(data_dir) as server:
        assert query(server.dsn, "SELECT answer FROM kept") == 42


def test_unix_socket_only(data_dir: Path) -> None:
    sockets = data_dir.parent / "sockets"
    with embedded.start(data_dir, socket_dir=sockets, durable=False) as server:
        assert "host=" in server.dsn
        assert query(server.dsn, "SELECT current_setting('listen_addresses')") == ""
        assert (sockets / ".s.PGSQL.5432").is_socket()


def test_a_server_left_running_by_a_dead_process_is_taken_over(data_dir: Path) -> None:
    orphan = embedded.start(data_dir, durable=False)  # as if its owner had been killed without stopping it
    query(orphan.dsn, "CREATE TABLE survived (x integer)")
    try:
        with embedded.start(data_dir, durable=False) as server:
            assert not orphan.running()
            assert query(server.dsn, "SELECT count(*) FROM survived") == 0
    finally:
        orphan.stop()


def test_a_stale_pid_file_does_not_block_the_start(data_dir: Path) -> None:
    with embedded.start(data_dir, durable=False):
        pass
    # A crash leaves postmaster.pid behind, and the PID may belong to another program by the next start.
    (data_dir / "postmaster.pid").write_text(f"{os.getpid()}\n{data_dir}\n0\n5432\n\n127.0.0.1\n0 0\nready\n")
    with embedded.start(data_dir, durable=False) as server:
        assert query(server.dsn, "SELECT 1") == 1


def test_failure_to_start_says_why_with_the_log(data_dir: Path) -> None:
    with pytest.raises(EmbeddedPostgresError, match=r"(?s)exited with code.*shared_buffers"):
        embedded.start(data_dir, durable=False, settings={"shared_buffers": "plenty"})


def test_refuses_a_folder_that_is_not_a_data_directory(data_dir: Path) -> None:
    data_dir.mkdir()
    (data_dir / "notes.txt").write_text("mine")
    with pytest.raises(EmbeddedPostgresError, match="neither empty nor a PostgreSQL data directory"):
        embedded.start(data_dir)
    assert (data_dir / "notes.txt").read_text() == "mine"


def test_never_runs_as_root(data_dir: Path) -> None:
    with embedded.start(data_dir, durable=False) as server:
        uid = int(
            next(
                line for line in Path(f"/proc/{server.pid}/status").read_text().splitlines() if line.startswith("Uid:")
            ).split()[1]
        )
        if os.geteuid() == 0:
            assert uid != 0
            assert data_dir.stat().st_uid == uid
        else:
            assert uid == os.geteuid()
        assert query(server.dsn, "SELECT current_user") == embedded.SUPERUSER


def test_the_server_is_started_without_forking_this_process(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No child of ``start`` is asked to switch user itself: ``subprocess`` would have to ``fork`` (not ``vfork``).

    A fork of a process that has loaded gRPC runs gRPC's fork handlers in the child, which has crashed the child with
    SIGSEGV before PostgreSQL started. The switch of user is made by ``setpriv`` in the child instead.
    """
    arguments: list[dict[str, Any]] = []
    real = subprocess.Popen

    class Recording(real):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            arguments.append(kwargs)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Recording)
    with embedded.start(data_dir, durable=False) as server:
        status = Path(f"/proc/{server.pid}/status").read_text().splitlines()
        groups = next(line for line in status if line.startswith("Groups:")).split()[1:]
        if os.geteuid() == 0:
            assert groups == []
    assert len(arguments) >= 2  # initdb and the server
    for kwargs in arguments:
        assert not {"user", "group", "extra_groups", "preexec_fn"} & {key for key, value in kwargs.items() if value}
