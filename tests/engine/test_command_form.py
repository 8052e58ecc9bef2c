"""The stored form of a command of several events, as an operator sets it (``PAIJU_STORE_COMMAND_FORM``): an engine
started with ``batch`` writes an atomic batch, a message per event (the form services of releases before 2026-12
read: the first roll of an upgrade); one started with ``message``, the default, writes one message; and the games
written either way, in one stream, read alike — the stream a rolling upgrade leaves (docs/operations.md, "Upgrade").
The lobby's and scoring's own streams, as their bootstraps open them, are written in the form set too. A value that
is neither is refused at start, naming the variable."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import nats
import pytest

from paiju.engine.config import Settings as EngineSettings
from paiju.lobby.bootstrap import own_stream
from paiju.lobby.config import Settings as LobbySettings
from paiju.platform import settings as s
from paiju.platform.probe import free_port
from paiju.platform.store.base import NEW
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Identity, Role
from paiju.scoring.bootstrap import connections
from paiju.scoring.config import ReadModels as ScoringReadModels
from paiju.v1 import engine_pb2, engine_pb2_grpc

from ..support.credentials import mint_token, process_env
from .test_process import wait_for_health

SEED_SECRET = "command-form-test-seeds-" * 2


def environment(nats_url: str, stream: str, address: str, form: str | None) -> dict[str, str]:
    env = {
        **os.environ,
        "PAIJU_ENGINE_ADDRESS": address,
        "NATS_URL": nats_url,
        "PAIJU_GAMES_STREAM": stream,
        "PAIJU_GAMES_SUBJECT_PREFIX": f"game.{stream.lower()}",
        "PAIJU_ENGINE_METRICS_PORT": "0",
        **process_env(Path(tempfile.mkdtemp(prefix="paiju-form-"))),
        "PAIJU_SEED_SECRET": SEED_SECRET,
        "PAIJU_FAIR_DEALING": "off",  # a game is dealt as it is created: its creation is a command of several events
        "PAIJU_LOG_LEVEL": "warning",
    }
    env.pop("PAIJU_STORE_COMMAND_FORM", None)
    if form is not None:
        env["PAIJU_STORE_COMMAND_FORM"] = form
    return env


@contextmanager
def engine(nats_url: str, stream: str, form: str | None) -> Iterator[str]:
    """`paiju engine` on ``stream`` with the command form ``form`` (``None``: unset); yields its address."""
    address = f"127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [sys.executable, "-m", "paiju.cli", "engine"],
        env=environment(nats_url, stream, address, form),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        try:
            wait_for_health(address, time.monotonic() + 30)
        except AssertionError:
            process.kill()
            raise AssertionError(process.communicate()[1].decode(errors="replace")[-3000:]) from None
        yield address
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err.decode(errors="replace")[-3000:]


async def create(address: str, game_id: str) -> None:
    service = (
        ("authorization", f"Bearer {mint_token(Identity('lobby', Role.SERVICE, expires=int(time.time()) + 60))}"),
    )
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
        await stub.CreateGame(
            engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_TRACTOR), metadata=service
        )


async def raw_messages(nats_url: str, stream: str) -> list[tuple[str, dict[str, str]]]:
    """Every message of ``stream`` as NATS holds it: its subject's last token (the game) and its headers."""
    client = await nats.connect(nats_url)
    try:
        js = client.jetstream()
        last = (await js.stream_info(stream)).state.last_seq
        found = []
        for sequence in range(1, last + 1):
            message = await js.get_msg(stream, sequence)
            found.append((str(message.subject).rsplit(".", 1)[-1], dict(message.headers or {})))
        return found
    finally:
        await client.close()


def test_each_writing_service_reads_the_command_form() -> None:
    """The engine, the lobby and scoring (and its rebuild, whose rater appends) each read the setting."""
    for settings in (EngineSettings, LobbySettings, ScoringReadModels):
        assert ("store_command_form", s.STORE_COMMAND_FORM) in settings.declarations()


