"""Games for the analyst tools' tests, on a real nats-server: a 砸六家 match of two deals and a 拖拉机 timed game
of two deals (its first deal void once, D-TR-6.6), each played to its end by bots through the real engine
service (`tests/engine/harness.py`); copies of their first events as live games; copies recorded at chosen
times; and a lobby stream whose table started two of them. Recorded once per test process and NATS server.
Import with ``from .recorded import ...``."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import Any, cast

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from paiju.contract.games import TRACTOR_COMMANDS
from paiju.platform.store import Position
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Role
from paiju.rules.cards import Card
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import model as tractor
from paiju.rules.zlj import model as zlj
from paiju.tools.analyst import GameLog, decode
from paiju.v1 import engine_pb2, lobby_events_pb2, tractor_pb2, zlj_pb2

from ...engine.harness import NOW, auth, engine, play_tractor, play_zlj, seated, token

ZLJ_SEED = 4
TRACTOR_SEED = 11
COVERED_SEAT = 2
NAMES = {f"player-{seat}": name for seat, name in enumerate(("Ann", "伯乐", "Cy", "Dee", "Ed", "Flo"))}
"""The names the players registered under (the lobby's `AccountRegistered` events of the recorded lobby stream)."""


@dataclass(frozen=True)
class Recorded:
    """Where the games are, and their logs as stored (the truth the tests compare with)."""

    url: str
    stream: str
    prefix: str
    lobby_stream: str
    lobby_prefix: str
    logs: dict[str, GameLog]
    """Every game of the stream by id."""
    table: str
    """The lobby table whose matches were the 砸六家 and the 拖拉机 game."""

    def args(self) -> list[str]:
        """The command line options naming these streams."""
        return ["--nats", self.url, "--stream", self.stream, "--prefix", self.prefix]

    def lobby_args(self) -> list[str]:
        return ["--lobby-stream", self.lobby_stream, "--lobby-prefix", self.lobby_prefix]


ZLJ = "zlj-played"
TRACTOR = "tractor-played"
LIVE_ZLJ = "zlj-live"
"""The 砸六家 match up to a few plays into its first deal."""
LIVE_ZLJ_TRIBUTE = "zlj-live-tribute"
"""The 砸六家 match up to its second deal's first tribute card given."""
LIVE_TRACTOR = "tractor-live"
"""The 拖拉机 game up to a few tricks into its first deal played to the end (after the void one)."""
EARLY = "zlj-early"
LATE = "tractor-late"
"""Copies recorded at `EARLY_START` and `LATE_START`, one minute an event."""
EARLY_START = datetime.fromisoformat("2030-01-01T10:00:00+00:00")
LATE_START = datetime.fromisoformat("2030-01-02T10:00:00+00:00")

_recorded: dict[str, Recorded] = {}


def recorded(request: pytest.FixtureRequest) -> Recorded:
    """The recorded games on this test process's nats-server (played on first use)."""
    url: str = request.getfixturevalue("nats_url")
    if url not in _recorded:
        _recorded[url] = asyncio.run(_record(url, request))
    return _recorded[url]


async def _record(url: str, request: pytest.FixtureRequest) -> Recorded:
    async with engine("jetstream", request, seed=7) as (stub, games):
        await _play_zlj(stub)
        await _play_tractor(stub)
        store = cast(JetStreamEventStore, games.store)
        stream = await store.client.jetstream().find_stream_name_by_subject(store.subject(ZLJ))
        prefix = store.prefix
        played = {g: (await games.history(g)).envelopes for g in (ZLJ, TRACTOR)}
        zlj_cut = _version_of(played[ZLJ], lambda e: isinstance(e, zlj.CardsPlayed), 8)
        tribute_cut = _version_of(played[ZLJ], lambda e: isinstance(e, zlj.TributeGiven), 1)
        tractor_cut = _version_of(played[TRACTOR], lambda e: isinstance(e, tractor.TrickWon), 3)
        await copy(store, played[ZLJ][:zlj_cut], LIVE_ZLJ)
        await copy(store, played[ZLJ][:tribute_cut], LIVE_ZLJ_TRIBUTE)
        await copy(store, played[TRACTOR][:tractor_cut], LIVE_TRACTOR)
        await copy(store, played[ZLJ], EARLY, EARLY_START)
        await copy(store, played[TRACTOR], LATE, LATE_START)
        logs = {g: decode((await games.history(g)).envelopes) for g in await store.aggregates()}
    lobby_stream = "L" + uuid.uuid4().hex[:12].upper()
    lobby_prefix = f"l.{lobby_stream.lower()}"
    table = "table-0a1b2c3d"
    lobby = await JetStreamEventStore.connect(url, stream=lobby_stream, prefix=lobby_prefix)
    try:
        await _start_matches(lobby, table, [(ZLJ, "zlj"), (TRACTOR, "tractor")])
        await _start_matches(lobby, "table-99999999", [(EARLY, "zlj")])
        await _register(lobby, NAMES)
    finally:
        await lobby.close()
    return Recorded(url, stream, prefix, lobby_stream, lobby_prefix, logs, table)


async def _play_zlj(stub: Any) -> None:
    options = zlj_pb2.ZljOptions(
        deals=2, reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL
    )
    request = engine_pb2.CreateGameRequest(game_id=ZLJ, game=engine_pb2.GAME_ZLJ, zlj_options=options)
    service = auth(token(Role.SERVICE))
    await stub.CreateGame(seated(request, zlj.SEATS), metadata=service)
    acts = 0

    async def cover_once(seat: int, legal: Any) -> None:
        """A bot covers a seat and its player comes back (seat changes at any time, recorded in the log)."""
        nonlocal acts
        acts += 1
        if acts == 10:
            for change, player in ((engine_pb2.SEAT_CHANGE_COVER, "bot-2"), (engine_pb2.SEAT_CHANGE_RETURN, None)):
                assign = engine_pb2.AssignSeatsRequest(game_id=ZLJ, command_id=uuid.uuid4().hex, change=change)
                assign.seats.add(seat=COVERED_SEAT, player_id=player or f"player-{COVERED_SEAT}")
                await stub.AssignSeats(assign, metadata=service)

    await play_zlj(stub, ZLJ, SeededRandom(ZLJ_SEED), before_act=cover_once)


async def _play_tractor(stub: Any) -> None:
    request = engine_pb2.CreateGameRequest(
        game_id=TRACTOR, game=engine_pb2.GAME_TRACTOR, tractor_options=tractor_pb2.TractorOptions(round_minutes=25)
    )
    service = auth(token(Role.SERVICE))
    await stub.CreateGame(seated(request, tractor.SEATS), metadata=service)
    tick = cast(Any, TRACTOR_COMMANDS.encode(tractor.ClockTick(NOW)))  # two more deals, then the end (D-TR-9)
    await stub.Act(engine_pb2.ActRequest(game_id=TRACTOR, command_id="tick", tractor=tick), metadata=service)
    await play_tractor(stub, TRACTOR, SeededRandom(TRACTOR_SEED), void_deals=1)


def _version_of(envelopes: Sequence[engine_pb2.Envelope], kind: Callable[[Any], bool], nth: int) -> int:
    """The version of the ``nth`` event ``kind`` picks."""
    events = decode(envelopes).events
    versions = [v for v, e in enumerate(events, start=1) if kind(e)]
    assert len(versions) >= nth, "the recorded game lacks what a test needs: choose another seed"
    return versions[nth - 1]


async def copy(
    store: JetStreamEventStore,
    envelopes: Sequence[engine_pb2.Envelope],
    game_id: str,
    start: datetime | None = None,
) -> None:
    """Append ``envelopes`` as game ``game_id``, command by command (recorded from ``start``, one minute a
    version, when given)."""
    position = Position()
    for command_id, group in groupby(envelopes, key=lambda e: e.command_id):
        data = []
        for envelope in group:
            renamed = engine_pb2.Envelope()
            renamed.CopyFrom(envelope)
            renamed.game_id = game_id
            if start is not None:
                renamed.recorded_at.FromSeconds(int(start.timestamp()) + 60 * envelope.version)
            data.append(renamed.SerializeToString())
        position = (await store.append(game_id, position, command_id, data))[-1].position


async def _start_matches(lobby: JetStreamEventStore, table: str, games: Sequence[tuple[str, str]]) -> None:
    """A table's lobby log: opened, then one match start per game (what the lobby records)."""
    when = Timestamp()
    when.FromDatetime(EARLY_START)
    opened = lobby_events_pb2.LobbyEnvelope(aggregate=table, version=1, command_id="open", actor="owner")
    opened.event.table_opened.table_id = table
    envelopes = [opened]
    for match, (game_id, game) in enumerate(games, start=1):
        started = lobby_events_pb2.LobbyEnvelope(
            aggregate=table, version=1 + match, command_id=f"start-{match}", actor="lobby", recorded_at=when
        )
        started.event.match_started.game_id = game_id
        started.event.match_started.match = match
        started.event.match_started.game = game
        envelopes.append(started)
    position = Position()
    for envelope in envelopes:
        stored = await lobby.append(table, position, envelope.command_id, [envelope.SerializeToString()])
        position = stored[-1].position


async def _register(lobby: JetStreamEventStore, names: dict[str, str]) -> None:
    """The players' accounts, as the lobby records them (their names)."""
    for player_id, name in names.items():
        registered = lobby_events_pb2.LobbyEnvelope(aggregate=player_id, version=1, command_id="register")
        registered.event.account_registered.player_id = player_id
        registered.event.account_registered.name = name
        await lobby.append(player_id, Position(), "register", [registered.SerializeToString()])


def public_cards(events: Sequence[Any]) -> Counter[Card]:
    """Every card a spectator has been shown by ``events``, counted as often as it was shown."""
    shown: Counter[Card] = Counter()
    for event in events:
        if isinstance(event, zlj.CardsPlayed | tractor.CardsPlayed | zlj.TributeResisted):
            shown.update(event.cards)
        elif isinstance(event, zlj.FourTake):
            shown.update(event.fours)
            shown.update(event.taken)
        elif isinstance(event, tractor.CardFlipped):
            shown[event.card] += 1
        elif isinstance(event, tractor.BidsRevealed | tractor.CountersRevealed) and event.winner is not None:
            shown.update(event.winner.cards)
    return shown
