"""Partitions of the games' stream: the partition function, a feed that carries only the partitions owned, a stream
stored before partitions, and notices of appends to an aggregate the feed does not carry."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import nats
import pytest
from nats.js.api import StreamConfig, SubjectTransform

from paiju.platform.partitions import GAME_PARTITIONS, fair_share, partition_of
from paiju.platform.settings import Settings
from paiju.platform.store import MemoryEventStore, Position, Recorded
from paiju.platform.store.jetstream import JetStreamEventStore

from ..support.waiting import wait_until


def test_the_partition_function_is_fnv1a_modulo_the_count() -> None:
    """The function against an independent FNV-1a and its published vector for "a", so it cannot change without this
    test failing: a changed function would move every stored game to another subject."""
    assert [partition_of(g, 16) for g in ("game-1", "game-2", "t7", "a")] == [
        _fnv1a("game-1") % 16,
        _fnv1a("game-2") % 16,
        _fnv1a("t7") % 16,
        _fnv1a("a") % 16,
    ]
    assert _fnv1a("a") == 0xE40C292C  # the FNV-1a test vector for "a"
    assert partition_of("a", 16) == 0xE40C292C % 16 == 12
    assert {partition_of(f"g{i}", 16) for i in range(200)} == set(range(16)), "every partition gets games"


def _fnv1a(text: str) -> int:
    h = 2166136261
    for byte in text.encode():
        h ^= byte
        h = (h * 16777619) % 2**32
    return h


def test_fair_share_and_the_configured_count() -> None:
    assert [fair_share(16, n) for n in (0, 1, 2, 3, 4, 5, 16, 17)] == [16, 16, 8, 6, 4, 4, 1, 1]

    @dataclass(frozen=True)
    class Partitioned(Settings):
        partitions: int = GAME_PARTITIONS.field()

    assert Partitioned.from_env({}).partitions == 16
    assert Partitioned.from_env({"PAIJU_GAME_PARTITIONS": "32"}).partitions == 32


def test_the_partition_is_the_one_the_nats_server_mapping_computes(nats_url: str) -> None:
    """NATS's own subject mapping {{partition(16,1)}} puts each id in the partition Paiju computes: an operator can
    use the server's mapping, filters and mirrors on the same games."""

    async def main() -> None:
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        stream = "P" + uuid.uuid4().hex[:10].upper()
        await js.add_stream(
            StreamConfig(
                name=stream,
                subjects=[f"{stream}.in.*"],
                subject_transform=SubjectTransform(
                    src=f"{stream}.in.*", dest=f"{stream}.{{{{partition(16,1)}}}}.{{{{wildcard(1)}}}}"
                ),
            )
        )
        ids = [f"game-{i}" for i in range(40)] + [uuid.uuid4().hex for _ in range(20)]
        for game_id in ids:
            await js.publish(f"{stream}.in.{game_id}", b"")
        for seq, game_id in enumerate(ids, start=1):
            msg = await js.get_msg(stream, seq)
            assert msg.subject == f"{stream}.{partition_of(game_id, 16)}.{game_id}"
        await nc.close()

    asyncio.run(main())


def hear(heard: list[str], recorded: Recorded) -> None:
    heard.append(recorded.aggregate)


def ids_in(partition: int, count: int, partitions: int = 8) -> list[str]:
    found = [g for g in (f"g{i}" for i in range(1000)) if partition_of(g, partitions) == partition]
    return found[:count]


StoreScenario = Callable[[Any, Any], Awaitable[None]]


