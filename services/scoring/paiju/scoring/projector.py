"""Running a projection: a durable JetStream consumer, batches applied to PostgreSQL with their checkpoint.

Each projection has its own durable pull consumer (``scoring-<name>``) on its stream and its own row in
``scoring_checkpoints`` (the last stream sequence applied). A batch of messages is applied in one transaction
that also moves the checkpoint; the messages are acknowledged only after the commit (docs/architecture.md, "Read
models"). So:
- a message delivered again (a redelivery after a crash, or two projectors sharing the consumer) is at or below
  the checkpoint and changes nothing;
- a crash before the commit loses nothing: the batch is not acknowledged and comes back after ``ACK_WAIT``;
- a batch that does not start right after the checkpoint (earlier messages still out with a dead projector)
  is left unacknowledged until they come back, so events are always applied in stream order.

The checkpoint row is locked for the transaction, so projectors on several replicas apply each batch once and
in order. A consumer found behind the checkpoint is fine (its messages are skipped); one ahead of it (a
database restored from an older backup) is recreated from the checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import asyncpg
import nats.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError
from prometheus_client import Counter, Gauge, Histogram

from paiju.platform.retry import Backoff, report
from paiju.platform.store.jetstream import delivery_sequences

BATCH = 500
ACK_WAIT_SECONDS = 5.0
MAX_ACK_PENDING = 20_000
API_TIMEOUT_SECONDS = 15.0
"""JetStream API calls (consumer create and delete) in a cluster wait for a replicated answer."""
log = structlog.get_logger("paiju.scoring.projector")
APPLIED = Counter("paiju_scoring_events_applied_total", "Stream events applied to the read models", ["projection"])
CHECKPOINT = Gauge("paiju_scoring_checkpoint", "The last stream sequence a projection applied", ["projection"])
BATCH_SECONDS = Histogram(
    "paiju_scoring_batch_seconds",
    "Time to apply one batch in its transaction",
    ["projection"],
    buckets=(0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)


@dataclass(frozen=True, slots=True)
class Delivered:
    """One stored message: its stream sequence, aggregate (the subject's last token) and bytes."""

    sequence: int
    aggregate: str
    data: bytes


class Projection(Protocol):
    """What a projection does with a batch, inside the transaction that moves its checkpoint."""

    name: str
    stream: str
    subjects: str

    async def apply(self, connection: Any, batch: Sequence[Delivered]) -> None: ...

    async def reset(self, connection: Any) -> None:
        """Empty the projection's tables (a rebuild)."""
        ...


async def checkpoint(database: Any, projection: str) -> int:
    found = await database.fetchval("SELECT sequence FROM scoring_checkpoints WHERE projection = $1", projection)
    return int(found or 0)


class Projector:
    """Keeps one projection current from its stream."""

    def __init__(self, pool: asyncpg.Pool[Any], client: Client, projection: Projection, *, batch: int = 0) -> None:
        self._pool = pool
        self._batch = batch
        self._nc = client
        self._js = client.jetstream(timeout=API_TIMEOUT_SECONDS)
        self._projection = projection
        self._durable = f"scoring-{projection.name}"
        self._sub: Any = None

    @property
    def projection(self) -> Projection:
        return self._projection

    async def checkpoint(self) -> int:
        return await checkpoint(self._pool, self._projection.name)

    async def _ensure_consumer(self) -> None:
        done = await self.checkpoint()
        p = self._projection
        try:
            info = await self._js.consumer_info(p.stream, self._durable)
            if info.ack_floor is not None and (info.ack_floor.stream_seq or 0) > done:
                log.warning("consumer ahead of checkpoint; recreating", projection=p.name, checkpoint=done)
                await self._js.delete_consumer(p.stream, self._durable)
                raise NotFoundError
        except NotFoundError:
            start: dict[str, Any] = (
                {"deliver_policy": DeliverPolicy.BY_START_SEQUENCE, "opt_start_seq": done + 1}
                if done
                else {"deliver_policy": DeliverPolicy.ALL}
            )
            await self._js.add_consumer(
                p.stream,
                ConsumerConfig(
                    durable_name=self._durable,
                    filter_subject=p.subjects,
                    ack_policy=AckPolicy.ALL,
                    ack_wait=ACK_WAIT_SECONDS,
                    max_ack_pending=MAX_ACK_PENDING,
                    **start,
                ),
            )
        self._sub = await self._js.pull_subscribe_bind(self._durable, p.stream)

    async def step(self, timeout: float = 1.0) -> int:
        """Fetch one batch and apply it; how many events it applied (0: nothing new, or a gap to wait out)."""
        if self._sub is None:
            await self._ensure_consumer()
        try:
            messages: list[Msg] = await self._sub.fetch(self._batch or BATCH, timeout=timeout)
        except (TimeoutError, nats.errors.TimeoutError):
            return 0
        delivered = [(m, _delivered(m)) for m in messages if m.reply]
        if not delivered:
            return 0
        reached = await self._apply([d for _, d in delivered])
        if reached is None:
            return 0
        # AckPolicy.ALL: the last message at or below the checkpoint acknowledges everything before it too
        done = [m for m, d in delivered if d.sequence <= reached]
        if done:
            await done[-1].ack()
        return sum(1 for _, d in delivered if d.sequence <= reached)

    async def _apply(self, batch: list[Delivered]) -> int | None:
        """Apply the part of ``batch`` past the checkpoint; the checkpoint after it, or ``None`` when the batch
        cannot be applied yet (a gap before it)."""
        name = self._projection.name
        started = time.perf_counter()
        async with self._pool.acquire() as connection, connection.transaction():
            await connection.execute(
                "INSERT INTO scoring_checkpoints (projection, sequence) VALUES ($1, 0) ON CONFLICT DO NOTHING", name
            )
            done = int(
                await connection.fetchval(
                    "SELECT sequence FROM scoring_checkpoints WHERE projection = $1 FOR UPDATE", name
                )
            )
            todo = [d for d in batch if d.sequence > done]
            if not todo:
                return done
            if todo[0].sequence != done + 1:
                log.info("waiting for earlier events", projection=name, checkpoint=done, first=todo[0].sequence)
                return None
            for before, after in itertools.pairwise(todo):
                if after.sequence != before.sequence + 1:
                    todo = todo[: todo.index(after)]
                    break
            await self._projection.apply(connection, todo)
            await connection.execute(
                "UPDATE scoring_checkpoints SET sequence = $2 WHERE projection = $1", name, todo[-1].sequence
            )
        APPLIED.labels(name).inc(len(todo))
        CHECKPOINT.labels(name).set(todo[-1].sequence)
        BATCH_SECONDS.labels(name).observe(time.perf_counter() - started)
        return todo[-1].sequence

    async def catch_up(self, until: int | None = None, timeout: float = 30.0) -> int:
        """Apply batches until the checkpoint reaches ``until`` (default: the stream's last sequence now)."""
        if until is None:
            info = await self._js.stream_info(self._projection.stream)
            until = info.state.last_seq
        applied = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while await self.checkpoint() < until:
            if loop.time() > deadline:
                raise TimeoutError(f"projection {self._projection.name} did not reach sequence {until}")
            try:
                applied += await self.step(timeout=0.5)
            except (nats.errors.Error, TimeoutError) as e:  # NATS busy (e.g. a node lost): try again
                log.warning("projection step failed; retrying", projection=self._projection.name, error=repr(e))
                self._sub = None
                await asyncio.sleep(0.5)
        return applied

    async def run(self, stop: asyncio.Event) -> None:
        """Keep the projection current until ``stop``; a failed batch is retried (nothing half-applied stays)."""
        backoff = Backoff()
        while not stop.is_set():
            try:
                await self.step()
                backoff.succeeded()
            except Exception as e:
                report(log, "projection batch failed; retrying", e, projection=self._projection.name)
                self._sub = None
                await backoff.wait(stop)

    async def reset(self) -> None:
        """Empty the projection and its checkpoint and drop its consumer: the next step replays the stream."""
        p = self._projection
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None
        with contextlib.suppress(NotFoundError):
            await self._js.delete_consumer(p.stream, self._durable)
        async with self._pool.acquire() as connection, connection.transaction():
            await p.reset(connection)
            await connection.execute("DELETE FROM scoring_checkpoints WHERE projection = $1", p.name)

    async def close(self) -> None:
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None


def _delivered(msg: Msg) -> Delivered:
    sequence, _ = delivery_sequences(msg.reply)
    return Delivered(sequence, msg.subject.rpartition(".")[2], bytes(msg.data or b""))
