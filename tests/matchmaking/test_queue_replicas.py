"""The queue on real NATS JetStream: its entries survive a restart of the lobby (they are events), and two lobby
replicas forming the same game's matches at once — the worst case of a lease changing hands — never put one player
at two tables (a property over seeded random queues; docs/rules/matchmaking.md, D-MM-4)."""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import pytest

from paiju.lobby import matchmaking as mm
from paiju.lobby import queue as qu
from paiju.lobby import table as tb
from paiju.lobby.service import new_memberships, new_parties, new_queue, new_tables
from paiju.platform.store.jetstream import JetStreamEventStore


async def replica(nats_url: str, stream: str, prefix: str, clock: list[int]) -> tuple[Any, mm.Matchmaker]:
    store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
    tables, queue = new_tables(store), new_queue(store)
    parties = mm.Parties(new_parties(store), new_memberships(store))
    for aggregates in (tables, queue, parties.parties, parties.memberships):
        await aggregates.follow()
    maker = mm.Matchmaker(queue, tables, parties, mm.Ratings(), lambda: clock[0], grace_seconds=0.1)
    return store, maker


def streams() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:10]
    return f"Q{suffix.upper()}", f"q{suffix}.lobby"


def test_the_queue_survives_a_restart_of_the_lobby(nats_url: str) -> None:
    async def main() -> None:
        stream, prefix = streams()
        clock = [100]
        store, maker = await replica(nats_url, stream, prefix, clock)
        entry = await maker.enqueue("account-a", "Ann", "zlj", tb.Mode.CASUAL, 30)
        await maker.enqueue("account-b", "Ben", "tractor", tb.Mode.RANKED, 0)
        await store.close()
        # a new lobby process: nothing in memory, everything from the stream
        store, again = await replica(nats_url, stream, prefix, clock)
        state = (await again.queue.load(qu.QUEUE)).state
        assert state.entry_of("account-a") is not None and state.entry_of("account-a").entry_id == entry  # type: ignore[union-attr]
        assert state.entries[entry].bot_wait_seconds == 30 and state.entry_of("account-b") is not None
        # the lobby that takes the lease gives each entry the grace to be followed again: nobody did, so they go
        await again.lease_changed(frozenset({0, 1}))
        await asyncio.sleep(0.5)
        assert not (await again.queue.load(qu.QUEUE)).state.entries
        await store.close()

    asyncio.run(main())


def test_a_lease_gained_while_the_queue_cannot_be_read_is_taken_at_the_next_round(nats_url: str) -> None:
    """Taking a game's lease gives its entries their grace first; when the queue cannot be read then (NATS away),
    the change raises, the game is not formed here yet, and the same change told again (the next round of the
    leases) gives the grace and forms it — instead of finding the game held already and its entries never checked."""

    async def main() -> None:
        stream, prefix = streams()
        clock = [100]
        store, maker = await replica(nats_url, stream, prefix, clock)
        await maker.enqueue("account-a", "Ann", "zlj", tb.Mode.CASUAL, 30)
        read = maker._state

        async def away() -> Any:
            raise ConnectionError("NATS is away")

        maker._state = away  # type: ignore[method-assign]
        with pytest.raises(ConnectionError):
            await maker.lease_changed(frozenset({0, 1}))
        assert maker.forming == frozenset(), "not formed here before its entries had their grace"
        maker._state = read  # type: ignore[method-assign]
        await maker.lease_changed(frozenset({0, 1}))
        assert maker.forming == frozenset({"zlj", "tractor"})
        await asyncio.sleep(0.5)
        assert not (await maker.queue.load(qu.QUEUE)).state.entries, "nobody followed the entry: its grace ran out"
        await maker.lease_changed(frozenset({1}))
        assert maker.forming == frozenset({mm.GAME_ORDER[1]}), "a lease lost: its game formed here no more"
        await store.close()

    asyncio.run(main())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_replicas_forming_at_once_never_seat_a_player_at_two_tables(nats_url: str, seed: int) -> None:
    async def main() -> None:
        rng = random.Random(seed)
        stream, prefix = streams()
        clock = [1000]
        one_store, one = await replica(nats_url, stream, prefix, clock)
        two_store, two = await replica(nats_url, stream, prefix, clock)
        for maker in (one, two):
            maker.forming = frozenset({"zlj", "tractor"})  # both hold the lease: a lease handed over mid-round
        players = [f"account-{seed}-{i}" for i in range(rng.randrange(8, 20))]
        for i, player in enumerate(players):
            game = rng.choice(["zlj", "tractor"])
            maker = one if i % 2 else two
            await maker.enqueue(player, f"P{i}", game, tb.Mode.CASUAL, rng.choice([0, 1]))
        clock[0] += 5  # bot waits over
        for _ in range(12):
            await asyncio.gather(one.form_once(), two.form_once(), one.form_once())
            state = (await one.queue.load(qu.QUEUE)).state
            for offer in state.offers.values():
                for player in offer.humans - offer.confirmed:
                    await rng.choice([one, two]).confirm(player, offer.offer_id)
            if not state.entries:
                break
        state = (await one.queue.load(qu.QUEUE)).state
        seated: dict[str, str] = {}
        for outcome in state.outcomes:
            assert outcome.reason is qu.LeaveReason.SEATED
            table = (await one._tables.load(outcome.table_id)).state
            for seat in table.seats:
                if seat.player_id and not seat.bot:
                    assert seated.setdefault(seat.player_id, outcome.table_id) == outcome.table_id, (
                        f"{seat.player_id} sits at two tables"
                    )
        tables = {o.table_id for o in state.outcomes}
        for table_id in tables:
            table = (await one._tables.load(table_id)).state
            assert table.status is tb.Status.PLAYING and all(not s.free for s in table.seats)
        assert set(seated) <= set(players)
        await one_store.close()
        await two_store.close()

    asyncio.run(main())