@pytest.fixture(params=["memory", pytest.param("jetstream", marks=pytest.mark.integration)])
def two_stores(request: pytest.FixtureRequest) -> Callable[[StoreScenario], None]:
    """A writer and a follower over one partitioned store (8 partitions): the same store object in memory, two
    connections to one stream on JetStream."""

    def run(scenario: StoreScenario) -> None:
        async def main() -> None:
            if request.param == "memory":
                store = MemoryEventStore(partitions=8)
                await scenario(store, store)
                return
            url = request.getfixturevalue("nats_url")
            stream = "T" + uuid.uuid4().hex[:12].upper()
            writer = await JetStreamEventStore.connect(url, stream=stream, prefix=f"p.{stream.lower()}", partitions=8)
            reader = await JetStreamEventStore.connect(url, stream=stream, prefix=f"p.{stream.lower()}")
            try:
                assert reader.partitions == 8, "the stream keeps its partitions: a later connection reads them"
                await scenario(writer, reader)
            finally:
                await reader.close()
                await writer.close()

        asyncio.run(main())

    return run


def test_a_feed_carries_only_the_partitions_owned(two_stores: Callable[[StoreScenario], None]) -> None:
    async def scenario(writer: Any, reader: Any) -> None:
        heard: list[str] = []
        await reader.own(frozenset({1, 2}))
        await reader.follow(functools.partial(hear, heard))
        mine = ids_in(1, 2) + ids_in(2, 1)
        others = ids_in(0, 2) + ids_in(5, 2)
        for game_id in others + mine:
            await writer.append(game_id, Position(), "c1", [b"x"])
        await wait_until(lambda: len(heard) >= 3, "the three owned games' events on the feed")
        await asyncio.sleep(0.2)
        assert sorted(heard) == sorted(mine), "only the owned partitions cross the feed"
        # gaining a partition: its events from now on, and the kept ones go on without a gap
        await reader.own(frozenset({1, 5}))
        first = (await writer.load(mine[0]))[-1].position
        await writer.append(mine[0], first, "c2", [b"y"])
        again = (await writer.load(others[2]))[-1].position
        await writer.append(others[2], again, "c2", [b"y"])
        await writer.append(ids_in(2, 2)[1], Position(), "c1", [b"x"])  # partition 2: given up
        await wait_until(lambda: len(heard) >= 5, "two more events on the feed")
        await asyncio.sleep(0.2)
        assert heard[3:] == [mine[0], others[2]]
        await reader.own(frozenset())
        await writer.append(ids_in(1, 3)[2], Position(), "c1", [b"x"])
        await asyncio.sleep(0.3)
        assert len(heard) == 5, "a replica that owns nothing hears nothing"

    two_stores(scenario)


def test_a_notice_comes_for_each_append_to_the_aggregate_and_stops_when_asked(
    two_stores: Callable[[StoreScenario], None],
) -> None:
    async def scenario(writer: Any, reader: Any) -> None:
        noticed: list[int] = []
        stop = await reader.notice("g-noticed", noticed.append)
        await writer.append("g-other", Position(), "c1", [b"x"])
        stored = await writer.append("g-noticed", Position(), "c1", [b"x"])
        await wait_until(lambda: len(noticed) >= 1, "a notice of the append")
        assert noticed == [1], "the version of the event appended"
        await stop()
        await writer.append("g-noticed", stored[-1].position, "c2", [b"y"])
        await asyncio.sleep(0.3)
        assert noticed == [1]

    two_stores(scenario)


