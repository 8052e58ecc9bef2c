"""拖拉机 following 跟牌 (docs/rules/tractor.md §6, D-TR-5; source 四 跟牌), through `check_follow` and `requirement`.

For every row of every priority table there are two tests:

- ``test_first_realisable_row``: a hand whose first realisable row is that row; plays realising the row
  are accepted, plays realising only a later row are rejected;
- ``test_higher_row_wins``: a hand that can realise an earlier row; a play realising only this row is
  rejected.

The hands and plays are written by hand from the tables; before asking the engine, each test checks its
own data with an independent reading of the rules in this file (`first_row`, a brute-force search over
components, and `dtr5_best`, a brute force over every split of every n-card choice for D-TR-5), so a
wrong expectation fails as "spec" and not as an engine bug.

Default context: level 8, hearts trump (so 8 is not in spades and 7S-9S is a gap, 不能隔张).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache

import pytest

from paiju.rules.cards import BIG_JOKER, Card, Cards, Rank, Suit, card, parse_cards
from paiju.rules.tractor.combos import Combo, Kind, classify, trick_winner
from paiju.rules.tractor.follow import best_realisation, counts_of, make_follow, requirement
from paiju.rules.tractor.order import Trumps

from .oracle import Value, accepted, add_part, choices, less, o_class, o_next

L8H = Trumps(Rank.EIGHT, Suit.HEARTS)
L3H = Trumps(Rank.THREE, Suit.HEARTS)
SPADES = int(Suit.SPADES)


def cs(text: str) -> Cards:
    """Cards in the notation; ``5Sx4`` repeats a card."""
    out: list[str] = []
    for token in text.split():
        if "x" in token:
            name, times = token.split("x")
            out += [name] * int(times)
        else:
            out.append(token)
    return parse_cards(" ".join(out), decks=6)


# --- an independent reading of §4 adjacency and §6 ----------------------------------------------------


def runs_in(have: Counter[Card], unit: int, places: int, tr: Trumps) -> Iterator[tuple[Card, ...]]:
    """Runs of ``places`` consecutive cards, each held ``unit`` times or more (§4, D-TR-3)."""
    for start in sorted(have):
        run = [start]
        while len(run) < places:
            nxt = o_next(run[-1], tr)
            if nxt is None:
                break
            run.append(nxt)
        if len(run) != places or any(have[x] < unit for x in run):
            continue
        if places > 2 and card(Rank.TWO, tr.trump) in run:
            continue  # D-TR-3: A-2 of trumps only as exactly two units
        yield tuple(run)


Component = tuple[int, int]  # (unit, places); (1, 1) is "x"
BASE: dict[str, Component] = {
    "x": (1, 1),
    "P": (2, 1),
    "T": (3, 1),
    "B4": (4, 1),
    "B5": (5, 1),
    "B6": (6, 1),
    "TR2": (2, 2),
    "TR3": (2, 3),
    "TR4": (2, 4),
    "ST3×2": (3, 2),
}


def parse_row(text: str) -> list[list[Component]]:
    """A row as written in rules §6, e.g. ``(TR2|B4) P P`` or ``P×3 x×2``: its alternatives."""
    alternatives: list[list[Component]] = [[]]
    for token in text.split():
        if token.startswith("("):
            options = [BASE[t] for t in token.strip("()").split("|")]
            alternatives = [[*alt, o] for alt in alternatives for o in options]
            continue
        name, times = token, 1
        if token not in BASE and "×" in token:
            name, count = token.rsplit("×", 1)
            times = int(count)
        alternatives = [alt + [BASE[name]] * times for alt in alternatives]
    return alternatives


def embeds(have: Counter[Card], comps: Sequence[Component], tr: Trumps) -> bool:
    """Whether ``have`` holds disjoint cards forming every component (x = any card), by brute force."""
    structured = [c for c in comps if c != (1, 1)]
    free = len(comps) - len(structured)
    if not structured:
        return sum(have.values()) >= free
    (unit, places), rest = structured[0], structured[1:]
    for run in runs_in(have, unit, places, tr):
        left = have.copy()
        for x in run:
            left[x] -= unit
        if embeds(+left, [*rest, *[(1, 1)] * free], tr):
            return True
    return False


def realises(cards: Sequence[Card], row: str, tr: Trumps) -> bool:
    return any(embeds(Counter(cards), alt, tr) for alt in parse_row(row))


def first_row(cards: Sequence[Card], rows: Sequence[str], tr: Trumps) -> int:
    return next(i for i, row in enumerate(rows) if realises(cards, row, tr))


# D-TR-5 by brute force: every split of every n-card choice


def _runs_through(x: Card, rest: Counter[Card], unit: int, tr: Trumps) -> Iterator[tuple[Card, ...]]:
    for places in range(2, 16):
        for run in runs_in(rest, unit, places, tr):
            if x in run:
                yield run


def _parts_with(x: Card, rest: Counter[Card], m: int, tr: Trumps) -> list[tuple[Cards, tuple[int, int] | None, int]]:
    """Every part of a split that contains x: (cards, structure value or None, group value)."""
    parts: list[tuple[Cards, tuple[int, int] | None, int]] = []
    for s in range(1, rest[x] + 1):
        parts.append(((x,) * s, None, min(s, m) if s >= 2 else 0))  # a group; singles count nothing
    for s in (4, 6):
        if rest[x] >= s:
            parts.append(((x,) * s, (s, int(m == 2)), 0))  # a bomb counts as a tractor, unit 2
    for unit in range(2, rest[x] + 1):
        for run in _runs_through(x, rest, unit, tr):
            parts.append((tuple(y for y in run for _ in range(unit)), (unit * len(run), int(unit == m)), 0))
    return parts


@cache
def _values(items: tuple[tuple[Card, int], ...], m: int, tr: Trumps) -> frozenset[Value]:
    """Every D-TR-5 value of every split of the multiset ``items`` into structures, groups and singles."""
    if not items:
        return frozenset({((), ())})
    x = items[0][0]
    out: set[Value] = set()
    for taken, structure, group in _parts_with(x, Counter(dict(items)), m, tr):
        for value in _values(less(items, taken), m, tr):
            out.add(add_part(value, structure, group))
    return frozenset(out)


@cache
def _best_upto(items: tuple[tuple[Card, int], ...], budget: int, m: int, tr: Trumps) -> Value:
    """The best D-TR-5 value of a split of at most ``budget`` cards of ``items``, over every split.

    Exhaustive like `_values`, but keeps only the best value of each rest: adding a part to a realisation
    is monotone in the D-TR-5 order (inserting one element into two sorted lists keeps their order), so
    the best of the rest gives the best of the whole. Used for whole hands, where `_values` over every
    n-card choice is slow; `test_the_brute_force_oracle_on_known_values` checks the two agree."""
    if not items or budget == 0:
        return ((), ())
    x = items[0][0]
    best = _best_upto(less(items, (x,)), budget, m, tr)  # one copy of x is not played
    for taken, structure, group in _parts_with(x, Counter(dict(items)), m, tr):
        if len(taken) <= budget:
            best = max(best, add_part(_best_upto(less(items, taken), budget - len(taken), m, tr), structure, group))
    return best


def dtr5_value(cards: Sequence[Card], m: int, tr: Trumps) -> Value:
    return max(_values(tuple(sorted(Counter(cards).items())), m, tr))


def dtr5_best(hand: Sequence[Card], n: int, m: int, tr: Trumps) -> Value:
    """The best value of any n cards of the hand."""
    return _best_upto(tuple(sorted(Counter(hand).items())), n, m, tr)


def test_the_brute_force_oracle_on_known_values() -> None:
    """Self-check of this file's D-TR-5 oracle on the values spelled out in D-TR-5."""
    assert dtr5_value(cs("9S 9S TS TS"), 2, L8H) == (((4, 1),), ())
    assert dtr5_value(cs("5Sx4"), 2, L8H) == (((4, 1),), ())
    assert dtr5_value(cs("5Sx5"), 2, L8H) == (((4, 1),), ())  # B5 = TR2 and a single
    assert dtr5_value(cs("5Sx6"), 2, L8H) == (((6, 1),), ())  # B6 = TR3
    assert dtr5_value(cs("5Sx3 6Sx3"), 2, L8H) == (((6, 0),), ())
    assert dtr5_value(cs("5Sx3 6Sx3"), 3, L8H) == (((6, 1),), ())
    assert dtr5_value(cs("7S 7S 9S 9S"), 2, L8H) == ((), (2, 2))
    assert dtr5_value(cs("5S 5S 5S 9S"), 2, L8H) == ((), (2,))
    assert dtr5_value(cs("5S 5S 5S 9S 9S 9S"), 3, L8H) == ((), (3, 3))
    # the whole-hand search agrees with trying every n-card choice
    for hand, n, m in [
        ("KH KH AHx4 2H 2H 9H 9H", 8, 2),
        ("9Sx3 TSx3 JS JS QSx3", 9, 3),
        ("5Sx5 9S 9S TS TS JS 3S", 6, 2),
        ("5Sx4 6Sx4 9S 9S TS TS JS JS", 8, 2),
        ("9S 9S TS TS 3Sx3 QSx3", 6, 3),
    ]:
        cards = cs(hand)
        tr = L8H
        assert dtr5_best(cards, n, m, tr) == max(dtr5_value(s, m, tr) for s in choices(Counter(cards), n)), hand


