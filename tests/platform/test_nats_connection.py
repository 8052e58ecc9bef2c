"""A Paiju NATS connection (`paiju.platform.nats.connect`) through an outage: a request made while NATS is away
fails at once with what a publish raises then, and leaves nothing behind. (nats-py keeps each request's reply
future from before its publish; with nothing buffered while disconnected the publish fails at once, and every
request a process retried through an outage left its future for good: a process grew for as long as NATS was away.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats.errors
import pytest
import structlog

from paiju.platform import nats as paiju_nats
from paiju.platform.edge import DEPENDENCY_GONE

from ..support.nats_server import RestartableNats
from ..support.waiting import wait_until

pytestmark = pytest.mark.integration  # a nats-server of the test's own, killed and started again


def test_requests_while_nats_is_away_fail_at_once_and_keep_nothing(tmp_path: Path) -> None:
    with RestartableNats(tmp_path / "nats") as server:

        async def main() -> None:
            client = await paiju_nats.connect(server.url, "outage-requests")
            js = client.jetstream()
            try:
                await js.add_stream(name="KEPT", subjects=["kept.>"])
                kept = len(client._resp_map)  # the replies nats-py waits for: the site of the leak
                server.kill()
                await wait_until(lambda: not client.is_connected, "the client to notice NATS is gone", every=0.05)
                for i in range(200):
                    with pytest.raises(DEPENDENCY_GONE) as raised:
                        await client.request(f"paiju.test.{i}", b"?", timeout=5)
                    assert isinstance(raised.value, nats.errors.OutboundBufferLimitError), raised.value
                    with pytest.raises(DEPENDENCY_GONE):
                        await js.stream_info("KEPT", subjects_filter=None)  # JetStream's API is requests too
                assert len(client._resp_map) <= kept, f"{len(client._resp_map) - kept} reply futures left behind"
                server.start()
                await wait_until(lambda: client.is_connected, "the client back on NATS", every=0.05)
                info = await wait_until(
                    lambda: js.stream_info("KEPT"), "the stream's info again", ignoring=DEPENDENCY_GONE, every=0.1
                )
                assert info.config.name == "KEPT"
            finally:
                await paiju_nats.close(client)

        asyncio.run(main())


def test_an_outage_is_told_in_four_lines_not_two_per_reconnection_attempt(tmp_path: Path) -> None:
    """NATS away for several reconnection attempts (one a second): the connection logs the error that cut it, its
    disconnection, the first failed attempt and its reconnection with how long it was away
    (`paiju.platform.nats.OutageLog`)."""
    with RestartableNats(tmp_path / "nats") as server:

        async def main() -> None:
            client = await paiju_nats.connect(server.url, "outage-log")
            closed = False
            try:
                with structlog.testing.capture_logs() as logs:
                    server.kill()
                    await wait_until(lambda: not client.is_connected, "the client to notice NATS is gone", every=0.05)
                    await asyncio.sleep(3.5)  # three attempts or more
                    server.start()
                    # the line itself, not the client's state: nats-py says it is connected a round trip before it
                    # calls back (a loaded machine once ended the capture between the two)
                    await wait_until(
                        lambda: any(e["event"] == "nats reconnected" for e in logs), "the reconnection", every=0.05
                    )
                    told = [e for e in logs if e.get("connection") == "outage-log"]
                    await paiju_nats.close(client)
                    closed = True
                # a connection closed on purpose (a service stopping) says so, not that it is reconnecting
                ending = [e for e in logs if e.get("connection") == "outage-log"][len(told) :]
                assert [(e["event"], e["log_level"]) for e in ending] == [("nats connection closed", "info")], ending
                # nats-py's own order: the error that cut the connection (UnexpectedEOF), the disconnection, the
                # first refused attempt, and at last the reconnection
                assert [e["event"] for e in told] == [
                    "nats error",
                    "nats disconnected; reconnecting",
                    "nats error",
                    "nats reconnected",
                ], told
                assert told[-1]["away_seconds"] >= 3.5 and told[-1]["attempts"] >= 3, told[-1]
            finally:
                if not closed:
                    await paiju_nats.close(client)

        asyncio.run(main())
