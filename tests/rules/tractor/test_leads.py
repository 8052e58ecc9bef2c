"""What a 拖拉机 seat may lead (§4), as its legal actions list it (`leads`): checked against a plain enumeration of
every combination of identical cards and every run of units on consecutive places, over random hands of up to six
decks' worth (Hypothesis, derandomized)."""

from __future__ import annotations

import random
from collections import Counter
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from paiju.rules.cards import Card, Cards, Rank, Suit, full_decks
from paiju.rules.errors import IllegalAction
from paiju.rules.tractor.combos import classify
from paiju.rules.tractor.game import leads
from paiju.rules.tractor.order import Trumps

from ...support.profiles import profile

LEVELS = [Rank(r) for r in range(Rank.THREE, Rank.ACE + 1)]


def every_lead(hand: Cards, t: Trumps) -> set[Cards]:
    """Each card set of one kind (1 to as many as held) and each run: for every chain place held, every length and
    every unit the run's cards are all held at least that often, the cards when they classify as a run of that
    many units. Nothing is cut short."""
    held = Counter(hand)
    found: set[Cards] = {(c,) * n for c in held for n in range(1, held[c] + 1)}
    on_chain = sorted((place, c) for c in held if (place := t.chain[c]) is not None)
    for i in range(len(on_chain)):
        for j in range(i + 2, len(on_chain) + 1):
            run = [c for _, c in on_chain[i:j]]
            if not all(t.adjacent(a, b) for a, b in pairwise(run)):
                continue
            for unit in range(2, min(held[c] for c in run) + 1):
                cards = tuple(sorted(c for c in run for _ in range(unit)))
                try:
                    combo = classify(cards, t)
                except IllegalAction:
                    continue
                if combo.units == len(run):
                    found.add(cards)
    return found


@given(st.integers(0, 2**32 - 1), st.integers(1, 81), st.sampled_from(LEVELS), st.sampled_from(list(Suit)))
@profile(300)
def test_leads_are_every_combination_of_one_kind_and_every_run(seed: int, size: int, level: Rank, suit: Suit) -> None:
    rng = random.Random(seed)
    deck = list(full_decks(6))
    # clumps of identical cards, so that pairs, bombs and runs of them occur
    hand: list[Card] = []
    while len(hand) < size:
        hand += [rng.choice(deck)] * rng.randint(1, 4)
    held, t = tuple(sorted(hand[:size])), Trumps(level, suit)
    found = leads(held, t)
    assert len(found) == len(set(found)), "each card set once"
    assert set(found) == every_lead(held, t)
