"""Builds the engine's parts from its settings and runs the gRPC server until SIGTERM (design.md, Principle 4)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from datetime import UTC, datetime

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from paiju.engine.auth import secret_from_env, shuffle_seed
from paiju.engine.config import Settings
from paiju.engine.games import Games
from paiju.engine.matches import run_in_background
from paiju.engine.observability import configure_logging
from paiju.engine.service import EngineService
from paiju.engine.store.jetstream import JetStreamEventStore
from paiju.engine.timers import expire_turns
from paiju.v1 import engine_pb2, engine_pb2_grpc

SERVICE_NAME = engine_pb2.DESCRIPTOR.services_by_name["EngineService"].full_name
GRACE_SECONDS = 10.0


async def run_timers(games: Games, secret: bytes, every: float, stopping: asyncio.Event) -> None:
    """Expire running turns every ``every`` seconds until the engine stops (see `paiju.engine.timers`)."""
    log = structlog.get_logger("paiju.engine.timers")
    while not stopping.is_set():
        try:
            await expire_turns(games, datetime.now(UTC), lambda g, v: shuffle_seed(secret, g, v))
        except Exception:  # a failing scan must not stop the timers; it is logged and retried
            log.exception("turn timer scan failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), timeout=every)


async def serve(settings: Settings, stop: asyncio.Event | None = None, ready: asyncio.Event | None = None) -> None:
    """Run the engine until ``stop`` is set or the process gets SIGTERM / SIGINT; then drain and close."""
    configure_logging(settings.log_level)
    log = structlog.get_logger("paiju.engine")
    secret = secret_from_env()
    store = await JetStreamEventStore.connect(
        settings.nats_url, stream=settings.stream, prefix=settings.prefix, replicas=settings.replicas
    )
    lobby = await JetStreamEventStore.connect(
        settings.nats_url, stream=settings.lobby_stream, prefix=settings.lobby_prefix, replicas=settings.replicas
    )
    server = grpc.aio.server()
    games = Games(store)
    await games.follow()  # every replica's appends keep this replica's cached games current
    service = EngineService(games, secret)
    engine_pb2_grpc.add_EngineServiceServicer_to_server(service, server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    port = server.add_insecure_port(settings.address)
    await server.start()
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    if settings.metrics_port:
        start_http_server(settings.metrics_port)
    log.info("engine started", address=settings.address, port=port, nats=settings.nats_url, stream=settings.stream)
    stopping = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    timers = asyncio.create_task(run_timers(games, secret, settings.timer_seconds, stopping))
    matches = await run_in_background(lobby.client, service, settings.lobby_stream, settings.lobby_prefix, stopping)
    if ready is not None:
        ready.set()
    await stopping.wait()
    await timers
    await matches
    log.info("engine stopping: no new calls, draining the ones in flight", grace_seconds=GRACE_SECONDS)
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    await server.stop(GRACE_SECONDS)
    await lobby.close()
    await store.close()
    log.info("engine stopped")
