"""The contract of the stream consumer with tracking (`paiju.platform.consumer`), for every tracking backend over
every event store: a new backend adds its `Rig` to `RIGS` and passes the same tests.

A rig is a store, a tracking and the place a handler's effects go: through the batch's transaction for a
transactional tracking (PostgreSQL: rows, rolled back with a failed batch), into a list otherwise.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import pytest

from paiju.platform import consumer as consumer_module
from paiju.platform.consumer import (
    Consumer,
    KeyValueTracking,
    MemoryTracking,
    PostgresTracking,
    Reaction,
    Tracked,
    Tracking,
)
from paiju.platform.errors import Reason, Refused, Unavailable
from paiju.platform.store import EventStore, MemoryEventStore, Position, Recorded
from paiju.platform.store.jetstream import JetStreamEventStore


@dataclass
class Rig:
    store: EventStore
    tracking: Tracking
    transactional: bool
    pool: Any = None
    written: list[tuple[str, int]] = field(default_factory=list)

    async def write(self, tracked: Tracked, consumer: str, sequence: int) -> None:
        if self.transactional:
            await tracked.connection.execute("INSERT INTO effects VALUES ($1, $2)", consumer, sequence)
        else:
            self.written.append((consumer, sequence))

    async def effects(self, consumer: str = "recorder") -> list[int]:
        """The sequences ``consumer`` handled, in order, a sequence handled twice twice."""
        if self.transactional:
            rows = await self.pool.fetch("SELECT sequence FROM effects WHERE consumer = $1 ORDER BY 1", consumer)
            return [int(r["sequence"]) for r in rows]
        return sorted(s for c, s in self.written if c == consumer)

    async def clear(self, tracked: Tracked, consumer: str) -> None:
        if self.transactional:
            await tracked.connection.execute("DELETE FROM effects WHERE consumer = $1", consumer)
        else:
            self.written[:] = [(c, s) for c, s in self.written if c != consumer]


class Recorder:
    """A handler that writes each event's sequence as its effect, and can be told to fail at one sequence."""

    def __init__(self, rig: Rig, name: str = "recorder") -> None:
        self.name = name
        self.rig = rig
        self.batches: list[list[int]] = []
        self.fail_at: int | None = None

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        self.batches.append([r.sequence for r in batch])
        assert all(r.sequence > tracked.sequence for r in batch)
        for recorded in batch:
            await self.rig.write(tracked, self.name, recorded.sequence)
            if recorded.sequence == self.fail_at:
                self.fail_at = None
                raise RuntimeError("the handler failed")

    async def clear(self, tracked: Tracked) -> None:
        await self.rig.clear(tracked, self.name)


SERVERS = pytest.mark.integration
"""A rig with NATS or PostgreSQL is of the integration tier (the fixtures start them through the request)."""
RIGS = [
    pytest.param(("memory", "memory"), id="memory-tracking-memory-store"),
    pytest.param(("memory", "jetstream"), id="memory-tracking-jetstream", marks=SERVERS),
    pytest.param(("postgres", "memory"), id="postgres-tracking-memory-store", marks=SERVERS),
    pytest.param(("postgres", "jetstream"), id="postgres-tracking-jetstream", marks=SERVERS),
    pytest.param(("keyvalue", "jetstream"), id="keyvalue-tracking-jetstream", marks=SERVERS),
]


@pytest.fixture(params=RIGS)
def run_with(request: pytest.FixtureRequest) -> Callable[[Callable[[Rig], Awaitable[None]]], None]:
    tracking_kind, store_kind = request.param
    nats_url: str = request.getfixturevalue("nats_url") if "jetstream" in (tracking_kind, store_kind) else ""
    dsn = request.getfixturevalue("database_dsn") if tracking_kind == "postgres" else None

    @asynccontextmanager
    async def rig() -> AsyncIterator[Rig]:
        stream = "C" + uuid.uuid4().hex[:12].upper()
        store: Any = (
            MemoryEventStore()
            if store_kind == "memory"
            else await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"c.{stream.lower()}")
        )
        pool = None
        try:
            if tracking_kind == "memory":
                yield Rig(store, MemoryTracking(), transactional=False)
            elif tracking_kind == "postgres":
                pool = await asyncpg.create_pool(dsn, min_size=1, max_size=4)
                await pool.execute(
                    "CREATE TABLE checkpoints (projection text PRIMARY KEY, sequence bigint NOT NULL);"
                    "CREATE TABLE effects (consumer text, sequence bigint, PRIMARY KEY (consumer, sequence))"
                )
                yield Rig(store, PostgresTracking(pool, "checkpoints"), transactional=True, pool=pool)
            else:
                tracking = await KeyValueTracking.open(store.client, "checkpoints", scope=stream)
                yield Rig(store, tracking, transactional=False)
        finally:
            if pool is not None:
                await pool.close()
            await store.close()

    def run(scenario: Callable[[Rig], Awaitable[None]]) -> None:
        async def main() -> None:
            async with rig() as r:
                await scenario(r)

        asyncio.run(main())

    return run


