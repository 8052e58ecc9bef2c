"""The in-memory event store: a fake for fast unit tests, held to the same contract as JetStream."""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Awaitable, Callable, Sequence

from paiju.platform import tracing
from paiju.platform.partitions import partition_of
from paiju.platform.store.base import (
    NEW,
    Arrivals,
    ConcurrencyConflict,
    Position,
    Recorded,
    StoreError,
    check_aggregate,
    check_batch,
    rouses,
    whole,
)


class MemoryEventStore:
    """All aggregates in one process's memory, with stream sequences shared across aggregates like a stream: one
    sequence per append, shared by its events, as JetStream stores a command's events in one message."""

    def __init__(self, partitions: int = 0) -> None:
        self._logs: dict[str, list[Recorded]] = {}
        self._stream: list[Recorded] = []
        """Every event, in stream order (what subscriptions read)."""
        self._subscriptions: set[MemorySubscription] = set()
        self._sequence = 0
        self._followers: list[Callable[[Recorded], None]] = []
        self._partitions = partitions
        self._owned: frozenset[int] | None = None
        self._noticed: dict[str, list[Callable[[int], None]]] = {}

    @property
    def partitions(self) -> int:
        return self._partitions

    def partition(self, aggregate: str) -> int:
        return partition_of(aggregate, self._partitions)

    def unpartitioned(self, aggregate: str) -> bool:
        return False

    async def own(self, partitions: frozenset[int] | None) -> None:
        self._owned = partitions

    async def load(self, aggregate: str, after: Position = NEW) -> list[Recorded]:
        check_aggregate(aggregate)
        return [r for r in self._logs.get(aggregate, ()) if r.version > after.version]

    async def append(
        self, aggregate: str, expected: Position, command_id: str, events: Sequence[bytes]
    ) -> list[Recorded]:
        check_batch(aggregate, command_id, events)
        log = self._logs.setdefault(aggregate, [])
        current = log[-1].position if log else Position()
        if current != expected:
            if log and log[-1].command_id == command_id:
                return [r for r in log if r.command_id == command_id]
            raise ConcurrencyConflict(
                f"{aggregate} is at version {current.version}, not {expected.version}: another writer appended"
            )
        stored = []
        self._sequence += 1
        with tracing.appending("memory", aggregate) as trace:
            for i, data in enumerate(events, start=1):
                stored.append(Recorded(aggregate, expected.version + i, self._sequence, command_id, bytes(data), trace))
                if trace:
                    tracing.remember(aggregate, expected.version + i, trace)
        log.extend(stored)
        self._stream.extend(stored)
        for subscription in self._subscriptions:
            subscription.arrived()
        loop = asyncio.get_running_loop()
        for on_append in self._noticed.get(aggregate, ()):
            loop.call_soon(on_append, stored[-1].version)
        if self._owned is not None and self.partition(aggregate) not in self._owned:
            return stored
        for follower in self._followers:
            for recorded in stored:
                loop.call_soon(follower, recorded)
        return stored

    async def aggregates(self) -> list[str]:
        return sorted(self._logs)

    async def read_all(
        self, after_sequence: int = 0, limit: int | None = None, *, partitions: frozenset[int] | None = None
    ) -> list[Recorded]:
        every = sorted(
            (
                r
                for aggregate, log in self._logs.items()
                if partitions is None or self.partition(aggregate) in partitions
                for r in log
                if r.sequence > after_sequence
            ),
            key=lambda r: r.sequence,
        )
        if limit is None or not every:
            return every
        if partitions is not None:
            return every[: whole(every, limit)]  # a reader of some partitions: at most ``limit`` of their events
        # the next window of ``limit`` sequences that holds any of them (as JetStream reads it)
        first = every[0].sequence
        start = after_sequence + (first - after_sequence - 1) // limit * limit
        return [r for r in every if r.sequence <= start + limit]

    async def subscribe(
        self, after_sequence: int = 0, *, partitions: frozenset[int] | None = None
    ) -> MemorySubscription:
        """(See `EventStore.subscribe`.) A cursor over the stream: nothing is copied until taken."""
        if partitions is not None and not self._partitions:
            raise StoreError("this store is read by partition, but has no partitions")
        subscription = MemorySubscription(self, after_sequence, partitions)
        self._subscriptions.add(subscription)
        return subscription

    async def follow(self, on_event: Callable[[Recorded], None]) -> None:
        self._followers.append(on_event)

    async def notice(self, aggregate: str, on_append: Callable[[int], None]) -> Callable[[], Awaitable[None]]:
        check_aggregate(aggregate)
        self._noticed.setdefault(aggregate, []).append(on_append)

        async def stop() -> None:
            noticed = self._noticed.get(aggregate, [])
            if on_append in noticed:
                noticed.remove(on_append)

        return stop

    async def close(self) -> None:
        self._followers.clear()


class MemorySubscription:
    """(See `paiju.platform.store.Subscription`.) A position in the in-memory stream, woken by every append: a take
    without ``wake`` hands over the first event to arrive at once, timeout or not (a wake-up costs nothing here, so
    nothing is held to be fetched together)."""

    def __init__(self, store: MemoryEventStore, after: int, partitions: frozenset[int] | None) -> None:
        self._store = store
        self._partitions = partitions
        self._position = after
        self._index = bisect.bisect_right(store._stream, after, key=lambda r: r.sequence)
        self._arrivals = Arrivals()
        self._interrupted = False
        self._closed = False

    @property
    def position(self) -> int:
        return self._position

    def arrived(self) -> None:
        self._arrivals.wake()

    def _next(self, limit: int) -> tuple[list[Recorded], int]:
        """The next events (at most ``limit``, whole messages) and the index after them, the position unmoved."""
        stream, found, index = self._store._stream, list[Recorded](), self._index
        while index < len(stream):
            recorded = stream[index]
            if len(found) >= limit and recorded.sequence != found[-1].sequence:
                break  # never part of a message (`whole`)
            index += 1
            if self._partitions is None or self._store.partition(recorded.aggregate) in self._partitions:
                found.append(recorded)
        return found, index

    async def take(
        self, limit: int, timeout: float | None = None, wake: Callable[[Recorded], bool] | None = None
    ) -> list[Recorded]:
        if limit < 1:
            raise ValueError("a take asks for at least one event")
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not self._closed:
            found, index = self._next(limit)
            left = None if deadline is None else deadline - loop.time()
            if found and (
                wake is None
                or len(found) >= limit
                or self._interrupted
                or (left is not None and left <= 0)
                or rouses(wake, found)
            ):
                self._index = index
                self._position = found[-1].sequence
                return found
            if self._interrupted:
                break
            if left is not None and left <= 0:
                return []
            await self._arrivals.wait(left)
        self._interrupted = False
        return []

    def interrupt(self) -> None:
        self._interrupted = True
        self._arrivals.wake()

    async def close(self) -> None:
        self._closed = True
        self._store._subscriptions.discard(self)
        self._arrivals.wake()
