"""Engine replicas that share the games out by partition: each one's feed carries only its games and its timers
scan only them; a request about another replica's game is answered correctly all the same (read through the store,
appended at the position read); a watcher of another replica's game is woken by the store's notice; a partition
gained has its deadlines rebuilt from the log. On a real nats-server (the in-memory store has no notion of two
connections)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import pytest

from paiju.engine.games import Games
from paiju.engine.live import MemoryLiveGames
from paiju.platform.partitions import partition_of
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import Cut, Options, StartMatch
from paiju.rules.zlj.bots import RandomBot

from ..support.waiting import wait_until

pytestmark = pytest.mark.integration
PARTITIONS = 4
T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def game_in(partition: int, n: int = 0) -> str:
    return [g for g in (f"own-{i}" for i in range(400)) if partition_of(g, PARTITIONS) == partition][n]


Body = Callable[[Games, Games, MemoryLiveGames], Awaitable[None]]


def two_replicas(nats_url: str, body: Body) -> None:
    """Replica A owns partitions 0 and 1, replica B owns 2 and 3; each on its own connection to one stream."""

    async def main() -> None:
        stream = "O" + uuid.uuid4().hex[:12].upper()
        stores = [
            await JetStreamEventStore.connect(
                nats_url, stream=stream, prefix=f"o.{stream.lower()}", partitions=PARTITIONS
            )
            for _ in range(2)
        ]
        live = MemoryLiveGames()
        a, b = Games(stores[0], live=live, clock=lambda: T0), Games(stores[1], live=live, clock=lambda: T0)
        await a.own(frozenset({0, 1}))
        await b.own(frozenset({2, 3}))
        await a.follow()
        await b.follow()
        try:
            await body(a, b, live)
        finally:
            for store in stores:
                await store.close()

    asyncio.run(main())


async def start(games: Games, game_id: str, seed: int, turn_seconds: int = 0) -> None:
    await games.create(game_id, "zlj", StartMatch(seed, Options(deals=1, turn_seconds=turn_seconds)), "start", "e")


async def one_move(games: Games, game_id: str, n: int) -> int:
    game = await games.load(game_id)
    seat = game.state.turn
    action = RandomBot(n).choose(game.state, seat)
    if isinstance(action, Cut):
        action = Cut(seat, action.count, SeededRandom(n).next64())
    after, _ = await games.act(game_id, action, f"m{n}", f"seat{seat}", expected_version=game.version)
    return after.version


def test_each_replica_keeps_only_its_games_current_and_answers_for_the_others_through_the_store(nats_url: str) -> None:
    async def body(a: Games, b: Games, live: MemoryLiveGames) -> None:
        ours, theirs = game_in(0), game_in(2)
        await start(a, ours, 1)
        await start(a, theirs, 2)  # created through A, owned by B
        await b.load(theirs)
        await a.load(ours)
        assert a.owns(ours) and not a.owns(theirs) and b.owns(theirs)
        # B acts on A's game and A on B's: each is answered as if it owned the game
        versions = [await one_move(b, ours, 10), await one_move(a, theirs, 11), await one_move(a, theirs, 12)]
        await wait_until(
            lambda: (c := a.repository.cached(ours)) is not None and c.version == versions[0],
            "A's feed to bring B's move",
        )
        await wait_until(
            lambda: (c := b.repository.cached(theirs)) is not None and c.version == versions[2],
            "B's feed to bring A's moves",
        )
        assert (await b.load(ours)).version == versions[0], "B reads A's game from the store, as it is now"
        assert (await a.load(theirs, versions[2])).version == versions[2]
        # the feed: A heard only its own game's events after its creation, B only its own
        assert {g for g in a.repository.held() if a.ownership.carries(g)} == {ours}
        assert {g for g in b.repository.held() if b.ownership.carries(g)} == {theirs}

    two_replicas(nats_url, body)


def test_a_watcher_of_another_replicas_game_is_woken_by_the_store(nats_url: str) -> None:
    async def body(a: Games, b: Games, live: MemoryLiveGames) -> None:
        theirs = game_in(3)
        await start(b, theirs, 3)
        at = (await a.load(theirs)).version
        watching = asyncio.create_task(a.next_change(theirs, at))
        await asyncio.sleep(0.2)
        assert not watching.done()
        moved = await one_move(b, theirs, 20)
        async with asyncio.timeout(5):
            seen = await watching
        assert seen.version == moved
        assert a.repository._trusted(theirs, seen), "kept current by notices: read from memory until another one comes"
        again = await one_move(b, theirs, 21)
        async with asyncio.timeout(5):
            assert (await a.next_change(theirs, moved)).version == again

    two_replicas(nats_url, body)


def test_timers_scan_only_the_games_owned_and_a_gained_partition_is_read_from_the_log(nats_url: str) -> None:
    async def body(a: Games, b: Games, live: MemoryLiveGames) -> None:
        ours, theirs = game_in(1), game_in(2)
        await start(a, ours, 4, turn_seconds=30)
        await start(b, theirs, 5, turn_seconds=30)
        await asyncio.sleep(0.2)
        later = T0.timestamp() + 60
        assert await a.due(later) == [ours]
        assert await b.due(later) == [theirs]
        for game_id in (ours, theirs):
            a.reschedule(game_id)
        assert await a.due(later) == [ours], "another replica's game is never scheduled here"
        # B dies: A takes its partitions and finds B's live game from the live set and the log
        await a.own(frozenset(range(PARTITIONS)))
        assert sorted(await a.due(later)) == sorted([theirs]), "the gained game's deadline is unknown: read it"
        game = await a.load(theirs)
        a.reschedule(theirs)
        assert a.deadlines.expired(later) == [theirs] and game.version >= 1
        await one_move(b, theirs, 30)  # a write from a replica that still thinks it owns it: A's feed hears it
        await wait_until(
            lambda: (c := a.repository.cached(theirs)) is not None and c.version == game.version + 1,
            "A's feed to bring it",
        )

    two_replicas(nats_url, body)
