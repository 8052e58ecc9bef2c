"""Delayed spectators cost nothing while nothing happens (docs/rules/spectators.md, "What it costs"): a hundred delayed
Watch streams on an idle game read nothing from the store and wake for nothing — no timer runs for them; one move
wakes each once, moves the game's one delayed picture on from memory (no store read, no fold from the log), encodes
the delayed event and turn once for all of them, and sends each watcher the event the move made due."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from paiju.platform.tokens import Role
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, spectators_pb2

from ..engine.harness import auth, token
from .harness import served_engine
from .test_engine_delay import _create, _step

pytestmark = pytest.mark.integration

WATCHERS = 100
DELAY = 2


class Counting:
    """Counts calls of an object's coroutine method (and lets them through)."""

    def __init__(self, target: Any, name: str) -> None:
        self.calls = 0
        original = getattr(target, name)

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return await original(*args, **kwargs)

        setattr(target, name, counted)


def test_a_hundred_delayed_watchers_of_an_idle_game_cost_nothing(request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with served_engine(request) as (stub, games, service):
            game_id = "idle-" + uuid.uuid4().hex[:8]
            await _create(stub, game_id, spectators_pb2.SpectatorPolicy(delay_moves=DELAY))
            rng = SeededRandom(9)
            version = 0
            for _ in range(4):
                moved = await _step(stub, game_id, rng)
                assert moved is not None
                version = moved
            seen = version - DELAY
            md = auth(token(Role.SPECTATOR, game_id))
            streams = [
                stub.Watch(engine_pb2.WatchRequest(game_id=game_id, from_version=seen - 1), metadata=md)
                for _ in range(WATCHERS)
            ]
            for watch in streams:  # each has the delayed version's event and turn: from now on it waits
                reply = await asyncio.wait_for(watch.read(), 10)
                assert reply.envelope.version == seen and reply.turn.version == seen
            await asyncio.sleep(0.5)
            store = games.store
            loads = Counting(store, "load")
            waits = Counting(games.repository._changes, "wait")
            made, folded = service.spectating.encodings.made, service.spectating.folded
            await asyncio.sleep(3.0)
            assert (loads.calls, waits.calls) == (0, 0), "idle delayed watchers read nothing and wake for nothing"

            moved = await _step(stub, game_id, rng)
            assert moved is not None
            due = moved - DELAY
            for watch in streams:
                reply = await asyncio.wait_for(watch.read(), 10)
                assert reply.envelope.version == seen + 1 <= due, "the event the move made due, not the move"
            await asyncio.sleep(0.5)
            assert loads.calls == 0, "the delayed picture moved on from memory: no store read"
            assert service.spectating.folded == folded, "nothing folded from the log"
            assert waits.calls == WATCHERS, "each watcher woke once and waits again"
            events = due - seen
            assert service.spectating.encodings.made - made <= 2 * events, "each delayed encoding made once for all"
            for watch in streams:
                watch.cancel()

    asyncio.run(body())
