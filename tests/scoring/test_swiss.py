"""Swiss pairing (积分编排, §10, D-TR-10): the seeded draw, round 1, later rounds, byes, rematches, bad input.

The golden tournaments below were worked out by hand from the rules (pairings round by round, standings by §10's
tie-breaks); the code was then checked against them. The property tests compare every round with an oracle written
here from the rules: a depth-first search in standing order whose "can the rest still be paired?" question is
answered by brute force over subsets (it shares nothing with the blossom matching of `paiju.scoring.swiss`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paiju.scoring.standings import ResultKind, RoundResult, Standing, Team, standings
from paiju.scoring.swiss import NoPairing, Pairing, RoundPairing, first_round, next_round, seeded_draw
from paiju.scoring.victory import BYE_VP, FORFEIT_LOSER_VP, forfeit_vp, victory_points

from ..support.profiles import profile


def entered(ids: Sequence[str], seed: int) -> list[Team]:
    draw = seeded_draw(ids, seed)
    return [Team(team_id=team_id, name=team_id.title(), draw=draw[team_id]) for team_id in ids]


def tables_of(pairing: RoundPairing) -> list[tuple[int, str, str]]:
    return [(p.table, p.high, p.low) for p in pairing.tables]


def played(pairing: RoundPairing, differences: Sequence[int]) -> list[RoundResult]:
    """The rows of a round in which table i ends with level difference ``differences[i]`` (high minus low)."""
    assert len(differences) == len(pairing.tables)
    rows: list[RoundResult] = []
    for table, difference in zip(pairing.tables, differences, strict=True):
        high_vp, low_vp = victory_points(difference)
        rows.append(RoundResult(pairing.round, table.high, table.low, high_vp, ResultKind.PLAYED))
        rows.append(RoundResult(pairing.round, table.low, table.high, low_vp, ResultKind.PLAYED))
    if pairing.bye is not None:
        rows.append(RoundResult(pairing.round, pairing.bye, None, BYE_VP, ResultKind.BYE))
    return rows


def summary(rows: Sequence[Standing]) -> list[tuple[int, str, Decimal, int]]:
    return [(s.rank, s.team.team_id, s.vp, s.rounds_won) for s in rows]


def match(round_: int, a: str, b: str, vp_a: int, vp_b: int) -> list[RoundResult]:
    return [
        RoundResult(round_, a, b, Decimal(vp_a), ResultKind.PLAYED),
        RoundResult(round_, b, a, Decimal(vp_b), ResultKind.PLAYED),
    ]


# --- the draw and round 1 ----------------------------------------------------------------------------------


def test_seeded_draw_is_a_seeded_permutation_independent_of_input_order() -> None:
    ids = ["north", "east", "south", "west", "centre"]
    draw = seeded_draw(ids, 99)
    assert sorted(draw.values()) == [1, 2, 3, 4, 5]
    assert set(draw) == set(ids)
    assert seeded_draw(list(reversed(ids)), 99) == draw
    assert seeded_draw(sorted(ids), 99) == draw
    # the draw is the seeded shuffle of the sorted ids
    order = sorted(ids)
    random.Random(99).shuffle(order)
    assert draw == {team_id: i for i, team_id in enumerate(order, start=1)}
    # another seed, another draw (for these ids and seeds)
    assert seeded_draw(ids, 100) != draw


def test_first_round_pairs_by_the_draw() -> None:
    field = [Team("a", "A", 4), Team("b", "B", 2), Team("c", "C", 1), Team("d", "D", 3)]
    assert first_round(field) == RoundPairing(round=1, tables=(Pairing(1, "c", "b"), Pairing(2, "d", "a")), bye=None)
    # an odd team out: the highest draw number has the bye (D-TR-10)
    field.append(Team("e", "E", 5))
    pairing = first_round(list(reversed(field)))
    assert tables_of(pairing) == [(1, "c", "b"), (2, "d", "a")]
    assert pairing.bye == "e"
    assert first_round([Team("x", "X", 2), Team("y", "Y", 7)]) == RoundPairing(1, (Pairing(1, "x", "y"),), None)


# --- the golden 8-team tournament --------------------------------------------------------------------------

PROVINCES = ["anhui", "beijing", "chongqing", "fujian", "guangdong", "hebei", "jiangsu", "shandong"]


def test_golden_eight_teams_five_rounds() -> None:
    teams = entered(PROVINCES, 2024)
    assert {t.team_id: t.draw for t in teams} == {
        "fujian": 1,
        "jiangsu": 2,
        "anhui": 3,
        "chongqing": 4,
        "guangdong": 5,
        "hebei": 6,
        "beijing": 7,
        "shandong": 8,
    }
    # Round 1 by the draw: 1 v 2, 3 v 4, 5 v 6, 7 v 8.
    pairing = first_round(teams)
    assert tables_of(pairing) == [
        (1, "fujian", "jiangsu"),
        (2, "anhui", "chongqing"),
        (3, "guangdong", "hebei"),
        (4, "beijing", "shandong"),
    ]
    assert pairing.bye is None
    results = played(pairing, [3, 0, -3, 5])
    # fujian 18 : jiangsu 12, anhui 15 : chongqing 15, guangdong 12 : hebei 18, beijing 20 : shandong 10.
    # beijing 20; fujian 18 = hebei 18 (won 1, last 18) -> draw 1 before 6; anhui 15 = chongqing 15 -> draw 3, 4;
    # jiangsu 12 = guangdong 12 -> draw 2, 5; shandong 10.
    assert summary(standings(teams, results)) == [
        (1, "beijing", Decimal(20), 1),
        (2, "fujian", Decimal(18), 1),
        (3, "hebei", Decimal(18), 1),
        (4, "anhui", Decimal(15), 0),
        (5, "chongqing", Decimal(15), 0),
        (6, "jiangsu", Decimal(12), 0),
        (7, "guangdong", Decimal(12), 0),
        (8, "shandong", Decimal(10), 0),
    ]
    # Round 2: beijing takes fujian; hebei (met guangdong) takes anhui; chongqing (met anhui) takes jiangsu;
    # guangdong v shandong.
    pairing = next_round(2, teams, results)
    assert tables_of(pairing) == [
        (1, "beijing", "fujian"),
        (2, "hebei", "anhui"),
        (3, "chongqing", "jiangsu"),
        (4, "guangdong", "shandong"),
    ]
    results += played(pairing, [-2, 1, 4, 6])
    # beijing 13 : fujian 17, hebei 16 : anhui 14, chongqing 19 : jiangsu 11, guangdong 21 : shandong 9.
    # fujian 35; hebei 34 (won 2) before chongqing 34 (won 1): ROUNDS WON decide (chongqing has the better last
    # round, 19 v 16, and the lower draw); guangdong 33 (last 21) before beijing 33 (last 13); anhui 29,
    # jiangsu 23, shandong 19.
    assert summary(standings(teams, results)) == [
        (1, "fujian", Decimal(35), 2),
        (2, "hebei", Decimal(34), 2),
        (3, "chongqing", Decimal(34), 1),
        (4, "guangdong", Decimal(33), 1),
        (5, "beijing", Decimal(33), 1),
        (6, "anhui", Decimal(29), 0),
        (7, "jiangsu", Decimal(23), 0),
        (8, "shandong", Decimal(19), 0),
    ]
    # Round 3: fujian (met jiangsu, beijing) takes hebei, which rounds won put second (chongqing else);
    # chongqing takes guangdong; beijing takes anhui; jiangsu v shandong.
    pairing = next_round(3, teams, results)
    assert tables_of(pairing) == [
        (1, "fujian", "hebei"),
        (2, "chongqing", "guangdong"),
        (3, "beijing", "anhui"),
        (4, "jiangsu", "shandong"),
    ]
    results += played(pairing, [0, -1, 2, 7])
    # fujian 15 : hebei 15, chongqing 14 : guangdong 16, beijing 17 : anhui 13, jiangsu 22 : shandong 8.
    # beijing 50 (won 2, last 17) before fujian 50 (won 2, last 15): the LAST ROUND decides (fujian has draw 1);
    # guangdong 49 (last 16) before hebei 49 (last 15); chongqing 48, jiangsu 45, anhui 42, shandong 27.
    assert summary(standings(teams, results)) == [
        (1, "beijing", Decimal(50), 2),
        (2, "fujian", Decimal(50), 2),
        (3, "guangdong", Decimal(49), 2),
        (4, "hebei", Decimal(49), 2),
        (5, "chongqing", Decimal(48), 1),
        (6, "jiangsu", Decimal(45), 1),
        (7, "anhui", Decimal(42), 0),
        (8, "shandong", Decimal(27), 0),
    ]
    # Round 4: beijing (met shandong, fujian, anhui) takes guangdong; fujian (met jiangsu, beijing, hebei) takes
    # chongqing; hebei (met guangdong, anhui, fujian) takes jiangsu; anhui v shandong.
    pairing = next_round(4, teams, results)
    assert tables_of(pairing) == [
        (1, "beijing", "guangdong"),
        (2, "fujian", "chongqing"),
        (3, "hebei", "jiangsu"),
        (4, "anhui", "shandong"),
    ]
    results += played(pairing, [-1, 1, 2, 3])
    # beijing 14 : guangdong 16, fujian 16 : chongqing 14, hebei 17 : jiangsu 13, anhui 18 : shandong 12.
    # hebei 66 (won 3, last 17) before fujian 66 (won 3, last 16); guangdong 65, beijing 64, chongqing 62,
    # anhui 60, jiangsu 58, shandong 39.
    assert summary(standings(teams, results)) == [
        (1, "hebei", Decimal(66), 3),
        (2, "fujian", Decimal(66), 3),
        (3, "guangdong", Decimal(65), 3),
        (4, "beijing", Decimal(64), 2),
        (5, "chongqing", Decimal(62), 1),
        (6, "anhui", Decimal(60), 1),
        (7, "jiangsu", Decimal(58), 1),
        (8, "shandong", Decimal(39), 0),
    ]
    # Round 5: hebei (met guangdong, anhui, fujian, jiangsu) takes beijing; fujian (met jiangsu, beijing, hebei,
    # chongqing) takes guangdong; chongqing (met anhui, jiangsu, guangdong, fujian) takes shandong; anhui v jiangsu.
    pairing = next_round(5, teams, results)
    assert tables_of(pairing) == [
        (1, "hebei", "beijing"),
        (2, "fujian", "guangdong"),
        (3, "chongqing", "shandong"),
        (4, "anhui", "jiangsu"),
    ]
    results += played(pairing, [2, 2, 1, -4])
    # hebei 17 : beijing 13, fujian 17 : guangdong 13, chongqing 16 : shandong 14, anhui 11 : jiangsu 19.
    # Final (VP by round):
    #   hebei     18 16 15 17 17 = 83, won 4     fujian    18 17 15 16 17 = 83, won 4
    #   guangdong 12 21 16 16 13 = 78, won 3     chongqing 15 19 14 14 16 = 78, won 2
    #   jiangsu   12 11 22 13 19 = 77, won 2     beijing   20 13 17 14 13 = 77, won 2
    #   anhui     15 14 13 18 11 = 71, won 1     shandong  10  9  8 12 14 = 53, won 0
    # hebei before fujian: equal VP, rounds won and last round; the EARLIER ROUND (round 4, 17 v 16) decides
    # (fujian has draw 1). guangdong before chongqing by ROUNDS WON (chongqing has the better last round and the
    # lower draw). jiangsu before beijing by the LAST ROUND (19 v 13).
    final = standings(teams, results)
    assert summary(final) == [
        (1, "hebei", Decimal(83), 4),
        (2, "fujian", Decimal(83), 4),
        (3, "guangdong", Decimal(78), 3),
        (4, "chongqing", Decimal(78), 2),
        (5, "jiangsu", Decimal(77), 2),
        (6, "beijing", Decimal(77), 2),
        (7, "anhui", Decimal(71), 1),
        (8, "shandong", Decimal(53), 0),
    ]
    assert final[0].by_round == tuple(Decimal(v) for v in (18, 16, 15, 17, 17))
    assert sum((s.vp for s in final), Decimal(0)) == 8 * 5 * 15


# --- the golden 7-team tournament: byes rotate, a bye is worth 20 VP ---------------------------------------

ANIMALS = ["dragon", "tiger", "crane", "snake", "leopard", "horse", "ox"]


def test_golden_seven_teams_byes_rotate() -> None:
    teams = entered(ANIMALS, 7)
    assert sorted((t.draw, t.team_id) for t in teams) == [
        (1, "snake"),
        (2, "tiger"),
        (3, "ox"),
        (4, "crane"),
        (5, "leopard"),
        (6, "dragon"),
        (7, "horse"),
    ]
    pairing = first_round(teams)
    assert tables_of(pairing) == [(1, "snake", "tiger"), (2, "ox", "crane"), (3, "leopard", "dragon")]
    assert pairing.bye == "horse"  # draw 7, the odd team out
    results = played(pairing, [2, -4, 0])
    # horse's bye: 20 VP and a round won, more than any played result (snake 17, crane 19, leopard 15, ...)
    after = standings(teams, results)
    assert summary(after) == [
        (1, "horse", Decimal(20), 1),
        (2, "crane", Decimal(19), 1),
        (3, "snake", Decimal(17), 1),
        (4, "leopard", Decimal(15), 0),
        (5, "dragon", Decimal(15), 0),
        (6, "tiger", Decimal(13), 0),
        (7, "ox", Decimal(11), 0),
    ]
    assert after[0].byes == 1
    assert after[0].opponents == ()
    # Round 2: the bye to the lowest-ranked team without one: ox. horse v crane, snake (met tiger) v leopard,
    # dragon (met leopard) v tiger.
    pairing = next_round(2, teams, results)
    assert tables_of(pairing) == [(1, "horse", "crane"), (2, "snake", "leopard"), (3, "dragon", "tiger")]
    assert pairing.bye == "ox"
    results += played(pairing, [-1, 3, 5])
    # snake 35 (won 2, last 18) before crane 35 (won 2, last 16), dragon 35 (won 1), horse 34, ox 31 (11 + the bye's
    # 20), leopard 27, tiger 23.
    assert summary(standings(teams, results))[4] == (5, "ox", Decimal(31), 1)
    # Round 3: bye to tiger (last, no bye yet); snake v crane, dragon v horse, ox v leopard.
    pairing = next_round(3, teams, results)
    assert tables_of(pairing) == [(1, "snake", "crane"), (2, "dragon", "horse"), (3, "ox", "leopard")]
    assert pairing.bye == "tiger"
    results += played(pairing, [0, -2, 6])
    # ox 52, horse 51, snake 50 before crane 50 (won 2 each, last round 15 each, round 2: 18 v 16), dragon 48,
    # tiger 43, leopard 36.
    # Round 4: bye to leopard (last, no bye yet); ox v horse, snake (met crane) v dragon, crane v tiger.
    pairing = next_round(4, teams, results)
    assert tables_of(pairing) == [(1, "ox", "horse"), (2, "snake", "dragon"), (3, "crane", "tiger")]
    assert pairing.bye == "leopard"
    results += played(pairing, [1, -3, 2])
    # ox 68, crane 67, dragon 66, horse 65, snake 62, leopard 56 (won 1, last 20: the bye) before tiger 56 (won 1,
    # last 13).
    # Round 5: teams without a bye: crane, dragon, snake; the lowest-ranked is snake. ox (met crane) v dragon,
    # crane (met ox, horse, snake, tiger) v leopard, horse v tiger.
    pairing = next_round(5, teams, results)
    assert tables_of(pairing) == [(1, "ox", "dragon"), (2, "crane", "leopard"), (3, "horse", "tiger")]
    assert pairing.bye == "snake"
    results += played(pairing, [0, 4, -2])
    after = standings(teams, results)
    assert summary(after) == [
        (1, "crane", Decimal(86), 4),
        (2, "ox", Decimal(83), 3),
        (3, "snake", Decimal(82), 3),
        (4, "dragon", Decimal(81), 2),
        (5, "horse", Decimal(78), 2),
        (6, "tiger", Decimal(73), 2),
        (7, "leopard", Decimal(67), 1),
    ]
    assert sorted(s.team.team_id for s in after if s.byes == 1) == ["horse", "leopard", "ox", "snake", "tiger"]
    # Round 6: crane and dragon have had no bye. dragon (lowest-ranked) on the bye would leave crane, which has met
    # ox, horse, snake, tiger and leopard, with nobody; crane on the bye leaves dragon (met leopard, tiger, horse,
    # snake, ox) with nobody. So the bye goes to the lowest-ranked team with one bye: leopard. crane must meet
    # dragon; ox then takes tiger (ox v snake would leave horse v tiger, who have met) and snake meets horse.
    pairing = next_round(6, teams, results)
    assert tables_of(pairing) == [(1, "crane", "dragon"), (2, "ox", "tiger"), (3, "snake", "horse")]
    assert pairing.bye == "leopard"
    results += played(pairing, [1, -1, 2])
    after = standings(teams, results)
    assert summary(after) == [
        (1, "crane", Decimal(102), 5),
        (2, "snake", Decimal(99), 4),
        (3, "ox", Decimal(97), 3),
        (4, "dragon", Decimal(95), 2),
        (5, "horse", Decimal(91), 2),
        (6, "tiger", Decimal(89), 3),
        (7, "leopard", Decimal(87), 2),
    ]
    assert after[-1].by_round == tuple(Decimal(v) for v in (15, 12, 9, 20, 11, 20))
    assert after[-1].byes == 2
    # Round 7: crane and dragon have each met every other team and only one of them can sit out.
    with pytest.raises(NoPairing, match=r"round 7 cannot be paired.*crane, dragon have already met every other team"):
        next_round(7, teams, results)


# --- backtracking, forfeits, the bye's fallback ------------------------------------------------------------


def test_pairing_backtracks_when_the_natural_pairing_strands_a_team() -> None:
    # Round 1: a-b, c-e, d-f; round 2: a-d, b-c, e-f. Standing a 36, b 35, c 29, d 28, e 27, f 25.
    results = match(1, "a", "b", 16, 14) + match(1, "c", "e", 20, 10) + match(1, "d", "f", 18, 12)
    results += match(2, "a", "d", 20, 10) + match(2, "b", "c", 21, 9) + match(2, "e", "f", 17, 13)
    teams = [Team(t, t.upper(), i) for i, t in enumerate("abcdef", start=1)]
    assert [s.team.team_id for s in standings(teams, results)] == list("abcdef")
    # a (met b, d) takes c. b (met a, c): b-d leaves e-f, who met; b-e leaves d-f, who met; so b-f, and d-e.
    pairing = next_round(3, teams, results)
    assert tables_of(pairing) == [(1, "a", "c"), (2, "b", "f"), (3, "d", "e")]


def test_a_forfeit_counts_as_met() -> None:
    teams = [Team("a", "A", 1), Team("c", "C", 2), Team("b", "B", 3), Team("d", "D", 4)]
    pairing = first_round(teams)
    assert tables_of(pairing) == [(1, "a", "c"), (2, "b", "d")]
    results = played(pairing, [12, 12])
    # a 27, b 27 (won 1 each, last 27; draw 1 before 3), c 3, d 3: round 2 a-b, c-d.
    pairing = next_round(2, teams, results)
    assert tables_of(pairing) == [(1, "a", "b"), (2, "c", "d")]
    # a forfeits: b stays and gets the larger of 20 and its average so far, 27 (D-TR-11); c-d 15:15.
    stays = forfeit_vp([Decimal(27)])
    assert stays == Decimal(27)
    results += [
        RoundResult(2, "b", "a", stays, ResultKind.FORFEIT_WON),
        RoundResult(2, "a", "b", FORFEIT_LOSER_VP, ResultKind.FORFEIT_LOST),
        *match(2, "c", "d", 15, 15),
    ]
    # b 54 (won 2), a 27 (won 1), c 18 = d 18 (won 0, last 15, round 1 3 each; draw 2 before 4).
    assert summary(standings(teams, results)) == [
        (1, "b", Decimal(54), 2),
        (2, "a", Decimal(27), 1),
        (3, "c", Decimal(18), 0),
        (4, "d", Decimal(18), 0),
    ]
    # Round 3: b's best-ranked opponent would be a, but the forfeit counts as met: b v c, a v d.
    assert tables_of(next_round(3, teams, results)) == [(1, "b", "c"), (2, "a", "d")]


def test_the_bye_moves_on_when_it_would_make_pairing_impossible() -> None:
    # Five teams, three rounds:
    #   round 1: a-d 20:10, b-e 15:15, c bye     round 2: a-e 20:10, b-c 15:15, d bye
    #   round 3: a-c 20:10, b-d 14:16, e bye
    # a 60; d 10 + 20 + 16 = 46; e 15 + 10 + 20 = 45 and c 20 + 15 + 10 = 45 (won 1 each: the bye; last round
    # 20 v 10); b 15 + 15 + 14 = 44.
    def bye(round_: int, team: str) -> RoundResult:
        return RoundResult(round_, team, None, BYE_VP, ResultKind.BYE)

    results = [*match(1, "a", "d", 20, 10), *match(1, "b", "e", 15, 15), bye(1, "c")]
    results += [*match(2, "a", "e", 20, 10), *match(2, "b", "c", 15, 15), bye(2, "d")]
    results += [*match(3, "a", "c", 20, 10), *match(3, "b", "d", 14, 16), bye(3, "e")]
    teams = [Team(t, t.upper(), i) for i, t in enumerate("abcde", start=1)]
    assert [(s.team.team_id, s.vp, s.byes) for s in standings(teams, results)] == [
        ("a", Decimal(60), 0),
        ("d", Decimal(46), 1),
        ("e", Decimal(45), 1),
        ("c", Decimal(45), 1),
        ("b", Decimal(44), 0),
    ]
    # Only a and b have had no bye. b (the lower) on the bye leaves a, which has met d, e and c, with nobody;
    # a on the bye leaves b, which has met e, c and d, with nobody. So the bye goes to the lowest-ranked team with
    # one bye, c: then a meets b (the only team it has not met) and d meets e.
    pairing = next_round(4, teams, results)
    assert pairing == RoundPairing(round=4, tables=(Pairing(1, "a", "b"), Pairing(2, "d", "e")), bye="c")


# --- properties against an oracle ----------------------------------------------------------------------------


def pairable(teams: frozenset[str], met: dict[str, set[str]]) -> bool:
    """Whether ``teams`` can all be paired with teams they have not met: brute force, memoised on the teams left."""

    @cache
    def can_pair(left: frozenset[str]) -> bool:
        if not left:
            return True
        first = min(left)
        return any(other not in met[first] and can_pair(left - {first, other}) for other in left - {first})

    return len(teams) % 2 == 0 and can_pair(teams)


def oracle_pairing(ranked: Sequence[str], met: dict[str, set[str]], byes: dict[str, int]) -> RoundPairing | None:
    """The round §10 and D-TR-10 ask for, by brute force: the bye to the first team in bye order (fewest byes, then
    lowest-ranked) that leaves a full pairing; then a depth-first search in standing order, the top team trying
    opponents best-ranked first, whose first full pairing wins (a choice is kept when `pairable` says the teams
    left can still be paired, which is what backtracking would find)."""
    in_bye_order = sorted(ranked, key=lambda t: (byes[t], -ranked.index(t)))
    bye_order: Sequence[str | None] = in_bye_order if len(ranked) % 2 else (None,)
    for bye in bye_order:
        left = frozenset(t for t in ranked if t != bye)
        if not pairable(left, met):
            continue
        pairs: list[Pairing] = []
        while left:
            top = min(left, key=ranked.index)
            other = next(
                o for o in ranked if o in left - {top} and o not in met[top] and pairable(left - {top, o}, met)
            )
            pairs.append(Pairing(len(pairs) + 1, top, other))
            left -= {top, other}
        return RoundPairing(0, tuple(pairs), bye)
    return None


Outcome = tuple[str, int]
"""A table's outcome: ("played", level difference high minus low), ("high forfeits", 0) or ("low forfeits", 0)."""


