"""Match results into the lobby: the end of every table's game, read from the GAMES stream, finishes the match.

A stream consumer of the platform (`paiju.platform.consumer`): the lobby reads the game events stored after its
checkpoint (kept in PostgreSQL); when a game of one of its tables ends (砸六家 `MatchEnded`, 拖拉机 `GameEnded`),
it records `MatchFinished` with the result on the table (idempotent: a table finishes a match once), then moves
its checkpoint.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import structlog

from paiju.lobby import table as tb
from paiju.lobby.games import GAMES
from paiju.lobby.readmodel import CHECKPOINTS
from paiju.platform.consumer import Consumer, PostgresTracking, Reaction
from paiju.platform.repository import Aggregates
from paiju.platform.store import EventStore, Recorded
from paiju.v1 import engine_pb2

PROJECTION = "match-results"
BATCH = 1000
"""Events handled per batch at most (stream sequences read per batch when catching up)."""
log = structlog.get_logger("paiju.lobby.results")


def table_of(game_id: str) -> str | None:
    """The table whose match a game is (``table-ab12cd34-m3`` -> ``table-ab12cd34``)."""
    table_id, sep, match = game_id.rpartition("-m")
    return table_id if sep and match.isdigit() and table_id.startswith("table-") else None


def result_of(envelope: engine_pb2.Envelope) -> tb.Result | None:
    """The match result an end event carries (``None`` for any other event)."""
    which = envelope.WhichOneof("payload")  # a game's events are the member named after it
    if which is None or which not in GAMES:
        return None
    game, payload = GAMES[which], getattr(envelope, which)
    if payload.WhichOneof("event") != game.end_event:
        return None
    ended = game.contract.events.decode(payload)
    assert isinstance(ended, game.ended)
    return game.result(ended)


def match_results(pool: asyncpg.Pool[Any], games: EventStore, tables: Aggregates[tb.Table]) -> Consumer:
    """The consumer of the GAMES stream that finishes each table's match when its game ends (its checkpoint in
    ``lobby_checkpoints``; recording a result is idempotent, so a batch read again changes nothing)."""

    async def finish(data: bytes) -> None:
        await _finish(tables, data)

    return Consumer(games, PostgresTracking(pool, CHECKPOINTS), Reaction(PROJECTION, finish), batch=BATCH, wake=ends)


def ends(recorded: Recorded) -> bool:
    """Whether an appended game event ends a table's match (what wakes the consumer at once)."""
    return (
        table_of(recorded.aggregate) is not None
        and result_of(engine_pb2.Envelope.FromString(recorded.data)) is not None
    )


async def _finish(tables: Aggregates[tb.Table], data: bytes) -> None:
    envelope = engine_pb2.Envelope.FromString(data)
    table_id = table_of(envelope.game_id)
    if table_id is None:
        return
    result = result_of(envelope)
    if result is None:
        return
    command = tb.FinishMatch(envelope.game_id, result)
    await tables.act(table_id, command, f"finish:{envelope.game_id}", "lobby")
    log.info("match finished", table=table_id, game=envelope.game_id)