# --- the priority tables of rules §6, transcribed --------------------------------------------------

TABLES: dict[str, tuple[str, int, list[str]]] = {
    # name: (lead, m for D-TR-5 or 0 for table-only leads, rows first -> last)
    "pair": ("6S 6S", 0, ["P", "x x"]),
    "triple": ("6S 6S 6S", 0, ["T", "P x", "x x x"]),
    "4-bomb": ("6Sx4", 0, ["B4", "T x", "TR2", "P P", "P x x", "x×4"]),
    "5-bomb": ("6Sx5", 0, ["B5", "B4 x", "TR2 x", "T P", "T x x", "P P x", "P x×3", "x×5"]),
    "6-bomb": (
        "6Sx6",
        0,
        [
            "B6",
            "B5 x",
            "ST3×2",
            "TR3",
            "B4 P",
            "B4 x x",
            "TR2 P",
            "TR2 x x",
            "T P x",
            "T x×3",
            "P P P",
            "P P x x",
            "P x×4",
            "x×6",
        ],
    ),
    "44556677": (
        "4S 4S 5S 5S 6S 6S 7S 7S",
        2,
        [
            "TR4",
            "TR3 P",
            "ST3×2 P",
            "(TR2|B4) (TR2|B4)",
            "(TR2|B4) P P",
            "P×4",
            "P×3 x×2",
            "P P x×4",
            "P x×6",
            "x×8",
        ],
    ),
    "444555": (
        "4Sx3 5Sx3",
        3,
        ["ST3×2", "TR3", "(TR2|B4) P", "T T", "T P x", "P P P", "P P x x", "P x×4", "x×6"],
    ),
}

# The D-TR-5 value of each tractor row's own pattern (structures (cards, unit is m), groups min(size, m)).
ROW_VALUES: dict[str, list[Value]] = {
    "44556677": [
        (((8, 1),), ()),
        (((6, 1),), (2,)),
        (((6, 0),), (2,)),
        (((4, 1), (4, 1)), ()),
        (((4, 1),), (2, 2)),
        ((), (2, 2, 2, 2)),
        ((), (2, 2, 2)),
        ((), (2, 2)),
        ((), (2,)),
        ((), ()),
    ],
    "444555": [
        (((6, 1),), ()),
        (((6, 0),), ()),
        (((4, 0),), (2,)),
        ((), (3, 3)),
        ((), (3, 2)),
        ((), (2, 2, 2)),
        ((), (2, 2)),
        ((), (2,)),
        ((), ()),
    ],
}


@dataclass(frozen=True)
class First:
    table: str
    row: int
    hand: str
    good: tuple[str, ...]
    lower: tuple[str, ...] = ()