def test_a_stream_stored_before_partitions_keeps_its_games_where_they_are(nats_url: str) -> None:
    """An engine of this version meets a stream of the one before: the old games are read and appended to on their
    old subjects and every feed carries them; new games are partitioned; a replay reads both."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        prefix = f"u.{stream.lower()}"
        old = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        first = await old.append("old-game", Position(), "c1", [b"a"])
        await old.close()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix, partitions=8)
        follower = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        try:
            assert store.partitions == follower.partitions == 8
            heard: list[str] = []
            await follower.own(frozenset({partition_of("new-game", 8)}))
            await follower.follow(functools.partial(hear, heard))
            assert [r.data for r in await store.load("old-game")] == [b"a"]
            assert store.unpartitioned("old-game")
            await store.append("old-game", first[-1].position, "c2", [b"b"])
            await store.append("new-game", Position(), "c1", [b"n"])
            with pytest.raises(Exception, match="another writer"):
                await follower.append("old-game", Position(), "c1x", [b"dup"])  # it exists, on its old subject
            await wait_until(lambda: len(heard) >= 2, "the old and the new game's events on the feed")
            assert heard == ["old-game", "new-game"]
            info = await store.client.jetstream().stream_info(stream, subjects_filter=">")
            assert sorted(info.state.subjects or {}) == [
                f"{prefix}.{partition_of('new-game', 8)}.new-game",
                f"{prefix}.old-game",
            ]
            assert [(r.aggregate, r.data) for r in await follower.read_all()] == [
                ("old-game", b"a"),
                ("old-game", b"b"),
                ("new-game", b"n"),
            ]
            assert await follower.aggregates() == ["new-game", "old-game"]
        finally:
            await follower.close()
            await store.close()

    asyncio.run(main())


def test_a_replica_owning_every_partition_reads_the_whole_stream_unfiltered(nats_url: str) -> None:
    """One replica alone owns every partition: its feed, a subscription and a read of every partition carry the
    whole stream, the games stored before partitions too, through one consumer the server matches no filter per
    partition for."""

    async def main() -> None:
        stream = "T" + uuid.uuid4().hex[:12].upper()
        prefix = f"w.{stream.lower()}"
        old = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
        await old.append("old-game", Position(), "c1", [b"a"])
        await old.close()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix, partitions=8)
        try:
            every = frozenset(range(8))
            heard: list[str] = []
            await store.own(every)
            await store.follow(functools.partial(hear, heard))
            games = [ids_in(p, 1)[0] for p in range(8)]
            for game_id in games:
                await store.append(game_id, Position(), "c1", [b"n"])
            await wait_until(lambda: len(heard) >= 8, "every partition's event on the feed")
            assert heard == games
            js = store.client.jetstream()
            filters = [(c.config.filter_subject, c.config.filter_subjects) for c in await js.consumers_info(stream)]
            assert filters == [(f"{prefix}.>", None)], "the feed: one filter, not one per partition"
            everything = ["old-game", *games]
            assert [r.aggregate for r in await store.read_all(partitions=every)] == everything
            assert [r.aggregate for r in await store.read_all(0, 3, partitions=every)] == everything[:3]
            following = await store.subscribe(0, partitions=every)
            try:
                taken: list[Recorded] = []
                while len(taken) < len(everything):
                    taken += await following.take(100, 5.0)
                assert [r.aggregate for r in taken] == everything
            finally:
                await following.close()
        finally:
            await store.close()

    asyncio.run(main())


def test_read_all_of_some_partitions_reads_only_theirs(two_stores: Callable[[StoreScenario], None]) -> None:
    """Readers in parallel each read their partitions; together they read everything, each event once."""

    async def scenario(writer: Any, reader: Any) -> None:
        games = [f"g{i}" for i in range(24)]
        for game_id in games:
            await writer.append(game_id, Position(), "c1", [b"x"])
        halves = [frozenset(range(4)), frozenset(range(4, 8))]
        read = [await reader.read_all(partitions=half) for half in halves]
        assert sorted(r.aggregate for part in read for r in part) == sorted(games)
        for half, part in zip(halves, read, strict=True):
            assert {partition_of(r.aggregate, 8) for r in part} <= half
        batches = []
        after = 0
        while batch := await reader.read_all(after, 5, partitions=halves[0]):
            assert len(batch) <= 5 and {partition_of(r.aggregate, 8) for r in batch} <= halves[0]
            batches.append(batch)
            after = batch[-1].sequence
        assert [r for batch in batches for r in batch] == read[0], "batch after batch: every event of theirs, once"
        assert len(batches) == -(-len(read[0]) // 5)

    two_stores(scenario)
