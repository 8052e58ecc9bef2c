"""Running a scoring projection: the platform's stream consumer (`paiju.platform.consumer`) with its checkpoint in
``scoring_checkpoints``, and the projection's metrics.

A batch of events is applied in one transaction that also moves the checkpoint (docs/architecture.md, "Read
models"), its row locked for the transaction: projectors of one projection on several replicas apply each batch
once and in stream order, a crash before the commit loses nothing (the batch is read again), and a rebuild empties
the tables and the checkpoint in one transaction and replays the stream.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

import asyncpg
from nats.aio.client import Client
from prometheus_client import Counter, Gauge, Histogram

from paiju.platform.consumer import BATCH, Consumer, PostgresTracking, Tracked
from paiju.platform.store import Recorded
from paiju.platform.store.jetstream import JetStreamEventStore

CHECKPOINTS = "scoring_checkpoints"
APPLIED = Counter("paiju_scoring_events_applied_total", "Stream events applied to the read models", ["projection"])
CHECKPOINT = Gauge("paiju_scoring_checkpoint", "The last stream sequence a projection applied", ["projection"])
BATCH_SECONDS = Histogram(
    "paiju_scoring_batch_seconds",
    "Time to apply one batch in its transaction",
    ["projection"],
    buckets=(0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)


class Projection(Protocol):
    """A read model of one stream: what it does with a batch inside the transaction that moves its checkpoint."""

    name: str
    stream: str
    prefix: str

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None: ...

    async def clear(self, tracked: Tracked) -> None:
        """Empty the projection's tables (a rebuild)."""
        ...


class Remembering(Protocol):
    """A projection that keeps what it wrote in memory between batches (`paiju.scoring.readmodels.GamesProjection`
    its folds): it hears which of its batches committed, and whenever one may not have."""

    def committed(self, sequence: int) -> None:
        """The batch the projection applied last committed, moving its checkpoint to ``sequence``."""
        ...

    def forget(self) -> None:
        """A batch's transaction failed or was abandoned: drop everything kept from it (and from before)."""
        ...


class CommitTracking(PostgresTracking):
    """`PostgresTracking` that tells a `Remembering` projection how each of its batches ended: `committed` once the
    batch's transaction committed, `forget` when the batch or its commit failed, or was cancelled. A projection that
    keeps nothing hears nothing. The batch itself is `PostgresTracking`'s, unchanged."""

    def __init__(self, pool: Any, table: str, projection: object) -> None:
        super().__init__(pool, table)
        self._committed = getattr(projection, "committed", None)
        self._forget = getattr(projection, "forget", None)

    @asynccontextmanager
    async def batch(self, name: str) -> AsyncIterator[Tracked]:
        try:
            async with super().batch(name) as tracked:
                yield tracked
        except BaseException:
            if self._forget is not None:
                self._forget()
            raise
        if tracked.advanced is not None and self._committed is not None:
            self._committed(tracked.advanced)


class _Measured:
    """A projection with its metrics."""

    def __init__(self, projection: Projection) -> None:
        self.projection = projection
        self.name = projection.name

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        started = time.perf_counter()
        await self.projection.apply(tracked, batch)
        APPLIED.labels(self.name).inc(len(batch))
        CHECKPOINT.labels(self.name).set(batch[-1].sequence)
        BATCH_SECONDS.labels(self.name).observe(time.perf_counter() - started)

    async def clear(self, tracked: Tracked) -> None:
        await self.projection.clear(tracked)


LINGER_SECONDS = 0.25
"""How long a running projection gathers events after the first of a batch that wakes it before applying them
(scoring's read models are for results, standings and statistics, where a quarter of a second is nothing, and a
batch's transaction costs about what its events do): fewer and fuller transactions under load. The games projection
is woken by the events that add rows only (`paiju.scoring.readmodels.GamesProjection.wakes`); the play between them
waits for the next of those, or `paiju.platform.consumer.LAZY_SECONDS`."""


class Projector(Consumer):
    """Keeps one projection current from its stream (``store``: the stream's reading store, shared by the shards
    of one projection; by default one of its own)."""

    def __init__(
        self,
        pool: asyncpg.Pool[Any],
        client: Client,
        projection: Projection,
        *,
        batch: int = 0,
        linger: float = LINGER_SECONDS,
        store: JetStreamEventStore | None = None,
    ) -> None:
        self._stream = store or JetStreamEventStore(client, projection.stream, projection.prefix)
        super().__init__(
            self._stream,
            CommitTracking(pool, CHECKPOINTS, projection),
            _Measured(projection),
            batch=batch or BATCH,
            linger=linger,
            partitions=getattr(projection, "partitions", None),
            wake=getattr(projection, "wakes", lambda _: True),
        )
        self._projection = projection

    @property
    def projection(self) -> Projection:
        return self._projection

    async def close(self) -> None:
        """Stop following the stream (the NATS connection is the caller's)."""
        await self._stream.stop_following()


FENCED = 1 << 62
"""The checkpoint an unsharded projection is left at once its shards took over: an older replica still running it
reads nothing past it, so it applies nothing twice."""


async def shard_out(pool: asyncpg.Pool[Any], unsharded: str, shards: Sequence[str]) -> int:
    """Hand the checkpoint of the projection ``unsharded`` (as older versions ran it, one consumer) to its
    ``shards``, and fence it: in one transaction that waits for the batch an older replica may be applying, each
    shard without a checkpoint starts where it stood, and it is set to `FENCED`. Returns where it stood (0: it did
    not exist, or was handed over already)."""
    async with pool.acquire() as connection, connection.transaction():
        done = await connection.fetchval(
            f"SELECT sequence FROM {CHECKPOINTS} WHERE projection = $1 FOR UPDATE", unsharded
        )
        if done is None or done >= FENCED:
            return 0
        await connection.executemany(
            f"INSERT INTO {CHECKPOINTS} (projection, sequence) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            [(shard, done) for shard in shards],
        )
        await connection.execute(f"UPDATE {CHECKPOINTS} SET sequence = $2 WHERE projection = $1", unsharded, FENCED)
        return int(done)


async def checkpoint(database: Any, projection: str) -> int:
    """The last stream sequence ``projection`` applied (0: none yet)."""
    found = await database.fetchval(f"SELECT sequence FROM {CHECKPOINTS} WHERE projection = $1", projection)
    return int(found or 0)