FIRST: list[First] = [
    # pair
    First("pair", 0, "5S 5S 9S JS", ("5S 5S",), ("5S 9S", "9S JS")),
    First("pair", 1, "5S 9S JS", ("5S 9S", "9S JS")),
    # triple
    First("triple", 0, "5S 5S 5S 9S 9S JS", ("5S 5S 5S",), ("5S 9S 9S",)),
    First("triple", 1, "5S 5S 9S 9S JS", ("5S 5S JS", "5S 9S 9S"), ("5S 9S JS",)),
    First("triple", 2, "5S 9S JS KS", ("5S 9S JS", "9S JS KS")),
    # 4-bomb: B4 → T x → TR2 → P P → P x x → x×4
    First("4-bomb", 0, "5Sx4 9S 9S 9S TS TS", ("5Sx4",), ("9S 9S 9S 5S", "9S 9S TS TS")),
    First("4-bomb", 1, "5S 5S 5S 9S 9S TS TS JS", ("5S 5S 5S JS", "5S 5S 5S 9S"), ("9S 9S TS TS",)),
    First("4-bomb", 2, "9S 9S TS TS 4S 4S QS", ("9S 9S TS TS",), ("4S 4S 9S 9S",)),
    First("4-bomb", 3, "7S 7S 9S 9S JS KS", ("7S 7S 9S 9S",), ("7S 7S JS KS",)),
    First("4-bomb", 4, "4S 4S 9S JS KS", ("4S 4S 9S JS",), ("4S 9S JS KS",)),
    First("4-bomb", 5, "4S 7S 9S JS KS", ("4S 7S 9S JS", "7S 9S JS KS")),
    # 5-bomb: B5 → B4 x → TR2 x → T P → T x x → P P x → P x×3 → x×5
    First("5-bomb", 0, "5Sx5 9Sx4 TS", ("5Sx5",), ("9Sx4 TS",)),
    First("5-bomb", 1, "5Sx4 9S 9S TS TS JS", ("5Sx4 JS", "5Sx4 9S"), ("9S 9S TS TS JS",)),
    First("5-bomb", 2, "9S 9S TS TS 3S 3S 3S JS", ("9S 9S TS TS JS", "9S 9S TS TS 3S"), ("3S 3S 3S 9S 9S",)),
    First("5-bomb", 3, "5S 5S 5S 9S 9S JS KS", ("5S 5S 5S 9S 9S",), ("5S 5S 5S JS KS",)),
    First("5-bomb", 4, "5S 5S 5S 9S JS KS", ("5S 5S 5S 9S JS",), ("5S 5S 9S JS KS",)),
    First("5-bomb", 5, "4S 4S 9S 9S JS KS", ("4S 4S 9S 9S KS",), ("4S 4S 9S JS KS",)),
    First("5-bomb", 6, "4S 4S 7S 9S JS KS", ("4S 4S 9S JS KS",), ("4S 7S 9S JS KS",)),
    First("5-bomb", 7, "3S 4S 7S 9S JS KS", ("3S 4S 7S 9S JS",)),
    # 6-bomb
    First("6-bomb", 0, "5Sx6 9Sx3 TSx3", ("5Sx6",), ("9Sx3 TSx3", "5Sx5 9S")),
    First("6-bomb", 1, "5Sx5 9Sx3 TSx3 JS JS", ("5Sx5 JS", "5Sx5 9S"), ("9Sx3 TSx3",)),
    First("6-bomb", 2, "9Sx3 TSx3 JS JS 5Sx4", ("9Sx3 TSx3",), ("9S 9S TS TS JS JS", "5Sx4 JS JS")),
    First("6-bomb", 3, "9S 9S TS TS JS JS 5Sx4 3S 3S", ("9S 9S TS TS JS JS",), ("5Sx4 3S 3S",)),
    First("6-bomb", 4, "5Sx4 3S 3S 9S 9S TS TS", ("5Sx4 9S 9S", "5Sx4 3S 3S"), ("9S 9S TS TS 3S 3S", "5Sx4 9S TS")),
    First("6-bomb", 5, "5Sx4 9S JS KS", ("5Sx4 9S JS", "5Sx4 JS KS"), ("5S 5S 5S 9S JS KS",)),
    First(
        "6-bomb", 6, "9S 9S TS TS 3S 3S 5S 5S 5S", ("9S 9S TS TS 3S 3S", "9S 9S TS TS 5S 5S"), ("5S 5S 5S 3S 3S 9S",)
    ),
    First("6-bomb", 7, "9Sx3 TS TS 5S 3S", ("9S 9S 9S TS TS 5S", "9S 9S TS TS 5S 3S"), ("9S 9S 9S TS 5S 3S",)),
    First("6-bomb", 8, "5S 5S 5S 9S 9S JS KS", ("5S 5S 5S 9S 9S KS",), ("5S 5S 5S 9S JS KS",)),
    First("6-bomb", 9, "5S 5S 5S 9S JS KS 3S", ("5S 5S 5S 9S JS KS",), ("5S 5S 9S JS KS 3S",)),
    First("6-bomb", 10, "3S 3S 5S 5S 9S 9S JS KS", ("3S 3S 5S 5S 9S 9S",), ("3S 3S 5S 5S JS KS",)),
    First("6-bomb", 11, "3S 3S 5S 5S 9S JS KS", ("3S 3S 5S 5S 9S JS",), ("3S 3S 5S 9S JS KS",)),
    First("6-bomb", 12, "3S 3S 5S 9S JS KS AS", ("3S 3S 5S 9S JS KS",), ("3S 5S 9S JS KS AS",)),
    First("6-bomb", 13, "3S 5S 7S 9S JS KS AS", ("3S 5S 7S 9S JS KS",)),
    # 4-pair tractor 44556677 (D-TR-5 must reproduce the row)
    First("44556677", 0, "9S 9S TS TS JS JS QS QS 3S 3S", ("9S 9S TS TS JS JS QS QS",), ("9S 9S TS TS JS JS 3S 3S",)),
    First("44556677", 1, "9S 9S TS TS JS JS KS KS 3S", ("9S 9S TS TS JS JS KS KS",), ("9S 9S TS TS KS KS JS 3S",)),
    First("44556677", 2, "9Sx3 TSx3 KS KS 3S", ("9Sx3 TSx3 KS KS",), ("9S 9S 9S TS TS KS KS 3S",)),
    First("44556677", 3, "9S 9S TS TS QS QS KS KS 3S", ("9S 9S TS TS QS QS KS KS",), ("9S 9S TS TS QS QS KS 3S",)),
    First("44556677", 3, "9S 9S TS TS 5Sx4 3S", ("9S 9S TS TS 5Sx4",), ("9S 9S TS TS 5S 5S 5S 3S",)),
    First("44556677", 3, "3Sx4 JSx4 AS", ("3Sx4 JSx4",), ("3Sx4 JSx3 AS",)),
    First("44556677", 4, "9S 9S TS TS QS QS AS AS 3S", ("9S 9S TS TS QS QS AS AS",), ("9S 9S QS QS AS AS TS 3S",)),
    First("44556677", 5, "7S 7S 9S 9S JS JS 3S 3S 5S", ("7S 7S 9S 9S JS JS 3S 3S",), ("7S 7S 9S 9S JS JS 3S 5S",)),
    First("44556677", 6, "3S 3S 5S 5S 9S 9S JS KS AS", ("3S 3S 5S 5S 9S 9S JS KS",), ("3S 3S 5S 5S 9S JS KS AS",)),
    First("44556677", 7, "3S 3S 5S 5S 9S JS KS AS 7S", ("3S 3S 5S 5S 9S JS KS AS",), ("3S 3S 5S 9S JS KS AS 7S",)),
    First("44556677", 8, "3S 3S 5S 7S 9S JS KS AS QS", ("3S 3S 5S 7S 9S JS KS AS",), ("3S 5S 7S 9S JS KS AS QS",)),
    First("44556677", 9, "3S 4S 5S 6S 7S 9S TS JS QS", ("3S 4S 5S 6S 7S 9S TS JS",)),
    # special tractor 444555 (D-TR-5 must reproduce the row)
    First("444555", 0, "9Sx3 TSx3 JS JS 3S", ("9Sx3 TSx3",), ("9S 9S TS TS JS JS",)),
    First("444555", 1, "9S 9S TS TS JS JS 3Sx3 KS", ("9S 9S TS TS JS JS",), ("9S 9S TS TS 3S 3S",)),
    First("444555", 2, "9S 9S TS TS 3Sx3 QSx3", ("9S 9S TS TS 3S 3S", "9S 9S TS TS QS QS"), ("3Sx3 QSx3",)),
    First("444555", 2, "9Sx4 3Sx3 6Sx3", ("9Sx4 3S 3S", "9Sx4 6S 6S"), ("3Sx3 6Sx3",)),
    First("444555", 3, "3Sx3 6Sx3 9S 9S QS", ("3Sx3 6Sx3",), ("3Sx3 9S 9S QS",)),
    First("444555", 4, "3Sx3 6S 6S 9S 9S QS", ("3Sx3 6S 6S QS", "3Sx3 9S 9S 6S"), ("3S 3S 6S 6S 9S 9S",)),
    First("444555", 5, "3S 3S 6S 6S 9S 9S QS AS", ("3S 3S 6S 6S 9S 9S",), ("3S 3S 6S 6S QS AS",)),
    First("444555", 6, "3S 3S 6S 6S 9S QS AS", ("3S 3S 6S 6S 9S QS",), ("3S 3S 6S 9S QS AS",)),
    First("444555", 7, "3S 3S 6S 9S JS KS AS", ("3S 3S 6S 9S JS KS",), ("3S 6S 9S JS KS AS",)),
    First("444555", 8, "3S 6S 7S 9S JS KS AS", ("3S 6S 7S 9S JS KS",)),
]


