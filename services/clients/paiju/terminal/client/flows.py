"""The terminal client's flows: through the lobby (sign in, a table, seats, bots, ready, start, JoinGame, the table
watch as presence) to a `Session` with the engine, for a seat (`play`) or a spectator (`watch`). Imported only
when a command runs, so that ``paiju`` starts fast."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from paiju.terminal.client import matchmaking, queue_options
from paiju.terminal.client.console import Console
from paiju.terminal.client.engine import EngineClient, Refused
from paiju.terminal.client.lobby import (
    START_PATIENCE,
    Joined,
    LobbyClient,
    LobbyFailed,
    TablePresence,
    describe_table,
    my_seat,
    seat_names,
)
from paiju.terminal.client.render import Seats
from paiju.terminal.client.session import Session
from paiju.v1 import lobby_pb2

PLAYING = lobby_pb2.TABLE_STATUS_PLAYING


async def _game(
    engine_address: str,
    joined: Joined,
    console: Console,
    seats: Seats,
    *,
    watching: bool,
    lobby: LobbyClient | None = None,
    table_id: str | None = None,
    after: Callable[[], Awaitable[None]] | None = None,
    delay_moves: int = 0,
) -> int:
    """Play or watch the game to its end; ``after`` runs once the match is over (not when the person quit);
    ``delay_moves``: how far behind a spectator of a delayed table sees it."""
    engine = EngineClient(engine_address, joined.token, joined.game_id)
    session = Session(engine, console, seats, delay_moves=delay_moves)

    def renewed(token: str) -> None:
        engine.metadata = (("authorization", f"Bearer {token}"),)

    # tokens last 15 minutes: the session and the game token are renewed while the game goes on
    fresh = asyncio.ensure_future(lobby.keep_signed_in(table_id, renewed)) if lobby is not None else None
    try:
        code = await (session.watch() if watching else session.play())
        turn = session.feed.turn
        if code == 0 and after is not None and turn is not None and turn.snap.ended:
            await after()
        return code
    finally:
        if fresh is not None:
            fresh.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await fresh
        await session.stop()
        await engine.close()


async def play(args: argparse.Namespace, password: str | None) -> int:
    """``paiju play``: through the lobby (or straight to the engine with ``--game``/``--token``)."""
    console = Console()
    console.start()
    try:
        if args.game_id is not None:
            joined = Joined("", args.game_id, "", None, args.token)
            code = await _game(args.engine, joined, console, Seats(), watching=False)
        else:
            code = await _play_through_lobby(args, password, console)
    except (LobbyFailed, Refused) as e:
        console.line(e.message)
        code = 1
    finally:
        console.close()
    if code == 0:
        console.line("Bye.")
    return code


async def _play_through_lobby(args: argparse.Namespace, password: str | None, console: Console) -> int:
    lobby = LobbyClient(args.lobby)
    presence: TablePresence | None = None
    try:
        session = await lobby.sign_in(args.name, password, args.register)
        console.line(f"Signed in as {session.name}.")
        if queue_options.wanted(args):  # parties and the queue: the lobby seats the player and starts the match
            table = await matchmaking.matchmade(lobby, args, console)
            if table is None:
                return 0
        else:
            table = await _sit_down(lobby, args, console)
        if table is None:
            return 1
        seats = Seats(names=seat_names(table))

        def update(t: lobby_pb2.Table) -> None:
            seats.names = seat_names(t)

        presence = TablePresence(lobby, table.table_id, update)
        presence.start()
        if table.status != PLAYING:
            started = await _start(lobby, presence, table, args, console)
            if started is None:
                return 0
        joined = await _join(lobby, table.table_id)
        if joined.seat is None:
            console.line("You have no seat at this table's match; use `paiju watch` to spectate.")
            return 1
        console.line(f"Playing seat {joined.seat} of game {joined.game_id}.")

        async def ratings() -> None:  # the match is over: each person's rating change, once the lobby tells it
            from paiju.terminal.client.ratings import PATIENCE, may_be_rated, rating_report

            assert presence is not None
            over = await presence.finished(joined.game_id, PATIENCE)
            if over is not None:
                rated = await presence.rated(joined.game_id, PATIENCE) if may_be_rated(over) else over
                console.lines(rating_report(rated or over, joined.game_id, seats=seats))

        return await _game(
            args.engine, joined, console, seats, watching=False, lobby=lobby, table_id=table.table_id, after=ratings
        )
    finally:
        if presence is not None:
            await presence.stop()
        await lobby.close()


async def _sit_down(lobby: LobbyClient, args: argparse.Namespace, console: Console) -> lobby_pb2.Table | None:
    """The table with the player seated: a new table of the game, or ``--table``."""
    assert lobby.session is not None
    me = lobby.session.player_id
    if args.table is None:
        table = await lobby.create_table(args.kind, args.deals, args.tournament)
        console.line(f"Opened table {table.table_id}.")
        return await lobby.take_seat(table.table_id, args.seat if args.seat is not None else 0)
    table = await lobby.get_table(args.table)
    if my_seat(table, me) is not None:
        return table
    if table.status == PLAYING:
        console.line("The match at this table is running and you have no seat: `paiju watch TABLE` spectates it.")
        return None
    return await lobby.take_seat(table.table_id, args.seat)


def _filled(table: lobby_pb2.Table) -> bool:
    return all(s.player_id and (s.bot or s.ready) for s in table.seats)


async def _start(
    lobby: LobbyClient, presence: TablePresence, table: lobby_pb2.Table, args: argparse.Namespace, console: Console
) -> lobby_pb2.Table | None:
    """Fill free seats with bots (the owner), say ready, start the match (the owner) or wait for it."""
    assert lobby.session is not None
    owner = table.owner_id == lobby.session.player_id
    if owner and args.bots:
        for s in table.seats:
            if not s.player_id:
                table = await lobby.add_bot(table.table_id, s.seat)
    table = await lobby.ready(table.table_id)
    console.lines(describe_table(table))
    if owner:
        if not _filled(table):
            console.line("Waiting for every seat to be filled and ready (q to leave)...")
            waited = await presence.wait_for(_filled, console)
            if waited is None:
                return None
        table = await lobby.start_match(table.table_id)
        console.line("The match starts.")
        return table
    console.line("Waiting for the table's owner to start the match (q to leave)...")
    return await presence.wait_for(lambda t: t.status == PLAYING and bool(t.game_id), console)


async def _join(lobby: LobbyClient, table_id: str) -> Joined:
    """JoinGame, waiting a little while the match is being started."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_PATIENCE
    while True:
        try:
            return await lobby.join_game(table_id)
        except LobbyFailed:
            if loop.time() > deadline:
                raise
        await asyncio.sleep(0.5)


