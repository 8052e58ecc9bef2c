"""An independent reading of §3-§4 (suit classes, adjacency) and helpers for the D-TR-5 brute force,
shared by the follow tests. Written from the rules file, not from the engine, so that the tests check it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

from paiju.rules.cards import BIG_JOKER, RANK_OF, SMALL_JOKER, SUIT_OF, Card, Cards, Rank, card
from paiju.rules.errors import IllegalAction
from paiju.rules.tractor.combos import Combo
from paiju.rules.tractor.follow import check_follow
from paiju.rules.tractor.order import TRUMP, Trumps

Value = tuple[tuple[tuple[int, int], ...], tuple[int, ...]]
"""A D-TR-5 realisation value: (structures, groups), each largest first."""


def accepted(lead: Combo, hand: Sequence[Card], play: Sequence[Card], tr: Trumps) -> bool:
    try:
        check_follow(lead, hand, play, tr)
    except IllegalAction:
        return False
    return True


def o_class(x: Card, tr: Trumps) -> int:
    if x in (SMALL_JOKER, BIG_JOKER) or RANK_OF[x] in (tr.level, Rank.TWO) or SUIT_OF[x] == tr.trump:
        return TRUMP
    suit = SUIT_OF[x]
    assert suit is not None
    return int(suit)


def o_next(x: Card, tr: Trumps) -> Card | None:
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


def add_part(value: Value, structure: tuple[int, int] | None, group: int) -> Value:
    structures, groups = value
    if structure is not None:
        structures = tuple(sorted((*structures, structure), reverse=True))
    if group:
        groups = tuple(sorted((*groups, group), reverse=True))
    return structures, groups


def less(items: tuple[tuple[Card, int], ...], taken: Sequence[Card]) -> tuple[tuple[Card, int], ...]:
    left = Counter(dict(items))
    left.subtract(taken)
    return tuple(sorted((+left).items()))


def choices(have: Counter[Card], n: int) -> Iterator[Cards]:
    kinds = sorted(have)

    def go(i: int, left: int) -> Iterator[tuple[Card, ...]]:
        if left == 0:
            yield ()
            return
        if i == len(kinds):
            return
        for k in range(min(have[kinds[i]], left), -1, -1):
            for tail in go(i + 1, left - k):
                yield (kinds[i],) * k + tail

    yield from go(0, n)
