"""The card model and notation (`docs/rules/README.md`, "Card notation") and the seeded random source.

Expected values come from docs/rules/README.md and docs/rules/zalioujia.md §2, not from engine output.
"""

from __future__ import annotations

import pytest

from paiju.rules.cards import (
    BIG_JOKER,
    SMALL_JOKER,
    CardSyntaxError,
    add_cards,
    check_copies,
    format_card,
    format_cards,
    full_decks,
    missing_cards,
    parse_card,
    parse_cards,
    remove_cards,
    sort_cards,
)
from paiju.rules.errors import RuleError
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj.combos import order

ALL_NAMES = [r + s for r in "23456789TJQKA" for s in "SHCD"] + ["SJ", "BJ"]


# --- notation: parse and format ----------------------------------------------------------------------


def test_every_card_round_trips_through_the_notation() -> None:
    seen = set()
    for name in ALL_NAMES:
        c = parse_card(name)
        assert format_card(c) == name
        seen.add(c)
    assert len(seen) == 54, "54 distinct cards in one deck (52 + two jokers)"


def test_card_list_round_trip_in_game_order() -> None:
    text = "4S 4H TS QD KC AS 2D 3C SJ BJ"
    assert format_cards(parse_cards(text), order) == text


def test_ten_is_accepted_for_t_on_input_and_written_as_t() -> None:
    for suit in "SHCD":
        assert parse_card("10" + suit) == parse_card("T" + suit)
        assert format_card(parse_card("10" + suit)) == "T" + suit
    assert format_cards(parse_cards("10D 10s"), order) == "TS TD"


def test_notation_is_case_insensitive() -> None:
    assert parse_card("qs") == parse_card("QS") == parse_card("Qs") == parse_card("qS")
    assert parse_card("sj") == SMALL_JOKER
    assert parse_card("bj") == BIG_JOKER
    assert parse_card("td") == parse_card("TD")
    assert parse_cards("4s 4h kd bj") == parse_cards("4S 4H KD BJ")


def test_input_order_does_not_matter() -> None:
    assert parse_cards("4S 4H KD BJ") == parse_cards("BJ KD 4H 4S")


def test_whitespace_between_cards_is_free() -> None:
    assert parse_cards("  4S   4H\tKD ") == parse_cards("4S 4H KD")
    assert parse_cards("") == ()


@pytest.mark.parametrize(
    "bad",
    ["1S", "QX", "Q", "S", "11H", "KK", "JS4", "SB", "J", "4 S", "0D", "🂡"],
)
def test_malformed_card_is_rejected_with_a_reason(bad: str) -> None:
    with pytest.raises(CardSyntaxError) as info:
        parse_cards(bad)
    reason = info.value.reason
    assert "not a card" in reason
    assert "rank then suit" in reason, "the reason tells how to write a card"


def test_malformed_card_among_good_ones_names_the_bad_token() -> None:
    with pytest.raises(CardSyntaxError) as info:
        parse_cards("4S QX KD")
    assert "'QX'" in info.value.reason


def test_card_syntax_error_is_a_malformed_rule_error() -> None:
    assert issubclass(CardSyntaxError, RuleError)
    with pytest.raises(RuleError) as info:
        parse_card("ZZ")
    assert info.value.kind == "malformed"


def test_card_list_must_be_a_string() -> None:
    with pytest.raises(CardSyntaxError) as info:
        parse_cards(["4S", "4H"])  # type: ignore[arg-type]
    assert "string" in info.value.reason


def test_identical_copies_are_the_same_card() -> None:
    cards = parse_cards("KS KS")
    assert len(cards) == 2
    assert cards[0] == cards[1]


def test_two_decks_allow_two_copies() -> None:
    assert len(parse_cards("KS KS BJ BJ SJ SJ", decks=2)) == 6


def test_impossible_count_is_rejected() -> None:
    with pytest.raises(CardSyntaxError) as info:
        parse_cards("KS KS KS", decks=2)
    reason = info.value.reason
    assert "3 copies of KS" in reason
    assert "2" in reason and "deck" in reason


def test_impossible_count_of_jokers_is_rejected() -> None:
    with pytest.raises(CardSyntaxError) as info:
        parse_cards("BJ bj BJ", decks=2)
    assert "BJ" in info.value.reason


def test_one_deck_holds_one_copy() -> None:
    with pytest.raises(CardSyntaxError) as info:
        parse_cards("4S 4S", decks=1)
    assert "2 copies of 4S" in info.value.reason
    check_copies(parse_cards("4S 4H 4C 4D"), 1)  # different suits are different cards


