"""A watch told only when its seat may act (`WatchRequest.until_turn`): a bot's stream. It sends nothing while the seat
may not act; when a change gives the seat a turn (or the game ends, or more than `HELD_MOST` events are held), every
event held comes at once with that turn — the same envelopes, in order and with no gap, as the batched stream of the
same watcher. Every turn the seat may act in reaches it, at that turn's version; a watcher without a seat is told every
change, as if it had not asked."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from paiju.engine.games import Game, Games
from paiju.engine.watching import HELD_MOST
from paiju.platform.tokens import Role
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.tractor import model as tractor
from paiju.rules.zlj import bots as zlj_bots
from paiju.rules.zlj import model as zlj
from paiju.v1 import engine_pb2, tractor_pb2, zlj_pb2

from ..support.waiting import wait_until
from .harness import auth, bot_move, create_zlj, engine, run, seated, token

pytestmark = pytest.mark.integration  # games through a gRPC engine in the process


class Stream:
    """One Watch stream, read message by message."""

    def __init__(self, stub: Any, game_id: str, md: Any, *, until_turn: bool, from_version: int = 0) -> None:
        request = engine_pb2.WatchRequest(
            game_id=game_id, from_version=from_version, batched=not until_turn, until_turn=until_turn
        )
        self.call = stub.Watch(request, metadata=md)
        self.sent = from_version
        """The last version received."""
        self.envelopes: list[engine_pb2.Envelope] = []
        self.turns: list[engine_pb2.Turn] = []
        self.sizes: list[int] = []
        """The events of each message with a turn."""

    async def read(self) -> engine_pb2.WatchResponse:
        reply: engine_pb2.WatchResponse = await asyncio.wait_for(self.call.read(), 10)
        assert not reply.HasField("envelope"), "one message per change: the events in `envelopes`"
        versions = [e.version for e in reply.envelopes]
        assert versions == list(range(self.sent + 1, self.sent + 1 + len(versions))), (self.sent, versions)
        self.sent += len(versions)
        self.envelopes += reply.envelopes
        if reply.HasField("turn"):
            self.turns.append(reply.turn)
            self.sizes.append(len(versions))
        return reply

    async def to(self, version: int) -> None:
        """The messages up to the one with the turn at ``version``."""
        while True:
            reply = await self.read()
            if reply.HasField("turn") and reply.turn.version >= version:
                assert reply.turn.version == version, (reply.turn.version, version)
                return

    async def end(self) -> engine_pb2.WatchEnd:
        reply = await self.read()
        assert reply.HasField("end"), reply
        return reply.end


class Seat:
    """A seat watched both ways: every change (batched) and only its turns (until_turn)."""

    def __init__(self, stub: Any, game_id: str, seat: int) -> None:
        md = auth(token(Role.PLAYER, game_id, seat))
        self.seat = seat
        self.every = Stream(stub, game_id, md, until_turn=False)
        self.turns = Stream(stub, game_id, md, until_turn=True)
        self.told_at: list[int] = []
        """The versions at which the seat could act (from the game itself)."""

    async def change(self, game: Game, ended: bool) -> None:
        await self.every.to(game.version)
        may_act = self.seat in (*game.rules.game.waiting(game.state), *game.rules.game.contributors(game.state))
        if may_act:
            self.told_at.append(game.version)
        if may_act or ended or game.version - self.turns.sent > HELD_MOST:
            await self.turns.to(game.version)  # nothing else came meanwhile: `read` checks there is no gap

    def check(self, final: int) -> None:
        held = self.every.envelopes[: len(self.turns.envelopes)]  # a game not over: the latest may still be held
        assert [e.SerializeToString() for e in self.turns.envelopes] == [e.SerializeToString() for e in held], (
            f"seat {self.seat}: the same events, redacted alike, in order"
        )
        assert len(self.every.envelopes) - len(held) <= HELD_MOST
        told = [t.version for t in self.turns.turns]
        assert set(self.told_at) <= set(told), f"seat {self.seat}: every turn it could act in reached it"
        for turn, size in zip(self.turns.turns, self.turns.sizes, strict=True):
            assert self.seat in turn.seats or size > HELD_MOST or turn.version == final, (
                f"seat {self.seat}: told at {turn.version}, where it could not act, with {size} events"
            )
        assert len(self.turns.turns) < len(self.every.turns), "fewer messages than one per change"


async def _play(
    stub: Any, games: Games, game_id: str, seats: int, *, bots: list[Any], rng: SeededRandom, moves: int = 20000
) -> list[Seat]:
    """Every seat watched both ways, a spectator with until_turn too, change by change, through the whole game (or
    its first ``moves`` moves)."""
    game = await games.load(game_id)
    watched = [Seat(stub, game_id, s) for s in range(seats)]
    spectator = Stream(stub, game_id, auth(token(Role.SPECTATOR, game_id)), until_turn=True)
    changes = 0
    for n in range(moves + 1):
        ended = game.state.phase.value == "ended"
        for seat in watched:
            await seat.change(game, ended)
        await spectator.to(game.version)  # told every change: it holds no seat
        changes += 1
        if ended or n == moves:
            break
        game, _ = await bot_move(games, game, bots, rng, n)
    assert len(spectator.turns) == changes and spectator.sent == game.version
    if ended:
        for seat in watched:
            assert (await seat.turns.end()).reason == engine_pb2.WATCH_END_REASON_GAME_ENDED
            assert seat.turns.sent == game.version
        assert (await spectator.end()).reason == engine_pb2.WATCH_END_REASON_GAME_ENDED
    for seat in watched:
        seat.check(game.version if ended else -1)
        seat.every.call.cancel()
        seat.turns.call.cancel()
    spectator.call.cancel()
    return watched


def test_a_zlj_match_reaches_each_seat_only_at_its_turns_with_every_event(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "until-turn-zlj"
            await create_zlj(stub, game_id, zlj_pb2.ZljOptions(deals=2, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL))
            rng = SeededRandom(31)
            bots = [zlj_bots.RandomBot(rng.next64()) for _ in range(zlj.SEATS)]
            watched = await _play(stub, games, game_id, zlj.SEATS, bots=bots, rng=rng)
            assert all(s.turns.sent == s.every.sent for s in watched), "the match was played to its end"
            every = sum(len(s.every.turns) for s in watched)
            told = sum(len(s.turns.turns) for s in watched)
            assert told < every / 2, (told, every)  # a seat of six acts in about one change in six
            assert any(size > HELD_MOST for s in watched for size in s.turns.sizes), "a seat out held more than 16"

    run(body)


def test_a_tractor_deal_tells_each_bidder_its_concealed_turns_and_no_other_bid(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "until-turn-tractor"
            create = engine_pb2.CreateGameRequest(
                game_id=game_id,
                game=engine_pb2.GAME_TRACTOR,
                tractor_options=tractor_pb2.TractorOptions(),
            )
            await stub.CreateGame(seated(create, tractor.SEATS), metadata=auth(token(Role.SERVICE)))
            rng = SeededRandom(37)
            bots = [tractor_bots.HeuristicBot(rng.next64()) for _ in range(tractor.SEATS)]
            watched = await _play(stub, games, game_id, tractor.SEATS, bots=bots, rng=rng, moves=400)  # bids, then play
            concealed = 0
            for seat in watched:
                for e in seat.turns.envelopes:
                    if e.tractor.WhichOneof("event") == "bid_entered" and e.tractor.bid_entered.seat != seat.seat:
                        assert e.tractor.bid_entered.concealed and not e.tractor.bid_entered.HasField("bid")
                        concealed += 1
            assert concealed, "concealed bids were watched"

    run(body)


def test_a_watch_resumed_while_its_seat_waits_sends_nothing_until_its_turn(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """Reopened after the last version it received while another seat must act: nothing comes; the seat's turn brings
    the events since, from the resumed version."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "until-turn-resume"
            await create_zlj(stub, game_id, zlj_pb2.ZljOptions(deals=1))
            game = await games.load(game_id)
            rng = SeededRandom(41)
            bots = [zlj_bots.RandomBot(rng.next64()) for _ in range(zlj.SEATS)]
            n = 0
            while game.state.phase is not zlj.Phase.PLAY:  # into the play, where one seat acts at a time
                game, _ = await bot_move(games, game, bots, rng, n)
                n += 1
            mover = game.rules.game.waiting(game.state)[0]
            seat = (mover + 2) % zlj.SEATS
            md = auth(token(Role.PLAYER, game_id, seat))
            resumed = Stream(stub, game_id, md, until_turn=True, from_version=game.version - 1)
            await wait_until(  # the watch opened and waits for the game's next change
                lambda: games.repository._changes.waiting(game_id) > 0, "the watch to wait for a change"
            )
            opened = game.version
            while seat not in game.rules.game.waiting(game.state):
                game, _ = await bot_move(games, game, bots, rng, n)
                n += 1
            assert game.version > opened, "moves were made while the watch held them back"
            reply = await resumed.read()  # the stream's first message: none came before the seat's turn
            assert reply.turn.version == game.version and seat in reply.turn.seats
            assert reply.turn.actions, "the seat's legal actions come with its turn"
            assert resumed.sent == game.version, "every event since the resumed version, at once"
            resumed.call.cancel()

    run(body)
