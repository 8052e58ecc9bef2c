"""Which games an engine replica owns (`paiju.engine.owning.OwnedPartitions`): every game while it is alone, else the
games of its partitions; the store's feed follows its share; a change of share tells which partitions it gained (a
new owner reads their live games for their deadlines); a game stored before the stream had partitions is carried by
every feed."""

from __future__ import annotations

import asyncio
import functools
import uuid
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry

from paiju.engine.games import Games
from paiju.engine.live import MemoryLiveGames
from paiju.engine.metrics import PARTITIONS_OWNED
from paiju.engine.owning import OwnedPartitions
from paiju.platform.partitions import partition_of
from paiju.platform.store import MemoryEventStore, Position, Recorded
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.rules.zlj import Options, StartMatch

from ..support.waiting import wait_until

T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def games_in(partition: int, count: int = 1, partitions: int = 4) -> list[str]:
    return [g for g in (f"g{i}" for i in range(400)) if partition_of(g, partitions) == partition][:count]


def owned_gauge() -> float | None:
    registry = CollectorRegistry()
    registry.register(PARTITIONS_OWNED)
    return registry.get_sample_value("paiju_engine_partitions_owned")


def test_a_replica_alone_owns_every_game_and_with_a_share_only_the_games_of_its_partitions() -> None:
    async def main() -> None:
        store = MemoryEventStore(partitions=4)
        owned = OwnedPartitions(store)
        everything = [g for p in range(4) for g in games_in(p, 2)]
        assert owned.partitions is None and all(owned.owns(g) and owned.carries(g) for g in everything)
        await owned.own(frozenset({1, 3}))
        assert [owned.owns(g) for g in everything] == [False, False, True, True, False, False, True, True]
        assert [owned.carries(g) for g in everything] == [owned.owns(g) for g in everything]
        assert [owned.partition(g) for g in everything] == [0, 0, 1, 1, 2, 2, 3, 3]
        await owned.own(frozenset())
        assert not any(owned.owns(g) for g in everything), "a replica whose leases lapsed owns nothing"

    asyncio.run(main())


def test_a_change_of_share_tells_the_partitions_gained_and_sets_the_gauge() -> None:
    async def main() -> None:
        owned = OwnedPartitions(MemoryEventStore(partitions=4))
        assert await owned.own(None) is None, "nothing changed: owned every game already"
        assert await owned.own(frozenset({0, 1})) == frozenset(), "it owned every game before: nothing is gained"
        assert owned_gauge() == 2
        assert await owned.own(frozenset({0, 1})) is None
        assert await owned.own(frozenset({1, 2, 3})) == frozenset({2, 3})
        assert owned_gauge() == 3
        assert await owned.own(frozenset()) == frozenset()
        assert owned_gauge() == 0
        assert await owned.own(None) == frozenset({0, 1, 2, 3}), "every game again: every partition is gained"
        assert owned_gauge() == 4

        alone = OwnedPartitions(MemoryEventStore())  # a store without partitions: its games are all in 0
        await alone.own(frozenset())
        assert await alone.own(None) == frozenset({0}) and alone.owns("any-game")

    asyncio.run(main())


@pytest.mark.integration
def test_the_feed_carries_the_share_owned_and_a_partition_gained_from_then_on(nats_url: str) -> None:
    async def main() -> None:
        stream = "W" + uuid.uuid4().hex[:12].upper()
        prefix = f"w.{stream.lower()}"
        writer = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix, partitions=4)
        reader = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        heard: list[str] = []

        def hear(into: list[str], recorded: Recorded) -> None:
            into.append(recorded.aggregate)

        try:
            owned = OwnedPartitions(reader)
            assert await owned.own(frozenset({0})) == frozenset()
            await reader.follow(functools.partial(hear, heard))
            ours, theirs = games_in(0, 2), games_in(1, 2)
            for game_id in (theirs[0], ours[0]):
                await writer.append(game_id, Position(), "c1", [b"x"])
            await wait_until(lambda: len(heard) >= 1, "the owned game's event on the feed")
            await asyncio.sleep(0.2)
            assert heard == [ours[0]], "only the partition owned crosses the feed"
            assert await owned.own(frozenset({0, 1})) == frozenset({1})
            for game_id in (theirs[1], ours[1]):
                await writer.append(game_id, Position(), "c1", [b"x"])
            await wait_until(lambda: len(heard) >= 3, "both games' events on the feed")
            assert heard[1:] == [theirs[1], ours[1]], "the partition gained is carried from then on"
        finally:
            await reader.close()
            await writer.close()

    asyncio.run(main())