def check_round(pairing: RoundPairing, ranked: list[Standing], seen: Counter[str]) -> None:
    """The invariants of a Swiss round and equality with the oracle; ``seen`` counts the situations met."""
    ids = [s.team.team_id for s in ranked]
    rank = {team_id: i for i, team_id in enumerate(ids)}
    met = {s.team.team_id: set(s.opponents) for s in ranked}
    byes = {s.team.team_id: s.byes for s in ranked}
    # every team plays exactly once or has the bye; a bye only with an odd number of teams
    playing = [t for p in pairing.tables for t in (p.high, p.low)] + ([pairing.bye] if pairing.bye else [])
    assert sorted(playing) == sorted(ids)
    assert (pairing.bye is None) == (len(ids) % 2 == 0)
    # never a rematch; tables numbered from 1 in order; high is the better-ranked team; top pairings first
    assert [p.table for p in pairing.tables] == list(range(1, len(pairing.tables) + 1))
    for p in pairing.tables:
        assert p.low not in met[p.high]
        assert rank[p.high] < rank[p.low]
    assert [rank[p.high] for p in pairing.tables] == sorted(rank[p.high] for p in pairing.tables)
    # byes rotate: a team sits out again while another has sat out less only when that other cannot sit out
    if pairing.bye is not None:
        for t in ids:
            if byes[t] < byes[pairing.bye] or (byes[t] == byes[pairing.bye] and rank[t] > rank[pairing.bye]):
                assert not pairable(frozenset(ids) - {t}, met), f"{t} could have had the bye"
                seen["bye moved on"] += 1
    # pairings follow standings: exactly the oracle's round
    expected = oracle_pairing(ids, met, byes)
    assert expected is not None
    assert (pairing.tables, pairing.bye) == (expected.tables, expected.bye)
    left = [t for t in ids if t != pairing.bye]
    for p in pairing.tables:
        best = next(o for o in left if o != p.high and o not in met[p.high])
        if best != p.low:
            seen["backtracked"] += 1
        left = [t for t in left if t not in (p.high, p.low)]


