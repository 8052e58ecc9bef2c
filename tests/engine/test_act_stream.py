"""`EngineService.ActStream`: a seat's moves over one stream. Each request is one `Act` call — admitted by the edge as
such a call is, handled by the same handler — and its answer comes back in order: `ActStreamResponse.accepted`, the
very response `Act` gives (a retry of the same command by `Act` answers the same bytes), or
`ActStreamResponse.refused`, the status `Act` would have ended the call with (its code and `ErrorInfo` reason). A
refusal ends nothing: the stream goes on. What ends the stream is only what concerns the stream: no valid token at its
first request, too many open streams."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from paiju.engine.games import Games
from paiju.platform.tokens import Role
from paiju.sdk import ActStream, Stale, act, refusal_of
from paiju.v1 import engine_pb2, zlj_pb2

from .harness import NOW, auth, create_zlj, engine, reason_of, run, token

pytestmark = pytest.mark.integration  # games through a gRPC engine in the process

ANSWER_SECONDS = 10.0


def reason_in(status: status_pb2.Status) -> str:
    """The `ErrorInfo` reason a refusal's status carries."""
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return ""


class Seat:
    """One seat's act stream, raw: requests written as bytes, answers read as `ActStreamResponse`."""

    def __init__(self, stub: Any, game_id: str, seat: int | None, metadata: Any = None) -> None:
        self.seat = seat
        self.metadata = metadata if metadata is not None else auth(token(Role.PLAYER, game_id, seat))
        method = stub.channel.stream_stream(
            "/paiju.v1.EngineService/ActStream",
            request_serializer=None,
            response_deserializer=engine_pb2.ActStreamResponse.FromString,
        )
        self.call = method(metadata=self.metadata)

    async def send(self, request: engine_pb2.ActRequest | bytes) -> engine_pb2.ActStreamResponse:
        raw = request if isinstance(request, bytes) else engine_pb2.ActStreamRequest(act=request).SerializeToString()
        await self.call.write(raw)
        answer = await asyncio.wait_for(self.call.read(), ANSWER_SECONDS)
        assert answer is not grpc.aio.EOF, "the stream ended"
        assert isinstance(answer, engine_pb2.ActStreamResponse)
        return answer


async def legal_move(stub: Any, games: Games, game_id: str, n: int) -> tuple[int, engine_pb2.ActRequest]:
    """The seat the game waits for and its first legal action, as an `ActRequest` at the game's version."""
    game = await games.load(game_id)
    seat = game.rules.game.waiting(game.state)[0]
    legal = await stub.GetLegalActions(
        engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=auth(token(Role.PLAYER, game_id, seat))
    )
    assert legal.actions, (seat, legal)
    request = engine_pb2.ActRequest(
        game_id=game_id, command_id=f"move-{n}", expected_version=legal.version, zlj=legal.actions[0].zlj
    )
    return seat, request


async def checking_move(stub: Any, games: Games, game_id: str) -> tuple[int, engine_pb2.ActRequest]:
    """A new 砸六家 game's first mover and its first legal action, only checked (`validate_only`): sent again and
    again, it changes nothing."""
    await create_zlj(stub, game_id, zlj_pb2.ZljOptions(deals=1))
    mover, move = await legal_move(stub, games, game_id, 0)
    move.validate_only = True
    return mover, move


