"""The event store interface and its value types."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from paiju.platform.errors import Contention, Unavailable

MAX_BATCH = 1000
"""Events one append may carry (JetStream's atomic batch limit, which a command too large for one message is
stored in)."""


@dataclass(frozen=True, slots=True)
class Position:
    """Where an aggregate's log ends: its version (events so far) and the stream sequence of its last event.

    ``Position()`` is a new aggregate. Appends name the position they expect, so that of two writers that
    loaded the same position exactly one wins (docs/architecture.md, "Optimistic concurrency and exact retries").
    """

    version: int = 0
    sequence: int = 0


NEW = Position()
"""The position of an aggregate with no events."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """One stored event: its aggregate, 1-based version, stream sequence, the command that caused it, bytes; and the
    trace context of the append that stored it, when it was traced (`paiju.platform.tracing`), which means nothing
    to the rules and is no part of the event's identity."""

    aggregate: str
    version: int
    sequence: int
    command_id: str
    data: bytes
    trace: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)
    """The W3C trace context headers (``traceparent``, ``tracestate``) the event was stored with (``()``: none)."""

    @property
    def position(self) -> Position:
        return Position(self.version, self.sequence)


def whole(events: Sequence[Recorded], limit: int) -> int:
    """How many of ``events`` (in stream order) a batch of at most ``limit`` takes without splitting a message: the
    first ``limit``, and the rest of the message the last of them is in (events stored by one append share a
    stream sequence, and a consumer's checkpoint is a stream sequence: a batch ending inside a message would pass
    over the rest of it). At least one message's events, all of them when there are fewer than ``limit``."""
    count = min(limit, len(events))
    if count:
        last = events[count - 1].sequence
        while count < len(events) and events[count].sequence == last:
            count += 1
    return count


class StoreError(Exception):
    """The store could not do what was asked (the reason says why)."""


class StoreUnavailable(StoreError, Unavailable):
    """The store's server failed or did not answer (NATS away, a read that stalled): try again later."""


class ConcurrencyConflict(StoreError, Contention):
    """Another writer appended to the aggregate since the expected position: reload and decide again."""


class Subscription(Protocol):
    """A stream read from a position on, for as long as its reader lives (`EventStore.subscribe`)."""

    @property
    def position(self) -> int:
        """The stream sequence of the last event taken (at first, the one the subscription started after)."""
        ...

    async def take(
        self, limit: int, timeout: float | None = None, wake: Callable[[Recorded], bool] | None = None
    ) -> list[Recorded]:
        """The next events, at most ``limit`` of them and the rest of the message the last of them is in (`whole`:
        never part of a message), in stream order. Without ``timeout``: those held, or, when none is, the first to
        arrive (however long that takes). With ``timeout`` the take gathers: events stored meanwhile may be held
        until its timeout, to be fetched together (a wake-up of the reader for a burst, not one per event: JetStream
        does, `paiju.platform.store.jetstream.JetStreamSubscription`), and it returns before then only once it holds
        ``limit`` events, or one ``wake`` accepts; a store that hands events over for nothing (the memory store)
        may return the first to arrive at once. Empty when none arrived in time, after `interrupt`, or once closed.
        `StoreUnavailable` (or a NATS error) when the store cannot be read just now: the next call tries again from
        the same position.

        ``wake``: which events end the wait early. Events that arrived are then returned before ``timeout`` only
        when they are ``limit`` or more, or one of them is one ``wake`` accepts (or cannot judge: it raises),
        within a bounded time of its append (JetStream fetches what was stored every
        `paiju.platform.store.jetstream.FETCH_SECONDS` while a take waits); otherwise the take waits on
        and returns what arrived when ``timeout`` is over. So a reader that needs few events soon (a reaction to a
        game's end) is not woken by each of the others: they are taken together."""
        ...

    def interrupt(self) -> None:
        """Make a waiting `take` (or, when none waits, the next one that would wait) return at once: nothing, or,
        for a take with ``wake``, the events that arrived while it waited."""
        ...

    async def close(self) -> None:
        """End the subscription (what the store keeps for it is released)."""
        ...


