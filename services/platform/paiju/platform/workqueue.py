"""A stream's events handled by whichever replica pulls them: a durable JetStream pull consumer.

Used for the cross-service reactions (the engine creating match games from LOBBY, the lobby opening
tournament tables from TOURNAMENTS, scoring recording tournament results from LOBBY). Every replica pulls
from the one durable consumer, so each event goes to one replica at a time; a message is acknowledged only
after its handler returned, and comes again when a replica dies first or the handler fails (after a short
delay). Handlers must therefore be idempotent: the same event handled twice, or by two replicas, does what
handling it once does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from nats.aio.client import Client
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from paiju.platform.retry import Backoff, report

log = structlog.get_logger("paiju.workqueue")
Handler = Callable[[bytes], Awaitable[Any]]


async def consume(
    client: Client,
    stream: str,
    subjects: str,
    durable: str,
    handle: Handler,
    *,
    stop: asyncio.Event,
    batch: int = 32,
    started: Callable[[], None] = lambda: None,
) -> None:
    """Pull events of ``stream`` matching ``subjects`` and handle each until ``stop`` is set (``started`` is called
    once the consumer is there)."""
    js = client.jetstream()
    config = ConsumerConfig(
        durable_name=durable,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        ack_wait=30,
        max_ack_pending=1000,
    )
    subscription = await js.pull_subscribe(subjects, durable=durable, stream=stream, config=config)
    started()
    try:
        while not stop.is_set():
            try:
                messages = await subscription.fetch(batch, timeout=1.0)
            except (NatsTimeout, TimeoutError):
                continue
            for message in messages:
                try:
                    await handle(message.data)
                except Exception as e:  # did nothing, or not all: the message comes again
                    report(log, "handling an event failed; it will be retried", e, consumer=durable)
                    await message.nak(delay=1.0)
                    continue
                await message.ack()
    finally:
        with contextlib.suppress(Exception):
            await subscription.unsubscribe()


def in_background(
    client: Client, stream: str, subjects: str, durable: str, handle: Handler, *, stop: asyncio.Event
) -> asyncio.Task[Any]:
    """`consume` as a task that restarts after an unexpected error (logged) until ``stop``."""

    async def forever() -> None:
        backoff = Backoff()
        while not stop.is_set():
            try:
                await consume(client, stream, subjects, durable, handle, stop=stop, started=backoff.succeeded)
            except Exception as e:
                report(log, "a work queue stopped; restarting", e, consumer=durable)
                await backoff.wait(stop)

    return asyncio.create_task(forever())
