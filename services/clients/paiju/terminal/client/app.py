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
import os
import sys
from dataclasses import dataclass
from typing import Any

from paiju.platform import settings as s
from paiju.rules.registry import GAMES
from paiju.terminal.client import queue_options

LOBBY_VARIABLE = s.LOBBY_ADDRESS.name
ENGINE_VARIABLE = s.ENGINE_ADDRESS.name
PASSWORD_VARIABLE = "PAIJU_PASSWORD"
PASSWORD_FILE_VARIABLE = "PAIJU_PASSWORD_FILE"
"""A file holding the password (one line): a secret kept out of the environment, as every secret of Paiju's is."""
DEFAULT_LOBBY = s.LOBBY_ADDRESS.default
DEFAULT_ENGINE = s.ENGINE_ADDRESS.default


@dataclass(frozen=True)
class Addresses(s.Settings):
    """Where the client finds the services when ``--lobby`` and ``--engine`` do not say: the services' own settings."""

    lobby: str = s.LOBBY_ADDRESS.field()
    engine: str = s.ENGINE_ADDRESS.field()
    scoring: str = s.SCORING_ADDRESS.field()


def _common(p: argparse.ArgumentParser) -> None:
    found = Addresses.from_env()
    p.add_argument(
        "--lobby",
        default=found.lobby,
        help=f"the lobby's gRPC address (env {LOBBY_VARIABLE}, default {DEFAULT_LOBBY})",
    )
    p.add_argument(
        "--engine",
        default=found.engine,
        help=f"the engine's gRPC address (env {ENGINE_VARIABLE}, default {DEFAULT_ENGINE})",
    )
    p.add_argument(
        "--scoring",
        default=found.scoring,
        help=f"scoring's gRPC address, for the ratings after a rated match (env {s.SCORING_ADDRESS.name}, default "
        f"{s.SCORING_ADDRESS.default})",
    )
    p.add_argument("--name", help="sign in with this account name (default: play as a guest)")
    p.add_argument(
        "--password",
        help=f"the account's password (else the file named by env {PASSWORD_FILE_VARIABLE}, else env "
        f"{PASSWORD_VARIABLE}, else asked)",
    )
    p.add_argument("--register", action="store_true", help="create the account --name first")
    p.add_argument("--game", dest="game_id", metavar="GAME_ID", help="development: skip the lobby, use this game")
    p.add_argument("--token", help="development: the engine token for --game (see `paiju token`)")


def add_parsers(subparsers: Any) -> None:
    """Add the ``play`` and ``watch`` commands to an argparse sub-parser collection."""
    p = subparsers.add_parser(
        "play",
        help=f"play {' or '.join(rules.title for rules in GAMES.values())} in the terminal against bots or people "
        "(through the lobby and the engine)",
        description=(
            "Open a table (or join --table), fill free seats with bots, start the match and play your seat. "
            "Answer each prompt with an option number or the cards themselves (e.g. 3S 3H, 10D); q quits."
        ),
    )
    games = list(GAMES)
    p.add_argument("kind", nargs="?", choices=games, default=games[0], help=f"the game (default {games[0]})")
    _common(p)
    p.add_argument("--table", help="join this table instead of opening a new one")
    p.add_argument("--seat", type=int, help="the seat to take (default: 0 at a new table, any free seat otherwise)")
    p.add_argument("--deals", type=int, help="砸六家: deals in the match (default: the rules' 6)")
    p.add_argument("--tournament", action="store_true", help="open the table with the tournament preset (timers)")
    p.add_argument(
        "--no-bots", dest="bots", action="store_false", help="leave free seats for people (start when all are ready)"
    )
    queue_options.add_arguments(p)
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
    if path := os.environ.get(PASSWORD_FILE_VARIABLE):
        try:
            with open(path, encoding="utf-8") as file:
                return file.read().removesuffix("\n").removesuffix("\r")
        except (OSError, UnicodeError) as e:
            raise SystemExit(f"{PASSWORD_FILE_VARIABLE}: cannot read {path}: {e}") from None
    if os.environ.get(PASSWORD_VARIABLE):
        return os.environ[PASSWORD_VARIABLE]
    import getpass

    return getpass.getpass(f"Password for {args.name}: ")


def run_play(args: argparse.Namespace) -> int:
    """``paiju play``: the exit code (0 after the match or when the player quits)."""
    if args.game_id is not None and args.token is None:
        print("paiju play: --game needs --token (development mode)", file=sys.stderr)
        return 2
    password = _password(args) if args.game_id is None else None
    from paiju.terminal.client.flows import play

    return _run(play(args, password))


def run_watch(args: argparse.Namespace) -> int:
    """``paiju watch``: the exit code (0 when the match ended or the spectator stopped)."""
    if args.game_id is None and args.table is None:
        print("paiju watch: name a TABLE (or --game and --token for development)", file=sys.stderr)
        return 2
    if args.game_id is not None and args.token is None:
        print("paiju watch: --game needs --token (development mode)", file=sys.stderr)
        return 2
    password = _password(args) if args.game_id is None else None
    # said before the client's imports (gRPC, the contract, the rules) and the game's history are loaded
    if args.game_id is None:
        print(f"Watching table {args.table} (the lobby at {args.lobby}, the engine at {args.engine})...", flush=True)
    else:
        print(f"Watching game {args.game_id} (the engine at {args.engine})...", flush=True)
    from paiju.terminal.client.flows import watch

    return _run(watch(args, password))


def _run(work: Any) -> int:
    import asyncio  # not before the command runs: `paiju watch` says what it does first

    try:
        code: int = asyncio.run(work)
    except KeyboardInterrupt:
        print("\nBye.", flush=True)
        return 130
    return code


def main(argv: list[str] | None = None) -> int:
    """``python -m paiju.terminal.client play|watch ...`` (the same commands as ``paiju play|watch``)."""
    parser = argparse.ArgumentParser(prog="paiju", description="Paiju terminal client")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code
