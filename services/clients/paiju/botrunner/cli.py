"""``paiju bots``: the bot runner process (and ``python -m paiju.botrunner``).

Wiring into the ``paiju`` command line (``paiju.cli``)::

    from paiju.botrunner.cli import add_parser as add_bots_parser
    add_bots_parser(sub)  # registers "bots" with ``func=run``; main() then calls ``args.func(args)``

This module imports nothing heavy: grpc, the codecs and the bots load when `run` starts the runner.

Options (each falls back to its environment variable, then to the default):

``--lobby ADDRESS``      the lobby's gRPC address (``PAIJU_LOBBY_ADDRESS``; 127.0.0.1:50052)
``--engine ADDRESS``     the engine's gRPC address (``PAIJU_ENGINE_ADDRESS``; 127.0.0.1:50051)
``--runner-id ID``       this runner's stable id for its leases (``PAIJU_RUNNER_ID``; ``bots-<host>-<pid>``)
``--think SECONDS``      the bots' pause before each move (``PAIJU_BOT_THINK_SECONDS``; 0.3)
``--max-seats N``        lease at most N seats (``PAIJU_BOT_MAX_SEATS``; 0 = no limit)
``--renew SECONDS``      ask the lobby for the leases at least this often (``PAIJU_BOT_RENEW_SECONDS``; 10)
``--log-level LEVEL``    (``PAIJU_LOG_LEVEL``; info)

``PAIJU_SIGNING_KEY`` and ``PAIJU_SIGNING_KEY_ID`` (required) name the runner's own key (a ``bots.<version>`` key,
which vouches for the bot runner role only): it signs the runner's token for the lobby.
SIGTERM or SIGINT stops every seat and exits 0.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LOBBY_VARIABLE = "PAIJU_LOBBY_ADDRESS"
ENGINE_VARIABLE = "PAIJU_ENGINE_ADDRESS"
RUNNER_VARIABLE = "PAIJU_RUNNER_ID"
THINK_VARIABLE = "PAIJU_BOT_THINK_SECONDS"
MAX_SEATS_VARIABLE = "PAIJU_BOT_MAX_SEATS"
RENEW_VARIABLE = "PAIJU_BOT_RENEW_SECONDS"
LOG_LEVEL_VARIABLE = "PAIJU_LOG_LEVEL"
AGENT_VARIABLE = "PAIJU_BOT_AGENT"
DEFAULT_LOBBY = "127.0.0.1:50052"
DEFAULT_ENGINE = "127.0.0.1:50051"
DEFAULT_THINK = 0.3
DEFAULT_RENEW = 10.0


def default_runner_id() -> str:
    """``bots-<host>-<pid>``, the host name made an id (``bots-web-1-example-com-4242``: no dots)."""
    host = re.sub(r"[^A-Za-z0-9_-]+", "-", socket.gethostname()).strip("-") or "host"
    return f"bots-{host}-{os.getpid()}"[:100]


@dataclass(frozen=True)
class Settings:
    """The runner's settings: command-line options, else the environment, else the defaults."""

    lobby: str = DEFAULT_LOBBY
    engine: str = DEFAULT_ENGINE
    runner_id: str = ""
    think: float = DEFAULT_THINK
    max_seats: int = 0
    renew: float = DEFAULT_RENEW
    log_level: str = "info"
    agent: str = ""
    """``MODULE:FACTORY`` of the bots to play with (empty: the heuristic bots); docs/bots.md, "At real tables"."""

    @classmethod
    def resolve(cls, args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Settings:
        values = os.environ if env is None else env

        def pick(option: Any, variable: str, default: str) -> str:
            return str(option) if option is not None else values.get(variable) or default

        return cls(
            lobby=pick(args.lobby, LOBBY_VARIABLE, DEFAULT_LOBBY),
            engine=pick(args.engine, ENGINE_VARIABLE, DEFAULT_ENGINE),
            runner_id=pick(args.runner_id, RUNNER_VARIABLE, default_runner_id()),
            think=float(pick(args.think, THINK_VARIABLE, str(DEFAULT_THINK))),
            max_seats=int(pick(args.max_seats, MAX_SEATS_VARIABLE, "0")),
            renew=float(pick(args.renew, RENEW_VARIABLE, str(DEFAULT_RENEW))),
            log_level=pick(args.log_level, LOG_LEVEL_VARIABLE, "info"),
            agent=pick(getattr(args, "agent", None), AGENT_VARIABLE, ""),
        )


def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the runner's options to ``parser`` and make `run` its function."""
    parser.add_argument("--lobby", metavar="ADDRESS", help=f"lobby gRPC address ({LOBBY_VARIABLE}; {DEFAULT_LOBBY})")
    parser.add_argument(
        "--engine", metavar="ADDRESS", help=f"engine gRPC address ({ENGINE_VARIABLE}; {DEFAULT_ENGINE})"
    )
    parser.add_argument(
        "--runner-id",
        metavar="ID",
        help=f"this runner's stable id for its leases ({RUNNER_VARIABLE}; bots-<host>-<pid>)",
    )
    parser.add_argument(
        "--think",
        type=float,
        metavar="SECONDS",
        help=f"the bots' pause before each move ({THINK_VARIABLE}; {DEFAULT_THINK})",
    )
    parser.add_argument(
        "--max-seats", type=int, metavar="N", help=f"lease at most N seats ({MAX_SEATS_VARIABLE}; 0 = no limit)"
    )
    parser.add_argument(
        "--renew",
        type=float,
        metavar="SECONDS",
        help=f"ask the lobby for the leases at least this often ({RENEW_VARIABLE}; {DEFAULT_RENEW:g})",
    )
    parser.add_argument(
        "--log-level", choices=["debug", "info", "warning", "error"], help=f"({LOG_LEVEL_VARIABLE}; info)"
    )
    parser.add_argument(
        "--agent",
        metavar="MODULE:FACTORY",
        help=f"play with your own bots ({AGENT_VARIABLE}): FACTORY(game, seed) returns an object with "
        "choose_view(view, legal); e.g. a policy trained on paiju.envs, wrapped in paiju.envs.agent.PolicyBot",
    )
    parser.set_defaults(func=run)
    return parser


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bots`` on the ``paiju`` command line's subparsers (``parser.add_subparsers()``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bots",
        help="run the bot runner: play the lobby's bot seats through the engine's gRPC API",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog=f"PAIJU_SIGNING_KEY (and PAIJU_SIGNING_KEY_ID) sign the runner's token for the lobby. Addresses also "
        f"from {LOBBY_VARIABLE}, {ENGINE_VARIABLE}.",
    )
    return configure(parser)


