"""拖拉机 levels, deal settlement, referee actions and match results (docs/rules/tractor.md §2, §9-§11).

Every expected value is derived by hand from docs/rules/tractor.md and the articles of the Chinese source text
it restates (第一章 一.3, 第二章 二/九/十二, 七 计分, 第四章),
never copied from engine output. Levels are indexes: 0 = "3" … 11 = "A", 12 = past A.
"""

from __future__ import annotations

import pytest

from paiju.rules.cards import Rank, full_decks, parse_cards
from paiju.rules.errors import RuleError
from paiju.rules.tractor.settlement import (
    ACE,
    PAST_A,
    START_LEVEL,
    LabourReform,
    RoundClock,
    Settlement,
    Side,
    Team,
    announcement_due,
    card_points,
    labour_reform,
    last_trick_score,
    level_index,
    level_name,
    level_rank,
    levels_gained,
    next_seat,
    offence_penalty,
    partner_of,
    penalty_points,
    settle,
    side_of,
    team_of,
)

THREE, FOUR, FIVE, SIX, SEVEN, EIGHT, NINE, TEN, JACK, QUEEN, KING = range(11)


# --- §1 table, §2 levels ------------------------------------------------------------------------------------


def test_s1_teams_partners_and_next_seat() -> None:
    assert [team_of(s) for s in range(4)] == [Team.A, Team.B, Team.A, Team.B]
    assert Team.A.seats == (0, 2)
    assert Team.B.seats == (1, 3)
    assert [partner_of(s) for s in range(4)] == [2, 3, 0, 1]
    assert [next_seat(s) for s in range(4)] == [1, 2, 3, 0]
    # dealer 1 (team B): seats 1, 3 defend, seats 0, 2 attack
    assert [side_of(s, 1) for s in range(4)] == [Side.ATTACKERS, Side.DEFENDERS, Side.ATTACKERS, Side.DEFENDERS]
    with pytest.raises(ValueError):
        team_of(4)


