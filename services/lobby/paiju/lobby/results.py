"""Match results into the lobby: the end of every table's game, read from the GAMES stream, finishes the match.

The lobby reads the game events stored after its checkpoint (kept in PostgreSQL); when a game of one of its
tables ends (砸六家 `MatchEnded`, 拖拉机 `GameEnded`), it records `MatchFinished` with the result on the
table (idempotent: a table finishes a match once), then moves its checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import asyncpg
import structlog

from paiju.contract.games import TRACTOR_EVENTS, ZLJ_EVENTS
from paiju.lobby import table as tb
from paiju.lobby.readmodel import advance, checkpoint
from paiju.platform.repository import Aggregates
from paiju.platform.retry import Backoff, report
from paiju.platform.store import EventStore, Recorded
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.v1 import engine_pb2

PROJECTION = "match-results"
BATCH = 1000
"""Stream sequences read per batch."""
log = structlog.get_logger("paiju.lobby.results")


def table_of(game_id: str) -> str | None:
    """The table whose match a game is (``table-ab12cd34-m3`` -> ``table-ab12cd34``)."""
    table_id, sep, match = game_id.rpartition("-m")
    return table_id if sep and match.isdigit() and table_id.startswith("table-") else None


def result_of(envelope: engine_pb2.Envelope) -> tb.Result | None:
    """The match result an end event carries (``None`` for any other event)."""
    which = envelope.WhichOneof("payload")
    if which == "zlj" and envelope.zlj.WhichOneof("event") == "match_ended":
        ended = ZLJ_EVENTS.decode(envelope.zlj)
        assert isinstance(ended, zlj_model.MatchEnded)
        return tb.Result(team_points=ended.team_points, individual_points=ended.individual)
    if which == "tractor" and envelope.tractor.WhichOneof("event") == "game_ended":
        over = TRACTOR_EVENTS.decode(envelope.tractor)
        assert isinstance(over, tractor_model.GameEnded)
        return tb.Result(winner_team=over.winner, levels=over.levels)
    return None


class MatchResults:
    def __init__(self, pool: asyncpg.Pool[Any], games: EventStore, tables: Aggregates[tb.Table]) -> None:
        self._pool = pool
        self._games = games
        self._tables = tables
        self._wake = asyncio.Event()

    async def checkpoint(self) -> int:
        return await checkpoint(self._pool, PROJECTION)

    async def catch_up(self) -> int:
        """Record the result of every game that ended after the checkpoint, `BATCH` stream sequences at a time (the
        checkpoint moves after each batch: a long backlog is never held in memory); returns the events read."""
        read = 0
        after = await self.checkpoint()
        while events := await self._games.read_all(after_sequence=after, limit=BATCH):
            for recorded in events:
                await self._apply(recorded)
            after = events[-1].sequence
            await advance(self._pool, PROJECTION, after)
            read += len(events)
        return read

    async def _apply(self, recorded: Recorded) -> None:
        table_id = table_of(recorded.aggregate)
        if table_id is None:
            return
        result = result_of(engine_pb2.Envelope.FromString(recorded.data))
        if result is None:
            return
        command = tb.FinishMatch(recorded.aggregate, result)
        await self._tables.act(table_id, command, f"finish:{recorded.aggregate}", "lobby")
        log.info("match finished", table=table_id, game=recorded.aggregate)

    async def run(self, stop: asyncio.Event) -> None:
        def ended(recorded: Recorded) -> None:
            if table_of(recorded.aggregate) and result_of(engine_pb2.Envelope.FromString(recorded.data)):
                self._wake.set()

        await self._games.follow(ended)
        backoff = Backoff()
        while not stop.is_set():
            try:
                await self.catch_up()
                backoff.succeeded()
            except Exception as e:  # retried from the checkpoint: recording a result is idempotent
                report(log, "reading match results failed; retrying", e)
                await backoff.wait(stop)
                continue
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=2.0)
