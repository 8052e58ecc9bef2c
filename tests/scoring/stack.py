"""Scoring in-process beside the lobby test stack (real NATS, PostgreSQL, engine, lobby), built by scoring's
bootstrap: the ScoringService over gRPC, the result recorder running, and the projections (caught up by the test).
The lobby's stack runs the round tables consumer on the same tournaments stream."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import grpc

from paiju.platform.consumer import in_background
from paiju.platform.postgres.pool import connect
from paiju.platform.serving import build_server
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.scoring.bootstrap import Connections, build
from paiju.scoring.projector import Projector
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
        store = base.tournaments_store
        pool = await connect(database_dsn)
        clock = Clock()
        built = await build(Connections(pool, store, base.games_store, base.lobby_store), TRUST, now_ms=clock)
        server = build_server(built.service.policy)
        scoring_pb2_grpc.add_ScoringServiceServicer_to_server(built.service, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        stop = asyncio.Event()
        # the result recorder runs as in every scoring replica; the projections are caught up by the test
        workers = [in_background(built.results, stop)]
        projectors = built.projectors
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
