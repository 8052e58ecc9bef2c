"""One stream consumer with tracking: how every projection and reaction of Paiju follows a stream.

A `Consumer` reads a stream of the event store in order, in bounded batches (`EventStore.read_all` with a limit:
never the whole backlog in memory), hands each batch to its handler and moves its checkpoint — the last stream
sequence handled — in a `Tracking` store. A batch is handled inside the tracking's transaction, and the checkpoint
moves in the same commit: that commit is the acknowledgement (there is no other), so

- a handler that fails, or a process that dies before the commit, leaves the checkpoint where it was, and the
  batch is read again from there (what the handler wrote in the transaction is rolled back with it);
- a restart resumes at the checkpoint: nothing is lost, nothing handled twice by a transactional handler;
- with an *exclusive* tracking (PostgreSQL: the checkpoint row is locked for the batch; memory: a lock), consumers
  of one name on several replicas take turns, each batch handled once and in stream order.

Projections (read models in PostgreSQL) write their rows through the transaction's connection, so applying a batch
and moving the checkpoint are one atomic step. Reactions (creating a match's game, opening a tournament's tables,
recording a result) act on other aggregates, outside any transaction: they are idempotent (deterministic command
ids), so a batch handled again after a crash does what handling it once did. The engine, which has no PostgreSQL,
keeps its checkpoints in a NATS key-value bucket (`KeyValueTracking`): not exclusive, the checkpoint moves by
compare-and-set, and a batch two replicas handled at once is harmless for the same reason.

A consumer is woken by the store's feed when something is appended and otherwise looks every `POLL_SECONDS`, so an
idle consumer costs nothing but the poll. `tests/platform/consumer/` holds the contract every tracking backend and
every store passes, for a new backend to reuse.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from paiju.platform.errors import Refused
from paiju.platform.repository import CommandIdReused
from paiju.platform.retry import Backoff, report
from paiju.platform.store import EventStore, Recorded

BATCH = 500
"""Stream sequences read per batch."""
ADOPT_ATTEMPTS = 20
POLL_SECONDS = 2.0
"""How often an idle consumer looks at its stream when the feed woke it for nothing (a net under the feed)."""
log = structlog.get_logger("paiju.consumer")


@dataclass(slots=True)
class Tracked:
    """One batch's transaction: the checkpoint it starts from and, for a transactional tracking, the connection
    its handler writes through (``None`` otherwise)."""

    sequence: int
    connection: Any = None
    advanced: int | None = field(default=None)

    def advance(self, sequence: int) -> None:
        """Move the checkpoint to ``sequence`` when this transaction commits."""
        self.advanced = sequence


class Tracking(Protocol):
    """Where consumers keep their checkpoints."""

    exclusive: bool
    """Whether batches of one consumer name are handled one at a time across every process."""

    async def checkpoint(self, name: str) -> int:
        """The last stream sequence consumer ``name`` handled (0: none)."""
        ...

    def batch(self, name: str) -> AbstractAsyncContextManager[Tracked]:
        """A transaction for one batch of consumer ``name``: committed, with the checkpoint moved to what the
        handler `Tracked.advance`d to, when the block ends; rolled back when it raises."""
        ...

    async def reset(self, name: str, clear: Callable[[Tracked], Awaitable[None]]) -> None:
        """Run ``clear`` (empty the projection) and set the checkpoint back to 0, in one transaction."""
        ...

    async def seed(self, name: str, sequence: int) -> None:
        """Set the checkpoint to ``sequence`` if consumer ``name`` has none yet (an earlier position taken over)."""
        ...


class Handler(Protocol):
    """A projection or reaction: its name (the checkpoint's key) and what it does with a batch."""

    name: str

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        """Handle ``batch`` (events in stream order after ``tracked.sequence``) inside the batch's transaction."""
        ...


class Rebuildable(Handler, Protocol):
    async def clear(self, tracked: Tracked) -> None:
        """Empty what the projection wrote (a rebuild), inside the transaction that resets its checkpoint."""
        ...


class Consumer:
    """Keeps one handler current with one stream."""

    def __init__(
        self,
        store: EventStore,
        tracking: Tracking,
        handler: Handler,
        *,
        batch: int = BATCH,
        wake: Callable[[Recorded], bool] = lambda _: True,
        partitions: frozenset[int] | None = None,
    ) -> None:
        """``wake``: which appended events wake the running consumer at once (the others wait for the next event
        that does, or the poll): a reaction to rare events need not read its stream after every append.
        ``partitions``: read only the events of the aggregates in these partitions of the stream (one of several
        consumers sharing a projection out, each with its own checkpoint)."""
        if batch < 1:
            raise ValueError("a batch holds at least one stream sequence")
        self._store = store
        self._tracking = tracking
        self._handler = handler
        self._batch = batch
        self._partitions = partitions
        self._wakes = wake if partitions is None else lambda r: store.partition(r.aggregate) in partitions and wake(r)
        self._wake = asyncio.Event()

    @property
    def name(self) -> str:
        return self._handler.name

    @property
    def handler(self) -> Handler:
        return self._handler

    async def checkpoint(self) -> int:
        return await self._tracking.checkpoint(self.name)

    async def step(self) -> int:
        """Read and handle the next batch after the checkpoint; how many events it read (0: nothing new)."""
        async with self._tracking.batch(self.name) as tracked:
            events = await self._store.read_all(
                after_sequence=tracked.sequence, limit=self._batch, partitions=self._partitions
            )
            if not events:
                return 0
            await self._handler.apply(tracked, events)
            tracked.advance(events[-1].sequence)
        return len(events)

    async def catch_up(
        self, until: int | None = None, timeout: float | None = None, on_step: Callable[[int], object] | None = None
    ) -> int:
        """Handle batches until nothing is left after the checkpoint (with ``until``: until the checkpoint reaches
        that stream sequence, waiting for it to be stored); the events read. `TimeoutError` after ``timeout``.
        ``on_step`` hears the events of each batch (a progress bar)."""
        read = 0
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if until is not None and await self.checkpoint() >= until:
                return read
            step = await self.step()
            read += step
            if step:
                if on_step is not None:
                    on_step(step)
                continue
            if until is None:
                return read
            if deadline is not None and loop.time() > deadline:
                raise TimeoutError(f"{self.name} did not reach stream sequence {until}")
            await asyncio.sleep(0.05)

    async def run(self, stop: asyncio.Event) -> None:
        """Keep the handler current until ``stop``: woken by the store's feed, with a slow poll as a net; a failed
        batch is read again from the checkpoint after a backoff (nothing half-done stays)."""

        def appended(recorded: Recorded) -> None:
            if self._wakes(recorded):
                self._wake.set()

        following = False
        backoff = Backoff()
        while not stop.is_set():
            self._wake.clear()
            try:
                if not following:  # the feed is only a wake-up: without it, the poll still reads on
                    await self._store.follow(appended)
                    following = True
                await self.catch_up()
                backoff.succeeded()
            except Exception as e:
                report(log, "a stream consumer's batch failed; it will be read again", e, consumer=self.name)
                await backoff.wait(stop)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_first(self._wake, stop), timeout=POLL_SECONDS)

    async def adopt(self, client: Any, stream: str, durable: str) -> None:
        """Take over from the JetStream durable consumer ``durable`` of ``stream``, through which an earlier Paiju
        did this consumer's work: its acknowledged position becomes the checkpoint (when there is none yet), then
        it is deleted. Without it, the first start after the upgrade would handle the whole stream again."""
        import nats.errors
        from nats.js.errors import NotFoundError

        js = client.jetstream()
        for attempt in range(ADOPT_ATTEMPTS):
            try:
                try:
                    info = await js.consumer_info(stream, durable)
                except NotFoundError:
                    return
                floor = int(info.ack_floor.stream_seq or 0) if info.ack_floor is not None else 0
                if floor:
                    await self._tracking.seed(self.name, floor)
                with contextlib.suppress(NotFoundError):
                    await js.delete_consumer(stream, durable)
                log.info("took over from a durable consumer", consumer=self.name, durable=durable, checkpoint=floor)
                return
            except (nats.errors.TimeoutError, nats.errors.NoRespondersError) as e:
                if attempt == ADOPT_ATTEMPTS - 1:  # the stream is handled again from the start: idempotent, slower
                    report(log, "could not take over from a durable consumer", e, consumer=self.name)
                    return
                await asyncio.sleep(0.5)

    async def reset(self) -> None:
        """Empty the projection and set its checkpoint back to 0: the next steps replay the stream (a rebuild)."""
        clear = getattr(self._handler, "clear", None)

        async def nothing(_: Tracked) -> None:
            return None

        await self._tracking.reset(self.name, clear or nothing)