async def append(store: EventStore, count: int, aggregates: int = 4) -> list[int]:
    """``count`` events over ``aggregates`` aggregates; their stream sequences."""
    positions: dict[str, Position] = {}
    sequences = []
    for i in range(count):
        aggregate = f"a{i % aggregates}"
        recorded = await store.append(aggregate, positions.get(aggregate, Position()), f"c{i}", [f"e{i}".encode()])
        positions[aggregate] = recorded[-1].position
        sequences.append(recorded[-1].sequence)
    return sequences


def test_every_event_is_handled_once_in_stream_order_in_bounded_batches(run_with: Any) -> None:
    async def scenario(rig: Rig) -> None:
        sequences = await append(rig.store, 20)
        handler = Recorder(rig)
        consumer = Consumer(rig.store, rig.tracking, handler, batch=3)
        assert await consumer.catch_up() == 20
        assert await rig.effects() == sequences
        assert [s for batch in handler.batches for s in batch] == sequences
        assert all(batch[-1] - batch[0] < 3 for batch in handler.batches)  # never more than a batch's sequences
        assert await consumer.checkpoint() == sequences[-1]
        assert await consumer.catch_up() == 0  # nothing new: nothing handled again

    run_with(scenario)


def test_a_restarted_consumer_resumes_after_its_checkpoint(run_with: Any) -> None:
    async def scenario(rig: Rig) -> None:
        first = await append(rig.store, 5, aggregates=1)
        await Consumer(rig.store, rig.tracking, Recorder(rig), batch=2).catch_up()
        later = await rig.store.append("b", Position(), "later", [b"x", b"y"])
        handler = Recorder(rig)
        assert await Consumer(rig.store, rig.tracking, handler, batch=2).catch_up() == 2
        assert handler.batches == [[r.sequence for r in later]]
        assert await rig.effects() == [*first, *(r.sequence for r in later)]

    run_with(scenario)


def test_a_failed_batch_leaves_the_checkpoint_and_is_read_again(run_with: Any) -> None:
    async def scenario(rig: Rig) -> None:
        sequences = await append(rig.store, 9)
        handler = Recorder(rig)
        handler.fail_at = sequences[4]
        consumer = Consumer(rig.store, rig.tracking, handler, batch=3)
        with pytest.raises(RuntimeError):
            await consumer.catch_up()
        assert await consumer.checkpoint() == sequences[2]  # the batch that failed did not move it
        if rig.transactional:
            assert await rig.effects() == sequences[:3]  # and what it wrote was rolled back with it
        await consumer.catch_up()
        assert await consumer.checkpoint() == sequences[-1]
        effects = await rig.effects()
        assert sorted(set(effects)) == sequences  # every event handled...
        if rig.transactional:
            assert effects == sequences  # ...exactly once when the effects are in the transaction

    run_with(scenario)


def test_consumers_of_one_name_on_several_replicas_share_the_stream(run_with: Any) -> None:
    async def scenario(rig: Rig) -> None:
        sequences = await append(rig.store, 30)
        handlers = [Recorder(rig) for _ in range(3)]
        consumers = [Consumer(rig.store, rig.tracking, h, batch=4) for h in handlers]
        await asyncio.gather(*(c.catch_up() for c in consumers))
        await consumers[0].catch_up()
        effects = await rig.effects()
        assert sorted(set(effects)) == sequences
        assert await consumers[1].checkpoint() == sequences[-1]
        if rig.tracking.exclusive:
            assert effects == sequences  # each batch handled by one replica, once

    run_with(scenario)


def test_consumers_of_different_names_keep_their_own_checkpoints(run_with: Any) -> None:
    async def scenario(rig: Rig) -> None:
        sequences = await append(rig.store, 4)
        projection = Consumer(rig.store, rig.tracking, Recorder(rig, "projection"), batch=10)
        await projection.catch_up()
        added_later = Consumer(rig.store, rig.tracking, Recorder(rig, "added-later"), batch=10)
        assert await added_later.checkpoint() == 0  # a consumer added later reads the stream from its start
        assert await added_later.catch_up() == 4
        assert await projection.checkpoint() == await added_later.checkpoint() == sequences[-1]
        assert await rig.effects("projection") == await rig.effects("added-later") == sequences

    run_with(scenario)


def test_a_running_consumer_is_woken_by_a_new_event(run_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumer_module, "POLL_SECONDS", 600.0)  # only the feed can wake it in time

    async def scenario(rig: Rig) -> None:
        stop = asyncio.Event()
        consumer = Consumer(rig.store, rig.tracking, Recorder(rig), batch=10)
        running = asyncio.create_task(consumer.run(stop))
        try:
            await asyncio.sleep(0.2)
            recorded = await rig.store.append("a", Position(), "c", [b"x"])
            async with asyncio.timeout(10):
                while await rig.effects() != [recorded[0].sequence]:
                    await asyncio.sleep(0.02)
        finally:
            stop.set()
            await running

    run_with(scenario)


