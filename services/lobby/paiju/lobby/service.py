"""`LobbyService` over gRPC (grpc.aio): accounts, tables, seats, bots, matches, presence and bot-seat leases.

Tables and accounts are aggregates of the LOBBY stream (`paiju.lobby.aggregates`); table lists come from the
PostgreSQL read model (`paiju.lobby.readmodel`). Seat changes during a match go to the engine first
(`EngineService.AssignSeats`: it knows whether the game stands between deals), then into the table. A
seated player's open `WatchTable` stream is its presence: when the last one closes during a match, a bot
covers the seat after the grace time; when the player watches again (or joins the game), the seat is
handed back. Tokens: the lobby signs sessions (role player, no game) and game tokens (player + game +
seat, or spectator) with the deployment's secret, which the engine verifies.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn, Protocol, cast

import grpc
import structlog

from paiju.engine.auth import Identity, Role, TokenError, Verifier, mint
from paiju.engine.channels import channel as grpc_channel
from paiju.engine.contract import TRACTOR, ZLJ
from paiju.lobby import accounts as acc
from paiju.lobby import table as tb
from paiju.lobby.aggregates import Aggregates, CommandIdReused, Loaded
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_pb2, lobby_pb2_grpc

SESSION_SECONDS = 12 * 3600
GAME_TOKEN_SECONDS = 12 * 3600
LEASE_SECONDS = 30
STATUS = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "precondition": grpc.StatusCode.FAILED_PRECONDITION,
    "permission": grpc.StatusCode.PERMISSION_DENIED,
    "not_found": grpc.StatusCode.NOT_FOUND,
    "already_exists": grpc.StatusCode.ALREADY_EXISTS,
}
GAMES = {"zlj": engine_pb2.GAME_ZLJ, "tractor": engine_pb2.GAME_TRACTOR}
KINDS = {v: k for k, v in GAMES.items()}
TABLE_STATUS = {
    tb.Status.OPEN: lobby_pb2.TABLE_STATUS_OPEN,
    tb.Status.PLAYING: lobby_pb2.TABLE_STATUS_PLAYING,
    tb.Status.FINISHED: lobby_pb2.TABLE_STATUS_FINISHED,
}
log = structlog.get_logger("paiju.lobby")


class TableListing(Protocol):
    """Where table lists come from (the PostgreSQL read model)."""

    async def list_tables(self, game: str | None, status: str | None, limit: int) -> list[lobby_pb2.Table]: ...

    async def playing_tables_with_bots(self) -> list[str]: ...


async def _abort(context: grpc.aio.ServicerContext[Any, Any], code: grpc.StatusCode, reason: str) -> NoReturn:
    log.info("refused", status=code.name, reason=reason)
    await context.abort(code, reason)
    raise AssertionError("unreachable")


def table_message(table: tb.Table, version: int) -> lobby_pb2.Table:
    """The API's picture of a table."""
    message = lobby_pb2.Table(
        table_id=table.table_id,
        name=table.name,
        game=GAMES[table.game],
        owner_id=table.owner,
        preset=lobby_pb2.TABLE_PRESET_TOURNAMENT if table.tournament else lobby_pb2.TABLE_PRESET_CASUAL,
        status=TABLE_STATUS[table.status],
        game_id=table.game_id,
        matches=table.matches,
        version=version,
    )
    options = tb.match_options(table)
    if table.game == "zlj":
        message.zlj_options.CopyFrom(cast(Any, ZLJ.encode(options)))
    else:
        message.tractor_options.CopyFrom(cast(Any, TRACTOR.encode(options)))
    for i, seat in enumerate(table.seats):
        message.seats.add(
            seat=i, player_id=seat.player_id, name=seat.name, bot=seat.bot, ready=seat.ready, covered=seat.covered
        )
    if table.last_result is not None:
        r = table.last_result
        result = message.last_result
        result.game_id = table.game_id
        result.team_points.extend(r.team_points)
        result.individual_points.extend(r.individual_points)
        result.levels.extend(r.levels)
        if r.winner_team is not None:
            result.winner_team = r.winner_team
    return message


