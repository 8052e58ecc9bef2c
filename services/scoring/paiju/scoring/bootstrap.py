"""Builds scoring's parts (`build`, shared with the tests) and runs them with the gRPC server until SIGTERM, or
rebuilds the read models (`paiju scoring rebuild`)."""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import structlog
from tqdm import tqdm

from paiju.platform import event_loop, tracing
from paiju.platform.consumer import Consumer, PostgresTracking, in_background
from paiju.platform.health import Dependencies
from paiju.platform.limits import RateLimits
from paiju.platform.nats import Access
from paiju.platform.observability import configure_logging
from paiju.platform.postgres import close as close_pool
from paiju.platform.postgres import connect
from paiju.platform.repository import Aggregates
from paiju.platform.serving import GRACE_SECONDS, serve_grpc, stop_on_signals
from paiju.platform.settings import batches
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Revocations, Trust, trust_of
from paiju.scoring import rater, results
from paiju.scoring import tournament as tm
from paiju.scoring.config import SHARDS, ReadModels, Settings
from paiju.scoring.projector import CHECKPOINTS, LINGER_SECONDS, Projector, shard_out
from paiju.scoring.ratings_service import RATE_LIMITS as RATINGS_RATE_LIMITS
from paiju.scoring.ratings_service import RatingsService
from paiju.scoring.readmodels import GamesProjection, TournamentsProjection, migrate_scoring
from paiju.scoring.service import RATE_LIMITS, ScoringService, new_tournaments
from paiju.v1 import ratings_pb2, ratings_pb2_grpc, scoring_pb2, scoring_pb2_grpc

SERVICE_NAME = scoring_pb2.DESCRIPTOR.services_by_name["ScoringService"].full_name


@dataclass
class Connections:
    """What scoring runs over: its database and the three streams it reads or writes."""

    pool: asyncpg.Pool[Any]
    tournaments_store: JetStreamEventStore
    games_store: JetStreamEventStore
    lobby_store: JetStreamEventStore


@dataclass
class Scoring:
    """Scoring's parts, wired as every scoring replica runs them."""

    tournaments: Aggregates[tm.Tournament]
    service: ScoringService
    projectors: list[Projector]
    results: Consumer
    """Tournament results from the lobby's stream."""
    rater: Consumer
    """The ratings, from the match results on the lobby's stream (`paiju.scoring.rater`)."""
    ratings: RatingsService

    @property
    def consumers(self) -> list[Consumer]:
        """The stream consumers to run beside the server."""
        return [*self.projectors, self.results, self.rater]


@asynccontextmanager
async def connections(settings: ReadModels) -> AsyncIterator[Connections]:
    if not settings.database_url:
        raise SystemExit("DATABASE_URL_FILE must name a file holding scoring's PostgreSQL database URL")
    access = Access("scoring", settings.nats_seed, settings.nats_ca)
    tournaments_store = await JetStreamEventStore.connect(
        settings.nats_url,
        stream=settings.stream,
        prefix=settings.prefix,
        replicas=settings.replicas,
        access=access,
        batches=batches(settings.store_command_form),  # the form services of an older release read, while they run
    )
    # the engine's and the lobby's streams: read only, made by their owners, which may start later
    games_store = await JetStreamEventStore.connect(
        settings.nats_url, stream=settings.games_stream, prefix=settings.games_prefix, access=access, create=False
    )
    lobby_store = await JetStreamEventStore.connect(
        settings.nats_url, stream=settings.lobby_stream, prefix=settings.lobby_prefix, access=access, create=False
    )
    pool = await connect(settings.database_url, application_name="paiju-scoring")
    try:
        await migrate_scoring(pool)
        yield Connections(pool, tournaments_store, games_store, lobby_store)
    finally:
        await close_pool(pool)
        await asyncio.gather(*(store.close() for store in (lobby_store, games_store, tournaments_store)))


def games_shards(c: Connections, shards: int = SHARDS) -> list[GamesProjection]:
    """The games projection as ``shards`` shards of the partitions of the games (one, ``games``, over a stream
    without partitions)."""
    store = c.games_store
    count = min(shards, store.partitions)
    if count <= 1:
        return [GamesProjection(store.stream, store.prefix)]
    return [
        GamesProjection(
            store.stream,
            store.prefix,
            name=f"games.{k}",
            partitions=frozenset(p for p in range(store.partitions) if p % count == k),
        )
        for k in range(count)
    ]


