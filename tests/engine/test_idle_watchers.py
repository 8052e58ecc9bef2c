"""Watching costs nothing while nothing happens: a hundred Watch streams on an idle game make no store read and wake
no watcher; one move wakes each watcher once and still reads nothing (the feed brought the event)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import grpc
import pytest

from paiju.engine.games import Games
from paiju.engine.service import EngineService
from paiju.platform.serving import build_server
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Role
from paiju.v1 import engine_pb2, engine_pb2_grpc

from ..support.credentials import TRUST
from .harness import NOW, auth, seated, token

WATCHERS = 100


class Counting:
    """Counts calls of an object's coroutine method (and lets them through)."""

    def __init__(self, target: Any, name: str) -> None:
        self.calls = 0
        original = getattr(target, name)

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return await original(*args, **kwargs)

        setattr(target, name, counted)


def test_a_hundred_watchers_of_an_idle_game_cost_nothing(nats_url: str) -> None:
    async def body() -> None:
        stream = "W" + uuid.uuid4().hex[:10].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"w.{stream.lower()}")
        games = Games(store)
        await games.follow()
        service = EngineService(games, TRUST, seed_secret=b"idle-watchers-seeds-" * 2, now=lambda: NOW)
        server = build_server(service.policy)
        service.add_to(server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
        try:
            create = seated(engine_pb2.CreateGameRequest(game_id="idle", game=engine_pb2.GAME_ZLJ), 6)
            created = await stub.CreateGame(create, metadata=auth(token(Role.SERVICE)))
            watcher = auth(token(Role.SPECTATOR, "idle"))
            streams = [stub.Watch(engine_pb2.WatchRequest(game_id="idle"), metadata=watcher) for _ in range(WATCHERS)]
            for watch in streams:  # each has every event so far: from now on it waits
                for _ in range(created.version):
                    assert (await watch.read()).envelope.version > 0
            await asyncio.sleep(0.5)
            loads = Counting(store, "load")
            waits = Counting(games.repository._changes, "wait")
            await asyncio.sleep(3.0)
            assert (loads.calls, waits.calls) == (0, 0), "idle watchers read nothing and wake for nothing"

            # one move: every watcher wakes once, gets the event from memory, and waits again
            game = await games.load("idle")
            seat = game.state.turn
            legal = await stub.GetLegalActions(
                engine_pb2.GetLegalActionsRequest(game_id="idle"), metadata=auth(token(Role.PLAYER, "idle", seat))
            )
            acted = await stub.Act(
                engine_pb2.ActRequest(game_id="idle", command_id="m1", zlj=legal.actions[-1].zlj),
                metadata=auth(token(Role.PLAYER, "idle", seat)),
            )
            for watch in streams:
                assert (await asyncio.wait_for(watch.read(), 10)).envelope.version == acted.version
            await asyncio.sleep(0.5)
            assert loads.calls == 0, "the feed brought the move: no store read"
            assert waits.calls == WATCHERS, "each watcher woke once and waits again"
            for watch in streams:
                watch.cancel()
        finally:
            await channel.close()
            await server.stop(None)
            await store.close()

    asyncio.run(body())


@pytest.mark.parametrize("watchers", [2, 20])
def test_watchers_do_not_wake_each_other(nats_url: str, watchers: int) -> None:
    """The finding: a watch that woke without news read the store, and the read woke the game's other watchers, so
    they woke each other at NATS round-trip speed. Now a refresh of an unchanged game notifies nobody."""

    async def body() -> None:
        stream = "X" + uuid.uuid4().hex[:10].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"x.{stream.lower()}")
        games = Games(store)
        await games.follow()
        service = EngineService(games, TRUST, seed_secret=b"idle-watchers-seeds-" * 2, now=lambda: NOW)
        await service.creation.create(engine_pb2.CreateGameRequest(game_id="g", game=engine_pb2.GAME_ZLJ), "lobby")
        version = (await games.load("g")).version
        woken = 0

        async def watch() -> None:
            nonlocal woken
            while True:
                await games.repository._changes.wait("g")
                woken += 1

        tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
        await asyncio.sleep(0.1)
        for _ in range(5):
            assert (await games.refresh("g")).version == version  # a read of the game as it is
        await asyncio.sleep(0.3)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await store.close()
        assert woken == 0

    asyncio.run(body())
