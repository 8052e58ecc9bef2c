"""Games as aggregates over the event store: act, retries, reused command ids, rejections, concurrent writers."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from paiju.engine.contract import ZLJ_EVENTS
from paiju.engine.games import CommandIdReused, GameNotFound, Games
from paiju.engine.store import EventStore, MemoryEventStore
from paiju.engine.store.jetstream import JetStreamEventStore
from paiju.rules.cards import Card
from paiju.rules.errors import NotYourTurn, RuleError
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.bots import RandomBot as TractorBot
from paiju.rules.zlj import Cut, Options, Pass, Phase, Play, StartMatch, replay
from paiju.rules.zlj.bots import RandomBot


async def open_store(kind: str, request: pytest.FixtureRequest) -> EventStore:
    if kind == "memory":
        return MemoryEventStore()
    stream = "G" + uuid.uuid4().hex[:12].upper()
    url = request.getfixturevalue("nats_url")
    return await JetStreamEventStore.connect(url, stream=stream, prefix=f"g.{stream.lower()}")


def run(kind: str, request: pytest.FixtureRequest, body: Callable[[Games], Awaitable[None]]) -> None:
    async def main() -> None:
        store = await open_store(kind, request)
        try:
            await body(Games(store))
        finally:
            await store.close()

    asyncio.run(main())


def test_a_whole_zlj_deal_through_the_store_replays_to_the_live_state(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body(games: Games) -> None:
        seeds = SeededRandom(5)
        bots = [RandomBot(seeds.next64()) for _ in range(6)]
        game = await games.create("t1", "zlj", StartMatch(seeds.next64(), Options(deals=1)), "start", "engine")
        live = game.state
        acts = 0
        while live.phase is not Phase.ENDED:
            seat = live.turn
            action = bots[seat].choose(live, seat)
            if isinstance(action, Cut):
                action = Cut(seat, action.count, seeds.next64())
            game, stored = await games.act("t1", action, f"c{acts}", f"seat{seat}")
            assert [e.version for e in stored] == list(range(game.version - len(stored) + 1, game.version + 1))
            live = game.state
            acts += 1
        events = [ZLJ_EVENTS.decode(e.zlj) for e in game.envelopes]
        assert replay(events) == live
        assert [e.version for e in game.envelopes] == list(range(1, game.version + 1))

    run(store_kind, request, body)


def test_a_tractor_deal_through_the_store(store_kind: str, request: pytest.FixtureRequest) -> None:
    async def body(games: Games) -> None:
        seeds = SeededRandom(6)
        bots = [TractorBot(seeds.next64()) for _ in range(4)]
        game = await games.create("t2", "tractor", tractor_model.StartGame(seeds.next64()), "start", "engine")
        n = 0
        while game.state.settlement is None:
            state = game.state
            if state.phase is tractor_model.Phase.FLIP:
                command: Any = tractor_model.Redeal(seeds.next64())
            else:
                seat = tractor_game.waiting(state)[0]
                command = bots[seat].choose(state, seat)
            game, _ = await games.act("t2", command, f"c{n}", "player")
            n += 1
        reloaded = await games.load("t2")
        assert reloaded.state == game.state and reloaded.state.settlement is not None

    run(store_kind, request, body)


def test_retries_reuse_and_rejections_change_nothing(store_kind: str, request: pytest.FixtureRequest) -> None:
    async def body(games: Games) -> None:
        game = await games.create("t3", "zlj", StartMatch(7, Options(deals=1)), "start", "engine")
        seat = game.state.turn
        hand = game.state.hands[seat]
        play = Play(seat, hand[:1])
        after, first = await games.act("t3", play, "cmd-1", "p")
        again, second = await games.act("t3", play, "cmd-1", "p")
        assert second == first and again.version == after.version, "a retry is answered the same, stored once"
        with pytest.raises(CommandIdReused):
            await games.act("t3", Pass(after.state.turn), "cmd-1", "p")
        with pytest.raises(NotYourTurn):
            await games.act("t3", Pass((after.state.turn + 1) % 6), "cmd-2", "p")
        with pytest.raises(RuleError):
            await games.act("t3", Play(after.state.turn, (Card(52), Card(52), Card(52))), "cmd-3", "p")
        assert (await games.load("t3")).version == after.version
        with pytest.raises(GameNotFound):
            await games.load("nope")

    run(store_kind, request, body)


def test_two_engines_racing_for_one_turn_store_one_decision(store_kind: str, request: pytest.FixtureRequest) -> None:
    """Two writers decide the same turn at once: one append wins, the other reloads and is refused."""

    async def body(games: Games) -> None:
        game = await games.create("t4", "zlj", StartMatch(9, Options(deals=1)), "start", "engine")
        seat = game.state.turn
        hand = game.state.hands[seat]
        other = Games(games.store)  # a second engine replica over the same store

        async def attempt(engine: Games, card: Card, command_id: str) -> str:
            try:
                await engine.act("t4", Play(seat, (card,)), command_id, "p")
            except NotYourTurn:
                return "refused"
            return "stored"

        results = await asyncio.gather(attempt(games, hand[0], "a"), attempt(other, hand[-1], "b"))
        assert sorted(results) == ["refused", "stored"]
        final = await games.load("t4")
        assert final.version == game.version + 1
        assert {r.command_id for r in final.recorded[game.version :]} <= {"a", "b"}

    run(store_kind, request, body)
