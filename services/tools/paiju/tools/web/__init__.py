"""``paiju web``: the web view — the lobby's tables, any table live as a spectator sees it, an ended game replayed
move by move with every hand, tournaments' standings and result sheets — served by a small gateway over the public
gRPC API (`paiju.tools.web.gateway`). Wire the command into a command line with `add_parser`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os

WEB_PORT_VARIABLE = "PAIJU_WEB_PORT"
DEFAULT_PORT = 8080
ADDRESSES = (
    ("lobby", "PAIJU_LOBBY_ADDRESS", "127.0.0.1:50052"),
    ("engine", "PAIJU_ENGINE_ADDRESS", "127.0.0.1:50051"),
    ("scoring", "PAIJU_SCORING_ADDRESS", "127.0.0.1:50053"),
)


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``paiju web``."""
    p = sub.add_parser(
        "web",
        help="serve the web view: tables live, replays, tournaments (a spectator of the public API)",
        description="Serve the web view on http://HOST:PORT/: the lobby's tables, any table live as a spectator "
        "sees it, ended games replayed move by move, tournaments. It reads the public gRPC API as a guest.",
    )
    for name, variable, default in ADDRESSES:
        p.add_argument(
            f"--{name}",
            default=os.environ.get(variable, default),
            help=f"the {name}'s gRPC address (env {variable}, default {default})",
        )
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get(WEB_PORT_VARIABLE, DEFAULT_PORT)),
        help=f"the port to listen on (env {WEB_PORT_VARIABLE}, default {DEFAULT_PORT})",
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from paiju.platform.limits import RateLimits
    from paiju.platform.observability import configure_logging
    from paiju.tools.web.gateway import LIMITS, LIMITS_VARIABLE, TRUSTED_PROXIES_VARIABLE, serve, trusted_proxies

    configure_logging(os.environ.get("PAIJU_LOG_LEVEL", "info"))
    limits = RateLimits(LIMITS, os.environ.get(LIMITS_VARIABLE))
    trusted = trusted_proxies(os.environ.get(TRUSTED_PROXIES_VARIABLE, ""))
    import signal

    async def main() -> None:
        task = asyncio.create_task(
            serve(args.lobby, args.engine, args.scoring, host=args.host, port=args.port, limits=limits, trusted=trusted)
        )
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
    return 0
