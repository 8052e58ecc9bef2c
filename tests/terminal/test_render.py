"""The terminal client's pure parts: hands in each game's order, option lists, reading typed input, plain-words
refusals, seat labels and narration lines."""

from __future__ import annotations

from dataclasses import replace

import grpc
import pytest

from paiju.rules.cards import Cards, Suit, parse_cards
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tm
from paiju.rules.tractor.view import view as tractor_view
from paiju.rules.zlj import Options, Pass, PickTribute, Play, ReturnTribute, StartMatch, State, decide, replay
from paiju.rules.zlj import legal_actions as zlj_legal
from paiju.rules.zlj import model as zm
from paiju.rules.zlj.combos import classify
from paiju.rules.zlj.view import SeatView as ZljSeatView
from paiju.rules.zlj.view import view as zlj_view
from paiju.terminal.client import render
from paiju.terminal.client.engine import explain
from paiju.terminal.client.narrate import TractorNarration, relabel
from paiju.v1 import engine_pb2


def cards(text: str) -> Cards:
    return parse_cards(text)


def zlj_start(seed: int = 4) -> State:
    return replay(decide(State(), StartMatch(seed, Options(deals=1))))


def tractor_start(seed: int = 4) -> tm.State:
    return tractor_game.replay(tractor_game.decide(tm.State(), tm.StartGame(seed)))


# --- hands ------------------------------------------------------------------------------------------


def test_a_zlj_hand_is_shown_in_game_order_low_to_high_and_suits_s_h_c_d() -> None:
    assert render.zlj_cards(cards("BJ 3S 4H 2D AS TD SJ 4S 3D")) == "4S 4H TD AS 2D 3S 3D SJ BJ"
    view = replace(zlj_view(zlj_start(), 0), hand=cards("KD 4C 3H 5S 4S"))
    assert render.zlj_hand(view) == ["Your hand (5): 4S 4C 5S KD 3H"]


def test_a_tractor_hand_is_grouped_by_suit_class_in_the_deals_order() -> None:
    base = tractor_view(tractor_start(), 0)
    hand = cards("AS 4S 2C 5H 3H BJ 7H KD 3D SJ")
    # trump hearts at level 3 (dealer's team A at level 3): hearts, 3s, 2s and jokers are trump
    playing = replace(base, hand=hand, trump=Suit.HEARTS, dealer=0, phase=tm.Phase.PLAY)
    assert render.tractor_hand(playing) == [
        "Your hand (10):",
        "  spades   ( 2) 4S AS",
        "  diamonds ( 1) KD",
        "  trump    ( 7) 5H 7H 2C 3D 3H SJ BJ",
    ]
    # before the declaration: natural suits, then the cards that are trump in every deal
    bidding = replace(base, hand=hand, trump=None, dealer=None)
    assert render.tractor_hand(bidding)[-1] == "  trump    ( 5) 2C 3H 3D SJ BJ"
    assert render.tractor_hand(bidding)[2] == "  hearts   ( 2) 5H 7H"


def test_long_hands_wrap_under_their_label() -> None:
    lines = render.wrapped("Your hand (40): ", " ".join(["4S"] * 40), width=40)
    assert all(len(line) <= 40 for line in lines) and lines[1].startswith(" " * len("Your hand (40): "))


# --- options ----------------------------------------------------------------------------------------


def test_zlj_options_list_pass_first_and_describe_each_play() -> None:
    state = zlj_start()
    seat = state.turn
    assert seat is not None
    led = replay([zm.CardsPlayed(seat, cards("5S"), classify(cards("5S")))], state)
    follower = led.turn
    assert follower is not None
    actions = zlj_legal(led, follower)
    options = render.zlj_options(zlj_view(led, follower), actions)
    assert options[0].label == "pass" and isinstance(options[0].command, Pass)
    assert all(isinstance(o.command, Play) for o in options[1:])
    assert any(o.label.endswith("(a single 6)") or "(a single" in o.label for o in options[1:])
    lines = render.option_lines(options)
    assert lines[0] == f"Your options ({len(options)}):" and "  1) pass" in lines[1]


def test_a_four_take_is_labelled_with_the_bomb_it_takes() -> None:
    view = replace(
        zlj_view(zlj_start(), 0),
        current=classify(cards("KS KH KD")),
        current_cards=cards("KS KH KD"),
        current_by=3,
    )
    (option,) = render.zlj_options(view, [Play(0, cards("4S 4H"))])
    assert option.label == "4S 4H  (FOUR-TAKE 4取炸弹: takes KS KH KD from seat 3)"


