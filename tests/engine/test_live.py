"""The live games (`paiju.engine.live`): what an engine reads at start instead of the whole history."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from nats.js.api import KeyValueConfig

from paiju.engine.games import Games
from paiju.engine.live import KeyValueLiveGames, LiveGames, MemoryLiveGames
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
