"""Scoring in-process beside the lobby test stack (real NATS, PostgreSQL, engine, lobby): the ScoringService
over gRPC, the lobby's tournament tables and scoring's result recorder as work queues, and the projections."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import grpc

from paiju.lobby import tournaments as tournament_tables
from paiju.lobby.service import new_tables
from paiju.platform.postgres.pool import connect
from paiju.platform.serving import build_server
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.workqueue import in_background
from paiju.scoring import results
from paiju.scoring.projector import Projector
from paiju.scoring.readmodels import GamesProjection, TournamentsProjection, migrate_scoring
from paiju.scoring.service import ScoringService, new_tournaments
from paiju.v1 import scoring_pb2_grpc

from ..lobby_service.stack import Stack, stack
from ..support.credentials import TRUST


class Clock:
    """The scoring service's clock, moved by the test (Unix milliseconds)."""

    def __init__(self) -> None:
        self.ms = int(time.time() * 1000)

    def __call__(self) -> int:
        return self.ms


@dataclass
class Scoring:
    base: Stack
    scoring: Any
    clock: Clock
    projectors: list[Projector]
    tournaments_store: JetStreamEventStore
    pool: Any

    async def project(self) -> None:
        for projector in self.projectors:
            await projector.catch_up()


@asynccontextmanager
async def scoring_stack(nats_url: str, database_dsn: str) -> AsyncIterator[Scoring]:
    async with stack(nats_url, database_dsn) as base:
        suffix = uuid.uuid4().hex[:10]
        store = await JetStreamEventStore.connect(nats_url, stream=f"T{suffix.upper()}", prefix=f"t{suffix}.tour")
        pool = await connect(database_dsn)
        await migrate_scoring(pool)
        tournaments = new_tournaments(store)
        await tournaments.follow()
        clock = Clock()
        service = ScoringService(tournaments, pool, TRUST, now_ms=clock)
        server = build_server(service.policy)
        scoring_pb2_grpc.add_ScoringServiceServicer_to_server(service, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        stop = asyncio.Event()
        workers = [
            in_background(
                store.client,
                store.stream,
                f"{store.prefix}.*",
                f"lobby-tables-{suffix}",
                tournament_tables.handler(new_tables(base.lobby_store)),
                stop=stop,
            ),
            in_background(
                base.lobby_store.client,
                base.lobby_store.stream,
                f"{base.lobby_store.prefix}.*",
                f"results-{suffix}",
                results.handler(tournaments, clock),
                stop=stop,
            ),
        ]
        projectors = [
            Projector(pool, store.client, GamesProjection(base.games_store.stream, base.games_store.prefix)),
            Projector(pool, store.client, TournamentsProjection(store)),
        ]
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        try:
            yield Scoring(base, scoring_pb2_grpc.ScoringServiceStub(channel), clock, projectors, store, pool)
        finally:
            stop.set()
            await channel.close()
            await server.stop(None)
            for worker in workers:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(worker, timeout=5)
            for projector in projectors:
                await projector.close()
            await pool.close()
            await store.close()
