"""Standings (名次排列) of a tournament from its round results (`tractor.md` §10, source 第四章 三).

Teams are ranked by:

1. total victory points (VP), more first;
2. rounds won, more first;
3. VP of the last round, then of the round before, and so on back to round 1, more first;
4. (paiju, where the rules stop) the draw number (签号), lower first.

The draw numbers are distinct, so the order is total and every team has its own rank 1..n: no shared ranks.
It is also the order Swiss pairing reads, so ties inside a score group fall back to the seeded draw (D-TR-10).

A round is won when the team's VP in it is greater than its opponent's in that round; a bye (20 VP, D-TR-10) and
a forfeit won (D-TR-11) count as won, a draw such as 15 : 15 does not.

Everything here is pure: plain data in, a new list out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum


@dataclass(frozen=True)
class Team:
    """A team entered in a tournament, with its draw number (签号, 1-based, from the seeded draw)."""

    team_id: str
    name: str
    draw: int


class ResultKind(StrEnum):
    """How a team's round went."""

    PLAYED = "played"
    """It played its match (VP from the level difference, §10)."""
    BYE = "bye"
    """It was the odd team out (轮空): 20 VP and no opponent (D-TR-10)."""
    FORFEIT_WON = "forfeit_won"
    """Its opponent forfeited (弃权): it gets the D-TR-11 VP."""
    FORFEIT_LOST = "forfeit_lost"
    """It forfeited: 0 VP (D-TR-11)."""


@dataclass(frozen=True)
class RoundResult:
    """One team's result in one round; a match gives two rows, a bye one row with no opponent."""

    round: int
    team_id: str
    opponent_id: str | None
    vp: Decimal
    kind: ResultKind


@dataclass(frozen=True)
class Standing:
    """A team's place after the results so far.

    ``by_round[i]`` is its VP in round ``i + 1`` (0 for a round it has no result in); ``opponents`` are the teams it
    has met, in round order (a forfeit counts as met, a bye meets nobody); ``byes`` counts its byes.
    """

    rank: int
    team: Team
    vp: Decimal
    rounds_won: int
    by_round: tuple[Decimal, ...]
    byes: int
    opponents: tuple[str, ...]


_KINDS = frozenset(ResultKind)

_OPPOSITE_KINDS = {
    ResultKind.PLAYED: {ResultKind.PLAYED},
    ResultKind.FORFEIT_WON: {ResultKind.FORFEIT_LOST},
    ResultKind.FORFEIT_LOST: {ResultKind.FORFEIT_WON, ResultKind.FORFEIT_LOST},
}
"""The kinds an opponent's row may have, by a team's kind (both teams absent: both forfeit)."""


def check_teams(teams: Sequence[Team]) -> dict[str, Team]:
    """The teams by id; `ValueError` on a repeated id or draw number or a draw number below 1."""
    by_id: dict[str, Team] = {}
    draws: dict[int, str] = {}
    for team in teams:
        if team.team_id in by_id:
            raise ValueError(f"team id {team.team_id!r} is entered twice")
        if team.draw < 1:
            raise ValueError(f"team {team.team_id!r} has draw number {team.draw}; draw numbers start at 1")
        if team.draw in draws:
            raise ValueError(f"teams {draws[team.draw]!r} and {team.team_id!r} share draw number {team.draw}")
        by_id[team.team_id] = team
        draws[team.draw] = team.team_id
    return by_id


