"""A tournament round's result sheet (成绩单, 拖拉机 §10) from the tournament's state."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from paiju.scoring import tournament as tm
from paiju.scoring.sheets import Confirmation, ResultSheet, SheetLine
from paiju.scoring.victory import BYE_VP


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def result_sheet(tournament: tm.Tournament, number: int) -> ResultSheet:
    """The sheet of round ``number``: per table the high team's line then the low team's (level difference from
    each side, VP, remarks), the bye last as a table of its own, and each team's confirmation if given.
    Raises `TournamentError` (not_found) for a round not paired."""
    rnd = tournament.round(number)
    confirmed = {team_id: Confirmation(team_id, by, _utc(at)) for team_id, by, at in rnd.confirmations}
    appeals = {a.team_id: a for a in tournament.appeals if a.round == number}

    def line(table: int, team_id: str, difference: int, vp: Decimal, remarks: list[str]) -> SheetLine:
        team = tournament.team(team_id)
        appeal = appeals.get(team_id)
        if appeal is not None:
            state = ("upheld: " if appeal.upheld else "rejected: ") + appeal.decision if appeal.resolved else "pending"
            remarks = [*remarks, f"appeal {appeal.appeal} {state}"]
        return SheetLine(
            table, team.draw, team_id, team.name, difference, vp, "; ".join(remarks), confirmed.get(team_id)
        )

    lines: list[SheetLine] = []
    for table in rnd.tables:
        result = table.result
        if result is None:
            lines.append(line(table.table, table.high, 0, Decimal(0), ["no result yet"]))
            lines.append(line(table.table, table.low, 0, Decimal(0), ["no result yet"]))
            continue
        remarks = [f"forfeit by {tournament.team(result.forfeited_by).name} (D-TR-11)"] if result.forfeited_by else []
        lines.append(line(table.table, table.high, result.difference, result.high_vp, remarks))
        lines.append(line(table.table, table.low, -result.difference, result.low_vp, remarks))
    if rnd.bye:
        lines.append(line(len(rnd.tables) + 1, rnd.bye, 0, BYE_VP, ["bye (D-TR-10)"]))
    return ResultSheet(
        tournament.tournament_id,
        tournament.name,
        tournament.game,
        number,
        _utc(rnd.paired_at).date(),
        tuple(lines),
    )
