"""The terminal client's words for results, cards and seats: a result that looks like a contradiction ("team B
wins", "+0"; "attackers win, +0 levels") says why in the rules' words, the 拖拉机 attackers' points are shown beside
the 240 they need (tractor.md §9), jokers are named, seats are listed by their players, and the cut before a deal
shows no hand of the finished one."""

from __future__ import annotations

from dataclasses import replace

from paiju.rules.cards import Cards, Suit, parse_cards
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tm
from paiju.rules.tractor.view import view as tractor_view
from paiju.rules.zlj import Options, StartMatch, State, decide, replay
from paiju.rules.zlj import model as zm
from paiju.rules.zlj.combos import classify
from paiju.rules.zlj.view import view as zlj_view
from paiju.terminal.client import render
from paiju.terminal.client.narrate import TractorNarration, ZljNarration
from paiju.terminal.zlj_match import standings
from paiju.terminal.zlj_narrator import match_winner_words, narrate

SEATS = render.Seats(me=0, names={1: "bob", 3: "cy"})
REVERSE = zm.DealResult(
    deal=1,
    order=(0, 1, 3, 5),
    caught=(2, 4),
    outcome=zm.Outcome.REVERSE,
    head_team=zm.Team.A,
    winners=zm.Team.B,
    team_points=(0, 0),
    individual=(3, 2, -1, 1, -1, 0),
)


def cards(text: str) -> Cards:
    return parse_cards(text)


def zlj_two_deals() -> State:
    return replay(decide(State(), StartMatch(4, Options(deals=2))))


def tractor_playing() -> TractorNarration:
    narration = TractorNarration(SEATS)
    narration.narrate(tm.GameStarted(tm.Options()))
    narration.narrate(tm.TrumpDeclared(Suit.HEARTS, 0, 0))
    return narration


# --- results explained (defect: "team B wins" with +0, "attackers win, +0 level(s)") --------------------------


def test_a_reverse_catch_says_why_its_winners_score_no_team_points() -> None:
    first, second = ZljNarration(SEATS).narrate(zm.DealEnded(REVERSE))
    assert "反逮 reverse catch (team B wins)" in first
    assert "team points A +0, B +0: the winners of a 反逮 score no team points for it (D-ZLJ-6)" in second
    assert "it decides the next deal's tribute (§10)" in second
    draw = replace(REVERSE, outcome=zm.Outcome.DRAW, winners=None, order=(0, 1, 3, 5, 2), caught=(4,))
    assert "a draw scores no team points (D-ZLJ-6)" in ZljNarration(SEATS).narrate(zm.DealEnded(draw))[1]


def test_attackers_who_take_the_deal_without_a_level_are_told_why() -> None:
    (line,) = tractor_playing().narrate(tm.DealSettled(250, "attackers", 0, 1, (0, 0)))
    assert line.startswith("Deal settled: attackers 250 points: the attackers take the deal (上台, 240 or more)")
    assert "but go up no level: each full 60 points above 240 is a level, so the first is at 300 (§9)" in line
    assert "next dealer seat 1 (B, bob)" in line and "+0" not in line


def test_defenders_who_keep_the_deal_are_told_the_row_of_the_table() -> None:
    (line,) = tractor_playing().narrate(tm.DealSettled(150, "defenders", 2, 2, (2, 0)))
    assert "the attackers took fewer than the 240 needed, so the defenders keep the deal (连庄)" in line
    assert "go up 2 levels (120-179 points, §9)" in line and "Levels now A 5, B 3" in line


def test_a_gain_stopped_at_a_and_a_labour_reform_are_told() -> None:
    narration = tractor_playing()
    narration.levels = (9, 0)  # team A at Q
    (capped,) = narration.narrate(tm.DealSettled(30, "defenders", 4, 2, (11, 0)))
    assert "go up 4 levels (1-59 points, §9); gains stop at A (D-TR-1), so 2 levels taken" in capped
    reform = render.settlement_words(100, "attackers", 2)
    assert reform == "劳改: the attackers chose to go up 2 levels (§11)"


def test_the_table_explains_the_last_deal() -> None:
    view = replace(tractor_view(tractor_game.replay(tractor_game.decide(tm.State(), tm.StartGame(4))), 0))
    view = replace(view, phase=tm.Phase.CUT, turn=1, settlement=tm.DealSettled(250, "attackers", 0, 1, (0, 0)))
    text = " ".join(" ".join(render.tractor_table(view, SEATS)).split())
    assert "Last deal: attackers 250 points: the attackers take the deal (上台, 240 or more) but go up no level" in text
    assert "+0" not in text
    zview = replace(zlj_view(zlj_two_deals(), 0), previous=REVERSE, results=(REVERSE,))
    ztext = " ".join(" ".join(render.zlj_table(zview, SEATS)).split())
    assert "Last deal: 反逮 reverse catch: the winners of a 反逮 score no team points for it (D-ZLJ-6)" in ztext


# --- the points the attackers need (tractor.md §9: 240 take the deal) ------------------------------------------


