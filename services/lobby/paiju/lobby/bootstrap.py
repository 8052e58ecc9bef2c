"""Builds the lobby's parts (`build`, shared with the tests) and runs them with the gRPC server until SIGTERM
(docs/architecture.md, Principle 4)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import asyncpg
import structlog

from paiju.lobby import table as tb
from paiju.lobby.attendance import KeyValueAttendance, cover_departures
from paiju.lobby.config import IDLE_TABLE_MINUTES, Settings
from paiju.lobby.expiry import TableExpiry
from paiju.lobby.matchmaking import GAME_ORDER, QUEUE_ATTENDANCE
from paiju.lobby.readmodel import CHECKPOINTS, TableReadModel, migrate_lobby
from paiju.lobby.results import match_results
from paiju.lobby.service import RATE_LIMITS, LobbyService, engine_client, login_name, new_accounts, new_tables
from paiju.lobby.tournaments import CONSUMER as ROUND_TABLES
from paiju.lobby.tournaments import round_opener
from paiju.platform import tracing
from paiju.platform.consumer import Consumer, PostgresTracking, in_background
from paiju.platform.health import Dependencies
from paiju.platform.limits import LoginFailures, RateLimits
from paiju.platform.nats import Access
from paiju.platform.observability import configure_logging
from paiju.platform.ownership import Ownership, member_name
from paiju.platform.postgres import close as close_pool
from paiju.platform.postgres import connect
from paiju.platform.repository import Aggregates
from paiju.platform.serving import GRACE_SECONDS, serve_grpc, stop_on_signals
from paiju.platform.settings import batches
from paiju.platform.store import EventStore
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import signer_of, trust_of
from paiju.v1 import lobby_pb2, lobby_pb2_grpc

SERVICE_NAME = lobby_pb2.DESCRIPTOR.services_by_name["LobbyService"].full_name


@dataclass
class Lobby:
    """The lobby's parts, wired as every lobby runs them."""

    tables: Aggregates[tb.Table]
    accounts: Aggregates[Any]
    listing: TableReadModel
    service: LobbyService
    consumers: list[Consumer]
    """The stream consumers to run beside the server: the read model's projections, match results, round tables."""
    expiry: TableExpiry
    """The tables that expire when left idle (run it beside the server: `TableExpiry.run`)."""


async def build(
    pool: asyncpg.Pool[Any],
    lobby_store: EventStore,
    games_store: EventStore,
    tournaments_store: EventStore,
    engine: Callable[[], Any],
    *,
    idle_table_seconds: float = IDLE_TABLE_MINUTES.default * 60,
    **service: Any,
) -> Lobby:
    """The lobby over its database and streams: migrated, its aggregates following the store's feed, its read
    model caught up, and its consumers ready to run. ``engine``: the engine's stub; ``service``: the
    `LobbyService`'s keyword arguments (signer, trust, grace time, rate limits). The tests build it here too."""
    await migrate_lobby(pool)
    tables = new_tables(lobby_store)
    accounts = new_accounts(lobby_store)
    await tables.follow()
    await accounts.follow()
    listing = TableReadModel(pool, lobby_store)
    expiry = TableExpiry(tables, idle_table_seconds)
    await expiry.follow(lobby_store)  # every table event from now on sets its deadline
    await listing.catch_up()
    for table_id, at in await listing.idle_tables():  # and the tables idle already, once, from their last change
        expiry.schedule(table_id, at + idle_table_seconds)
    service_ = LobbyService(tables, accounts, listing, engine, **service)
    for followed in (service_.matchmaker.queue, service_.parties.parties, service_.parties.memberships):
        await followed.follow()  # kept current by the store's feed, as the tables and accounts are
    consumers = [
        *listing.consumers,
        service_.matchmaker.ratings.consumer(tournaments_store),
        match_results(pool, games_store, tables),
        round_opener(tournaments_store, PostgresTracking(pool, CHECKPOINTS), tables),
    ]
    return Lobby(tables, accounts, listing, service_, consumers, expiry)


async def own_stream(settings: Settings, access: Access | None = None) -> JetStreamEventStore:
    """The lobby's own stream, which it creates and writes: a command of several events stored in the form
    ``PAIJU_STORE_COMMAND_FORM`` says (an atomic batch while services of an older release still read it)."""
    return await JetStreamEventStore.connect(
        settings.nats_url,
        stream=settings.stream,
        prefix=settings.prefix,
        replicas=settings.replicas,
        access=access,
        batches=batches(settings.store_command_form),
    )


