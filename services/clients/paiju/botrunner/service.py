"""Builds the bot runner's parts from its settings and runs it until SIGTERM / SIGINT (docs/architecture.md,
Principle 4)."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import structlog

from paiju.botrunner.cli import Settings
from paiju.botrunner.leases import LobbySeatSource, SeatSource
from paiju.botrunner.runner import BotRunner
from paiju.platform import tracing
from paiju.platform.channels import channel
from paiju.platform.observability import configure_logging
from paiju.platform.tokens import Signer
from paiju.v1 import engine_pb2_grpc


async def serve(
    settings: Settings,
    signer: Signer | None,
    *,
    stop: asyncio.Event | None = None,
    source: SeatSource | None = None,
    agent: Any = None,
) -> BotRunner:
    """Play the seats the lobby leases (or ``source``'s) until ``stop`` is set or SIGTERM / SIGINT; then stop
    every seat, close the channels and return the runner (its statistics). ``agent``: makes each seat's bot from the
    game's name and a seed (``--agent``; default: the heuristic bots)."""
    configure_logging(settings.log_level)
    log = structlog.get_logger("paiju.botrunner")
    settings.report(log)
    traced = tracing.install(tracing.Config.of(settings))  # off unless an OTLP exporter is configured
    stopping = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    engine_channel = channel(settings.engine)
    lobby_channel = None
    if source is None:
        if signer is None:
            raise ValueError("leasing seats from the lobby needs the runner's signing key")
        source, lobby_channel = LobbySeatSource.connect(
            settings.lobby, settings.runner_id, signer, max_seats=settings.max_seats
        )
    runner = BotRunner(
        source,
        engine_pb2_grpc.EngineServiceStub(engine_channel),
        runner_id=settings.runner_id,
        think=settings.think,
        renew_every=settings.renew,
        agent=agent,
    )
    log.info(
        "bot runner starting",
        runner=settings.runner_id,
        lobby=settings.lobby,
        engine=settings.engine,
        think=settings.think,
        max_seats=settings.max_seats,
    )
    try:
        await runner.run(stopping)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await engine_channel.close()
        if lobby_channel is not None:
            await lobby_channel.close()
        if traced:
            tracing.shutdown()  # the spans not exported yet, exported
    return runner
