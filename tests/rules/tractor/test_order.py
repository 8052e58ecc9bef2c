"""拖拉机 trumps and card order (docs/rules/tractor.md §3) and adjacency (§4 "Consecutive ranks").

Every expected value is derived here from the rules text (docs/rules/tractor.md §3-§4, and the source
一.三, 五), never copied from engine output. `Trumps.strength` is only compared with itself (higher is
stronger, equal is equal); the exact numbers are the engine's business.
"""

from __future__ import annotations

import itertools

import pytest

from paiju.rules.cards import BIG_JOKER, DECK, RANK_OF, SMALL_JOKER, SUIT_OF, Card, Rank, Suit, card, parse_card
from paiju.rules.tractor.order import TRUMP, Trumps

LEVELS = [Rank(r) for r in range(Rank.THREE, Rank.ACE + 1)]

# (level, trump) combinations used throughout: the low and high ends of the level range, a middle level,
# every suit as trump at least once.
CONTEXTS = [
    (Rank.EIGHT, Suit.HEARTS),
    (Rank.THREE, Suit.SPADES),
    (Rank.ACE, Suit.DIAMONDS),
    (Rank.KING, Suit.CLUBS),
    (Rank.TEN, Suit.SPADES),
    (Rank.FOUR, Suit.HEARTS),
    (Rank.QUEEN, Suit.DIAMONDS),
]
CONTEXT_IDS = [f"L={lv.symbol}-T={t.letter}" for lv, t in CONTEXTS]
ALL_CONTEXTS = [(lv, t) for lv in LEVELS for t in Suit]


def c(text: str) -> Card:
    return parse_card(text)


def suits_other_than(t: Suit) -> list[Suit]:
    return [s for s in Suit if s != t]


# --- §3 trump membership ---------------------------------------------------------------------------


@pytest.mark.parametrize(("level", "trump"), ALL_CONTEXTS)
def test_trump_membership_is_exactly_jokers_level_twos_and_trump_suit(level: Rank, trump: Suit) -> None:
    """§3: trump = both jokers, every card of rank L, every 2, every card of suit T; all else its own suit."""
    tr = Trumps(level, trump)
    for x in DECK:
        expected = x in (SMALL_JOKER, BIG_JOKER) or RANK_OF[x] in (level, Rank.TWO) or SUIT_OF[x] == trump
        assert tr.is_trump(x) == expected, (level, trump, x)
        if expected:
            assert tr.suit_class[x] == TRUMP
        else:
            assert tr.suit_class[x] == int(SUIT_OF[x])  # type: ignore[arg-type]


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_both_jokers_are_trump(level: Rank, trump: Suit) -> None:
    tr = Trumps(level, trump)
    assert tr.is_trump(SMALL_JOKER)
    assert tr.is_trump(BIG_JOKER)


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_every_level_card_is_trump(level: Rank, trump: Suit) -> None:
    tr = Trumps(level, trump)
    for s in Suit:
        assert tr.is_trump(card(level, s))


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_every_two_is_trump(level: Rank, trump: Suit) -> None:
    """§3: 2 is always trump (the source's 主2 / 副2)."""
    tr = Trumps(level, trump)
    for s in Suit:
        assert tr.is_trump(card(Rank.TWO, s))


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_every_card_of_the_trump_suit_is_trump(level: Rank, trump: Suit) -> None:
    tr = Trumps(level, trump)
    for r in Rank:
        if r in (Rank.SMALL_JOKER, Rank.BIG_JOKER):
            continue
        assert tr.is_trump(card(r, trump))


def test_examples_of_plain_cards() -> None:
    tr = Trumps(Rank.EIGHT, Suit.HEARTS)
    for text in ("AS", "3S", "7C", "9D", "KC", "TD"):
        assert not tr.is_trump(c(text)), text
    for text in ("8S", "8C", "8D", "8H", "2S", "2C", "2D", "2H", "AH", "3H", "SJ", "BJ"):
        assert tr.is_trump(c(text)), text


@pytest.mark.parametrize("bad", [Rank.TWO, Rank.SMALL_JOKER, Rank.BIG_JOKER])
def test_a_level_rank_is_three_to_ace(bad: Rank) -> None:
    """§2: levels run 3..A; 2 is never the level rank (it is always trump)."""
    with pytest.raises(ValueError):
        Trumps(bad, Suit.SPADES)


# --- §3 trump order ----------------------------------------------------------------------------------