def result_rows(pairing: RoundPairing, plays: Sequence[Outcome], results: list[RoundResult]) -> list[RoundResult]:
    def earlier(team_id: str) -> list[Decimal]:
        return [row.vp for row in sorted(results, key=lambda row: row.round) if row.team_id == team_id]

    rows: list[RoundResult] = []
    r = pairing.round
    for table, (how, difference) in zip(pairing.tables, plays, strict=True):
        if how == "played":
            high_vp, low_vp = victory_points(difference)
            rows.append(RoundResult(r, table.high, table.low, high_vp, ResultKind.PLAYED))
            rows.append(RoundResult(r, table.low, table.high, low_vp, ResultKind.PLAYED))
        else:
            stays, leaves = (table.low, table.high) if how == "high forfeits" else (table.high, table.low)
            rows.append(RoundResult(r, stays, leaves, forfeit_vp(earlier(stays)), ResultKind.FORFEIT_WON))
            rows.append(RoundResult(r, leaves, stays, FORFEIT_LOSER_VP, ResultKind.FORFEIT_LOST))
    if pairing.bye is not None:
        rows.append(RoundResult(r, pairing.bye, None, BYE_VP, ResultKind.BYE))
    return rows


def play_tournament(n: int, rounds: int, seed: int, outcomes: Callable[[int], list[Outcome]]) -> Counter[str]:
    """Round 1 by the draw, then Swiss rounds 2..rounds, each checked; stops at a round that cannot be paired
    (which the oracle must agree with). ``outcomes(tables)`` gives each round's results."""
    seen: Counter[str] = Counter()
    teams = entered([f"team{i:02}" for i in range(n)], seed)
    pairing = first_round(teams)
    results = result_rows(pairing, outcomes(len(pairing.tables)), [])
    for r in range(2, rounds + 1):
        ranked = standings(teams, results)
        try:
            pairing = next_round(r, teams, results)
        except NoPairing:
            ids = [s.team.team_id for s in ranked]
            met = {s.team.team_id: set(s.opponents) for s in ranked}
            assert oracle_pairing(ids, met, {s.team.team_id: s.byes for s in ranked}) is None
            seen["no pairing"] += 1
            return seen
        check_round(pairing, ranked, seen)
        # the same round whatever order the teams and results come in
        assert next_round(r, list(reversed(teams)), list(reversed(results))) == pairing
        rows = result_rows(pairing, outcomes(len(pairing.tables)), results)
        seen["forfeits"] += sum(row.kind is ResultKind.FORFEIT_LOST for row in rows)
        results += rows
        seen["rounds"] += 1
    return seen