@dataclass(frozen=True)
class Higher:
    table: str
    row: int
    hand: str  # realises an earlier row
    play: str  # realises this row and no earlier one


HIGHER: list[Higher] = [
    Higher("pair", 1, "5S 5S 9S JS", "5S 9S"),
    Higher("triple", 1, "5S 5S 5S 9S 9S JS", "5S 9S 9S"),
    Higher("triple", 2, "5S 5S 9S 9S JS", "5S 9S JS"),
    Higher("4-bomb", 1, "5Sx4 9S 9S 9S TS TS", "9S 9S 9S 5S"),
    Higher("4-bomb", 2, "5S 5S 5S 9S 9S TS TS JS", "9S 9S TS TS"),
    Higher("4-bomb", 3, "9S 9S TS TS 4S 4S QS", "4S 4S 9S 9S"),
    Higher("4-bomb", 4, "7S 7S 9S 9S JS KS", "7S 7S JS KS"),
    Higher("4-bomb", 5, "4S 4S 9S JS KS", "4S 9S JS KS"),
    Higher("5-bomb", 1, "5Sx5 9Sx4 TS", "9Sx4 TS"),
    Higher("5-bomb", 2, "5Sx4 9S 9S TS TS JS", "9S 9S TS TS JS"),
    Higher("5-bomb", 3, "9S 9S TS TS 3S 3S 3S JS", "3S 3S 3S 9S 9S"),
    Higher("5-bomb", 4, "5S 5S 5S 9S 9S JS KS", "5S 5S 5S JS KS"),
    Higher("5-bomb", 5, "5S 5S 5S 9S 9S JS KS", "5S 5S 9S 9S JS"),
    Higher("5-bomb", 6, "5S 5S 5S 9S JS KS", "5S 5S 9S JS KS"),
    Higher("5-bomb", 7, "4S 4S 7S 9S JS KS", "4S 7S 9S JS KS"),
    Higher("6-bomb", 1, "5Sx6 9S", "5Sx5 9S"),
    Higher("6-bomb", 2, "5Sx6 9Sx3 TSx3", "9Sx3 TSx3"),
    Higher("6-bomb", 3, "9Sx3 TSx3 JS JS 5Sx4", "9S 9S TS TS JS JS"),
    Higher("6-bomb", 4, "9S 9S TS TS JS JS 5Sx4 3S 3S", "5Sx4 3S 3S"),
    Higher("6-bomb", 5, "5Sx4 3S 3S 9S 9S TS TS", "5Sx4 9S TS"),
    Higher("6-bomb", 6, "5Sx4 3S 3S 9S 9S TS TS", "9S 9S TS TS 3S 3S"),
    Higher("6-bomb", 7, "9S 9S TS TS 3S 3S 5S 5S 5S", "9S 9S TS TS 3S 5S"),
    Higher("6-bomb", 8, "9S 9S TS TS 3S 3S 5S 5S 5S", "5S 5S 5S 3S 3S 9S"),
    Higher("6-bomb", 9, "5S 5S 5S 9S 9S JS KS", "5S 5S 5S 9S JS KS"),
    Higher("6-bomb", 10, "5S 5S 5S 9S 9S JS JS KS", "5S 5S 9S 9S JS JS"),
    Higher("6-bomb", 11, "3S 3S 5S 5S 9S 9S JS KS", "3S 3S 5S 5S JS KS"),
    Higher("6-bomb", 12, "3S 3S 5S 5S 9S JS KS", "3S 3S 5S 9S JS KS"),
    Higher("6-bomb", 13, "3S 3S 5S 9S JS KS AS", "3S 5S 9S JS KS AS"),
    Higher("44556677", 1, "9S 9S TS TS JS JS QS QS 3S 3S", "9S 9S TS TS JS JS 3S 3S"),
    Higher("44556677", 2, "9S 9S TS TS JS JS 3Sx3 4Sx3 KS KS", "3Sx3 4Sx3 KS KS"),
    Higher("44556677", 3, "9Sx3 TSx3 QS QS KS KS 3S", "9S 9S TS TS QS QS KS KS"),
    Higher("44556677", 4, "9S 9S TS TS QS QS KS KS 3S 3S", "9S 9S TS TS QS QS 3S 3S"),
    Higher("44556677", 5, "9S 9S TS TS QS QS AS AS 3S 3S", "9S 9S QS QS AS AS 3S 3S"),
    Higher("44556677", 6, "7S 7S 9S 9S JS JS 3S 3S 5S", "7S 7S 9S 9S JS JS 3S 5S"),
    Higher("44556677", 7, "3S 3S 5S 5S 9S 9S JS KS AS", "3S 3S 5S 5S 9S JS KS AS"),
    Higher("44556677", 8, "3S 3S 5S 5S 9S JS KS AS 7S", "3S 3S 5S 9S JS KS AS 7S"),
    Higher("44556677", 9, "3S 3S 5S 7S 9S JS KS AS QS", "3S 5S 7S 9S JS KS AS QS"),
    Higher("444555", 1, "9Sx3 TSx3 JS JS 3S", "9S 9S TS TS JS JS"),
    Higher("444555", 2, "9S 9S TS TS JS JS 3Sx3 KS", "9S 9S TS TS 3S 3S"),
    Higher("444555", 3, "9S 9S TS TS 3Sx3 QSx3", "3Sx3 QSx3"),
    Higher("444555", 4, "3Sx3 6Sx3 9S 9S QS", "3Sx3 9S 9S QS"),
    Higher("444555", 5, "3Sx3 6S 6S 9S 9S QS", "3S 3S 6S 6S 9S 9S"),
    Higher("444555", 6, "3S 3S 6S 6S 9S 9S QS AS", "3S 3S 6S 6S QS AS"),
    Higher("444555", 7, "3S 3S 6S 6S 9S QS AS", "3S 3S 6S 9S QS AS"),
    Higher("444555", 8, "3S 3S 6S 9S JS KS AS", "3S 6S 9S JS KS AS"),
]


def _id(spec: First | Higher) -> str:
    rows = TABLES[spec.table][2]
    return f"{spec.table}:{rows[spec.row]}"


def _lead(table: str) -> tuple[Combo, int, list[str]]:
    lead_text, m, rows = TABLES[table]
    return classify(cs(lead_text), L8H), m, rows


def _check_copies(lead_text: str, hand: Cards) -> None:
    both = Counter(cs(lead_text)) + Counter(hand)
    assert max(both.values()) <= 6, "spec: more than six copies between the lead and the hand"