def projectors(c: Connections, batch: int = 0, shards: int = SHARDS, linger: float = LINGER_SECONDS) -> list[Projector]:
    """Scoring's projections, each kept current from its stream; the games projection in shards, which replicas
    apply side by side (each shard's batches take turns on its checkpoint row)."""
    reading = c.games_store.sibling()  # the shards' own feed, stopped with them
    tournaments = TournamentsProjection(c.tournaments_store)
    return [
        *(
            Projector(c.pool, c.games_store.client, shard, batch=batch, linger=linger, store=reading)
            for shard in games_shards(c, shards)
        ),
        Projector(c.pool, c.tournaments_store.client, tournaments, batch=batch, linger=linger),
    ]


async def build(
    c: Connections,
    trust: Trust,
    *,
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    batch: int = 0,
    limits: RateLimits | None = None,
    shards: int = SHARDS,
    linger: float = LINGER_SECONDS,
) -> Scoring:
    """Scoring over its connections (migrated): its tournaments following the store's feed, its service, its
    projections and its result recorder ready to run. The tests build it here too."""
    await migrate_scoring(c.pool)
    tournaments = new_tournaments(c.tournaments_store)
    await tournaments.follow()
    recorder = results.result_recorder(c.lobby_store, PostgresTracking(c.pool, CHECKPOINTS), tournaments, now_ms)
    revocations = Revocations(c.lobby_store)  # the lobby's revoked sessions, refused here too
    await revocations.follow()
    service = ScoringService(tournaments, c.pool, trust, now_ms=now_ms, limits=limits, revocations=revocations)
    rating = rater.rater(c.lobby_store, c.pool, c.tournaments_store)
    return Scoring(tournaments, service, projectors(c, batch, shards, linger), recorder, rating, RatingsService(c.pool))


async def serve(settings: Settings, stop: asyncio.Event | None = None, ready: asyncio.Event | None = None) -> None:
    """Run scoring until ``stop`` is set or the process gets SIGTERM / SIGINT; then drain and close."""
    configure_logging(settings.log_level)
    log = structlog.get_logger("paiju.scoring")
    tracing.install(tracing.Config.of(settings))  # off unless an OTLP exporter is configured
    settings.report(log)
    trust = trust_of(settings.trusted_keys)
    async with connections(settings) as c:
        scoring = await build(
            c,
            trust,
            batch=settings.batch,
            limits=RateLimits(RATE_LIMITS + ";" + RATINGS_RATE_LIMITS, settings.rate_limits),
            shards=settings.shards,
            linger=settings.linger_ms / 1000,
        )
        service = scoring.service
        dependencies = Dependencies()
        for store in (c.tournaments_store, c.games_store, c.lobby_store):
            dependencies.add_nats(f"nats:{store.stream}", store.client)
        dependencies.add_store(f"room:{c.tournaments_store.stream}", c.tournaments_store)  # refused while full
        dependencies.add_postgres("postgresql", c.pool)
        serving = await serve_grpc(
            settings.address,
            SERVICE_NAME,
            lambda server: _register(server, service, scoring.ratings),
            settings.metrics_port,
            service.policy,
            dependencies=dependencies,
            metrics_host=settings.metrics_host,
            also=(ratings_pb2.DESCRIPTOR.services_by_name["RatingsService"].full_name,),
        )
        stopping = stop_on_signals(stop)
        # the durable consumers of earlier scorings: their positions taken over, then deleted
        await scoring.results.adopt(c.lobby_store.client, settings.lobby_stream, scoring.results.name)
        *shards, tournaments_projector = scoring.projectors
        await tournaments_projector.adopt(c.tournaments_store.client, settings.stream, "scoring-tournaments")
        unsharded = Projector(
            c.pool, c.games_store.client, GamesProjection(settings.games_stream, settings.games_prefix)
        )
        await unsharded.adopt(c.games_store.client, settings.games_stream, "scoring-games")
        if len(shards) > 1:  # an older scoring's one games projection: its checkpoint handed to the shards
            await shard_out(c.pool, unsharded.name, [shard.name for shard in shards])
        workers = [in_background(consumer, stopping) for consumer in scoring.consumers]
        log.info("scoring started", address=settings.address, port=serving.port, nats=settings.nats_url)
        if ready is not None:
            ready.set()
        await stopping.wait()
        log.info("scoring stopping: no new calls, draining the ones in flight", grace_seconds=GRACE_SECONDS)
        await serving.drain(GRACE_SECONDS)
        for worker in workers:
            await worker
        for projector in scoring.projectors:
            await projector.close()
    log.info("scoring stopped")
    tracing.shutdown()  # the spans not exported yet, exported


