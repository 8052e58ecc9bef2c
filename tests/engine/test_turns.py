"""Playing from the stream alone: every seat of a 砸六家 match and of a 拖拉机 game learns its turn, its legal actions,
its view and the fair-dealing step it owes from its own Watch stream, and acts with nothing but `Act` — no `GetView`,
no `GetLegalActions`. Along the way the streams are cut and resumed with ``from_version``; a spectator's turns hold
who may act and, as it asked, the public view, never a seat's; a long backlog is read from the store."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections import Counter
from typing import Any, cast

import grpc
import pytest

from paiju.contract.games import TRACTOR_COMMANDS, ZLJ_COMMANDS
from paiju.engine.games import RECENT
from paiju.platform.tokens import Role
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import model as tractor
from paiju.rules.zlj import model as zlj
from paiju.sdk.games import GAMES
from paiju.v1 import engine_pb2, tractor_pb2, zlj_pb2

from .harness import auth, choose_tractor, engine, run, seated, token

pytestmark = pytest.mark.integration  # whole games through a gRPC engine in the process


class Calls:
    """A stub that counts the unary calls made through it, by method."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub
        self.counts: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._stub, name)
        if name == "Watch":
            return method

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.counts[name] += 1
            return method(*args, **kwargs)

        return counted


def _create(game: str, game_id: str) -> engine_pb2.CreateGameRequest:
    if game == "zlj":
        request = engine_pb2.CreateGameRequest(
            game_id=game_id,
            game=engine_pb2.GAME_ZLJ,
            zlj_options=zlj_pb2.ZljOptions(deals=1, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL),
        )
        return seated(request, zlj.SEATS)
    request = engine_pb2.CreateGameRequest(
        game_id=game_id, game=engine_pb2.GAME_TRACTOR, tractor_options=tractor_pb2.TractorOptions(round_minutes=25)
    )
    return seated(request, tractor.SEATS)


class Seat:
    """One seat playing from its stream: it acts on each turn that names it, resuming its stream every so often."""

    def __init__(self, stub: Calls, game: str, game_id: str, seat: int, rng: SeededRandom) -> None:
        self.stub, self.game, self.game_id, self.seat, self.rng = stub, game, game_id, seat, rng
        self.md = auth(token(Role.PLAYER, game_id, seat))
        self.contract = GAMES[game]
        self.version = 0
        self.turns = 0
        self.acts = 0
        self.resumes = 0
        self.first_after_resume: list[engine_pb2.WatchResponse] = []

    async def play(self) -> None:
        while True:
            stream = self.stub.Watch(
                engine_pb2.WatchRequest(game_id=self.game_id, from_version=self.version), metadata=self.md
            )
            resumed = self.version > 0
            first = True
            async for reply in stream:
                if first and resumed:
                    self.first_after_resume.append(reply)
                first = False
                if reply.HasField("end"):
                    assert reply.end.reason == engine_pb2.WATCH_END_REASON_GAME_ENDED
                    return
                if reply.HasField("envelope"):
                    assert reply.envelope.version == self.version + 1, "each event once, in order"
                    self.version = reply.envelope.version
                if reply.HasField("turn"):
                    assert reply.turn.version == self.version, "a turn is at the version it follows"
                    self.turns += 1
                    await self.take(reply.turn)
                    if self.turns % 17 == 0:
                        stream.cancel()  # a dropped connection: watch again from the last version received
                        self.resumes += 1
                        break

    async def take(self, turn: engine_pb2.Turn) -> None:
        if self.seat not in turn.seats:
            assert not turn.actions and turn.WhichOneof("view") is None, "a seat that may not act is told nothing"
            return
        assert turn.WhichOneof("view") is not None, "a seat that may act gets its view"
        view = self.contract.view(turn)
        assert view.seat == self.seat
        if turn.fair_step.kind == engine_pb2.FAIR_DEALING_STEP_KIND_CONTRIBUTE:
            await self.act(self.contract.contribute(self.seat), None)
        actions = self.contract.actions(turn)
        if not actions:
            return
        if self.game == "tractor":
            choice = choose_tractor(actions, self.rng, pass_bids=False)
        else:
            choice = actions[self.rng.below(len(actions))]
        await self.act(self.contract.with_contribution(choice), turn.version)

    async def act(self, command: Any, version: int | None) -> None:
        request = self.contract.act(self.game_id, uuid.uuid4().hex, command, version)
        try:
            await self.stub.Act(request, metadata=self.md)
            self.acts += 1
        except grpc.aio.AioRpcError as e:
            # another seat moved first (several may act at once: concealed bids, contributions)
            assert e.code() in (grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION), e


