"""拖拉机 combinations (docs/rules/tractor.md §4) and who wins a trick (§5, D-TR-3, D-TR-4).

Expected values come from the rules text and the source (一.三 拖拉机, 五 牌面大小, 六 将吃), never from engine
output. The property tests at the end compare `classify` / `trick_winner` with an independent reading of
§3-§5 written in this file, and check that the winner does not depend on how equal cards are labelled.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paiju.rules.cards import (
    BIG_JOKER,
    DECK,
    RANK_OF,
    SMALL_JOKER,
    SUIT_OF,
    Card,
    Cards,
    Rank,
    Suit,
    card,
    full_decks,
    parse_cards,
)
from paiju.rules.errors import IllegalAction
from paiju.rules.tractor.combos import Kind, beats, classify, contends, trick_winner
from paiju.rules.tractor.order import TRUMP, Trumps

from ...support.profiles import profile

L8H = Trumps(Rank.EIGHT, Suit.HEARTS)
L3H = Trumps(Rank.THREE, Suit.HEARTS)  # the shared scenarios' context
L3S = Trumps(Rank.THREE, Suit.SPADES)
LAD = Trumps(Rank.ACE, Suit.DIAMONDS)
LKC = Trumps(Rank.KING, Suit.CLUBS)
SPADES, HEARTS, CLUBS, DIAMONDS = (int(s) for s in Suit)


def cs(text: str) -> Cards:
    """Cards in the notation; ``5Sx4`` repeats a card (``5Sx4`` = ``5S 5S 5S 5S``)."""
    out: list[str] = []
    for token in text.split():
        if "x" in token:
            name, times = token.split("x")
            out += [name] * int(times)
        else:
            out.append(token)
    return parse_cards(" ".join(out), decks=6)


def winner(tr: Trumps, *plays: str) -> int:
    return trick_winner([cs(p) for p in plays], tr)


# --- §4 each kind -------------------------------------------------------------------------------------

KINDS = [
    # (context, cards, kind, unit, units, suit class)
    (L8H, "5S", Kind.SINGLE, 1, 1, SPADES),
    (L8H, "BJ", Kind.SINGLE, 1, 1, TRUMP),
    (L8H, "5S 5S", Kind.PAIR, 2, 1, SPADES),
    (L8H, "8S 8S", Kind.PAIR, 2, 1, TRUMP),
    (L8H, "2C 2C", Kind.PAIR, 2, 1, TRUMP),
    (L8H, "SJ SJ", Kind.PAIR, 2, 1, TRUMP),
    (L8H, "KD KD KD", Kind.TRIPLE, 3, 1, DIAMONDS),
    (L8H, "5Sx4", Kind.BOMB, 4, 1, SPADES),
    (L8H, "5Sx5", Kind.BOMB, 5, 1, SPADES),
    (L8H, "5Sx6", Kind.BOMB, 6, 1, SPADES),
    (L8H, "BJx6", Kind.BOMB, 6, 1, TRUMP),
    (L8H, "5S 5S 6S 6S", Kind.TRACTOR, 2, 2, SPADES),
    (L8H, "5S 5S 6S 6S 7S 7S", Kind.TRACTOR, 2, 3, SPADES),
    (L8H, "9C 9C TC TC JC JC QC QC KC KC AC AC", Kind.TRACTOR, 2, 6, CLUBS),
    (L8H, "3H 3H 4H 4H", Kind.TRACTOR, 2, 2, TRUMP),
    (L8H, "KH KH AH AH", Kind.TRACTOR, 2, 2, TRUMP),
    (L8H, "5S 5S 5S 6S 6S 6S", Kind.SPECIAL_TRACTOR, 3, 2, SPADES),
    (L8H, "5Sx3 6Sx3 7Sx3", Kind.SPECIAL_TRACTOR, 3, 3, SPADES),
    (L8H, "6Sx4 7Sx4", Kind.SPECIAL_TRACTOR, 4, 2, SPADES),
    (L8H, "9Sx5 TSx5", Kind.SPECIAL_TRACTOR, 5, 2, SPADES),
    (L8H, "9Sx6 TSx6", Kind.SPECIAL_TRACTOR, 6, 2, SPADES),
    (L8H, "9Hx4 THx4 JHx4", Kind.SPECIAL_TRACTOR, 4, 3, TRUMP),
    # §4 (b) jokers, (c) AA22 (D-TR-3)
    (L8H, "SJ SJ BJ BJ", Kind.TRACTOR, 2, 2, TRUMP),
    (L8H, "SJ SJ SJ BJ BJ BJ", Kind.SPECIAL_TRACTOR, 3, 2, TRUMP),
    (L8H, "SJx6 BJx6", Kind.SPECIAL_TRACTOR, 6, 2, TRUMP),
    (L8H, "AH AH 2H 2H", Kind.TRACTOR, 2, 2, TRUMP),
    (L3S, "AS AS 2S 2S", Kind.TRACTOR, 2, 2, TRUMP),
    (L3S, "4S 4S 5S 5S", Kind.TRACTOR, 2, 2, TRUMP),
    (L3S, "4H 4H 5H 5H", Kind.TRACTOR, 2, 2, HEARTS),
    # L = A: K is the top of a plain suit
    (LAD, "QS QS KS KS", Kind.TRACTOR, 2, 2, SPADES),
    (LAD, "QD QD KD KD", Kind.TRACTOR, 2, 2, TRUMP),
    (LAD, "AS AS", Kind.PAIR, 2, 1, TRUMP),
    # plain A is adjacent to K
    (L8H, "KS KS AS AS", Kind.TRACTOR, 2, 2, SPADES),
    (L3H, "7S 7S 8S 8S 9S 9S", Kind.TRACTOR, 2, 3, SPADES),
]


@pytest.mark.parametrize("case", KINDS, ids=[k[1] for k in KINDS])
def test_each_kind(case: tuple[Trumps, str, Kind, int, int, int]) -> None:
    tr, text, kind, unit, units, cls = case
    combo = classify(cs(text), tr)
    assert (combo.kind, combo.unit, combo.units, combo.suit_class) == (kind, unit, units, cls)
    assert combo.size == len(cs(text))


NOT_COMBOS = [
    # 不能隔张: the level rank breaks a run (三: 如打8，7799不能算拖拉机)
    (L8H, "7S 7S 9S 9S"),
    (L8H, "7H 7H 9H 9H"),
    (L8H, "7Sx3 9Sx3"),
    (LKC, "QS QS AS AS"),
    (LKC, "QC QC AC AC"),
    # A is adjacent only to K in a plain suit: no wrap to 3
    (L8H, "AS AS 3S 3S"),
    (L8H, "QS QS AS AS"),
    # D-TR-3: AA22 exactly two units; it does not extend to K or to 3; 2 links only to A
    (L8H, "KH KH AH AH 2H 2H"),
    (L8H, "AH AH 2H 2H 3H 3H"),
    (L8H, "2H 2H 3H 3H"),
    (L3S, "AS AS 2S 2S 4S 4S"),
    (L3S, "2S 2S 4S 4S"),
    (LAD, "AD AD 2D 2D"),  # with L = A the A of trumps is a level card and links with nothing
    (LAD, "KD KD 2D 2D"),
    (LAD, "KD KD AD AD"),
    # off-suit level cards, off-suit 2s and the level card of trumps link with nothing
    (L8H, "8S 8S 8C 8C"),
    (L8H, "8H 8H 8S 8S"),
    (L8H, "8H 8H 9H 9H"),
    (L8H, "7H 7H 8H 8H"),
    (L8H, "7S 7S 8S 8S"),
    (L8H, "2S 2S 2C 2C"),
    (L8H, "2H 2H 2S 2S"),
    (L8H, "2S 2S AH AH"),
    (L8H, "AH AH 8H 8H"),
    (L8H, "SJ SJ 8H 8H"),
    (L8H, "2H 2H 8S 8S"),
    (L8H, "AH AH SJ SJ"),
    (L8H, "BJ BJ 2H 2H"),
    (L3S, "3S 3S 4S 4S"),
    (LAD, "KS KS AS AS"),
    # mixed suit classes: a throw 甩牌 is not allowed (八)
    (L8H, "5S 5H"),
    (L8H, "AS 2S"),
    (L8H, "5S 5S 6S 6S 7H 7H"),
    (L8H, "5S 5S 5C 5C"),
    (L8H, "KS KS AS AS 2S 2S"),
    # unequal unit sizes / not one combination
    (L8H, "5S 6S"),
    (L8H, "SJ BJ"),
    (L8H, "5S 5S 6S"),
    (L8H, "5S 5S 5S 6S 6S"),
    (L8H, "5S 5S 6S 6S 6S 6S"),
    (L8H, "5Sx3 6Sx4"),
    (L8H, "5S 5S 6S 6S 7S"),
    (L8H, "5S 5S 9S 9S"),
    (L8H, "5S 5S 6S 6S 9S 9S TS TS"),
    (L8H, "SJ SJ BJ"),
]


@pytest.mark.parametrize(("tr", "text"), NOT_COMBOS, ids=[n[1] for n in NOT_COMBOS])
def test_not_a_combination(tr: Trumps, text: str) -> None:
    with pytest.raises(IllegalAction):
        classify(cs(text), tr)


def test_empty_play_is_not_a_combination() -> None:
    with pytest.raises(IllegalAction):
        classify((), L8H)


# --- §4 values: tractor values, AA22 lowest, jokers highest -----------------------------------------


def test_tractor_value_is_its_top_unit() -> None:
    assert winner(L8H, "5S 5S 6S 6S", "9S 9S TS TS") == 1
    assert winner(L8H, "9S 9S TS TS", "5S 5S 6S 6S") == 0
    assert winner(L8H, "QS QS KS KS", "KS KS AS AS") == 1
    assert winner(L8H, "3S 3S 4S 4S 5S 5S", "4S 4S 5S 5S 6S 6S") == 1


def test_aa22_is_the_lowest_trump_tractor() -> None:
    """五.3: 主牌拖拉机 … “AA22”为最小 (D-TR-3)."""
    assert winner(L8H, "3H 3H 4H 4H", "AH AH 2H 2H") == 0
    assert winner(L8H, "AH AH 2H 2H", "3H 3H 4H 4H") == 1
    assert winner(L3S, "AS AS 2S 2S", "4S 4S 5S 5S") == 1
    assert winner(L3S, "4S 4S 5S 5S", "AS AS 2S 2S") == 0
    assert winner(L8H, "AH AH 2H 2H", "KH KH AH AH") == 1


def test_aa22_still_beats_a_plain_tractor() -> None:
    assert winner(L8H, "AS AS KS KS", "AH AH 2H 2H") == 1


def test_jokers_are_the_highest_trump_tractor() -> None:
    """§4 (b): SJ SJ BJ BJ is the highest tractor (五.3: “大王小王”)."""
    assert winner(L8H, "KH KH AH AH", "SJ SJ BJ BJ") == 1
    assert winner(L8H, "SJ SJ BJ BJ", "KH KH AH AH", "QH QH KH KH", "AH AH 2H 2H") == 0
    assert winner(L8H, "SJ SJ SJ BJ BJ BJ", "KHx3 AHx3") == 0
    assert winner(L8H, "KHx3 AHx3", "SJx3 BJx3") == 1
    assert winner(L8H, "AS AS KS KS", "KH KH AH AH", "SJ SJ BJ BJ") == 2


# --- §5 who wins a trick ------------------------------------------------------------------------------


def test_single_lead_highest_of_suit_wins_off_suit_discards() -> None:
    assert winner(L8H, "5S", "9S", "3S", "AD") == 1
    assert winner(L8H, "KS", "AC", "AD", "QS") == 0


def test_trump_single_beats_plain() -> None:
    """六 将吃: a void follower's trump wins; a higher trump later beats it."""
    assert winner(L8H, "AS", "3H") == 1
    assert winner(L8H, "AS", "3H", "2C") == 2
    assert winner(L8H, "AS", "3H", "2C", "8D") == 3


