"""A stand-in for the LobbyService, just enough of protos/paiju/v1/lobby.proto for the clients' tests:

- the bot runner's side, `LeaseBotSeats`: a bot runner's token required, every seat `lease`d answered to the runner
  with a player token, each lease running ``lease_seconds`` from the call (so the runner must renew);
- the terminal client's lobby flows: guest and registered sessions, a table, seats, bots, ready, start, `JoinGame`
  tokens, `WatchTable` as presence. `start` creates the game in the engine the fake is given (the real in-process
  one) and its bots play their seats (``start_bots``) over the engine API.

It checks the calls against the contract's rules that matter to these clients (a session token on every table call,
the owner adds bots and starts, every seat filled and ready before the start; a bot runner's token to lease seats).
The other calls answer UNIMPLEMENTED. It records every call by name (`calls`), each `LeaseBotSeats` call
(`lease_calls`), the game tokens `JoinGame` issued (`issued`) and the open table watches (`watching`)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, NoReturn

import grpc

from paiju.platform.errors import Refused
from paiju.platform.tokens import Identity, Role, Verifier
from paiju.v1 import engine_pb2, lobby_pb2, lobby_pb2_grpc, spectators_pb2, zlj_pb2

from .credentials import TRUST
from .tokens import token, token_metadata

GAMES = {"zlj": engine_pb2.GAME_ZLJ, "tractor": engine_pb2.GAME_TRACTOR}
ZLJ_ONE_DEAL = zlj_pb2.ZljOptions(
    deals=1, reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL
)
"""The options of a table of bots (`FakeLobby.table_with_bots`): a 砸六家 match of one deal."""
SERVICE = "lobby"
"""The subject of the lobby's service token to the engine."""


async def _abort(context: Any, code: grpc.StatusCode, reason: str) -> NoReturn:
    await context.abort(code, reason)
    raise AssertionError("unreachable")