@st.composite
def outcomes_of(draw: st.DrawFn, tables: int) -> list[Outcome]:
    """Per table a level difference −14..14, or (about 1 in 10) a forfeit by one of the teams."""
    out: list[Outcome] = []
    for _ in range(tables):
        roll = draw(st.integers(0, 19))
        if roll == 0:
            out.append(("high forfeits", 0))
        elif roll == 1:
            out.append(("low forfeits", 0))
        else:
            out.append(("played", draw(st.integers(-14, 14))))
    return out


@profile(150)
@given(st.data())
def test_swiss_rounds_follow_the_rules(data: st.DataObject) -> None:
    n = data.draw(st.integers(4, 20), label="teams")
    rounds = data.draw(st.integers(2, min(n - 1, 7)), label="rounds")
    seed = data.draw(st.integers(0, 2**32), label="seed")
    play_tournament(n, rounds, seed, lambda tables: data.draw(outcomes_of(tables)))


def test_seeded_tournaments_reach_backtracking_moved_byes_and_dead_ends() -> None:
    """The same checks over seeded random tournaments, counting that the hard cases really occur."""
    seen: Counter[str] = Counter()
    for seed in range(150):
        rng = random.Random(seed)
        n = rng.randint(4, 12)

        def outcomes(tables: int, rng: random.Random = rng) -> list[Outcome]:
            return [
                ("high forfeits", 0) if roll == 0 else ("low forfeits", 0) if roll == 1 else ("played", difference)
                for roll, difference in ((rng.randint(0, 19), rng.randint(-14, 14)) for _ in range(tables))
            ]

        seen += play_tournament(n, n - 1 if n % 2 == 0 else n, seed, outcomes)
    assert seen["backtracked"] > 0
    assert seen["bye moved on"] > 0
    assert seen["no pairing"] > 0
    assert seen["forfeits"] > 0
    assert seen["rounds"] > 500


