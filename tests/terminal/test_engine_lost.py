"""A client whose engine went away says so in words and keeps trying (`paiju.terminal.client.engine.GameFeed`): no
time limit while the engine does not answer, pauses that grow to `RETRY_EVERY`, and a refusal that names no gRPC
status."""

from __future__ import annotations

import asyncio

import grpc

from paiju.terminal.client.engine import (
    ANSWERING_AGAIN,
    RETRY_EVERY,
    EngineClient,
    GameFeed,
    explain,
    not_answering,
    watch_pause,
)


def _error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
    details = "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: Connection refused"
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


def test_a_lost_engine_is_tried_again_however_long_it_stays_away() -> None:
    async def body() -> None:
        told: list[str] = []
        engine = EngineClient("127.0.0.1:1", "token", "g")
        feed = GameFeed(engine, lambda envelope: None, notice=told.append)
        try:
            assert await feed._broke(_error(grpc.StatusCode.UNAVAILABLE))
            feed._lost_since = asyncio.get_running_loop().time() - 24 * 3600  # away for a day
            assert await feed._broke(_error(grpc.StatusCode.UNAVAILABLE))
            assert feed.failure is None
            assert told == [not_answering("127.0.0.1:1")], "told once, however many tries"
            await feed._reconnected()
            assert told[-1] == ANSWERING_AGAIN
            # a refusal that is no lost connection still ends the feed, in the engine's words
            assert not await feed._broke(_error(grpc.StatusCode.INTERNAL))
            assert feed.failure is not None and feed.failure.startswith("The engine refused")
        finally:
            await engine.close()

    asyncio.run(body())


def test_the_pause_between_tries_grows_to_its_most() -> None:
    pauses = [watch_pause(n) for n in range(1, 10)]
    assert pauses[0] == 0.3 and pauses == sorted(pauses) and pauses[-1] == RETRY_EVERY


def test_the_words_name_the_engine_and_no_grpc_status() -> None:
    said = not_answering("127.0.0.1:50051")
    assert said.startswith("The engine at 127.0.0.1:50051 is not answering; trying again every 5 s at most")
    plain = explain(grpc.StatusCode.UNAVAILABLE, _error(grpc.StatusCode.UNAVAILABLE).details() or "")
    assert plain == "The engine is not answering." and "connect" not in plain