@pytest.mark.parametrize("spec", FIRST, ids=[_id(s) for s in FIRST])
def test_first_realisable_row(spec: First) -> None:
    lead, m, rows = _lead(spec.table)
    hand = cs(spec.hand)
    _check_copies(TABLES[spec.table][0], hand)
    n = lead.size
    assert len(hand) > n, "spec: case 2 needs more than n cards of the suit"
    assert first_row(hand, rows, L8H) == spec.row, "spec: the hand's first realisable row"
    if m:
        assert dtr5_best(hand, n, m, L8H) == ROW_VALUES[spec.table][spec.row], "spec: D-TR-5 value of the hand"
    # the engine
    req = requirement(lead, hand, L8H)
    assert (req.count, req.suit_class, req.free_of_suit) == (n, SPADES, True)
    assert len(req.must_include) + req.free == n
    if not m:
        assert req.pattern == rows[spec.row]
        assert realises(list(req.must_include) + [BIG_JOKER] * req.free, rows[spec.row], L8H)
    else:
        assert best_realisation(counts_of(hand), n, m, L8H) == ROW_VALUES[spec.table][spec.row]
    for good in spec.good:
        play = cs(good)
        assert len(play) == n, f"spec: {good} has {len(play)} cards"
        assert not Counter(play) - Counter(hand), f"spec: {good} is held"
        assert first_row(play, rows, L8H) == spec.row, f"spec: {good} realises row {spec.row}"
        if m:
            assert dtr5_value(play, m, L8H) == ROW_VALUES[spec.table][spec.row], f"spec: {good} D-TR-5 value"
        assert accepted(lead, hand, play, L8H), f"{good} realises {rows[spec.row]} and must be accepted"
    for low in spec.lower:
        play = cs(low)
        assert len(play) == n, f"spec: {low} has {len(play)} cards"
        assert not Counter(play) - Counter(hand), f"spec: {low} is held"
        assert first_row(play, rows, L8H) > spec.row, f"spec: {low} realises only later rows"
        if m:
            assert dtr5_value(play, m, L8H) < ROW_VALUES[spec.table][spec.row], f"spec: {low} D-TR-5 value"
        assert not accepted(lead, hand, play, L8H), f"{low} realises only a later row than {rows[spec.row]}"


@pytest.mark.parametrize("spec", HIGHER, ids=[_id(s) for s in HIGHER])
def test_higher_row_wins(spec: Higher) -> None:
    lead, m, rows = _lead(spec.table)
    hand, play = cs(spec.hand), cs(spec.play)
    _check_copies(TABLES[spec.table][0], hand)
    n = lead.size
    assert len(hand) > n and len(play) == n
    assert not Counter(play) - Counter(hand), "spec: the play is held"
    assert first_row(hand, rows, L8H) < spec.row, "spec: the hand realises an earlier row"
    assert first_row(play, rows, L8H) == spec.row, "spec: the play realises this row"
    if m:
        assert dtr5_value(play, m, L8H) == ROW_VALUES[spec.table][spec.row]
        assert dtr5_best(hand, n, m, L8H) > ROW_VALUES[spec.table][spec.row]
    assert not accepted(lead, hand, play, L8H), f"{spec.play}: {rows[spec.row]} while the hand has an earlier row"
    # and what the engine asks for instead is accepted
    assert accepted(lead, hand, make_follow(lead, hand, L8H), L8H)


def test_every_row_of_every_table_is_covered() -> None:
    for table, (_, _, rows) in TABLES.items():
        assert {s.row for s in FIRST if s.table == table} == set(range(len(rows))), table
        assert {s.row for s in HIGHER if s.table == table} == set(range(1, len(rows))), table


def test_the_engine_tables_are_the_rules_tables() -> None:
    """`PRIORITIES` / `PATTERN_NAMES` as data: the same rows, in the same order, as rules §6."""
    from paiju.rules.tractor.follow import PATTERN_NAMES, PRIORITIES

    for table in ("pair", "triple", "4-bomb", "5-bomb", "6-bomb"):
        lead, _, rows = _lead(table)
        key = (lead.kind, lead.size)
        assert list(PATTERN_NAMES[key]) == rows
        engine_rows = [
            sorted(sorted((c.unit, c.places) for c in alt) for alt in alternatives) for alternatives in PRIORITIES[key]
        ]
        mine = [sorted(sorted(alt) for alt in parse_row(row)) for row in rows]
        assert engine_rows == mine, table


# --- D-TR-5 for other tractor leads ----------------------------------------------------------------


@dataclass(frozen=True)
class Ladder:
    name: str
    lead: str
    hand: str
    value: Value  # the hand's best realisation, by D-TR-5
    good: tuple[str, ...]
    bad: tuple[str, ...] = ()
    tr: Trumps = L8H


