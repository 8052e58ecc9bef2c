"""RatingsService over gRPC behind the platform's edge, from ratings rated on a real NATS and PostgreSQL:
leaderboards with provisional players marked, histories, head-to-heads, and the refusals of hostile input."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
import pytest

from paiju.platform.edge import Policy
from paiju.platform.limits import RateLimits
from paiju.platform.serving import build_server
from paiju.platform.tokens import Role, Verifier
from paiju.scoring import rating as rt
from paiju.scoring.ratings_service import RATE_LIMITS, RatingsService
from paiju.sdk.refusals import refusal_of
from paiju.v1 import ratings_pb2, ratings_pb2_grpc

from ..support.credentials import TRUST, bearer, forged_claims
from ..support.tokens import token_metadata
from .lobby import CASUAL
from .test_rater import World, world

PLAYER = token_metadata(role=Role.PLAYER, subject="reader")
CASUAL_MODE = ratings_pb2.GetRatingLeaderboardRequest(game="zlj", mode=CASUAL).mode


@asynccontextmanager
async def served(w: World) -> AsyncIterator[Any]:
    """RatingsService behind the edge: a stub (its channel as ``stub.channel``)."""
    policy = Policy(authenticator=Verifier(TRUST, lambda: int(time.time())), limits=RateLimits(RATE_LIMITS))
    server = build_server(policy)
    ratings_pb2_grpc.add_RatingsServiceServicer_to_server(RatingsService(w.pool), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub: Any = ratings_pb2_grpc.RatingsServiceStub(channel)
        stub.channel = channel
        stub.address = f"127.0.0.1:{port}"
        yield stub
    finally:
        await channel.close()
        await server.stop(None)


async def _league(w: World) -> None:
    """Casual 砸六家: a0..a5 play 21 matches, team A (a0, a2, a4) winning 15 of them; b0..b5 play 3."""
    await w.lobby.open("lz", "zlj", CASUAL)
    players = [f"a{i}" for i in range(6)]
    for k in range(21):
        await w.lobby.play_zlj("lz", players, (12, 0) if k % 7 < 5 else (0, 12), (3, 0, 2, -1, 1, 0))
    await w.lobby.open("mz", "zlj", CASUAL)
    for _ in range(3):
        await w.lobby.play_zlj("mz", [f"b{i}" for i in range(6)], (5, 5), (3, 2, 1, 0, 0, -1))
    await w.rate()


def test_leaderboards_histories_and_head_to_heads(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with world(nats_url, database_dsn) as w, served(w) as stub:
            await _league(w)
            board = await stub.GetRatingLeaderboard(
                ratings_pb2.GetRatingLeaderboardRequest(game="zlj", mode=CASUAL, limit=500), metadata=PLAYER
            )
            assert board.model == rt.MODEL_VERSION and len(board.rows) == 12
            conservative = [r.conservative for r in board.rows]
            assert conservative == sorted(conservative, reverse=True)
            assert [r.place for r in board.rows] == list(range(1, 13))
            assert board.rows[0].player_id == "a0" and board.rows[0].matches == 21 and not board.rows[0].provisional
            assert {r.player_id for r in board.rows if r.provisional} == {f"b{i}" for i in range(6)}
            for row in board.rows:
                assert row.conservative == row.rating.mu - 3 * row.rating.sigma
            settled = await stub.GetRatingLeaderboard(
                ratings_pb2.GetRatingLeaderboardRequest(game="zlj", mode=CASUAL, settled_only=True), metadata=PLAYER
            )
            assert {r.player_id for r in settled.rows} == {f"a{i}" for i in range(6)}

            one = await stub.GetPlayerRating(
                ratings_pb2.GetPlayerRatingRequest(player_id="a0", game="zlj", mode=CASUAL), metadata=PLAYER
            )
            assert one.rating.wins == 15 and one.rating.draws == 0 and one.rating.matches == 21

            history = await stub.GetRatingHistory(
                ratings_pb2.GetRatingHistoryRequest(player_id="a1", game="zlj", mode=CASUAL, limit=5), metadata=PLAYER
            )
            assert [m.number for m in history.matches] == [21, 20, 19, 18, 17]
            latest = history.matches[0]
            assert latest.result == "won" and latest.team == 1 and latest.seat == 1  # match 21: k = 20, 20 % 7 = 6
            assert list(latest.others) == ["a0", "a2", "a3", "a4", "a5"]
            assert history.matches[1].before.mu == history.matches[2].after.mu  # rating over time, without a gap
            page = await stub.GetRatingHistory(
                ratings_pb2.GetRatingHistoryRequest(player_id="a1", game="zlj", mode=CASUAL, before=17),
                metadata=PLAYER,
            )
            assert [m.number for m in page.matches] == list(range(16, 0, -1))

            h2h = await stub.GetHeadToHead(
                ratings_pb2.GetHeadToHeadRequest(player_id="a0", other_id="a1", game="zlj", mode=CASUAL, limit=3),
                metadata=PLAYER,
            )
            assert (h2h.against, h2h.wins, h2h.losses, h2h.draws, h2h.together) == (21, 15, 6, 0, 0)
            assert len(h2h.matches) == 3 and h2h.player.player_id == "a0" and h2h.other.player_id == "a1"
            partners = await stub.GetHeadToHead(
                ratings_pb2.GetHeadToHeadRequest(player_id="a0", other_id="a2", game="zlj", mode=CASUAL),
                metadata=PLAYER,
            )
            assert (partners.together, partners.together_wins, partners.against) == (21, 15, 0)
            strangers = await stub.GetHeadToHead(
                ratings_pb2.GetHeadToHeadRequest(player_id="a0", other_id="b0", game="zlj", mode=CASUAL),
                metadata=PLAYER,
            )
            assert (strangers.against, strangers.together, len(strangers.matches)) == (0, 0, 0)

    asyncio.run(body())


LONG = "x" * 5000
LEADERBOARD = ratings_pb2.GetRatingLeaderboardRequest
ONE = ratings_pb2.GetPlayerRatingRequest
HISTORY = ratings_pb2.GetRatingHistoryRequest
H2H = ratings_pb2.GetHeadToHeadRequest
REFUSALS: dict[str, tuple[Callable[[Any], Any], grpc.StatusCode, str]] = {
    "no_token": (
        lambda s: s.GetRatingLeaderboard(LEADERBOARD(game="zlj", mode=CASUAL)),
        grpc.StatusCode.UNAUTHENTICATED,
        "TOKEN_MISSING",
    ),
    "forged_token": (
        lambda s: s.GetRatingLeaderboard(
            LEADERBOARD(game="zlj", mode=CASUAL), metadata=bearer(forged_claims({"sub": "x"}) + "x")
        ),
        grpc.StatusCode.UNAUTHENTICATED,
        "TOKEN_INVALID",
    ),
    "unknown_game": (
        lambda s: s.GetRatingLeaderboard(LEADERBOARD(game="chess", mode=CASUAL), metadata=PLAYER),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    ),
    "no_mode": (
        lambda s: s.GetRatingLeaderboard(LEADERBOARD(game="zlj"), metadata=PLAYER),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    ),
    "undefined_mode": (
        lambda s: s.GetRatingLeaderboard(LEADERBOARD(game="zlj", mode=7), metadata=PLAYER),  # type: ignore[arg-type]
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    ),
    "huge_limit": (
        lambda s: s.GetRatingLeaderboard(LEADERBOARD(game="zlj", mode=CASUAL, limit=100_000), metadata=PLAYER),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    ),
    "wildcard_player": (
        lambda s: s.GetPlayerRating(ONE(player_id="paiju.>", game="zlj", mode=CASUAL), metadata=PLAYER),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    ),
    "nul_player": (
        lambda s: s.GetRatingHistory(HISTORY(player_id="a\x00b", game="zlj", mode=CASUAL), metadata=PLAYER),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    ),
    "long_player": (
        lambda s: s.GetHeadToHead(H2H(player_id=LONG, other_id="a1", game="zlj", mode=CASUAL), metadata=PLAYER),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    ),
    "negative_page": (
        lambda s: s.GetRatingHistory(HISTORY(player_id="a1", game="zlj", mode=CASUAL, before=-1), metadata=PLAYER),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    ),
    "unrated_player": (
        lambda s: s.GetPlayerRating(ONE(player_id="nobody", game="zlj", mode=CASUAL), metadata=PLAYER),
        grpc.StatusCode.NOT_FOUND,
        "PLAYER_NOT_FOUND",
    ),
    "head_to_head_with_oneself": (
        lambda s: s.GetHeadToHead(H2H(player_id="a1", other_id="a1", game="zlj", mode=CASUAL), metadata=PLAYER),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_hostile_input_is_refused_with_a_reason_and_changes_nothing(
    nats_url: str, database_dsn: str, case: str
) -> None:
    call, code, reason = REFUSALS[case]

    async def body() -> None:
        async with world(nats_url, database_dsn) as w, served(w) as stub:
            await w.lobby.open("lz", "zlj", CASUAL)
            await w.lobby.play_zlj("lz", [f"a{i}" for i in range(6)], (12, 0), (3, 0, 2, -1, 1, 0))
            await w.rate()
            before = await w.pool.fetch("SELECT * FROM scoring_ratings ORDER BY player_id")
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call(stub)
            assert refused.value.code() == code
            assert refusal_of(refused.value).reason == reason
            assert refused.value.details()  # a human reason
            assert await w.pool.fetch("SELECT * FROM scoring_ratings ORDER BY player_id") == before

    asyncio.run(body())


def test_undecodable_bytes_are_refused(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with world(nats_url, database_dsn) as w, served(w) as stub:
            raw = stub.channel.unary_unary(  # bytes that are no request message
                "/paiju.v1.RatingsService/GetRatingLeaderboard",
                request_serializer=lambda b: b,
                response_deserializer=lambda b: b,
            )
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await raw(b"\xff\xff\xff\xff", metadata=PLAYER)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert refusal_of(refused.value).reason == "MALFORMED_MESSAGE"

    asyncio.run(body())
