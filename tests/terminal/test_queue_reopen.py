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
import time
from typing import Any

import grpc
import pytest

from paiju.terminal.client import matchmaking
from paiju.terminal.client.console import Console
from paiju.v1 import engine_pb2, lobby_pb2


class Stream:
    def __init__(self, answer: lobby_pb2.FindMatchResponse) -> None:
        self.answers = [answer]

    async def read(self) -> Any:
        return self.answers.pop(0) if self.answers else grpc.aio.EOF

    def cancel(self) -> None:
        self.answers.clear()


class Stub:
    def __init__(self, ends: int) -> None:
        self.ends = ends
        self.opened: list[float] = []

    def FindMatch(self, request: lobby_pb2.FindMatchRequest, metadata: Any = None) -> Stream:
        self.opened.append(time.monotonic())
        if len(self.opened) <= self.ends:
            return Stream(lobby_pb2.FindMatchResponse(end=engine_pb2.WatchEnd()))
        return Stream(lobby_pb2.FindMatchResponse(found=lobby_pb2.MatchFound(table_id="t1", seat=2)))


class Lobby:
    def __init__(self, stub: Stub) -> None:
        self.stub = stub
        self.metadata = ()


def test_a_stream_the_lobby_ends_is_opened_again_after_a_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    pause = 0.1
    monkeypatch.setattr(matchmaking, "REOPEN_SECONDS", pause, raising=False)
    stub = Stub(ends=3)
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
