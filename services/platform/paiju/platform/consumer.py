"""One stream consumer with tracking: how every projection and reaction of Paiju follows a stream.

A `Consumer` reads a stream of the event store in order, in bounded batches, hands each batch to its handler and
moves its checkpoint — the last stream sequence handled — in a `Tracking` store. A batch is handled inside the
tracking's transaction, and the checkpoint moves in the same commit: that commit is the acknowledgement (there is
no other), so

- a handler that fails, or a process that dies before the commit, leaves the checkpoint where it was, and the
  batch is handled again from there (what the handler wrote in the transaction is rolled back with it);
- a restart resumes at the checkpoint: nothing is lost, nothing handled twice by a transactional handler;
- with an *exclusive* tracking (PostgreSQL: the checkpoint row is locked for the batch; memory: a lock), consumers
  of one name on several replicas take turns, each event handled once and in stream order.

A running consumer (`Consumer.run`) follows its stream with one long-lived subscription (`EventStore.subscribe`,
on JetStream one pull consumer: `paiju.platform.store.jetstream.JetStreamSubscription`), started after its
checkpoint, and cuts what arrives into batches: a batch closes when it holds ``batch`` events or ``linger`` seconds
after its first event, whichever comes first. The first event is handed over as soon as it is stored; the others
are held by the subscription until the linger is over and fetched then in one burst (`Subscription.take` with a
timeout), so a busy stream wakes the consumer once per batch, not once per event. While none of a batch's events
wakes the consumer (``wake``), the subscription holds what arrives until one does, the batch is full or its time is
over (`Subscription.take`'s ``wake``), so events the consumer only passes over do not wake it one by one either.
So a batch costs one transaction, and reading it a pull request or two: no JetStream consumer made, no stream
information asked, per batch; an idle consumer costs its subscription's waiting request. The subscription is told
nothing of the checkpoint, which other replicas and rebuilds move too: each batch's transaction reads the checkpoint
and compares it with where the batch starts —

- at or past the batch's start (another replica handled some or all of it): the events up to the checkpoint are
  passed over, the rest handled;
- behind it (a reset set it back, or the replica that moved it last read less than this subscription had taken):
  nothing is handled, and the subscription starts again from the checkpoint. Events are never skipped.

Batches of replicas need not coincide: whichever locks the checkpoint first handles its batch, and the others pass
over what it handled. A batch whose transaction fails is tried again, as it was, after a backoff.

`Consumer.catch_up` (a rebuild, a start, the tests) reads with `EventStore.read_all`, in bounded batches, until
nothing is left after the checkpoint.

Projections (read models in PostgreSQL) write their rows through the transaction's connection, so applying a batch
and moving the checkpoint are one atomic step. Reactions (creating a match's game, opening a tournament's tables,
recording a result) act on other aggregates, outside any transaction: they are idempotent (deterministic command
ids), so a batch handled again after a crash does what handling it once did. The engine, which has no PostgreSQL,
keeps its checkpoints in a NATS key-value bucket (`KeyValueTracking`): not exclusive, the checkpoint moves by
compare-and-set, and a batch two replicas handled at once is harmless for the same reason.

``tests/platform/test_consumer_contract.py`` holds the contract every tracking backend passes over every store, for
a new backend to reuse.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from paiju.platform import tracing
from paiju.platform.errors import Refused
from paiju.platform.repository import CommandIdReused
from paiju.platform.retry import Backoff, report
from paiju.platform.store import EventStore, Recorded, Subscription

BATCH = 500
"""Events per batch, at most (with `Consumer.catch_up`: stream sequences read per batch)."""
LINGER_SECONDS = 0.05
"""How long a running consumer's batch waits for more events after its first, unless it fills up first."""
LAZY_SECONDS = 2.0
"""How long a batch waits when none of its events wakes the consumer (`Consumer` ``wake``)."""
ADOPT_ATTEMPTS = 20
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
        linger: float = LINGER_SECONDS,
        wake: Callable[[Recorded], bool] = lambda _: True,
        partitions: frozenset[int] | None = None,
    ) -> None:
        """``batch``: the most events a batch holds; ``linger``: how long a running consumer's batch waits for more
        events after its first one arrived (0: a batch is what has arrived). ``wake``: which events the handler
        wants handled soon; a batch of events none of which does waits `LAZY_SECONDS` instead of ``linger`` (or
        until one that does arrives, or it fills up), so that a reaction to rare events (a game's end among every
        game event) is not a transaction every few events: the others only move its checkpoint, in batches.
        ``partitions``: read only the events of the aggregates in these partitions of the stream (one of several
        consumers sharing a projection out, each with its own checkpoint)."""
        if batch < 1:
            raise ValueError("a batch holds at least one stream sequence")
        if linger < 0:
            raise ValueError("a batch cannot wait less than no time")
        self._store = store
        self._tracking = tracking
        self._handler = handler
        self._batch = batch
        self._linger = linger
        self._partitions = partitions
        self._wakes = wake

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
            with tracing.batch(self.name, events):
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
        """Keep the handler current until ``stop``, following the stream with one subscription (see the module):
        a batch whose transaction fails is tried again after a backoff, and a subscription that cannot be made or
        read (NATS away) is tried again likewise."""
        following: Subscription | None = None
        held: list[Recorded] = []
        """Events taken from the subscription and not handled yet (a batch, or one to try again)."""
        after = 0
        """The stream sequence the held batch follows (where the subscription was before it)."""

        def interrupt(_: object) -> None:
            if following is not None:
                following.interrupt()

        stopping = asyncio.ensure_future(stop.wait())
        stopping.add_done_callback(interrupt)
        backoff = Backoff()
        try:
            while not stop.is_set():
                try:
                    if following is None:
                        after = await self._tracking.checkpoint(self.name)
                        following = await self._store.subscribe(after, partitions=self._partitions)
                    if not held:
                        after = following.position
                        held = await self._gather(following, stop)
                        if not held:
                            continue
                    behind = await self._handle(after, held)
                    if behind is not None:
                        log.info(
                            "the checkpoint is behind the consumer's subscription: reading again from it",
                            consumer=self.name,
                            checkpoint=behind,
                            subscription=after,
                        )
                        await following.close()
                        following = None
                    held = []
                    backoff.succeeded()
                except Exception as e:
                    report(log, "a stream consumer's batch failed; it will be tried again", e, consumer=self.name)
                    await backoff.wait(stop)
        finally:
            stopping.cancel()
            if following is not None:
                await following.close()

    async def _gather(self, following: Subscription, stop: asyncio.Event) -> list[Recorded]:
        """The next batch: the first events to arrive, then more until it holds ``batch`` events or ``linger``
        seconds have passed (`LAZY_SECONDS` while none of its events wakes the consumer): what the subscription
        fetched by then, in one take or a few. Empty on ``stop``."""
        if stop.is_set():
            return []
        held = await following.take(self._batch)
        if not held or len(held) >= self._batch:
            return held
        loop = asyncio.get_running_loop()
        woken = self._woken(held)
        deadline = loop.time() + (self._linger if woken else LAZY_SECONDS)
        while len(held) < self._batch and not stop.is_set():
            left = deadline - loop.time()
            if left <= 0:
                break
            try:  # while no event of the batch wakes the consumer, the subscription holds the others until one does
                more = await following.take(self._batch - len(held), left, None if woken else self._wakes)
            except Exception:  # the events taken are handled first; the next take meets the failure again
                break
            if not more:
                break
            held += more
            if not woken and self._woken(more):
                woken = True
                deadline = min(deadline, loop.time() + self._linger)
        return held

    def _woken(self, events: list[Recorded]) -> bool:
        """Whether any of ``events`` wakes the consumer (one ``wake`` cannot judge does: the events taken are never
        dropped on the way to the handler)."""
        try:
            return any(map(self._wakes, events))
        except Exception as e:
            report(log, "a stream consumer could not tell whether an event wakes it", e, consumer=self.name)
            return True

    async def _handle(self, after: int, held: list[Recorded]) -> int | None:
        """Handle ``held`` (the events after stream sequence ``after``) in one batch transaction, passing over those
        the checkpoint is at or past; or, when the checkpoint is behind ``after``, nothing: the checkpoint."""
        async with self._tracking.batch(self.name) as tracked:
            done = tracked.sequence
            if done < after:
                return done
            fresh = held if done == after else [r for r in held if r.sequence > done]
            if fresh:
                with tracing.batch(self.name, fresh):  # traced: a span linked to each event's append
                    await self._handler.apply(tracked, fresh)
                tracked.advance(fresh[-1].sequence)
        return None

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
        locking = f"SELECT sequence FROM {self._table} WHERE projection = $1 FOR UPDATE"
        async with self._pool.acquire() as connection, connection.transaction():
            done = await connection.fetchval(locking, name)
            if done is None:  # the consumer's first batch: its row made (or met, made by another), then locked
                await connection.execute(
                    f"INSERT INTO {self._table} (projection, sequence) VALUES ($1, 0) ON CONFLICT DO NOTHING", name
                )
                done = await connection.fetchval(locking, name)
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