async def _engine_moves(stub: Any, game_id: str, stop: asyncio.Event) -> None:
    """The engine's own moves its timers would make (a void 拖拉机 first deal dealt again): a turn naming no seat."""
    service = auth(token(Role.SERVICE))
    stream = stub.Watch(engine_pb2.WatchRequest(game_id=game_id), metadata=auth(token(Role.SPECTATOR, game_id)))
    async for reply in stream:
        if reply.HasField("end") or stop.is_set():
            return
        if reply.HasField("turn") and not reply.turn.seats:
            command = cast(Any, TRACTOR_COMMANDS.encode(tractor.Redeal(0)))
            request = engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, tractor=command)
            request.expected_version = reply.turn.version
            with contextlib.suppress(grpc.aio.AioRpcError):
                await stub.Act(request, metadata=service)


@pytest.mark.parametrize("game", ["zlj", "tractor"])
def test_every_seat_plays_a_whole_game_from_its_stream_alone(
    game: str, store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request, fair=True) as (raw, games):
            stub = Calls(raw)
            game_id = f"stream-{game}"
            await raw.CreateGame(_create(game, game_id), metadata=auth(token(Role.SERVICE)))
            rng = SeededRandom(7)
            seats = [Seat(stub, game, game_id, s, SeededRandom(rng.next64())) for s in range(GAMES[game].seats)]
            stop = asyncio.Event()
            engine_moves = asyncio.create_task(_engine_moves(raw, game_id, stop)) if game == "tractor" else None
            await asyncio.wait_for(asyncio.gather(*(s.play() for s in seats)), 240)
            stop.set()
            if engine_moves is not None:
                await engine_moves
            final = await games.load(game_id)
            assert final.state.phase.value == "ended"
            assert set(stub.counts) == {"Act"}, f"the seats asked the engine nothing but to act: {stub.counts}"
            assert all(s.acts > 0 for s in seats) and sum(s.acts for s in seats) <= stub.counts["Act"]
            # a resumed stream starts where the seat left off: the turn at once when nothing happened meanwhile
            resumed = [r for s in seats for r in s.first_after_resume]
            assert sum(s.resumes for s in seats) >= 4 and resumed
            assert all(r.HasField("turn") or r.HasField("envelope") for r in resumed)
            assert any(r.HasField("turn") and not r.HasField("envelope") for r in resumed), "a turn alone at once"

    run(body)


