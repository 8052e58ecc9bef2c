"""A stream's owner does not give up making it while JetStream does not answer (a cluster starting, or electing the
leader of a stream another replica of the owner has just created — the cluster rehearsal met a lobby that stopped
there, and left the engines waiting for its stream): it asks again, as a reader waits for the stream."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import nats.errors
import pytest
from structlog.testing import capture_logs

from paiju.platform.store.jetstream import JetStreamEventStore

pytestmark = pytest.mark.integration


def test_the_owner_asks_again_while_jetstream_does_not_answer(nats_url: str) -> None:
    stream = f"OWNED{uuid.uuid4().hex[:8].upper()}"

    async def main() -> None:
        store = await JetStreamEventStore.connect(
            nats_url, stream=stream, prefix=f"paiju.{stream.lower()}", create=False, wait=False
        )
        real = store._js.stream_info
        timeouts = [0]

        async def stream_info(name: str, *args: Any, **kwargs: Any) -> Any:
            if timeouts[0] < 2:
                timeouts[0] += 1
                raise nats.errors.TimeoutError
            return await real(name, *args, **kwargs)

        store._js.stream_info = stream_info  # type: ignore[method-assign]
        try:
            with capture_logs() as logs:
                await asyncio.wait_for(store.ensure_stream(), 10)
            assert timeouts[0] == 2
            assert sum(e["event"] == "JetStream did not answer: asking again" for e in logs) == 2
            assert (await real(stream)).config.name == stream, "the stream is made once JetStream answers"
        finally:
            await store._js.delete_stream(stream)
            await store.close()

    asyncio.run(main())
