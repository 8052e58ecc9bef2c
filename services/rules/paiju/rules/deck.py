"""Shuffling, cutting and dealing, shared by both games.

The shuffle takes its randomness from a `SeededRandom` stream: the seed comes in with a command and
is recorded with the dealt hands, so a replay never shuffles again.
"""

from __future__ import annotations

from paiju.rules.cards import Card, Cards, full_decks
from paiju.rules.rng import SeededRandom


def shuffled(decks: int, rng: SeededRandom) -> list[Card]:
    """``decks`` full decks with jokers in a seeded random order (top = index 0)."""
    deck = list(full_decks(decks))
    rng.shuffle(deck)
    return deck


def cut(deck: list[Card], count: int) -> list[Card]:
    """搬牌 / 切牌: move ``count`` cards from the top to the bottom."""
    return deck[count:] + deck[:count]


def deal(deck: list[Card], first_drawer: int, seats: int) -> tuple[Cards, ...]:
    """Deal one card at a time in play order, starting at ``first_drawer``; hands come back sorted."""
    hands: list[list[Card]] = [[] for _ in range(seats)]
    for i, c in enumerate(deck):
        hands[(first_drawer + i) % seats].append(c)
    return tuple(tuple(sorted(h)) for h in hands)
