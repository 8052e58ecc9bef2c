"""`RatingsService` over gRPC (grpc.aio): leaderboards by rating, a player's rating and rated matches, two players'
head-to-head (docs/rules/ratings.md; protos/paiju/v1/ratings.proto).

It answers from the ratings' read models in scoring's PostgreSQL, which the rater (`paiju.scoring.rater`) writes
from the rating ledgers. It is served by the scoring process beside `ScoringService`, behind the same edge: every
request validated against its protovalidate annotations first, a token needed, the rate limits below. Every value a
client sends reaches SQL as a bound parameter only, after the edge checked it (ids: the `paiju.v1.id` grammar;
games and modes: the listed values).
"""

from __future__ import annotations

from typing import Any

import asyncpg
import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from paiju.platform.errors import Reason, Refused
from paiju.scoring import rating as rt
from paiju.v1 import ratings_events_pb2, ratings_pb2, ratings_pb2_grpc

RATE_LIMITS = """
    GetRatingLeaderboard:account=60/minute; GetPlayerRating:account=120/minute; GetRatingHistory:account=60/minute;
    GetHeadToHead:account=60/minute
"""
"""The ratings' rate limits (`paiju.platform.limits`), by account."""
DEFAULT_ROWS = 50
DEFAULT_HEAD_TO_HEAD = 20


def _stamp(when: Any) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(when)
    return stamp


def _rating(mu: float, sigma: float) -> ratings_events_pb2.Rating:
    return ratings_events_pb2.Rating(mu=mu, sigma=sigma)


def player_rating(row: Any, place: int = 0) -> ratings_pb2.PlayerRating:
    """A ``scoring_ratings`` row as the contract's `PlayerRating` (D-RATE-5, D-RATE-6)."""
    belief = rt.Belief(row["mu"], row["sigma"])
    return ratings_pb2.PlayerRating(
        player_id=row["player_id"],
        rating=_rating(belief.mu, belief.sigma),
        conservative=belief.conservative,
        matches=row["matches"],
        wins=row["wins"],
        draws=row["draws"],
        provisional=rt.provisional(row["matches"]),
        place=place,
        updated_at=_stamp(row["updated_at"]),
    )


def rated_match(row: Any) -> ratings_pb2.RatedMatch:
    """A ``scoring_rating_matches`` row as the contract's `RatedMatch`."""
    after = rt.Belief(row["after_mu"], row["after_sigma"])
    return ratings_pb2.RatedMatch(
        number=row["number"],
        game_id=row["game_id"],
        table_id=row["table_id"],
        at=_stamp(row["at"]),
        seat=row["seat"],
        team=row["team"],
        result=row["result"],
        team_scores=list(row["team_scores"]),
        before=_rating(row["before_mu"], row["before_sigma"]),
        after=_rating(after.mu, after.sigma),
        conservative=after.conservative,
        others=[p for i, p in enumerate(row["players"]) if i != row["seat"]],
    )


