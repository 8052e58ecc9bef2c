"""JetStream's files encrypted at rest, as production's nats.conf has them (``cipher: chachapoly`` and the key
included from a file, deploy/k8s/prod/nats.conf): a store written before encryption was on is encrypted at the
server's first start with the key, and its streams are read and continued as they were — the last step of the upgrade
order of docs/operations.md ("Upgrade": NATS users, TLS and encryption)."""

from __future__ import annotations

import asyncio
import secrets
import tempfile
from pathlib import Path

import pytest

from paiju.platform.nats import Access
from paiju.platform.store import Position
from paiju.platform.store.jetstream import JetStreamEventStore

from ..support.nats_server import RestartableNats

pytestmark = pytest.mark.integration

MARKER = b"a deal in the clear " + secrets.token_hex(8).encode()
"""What an event says, easy to find in a file that holds it unencrypted."""


def files_holding(folder: Path, text: bytes) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file() and text in path.read_bytes()]


def test_a_store_written_without_encryption_is_encrypted_at_the_first_start_with_the_key() -> None:
    folder = Path(tempfile.mkdtemp(prefix="paiju-encryption-"))
    data = folder / "nats"
    server = RestartableNats(data)

    def engine() -> Access:
        return Access("engine", server.server.seed("engine").read_text())

    async def write() -> None:
        store = await JetStreamEventStore.connect(server.plain_url, "GAMES", "paiju.game", access=engine())
        await store.append("g1", Position(), "c1", [MARKER + b" 1"])
        await store.close()

    async def read_and_continue() -> list[bytes]:
        store = await JetStreamEventStore.connect(server.plain_url, "GAMES", "paiju.game", access=engine())
        recorded = await store.load("g1")
        if len(recorded) == 1:
            await store.append("g1", recorded[-1].position, "c2", [MARKER + b" 2"])
            recorded = await store.load("g1")
        await store.close()
        return [r.data for r in recorded]

    with server:
        asyncio.run(write())
    assert files_holding(data, MARKER), "the store before encryption holds its events in the clear"

    (folder / "jetstream-key.conf").write_text(f'key: "{secrets.token_urlsafe(32)}"\n')
    server.jetstream = "cipher: chachapoly\n  include ./jetstream-key.conf"  # beside the server's nats.conf
    with server:
        assert asyncio.run(read_and_continue()) == [MARKER + b" 1", MARKER + b" 2"]
    assert not files_holding(data, MARKER), "every file of the store is encrypted, the old events' too"
    with server:  # and it starts again on its encrypted files
        assert asyncio.run(read_and_continue()) == [MARKER + b" 1", MARKER + b" 2"]
