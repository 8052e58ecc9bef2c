"""拖拉机 combinations and who wins a trick (rules `tractor.md` §4-§5).

A combination is described by its unit size ``u`` (1 single, 2 pair/tractor, 3 triple, m for a special
tractor, n for an n-bomb) and unit count ``k``. A lead is exactly one combination, all of one suit class;
throws (甩牌) are illegal (八).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from paiju.rules.cards import Card, format_cards
from paiju.rules.errors import IllegalAction
from paiju.rules.tractor.order import CLASS_NAMES, TRUMP, Trumps

AA22_VALUE = 99
"""Value of the trump tractor ``A A 2 2``: below every other trump tractor (§4, D-TR-3)."""


class Kind(Enum):
    SINGLE = "single"
    PAIR = "pair"  # 对
    TRIPLE = "triple"  # 3张
    BOMB = "bomb"  # 4炸 / 5炸 / 6炸
    TRACTOR = "tractor"  # 拖拉机
    SPECIAL_TRACTOR = "special tractor"  # 特拖


@dataclass(frozen=True, slots=True)
class Combo:
    """One combination: kind, unit size, unit count, suit class and value (its top unit's strength)."""

    kind: Kind
    unit: int
    units: int
    suit_class: int
    value: int

    @property
    def size(self) -> int:
        return self.unit * self.units

    def describe(self) -> str:
        cls = CLASS_NAMES[self.suit_class]
        if self.kind is Kind.BOMB:
            return f"a {self.unit}-bomb of {cls}"
        if self.kind in (Kind.TRACTOR, Kind.SPECIAL_TRACTOR):
            return f"a {self.kind.value} of {self.units} units of {self.unit} in {cls}"
        return f"a {self.kind.value} of {cls}"


_KIND_BY_UNIT = {1: Kind.SINGLE, 2: Kind.PAIR, 3: Kind.TRIPLE}


def classify(cards: Sequence[Card], trumps: Trumps) -> Combo:
    """The single combination these cards form (§4), or `IllegalAction` naming what is wrong."""
    n = len(cards)
    if n == 0:
        raise IllegalAction("a play needs at least one card", rule="§4")
    classes = {trumps.suit_class[c] for c in cards}
    if len(classes) > 1:
        raise IllegalAction(
            f"{format_cards(cards)} mixes {' and '.join(CLASS_NAMES[c] for c in sorted(classes))}: "
            "a lead is one combination of one suit (throws are not allowed, 八 不得甩牌)",
            rule="§4",
        )
    cls = classes.pop()
    groups = Counter(cards)
    sizes = set(groups.values())
    if len(groups) == 1:
        c = cards[0]
        unit = n
        if unit > 6:
            raise IllegalAction(f"there are only six copies of {format_cards([c])}", rule="§1")
        return Combo(_KIND_BY_UNIT.get(unit, Kind.BOMB), unit, 1, cls, trumps.strength[c])
    if len(sizes) != 1 or (unit := sizes.pop()) < 2:
        raise IllegalAction(
            f"{format_cards(cards)} is not one combination: a tractor needs units of equal size (2..6 identical "
            "cards) on consecutive ranks, and throws are not allowed (八 不得甩牌)",
            rule="§4",
        )
    value = run_value(sorted(groups), trumps)
    if value is None:
        raise IllegalAction(
            f"{format_cards(cards)} is not a tractor: its units are not on consecutive ranks "
            "(the level rank breaks a run, 不能隔张; only SJ-BJ and A-2 of trumps link specially, §4)",
            rule="§4",
        )
    kind = Kind.TRACTOR if unit == 2 else Kind.SPECIAL_TRACTOR
    return Combo(kind, unit, len(groups), cls, value)


def run_value(distinct: Iterable[Card], trumps: Trumps) -> int | None:
    """The value of a run of distinct cards if they sit on consecutive places of one chain, else ``None``.

    ``A 2`` of the trump suit is a run of exactly two units, worth less than any other trump run (D-TR-3).
    """
    units = sorted(distinct, key=lambda c: trumps.chain[c] or (-1, -1))
    for low, high in itertools.pairwise(units):
        if not trumps.adjacent(low, high):
            return None
    top = units[-1]
    top_chain = trumps.chain[top]
    assert top_chain is not None
    if top_chain == (TRUMP, 15):  # the 2 of trumps: only in A A 2 2
        return AA22_VALUE if len(units) == 2 else None
    return trumps.strength[top]


def contends(lead: Combo, play: Sequence[Card], trumps: Trumps) -> Combo | None:
    """The combination ``play`` competes with, or ``None`` for a discard 垫牌 (§5).

    A play contends when it is one combination with the lead's card count and a unit size at least the
    lead's, all of the led suit, or all trump against a plain lead (将吃; following rules guarantee the
    follower was void in the led suit).
    """
    if len(play) != lead.size:
        return None
    try:
        combo = classify(play, trumps)
    except IllegalAction:
        return None
    if combo.unit < lead.unit:
        return None
    if combo.suit_class in (lead.suit_class, TRUMP):
        return combo
    return None


def beats(challenger: Combo, best: Combo) -> bool:
    """Whether a contender beats the best play so far: trump over plain, then unit size, then value (§5).

    Equal: the earlier play stays ahead (三个花先出为大).
    """
    a = (challenger.suit_class == TRUMP, challenger.unit, challenger.value)
    b = (best.suit_class == TRUMP, best.unit, best.value)
    return a > b


def trick_winner(plays: Sequence[Sequence[Card]], trumps: Trumps) -> int:
    """Index (0 = the leader) of the play that wins a trick (§5)."""
    lead = best = classify(plays[0], trumps)
    winner = 0
    for i, play in enumerate(plays[1:], start=1):
        combo = contends(lead, play, trumps)
        if combo is not None and beats(combo, best):
            best, winner = combo, i
    return winner
