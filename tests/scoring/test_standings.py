"""Standings (§10, 第四章 三): total VP, rounds won, the last round back to the first, then the draw (paiju).

Every expected order below is worked out by hand in the comments.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import pytest

from paiju.scoring.standings import ResultKind, RoundResult, Standing, Team, standings
from paiju.scoring.victory import BYE_VP, FORFEIT_LOSER_VP


def teams(*ids: str) -> list[Team]:
    """Teams whose draw numbers follow the order given: the first has draw 1."""
    return [Team(team_id=team_id, name=team_id.title(), draw=i) for i, team_id in enumerate(ids, start=1)]


def match(round_: int, a: str, b: str, vp_a: int | str, vp_b: int | str) -> list[RoundResult]:
    return [
        RoundResult(round_, a, b, Decimal(vp_a), ResultKind.PLAYED),
        RoundResult(round_, b, a, Decimal(vp_b), ResultKind.PLAYED),
    ]


def bye(round_: int, team: str) -> list[RoundResult]:
    return [RoundResult(round_, team, None, BYE_VP, ResultKind.BYE)]


def forfeit(round_: int, stays: str, leaves: str, vp: str) -> list[RoundResult]:
    return [
        RoundResult(round_, stays, leaves, Decimal(vp), ResultKind.FORFEIT_WON),
        RoundResult(round_, leaves, stays, FORFEIT_LOSER_VP, ResultKind.FORFEIT_LOST),
    ]


def table(rows: Sequence[Standing]) -> list[tuple[int, str, Decimal, int]]:
    return [(s.rank, s.team.team_id, s.vp, s.rounds_won) for s in rows]


def test_total_vp_comes_first() -> None:
    # a 34 (20, 14; won 1), b 35 (10, 25; won 1), c 32 (16, 16; won 2), d 19 (14, 5; won 0):
    # c has won most rounds but b, a have more VP.
    results = match(1, "a", "b", 20, 10) + match(1, "c", "d", 16, 14) + match(2, "a", "c", 14, 16)
    results += match(2, "b", "d", 25, 5)
    assert table(standings(teams("a", "b", "c", "d"), results)) == [
        (1, "b", Decimal(35), 1),
        (2, "a", Decimal(34), 1),
        (3, "c", Decimal(32), 2),
        (4, "d", Decimal(19), 0),
    ]


def test_rounds_won_break_a_vp_tie() -> None:
    # a 14 + 27 = 41, won 1; c 21 + 20 = 41, won 2: c first although a has the lower draw and the better last round.
    # b 16 + 10 = 26 (won 1), d 9 + 3 = 12.
    results = match(1, "a", "b", 14, 16) + match(1, "c", "d", 21, 9) + match(2, "a", "d", 27, 3)
    results += match(2, "c", "b", 20, 10)
    assert table(standings(teams("a", "b", "c", "d"), results)) == [
        (1, "c", Decimal(41), 2),
        (2, "a", Decimal(41), 1),
        (3, "b", Decimal(26), 1),
        (4, "d", Decimal(12), 0),
    ]


def test_a_bye_and_a_forfeit_count_as_won_and_a_draw_does_not() -> None:
    # round 1: a bye; b-c 15:15; d-e 20:10.  round 2: a-b 15:15; c-d 20:10; e bye.
    # a 20 + 15 = 35 won 1 (the bye), last 15; c 15 + 20 = 35 won 1, last 20  -> c, a
    # e 10 + 20 = 30 won 1 (the bye), last 20; d 20 + 10 = 30 won 1, last 10; b 15 + 15 = 30 won 0 -> e, d, b
    results = bye(1, "a") + match(1, "b", "c", 15, 15) + match(1, "d", "e", 20, 10)
    results += match(2, "a", "b", 15, 15) + match(2, "c", "d", 20, 10) + bye(2, "e")
    ranked = standings(teams("a", "b", "c", "d", "e"), results)
    assert table(ranked) == [
        (1, "c", Decimal(35), 1),
        (2, "a", Decimal(35), 1),
        (3, "e", Decimal(30), 1),
        (4, "d", Decimal(30), 1),
        (5, "b", Decimal(30), 0),
    ]
    by_id = {s.team.team_id: s for s in ranked}
    assert by_id["a"].byes == 1
    assert by_id["a"].opponents == ("b",)
    assert by_id["b"].byes == 0
    assert by_id["b"].opponents == ("c", "a")
    # a forfeit: the team that stays has won the round, the team that left has not
    results = forfeit(1, "a", "b", "20") + match(1, "c", "d", 15, 15)
    won = {s.team.team_id: s.rounds_won for s in standings(teams("a", "b", "c", "d"), results)}
    assert won == {"a": 1, "b": 0, "c": 0, "d": 0}
    # both teams absent: both forfeit, both 0, neither won
    results = [*forfeit(1, "a", "b", "20")[1:], RoundResult(1, "a", "b", Decimal(0), ResultKind.FORFEIT_LOST)]
    assert {s.team.team_id: s.rounds_won for s in standings(teams("a", "b"), results)} == {"a": 0, "b": 0}


def test_the_last_round_breaks_a_tie_in_vp_and_rounds_won() -> None:
    # a 20 + 18 = 38 won 2, last 18; c 18 + 20 = 38 won 2, last 20 -> c before a (a has the lower draw).
    # d 12 + 12 = 24, b 10 + 10 = 20.
    results = match(1, "a", "b", 20, 10) + match(1, "c", "d", 18, 12) + match(2, "a", "d", 18, 12)
    results += match(2, "c", "b", 20, 10)
    ranked = standings(teams("a", "b", "c", "d"), results)
    assert table(ranked) == [
        (1, "c", Decimal(38), 2),
        (2, "a", Decimal(38), 2),
        (3, "d", Decimal(24), 0),
        (4, "b", Decimal(20), 0),
    ]
    assert ranked[0].by_round == (Decimal(18), Decimal(20))


def test_an_earlier_round_breaks_a_tie_in_the_last() -> None:
    # a 22, 18, 20 = 60 won 3; c 18, 22, 20 = 60 won 3: the last round is equal (20), the round before decides:
    # c's 22 beats a's 18 (a has the better round 1 and the lower draw).
    # f 15 + 15 + 10 = 40, d 12 + 12 + 15 = 39, b 8 + 15 + 15 = 38, e 15 + 8 + 10 = 33, none won.
    results = match(1, "a", "b", 22, 8) + match(1, "c", "d", 18, 12) + match(1, "e", "f", 15, 15)
    results += match(2, "a", "d", 18, 12) + match(2, "c", "e", 22, 8) + match(2, "b", "f", 15, 15)
    results += match(3, "a", "e", 20, 10) + match(3, "c", "f", 20, 10) + match(3, "b", "d", 15, 15)
    assert table(standings(teams("a", "b", "c", "d", "e", "f"), results)) == [
        (1, "c", Decimal(60), 3),
        (2, "a", Decimal(60), 3),
        (3, "f", Decimal(40), 0),
        (4, "d", Decimal(39), 0),
        (5, "b", Decimal(38), 0),
        (6, "e", Decimal(33), 0),
    ]


def test_the_draw_breaks_a_full_tie() -> None:
    field = [Team("north", "North", 3), Team("east", "East", 1), Team("south", "South", 4), Team("west", "West", 2)]
    results = match(1, "north", "east", 15, 15) + match(1, "south", "west", 15, 15)
    ranked = standings(field, results)
    assert [(s.rank, s.team.team_id) for s in ranked] == [(1, "east"), (2, "west"), (3, "north"), (4, "south")]
    # no results at all: the draw alone
    assert [s.team.team_id for s in standings(field, [])] == ["east", "west", "north", "south"]
    assert all(s.by_round == () and s.vp == 0 for s in standings(field, []))


def test_result_kinds_may_come_as_their_plain_strings() -> None:
    # rows rebuilt from stored events may carry the kind's string value; ResultKind is a StrEnum
    results = [
        RoundResult(1, "a", "b", Decimal(18), "played"),  # type: ignore[arg-type]
        RoundResult(1, "b", "a", Decimal(12), "played"),  # type: ignore[arg-type]
        RoundResult(1, "c", None, BYE_VP, "bye"),  # type: ignore[arg-type]
    ]
    ranked = standings(teams("a", "b", "c"), results)
    assert [(s.team.team_id, s.rounds_won, s.byes) for s in ranked] == [("c", 1, 1), ("a", 1, 0), ("b", 0, 0)]


def test_decimal_vp_and_missing_rounds() -> None:
    # a's forfeit VP 22.5 in round 2; b has no row in round 2 (it counts 0 there).
    results = match(1, "a", "b", 25, 5) + match(1, "c", "d", 15, 15) + forfeit(2, "a", "c", "22.5")
    results += bye(2, "d")
    ranked = {s.team.team_id: s for s in standings(teams("a", "b", "c", "d"), results)}
    assert ranked["a"].vp == Decimal("47.5")
    assert ranked["a"].by_round == (Decimal(25), Decimal("22.5"))
    assert ranked["a"].opponents == ("b", "c")
    assert ranked["b"].by_round == (Decimal(5), Decimal(0))
    assert ranked["d"].by_round == (Decimal(15), Decimal(20))
    assert ranked["d"].byes == 1
    assert [s.rank for s in standings(teams("a", "b", "c", "d"), results)] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("field", "results", "message"),
    [
        ([*teams("a", "b"), Team("a", "A again", 3)], [], "entered twice"),
        ([Team("a", "A", 1), Team("b", "B", 1)], [], "share draw number 1"),
        ([Team("a", "A", 0), Team("b", "B", 1)], [], "draw numbers start at 1"),
        (teams("a", "b"), match(1, "a", "x", 15, 15), "not entered"),
        (teams("a", "b"), [RoundResult(1, "x", "a", Decimal(15), ResultKind.PLAYED)], "not entered"),
        (teams("a", "b"), match(0, "a", "b", 15, 15), "numbered from 1"),
        (teams("a", "b"), match(1, "a", "b", 15, 15) + match(1, "a", "b", 15, 15), "two results in round 1"),
        (teams("a", "b"), [RoundResult(1, "a", "b", Decimal(20), ResultKind.BYE)], "a bye has no opponent"),
        (teams("a", "b"), [RoundResult(1, "a", None, Decimal(15), ResultKind.PLAYED)], "needs an opponent"),
        (teams("a", "b"), [RoundResult(1, "a", "a", Decimal(15), ResultKind.PLAYED)], "cannot meet itself"),
        (teams("a", "b"), match(1, "a", "b", 15, 15)[:1], "opponent has no result"),
        (teams("a", "b", "c"), match(1, "a", "b", 15, 15)[:1] + match(1, "b", "c", 15, 15), "does not match"),
        (
            teams("a", "b"),
            [
                RoundResult(1, "a", "b", Decimal(20), ResultKind.FORFEIT_WON),
                RoundResult(1, "b", "a", Decimal(10), ResultKind.PLAYED),
            ],
            "does not match",
        ),
        (teams("a", "b"), match(1, "a", "b", 15, -1), "at least 0"),
        (teams("a", "b"), match(1, "a", "b", 15, "NaN"), "finite"),
        (teams("a", "b"), [RoundResult(1, "a", None, 20, ResultKind.BYE)], "must be a decimal.Decimal, not int"),  # type: ignore[arg-type]
        (teams("a", "b"), [RoundResult(1, "a", None, BYE_VP, "walkover")], "unknown result kind 'walkover'"),  # type: ignore[arg-type]
    ],
)
def test_bad_input_is_refused(field: list[Team], results: list[RoundResult], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        standings(field, results)