def test_equal_off_suit_level_cards_the_first_played_wins() -> None:
    """五.1: 副级牌(三个花先出为大)."""
    assert winner(L8H, "8S", "8C", "8D") == 0
    assert winner(L8H, "5H", "8C", "8D", "8S") == 1
    assert winner(L8H, "5H", "8C", "8H", "8S") == 2
    assert winner(L8H, "AS", "8D", "8C") == 1


def test_equal_off_suit_twos_the_first_played_wins() -> None:
    """五.1: 副2(三个花先出为大)."""
    assert winner(L8H, "3H", "2S", "2C", "2D") == 1
    assert winner(L8H, "3H", "2S", "2H", "2C") == 2
    assert winner(L8H, "2D", "2C", "2S") == 0


def test_identical_copies_the_first_played_wins() -> None:
    assert winner(L8H, "QS QS", "QS QS") == 0
    assert winner(L8H, "QS", "QS", "QS", "QS") == 0
    assert winner(L8H, "AS AS", "3H 3H", "3H 3H") == 1


def test_equal_off_suit_level_pairs_the_first_played_wins() -> None:
    assert winner(L8H, "5H 5H", "8S 8S", "8C 8C", "8D 8D") == 1
    assert winner(L8H, "8S 8S", "8C 8C", "8D 8D") == 0