async def _first(*events: asyncio.Event) -> None:
    waits = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def in_background(consumer: Consumer, stop: asyncio.Event) -> asyncio.Task[None]:
    """`Consumer.run` as a task (it restarts its batches itself until ``stop``)."""
    return asyncio.create_task(consumer.run(stop), name=f"consumer:{consumer.name}")


class Reaction:
    """A handler that reacts to each stored event (its bytes) by acting on other aggregates: creating a match's
    game, opening a round's tables, recording a result. ``react`` must be idempotent (deterministic command ids),
    since a batch is handled again when it failed halfway or, with a non-exclusive tracking, by two replicas.

    An act the aggregate refuses (a `Refused`: the decision is made and will not change; or a command id already
    used by another command) is logged and the event passed over, so that one event the rules refuse does not
    hold up every event after it; anything else (a dependency away, a bug) fails the batch, which is read again."""

    def __init__(self, name: str, react: Callable[[bytes], Awaitable[Any]]) -> None:
        self.name = name
        self._react = react

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        for recorded in batch:
            try:
                await self._react(recorded.data)
            except (Refused, CommandIdReused) as e:
                log.error(
                    "a reaction was refused; the event is passed over",
                    consumer=self.name,
                    aggregate=recorded.aggregate,
                    version=recorded.version,
                    refusal=str(e),
                )


