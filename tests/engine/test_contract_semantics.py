"""What a client in any language can rely on (the contract's comments say so): `min_version` waits, a dry run
checks any command without acting, a 拖拉机 follow comes with what it owes, and a watch stream ends with a message
saying why."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, cast

import grpc
import pytest

from paiju.contract.games import TRACTOR_COMMANDS
from paiju.engine.games import Games
from paiju.engine.service import EngineService
from paiju.platform.serving import build_server
from paiju.platform.store import MemoryEventStore
from paiju.platform.tokens import Role
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import model as tractor_model
from paiju.v1 import cards_pb2, engine_pb2, engine_pb2_grpc, tractor_pb2, zlj_pb2

from ..support.credentials import TRUST
from .harness import NOW, auth, choose_zlj, engine, play_tractor, refusal_of, run, seated, token


async def create_zlj(stub: Any, game_id: str) -> None:
    await stub.CreateGame(
        seated(engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_ZLJ), 6),
        metadata=auth(token(Role.SERVICE)),
    )


def pass_for(seat: int) -> zlj_pb2.ZljCommand:
    command = zlj_pb2.ZljCommand()
    getattr(command, "pass").CopyFrom(zlj_pb2.ZljPass(seat=seat))
    return command


async def mover(stub: Any, games: Any, game_id: str) -> tuple[Any, int, Any, engine_pb2.GetLegalActionsResponse]:
    """A new 砸六家 game's state as the engine holds it, the seat to move, its call metadata and its legal actions."""
    await create_zlj(stub, game_id)
    game = await games.load(game_id)
    seat = game.state.turn
    me = auth(token(Role.PLAYER, game_id, seat))
    legal = await stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=me)
    return game, seat, me, legal


def test_min_version_waits_for_the_game_to_get_there(store_kind: str, request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            await create_zlj(stub, "v1")
            game = await games.load("v1")
            seat = game.state.turn
            me = auth(token(Role.PLAYER, "v1", seat))
            # a read of a version the game has not reached waits for it, and answers once it is there
            waiting = asyncio.ensure_future(
                stub.GetView(engine_pb2.GetViewRequest(game_id="v1", min_version=game.version + 1), metadata=me)
            )
            await asyncio.sleep(0.3)
            assert not waiting.done(), "the read waits for the version"
            legal = await stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id="v1"), metadata=me)
            acted = await stub.Act(
                engine_pb2.ActRequest(game_id="v1", command_id="a1", zlj=legal.actions[-1].zlj), metadata=me
            )
            view = await asyncio.wait_for(waiting, 5)
            assert view.version == acted.version > game.version
            # a version the game does not reach before the call's deadline: VERSION_NOT_REACHED, not a hang
            far = engine_pb2.GetLegalActionsRequest(game_id="v1", min_version=acted.version + 100)
            assert await refusal_of(stub.GetLegalActions(far, metadata=me, timeout=1.0)) == (
                grpc.StatusCode.DEADLINE_EXCEEDED,
                "VERSION_NOT_REACHED",
            )

    run(body)


def test_validate_only_checks_a_command_as_act_would_and_stores_nothing(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            before, seat, me, legal = await mover(stub, games, "d1")
            good = engine_pb2.ActRequest(game_id="d1", command_id="c1", zlj=legal.actions[0].zlj, validate_only=True)
            answer = await stub.Act(good, metadata=me)
            assert answer.version == before.version and not answer.events
            bad = engine_pb2.ActRequest(game_id="d1", command_id="c2", zlj=pass_for(seat), validate_only=True)
            assert await refusal_of(stub.Act(bad, metadata=me)) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "RULE_VIOLATION",
            )
            stale = engine_pb2.ActRequest(
                game_id="d1", command_id="c3", zlj=legal.actions[0].zlj, validate_only=True, expected_version=1
            )
            assert await refusal_of(stub.Act(stale, metadata=me)) == (grpc.StatusCode.ABORTED, "STALE_VERSION")
            other = auth(token(Role.PLAYER, "d1", (seat + 1) % 6))
            assert await refusal_of(stub.Act(good, metadata=other)) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "NOT_YOUR_SEAT",
            )
            after = await games.load("d1")
            assert after.version == before.version, "a dry run stores nothing"
            # the command id of a dry run is not recorded: the same id acts for real afterwards
            real = await stub.Act(
                engine_pb2.ActRequest(game_id="d1", command_id="c1", zlj=legal.actions[0].zlj), metadata=me
            )
            assert real.version > before.version

    run(body)


