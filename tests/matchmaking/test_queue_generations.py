"""The matchmaking queue's history in generations, on real NATS JetStream (paiju.lobby.generations,
docs/operations.md "The matchmaking queue's history"): a generation that reaches its size is sealed and the queue
goes on in the next, carried over exactly; retries are answered once across the rollover; two lobbies racing make
one successor; a starting lobby reads only the current generation; a stream of the old single-aggregate form loads
and rolls over."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

import pytest

from paiju.lobby import matchmaking as mm
from paiju.lobby import queue as qu
from paiju.lobby import table as tb
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.lobby.service import new_memberships, new_parties, new_queue, new_tables
from paiju.platform.repository import CommandIdReused
from paiju.platform.store.base import NEW, Position
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.v1 import lobby_events_pb2


def streams() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:10]
    return f"G{suffix.upper()}", f"g{suffix}.lobby"


async def replica(
    nats_url: str, stream: str, prefix: str, clock: list[int], *, events: int, kept: int = 1000
) -> tuple[JetStreamEventStore, mm.Matchmaker]:
    store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
    tables, queue = new_tables(store), new_queue(store)
    parties = mm.Parties(new_parties(store), new_memberships(store))
    for aggregates in (tables, queue, parties.parties, parties.memberships):
        await aggregates.follow()
    maker = mm.Matchmaker(
        queue,
        tables,
        parties,
        mm.Ratings(),
        lambda: clock[0],
        grace_seconds=60,
        generation_events=events,
        retries_kept=kept,
    )
    return store, maker


def enqueue(entry_id: str, game: str, mode: tb.Mode, *players: str, party: str = "") -> qu.Enqueue:
    queued = tuple(qu.QueuedPlayer(p, p.upper(), 2500) for p in players)
    return qu.Enqueue(entry_id, game, mode, queued, party, 0, 100)


async def events_of(store: JetStreamEventStore, aggregate: str) -> list[Any]:
    return [
        LOBBY_EVENTS.decode(lobby_events_pb2.LobbyEnvelope.FromString(r.data).event)
        for r in await store.load(aggregate)
    ]


def same_queue(a: qu.Queue, b: qu.Queue) -> None:
    assert dict(a.entries) == dict(b.entries)
    assert dict(a.offers) == dict(b.offers)
    assert dict(a.players) == dict(b.players)
    assert a.outcomes == b.outcomes


def test_the_queue_rolls_over_at_its_size_and_carries_its_state_over_exactly(
    nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(qu, "CARRIED_ITEMS", 2)  # the carried queue in parts of two entries, offers, commands each

    async def main() -> None:
        stream, prefix = streams()
        clock = [100]
        store, maker = await replica(nats_url, stream, prefix, clock, events=12)
        history = maker.history
        for player in "abcd":  # four tractor players: one offer
            await history.act(enqueue(f"entry-{player}", "tractor", tb.Mode.RANKED, player), f"c-{player}", player)
        await history.act(enqueue("entry-p", "zlj", tb.Mode.CASUAL, "p1", "p2", party="party-p"), "c-p", "p1")
        await history.act(enqueue("entry-w", "zlj", tb.Mode.CASUAL, "w"), "c-w", "w")
        await history.act(qu.Withdraw("w"), "c-w-out", "w")  # an outcome
        maker.forming = frozenset({"tractor"})
        await maker.form_once()  # the offer (event 8)
        offer = next(iter((await history.load()).state.offers.values()))
        a_seat = offer.seats[0]
        updates: list[tuple[str, Any]] = []
        draining = asyncio.Event()

        async def follow() -> None:  # a FindMatch stream that lives across the rollover
            async for update in maker.updates(a_seat, draining):
                updates.append(update)

        following = asyncio.create_task(follow())
        for player in offer.seats[:2]:
            await maker.confirm(player, offer.offer_id)  # events 9, 10
        await history.act(enqueue("entry-e", "zlj", tb.Mode.RANKED, "e"), "c-e", "e")  # 11
        assert history.current == qu.QUEUE and (await history.load()).version == 11
        await history.act(enqueue("entry-f", "zlj", tb.Mode.RANKED, "f"), "c-f", "f")  # 12: full
        assert history.current == "queue-1" and history.rollovers == 1

        old = await events_of(store, qu.QUEUE)
        assert len(old) == 13 and isinstance(old[-1], qu.QueueSealed) and old[-1].successor == "queue-1"
        new = await events_of(store, "queue-1")
        assert len(new) == 6 and all(isinstance(e, qu.QueueCarried) and e.previous == qu.QUEUE for e in new)
        assert [type(e) for e in await events_of(store, qu.GENERATIONS)] == [qu.QueueGenerationBegun]
        sealed = (await new_queue(store).load(qu.QUEUE)).state
        carried = (await new_queue(store).load("queue-1")).state
        same_queue(sealed, carried)
        assert carried.generation == 1 and carried.begun and not carried.successor
        assert carried.entries["entry-p"].players[1].player_id == "p2" and carried.players["p2"] == "entry-p"
        assert carried.offers[offer.offer_id].confirmed == frozenset(offer.seats[:2])
        assert {e for e, o in carried.entries.items() if o.offer_id} == set(offer.entry_ids)
        assert carried.outcome("entry-w") == qu.Outcome("entry-w", qu.LeaveReason.WITHDRAWN)

        # the offer made in the first generation is confirmed and seated in the second
        for player in offer.seats[2:]:
            await maker.confirm(player, offer.offer_id)
        await maker.form_once()
        state = (await history.load()).state
        outcome = state.outcome(offer.entry_ids[0])
        assert outcome is not None and outcome.reason is qu.LeaveReason.SEATED
        assert (await maker._tables.load(outcome.table_id)).state.status is tb.Status.PLAYING
        await asyncio.wait_for(following, 10)
        assert updates[-1][0] == "found" and updates[-1][1][0] == outcome.table_id
        assert sum(1 for kind, _ in updates if kind == "found") == 1
        assert [type(e) for e in await events_of(store, qu.QUEUE)] == [type(e) for e in old], "the sealed one stays"
        await maker.close()
        await store.close()

    asyncio.run(main())


def test_a_retry_across_the_rollover_is_answered_once(nats_url: str) -> None:
    async def main() -> None:
        stream, prefix = streams()
        store, maker = await replica(nats_url, stream, prefix, [100], events=6, kept=3)
        history = maker.history
        commands = {
            "c1": enqueue("entry-1", "zlj", tb.Mode.CASUAL, "p1"),
            "c2": enqueue("entry-2", "zlj", tb.Mode.CASUAL, "p2"),
            "c3": qu.Withdraw("p1"),
            "c4": enqueue("entry-3", "zlj", tb.Mode.CASUAL, "p3"),
            "c5": enqueue("entry-4", "zlj", tb.Mode.CASUAL, "p4"),
            "c6": qu.Withdraw("p4"),
        }
        for command_id, command in commands.items():
            await history.act(command, command_id, "someone")
        assert history.current == "queue-1"
        before = await history.load()
        assert set(before.state.recent) == {"c4", "c5", "c6"}, "the latest three, not the rollover's own"
        # within the window: answered as the first time, nothing stored (c5 would queue p4 again, c6 be refused)
        for command_id in ("c4", "c5", "c6"):
            again = await history.act(commands[command_id], command_id, "someone")
            assert again.version == before.version
        assert (await history.load()).state.entry_of("p4") is None
        with pytest.raises(CommandIdReused):
            await history.act(enqueue("entry-9", "zlj", tb.Mode.CASUAL, "p9"), "c5", "someone")
        # older than the window: decided again, and doing nothing twice (p1's entry ended; p1 is not in the queue)
        again = await history.act(commands["c1"], "c1", "someone")
        assert again.version == before.version and again.state.entry_of("p1") is None
        with pytest.raises(tb.LobbyError):
            await history.act(commands["c3"], "c3", "someone")
        assert len(await store.load("queue-1")) == 1
        await store.close()

    asyncio.run(main())


def test_two_lobbies_racing_make_one_successor_and_lose_no_command(nats_url: str) -> None:
    async def main() -> None:
        stream, prefix = streams()
        clock = [100]
        one_store, one = await replica(nats_url, stream, prefix, clock, events=10)
        two_store, two = await replica(nats_url, stream, prefix, clock, events=10)

        async def queue(maker: mm.Matchmaker, side: str) -> None:
            for i in range(15):
                player = f"{side}{i}"
                await maker.history.act(enqueue(f"entry-{player}", "zlj", tb.Mode.CASUAL, player), player, player)

        await asyncio.gather(queue(one, "x"), queue(two, "y"))
        # both roll the full generation over at once
        full_one, full_two = await one.history.load(), await two.history.load()
        assert full_one.aggregate == full_two.aggregate
        after = await asyncio.gather(one.history.roll_over(full_one), two.history.roll_over(full_two))
        assert after[0].aggregate == after[1].aggregate == one.history.current == two.history.current
        last = int(one.history.current.removeprefix("queue-"))
        assert last >= 3
        for generation in range(last + 1):
            kinds = [type(e) for e in await events_of(one_store, qu.aggregate_of(generation))]
            if generation:
                assert kinds[0] is qu.QueueCarried and kinds.count(qu.QueueCarried) == 1
            if generation < last:
                assert kinds[-1] is qu.QueueSealed and kinds.count(qu.QueueSealed) == 1
            else:
                assert qu.QueueSealed not in kinds
        pointer = await events_of(one_store, qu.GENERATIONS)
        assert [e.generation for e in pointer] == list(range(1, last + 1))
        for maker in (one, two):
            state = (await maker.history.load()).state
            assert set(state.entries) == {f"entry-{s}{i}" for s in "xy" for i in range(15)}
        await one_store.close()
        await two_store.close()

    asyncio.run(main())


def test_a_starting_lobby_reads_only_the_current_generation(nats_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        stream, prefix = streams()
        clock = [100]
        store, maker = await replica(nats_url, stream, prefix, clock, events=5)
        for i in range(23):
            player = f"p{i}"
            await maker.history.act(enqueue(f"entry-{i}", "zlj", tb.Mode.CASUAL, player), f"c{i}", player)
            if i % 3 == 2:
                await maker.history.act(qu.Withdraw(player), f"w{i}", player)
        current = maker.history.current
        before = (await maker.history.load()).state
        assert current == "queue-7"
        await store.close()

        store, again = await replica(nats_url, stream, prefix, clock, events=5)
        read: Counter[str] = Counter()
        load = store.load

        async def counting(aggregate: str, after: Position = NEW) -> list[Any]:
            events = await load(aggregate, after)
            read[aggregate] += len(events)
            return events

        monkeypatch.setattr(store, "load", counting)
        loaded = await again.history.load()
        assert loaded.aggregate == current
        same_queue(loaded.state, before)
        assert dict(read) == {qu.GENERATIONS: 7, current: loaded.version}, read
        assert loaded.version < 5
        await store.close()

    asyncio.run(main())


def test_an_old_single_aggregate_queue_loads_rolls_over_and_plays_on(nats_url: str) -> None:
    async def main() -> None:
        stream, prefix = streams()
        clock = [100]
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        old = new_queue(store)  # the queue as lobbies wrote it before generations: one aggregate, no pointer
        for i in range(9):
            await old.act(qu.QUEUE, enqueue(f"entry-{i}", "zlj", tb.Mode.CASUAL, f"p{i}"), f"c{i}", f"p{i}")
        await old.act(qu.QUEUE, qu.Withdraw("p0"), "w0", "p0")
        written = (await old.load(qu.QUEUE)).state
        await store.close()

        store, maker = await replica(nats_url, stream, prefix, clock, events=5)
        loaded = await maker.history.load()
        assert loaded.aggregate == qu.QUEUE and loaded.version == 10
        same_queue(loaded.state, written)
        after = await maker.history.act(enqueue("entry-new", "zlj", tb.Mode.CASUAL, "pn"), "c-new", "pn")
        assert after.aggregate == "queue-1" and maker.history.current == "queue-1"
        assert set(after.state.entries) == set(written.entries) | {"entry-new"}
        assert after.state.outcome("entry-0") is not None
        assert (await maker.history.act(enqueue("entry-1", "zlj", tb.Mode.CASUAL, "p1"), "c1", "p1")).version == 1
        await maker.history.act(qu.Withdraw("p5"), "w5", "p5")
        state = (await maker.history.load()).state
        await store.close()

        store, again = await replica(nats_url, stream, prefix, clock, events=5)
        reloaded = await again.history.load()
        assert reloaded.aggregate == "queue-1"
        same_queue(reloaded.state, state)
        await store.close()

    asyncio.run(main())


def test_a_rollover_left_halfway_is_finished_by_the_next_lobby_and_zero_never_rolls_over(nats_url: str) -> None:
    async def main() -> None:
        stream, prefix = streams()
        clock = [100]
        store, maker = await replica(nats_url, stream, prefix, clock, events=0)
        for i in range(6):
            await maker.history.act(enqueue(f"entry-{i}", "zlj", tb.Mode.CASUAL, f"p{i}"), f"c{i}", f"p{i}")
        assert maker.history.current == qu.QUEUE and maker.history.rollovers == 0
        written = (await maker.history.load()).state
        # a lobby sealed the queue and stopped before carrying it over
        await maker.queue.act(qu.QUEUE, qu.Seal(0), "queue:seal:0", "lobby")
        await store.close()

        store, again = await replica(nats_url, stream, prefix, clock, events=0)
        loaded = await again.history.load()
        assert loaded.aggregate == "queue-1" and loaded.version == 1
        same_queue(loaded.state, written)
        assert set(loaded.state.recent) == {f"c{i}" for i in range(6)}
        assert [e.generation for e in await events_of(store, qu.GENERATIONS)] == [1]
        await store.close()

    asyncio.run(main())
