"""The terminal client's lobby flows against a stand-in LobbyService (the contract of lobby.proto) and the real
in-process engine: `play` opens a table, seats bots, starts the match, plays with the table watch open (its
presence) and quits cleanly; `watch TABLE` spectates a running match to its end with a spectator token."""

from __future__ import annotations

import io
import re
from typing import Any

import pexpect
import pytest

from paiju.terminal.client.render import PROMPT
from paiju.v1 import lobby_pb2, lobby_pb2_grpc, spectators_pb2

from ..support.fake_lobby import FakeLobby
from ..support.waiting import wait_until_blocking
from .driver import EngineThread, spawn_client, zlj_bots

pytestmark = pytest.mark.e2e  # the terminal client as a process on a pseudo-terminal


def _lobby(engine: EngineThread, pause: float = 0.0) -> tuple[str, FakeLobby]:
    def bots(game_id: str, seats: dict[int, str]) -> Any:
        return zlj_bots(engine.stub, game_id, seats, seed=9, pause=pause)

    address, lobby = engine.serve(
        lobby_pb2_grpc.add_LobbyServiceServicer_to_server, lambda: FakeLobby(engine.stub, bots)
    )
    return address, lobby


@pytest.mark.parametrize(
    ("signin", "first"),
    [([], "Guest"), (["--name", "Alice", "--password", "correct horse battery", "--register"], "Register")],
    ids=["guest", "registered"],
)
def test_play_opens_a_table_fills_it_with_bots_plays_and_quits(signin: list[str], first: str) -> None:
    with EngineThread(seed=21) as engine:
        address, lobby = _lobby(engine)
        child = spawn_client("play", "zlj", "--lobby", address, "--engine", engine.address, "--deals", "1", *signin)
        log = io.StringIO()
        child.logfile_read = log
        try:
            child.expect_exact(PROMPT)
            # seated at seat 0 of a table of bots, the match running, the table's watch open (presence)
            assert lobby.calls[:2] == [first, "CreateTable"]
            assert lobby.calls.count("AddBot") == 5 and "StartMatch" in lobby.calls
            (table,) = lobby.tables.values()
            assert table.status == lobby_pb2.TABLE_STATUS_PLAYING
            assert [s.bot for s in table.seats] == [False, True, True, True, True, True]
            assert lobby.issued == [(table.seats[0].player_id, 0)]
            assert sum(lobby.watching.values()) == 1
            child.sendline("q")
            child.expect_exact("Bye.")
            child.expect(pexpect.EOF, timeout=10)
        finally:
            child.close()
        output = log.getvalue()
        assert child.exit_code() == 0, output
        assert "seat 1 (B, bot-1)" in output and "seat 0 (A, you)" in output
        wait_until_blocking(lambda: not sum(lobby.watching.values()), "the table's watch (the presence) to end")
        engine.call(lobby.close)


def test_watch_spectates_a_running_match_to_its_end() -> None:
    with EngineThread(seed=23) as engine:
        address, lobby = _lobby(engine, pause=0.01)
        table = lobby.table_with_bots()
        engine.call(lambda: lobby.start(table))
        child = spawn_client("watch", table.table_id, "--lobby", address, "--engine", engine.address, timeout=60)
        log = io.StringIO()
        child.logfile_read = log
        try:
            child.expect_exact("The match is over.")
            child.expect(pexpect.EOF, timeout=10)
        finally:
            child.close()
        output = log.getvalue()
        assert child.exit_code() == 0, output
        (_, seat) = lobby.issued[0]
        assert seat is None  # JoinGame answered a spectator's token
        assert "Match over, " in output and "seat 2 (A, bot-2)" in output
        # its first line, said before the client loads gRPC, the contract, the rules and the game's history
        first = output.replace("\r", "").lstrip("\n").splitlines()[0]
        assert first == f"Watching table {table.table_id} (the lobby at {address}, the engine at {engine.address})..."
        assert "Your hand" not in output  # a spectator sees no hand
        assert "Delayed by" not in output  # a public table is watched live
        engine.call(lobby.close)


def test_watch_of_a_delayed_table_says_its_delay_once_and_counts_no_deadline() -> None:
    """A spectator of a table delayed by 4 moves (docs/rules/spectators.md, D-SPEC-2) is told so once; the turns it
    receives carry deadlines that passed moves ago (the table has a turn timer), and none is shown."""
    with EngineThread(seed=23) as engine:
        address, lobby = _lobby(engine, pause=0.01)
        table = lobby.table_with_bots(spectators=spectators_pb2.SpectatorPolicy(delay_moves=4), turn_seconds=60)
        engine.call(lambda: lobby.start(table))
        child = spawn_client("watch", table.table_id, "--lobby", address, "--engine", engine.address, timeout=60)
        log = io.StringIO()
        child.logfile_read = log
        try:
            child.expect_exact("The match is over.", timeout=30)
            child.expect(pexpect.EOF, timeout=10)
        except pexpect.TIMEOUT:
            raise AssertionError(log.getvalue()[-3000:]) from None
        finally:
            child.close()
        output = log.getvalue().replace("\r", "")
        assert child.exit_code() == 0, output
        assert lobby.issued[0][1] is None  # a spectator's token: the engine shows it the game 4 moves behind
        assert output.count("Delayed by 4 moves") == 1, output
        assert "Delayed by 4 moves: this table's spectators see its game 4 moves behind." in output.splitlines()
        assert not re.search(r"\d+ s left", output), output
        assert "Match over, " in output
        engine.call(lobby.close)
