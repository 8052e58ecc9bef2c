"""The embedded nats-server of `make run` (and of the suite and the benchmarks) runs Go's scheduler on
`paiju.dev.stack.NATS_GO_THREADS` threads unless the operator's environment sets ``GOMAXPROCS``: with a thread per
core an idle-most-of-the-time server spends more CPU waking threads than on messages (docs/operations.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from paiju.dev.stack import NATS_GO_THREADS, embedded_nats, nats_environment

pytestmark = pytest.mark.integration


def _environment_of_server_in(folder: Path) -> dict[str, str]:
    """The environment of the running nats-server whose store is under ``folder`` (from ``/proc``)."""
    for process in Path("/proc").iterdir():
        if not process.name.isdigit():
            continue
        try:
            command = (process / "cmdline").read_bytes().split(b"\0")
            if command[0].endswith(b"nats-server") and str(folder).encode() in command:
                pairs = (process / "environ").read_bytes().split(b"\0")
                return dict(p.decode().split("=", 1) for p in pairs if b"=" in p)
        except OSError:  # a process that ended meanwhile
            continue
    raise AssertionError(f"no nats-server with its store in {folder}")


def test_the_embedded_server_runs_go_on_one_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOMAXPROCS", raising=False)
    with embedded_nats(tmp_path / "data"):
        assert _environment_of_server_in(tmp_path / "data")["GOMAXPROCS"] == str(NATS_GO_THREADS) == "1"


def test_the_operators_gomaxprocs_is_kept() -> None:
    assert nats_environment({"PATH": "/bin"}) == {"PATH": "/bin", "GOMAXPROCS": "1"}
    assert nats_environment({"GOMAXPROCS": "4"})["GOMAXPROCS"] == "4"
    assert nats_environment({"GOMAXPROCS": ""})["GOMAXPROCS"] == "1", "an empty setting is no setting"
