"""Games as aggregates over the event store: act, retries, reused command ids, rejections, concurrent writers."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from paiju.contract.games import ZLJ_EVENTS
from paiju.engine.games import CommandIdReused, GameNotFound, Games, StaleVersion
from paiju.engine.metrics import CONFLICTS
from paiju.platform.store import EventStore, MemoryEventStore
from paiju.platform.store.jetstream import JetStreamEventStore
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
        envelopes = (await games.history("t1")).envelopes
        events = [ZLJ_EVENTS.decode(e.zlj) for e in envelopes]
        assert replay(events) == live
        assert [e.version for e in envelopes] == list(range(1, game.version + 1))

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
        assert {e.command_id for e in (await games.history("t4", game.version)).envelopes} <= {"a", "b"}

    run(store_kind, request, body)


def test_a_replica_acting_on_a_stale_cache_reloads_and_decides_again(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """Replica B cached the game, replica A moved it on: B's act is decided again on the stored game."""

    async def body(games: Games) -> None:
        game = await games.create("s1", "zlj", StartMatch(11, Options(deals=1)), "start", "engine")
        other = Games(games.store)
        await other.load("s1")  # B caches the game at this version and follows nothing
        first = game.state.turn
        moved, _ = await games.act("s1", Play(first, game.state.hands[first][:1]), "a1", "p")
        # B still believes `first` is to play: a second play by `first` is refused on the stored game
        with pytest.raises(NotYourTurn):
            await other.act("s1", Play(first, game.state.hands[first][1:2]), "b1", "p")
        # and the seat really to act is accepted although B's cache says it is not its turn
        second = moved.state.turn
        after, stored = await other.act("s1", Pass(second), "b2", "p")
        assert after.version == moved.version + 1 and stored[0].version == after.version
        assert (await games.refresh("s1")).state == after.state

    run(store_kind, request, body)


def test_the_feed_keeps_a_following_replica_current(store_kind: str, request: pytest.FixtureRequest) -> None:
    """A replica that follows the store sees another replica's acts without reading the store again."""

    async def body(games: Games) -> None:
        game = await games.create("s2", "zlj", StartMatch(12, Options(deals=1)), "start", "engine")
        follower = Games(games.store)
        await follower.follow()
        assert (await follower.load("s2")).version == game.version
        seat = game.state.turn
        moved, _ = await games.act("s2", Play(seat, game.state.hands[seat][:1]), "a1", "p")
        await asyncio.wait_for(follower.next_change("s2", game.version), timeout=5)
        seen = await follower.load("s2")
        assert seen.version == moved.version and seen.state == moved.state
        # a read that asks for a version the replica has not seen yet goes to the store
        assert (await follower.load("s2", min_version=moved.version)).version == moved.version

    run(store_kind, request, body)


def test_a_retry_through_another_replica_is_answered_from_the_log(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body(games: Games) -> None:
        game = await games.create("s3", "zlj", StartMatch(13, Options(deals=1)), "start", "engine")
        other = Games(games.store)
        await other.load("s3")
        seat = game.state.turn
        play = Play(seat, game.state.hands[seat][:1])
        first, stored = await games.act("s3", play, "once", "p")
        again, retried = await other.act("s3", play, "once", "p")  # B's cache predates the first append
        assert retried == stored and again.version == first.version
        with pytest.raises(CommandIdReused):
            await other.act("s3", Pass((seat + 1) % 6), "once", "p")

    run(store_kind, request, body)


def test_load_all_rebuilds_every_game_as_loading_each_does(store_kind: str, request: pytest.FixtureRequest) -> None:
    async def body(games: Games) -> None:
        for n, game_id in enumerate(("r1", "r2", "r3")):
            game = await games.create(game_id, "zlj", StartMatch(20 + n, Options(deals=1)), "start", "engine")
            seat = game.state.turn
            await games.act(game_id, Play(seat, game.state.hands[seat][:1]), "p1", "p")
        everything = await Games(games.store).load_all()
        assert sorted(everything) == ["r1", "r2", "r3"]
        for game_id, history in everything.items():
            alone = await Games(games.store).history(game_id)
            assert history.game.state == alone.game.state and history.envelopes == alone.envelopes

    run(store_kind, request, body)


def test_acts_of_one_process_on_one_game_are_taken_one_at_a_time(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """Acts of one engine racing for one turn are decided one after another, each on the game the one before left:
    one is stored, the others are refused on the game as it now stands, and no append is lost to the store."""

    async def body(games: Games) -> None:
        game = await games.create("q1", "zlj", StartMatch(9, Options(deals=1)), "start", "engine")
        seat = game.state.turn
        hand = game.state.hands[seat]
        conflicts = CONFLICTS._value.get()

        async def attempt(card: Card, command_id: str) -> str:
            try:
                await games.act("q1", Play(seat, (card,)), command_id, "p")
            except NotYourTurn:
                return "refused"
            return "stored"

        results = await asyncio.gather(*(attempt(card, f"q{i}") for i, card in enumerate(hand[:4])))
        assert sorted(results) == ["refused", "refused", "refused", "stored"]
        assert CONFLICTS._value.get() == conflicts, "no append lost to another act of the same process"
        assert (await games.load("q1")).version == game.version + 1
        assert not len(games._turns), "a game no act waits for holds nothing"

    run(store_kind, request, body)


def test_an_act_at_a_version_the_game_is_past_is_stale_and_a_retry_is_answered_as_the_first_time(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body(games: Games) -> None:
        game = await games.create("q2", "zlj", StartMatch(9, Options(deals=1)), "start", "engine")
        seat = game.state.turn
        after, stored = await games.act(
            "q2", Play(seat, game.state.hands[seat][:1]), "first", "p", expected_version=game.version
        )
        with pytest.raises(StaleVersion) as stale:
            await games.act("q2", Pass(after.state.turn), "late", "p", expected_version=game.version)
        assert stale.value.version == after.version
        again, answer = await games.act(
            "q2", Play(seat, game.state.hands[seat][:1]), "first", "p", expected_version=game.version
        )
        assert [e.version for e in answer] == [e.version for e in stored] and again.version == after.version

    run(store_kind, request, body)