def test_a_tractor_follow_comes_with_what_it_owes_and_candidates_are_checked_without_acting(
    request: pytest.FixtureRequest,
) -> None:
    """Every time a seat follows: GetLegalActions says what the follow owes; the listed play satisfies it and
    passes a dry run; a play of the wrong size or one that skips the led suit when it holds some is refused."""

    async def body() -> None:
        async with engine("memory", request) as (stub, games):
            game_id = "f1"
            await stub.CreateGame(
                seated(engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_TRACTOR), 4),
                metadata=auth(token(Role.SERVICE)),
            )
            follows = 0
            refused = 0

            async def before_act(seat: int, legal: Any) -> None:
                nonlocal follows, refused
                if not legal.HasField("tractor_follow"):
                    return  # bidding, cutting or leading: nothing is owed
                owed: tractor_pb2.TractorFollowRequirement = legal.tractor_follow
                (listed,) = legal.actions
                play = list(listed.tractor.play.cards)
                assert len(play) == owed.count
                assert set(owed.must_include) <= set(owed.suit_cards) or not owed.suit_cards
                must = list(owed.must_include)
                assert all(play.count(c) >= must.count(c) for c in set(must))
                assert owed.exact == (len(owed.suit_cards) <= owed.count)
                if owed.exact:
                    assert sorted(owed.must_include) == sorted(owed.suit_cards)
                assert owed.pattern
                assert owed.trumps == (owed.suit == cards_pb2.SUIT_UNSPECIFIED), "a suit, or trumps"
                md = auth(token(Role.PLAYER, game_id, seat))
                dry = engine_pb2.ActRequest(
                    game_id=game_id, command_id=uuid.uuid4().hex, tractor=listed.tractor, validate_only=True
                )
                assert (await stub.Act(dry, metadata=md)).version == legal.version
                hand = (await games.load(game_id)).state.hands[seat]
                wrong_size = engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, validate_only=True)
                wrong_size.tractor.CopyFrom(
                    cast(Any, TRACTOR_COMMANDS.encode(tractor_model.Play(seat, tuple(hand[: owed.count + 1]))))
                )
                if len(hand) > owed.count:
                    assert await refusal_of(stub.Act(wrong_size, metadata=md)) == (
                        grpc.StatusCode.FAILED_PRECONDITION,
                        "RULE_VIOLATION",
                    )
                    refused += 1
                off_suit = [c for c in hand if int(c) + 1 not in owed.suit_cards]
                if owed.suit_cards and len(off_suit) >= owed.count:
                    skip = engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, validate_only=True)
                    skip.tractor.CopyFrom(
                        cast(Any, TRACTOR_COMMANDS.encode(tractor_model.Play(seat, tuple(off_suit[: owed.count]))))
                    )
                    assert await refusal_of(stub.Act(skip, metadata=md)) == (
                        grpc.StatusCode.FAILED_PRECONDITION,
                        "RULE_VIOLATION",
                    )
                    refused += 1
                follows += 1
                if follows == 80:
                    raise Enough  # a whole game is long: 80 follows show every kind of lead and hand

            with pytest.raises(Enough):
                await play_tractor(stub, game_id, SeededRandom(21), before_act=before_act)
            assert refused > 80

    run(body)


class Enough(Exception):
    """Raised to stop a game once it has shown what a test needed."""