def trump_tiers(level: Rank, trump: Suit) -> list[list[Card]]:
    """§3, high to low: BJ > SJ > L of T > L of the other three (equal) > 2 of T > other 2s (equal) > T's A..3."""
    others = suits_other_than(trump)
    tiers: list[list[Card]] = [
        [BIG_JOKER],
        [SMALL_JOKER],
        [card(level, trump)],
        [card(level, s) for s in others],
        [card(Rank.TWO, trump)],
        [card(Rank.TWO, s) for s in others],
    ]
    for r in (Rank.ACE, Rank.KING, Rank.QUEEN, Rank.JACK, Rank.TEN, Rank.NINE, Rank.EIGHT, Rank.SEVEN):
        if r != level:
            tiers.append([card(r, trump)])
    for r in (Rank.SIX, Rank.FIVE, Rank.FOUR, Rank.THREE):
        if r != level:
            tiers.append([card(r, trump)])
    return tiers


@pytest.mark.parametrize(("level", "trump"), ALL_CONTEXTS)
def test_full_trump_order(level: Rank, trump: Suit) -> None:
    """§3 / 五.1: every trump card, high to low; equal within a tier, strictly ordered between tiers."""
    tr = Trumps(level, trump)
    tiers = trump_tiers(level, trump)
    listed = [x for tier in tiers for x in tier]
    assert sorted(listed) == sorted(x for x in DECK if tr.is_trump(x)), "the tiers list every trump once"
    assert len(listed) == len(set(listed))
    for tier in tiers:
        assert len({tr.strength[x] for x in tier}) == 1, tier
    for higher, lower in itertools.pairwise(tiers):
        assert tr.strength[higher[0]] > tr.strength[lower[0]], (higher, lower)


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_big_joker_over_small_joker_over_everything(level: Rank, trump: Suit) -> None:
    tr = Trumps(level, trump)
    assert tr.strength[BIG_JOKER] > tr.strength[SMALL_JOKER]
    for x in DECK:
        if x not in (BIG_JOKER, SMALL_JOKER):
            assert tr.strength[SMALL_JOKER] > tr.strength[x]


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_level_card_of_trumps_over_off_suit_level_cards(level: Rank, trump: Suit) -> None:
    """主级牌 > 副级牌."""
    tr = Trumps(level, trump)
    for s in suits_other_than(trump):
        assert tr.strength[card(level, trump)] > tr.strength[card(level, s)]


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_off_suit_level_cards_are_equal(level: Rank, trump: Suit) -> None:
    """副级牌 of the three other suits are equal (三个花先出为大 decides between them)."""
    tr = Trumps(level, trump)
    assert len({tr.strength[card(level, s)] for s in suits_other_than(trump)}) == 1


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_off_suit_level_cards_over_two_of_trumps(level: Rank, trump: Suit) -> None:
    tr = Trumps(level, trump)
    for s in suits_other_than(trump):
        assert tr.strength[card(level, s)] > tr.strength[card(Rank.TWO, trump)]


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_two_of_trumps_over_off_suit_twos(level: Rank, trump: Suit) -> None:
    """主2 > 副2."""
    tr = Trumps(level, trump)
    for s in suits_other_than(trump):
        assert tr.strength[card(Rank.TWO, trump)] > tr.strength[card(Rank.TWO, s)]


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_off_suit_twos_are_equal(level: Rank, trump: Suit) -> None:
    tr = Trumps(level, trump)
    assert len({tr.strength[card(Rank.TWO, s)] for s in suits_other_than(trump)}) == 1


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_off_suit_twos_over_trump_suit_ace(level: Rank, trump: Suit) -> None:
    """副2 > A of trumps (or K of trumps when A is the level)."""
    tr = Trumps(level, trump)
    top_plain_rank = Rank.KING if level == Rank.ACE else Rank.ACE
    for s in suits_other_than(trump):
        assert tr.strength[card(Rank.TWO, s)] > tr.strength[card(top_plain_rank, trump)]


@pytest.mark.parametrize(("level", "trump"), CONTEXTS, ids=CONTEXT_IDS)
def test_trump_suit_ranks_in_natural_order_skipping_level(level: Rank, trump: Suit) -> None:
    """T's A K Q J 10 9 8 7 6 5 4 3, the level rank taken out (it sits higher, as a level card)."""
    tr = Trumps(level, trump)
    ranks = [r for r in LEVELS if r != level]
    for low, high in itertools.pairwise(ranks):
        assert tr.strength[card(high, trump)] > tr.strength[card(low, trump)], (low, high)