# --- real event sizes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [64, 63])
def test_a_large_event_pairs_every_round_without_a_rematch_or_a_second_bye(n: int) -> None:
    """64 (and 63) teams, 9 rounds: every round seats every team (but the bye) with one it has not met, and no team
    has the bye twice. How long a round takes to pair is measured by bench/swiss.py, on these very events."""
    rng = random.Random(n)
    teams = entered([f"team{i:02}" for i in range(n)], 2024)
    pairing = first_round(teams)
    results = played(pairing, [rng.randint(-14, 14) for _ in pairing.tables])
    met: set[frozenset[str]] = {frozenset((p.high, p.low)) for p in pairing.tables}
    byes = {pairing.bye}
    for r in range(2, 10):
        pairing = next_round(r, teams, results)
        pairs = {frozenset((p.high, p.low)) for p in pairing.tables}
        assert len(pairs) == n // 2
        assert not pairs & met
        met |= pairs
        if n % 2:
            assert pairing.bye not in byes
            byes.add(pairing.bye)
        results += played(pairing, [rng.randint(-14, 14) for _ in pairing.tables])


# --- bad input -----------------------------------------------------------------------------------------------


def test_bad_input_is_refused() -> None:
    teams = [Team(t, t.upper(), i) for i, t in enumerate("abcd", start=1)]
    results = played(first_round(teams), [1, 2])
    with pytest.raises(ValueError, match="at least 2 teams, got 1"):
        seeded_draw(["a"], 1)
    with pytest.raises(ValueError, match="at least 2 teams, got 0"):
        first_round([])
    with pytest.raises(ValueError, match="at least 2 teams, got 1"):
        next_round(2, teams[:1], [])
    with pytest.raises(ValueError, match="entered more than once: a, b"):
        seeded_draw(["a", "b", "c", "b", "a"], 1)
    with pytest.raises(ValueError, match="'a' is entered twice"):
        first_round([*teams, Team("a", "A", 9)])
    with pytest.raises(ValueError, match="'a' is entered twice"):
        next_round(2, [*teams, Team("a", "A", 9)], results)
    with pytest.raises(ValueError, match="share draw number 2"):
        first_round([*teams, Team("e", "E", 2)])
    with pytest.raises(ValueError, match="'x' is not entered"):
        next_round(2, teams, [*results, *match(1, "x", "y", 15, 15)])
    with pytest.raises(ValueError, match="'x' is not entered"):
        next_round(2, teams, [*results, RoundResult(1, "a", "x", Decimal(15), ResultKind.PLAYED)])
    with pytest.raises(ValueError, match="round 1 is paired by the draw"):
        next_round(1, teams, [])
    with pytest.raises(ValueError, match="results of round 2 already"):
        next_round(2, teams, results + played(next_round(2, teams, results), [0, 0]))
    with pytest.raises(ValueError, match="round 2 has no results"):
        next_round(3, teams, results)
    with pytest.raises(ValueError, match="two results in round 1"):
        next_round(2, teams, results + results[:2])