def test_a_watch_ends_with_a_message_saying_why() -> None:
    """The game's end and the server's shutdown end a watch differently: a client knows whether to resume."""

    async def body() -> None:
        games = Games(MemoryEventStore())
        await games.follow()
        service = EngineService(games, TRUST, seed_secret=b"contract-semantics-seeds-" * 2, now=lambda: NOW)
        server = build_server(service.policy)
        service.add_to(server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
                await create_zlj(stub, "e1")
                watch = stub.Watch(engine_pb2.WatchRequest(game_id="e1"), metadata=auth(token(Role.SPECTATOR, "e1")))
                first = await watch.read()
                assert first.envelope.version == 1
                service.drain()
                replies = []
                while (reply := await watch.read()) is not grpc.aio.EOF:
                    replies.append(reply)
                assert replies[-1].HasField("end") and not replies[-1].HasField("envelope")
                assert replies[-1].end.reason == engine_pb2.WATCH_END_REASON_DRAINING
                assert replies[-1].end.version == (await games.load("e1")).version
        finally:
            await server.stop(None)

    run(body)


def test_rate_limits_count_streams_as_calls_too() -> None:
    """A per-period limit on a streaming method (Replay) counts each call, besides the limit on open streams."""

    async def body() -> None:
        request = cast(pytest.FixtureRequest, None)
        async with engine("memory", request, limits="Replay:account=2/minute; Watch:account=1/open") as (stub, _):
            await create_zlj(stub, "rl")
            analyst = auth(token(Role.ANALYST))
            replay = engine_pb2.ReplayRequest(game_id="rl")
            for _ in range(2):
                assert [r async for r in stub.Replay(replay, metadata=analyst)]
            refused = await refusal_of(_drain(stub.Replay(replay, metadata=analyst)))
            assert refused == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
            other = auth(token(Role.REFEREE))
            assert [r async for r in stub.Replay(replay, metadata=other)], "the limit is the account's"
            # another Paiju service (the lobby, acting for every table) is limited by its own callers' limits
            service = auth(token(Role.SERVICE))
            for _ in range(3):
                assert [r async for r in stub.Replay(replay, metadata=service)]

    run(body)


async def _drain(call: Any) -> list[Any]:
    return [r async for r in call]


def test_a_retried_cut_is_answered_as_the_first_time_whatever_seed_it_carries() -> None:
    """The engine draws a cut's seed, so a client's retry (with any seed) is the same command, and the same id for
    another cut is COMMAND_ID_REUSED."""

    async def body() -> None:
        async with engine("memory", cast(pytest.FixtureRequest, None)) as (stub, games):
            await create_zlj(stub, "cut")
            rng = SeededRandom(5)
            players = [auth(token(Role.PLAYER, "cut", s)) for s in range(6)]
            for _ in range(3000):
                game = await games.load("cut")
                seat = game.state.turn
                legal = await stub.GetLegalActions(
                    engine_pb2.GetLegalActionsRequest(game_id="cut"), metadata=players[seat]
                )
                cuts = [a for a in legal.actions if a.zlj.WhichOneof("command") == "cut"]
                if cuts:
                    break
                choice = choose_zlj(list(legal.actions), rng)
                await stub.Act(
                    engine_pb2.ActRequest(game_id="cut", command_id=uuid.uuid4().hex, zlj=choice.zlj),
                    metadata=players[seat],
                )
            else:
                raise AssertionError("no cut in the match")
            cut = zlj_pb2.ZljCommand()
            cut.cut.CopyFrom(cuts[0].zlj.cut)
            first = await stub.Act(
                engine_pb2.ActRequest(game_id="cut", command_id="my-cut", zlj=cut), metadata=players[seat]
            )
            cut.cut.seed = 12345  # a client's retry may carry any seed: the engine's is the one used
            again = await stub.Act(
                engine_pb2.ActRequest(game_id="cut", command_id="my-cut", zlj=cut), metadata=players[seat]
            )
            assert again.version == first.version
            assert [e.version for e in again.events] == [e.version for e in first.events]
            assert (await games.load("cut")).version >= first.version
            other = zlj_pb2.ZljCommand()
            other.cut.CopyFrom(cuts[0].zlj.cut)
            other.cut.count = other.cut.count % 107 + 1
            reused = engine_pb2.ActRequest(game_id="cut", command_id="my-cut", zlj=other)
            assert await refusal_of(stub.Act(reused, metadata=players[seat])) == (
                grpc.StatusCode.ALREADY_EXISTS,
                "COMMAND_ID_REUSED",
            )

    run(body)


def test_an_act_at_a_version_the_engine_has_not_reached_waits_for_it(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """A client that saw a version on another replica's stream acts at it on a replica still behind: the engine
    waits until it has the version and then acts (refused as stale, the client would wait for a turn it already
    has); a version that does not come before the call's deadline is VERSION_NOT_REACHED, not STALE_VERSION."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game, _, me, legal = await mover(stub, games, "w1")
            lead = legal.actions[-1].zlj
            # where the lead takes the game (the rules core): whose turn follows, and a move legal for it then
            rules = game.rules.game
            state = game.state
            for event in rules.decide(state, game.rules.commands.decode(lead)):
                state = rules.evolve(state, event)
            follower = state.turn
            answer = cast(zlj_pb2.ZljCommand, game.rules.commands.encode(rules.legal_actions(state, follower)[0]))
            later = engine_pb2.ActRequest(game_id="w1", command_id="f1", zlj=answer, expected_version=game.version + 1)
            waiting = asyncio.ensure_future(stub.Act(later, metadata=auth(token(Role.PLAYER, "w1", follower))))
            await asyncio.sleep(0.3)
            assert not waiting.done(), "the act waits for the version it is at"
            led = await stub.Act(engine_pb2.ActRequest(game_id="w1", command_id="l1", zlj=lead), metadata=me)
            assert led.version == game.version + 1
            followed = await asyncio.wait_for(waiting, 5)
            assert followed.version > led.version and followed.events
            # a version the game does not reach before the deadline
            far = engine_pb2.ActRequest(
                game_id="w1", command_id="x1", zlj=answer, expected_version=followed.version + 100
            )
            assert await refusal_of(stub.Act(far, metadata=auth(token(Role.PLAYER, "w1", follower)), timeout=1.0)) == (
                grpc.StatusCode.DEADLINE_EXCEEDED,
                "VERSION_NOT_REACHED",
            )
            assert (await games.load("w1")).version == followed.version, "nothing else was stored"

    run(body)
