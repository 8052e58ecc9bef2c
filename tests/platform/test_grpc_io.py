"""The gRPC I/O path Paiju's processes run on (`paiju.platform.grpc_io`): chosen before gRPC loads, the operator's
own choice kept, and the path really taken by the grpcio this project pins."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
import tests.conftest

from paiju import cli
from paiju.platform.grpc_io import CLASSIC_IO, VARIABLE, choose_grpc_io, grpc_environment

CALL = textwrap.dedent(
    """
    import asyncio
    import grpc

    async def main():
        server = grpc.aio.server()
        handler = grpc.unary_unary_rpc_method_handler(lambda request, context: b"pong")
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", {"P": handler}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            print((await channel.unary_unary("/t.T/P")(b"ping")).decode())
        await server.stop(None)

    asyncio.run(main())
    """
)


def test_the_default_is_the_classic_path() -> None:
    assert grpc_environment({"PATH": "/bin"}) == {"PATH": "/bin", VARIABLE: CLASSIC_IO}
    environ: dict[str, str] = {}
    choose_grpc_io(environ)
    assert environ == {VARIABLE: CLASSIC_IO}


@pytest.mark.parametrize("own", ["", "event_engine_client", "-fuse_filters"])
def test_an_operators_own_choice_is_kept(own: str) -> None:
    """Any value of gRPC's variable, an empty one too (gRPC's defaults), is the operator's."""
    assert grpc_environment({VARIABLE: own}) == {VARIABLE: own}
    environ = {VARIABLE: own}
    choose_grpc_io(environ)
    assert environ == {VARIABLE: own}


def test_choosing_says_when_grpc_is_loaded_already() -> None:
    import grpc  # noqa: F401  (loaded: a choice made now no longer counts)

    assert choose_grpc_io({}) is False


def test_the_suite_runs_the_path_the_services_run() -> None:
    """The suite chose before any test module loaded gRPC, so its in-process services run the production path."""
    assert tests.conftest.GRPC_IO_CHOSEN
    assert os.environ.get(VARIABLE) is not None


def test_the_paiju_command_chooses_first(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`paiju` sets the path before it runs any command (each imports gRPC itself, after)."""
    monkeypatch.delenv(VARIABLE, raising=False)
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    capsys.readouterr()
    assert os.environ[VARIABLE] == CLASSIC_IO


def _traced_call(environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A server and a client call in a process of their own, with gRPC's TCP trace on."""
    env = {**environ, "GRPC_VERBOSITY": "debug", "GRPC_TRACE": "tcp"}
    return subprocess.run(
        [sys.executable, "-c", CALL], check=False, env=env, capture_output=True, text=True, timeout=60
    )


EVENT_ENGINE_ENDPOINT = {"endpoint", "posix_endpoint"}
"""The EventEngine's TCP trace comes from these files (`endpoint.cc` on every read and write, `posix_endpoint.cc` only
now and then); the classic path's from `tcp_posix.cc`."""


def _traced_files(call: subprocess.CompletedProcess[str]) -> set[str]:
    """The source files (without `.cc`) gRPC's log lines name, e.g. `endpoint.cc:121]` gives `endpoint`."""
    return set(re.findall(r"\b(\w+)\.cc:\d+\]", call.stderr))


@pytest.mark.integration
def test_the_pinned_grpcio_runs_the_classic_path_on_these_names() -> None:
    """A grpcio upgrade that drops these experiments' names (gRPC then logs "Unknown experiment") or no longer runs
    the classic sockets on them fails here: its TCP trace comes from the classic endpoint, not the EventEngine's."""
    base = {k: v for k, v in os.environ.items() if k != VARIABLE}
    classic = _traced_call(grpc_environment(base))
    assert classic.returncode == 0, classic.stderr
    assert classic.stdout.strip() == "pong"
    assert "Unknown experiment" not in classic.stderr
    assert "tcp_posix" in _traced_files(classic) and not _traced_files(classic) & EVENT_ENGINE_ENDPOINT
    default = _traced_call({**base, VARIABLE: ""})  # gRPC's own default, for contrast: the EventEngine's endpoint
    assert default.returncode == 0, default.stderr
    assert _traced_files(default) & EVENT_ENGINE_ENDPOINT and "tcp_posix" not in _traced_files(default)
