"""Following a game: `GameWatch` keeps one game's `EngineService.Watch` stream open across broken connections
and restarting engines, and hands every envelope to the client once, in version order, and every turn as it comes.

The engine's stream sends the game's envelopes after ``from_version``, then the new ones as they are recorded, and
ends with a ``WatchEnd``: the game is over (``GAME_ENDED``), or the server is stopping (``DRAINING``: another
replica answers the next watch). The newest envelope of each change carries the ``Turn`` it leads to — who may act
and, for the client's seat when it may, its legal actions and view — and a stream that opens at the game's current
version starts with the turn alone: a client learns of its turn here and needs no other call to play. It asks for one
message per change (``WatchRequest.batched``: the events of a command, or a backlog, come together in ``envelopes``,
the turn after the last) unless told not to, and reads both forms alike: every envelope of a message is handed over in
order, then the message's turn. A stream can
also break (the connection is lost, the engine restarts). Each new stream asks for the envelopes after the last
version received, so none is missed, and an envelope at or below it is skipped, so none is handed over twice; a
turn older than the last one handed over is skipped too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from paiju.sdk.calls import Metadata
from paiju.sdk.refusals import RETRYABLE, backoff
from paiju.v1 import engine_pb2

Received = Callable[[engine_pb2.Envelope], Awaitable[None]]
Turned = Callable[[engine_pb2.Turn], Awaitable[None]]


async def _retryable(error: grpc.aio.AioRpcError) -> bool:
    return error.code() in RETRYABLE


async def _draining(reason: int | None) -> bool:
    return reason == engine_pb2.WATCH_END_REASON_DRAINING


async def _nothing() -> None:
    return None


async def _no_turn(turn: engine_pb2.Turn) -> None:
    return None


def _single(reply: engine_pb2.WatchResponse) -> tuple[engine_pb2.Envelope, ...]:
    """The envelope of a message of one event (a stream not batched), if it holds one."""
    return (reply.envelope,) if reply.HasField("envelope") else ()


class GameWatch:
    """Follows one game's Watch stream from ``version`` on until the game is over (as the hooks judge it).

    Hooks (coroutine functions), each with a default:

    - ``received(envelope)``: every envelope after the last received, in version order, each once; `version` is
      already the envelope's when it is called.
    - ``on_turn(turn)``: each turn the stream brings, after the envelope it goes with, never one older than the last
      handed over (`turn` is already it when it is called). Watching with ``views`` asks for the client's view in
      every turn, not only in those its seat may act in.
    - ``batched``: ask for one message per change (default), or one per event (False: the stream as an engine that
      does not know ``WatchRequest.batched`` sends it).
    - ``until_turn``: ask to be told only when the seat may act (or the game ends), with every event since the last
      message (``WatchRequest.until_turn``): for a seat's client that acts from the stream and draws nothing between
      its turns, such as a bot. The events still all come, in order, only later.
    - ``on_break(error) -> bool``: the stream broke with ``error``: watch again (True) or stop following (False);
      raise to stop with an error. Default: watch again after a retryable failure (`RETRYABLE`).
    - ``on_close(reason) -> bool``: the stream ended, with its ``WatchEnd`` reason (``None`` without one): watch
      again (True) or stop, the game being over (False). Default: watch again only when the server was draining.
    - ``on_reconnect()``: the first answer of a stream after a broken one.

    Before watching again, it waits ``pause(failures)`` seconds, ``failures`` counting the broken or ended streams
    since the last envelope received. ``metadata`` is asked before each stream (a token renewed meanwhile is used).
    """

    def __init__(
        self,
        stub: Any,
        game_id: str,
        received: Received,
        *,
        version: int = 0,
        metadata: Callable[[], Metadata] = tuple,
        on_break: Callable[[grpc.aio.AioRpcError], Awaitable[bool]] = _retryable,
        on_close: Callable[[int | None], Awaitable[bool]] = _draining,
        on_reconnect: Callable[[], Awaitable[None]] = _nothing,
        on_turn: Turned = _no_turn,
        views: bool = False,
        batched: bool = True,
        until_turn: bool = False,
        pause: Callable[[int], float] = backoff,
    ) -> None:
        self.stub = stub
        self.game_id = game_id
        self.received = received
        self.version = version
        """The last version received (or the one to start after): a new stream resumes after it."""
        self.metadata = metadata
        self.on_break = on_break
        self.on_close = on_close
        self.on_reconnect = on_reconnect
        self.on_turn = on_turn
        self.views = views
        self.batched = batched
        self.until_turn = until_turn
        self.pause = pause
        self.turn: engine_pb2.Turn | None = None
        """The last turn handed over."""
        self.failures = 0
        """Broken or ended streams since the last envelope received."""

    async def run(self) -> None:
        """Follow the game until a hook says to stop (or raises, or the task is cancelled)."""
        broken = False
        while True:
            request = engine_pb2.WatchRequest(
                game_id=self.game_id,
                from_version=self.version,
                views=self.views,
                batched=self.batched,
                until_turn=self.until_turn,
            )
            stream = self.stub.Watch(request, metadata=tuple(self.metadata()))
            reason: int | None = None
            try:
                async for reply in stream:
                    if broken:
                        broken = False
                        await self.on_reconnect()
                    if reply.HasField("end"):  # the stream's last message
                        reason = reply.end.reason
                        break
                    for envelope in reply.envelopes if reply.envelopes else _single(reply):
                        if envelope.version > self.version:
                            self.version = envelope.version
                            self.failures = 0
                            await self.received(envelope)
                    if reply.HasField("turn") and (self.turn is None or reply.turn.version >= self.turn.version):
                        self.turn = reply.turn
                        self.failures = 0
                        await self.on_turn(reply.turn)
            except grpc.aio.AioRpcError as e:
                self.failures += 1
                broken = True
                if not await self.on_break(e):
                    return
                await asyncio.sleep(self.pause(self.failures))
                continue
            finally:
                stream.cancel()
            if not await self.on_close(reason):
                return
            self.failures += 1
            await asyncio.sleep(self.pause(self.failures))
