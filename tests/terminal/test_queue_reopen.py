"""The terminal follows its queue entry again when a lobby ends the stream (it is shutting down), after a pause
(`REOPEN_SECONDS`): a lobby that still answers while it drains ends each new stream at once, and the client must not
call it in a loop meanwhile. The lobby here is a stub object (no server): each FindMatch stream it opens answers
``end`` at once, the fourth answers ``found``."""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import os

import pytest

from paiju.terminal.client import matchmaking
from paiju.terminal.client.console import Console
from paiju.v1 import lobby_pb2

from ..support.draining_lobby import DrainingLobby


class Lobby:
    def __init__(self, stub: DrainingLobby) -> None:
        self.stub = stub
        self.metadata = ()


def test_a_stream_the_lobby_ends_is_opened_again_after_a_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    pause = 0.1
    monkeypatch.setattr(matchmaking, "REOPEN_SECONDS", pause, raising=False)
    stub = DrainingLobby(ends=3)
    args = argparse.Namespace(kind="zlj", ranked=False, bot_wait=0)
    out = io.StringIO()

    typed, keys = os.pipe()  # the player types nothing

    async def main() -> lobby_pb2.MatchFound | None:
        return await matchmaking.find_match(Lobby(stub), args, Console(out=out, fd=typed))  # type: ignore[arg-type]

    try:
        found = asyncio.run(main())
    finally:
        os.close(typed)
        os.close(keys)
    assert found is not None and (found.table_id, found.seat) == ("t1", 2)
    assert len(stub.opened) == 4, stub.opened
    gaps = [b - a for a, b in itertools.pairwise(stub.opened)]
    assert all(gap >= pause * 0.99 for gap in gaps), f"reopened without a pause: {gaps}"
    assert out.getvalue().count("The lobby is restarting") == 3