def test_the_attackers_points_are_shown_beside_the_240_they_need() -> None:
    base = tractor_view(tractor_game.replay(tractor_game.decide(tm.State(), tm.StartGame(4))), 0)
    view = replace(base, trump=Suit.HEARTS, dealer=0, phase=tm.Phase.PLAY, turn=0, attackers_points=35)
    lines = render.tractor_table(view, SEATS)
    assert "Attackers: team B (bob and cy), 35 points of the 240 they need to take the deal; 0 tricks played" in lines
    (won,) = tractor_playing().narrate(tm.TrickWon(1, 10, 10))
    assert won == "  -- trick to seat 1 (B, bob) (10 points, attackers +10); attackers 10 of the 240 they need"


# --- plain card names and seats by their players -----------------------------------------------------------------


def test_jokers_are_named_not_noted() -> None:
    (line,) = ZljNarration(SEATS).narrate(zm.CardsPlayed(1, cards("SJ"), classify(cards("SJ"))))
    assert line == "  seat 1 (B, bob): SJ   (the small joker)"
    view = replace(zlj_view(zlj_two_deals(), 0), phase=zm.Phase.PLAY)
    (option,) = render.zlj_options(view, [zm.Play(0, cards("BJ"))])
    assert option.label == "BJ  (the big joker)"
    narration = tractor_playing()
    assert narration.narrate(tm.CardsPlayed(1, cards("BJ"))) == ["  seat 1 (B, bob): BJ   leads the big joker"]


def test_tractor_combinations_are_said_in_words() -> None:
    narration = tractor_playing()
    (line,) = narration.narrate(tm.CardsPlayed(1, cards("7S 7S 8S 8S 9S 9S")))
    assert line.endswith("leads a tractor of three pairs in spades")
    narration.plays_in_trick = 0
    (line,) = narration.narrate(tm.CardsPlayed(1, cards("5D 5D 5D 6D 6D 6D")))
    assert line.endswith("leads a special tractor of two triples in diamonds")


def test_seats_are_listed_by_their_players_not_as_numbers() -> None:
    first, second = ZljNarration(SEATS).narrate(zm.DealEnded(REVERSE))
    assert "finishing order seat 0 (A, you), seat 1 (B, bob), seat 3 (B, cy) then seat 5 (B)" in first
    assert "caught seat 2 (A) and seat 4 (A)" in first and "[" not in first
    assert "individual points seat 0 (A, you) +3, seat 1 (B, bob) +2" in second
    rps = ZljNarration(SEATS).narrate(zm.RockPaperScissors("the first lead", (((1, 0), (4, 1)),), (4, 1)))
    assert "seat 1 (B, bob) rock, seat 4 (A) paper; order: seat 4 (A) then seat 1 (B, bob)" in rps[0]
    after = standings(replace(zlj_two_deals(), results=(REVERSE,)))
    assert "match scores seat 0 (A) +3, seat 1 (B) +2, seat 2 (A) -1" in after and ":" not in after.split("scores")[1]
    base = tractor_view(tractor_game.replay(tractor_game.decide(tm.State(), tm.StartGame(4))), 0)
    levels = render.tractor_table(base, SEATS)[1]
    assert levels == "Levels: team A (you and seat 2) 3, team B (bob and cy) 3"


# --- the cut shows no hand of the finished deal --------------------------------------------------------------------


def test_the_cut_before_a_deal_shows_no_hand_of_the_finished_one() -> None:
    view = replace(zlj_view(zlj_two_deals(), 0), phase=zm.Phase.CUT, turn=0, hand=cards("4S 9H KD"))
    assert render.zlj_hand(view) == [render.NOT_DEALT]
    table = "\n".join(render.zlj_table(replace(view, hand_sizes=(0, 3, 5, 0, 0, 2)), SEATS))
    assert "seat 0 (A, you)  <- to cut" in table and "cards" not in table
    base = tractor_view(tractor_game.replay(tractor_game.decide(tm.State(), tm.StartGame(4))), 0)
    cut = replace(base, phase=tm.Phase.CUT, turn=1, dealer=0, trump=Suit.HEARTS, hand=cards("4S 4S"))
    assert render.tractor_hand(cut) == [render.NOT_DEALT]
    lines = render.tractor_table(cut, SEATS)
    assert "Dealer seat 1 (B, bob); level rank 3, trump not declared yet" in lines


def test_the_end_of_a_zlj_match_names_who_won_and_by_how_much() -> None:
    assert match_winner_words((7, 4)) == "team A wins by 3 team points"
    assert match_winner_words((2, 3)) == "team B wins by 1 team point"
    assert match_winner_words((5, 5)) == "a draw"
    told = narrate(zm.MatchEnded((2, 12), (3, 2, 0, -1, 1, 0)))
    assert told[0] == "Match over, team B wins by 10 team points. Team points: A 2, B 12"


def test_counts_are_singular_for_one() -> None:
    assert render.card_count(1) == "1 card" and render.card_count(0) == "0 cards"
    assert render.card_count(1, "level card") == "1 level card" and render.card_count(2, "trick") == "2 tricks"


def test_a_tractor_game_waiting_for_its_first_deal_does_not_say_nobody_bid() -> None:
    base = tractor_view(tractor_game.replay(tractor_game.decide(tm.State(), tm.StartGame(4))), 0)
    before_the_first = replace(base, phase=tm.Phase.FLIP, deal=0)
    waiting = render.tractor_waiting(before_the_first)
    assert waiting is not None and "first deal" in waiting and "Nobody bid" not in waiting
    voided = render.tractor_waiting(replace(base, phase=tm.Phase.FLIP, deal=1))
    assert voided is not None and voided.startswith("Nobody bid")
