"""`GameWatch` follows a game across broken streams and draining engines: every new stream resumes after the last
version received (never from 0 again), no envelope is handed over twice, and the hooks decide when to stop."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from paiju.sdk import GameWatch
from paiju.v1 import engine_pb2

from .fake_engine import FakeEngine, Stream, envelopes, failure, streams

ENDED = engine_pb2.WATCH_END_REASON_GAME_ENDED
DRAINING = engine_pb2.WATCH_END_REASON_DRAINING


def no_pause(failures: int) -> float:
    return 0.0


def follow(engine: FakeEngine, *, version: int = 0, **hooks: object) -> list[int]:
    """Run a watch of game ``g`` over ``engine``; the versions it handed over, in order."""
    got: list[int] = []

    async def received(envelope: engine_pb2.Envelope) -> None:
        got.append(envelope.version)

    watch = GameWatch(engine, "g", received, version=version, pause=no_pause, **hooks)  # type: ignore[arg-type]
    asyncio.run(watch.run())
    assert watch.version == (got[-1] if got else version)
    return got


def test_a_broken_stream_resumes_after_the_last_version_received() -> None:
    unavailable = failure(grpc.StatusCode.UNAVAILABLE)
    engine = FakeEngine(
        streams(
            Stream(envelopes(1, 2, 3), unavailable),
            Stream([], unavailable),  # broken before anything came: still after 3
            envelopes(4, 5, end=ENDED),
        )
    )
    assert follow(engine) == [1, 2, 3, 4, 5]
    assert engine.versions_watched_from() == [0, 3, 3]
    assert all(s.cancelled for s in engine.opened)


def test_a_draining_engine_is_watched_again_from_where_it_stopped() -> None:
    """A stopping engine ends its streams with DRAINING; the next stream (another replica, or the engine back)
    resends what it has after the version asked for, and an envelope already received is skipped."""
    engine = FakeEngine(
        streams(
            envelopes(8, 9, end=DRAINING),
            envelopes(9, 10, end=DRAINING),  # an envelope at or below the last received: not handed over again
            envelopes(11, end=ENDED),
        )
    )
    assert follow(engine, version=7) == [8, 9, 10, 11]
    assert engine.versions_watched_from() == [7, 9, 10]


def test_a_refusal_that_is_not_retryable_stops_the_watch_by_default() -> None:
    engine = FakeEngine(streams(Stream(envelopes(1), failure(grpc.StatusCode.PERMISSION_DENIED))))
    assert follow(engine) == [1]
    assert engine.versions_watched_from() == [0]


def test_the_hooks_decide_when_to_stop_and_are_told_of_reconnections() -> None:
    """A client's own policy: a lost seat stops the watch with an error; a stream that ends without a reason is
    watched again until the client judges the game over; a reconnection after a break is reported once."""
    told: list[str] = []

    class SeatLost(Exception):
        pass

    async def on_break(error: grpc.aio.AioRpcError) -> bool:
        told.append(f"break {error.code().name}")
        if error.code() == grpc.StatusCode.PERMISSION_DENIED:
            raise SeatLost
        return True

    async def on_close(reason: int | None) -> bool:
        told.append(f"close {reason}")
        return reason != ENDED

    async def on_reconnect() -> None:
        told.append("back")

    engine = FakeEngine(
        streams(
            Stream(envelopes(1), failure(grpc.StatusCode.DEADLINE_EXCEEDED)),
            envelopes(2),  # closed without an end: the hook says watch again
            envelopes(3, end=ENDED),
        )
    )
    assert follow(engine, on_break=on_break, on_close=on_close, on_reconnect=on_reconnect) == [1, 2, 3]
    assert told == ["break DEADLINE_EXCEEDED", "back", f"close {None}", f"close {ENDED}"]
    assert engine.versions_watched_from() == [0, 1, 2]

    lost = FakeEngine(streams(Stream(envelopes(1), failure(grpc.StatusCode.PERMISSION_DENIED))))
    with pytest.raises(SeatLost):
        follow(lost, on_break=on_break)


def test_the_pause_grows_with_failures_in_a_row_and_restarts_after_an_envelope() -> None:
    pauses: list[int] = []

    def pause(failures: int) -> float:
        pauses.append(failures)
        return 0.0

    unavailable = failure(grpc.StatusCode.UNAVAILABLE)
    engine = FakeEngine(
        streams(
            Stream([], unavailable),
            Stream([], unavailable),
            Stream(envelopes(1), unavailable),
            envelopes(2, end=ENDED),
        )
    )

    async def received(envelope: engine_pb2.Envelope) -> None:
        return None

    asyncio.run(GameWatch(engine, "g", received, pause=pause).run())
    assert pauses == [1, 2, 1]


def test_each_stream_asks_for_the_metadata_anew() -> None:
    """A token renewed while the game goes on is the one the next stream carries."""
    tokens = iter(["one", "two"])

    def metadata() -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {next(tokens)}"),)

    engine = FakeEngine(streams(Stream(envelopes(1), failure(grpc.StatusCode.UNAVAILABLE)), envelopes(end=ENDED)))
    follow(engine, metadata=metadata)
    assert engine.metadata == [(("authorization", "Bearer one"),), (("authorization", "Bearer two"),)]


def _change(*versions: int, turn: int | None = None) -> engine_pb2.WatchResponse:
    """A message of a batched stream: the events at ``versions`` together, with the turn at ``turn``."""
    reply = engine_pb2.WatchResponse(envelopes=[engine_pb2.Envelope(game_id="g", version=v) for v in versions])
    if turn is not None:
        reply.turn.version = turn
    return reply


def test_a_batched_message_hands_over_each_of_its_envelopes_in_order_then_its_turn() -> None:
    """One message per change (the default request): every envelope of a message is handed over in order — those at
    or below the last version received skipped, as after a resume — then the message's turn; a message of the
    per-event form is read as before."""
    handed: list[str] = []

    async def received(envelope: engine_pb2.Envelope) -> None:
        handed.append(f"event {envelope.version}")

    async def on_turn(turn: engine_pb2.Turn) -> None:
        handed.append(f"turn {turn.version}")

    engine = FakeEngine(
        streams(
            Stream([_change(1, 2, 3, turn=3), _change(4, 5)], failure(grpc.StatusCode.UNAVAILABLE)),
            [
                _change(5, 6, turn=6),  # 5 came already: skipped; 6 handed over, then the turn
                engine_pb2.WatchResponse(turn=engine_pb2.Turn(version=6)),
                engine_pb2.WatchResponse(envelope=engine_pb2.Envelope(game_id="g", version=7)),  # the per-event form
                engine_pb2.WatchResponse(end=engine_pb2.WatchEnd(reason=ENDED)),
            ],
        )
    )
    watch = GameWatch(engine, "g", received, on_turn=on_turn, pause=no_pause)
    asyncio.run(watch.run())
    assert handed == [
        *("event 1", "event 2", "event 3", "turn 3", "event 4", "event 5"),
        *("event 6", "turn 6", "turn 6", "event 7"),
    ]
    assert [r.batched for r in engine.watched] == [True, True], "it asks for one message per change"
    assert engine.versions_watched_from() == [0, 5] and watch.version == 7


def test_a_watch_may_ask_for_one_message_per_event() -> None:
    engine = FakeEngine(streams(envelopes(1, 2, end=ENDED)))
    assert follow(engine, batched=False) == [1, 2]
    assert [r.batched for r in engine.watched] == [False]