LADDERS: list[Ladder] = [
    # TR2 5566: TR2|B4 → P P → P x x → x×4
    Ladder("TR2: TR2", "4S 4S 5S 5S", "9S 9S TS TS 3S 3S QS", (((4, 1),), ()), ("9S 9S TS TS",), ("3S 3S 9S 9S",)),
    Ladder(
        "TR2: B4 = TR2", "4S 4S 5S 5S", "3Sx4 9S 9S TS TS", (((4, 1),), ()), ("3Sx4", "9S 9S TS TS"), ("3S 3S 9S 9S",)
    ),
    Ladder("TR2: P P (7799)", "4S 4S 5S 5S", "7S 7S 9S 9S JS", ((), (2, 2)), ("7S 7S 9S 9S",), ("7S 7S 9S JS",)),
    Ladder("TR2: T counts as P", "4S 4S 5S 5S", "3Sx3 9S JS", ((), (2,)), ("3S 3S 3S 9S", "3S 3S 9S JS")),
    Ladder("TR2: P x x", "4S 4S 5S 5S", "3S 3S 9S QS AS", ((), (2,)), ("3S 3S 9S QS", "3S 3S QS AS"), ("3S 9S QS AS",)),
    Ladder("TR2: x×4", "4S 4S 5S 5S", "3S 9S JS KS AS", ((), ()), ("3S 9S JS KS", "9S JS KS AS")),
    Ladder(
        "TR2 trump: AA22", "3H 3H 4H 4H", "AH AH 2H 2H 8S 8C 5D", (((4, 1),), ()), ("AH AH 2H 2H",), ("AH AH 8S 8C",)
    ),
    Ladder(
        "TR2 trump: KKAA22",
        "3H 3H 4H 4H",
        "KH KH AH AH 2H 2H 3H",
        (((4, 1),), ()),
        ("AH AH 2H 2H", "KH KH AH AH"),
        ("KH KH 2H 2H",),
    ),
    Ladder(
        "TR2 trump: off-suit level pairs do not link",
        "3H 3H 4H 4H",
        "8S 8S 8C 8C 2S 2C 5H",
        ((), (2, 2)),
        ("8S 8S 8C 8C",),
        ("8S 8S 2S 2C",),
    ),
    Ladder("TR2 trump: jokers", "3H 3H 4H 4H", "SJ SJ BJ BJ 9H", (((4, 1),), ()), ("SJ SJ BJ BJ",), ("SJ SJ BJ 9H",)),
    Ladder(
        "TR2 trump: L = A, no AA22",
        "3D 3D 4D 4D",
        "AD AD 2D 2D KD",
        ((), (2, 2)),
        ("AD AD 2D 2D",),
        ("AD 2D 2D KD",),
        Trumps(Rank.ACE, Suit.DIAMONDS),
    ),
    # TR3 556677: TR3|B6 → ST3×2 → (TR2|B4) P → (TR2|B4) x x → P P P → P P x x → P x×4 → x×6
    Ladder(
        "TR3: TR3",
        "3S 3S 4S 4S 5S 5S",
        "9S 9S TS TS JS JS 6Sx3 QS",
        (((6, 1),), ()),
        ("9S 9S TS TS JS JS",),
        ("6S 6S 6S 9S 9S QS",),
    ),
    Ladder("TR3: B6 over ST3×2", "3S 3S 4S 4S 5S 5S", "6Sx6 9Sx3 TSx3", (((6, 1),), ()), ("6Sx6",), ("9Sx3 TSx3",)),
    Ladder(
        "TR3: B6 = TR3", "3S 3S 4S 4S 5S 5S", "6Sx6 9S 9S TS TS JS JS", (((6, 1),), ()), ("6Sx6", "9S 9S TS TS JS JS")
    ),
    Ladder(
        "TR3: ST3×2", "3S 3S 4S 4S 5S 5S", "9Sx3 TSx3 6S 6S QS", (((6, 0),), ()), ("9Sx3 TSx3",), ("9S 9S TS TS 6S 6S",)
    ),
    Ladder(
        "TR3: (TR2|B4) P",
        "3S 3S 4S 4S 5S 5S",
        "9S 9S TS TS 6S 6S QS",
        (((4, 1),), (2,)),
        ("9S 9S TS TS 6S 6S",),
        ("9S 9S TS TS 6S QS",),
    ),
    Ladder("TR3: B4 P", "3S 3S 4S 4S 5S 5S", "6Sx4 9S 9S QS", (((4, 1),), (2,)), ("6Sx4 9S 9S",), ("6Sx4 9S QS",)),
    Ladder(
        "TR3: (TR2|B4) x x",
        "3S 3S 4S 4S 5S 5S",
        "9S 9S TS TS 6S QS AS",
        (((4, 1),), ()),
        ("9S 9S TS TS 6S QS",),
        ("9S 9S TS 6S QS AS",),
    ),
    Ladder(
        "TR3: (TR2|B4) P over P P P",
        "3S 3S 4S 4S 5S 5S",
        "9S 9S TS TS 6S 6S QS QS",
        (((4, 1),), (2,)),
        ("9S 9S TS TS QS QS",),
        ("9S 9S 6S 6S QS QS",),
    ),
    Ladder(
        "TR3: P P P",
        "3S 3S 4S 4S 5S 5S",
        "6S 6S 9S 9S QS QS AS",
        ((), (2, 2, 2)),
        ("6S 6S 9S 9S QS QS",),
        ("6S 6S 9S 9S QS AS",),
    ),
    Ladder(
        "TR3: P P x x",
        "3S 3S 4S 4S 5S 5S",
        "6S 6S 9S 9S JS KS 7S",
        ((), (2, 2)),
        ("6S 6S 9S 9S JS KS",),
        ("6S 6S 9S JS KS 7S",),
    ),
    Ladder(
        "TR3: P x×4",
        "3S 3S 4S 4S 5S 5S",
        "6S 6S 9S JS KS 7S AS",
        ((), (2,)),
        ("6S 6S 9S JS KS 7S",),
        ("6S 9S JS KS 7S AS",),
    ),
    Ladder("TR3: x×6", "3S 3S 4S 4S 5S 5S", "6S 7S 9S JS KS AS QS", ((), ()), ("6S 7S 9S JS KS AS",)),
    # longer tractors: 从最长的拖拉机跟起 (sizes in cards first)
    Ladder(
        "TR5: TR4 P over ST3×2 TR2",
        "3S 3S 4S 4S 5S 5S 6S 6S 7S 7S",
        "9S 9S TS TS JS JS QS QS AS AS 3Sx3 4Sx3 6S 6S 7S 7S",
        (((8, 1),), (2,)),
        ("9S 9S TS TS JS JS QS QS AS AS",),
        ("3Sx3 4Sx3 6S 6S 7S 7S",),
    ),
    Ladder(
        "TR5: ST4×2 P over TR3 TR2",
        "3S 3S 4S 4S 5S 5S 6S 6S 7S 7S",
        "9Sx4 TSx4 KS KS AS AS JS QS QS",
        (((8, 0),), (2,)),
        ("9Sx4 TSx4 KS KS",),
        ("9S 9S TS TS QS QS KS KS AS AS",),
    ),
    Ladder(
        "TR5: TR5",
        "3S 3S 4S 4S 5S 5S 6S 6S 7S 7S",
        "9S 9S TS TS JS JS QS QS KS KS AS",
        (((10, 1),), ()),
        ("9S 9S TS TS JS JS QS QS KS KS",),
        ("9S 9S TS TS JS JS QS QS KS AS",),
    ),
    Ladder(
        "TR4 trump: jokers do not extend",
        "3H 3H 4H 4H 5H 5H 6H 6H",
        "SJ SJ BJ BJ AH AH KH KH QH",
        (((4, 1), (4, 1)), ()),
        ("SJ SJ BJ BJ AH AH KH KH",),
        ("SJ SJ BJ BJ AH AH KH QH",),
    ),
    # D-TR-3 in following: KKAA22 of trumps is TR2 + P, never TR3; and both of its TR2s can be used at once
    Ladder(
        "TR3 trump: KKAA22 is not TR3",
        "3H 3H 4H 4H 5H 5H",
        "KH KH AH AH 2H 2H 9H 9H",
        (((4, 1),), (2,)),
        ("KH KH AH AH 9H 9H", "AH AH 2H 2H 9H 9H", "KH KH AH AH 2H 2H"),
        ("KH KH 2H 2H 9H 9H",),
    ),
    Ladder(
        "TR4 trump: KKAAAA22 is two TR2s",
        "3H 3H 4H 4H 5H 5H 6H 6H",
        "KH KH AHx4 2H 2H 9H 9H",
        (((4, 1), (4, 1)), ()),
        ("KH KH AHx4 2H 2H",),
        ("AHx4 KH KH 9H 9H", "AHx4 2H 2H 9H 9H"),
    ),
    # special tractors: a structure of the lead's unit first at an equal size
    Ladder(
        "ST4×2: ST4×2 over TR4",
        "3Sx4 4Sx4",
        "9Sx4 TSx4 JS JS QS QS",
        (((8, 1),), ()),
        ("9Sx4 TSx4",),
        ("9S 9S TS TS JS JS QS QS",),
    ),
    Ladder(
        "ST4×2: TR4 over ST3×2 P",
        "3Sx4 4Sx4",
        "9S 9S TS TS JS JS QS QS 5Sx3 6Sx3 AS AS",
        (((8, 0),), ()),
        ("9S 9S TS TS JS JS QS QS",),
        ("5Sx3 6Sx3 AS AS",),
    ),
    Ladder(
        "ST4×2: TR3 P ties ST3×2 P",
        "3Sx4 4Sx4",
        "9S 9S TS TS JS JS AS AS 5Sx3 6Sx3",
        (((6, 0),), (2,)),
        ("9S 9S TS TS JS JS AS AS", "5Sx3 6Sx3 AS AS"),
        ("5Sx3 6Sx3 9S TS",),
    ),
    Ladder("ST4×2: B4 B4", "3Sx4 4Sx4", "9Sx4 JSx4 AS", (((4, 0), (4, 0)), ()), ("9Sx4 JSx4",), ("9Sx4 JSx3 AS",)),
    Ladder(
        "ST3×3: TR4 over ST3×2 T",
        "3Sx3 4Sx3 5Sx3",
        "9Sx3 TSx3 JS JS QSx3",
        (((8, 0),), ()),
        ("9S 9S TS TS JS JS QS QS 9S", "9S 9S TS TS JS JS QS QS QS"),
        ("9Sx3 TSx3 QSx3",),
    ),
    Ladder(
        "ST3×2 trump: jokers",
        "3Hx3 4Hx3",
        "SJx3 BJx3 AH AH KH KH",
        (((6, 1),), ()),
        ("SJx3 BJx3",),
        ("SJ SJ BJ BJ AH AH",),
    ),
]