class MemoryTracking:
    """Checkpoints in this process's memory (tests, tools): exclusive by a lock per name; a batch's checkpoint
    moves only when its block ends without an error."""

    exclusive = True

    def __init__(self) -> None:
        self._checkpoints: dict[str, int] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def checkpoint(self, name: str) -> int:
        return self._checkpoints.get(name, 0)

    @asynccontextmanager
    async def batch(self, name: str) -> AsyncIterator[Tracked]:
        async with self._locks.setdefault(name, asyncio.Lock()):
            tracked = Tracked(self._checkpoints.get(name, 0))
            yield tracked
            if tracked.advanced is not None:
                self._checkpoints[name] = tracked.advanced

    async def reset(self, name: str, clear: Callable[[Tracked], Awaitable[None]]) -> None:
        async with self._locks.setdefault(name, asyncio.Lock()):
            await clear(Tracked(self._checkpoints.get(name, 0)))
            self._checkpoints.pop(name, None)

    async def seed(self, name: str, sequence: int) -> None:
        self._checkpoints.setdefault(name, sequence)


class PostgresTracking:
    """Checkpoints in a PostgreSQL table ``(projection text primary key, sequence bigint)`` of the service's own
    database (``lobby_checkpoints``, ``scoring_checkpoints``). A batch is one transaction: the checkpoint row is
    locked (``FOR UPDATE``) first, so consumers of one name on several replicas take turns, and the handler writes
    its rows through the same connection."""

    exclusive = True

    def __init__(self, pool: Any, table: str) -> None:
        if not table.isidentifier():
            raise ValueError(f"not a table name: {table!r}")
        self._pool = pool
        self._table = table

    async def checkpoint(self, name: str) -> int:
        found = await self._pool.fetchval(f"SELECT sequence FROM {self._table} WHERE projection = $1", name)
        return int(found or 0)

    @asynccontextmanager
    async def batch(self, name: str) -> AsyncIterator[Tracked]:
        async with self._pool.acquire() as connection, connection.transaction():
            await connection.execute(
                f"INSERT INTO {self._table} (projection, sequence) VALUES ($1, 0) ON CONFLICT DO NOTHING", name
            )
            done = await connection.fetchval(
                f"SELECT sequence FROM {self._table} WHERE projection = $1 FOR UPDATE", name
            )
            tracked = Tracked(int(done or 0), connection)
            yield tracked
            if tracked.advanced is not None:
                await connection.execute(
                    f"UPDATE {self._table} SET sequence = $2 WHERE projection = $1", name, tracked.advanced
                )

    async def reset(self, name: str, clear: Callable[[Tracked], Awaitable[None]]) -> None:
        async with self._pool.acquire() as connection, connection.transaction():
            # the checkpoint row first, as a batch takes it: a reset beside running replicas waits for their batch
            done = await connection.fetchval(
                f"SELECT sequence FROM {self._table} WHERE projection = $1 FOR UPDATE", name
            )
            await clear(Tracked(int(done or 0), connection))
            await connection.execute(f"DELETE FROM {self._table} WHERE projection = $1", name)

    async def seed(self, name: str, sequence: int) -> None:
        await self._pool.execute(
            f"INSERT INTO {self._table} (projection, sequence) VALUES ($1, $2) ON CONFLICT DO NOTHING", name, sequence
        )