def test_pair_lead_only_pairs_contend() -> None:
    assert winner(L8H, "5S 5S", "AS KS", "3S 3S", "6S 6S") == 3
    assert winner(L8H, "5S 5S", "AS KS") == 0


def test_trumping_a_pair_needs_a_pair() -> None:
    """六 将吃: same count and same (or stronger) combination."""
    assert winner(L8H, "AS AS", "3H 3H") == 1
    assert winner(L8H, "AS AS", "3H 4H") == 0
    assert winner(L8H, "AS AS", "SJ BJ") == 0
    assert winner(L8H, "AS AS", "8S 8C") == 0


def test_mixed_plays_are_discards_and_never_win() -> None:
    assert winner(L8H, "5S 5S", "AS BJ") == 0
    assert winner(L8H, "3S 3S 4S 4S", "AS AS BJ BJ") == 0
    assert winner(L8H, "3S 3S 4S 4S", "AS AS KS 2S") == 0


def test_contender_needs_unit_at_least_the_leads() -> None:
    """§5: unit size u ≥ u_lead: a tractor does not contend against a special tractor of the same count."""
    assert winner(L8H, "5Sx3 6Sx3", "9S 9S TS TS JS JS") == 0
    assert winner(L8H, "5Sx3 6Sx3", "3H 3H 4H 4H 5H 5H") == 0
    assert winner(L8H, "5Sx3 6Sx3", "3Hx3 4Hx3") == 1


