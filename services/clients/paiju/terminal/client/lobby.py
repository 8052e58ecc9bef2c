"""The client's side of the lobby API (protos/paiju/v1/lobby.proto): signing in, setting up a table, the
table's watch (which is the player's presence while playing) and the engine token for the game.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from paiju.contract.matches import GAME_NAMES, GAMES
from paiju.rules.registry import GAMES as GAME_RULES
from paiju.sdk import RETRYABLE
from paiju.terminal.client.console import Console
from paiju.terminal.client.games import PRESENTATIONS
from paiju.v1 import lobby_events_pb2, lobby_pb2, lobby_pb2_grpc

CALL_TIMEOUT = 15.0
START_PATIENCE = 60.0
"""How long to wait for the engine's game after the match started (the engine creates it from the lobby's
event)."""


RENEW_SECONDS = 5 * 60.0
"""How often a signed-in client renews its session and its game token (both last 15 minutes)."""


class LobbyFailed(Exception):
    """A lobby call failed; ``message`` says why in plain words."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def lobby_error(what: str, error: grpc.aio.AioRpcError, address: str = "") -> LobbyFailed:
    """A failed lobby call in words: the lobby's reason, or, when it did not answer, where it was looked for and
    what to do (gRPC's own connection text says nothing to a person)."""
    details = error.details() or error.code().name
    if error.code() in RETRYABLE:
        at = f" at {address}" if address else ""
        return LobbyFailed(
            f"{what}: the lobby{at} is not answering. Is the stack running? `make run` starts one; --lobby names "
            "another address."
        )
    return LobbyFailed(f"{what}: {details}")


@dataclass(frozen=True)
class Joined:
    """What JoinGame answered: the game, the caller's seat (``None``: a spectator) and the engine token."""

    table_id: str
    game_id: str
    game: str
    """The game's name (`paiju.rules.registry`; empty for a game this client does not know)."""
    seat: int | None
    token: str


def seat_names(table: lobby_pb2.Table) -> dict[int, str]:
    """The players' names by seat, with bots and covered seats marked."""
    names = {}
    for s in table.seats:
        if not s.player_id:
            continue
        name = s.name or s.player_id
        if s.bot:
            name = f"bot {name}" if not name.lower().startswith("bot") else name
        elif s.covered:
            name += ", away: a bot plays"
        names[s.seat] = name
    return names