@pytest.mark.parametrize("spec", LADDERS, ids=[s.name for s in LADDERS])
def test_dtr5_general_rule(spec: Ladder) -> None:
    tr = spec.tr
    lead = classify(cs(spec.lead), tr)
    assert lead.kind in (Kind.TRACTOR, Kind.SPECIAL_TRACTOR)
    hand = tuple(x for x in cs(spec.hand))
    own = [x for x in hand if o_class(x, tr) == lead.suit_class]
    n, m = lead.size, lead.unit
    assert len(own) > n, "spec: case 2"
    assert max((Counter(cs(spec.lead)) + Counter(hand)).values()) <= 6, "spec: six copies at most"
    assert dtr5_best(own, n, m, tr) == spec.value, "spec: the hand's D-TR-5 value"
    assert best_realisation(counts_of(own), n, m, tr) == spec.value
    for good in spec.good:
        play = cs(good)
        assert len(play) == n and dtr5_value(play, m, tr) == spec.value, f"spec: {good}"
        assert accepted(lead, hand, play, tr), f"{good} is as good as the hand allows"
    for bad in spec.bad:
        play = cs(bad)
        assert len(play) == n and dtr5_value(play, m, tr) < spec.value, f"spec: {bad}"
        assert not accepted(lead, hand, play, tr), f"{bad} is worse than the hand allows"


# --- the D-TR-5 rule where the source's two tractor rows name no pattern ------------------------------


def test_dtr5_4_unit_special_tractor_counts_before_tr3_p_for_44556677() -> None:
    """D-TR-5 (a): structures by size in cards: 55556666 (8 cards, unit 4) before 99TTJJ + P (6 cards).

    The source's row for 44556677 (TR4 → TR3 P → …) names no 4-unit special tractor; read literally, this
    hand's first listed row is TR3 P and 55556666 realises only (TR2|B4)(TR2|B4). D-TR-5 decides."""
    lead = classify(cs("4S 4S 5S 5S 6S 6S 7S 7S"), L8H)
    hand = cs("5Sx4 6Sx4 9S 9S TS TS JS JS")
    assert dtr5_best(hand, 8, 2, L8H) == (((8, 0),), ())
    assert first_row(hand, TABLES["44556677"][2], L8H) == 1
    assert accepted(lead, hand, cs("5Sx4 6Sx4"), L8H)
    assert not accepted(lead, hand, cs("9S 9S TS TS JS JS 5S 5S"), L8H)


def test_dtr5_special_tractor_and_two_singles_for_44556677() -> None:
    """D-TR-5 (a): 555666 + x x (a 6-card structure) before any play without it.

    The source's row for 44556677 lists ST3×2 P but not ST3×2 x x; read literally, this hand's first listed
    row is P P x×4, which 55 66 9 J Q K realises. D-TR-5 asks for 555666."""
    lead = classify(cs("4S 4S 5S 5S 6S 6S 7S 7S"), L8H)
    hand = cs("5Sx3 6Sx3 9S JS QS KS")
    assert dtr5_best(hand, 8, 2, L8H) == (((6, 0),), ())
    assert first_row(hand, TABLES["44556677"][2], L8H) == 7  # P P x×4
    assert accepted(lead, hand, cs("5Sx3 6Sx3 9S JS"), L8H)
    assert not accepted(lead, hand, cs("5S 5S 6S 6S 9S JS QS KS"), L8H)


def test_dtr5_b5_counts_as_tr2_and_a_single_for_444555() -> None:
    """D-TR-5: B5 = TR2 and a single, so 9999 J K is as good as 99999 J for a 444555 lead.

    The source's row for 444555 lists T P x but no (TR2|B4) x x; read literally, 9999 J K realises only
    x×6 (after T x×3, not listed either) and would be rejected. D-TR-5 decides: structures first."""
    lead = classify(cs("4Sx3 5Sx3"), L8H)
    hand = cs("9Sx5 JS KS")
    assert dtr5_best(hand, 6, 3, L8H) == (((4, 0),), ())
    assert first_row(hand, TABLES["444555"][2], L8H) == 4  # T P x
    assert accepted(lead, hand, cs("9Sx5 JS"), L8H)
    assert accepted(lead, hand, cs("9Sx4 JS KS"), L8H)


# --- case 1, case 2, singles, counts ------------------------------------------------------------------


def test_case_1_play_all_of_the_suit_and_anything() -> None:
    """§6.1: |H| ≤ n: all of H, and any other cards to make n (四.1 没有同花牌时，任意跟牌)."""
    lead = classify(cs("QS QS"), L8H)
    hand = cs("5S 4D 9D JC 3H")
    assert accepted(lead, hand, cs("5S 4D"), L8H)
    assert accepted(lead, hand, cs("5S 3H"), L8H)
    assert not accepted(lead, hand, cs("4D 9D"), L8H)
    assert not accepted(lead, hand, cs("3H 9D"), L8H)
    req = requirement(lead, hand, L8H)
    assert (req.must_include, req.free, req.free_of_suit) == (cs("5S"), 1, False)


def test_case_1_exactly_n_cards_of_the_suit() -> None:
    lead = classify(cs("QS QS"), L8H)
    hand = cs("5S 9S 4D 4D")
    assert accepted(lead, hand, cs("5S 9S"), L8H)
    assert not accepted(lead, hand, cs("4D 4D"), L8H)
    assert not accepted(lead, hand, cs("5S 4D"), L8H)


def test_case_1_tractor_lead_all_of_the_suit() -> None:
    lead = classify(cs("3S 3S 4S 4S"), L8H)
    hand = cs("5S 9S 9S 3D 4D")
    assert accepted(lead, hand, cs("5S 9S 9S 3D"), L8H)
    assert accepted(lead, hand, cs("5S 9S 9S 4D"), L8H)
    assert not accepted(lead, hand, cs("9S 9S 3D 4D"), L8H)


def test_case_1_void_any_cards_and_trumping() -> None:
    lead = classify(cs("QS QS"), L8H)
    hand = cs("4H 4H 3D 9C")
    for play in ("4H 4H", "3D 9C", "4H 3D"):
        assert accepted(lead, hand, cs(play), L8H), play
    assert trick_winner([cs("QS QS"), cs("4H 4H")], L8H) == 1


