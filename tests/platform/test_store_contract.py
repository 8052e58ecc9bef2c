"""One contract for every event store: the in-memory fake and JetStream (docs/architecture.md, Principle 5)."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from paiju.platform.store import (
    ConcurrencyConflict,
    EventStore,
    MemoryEventStore,
    Position,
    Recorded,
    StoreError,
    Subscription,
)
from paiju.platform.store.jetstream import JetStreamEventStore, JetStreamSubscription

from ..support.nats_server import RestartableNats
from ..support.waiting import wait_until

Scenario = Callable[[EventStore], Awaitable[None]]


@pytest.fixture(params=["memory", "jetstream", pytest.param("partitioned", marks=pytest.mark.integration)])
def run_with(request: pytest.FixtureRequest) -> Callable[[Scenario], None]:
    """Run an async scenario against a fresh store of the parametrized kind (a fresh stream for JetStream; a
    partitioned one, as the games' stream is, for ``partitioned``)."""

    def run(scenario: Scenario) -> None:
        async def main() -> None:
            store: Any
            if request.param == "memory":
                store = MemoryEventStore()
            else:
                url = request.getfixturevalue("nats_url")
                stream = "T" + uuid.uuid4().hex[:12].upper()
                partitions = 8 if request.param == "partitioned" else 0
                store = await JetStreamEventStore.connect(
                    url, stream=stream, prefix=f"t.{stream.lower()}", partitions=partitions
                )
            try:
                await scenario(store)
            finally:
                await store.close()

        asyncio.run(main())

    return run


def events(*names: str) -> list[bytes]:
    return [n.encode() for n in names]


def test_a_new_aggregate_is_empty(run_with: Callable[[Scenario], None]) -> None:
    async def scenario(store: EventStore) -> None:
        assert await store.load("g1") == []

    run_with(scenario)


def test_append_then_load_in_order_with_versions(run_with: Callable[[Scenario], None]) -> None:
    async def scenario(store: EventStore) -> None:
        first = await store.append("g1", Position(), "c1", events("a", "b"))
        assert [(r.version, r.data, r.command_id) for r in first] == [(1, b"a", "c1"), (2, b"b", "c1")]
        second = await store.append("g1", first[-1].position, "c2", events("c"))
        assert second[0].version == 3 and second[0].sequence > first[-1].sequence
        loaded = await store.load("g1")
        assert loaded == [*first, *second]
        assert [r.data for r in loaded] == [b"a", b"b", b"c"]

    run_with(scenario)


def test_aggregates_are_separate(run_with: Callable[[Scenario], None]) -> None:
    async def scenario(store: EventStore) -> None:
        a = await store.append("ga", Position(), "c1", events("a1"))
        b = await store.append("gb", Position(), "c2", events("b1", "b2"))
        await store.append("ga", a[-1].position, "c3", events("a2"))
        assert [r.data for r in await store.load("ga")] == [b"a1", b"a2"]
        assert await store.load("gb") == b

    run_with(scenario)


def test_a_stale_position_is_a_conflict_and_writes_nothing(run_with: Callable[[Scenario], None]) -> None:
    async def scenario(store: EventStore) -> None:
        first = await store.append("g1", Position(), "c1", events("a"))
        with pytest.raises(ConcurrencyConflict):
            await store.append("g1", Position(), "c2", events("x", "y"))
        with pytest.raises(ConcurrencyConflict):
            await store.append("g1", Position(5, 99), "c3", events("z"))
        assert await store.load("g1") == first

    run_with(scenario)


def test_two_writers_at_the_same_position_exactly_one_wins(run_with: Callable[[Scenario], None]) -> None:
    async def scenario(store: EventStore) -> None:
        base = await store.append("g1", Position(), "c0", events("start"))
        position = base[-1].position

        async def writer(name: str) -> str:
            try:
                await store.append("g1", position, name, events(f"{name}-1", f"{name}-2", f"{name}-3"))
            except ConcurrencyConflict:
                return "lost"
            return "won"

        results = await asyncio.gather(*(writer(f"w{i}") for i in range(6)))
        assert sorted(results) == ["lost"] * 5 + ["won"]
        loaded = await store.load("g1")
        assert len(loaded) == 4, "the winner's three events, whole, after the first"
        assert len({r.command_id for r in loaded[1:]}) == 1
        assert [r.version for r in loaded] == [1, 2, 3, 4]

    run_with(scenario)


def test_an_exact_retry_returns_the_stored_events_and_writes_nothing(run_with: Callable[[Scenario], None]) -> None:
    async def scenario(store: EventStore) -> None:
        first = await store.append("g1", Position(), "c1", events("a", "b"))
        again = await store.append("g1", Position(), "c1", events("a", "b"))
        assert again == first
        assert await store.load("g1") == first

    run_with(scenario)


@pytest.mark.parametrize(
    ("aggregate", "command", "batch"),
    [
        ("", "c", [b"x"]),
        ("a.b", "c", [b"x"]),
        ("g*", "c", [b"x"]),
        (">", "c", [b"x"]),
        ("g" * 101, "c", [b"x"]),
        ("g\x00", "c", [b"x"]),
        ("g", "", [b"x"]),
        ("g", "a b", [b"x"]),
        ("g", "a\r\nNats-Expected-Last-Subject-Sequence: 0", [b"x"]),
        ("g", "c" * 201, [b"x"]),
        ("g", "c", []),
    ],
)
def test_bad_appends_are_refused(
    run_with: Callable[[Scenario], None], aggregate: str, command: str, batch: list[bytes]
) -> None:
    async def scenario(store: EventStore) -> None:
        with pytest.raises(StoreError):
            await store.append(aggregate, Position(), command, batch)

    run_with(scenario)


@pytest.mark.parametrize("aggregate", ["", ">", "*", "a.b", "a b", "g\x00", "g" * 101, "g" * 5000])
def test_loading_an_id_that_is_not_an_aggregate_id_is_refused_before_it_reaches_the_store(
    run_with: Callable[[Scenario], None], aggregate: str
) -> None:
    """No dotted, wildcard or overlong subject ever reaches NATS (a subject past the server's control line closes
    the connection; a wildcard would read every aggregate)."""

    async def scenario(store: EventStore) -> None:
        with pytest.raises(StoreError):
            await store.load(aggregate)

    run_with(scenario)


def test_jetstream_a_batch_cut_off_before_its_commit_stores_nothing(nats_url: str) -> None:
    """A writer that dies mid-append leaves no half command: the batch is invisible until committed."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            # the first two messages of a three-event batch, then nothing (the writer "died")
            for i in (1, 2):
                headers = {
                    "Nats-Batch-Id": "dead-writer",
                    "Nats-Batch-Sequence": str(i),
                    "Nats-Msg-Id": f"c-dead:{i}",
                    "Paiju-Version": str(i),
                    "Paiju-Command-Id": "c-dead",
                }
                if i == 1:
                    headers["Nats-Expected-Last-Subject-Sequence"] = "0"
                await store._nc.request(store.subject("g1"), b"half", headers=headers, timeout=5)
            assert await store.load("g1") == []
            written = await store.append("g1", Position(), "c-live", events("whole"))
            assert await store.load("g1") == written
        finally:
            await store.close()

    asyncio.run(main())


def test_jetstream_reads_its_own_writes_when_a_replica_answers_behind(nats_url: str) -> None:
    """A direct get may be answered by any replica of a replicated stream, one not caught up with an append just
    acknowledged (the cluster rehearsal once created a game and then read it as absent). Here every direct get
    answers as such a replica would, from before the appends: the store still reads what it wrote, from the
    leader."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            first = await store.append("g1", Position(), "c1", events("a"))
            real_last, real_get = store._js.get_last_msg, store._js.get_msg
            behind = {"last": await real_last(stream, store.subject("g1"), direct=True)}

            async def lagging_last(name: str, subject: str, direct: bool = False) -> Any:
                return behind["last"] if direct else await real_last(name, subject, direct=False)

            async def lagging_get(name: str, **kwargs: Any) -> Any:
                if kwargs.get("direct"):
                    raise AssertionError("a lagging replica was asked for what it does not hold")
                return await real_get(name, **kwargs)

            store._js.get_last_msg = lagging_last  # type: ignore[method-assign,assignment]
            store._js.get_msg = lagging_get  # type: ignore[method-assign,assignment]
            second = await store.append("g1", first[-1].position, "c2", events("b", "c"))
            assert await store.load("g1") == [*first, *second]
            assert await store.load("g1", first[-1].position) == second
        finally:
            await store.close()

    asyncio.run(main())


def test_load_after_a_position_returns_only_the_newer_events(run_with: Callable[[Scenario], None]) -> None:
    async def scenario(store: EventStore) -> None:
        first = await store.append("g1", Position(), "c1", events("a", "b"))
        second = await store.append("g1", first[-1].position, "c2", events("c", "d"))
        assert await store.load("g1", first[-1].position) == second
        assert await store.load("g1", second[-1].position) == []
        assert await store.load("g1", first[0].position) == [first[1], *second]

    run_with(scenario)


def test_aggregates_lists_every_aggregate_with_events(run_with: Callable[[Scenario], None]) -> None:
    async def scenario(store: EventStore) -> None:
        assert await store.aggregates() == []
        await store.append("gb", Position(), "c1", events("x"))
        await store.append("ga", Position(), "c2", events("y"))
        assert await store.aggregates() == ["ga", "gb"]

    run_with(scenario)


def test_follow_delivers_every_new_event_in_stream_order_and_none_before(
    run_with: Callable[[Scenario], None],
) -> None:
    async def scenario(store: EventStore) -> None:
        old = await store.append("g1", Position(), "c0", events("old"))
        seen: list[Recorded] = []
        await store.follow(seen.append)
        a = await store.append("g1", old[-1].position, "c1", events("a", "b"))
        b = await store.append("g2", Position(), "c2", events("x"))
        c = await store.append("g1", a[-1].position, "c3", events("c"))
        await wait_until(lambda: len(seen) >= 4, "the four new events followed")
        assert seen == [*a, *b, *c]
        assert [r.sequence for r in seen] == sorted(r.sequence for r in seen)

    run_with(scenario)


def test_jetstream_follow_sees_another_processs_writer(nats_url: str) -> None:
    async def scenario() -> None:
        stream = "F" + uuid.uuid4().hex[:12].upper()
        prefix = f"f.{stream.lower()}"
        reader = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        writer = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        try:
            seen: list[Recorded] = []
            await reader.follow(seen.append)
            stored = await writer.append("g1", Position(), "c1", events("a", "b", "c"))
            await wait_until(lambda: len(seen) >= 3, "the other writer's three events followed")
            assert seen == stored
        finally:
            await writer.close()
            await reader.close()

    asyncio.run(scenario())


def test_read_all_returns_every_aggregate_in_stream_order(run_with: Callable[[Scenario], None]) -> None:
    async def scenario(store: EventStore) -> None:
        assert await store.read_all() == []
        a = await store.append("g1", Position(), "c1", events("a", "b"))
        b = await store.append("g2", Position(), "c2", events("x"))
        c = await store.append("g1", a[-1].position, "c3", events("c"))
        assert await store.read_all() == [*a, *b, *c]
        assert await store.read_all(after_sequence=a[-1].sequence) == [*b, *c]
        assert await store.read_all(after_sequence=c[-1].sequence) == []
        # a bounded batch: the events of the next ``limit`` stream sequences, batch after batch
        every = [*a, *b, *c]
        batches, after = [], 0
        while batch := await store.read_all(after_sequence=after, limit=2):
            batches.append(batch)
            after = batch[-1].sequence
        assert [r for batch in batches for r in batch] == every
        assert all(len({r.sequence for r in batch}) <= 2 for batch in batches), "two sequences (messages) a batch"

    run_with(scenario)


def test_one_command_id_in_two_aggregates_is_two_commands(run_with: Callable[[Scenario], None]) -> None:
    """Command ids are the client's: unique within an aggregate, not across the stream."""

    async def scenario(store: EventStore) -> None:
        a = await store.append("g1", Position(), "start", events("a", "b"))
        b = await store.append("g2", Position(), "start", events("x", "y"))
        c = await store.append("g3", Position(), "start", events("z"))
        assert await store.load("g1") == a and await store.load("g2") == b and await store.load("g3") == c

    run_with(scenario)


def test_jetstream_a_reader_that_drops_messages_reads_on_from_the_gap(
    nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subscription too small for the burst drops messages (a slow consumer): the reader sees the gap in the
    consumer's sequence and reads on from the last event it kept, so the whole log still comes back in order. (The
    commands are written as atomic batches, a message per event, as streams were before a command was one message:
    a thousand messages.)"""
    from paiju.platform.store import jetstream

    monkeypatch.setattr(jetstream, "CONSUME_PENDING", 150)
    runs: list[int] = []
    push = JetStreamEventStore._push

    async def counted(self: JetStreamEventStore, *args: Any, **kwargs: Any) -> int:
        reached: int = await push(self, *args, **kwargs)
        runs.append(reached)
        return reached

    monkeypatch.setattr(JetStreamEventStore, "_push", counted)

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}", batches=True)
        try:
            written: list[Recorded] = []
            for i in range(40):
                position = written[-1].position if written else Position()
                written += await store.append("g1", position, f"c{i}", events(*(f"e{i}-{j}" for j in range(25))))
            assert await store.read_all() == written
            assert await store.load("g1") == written
            assert len(runs) > 2, "the small subscription should have dropped messages and forced a new consumer"
            runs.clear()
            # and in bounded windows larger than the subscription: each window's drops are read on as well
            assert [r for batch in await windows(store, 500) for r in batch] == written
            assert len(runs) > 2
        finally:
            await store.close()

    asyncio.run(main())


async def windows(store: EventStore, limit: int) -> list[list[Recorded]]:
    """The whole stream read in windows of ``limit`` sequences, as a stream consumer reads it."""
    read: list[list[Recorded]] = []
    after = 0
    while batch := await store.read_all(after_sequence=after, limit=limit):
        assert batch[-1].sequence - after <= limit
        read.append(batch)
        after = batch[-1].sequence
    return read


def test_jetstream_a_window_costs_the_window_not_the_rest_of_the_stream(nats_url: str) -> None:
    """A reader in windows gets each window from a consumer that sends only that window: the bytes it receives are
    the stream's once, not the rest of the stream again at every window."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            written: list[Recorded] = []
            for i in range(40):
                position = written[-1].position if written else Position()
                written += await store.append(
                    "g1", position, f"c{i}", events(*(f"{i:03}-{j:03}" * 40 for j in range(25)))
                )
            received = store.client.stats["in_bytes"]
            assert [r for batch in await windows(store, 50) for r in batch] == written
            received = store.client.stats["in_bytes"] - received
            stored = sum(len(r.data) for r in written)
            assert received < 3 * stored, f"{received} bytes received for {stored} stored"
        finally:
            await store.close()

    asyncio.run(main())


def test_jetstream_ack_subjects_of_both_forms_give_the_sequences() -> None:
    from paiju.platform.store.jetstream import delivery_sequences

    assert delivery_sequences("$JS.ACK.GAMES.c1.1.1042.7.1700000000000000000.3") == (1042, 7)
    assert delivery_sequences("$JS.ACK.hub.ACCHASH.GAMES.c1.1.1042.7.1700000000000000000.3") == (1042, 7)
    assert delivery_sequences("$JS.ACK.hub.ACCHASH.GAMES.c1.1.1042.7.1700000000000000000.3.token") == (1042, 7)
    with pytest.raises(StoreError):
        delivery_sequences("_INBOX.abc")


def test_jetstream_lists_every_aggregate_past_the_servers_page(nats_url: str) -> None:
    """The server lists a stream's subjects 100,000 at a time: a stream with more aggregates lists them all."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            js = store.client.jetstream()
            count = 100_005
            for n in range(count):
                await js.publish_async(f"t.{stream.lower()}.a{n}", b"x", headers={"Paiju-Version": "1"})
            await js.publish_async_completed()
            listed = await store.aggregates()
            assert len(listed) == count and listed[:2] == ["a0", "a1"]
        finally:
            await store.close()

    asyncio.run(main())


def hear(heard: list[int], recorded: Recorded) -> None:
    heard.append(recorded.version)


def test_jetstream_followers_of_one_store_share_one_feed(nats_url: str) -> None:
    """Every follower of a store gets every event, through one consumer: an event crosses the connection once."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            seen: list[list[int]] = [[], [], []]
            for heard in seen:
                await store.follow(functools.partial(hear, heard))
            await store.append("g1", Position(), "c1", events("a", "b"))
            await wait_until(lambda: all(len(heard) >= 2 for heard in seen), "every follower to hear both events")
            assert seen == [[1, 2]] * 3
            info = await store.client.jetstream().stream_info(stream)
            assert info.state.consumer_count == 1
        finally:
            await store.close()

    asyncio.run(main())


# --- subscriptions ---------------------------------------------------------------------------------------------


def test_a_subscription_takes_every_event_after_its_start_in_bounded_batches(
    run_with: Callable[[Scenario], None],
) -> None:
    """Stored before it or after: every event after the position it started at, in stream order, at most ``limit``
    per take, and never part of a message (the events of one append, all or none); a take that waits returns what
    arrives, or nothing when its timeout passes first."""

    async def scenario(store: EventStore) -> None:
        a: list[Recorded] = []
        for name in ("a", "b", "c"):
            a += await store.append("g1", a[-1].position if a else Position(), f"c1{name}", events(name))
        b = await store.append("g2", Position(), "c2", events("x", "y"))
        subscription = await store.subscribe(a[0].sequence)
        try:
            assert subscription.position == a[0].sequence
            taken = await subscription.take(1, timeout=10)
            assert taken == a[1:2]
            while len(taken) < 4:
                more = await subscription.take(1, timeout=10)
                assert more in ([a[2]], b), "one event, or the whole message it is in"
                taken += more
            assert taken == [*a[1:], *b] and subscription.position == b[-1].sequence
            assert await subscription.take(10, timeout=0.2) == []
            waiting = asyncio.create_task(subscription.take(10))
            await asyncio.sleep(0.05)
            c = await store.append("g1", a[-1].position, "c3", events("d", "e"))
            later = await asyncio.wait_for(waiting, 10)
            while len(later) < 2:
                later += await subscription.take(10, timeout=10)
            assert later == c and subscription.position == c[-1].sequence
        finally:
            await subscription.close()
        assert await subscription.take(10) == [], "a closed subscription takes nothing"

    run_with(scenario)


def test_an_interrupted_take_returns_at_once(run_with: Callable[[Scenario], None]) -> None:
    async def scenario(store: EventStore) -> None:
        subscription = await store.subscribe()
        try:
            waiting = asyncio.create_task(subscription.take(10))
            await asyncio.sleep(0.05)
            subscription.interrupt()
            assert await asyncio.wait_for(waiting, 10) == []
            subscription.interrupt()  # none waiting: the next take that would wait returns at once
            assert await asyncio.wait_for(subscription.take(10), 10) == []
            stored = await store.append("g1", Position(), "c1", events("a"))
            assert await subscription.take(10, timeout=10) == stored, "an interrupt is over once a take returned"
        finally:
            await subscription.close()

    run_with(scenario)


def test_a_take_with_wake_returns_early_only_for_an_event_that_wakes_or_a_full_take(
    run_with: Callable[[Scenario], None],
) -> None:
    """``wake``: events that arrive and wake nobody are held until the take's timeout and then returned together;
    an event ``wake`` accepts (or cannot judge) ends the wait soon, with the events before it; so does reaching
    ``limit``. Without ``wake`` a take with a timeout returns what was stored by then, at its timeout at the latest
    (JetStream fetches it together then; the memory store hands over the first to arrive at once)."""

    def ends(recorded: Recorded) -> bool:
        if recorded.data == b"?":
            raise ValueError("not an event it can judge")
        return recorded.data == b"end"

    async def scenario(store: EventStore) -> None:
        subscription = await store.subscribe()
        try:
            position = Position()

            async def one(data: bytes) -> Recorded:
                nonlocal position
                stored = await store.append("g1", position, f"c{position.version}", [data])
                position = stored[-1].position
                return stored[0]

            quiet = [await one(b"a"), await one(b"b")]  # stored before the take: judged when it starts
            waiting = asyncio.create_task(subscription.take(10, 2.0, ends))
            await asyncio.sleep(0.1)
            quiet.append(await one(b"c"))  # arrives while it waits: held
            await asyncio.sleep(0.2)
            assert not waiting.done(), "events that wake nobody wait for the take's timeout"
            assert await asyncio.wait_for(waiting, 10) == quiet, "at its timeout, the take returns what it held"

            waiting = asyncio.create_task(subscription.take(10, 30, ends))
            await asyncio.sleep(0.1)
            first = await one(b"d")
            await asyncio.sleep(0.2)
            assert not waiting.done(), "an event that wakes nobody does not end the wait"
            end = await one(b"end")
            assert await asyncio.wait_for(waiting, 10) == [first, end]

            waiting = asyncio.create_task(subscription.take(10, 30, ends))
            unreadable = await one(b"?")
            assert await asyncio.wait_for(waiting, 10) == [unreadable], "one it cannot judge wakes it"

            waiting = asyncio.create_task(subscription.take(2, 30, ends))
            full = [await one(b"e"), await one(b"f")]
            assert await asyncio.wait_for(waiting, 10) == full, "as many as asked for end the wait"

            waiting = asyncio.create_task(subscription.take(10, 1.0))
            anything = await one(b"g")
            assert await asyncio.wait_for(waiting, 10) == [anything], "without wake, it returns by its timeout"

            waiting = asyncio.create_task(subscription.take(10, 30, ends))
            held = await one(b"h")
            if isinstance(subscription, JetStreamSubscription):  # held once fetched (every FETCH_SECONDS)
                await wait_until(lambda: subscription.received == held.sequence, "the event fetched")
            else:
                await asyncio.sleep(0.1)
            subscription.interrupt()
            assert await asyncio.wait_for(waiting, 10) == [held], "interrupted, it returns what it held"
        finally:
            await subscription.close()

    run_with(scenario)


@pytest.fixture(params=["memory", pytest.param("jetstream", marks=pytest.mark.integration)])
def partitioned_store(request: pytest.FixtureRequest) -> Callable[[Scenario], None]:
    """A store with partitions, of either kind, for a scenario."""

    def run(scenario: Scenario) -> None:
        async def main() -> None:
            store: Any
            if request.param == "memory":
                store = MemoryEventStore(partitions=8)
            else:
                stream = "T" + uuid.uuid4().hex[:12].upper()
                store = await JetStreamEventStore.connect(
                    request.getfixturevalue("nats_url"), stream=stream, prefix=f"t.{stream.lower()}", partitions=8
                )
            try:
                await scenario(store)
            finally:
                await store.close()

        asyncio.run(main())

    return run


def test_a_subscription_to_some_partitions_takes_only_their_events(
    partitioned_store: Callable[[Scenario], None],
) -> None:
    async def scenario(store: EventStore) -> None:
        stored = [r for n in range(24) for r in await store.append(f"g{n}", Position(), "c", events("a", "b"))]
        mine = frozenset({1, 2, 5})
        subscription = await store.subscribe(stored[3].sequence, partitions=mine)
        try:
            expected = [r for r in stored[4:] if store.partition(r.aggregate) in mine]
            assert expected, "the aggregates fall in the partitions read"
            taken: list[Recorded] = []
            while len(taken) < len(expected):
                more = await subscription.take(3, timeout=10)
                assert more, f"{len(taken)} of {len(expected)}"
                taken += more
            assert taken == expected
            assert await subscription.take(10, timeout=0.2) == []
        finally:
            await subscription.close()
        nothing = await store.subscribe(partitions=frozenset())
        assert await nothing.take(10, timeout=0.1) == []
        await nothing.close()

    partitioned_store(scenario)


def test_a_store_without_partitions_refuses_a_subscription_to_some(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def main() -> None:
        store: Any = MemoryEventStore()
        if store_kind == "jetstream":
            stream = "T" + uuid.uuid4().hex[:12].upper()
            url = request.getfixturevalue("nats_url")
            store = await JetStreamEventStore.connect(url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            with pytest.raises(StoreError):
                await store.subscribe(partitions=frozenset({0}))
        finally:
            await store.close()

    asyncio.run(main())


async def take_all(subscription: Subscription, count: int, limit: int = 500, seconds: float = 30) -> list[Recorded]:
    """``count`` events from ``subscription``, taken ``limit`` at a time; a take that fails (NATS away) is tried
    again, as a consumer does."""
    taken: list[Recorded] = []

    async def more() -> bool:
        taken.extend(await subscription.take(min(limit, count - len(taken)), timeout=1))
        return len(taken) >= count

    await wait_until(more, f"{count} events taken", seconds=seconds, every=0.2, ignoring=(Exception,))
    return taken


async def until_stored(append: Callable[[], Awaitable[list[Recorded]]], seconds: float = 30) -> list[Recorded]:
    """An append tried until NATS is back."""
    return await wait_until(append, "an append once NATS is back", seconds=seconds, every=0.2, ignoring=(Exception,))


@pytest.mark.integration
def test_jetstream_a_subscription_reads_on_after_the_server_restarts(tmp_path: Path) -> None:
    """The server goes away with events not yet delivered, comes back without the subscription's consumer: the
    subscription hears nothing, makes a new consumer from the last event it received, and nothing is lost or
    taken twice."""
    with RestartableNats(tmp_path / "nats") as server:

        async def main() -> None:
            store = await JetStreamEventStore.connect(server.url, stream="RESTART", prefix="restart")
            try:
                subscription = await store.subscribe()
                first = await store.append("g1", Position(), "c1", events("a", "b"))
                taken = await take_all(subscription, 1, limit=1)
                assert taken == first, "a take of one event takes the whole message it is in"
                unseen = await store.append("g2", Position(), "c2", events("x", "y", "z"))
                server.stop()
                await asyncio.sleep(0.5)
                server.start()
                later = await until_stored(lambda: store.append("g1", first[-1].position, "c3", events("c")))
                taken += await take_all(subscription, 4)
                assert taken == [*first, *unseen, *later]
                assert await subscription.take(10, timeout=0.5) == []
                assert isinstance(subscription, JetStreamSubscription) and subscription.consumers == 2
                await subscription.close()
            finally:
                await store.close()

        asyncio.run(main())


def test_jetstream_a_subscription_that_drops_messages_reads_on_from_the_gap(
    nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client subscription too small for a burst drops messages (a slow consumer): the delivery after the gap
    (or the next heartbeat) shows it, and a new consumer reads on from the last event received. (Atomic batches, a
    message per event, as streams were written before a command was one message: a thousand messages.)"""
    from paiju.platform.store import jetstream

    monkeypatch.setattr(jetstream, "CONSUME_PENDING", 300)

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}", batches=True)
        try:
            written: list[Recorded] = []
            for i in range(40):
                position = written[-1].position if written else Position()
                written += await store.append("g1", position, f"c{i}", events(*(f"e{i}-{j}" for j in range(25))))
            subscription = await store.subscribe()
            assert await take_all(subscription, len(written)) == written
            assert isinstance(subscription, JetStreamSubscription) and subscription.consumers > 1
            await subscription.close()
        finally:
            await store.close()

    asyncio.run(main())


def test_jetstream_a_slow_subscriber_holds_a_bounded_queue_not_the_backlog(nats_url: str) -> None:
    """A subscription read slowly over a long backlog: nothing comes that a take did not pull, and a take pulls at
    most what it asks for, so the events waiting in memory are at most a take's worth, never the backlog; and the
    backlog is read a burst per take (a pull request each), none waiting for its timeout."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        prefix = f"t.{stream.lower()}"
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        try:
            js = store.client.jetstream()
            backlog = 20_000
            for n in range(backlog):
                headers = {"Paiju-Version": "1", "Paiju-Command-Id": f"c{n}"}
                await js.publish_async(f"{prefix}.a{n}", b"e" * 600, headers=headers)
            await js.publish_async_completed()
            subscription = await store.subscribe()
            assert isinstance(subscription, JetStreamSubscription)
            taken = 0
            async with asyncio.timeout(120):
                while taken < backlog:
                    taken += len(await subscription.take(500, timeout=60))
                    await asyncio.sleep(0.01)  # a slow handler
            assert subscription.consumers == 1, "nothing was dropped"
            assert 0 < subscription.most_queued <= 500, subscription.most_queued
            assert subscription.pulls == backlog // 500, "a burst per take, each pulled at once"
            await subscription.close()
        finally:
            await store.close()

    asyncio.run(main())


def test_jetstream_events_appended_one_by_one_while_a_take_gathers_come_in_a_few_bursts(nats_url: str) -> None:
    """Told of the first event by its waiting pull request, a subscription fetches the events stored while a take
    with a timeout gathers in bursts (every `FETCH_SECONDS`, or at the take's end), not one delivery per event:
    the take returns them together, and the pull requests are far fewer than the events."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            subscription = await store.subscribe()
            assert isinstance(subscription, JetStreamSubscription)
            waiting = asyncio.create_task(subscription.take(100))
            first = await store.append("g0", Position(), "c", events("first"))
            assert await asyncio.wait_for(waiting, 10) == first, "the first event, as soon as it is stored"
            assert subscription.pulls == 1, "nothing to read when it started: one waiting request"
            waiting = asyncio.create_task(subscription.take(20, timeout=30))
            one_by_one = [r for n in range(20) for r in await store.append(f"g{n + 1}", Position(), "c", events("e"))]
            assert await asyncio.wait_for(waiting, 20) == one_by_one, "taken together, once all are fetched"
            assert subscription.pulls - 1 <= len(one_by_one) // 2, subscription.pulls
            assert subscription.consumers == 1
            await subscription.close()
        finally:
            await store.close()

    asyncio.run(main())


def test_jetstream_a_quiet_subscription_renews_its_waiting_request_and_keeps_its_consumer(
    nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A take waiting on a quiet stream: its pull request expires and is made again, one at a time, which keeps
    the consumer past its inactivity threshold; the first event stored then ends the take."""
    from paiju.platform.store import jetstream

    monkeypatch.setattr(jetstream, "INACTIVE_SECONDS", 2.0)
    monkeypatch.setattr(jetstream, "PULL_WAIT_SECONDS", 0.8)
    monkeypatch.setattr(jetstream, "SUBSCRIPTION_HEARTBEAT_SECONDS", 0.3)

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            subscription = await store.subscribe()
            assert isinstance(subscription, JetStreamSubscription)
            waiting = asyncio.create_task(subscription.take(10))
            await wait_until(lambda: subscription.pulls >= 5, "the waiting request renewed past the threshold")
            stored = await store.append("g1", Position(), "c", events("a"))
            assert await asyncio.wait_for(waiting, 10) == stored
            assert subscription.consumers == 1, "the consumer was kept"
            await subscription.close()
        finally:
            await store.close()

    asyncio.run(main())


def test_jetstream_a_backlog_is_read_in_bursts_one_pull_each_at_once(nats_url: str) -> None:
    """A backlog longer than a take: each take pulls what it asks for in one request, at once (the last message of
    a burst says more are left), and the last, shorter burst ends with the server's "no messages"."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            stored = [r for n in range(25) for r in await store.append(f"g{n}", Position(), "c", events("e"))]
            subscription = await store.subscribe()
            assert isinstance(subscription, JetStreamSubscription)
            taken: list[Recorded] = []
            for _ in range(2):  # each returns as soon as its burst is in: a take of 10 holding 10
                taken += await asyncio.wait_for(subscription.take(10, timeout=60), 20)
            assert taken == stored[:20] and subscription.pulls == 2
            taken += await asyncio.wait_for(subscription.take(10), 20)
            assert taken == stored and subscription.pulls == 3 and subscription.most_queued == 10
            await subscription.close()
        finally:
            await store.close()

    asyncio.run(main())


def test_jetstream_a_burst_is_bounded_in_bytes_and_a_larger_message_comes_alone(
    nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst stops at `PULL_BYTES` (the server ends it "max bytes"), and the rest follows at once; a message
    larger than a burst may be is pulled alone. Nothing lost, nothing twice, no new consumer."""
    from paiju.platform.store import jetstream

    monkeypatch.setattr(jetstream, "PULL_BYTES", 3000)

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            sizes = [600] * 6 + [5000] + [600] * 4 + [5000, 5000] + [600]
            stored = [
                r for n, size in enumerate(sizes) for r in await store.append(f"g{n}", Position(), "c", [b"e" * size])
            ]
            subscription = await store.subscribe()
            assert isinstance(subscription, JetStreamSubscription)
            taken = await asyncio.wait_for(subscription.take(len(stored), timeout=60), 20)
            assert taken == stored, "one take: the bursts follow each other at once until none is left"
            assert subscription.consumers == 1
            assert subscription.pulls > 5, "bursts of at most 3,000 bytes, and the larger messages alone"
            await subscription.close()
        finally:
            await store.close()

    asyncio.run(main())


def test_jetstream_a_subscription_whose_consumer_is_deleted_reads_on_with_a_new_one(nats_url: str) -> None:
    """The server drops the subscription's consumer, while a pull request waits on it (the request is answered
    "consumer deleted") and while none does (the next request finds no consumer): each time a new consumer reads
    on from the last event received, nothing lost, nothing taken twice."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        js = store.client.jetstream()

        async def drop() -> None:
            for name in await js.consumers_info(stream):
                await js.delete_consumer(stream, name.name)

        try:
            written: list[Recorded] = []

            async def write(count: int) -> list[Recorded]:
                new: list[Recorded] = []
                for _ in range(count):
                    position = written[-1].position if written else Position()
                    new += await store.append("g1", position, f"c{len(written)}", events(f"e{len(written)}"))
                    written.extend(new[-1:])
                return new

            subscription = await store.subscribe()
            assert isinstance(subscription, JetStreamSubscription)
            first = await write(3)
            assert await take_all(subscription, 3) == first
            pulled = subscription.pulls
            waiting = asyncio.create_task(subscription.take(10))
            await wait_until(lambda: subscription.pulls > pulled, "a waiting pull request")
            await drop()
            second = await write(2)
            got = await asyncio.wait_for(waiting, 20)
            got += await take_all(subscription, len(second) - len(got)) if len(got) < len(second) else []
            assert got == second and subscription.consumers == 2
            await drop()  # no request open: the next one finds no consumer
            third = await write(2)
            assert await take_all(subscription, 2) == third
            assert subscription.consumers == 3
            await subscription.close()
        finally:
            await store.close()

    asyncio.run(main())


def test_jetstream_a_take_with_wake_fetches_while_it_waits(nats_url: str) -> None:
    """A take with ``wake`` and a long timeout: the events stored while it waits are fetched every
    `FETCH_SECONDS`, so the one that wakes it ends the take long before its timeout, with those before it; the
    others are judged a burst at a time."""

    def ends(recorded: Recorded) -> bool:
        return recorded.data == b"end"

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            subscription = await store.subscribe()
            assert isinstance(subscription, JetStreamSubscription)
            waiting = asyncio.create_task(subscription.take(100, 600, ends))
            quiet = [r for n in range(10) for r in await store.append(f"q{n}", Position(), "c", events("e"))]
            end = await store.append("m", Position(), "c", events("end"))
            assert await asyncio.wait_for(waiting, 20) == [*quiet, *end], "handed over within a fetch's interval"
            assert subscription.pulls <= 1 + len(quiet) // 2, subscription.pulls
            await subscription.close()
        finally:
            await store.close()

    asyncio.run(main())


# --- a command's events in one message, and streams of every stored form ------------------------------------------


def test_a_command_of_several_events_is_one_message_read_back_identical(run_with: Callable[[Scenario], None]) -> None:
    """Several events of one command share one stream sequence (one message) and read back exactly as appended —
    empty events, events past a one-byte length and NUL bytes included — by every way of reading."""

    async def scenario(store: EventStore) -> None:
        parts = [b"a", b"", b"\x00\x0a" * 3000, bytes(range(256)), b"z"]
        stored = await store.append("g1", Position(), "c1", parts)
        assert [(r.version, r.command_id, r.data) for r in stored] == [(i, "c1", d) for i, d in enumerate(parts, 1)]
        assert len({r.sequence for r in stored}) == 1, "one message"
        one = await store.append("g1", stored[-1].position, "c2", events("after"))
        assert one[0].sequence == stored[-1].sequence + 1 and one[0].version == len(parts) + 1
        assert await store.load("g1") == [*stored, *one]
        assert await store.read_all() == [*stored, *one]
        subscription = await store.subscribe()
        try:
            assert await subscription.take(1, timeout=10) == stored, "a take never splits a message"
        finally:
            await subscription.close()
        heard: list[Recorded] = []
        await store.follow(heard.append)
        later = await store.append("g1", one[0].position, "c3", events("x", "y", "z"))
        await wait_until(lambda: len(heard) == 3, "the feed's three events")
        assert heard == later and [r.version for r in later] == [7, 8, 9]
        assert await store.append("g1", one[0].position, "c3", events("x", "y", "z")) == later, "an exact retry"
        with pytest.raises(ConcurrencyConflict):
            await store.append("g1", one[0].position, "c4", events("p", "q"))
        assert await store.load("g1") == [*stored, *one, *later]

    run_with(scenario)


def test_load_after_a_version_inside_a_message_returns_exactly_the_events_after_it(
    run_with: Callable[[Scenario], None],
) -> None:
    """A reader that counts versions (a watch resumed, a delayed spectator) may hold a position inside a message
    of several events: what it loads is exactly what follows that version, from any position inside any message."""

    async def scenario(store: EventStore) -> None:
        every: list[Recorded] = []
        for n, size in enumerate([3, 1, 2, 4]):
            every += await store.append("g1", every[-1].position if every else Position(), f"c{n}", [b"e"] * size)
        for r in every:
            assert await store.load("g1", r.position) == every[r.version :], r.version
        for version in range(len(every) + 1):  # a version alone, without the sequence
            assert await store.load("g1", Position(version, 0)) == every[version:], version

    run_with(scenario)


def mixed_commands() -> list[tuple[str, list[bytes], bool]]:
    """Commands of one aggregate, each with whether it is written as an atomic batch (the older form)."""
    return [
        ("c1", events("a1", "a2", "a3"), True),
        ("c2", events("b1"), False),
        ("c3", events("c1", "c2"), False),
        ("c4", events("d1", "d2"), True),
        ("c5", events("e1"), True),
        ("c6", events("f1", "f2", "f3", "f4"), False),
    ]


def test_jetstream_a_stream_of_every_stored_form_reads_folds_and_follows_as_the_fake(nats_url: str) -> None:
    """One aggregate written in every form — atomic batches of a message per event (as streams were written
    before), single messages, and messages of several events — beside another aggregate written raw with the
    older headers: every way of reading gives the same events (versions, command ids, bytes) as the in-memory
    fake given the same commands, from any position, and a conflict and a retry across forms are still told."""

    def identity(recorded: list[Recorded]) -> list[tuple[str, int, str, bytes]]:
        return [(r.aggregate, r.version, r.command_id, r.data) for r in recorded]

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        prefix = f"t.{stream.lower()}"
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        older = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix, batches=True)
        fake = MemoryEventStore()
        heard: list[Recorded] = []
        try:
            await store.follow(heard.append)
            js = store.client.jetstream()
            raw = Position()
            for i in range(1, 4):  # raw, as an earlier store wrote a single event: no batch headers
                headers = {"Nats-Msg-Id": f"raw:c{i}:1", "Paiju-Version": str(i), "Paiju-Command-Id": f"c{i}"}
                await js.publish(f"{prefix}.raw", f"r{i}".encode(), headers=headers)
                raw = (await fake.append("raw", raw, f"c{i}", [f"r{i}".encode()]))[-1].position
            written: list[Recorded] = []
            faked: list[Recorded] = []
            for command, data, older_form in mixed_commands():
                writer = older if older_form else store
                written += await writer.append("g1", written[-1].position if written else Position(), command, data)
                faked += await fake.append("g1", faked[-1].position if faked else Position(), command, data)
            info = await js.stream_info(stream)
            assert info.state.last_seq == 3 + 3 + 1 + 1 + 2 + 1 + 1, "batches a message per event, the rest one"
            loaded = await store.load("g1")
            assert loaded == written and identity(loaded) == identity(faked)
            assert identity(await store.load("raw")) == identity(await fake.load("raw"))
            assert identity(await store.read_all()) == identity(await fake.read_all())
            for r in loaded:  # from every position, any form
                assert identity(await store.load("g1", r.position)) == identity(faked[r.version :])
            batches, after = [], 0
            while batch := await store.read_all(after_sequence=after, limit=2):
                batches.append(batch)
                after = batch[-1].sequence
            assert identity([r for b in batches for r in b]) == identity(await fake.read_all())
            subscription = await store.subscribe()
            try:
                assert identity(await take_all(subscription, len(faked) + 3, limit=2)) == identity(
                    await fake.read_all()
                )
            finally:
                await subscription.close()
            await wait_until(lambda: len(heard) == len(faked) + 3, "the feed's events")
            assert identity(heard) == identity(await fake.read_all())
            # a command retried by a writer of the other form is the same command, stored once
            at = written[-1].position
            last = await older.append("g1", at, "c7", events("g1", "g2"))
            assert await store.append("g1", at, "c7", events("g1", "g2")) == last
            at, written = last[-1].position, [*written, *last]
            last = await store.append("g1", at, "c8", events("h1", "h2", "h3"))
            assert await older.append("g1", at, "c8", events("h1", "h2", "h3")) == last
            written += last
            for writer in (store, older):  # and a stale position is a conflict, whatever the form
                with pytest.raises(ConcurrencyConflict):
                    await writer.append("g1", at, "other", events("o1", "o2"))
            assert await store.load("g1") == written
        finally:
            await older.close()
            await store.close()

    asyncio.run(main())


def test_jetstream_a_message_of_several_events_names_them_in_its_headers(nats_url: str) -> None:
    """The stored form analysts read (docs/analysts.md, "How events are stored"): ``Paiju-Events`` and
    ``Paiju-First-Version`` instead of ``Paiju-Version``, and the events as protobuf's repeated bytes; a single event
    is stored as it always was."""
    from paiju.platform.store.messages import decode, unpack

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        prefix = f"t.{stream.lower()}"
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        try:
            first = await store.append("g1", Position(), "c1", events("one"))
            several = await store.append("g1", first[-1].position, "c2", events("two", "three"))
            js = store.client.jetstream()
            single = await js.get_msg(stream, first[0].sequence)
            assert single.data == b"one" and single.headers is not None
            assert single.headers["Paiju-Version"] == "1" and "Paiju-Events" not in single.headers
            packed = await js.get_msg(stream, several[0].sequence)
            assert packed.headers is not None and "Paiju-Version" not in packed.headers
            assert packed.headers["Paiju-Events"] == "2" and packed.headers["Paiju-First-Version"] == "2"
            assert packed.headers["Paiju-Command-Id"] == "c2" and packed.headers["Nats-Msg-Id"] == "g1:c2:1"
            assert packed.data == b"\x0a\x03two\x0a\x05three"
            assert unpack(packed.data or b"", 2) == [b"two", b"three"]
            assert decode("g1", several[0].sequence, packed.headers, packed.data) == several
            for broken in (b"\x0a\x09two", b"\x0b\x03two\x0a\x05three", b"\x0a\x03two"):
                with pytest.raises(StoreError):
                    decode("g1", 9, packed.headers, broken)
            with pytest.raises(StoreError):
                decode("g1", 9, {"Paiju-Command-Id": "c"}, b"x")
        finally:
            await store.close()

    asyncio.run(main())


def test_jetstream_a_command_too_large_for_one_message_is_stored_as_a_batch(nats_url: str) -> None:
    """Events that together pass the server's largest message (each within it) are stored as an atomic batch, a
    message per event, and read back as any command."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"t.{stream.lower()}")
        try:
            size = store.client.max_payload // 2 - 10
            parts = [bytes([i]) * size for i in range(3)]
            stored = await store.append("g1", Position(), "large", parts)
            assert [r.data for r in stored] == parts and len({r.sequence for r in stored}) == 3
            assert await store.load("g1") == stored and await store.read_all() == stored
            assert (await store.client.jetstream().stream_info(stream)).state.last_seq == 3
        finally:
            await store.close()

    asyncio.run(main())
