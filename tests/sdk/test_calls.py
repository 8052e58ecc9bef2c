"""`act` sends a move so that it applies once: a retryable failure sends the very same request again (the same
command id, the same expected version), a stale move raises `Stale`, any other refusal is raised as it came."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from paiju.sdk import Stale, act, call, retryable_for
from paiju.v1 import engine_pb2, zlj_pb2

from .fake_engine import FakeEngine, failure


def no_pause(failures: int) -> float:
    return 0.0


def move(command_id: str = "", expected: int | None = 12) -> engine_pb2.ActRequest:
    request = engine_pb2.ActRequest(game_id="g", command_id=command_id, zlj=zlj_pb2.ZljCommand())
    if expected is not None:
        request.expected_version = expected
    return request


def send(engine: FakeEngine, request: engine_pb2.ActRequest, **options: object) -> int:
    return asyncio.run(act(engine, request, metadata=tuple, timeout=1.0, pause=no_pause, **options))  # type: ignore[arg-type]


def test_a_retry_after_a_lost_connection_sends_the_same_command_id() -> None:
    engine = FakeEngine(
        acts=[
            failure(grpc.StatusCode.UNAVAILABLE),
            failure(grpc.StatusCode.DEADLINE_EXCEEDED),
            failure(grpc.StatusCode.CANCELLED),
            13,
        ]
    )
    assert send(engine, move("decision-1")) == 13
    assert engine.command_ids() == ["decision-1"] * 4
    assert {r.expected_version for r in engine.acted} == {12}


def test_a_move_without_a_command_id_gets_one_and_keeps_it_across_retries() -> None:
    engine = FakeEngine(acts=[failure(grpc.StatusCode.UNAVAILABLE), failure(grpc.StatusCode.UNAVAILABLE), 13])
    request = move()
    assert send(engine, request) == 13
    ids = engine.command_ids()
    assert len(ids) == 3 and ids[0] and len(set(ids)) == 1 and request.command_id == ids[0]


def test_a_stale_move_raises_stale_and_is_not_sent_again() -> None:
    engine = FakeEngine(acts=[failure(grpc.StatusCode.ABORTED, "the game is at version 14")])
    with pytest.raises(Stale) as raised:
        send(engine, move("decision-2"))
    assert raised.value.refusal.code == grpc.StatusCode.ABORTED and len(engine.acted) == 1


def test_a_refusal_is_raised_as_it_came_without_a_retry() -> None:
    engine = FakeEngine(acts=[failure(grpc.StatusCode.FAILED_PRECONDITION, "it does not beat the play")])
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        send(engine, move("decision-3"))
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION and len(engine.acted) == 1


def test_retries_end_when_the_patience_runs_out() -> None:
    engine = FakeEngine(acts=[failure(grpc.StatusCode.UNAVAILABLE)] * 3)
    with pytest.raises(grpc.aio.AioRpcError):
        send(engine, move("decision-4"), again=retryable_for(0.0))
    assert engine.command_ids() == ["decision-4"]


def test_a_call_asks_whether_to_try_again_and_pauses_longer_each_time() -> None:
    pauses: list[int] = []
    asked: list[grpc.StatusCode] = []

    def pause(failures: int) -> float:
        pauses.append(failures)
        return 0.0

    def again(error: grpc.aio.AioRpcError, waited: float) -> bool:
        asked.append(error.code())
        return error.code() == grpc.StatusCode.PERMISSION_DENIED and waited >= 0

    engine = FakeEngine(
        acts=[failure(grpc.StatusCode.PERMISSION_DENIED), failure(grpc.StatusCode.PERMISSION_DENIED), 5]
    )
    reply = asyncio.run(call(engine.Act, move("x"), metadata=tuple, timeout=None, again=again, pause=pause))
    assert reply.version == 5 and asked == [grpc.StatusCode.PERMISSION_DENIED] * 2 and pauses == [1, 2]
