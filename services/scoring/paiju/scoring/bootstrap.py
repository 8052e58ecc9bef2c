"""Builds the scoring service's parts from its settings: runs the gRPC server and the projections until SIGTERM,
or rebuilds the read models (`paiju scoring rebuild`)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import structlog

from paiju.platform.health import Dependencies
from paiju.platform.limits import RateLimits
from paiju.platform.observability import configure_logging
from paiju.platform.postgres import close as close_pool
from paiju.platform.postgres import connect
from paiju.platform.repository import Aggregates
from paiju.platform.serving import GRACE_SECONDS, serve_grpc, stop_on_signals
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import trust_from_env
from paiju.platform.workqueue import in_background
from paiju.scoring import results
from paiju.scoring import tournament as tm
from paiju.scoring.config import Settings
from paiju.scoring.projector import Projector
from paiju.scoring.readmodels import GamesProjection, TournamentsProjection, migrate_scoring
from paiju.scoring.service import RATE_LIMITS, ScoringService, new_tournaments
from paiju.v1 import scoring_pb2, scoring_pb2_grpc

SERVICE_NAME = scoring_pb2.DESCRIPTOR.services_by_name["ScoringService"].full_name


@dataclass
class Parts:
    pool: asyncpg.Pool[Any]
    tournaments_store: JetStreamEventStore
    games_store: JetStreamEventStore
    lobby_store: JetStreamEventStore
    tournaments: Aggregates[tm.Tournament]
    projectors: list[Projector]


@asynccontextmanager
async def parts(settings: Settings) -> AsyncIterator[Parts]:
    if not settings.database_url:
        raise SystemExit("DATABASE_URL must name scoring's PostgreSQL database")
    tournaments_store = await JetStreamEventStore.connect(
        settings.nats_url, stream=settings.stream, prefix=settings.prefix, replicas=settings.replicas
    )
    games_store = await JetStreamEventStore.connect(
        settings.nats_url, stream=settings.games_stream, prefix=settings.games_prefix, replicas=settings.replicas
    )
    lobby_store = await JetStreamEventStore.connect(
        settings.nats_url, stream=settings.lobby_stream, prefix=settings.lobby_prefix, replicas=settings.replicas
    )
    pool = await connect(settings.database_url, application_name="paiju-scoring")
    try:
        await migrate_scoring(pool)
        projectors = [
            Projector(
                pool,
                games_store.client,
                GamesProjection(settings.games_stream, settings.games_prefix),
                batch=settings.batch,
            ),
            Projector(pool, tournaments_store.client, TournamentsProjection(tournaments_store), batch=settings.batch),
        ]
        yield Parts(
            pool,
            tournaments_store,
            games_store,
            lobby_store,
            new_tournaments(tournaments_store),
            projectors,
        )
        for projector in projectors:
            await projector.close()
    finally:
        await close_pool(pool)
        await asyncio.gather(*(store.close() for store in (lobby_store, games_store, tournaments_store)))


async def serve(settings: Settings, stop: asyncio.Event | None = None, ready: asyncio.Event | None = None) -> None:
    """Run scoring until ``stop`` is set or the process gets SIGTERM / SIGINT; then drain and close."""
    configure_logging(settings.log_level)
    log = structlog.get_logger("paiju.scoring")
    trust = trust_from_env()
    async with parts(settings) as p:
        await p.tournaments.follow()
        service = ScoringService(p.tournaments, p.pool, trust, limits=RateLimits.from_env(RATE_LIMITS, os.environ))
        dependencies = Dependencies()
        for store in (p.tournaments_store, p.games_store, p.lobby_store):
            dependencies.add_nats(f"nats:{store.stream}", store.client)
        dependencies.add_postgres("postgresql", p.pool)
        serving = await serve_grpc(
            settings.address,
            SERVICE_NAME,
            lambda server: scoring_pb2_grpc.add_ScoringServiceServicer_to_server(service, server),
            settings.metrics_port,
            service.policy,
            dependencies=dependencies,
        )
        stopping = stop_on_signals(stop)
        workers = [asyncio.create_task(projector.run(stopping)) for projector in p.projectors]
        workers.append(
            in_background(
                p.lobby_store.client,
                settings.lobby_stream,
                f"{settings.lobby_prefix}.*",
                results.CONSUMER,
                results.handler(p.tournaments, lambda: int(time.time() * 1000)),
                stop=stopping,
            )
        )
        log.info("scoring started", address=settings.address, port=serving.port, nats=settings.nats_url)
        if ready is not None:
            ready.set()
        await stopping.wait()
        log.info("scoring stopping: no new calls, draining the ones in flight", grace_seconds=GRACE_SECONDS)
        await serving.drain(GRACE_SECONDS)
        for worker in workers:
            await worker
    log.info("scoring stopped")


async def rebuild(settings: Settings, timeout: float = 3600.0) -> dict[str, float]:
    """Empty every read model and replay the streams into them; per projection, events applied and seconds."""
    configure_logging(settings.log_level)
    figures: dict[str, float] = {}
    async with parts(settings) as p:
        for projector in p.projectors:
            started = time.perf_counter()
            await projector.reset()
            applied = await projector.catch_up(timeout=timeout)
            figures[f"{projector.projection.name}_events"] = applied
            figures[f"{projector.projection.name}_seconds"] = round(time.perf_counter() - started, 3)
    return figures
