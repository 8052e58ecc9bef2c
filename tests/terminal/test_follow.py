"""A 拖拉机 follow at the terminal: what it owes is said in plain words from the requirement `GetLegalActions`
carries (``tractor_follow``, built here by the engine's own code), not as "Your options (1)" with the one play the
engine offers; the player composes a follow a few cards at a time; the rules core's shorthand in a refusal
("P of spades", "a 6-card structure") is put in words."""

from __future__ import annotations

from dataclasses import replace

from paiju.engine.tractor import follow_message
from paiju.rules.cards import Cards, Rank, Suit, parse_cards
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tm
from paiju.rules.tractor.combos import classify
from paiju.rules.tractor.follow import requirement, suit_cards
from paiju.rules.tractor.order import Trumps
from paiju.rules.tractor.view import SeatView
from paiju.rules.tractor.view import view as tractor_view
from paiju.terminal.client import render
from paiju.terminal.client.engine import follow_owed

TRUMPS = Trumps(Rank.THREE, Suit.HEARTS)


def cards(text: str) -> Cards:
    return parse_cards(text)


def following(lead: str, hand: str) -> tuple[SeatView, render.FollowOwed]:
    """Seat 0's view following ``lead`` with ``hand`` (level 3, hearts trumps) and what the engine says it owes."""
    combo = classify(cards(lead), TRUMPS)
    base = tractor_view(tractor_game.replay(tractor_game.decide(tm.State(), tm.StartGame(4))), 0)
    view = replace(
        base,
        trump=Suit.HEARTS,
        dealer=1,
        phase=tm.Phase.PLAY,
        turn=0,
        hand=cards(hand),
        trick=tm.Trick(1, (cards(lead),), combo),
    )
    owed = requirement(combo, view.hand, TRUMPS)
    message = follow_message(owed, suit_cards(view.hand, combo.suit_class, TRUMPS))
    return view, follow_owed(message)


def said(view: SeatView, owed: render.FollowOwed) -> str:
    return " ".join(" ".join(render.tractor_follow_lines(view, owed)).split())


def test_a_follow_says_what_it_owes_in_plain_words() -> None:
    view, owed = following("4S 4S", "7S 7S 9S KD")
    text = said(view, owed)
    assert text.startswith("You must follow a pair of spades with 2 cards: you hold more than 2 cards of spades")
    assert "must all be spades and make a pair (7S 7S) (§6.2)" in text
    assert "Your spades (3): 7S 7S 9S" in text and "or 1 for the follow offered" in text
    assert "pattern" not in text and " P " not in text


def test_a_follow_short_in_the_suit_plays_it_all_and_any_other_card() -> None:
    view, owed = following("4S 4S", "9S KD 5C")
    assert "you hold only 1 card of spades: play it and 1 more card of any suit (§6.1)" in said(view, owed)
    view, owed = following("4S 4S", "KD 5C")
    assert "you have no spades, so play any 2 cards (§6.1)" in said(view, owed)


def test_a_lower_row_of_the_priority_list_is_explained() -> None:
    view, owed = following("4S 4S", "7S 9S KS")
    assert "The order for this lead is a pair → any 2 cards: the first your spades allow is owed." in said(view, owed)
    view, owed = following("5S 5S 5S 5S", "9S 9S 9S JS QS QS KS KS")
    text = said(view, owed)
    assert "include a triple (9S 9S 9S), plus any 1 more of your spades (§6.2)" in text
    assert "a 4-card bomb → a triple and 1 more card" in text


def test_the_parts_owed_come_largest_first_and_like_parts_together() -> None:
    view, owed = following("5S 5S 6S 6S 7S 7S", "4S 4S 9S 9S 9S 9S KS QS JS")
    assert "make a 4-card bomb (9S 9S 9S 9S) and a pair (4S 4S) (§6.2)" in said(view, owed)
    view, owed = following("5S 5S 6S 6S", "4S 4S 9S JS KS KS QS")
    assert "make two pairs (4S 4S, KS KS) (§6.2)" in said(view, owed)


def test_a_tractor_lead_is_followed_by_named_structures_not_sizes() -> None:
    view, owed = following("5S 5S 6S 6S 7S 7S", "8S 8S 9S 9S TS TS QS QS 4S KD")
    text = said(view, owed)
    assert "make a tractor of three pairs (8S 8S 9S 9S TS TS) (§6.2)" in text
    assert "from the longest tractor down (D-TR-5)" in text and "structure" not in text
    view, owed = following("5S 5S 5S 6S 6S 6S", "8S 8S 8S 9S 9S 9S TS TS QS QS QS QS KD")
    assert "a special tractor of two triples (8S 8S 8S 9S 9S 9S)" in said(view, owed)


def test_the_options_say_the_listed_follow_is_one_the_engine_offers() -> None:
    view, _ = following("4S 4S", "7S 7S 9S KD")
    (option,) = render.tractor_options(view, [tm.Play(0, cards("7S 7S"))])
    assert option.label == "7S 7S  (a legal follow the engine offers; you may compose another)"


def test_a_follow_is_composed_a_few_cards_at_a_time() -> None:
    view, owed = following("5S 5S 6S 6S", "8S 8S 9S 9S QS KD")
    first = render.compose((), cards("8S 8S"), owed, view.hand)
    assert isinstance(first, render.Composed) and first.message == "Chosen so far: 8S 8S. Type 2 more (c starts again)."
    assert render.compose(first.cards, cards("9S 9S"), owed, view.hand) == cards("8S 8S 9S 9S")
    too_many = render.compose(first.cards, cards("9S 9S QS"), owed, view.hand)
    assert isinstance(too_many, render.Problem) and "That makes 5 cards; the lead has 4" in too_many.message
    not_held = render.compose(first.cards, cards("AS"), owed, view.hand)
    assert isinstance(not_held, render.Problem) and not_held.message == "You do not hold 8S 8S AS: your hand has no AS."
    one_more = render.compose((), cards("QS QS"), owed, view.hand)
    assert isinstance(one_more, render.Problem) and one_more.message.endswith("your hand has 1 × QS.")
    # typed at once, the engine judges it (a wrong count too)
    assert render.compose((), cards("8S 8S 9S 9S QS"), owed, view.hand) == cards("8S 8S 9S 9S QS")
    assert render.client_command("c") == render.Command("clear")


def test_the_rules_shorthand_in_a_refusal_is_put_in_words() -> None:
    pair = "Not allowed: follow a pair of spades with P of spades, which you hold (priority: P, §6)"
    assert render.plain_reason(pair) == (
        "Not allowed: follow a pair of spades with a pair of spades, which you hold "
        "(the first your hand allows of: a pair, §6)"
    )
    bomb = "follow a 4-bomb of spades with T x of spades, which you hold (priority: B4 → T x, §6)"
    assert render.plain_reason(bomb) == (
        "follow a 4-card bomb of spades with a triple and 1 more card of spades, which you hold "
        "(the first your hand allows of: a 4-card bomb → a triple and 1 more card, §6)"
    )
    tractor = (
        "follow a tractor of 3 units of 2 in spades with a 6-card structure + a group of 2 of spades, which you "
        "hold; 4S 5S gives only a group of 2 (D-TR-5)"
    )
    assert render.plain_reason(tractor) == (
        "follow a tractor of three pairs in spades with a tractor or bomb of 6 cards and a pair of spades, which "
        "you hold; 4S 5S gives only a pair (D-TR-5)"
    )