def test_no_pairing_says_why() -> None:
    teams = [Team(t, t.upper(), i) for i, t in enumerate("abcd", start=1)]
    results = played(first_round(teams), [1, 2])
    for r in (2, 3):
        results += played(next_round(r, teams, results), [0, 0])
    with pytest.raises(NoPairing) as raised:
        next_round(4, teams, results)
    assert isinstance(raised.value, ValueError)
    assert str(raised.value).startswith("round 4 cannot be paired: no pairing of the 4 teams avoids two teams meeting")
    assert "have already met every other team" in str(raised.value)
    # Six teams, three rounds in which a, b, c each met d, e and f: every team still has two teams it has not met,
    # but those form two groups of three, and three teams cannot be paired.
    six = [Team(t, t.upper(), i) for i, t in enumerate("abcdef", start=1)]
    rows = match(1, "a", "d", 15, 15) + match(1, "b", "e", 15, 15) + match(1, "c", "f", 15, 15)
    rows += match(2, "a", "e", 15, 15) + match(2, "b", "f", 15, 15) + match(2, "c", "d", 15, 15)
    rows += match(3, "a", "f", 15, 15) + match(3, "b", "d", 15, 15) + match(3, "c", "e", 15, 15)
    with pytest.raises(NoPairing, match="the matches not yet played cannot cover every team at once"):
        next_round(4, six, rows)
