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
from pathlib import Path
from typing import Any, cast

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
from paiju.platform.store import EventStore, MemoryEventStore, Position, Recorded, Subscription
from paiju.platform.store.jetstream import JetStreamEventStore, JetStreamSubscription

from ..support.nats_server import RestartableNats
from ..support.waiting import wait_until
from .test_store_contract import until_stored


@dataclass
class Rig:
    store: EventStore
    tracking: Tracking
    transactional: bool
    pool: Any = None
    written: list[tuple[str, int, str, int]] = field(default_factory=list)

    async def write(self, tracked: Tracked, consumer: str, recorded: Recorded) -> None:
        """The effect of one event: its stream sequence, with its aggregate and version (the events of one message
        share its sequence)."""
        event = (recorded.sequence, recorded.aggregate, recorded.version)
        if self.transactional:
            await tracked.connection.execute("INSERT INTO effects VALUES ($1, $2, $3, $4)", consumer, *event)
        else:
            self.written.append((consumer, *event))

    async def effects(self, consumer: str = "recorder") -> list[int]:
        """The sequences of the events ``consumer`` handled, in order, an event handled twice twice (and a sequence
        once per event of its message)."""
        if self.transactional:
            rows = await self.pool.fetch(
                "SELECT sequence FROM effects WHERE consumer = $1 ORDER BY sequence, version", consumer
            )
            return [int(r["sequence"]) for r in rows]
        return sorted(s for c, s, _, _ in self.written if c == consumer)

    async def clear(self, tracked: Tracked, consumer: str) -> None:
        if self.transactional:
            await tracked.connection.execute("DELETE FROM effects WHERE consumer = $1", consumer)
        else:
            self.written[:] = [w for w in self.written if w[0] != consumer]


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
            await self.rig.write(tracked, self.name, recorded)
            if recorded.sequence == self.fail_at:
                self.fail_at = None
                raise RuntimeError("the handler failed")

    async def clear(self, tracked: Tracked) -> None:
        await self.rig.clear(tracked, self.name)


EFFECTS = (
    "CREATE TABLE effects (consumer text, sequence bigint, aggregate text, version bigint,"
    " PRIMARY KEY (consumer, aggregate, version))"
)
"""Each event's effect, once: an event is its aggregate and version (its stream sequence is its message's)."""
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
                    "CREATE TABLE checkpoints (projection text PRIMARY KEY, sequence bigint NOT NULL);" + EFFECTS
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


async def append(store: EventStore, count: int, aggregates: int = 4, prefix: str = "a") -> list[int]:
    """``count`` events over ``aggregates`` new aggregates (``prefix`` and a number); their stream sequences."""
    positions: dict[str, Position] = {}
    sequences = []
    for i in range(count):
        aggregate = f"{prefix}{i % aggregates}"
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


@asynccontextmanager
async def running(consumer: Consumer) -> AsyncIterator[asyncio.Event]:
    """``consumer`` running (`Consumer.run`) in the block, stopped after it; the block gets its stop."""
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    try:
        yield stop
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


def test_a_running_consumer_handles_each_new_event_once_in_order(run_with: Any) -> None:
    async def scenario(rig: Rig) -> None:
        before = await append(rig.store, 3)
        handler = Recorder(rig)
        async with running(Consumer(rig.store, rig.tracking, handler, batch=4)):
            await until_handled(rig, before)
            later = [r.sequence for r in await rig.store.append("b", Position(), "later", [b"x", b"y"])]
            await until_handled(rig, [*before, *later])
        assert await rig.effects() == [*before, *later]
        assert [s for batch in handler.batches for s in batch] == [*before, *later]
        assert all(len(batch) <= 4 for batch in handler.batches)

    run_with(scenario)


def watch_subscriptions(store: EventStore) -> list[Subscription]:
    """The subscriptions ``store`` makes from now on, in order."""
    subscribe, made = store.subscribe, list[Subscription]()

    async def watched(after_sequence: int = 0, *, partitions: frozenset[int] | None = None) -> Subscription:
        made.append(await subscribe(after_sequence, partitions=partitions))
        return made[-1]

    store.subscribe = watched  # type: ignore[method-assign]
    return made


def held(subscription: Subscription) -> int:
    """The last event a subscription handed to its consumer or holds for its take (on JetStream, a take that
    gathers holds what it fetched; the memory store hands each event over as it comes)."""
    return subscription.received if isinstance(subscription, JetStreamSubscription) else subscription.position