def test_without_decks_any_count_parses() -> None:
    assert len(parse_cards("KS KS KS")) == 3


def test_full_decks() -> None:
    two = full_decks(2)
    assert len(two) == 108
    for name in ALL_NAMES:
        assert two.count(parse_card(name)) == 2


# --- sorting: 砸六家 order, then suit S H C D -----------------------------------------------------------


def test_sorting_follows_the_zalioujia_order() -> None:
    # §2: 4 5 6 7 8 9 10 J Q K A 2 3 SJ BJ, lowest first
    shuffled = "BJ 3S 2S AS KS QS JS TS 9S 8S 7S 6S 5S 4S SJ"
    assert format_cards(parse_cards(shuffled), order) == "4S 5S 6S 7S 8S 9S TS JS QS KS AS 2S 3S SJ BJ"


def test_sorting_ties_broken_by_suit_s_h_c_d() -> None:
    assert format_cards(parse_cards("4D 4C 4H 4S"), order) == "4S 4H 4C 4D"
    assert format_cards(parse_cards("2D 3S 2S 3D 2H 3C"), order) == "2S 2H 2D 3S 3C 3D"


def test_two_and_three_sort_above_ace_and_below_jokers() -> None:
    cards = sort_cards(parse_cards("SJ 3D 2C AH"), order)
    assert [format_card(c) for c in cards] == ["AH", "2C", "3D", "SJ"]


def test_jokers_sort_last_small_before_big() -> None:
    assert format_cards(parse_cards("BJ SJ 3S BJ SJ"), order) == "3S SJ SJ BJ BJ"


def test_format_without_order_keeps_the_given_order() -> None:
    cards = (parse_card("BJ"), parse_card("4S"))
    assert format_cards(cards) == "BJ 4S"


# --- multiset helpers --------------------------------------------------------------------------------


def test_multiset_remove_add_missing() -> None:
    hand = parse_cards("KS KS 4H")
    assert remove_cards(hand, parse_cards("KS")) == parse_cards("KS 4H")
    assert remove_cards(hand, parse_cards("KS KS KS")) is None
    assert missing_cards(hand, parse_cards("KS KS KS 5D")) == list(parse_cards("KS 5D"))
    assert add_cards(hand, parse_cards("KS")) == parse_cards("KS KS KS 4H")


# --- the seeded random source ------------------------------------------------------------------------


def test_seeded_rng_is_splitmix64() -> None:
    # The published SplitMix64 reference outputs (seed 0, and seed 1234567 from the reference test).
    r = SeededRandom(0)
    assert r.next64() == 0xE220A8397B1DCDAF
    assert r.next64() == 0x6E789E6AA1B965F4
    r = SeededRandom(1234567)
    assert [r.next64() for _ in range(3)] == [6457827717110365317, 3203168211198807973, 9817491932198370423]


def test_seeded_rng_is_deterministic() -> None:
    a, b = SeededRandom(42), SeededRandom(42)
    assert [a.below(1000) for _ in range(50)] == [b.below(1000) for _ in range(50)]
    x, y = list(range(108)), list(range(108))
    SeededRandom(7).shuffle(x)
    SeededRandom(7).shuffle(y)
    assert x == y
    assert SeededRandom(9).fork(3).next64() == SeededRandom(9).fork(3).next64()


def test_different_seeds_give_different_streams() -> None:
    assert [SeededRandom(1).next64() for _ in range(1)] != [SeededRandom(2).next64() for _ in range(1)]
    assert SeededRandom(9).fork(3).next64() != SeededRandom(9).fork(4).next64()


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 107, 108, 1000, (1 << 63) + 5])
def test_below_stays_in_range(n: int) -> None:
    r = SeededRandom(n)
    values = [r.below(n) for _ in range(300)]
    assert all(0 <= v < n for v in values)


def test_below_covers_small_ranges() -> None:
    r = SeededRandom(5)
    assert {r.below(6) for _ in range(600)} == set(range(6))


def test_below_rejects_non_positive_bound() -> None:
    with pytest.raises(ValueError):
        SeededRandom(1).below(0)


def test_shuffle_is_a_permutation_and_choice_picks_a_member() -> None:
    items = list(range(108))
    r = SeededRandom(11)
    r.shuffle(items)
    assert sorted(items) == list(range(108))
    assert items != list(range(108))
    assert r.choice(("a", "b", "c")) in ("a", "b", "c")