def test_trump_tractor_beats_plain_tractor_and_shape_must_match() -> None:
    assert winner(L8H, "5S 5S 6S 6S", "3H 3H 4H 4H") == 1
    assert winner(L8H, "5S 5S 6S 6S", "3H 3H 5H 5H") == 0  # two pairs, not a tractor
    assert winner(L8H, "5S 5S 6S 6S", "7H 7H 9H 9H") == 0  # 不能隔张
    assert winner(L8H, "5S 5S 6S 6S", "8S 8S 8C 8C") == 0  # level cards link with nothing


def test_larger_unit_beats_smaller_unit_of_the_same_count() -> None:
    """五.4: 555666 大过 778899, 44445555 大过 66778899."""
    assert winner(L3H, "7S 7S 8S 8S 9S 9S", "5Sx3 6Sx3") == 1
    assert winner(L3H, "6S 6S 7S 7S 8S 8S 9S 9S", "4Sx4 5Sx4") == 1
    assert winner(L3H, "4Sx4 5Sx4", "JS JS QS QS KS KS AS AS") == 0
    assert winner(L3H, "4Sx3 5Sx3 6Sx3 7Sx3", "9Sx4 TSx4 JSx4") == 1


def test_bomb_beats_tractor_of_the_same_count() -> None:
    """五.5 D-TR-4: a bomb (炸) beats any tractor or special tractor of the same count."""
    assert winner(L8H, "5S 5S 6S 6S", "3Sx4") == 1
    assert winner(L8H, "9S 9S TS TS JS JS", "3Sx6") == 1
    assert winner(L8H, "5Sx3 6Sx3", "3Sx6") == 1
    assert winner(L3H, "7S 7S 8S 8S 9S 9S", "5Sx3 6Sx3", "4Sx6") == 2
    assert winner(L8H, "5S 5S 6S 6S", "3H 3H 4H 4H", "3Hx4") == 2
    assert winner(L8H, "SJ SJ BJ BJ", "3Hx4") == 1
    assert winner(L8H, "SJx3 BJx3", "3Hx6") == 1


