"""What keeps the web view within its memory and its sockets whatever its clients do: caches bounded in bytes
(`ByteCache`), and a guard on its connections (`ConnectionGuard`) — at most so many open at once, and a request's
head read within a few seconds, so that clients sending half a request, slowly or never, cannot hold the server's
connections.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

V = TypeVar("V")

BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: 92\r\n\r\n"
    b'{"reason":"RATE_LIMITED","message":"the web view has too many connections open: try again"}\n'
)
"""The answer to a connection over the cap (the body's length is checked at import)."""
assert len(BUSY.partition(b"\r\n\r\n")[2]) == 92


class ByteCache(Generic[V]):
    """A least-recently-used cache that holds at most ``max_bytes`` of values, each counted at the size it is put
    with (an entry bigger than the whole cache is not kept)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[str, tuple[V, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: str, value: V, size: int) -> None:
        """Keep ``value`` as ``size`` bytes (plus its key), forgetting the least recently used to make room."""
        self.pop(key)
        size += len(key)
        if size > self.max_bytes:
            return
        self._entries[key] = (value, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.bytes -= dropped

    def pop(self, key: str) -> V | None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self.bytes -= entry[1]
        return entry[0]

    def items(self) -> list[tuple[str, V]]:
        return [(key, value) for key, (value, _) in self._entries.items()]


class ConnectionGuard:
    """A protocol factory around the HTTP server's (aiohttp's `web.Server`): a connection past ``limit`` open at once
    is answered 503 and closed before the server sees it; a connection whose request head (the request line and
    headers) is not complete ``head_seconds`` after its first byte — or after it connected — is closed. The server's
    own idle timeout covers a kept-alive connection between requests."""

    def __init__(self, factory: Callable[[], Any], limit: int, head_seconds: float) -> None:
        self._factory = factory
        self.limit = limit
        self.head_seconds = head_seconds
        self.open = 0
        self.refused = 0
        """Connections turned away at the cap (on the health page)."""
        self.timed_out = 0
        """Connections closed for a request head that did not come in time (on the health page)."""

    def __call__(self) -> asyncio.Protocol:
        return _Guarded(self, self._factory())


class _Guarded(asyncio.Protocol):
    """One connection: the server's protocol for it, unless it is over the cap, timed while a request head is due."""

    def __init__(self, guard: ConnectionGuard, inner: Any) -> None:
        self._guard = guard
        self._inner = inner
        self._transport: asyncio.Transport | None = None
        self._counted = False
        self._timer: asyncio.TimerHandle | None = None
        self._heads = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a TCP connection's transport: an `asyncio.Transport` by its methods (uvloop's are not of that class)
        stream = self._transport = cast(asyncio.Transport, transport)
        guard = self._guard
        if guard.open >= guard.limit:
            guard.refused += 1
            stream.write(BUSY)
            stream.close()
            return
        guard.open += 1
        self._counted = True
        self._inner.connection_made(stream)
        self._time_head()

    def _time_head(self) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._guard.head_seconds, self._too_slow)

    def _too_slow(self) -> None:
        self._timer = None
        if self._transport is not None and not self._transport.is_closing():
            self._guard.timed_out += 1
            self._transport.abort()

    def data_received(self, data: bytes) -> None:
        if not self._counted:
            return
        self._inner.data_received(data)
        heads = int(getattr(self._inner, "_request_count", 0))  # the requests whose head the server has parsed
        if heads > self._heads:
            self._heads = heads
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        elif data:
            self._time_head()  # part of a next request's head: it is due in time too

    def eof_received(self) -> bool | None:
        if not self._counted:
            return None
        result: bool | None = self._inner.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._counted:
            return
        self._counted = False
        self._guard.open -= 1
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._counted:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._counted:
            self._inner.resume_writing()