def test_each_act_on_the_stream_is_answered_as_act_answers_it(store_kind: str, request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "act-stream"
            await create_zlj(stub, game_id, zlj_pb2.ZljOptions(deals=1))
            seats: dict[int, Seat] = {}
            version = (await games.load(game_id)).version
            for n in range(40):
                seat, move = await legal_move(stub, games, game_id, n)
                stream = seats.setdefault(seat, Seat(stub, game_id, seat))
                answer = await stream.send(move)
                assert answer.command_id == move.command_id
                assert answer.WhichOneof("result") == "accepted", answer
                assert answer.accepted.version > version and answer.accepted.events
                version = answer.accepted.version
                # Act answers a retry of the command exactly as the first time: the same response, byte for byte
                retried = await stub.Act(move, metadata=stream.metadata)
                assert retried.SerializeToString() == answer.accepted.SerializeToString()
            assert (await games.load(game_id)).version == version
            assert len(seats) > 1, "several seats acted, each on its own stream"
            for stream in seats.values():
                stream.call.cancel()

    run(body)


def test_a_refusal_comes_as_the_answer_act_would_end_with_and_the_stream_goes_on(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "act-stream-refusals"
            await create_zlj(stub, game_id, zlj_pb2.ZljOptions(deals=1))
            mover, move = await legal_move(stub, games, game_id, 0)
            other = (mover + 1) % 6
            stream = Seat(stub, game_id, other)
            mine = Seat(stub, game_id, mover)
            before = (await games.load(game_id)).version

            undecodable = await stream.send(b"\xff\xff\xff")
            assert undecodable.command_id == "" and undecodable.WhichOneof("result") == "refused"
            assert undecodable.refused.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
            assert reason_in(undecodable.refused) == "MALFORMED_MESSAGE"

            wildcard = engine_pb2.ActRequest()
            wildcard.CopyFrom(move)
            wildcard.game_id, wildcard.command_id = "game.*>", "bad-id"
            stale = engine_pb2.ActRequest()
            stale.CopyFrom(move)
            stale.command_id, stale.expected_version = "stale", move.expected_version - 1
            not_mine = engine_pb2.ActRequest()
            not_mine.CopyFrom(move)
            not_mine.command_id = "not-mine"
            huge = engine_pb2.ActRequest()
            huge.CopyFrom(move)
            huge.command_id = "x" * 5000
            for on, refused, code, reason in (
                (stream, wildcard, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST"),
                (mine, stale, grpc.StatusCode.ABORTED, "STALE_VERSION"),
                (stream, not_mine, grpc.StatusCode.PERMISSION_DENIED, "NOT_YOUR_SEAT"),
                (stream, huge, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST"),
            ):
                answer = await on.send(refused)
                assert answer.command_id == refused.command_id
                assert answer.WhichOneof("result") == "refused", answer
                assert (answer.refused.code, reason_in(answer.refused)) == (code.value[0], reason)
                assert answer.refused.message and "Traceback" not in answer.refused.message
                with pytest.raises(grpc.aio.AioRpcError) as unary:
                    await stub.Act(refused, metadata=on.metadata)
                assert (unary.value.code(), reason_of(unary.value)) == (code, reason), "as Act refuses it"
                if reason == "INVALID_REQUEST":  # the field is named in the stream's request, which holds the call's
                    assert answer.refused.message == (unary.value.details() or "").replace(": ", ": act.", 1)
                else:
                    assert answer.refused.message == unary.value.details()
            assert (await games.load(game_id)).version == before, "nothing refused was stored"

            accepted = await mine.send(move)  # after its refusal, the same stream acts
            assert accepted.WhichOneof("result") == "accepted" and accepted.accepted.version > before
            again = await stream.send(not_mine)  # and the other seat's still answers
            assert reason_in(again.refused) == "NOT_YOUR_SEAT"
            for s in (stream, mine):
                s.call.cancel()

    run(body)


@pytest.mark.parametrize(
    ("header", "reason"),
    [(None, "TOKEN_MISSING"), ("Bearer not-a-token", "TOKEN_INVALID")],
)
def test_a_stream_without_a_valid_token_ends_when_it_opens(
    header: str | None, reason: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine("memory", request) as (stub, _):
            metadata = (("authorization", header),) if header is not None else ()
            stream = Seat(stub, "g", 0, metadata=metadata)
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                await stream.send(engine_pb2.ActRequest(game_id="g", command_id="c"))
            assert ended.value.code() is grpc.StatusCode.UNAUTHENTICATED
            assert reason_of(ended.value) == reason

    run(body)


def test_a_token_that_expires_while_the_stream_is_open_is_refused_at_the_next_act(
    request: pytest.FixtureRequest,
) -> None:
    """Each request's token is checked as each call's is: the stream opened with a token still valid, its next act
    after the token lapsed is refused TOKEN_EXPIRED in the answer (the client opens a new stream with a renewed
    token)."""

    async def body() -> None:
        clock = [NOW]
        async with engine("memory", request, now=lambda: clock[0]) as (stub, games):
            game_id = "act-stream-expiry"
            mover, move = await checking_move(stub, games, game_id)
            stream = Seat(stub, game_id, mover, metadata=auth(token(Role.PLAYER, game_id, mover, expires=NOW + 60)))
            assert (await stream.send(move)).WhichOneof("result") == "accepted"
            clock[0] = NOW + 120
            lapsed = await stream.send(move)
            assert lapsed.refused.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
            assert reason_in(lapsed.refused) == "TOKEN_EXPIRED"
            stream.call.cancel()

    run(body)


def test_the_acts_on_a_stream_count_against_acts_rate_limits(request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with engine("memory", request, limits="Act:account=5/minute") as (stub, games):
            game_id = "act-stream-limits"
            mover, move = await checking_move(stub, games, game_id)
            stream = Seat(stub, game_id, mover)
            answers = [await stream.send(move) for _ in range(8)]
            kinds = [a.WhichOneof("result") for a in answers]
            assert kinds == ["accepted"] * 5 + ["refused"] * 3, kinds
            for answer in answers[5:]:
                assert answer.refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
                assert reason_in(answer.refused) == "RATE_LIMITED"
            with pytest.raises(grpc.aio.AioRpcError) as unary:  # the same account's Act calls share the limit
                await stub.Act(move, metadata=stream.metadata)
            assert reason_of(unary.value) == "RATE_LIMITED"
            stream.call.cancel()

    run(body)


def test_open_streams_are_limited_per_account(request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with engine("memory", request, limits="ActStream:account=2/open") as (stub, games):
            game_id = "act-stream-open"
            mover, move = await checking_move(stub, games, game_id)
            held = [Seat(stub, game_id, mover) for _ in range(2)]
            for stream in held:
                assert (await stream.send(move)).WhichOneof("result") == "accepted"
            third = Seat(stub, game_id, mover)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await third.send(move)
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert reason_of(refused.value) == "RATE_LIMITED"
            held[0].call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await held[0].call.read()
            fourth = Seat(stub, game_id, mover)  # one was given back when its stream ended
            await asyncio.sleep(0)
            assert (await fourth.send(move)).WhichOneof("result") == "accepted"
            for stream in (held[1], fourth):
                stream.call.cancel()

    run(body)


def test_the_sdks_act_stream_answers_and_raises_as_the_act_call_does(request: pytest.FixtureRequest) -> None:
    """`paiju.sdk.ActStream` takes the stub's place in `act`: a move's version, `Stale` for a stale move, the refusal's
    error otherwise (`refusal_of` reads its reason); a changed token opens a new stream."""

    async def body() -> None:
        async with engine("memory", request) as (stub, games):
            game_id = "act-stream-sdk"
            await create_zlj(stub, game_id, zlj_pb2.ZljOptions(deals=1))
            mover, move = await legal_move(stub, games, game_id, 0)
            acts = ActStream(stub)
            first = auth(token(Role.PLAYER, game_id, mover))
            version = await act(acts, move, metadata=lambda: first, timeout=ANSWER_SECONDS)
            assert version == (await games.load(game_id)).version
            opened = acts._call
            again = engine_pb2.ActRequest()
            again.CopyFrom(move)
            again.command_id = "again"
            with pytest.raises(Stale) as stale:
                await act(acts, again, metadata=lambda: first, timeout=ANSWER_SECONDS)
            assert stale.value.refusal.reason == "STALE_VERSION"
            assert acts._call is opened, "a refusal leaves the stream open"
            not_mine = engine_pb2.ActRequest()
            not_mine.CopyFrom(move)
            not_mine.command_id, not_mine.expected_version = "not-mine", version
            other = auth(token(Role.PLAYER, game_id, (mover + 1) % 6))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await act(acts, not_mine, metadata=lambda: other, timeout=ANSWER_SECONDS)
            assert acts._call is not opened, "another token: another stream"
            assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
            assert refusal_of(refused.value).reason == "NOT_YOUR_SEAT"
            acts.close()

    run(body)