def check_results(teams: dict[str, Team], results: Sequence[RoundResult]) -> dict[tuple[int, str], RoundResult]:
    """The results by (round, team id), checked against each other; `ValueError` names the first bad row.

    Each team has at most one row a round; ids are entered teams; a bye has no opponent and every other row has
    one, whose own row in that round names this team back with the matching kind.
    """
    rows: dict[tuple[int, str], RoundResult] = {}
    for row in results:
        if row.round < 1:
            raise ValueError(f"{row}: rounds are numbered from 1")
        if row.team_id not in teams:
            raise ValueError(f"{row}: team {row.team_id!r} is not entered")
        if row.kind not in _KINDS:
            raise ValueError(f"{row}: unknown result kind {row.kind!r}")
        if not isinstance(row.vp, Decimal):
            raise ValueError(f"{row}: VP must be a decimal.Decimal, not {type(row.vp).__name__}")
        if not row.vp.is_finite() or row.vp < 0:
            raise ValueError(f"{row}: VP must be a finite number of at least 0")
        if row.kind == ResultKind.BYE:
            if row.opponent_id is not None:
                raise ValueError(f"{row}: a bye has no opponent")
        elif row.opponent_id is None:
            raise ValueError(f"{row}: a {row.kind} result needs an opponent")
        elif row.opponent_id not in teams:
            raise ValueError(f"{row}: opponent {row.opponent_id!r} is not entered")
        elif row.opponent_id == row.team_id:
            raise ValueError(f"{row}: a team cannot meet itself")
        key = (row.round, row.team_id)
        if key in rows:
            raise ValueError(f"team {row.team_id!r} has two results in round {row.round}: {rows[key]} and {row}")
        rows[key] = row
    for row in rows.values():
        if row.opponent_id is None:
            continue
        other = rows.get((row.round, row.opponent_id))
        if other is None:
            raise ValueError(f"{row}: the opponent has no result in round {row.round}")
        if other.opponent_id != row.team_id or other.kind not in _OPPOSITE_KINDS[row.kind]:
            raise ValueError(f"{row} does not match its opponent's row {other}")
    return rows


def _won(row: RoundResult, rows: dict[tuple[int, str], RoundResult]) -> bool:
    if row.kind in (ResultKind.BYE, ResultKind.FORFEIT_WON):
        return True
    if row.kind == ResultKind.FORFEIT_LOST or row.opponent_id is None:
        return False
    return row.vp > rows[(row.round, row.opponent_id)].vp


def standings(teams: Sequence[Team], results: Sequence[RoundResult]) -> list[Standing]:
    """Every team's standing, best first, ranked 1..n by total VP, rounds won, VP of the last round back to the
    first, then the draw number (§10, 第四章 三; the draw is paiju's last tie-break).

    ``results`` may be of any rounds so far (rounds without a row for a team count 0 VP for it). `ValueError` on
    repeated team ids or draw numbers, rows naming teams not in ``teams``, or rows that contradict each other.
    """
    by_id = check_teams(teams)
    rows = check_results(by_id, results)
    rounds = max((r for r, _ in rows), default=0)
    totals: dict[str, Decimal] = dict.fromkeys(by_id, Decimal(0))
    won: Counter[str] = Counter()
    byes: Counter[str] = Counter()
    per_round: dict[str, list[Decimal]] = {team_id: [Decimal(0)] * rounds for team_id in by_id}
    met: dict[str, list[str]] = {team_id: [] for team_id in by_id}
    for (r, team_id), row in sorted(rows.items()):
        totals[team_id] += row.vp
        per_round[team_id][r - 1] = row.vp
        won[team_id] += _won(row, rows)
        if row.kind == ResultKind.BYE:
            byes[team_id] += 1
        elif row.opponent_id is not None:
            met[team_id].append(row.opponent_id)

    def order(team: Team) -> tuple[Decimal, int, tuple[Decimal, ...], int]:
        latest_first = tuple(-vp for vp in reversed(per_round[team.team_id]))
        return -totals[team.team_id], -won[team.team_id], latest_first, team.draw

    ranked = sorted(by_id.values(), key=order)
    return [
        Standing(
            rank=i,
            team=team,
            vp=totals[team.team_id],
            rounds_won=won[team.team_id],
            by_round=tuple(per_round[team.team_id]),
            byes=byes[team.team_id],
            opponents=tuple(met[team.team_id]),
        )
        for i, team in enumerate(ranked, start=1)
    ]
