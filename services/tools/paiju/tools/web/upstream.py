"""The web view's side of the public gRPC API: a guest of the lobby, a spectator of each table's game, a reader
of tournaments. It holds no key and no privileged token: what it can read is what any spectator can read, so
nothing hidden can reach a page through it (a running game is watched with the spectator token the lobby's
`JoinGame` gives a guest who holds no seat, which the engine redacts for; an ended game's whole record is public).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc

from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_pb2, lobby_pb2_grpc, scoring_pb2, scoring_pb2_grpc

CALL_SECONDS = 10.0
"""How long one call to a service may take."""
RENEW_BEFORE_SECONDS = 60
"""A token is replaced this long before it expires."""


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
    """Channels to the lobby, the engine and scoring, and a guest session of the lobby (made again when it nears
    its expiry or is refused)."""

    def __init__(self, lobby: str, engine: str, scoring: str) -> None:
        self._channels = [grpc.aio.insecure_channel(address) for address in (lobby, engine, scoring)]
        self.lobby: Any = lobby_pb2_grpc.LobbyServiceStub(self._channels[0])
        self.engine: Any = engine_pb2_grpc.EngineServiceStub(self._channels[1])
        self.scoring: Any = scoring_pb2_grpc.ScoringServiceStub(self._channels[2])
        self._session: lobby_pb2.Session | None = None
        self._lock = asyncio.Lock()

    async def close(self) -> None:
        for channel in self._channels:
            await channel.close()

    async def metadata(self) -> tuple[tuple[str, str], ...]:
        """The guest session's metadata (a new guest when there is none or it is about to expire)."""
        async with self._lock:
            if self._session is None or self._session.expires_at - RENEW_BEFORE_SECONDS < time.time():
                answer = await self.lobby.Guest(lobby_pb2.GuestRequest(), timeout=CALL_SECONDS)
                self._session = answer.session
            return (("authorization", f"Bearer {self._session.token}"),)

    def forget_session(self) -> None:
        """Drop the session (after it was refused as UNAUTHENTICATED): the next call makes a new guest."""
        self._session = None

    async def tables(self) -> list[lobby_pb2.Table]:
        answer = await self.lobby.ListTables(
            lobby_pb2.ListTablesRequest(limit=200), metadata=await self.metadata(), timeout=CALL_SECONDS
        )
        return list(answer.tables)

    async def table(self, table_id: str) -> lobby_pb2.Table:
        answer: lobby_pb2.GetTableResponse = await self.lobby.GetTable(
            lobby_pb2.GetTableRequest(table_id=table_id), metadata=await self.metadata(), timeout=CALL_SECONDS
        )
        return answer.table

    async def spectate(self, table_id: str) -> Spectator:
        """A spectator's token for the table's current game (the guest holds no seat, so the lobby gives one)."""
        answer = await self.lobby.JoinGame(
            lobby_pb2.JoinGameRequest(table_id=table_id), metadata=await self.metadata(), timeout=CALL_SECONDS
        )
        if answer.HasField("seat"):
            raise RuntimeError("the web view's guest was given a seat: it must only ever spectate")
        return Spectator(table_id, answer.game_id, answer.game, answer.token, answer.expires_at)

    async def view(self, spectator: Spectator, min_version: int = 0) -> engine_pb2.GetViewResponse:
        answer: engine_pb2.GetViewResponse = await self.engine.GetView(
            engine_pb2.GetViewRequest(game_id=spectator.game_id, min_version=min_version),
            metadata=spectator.metadata,
            timeout=CALL_SECONDS,
        )
        return answer

    def watch(self, spectator: Spectator, from_version: int) -> AsyncIterator[engine_pb2.WatchResponse]:
        call: AsyncIterator[engine_pb2.WatchResponse] = self.engine.Watch(
            engine_pb2.WatchRequest(game_id=spectator.game_id, from_version=from_version),
            metadata=spectator.metadata,
        )
        return call

    async def replay(self, game_id: str, metadata: tuple[tuple[str, str], ...]) -> list[engine_pb2.Envelope]:
        """Every envelope of a game (unredacted once it has ended; as ``metadata``'s holder may see it before)."""
        call = self.engine.Replay(engine_pb2.ReplayRequest(game_id=game_id), metadata=metadata, timeout=60)
        return [answer.envelope async for answer in call]

    async def tournament(self, tournament_id: str) -> tuple[Any, Any, list[tuple[int, Any]]]:
        """A tournament, its standings and the result sheet of each round played."""
        md = await self.metadata()
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
