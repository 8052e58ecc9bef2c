"""The web view's side of the public gRPC API: a guest of the lobby, a spectator of each table's game, a reader
of tournaments and of the players' ratings. It holds no privileged token (the web view's own key, used by
`paiju.tools.web.session.Voucher`, vouches for browsers' addresses and grants nothing): what it can read is what any
spectator can read, so nothing hidden can reach a page through it (a running game is watched with the spectator
token the lobby's `JoinGame` gives a guest who holds no seat, which the engine redacts for; an ended game's whole
record is public).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc

from paiju.platform import tracing
from paiju.tools.web.bounds import ByteCache
from paiju.v1 import (
    engine_pb2,
    engine_pb2_grpc,
    lobby_events_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
    ratings_pb2,
    ratings_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
)

CALL_SECONDS = 10.0
"""How long one call to a service may take."""
RENEW_BEFORE_SECONDS = 60
"""A token is replaced this long before it expires."""
TABLES_PER_GUEST = 8
"""Tables one guest follows at most: within the engine's 16 open watches per account, and the lobby's 8 open table
watches (a table is followed by one of each: its game's watch while a match runs, its table's watch between)."""
NOT_FOUND_SECONDS = 5.0
"""How long a table the lobby does not know is answered so without asking it again."""
KEEPALIVE = (("grpc.keepalive_time_ms", 30_000), ("grpc.keepalive_timeout_ms", 10_000))
"""A connection that died in silence is noticed within 40 s (a table's watch is then opened again)."""
TABLE_SECONDS = 2.0
"""How long a table read from the lobby serves every page that asks for it."""
TABLE_CACHE_BYTES = 4 << 20
"""The memory the tables read lately may hold (those not read lately are forgotten first)."""
MISSING_BYTES = 256
"""What one table id the lobby does not know is counted as, in the cache of those."""


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


@dataclass(frozen=True, slots=True)
class Spectator:
    """A spectator's engine token for a table's current game."""

    table_id: str
    game_id: str
    game: int
    token: str
    expires_at: int

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)