class KeyValueTracking:
    """Checkpoints in a NATS JetStream key-value bucket, for a service without a database (the engine). Not
    exclusive: the checkpoint moves by compare-and-set on the key's revision, so of two replicas that handled the
    same batch one moves it and the other's move is dropped; the handlers are idempotent reactions."""

    exclusive = False

    def __init__(self, kv: Any, scope: str = "") -> None:
        self._kv = kv
        self._scope = scope

    @classmethod
    async def open(cls, client: Any, bucket: str, *, scope: str = "", replicas: int = 1) -> KeyValueTracking:
        """The bucket ``bucket`` (created when missing); ``scope`` prefixes every key (the stream consumed, so that
        consumers of one name over different streams keep different checkpoints)."""
        from nats.js.api import KeyValueConfig
        from nats.js.errors import BucketNotFoundError

        js = client.jetstream()
        try:
            kv = await js.key_value(bucket)
        except BucketNotFoundError:
            kv = await js.create_key_value(KeyValueConfig(bucket=bucket, replicas=replicas, history=1))
        return cls(kv, scope)

    def _key(self, name: str) -> str:
        return f"{self._scope}.{name}" if self._scope else name

    async def _read(self, name: str) -> tuple[int, int]:
        from nats.js.errors import KeyNotFoundError

        try:
            entry = await self._kv.get(self._key(name))
        except KeyNotFoundError:
            return 0, 0
        value = int(entry.value.decode()) if entry.value else 0
        return value, int(entry.revision or 0)

    async def checkpoint(self, name: str) -> int:
        return (await self._read(name))[0]

    @asynccontextmanager
    async def batch(self, name: str) -> AsyncIterator[Tracked]:
        from nats.js.errors import KeyWrongLastSequenceError

        done, revision = await self._read(name)
        tracked = Tracked(done)
        yield tracked
        if tracked.advanced is None:
            return
        value = str(tracked.advanced).encode()
        try:
            if revision:
                await self._kv.update(self._key(name), value, last=revision)
            else:
                await self._kv.create(self._key(name), value)
        except KeyWrongLastSequenceError:
            log.info("another replica moved the checkpoint first", consumer=name)

    async def reset(self, name: str, clear: Callable[[Tracked], Awaitable[None]]) -> None:
        await clear(Tracked(await self.checkpoint(name)))
        await self._kv.put(self._key(name), b"0")

    async def seed(self, name: str, sequence: int) -> None:
        from nats.js.errors import KeyWrongLastSequenceError

        with contextlib.suppress(KeyWrongLastSequenceError):
            await self._kv.create(self._key(name), str(sequence).encode())
