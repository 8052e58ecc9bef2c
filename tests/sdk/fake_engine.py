"""A scripted stand-in for an `EngineServiceStub`: each Watch stream and each Act answers as the test says, and
every request is kept, so a test reads what the client sent (the version a stream resumed from, the command id a
retry carried). Import with ``from .fake_engine import ...``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from paiju.v1 import engine_pb2


def failure(code: grpc.StatusCode, details: str = "") -> grpc.aio.AioRpcError:
    """The error a call raises when it fails with ``code`` and no status details."""
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details or code.name)


def envelopes(*versions: int, end: engine_pb2.WatchEndReason.ValueType | None = None) -> list[engine_pb2.WatchResponse]:
    """Watch answers: envelopes of game ``g`` at ``versions``, then a `WatchEnd` with the reason ``end``."""
    replies = [engine_pb2.WatchResponse(envelope=engine_pb2.Envelope(game_id="g", version=v)) for v in versions]
    if end is not None:
        replies.append(engine_pb2.WatchResponse(end=engine_pb2.WatchEnd(reason=end)))
    return replies


@dataclass
class Stream:
    """One Watch stream: its answers, then (when set) the error that breaks it."""

    replies: Sequence[engine_pb2.WatchResponse] = ()
    error: grpc.aio.AioRpcError | None = None
    cancelled: bool = False

    def __aiter__(self) -> AsyncIterator[engine_pb2.WatchResponse]:
        return self._replies()

    async def _replies(self) -> AsyncIterator[engine_pb2.WatchResponse]:
        for reply in self.replies:
            yield reply
        if self.error is not None:
            raise self.error

    def cancel(self) -> bool:
        self.cancelled = True
        return True


@dataclass
class FakeEngine:
    """Answers Watch with ``streams`` in turn and Act with ``acts`` in turn (an error is raised, a version answered)."""

    streams: list[Stream] = field(default_factory=list)
    acts: list[grpc.aio.AioRpcError | int] = field(default_factory=list)
    watched: list[engine_pb2.WatchRequest] = field(default_factory=list)
    opened: list[Stream] = field(default_factory=list)
    acted: list[engine_pb2.ActRequest] = field(default_factory=list)
    metadata: list[tuple[tuple[str, str], ...]] = field(default_factory=list)

    def Watch(self, request: engine_pb2.WatchRequest, metadata: Any = ()) -> Stream:
        self.watched.append(engine_pb2.WatchRequest.FromString(request.SerializeToString()))
        self.metadata.append(tuple(metadata))
        if not self.streams:
            raise AssertionError("watched more often than the test scripted")
        self.opened.append(self.streams.pop(0))
        return self.opened[-1]

    async def Act(
        self, request: engine_pb2.ActRequest, metadata: Any = (), timeout: float | None = None
    ) -> engine_pb2.ActResponse:
        self.acted.append(engine_pb2.ActRequest.FromString(request.SerializeToString()))
        self.metadata.append(tuple(metadata))
        answer = self.acts.pop(0)
        if isinstance(answer, grpc.aio.AioRpcError):
            raise answer
        return engine_pb2.ActResponse(version=answer)

    def versions_watched_from(self) -> list[int]:
        return [r.from_version for r in self.watched]

    def command_ids(self) -> list[str]:
        return [r.command_id for r in self.acted]


def streams(*scripted: Iterable[engine_pb2.WatchResponse] | Stream) -> list[Stream]:
    return [s if isinstance(s, Stream) else Stream(list(s)) for s in scripted]
