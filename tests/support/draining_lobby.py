"""A lobby stub for the clients' queue (no server): each `FindMatch` stream it opens answers ``end`` at once, as a
draining lobby does, until ``ends`` streams have ended; the next answers ``found``. It records when each stream was
opened (`opened`), so a test can tell whether its client paused before opening the next."""

from __future__ import annotations

import time
from typing import Any

import grpc

from paiju.v1 import engine_pb2, lobby_pb2


class FindMatchStream:
    """One FindMatch call: its one answer, then the end of the stream."""

    def __init__(self, answer: lobby_pb2.FindMatchResponse) -> None:
        self.answers = [answer]

    async def read(self) -> Any:
        return self.answers.pop(0) if self.answers else grpc.aio.EOF

    def cancel(self) -> None:
        self.answers.clear()


class DrainingLobby:
    """Ends the first ``ends`` FindMatch streams at once; the next seats the entry at ``table_id``, seat 2."""

    def __init__(self, ends: int, table_id: str = "t1") -> None:
        self.ends = ends
        self.table_id = table_id
        self.opened: list[float] = []

    def FindMatch(self, request: lobby_pb2.FindMatchRequest, metadata: Any = None) -> FindMatchStream:
        self.opened.append(time.monotonic())
        if len(self.opened) <= self.ends:
            return FindMatchStream(lobby_pb2.FindMatchResponse(end=engine_pb2.WatchEnd()))
        return FindMatchStream(lobby_pb2.FindMatchResponse(found=lobby_pb2.MatchFound(table_id=self.table_id, seat=2)))
