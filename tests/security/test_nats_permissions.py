"""NATS admits only its users, and each user only to its own subjects (`paiju.platform.natsauth`): a client without
credentials is refused; the lobby's credentials can neither publish into the games' stream nor delete, purge or
change it through the JetStream API; the analyst's read the streams and nothing else, and write nothing.

A server of this module's own (the streams under their production names, which the permissions are made from),
with the users `make run` makes."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest

from paiju.platform.nats import Access
from paiju.platform.natsauth import ROLES, permissions
from paiju.platform.store import Position
from paiju.platform.store.jetstream import JetStreamEventStore

from ..support.nats_server import RestartableNats
from ..support.waiting import wait_until

pytestmark = pytest.mark.integration

REFUSAL_SECONDS = 1.0
"""How long a request the server refuses goes unanswered before the test looks at what happened (the refusal itself
arrives at once, as an error of the connection)."""


@pytest.fixture(scope="module")
def server() -> Iterator[RestartableNats]:
    folder = Path(tempfile.mkdtemp(prefix="paiju-natsauth-"))
    with RestartableNats(folder / "nats") as running:
        yield running


def access(server: RestartableNats, role: str) -> Access:
    return Access(role, server.server.seed(role).read_text())


@asynccontextmanager
async def client(server: RestartableNats, role: str) -> AsyncIterator[tuple[Any, list[str]]]:
    """A connection as ``role``, and the errors the server sends it (its refusals)."""
    errors: list[str] = []

    async def heard(error: Exception) -> None:
        errors.append(str(error).lower())

    connection = await nats.connect(
        server.plain_url, allow_reconnect=False, error_cb=heard, **access(server, role).options()
    )
    try:
        yield connection, errors
    finally:
        await connection.close()


async def streams(server: RestartableNats) -> dict[str, JetStreamEventStore]:
    """The three streams, each made by its owner with its own credentials (which is what their owners may do),
    with one event each."""
    made = {}
    for role, stream, prefix in (
        ("engine", "GAMES", "paiju.game"),
        ("lobby", "LOBBY", "paiju.lobby"),
        ("scoring", "TOURNAMENTS", "paiju.tournament"),
    ):
        store = await JetStreamEventStore.connect(
            server.plain_url, stream=stream, prefix=prefix, access=access(server, role)
        )
        if not await store.load("a1"):
            await store.append("a1", Position(), f"{role}-c1", [b"first"])
        made[role] = store
    return made


async def refused(connection: Any, errors: list[str], subject: str, payload: bytes = b"") -> None:
    """Ask ``subject``: no answer comes, and the server says the publish was refused."""
    with pytest.raises(nats.errors.TimeoutError):
        await connection.request(subject, payload, timeout=REFUSAL_SECONDS)
    assert any("permissions violation for publish" in e and subject.lower() in e for e in errors), errors


def refused_subscription(errors: list[str], subject: str) -> Callable[[], bool]:
    """Whether the server has said it refused a subscription to ``subject`` (a condition to wait for)."""
    return lambda: any("permissions violation for subscription" in e and subject.lower() in e for e in errors)


async def state(server: RestartableNats, stream: str) -> tuple[int, list[str], bool, bool]:
    """(last sequence, subjects, deny delete, deny purge) of ``stream``, as the suite's own user reads them."""
    connection = await nats.connect(server.url)
    try:
        info = await connection.jetstream().stream_info(stream)
    finally:
        await connection.close()
    return (
        info.state.last_seq,
        list(info.config.subjects or []),
        bool(info.config.deny_delete),
        bool(info.config.deny_purge),
    )


def test_a_client_without_credentials_or_with_a_key_the_server_does_not_know_is_refused(
    server: RestartableNats,
) -> None:
    async def scenario() -> None:
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(server.plain_url, allow_reconnect=False, max_reconnect_attempts=0)
        from paiju.platform.natsauth import new_seed

        stranger = Access("engine", new_seed().decode())
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(server.plain_url, allow_reconnect=False, max_reconnect_attempts=0, **stranger.options())

    asyncio.run(scenario())


def test_the_lobby_can_neither_publish_into_the_games_stream_nor_delete_purge_or_change_it(
    server: RestartableNats,
) -> None:
    async def scenario() -> None:
        made = await streams(server)
        before = await state(server, "GAMES")
        async with client(server, "lobby") as (lobby, errors):
            # a forged event of a game, as a plain publish and as a JetStream append
            await refused(lobby, errors, "paiju.game.3.a1", b"forged")
            await refused(lobby, errors, "paiju.game.a1", b"forged")
            forged = JetStreamEventStore(lobby, "GAMES", "paiju.game", timeout=REFUSAL_SECONDS)
            await forged.discover()  # reading how it is partitioned is allowed: the lobby reads it
            with pytest.raises(Exception):  # noqa: B017 - unanswered: a timeout, whichever nats-py raises
                await forged.append("a2", Position(), "forged", [b"forged"])
            await refused(lobby, errors, "$JS.API.STREAM.DELETE.GAMES")
            await refused(lobby, errors, "$JS.API.STREAM.PURGE.GAMES", b"{}")
            await refused(lobby, errors, "$JS.API.STREAM.MSG.DELETE.GAMES", b'{"seq": 1}')
            config = json.dumps({"name": "GAMES", "subjects": ["paiju.>"], "deny_delete": False}).encode()
            await refused(lobby, errors, "$JS.API.STREAM.UPDATE.GAMES", config)
            await refused(lobby, errors, "$JS.API.STREAM.CREATE.GAMES", config)
            # the lobby's own stream it does write
            await made["lobby"].append("a3", Position(), "lobby-c3", [b"own"])
        assert await state(server, "GAMES") == before
        # the owner itself may not delete or purge its stream either
        async with client(server, "engine") as (engine, errors):
            await refused(engine, errors, "$JS.API.STREAM.DELETE.GAMES")
            await refused(engine, errors, "$JS.API.STREAM.PURGE.GAMES", b"{}")
        assert await state(server, "GAMES") == before
        for store in made.values():
            await store.close()

    asyncio.run(scenario())


