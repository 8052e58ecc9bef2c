"""Calls that ride out an unreachable engine: a unary call tried again after a retryable failure (`call`), and a
move sent so that it applies once however often it is sent (`act`), by an `Act` call or on a seat's open
`ActStream`.

A move carries a client command id; the engine answers a command id it has applied already as the exact retry it
is (the version after it), never as a second move. So after a failure that says nothing of the move (the
connection was lost, the deadline passed, the server was stopping: `RETRYABLE`) the same request, with the same
command id, is sent again. A move with ``expected_version`` is refused as stale (ABORTED) once the game has moved
past that version: `act` raises `Stale`, and the client reads the game again and decides anew (a new move, a new
command id).
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
from google.rpc import status_pb2

from paiju.sdk.refusals import RETRYABLE, Refusal, backoff, refusal_of
from paiju.v1 import engine_pb2

Metadata = Sequence[tuple[str, str]]
RETRY_SECONDS = 30.0
"""How long a call is tried again, by default, while its failures are retryable."""
STALE = grpc.StatusCode.ABORTED
"""The code of a move sent with an ``expected_version`` the game has moved past."""


def retryable_for(seconds: float = RETRY_SECONDS) -> Callable[[grpc.aio.AioRpcError, float], bool]:
    """Try again after a retryable failure (`RETRYABLE`) until ``seconds`` have passed since the first try."""

    def again(error: grpc.aio.AioRpcError, waited: float) -> bool:
        return error.code() in RETRYABLE and waited < seconds

    return again


_PROCESS = uuid.uuid4().hex[:16]
"""A random prefix of this process's command ids: ids of different processes never meet."""
_COUNT = itertools.count(1)


def new_command_id() -> str:
    """A fresh client command id (one per decision: a retry of the decision keeps it): this process's random prefix
    and a counter, unique without drawing random bytes from the system each time."""
    return f"{_PROCESS}{next(_COUNT):x}"


async def call(
    method: Callable[..., Awaitable[Any]],
    request: Any,
    *,
    metadata: Callable[[], Metadata],
    timeout: float | None,
    again: Callable[[grpc.aio.AioRpcError, float], bool] | None = None,
    pause: Callable[[int], float] = backoff,
) -> Any:
    """``method(request)`` until it answers: after a failure, ``again(error, seconds since the first try)`` says
    whether to send the same request again (by default `retryable_for`), after ``pause(failures)`` seconds;
    otherwise the failure is raised. ``metadata`` is asked before each try (a token renewed meanwhile is used)."""
    retry = again if again is not None else retryable_for()
    loop = asyncio.get_running_loop()
    started = loop.time()
    failures = 0
    while True:
        try:
            return await method(request, metadata=tuple(metadata()), timeout=timeout)
        except grpc.aio.AioRpcError as e:
            failures += 1
            if not retry(e, loop.time() - started):
                raise
        await asyncio.sleep(pause(failures))


class Stale(Exception):
    """The move was refused as stale (ABORTED): the game moved past its ``expected_version`` first (another seat,
    another client of the seat, a turn timer). Read the game again and decide anew."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


_CODES = {code.value[0]: code for code in grpc.StatusCode}


def refused_error(status: status_pb2.Status) -> grpc.aio.AioRpcError:
    """A refusal `EngineService.ActStream` sent in an answer, as the error the same `Act` call would have raised: its
    code and message, and its `google.rpc.Status` in the trailer where `refusal_of` reads it."""
    return grpc.aio.AioRpcError(
        _CODES.get(status.code, grpc.StatusCode.UNKNOWN),
        grpc.aio.Metadata(),
        grpc.aio.Metadata(("grpc-status-details-bin", status.SerializeToString())),
        status.message,
    )


def _ended(why: str) -> grpc.aio.AioRpcError:
    """A broken act stream, as a retryable failure of the move (the same command id on a new stream applies once)."""
    return grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(), why)


class ActStream:
    """A seat's moves over one `EngineService.ActStream` instead of an `Act` call each: `Act` is called as the stub's
    `Act` is (so `act` and `call` take it in the stub's place) and answers, or raises, as the call would have. The
    stream opens at the first move and again after it broke or the metadata changed (a renewed token); one move at
    a time. ``close`` when the seat is done."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub
        self._call: Any = None
        self._opened_with: tuple[tuple[str, str], ...] = ()
        self._lock = asyncio.Lock()

    async def Act(
        self, request: engine_pb2.ActRequest, *, metadata: Metadata, timeout: float | None = None
    ) -> engine_pb2.ActResponse:
        async with self._lock:
            opened_with = tuple(metadata)
            if self._call is None or opened_with != self._opened_with or self._call.done():
                self.close()
                self._call = self._stub.ActStream(metadata=opened_with)
                self._opened_with = opened_with
            call = self._call
            try:
                async with asyncio.timeout(timeout):
                    try:
                        await call.write(engine_pb2.ActStreamRequest(act=request))
                    except grpc.aio.AioRpcError as e:
                        # the stream ended as the request was sent (gRPC then reports its own INTERNAL, not the
                        # stream's status): a new stream, on which the same request applies once, will say why
                        raise _ended("the act stream ended while the move was sent") from e
                    result = await call.read()
            except TimeoutError:
                self.close()
                raise grpc.aio.AioRpcError(
                    grpc.StatusCode.DEADLINE_EXCEEDED, grpc.aio.Metadata(), grpc.aio.Metadata(), "no answer in time"
                ) from None
            except BaseException:
                self.close()
                raise
            if result is grpc.aio.EOF or result.command_id not in (request.command_id, ""):
                # the stream ended, or answered another request: a new stream for the next try (an answer without
                # a command id is to a request the engine could not read: this one, answers come in order)
                self.close()
                raise _ended("the act stream ended")
        if result.HasField("refused"):
            raise refused_error(result.refused)
        accepted: engine_pb2.ActResponse = result.accepted
        return accepted

    def close(self) -> None:
        """End the stream (a move in flight fails)."""
        if self._call is not None:
            self._call.cancel()
            self._call = None


async def act(
    stub: Any,
    request: engine_pb2.ActRequest,
    *,
    metadata: Callable[[], Metadata],
    timeout: float | None,
    again: Callable[[grpc.aio.AioRpcError, float], bool] | None = None,
    pause: Callable[[int], float] = backoff,
) -> int:
    """Send a move with `EngineService.Act` and return the game's version after it. A request without a command
    id is given one; every retry (`call`, by default after retryable failures for `RETRY_SECONDS`) sends that same
    request, so the move applies once. Raises `Stale` for a stale ``expected_version``, else the refusal's
    `grpc.aio.AioRpcError`."""
    if not request.command_id:
        request.command_id = new_command_id()
    try:
        reply = await call(stub.Act, request, metadata=metadata, timeout=timeout, again=again, pause=pause)
    except grpc.aio.AioRpcError as e:
        if e.code() == STALE:
            raise Stale(refusal_of(e)) from e
        raise
    return int(reply.version)