async def watch(args: argparse.Namespace, password: str | None) -> int:
    """``paiju watch``: through the lobby (or straight to the engine with ``--game``/``--token``)."""
    console = Console()
    console.start()
    try:
        if args.game_id is not None:
            joined = Joined("", args.game_id, "", None, args.token)
            return await _game(args.engine, joined, console, Seats(), watching=True)
        return await _watch_through_lobby(args, password, console)
    except (LobbyFailed, Refused) as e:
        console.line(e.message)
        return 1
    finally:
        console.close()


async def _watch_through_lobby(args: argparse.Namespace, password: str | None, console: Console) -> int:
    lobby = LobbyClient(args.lobby)
    presence: TablePresence | None = None
    try:
        await lobby.sign_in(args.name, password, args.register)
        table = await lobby.get_table(args.table)
        seats = Seats(names=seat_names(table))

        def update(t: lobby_pb2.Table) -> None:
            seats.names = seat_names(t)

        presence = TablePresence(lobby, table.table_id, update)
        presence.start()
        if not table.game_id:
            console.lines(describe_table(table))
            console.line("No match has started at this table yet: waiting (q to stop)...")
            waited = await presence.wait_for(lambda t: bool(t.game_id), console)
            if waited is None:
                return 0
        joined = await _join(lobby, table.table_id)
        # a spectator sees the game as late as the table's policy says (fixed when the table was opened); a seat
        # holder watching their own table sees it live
        delay = table.spectators.delay_moves if joined.seat is None else 0
        return await _game(
            args.engine, joined, console, seats, watching=True, lobby=lobby, table_id=table.table_id, delay_moves=delay
        )
    finally:
        if presence is not None:
            await presence.stop()
        await lobby.close()