class EventStore(Protocol):
    async def load(self, aggregate: str, after: Position = NEW) -> list[Recorded]:
        """The events of ``aggregate`` after position ``after``, in order (all of them by default)."""
        ...

    async def append(
        self, aggregate: str, expected: Position, command_id: str, events: Sequence[bytes]
    ) -> list[Recorded]:
        """Append the events of one command atomically, if the aggregate still ends at ``expected``: one message,
        so the events share one stream sequence (`paiju.platform.store.messages`).

        Idempotent per command: appending the same ``command_id`` again right after it was stored returns
        the stored events and writes nothing. Raises `ConcurrencyConflict` when another writer got there first.
        """
        ...

    async def aggregates(self) -> list[str]:
        """The ids of every aggregate with events."""
        ...

    @property
    def partitions(self) -> int:
        """How many partitions the aggregates fall in (`paiju.platform.partitions`; 0: the store has none)."""
        ...

    def partition(self, aggregate: str) -> int:
        """The partition of ``aggregate`` (0 in a store without partitions)."""
        ...

    def unpartitioned(self, aggregate: str) -> bool:
        """Whether ``aggregate`` was stored before the store had partitions (every feed carries it)."""
        ...

    async def own(self, partitions: frozenset[int] | None) -> None:
        """From now on `follow` delivers only the events of aggregates in ``partitions`` (``None``: all)."""
        ...

    async def read_all(
        self, after_sequence: int = 0, limit: int | None = None, *, partitions: frozenset[int] | None = None
    ) -> list[Recorded]:
        """Every event of every aggregate stored after stream sequence ``after_sequence``, in stream order, up to
        the last one stored when called (a replay of the whole stream, for analysts and projections); with
        ``limit``, the events of at most the next ``limit`` stream sequences that hold any (a bounded batch: a
        consumer reads a long backlog batch by batch, never all of it in memory; an empty batch means nothing is
        left). ``partitions``: only the events of aggregates in these partitions (readers in parallel), and with
        ``limit`` at most ``limit`` of them and the rest of the message the last is in (`whole`). A batch never
        ends inside a message: a consumer's checkpoint, the stream sequence of the last event it handled, covers
        every event of that message."""
        ...

    async def subscribe(self, after_sequence: int = 0, *, partitions: frozenset[int] | None = None) -> Subscription:
        """A long-lived reading of the stream from after stream sequence ``after_sequence`` on: every event stored
        after it, by any writer, in stream order, the ones stored before the call and the ones stored later alike,
        taken in bounded batches (`Subscription.take`). It holds a bounded number of events that arrived and were
        not taken yet, never a whole backlog. ``partitions``: only the events of aggregates in these partitions (as
        `read_all` reads them). For the stream consumers (`paiju.platform.consumer`), which follow a stream for as
        long as their process runs: one subscription each, whatever the number of batches."""
        ...

    async def follow(self, on_event: Callable[[Recorded], None]) -> None:
        """From now on, call ``on_event`` with every event appended to any aggregate, by any writer, in stream order.

        Events appended before the call are not delivered (load them). Deliveries happen on the event loop, after
        the append that stored them; a writer in another process is seen as soon as the store delivers it.
        """
        ...

    async def notice(self, aggregate: str, on_append: Callable[[int], None]) -> Callable[[], Awaitable[None]]:
        """Call ``on_append`` with the version of each event appended to ``aggregate`` from now on (a hint, not the
        event: read it; it may come a moment before the store shows it, and is lost while the connection is down),
        until the returned function is awaited. For keeping an aggregate the feed does not carry: it costs nothing
        while nothing is appended."""
        ...

    async def close(self) -> None: ...