@pytest.mark.integration
def test_a_game_stored_before_partitions_is_carried_by_every_feed_and_owned_by_its_partition(nats_url: str) -> None:
    async def main() -> None:
        stream = "W" + uuid.uuid4().hex[:12].upper()
        prefix = f"w.{stream.lower()}"
        before = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        await before.append("old-game", Position(), "c1", [b"a"])
        await before.close()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix, partitions=8)
        try:
            await store.load("old-game")  # met: the store knows where it is stored
            owned = OwnedPartitions(store)
            elsewhere = frozenset(range(8)) - {store.partition("old-game")}
            await owned.own(elsewhere)
            assert owned.carries("old-game") and not owned.owns("old-game"), "carried, its timers run by its owner"
            new = next(g for g in (f"n{i}" for i in range(100)) if store.partition(g) not in elsewhere)
            assert not owned.carries(new) and not owned.owns(new)
        finally:
            await store.close()

    asyncio.run(main())


class AwayStore(MemoryEventStore):
    """A store whose feed cannot follow a change of share while ``away`` (NATS cut the change half-way)."""

    away = False

    async def own(self, partitions: frozenset[int] | None) -> None:
        if self.away:
            raise ConnectionError("NATS is away")
        await super().own(partitions)


def test_a_change_the_store_could_not_follow_is_the_whole_change_when_made_again() -> None:
    async def main() -> None:
        store = AwayStore(partitions=4)
        owned = OwnedPartitions(store)
        assert await owned.own(frozenset({0, 1})) == frozenset()
        store.away = True
        with pytest.raises(ConnectionError):
            await owned.own(frozenset({0, 1, 2}))
        assert owned.partitions == frozenset({0, 1}), "not followed: not owned"
        assert not owned.owns(games_in(2)[0]) and owned_gauge() == 2
        store.away = False
        assert await owned.own(frozenset({0, 1, 2})) == frozenset({2}), "gained when the feed follows it"
        assert owned.owns(games_in(2)[0]) and owned_gauge() == 3

    asyncio.run(main())


class AwayLive(MemoryLiveGames):
    """The live games, unreadable while ``away``."""

    away = False

    async def members(self) -> list[str]:
        if self.away:
            raise ConnectionError("NATS is away")
        return await super().members()


def test_the_live_games_of_a_partition_gained_are_read_when_a_failed_read_is_tried_again() -> None:
    """The share changed, but reading the gained partition's live games failed: the next call (the next round of the
    leases, with the same share) reads them, so their turn timers run here."""

    async def main() -> None:
        live = AwayLive()
        games = Games(AwayStore(partitions=4), live=live, clock=lambda: T0)
        await games.own(frozenset({0, 1, 2, 3}))
        await games.follow()
        gained = games_in(2)[0]
        await games.create(gained, "zlj", StartMatch(4, Options(deals=1, turn_seconds=30)), "start", "e")
        await games.own(frozenset({0, 1}))  # another replica took partition 2 meanwhile
        later = T0.timestamp() + 60
        assert await games.due(later) == [], "not this replica's game"
        live.away = True
        with pytest.raises(ConnectionError):
            await games.own(frozenset({0, 1, 2}))
        assert await games.due(later) == [], "its deadline not read yet"
        live.away = False
        await games.own(frozenset({0, 1, 2}))
        assert await games.due(later) == [gained], "the gained game's deadline read from the log"
        await games.own(frozenset({0, 1, 2}))
        assert await games.due(later) == [], "read once"

    asyncio.run(main())