def test_bomb_against_bomb_and_bomb_lead() -> None:
    assert winner(L8H, "5Sx4", "9Sx4") == 1
    assert winner(L8H, "9Sx4", "5Sx4") == 0
    assert winner(L8H, "3Sx4", "KS KS AS AS") == 0
    assert winner(L8H, "3Sx4", "3H 3H 4H 4H") == 0  # trumping a bomb needs a bomb
    assert winner(L8H, "3Sx4", "3Hx4") == 1


def test_trumping_a_bomb_or_tractor_later_higher_trump_wins() -> None:
    assert winner(L8H, "5S 5S 6S 6S", "3H 3H 4H 4H", "QH QH KH KH") == 2
    assert winner(L8H, "5S 5S 6S 6S", "QH QH KH KH", "3H 3H 4H 4H") == 1


def test_scenario_follow_pair_winner() -> None:
    """tests/scenarios/shared/tractor-follow-pair.json: QS QS, AS AS, 5S 7S, 4H 4H (L = 3, T = H) -> seat 3."""
    assert winner(L3H, "QS QS", "AS AS", "5S 7S", "4H 4H") == 3


def test_scenario_special_beats_tractor_winner() -> None:
    """tests/scenarios/shared/tractor-special-beats-tractor-last-trick.json: 555666 beats 778899."""
    assert winner(L3H, "7S 7S 8S 8S 9S 9S", "5S 5S 6S 6S 5S 6S", "TS TS 4D 6D 8D 9D", "KS KS QS QS JS 4C") == 1


def test_contends_needs_the_leads_count() -> None:
    lead = classify(cs("5S 5S"), L8H)
    assert contends(lead, cs("9S 9S 9S"), L8H) is None
    assert contends(lead, cs("9S"), L8H) is None
    assert contends(lead, cs("9S 9S"), L8H) is not None


def test_beats_is_strict() -> None:
    a = classify(cs("8S"), L8H)
    b = classify(cs("8C"), L8H)
    assert not beats(a, b)
    assert not beats(b, a)


# --- an independent reading of §3-§5 -------------------------------------------------------------------

LEVELS = [Rank(r) for r in range(Rank.THREE, Rank.ACE + 1)]


def o_class(x: Card, tr: Trumps) -> str:
    if x in (SMALL_JOKER, BIG_JOKER) or RANK_OF[x] in (tr.level, Rank.TWO) or SUIT_OF[x] == tr.trump:
        return "trump"
    return "SHCD"[SUIT_OF[x]]  # type: ignore[index]


def o_power(x: Card, tr: Trumps) -> int:
    """§3 order as a number (plain 3..14, trumps 100+), equal for off-suit level cards and off-suit 2s."""
    if x == BIG_JOKER:
        return 300
    if x == SMALL_JOKER:
        return 299
    r, s = RANK_OF[x], SUIT_OF[x]
    natural = int(r) + 2
    if r == tr.level:
        return 298 if s == tr.trump else 297
    if r == Rank.TWO:
        return 296 if s == tr.trump else 295
    return natural + (100 if s == tr.trump else 0)