class Upstream:
    """Channels to the lobby, the engine and scoring (tournaments and ratings), and guest sessions of the lobby:
    guest 0 for reading tables, games, tournaments and ratings, and one guest for every `TABLES_PER_GUEST` tables
    followed (the engine lets one account hold 16 watches open)."""

    def __init__(self, lobby: str, engine: str, scoring: str) -> None:
        self._channels = [
            grpc.aio.insecure_channel(address, options=KEEPALIVE, interceptors=tracing.client_interceptors())
            for address in (lobby, engine, scoring)
        ]  # traced when the process traces (`paiju.platform.tracing`)
        self.lobby: Any = lobby_pb2_grpc.LobbyServiceStub(self._channels[0])
        self.engine: Any = engine_pb2_grpc.EngineServiceStub(self._channels[1])
        self.scoring: Any = scoring_pb2_grpc.ScoringServiceStub(self._channels[2])
        self.ratings: Any = ratings_pb2_grpc.RatingsServiceStub(self._channels[2])
        self._sessions: dict[int, lobby_pb2.Session] = {}
        self._lock = asyncio.Lock()
        self._table_cache: ByteCache[tuple[float, lobby_pb2.Table]] = ByteCache(TABLE_CACHE_BYTES)
        self._table_calls: dict[str, asyncio.Future[lobby_pb2.Table]] = {}
        self._missing: ByteCache[tuple[float, grpc.aio.AioRpcError]] = ByteCache(TABLE_CACHE_BYTES // 4)
        self.calls: Counter[str] = Counter()
        """The calls made to the services, by method (on the health page: a crowd must not multiply them)."""

    async def close(self) -> None:
        for channel in self._channels:
            await channel.close()

    async def metadata(self, guest: int = 0) -> tuple[tuple[str, str], ...]:
        """The metadata of guest number ``guest`` (0: the one every call but a table's `spectate` uses): signed in
        as a guest when first needed, renewed (`RenewSession`) when about to expire, a new guest when refused."""
        async with self._lock:
            session = self._sessions.get(guest)
            if session is not None and session.expires_at - RENEW_BEFORE_SECONDS < time.time():
                try:
                    self.calls["RenewSession"] += 1
                    renewed = await self.lobby.RenewSession(
                        lobby_pb2.RenewSessionRequest(), metadata=_bearer(session.token), timeout=CALL_SECONDS
                    )
                    session = self._sessions[guest] = renewed.session
                except grpc.aio.AioRpcError as e:
                    if e.code() is not grpc.StatusCode.UNAUTHENTICATED:
                        raise
                    session = None
            if session is None:
                self.calls["Guest"] += 1
                answer = await self.lobby.Guest(lobby_pb2.GuestRequest(), timeout=CALL_SECONDS)
                session = self._sessions[guest] = answer.session
            return _bearer(session.token)

    def forget_session(self, guest: int = 0) -> None:
        """Drop a guest's session (the lobby refused it as UNAUTHENTICATED): the next call signs in a new guest."""
        self._sessions.pop(guest, None)

    async def tables(self) -> list[lobby_pb2.Table]:
        self.calls["ListTables"] += 1
        answer = await self.lobby.ListTables(
            lobby_pb2.ListTablesRequest(limit=200), metadata=await self.metadata(), timeout=CALL_SECONDS
        )
        return list(answer.tables)

    async def table(self, table_id: str, *, fresh: bool = False) -> lobby_pb2.Table:
        """The table as the lobby has it: read at most once per `TABLE_SECONDS` however many pages ask (and once
        for all the pages that ask at the same moment); ``fresh``: read now."""
        cached = self._table_cache.get(table_id)
        if cached is not None and not fresh and time.monotonic() - cached[0] < TABLE_SECONDS:
            return cached[1]
        missing = self._missing.get(table_id)
        if missing is not None and time.monotonic() - missing[0] < NOT_FOUND_SECONDS:
            raise missing[1]
        pending = self._table_calls.get(table_id)
        if pending is None:
            pending = asyncio.ensure_future(self._get_table(table_id))
            self._table_calls[table_id] = pending
            pending.add_done_callback(lambda _: self._table_calls.pop(table_id, None))
        return await asyncio.shield(pending)

    async def _get_table(self, table_id: str) -> lobby_pb2.Table:
        self.calls["GetTable"] += 1
        try:
            answer: lobby_pb2.GetTableResponse = await self.lobby.GetTable(
                lobby_pb2.GetTableRequest(table_id=table_id), metadata=await self.metadata(), timeout=CALL_SECONDS
            )
        except grpc.aio.AioRpcError as e:
            if e.code() is grpc.StatusCode.NOT_FOUND:  # remembered: a flood of made-up ids asks the lobby once each
                self._missing.put(table_id, (time.monotonic(), e), MISSING_BYTES)
            raise
        self._table_cache.put(table_id, (time.monotonic(), answer.table), answer.table.ByteSize())
        return answer.table

    async def spectate(self, table_id: str, guest: int = 0) -> Spectator:
        """A spectator's token for the table's current game, as guest number ``guest`` (who holds no seat, so the
        lobby gives a spectator's token: the engine counts its watches against that guest's account)."""
        self.calls["JoinGame"] += 1
        answer = await self.lobby.JoinGame(
            lobby_pb2.JoinGameRequest(table_id=table_id), metadata=await self.metadata(guest), timeout=CALL_SECONDS
        )
        if answer.HasField("seat"):
            raise RuntimeError("the web view's guest was given a seat: it must only ever spectate")
        return Spectator(table_id, answer.game_id, answer.game, answer.token, answer.expires_at)

    async def view(self, spectator: Spectator, min_version: int = 0) -> engine_pb2.GetViewResponse:
        """The game's public view: asked once when a game starts being followed (where it stands); its boards come
        with the watch's turns."""
        self.calls["GetView"] += 1
        answer: engine_pb2.GetViewResponse = await self.engine.GetView(
            engine_pb2.GetViewRequest(game_id=spectator.game_id, min_version=min_version),
            metadata=spectator.metadata,
            timeout=CALL_SECONDS,
        )
        return answer

    async def watch_table(self, table_id: str, guest: int = 0) -> AsyncIterator[lobby_pb2.WatchTableResponse]:
        """The lobby's WatchTable stream of the table, as guest number ``guest``: the table now, after each change,
        and again when its last match's ratings arrive."""
        self.calls["WatchTable"] += 1
        call: AsyncIterator[lobby_pb2.WatchTableResponse] = self.lobby.WatchTable(
            lobby_pb2.WatchTableRequest(table_id=table_id), metadata=await self.metadata(guest)
        )
        async for reply in call:
            yield reply

    def watch(self, spectator: Spectator, from_version: int) -> AsyncIterator[engine_pb2.WatchResponse]:
        """The game's Watch stream after ``from_version``, as a spectator, with the public view in every turn."""
        self.calls["Watch"] += 1
        call: AsyncIterator[engine_pb2.WatchResponse] = self.engine.Watch(
            engine_pb2.WatchRequest(game_id=spectator.game_id, from_version=from_version, views=True),
            metadata=spectator.metadata,
        )
        return call

    async def replay(self, game_id: str, metadata: tuple[tuple[str, str], ...]) -> list[engine_pb2.Envelope]:
        """Every envelope of a game (unredacted once it has ended; as ``metadata``'s holder may see it before)."""
        self.calls["Replay"] += 1
        call = self.engine.Replay(engine_pb2.ReplayRequest(game_id=game_id), metadata=metadata, timeout=60)
        return [answer.envelope async for answer in call]

    async def tournament(self, tournament_id: str) -> tuple[Any, Any, list[tuple[int, Any]]]:
        """A tournament, its standings and the result sheet of each round played."""
        md = await self.metadata()
        self.calls["GetTournament"] += 1
        found = await self.scoring.GetTournament(
            scoring_pb2.GetTournamentRequest(tournament_id=tournament_id), metadata=md, timeout=CALL_SECONDS
        )
        standings = await self.scoring.GetStandings(
            scoring_pb2.GetStandingsRequest(tournament_id=tournament_id), metadata=md, timeout=CALL_SECONDS
        )
        sheets = []
        for played in found.tournament.played:
            sheet = await self.scoring.GetResultSheet(
                scoring_pb2.GetResultSheetRequest(tournament_id=tournament_id, round=played.round),
                metadata=md,
                timeout=CALL_SECONDS,
            )
            sheets.append((played.round, sheet))
        return found.tournament, standings, sheets

    async def leaderboard(
        self, game: str, mode: lobby_events_pb2.MatchMode.ValueType, limit: int
    ) -> ratings_pb2.GetRatingLeaderboardResponse:
        """The players of ``game`` and ``mode`` by their conservative estimate, best first (at most ``limit``)."""
        self.calls["GetRatingLeaderboard"] += 1
        answer: ratings_pb2.GetRatingLeaderboardResponse = await self.ratings.GetRatingLeaderboard(
            ratings_pb2.GetRatingLeaderboardRequest(game=game, mode=mode, limit=limit),
            metadata=await self.metadata(),
            timeout=CALL_SECONDS,
        )
        return answer

    async def player_rating(
        self, player_id: str, game: str, mode: lobby_events_pb2.MatchMode.ValueType
    ) -> ratings_pb2.GetPlayerRatingResponse:
        """One player's rating (refused ``PLAYER_NOT_FOUND`` before their first rated match)."""
        self.calls["GetPlayerRating"] += 1
        answer: ratings_pb2.GetPlayerRatingResponse = await self.ratings.GetPlayerRating(
            ratings_pb2.GetPlayerRatingRequest(player_id=player_id, game=game, mode=mode),
            metadata=await self.metadata(),
            timeout=CALL_SECONDS,
        )
        return answer

    async def rating_history(
        self, player_id: str, game: str, mode: lobby_events_pb2.MatchMode.ValueType, limit: int, before: int = 0
    ) -> ratings_pb2.GetRatingHistoryResponse:
        """One player's rated matches, the latest first (those numbered below ``before``, when given)."""
        self.calls["GetRatingHistory"] += 1
        answer: ratings_pb2.GetRatingHistoryResponse = await self.ratings.GetRatingHistory(
            ratings_pb2.GetRatingHistoryRequest(player_id=player_id, game=game, mode=mode, limit=limit, before=before),
            metadata=await self.metadata(),
            timeout=CALL_SECONDS,
        )
        return answer

    async def head_to_head(
        self, player_id: str, other_id: str, game: str, mode: lobby_events_pb2.MatchMode.ValueType, limit: int
    ) -> ratings_pb2.GetHeadToHeadResponse:
        """Two players' rated matches with each other, counted from the first one's side."""
        self.calls["GetHeadToHead"] += 1
        answer: ratings_pb2.GetHeadToHeadResponse = await self.ratings.GetHeadToHead(
            ratings_pb2.GetHeadToHeadRequest(player_id=player_id, other_id=other_id, game=game, mode=mode, limit=limit),
            metadata=await self.metadata(),
            timeout=CALL_SECONDS,
        )
        return answer
