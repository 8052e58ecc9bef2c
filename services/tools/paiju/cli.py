"""The ``paiju`` command line."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paiju.platform.grpc_io import choose_grpc_io

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def _scenario(args: argparse.Namespace) -> int:
    from paiju.scenario import ScenarioError, check, load, run

    try:
        doc = load(args.file)
        result = run(doc)
    except ScenarioError as e:
        print(f"paiju scenario: invalid scenario: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result, ensure_ascii=False, indent=1 if args.pretty else None))
    if args.check:
        problems = check(doc, result)
        for p in problems:
            print(f"mismatch: {p}", file=sys.stderr)
        return 1 if problems else 0
    return 0


def _match(args: argparse.Namespace) -> int:
    from paiju.terminal.matches import MATCHES

    match = MATCHES[args.game]
    match.play(args.seed, args.deals if args.deals is not None else match.deals, args.bot, sys.stdout)
    return 0


def _token(args: argparse.Namespace) -> int:
    import time

    from paiju.platform.tokens import MAX_SECONDS, Identity, Role, Signing, default_audience

    try:
        signing = Signing.from_env(args=args)
        for d in signing.deprecations:
            print(f"paiju token: warning: {d}", file=sys.stderr)
        signer = signing.signer()
        now = int(time.time())
        role = Role(args.role)
        ttl = args.ttl if args.ttl is not None else min(3600, MAX_SECONDS[role])
        if not 0 < ttl <= MAX_SECONDS[role]:
            raise ValueError(f"--ttl: a {role.value} token lives 1..{MAX_SECONDS[role]} s, not {ttl}")
        audience = tuple(args.audience or default_audience(role, args.game))
        identity = Identity(args.subject, role, args.game, args.seat, now + ttl, now, audience=audience)
        print(signer.mint(identity))
    except (SystemExit, ValueError) as e:
        print(f"paiju token: {e}", file=sys.stderr)
        return 2
    return 0


def _engine(args: argparse.Namespace) -> int:
    from paiju.engine.bootstrap import serve
    from paiju.engine.config import Settings
    from paiju.platform import event_loop

    settings = Settings.from_env()
    event_loop.run(serve(settings), settings.event_loop)
    return 0


def _lobby(args: argparse.Namespace) -> int:
    from paiju.lobby.bootstrap import serve
    from paiju.lobby.config import Settings
    from paiju.platform import event_loop

    settings = Settings.from_env()
    event_loop.run(serve(settings), settings.event_loop)
    return 0


def _stack(args: argparse.Namespace) -> int:
    from paiju.dev.stack import main as run_stack

    run_stack(sys.stdout)
    return 0


# Every command: its name, its one line of help, and where its parser is built ("module:function"; the function adds
# the command, and any other command of its module, to the subparsers it is given). Only the chosen command's module
# is imported, so `paiju --help` and a client's first line cost no service's imports (bench/startup.py). The help
# lines here are the ones the modules register: tests/cli/test_commands.py holds them equal.
COMMANDS: dict[str, tuple[str, str]] = {
    "scenario": (
        "run one rule scenario file and print the result JSON (docs/cores.md, Scenarios)",
        "paiju.cli:_add_scenario",
    ),
    "match": ("play a match between bots in the terminal, narrated", "paiju.cli:_add_match"),
    "token": (
        "mint a signed bearer token with an issuer's key: operators' admin, referee and analyst tokens (the "
        "admin key), or, for development, players' and services' (the lobby's key)",
        "paiju.cli:_add_token",
    ),
    "stack": (
        "the whole stack: NATS, PostgreSQL, engine, lobby, bot runner, tables of bots (make run)",
        "paiju.cli:_add_stack",
    ),
    "engine": ("run the engine service (gRPC); configured by the environment", "paiju.cli:_add_engine"),
    "lobby": ("run the lobby service (gRPC); configured by the environment", "paiju.cli:_add_lobby"),
    "keys": (
        "token keys: a new private key, the JWKS of public keys services trust",
        "paiju.platform.keys_cli:add_parser",
    ),
    "bots": (
        "run the bot runner: play the lobby's bot seats through the engine's gRPC API",
        "paiju.botrunner.cli:add_parser",
    ),
    "play": (
        "play 砸六家 or 拖拉机 in the terminal against bots or people (through the lobby and the engine)",
        "paiju.terminal.client:add_parsers",
    ),
    "watch": (
        "spectate a table's match in the terminal, narrated as it happens",
        "paiju.terminal.client:add_parsers",
    ),
    "replay": (
        "tell a game from its event stream, deal by deal, for a person",
        "paiju.tools.analyst:add_parsers",
    ),
    "verify": (
        "check that every deal of games is the shuffle the engine committed to (docs/fairness.md)",
        "paiju.tools.analyst:add_parsers",
    ),
    "export": (
        "write the deals, plays and events of games as JSON Lines, CSV or Parquet (deals.*, plays.*, events.*)",
        "paiju.tools.analyst:add_parsers",
    ),
    "scoring": (
        "run the scoring service (gRPC; configured by the environment), or `paiju scoring rebuild`",
        "paiju.scoring.cli:add_parser",
    ),
    "ratings": (
        "players' ratings: a leaderboard, a player's rating and rated matches, a head-to-head (RatingsService)",
        "paiju.tools.ratings_cli:add_parser",
    ),
    "web": (
        "serve the web view: tables live, replays, tournaments (a spectator of the public API)",
        "paiju.tools.web:add_parser",
    ),
}


def _add_scenario(sub: Subparsers) -> None:
    p = sub.add_parser("scenario", help=COMMANDS["scenario"][0])
    p.add_argument("file")
    p.add_argument("--check", action="store_true", help="compare with the file's expectations; exit 1 on mismatch")
    p.add_argument("--pretty", action="store_true", help="indent the JSON")
    p.set_defaults(func=_scenario)


def _add_match(sub: Subparsers) -> None:
    from paiju.terminal.matches import MATCHES

    p = sub.add_parser("match", help=COMMANDS["match"][0])
    games = list(MATCHES)
    p.add_argument("game", nargs="?", choices=games, default=games[0])
    p.add_argument("--seed", type=int, default=2024)
    deals = "; ".join(f"{name}: {m.deals}, {m.deals_help}" for name, m in MATCHES.items())
    p.add_argument("--deals", type=int, help=f"deals to play ({deals})")
    p.add_argument("--bot", choices=["heuristic", "random"], default="heuristic")
    p.set_defaults(func=_match)


def _add_token(sub: Subparsers) -> None:
    from paiju.platform.settings import SIGNING_KEY, SIGNING_KEY_ID

    p = sub.add_parser("token", help=COMMANDS["token"][0])
    p.add_argument("subject", help="who the token is for (a player id, an operator's name)")
    p.add_argument(
        "--role",
        choices=["player", "spectator", "analyst", "referee", "service", "admin", "bot_runner"],
        default="admin",
    )
    p.add_argument("--game")
    p.add_argument("--seat", type=int)
    p.add_argument(
        "--ttl",
        type=int,
        help="seconds until it expires (default an hour, or less when the role's tokens live less): at most 12 h for "
        "operators, 15 min for players and spectators, 5 min for services and bot runners",
    )
    p.add_argument(
        "--audience",
        action="append",
        choices=["engine", "lobby", "scoring"],
        help="a service the token is for (repeat for several; default: every service for an operator, the lobby and "
        "scoring for a session, the engine for a game token or a service's, the lobby for a bot runner's)",
    )
    p.add_argument("--key", help=f"the issuer's private key, a PEM file ({SIGNING_KEY.name})")
    p.add_argument("--key-id", help=f"its id, <issuer>.<version>, e.g. admin.1 ({SIGNING_KEY_ID.name})")
    p.set_defaults(func=_token)


def _add_stack(sub: Subparsers) -> None:
    p = sub.add_parser("stack", help=COMMANDS["stack"][0])
    p.set_defaults(func=_stack)


def _add_engine(sub: Subparsers) -> None:
    from paiju.engine.config import Settings
    from paiju.platform.settings import describe

    p = sub.add_parser("engine", help=COMMANDS["engine"][0])
    describe(p, Settings)
    p.set_defaults(func=_engine)


def _add_lobby(sub: Subparsers) -> None:
    from paiju.lobby.config import Settings
    from paiju.platform.settings import describe

    p = sub.add_parser("lobby", help=COMMANDS["lobby"][0])
    describe(p, Settings)
    p.set_defaults(func=_lobby)


def register(sub: Subparsers, command: str) -> None:
    """Add ``command`` (with the other commands its module builds) to ``sub``, importing only that module."""
    module, _, function = COMMANDS[command][1].partition(":")
    getattr(importlib.import_module(module), function)(sub)


def _parser() -> tuple[argparse.ArgumentParser, Subparsers]:
    from paiju.rules.registry import GAMES

    titles = " and ".join(rules.title for rules in GAMES.values())
    parser = argparse.ArgumentParser(prog="paiju", description=f"Paiju (牌局): {titles} game backend")
    return parser, parser.add_subparsers(dest="command", required=True)


def parser_for(command: str | None) -> argparse.ArgumentParser:
    """The command line's parser: with ``command`` (a name of `COMMANDS`) that command's whole parser; without, a
    parser that lists every command with its help and builds none of them."""
    parser, sub = _parser()
    if command in COMMANDS:
        register(sub, command)
    else:
        for name, (text, _) in COMMANDS.items():
            sub.add_parser(name, help=text)
    return parser


def complete_parser() -> argparse.ArgumentParser:
    """The parser with every command built (importing every command's module): for tools that read the whole
    command line, such as the documents' checks."""
    parser, sub = _parser()
    for name in COMMANDS:
        if name not in sub.choices:
            register(sub, name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    choose_grpc_io()  # before any command imports grpc: gRPC reads its I/O path once, when it loads
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in arguments[:1] if a in COMMANDS), None)
    args = parser_for(command).parse_args(arguments)
    try:
        code: int = args.func(args)
    except BrokenPipeError:  # e.g. `paiju match | head`
        sys.stderr.close()
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
