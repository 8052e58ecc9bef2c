"""Shuffling, cutting and dealing, and the engine's rock-paper-scissors (rules §9).

All randomness comes from the seed in the command (`SeededRandom`); the dealt hands are recorded in
the `HandsDealt` event, so a replay never shuffles again.
"""

from __future__ import annotations

from paiju.rules import deck
from paiju.rules.cards import Card, Cards
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj.model import DECKS, SEATS

DECK_SIZE = 54 * DECKS
ROCK, PAPER, SCISSORS = 0, 1, 2
THROW_NAMES = ("rock", "paper", "scissors")

SHUFFLE_STREAM = 1
FIRST_DRAWER_STREAM = 2
LEAD_STREAM = 3
TRIBUTE_STREAM = 4
TIMEOUT_STREAM = 5


def stream(seed: int, label: int) -> SeededRandom:
    """An independent random stream for one purpose of a deal seed."""
    return SeededRandom(seed).fork(label)


def shuffled_deck(seed: int) -> list[Card]:
    return deck.shuffled(DECKS, stream(seed, SHUFFLE_STREAM))


def cut_deck(cards: list[Card], count: int) -> list[Card]:
    """搬牌: move ``count`` cards from the top (index 0) to the bottom (§9)."""
    return deck.cut(cards, count)


def deal_hands(cards: list[Card], first_drawer: int) -> tuple[Cards, ...]:
    """Deal one card at a time in play order, starting at ``first_drawer`` (§9)."""
    return deck.deal(cards, first_drawer, SEATS)


def _beats(a: int, b: int) -> bool:
    return (a - b) % 3 == 1


def rock_paper_scissors(
    seats: tuple[int, ...], rng: SeededRandom
) -> tuple[tuple[tuple[tuple[int, int], ...], ...], tuple[int, ...]]:
    """Play rock-paper-scissors among ``seats`` until they are fully ordered (D-ZLJ-8).

    A round with all throws equal or all three shapes is replayed; otherwise the seats with the winning
    shape go before the others and each group is ordered the same way. Returns the rounds and the order.
    """
    rounds: list[tuple[tuple[int, int], ...]] = []

    def order(group: tuple[int, ...]) -> tuple[int, ...]:
        if len(group) == 1:
            return group
        while True:
            throws = tuple((s, rng.below(3)) for s in group)
            rounds.append(throws)
            shapes = {t for _, t in throws}
            if len(shapes) != 2:
                continue
            a, b = shapes
            win = a if _beats(a, b) else b
            winners = tuple(s for s, t in throws if t == win)
            losers = tuple(s for s, t in throws if t != win)
            return order(winners) + order(losers)

    result = order(seats)
    return tuple(rounds), result
