"""Reading game logs from NATS JetStream: the games of the GAMES stream (through the engine's `Games`), the
games of a lobby table (its `LobbyMatchStarted` events on the LOBBY stream) and of a tournament (its tables'
first matches, from the TOURNAMENTS stream). Reading only: no stream is created.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import nats
from nats.errors import Error as NatsError
from nats.js.errors import NotFoundError

from paiju.engine.games import GameNotFound, Games
from paiju.lobby.table import bot_name, game_id_of
from paiju.platform import settings as s
from paiju.platform.nats import Access, servers
from paiju.platform.store import Recorded
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.tools.analyst.log import GameLog, decode, from_game
from paiju.v1 import engine_pb2, lobby_events_pb2, tournament_events_pb2

CONNECT_SECONDS = 5.0


class AnalystError(Exception):
    """What was asked for is not there (an unknown game, table or stream), or NATS cannot be reached."""


@dataclass(frozen=True)
class Source(s.Settings):
    """Where the streams are: the NATS URL, the games' stream and subject prefix, the lobby's, the tournaments'; from
    the services' own settings in the environment (`from_env`: ``NATS_URL``, ``PAIJU_GAMES_STREAM``, ...)."""

    url: str = s.NATS_URL.field()
    stream: str = s.GAMES_STREAM.field()
    prefix: str = s.GAMES_PREFIX.field()
    lobby_stream: str = s.LOBBY_STREAM.field()
    lobby_prefix: str = s.LOBBY_PREFIX.field()
    tournaments_stream: str = s.TOURNAMENTS_STREAM.field()
    tournaments_prefix: str = s.TOURNAMENTS_PREFIX.field()
    nats_seed: str = s.NATS_SEED.but(
        help="the analyst's NKey seed: read-only access to the streams (`paiju keys nats` makes it, `analyst.nk`)"
    ).field()
    nats_ca: str = s.NATS_CA.field()

    @property
    def access(self) -> Access:
        return Access("analyst", self.nats_seed, self.nats_ca)


async def _quiet(error: Exception) -> None:
    """A connection error is reported once, as an `AnalystError`, not logged on every attempt."""


@asynccontextmanager
async def _store(url: str, stream: str, prefix: str, access: Access) -> AsyncIterator[JetStreamEventStore]:
    """A store reading an existing stream (`AnalystError` when NATS or the stream is not there)."""
    try:
        client = await nats.connect(
            servers=servers(url),
            name="paiju-analyst",
            connect_timeout=CONNECT_SECONDS,
            allow_reconnect=False,
            max_reconnect_attempts=1,  # give up after trying each server of the URL twice
            reconnect_time_wait=0.2,
            error_cb=_quiet,
            **access.options(),
        )
    except (OSError, TimeoutError, NatsError) as e:
        raise AnalystError(f"cannot reach NATS at {url}: {e or type(e).__name__}") from None
    store = JetStreamEventStore(client, stream, prefix)
    try:
        try:
            await store.discover()
        except NotFoundError:
            raise AnalystError(f"there is no stream {stream} at {url}") from None
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def game_store(source: Source) -> AsyncIterator[JetStreamEventStore]:
    async with _store(source.url, source.stream, source.prefix, source.access) as store:
        yield store


def check_id(kind: str, aggregate: str) -> None:
    """A game or table id is one subject token: no dots, wildcards or spaces."""
    if not aggregate or any(ch in aggregate for ch in " .*>\t\r\n"):
        raise AnalystError(f"{aggregate!r} is not a {kind} id")


async def load_log(store: JetStreamEventStore, game_id: str) -> GameLog:
    """One game's log as stored now."""
    return await _loaded(Games(store), game_id)


async def _loaded(games: Games, game_id: str) -> GameLog:
    check_id("game", game_id)
    try:
        return from_game(await games.history(game_id))
    except GameNotFound:
        raise AnalystError(f"there is no game {game_id!r}") from None


