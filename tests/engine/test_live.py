"""The live games (`paiju.engine.live`): what an engine reads at start instead of the whole history, where they are
kept (`LiveGames`) and how the engine adds and takes off games (`LiveSet`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from nats.js.api import KeyValueConfig
from structlog.testing import capture_logs

from paiju.engine.games import Games
from paiju.engine.live import KeyValueLiveGames, LiveGames, LiveSet, MemoryLiveGames
from paiju.engine.selfplay import record_zlj
from paiju.engine.timers import expire_turns
from paiju.platform.store import MemoryEventStore, Position
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.rules.zlj import Options, StartMatch

from ..support.waiting import wait_until
from .test_timers import T0, reads


@pytest.fixture(params=["memory", pytest.param("keyvalue", marks=pytest.mark.integration)])
def run_with(request: pytest.FixtureRequest) -> Callable[[Callable[[LiveGames, Any], Awaitable[None]]], None]:
    """Run a scenario with a live set of each kind and the store it belongs to."""

    def run(scenario: Callable[[LiveGames, Any], Awaitable[None]]) -> None:
        async def main() -> None:
            if request.param == "memory":
                await scenario(MemoryLiveGames(), MemoryEventStore())
                return
            url = request.getfixturevalue("nats_url")
            stream = "L" + uuid.uuid4().hex[:12].upper()
            store = await JetStreamEventStore.connect(url, stream=stream, prefix=f"l.{stream.lower()}")
            try:
                await scenario(await KeyValueLiveGames.open(store.client, store, stream), store)
            finally:
                await store.close()

        asyncio.run(main())

    return run


def test_the_live_set_holds_what_was_added_and_not_discarded(run_with: Any) -> None:
    async def scenario(live: LiveGames, _: Any) -> None:
        assert await live.members() == []
        for game in ("g1", "g2", "g3"):
            await live.add(game)
        await live.add("g2")  # twice: once
        await live.discard("g1")
        await live.discard("never-added")
        assert await live.members() == ["g2", "g3"]

    run_with(scenario)


def test_an_engine_reads_the_live_games_at_start_not_the_ended_ones(run_with: Any) -> None:
    async def scenario(live: LiveGames, store: Any) -> None:
        first = Games(store, clock=lambda: T0, live=live)
        await first.follow()
        for n in range(4):  # played to their end
            await record_zlj(first, f"z{n}", [f"p{i}" for i in range(6)], seed=n, deals=1)
        for n in (4, 5):
            await first.create(f"z{n}", "zlj", StartMatch(n, Options(deals=1, turn_seconds=30)), "start", "engine")

        async def only_the_running_ones() -> bool:
            return await live.members() == ["z4", "z5"]

        await wait_until(only_the_running_ones, "the ended games to leave the live set (in the background)")

        restarted = Games(store, clock=lambda: T0, live=live)
        await restarted.follow()
        read = reads(restarted)
        await expire_turns(restarted, T0)  # the first scan learns the deadlines of the games it does not know
        assert sorted(set(read)) == ["z4", "z5"], "the ended games are not read"
        assert len(restarted.deadlines) == 2

    run_with(scenario)


def test_a_new_bucket_starts_with_every_game_of_the_stream(nats_url: str) -> None:
    """The first start of an engine that keeps the bucket: the games stored before it are all taken as live (the
    scans then drop those that ended)."""

    async def main() -> None:
        stream = "L" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"l.{stream.lower()}")
        try:
            for game in ("a", "b"):
                await store.append(game, Position(), "c", [b"x"])
            live = await KeyValueLiveGames.open(store.client, store, stream)
            assert await live.members() == ["a", "b"]
            await live.discard("a")
            again = await KeyValueLiveGames.open(store.client, store, stream)  # exists: not filled again
            assert await again.members() == ["b"]
        finally:
            await store.close()

    asyncio.run(main())


def test_a_bucket_left_half_filled_is_filled_again(nats_url: str) -> None:
    """An engine that died while filling a new bucket (or another starting meanwhile) left it without its mark of
    completion: the next opening adds every game of the stream again."""

    async def main() -> None:
        stream = "L" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"l.{stream.lower()}")
        try:
            for game in ("a", "b", "c"):
                await store.append(game, Position(), "c", [b"x"])
            js = store.client.jetstream()
            kv = await js.create_key_value(KeyValueConfig(bucket=f"paiju-live-{stream}", history=1))
            await kv.put("a", b"")  # the filling engine died after the first game
            live = await KeyValueLiveGames.open(store.client, store, stream)
            assert await live.members() == ["a", "b", "c"]
            await live.discard("b")
            again = await KeyValueLiveGames.open(store.client, store, stream)  # complete now: not filled again
            assert await again.members() == ["a", "c"]
        finally:
            await store.close()

    asyncio.run(main())


# -- the live set as the engine uses it (`LiveSet`) --------------------------------------------------------------


class Unreachable(MemoryLiveGames):
    """A live set that cannot take a game off (its bucket away)."""

    async def discard(self, game_id: str) -> None:
        raise ConnectionError("the key-value bucket is away")


async def _ended(store: Any, game_id: str) -> Any:
    """A game played to its end (recorded by an engine that keeps no live set of its own)."""
    return await record_zlj(Games(store, clock=lambda: T0), game_id, [f"p{i}" for i in range(6)], seed=7, deals=1)


async def _members_become(live: LiveGames, expected: list[str]) -> list[str]:
    async def become() -> bool:
        return await live.members() == expected

    await wait_until(become, f"the live set to hold {expected} (the discard runs in the background)")
    return await live.members()


def test_a_live_set_lists_a_game_before_it_is_created_and_takes_it_off_once_seen_ended(run_with: Any) -> None:
    async def scenario(backing: LiveGames, store: Any) -> None:
        live = LiveSet(backing, store)
        for game_id in ("ends", "goes-on"):
            await live.add(game_id)
        assert await backing.members() == ["ends", "goes-on"]
        going_on = await Games(store, clock=lambda: T0).create(
            "goes-on", "zlj", StartMatch(1, Options(deals=1)), "start", "engine"
        )
        ended = await _ended(store, "ends")
        live.moved(going_on)
        live.moved(ended)
        assert await _members_become(backing, ["goes-on"]) == ["goes-on"]
        await backing.add("ends")  # listed again by someone else: this process saw it end once and lets it be
        live.moved(ended)
        await asyncio.sleep(0.2)
        assert await backing.members() == ["ends", "goes-on"]
        assert await live.members() == ["ends", "goes-on"]

    run_with(scenario)


def test_without_a_set_every_game_of_the_store_counts_as_live() -> None:
    async def main() -> None:
        store = MemoryEventStore()
        live = LiveSet(None, store)
        await live.add("never-stored")  # nothing to keep
        ended = await _ended(store, "z1")
        live.moved(ended)
        assert await live.members() == await store.aggregates() == ["z1"]

    asyncio.run(main())


def test_an_ended_game_that_cannot_be_taken_off_stays_listed_and_the_engine_goes_on() -> None:
    async def main() -> None:
        store = MemoryEventStore()
        backing = Unreachable()
        live = LiveSet(backing, store)
        await live.add("z1")
        ended = await _ended(store, "z1")
        with capture_logs() as logs:
            live.moved(ended)
            await asyncio.sleep(0.1)
        assert [e["event"] for e in logs] == ["an ended game could not be taken off the live games"]
        assert logs[0]["game"] == "z1"
        assert await live.members() == ["z1"], "read once at the next start, seen ended, dropped then"

    asyncio.run(main())
