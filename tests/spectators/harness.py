"""An in-process engine over a real nats-server for the spectator tests, as `tests/engine/harness.engine` builds it,
yielding its `EngineService` too (the tests read what its `Spectating` did: encodings made, pictures folded)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
import pytest

from paiju.engine.bootstrap import build
from paiju.engine.games import Games
from paiju.platform.partitions import PARTITIONS
from paiju.platform.serving import build_server
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2_grpc

from ..engine.harness import FAIR_SECRET, NOW
from ..support.credentials import TRUST


@asynccontextmanager
async def served_engine(request: pytest.FixtureRequest, seed: int = 99) -> AsyncIterator[tuple[Any, Games, Any]]:
    """(async stub, `Games`, `EngineService`) of an engine on a free local port over a new JetStream stream."""
    stream = "S" + uuid.uuid4().hex[:12].upper()
    store = await JetStreamEventStore.connect(
        request.getfixturevalue("nats_url"), stream=stream, prefix=f"s.{stream.lower()}", partitions=PARTITIONS
    )
    seeds = SeededRandom(seed)
    games, service = await build(
        store,
        TRUST,
        now=lambda: NOW,
        seeds=lambda game_id, version: seeds.next64(),
        seed_secret=FAIR_SECRET,
        fair_protocol=1,
        first_deal_seconds=3600.0,
    )
    server = build_server(service.policy)
    service.add_to(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield engine_pb2_grpc.EngineServiceStub(channel), games, service
    finally:
        await channel.close()
        await server.stop(None)
        await store.close()