def o_next(x: Card, tr: Trumps) -> Card | None:
    """§4: the card whose unit follows x's in a run."""
    if x == SMALL_JOKER:
        return BIG_JOKER
    if x == BIG_JOKER:
        return None
    r, s = RANK_OF[x], SUIT_OF[x]
    assert s is not None
    if r in (tr.level, Rank.TWO):
        return None
    if r == Rank.ACE:
        return card(Rank.TWO, s) if s == tr.trump else None
    up = Rank(r + 1)
    return None if up == tr.level else card(up, s)


def o_run(distinct: Sequence[Card], tr: Trumps) -> list[Card] | None:
    """The distinct cards in run order when they form one run (§4, D-TR-3), else None."""
    kinds = set(distinct)
    starts = [x for x in kinds if not any(o_next(y, tr) == x for y in kinds)]
    if len(starts) != 1:
        return None
    run = [starts[0]]
    while len(run) < len(kinds):
        nxt = o_next(run[-1], tr)
        if nxt is None or nxt not in kinds:
            return None
        run.append(nxt)
    if card(Rank.TWO, tr.trump) in kinds and len(kinds) != 2:
        return None
    return run


def o_combo(cards: Sequence[Card], tr: Trumps) -> tuple[int, int, str, int] | None:
    """(unit, units, class, value) per §4, or None."""
    if not cards or len({o_class(x, tr) for x in cards}) != 1:
        return None
    cls = o_class(cards[0], tr)
    groups = Counter(cards)
    sizes = set(groups.values())
    if len(groups) == 1:
        return len(cards), 1, cls, o_power(cards[0], tr)
    if len(sizes) != 1 or min(sizes) < 2:
        return None
    run = o_run(list(groups), tr)
    if run is None:
        return None
    value = -1 if run[-1] == card(Rank.TWO, tr.trump) else o_power(run[-1], tr)  # AA22 lowest
    return min(sizes), len(groups), cls, value


def o_winner(plays: Sequence[Sequence[Card]], tr: Trumps) -> int:
    lead = o_combo(plays[0], tr)
    assert lead is not None
    best, win = (lead[2] == "trump", lead[0], lead[3]), 0
    for i, play in enumerate(plays[1:], start=1):
        combo = o_combo(play, tr)
        if combo is None or len(play) != len(plays[0]) or combo[0] < lead[0]:
            continue
        if combo[2] not in (lead[2], "trump"):
            continue
        key = (combo[2] == "trump", combo[0], combo[3])
        if key > best:
            best, win = key, i
    return win


def combos_in(pool: Counter[Card], cls: str, n: int, tr: Trumps) -> list[Cards]:
    """Every combination of n cards of class cls that the multiset pool holds (§4, independent)."""
    kinds = sorted(x for x in pool if pool[x] > 0 and o_class(x, tr) == cls)
    found: list[Cards] = []
    if n <= 6:
        found += [(x,) * n for x in kinds if pool[x] >= n]
    for unit in range(2, 7):
        if n % unit or n // unit < 2:
            continue
        places = n // unit
        for start in kinds:
            run = [start]
            while len(run) < places:
                nxt = o_next(run[-1], tr)
                if nxt is None or pool[nxt] < unit:
                    break
                run.append(nxt)
            if len(run) == places and pool[start] >= unit and o_run(run, tr) is not None:
                found.append(tuple(sorted(x for x in run for _ in range(unit))))
    return found


# --- properties -----------------------------------------------------------------------------------------


def clumpy_pool(rng: random.Random, cls_cards: list[Card], size: int) -> Counter[Card]:
    """A multiset of up to ``size`` cards, in clumps of identical copies (so that tractors happen)."""
    pool: Counter[Card] = Counter()
    while sum(pool.values()) < size:
        x = rng.choice(cls_cards)
        pool[x] = min(6, pool[x] + rng.choice((1, 2, 2, 3, 3, 4, 6)))
    return pool


