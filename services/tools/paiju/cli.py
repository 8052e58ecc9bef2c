"""The ``paiju`` command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence


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
    import asyncio

    from paiju.engine.bootstrap import serve
    from paiju.engine.config import Settings

    asyncio.run(serve(Settings.from_env()))
    return 0


def _lobby(args: argparse.Namespace) -> int:
    from paiju.lobby.bootstrap import serve
    from paiju.lobby.config import Settings

    asyncio.run(serve(Settings.from_env()))
    return 0


def _stack(args: argparse.Namespace) -> int:
    from paiju.dev.stack import main as run_stack

    run_stack(sys.stdout)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from paiju.engine.config import Settings as EngineSettings
    from paiju.lobby.config import Settings as LobbySettings
    from paiju.platform.settings import SIGNING_KEY, SIGNING_KEY_ID, describe
    from paiju.rules.registry import GAMES
    from paiju.terminal.matches import MATCHES

    titles = " and ".join(rules.title for rules in GAMES.values())
    parser = argparse.ArgumentParser(prog="paiju", description=f"Paiju (牌局): {titles} game backend")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "scenario", help="run one rule scenario file and print the result JSON (docs/cores.md, Scenarios)"
    )
    p.add_argument("file")
    p.add_argument("--check", action="store_true", help="compare with the file's expectations; exit 1 on mismatch")
    p.add_argument("--pretty", action="store_true", help="indent the JSON")
    p.set_defaults(func=_scenario)

    p = sub.add_parser("match", help="play a match between bots in the terminal, narrated")
    games = list(MATCHES)
    p.add_argument("game", nargs="?", choices=games, default=games[0])
    p.add_argument("--seed", type=int, default=2024)
    deals = "; ".join(f"{name}: {m.deals}, {m.deals_help}" for name, m in MATCHES.items())
    p.add_argument("--deals", type=int, help=f"deals to play ({deals})")
    p.add_argument("--bot", choices=["heuristic", "random"], default="heuristic")
    p.set_defaults(func=_match)

    p = sub.add_parser(
        "token",
        help="mint a signed bearer token with an issuer's key: operators' admin, referee and analyst tokens (the "
        "admin key), or, for development, players' and services' (the lobby's key)",
    )
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

    p = sub.add_parser(
        "stack", help="the whole stack: NATS, PostgreSQL, engine, lobby, bot runner, tables of bots (make run)"
    )
    p.set_defaults(func=_stack)

    p = sub.add_parser("engine", help="run the engine service (gRPC); configured by the environment")
    describe(p, EngineSettings)
    p.set_defaults(func=_engine)

    p = sub.add_parser("lobby", help="run the lobby service (gRPC); configured by the environment")
    describe(p, LobbySettings)
    p.set_defaults(func=_lobby)

    from paiju.botrunner.cli import add_parser as add_bots_parser
    from paiju.platform.keys_cli import add_parser as add_keys_parser
    from paiju.scoring.cli import add_parser as add_scoring_parser
    from paiju.terminal.client import add_parsers as add_client_parsers
    from paiju.tools.analyst import add_parsers as add_analyst_parsers
    from paiju.tools.ratings_cli import add_parser as add_ratings_parser
    from paiju.tools.web import add_parser as add_web_parser

    add_keys_parser(sub)
    add_bots_parser(sub)
    add_client_parsers(sub)
    add_analyst_parsers(sub)
    add_scoring_parser(sub)
    add_ratings_parser(sub)
    add_web_parser(sub)

    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except BrokenPipeError:  # e.g. `paiju match | head`
        sys.stderr.close()
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
