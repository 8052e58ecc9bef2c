"""Games between bots recorded into a fresh, real JetStream stream (for scoring's tests)."""

from __future__ import annotations

import uuid

from paiju.engine.selfplay import record_tractor, record_zlj
from paiju.platform.store.jetstream import JetStreamEventStore

__all__ = ["open_games", "record_tractor", "record_zlj"]


async def open_games(nats_url: str) -> tuple[JetStreamEventStore, str, str]:
    """A fresh GAMES-like stream: (store, stream name, subject prefix)."""
    stream = "G" + uuid.uuid4().hex[:12].upper()
    prefix = f"g.{stream.lower()}"
    return await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix), stream, prefix