class FakeLobby(lobby_pb2_grpc.LobbyServiceServicer):
    def __init__(
        self,
        engine_stub: Any = None,
        start_bots: Callable[[str, dict[int, str]], Coroutine[Any, Any, Any]] | None = None,
        *,
        lease_seconds: float = 2.0,
        engine_now: int | None = None,
    ) -> None:
        """``engine_stub``: the engine `start` creates games in; ``start_bots(game_id, {seat: player})`` plays the
        bots' seats of a started game; ``engine_now``: the engine's time when it runs on a fixed clock (the game
        tokens this lobby issues expire against it; by default the real clock)."""
        self.engine = engine_stub
        self.start_bots = start_bots
        self.lease_seconds = lease_seconds
        self.engine_now = engine_now
        self.calls: list[str] = []
        """Every call, by method name."""
        # --- bot seats ---
        self.seats: dict[tuple[str, int], tuple[str, str]] = {}
        """Bot seats leased to runners: (game id, seat) -> (game kind, bot player id)."""
        self.extra: list[lobby_pb2.BotSeat] = []
        """Seats answered as they are (e.g. of a game no runner plays)."""
        self.lease_calls: list[tuple[str, int, Identity]] = []
        """Each `LeaseBotSeats` call: (runner id, max seats, the caller)."""
        # --- sessions and tables ---
        self.sessions: dict[str, tuple[str, str]] = {}
        self.accounts: dict[str, str] = {}
        self.tables: dict[str, lobby_pb2.Table] = {}
        self.watching: dict[tuple[str, str], int] = {}
        self.watches_opened = 0
        self.issued: list[tuple[str, int | None]] = []
        """The game tokens `JoinGame` issued: (player, seat or None for a spectator's)."""
        self._ids = itertools.count(1)
        self._changed = asyncio.Event()
        self._bots: list[asyncio.Task[Any]] = []

    # --- the test's side --------------------------------------------------------------------------------

    def lease(self, game_id: str, kind: str, seat: int, player: str) -> None:
        """Lease ``seat`` of ``game_id`` (a game of ``kind``, "zlj" or "tractor") to the runners, for bot ``player``."""
        self.seats[(game_id, seat)] = (kind, player)

    def release(self, game_id: str, seat: int) -> None:
        self.seats.pop((game_id, seat), None)

    def table_with_bots(
        self, seats: int = 6, *, spectators: spectators_pb2.SpectatorPolicy | None = None, turn_seconds: int = 0
    ) -> lobby_pb2.Table:
        """A table of bots only (owned by nobody the client knows), for spectators: watched as ``spectators`` says
        (unset: public, live), with a turn timer of ``turn_seconds`` (0: none)."""
        table = lobby_pb2.Table(
            table_id=f"t{next(self._ids)}",
            name="bots",
            game=engine_pb2.GAME_ZLJ,
            owner_id="owner",
            zlj_options=ZLJ_ONE_DEAL,
        )
        table.zlj_options.turn_seconds = turn_seconds
        if spectators is not None:
            table.spectators.CopyFrom(spectators)
        for s in range(seats):
            table.seats.add(seat=s, player_id=f"bot-{s}", name=f"bot-{s}", bot=True, ready=True)
        table.status = lobby_pb2.TABLE_STATUS_OPEN
        self.tables[table.table_id] = table
        return table

    async def start(self, table: lobby_pb2.Table) -> None:
        """StartMatch's work: the engine creates the game with the table's players; bots play their seats."""
        assert self.engine is not None and self.start_bots is not None, "a lobby that starts games needs an engine"
        game_id = f"game-{table.table_id}"
        request = engine_pb2.CreateGameRequest(game_id=game_id, game=table.game, zlj_options=table.zlj_options)
        if table.HasField("spectators"):  # the table's policy travels with its match (D-SPEC-4)
            request.spectators.CopyFrom(table.spectators)
        for s in table.seats:
            request.seats.add(seat=s.seat, player_id=s.player_id)
        await self.engine.CreateGame(
            request, metadata=token_metadata(role=Role.SERVICE, subject=SERVICE, now=self.engine_now)
        )
        table.game_id = game_id
        table.status = lobby_pb2.TABLE_STATUS_PLAYING
        table.matches += 1
        self._changed_now(table)
        bots = {s.seat: s.player_id for s in table.seats if s.bot}
        self._bots.append(asyncio.ensure_future(self.start_bots(game_id, bots)))

    async def close(self) -> None:
        for task in self._bots:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # --- helpers ------------------------------------------------------------------------------------

    async def _player(self, context: Any) -> tuple[str, str]:
        header = dict(context.invocation_metadata() or ()).get("authorization", "")
        found = self.sessions.get(str(header).removeprefix("Bearer "))
        if found is None:
            await _abort(context, grpc.StatusCode.UNAUTHENTICATED, "sign in first")
        return found

    async def _table(self, context: Any, table_id: str) -> lobby_pb2.Table:
        table = self.tables.get(table_id)
        if table is None:
            await _abort(context, grpc.StatusCode.NOT_FOUND, f"no table {table_id}")
        return table

    def _changed_now(self, table: lobby_pb2.Table) -> None:
        table.version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    def _session(self, name: str) -> lobby_pb2.Session:
        player = f"p{next(self._ids)}"
        tok = f"session-{player}"
        self.sessions[tok] = (player, name)
        return lobby_pb2.Session(player_id=player, name=name, token=tok, expires_at=2_000_000_000)

    def _game_token(self, player: str, game_id: str, seat: int | None) -> str:
        role = Role.SPECTATOR if seat is None else Role.PLAYER
        return token(role=role, subject=player, game=game_id, seat=seat, now=self.engine_now)

    # --- RPCs ---------------------------------------------------------------------------------------

    async def LeaseBotSeats(
        self, request: lobby_pb2.LeaseBotSeatsRequest, context: Any
    ) -> lobby_pb2.LeaseBotSeatsResponse:
        self.calls.append("LeaseBotSeats")
        header = dict(context.invocation_metadata() or ()).get("authorization", "")
        try:
            who = Verifier(TRUST, lambda: int(time.time())).verify(str(header).removeprefix("Bearer "))
        except Refused as e:
            await _abort(context, grpc.StatusCode.UNAUTHENTICATED, e.message)
        if who.role is not Role.BOT_RUNNER:
            await _abort(context, grpc.StatusCode.PERMISSION_DENIED, "bot runners use a bot runner's token")
        self.lease_calls.append((request.runner_id, request.max_seats, who))
        response = lobby_pb2.LeaseBotSeatsResponse()
        until = int(time.time() + self.lease_seconds)
        for (game_id, seat), (kind, player) in sorted(self.seats.items()):
            if request.max_seats and len(response.seats) >= request.max_seats:
                break
            response.seats.add(
                table_id=f"table-{game_id}",
                game_id=game_id,
                game=GAMES[kind],
                seat=seat,
                token=self._game_token(player, game_id, seat),
                lease_expires_at=until,
            )
        response.seats.extend(self.extra)
        return response

    async def Register(self, request: lobby_pb2.RegisterRequest, context: Any) -> lobby_pb2.RegisterResponse:
        self.calls.append("Register")
        if len(request.password) < 10:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, "a password has at least 10 characters")
        self.accounts[request.name.lower()] = request.password
        return lobby_pb2.RegisterResponse(session=self._session(request.name))

    async def Login(self, request: lobby_pb2.LoginRequest, context: Any) -> lobby_pb2.LoginResponse:
        self.calls.append("Login")
        if self.accounts.get(request.name.lower()) != request.password:
            await _abort(context, grpc.StatusCode.UNAUTHENTICATED, "wrong name or password")
        return lobby_pb2.LoginResponse(session=self._session(request.name))

    async def _unimplemented(self, context: Any) -> NoReturn:
        await _abort(context, grpc.StatusCode.UNIMPLEMENTED, "not in the stand-in lobby")

    async def ListTables(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def LeaveSeat(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def SwapSeats(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def Substitute(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def RemovePlayer(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def RenewSession(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def Logout(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def RevokeSessions(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def ListReservedNames(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def CreateParty(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def InviteToParty(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def AcceptPartyInvite(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def DeclinePartyInvite(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def LeaveParty(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def GetParty(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def FindMatch(self, request: Any, context: Any) -> AsyncIterator[lobby_pb2.FindMatchResponse]:
        await self._unimplemented(context)
        yield lobby_pb2.FindMatchResponse()  # never reached: a stream's handler is an async generator

    async def ConfirmMatch(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def LeaveQueue(self, request: Any, context: Any) -> Any:
        await self._unimplemented(context)

    async def Guest(self, request: lobby_pb2.GuestRequest, context: Any) -> lobby_pb2.GuestResponse:
        self.calls.append("Guest")
        return lobby_pb2.GuestResponse(session=self._session(f"guest-{len(self.sessions) + 1}"))

    async def CreateTable(self, request: lobby_pb2.CreateTableRequest, context: Any) -> lobby_pb2.CreateTableResponse:
        self.calls.append("CreateTable")
        player, _ = await self._player(context)
        table = lobby_pb2.Table(
            table_id=f"t{next(self._ids)}", name=request.name, game=request.game, owner_id=player, preset=request.preset
        )
        if request.HasField("zlj_options"):
            table.zlj_options.CopyFrom(request.zlj_options)
        for s in range(6 if request.game == engine_pb2.GAME_ZLJ else 4):
            table.seats.add(seat=s)
        table.status = lobby_pb2.TABLE_STATUS_OPEN
        self.tables[table.table_id] = table
        return lobby_pb2.CreateTableResponse(table=table)

    async def GetTable(self, request: lobby_pb2.GetTableRequest, context: Any) -> lobby_pb2.GetTableResponse:
        self.calls.append("GetTable")
        await self._player(context)
        return lobby_pb2.GetTableResponse(table=await self._table(context, request.table_id))

    async def WatchTable(
        self, request: lobby_pb2.WatchTableRequest, context: Any
    ) -> AsyncIterator[lobby_pb2.WatchTableResponse]:
        self.calls.append("WatchTable")
        player, _ = await self._player(context)
        table = await self._table(context, request.table_id)
        key = (request.table_id, player)
        self.watching[key] = self.watching.get(key, 0) + 1
        self.watches_opened += 1
        try:
            while True:
                changed = self._changed
                yield lobby_pb2.WatchTableResponse(table=table)
                await changed.wait()
        finally:
            self.watching[key] -= 1

    async def TakeSeat(self, request: lobby_pb2.TakeSeatRequest, context: Any) -> lobby_pb2.TakeSeatResponse:
        self.calls.append("TakeSeat")
        player, name = await self._player(context)
        table = await self._table(context, request.table_id)
        free = [s for s in table.seats if not s.player_id]
        if request.HasField("seat"):
            free = [s for s in free if s.seat == request.seat]
        if not free:
            await _abort(context, grpc.StatusCode.FAILED_PRECONDITION, "that seat is taken")
        free[0].player_id, free[0].name = player, name
        self._changed_now(table)
        return lobby_pb2.TakeSeatResponse(table=table)

    async def AddBot(self, request: lobby_pb2.AddBotRequest, context: Any) -> lobby_pb2.AddBotResponse:
        self.calls.append("AddBot")
        player, _ = await self._player(context)
        table = await self._table(context, request.table_id)
        if table.owner_id != player:
            await _abort(context, grpc.StatusCode.PERMISSION_DENIED, "only the owner adds bots")
        seat = table.seats[request.seat]
        if seat.player_id:
            await _abort(context, grpc.StatusCode.FAILED_PRECONDITION, "that seat is taken")
        seat.player_id, seat.name, seat.bot, seat.ready = (
            f"bot-{table.table_id}-{seat.seat}",
            f"bot-{seat.seat}",
            True,
            True,
        )
        self._changed_now(table)
        return lobby_pb2.AddBotResponse(table=table)

    async def Ready(self, request: lobby_pb2.ReadyRequest, context: Any) -> lobby_pb2.ReadyResponse:
        self.calls.append("Ready")
        player, _ = await self._player(context)
        table = await self._table(context, request.table_id)
        for s in table.seats:
            if s.player_id == player:
                s.ready = request.ready
        self._changed_now(table)
        return lobby_pb2.ReadyResponse(table=table)

    async def StartMatch(self, request: lobby_pb2.StartMatchRequest, context: Any) -> lobby_pb2.StartMatchResponse:
        self.calls.append("StartMatch")
        player, _ = await self._player(context)
        table = await self._table(context, request.table_id)
        if table.owner_id != player:
            await _abort(context, grpc.StatusCode.PERMISSION_DENIED, "only the owner starts")
        if not all(s.player_id and s.ready for s in table.seats):
            await _abort(context, grpc.StatusCode.FAILED_PRECONDITION, "every seat filled and ready first")
        await self.start(table)
        return lobby_pb2.StartMatchResponse(table=table)

    async def JoinGame(self, request: lobby_pb2.JoinGameRequest, context: Any) -> lobby_pb2.JoinGameResponse:
        self.calls.append("JoinGame")
        player, _ = await self._player(context)
        table = await self._table(context, request.table_id)
        if not table.game_id:
            await _abort(context, grpc.StatusCode.FAILED_PRECONDITION, "no match has started at this table yet")
        reply = lobby_pb2.JoinGameResponse(game_id=table.game_id, game=table.game)
        seat = next((s.seat for s in table.seats if s.player_id == player), None)
        if seat is not None:
            reply.seat = seat
        reply.token = self._game_token(player, table.game_id, seat)
        self.issued.append((player, seat))
        return reply


async def serve_lobby(lobby: FakeLobby) -> tuple[grpc.aio.Server, str]:
    """The fake on a local port of a server of its own in this event loop: (server, address)."""
    server = grpc.aio.server()
    lobby_pb2_grpc.add_LobbyServiceServicer_to_server(lobby, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"
