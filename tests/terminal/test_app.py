"""The client's command line: `add_parsers` for the integrator's `paiju` CLI, and its refusals."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from paiju.platform.probe import free_port
from paiju.terminal.client import add_parsers, run_play, run_watch


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="paiju")
    add_parsers(p.add_subparsers(dest="command", required=True))
    return p


def test_play_and_watch_parse_with_their_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAIJU_LOBBY_ADDRESS", "lobby.example:7")
    monkeypatch.delenv("PAIJU_ENGINE_ADDRESS", raising=False)
    args = parser().parse_args(["play", "tractor", "--table", "t1", "--seat", "2"])
    assert (args.func, args.kind, args.table, args.seat, args.bots) == (run_play, "tractor", "t1", 2, True)
    assert (args.lobby, args.engine, args.name, args.game_id) == ("lobby.example:7", "127.0.0.1:50051", None, None)
    args = parser().parse_args(["play"])
    assert args.kind == "zlj" and args.deals is None
    args = parser().parse_args(["watch", "t9", "--engine", "e:1", "--name", "li", "--password", "pw"])
    assert (args.func, args.table, args.engine, args.name, args.password) == (run_watch, "t9", "e:1", "li", "pw")


def test_development_flags_need_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_play(parser().parse_args(["play", "--game", "g1"])) == 2
    assert "--game needs --token" in capsys.readouterr().err
    assert run_watch(parser().parse_args(["watch"])) == 2
    assert "name a TABLE" in capsys.readouterr().err


@pytest.mark.integration  # the client as a process of its own
def test_an_unreachable_lobby_is_reported_and_exits_1() -> None:
    address = f"127.0.0.1:{free_port()}"
    done = subprocess.run(
        [sys.executable, "-m", "paiju.terminal.client", "play", "--lobby", address],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done
    assert f"Guest: the lobby at {address} is not answering. Is the stack running?" in done.stdout
    assert "failed to connect" not in done.stdout.lower(), "in words, not gRPC's"