@pytest.mark.parametrize(("level", "trump"), ALL_CONTEXTS)
def test_every_trump_beats_every_plain_card_in_the_display_order(level: Rank, trump: Suit) -> None:
    """`order_key` shows plain suits first and trumps last; inside a class it follows strength."""
    tr = Trumps(level, trump)
    trumps = [x for x in DECK if tr.is_trump(x)]
    plain = [x for x in DECK if not tr.is_trump(x)]
    assert max(tr.order_key(x) for x in plain) < min(tr.order_key(x) for x in trumps)
    for a, b in itertools.product(DECK, DECK):
        if tr.suit_class[a] == tr.suit_class[b]:
            assert (tr.order_key(a) < tr.order_key(b)) == (tr.strength[a] < tr.strength[b]), (a, b)
            assert (tr.order_key(a) == tr.order_key(b)) == (tr.strength[a] == tr.strength[b]), (a, b)


# --- §3 plain suit order -------------------------------------------------------------------------------


@pytest.mark.parametrize(("level", "trump"), ALL_CONTEXTS)
def test_plain_suit_order_without_level_and_two(level: Rank, trump: Suit) -> None:
    """§3 / 五.2: a plain suit is A K Q J 10 9 8 7 6 5 4 3, without L (trump) and 2 (trump)."""
    tr = Trumps(level, trump)
    for s in suits_other_than(trump):
        members = sorted((x for x in DECK if tr.suit_class[x] == int(s)), key=lambda x: tr.strength[x])
        expected = [card(r, s) for r in LEVELS if r != level]
        assert members == expected, (level, trump, s)
        assert len({tr.strength[x] for x in members}) == len(members), "no two plain ranks are equal"


@pytest.mark.parametrize("level", [Rank.THREE, Rank.ACE, Rank.EIGHT])
def test_plain_suit_loses_its_level_rank_at_both_ends(level: Rank) -> None:
    tr = Trumps(level, Suit.HEARTS)
    spades = [x for x in DECK if tr.suit_class[x] == int(Suit.SPADES)]
    ranks = {RANK_OF[x] for x in spades}
    assert level not in ranks
    assert Rank.TWO not in ranks
    if level == Rank.ACE:
        assert max(spades, key=lambda x: tr.strength[x]) == c("KS")
    if level == Rank.THREE:
        assert min(spades, key=lambda x: tr.strength[x]) == c("4S")


def test_equal_cards_have_equal_strength_only_where_the_rules_say() -> None:
    """The only equal strengths among distinct cards are off-suit level cards and off-suit 2s (§3)."""
    for level, trump in ALL_CONTEXTS:
        tr = Trumps(level, trump)
        for a, b in itertools.combinations(DECK, 2):
            if tr.suit_class[a] != tr.suit_class[b] or tr.strength[a] != tr.strength[b]:
                continue
            both_off_level = RANK_OF[a] == RANK_OF[b] == level and trump not in (SUIT_OF[a], SUIT_OF[b])
            both_off_two = RANK_OF[a] == RANK_OF[b] == Rank.TWO and trump not in (SUIT_OF[a], SUIT_OF[b])
            assert both_off_level or both_off_two, (level, trump, a, b)


# --- §4 adjacency ----------------------------------------------------------------------------------


def next_up(x: Card, level: Rank, trump: Suit) -> Card | None:
    """The card whose unit directly follows x's in a run (§4), from the rules text alone."""
    if x == SMALL_JOKER:
        return BIG_JOKER  # (b) SJ SJ BJ BJ
    if x == BIG_JOKER:
        return None
    r, s = RANK_OF[x], SUIT_OF[x]
    assert s is not None
    if r in (level, Rank.TWO):
        return None  # level cards and 2s link upwards with nothing
    if r == Rank.ACE:
        # (c) A A 2 2 of T, A counted low; plain A is the top of its suit
        return card(Rank.TWO, trump) if s == trump else None
    up = Rank(r + 1)
    if up == level:
        return None  # 不能隔张: the level rank breaks the run
    return card(up, s)


@pytest.mark.parametrize(("level", "trump"), ALL_CONTEXTS)
def test_adjacency_matches_the_rules_for_every_pair_of_cards(level: Rank, trump: Suit) -> None:
    tr = Trumps(level, trump)
    for a, b in itertools.product(DECK, DECK):
        assert tr.adjacent(a, b) == (next_up(a, level, trump) == b), (level, trump, a, b)