def test_a_reset_empties_the_projection_and_replays_the_stream(run_with: Any) -> None:
    async def scenario(rig: Rig) -> None:
        sequences = await append(rig.store, 6)
        consumer = Consumer(rig.store, rig.tracking, Recorder(rig), batch=4)
        await consumer.catch_up()
        await consumer.reset()
        assert await consumer.checkpoint() == 0 and await rig.effects() == []
        await consumer.catch_up()
        assert await rig.effects() == sequences

    run_with(scenario)


def test_catch_up_until_waits_for_a_sequence_to_be_stored(run_with: Any) -> None:
    async def scenario(rig: Rig) -> None:
        consumer = Consumer(rig.store, rig.tracking, Recorder(rig), batch=4)
        waiting = asyncio.create_task(consumer.catch_up(until=2, timeout=10))
        await asyncio.sleep(0.1)
        sequences = await append(rig.store, 2, aggregates=1)
        await waiting
        assert await rig.effects() == sequences
        with pytest.raises(TimeoutError):
            await consumer.catch_up(until=sequences[-1] + 5, timeout=0.2)

    run_with(scenario)


def test_a_refused_reaction_passes_over_its_event_and_a_failing_one_holds_the_batch() -> None:
    """One event the rules refuse does not hold up the stream; a dependency away does (the batch is read again)."""

    async def main() -> None:
        store = MemoryEventStore()
        sequences = await append(store, 4, aggregates=1)
        handled: list[bytes] = []
        failing = [True]

        async def react(data: bytes) -> None:
            if data == b"e1":
                raise Refused(Reason.RULE_VIOLATION, "the rules refuse it")
            if data == b"e2" and failing[0]:
                raise Unavailable("NATS is away")
            handled.append(data)

        consumer = Consumer(store, MemoryTracking(), Reaction("reacts", react), batch=10)
        with pytest.raises(Unavailable):
            await consumer.step()
        assert await consumer.checkpoint() == 0
        failing[0] = False
        await consumer.catch_up()
        assert await consumer.checkpoint() == sequences[-1]
        assert handled == [b"e0", b"e0", b"e2", b"e3"], "e0 again with its batch, e1 passed over"

    asyncio.run(main())


def test_a_consumer_whose_feed_cannot_start_still_reads_its_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        store = MemoryEventStore()
        calls = [0]
        real = store.follow

        async def broken_once(on_event: Callable[[Recorded], None]) -> None:
            calls[0] += 1
            if calls[0] == 1:
                raise Unavailable("NATS is away")
            await real(on_event)

        monkeypatch.setattr(store, "follow", broken_once)
        monkeypatch.setattr(consumer_module, "POLL_SECONDS", 0.05)
        rig = Rig(store, MemoryTracking(), transactional=False)
        consumer = Consumer(store, rig.tracking, Recorder(rig), batch=10)
        stop = asyncio.Event()
        running = asyncio.create_task(consumer.run(stop))
        try:
            recorded = await store.append("a", Position(), "c", [b"x"])
            async with asyncio.timeout(10):
                while await rig.effects() != [recorded[0].sequence]:
                    await asyncio.sleep(0.02)
            assert calls[0] >= 2, "the feed was tried again"
        finally:
            stop.set()
            await running

    asyncio.run(main())


@pytest.mark.integration
def test_a_consumer_takes_over_from_the_durable_consumer_before_it(nats_url: str) -> None:
    """The first start after the upgrade: the old work queue's acknowledged position becomes the checkpoint, and the
    old consumer is deleted, so the stream is not handled again from its start."""
    from nats.js.api import AckPolicy, ConsumerConfig
    from nats.js.errors import NotFoundError

    async def main() -> None:
        stream = "A" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"a.{stream.lower()}")
        try:
            sequences = await append(store, 6)
            js = store.client.jetstream()
            config = ConsumerConfig(durable_name="old-queue", ack_policy=AckPolicy.EXPLICIT)
            queue = await js.pull_subscribe(f"a.{stream.lower()}.*", durable="old-queue", stream=stream, config=config)
            for message in await queue.fetch(4, timeout=5):
                await message.ack_sync()  # the old queue handled the first four
            tracking = MemoryTracking()
            rig = Rig(store, tracking, transactional=False)
            consumer = Consumer(store, tracking, Recorder(rig), batch=10)
            await consumer.adopt(store.client, stream, "old-queue")
            assert await consumer.checkpoint() == sequences[3]
            with pytest.raises(NotFoundError):
                await js.consumer_info(stream, "old-queue")
            await consumer.catch_up()
            assert await rig.effects() == sequences[4:]
            await consumer.adopt(store.client, stream, "old-queue")  # gone: nothing to take over
            assert await consumer.checkpoint() == sequences[-1]
        finally:
            await store.close()

    asyncio.run(main())