def test_a_rolling_upgrade_writes_batches_then_one_message_and_reads_both(nats_url: str) -> None:
    stream = "F" + uuid.uuid4().hex[:10].upper()
    with engine(nats_url, stream, "batch") as address:  # the first roll: what an older replica reads
        asyncio.run(create(address, "early"))
    batch = asyncio.run(raw_messages(nats_url, stream))
    assert [game for game, _ in batch] == ["early"] * 3  # created and dealt: a command of three events
    assert len({headers["Nats-Batch-Id"] for _, headers in batch}) == 1
    assert [headers["Nats-Batch-Sequence"] for _, headers in batch] == ["1", "2", "3"]
    assert [headers.get("Nats-Batch-Commit") for _, headers in batch] == [None, None, "1"]
    assert [headers["Paiju-Version"] for _, headers in batch] == ["1", "2", "3"]
    assert not any("Paiju-Events" in headers for _, headers in batch)

    with engine(nats_url, stream, None) as address:  # the second roll: the default, one message a command
        asyncio.run(create(address, "late"))
        replayed = {game: asyncio.run(replay(address, game)) for game in ("early", "late")}
    (after,) = asyncio.run(raw_messages(nats_url, stream))[3:]
    game, headers = after
    assert game == "late"
    assert (headers["Paiju-Events"], headers["Paiju-First-Version"], headers["Paiju-Command-Id"]) == (
        "3",
        "1",
        "create:late",
    )
    assert not any(name.startswith("Nats-Batch") or name == "Paiju-Version" for name in headers)

    # the new release reads both forms: the store's loads, and the engine's replay of either game
    async def load() -> dict[str, list[tuple[int, int, str]]]:
        client = await nats.connect(nats_url)
        try:
            store = JetStreamEventStore(client, stream, f"game.{stream.lower()}")
            await store.discover()
            return {
                game: [(r.version, r.sequence, r.command_id) for r in await store.load(game)]
                for game in ("early", "late")
            }
        finally:
            await client.close()

    assert asyncio.run(load()) == {
        "early": [(1, 1, "create:early"), (2, 2, "create:early"), (3, 3, "create:early")],
        "late": [(1, 4, "create:late"), (2, 4, "create:late"), (3, 4, "create:late")],
    }
    assert replayed["early"] == replayed["late"] and len(replayed["early"]) == 3


async def replay(address: str, game_id: str) -> list[str]:
    """What each event of ``game_id`` is, as the engine replays it to an analyst."""
    analyst = (("authorization", f"Bearer {mint_token(Identity('a', Role.ANALYST, expires=int(time.time()) + 60))}"),)
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
        return [
            f"{r.envelope.WhichOneof('payload')}:{r.envelope.tractor.WhichOneof('event')}"
            async for r in stub.Replay(engine_pb2.ReplayRequest(game_id=game_id), metadata=analyst)
        ]


@pytest.mark.integration  # starts `paiju engine`
def test_a_command_form_that_is_neither_is_refused_at_start() -> None:
    """Before it reaches for NATS (there is none at this address: an engine that read the value would wait)."""
    address = f"127.0.0.1:{free_port()}"
    started = subprocess.run(
        [sys.executable, "-m", "paiju.cli", "engine"],
        env=environment(f"nats://127.0.0.1:{free_port()}", "NONE", address, "batches"),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert started.returncode == 1
    assert "PAIJU_STORE_COMMAND_FORM='batches': must be message (a command's events in one message) or batch" in (
        started.stderr.decode()
    )


@pytest.mark.parametrize("form", ["batch", "message"])
def test_the_lobby_and_scoring_write_their_own_streams_in_the_form_set(
    nats_url: str, database_dsn: str, form: str
) -> None:
    suffix = uuid.uuid4().hex[:10].upper()
    lobby = LobbySettings(nats_url=nats_url, stream=f"L{suffix}", prefix=f"l.{suffix.lower()}", store_command_form=form)
    scoring = ScoringReadModels(
        nats_url=nats_url,
        database_url=database_dsn,
        stream=f"T{suffix}",
        prefix=f"t.{suffix.lower()}",
        games_stream=f"G{suffix}",
        games_prefix=f"g.{suffix.lower()}",
        lobby_stream=lobby.stream,
        lobby_prefix=lobby.prefix,
        store_command_form=form,
    )

    async def write() -> dict[str, list[bytes]]:
        lobby_store = await own_stream(lobby)
        games = await JetStreamEventStore.connect(nats_url, stream=scoring.games_stream, prefix=scoring.games_prefix)
        try:
            async with connections(scoring) as c:
                loaded = {}
                for store in (lobby_store, c.tournaments_store):
                    await store.append("a1", NEW, "two", [b"first", b"second"])
                    loaded[store.stream] = [r.data for r in await store.load("a1")]
                return loaded
        finally:
            await asyncio.gather(lobby_store.close(), games.close())

    assert asyncio.run(write()) == {lobby.stream: [b"first", b"second"], scoring.stream: [b"first", b"second"]}
    for stream in (lobby.stream, scoring.stream):
        stored = [headers for _, headers in asyncio.run(raw_messages(nats_url, stream))]
        if form == "batch":
            assert [(h["Paiju-Version"], h["Nats-Batch-Sequence"], h.get("Nats-Batch-Commit")) for h in stored] == [
                ("1", "1", None),
                ("2", "2", "1"),
            ], stream
        else:
            assert [(h["Paiju-Events"], h["Paiju-First-Version"], "Nats-Batch-Id" in h) for h in stored] == [
                ("2", "1", False)
            ], stream