async def has(rig: Rig, sequences: list[int], consumer: str = "recorder") -> bool:
    return sorted(set(await rig.effects(consumer))) == sorted(set(sequences))


async def until_handled(rig: Rig, sequences: list[int], consumer: str = "recorder") -> None:
    """Wait until the recorder's effects are exactly the events ``sequences``."""
    await wait_until(
        lambda: has(rig, sequences, consumer),
        f"the effects of exactly the events {sequences}",
        explain=rig.effects,
    )


def test_a_running_consumers_batch_closes_when_it_holds_batch_events(run_with: Any) -> None:
    """With a linger too long to ever end a batch, only its size does: 25 events make two batches of 10 at once,
    and the five left wait for five more."""

    async def scenario(rig: Rig) -> None:
        first = await append(rig.store, 25)
        handler = Recorder(rig)
        async with running(Consumer(rig.store, rig.tracking, handler, batch=10, linger=600)):
            await until_handled(rig, first[:20])
            await asyncio.sleep(0.3)
            assert len(handler.batches) == 2, "the five left wait for more"
            more = await append(rig.store, 5, aggregates=1, prefix="more")
            await until_handled(rig, [*first, *more])
        assert handler.batches == [first[:10], first[10:20], [*first[20:], *more]]

    run_with(scenario)


def test_a_running_consumers_batch_closes_after_its_linger(run_with: Any) -> None:
    """Events that arrive one by one within the linger make one batch (stopped, the consumer handles what it
    holds); one event alone, with a short linger, is a batch of one: the time ended it, not the size."""

    async def scenario(rig: Rig) -> None:
        handler = Recorder(rig)
        subscribed = watch_subscriptions(rig.store)
        async with running(Consumer(rig.store, rig.tracking, handler, batch=1000, linger=600)):
            gathered = [(await rig.store.append(f"a{n}", Position(), "c", [b"x"]))[0].sequence for n in range(3)]

            async def all_taken() -> bool:
                return bool(subscribed) and held(subscribed[0]) == gathered[-1]

            await wait_until(all_taken, "every event taken into the batch")  # which goes on gathering
            await asyncio.sleep(0.2)
            assert handler.batches == [], "the batch is still gathering"
        assert handler.batches == [gathered]
        async with running(Consumer(rig.store, rig.tracking, handler, batch=1000, linger=0.05)):
            alone = (await rig.store.append("b", Position(), "c", [b"y"]))[0].sequence
            await until_handled(rig, [*gathered, alone])
        assert handler.batches == [gathered, [alone]]

    run_with(scenario)


