"""``paiju web``: the web view — the lobby's tables, any table live as a spectator sees it, an ended game replayed
move by move with every hand, tournaments' standings and result sheets — served by a small gateway over the public
gRPC API (`paiju.tools.web.gateway`). Wire the command into a command line with `add_parser`; its settings are in
`paiju.tools.web.config`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib

from paiju.platform.settings import add_options
from paiju.tools.web.config import DEFAULT_PORT, Settings

__all__ = ["DEFAULT_PORT", "add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``paiju web``."""
    p = sub.add_parser(
        "web",
        help="serve the web view: tables live, replays, tournaments (a spectator of the public API)",
        description="Serve the web view on http://HOST:PORT/: the lobby's tables, any table live as a spectator "
        "sees it, ended games replayed move by move, tournaments. It reads the public gRPC API as a guest.",
    )
    add_options(p, Settings)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import signal

    import structlog

    from paiju.platform import event_loop, tracing
    from paiju.platform.limits import RateLimits
    from paiju.platform.observability import configure_logging
    from paiju.tools.web.config import LIMITS, web_signer
    from paiju.tools.web.gateway import serve, trusted_proxies

    settings = Settings.from_env(args=args)
    configure_logging(settings.log_level)
    settings.report(structlog.get_logger("paiju.web"))
    tracing.install(tracing.Config.of(settings))  # the calls to the services traced, when configured
    limits = RateLimits(LIMITS, settings.rate_limits)
    trusted = trusted_proxies(settings.trusted_proxies)
    signer = web_signer(settings.signing_key, settings.signing_key_id)

    async def main() -> None:
        task = asyncio.create_task(
            serve(
                settings.lobby,
                settings.engine,
                settings.scoring,
                host=settings.host,
                port=settings.port,
                limits=limits,
                trusted=trusted,
                max_connections=settings.max_connections,
                header_seconds=settings.header_seconds,
                cache_bytes=settings.cache_mib << 20,
                session_key=settings.session_key,
                signer=signer,
            )
        )
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    try:
        event_loop.run(main(), settings.event_loop)
    finally:
        tracing.shutdown()  # the spans not exported yet, exported
    return 0