def new_tables(store: Any) -> Aggregates[tb.Table]:
    from paiju.lobby.contract import LOBBY_EVENTS

    return Aggregates(store, LOBBY_EVENTS, tb.Table, tb.decide, tb.evolve)


def new_accounts(store: Any) -> Aggregates[acc.Account | None]:
    from paiju.lobby.contract import LOBBY_EVENTS

    return Aggregates(store, LOBBY_EVENTS, lambda: None, acc.decide_account, acc.evolve_account)


class LobbyService(lobby_pb2_grpc.LobbyServiceServicer):
    def __init__(
        self,
        tables: Aggregates[tb.Table],
        accounts: Aggregates[acc.Account | None],
        listing: TableListing,
        engine: Callable[[], Any],
        secret: bytes,
        *,
        grace_seconds: float = 30.0,
        now: Callable[[], int] = lambda: int(time.time()),
    ) -> None:
        self._tables = tables
        self._accounts = accounts
        self._listing = listing
        self._engine = engine
        self._secret = secret
        self._grace = grace_seconds
        self._now = now
        self._verifier = Verifier(secret, now)
        self._present: dict[tuple[str, str], int] = {}
        self._pending: set[asyncio.Task[None]] = set()

    # --- helpers ------------------------------------------------------------------------------------

    def _token(self, identity: Identity) -> str:
        return mint(identity, self._secret)

    def _service_metadata(self) -> tuple[tuple[str, str], ...]:
        identity = Identity("lobby", Role.SERVICE, expires=self._now() + 300)
        return (("authorization", f"Bearer {self._token(identity)}"),)

    async def _identity(self, context: grpc.aio.ServicerContext[Any, Any]) -> Identity:
        try:
            return self._verifier.identify(context.invocation_metadata())
        except TokenError as e:
            await _abort(context, grpc.StatusCode.UNAUTHENTICATED, str(e))

    async def _player(self, context: grpc.aio.ServicerContext[Any, Any]) -> tuple[str, str]:
        """The signed-in player's id and name (a lobby session token)."""
        who = await self._identity(context)
        if who.role is not Role.PLAYER or who.game is not None:
            await _abort(context, grpc.StatusCode.PERMISSION_DENIED, "sign in (Register, Login or Guest) first")
        account = (await self._accounts.load(who.subject)).state
        if account is None:
            await _abort(context, grpc.StatusCode.UNAUTHENTICATED, "this token's account does not exist")
        return account.player_id, account.name

    async def _table(self, context: grpc.aio.ServicerContext[Any, Any], table_id: str) -> Loaded[tb.Table]:
        if not table_id.startswith("table-") or not table_id[6:].replace("-", "").isalnum():
            await _abort(context, grpc.StatusCode.NOT_FOUND, f"there is no table {table_id!r}")
        loaded = await self._tables.load(table_id)
        if loaded.state.status is tb.Status.NEW:
            await _abort(context, grpc.StatusCode.NOT_FOUND, f"there is no table {table_id!r}")
        return loaded

    async def _act(
        self, context: grpc.aio.ServicerContext[Any, Any], table_id: str, command: Any, actor: str, command_id: str = ""
    ) -> Loaded[tb.Table]:
        try:
            loaded, _ = await self._tables.act(table_id, command, command_id or uuid.uuid4().hex, actor)
        except tb.LobbyError as e:
            await _abort(context, STATUS[e.kind], e.reason)
        except CommandIdReused as e:
            await _abort(context, grpc.StatusCode.ALREADY_EXISTS, str(e))
        return loaded

    @staticmethod
    async def _allowed(context: grpc.aio.ServicerContext[Any, Any], table: tb.Table, command: Any) -> None:
        """Refuse a table command before the engine is asked to change seats for it."""
        try:
            tb.decide(table, command)
        except tb.LobbyError as e:
            await _abort(context, STATUS[e.kind], e.reason)

    async def _engine_seats(
        self,
        context: grpc.aio.ServicerContext[Any, Any] | None,
        table: tb.Table,
        seats: dict[int, str],
        change: int,
        command_id: str,
    ) -> None:
        """Tell the engine who sits where now in the table's running match (it refuses swaps mid-deal)."""
        request = engine_pb2.AssignSeatsRequest(game_id=table.game_id, command_id=command_id, change=cast(Any, change))
        for seat, player in sorted(seats.items()):
            request.seats.add(seat=seat, player_id=player)
        try:
            await self._engine().AssignSeats(request, metadata=self._service_metadata())
        except grpc.aio.AioRpcError as e:
            if context is None:
                raise
            await _abort(context, e.code(), e.details() or "the engine refused the seat change")

    def _session(self, account: acc.Account) -> lobby_pb2.Session:
        expires = self._now() + SESSION_SECONDS
        token = self._token(Identity(account.player_id, Role.PLAYER, expires=expires))
        return lobby_pb2.Session(player_id=account.player_id, name=account.name, token=token, expires_at=expires)

    # --- accounts -----------------------------------------------------------------------------------

    async def _register(
        self, context: grpc.aio.ServicerContext[Any, Any], name: str, password_hash: str, guest: bool
    ) -> acc.Account:
        player_id = acc.account_key(name)
        command = acc.Register(player_id, name, password_hash, guest)
        try:
            loaded, _ = await self._accounts.act(player_id, command, f"register:{uuid.uuid4().hex}", player_id)
        except tb.LobbyError as e:
            await _abort(context, STATUS[e.kind], e.reason)
        assert loaded.state is not None
        return loaded.state

    async def Register(
        self, request: lobby_pb2.RegisterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.RegisterResponse:
        try:
            name = acc.check_name(request.name)
            acc.check_password(name, request.password)
        except tb.LobbyError as e:
            await _abort(context, STATUS[e.kind], e.reason)
        hashed = await asyncio.to_thread(acc.hash_password, request.password)
        account = await self._register(context, name, hashed, guest=False)
        log.info("registered", player=account.player_id)
        return lobby_pb2.RegisterResponse(session=self._session(account))

    async def Login(
        self, request: lobby_pb2.LoginRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.LoginResponse:
        wrong = "wrong name or password"
        if not request.name or not request.password:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, "send a name and a password")
        account = (await self._accounts.load(acc.account_key(request.name))).state
        if account is None or account.guest:
            await _abort(context, grpc.StatusCode.UNAUTHENTICATED, wrong)
        if not await asyncio.to_thread(acc.password_matches, request.password, account.password_hash):
            await _abort(context, grpc.StatusCode.UNAUTHENTICATED, wrong)
        return lobby_pb2.LoginResponse(session=self._session(account))

    async def Guest(
        self, request: lobby_pb2.GuestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.GuestResponse:
        account = await self._register(context, acc.guest_name(), "", guest=True)
        return lobby_pb2.GuestResponse(session=self._session(account))

    # --- tables -------------------------------------------------------------------------------------

    async def CreateTable(
        self, request: lobby_pb2.CreateTableRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.CreateTableResponse:
        player, _ = await self._player(context)
        game = KINDS.get(request.game)
        if game is None:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, "game must be GAME_ZLJ or GAME_TRACTOR")
        zlj_options = tractor_options = None
        try:
            if request.HasField("zlj_options"):
                if game != "zlj":
                    raise ValueError("zlj_options are for a 砸六家 table")
                zlj_options = ZLJ.decode(request.zlj_options, zlj_model.Options)
            if request.HasField("tractor_options"):
                if game != "tractor":
                    raise ValueError("tractor_options are for a 拖拉机 table")
                tractor_options = TRACTOR.decode(request.tractor_options, tractor_model.Options)
        except Exception as e:  # a malformed option (CodecError, ValueError): the client's mistake
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        table_id = "table-" + secrets.token_hex(4)
        tournament = request.preset == lobby_pb2.TABLE_PRESET_TOURNAMENT
        command = tb.OpenTable(table_id, request.name, game, player, tournament, zlj_options, tractor_options)
        loaded = await self._act(context, table_id, command, player)
        log.info("table opened", table=table_id, game=game, owner=player)
        return lobby_pb2.CreateTableResponse(table=table_message(loaded.state, loaded.version))

    async def ListTables(
        self, request: lobby_pb2.ListTablesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.ListTablesResponse:
        await self._identity(context)
        limit = request.limit or 50
        if not 1 <= limit <= 200:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, "limit is 1..200")
        status = {v: k.value for k, v in TABLE_STATUS.items()}.get(request.status)
        tables = await self._listing.list_tables(KINDS.get(request.game), status, limit)
        return lobby_pb2.ListTablesResponse(tables=tables)

    async def GetTable(
        self, request: lobby_pb2.GetTableRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.GetTableResponse:
        await self._identity(context)
        loaded = await self._table(context, request.table_id)
        return lobby_pb2.GetTableResponse(table=table_message(loaded.state, loaded.version))

    async def WatchTable(
        self, request: lobby_pb2.WatchTableRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[lobby_pb2.WatchTableResponse]:
        who = await self._identity(context)
        loaded = await self._table(context, request.table_id)
        key = (request.table_id, who.subject)
        self._present[key] = self._present.get(key, 0) + 1
        try:
            with contextlib.suppress(grpc.aio.AioRpcError):  # the engine away: the seat comes back at the next watch
                await self._returned(request.table_id, who.subject)
            sent = -1
            while True:
                loaded = await self._tables.load(request.table_id)
                if loaded.version != sent:
                    sent = loaded.version
                    yield lobby_pb2.WatchTableResponse(table=table_message(loaded.state, loaded.version))
                await self._tables.changed(request.table_id, sent, 1.0)
                if not self._tables.following:
                    await self._tables.refresh(request.table_id)
        finally:
            self._present[key] -= 1
            if not self._present[key]:
                del self._present[key]
                self._spawn(self._cover_later(request.table_id, who.subject))

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _cover_later(self, table_id: str, player: str) -> None:
        """After the grace time, a bot covers the seat of a player who is still away during a match."""
        await asyncio.sleep(self._grace)
        if self._present.get((table_id, player)):
            return
        loaded = await self._tables.refresh(table_id)
        table = loaded.state
        seat = table.seat_of(player)
        if table.status is not tb.Status.PLAYING or seat is None or table.seats[seat].covered:
            return
        command_id = f"cover:{table.game_id}:{seat}:{loaded.version}"
        try:
            await self._engine_seats(
                None, table, {seat: tb.cover_id(table_id, seat)}, engine_pb2.SEAT_CHANGE_COVER, command_id
            )
            await self._tables.act(table_id, tb.CoverSeat(seat), command_id, "lobby")
        except (grpc.aio.AioRpcError, tb.LobbyError) as e:
            log.warning("could not cover a seat", table=table_id, seat=seat, error=str(e))
            return
        log.info("a bot covers an absent player", table=table_id, seat=seat, player=player)
        if self._present.get((table_id, player)):  # back while the cover was being recorded: hand it back now
            with contextlib.suppress(grpc.aio.AioRpcError):
                await self._returned(table_id, player)

    async def _returned(self, table_id: str, player: str) -> None:
        """A covered player is back: hand the seat back in the engine and at the table."""
        loaded = await self._tables.refresh(table_id)
        table = loaded.state
        seat = table.seat_of(player)
        if seat is None or not table.seats[seat].covered or table.status is not tb.Status.PLAYING:
            return
        command_id = f"return:{table.game_id}:{seat}:{loaded.version}"
        await self._engine_seats(None, table, {seat: player}, engine_pb2.SEAT_CHANGE_RETURN, command_id)
        await self._tables.act(table_id, tb.ReturnToSeat(player), command_id, player)
        log.info("the player is back", table=table_id, seat=seat, player=player)

    async def TakeSeat(
        self, request: lobby_pb2.TakeSeatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.TakeSeatResponse:
        player, name = await self._player(context)
        await self._table(context, request.table_id)
        seat = request.seat if request.HasField("seat") else None
        loaded = await self._act(context, request.table_id, tb.TakeSeat(player, name, seat), player)
        return lobby_pb2.TakeSeatResponse(table=table_message(loaded.state, loaded.version))

    async def _change_seats(
        self,
        context: grpc.aio.ServicerContext[Any, Any],
        loaded: Loaded[tb.Table],
        *,
        actor: str,
        command: Any,
        key: str,
        in_match: Callable[[], tuple[dict[int, str], int]],
    ) -> lobby_pb2.Table:
        """A seat change: refused by the table first; during a match the engine is told next (it refuses swaps
        and substitutes mid-deal), with ``in_match``'s seats and reason; then it is recorded at the table, both
        under one command id."""
        table = loaded.state
        await self._allowed(context, table, command)
        command_id = f"{key}:{loaded.version}"
        if table.status is tb.Status.PLAYING:
            seats, change = in_match()
            await self._engine_seats(context, table, seats, change, command_id)
        after = await self._act(context, table.table_id, command, actor, command_id)
        return table_message(after.state, after.version)

    async def LeaveSeat(
        self, request: lobby_pb2.LeaveSeatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.LeaveSeatResponse:
        player, _ = await self._player(context)
        loaded = await self._table(context, request.table_id)
        seat = loaded.state.seat_of(player)

        def bot_takes_over() -> tuple[dict[int, str], int]:
            assert seat is not None  # the table refused a player who is not seated
            return {seat: tb.bot_taking_over(loaded.state, seat)}, engine_pb2.SEAT_CHANGE_COVER

        table = await self._change_seats(
            context, loaded, actor=player, command=tb.LeaveSeat(player), key=f"leave:{seat}", in_match=bot_takes_over
        )
        return lobby_pb2.LeaveSeatResponse(table=table)

    async def RemovePlayer(
        self, request: lobby_pb2.RemovePlayerRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.RemovePlayerResponse:
        player, _ = await self._player(context)
        loaded = await self._table(context, request.table_id)
        seat = request.seat
        table = await self._change_seats(
            context,
            loaded,
            actor=player,
            command=tb.RemovePlayer(player, seat),
            key=f"remove:{seat}",
            in_match=lambda: ({seat: tb.bot_taking_over(loaded.state, seat)}, engine_pb2.SEAT_CHANGE_COVER),
        )
        return lobby_pb2.RemovePlayerResponse(table=table)

    async def SwapSeats(
        self, request: lobby_pb2.SwapSeatsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.SwapSeatsResponse:
        player, _ = await self._player(context)
        loaded = await self._table(context, request.table_id)
        a, b = request.seat, request.other_seat

        def swapped() -> tuple[dict[int, str], int]:
            held = tb.engine_seats(loaded.state)
            return {a: held[b], b: held[a]}, engine_pb2.SEAT_CHANGE_SWAP

        table = await self._change_seats(
            context, loaded, actor=player, command=tb.SwapSeats(player, a, b), key=f"swap:{a}:{b}", in_match=swapped
        )
        return lobby_pb2.SwapSeatsResponse(table=table)

    async def Substitute(
        self, request: lobby_pb2.SubstituteRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.SubstituteResponse:
        player, _ = await self._player(context)
        loaded = await self._table(context, request.table_id)
        substitute = (await self._accounts.load(acc.account_key(request.player_name or "?"))).state
        if substitute is None:
            await _abort(context, grpc.StatusCode.NOT_FOUND, f"there is no player named {request.player_name!r}")
        seat = request.seat
        table = await self._change_seats(
            context,
            loaded,
            actor=player,
            command=tb.Substitute(player, seat, substitute.player_id, substitute.name),
            key=f"substitute:{seat}",
            in_match=lambda: ({seat: substitute.player_id}, engine_pb2.SEAT_CHANGE_SUBSTITUTE),
        )
        return lobby_pb2.SubstituteResponse(table=table)

    async def AddBot(
        self, request: lobby_pb2.AddBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.AddBotResponse:
        player, _ = await self._player(context)
        await self._table(context, request.table_id)
        seat = request.seat if request.HasField("seat") else None
        loaded = await self._act(context, request.table_id, tb.AddBot(player, seat), player)
        return lobby_pb2.AddBotResponse(table=table_message(loaded.state, loaded.version))

    async def Ready(
        self, request: lobby_pb2.ReadyRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.ReadyResponse:
        player, _ = await self._player(context)
        await self._table(context, request.table_id)
        loaded = await self._act(context, request.table_id, tb.SetReady(player, request.ready), player)
        return lobby_pb2.ReadyResponse(table=table_message(loaded.state, loaded.version))

    async def StartMatch(
        self, request: lobby_pb2.StartMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.StartMatchResponse:
        player, _ = await self._player(context)
        await self._table(context, request.table_id)
        loaded = await self._act(context, request.table_id, tb.StartMatch(player), player)
        log.info("match started", table=request.table_id, game=loaded.state.game_id)
        return lobby_pb2.StartMatchResponse(table=table_message(loaded.state, loaded.version))

    async def JoinGame(
        self, request: lobby_pb2.JoinGameRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.JoinGameResponse:
        who = await self._identity(context)
        loaded = await self._table(context, request.table_id)
        table = loaded.state
        if not table.game_id:
            await _abort(context, grpc.StatusCode.FAILED_PRECONDITION, "no match has started at this table yet")
        expires = self._now() + GAME_TOKEN_SECONDS
        seat = table.seat_of(who.subject) if who.role is Role.PLAYER else None
        response = lobby_pb2.JoinGameResponse(game_id=table.game_id, game=GAMES[table.game])
        if seat is None:
            response.token = self._token(Identity(who.subject, Role.SPECTATOR, table.game_id, None, expires))
            return response
        with contextlib.suppress(grpc.aio.AioRpcError):
            await self._returned(request.table_id, who.subject)
        response.seat = seat
        response.token = self._token(Identity(who.subject, Role.PLAYER, table.game_id, seat, expires))
        return response

    async def LeaseBotSeats(
        self, request: lobby_pb2.LeaseBotSeatsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.LeaseBotSeatsResponse:
        who = await self._identity(context)
        if who.role not in (Role.SERVICE, Role.ADMIN):
            await _abort(context, grpc.StatusCode.PERMISSION_DENIED, "bot runners use a service token")
        if not request.runner_id:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, "a runner needs an id")
        now = self._now()
        until = now + LEASE_SECONDS
        response = lobby_pb2.LeaseBotSeatsResponse()
        for table_id in await self._listing.playing_tables_with_bots():
            loaded = await self._tables.load(table_id)  # kept current by the feed; a lease re-reads when it acts
            table = loaded.state
            if table.status is not tb.Status.PLAYING:
                continue
            holders = tb.engine_seats(table)
            for i, seat in enumerate(table.seats):
                if request.max_seats and len(response.seats) >= request.max_seats:
                    return response
                if not seat.played_by_bot:
                    continue
                if seat.runner and seat.runner != request.runner_id and seat.lease_until > now:
                    continue
                expires = seat.lease_until
                if seat.runner != request.runner_id or seat.lease_until - now < LEASE_SECONDS / 2:
                    command = tb.LeaseSeat(request.runner_id, i, now, until)
                    command_id = f"lease:{i}:{request.runner_id}:{now}"
                    try:
                        await self._tables.act(table_id, command, command_id, request.runner_id)
                    except tb.LobbyError:
                        continue  # another runner leased it meanwhile
                    expires = until
                token = self._token(Identity(holders[i], Role.PLAYER, table.game_id, i, expires + LEASE_SECONDS))
                response.seats.add(
                    table_id=table_id,
                    game_id=table.game_id,
                    game=GAMES[table.game],
                    seat=i,
                    token=token,
                    lease_expires_at=expires,
                )
        return response

    async def close(self) -> None:
        for task in list(self._pending):
            task.cancel()
        for task in list(self._pending):
            with contextlib.suppress(asyncio.CancelledError):
                await task


def engine_client(address: str) -> Callable[[], Any]:
    """A lazily opened EngineService stub (one channel per lobby process)."""
    channel: list[grpc.aio.Channel] = []

    def stub() -> Any:
        if not channel:
            channel.append(grpc_channel(address))
        return engine_pb2_grpc.EngineServiceStub(channel[0])

    return stub
