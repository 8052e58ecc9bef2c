"""EngineService end to end through gRPC: games played by bots over the API, hidden information, bad input."""

from __future__ import annotations

import typing
import uuid
from typing import Any

import grpc
import pytest

from paiju.contract.games import ZLJ, ZLJ_EVENTS
from paiju.platform.tokens import Role
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import Play, replay
from paiju.rules.zlj.model import HandsDealt
from paiju.v1 import engine_pb2, tractor_pb2, zlj_pb2

from .harness import NOW, auth, engine, refusal_of, run, token


def test_a_zlj_deal_played_by_bots_over_the_api(store_kind: str, request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            service = auth(token(Role.SERVICE))
            created = await stub.CreateGame(
                engine_pb2.CreateGameRequest(
                    game_id="api1",
                    game=engine_pb2.GAME_ZLJ,
                    zlj_options=zlj_pb2.ZljOptions(
                        deals=1,
                        reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
                        resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
                    ),
                ),
                metadata=service,
            )
            assert created.version > 0
            seats = [auth(token(Role.PLAYER, "api1", s)) for s in range(6)]
            spectator = auth(token(Role.SPECTATOR, "api1"))
            rng = SeededRandom(3)
            received: dict[int, list[engine_pb2.Envelope]] = {s: [] for s in range(6)}
            for _ in range(2000):
                public = await stub.GetView(engine_pb2.GetViewRequest(game_id="api1"), metadata=spectator)
                assert len(public.zlj.hand) == 0, "a spectator sees no hand"
                if public.zlj.phase == zlj_pb2.ZLJ_PHASE_ENDED:
                    break
                seat = public.zlj.turn
                mine = await stub.GetView(engine_pb2.GetViewRequest(game_id="api1"), metadata=seats[seat])
                assert len(mine.zlj.hand) == mine.zlj.hand_sizes[seat]
                legal = await stub.GetLegalActions(
                    engine_pb2.GetLegalActionsRequest(game_id="api1"), metadata=seats[seat]
                )
                choice = legal.actions[rng.below(len(legal.actions))]
                acted = await stub.Act(
                    engine_pb2.ActRequest(game_id="api1", command_id=uuid.uuid4().hex, zlj=choice.zlj),
                    metadata=seats[seat],
                )
                received[seat].extend(acted.events)
            else:
                raise AssertionError("the deal did not end")
            # the stream replays to the live state, and an analyst sees everything
            analyst = auth(token(Role.ANALYST))
            full = [r.envelope async for r in stub.Replay(engine_pb2.ReplayRequest(game_id="api1"), metadata=analyst)]
            state = replay([ZLJ_EVENTS.decode(e.zlj) for e in full])
            assert state == (await games.load("api1")).state
            assert [e.version for e in full] == list(range(1, len(full) + 1))
            # every event a seat received carries no other seat's hand
            for seat, envelopes in received.items():
                for envelope in envelopes:
                    event = ZLJ_EVENTS.decode(envelope.zlj)
                    if isinstance(event, HandsDealt):
                        assert all(not h for s, h in enumerate(event.hands) if s != seat) and event.seed is None

    run(body)


def test_a_watch_resumed_after_a_disconnect_misses_and_repeats_nothing(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, _):
            await stub.CreateGame(
                engine_pb2.CreateGameRequest(game_id="w1", game=engine_pb2.GAME_ZLJ), metadata=auth(token(Role.SERVICE))
            )
            watcher = auth(token(Role.PLAYER, "w1", 2))
            stream = stub.Watch(engine_pb2.WatchRequest(game_id="w1", from_version=0), metadata=watcher)
            first = [(await stream.read()).envelope for _ in range(3)]
            stream.cancel()  # the connection drops
            resumed = stub.Watch(
                engine_pb2.WatchRequest(game_id="w1", from_version=first[-1].version), metadata=watcher
            )
            rest = (await resumed.read()).envelope
            resumed.cancel()
            assert [e.version for e in first] == [1, 2, 3] and rest.version == 4
            dealt = next(ZLJ_EVENTS.decode(e.zlj) for e in first if e.zlj.WhichOneof("event") == "hands_dealt")
            assert all(not h for s, h in enumerate(dealt.hands) if s != 2)

    run(body)


def test_bad_input_gets_the_right_status_and_reason_and_changes_nothing(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            await stub.CreateGame(
                engine_pb2.CreateGameRequest(game_id="b1", game=engine_pb2.GAME_ZLJ), metadata=auth(token(Role.SERVICE))
            )
            await stub.CreateGame(
                engine_pb2.CreateGameRequest(game_id="b2", game=engine_pb2.GAME_TRACTOR),
                metadata=auth(token(Role.SERVICE)),
            )
            before = await games.load("b1")
            turn = before.state.turn
            other = (turn + 1) % 6
            me = auth(token(Role.PLAYER, "b1", turn))
            hand = before.state.hands[turn]
            command = zlj_pb2.ZljCommand(play=typing.cast(Any, ZLJ.encode(Play(turn, hand[:1]))))
            Code = grpc.StatusCode

            def act(md: Any, cmd: Any = command, command_id: str = "x1", game: str = "b1", **kw: Any) -> Any:
                return stub.Act(engine_pb2.ActRequest(game_id=game, command_id=command_id, zlj=cmd, **kw), metadata=md)

            assert await refusal_of(act(())) == (Code.UNAUTHENTICATED, "TOKEN_MISSING")
            assert await refusal_of(act(auth("forged.token"))) == (Code.UNAUTHENTICATED, "TOKEN_INVALID")
            expired = auth(token(Role.PLAYER, "b1", turn, expires=NOW - 1))
            assert await refusal_of(act(expired)) == (Code.UNAUTHENTICATED, "TOKEN_EXPIRED")
            # another seat's command; the other seat acting out of turn
            assert await refusal_of(act(auth(token(Role.PLAYER, "b1", other)))) == (
                Code.PERMISSION_DENIED,
                "NOT_YOUR_SEAT",
            )
            out_of_turn = zlj_pb2.ZljCommand()
            getattr(out_of_turn, "pass").CopyFrom(zlj_pb2.ZljPass(seat=other))
            assert await refusal_of(act(auth(token(Role.PLAYER, "b1", other)), out_of_turn)) == (
                Code.FAILED_PRECONDITION,
                "NOT_YOUR_TURN",
            )
            assert await refusal_of(act(auth(token(Role.SPECTATOR, "b1")))) == (Code.PERMISSION_DENIED, "ROLE_REQUIRED")
            # an unknown game and a game the token is not for answer alike
            assert await refusal_of(act(me, game="nope")) == (Code.NOT_FOUND, "GAME_NOT_FOUND")
            assert await refusal_of(act(me, game="b2")) == (Code.NOT_FOUND, "GAME_NOT_FOUND")
            assert await refusal_of(act(me, expected_version=before.version - 1)) == (Code.ABORTED, "STALE_VERSION")
            # a card that does not exist, ids that are not ids, no command at all: the contract refuses them
            malformed = zlj_pb2.ZljCommand(play=zlj_pb2.ZljPlay(seat=turn, cards=typing.cast(Any, [0])))
            assert await refusal_of(act(me, malformed)) == (Code.INVALID_ARGUMENT, "INVALID_REQUEST")
            for bad in ("", ">", "*", "b1.x", "b 1", "b\x001", "g" * 5000):
                assert await refusal_of(act(me, game=bad)) == (Code.INVALID_ARGUMENT, "INVALID_REQUEST"), bad
            assert await refusal_of(act(me, command_id="")) == (Code.INVALID_ARGUMENT, "INVALID_REQUEST")
            assert await refusal_of(stub.Act(engine_pb2.ActRequest(game_id="b1", command_id="x2"), metadata=me)) == (
                Code.INVALID_ARGUMENT,
                "INVALID_REQUEST",
            )
            tractor = engine_pb2.ActRequest(game_id="b1", command_id="x3")
            getattr(tractor.tractor, "pass").CopyFrom(tractor_pb2.TractorPass(seat=turn))
            assert await refusal_of(stub.Act(tractor, metadata=me)) == (Code.INVALID_ARGUMENT, "WRONG_GAME_KIND")
            pass_lead = zlj_pb2.ZljCommand()
            getattr(pass_lead, "pass").CopyFrom(zlj_pb2.ZljPass(seat=turn))
            assert await refusal_of(act(me, pass_lead)) == (Code.FAILED_PRECONDITION, "RULE_VIOLATION")
            assert (await games.load("b1")).version == before.version, "nothing was stored"
            first = await stub.Act(engine_pb2.ActRequest(game_id="b1", command_id="x1", zlj=command), metadata=me)
            # another seat moves on; the retry is answered exactly as the first time
            await stub.Act(
                engine_pb2.ActRequest(game_id="b1", command_id="y1", zlj=_pass(other)),
                metadata=auth(token(Role.PLAYER, "b1", other)),
            )
            again = await stub.Act(engine_pb2.ActRequest(game_id="b1", command_id="x1", zlj=command), metadata=me)
            assert again == first, "a retry is answered exactly as the first time"
            after = await games.load("b1")
            assert await refusal_of(act(me, pass_lead)) == (Code.ALREADY_EXISTS, "COMMAND_ID_REUSED")
            assert (await games.load("b1")).version == after.version

    run(body)


def _pass(seat: int) -> zlj_pb2.ZljCommand:
    """A pass by ``seat`` (after a lead, the next seat may always pass)."""
    command = zlj_pb2.ZljCommand()
    getattr(command, "pass").CopyFrom(zlj_pb2.ZljPass(seat=seat))
    return command