def test_a_spectator_is_told_who_may_act_and_sees_the_public_view_it_asked_for(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "spectated"
            await stub.CreateGame(_create("zlj", game_id), metadata=auth(token(Role.SERVICE)))
            spectator = auth(token(Role.SPECTATOR, game_id))
            plain = stub.Watch(engine_pb2.WatchRequest(game_id=game_id), metadata=spectator)
            viewing = stub.Watch(engine_pb2.WatchRequest(game_id=game_id, views=True), metadata=spectator)
            game = await games.load(game_id)
            # the watches opened after the creation's events: they come, the last with its turn
            for stream in (plain, viewing):
                replies: list[Any] = []
                while not replies or not replies[-1].HasField("turn"):
                    replies.append(await asyncio.wait_for(stream.read(), 10))
                turn = replies[-1].turn
                assert [r.envelope.version for r in replies] == list(range(1, game.version + 1))
                assert turn.version == game.version and list(turn.seats) == [game.state.turn]
                assert not turn.actions and not turn.HasField("fair_step") and not turn.HasField("tractor_follow")
                if stream is viewing:
                    assert turn.zlj.hand == [] and not turn.zlj.HasField("seat"), "the public view: no hand"
                    assert list(turn.zlj.hand_sizes) == [len(h) for h in game.state.hands]
                else:
                    assert turn.WhichOneof("view") is None
                stream.cancel()

    run(body)


def test_a_watch_far_behind_reads_its_backlog_from_the_store_and_ends_with_the_turn(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """The engine keeps a game's latest events in memory, not its history: a watch from version 0 of a game
    longer than that gets every event all the same, in order, then the turn."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "long"
            await stub.CreateGame(_create("zlj", game_id), metadata=auth(token(Role.SERVICE)))
            rng = SeededRandom(3)
            game = await games.load(game_id)
            while game.version < 3 * RECENT:
                seat = game.state.turn
                actions = game.rules.game.legal_actions(game.state, seat)
                game, _ = await games.act(game_id, actions[rng.below(len(actions))], uuid.uuid4().hex, "p")
            assert len(game.recent) == RECENT and game.first_recent > 1
            md = auth(token(Role.PLAYER, game_id, 2))
            for start in (0, RECENT // 2, game.version - 1):
                stream = stub.Watch(engine_pb2.WatchRequest(game_id=game_id, from_version=start), metadata=md)
                replies: list[Any] = []
                while not replies or not replies[-1].HasField("turn"):
                    replies.append(await asyncio.wait_for(stream.read(), 10))
                stream.cancel()
                assert [r.envelope.version for r in replies] == list(range(start + 1, game.version + 1))
                dealt = [
                    r.envelope.zlj.hands_dealt for r in replies if r.envelope.zlj.WhichOneof("event") == "hands_dealt"
                ]
                for hands in dealt:
                    assert [s for s, h in enumerate(hands.hands) if h.cards] == [2], "seat 2's own hand only"
                assert replies[-1].turn.version == game.version

    run(body)


def test_a_retry_of_a_command_older_than_the_games_memory_is_answered_as_the_first_time(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "retry"
            await stub.CreateGame(_create("zlj", game_id), metadata=auth(token(Role.SERVICE)))
            rng = SeededRandom(4)
            game = await games.load(game_id)
            seat = game.state.turn
            first = game.rules.game.legal_actions(game.state, seat)[0]
            md = auth(token(Role.PLAYER, game_id, seat))
            act = engine_pb2.ActRequest(game_id=game_id, command_id="early", zlj=cast(Any, ZLJ_COMMANDS.encode(first)))
            answered = await stub.Act(act, metadata=md)
            game = await games.load(game_id)
            while game.version < answered.version + 2 * RECENT:
                seat = game.state.turn
                actions = game.rules.game.legal_actions(game.state, seat)
                game, _ = await games.act(game_id, actions[rng.below(len(actions))], uuid.uuid4().hex, "p")
            assert game.first_recent > answered.version
            again = await stub.Act(act, metadata=md)
            assert again == answered, "the retry is answered exactly as the first time"
            play = zlj_pb2.ZljCommand(play=zlj_pb2.ZljPlay(seat=seat, cards=cast(Any, [1])))
            other = engine_pb2.ActRequest(game_id=game_id, command_id="early", zlj=play)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.Act(other, metadata=auth(token(Role.PLAYER, game_id, seat)))
            assert refused.value.code() == grpc.StatusCode.ALREADY_EXISTS
            assert (await games.load(game_id)).version == game.version

    run(body)


def test_a_watch_resumed_at_a_version_inside_a_command_of_several_events_gets_exactly_the_events_after_it(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """A command of several events is stored as one message, one stream sequence for several versions: a watch
    resumed at any version, one inside such a message included, gets exactly the events after that version, in
    order, then the turn — from the engine's memory and from the store alike (the game is longer than the events
    the engine keeps)."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "inside"
            await stub.CreateGame(_create("zlj", game_id), metadata=auth(token(Role.SERVICE)))
            rng = SeededRandom(5)
            game = await games.load(game_id)
            while game.version < RECENT + 40:
                seat = game.state.turn
                actions = game.rules.game.legal_actions(game.state, seat)
                game, _ = await games.act(game_id, actions[rng.below(len(actions))], uuid.uuid4().hex, "p")
            stored = await games.repository.store.load(game_id)
            assert [r.version for r in stored] == list(range(1, game.version + 1))
            inside = [a.version for a, b in itertools.pairwise(stored) if a.sequence == b.sequence]
            assert inside, "commands of several events share one message's sequence"
            md = auth(token(Role.PLAYER, game_id, 1))
            for start in sorted({*inside[:6], *inside[-6:]}):
                stream = stub.Watch(engine_pb2.WatchRequest(game_id=game_id, from_version=start), metadata=md)
                replies: list[Any] = []
                while not replies or not replies[-1].HasField("turn"):
                    replies.append(await asyncio.wait_for(stream.read(), 10))
                stream.cancel()
                assert [r.envelope.version for r in replies] == list(range(start + 1, game.version + 1)), start
                assert replies[-1].turn.version == game.version

    run(body)