def test_the_analyst_reads_the_three_streams_and_nothing_else_and_writes_nothing(server: RestartableNats) -> None:
    async def scenario() -> None:
        made = await streams(server)
        before = {stream: await state(server, stream) for stream in ("GAMES", "LOBBY", "TOURNAMENTS")}
        async with client(server, "analyst") as (analyst, errors):
            for stream, prefix in (
                ("GAMES", "paiju.game"),
                ("LOBBY", "paiju.lobby"),
                ("TOURNAMENTS", "paiju.tournament"),
            ):
                reader = JetStreamEventStore(analyst, stream, prefix)
                await reader.discover()
                assert [r.data for r in await reader.load("a1")] == [b"first"]
                assert [r.data for r in await reader.read_all()][:1] == [b"first"]
                await refused(analyst, errors, f"{prefix}.a1", b"forged")
                await refused(analyst, errors, f"$JS.API.STREAM.DELETE.{stream}")
                await refused(analyst, errors, f"$JS.API.STREAM.UPDATE.{stream}", b"{}")
            await refused(analyst, errors, "$JS.API.STREAM.CREATE.ELSEWHERE", b'{"name": "ELSEWHERE"}')
            # the engine's key-value buckets (leases, live games): neither read nor written
            await refused(analyst, errors, "$JS.API.STREAM.INFO.KV_paiju-owners-GAMES")
            await refused(analyst, errors, "$JS.API.DIRECT.GET.KV_paiju-live-GAMES.$KV.paiju-live-GAMES.g1")
            await refused(analyst, errors, "$KV.paiju-owners-GAMES.p.0", b"me")
            # nor listening to the subjects as they are written, or to what the server sends a service
            for subject in ("paiju.game.>", "_INBOX_engine.>", ">"):
                await analyst.subscribe(subject)
                await analyst.flush()
                await wait_until(
                    refused_subscription(errors, subject),
                    f"the server to refuse the analyst's subscription to {subject}",
                )
        assert {stream: await state(server, stream) for stream in before} == before
        for store in made.values():
            await store.close()

    asyncio.run(scenario())


def test_a_reader_waits_for_the_stream_its_owner_makes_and_never_makes_it() -> None:
    """The lobby reads the tournaments' stream: started first, it waits, and it is the stream scoring made (scoring's
    configuration) that it reads once there."""

    async def scenario(server: RestartableNats) -> None:
        waiting = asyncio.create_task(
            JetStreamEventStore.connect(
                server.plain_url, "TOURNAMENTS", "paiju.tournament", access=access(server, "lobby"), create=False
            )
        )
        await asyncio.sleep(1.0)
        assert not waiting.done()
        owner = await JetStreamEventStore.connect(
            server.plain_url, "TOURNAMENTS", "paiju.tournament", access=access(server, "scoring")
        )
        await owner.append("t1", Position(), "c1", [b"paired"])
        reader = await asyncio.wait_for(waiting, 10)
        assert [r.data for r in await reader.load("t1")] == [b"paired"]
        await reader.close()
        await owner.close()

    folder = Path(tempfile.mkdtemp(prefix="paiju-natsauth-"))
    with RestartableNats(folder / "nats") as server:
        asyncio.run(scenario(server))


def test_every_role_has_permissions_and_none_may_delete_or_purge_a_stream() -> None:
    for role in ROLES:
        denied = permissions(role)["publish"]["deny"]
        assert "$JS.API.STREAM.DELETE.>" in denied and "$JS.API.STREAM.PURGE.>" in denied
    assert "paiju.game.>" not in permissions("lobby")["publish"]["allow"]
    assert not [
        p for p in permissions("analyst")["publish"]["allow"] if not p.startswith(("$JS.API.", "$JS.ACK.", "$JS.FC."))
    ]


def test_a_store_written_without_authentication_is_read_and_continued_once_the_users_are_on() -> None:
    """An existing ``.data/`` (or cluster): its streams are in the server's one account, where the users are made."""
    from paiju.dev.stack import embedded_nats

    from ..support.natsusers import NatsServer, authorization

    folder = Path(tempfile.mkdtemp(prefix="paiju-natsauth-upgrade-"))

    async def before(url: str) -> None:
        store = await JetStreamEventStore.connect(url, "GAMES", "paiju.game", partitions=16)
        await store.append("g1", Position(), "c1", [b"before"])
        await store.close()

    async def after(server: NatsServer) -> None:
        engine = Access("engine", server.seed("engine").read_text())
        store = await JetStreamEventStore.connect(server.plain_url, "GAMES", "paiju.game", access=engine)
        assert store.partitions == 16
        first = await store.load("g1")
        assert [r.data for r in first] == [b"before"]
        await store.append("g1", first[-1].position, "c2", [b"after"])
        assert [r.data for r in await store.load("g1")] == [b"before", b"after"]
        await store.close()

    with embedded_nats(folder / "data") as url:
        asyncio.run(before(url))
    keys = folder / "keys"
    with embedded_nats(folder / "data", authorization=authorization(keys)) as url:
        asyncio.run(after(NatsServer(url, keys)))