def test_level_rank_breaks_a_plain_run() -> None:
    """三: 如打8，7799不能算拖拉机 — with L = 8, 7 and 9 are not adjacent."""
    tr = Trumps(Rank.EIGHT, Suit.HEARTS)
    assert not tr.adjacent(c("7S"), c("9S"))
    assert not tr.adjacent(c("7S"), c("8S"))
    assert not tr.adjacent(c("8S"), c("9S"))
    assert tr.adjacent(c("6S"), c("7S"))
    assert tr.adjacent(c("9S"), c("TS"))


def test_level_rank_breaks_a_trump_run() -> None:
    tr = Trumps(Rank.EIGHT, Suit.HEARTS)
    assert not tr.adjacent(c("7H"), c("9H"))
    assert not tr.adjacent(c("7H"), c("8H"))
    assert not tr.adjacent(c("8H"), c("9H"))


def test_ace_is_adjacent_only_to_king_in_a_plain_suit() -> None:
    tr = Trumps(Rank.EIGHT, Suit.HEARTS)
    assert tr.adjacent(c("KS"), c("AS"))
    for x in DECK:
        if x != c("KS"):
            assert not tr.adjacent(x, c("AS")), x
        assert not tr.adjacent(c("AS"), x), x  # no wrap to 3 (or to 2, which is trump)


def test_with_level_king_queen_and_ace_are_not_adjacent() -> None:
    tr = Trumps(Rank.KING, Suit.CLUBS)
    assert not tr.adjacent(c("QS"), c("AS"))
    assert not tr.adjacent(c("QC"), c("AC"))


def test_with_level_ace_king_is_the_top_of_a_plain_suit() -> None:
    tr = Trumps(Rank.ACE, Suit.DIAMONDS)
    assert tr.adjacent(c("QS"), c("KS"))
    assert not any(tr.adjacent(c("KS"), x) for x in DECK)
    # the trump K does not reach the 2 of trumps either (A is the level card, nothing links to it)
    assert not tr.adjacent(c("KD"), c("2D"))
    assert not tr.adjacent(c("AD"), c("2D"))


def test_with_level_three_runs_start_at_four() -> None:
    tr = Trumps(Rank.THREE, Suit.SPADES)
    assert tr.adjacent(c("4H"), c("5H"))
    assert not any(tr.adjacent(x, c("4H")) for x in DECK)
    assert tr.adjacent(c("AS"), c("2S"))  # AA22 of trumps still links A and 2
    assert tr.adjacent(c("4S"), c("5S"))


def test_small_joker_is_adjacent_to_big_joker_only() -> None:
    for level, trump in CONTEXTS:
        tr = Trumps(level, trump)
        assert tr.adjacent(SMALL_JOKER, BIG_JOKER)
        assert not tr.adjacent(BIG_JOKER, SMALL_JOKER)
        for x in DECK:
            if x != BIG_JOKER:
                assert not tr.adjacent(SMALL_JOKER, x)
            if x != SMALL_JOKER:
                assert not tr.adjacent(x, BIG_JOKER)


def test_level_cards_and_off_suit_twos_link_with_nothing() -> None:
    for level, trump in CONTEXTS:
        tr = Trumps(level, trump)
        loners = [card(level, s) for s in Suit] + [card(Rank.TWO, s) for s in suits_other_than(trump)]
        for x, y in itertools.product(loners, DECK):
            assert not tr.adjacent(x, y), (x, y)
            assert not tr.adjacent(y, x), (y, x)


def test_ace_and_two_of_trumps_are_adjacent_and_two_links_nothing_else() -> None:
    for level, trump in CONTEXTS:
        if level == Rank.ACE:
            continue
        tr = Trumps(level, trump)
        two = card(Rank.TWO, trump)
        assert tr.adjacent(card(Rank.ACE, trump), two)
        assert not any(tr.adjacent(two, x) for x in DECK), "2 of T links to nothing above (not to 3, D-TR-3)"
        assert [x for x in DECK if tr.adjacent(x, two)] == [card(Rank.ACE, trump)]


def test_different_suits_never_adjacent() -> None:
    tr = Trumps(Rank.EIGHT, Suit.HEARTS)
    assert not tr.adjacent(c("5S"), c("6C"))
    assert not tr.adjacent(c("5H"), c("6S"))
    assert not tr.adjacent(c("AH"), c("2S"))
    assert not tr.adjacent(c("AS"), c("2H"))
    assert not tr.adjacent(c("AH"), SMALL_JOKER)
