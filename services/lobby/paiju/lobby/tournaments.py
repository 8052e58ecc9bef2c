"""Tournament tables: every table of a paired round (a `RoundPaired` on the TOURNAMENTS stream) is opened by
the lobby with the teams' players seated (the high team in seats 0, 2 (, 4), the low team in 1, 3 (, 5)), and
its match started; the engine then creates the game as for any table.

The tables are tournament tables (the preset's turn timer, 拖拉机 §11), with the tournament's round length:
拖拉机 ``round_minutes`` (the engine's timed-round rule, D-TR-9), 砸六家 ``deals``. A player who is not
there when the match starts is covered by a bot after the presence grace time, like anyone who drops out.

A reaction of the platform's stream consumer (`paiju.platform.consumer`), its checkpoint in the lobby's database.
Every step is idempotent (it looks at the table first), so a pairing handled again, or handled halfway by a
replica that died, ends with each table opened, seated and started exactly once.

The pairing is read as the contract states it (`TournamentRoundPaired` of `tournament_events.proto`): the lobby
knows the scoring service through its events, not its code.
"""

from __future__ import annotations

import structlog

from paiju.lobby import table as tb
from paiju.lobby.games import GAMES
from paiju.platform.consumer import Consumer, Reaction, Tracking
from paiju.platform.repository import Aggregates
from paiju.platform.store import EventStore
from paiju.v1 import tournament_events_pb2

CONSUMER = "lobby-tournament-tables"
OWNER = "tournaments"
"""The owner of tournament tables (the tournament's referees act through the scoring service)."""
log = structlog.get_logger("paiju.lobby.tournaments")


RoundPaired = tournament_events_pb2.TournamentRoundPaired
PairedTable = tournament_events_pb2.TournamentPairedTable


async def open_round(tables: Aggregates[tb.Table], paired: RoundPaired, tournament_id: str) -> None:
    for table in paired.tables:
        await open_table(tables, paired, table, tournament_id)


async def open_table(
    tables: Aggregates[tb.Table], paired: RoundPaired, pairing: PairedTable, tournament_id: str
) -> None:
    table_id = pairing.table_id
    prefix = f"{tournament_id}-r{paired.round}-t{pairing.table}"
    state = (await tables.load(table_id)).state
    if state.status is tb.Status.NEW:
        game = GAMES.get(paired.game)  # a game the lobby does not know: the table refuses it
        options = tb.options_fields(paired.game, game.tournament_options(paired) if game is not None else None)
        opened = tb.OpenTable(
            table_id, f"Round {paired.round}, table {pairing.table}", paired.game, OWNER, True, **options
        )
        state = (await tables.act(table_id, opened, f"{prefix}-open", OWNER))[0].state
    if state.matches:
        return  # started already
    for seat, (player, name) in enumerate(zip(pairing.players, pairing.player_names, strict=True)):
        if state.seats[seat].free:
            command = tb.TakeSeat(player, name, seat)
            state = (await tables.act(table_id, command, f"{prefix}-seat-{seat}", OWNER))[0].state
        if not state.seats[seat].ready:
            ready = tb.SetReady(player, True)
            state = (await tables.act(table_id, ready, f"{prefix}-ready-{seat}", OWNER))[0].state
    await tables.act(table_id, tb.StartMatch(OWNER), f"{prefix}-start", OWNER)
    log.info("tournament table started", table=table_id, round=paired.round)


def round_opener(tournaments: EventStore, tracking: Tracking, tables: Aggregates[tb.Table]) -> Consumer:
    """The consumer of the TOURNAMENTS stream that opens the tables of every paired round."""

    async def handle(data: bytes) -> None:
        envelope = tournament_events_pb2.TournamentEnvelope.FromString(data)
        if envelope.event.WhichOneof("event") != "round_paired":
            return
        await open_round(tables, envelope.event.round_paired, envelope.aggregate)

    return Consumer(tournaments, tracking, Reaction(CONSUMER, handle))
