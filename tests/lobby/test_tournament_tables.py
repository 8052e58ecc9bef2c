"""The lobby's tournament tables: a paired round's tables opened with the teams seated and the match started,
with the tournament's round length (拖拉机 round_minutes, D-TR-9; 砸六家 deals) and the tournament preset;
handling the same pairing again, or after a half-done first attempt, changes nothing more."""

from __future__ import annotations

import asyncio

from paiju.lobby import table as tb
from paiju.lobby import tournaments
from paiju.lobby.service import new_tables
from paiju.platform.store import MemoryEventStore
from paiju.v1 import tournament_events_pb2 as te


def paired(game: str) -> te.TournamentRoundPaired:
    """Round 2 paired, one table, as the scoring service records it."""
    seats = 4 if game == "tractor" else 6
    players = [f"p{i}" for i in range(seats)]
    names = [f"Player {i}" for i in range(seats)]
    table = te.TournamentPairedTable(
        table=1, high="team-a", low="team-b", table_id="table-tourx1-r2-t1", players=players, player_names=names
    )
    return te.TournamentRoundPaired(
        round=2,
        tables=[table],
        game=game,
        round_minutes=90 if game == "tractor" else 0,
        deals=0 if game == "tractor" else 4,
    )


def test_a_paired_tractor_table_is_opened_seated_and_started_with_the_round_length() -> None:
    async def body() -> None:
        tables = new_tables(MemoryEventStore())
        pairing = paired("tractor")
        await tournaments.open_round(tables, pairing, "tourx1")
        state = (await tables.load("table-tourx1-r2-t1")).state
        assert state.status is tb.Status.PLAYING and state.tournament and state.matches == 1
        assert [s.player_id for s in state.seats] == ["p0", "p1", "p2", "p3"]
        options = tb.match_options(state)
        assert options.round_minutes == 90  # the engine's timed-round rule (D-TR-9)
        assert options.turn_seconds == tb.TOURNAMENT_TURN_SECONDS  # the tournament preset (§11)
        version = (await tables.load("table-tourx1-r2-t1")).version
        await tournaments.open_round(tables, pairing, "tourx1")  # delivered again
        assert (await tables.load("table-tourx1-r2-t1")).version == version

    asyncio.run(body())


def test_a_zlj_table_half_opened_by_a_replica_that_died_is_finished_once() -> None:
    async def body() -> None:
        tables = new_tables(MemoryEventStore())
        pairing = paired("zlj")
        table_id = pairing.tables[0].table_id
        # the first attempt opened the table and seated two players, then its replica died
        opened = tb.OpenTable(table_id, "Round 2, table 1", "zlj", tournaments.OWNER, True, None, None)
        await tables.act(table_id, opened, "tourx1-r2-t1-open", tournaments.OWNER)
        await tables.act(table_id, tb.TakeSeat("p0", "Player 0", 0), "tourx1-r2-t1-seat-0", tournaments.OWNER)
        await tournaments.open_round(tables, pairing, "tourx1")
        state = (await tables.load(table_id)).state
        assert state.status is tb.Status.PLAYING and state.matches == 1
        assert [s.player_id for s in state.seats] == [f"p{i}" for i in range(6)]

    asyncio.run(body())