async def load_logs(
    store: JetStreamEventStore, game_ids: Sequence[str] | None = None, *, partitions: frozenset[int] | None = None
) -> list[GameLog]:
    """The logs of ``game_ids`` (each once), or of every game of the stream (one read of the whole stream; of the
    games in ``partitions`` only, when given)."""
    games = Games(store)
    if game_ids is None:
        return [from_game(game) for game in (await games.load_all(partitions)).values()]
    return [await _loaded(games, game_id) for game_id in dict.fromkeys(game_ids)]


async def stored_logs(store: JetStreamEventStore, game_ids: Sequence[str] | None = None) -> list[GameLog]:
    """The logs of ``game_ids`` (each once), or of every game of the stream, as stored: decoded, never replayed, so
    that a log the rules could not replay (a damaged or forged one) is still read whole (for `paiju verify`)."""
    by_game: dict[str, list[Recorded]] = {}
    if game_ids is None:
        for recorded in await store.read_all():
            by_game.setdefault(recorded.aggregate, []).append(recorded)
    else:
        for game_id in dict.fromkeys(game_ids):
            check_id("game", game_id)
            stored = await store.load(game_id)
            if not stored:
                raise AnalystError(f"there is no game {game_id!r}")
            by_game[game_id] = list(stored)
    return [decode([engine_pb2.Envelope.FromString(r.data) for r in tail]) for tail in by_game.values()]


async def _stored(url: str, stream: str, prefix: str, kind: str, aggregate: str, *, access: Access) -> list[Recorded]:
    """The stored events of one aggregate of ``stream`` (`AnalystError` when it has none)."""
    check_id(kind, aggregate)
    async with _store(url, stream, prefix, access) as store:
        stored = await store.load(aggregate)
    if not stored:
        raise AnalystError(f"there is no {kind} {aggregate!r}")
    return stored


async def tournament_games(source: Source, tournament_id: str) -> list[str]:
    """The games of a tournament's tables, round by round and table by table (from its `RoundPaired` events;
    the first match of each table is the tournament's)."""
    games = []
    for recorded in await _stored(
        source.url,
        source.tournaments_stream,
        source.tournaments_prefix,
        "tournament",
        tournament_id,
        access=source.access,
    ):
        envelope = tournament_events_pb2.TournamentEnvelope.FromString(recorded.data)
        if envelope.event.WhichOneof("event") == "round_paired":
            games += [game_id_of(table.table_id, 1) for table in envelope.event.round_paired.tables]
    return games


async def player_names(source: Source) -> dict[str, str]:
    """The names the players were shown by, by player id, from the lobby's stream: each account's name as
    registered, a substitute's or a seated player's as the table showed it, a bot's as the lobby names it. Empty
    when the lobby's stream is not there (games created without the lobby): the ids are all there is."""
    names: dict[str, str] = {}
    try:
        async with _store(source.url, source.lobby_stream, source.lobby_prefix, source.access) as store:
            stored = await store.read_all()
    except AnalystError:
        return {}
    for recorded in stored:
        event = lobby_events_pb2.LobbyEnvelope.FromString(recorded.data).event
        which = event.WhichOneof("event")
        if which == "account_registered":
            names[event.account_registered.player_id] = event.account_registered.name
        elif which in ("seat_taken", "substituted"):
            seated = getattr(event, which)
            names.setdefault(seated.player_id, seated.name)
        elif which == "bot_seated":
            names.setdefault(event.bot_seated.player_id, bot_name(event.bot_seated.player_id))
    return names


async def table_games(source: Source, table_id: str) -> list[str]:
    """The games of a lobby table's matches, in match order (from its `LobbyMatchStarted` events)."""
    games = []
    for recorded in await _stored(
        source.url, source.lobby_stream, source.lobby_prefix, "table", table_id, access=source.access
    ):
        envelope = lobby_events_pb2.LobbyEnvelope.FromString(recorded.data)
        if envelope.event.WhichOneof("event") == "match_started":
            games.append(envelope.event.match_started.game_id)
    return games