class Arrivals:
    """Where a subscription's reader waits for events: `wake` ends the wait, as does a timeout. A future and a
    timer per wait (not an `asyncio.Event` waited for with `asyncio.wait_for`, a task per wait): a consumer waits
    once or twice per batch."""

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        _settle(self._waiter)

    async def wait(self, seconds: float | None) -> None:
        """Until `wake` (or ``seconds`` pass; ``None``: no limit)."""
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = None if seconds is None else loop.call_later(max(0.0, seconds), _settle, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()


def rouses(wake: Callable[[Recorded], bool], events: Iterable[Recorded]) -> bool:
    """Whether any of ``events`` is one ``wake`` accepts, or one it cannot judge (it raises: the event is handled
    as one that wakes, never held back for it)."""
    try:
        return any(map(wake, events))
    except Exception:
        return True


def _settle(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


AGGREGATE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
"""The grammar of an aggregate id: it names a NATS subject (`<prefix>.<id>`), so never a dot, a space, a wildcard or
a control character, and it is short (the contract's `paiju.v1.id` rule is the same, so only an id the contract
admits gets here; this check is the store's own guard all the same)."""
COMMAND_ID = re.compile(r"[!-~]{1,200}")
"""The grammar of a command id: printable ASCII without spaces (it is sent in a NATS header)."""


def check_aggregate(aggregate: str) -> str:
    if not AGGREGATE_ID.fullmatch(aggregate):
        raise StoreError(f"not an aggregate id (1..100 ASCII letters, digits, - or _): {aggregate[:120]!r}")
    return aggregate


def check_batch(aggregate: str, command_id: str, events: Sequence[bytes]) -> None:
    check_aggregate(aggregate)
    if not COMMAND_ID.fullmatch(command_id):
        raise StoreError(f"not a command id (1..200 printable ASCII characters, no spaces): {command_id[:120]!r}")
    if not events:
        raise StoreError("an append needs at least one event")
    if len(events) > MAX_BATCH:
        raise StoreError(f"one append carries at most {MAX_BATCH} events, not {len(events)}")


class Changes:
    """Waiting for an aggregate to change: `wait` until `notify` names it (or a timeout passes, when one is
    given). Those who keep aggregates current from the feed (games, lobby tables) wake their watchers with it; a
    change costs one wake-up per waiter and nothing while nothing changes.

    This is the hot path of every watch message (each watcher waits here between two messages), so a wait costs
    one future, made on the event loop looked up once (`loop`), in a list per aggregate that `notify` takes whole:
    not an `asyncio.Event` per change, whose every wait asks asyncio for the running loop again (a third of a
    spectator message's Python, measured). A waiter that leaves early (cancelled: its stream ended; or its timeout
    passed) takes its future out of the list, so an idle aggregate's watchers that come and go leave nothing
    behind."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[asyncio.Future[bool]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def notify(self, aggregate: str) -> None:
        waiters = self._waiting.pop(aggregate, None)
        if waiters is not None:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(True)

    def notify_all(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for waiters in waiting.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(True)

    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the waits run on: looked up at the first wait, and again only when it no longer runs
        (a test's next loop)."""
        loop = self._loop
        if loop is None or not loop.is_running():
            loop = self._loop = asyncio.get_running_loop()
        return loop

    async def wait(self, aggregate: str, timeout: float | None = None) -> None:
        loop = self.loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        waiters = self._waiting.get(aggregate)
        if waiters is None:
            self._waiting[aggregate] = [waiter]
        else:
            waiters.append(waiter)
        timer = None if timeout is None else loop.call_later(max(0.0, timeout), _time_up, waiter)
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
            if not waiter.done() or waiter.cancelled() or not waiter.result():  # left before a change: out of the list
                self._leave(aggregate, waiter)

    def _leave(self, aggregate: str, waiter: asyncio.Future[bool]) -> None:
        waiters = self._waiting.get(aggregate)
        if waiters is not None:
            with contextlib.suppress(ValueError):
                waiters.remove(waiter)
            if not waiters:
                del self._waiting[aggregate]

    def waiting(self, aggregate: str) -> int:
        """How many wait for ``aggregate`` now (for tests)."""
        return len(self._waiting.get(aggregate, ()))


def _time_up(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)
