"""Stored events never change meaning: streams recorded with the code of 2026-12 (`tests/fixtures/streams/`: a
砸六家 match, a 拖拉机 game and a lobby table) replay to the very states they had then, and every lobby command,
stored with the digest of that time, is still answered as the first time when it is retried."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from paiju.engine.games import Games
from paiju.lobby import table as tb
from paiju.lobby.service import new_tables
from paiju.platform.repository import SCHEMA_VERSION, CommandIdReused, NewerSchema, upcast
from paiju.platform.store import MemoryEventStore, Position
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.v1 import engine_pb2

from ..fixtures.streams.scenario import EXPECTED, FIXTURE, TABLE, TRACTOR_GAME, ZLJ_GAME, fingerprint, table_commands

HERE = Path(__file__).parents[1] / "fixtures" / "streams"


async def stores(found: dict[str, Any] | None = None) -> dict[str, Any]:
    """The recorded streams, appended batch by batch as they were stored (into ``found``'s stores; by default
    in-memory ones)."""
    found = found or {"GAMES": MemoryEventStore(), "LOBBY": MemoryEventStore()}
    positions: dict[str, Position] = {}
    for line in (HERE / FIXTURE).read_text().splitlines():
        batch = json.loads(line)
        store = found[batch["stream"]]
        aggregate = batch["aggregate"]
        events = [base64.b64decode(e) for e in batch["events"]]
        stored = await store.append(aggregate, positions.get(aggregate, Position()), batch["command_id"], events)
        positions[aggregate] = stored[-1].position
    return found


async def replayed(recorded: dict[str, Any]) -> None:
    """Check that ``recorded`` replays to the states the streams had when they were recorded."""
    expected = json.loads((HERE / EXPECTED).read_text())
    games = Games(recorded["GAMES"])
    for game_id in (ZLJ_GAME, TRACTOR_GAME):
        game = await games.load(game_id)
        assert game.state.phase.value == "ended", game_id
        assert (game.version, fingerprint(game.state)) == (
            expected[game_id]["version"],
            expected[game_id]["state"],
        ), f"{game_id} replays to another state than when it was recorded"
    table = await new_tables(recorded["LOBBY"]).load(TABLE)
    assert table.state.status is tb.Status.PLAYING
    assert (table.version, fingerprint(table.state)) == (expected[TABLE]["version"], expected[TABLE]["state"])


@pytest.mark.parametrize("form", ["atomic batches", "one message per command", "both"])
def test_the_recorded_streams_stored_in_jetstream_in_every_form_replay_to_the_states_they_had(
    form: str, nats_url: str
) -> None:
    """The recorded streams stored in JetStream as streams were written before (a command of several events as an
    atomic batch, a message per event), as they are written now (a command, one message), and the two mixed in one
    stream (each aggregate's commands alternating): the games and the table replay alike, and a stream read whole
    gives the events the fake holds."""

    async def body() -> None:
        suffix = uuid.uuid4().hex[:8]
        found: dict[str, Any] = {}
        for name, prefix in (("GAMES", "paiju.game"), ("LOBBY", "paiju.lobby")):
            stream = f"{name}{suffix}".upper()
            stores_of = [
                await JetStreamEventStore.connect(
                    nats_url, stream=stream, prefix=f"{prefix}{suffix}", partitions=16, batches=batches
                )
                for batches in ((True,) if form == "atomic batches" else (False,) if form != "both" else (True, False))
            ]
            found[name] = stores_of[0] if len(stores_of) == 1 else Alternating(stores_of)
        try:
            await replayed(await stores(found))
            memory = await stores()
            lines = [json.loads(line) for line in (HERE / FIXTURE).read_text().splitlines()]
            for name in ("GAMES", "LOBBY"):
                read = await found[name].read_all()
                faked = await memory[name].read_all()
                assert [(r.aggregate, r.version, r.command_id, r.data) for r in read] == [
                    (r.aggregate, r.version, r.command_id, r.data) for r in faked
                ]
                commands = [len(b["events"]) for b in lines if b["stream"] == name]
                messages = len({r.sequence for r in read})
                if form == "atomic batches":
                    assert messages == sum(commands), "a message per event"
                elif form == "one message per command":
                    assert messages == len(commands), "a message per command"
                elif name == "GAMES":  # (the lobby's commands of the recording are of one event each)
                    assert len(commands) < messages < sum(commands), "both forms in one stream"
        finally:
            for store in found.values():
                await store.close()

    asyncio.run(body())


class Alternating:
    """Stores of one stream, the commands appended by each in turn (a stream of every form); read by the first."""

    def __init__(self, stores: list[JetStreamEventStore]) -> None:
        self._stores = stores
        self._turn = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stores[0], name)

    async def append(self, *args: Any) -> Any:
        self._turn += 1
        return await self._stores[self._turn % len(self._stores)].append(*args)

    async def close(self) -> None:
        for store in self._stores:
            await store.close()


def test_the_recorded_streams_replay_to_the_states_they_had() -> None:
    async def body() -> None:
        await replayed(await stores())

    asyncio.run(body())


def test_a_lobby_command_stored_with_the_old_digest_is_answered_as_the_first_time() -> None:
    async def body() -> None:
        tables = new_tables((await stores())["LOBBY"])
        version = (await tables.load(TABLE)).version
        for command, command_id, actor in table_commands():
            _, events = await tables.act(TABLE, command, command_id, actor)
            assert events == [], command_id
        assert (await tables.load(TABLE)).version == version
        # another command under a stored id is still refused
        with pytest.raises(CommandIdReused):
            await tables.act(TABLE, tb.SetReady(table_commands()[1][2], False), "open", "someone")

    asyncio.run(body())


def test_an_event_of_a_newer_schema_is_refused_not_misread() -> None:
    """An envelope written by a newer Paiju (a schema version this one does not know) stops the read with a message
    that says so; the recorded ones (version 1) read."""

    async def body() -> None:
        store = MemoryEventStore()
        newer = engine_pb2.Envelope(game_id="g-new", version=1, command_id="c", schema_version=SCHEMA_VERSION + 1)
        newer.zlj.SetInParent()  # a 砸六家 event of a kind this Paiju may not know
        await store.append("g-new", Position(), "c", [newer.SerializeToString()])
        with pytest.raises(NewerSchema, match="schema version 2"):
            await Games(store).load("g-new")
        assert upcast(engine_pb2.Envelope(schema_version=SCHEMA_VERSION)).schema_version == SCHEMA_VERSION

    asyncio.run(body())