class RatingsService(ratings_pb2_grpc.RatingsServiceServicer):
    """The ratings' read API over scoring's database (``model``: the rating model version answered for)."""

    def __init__(self, pool: asyncpg.Pool[Any], model: int = rt.MODEL_VERSION) -> None:
        self._pool = pool
        self._model = model

    async def _player(self, player_id: str, game: str, mode: int) -> Any:
        return await self._pool.fetchrow(
            "SELECT * FROM scoring_ratings WHERE model = $1 AND game = $2 AND mode = $3 AND player_id = $4",
            self._model,
            game,
            mode,
            player_id,
        )

    async def GetRatingLeaderboard(
        self, request: ratings_pb2.GetRatingLeaderboardRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> ratings_pb2.GetRatingLeaderboardResponse:
        rows = await self._pool.fetch(
            """
            SELECT * FROM scoring_ratings WHERE model = $1 AND game = $2 AND mode = $3 AND ($5 OR matches >= $6)
            ORDER BY mu - 3 * sigma DESC, mu DESC, player_id LIMIT $4
            """,
            self._model,
            request.game,
            int(request.mode),
            request.limit or DEFAULT_ROWS,
            not request.settled_only,
            rt.PROVISIONAL_MATCHES,
        )
        response = ratings_pb2.GetRatingLeaderboardResponse(model=self._model)
        response.rows.extend(player_rating(row, place) for place, row in enumerate(rows, start=1))
        return response

    async def GetPlayerRating(
        self, request: ratings_pb2.GetPlayerRatingRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> ratings_pb2.GetPlayerRatingResponse:
        row = await self._player(request.player_id, request.game, int(request.mode))
        if row is None:
            raise Refused(
                Reason.PLAYER_NOT_FOUND,
                f"{request.player_id!r} has no rated {request.game} match in this mode yet",
                {"player": request.player_id},
            )
        return ratings_pb2.GetPlayerRatingResponse(rating=player_rating(row), model=self._model)

    async def GetRatingHistory(
        self, request: ratings_pb2.GetRatingHistoryRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> ratings_pb2.GetRatingHistoryResponse:
        rows = await self._pool.fetch(
            """
            SELECT * FROM scoring_rating_matches
            WHERE model = $1 AND game = $2 AND mode = $3 AND player_id = $4 AND ($5 = 0 OR number < $5)
            ORDER BY number DESC LIMIT $6
            """,
            self._model,
            request.game,
            int(request.mode),
            request.player_id,
            request.before,
            request.limit or DEFAULT_ROWS,
        )
        response = ratings_pb2.GetRatingHistoryResponse(model=self._model)
        response.matches.extend(rated_match(row) for row in rows)
        return response

    async def GetHeadToHead(
        self, request: ratings_pb2.GetHeadToHeadRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> ratings_pb2.GetHeadToHeadResponse:
        if request.player_id == request.other_id:
            raise Refused(
                Reason.INVALID_REQUEST,
                "a head-to-head is between two different players",
                {"field": "other_id"},
            )
        mode = int(request.mode)
        both = """
            FROM scoring_rating_matches a JOIN scoring_rating_matches b
              ON b.model = a.model AND b.game = a.game AND b.mode = a.mode AND b.number = a.number
            WHERE a.model = $1 AND a.game = $2 AND a.mode = $3 AND a.player_id = $4 AND b.player_id = $5
        """
        counts: Any = await self._pool.fetchrow(
            f"""
            SELECT
              count(*) FILTER (WHERE a.team <> b.team) AS against,
              count(*) FILTER (WHERE a.team <> b.team AND a.result = 'won') AS wins,
              count(*) FILTER (WHERE a.team <> b.team AND a.result = 'lost') AS losses,
              count(*) FILTER (WHERE a.team <> b.team AND a.result = 'drawn') AS draws,
              count(*) FILTER (WHERE a.team = b.team) AS together,
              count(*) FILTER (WHERE a.team = b.team AND a.result = 'won') AS together_wins
            {both}
            """,
            self._model,
            request.game,
            mode,
            request.player_id,
            request.other_id,
        )
        limit = request.limit if request.limit else DEFAULT_HEAD_TO_HEAD
        rows = await self._pool.fetch(
            f"SELECT a.* {both} ORDER BY a.number DESC LIMIT $6",
            self._model,
            request.game,
            mode,
            request.player_id,
            request.other_id,
            limit,
        )
        response = ratings_pb2.GetHeadToHeadResponse(
            against=counts["against"],
            wins=counts["wins"],
            losses=counts["losses"],
            draws=counts["draws"],
            together=counts["together"],
            together_wins=counts["together_wins"],
            model=self._model,
        )
        response.matches.extend(rated_match(row) for row in rows)
        for player, field in ((request.player_id, response.player), (request.other_id, response.other)):
            row = await self._player(player, request.game, mode)
            if row is not None:
                field.CopyFrom(player_rating(row))
        return response