def test_tribute_steps_are_labelled_as_what_they_do() -> None:
    view = replace(zlj_view(zlj_start(), 0), phase=zm.Phase.PICK)
    labels = [o.label for o in render.zlj_options(view, [PickTribute(0, cards("KS AH"))])]
    assert labels == ["pick KS AH"]
    view = replace(view, phase=zm.Phase.RETURN)
    assert render.zlj_options(view, [ReturnTribute(0, cards("5S 7D"))])[0].label == "return 5S 7D"


def test_many_short_options_are_laid_out_in_columns() -> None:
    options = [render.Option(Pass(0), f"option {i}") for i in range(30)]
    lines = render.option_lines(options, width=100)
    assert len(lines) < 30 and "  1) option 0" in lines[1] and " 30) option 29" in "\n".join(lines)
    few = render.option_lines(options[:3])
    assert few == ["Your options (3):", "  1) option 0", "  2) option 1", "  3) option 2"]


def test_tractor_bids_show_only_level_cards_and_their_count() -> None:
    state = tractor_start()
    view = tractor_view(state, 0)
    actions = tractor_game.legal_actions(state, 0)
    options = render.tractor_options(view, actions)
    assert options[0].label == "pass (no bid)"
    for o in options[1:]:
        assert o.label.startswith("bid ") and "level card" in o.label


def test_tractor_leads_are_sorted_by_suit_then_strength() -> None:
    view = replace(
        tractor_view(tractor_start(), 0),
        hand=cards("AS 4S 4S 5H"),
        trump=Suit.HEARTS,
        dealer=0,
        phase=tm.Phase.PLAY,
        turn=0,
        trick=None,
    )
    actions = [tm.Play(0, cards("5H")), tm.Play(0, cards("AS")), tm.Play(0, cards("4S 4S")), tm.Play(0, cards("4S"))]
    labels = [o.label for o in render.tractor_options(view, actions)]
    assert labels == ["4S  (single, spades)", "4S 4S  (pair, spades)", "AS  (single, spades)", "5H  (single, trump)"]


# --- reading what is typed --------------------------------------------------------------------------


def _zlj_options() -> tuple[ZljSeatView, list[render.Option], list[object]]:
    view = replace(zlj_view(zlj_start(), 0), phase=zm.Phase.PLAY)
    actions: list[object] = [Pass(0), Play(0, cards("6S")), Play(0, cards("TD"))]
    return view, render.zlj_options(view, actions), actions


def test_an_option_number_picks_that_option() -> None:
    view, options, actions = _zlj_options()
    intent = render.interpret(" 2 ", 0, options, actions, view.phase)
    assert intent == render.Act(Play(0, cards("6S")), "6S  (a single 6)")
    problem = render.interpret("9", 0, options, actions, view.phase)
    assert isinstance(problem, render.Problem) and "no option 9: choose 1..3" in problem.message


def test_typed_cards_are_read_in_the_notation_with_10_and_any_case() -> None:
    view, options, actions = _zlj_options()
    intent = render.interpret("10d", 0, options, actions, view.phase)
    assert isinstance(intent, render.Act) and intent.command == Play(0, cards("TD")) and intent.text == "10D"
    both = render.interpret("3s 3H", 0, options, actions, view.phase)
    assert isinstance(both, render.Act) and both.command == Play(0, cards("3S 3H"))
    picked = render.interpret("ks", 0, options, actions, zm.Phase.PICK)
    assert isinstance(picked, render.Act) and picked.command == PickTribute(0, cards("KS"))


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("XX", "'XX' is not a card: write rank then suit"),
        ("3S 1H", "'1H' is not a card"),
        ("11D", "'11D' is not a card"),
        ("S3", "'S3' is not a card"),
    ],
)
def test_a_card_the_notation_does_not_know_is_explained(typed: str, message: str) -> None:
    view, options, actions = _zlj_options()
    problem = render.interpret(typed, 0, options, actions, view.phase)
    assert isinstance(problem, render.Problem) and message in problem.message


def test_pass_and_client_commands() -> None:
    view, options, actions = _zlj_options()
    assert render.interpret("p", 0, options, actions, view.phase) == render.Act(Pass(0), "pass")
    assert render.interpret("PASS", 0, options, actions, view.phase) == render.Act(Pass(0), "pass")
    assert render.interpret("q", 0, options, actions, view.phase) == render.Command("quit")
    assert render.interpret("?", 0, options, actions, view.phase) == render.Command("help")
    assert render.interpret("t", 0, options, actions, view.phase) == render.Command("table")
    assert render.interpret("", 0, options, actions, view.phase) == render.Command("nothing")