def _register(server: Any, service: ScoringService, ratings: RatingsService) -> None:
    """Scoring's services on its gRPC server: `ScoringService` and `RatingsService`."""
    scoring_pb2_grpc.add_ScoringServiceServicer_to_server(service, server)
    ratings_pb2_grpc.add_RatingsServiceServicer_to_server(ratings, server)


async def rebuild(settings: ReadModels, timeout: float = 3600.0, processes: int = 1) -> dict[str, float]:
    """Empty every read model and replay the streams into them: the games projection's shards in ``processes``
    processes at once (each reads its partitions of the stream), then the tournaments; per projection, events
    applied and seconds, and the games' events per second."""
    configure_logging(settings.log_level)
    settings.report(structlog.get_logger("paiju.scoring"))
    figures: dict[str, float] = {}
    async with connections(settings) as c:
        built = projectors(c, settings.batch, settings.shards)
        shards = [p.name for p in built[:-1]]
        if len(shards) > 1:  # an older scoring's one games projection, fenced off before the shards start at 0
            await shard_out(c.pool, "games", shards)
        for projector in built:
            await projector.reset()  # every table emptied and every checkpoint back to 0 first
        started = time.perf_counter()
        if processes <= 1:
            for projector in built[:-1]:
                figures.update(await _catch_up(projector, timeout))
        else:
            loop = asyncio.get_running_loop()
            groups = [shards[k::processes] for k in range(min(processes, len(shards)))]
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(len(groups), mp_context=context) as pool:
                done = await asyncio.gather(
                    *(loop.run_in_executor(pool, _rebuild_shards, settings, group, timeout) for group in groups)
                )
            for part in done:
                figures.update(part)
        seconds = time.perf_counter() - started
        events = sum(figures.get(f"{name}_events", 0) for name in shards)
        figures["games_events"] = events
        figures["games_seconds"] = round(seconds, 3)
        figures["games_events_per_second"] = round(events / seconds, 1) if seconds else 0.0
        figures["processes"] = max(1, processes)
        figures.update(await _catch_up(built[-1], timeout))
        rating = rater.rater(c.lobby_store, c.pool, c.tournaments_store)  # re-rated, every stored event adopted
        await rating.reset()
        started = time.perf_counter()
        figures["ratings_events"] = await rating.catch_up(timeout=timeout)
        figures["ratings_seconds"] = round(time.perf_counter() - started, 3)
        for projector in built:
            await projector.close()
    return figures


async def _catch_up(projector: Projector, timeout: float) -> dict[str, float]:
    started = time.perf_counter()
    # a progress bar of the events applied, on a terminal only (quiet in logs, pipes and CI)
    with tqdm(desc=f"rebuilding {projector.projection.name}", unit="event", disable=None, file=sys.stderr) as bar:
        applied = await projector.catch_up(timeout=timeout, on_step=bar.update)  # everything stored now
    return {
        f"{projector.projection.name}_events": applied,
        f"{projector.projection.name}_seconds": round(time.perf_counter() - started, 3),
    }


def _rebuild_shards(settings: ReadModels, names: list[str], timeout: float) -> dict[str, float]:
    """A rebuild's worker process: catch the shards ``names`` up (their tables and checkpoints emptied already)."""

    async def run() -> dict[str, float]:
        figures: dict[str, float] = {}
        async with connections(settings) as c:
            for projector in projectors(c, settings.batch, settings.shards):
                if projector.name in names:
                    figures.update(await _catch_up(projector, timeout))
                await projector.close()
        return figures

    return event_loop.run(run(), settings.event_loop)