def test_events_that_wake_nobody_wait_for_one_that_does(run_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``wake``: events the handler does not need soon are batched lazily, and the first one it needs closes
    the batch after the linger, with them in it."""
    monkeypatch.setattr(consumer_module, "LAZY_SECONDS", 600.0)

    async def scenario(rig: Rig) -> None:
        handler = Recorder(rig)

        def ends(recorded: Recorded) -> bool:
            return recorded.data == b"end"

        async with running(Consumer(rig.store, rig.tracking, handler, batch=1000, linger=0.05, wake=ends)):
            quiet = await append(rig.store, 3, prefix="quiet")
            await asyncio.sleep(0.3)
            assert handler.batches == [], "nothing needed soon: no batch yet"
            end = (await rig.store.append("z", Position(), "end", [b"end"]))[0].sequence
            await until_handled(rig, [*quiet, end])
        assert handler.batches == [[*quiet, end]]

    run_with(scenario)


class Counted:
    """A store whose subscriptions count their takes that returned events (how often the consumer was woken with
    something to hold)."""

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self.takes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def subscribe(self, after_sequence: int = 0, **kwargs: Any) -> Subscription:
        subscription = await self._store.subscribe(after_sequence, **kwargs)
        counted = self

        class Counting:
            position = property(lambda _: subscription.position)

            async def take(self, *args: Any, **kwargs: Any) -> list[Recorded]:
                taken = await subscription.take(*args, **kwargs)
                counted.takes += bool(taken)
                return taken

            def interrupt(self) -> None:
                subscription.interrupt()

            async def close(self) -> None:
                await subscription.close()

        return Counting()


def test_events_that_wake_nobody_arriving_one_by_one_are_taken_together(
    run_with: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A running consumer waiting lazily is not woken by each event that wakes nobody: the subscription holds them
    until one that does arrives (or the batch fills up, or its time is over), and they are taken together."""
    monkeypatch.setattr(consumer_module, "LAZY_SECONDS", 600.0)

    async def scenario(rig: Rig) -> None:
        handler = Recorder(rig)
        counted = Counted(rig.store)

        def ends(recorded: Recorded) -> bool:
            return recorded.data == b"end"

        consumer = Consumer(cast(EventStore, counted), rig.tracking, handler, batch=1000, linger=0.05, wake=ends)
        async with running(consumer):
            await asyncio.sleep(0.2)  # its subscription made
            quiet = []
            for i in range(6):
                quiet += await append(rig.store, 1, prefix=f"quiet{i}-")
                await asyncio.sleep(0.05)  # each arrives on its own
            end = (await rig.store.append("z", Position(), "end", [b"end"]))[0].sequence
            await until_handled(rig, [*quiet, end])
        assert handler.batches == [[*quiet, end]]
        assert counted.takes <= 2, f"woken {counted.takes} times for one batch of {len(quiet) + 1} events"

    run_with(scenario)


def test_an_event_wake_cannot_judge_is_handled_soon() -> None:
    """A ``wake`` that fails on an event (not what it expects) does not lose it: it is handled as one that wakes."""

    async def main() -> None:
        store = MemoryEventStore()
        rig = Rig(store, MemoryTracking(), transactional=False)

        def unreadable(recorded: Recorded) -> bool:
            raise ValueError(f"cannot read {recorded.data!r}")

        async with running(Consumer(store, rig.tracking, Recorder(rig), batch=10, linger=0.01, wake=unreadable)):
            sequences = await append(store, 3)
            await until_handled(rig, sequences)

    asyncio.run(main())


class Gate:
    """A handler's failure point: the batch that reaches sequence ``at`` writes its effects, then waits here."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.released = asyncio.Event()


class Stalling(Recorder):
    def __init__(self, rig: Rig, at: int, gate: Gate) -> None:
        super().__init__(rig)
        self.at, self.gate = at, gate

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        await super().apply(tracked, batch)
        if any(r.sequence == self.at for r in batch):
            self.gate.reached.set()
            await self.gate.released.wait()  # the process is killed here: folded, not committed


def test_a_running_consumer_killed_between_its_fold_and_its_commit_loses_nothing(run_with: Any) -> None:
    """Killed (its task cancelled) after its handler folded a batch and before the commit: the checkpoint stayed,
    and the next consumer handles that batch again — exactly once in all when the effects are transactional."""

    async def scenario(rig: Rig) -> None:
        sequences = await append(rig.store, 12)
        gate = Gate()
        first = Consumer(rig.store, rig.tracking, Stalling(rig, sequences[6], gate), batch=4, linger=0)
        task = asyncio.create_task(first.run(asyncio.Event()))
        await asyncio.wait_for(gate.reached.wait(), 30)
        held = await first.checkpoint()
        assert held < sequences[6]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await first.checkpoint() == held
        if rig.transactional:
            assert await rig.effects() == [s for s in sequences if s <= held], "the fold was rolled back"
        async with running(Consumer(rig.store, rig.tracking, Recorder(rig), batch=4)):
            await until_handled(rig, sequences)
        assert await first.checkpoint() == sequences[-1]
        if rig.transactional:
            assert await rig.effects() == sequences

    run_with(scenario)


async def append_commands(store: EventStore, sizes: list[int], prefix: str = "m") -> list[int]:
    """Commands of ``sizes`` events each, over two aggregates; the stream sequence of each event (a command's
    events share one: its message's)."""
    positions: dict[str, Position] = {}
    sequences: list[int] = []
    for i, size in enumerate(sizes):
        aggregate = f"{prefix}{i % 2}"
        stored = await store.append(
            aggregate, positions.get(aggregate, Position()), f"c{i}", [f"e{i}-{j}".encode() for j in range(size)]
        )
        positions[aggregate] = stored[-1].position
        sequences += [r.sequence for r in stored]
    return sequences


def test_a_batch_never_ends_inside_a_message(run_with: Any) -> None:
    """Commands of several events, each one message: a batch smaller than a message takes the whole message, and
    a batch ends at a message's end, so the checkpoint (a stream sequence) never passes over part of one."""

    async def scenario(rig: Rig) -> None:
        sequences = await append_commands(rig.store, [3, 1, 2, 5, 1, 4])
        handler = Recorder(rig)
        assert await Consumer(rig.store, rig.tracking, handler, batch=2).catch_up() == len(sequences)
        assert await rig.effects() == sequences
        assert [s for batch in handler.batches for s in batch] == sequences
        for batch in handler.batches:  # whole messages: every event of each sequence a batch holds
            assert all(batch.count(s) == sequences.count(s) for s in batch)
        handler = Recorder(rig, "running")
        async with running(Consumer(rig.store, rig.tracking, handler, batch=2, linger=0)):
            more = await append_commands(rig.store, [4, 1, 3], prefix="n")
            await until_handled(rig, [*sequences, *more], "running")
        assert await rig.effects("running") == [*sequences, *more]
        for batch in handler.batches:
            assert all(batch.count(s) == [*sequences, *more].count(s) for s in batch)

    run_with(scenario)


def test_a_consumer_killed_between_fold_and_commit_inside_commands_of_several_events_loses_nothing(
    run_with: Any,
) -> None:
    """As above, with commands of several events (one message each): the batch folded and not committed is
    handled again whole by the next consumer, and every event of every message exactly once in all."""

    async def scenario(rig: Rig) -> None:
        sequences = await append_commands(rig.store, [2, 3, 1, 4, 2, 3])
        gate = Gate()
        at = sorted(set(sequences))[3]  # the message of four events
        first = Consumer(rig.store, rig.tracking, Stalling(rig, at, gate), batch=3, linger=0)
        task = asyncio.create_task(first.run(asyncio.Event()))
        await asyncio.wait_for(gate.reached.wait(), 30)
        held = await first.checkpoint()
        assert held < at
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await first.checkpoint() == held
        if rig.transactional:
            assert await rig.effects() == [s for s in sequences if s <= held], "the fold was rolled back"
        async with running(Consumer(rig.store, rig.tracking, Recorder(rig), batch=3)):
            await until_handled(rig, sequences)
        assert await first.checkpoint() == sequences[-1]
        if rig.transactional:
            assert await rig.effects() == sequences

    run_with(scenario)


def test_replicas_running_at_once_share_the_stream_and_one_takes_over(run_with: Any) -> None:
    """Two replicas of one consumer follow the stream at once: with an exclusive tracking each event is handled
    once, in order, by whichever locked the checkpoint first; when one stops, the other goes on from the
    checkpoint."""

    async def scenario(rig: Rig) -> None:
        handlers = [Recorder(rig), Recorder(rig)]
        one = Consumer(rig.store, rig.tracking, handlers[0], batch=3, linger=0.01)
        other = Consumer(rig.store, rig.tracking, handlers[1], batch=5, linger=0.02)
        sequences = await append(rig.store, 10)
        async with running(other):
            async with running(one):
                for n in range(4):
                    sequences += await append(rig.store, 7, aggregates=3, prefix=f"r{n}-")
                    await asyncio.sleep(0.05)
                await until_handled(rig, sequences)
            alone = await append(rig.store, 6, prefix="alone")  # the first replica is gone: the other takes over
            await until_handled(rig, [*sequences, *alone])
        assert await one.checkpoint() == alone[-1]
        effects = await rig.effects()
        if rig.tracking.exclusive:
            assert effects == [*sequences, *alone], "each event handled once"
            handled = sorted(s for h in handlers for batch in h.batches for s in batch)
            assert handled == [*sequences, *alone]
            assert [s for batch in handlers[1].batches for s in batch][-len(alone) :] == alone
        else:
            assert sorted(set(effects)) == [*sequences, *alone]

    run_with(scenario)


def test_a_reset_while_running_replays_the_stream(run_with: Any) -> None:
    """A rebuild beside a running consumer sets its checkpoint back: the running consumer's next batch finds the
    checkpoint behind its subscription, which starts again from there; nothing is skipped."""

    async def scenario(rig: Rig) -> None:
        sequences = await append(rig.store, 8)
        consumer = Consumer(rig.store, rig.tracking, Recorder(rig), batch=3, linger=0.01)
        subscribed = watch_subscriptions(rig.store)
        async with running(consumer):
            await until_handled(rig, sequences)
            await Consumer(rig.store, rig.tracking, Recorder(rig)).reset()  # another process's rebuild
            assert await rig.effects() == []
            later = await append(rig.store, 2, aggregates=1, prefix="later")
            await until_handled(rig, [*sequences, *later])
        assert await rig.effects() == [*sequences, *later], "replayed once"
        assert await consumer.checkpoint() == later[-1]
        assert len(subscribed) == 2, "the subscription started again from the checkpoint set back"

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


def test_a_consumer_whose_subscription_cannot_start_tries_again(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        store = MemoryEventStore()
        calls = [0]
        real = store.subscribe

        async def broken_once(after: int = 0, *, partitions: frozenset[int] | None = None) -> Any:
            calls[0] += 1
            if calls[0] == 1:
                raise Unavailable("NATS is away")
            return await real(after, partitions=partitions)

        monkeypatch.setattr(store, "subscribe", broken_once)
        rig = Rig(store, MemoryTracking(), transactional=False)
        async with running(Consumer(store, rig.tracking, Recorder(rig), batch=10)):
            recorded = await store.append("a", Position(), "c", [b"x"])
            await until_handled(rig, [recorded[0].sequence])
        assert calls[0] == 2, "the subscription was tried again"

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


@pytest.mark.integration
def test_a_running_consumer_makes_one_jetstream_consumer_whatever_its_batches(nats_url: str) -> None:
    """Forty-two batches, one consumer on the server (the same one throughout, idle a while too), and none left
    once stopped."""

    async def main() -> None:
        stream = "N" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"n.{stream.lower()}")
        js = store.client.jetstream()
        try:
            rig = Rig(store, MemoryTracking(), transactional=False)
            handler = Recorder(rig)
            async with running(Consumer(store, rig.tracking, handler, batch=1, linger=0)):
                sequences = await append(store, 1)
                await until_handled(rig, sequences)
                consumers = {c.name for c in await js.consumers_info(stream)}
                assert len(consumers) == 1
                for n in range(40):
                    sequences += await append(store, 1, prefix=f"more{n}-")
                await until_handled(rig, sequences)
                assert len(handler.batches) == 41
                assert {c.name for c in await js.consumers_info(stream)} == consumers
                assert (await js.stream_info(stream)).state.consumer_count == 1
                await asyncio.sleep(2.5)  # idle: the consumer's heartbeats are heard, and nothing is made again
                sequences += await append(store, 1, prefix="last")
                await until_handled(rig, sequences)
                assert {c.name for c in await js.consumers_info(stream)} == consumers

            async def none_left() -> bool:
                return not await js.consumers_info(stream)

            await wait_until(none_left, "no consumer left on the stream")
        finally:
            await store.close()

    asyncio.run(main())


@pytest.mark.integration
@pytest.mark.parametrize("tracking_kind", ["memory", "postgres"])
def test_a_running_consumer_loses_nothing_when_nats_restarts(
    tmp_path: Path, tracking_kind: str, request: pytest.FixtureRequest
) -> None:
    """NATS stops under a running consumer and starts again: the consumer fails its reads meanwhile (and says so),
    then its subscription reads on from the last event it received; every event is handled, once."""
    dsn = request.getfixturevalue("database_dsn") if tracking_kind == "postgres" else None
    with RestartableNats(tmp_path / "nats") as server:

        async def main() -> None:
            store = await JetStreamEventStore.connect(server.url, stream="RESTART", prefix="restart")
            pool = None
            try:
                if dsn is None:
                    rig = Rig(store, MemoryTracking(), transactional=False)
                else:
                    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=4)
                    await pool.execute(
                        "CREATE TABLE checkpoints (projection text PRIMARY KEY, sequence bigint NOT NULL);" + EFFECTS
                    )
                    rig = Rig(store, PostgresTracking(pool, "checkpoints"), True, pool=pool)
                async with running(Consumer(store, rig.tracking, Recorder(rig), batch=5, linger=0.01)):
                    before = await append(store, 6)
                    await until_handled(rig, before)
                    before += await append(store, 3, prefix="unseen")  # handled, or not yet, when NATS stops
                    server.stop()
                    await asyncio.sleep(0.5)
                    server.start()
                    stored = await until_stored(lambda: store.append("after", Position(), "c", [b"x", b"y", b"z"]))
                    after = [r.sequence for r in stored]
                    await until_handled(rig, [*before, *after])
                assert await rig.effects() == [*before, *after]
            finally:
                if pool is not None:
                    await pool.close()
                await store.close()

        asyncio.run(main())