@st.composite
def contexts(draw: st.DrawFn) -> Trumps:
    return Trumps(draw(st.sampled_from(LEVELS)), draw(st.sampled_from(list(Suit))))


@given(contexts(), st.integers(0, 2**32 - 1))
@profile(400)
def test_classify_agrees_with_an_independent_reading(tr: Trumps, seed: int) -> None:
    rng = random.Random(seed)
    cls = rng.choice(["trump", "S", "H", "C", "D"])
    members = [x for x in DECK if o_class(x, tr) == cls]
    if not members:
        return
    if rng.random() < 0.2:  # some plays mix classes
        members = list(DECK)
    pool = clumpy_pool(rng, members, rng.randint(1, 14))
    cards = tuple(sorted(pool.elements()))
    expected = o_combo(cards, tr)
    try:
        combo = classify(cards, tr)
    except IllegalAction:
        assert expected is None, (tr, cards, expected)
        return
    assert expected is not None, (tr, cards, combo)
    unit, units, ocls, _ = expected
    assert (combo.unit, combo.units) == (unit, units)
    assert combo.suit_class == (TRUMP if ocls == "trump" else "SHCD".index(ocls))
    kind = {1: Kind.SINGLE, 2: Kind.PAIR, 3: Kind.TRIPLE}.get(unit, Kind.BOMB) if units == 1 else None
    if units > 1:
        kind = Kind.TRACTOR if unit == 2 else Kind.SPECIAL_TRACTOR
    assert combo.kind == kind


@st.composite
def tricks(draw: st.DrawFn) -> tuple[Trumps, list[Cards]]:
    """A lead (a real combination from a random leader hand) and three follows from what is left."""
    tr = draw(contexts())
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    deck = Counter(full_decks(6))
    cls = rng.choice(["trump", *("SHCD"[s] for s in Suit if s != tr.trump)])
    members = [x for x in DECK if o_class(x, tr) == cls]
    hand = clumpy_pool(rng, members, rng.randint(4, 30))
    n = rng.choice([1, 2, 2, 3, 4, 4, 4, 5, 6, 6, 6, 8, 8, 9, 10, 12])
    options = combos_in(hand, cls, n, tr)
    while not options:
        n = rng.randint(1, 3)
        options = combos_in(hand, cls, n, tr)
    lead = rng.choice(options)
    deck.subtract(lead)
    plays = [lead]
    for _ in range(3):
        style = rng.random()
        choices: list[Cards] = []
        if style < 0.75:
            play_cls = cls if style < 0.45 else "trump"
            choices = combos_in(deck, play_cls, n, tr)
        play = rng.choice(choices) if choices else tuple(sorted(rng.sample(list(deck.elements()), n)))
        deck.subtract(play)
        plays.append(play)
    return tr, plays


def relabel(plays: list[Cards], mapping: dict[Card, Card]) -> list[Cards]:
    return [tuple(sorted(mapping.get(x, x) for x in play)) for play in plays]


@given(tricks())
@profile(600)
def test_trick_winner_agrees_with_an_independent_reading(trick: tuple[Trumps, list[Cards]]) -> None:
    tr, plays = trick
    assert trick_winner(plays, tr) == o_winner(plays, tr), (tr, plays)


@given(tricks(), st.permutations([0, 1, 2]), st.permutations([0, 1, 2]))
@profile(400)
def test_trick_winner_does_not_depend_on_labels_of_equal_cards(
    trick: tuple[Trumps, list[Cards]], sigma: list[int], tau: list[int]
) -> None:
    """Off-suit level cards are equal, and so are off-suit 2s (§3): permuting their suits (a bijection, so
    identical copies stay identical and distinct cards stay distinct) keeps every play's combination and
    value, so the same seat wins."""
    tr, plays = trick
    others = [s for s in Suit if s != tr.trump]
    mapping: dict[Card, Card] = {}
    for i, s in enumerate(others):
        mapping[card(tr.level, s)] = card(tr.level, others[sigma[i]])
        mapping[card(Rank.TWO, s)] = card(Rank.TWO, others[tau[i]])
    assert trick_winner(relabel(plays, mapping), tr) == trick_winner(plays, tr), (tr, plays, mapping)


