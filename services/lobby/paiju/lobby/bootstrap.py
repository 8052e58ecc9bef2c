"""Builds the lobby's parts from its settings and runs the gRPC server until SIGTERM (docs/architecture.md,
Principle 4)."""

from __future__ import annotations

import asyncio
import os

import structlog

from paiju.lobby import tournaments as tournament_tables
from paiju.lobby.config import Settings
from paiju.lobby.readmodel import TableReadModel, migrate_lobby
from paiju.lobby.results import MatchResults
from paiju.lobby.service import RATE_LIMITS, LobbyService, engine_client, login_name, new_accounts, new_tables
from paiju.platform.health import Dependencies
from paiju.platform.limits import RateLimits
from paiju.platform.observability import configure_logging
from paiju.platform.postgres import close as close_pool
from paiju.platform.postgres import connect
from paiju.platform.serving import GRACE_SECONDS, serve_grpc, stop_on_signals
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import signer_from_env, trust_from_env
from paiju.platform.workqueue import in_background
from paiju.v1 import lobby_pb2, lobby_pb2_grpc

SERVICE_NAME = lobby_pb2.DESCRIPTOR.services_by_name["LobbyService"].full_name


async def serve(settings: Settings, stop: asyncio.Event | None = None, ready: asyncio.Event | None = None) -> None:
    """Run the lobby until ``stop`` is set or the process gets SIGTERM / SIGINT; then drain and close."""
    configure_logging(settings.log_level)
    log = structlog.get_logger("paiju.lobby")
    if not settings.database_url:
        raise SystemExit("DATABASE_URL must name the lobby's PostgreSQL database")
    signer = signer_from_env()
    trust = trust_from_env()
    lobby_store = await JetStreamEventStore.connect(
        settings.nats_url, stream=settings.stream, prefix=settings.prefix, replicas=settings.replicas
    )
    games_store = await JetStreamEventStore.connect(
        settings.nats_url, stream=settings.games_stream, prefix=settings.games_prefix, replicas=settings.replicas
    )
    # scoring's stream, for the tables of paired tournament rounds (created here too if scoring is not up yet)
    tournaments_store = await JetStreamEventStore.connect(
        settings.nats_url,
        stream=settings.tournaments_stream,
        prefix=settings.tournaments_prefix,
        replicas=settings.replicas,
    )
    pool = await connect(settings.database_url, application_name="paiju-lobby")
    await migrate_lobby(pool)
    tables = new_tables(lobby_store)
    accounts = new_accounts(lobby_store)
    await tables.follow()
    await accounts.follow()
    listing = TableReadModel(pool, lobby_store)
    await listing.catch_up()
    results = MatchResults(pool, games_store, tables)
    service = LobbyService(
        tables,
        accounts,
        listing,
        engine_client(settings.engine_address),
        signer=signer,
        trust=trust,
        grace_seconds=settings.grace_seconds,
        limits=RateLimits.from_env(RATE_LIMITS, os.environ, login_name),
    )
    dependencies = Dependencies()
    for store in (lobby_store, games_store, tournaments_store):
        dependencies.add_nats(f"nats:{store.stream}", store.client)
    dependencies.add_postgres("postgresql", pool)
    serving = await serve_grpc(
        settings.address,
        SERVICE_NAME,
        lambda server: lobby_pb2_grpc.add_LobbyServiceServicer_to_server(service, server),
        settings.metrics_port,
        service.policy,
        dependencies=dependencies,
    )
    stopping = stop_on_signals(stop)
    workers = [
        asyncio.create_task(listing.run(stopping)),
        asyncio.create_task(results.run(stopping)),
        in_background(
            tournaments_store.client,
            settings.tournaments_stream,
            f"{settings.tournaments_prefix}.*",
            tournament_tables.CONSUMER,
            tournament_tables.handler(tables),
            stop=stopping,
        ),
    ]
    log.info("lobby started", address=settings.address, port=serving.port, nats=settings.nats_url)
    if ready is not None:
        ready.set()
    await stopping.wait()
    log.info("lobby stopping: no new calls, draining the ones in flight", grace_seconds=GRACE_SECONDS)
    service.draining.set()  # open table watches end with a WatchEnd saying so
    await serving.drain(GRACE_SECONDS)
    await service.close()
    for worker in workers:
        await worker
    await close_pool(pool)
    await tournaments_store.close()
    await games_store.close()
    await lobby_store.close()
    log.info("lobby stopped")