async def serve(settings: Settings, stop: asyncio.Event | None = None, ready: asyncio.Event | None = None) -> None:
    """Run the lobby until ``stop`` is set or the process gets SIGTERM / SIGINT; then drain and close."""
    configure_logging(settings.log_level)
    log = structlog.get_logger("paiju.lobby")
    tracing.install(tracing.Config.of(settings))  # off unless an OTLP exporter is configured
    settings.report(log)
    if not settings.database_url:
        raise SystemExit("DATABASE_URL_FILE must name a file holding the lobby's PostgreSQL database URL")
    access = Access("lobby", settings.nats_seed, settings.nats_ca)
    lobby_store = await own_stream(settings, access)
    # the engine's stream (match results) and scoring's (the tables of paired tournament rounds): read only, made by
    # their owners, which may start later
    games_store = await JetStreamEventStore.connect(
        settings.nats_url, stream=settings.games_stream, prefix=settings.games_prefix, access=access, create=False
    )
    tournaments_store = await JetStreamEventStore.connect(
        settings.nats_url,
        stream=settings.tournaments_stream,
        prefix=settings.tournaments_prefix,
        access=access,
        create=False,
    )
    pool = await connect(settings.database_url, application_name="paiju-lobby")
    attendance = await KeyValueAttendance.open(
        lobby_store.client, settings.stream, member_name(), replicas=settings.replicas
    )
    lobby = await build(
        pool,
        lobby_store,
        games_store,
        tournaments_store,
        engine_client(settings.engine_address),
        signer=signer_of(settings.signing_key, settings.signing_key_id),
        trust=trust_of(settings.trusted_keys),
        grace_seconds=settings.grace_seconds,
        limits=RateLimits(RATE_LIMITS, settings.rate_limits, login_name),
        # PAIJU_RATE_LIMITS=off turns every limit off, the wrong passwords' too (benchmarks, the fuzz)
        login_failures=LoginFailures(
            "off" if settings.rate_limits.strip().lower() == "off" else settings.login_failures
        ),
        attendance=attendance,
        tables_per_player=settings.tables_per_player,
        idle_table_seconds=settings.idle_table_minutes * 60,
        queue_generation_events=settings.queue_generation_events,
        queue_retries_kept=settings.queue_retries_kept,
    )
    service = lobby.service
    dependencies = Dependencies()
    for store in (lobby_store, games_store, tournaments_store):
        dependencies.add_nats(f"nats:{store.stream}", store.client)
    dependencies.add_store(f"room:{lobby_store.stream}", lobby_store)  # its appends: refused while JetStream is full
    dependencies.add_postgres("postgresql", pool)
    serving = await serve_grpc(
        settings.address,
        SERVICE_NAME,
        lambda server: lobby_pb2_grpc.add_LobbyServiceServicer_to_server(service, server),
        settings.metrics_port,
        service.policy,
        dependencies=dependencies,
        metrics_host=settings.metrics_host,
    )
    stopping = stop_on_signals(stop)
    for consumer in lobby.consumers:  # the work queue of earlier lobbies
        if consumer.name == ROUND_TABLES:
            await consumer.adopt(tournaments_store.client, settings.tournaments_stream, consumer.name)
    workers = [in_background(consumer, stopping) for consumer in lobby.consumers]
    expiring = asyncio.create_task(lobby.expiry.run(stopping))
    keeping = asyncio.create_task(attendance.keep(stopping))
    matchmaker = service.matchmaker

    def departed(table_id: str, player: str) -> None:
        if table_id == QUEUE_ATTENDANCE:
            matchmaker.departed(player)
        else:
            service.presence.departed(table_id, player)

    departures = asyncio.create_task(cover_departures(attendance, departed))
    # one replica forms a game's matches at a time: a lease per game (partition i: the game GAME_ORDER[i])
    forming = await Ownership.open(
        lobby_store.client,
        f"paiju-matchmaking-{settings.stream}",
        len(GAME_ORDER),
        matchmaker.lease_changed,
        replicas=settings.replicas,
    )
    leasing = asyncio.create_task(forming.run(stopping))
    matching = asyncio.create_task(matchmaker.run(stopping))
    log.info("lobby started", address=settings.address, port=serving.port, nats=settings.nats_url)
    if ready is not None:
        ready.set()
    await stopping.wait()
    log.info("lobby stopping: no new calls, draining the ones in flight", grace_seconds=GRACE_SECONDS)
    attendance.hand_over()  # the players watching here are left to the other replicas' departures
    service.draining.set()  # open table watches end with a WatchEnd saying so
    await serving.drain(GRACE_SECONDS)
    departures.cancel()
    await keeping
    await leasing
    await matching
    await service.close()
    for worker in workers:
        await worker
    await expiring
    await close_pool(pool)
    await tournaments_store.close()
    await games_store.close()
    await lobby_store.close()
    log.info("lobby stopped")
    tracing.shutdown()  # the spans not exported yet, exported