def run(args: argparse.Namespace) -> int:
    """Run the bot runner until SIGTERM / SIGINT; 0 on a clean stop, 2 without a usable signing key."""
    import asyncio

    from paiju.botrunner.service import serve
    from paiju.platform.tokens import signer_from_env

    try:
        signer = signer_from_env()
    except SystemExit as e:
        print(f"paiju bots: {e}", file=sys.stderr)
        return 2
    settings = Settings.resolve(args)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}", settings.runner_id):
        print(
            f"paiju bots: the runner id is an id (1 to 100 ASCII letters, digits, - or _): {settings.runner_id!r}",
            file=sys.stderr,
        )
        return 2
    agent = None
    if settings.agent:
        try:
            agent = load_agent(settings.agent)
        except ValueError as e:
            print(f"paiju bots: {e}", file=sys.stderr)
            return 2
    asyncio.run(serve(settings, signer, agent=agent))
    return 0


def load_agent(spec: str) -> Any:
    """``MODULE:FACTORY`` -> the factory (`ValueError` for a spec that names nothing callable)."""
    import importlib

    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"an agent is MODULE:FACTORY, not {spec!r}")
    try:
        factory = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"no agent factory {spec!r}: {e}") from None
    if not callable(factory):
        raise ValueError(f"{spec!r} is not callable")
    return factory


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m paiju.botrunner``: the same options as ``paiju bots``."""
    parser = configure(argparse.ArgumentParser(prog="python -m paiju.botrunner", description=__doc__))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


__all__ = ["Settings", "add_parser", "configure", "main", "run"]