def test_a_cut_is_a_number_in_range() -> None:
    actions = [zm.Cut(2, n, 0) for n in range(1, 108)]
    assert render.interpret("54", 2, [], actions, zm.Phase.CUT) == render.Act(zm.Cut(2, 54, 0), "cut 54")
    problem = render.interpret("200", 2, [], actions, zm.Phase.CUT)
    assert isinstance(problem, render.Problem) and "1 to 107" in problem.message


def test_a_typed_tractor_bid_names_the_suit_of_its_level_cards() -> None:
    intent = render.interpret("3h 3h", 1, [], [tm.Pass(1)], tm.Phase.BID)
    assert isinstance(intent, render.Act) and intent.command == tm.MakeBid(1, Suit.HEARTS, cards("3H 3H"))
    counter = render.interpret("3s 3s 3s", 1, [], [tm.Pass(1)], tm.Phase.COUNTER)
    assert isinstance(counter, render.Act) and counter.command == tm.Counter(1, Suit.SPADES, cards("3S 3S 3S"))


# --- refusals, labels, narration -------------------------------------------------------------------


def test_refusals_are_explained_in_plain_words() -> None:
    reason = "a pair needs the same length: 4 cards vs 2 (§4)"
    assert explain(grpc.StatusCode.FAILED_PRECONDITION, reason) == f"Not allowed: {reason}"
    violation = engine_pb2.RuleViolation(reason="cannot bid now", rule="D-TR-6")
    assert explain(grpc.StatusCode.FAILED_PRECONDITION, "x", violation) == "Not allowed: cannot bid now (rule D-TR-6)"
    assert explain(grpc.StatusCode.PERMISSION_DENIED, "it is seat 3's turn").startswith("Not yours to do: ")
    assert "moved on" in explain(grpc.StatusCode.ABORTED, "stale")


def test_seat_labels_name_the_viewer_and_the_players() -> None:
    seats = render.Seats(me=0, names={3: "alice"})
    assert [seats.label(s) for s in (0, 1, 3)] == ["seat 0 (A, you)", "seat 1 (B)", "seat 3 (B, alice)"]
    assert relabel("  seat 3 (B): 4S   (a single 4)", seats) == "  seat 3 (B, alice): 4S   (a single 4)"


def test_zlj_table_shows_the_play_to_beat_passes_and_places() -> None:
    view = replace(
        zlj_view(zlj_start(), 0),
        phase=zm.Phase.PLAY,
        turn=0,
        current=classify(cards("7S 7H")),
        current_cards=cards("7S 7H"),
        current_by=4,
        passed=(5,),
        out=(2,),
        hand_sizes=(5, 6, 0, 9, 3, 7),
    )
    lines = render.zlj_table(view, render.Seats(me=0))
    text = "\n".join(lines)
    assert "To beat: seat 4 (A) played 7S 7H (a pair of 7)" in text
    assert "seat 0 (A, you)   5 cards  <- to act" in text
    assert "seat 2 (A)        0 cards  1st out, 大贡" in text
    assert "seat 5 (B)        7 cards  passed" in text


def test_tractor_narration_keeps_others_bids_concealed_and_follows_the_trick() -> None:
    narration = TractorNarration(render.Seats(me=0))
    assert narration.narrate(tm.BidEntered(2, None, concealed=True)) == ["  seat 2 (A) has bid or passed (concealed)"]
    mine = tm.Bid(0, Suit.HEARTS, cards("3H 3H"), 2)
    assert "you) bids hearts showing 3H 3H" in narration.narrate(tm.BidEntered(0, mine))[0]
    narration.narrate(tm.TrumpDeclared(Suit.HEARTS, 1, 0))
    assert narration.narrate(tm.CardsPlayed(1, cards("4S 4S"))) == ["  seat 1 (B): 4S 4S   leads a pair of spades"]
    assert narration.narrate(tm.CardsPlayed(2, cards("5S 6S"))) == ["  seat 2 (A): 5S 6S"]
    won = narration.narrate(tm.TrickWon(0, 5, 5))
    assert won == ["  -- trick to seat 0 (A, you) (5 points, attackers +5); attackers 5 of the 240 they need"]
