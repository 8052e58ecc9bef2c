"""``paiju play`` and ``paiju watch``: the terminal client's commands, over the public gRPC API only.

``play``: sign in (a guest by default), open a table of the game (or join ``--table``), sit down, fill the
other seats with bots, say ready, start the match, get the seat's engine token (JoinGame), then play in the
terminal while the table's WatchTable stream stays open (the player's presence).
``watch TABLE``: spectate a table's match with a spectator token, narrating its public events until it ends.

For development, ``--game GAME_ID --token TOKEN`` skips the lobby and talks to the engine directly with a
token minted by ``paiju token`` (the end-to-end tests use this).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from typing import Any

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

LOBBY_VARIABLE = "PAIJU_LOBBY_ADDRESS"
ENGINE_VARIABLE = "PAIJU_ENGINE_ADDRESS"
PASSWORD_VARIABLE = "PAIJU_PASSWORD"
DEFAULT_LOBBY = "127.0.0.1:50052"
DEFAULT_ENGINE = "127.0.0.1:50051"
PLAYING = lobby_pb2.TABLE_STATUS_PLAYING


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lobby",
        default=os.environ.get(LOBBY_VARIABLE, DEFAULT_LOBBY),
        help=f"the lobby's gRPC address (env {LOBBY_VARIABLE}, default {DEFAULT_LOBBY})",
    )
    p.add_argument(
        "--engine",
        default=os.environ.get(ENGINE_VARIABLE, DEFAULT_ENGINE),
        help=f"the engine's gRPC address (env {ENGINE_VARIABLE}, default {DEFAULT_ENGINE})",
    )
    p.add_argument("--name", help="sign in with this account name (default: play as a guest)")
    p.add_argument("--password", help=f"the account's password (else env {PASSWORD_VARIABLE}, else asked)")
    p.add_argument("--register", action="store_true", help="create the account --name first")
    p.add_argument("--game", dest="game_id", metavar="GAME_ID", help="development: skip the lobby, use this game")
    p.add_argument("--token", help="development: the engine token for --game (see `paiju token`)")


def add_parsers(subparsers: Any) -> None:
    """Add the ``play`` and ``watch`` commands to an argparse sub-parser collection."""
    p = subparsers.add_parser(
        "play",
        help="play 砸六家 or 拖拉机 in the terminal against bots or people (through the lobby and the engine)",
        description=(
            "Open a table (or join --table), fill free seats with bots, start the match and play your seat. "
            "Answer each prompt with an option number or the cards themselves (e.g. 3S 3H, 10D); q quits."
        ),
    )
    p.add_argument("kind", nargs="?", choices=["zlj", "tractor"], default="zlj", help="the game (default zlj)")
    _common(p)
    p.add_argument("--table", help="join this table instead of opening a new one")
    p.add_argument("--seat", type=int, help="the seat to take (default: 0 at a new table, any free seat otherwise)")
    p.add_argument("--deals", type=int, help="砸六家: deals in the match (default: the rules' 6)")
    p.add_argument("--tournament", action="store_true", help="open the table with the tournament preset (timers)")
    p.add_argument(
        "--no-bots", dest="bots", action="store_false", help="leave free seats for people (start when all are ready)"
    )
    p.set_defaults(func=run_play)

    p = subparsers.add_parser(
        "watch",
        help="spectate a table's match in the terminal, narrated as it happens",
        description="Follow a table's match with a spectator's view (public information only) until it ends.",
    )
    p.add_argument("table", nargs="?", help="the table to watch (not needed with --game/--token)")
    _common(p)
    p.set_defaults(func=run_watch)


def _password(args: argparse.Namespace) -> str | None:
    if args.name is None:
        return None
    if args.password is not None:
        return str(args.password)
    if os.environ.get(PASSWORD_VARIABLE):
        return os.environ[PASSWORD_VARIABLE]
    return getpass.getpass(f"Password for {args.name}: ")


def run_play(args: argparse.Namespace) -> int:
    """``paiju play``: the exit code (0 after the match or when the player quits)."""
    if args.game_id is not None and args.token is None:
        print("paiju play: --game needs --token (development mode)", file=sys.stderr)
        return 2
    password = _password(args) if args.game_id is None else None
    return _run(_play(args, password))


def run_watch(args: argparse.Namespace) -> int:
    """``paiju watch``: the exit code (0 when the match ended or the spectator stopped)."""
    if args.game_id is None and args.table is None:
        print("paiju watch: name a TABLE (or --game and --token for development)", file=sys.stderr)
        return 2
    if args.game_id is not None and args.token is None:
        print("paiju watch: --game needs --token (development mode)", file=sys.stderr)
        return 2
    password = _password(args) if args.game_id is None else None
    return _run(_watch(args, password))


def _run(work: Any) -> int:
    try:
        code: int = asyncio.run(work)
    except KeyboardInterrupt:
        print("\nBye.", flush=True)
        return 130
    return code


async def _game(engine_address: str, joined: Joined, console: Console, seats: Seats, *, watching: bool) -> int:
    engine = EngineClient(engine_address, joined.token, joined.game_id)
    session = Session(engine, console, seats)
    try:
        return await (session.watch() if watching else session.play())
    finally:
        await session.stop()
        await engine.close()


async def _play(args: argparse.Namespace, password: str | None) -> int:
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
        return await _game(args.engine, joined, console, seats, watching=False)
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


async def _watch(args: argparse.Namespace, password: str | None) -> int:
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
        return await _game(args.engine, joined, console, seats, watching=True)
    finally:
        if presence is not None:
            await presence.stop()
        await lobby.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m paiju.terminal.client play|watch ...`` (the same commands as ``paiju play|watch``)."""
    parser = argparse.ArgumentParser(prog="paiju", description="Paiju terminal client")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code