@given(tricks(), st.permutations(list(Suit)))
@profile(300)
def test_trick_winner_is_symmetric_under_renaming_suits(trick: tuple[Trumps, list[Cards]], perm: list[Suit]) -> None:
    """Renaming all four suits (and the trump suit with them) changes nothing (§3-§5 name no suit)."""
    tr, plays = trick
    mapping = {card(r, s): card(r, perm[s]) for r in Rank if r < Rank.SMALL_JOKER for s in Suit}
    renamed = Trumps(tr.level, perm[tr.trump])
    assert trick_winner(relabel(plays, mapping), renamed) == trick_winner(plays, tr)


@given(tricks())
@profile(200)
def test_a_later_identical_play_never_takes_the_trick(trick: tuple[Trumps, list[Cards]]) -> None:
    """三个花先出为大: a later copy of the winning play (or of it relabelled among equal cards) does not win."""
    tr, plays = trick
    w = trick_winner(plays, tr)
    others = [s for s in Suit if s != tr.trump]
    rotate = {card(tr.level, s): card(tr.level, others[(i + 1) % 3]) for i, s in enumerate(others)}
    rotate.update({card(Rank.TWO, s): card(Rank.TWO, others[(i + 1) % 3]) for i, s in enumerate(others)})
    for copy in (plays[w], relabel([plays[w]], rotate)[0]):
        assert trick_winner([*plays, copy], tr) == w


def test_generated_tricks_cover_the_interesting_cases() -> None:
    """Self-check of the generator: winners other than the leader, trumping and bombs all happen."""
    seen: set[str] = set()
    for seed in range(300):
        tr, plays = _example(seed)
        w = trick_winner(plays, tr)
        lead = classify(plays[0], tr)
        best = classify(plays[w], tr)
        if w:
            seen.add("follower wins")
        if best.suit_class == TRUMP and lead.suit_class != TRUMP:
            seen.add("trumped")
        if best.kind is Kind.BOMB and lead.kind in (Kind.TRACTOR, Kind.SPECIAL_TRACTOR):
            seen.add("bomb over tractor")
        if best.unit > lead.unit:
            seen.add("larger unit")
        if lead.kind in (Kind.TRACTOR, Kind.SPECIAL_TRACTOR):
            seen.add("tractor lead")
    assert seen >= {"follower wins", "trumped", "larger unit", "tractor lead", "bomb over tractor"}, seen


def _example(seed: int) -> tuple[Trumps, list[Cards]]:
    """The generator's construction for one fixed seed, without Hypothesis (for the coverage self-check)."""
    rng = random.Random(seed)
    tr = Trumps(rng.choice(LEVELS), rng.choice(list(Suit)))
    deck = Counter(full_decks(6))
    cls = rng.choice(["trump", *("SHCD"[s] for s in Suit if s != tr.trump)])
    members = [x for x in DECK if o_class(x, tr) == cls]
    hand = clumpy_pool(rng, members, rng.randint(4, 30))
    n = rng.choice([2, 4, 4, 6, 6, 8])
    options = combos_in(hand, cls, n, tr) or combos_in(hand, cls, 1, tr)
    lead = rng.choice(options)
    n = len(lead)
    deck.subtract(lead)
    plays: list[Cards] = [lead]
    for _ in range(3):
        play_cls = rng.choice([cls, "trump"])
        choices = combos_in(deck, play_cls, n, tr)
        play = rng.choice(choices) if choices else tuple(sorted(rng.sample(list(deck.elements()), n)))
        deck.subtract(play)
        plays.append(play)
    return tr, plays