def test_case_2_all_n_cards_of_the_suit() -> None:
    """§6.2: |H| > n: exactly n cards of the led suit class."""
    lead = classify(cs("QS QS"), L8H)
    hand = cs("5S 9S JS 4D BJ")
    assert accepted(lead, hand, cs("5S 9S"), L8H)
    assert not accepted(lead, hand, cs("5S 4D"), L8H)
    assert not accepted(lead, hand, cs("5S BJ"), L8H)
    lead4 = classify(cs("3S 3S 4S 4S"), L8H)
    hand4 = cs("9S 9S TS TS JS 4D")
    assert not accepted(lead4, hand4, cs("9S 9S TS 4D"), L8H)
    assert accepted(lead4, hand4, cs("9S 9S TS TS"), L8H)


def test_single_lead_any_card_of_the_suit() -> None:
    lead = classify(cs("QS"), L8H)
    hand = cs("3S AS 4D BJ")
    assert accepted(lead, hand, cs("3S"), L8H)
    assert accepted(lead, hand, cs("AS"), L8H)
    assert not accepted(lead, hand, cs("4D"), L8H)
    assert not accepted(lead, hand, cs("BJ"), L8H)
    void = cs("4D BJ")
    assert accepted(lead, void, cs("4D"), L8H)
    assert accepted(lead, void, cs("BJ"), L8H)
    req = requirement(lead, hand, L8H)
    assert (req.must_include, req.free, req.free_of_suit) == ((), 1, True)


def test_wrong_count_is_rejected() -> None:
    lead = classify(cs("QS QS"), L8H)
    hand = cs("5S 5S 9S 4D")
    for play in ("5S", "5S 5S 9S", "5S 5S 4D", ""):
        assert not accepted(lead, hand, cs(play), L8H), play
    lead1 = classify(cs("QS"), L8H)
    assert not accepted(lead1, hand, cs("5S 5S"), L8H)
    lead4 = classify(cs("3S 3S 4S 4S"), L8H)
    assert not accepted(lead4, cs("9S 9S TS TS JS"), cs("9S 9S TS TS JS"), L8H)
    assert not accepted(lead4, cs("9S 9S"), cs("9S 9S"), L8H)


def test_trump_lead_is_followed_with_trumps() -> None:
    """The led suit class of a trump lead is all trumps: jokers, level cards, 2s and the trump suit."""
    lead = classify(cs("SJ SJ"), L8H)
    hand = cs("8S 8C 2D 3H 5S 5S")
    # no trump pair: any two trumps; the spade pair does not count
    assert accepted(lead, hand, cs("8S 8C"), L8H)
    assert accepted(lead, hand, cs("2D 3H"), L8H)
    assert not accepted(lead, hand, cs("5S 5S"), L8H)
    assert not accepted(lead, hand, cs("8S 5S"), L8H)
    with_pair = cs("8S 8S 8C 2D 3H")
    assert accepted(lead, with_pair, cs("8S 8S"), L8H)
    assert not accepted(lead, with_pair, cs("8S 8C"), L8H)  # off-suit level cards of two suits are not a pair


def test_6_bomb_lead_kkaa22_of_trumps_is_not_tr3() -> None:
    """D-TR-3: AA22 is exactly two units, so KKAA22 realises TR2 P, not TR3 (四.5 3连拖)."""
    lead = classify(cs("3Hx6"), L8H)
    hand = cs("KH KH AH AH 2H 2H 5H 5H 5H 9H")
    assert first_row(hand, TABLES["6-bomb"][2], L8H) == 6
    assert requirement(lead, hand, L8H).pattern == "TR2 P"
    assert accepted(lead, hand, cs("AH AH 2H 2H 5H 5H"), L8H)
    assert accepted(lead, hand, cs("KH KH AH AH 5H 5H"), L8H)
    assert not accepted(lead, hand, cs("5H 5H 5H AH AH 9H"), L8H)


def test_trump_bomb_lead_off_suit_twos_are_not_a_triple() -> None:
    lead = classify(cs("3Hx4"), L8H)
    hand = cs("2S 2C 2D 9H 9H BJ")
    assert requirement(lead, hand, L8H).pattern == "P x x"
    assert accepted(lead, hand, cs("9H 9H 2S 2C"), L8H)
    assert not accepted(lead, hand, cs("2S 2C 2D BJ"), L8H)


# --- the shared scenarios ----------------------------------------------------------------------------


def test_scenario_follow_pair() -> None:
    """tests/scenarios/shared/tractor-follow-pair.json (L = 3, T = H)."""
    lead = classify(cs("QS QS"), L3H)
    seat1, seat2, seat3 = cs("AS AS 5S 9D"), cs("5S 7S 8D 8D"), cs("4H 4H 9C TC")
    assert not accepted(lead, seat1, cs("AS 5S"), L3H)
    assert accepted(lead, seat1, cs("AS AS"), L3H)
    assert not accepted(lead, seat2, cs("5S 8D"), L3H)
    assert accepted(lead, seat2, cs("5S 7S"), L3H)
    assert accepted(lead, seat3, cs("4H 4H"), L3H)
    plays = [cs("QS QS"), cs("AS AS"), cs("5S 7S"), cs("4H 4H")]
    assert trick_winner(plays, L3H) == 3


def test_scenario_special_beats_tractor_last_trick() -> None:
    """tests/scenarios/shared/tractor-special-beats-tractor-last-trick.json (L = 3, T = H)."""
    lead = classify(cs("7S 7S 8S 8S 9S 9S"), L3H)
    assert lead.kind is Kind.TRACTOR
    hands = [cs("5S 5S 5S 6S 6S 6S"), cs("TS TS 4D 6D 8D 9D"), cs("KS KS QS QS JS 4C")]
    for hand in hands:
        assert accepted(lead, hand, hand, L3H)
    # a 555666 hand with one more spade still owes the special tractor (D-TR-5: TR3|B6 → ST3×2 → …)
    bigger = cs("5S 5S 5S 6S 6S 6S JS")
    assert dtr5_best(bigger, 6, 2, L3H) == (((6, 0),), ())
    assert accepted(lead, bigger, cs("5S 5S 5S 6S 6S 6S"), L3H)
    assert not accepted(lead, bigger, cs("5S 5S 6S 6S 6S JS"), L3H)
    assert trick_winner([cs("7S 7S 8S 8S 9S 9S"), *hands], L3H) == 1


# --- requirement / make_follow ---------------------------------------------------------------------


def test_requirement_names_the_row_and_a_realisation() -> None:
    lead = classify(cs("6Sx4"), L8H)
    hand = cs("5S 5S 5S 9S 9S TS TS JS")
    req = requirement(lead, hand, L8H)
    assert req.pattern == "T x"
    assert Counter(req.must_include) == Counter(cs("5S 5S 5S"))
    assert req.free == 1


def test_make_follow_is_accepted_on_every_spec() -> None:
    for spec in FIRST:
        lead, _, _ = _lead(spec.table)
        hand = cs(spec.hand)
        play = make_follow(lead, hand, L8H)
        assert len(play) == lead.size
        assert not Counter(play) - Counter(hand)
        assert accepted(lead, hand, play, L8H), spec


def test_choices_helper_enumerates_sub_multisets() -> None:
    got = sorted(choices(Counter(cs("5S 5S 9S")), 2))
    assert got == sorted([cs("5S 5S"), cs("5S 9S")])
    assert len(list(choices(Counter(cs("5Sx3 9Sx3")), 3))) == 4
