"""Match results into the lobby (`paiju.lobby.results`) on a real nats-server and PostgreSQL: a table's match is
finished by its game's end, read from a GAMES stream the engine's way, among every other event of the game; and a
lobby started again reads on from its checkpoint, finishing nothing twice."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, cast

import asyncpg
import pytest

from paiju.contract.games import GAMES as CONTRACT
from paiju.engine.games import Games
from paiju.engine.selfplay import record_zlj
from paiju.lobby import table as tb
from paiju.lobby.readmodel import CHECKPOINTS, migrate_lobby
from paiju.lobby.results import BATCH, PROJECTION, ends, match_results
from paiju.lobby.service import new_tables
from paiju.platform.consumer import Consumer, PostgresTracking, in_background
from paiju.platform.partitions import PARTITIONS
from paiju.platform.store import EventStore, MemoryEventStore, Position, Recorded, Subscription
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.rules.zlj import model as zlj_model
from paiju.v1 import engine_pb2

from ..support.waiting import wait_until

pytestmark = pytest.mark.integration

OWNER = "owner"
PLAYERS = ("p-ann", "p-bo", "p-cy")


async def playing(tables: Any, table_id: str) -> tb.Table:
    """A 砸六家 table of three players and three bots whose first match has started."""
    steps: list[tuple[Any, str]] = [(tb.OpenTable(table_id, "Friday table", "zlj", OWNER), OWNER)]
    steps += [(tb.TakeSeat(p, p, i), p) for i, p in enumerate(PLAYERS)]
    steps += [(tb.AddBot(OWNER), OWNER) for _ in range(3)]
    steps += [(tb.SetReady(p, True), p) for p in PLAYERS]
    steps.append((tb.StartMatch(OWNER), OWNER))
    for n, (command, actor) in enumerate(steps):
        await tables.act(table_id, command, f"setup-{n}", actor)
    table: tb.Table = (await tables.load(table_id)).state
    assert table.status is tb.Status.PLAYING and table.game_id == f"{table_id}-m1"
    return table


async def play(games: JetStreamEventStore, game_id: str, players: tuple[str, ...], seed: int) -> list[Recorded]:
    """A whole 砸六家 match of one deal played by the bots, appended to ``games`` command by command as the engine
    appends them (nothing but the store's own headers on each message)."""
    memory = MemoryEventStore()
    await record_zlj(Games(memory), game_id, players, seed=seed, deals=1)
    position, stored = Position(), list[Recorded]()
    by_command: dict[str, list[bytes]] = {}
    for recorded in await memory.load(game_id):
        by_command.setdefault(recorded.command_id, []).append(recorded.data)
    for command_id, events in by_command.items():
        stored += await games.append(game_id, position, command_id, events)
        position = stored[-1].position
    return stored


class Subscribed:
    """A store that notes where each subscription started."""

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self.starts: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def subscribe(self, after_sequence: int = 0, **kwargs: Any) -> Subscription:
        self.starts.append(after_sequence)
        return await self._store.subscribe(after_sequence, **kwargs)


def test_a_games_end_among_its_events_finishes_the_tables_match_and_a_restart_reads_on_from_the_checkpoint(
    nats_url: str, database_dsn: str
) -> None:
    async def main() -> None:
        suffix = uuid.uuid4().hex[:10].upper()
        pool = await asyncpg.create_pool(database_dsn, min_size=1, max_size=4)
        lobby = await JetStreamEventStore.connect(nats_url, stream=f"LOBBY{suffix}", prefix=f"l.{suffix.lower()}")
        games = await JetStreamEventStore.connect(
            nats_url, stream=f"GAMES{suffix}", prefix=f"g.{suffix.lower()}", partitions=PARTITIONS
        )
        try:
            await migrate_lobby(pool)
            tables = new_tables(lobby)
            await tables.follow()
            table_id = f"table-{suffix.lower()[:8]}"
            table = await playing(tables, table_id)
            players = tuple(s.player_id for s in table.seats)

            stop = asyncio.Event()
            running = in_background(match_results(pool, games, tables), stop)
            stored = await play(games, table.game_id, players, seed=7)

            async def finished() -> tb.Table:
                state: tb.Table = (await tables.load(table_id)).state
                return state

            await wait_until(lambda: _status(finished, tb.Status.FINISHED), "the table's match finished", seconds=30)
            table = await finished()
            assert table.last_game_id == f"{table_id}-m1" and table.matches == 1
            assert table.last_result is not None and len(table.last_result.individual_points) == 6
            assert isinstance(await _end_of(stored), zlj_model.MatchEnded), "the match's last event ends it"
            last = stored[-1].sequence
            checkpoint = match_results(pool, games, tables)
            await wait_until(lambda: _at(checkpoint, last), "the checkpoint past the match's events", seconds=30)
            stop.set()
            await running
            kept = await pool.fetchval(f"SELECT sequence FROM {CHECKPOINTS} WHERE projection = $1", PROJECTION)
            assert kept == last, "the checkpoint is kept under the name it always had (no rebuild on upgrade)"
            version = (await tables.load(table_id)).version

            # started again (another process): it reads on after its checkpoint, and finishes nothing twice
            noted = Subscribed(games)
            restarted = Consumer(
                cast(EventStore, noted),
                PostgresTracking(pool, CHECKPOINTS),
                match_results(pool, games, tables).handler,
                batch=BATCH,
                wake=ends,
            )
            stop = asyncio.Event()
            running = in_background(restarted, stop)
            other = await play(games, "table-elsewhere-m1", players, seed=8)  # a table this lobby does not hold
            await wait_until(lambda: _at(restarted, other[-1].sequence), "the next game's events handled", seconds=30)
            stop.set()
            await running
            assert noted.starts == [last], "the restarted consumer subscribed after its checkpoint"
            assert (await tables.load(table_id)).version == version, "the finished match was not finished again"
        finally:
            await games.close()
            await lobby.close()
            await pool.close()

    asyncio.run(main())


async def _status(load: Any, status: tb.Status) -> bool:
    return bool((await load()).status is status)


async def _at(consumer: Consumer, sequence: int) -> bool:
    return await consumer.checkpoint() >= sequence


async def _end_of(stored: list[Recorded]) -> object:
    envelope = engine_pb2.Envelope.FromString(stored[-1].data)
    return CONTRACT["zlj"].events.decode(envelope.zlj)
