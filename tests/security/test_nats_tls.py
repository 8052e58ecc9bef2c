"""The TLS stack: nats-server with a certificate of a CA the suite makes, and its users. A service that checks the
server against that CA (``NATS_TLS_CA``) appends and reads; a client that does not trust the CA, or speaks plain
NATS, gets nowhere."""

from __future__ import annotations

import asyncio
import ssl
import tempfile
from pathlib import Path

import nats
import nats.errors
import pytest

from paiju.dev.stack import embedded_nats
from paiju.platform.nats import Access
from paiju.platform.store import Position
from paiju.platform.store.jetstream import JetStreamEventStore

from ..support.natsusers import NatsServer, authorization
from ..support.tls import make_certificates

pytestmark = pytest.mark.integration


def test_a_service_speaks_tls_to_nats_with_the_ca_it_is_given_and_other_clients_are_refused() -> None:
    folder = Path(tempfile.mkdtemp(prefix="paiju-tls-"))
    certificates = make_certificates(folder / "tls")
    other = make_certificates(folder / "other")  # another CA: its certificates prove nothing here

    async def scenario(server: NatsServer) -> None:
        engine = Access("engine", server.seed("engine").read_text(), str(certificates.ca))
        store = await JetStreamEventStore.connect(server.plain_url, "GAMES", "paiju.game", access=engine)
        await store.append("g1", Position(), "c1", [b"over tls"])
        assert [r.data for r in await store.load("g1")] == [b"over tls"]
        assert store.client.connected_url is not None
        await store.close()
        untrusting = Access("engine", server.seed("engine").read_text(), str(other.ca))
        with pytest.raises((ssl.SSLError, nats.errors.Error, OSError)):
            await nats.connect(
                server.plain_url, allow_reconnect=False, max_reconnect_attempts=0, **untrusting.options()
            )
        plain = Access("engine", server.seed("engine").read_text())
        with pytest.raises((nats.errors.Error, OSError)):
            await nats.connect(server.plain_url, allow_reconnect=False, max_reconnect_attempts=0, **plain.options())

    keys = folder / "keys"
    with embedded_nats(
        folder / "data", authorization=authorization(keys), tls=(certificates.cert, certificates.key)
    ) as url:
        asyncio.run(scenario(NatsServer(url, keys)))
