"""The engine's match starter starts through a NATS outage (`paiju.engine.bootstrap.start_matches`), on a nats-server
of the test's own, killed and started again: an engine that starts before the lobby has made its stream waits for
it, and NATS going away meanwhile, or a later step failing, is waited out and tried again — the starter runs once the
stream is there. (The wait for the stream raised when NATS was away, and the task that starts the matches ended
there, for good and unseen: that replica never started a match.)"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from paiju.engine.bootstrap import start_matches
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Revocations

from ..support.nats_server import RestartableNats
from ..support.waiting import wait_until

pytestmark = pytest.mark.integration  # a nats-server of the test's own, killed and started again


class Starter:
    """Stands for the match starter (a `Consumer`): counts its take-over and its run."""

    name = "engine-match-starter"

    def __init__(self) -> None:
        self.adopted = 0
        self.running = asyncio.Event()

    async def adopt(self, client: Any, stream: str, durable: str) -> None:
        self.adopted += 1

    async def run(self, stop: asyncio.Event) -> None:
        self.running.set()
        await stop.wait()


def test_the_match_starter_starts_once_the_lobby_stream_is_there_whatever_nats_did_meanwhile(tmp_path: Path) -> None:
    with RestartableNats(tmp_path / "nats") as server:

        async def main() -> None:
            stream = "LOBBY" + uuid.uuid4().hex[:8].upper()
            prefix = f"l{stream.lower()}"
            url = server.url
            lobby = await JetStreamEventStore.connect(url, stream=stream, prefix=prefix, create=False, wait=False)
            starter = Starter()
            made: list[Starter] = []

            async def make() -> Any:
                if not made:
                    made.append(starter)
                    raise ConnectionError("the checkpoints' bucket could not be opened")  # tried again
                return starter

            stopping = asyncio.Event()
            starting = asyncio.create_task(start_matches(lobby, Revocations(lobby), make, stopping, stream=stream))
            try:
                await asyncio.sleep(0.5)  # the lobby's stream is not there yet: waited for
                server.kill()
                await wait_until(lambda: not lobby.client.is_connected, "the engine to notice NATS is gone")
                await asyncio.sleep(1.0)  # asked while NATS is away
                assert not starting.done(), "still waiting"
                server.start()
                owner = await JetStreamEventStore.connect(server.url, stream=stream, prefix=prefix)  # the lobby
                await asyncio.wait_for(starter.running.wait(), 30)
                assert starter.adopted == 1 and not starting.done()
                assert len(lobby._followers) == 1, "the revocations followed once, not once per attempt"
                await owner.close()
            finally:
                stopping.set()
                await asyncio.wait_for(starting, 10)
                await lobby.close()

        asyncio.run(main())
