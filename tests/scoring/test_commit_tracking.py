"""Scoring's projectors' tracking (`paiju.scoring.projector.CommitTracking`: `PostgresTracking` that tells a
projection which of its batches committed) passes the platform's consumer contract, over both stores: every test of
``tests/platform/test_consumer_contract.py`` that takes a rig runs here with it."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import pytest

from paiju.platform.store import MemoryEventStore
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.scoring.projector import CommitTracking

from ..platform import test_consumer_contract as contract

pytestmark = pytest.mark.integration

globals().update(
    {
        name: test
        for name, test in vars(contract).items()
        if name.startswith("test_") and "run_with" in inspect.signature(test).parameters
    }
)


@pytest.fixture(params=["memory", "jetstream"])
def run_with(request: pytest.FixtureRequest) -> Callable[[Callable[[contract.Rig], Awaitable[None]]], None]:
    store_kind = request.param
    nats_url: str = request.getfixturevalue("nats_url") if store_kind == "jetstream" else ""
    dsn: str = request.getfixturevalue("database_dsn")

    @asynccontextmanager
    async def rig() -> AsyncIterator[contract.Rig]:
        stream = "C" + uuid.uuid4().hex[:12].upper()
        store: Any = (
            MemoryEventStore()
            if store_kind == "memory"
            else await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"c.{stream.lower()}")
        )
        pool = await asyncpg.create_pool(dsn, min_size=1, max_size=4)
        try:
            await pool.execute(
                "CREATE TABLE checkpoints (projection text PRIMARY KEY, sequence bigint NOT NULL);" + contract.EFFECTS
            )
            yield contract.Rig(store, CommitTracking(pool, "checkpoints", None), transactional=True, pool=pool)
        finally:
            await pool.close()
            await store.close()

    def run(scenario: Callable[[contract.Rig], Awaitable[None]]) -> None:
        async def main() -> None:
            async with rig() as r:
                await scenario(r)

        asyncio.run(main())

    return run