class LobbyClient:
    """The lobby calls of one signed-in person."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.channel = grpc.aio.insecure_channel(address)
        self.stub: Any = lobby_pb2_grpc.LobbyServiceStub(self.channel)
        self.session: lobby_pb2.Session | None = None

    async def close(self) -> None:
        await self.channel.close()

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        assert self.session is not None, "sign in first"
        return (("authorization", f"Bearer {self.session.token}"),)

    async def _call(self, what: str, method: Callable[..., Any], request: Any, *, signed: bool = True) -> Any:
        try:
            if signed:
                return await method(request, metadata=self.metadata, timeout=CALL_TIMEOUT)
            return await method(request, timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as e:
            raise lobby_error(what, e, self.address) from None

    async def sign_in(self, name: str | None, password: str | None, register: bool) -> lobby_pb2.Session:
        """Register or log in with a name and password, or play as a guest without a name."""
        if name is None:
            reply = await self._call("Guest", self.stub.Guest, lobby_pb2.GuestRequest(), signed=False)
        elif register:
            request = lobby_pb2.RegisterRequest(name=name, password=password or "")
            reply = await self._call("Register", self.stub.Register, request, signed=False)
        else:
            request2 = lobby_pb2.LoginRequest(name=name, password=password or "")
            reply = await self._call("Login", self.stub.Login, request2, signed=False)
        session: lobby_pb2.Session = reply.session
        self.session = session
        return session

    async def create_table(self, game: str, deals: int | None, tournament: bool) -> lobby_pb2.Table:
        assert self.session is not None
        request = lobby_pb2.CreateTableRequest(
            name=f"{self.session.name}'s table",
            game=GAMES[game],
            preset=lobby_pb2.TABLE_PRESET_TOURNAMENT if tournament else lobby_pb2.TABLE_PRESET_CASUAL,
        )
        if not tournament:  # rated casual (docs/rules/ratings.md); a tournament's results are its standings
            request.mode = lobby_events_pb2.MATCH_MODE_CASUAL
        options = PRESENTATIONS[game].table_options(deals)
        if options is not None:
            getattr(request, f"{game}_options").CopyFrom(options)
        reply = await self._call("CreateTable", self.stub.CreateTable, request)
        table: lobby_pb2.Table = reply.table
        return table

    async def get_table(self, table_id: str) -> lobby_pb2.Table:
        request = lobby_pb2.GetTableRequest(table_id=table_id)
        reply = await self._call("GetTable", self.stub.GetTable, request)
        table: lobby_pb2.Table = reply.table
        return table

    async def take_seat(self, table_id: str, seat: int | None) -> lobby_pb2.Table:
        request = lobby_pb2.TakeSeatRequest(table_id=table_id)
        if seat is not None:
            request.seat = seat
        reply = await self._call("TakeSeat", self.stub.TakeSeat, request)
        table: lobby_pb2.Table = reply.table
        return table

    async def add_bot(self, table_id: str, seat: int) -> lobby_pb2.Table:
        request = lobby_pb2.AddBotRequest(table_id=table_id, seat=seat)
        reply = await self._call("AddBot", self.stub.AddBot, request)
        table: lobby_pb2.Table = reply.table
        return table

    async def ready(self, table_id: str) -> lobby_pb2.Table:
        request = lobby_pb2.ReadyRequest(table_id=table_id, ready=True)
        reply = await self._call("Ready", self.stub.Ready, request)
        table: lobby_pb2.Table = reply.table
        return table

    async def start_match(self, table_id: str) -> lobby_pb2.Table:
        request = lobby_pb2.StartMatchRequest(table_id=table_id)
        reply = await self._call("StartMatch", self.stub.StartMatch, request)
        table: lobby_pb2.Table = reply.table
        return table

    async def keep_signed_in(self, table_id: str | None = None, renewed: Callable[[str], None] | None = None) -> None:
        """Until cancelled: renew the session (sessions last 15 minutes) every `RENEW_SECONDS`, and with it the
        game token of ``table_id`` (passed to ``renewed``). A renewal that fails is tried again next time."""
        while True:
            await asyncio.sleep(RENEW_SECONDS)
            with contextlib.suppress(LobbyFailed):
                reply = await self._call("RenewSession", self.stub.RenewSession, lobby_pb2.RenewSessionRequest())
                self.session = reply.session
                if table_id is not None and renewed is not None:
                    renewed((await self.join_game(table_id)).token)

    async def join_game(self, table_id: str) -> Joined:
        reply = await self._call("JoinGame", self.stub.JoinGame, lobby_pb2.JoinGameRequest(table_id=table_id))
        return Joined(
            table_id=table_id,
            game_id=reply.game_id,
            game=GAME_NAMES.get(reply.game, ""),
            seat=reply.seat if reply.HasField("seat") else None,
            token=reply.token,
        )


def my_seat(table: lobby_pb2.Table, player_id: str) -> int | None:
    return next((s.seat for s in table.seats if s.player_id == player_id), None)


class TablePresence:
    """Keeps the table's WatchTable stream open (the player's presence: while it is open no bot covers the seat),
    reopening it after a disconnect, and keeps the latest table for names and status."""

    def __init__(self, lobby: LobbyClient, table_id: str, on_table: Callable[[lobby_pb2.Table], None]) -> None:
        self.lobby = lobby
        self.table_id = table_id
        self.on_table = on_table
        self.table: lobby_pb2.Table | None = None
        self.changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        delay = 0.5
        while True:
            try:
                stream = self.lobby.stub.WatchTable(
                    lobby_pb2.WatchTableRequest(table_id=self.table_id), metadata=self.lobby.metadata
                )
                async for reply in stream:
                    if reply.HasField("end"):  # the lobby shuts down: watch again (another replica answers)
                        break
                    delay = 0.5
                    self.table = reply.table
                    self.on_table(reply.table)
                    self.changed.set()
            except grpc.aio.AioRpcError as e:
                if e.code() not in RETRYABLE:
                    return  # e.g. the table is gone: nothing more to watch
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    async def finished(self, game_id: str, seconds: float) -> lobby_pb2.Table | None:
        """The table once it says its match ``game_id`` is over (the lobby's record of the result, which scoring rates
        from), waited for on the table's watch; ``None`` when it has not said so within ``seconds``."""

        def over() -> bool:
            table = self.table
            return table is not None and table.last_result.game_id == game_id

        try:
            while not over():
                self.changed.clear()
                await asyncio.wait_for(self.changed.wait(), timeout=seconds)
        except TimeoutError:
            return None
        return self.table

    async def wait_for(self, ready: Callable[[lobby_pb2.Table], bool], console: Console) -> lobby_pb2.Table | None:
        """Wait until the table satisfies ``ready`` (e.g. its match started); ``None`` when the player quits."""
        while True:
            if self.table is not None and ready(self.table):
                return self.table
            self.changed.clear()
            line = console.next_line()
            changed = asyncio.ensure_future(self.changed.wait())
            await asyncio.wait({line, changed}, return_when=asyncio.FIRST_COMPLETED)
            if not changed.done():
                changed.cancel()
            if line.done():
                text = console.take()
                if text is None or text.strip().lower() in ("q", "quit", "exit"):
                    return None
                console.line("Waiting for the match to start (q to leave)...")


def describe_table(table: lobby_pb2.Table) -> list[str]:
    rules = GAME_RULES.get(GAME_NAMES.get(table.game, ""))
    title = rules.title if rules is not None else "?"
    lines = [f"Table {table.table_id} ({table.name}): {title}"]
    for s in table.seats:
        who = s.name or s.player_id or "(free)"
        marks = [m for m, on in (("bot", s.bot), ("ready", s.ready), ("away", s.covered)) if on]
        lines.append(f"  seat {s.seat}: {who}" + (f" [{', '.join(marks)}]" if marks else ""))
    return lines