def test_s2_level_names_3_to_a_then_past_a() -> None:
    names = [level_name(i) for i in range(13)]
    assert names == ["3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "past A"]
    assert START_LEVEL == 0
    assert ACE == 11
    assert PAST_A == 12
    with pytest.raises(ValueError):
        level_name(13)
    with pytest.raises(ValueError):
        level_name(-1)


def test_s2_level_index_parses_names() -> None:
    assert level_index("3") == 0
    assert level_index("10") == 7
    assert level_index("T") == 7
    assert level_index("j") == 8
    assert level_index("A") == 11
    assert level_index("past A") == 12
    with pytest.raises(RuleError):
        level_index("2")


def test_s2_level_rank_of_each_index() -> None:
    expected = [
        Rank.THREE,
        Rank.FOUR,
        Rank.FIVE,
        Rank.SIX,
        Rank.SEVEN,
        Rank.EIGHT,
        Rank.NINE,
        Rank.TEN,
        Rank.JACK,
        Rank.QUEEN,
        Rank.KING,
        Rank.ACE,
    ]
    assert [level_rank(i) for i in range(12)] == expected
    with pytest.raises(ValueError):
        level_rank(PAST_A)  # past A is played by nobody: the game is over


# --- §1 card points, D-TR-7 last trick ---------------------------------------------------------------------


def test_s1_card_points_5_10_k() -> None:
    assert card_points(parse_cards("5S TH KD")) == 25
    assert card_points(parse_cards("2C 3D 4H 6S 7S 8S 9S JS QS AS SJ BJ")) == 0
    assert card_points(()) == 0


def test_s1_six_decks_hold_600_points() -> None:
    # per deck: four 5s (20), four 10s (40), four Ks (40) = 100; six decks = 600
    assert card_points(full_decks(6)) == 600


def test_d_tr_7_attackers_win_last_trick_points_times_cards_per_player() -> None:
    # shared scenario: 5S 5S 5S (15) + TS TS (20) + KS KS (20) = 55 points, 6 cards each -> 330
    points = card_points(parse_cards("5S 5S 6S 6S 5S 6S 7S 7S 8S 8S 9S 9S TS TS 4D 6D 8D 9D KS KS QS QS JS 4C"))
    assert points == 55
    assert last_trick_score(points, 6, attackers_won=True) == 330


def test_d_tr_7_single_card_last_trick_counts_once() -> None:
    assert last_trick_score(25, 1, attackers_won=True) == 25


def test_d_tr_7_defenders_win_last_trick_attackers_get_nothing() -> None:
    assert last_trick_score(55, 6, attackers_won=False) == 0
    assert last_trick_score(25, 1, attackers_won=False) == 0


def test_d_tr_7_rejects_impossible_last_trick() -> None:
    with pytest.raises(ValueError):
        last_trick_score(10, 0, attackers_won=True)
    with pytest.raises(ValueError):
        last_trick_score(-5, 1, attackers_won=True)


# --- §9 bands (七.1-2): one test per boundary ----------------------------------------------------------------


def test_s9_band_600_attackers_take_up_6() -> None:
    assert levels_gained(600) == (Side.ATTACKERS, 6)  # (600 - 240) / 60 = 6


def test_s9_band_360_attackers_take_up_2() -> None:
    assert levels_gained(360) == (Side.ATTACKERS, 2)


def test_s9_band_359_attackers_take_up_1() -> None:
    assert levels_gained(359) == (Side.ATTACKERS, 1)


def test_s9_band_330_attackers_take_up_1() -> None:
    assert levels_gained(330) == (Side.ATTACKERS, 1)


def test_s9_band_300_attackers_take_up_1() -> None:
    assert levels_gained(300) == (Side.ATTACKERS, 1)  # 每增加60分加一级


def test_s9_band_299_attackers_take_up_0() -> None:
    assert levels_gained(299) == (Side.ATTACKERS, 0)


def test_s9_band_240_attackers_take_up_0() -> None:
    assert levels_gained(240) == (Side.ATTACKERS, 0)  # 上台分数240分: take the deal, no level


def test_s9_band_239_defenders_up_1() -> None:
    assert levels_gained(239) == (Side.DEFENDERS, 1)  # 不满240分 -> 升一级连庄


def test_s9_band_180_defenders_up_1() -> None:
    assert levels_gained(180) == (Side.DEFENDERS, 1)


def test_s9_band_179_defenders_up_2() -> None:
    assert levels_gained(179) == (Side.DEFENDERS, 2)  # 不够180分 -> 升二级


def test_s9_band_120_defenders_up_2() -> None:
    assert levels_gained(120) == (Side.DEFENDERS, 2)


def test_s9_band_119_defenders_up_3() -> None:
    assert levels_gained(119) == (Side.DEFENDERS, 3)  # 不够120分 -> 升三级


def test_s9_band_60_defenders_up_3() -> None:
    assert levels_gained(60) == (Side.DEFENDERS, 3)


def test_s9_band_59_defenders_up_4() -> None:
    assert levels_gained(59) == (Side.DEFENDERS, 4)  # 不够60分 -> 升四级


def test_s9_band_1_defenders_up_4() -> None:
    assert levels_gained(1) == (Side.DEFENDERS, 4)


def test_s9_band_5_defenders_up_4() -> None:
    assert levels_gained(5) == (Side.DEFENDERS, 4)  # the smallest real score above 0


def test_s9_band_0_da_guang_defenders_up_5() -> None:
    assert levels_gained(0) == (Side.DEFENDERS, 5)  # 大光


def test_s9_band_minus_1_defenders_up_5() -> None:
    assert levels_gained(-1) == (Side.DEFENDERS, 5)  # 5 + floor(1/60)


def test_s9_band_minus_59_defenders_up_5() -> None:
    assert levels_gained(-59) == (Side.DEFENDERS, 5)


def test_s9_band_minus_60_defenders_up_6() -> None:
    assert levels_gained(-60) == (Side.DEFENDERS, 6)  # 每负60分 … 在大光的基础上升一级


def test_s9_band_minus_61_defenders_up_6() -> None:
    assert levels_gained(-61) == (Side.DEFENDERS, 6)


def test_s9_band_minus_119_defenders_up_6() -> None:
    assert levels_gained(-119) == (Side.DEFENDERS, 6)


def test_s9_band_minus_120_defenders_up_7() -> None:
    assert levels_gained(-120) == (Side.DEFENDERS, 7)


# --- §9 settle: the shared scenario, D-TR-8 next dealer, D-TR-1 stop at A --------------------------------------


def test_s9_shared_scenario_330_dealer_0_attackers_take_up_1_next_dealer_1() -> None:
    result = settle(dealer=0, levels=(THREE, THREE), attackers_points=330)
    assert result == Settlement(
        dealer=0,
        attackers_points=330,
        winner=Side.ATTACKERS,
        levels_up=1,
        levels=(THREE, FOUR),  # team B (seats 1, 3) attacked: 3 -> 4
        next_dealer=1,
        game_winner=None,
    )
    assert result.winning_team is Team.B


def test_s9_negative_score_defenders_up_6() -> None:
    # dealer 2 (team A) at 5; attackers end at -70 after penalties: 5 + floor(70/60) = 6 -> 5 + 6 = J
    result = settle(dealer=2, levels=(FIVE, NINE), attackers_points=-70)
    assert (result.winner, result.levels_up, result.levels) == (Side.DEFENDERS, 6, (JACK, NINE))
    assert result.next_dealer == 0


def test_s9_240_attackers_take_the_deal_without_a_level() -> None:
    result = settle(dealer=1, levels=(SEVEN, TEN), attackers_points=240)
    assert (result.winner, result.levels_up, result.levels) == (Side.ATTACKERS, 0, (SEVEN, TEN))
    assert result.next_dealer == 2
    assert result.winning_team is Team.A


def test_d_tr_8_defenders_hold_dealers_partner_deals() -> None:
    # 100 points: defenders +3; the dealer's partner deals next
    for dealer, partner in [(0, 2), (1, 3), (2, 0), (3, 1)]:
        result = settle(dealer=dealer, levels=(THREE, THREE), attackers_points=100)
        assert result.winner is Side.DEFENDERS
        assert result.next_dealer == partner


def test_d_tr_8_attackers_take_old_dealers_next_seat_deals() -> None:
    for dealer, after in [(0, 1), (1, 2), (2, 3), (3, 0)]:
        result = settle(dealer=dealer, levels=(THREE, THREE), attackers_points=250)
        assert result.winner is Side.ATTACKERS
        assert result.next_dealer == after


def test_d_tr_8_defenders_gain_goes_to_dealer_team() -> None:
    # dealer 3 (team B) at 6, A at 8; attackers 100 -> B +3: 6 -> 9
    result = settle(dealer=3, levels=(EIGHT, SIX), attackers_points=100)
    assert result.levels == (EIGHT, NINE)
    assert result.winning_team is Team.B


def test_d_tr_1_defenders_gain_stops_at_a() -> None:
    # dealer team A at K (10), attackers 90 -> +3 would be past A: stops at A, no game winner yet
    result = settle(dealer=0, levels=(KING, FIVE), attackers_points=90)
    assert result.levels_up == 3
    assert result.levels == (ACE, FIVE)
    assert result.game_winner is None
    assert result.next_dealer == 2


def test_d_tr_1_defenders_from_j_with_plus_4_stop_at_a() -> None:
    result = settle(dealer=1, levels=(THREE, JACK), attackers_points=30)
    assert result.levels == (THREE, ACE)
    assert result.game_winner is None


def test_d_tr_1_dealer_team_at_a_holds_goes_past_a_and_wins() -> None:
    result = settle(dealer=1, levels=(QUEEN, ACE), attackers_points=200)  # defenders +1
    assert result.levels == (QUEEN, PAST_A)
    assert result.game_winner is Team.B


def test_d_tr_1_dealer_team_at_a_da_guang_goes_only_to_past_a() -> None:
    result = settle(dealer=0, levels=(ACE, THREE), attackers_points=0)  # +5, but A -> past A only
    assert result.levels_up == 5
    assert result.levels == (PAST_A, THREE)
    assert result.game_winner is Team.A


def test_d_tr_1_attackers_gain_stops_at_a() -> None:
    # attackers (team A) at Q score 420: +3 -> stops at A, not past A
    result = settle(dealer=1, levels=(QUEEN, FOUR), attackers_points=420)
    assert (result.winner, result.levels_up) == (Side.ATTACKERS, 3)
    assert result.levels == (ACE, FOUR)
    assert result.game_winner is None
    assert result.next_dealer == 2


def test_d_tr_1_attackers_at_a_never_jump_past_a() -> None:
    result = settle(dealer=0, levels=(NINE, ACE), attackers_points=600)  # +6, already at A
    assert result.levels == (NINE, ACE)
    assert result.game_winner is None
    assert result.next_dealer == 1  # they take the deal: they must hold it next as dealer team


def test_d_tr_1_team_at_a_takes_deal_then_holds_to_win() -> None:
    first = settle(dealer=0, levels=(NINE, ACE), attackers_points=250)
    assert first.levels == (NINE, ACE)
    assert first.next_dealer == 1
    second = settle(dealer=first.next_dealer, levels=first.levels, attackers_points=235)
    assert second.levels == (NINE, PAST_A)
    assert second.game_winner is Team.B
    assert second.next_dealer == 3


def test_s9_settle_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        settle(dealer=4, levels=(THREE, THREE), attackers_points=0)
    with pytest.raises(ValueError):
        settle(dealer=0, levels=(PAST_A, THREE), attackers_points=0)  # the game is already over


# --- §11 referee actions (第二章 二, 九, 十二) -------------------------------------------------------------------


def test_s11_penalty_10_points_per_card_either_way() -> None:
    assert penalty_points(1, in_favour_of_attackers=True) == 10
    assert penalty_points(3, in_favour_of_attackers=True) == 30
    assert penalty_points(2, in_favour_of_attackers=False) == -20
    with pytest.raises(RuleError):
        penalty_points(0, in_favour_of_attackers=True)


def test_s11_penalty_favours_the_team_that_did_not_err() -> None:
    # dealer 0: seats 0, 2 defend, seats 1, 3 attack
    assert offence_penalty(offender=1, dealer=0, cards=2) == -20  # an attacker erred
    assert offence_penalty(offender=2, dealer=0, cards=1) == 10  # a defender erred
    assert offence_penalty(offender=3, dealer=1, cards=4) == 40  # dealer 1: seat 3 defends
    assert offence_penalty(offender=0, dealer=1, cards=4) == -40  # dealer 1: seat 0 attacks


def test_s11_penalty_can_take_the_score_below_0() -> None:
    score = 20 + penalty_points(4, in_favour_of_attackers=False)  # 20 - 40 = -20
    assert score == -20
    result = settle(dealer=0, levels=(THREE, THREE), attackers_points=score)
    assert (result.winner, result.levels_up) == (Side.DEFENDERS, 5)  # 5 + floor(20/60)


def test_s11_penalty_can_lift_the_attackers_over_240() -> None:
    score = 230 + penalty_points(1, in_favour_of_attackers=True)
    result = settle(dealer=3, levels=(THREE, THREE), attackers_points=score)
    assert (result.attackers_points, result.winner, result.levels_up) == (240, Side.ATTACKERS, 0)
    assert result.next_dealer == 0


def test_s11_labour_reform_levels_innocent_defenders_hold_plus_2() -> None:
    # dealer 0 (team A defends at 4); attacker team B commits 劳改 at 150 points -> A chooses +2
    result = labour_reform(
        dealer=0, levels=(FOUR, SIX), attackers_points=150, offending_team=Team.B, choice=LabourReform.LEVELS
    )
    assert result == Settlement(
        dealer=0,
        attackers_points=150,
        winner=Side.DEFENDERS,
        levels_up=2,
        levels=(SIX, SIX),
        next_dealer=2,  # defenders hold: the dealer's partner
        game_winner=None,
    )


def test_s11_labour_reform_levels_innocent_attackers_take_the_deal_plus_2() -> None:
    # dealer 0; defender team A commits 劳改 at 40 points -> attackers B +2 and take the deal
    result = labour_reform(
        dealer=0, levels=(FOUR, SIX), attackers_points=40, offending_team=Team.A, choice=LabourReform.LEVELS
    )
    assert (result.winner, result.levels_up, result.levels) == (Side.ATTACKERS, 2, (FOUR, EIGHT))
    assert result.next_dealer == 1  # attackers take: the old dealer's next seat
    assert result.winning_team is Team.B


def test_s11_labour_reform_levels_defenders_at_a_go_past_a() -> None:
    result = labour_reform(
        dealer=3, levels=(TEN, ACE), attackers_points=0, offending_team=Team.A, choice=LabourReform.LEVELS
    )
    assert result.levels == (TEN, PAST_A)
    assert result.game_winner is Team.B


def test_s11_labour_reform_levels_attackers_stop_at_a() -> None:
    result = labour_reform(
        dealer=3, levels=(KING, FIVE), attackers_points=0, offending_team=Team.B, choice=LabourReform.LEVELS
    )
    assert result.levels == (ACE, FIVE)  # K + 2 stops at A (D-TR-1)
    assert result.game_winner is None
    assert result.next_dealer == 0


def test_s11_labour_reform_points_plus_80_for_innocent_attackers() -> None:
    # dealer 1 (team B defends); defender B errs at 170 -> 250: attackers take the deal, +0
    result = labour_reform(
        dealer=1, levels=(THREE, THREE), attackers_points=170, offending_team=Team.B, choice=LabourReform.POINTS
    )
    assert (result.attackers_points, result.winner, result.levels_up) == (250, Side.ATTACKERS, 0)
    assert result.levels == (THREE, THREE)
    assert result.next_dealer == 2


def test_s11_labour_reform_points_minus_80_for_innocent_defenders() -> None:
    # dealer 0; attacker B errs at 50 -> -30: defenders +5 + floor(30/60) = +5
    result = labour_reform(
        dealer=0, levels=(THREE, THREE), attackers_points=50, offending_team=Team.B, choice=LabourReform.POINTS
    )
    assert (result.attackers_points, result.winner, result.levels_up) == (-30, Side.DEFENDERS, 5)
    assert result.levels == (EIGHT, THREE)
    assert result.next_dealer == 2


def test_s11_labour_reform_points_settles_by_s9_without_last_trick_bonus() -> None:
    # the score is exactly the points so far ± 80: no last trick is multiplied in
    result = labour_reform(
        dealer=2, levels=(FIVE, FIVE), attackers_points=100, offending_team=Team.A, choice=LabourReform.POINTS
    )
    assert result.attackers_points == 180
    assert (result.winner, result.levels_up, result.levels) == (Side.DEFENDERS, 1, (SIX, FIVE))


# --- D-TR-9 timed rounds ----------------------------------------------------------------------------------------


def test_d_tr_9_untimed_round_never_announces() -> None:
    assert not announcement_due(0, started_at=0, now=10**9)


def test_d_tr_9_announcement_due_25_minutes_before_the_end() -> None:
    # 90-minute round started at t=1000 s: due at 1000 + 65 * 60 = 4900
    assert not announcement_due(90, started_at=1000, now=4899)
    assert announcement_due(90, started_at=1000, now=4900)
    assert announcement_due(90, started_at=1000, now=9000)


def test_d_tr_9_short_round_announces_at_once() -> None:
    assert announcement_due(20, started_at=500, now=500)
    assert announcement_due(25, started_at=500, now=500)
    assert not announcement_due(26, started_at=500, now=559)
    assert announcement_due(26, started_at=500, now=560)


def test_d_tr_9_two_deals_after_the_announcement_then_over() -> None:
    clock = RoundClock()
    assert clock == RoundClock(announced=False, deals_left=2, over=False)
    clock = clock.deal_settled(None)  # before the announcement deals do not count down
    assert clock == RoundClock(announced=False, deals_left=2, over=False)
    clock = clock.tick(60, started_at=0, now=34 * 60)  # 35 minutes is the mark
    assert not clock.announced
    clock = clock.tick(60, started_at=0, now=35 * 60)
    assert clock == RoundClock(announced=True, deals_left=2, over=False)
    clock = clock.tick(60, started_at=0, now=50 * 60)  # announced once only
    assert clock.deals_left == 2
    clock = clock.deal_settled(None)
    assert clock == RoundClock(announced=True, deals_left=1, over=False)
    clock = clock.deal_settled(None)
    assert clock == RoundClock(announced=True, deals_left=0, over=True)
    assert clock.deal_settled(None) == clock  # over stays over


def test_d_tr_9_match_ends_when_a_team_goes_past_a() -> None:
    untimed = RoundClock().tick(0, started_at=0, now=10**6)
    assert not untimed.announced
    assert untimed.deal_settled(None).over is False
    assert untimed.deal_settled(Team.A).over is True
    announced = RoundClock().tick(30, started_at=0, now=300)
    assert announced.announced
    ended = announced.deal_settled(Team.B)
    assert ended.over
    assert ended.deals_left == 1
