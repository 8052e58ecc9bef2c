"""``paiju bots``: the bot runner process (and ``python -m paiju.botrunner``).

Wiring into the ``paiju`` command line (``paiju.cli``)::

    from paiju.botrunner.cli import add_parser as add_bots_parser
    add_bots_parser(sub)  # registers "bots" with ``func=run``; main() then calls ``args.func(args)``

This module imports nothing heavy: grpc, the codecs and the bots load when `run` starts the runner.

Each setting comes from its option, else its environment variable, else its default (`Settings`; ``paiju bots
--help`` lists them). The runner's own key (a ``bots.<version>`` key, which vouches for the bot runner role only) is
named by ``PAIJU_SIGNING_KEY_FILE`` and ``PAIJU_SIGNING_KEY_ID`` (required): it signs the runner's token for the
lobby. SIGTERM or SIGINT stops every seat and exits 0.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from paiju.platform import settings as s
from paiju.platform.settings import Setting, SettingsError, add_options

DEFAULT_LOBBY = s.LOBBY_ADDRESS.default
DEFAULT_ENGINE = s.ENGINE_ADDRESS.default
DEFAULT_THINK = 0.3
DEFAULT_RENEW = 10.0


def default_runner_id() -> str:
    """``bots-<host>-<pid>``, the host name made an id (``bots-web-1-example-com-4242``: no dots)."""
    host = re.sub(r"[^A-Za-z0-9_-]+", "-", socket.gethostname()).strip("-") or "host"
    return f"bots-{host}-{os.getpid()}"[:100]


RUNNER_ID = Setting(
    "PAIJU_BOT_RUNNER_ID",
    "",
    "this runner's name on its leases: unique per replica",
    deprecated=("PAIJU_RUNNER_ID",),
    option="--runner-id",
    metavar="ID",
    shown_default="bots-<host>-<pid>",
    default_factory=default_runner_id,
)
THINK = Setting(
    "PAIJU_BOT_THINK_SECONDS",
    DEFAULT_THINK,
    "the bots' pause before each move, in seconds",
    option="--think",
    metavar="SECONDS",
)
MAX_SEATS = Setting(
    "PAIJU_BOT_MAX_SEATS", 0, "lease at most this many seats (0: no limit)", option="--max-seats", metavar="N"
)
RENEW = Setting(
    "PAIJU_BOT_RENEW_SECONDS",
    DEFAULT_RENEW,
    "how often the leases are renewed at least, in seconds (a lease lasts 30 s)",
    option="--renew",
    metavar="SECONDS",
)
AGENT = Setting(
    "PAIJU_BOT_AGENT",
    "",
    "play with your own bots: `MODULE:FACTORY`, where `FACTORY(game, seed)` returns an object with "
    "`choose_view(view, legal)`, e.g. a policy trained on `paiju.envs` wrapped in `paiju.envs.agent.PolicyBot` "
    '(docs/bots.md, "At real tables"; default: the heuristic bots)',
    option="--agent",
    metavar="MODULE:FACTORY",
)


@dataclass(frozen=True)
class Settings(s.Settings):
    """The runner's settings: command-line options, else the environment, else the defaults."""

    lobby: str = s.LOBBY_ADDRESS.but(help="the lobby", option="--lobby", metavar="ADDRESS").field()
    engine: str = s.ENGINE_ADDRESS.but(help="the engine", option="--engine", metavar="ADDRESS").field()
    runner_id: str = RUNNER_ID.field()
    think: float = THINK.field()
    max_seats: int = MAX_SEATS.field()
    renew: float = RENEW.field()
    log_level: str = s.LOG_LEVEL.but(option="--log-level", metavar="LEVEL").field()
    event_loop: str = s.EVENT_LOOP.field()
    agent: str = AGENT.field()
    signing_key: str = s.SIGNING_KEY.but(
        help="the bot runners' private key (PEM file): signs the runner's own token"
    ).field()
    signing_key_id: str = s.SIGNING_KEY_ID.but(help="its key id, `bots.<version>`").field()
    otel_service_name: str = s.OTEL_SERVICE_NAME.but(default="paiju-bots").field()
    otel_traces_exporter: str = s.OTEL_TRACES_EXPORTER.field()
    otel_exporter_otlp_endpoint: str = s.OTEL_EXPORTER_OTLP_ENDPOINT.field()
    otel_traces_sampler: str = s.OTEL_TRACES_SAMPLER.field()
    otel_traces_sampler_arg: float = s.OTEL_TRACES_SAMPLER_ARG.field()
    otel_bsp_schedule_delay: int = s.OTEL_BSP_SCHEDULE_DELAY.field()
    otel_sdk_disabled: bool = s.OTEL_SDK_DISABLED.field()

    @classmethod
    def resolve(cls, args: argparse.Namespace, env: dict[str, str] | None = None) -> Settings:
        """The settings of a parsed command line (`configure`'s options) and the environment."""
        return cls.from_env(env, args=args)


def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the runner's options to ``parser`` (and its settings to its help) and make `run` its function."""
    add_options(parser, Settings)
    parser.set_defaults(func=run)
    return parser


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bots`` on the ``paiju`` command line's subparsers (``parser.add_subparsers()``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bots",
        help="run the bot runner: play the lobby's bot seats through the engine's gRPC API",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    return configure(parser)


def run(args: argparse.Namespace) -> int:
    """Run the bot runner until SIGTERM / SIGINT; 0 on a clean stop, 2 without a usable signing key."""
    from paiju.botrunner.service import serve
    from paiju.platform import event_loop
    from paiju.platform.tokens import signer_of

    try:
        settings = Settings.from_env(args=args)
        signer = signer_of(settings.signing_key, settings.signing_key_id)
    except SettingsError as e:
        print(f"paiju bots: {e}", file=sys.stderr)
        return 2
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
    event_loop.run(serve(settings, signer, agent=agent), settings.event_loop)
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
