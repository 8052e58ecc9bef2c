"""The card model and notation shared by both games (`docs/rules/README.md`, "Card notation").

A card is a small integer, so that hands, plays and piles are cheap to copy, hash and sort:
``rank * 4 + suit`` for the 52 suited cards (ranks 2..A, suits S H C D), 52 for the small joker
(小毛/小王, ``SJ``) and 53 for the big joker (大毛/大王, ``BJ``). Identical copies from several decks
are the same integer; a hand is a multiset, kept as a sorted tuple.

Notation: rank then suit (``QS``, ``TD``, ``10D`` accepted on input), ``SJ`` and ``BJ`` for the jokers,
lists as one space-separated string. Each game supplies its own order for output (`sort_cards`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from enum import IntEnum
from typing import NewType

from paiju.rules.errors import RuleError

Card = NewType("Card", int)
Cards = tuple[Card, ...]


class Suit(IntEnum):
    """The four suits, in the notation's tie-break order S H C D."""

    SPADES = 0
    HEARTS = 1
    CLUBS = 2
    DIAMONDS = 3

    @property
    def letter(self) -> str:
        return "SHCD"[self]


class Rank(IntEnum):
    """Natural ranks; the games impose their own orders on top of these."""

    TWO = 0
    THREE = 1
    FOUR = 2
    FIVE = 3
    SIX = 4
    SEVEN = 5
    EIGHT = 6
    NINE = 7
    TEN = 8
    JACK = 9
    QUEEN = 10
    KING = 11
    ACE = 12
    SMALL_JOKER = 13
    BIG_JOKER = 14

    @property
    def symbol(self) -> str:
        return RANK_SYMBOLS[self]


RANK_SYMBOLS = "23456789TJQKA"
SMALL_JOKER = Card(52)
BIG_JOKER = Card(53)
CARD_KINDS = 54
"""Number of distinct cards in one deck: 52 suited cards and two jokers."""

DECK: Cards = tuple(Card(c) for c in range(CARD_KINDS))
"""One full deck with jokers, in id order."""


def card(rank: Rank, suit: Suit | None = None) -> Card:
    """The card of a rank and suit (no suit for the jokers)."""
    if rank is Rank.SMALL_JOKER:
        return SMALL_JOKER
    if rank is Rank.BIG_JOKER:
        return BIG_JOKER
    if suit is None:
        raise ValueError(f"{rank.name} needs a suit")
    return Card(rank * 4 + suit)


def _rank_table() -> tuple[Rank, ...]:
    return (*tuple(Rank(c // 4) for c in range(52)), Rank.SMALL_JOKER, Rank.BIG_JOKER)


def _suit_table() -> tuple[Suit | None, ...]:
    return (*tuple(Suit(c % 4) for c in range(52)), None, None)


RANK_OF: tuple[Rank, ...] = _rank_table()
"""``RANK_OF[card]`` is the card's natural rank."""
SUIT_OF: tuple[Suit | None, ...] = _suit_table()
"""``SUIT_OF[card]`` is the card's suit, ``None`` for jokers."""


def _names() -> tuple[str, ...]:
    names = [RANK_SYMBOLS[c // 4] + "SHCD"[c % 4] for c in range(52)]
    return (*names, "SJ", "BJ")


CARD_NAMES: tuple[str, ...] = _names()
_BY_NAME: dict[str, Card] = {name: Card(i) for i, name in enumerate(CARD_NAMES)}
_BY_NAME.update({"10" + s: _BY_NAME["T" + s] for s in "SHCD"})


class CardSyntaxError(RuleError):
    """Text that is not a card or card list in the notation of `docs/rules/README.md`."""


def format_card(c: Card) -> str:
    return CARD_NAMES[c]


def parse_card(text: str) -> Card:
    """Parse one card (`QS`, `10D`, `TD`, `SJ`, `BJ`; case-insensitive)."""
    found = _BY_NAME.get(text.strip().upper())
    if found is None:
        raise CardSyntaxError(
            f"'{text}' is not a card: write rank then suit (ranks 2-9 T J Q K A, suits S H C D), or SJ / BJ"
        )
    return found


def parse_cards(text: str, decks: int | None = None) -> Cards:
    """Parse a space-separated card list into a sorted multiset.

    With ``decks`` given, more copies of a card than that many decks hold is rejected
    ("3 copies of KS, but 2 decks hold only 2").
    """
    if not isinstance(text, str):
        raise CardSyntaxError(f"a card list must be a string like '4S 4H KD', not {text!r}")
    cards = tuple(sorted(parse_card(token) for token in text.split()))
    if decks is not None:
        check_copies(cards, decks)
    return cards


def check_copies(cards: Iterable[Card], decks: int) -> None:
    """Reject more copies of any card than ``decks`` decks hold."""
    for c, n in Counter(cards).items():
        if n > decks:
            raise CardSyntaxError(
                f"{n} copies of {format_card(c)}, but {decks} deck{'s' if decks > 1 else ''} hold only {decks}"
            )


def full_decks(decks: int) -> Cards:
    """``decks`` full decks with jokers, as a sorted multiset."""
    return tuple(sorted(DECK * decks))


def sort_cards(cards: Iterable[Card], order: Callable[[Card], int]) -> list[Card]:
    """Sort by a game's order (lowest first), then by suit S H C D for equal order."""
    return sorted(cards, key=lambda c: (order(c), c % 4 if c < 52 else 0))


def format_cards(cards: Iterable[Card], order: Callable[[Card], int] | None = None) -> str:
    """Format cards as notation, sorted by ``order`` when given (else as they come)."""
    seq = sort_cards(cards, order) if order is not None else cards
    return " ".join(CARD_NAMES[c] for c in seq)


def remove_cards(hand: Cards, cards: Iterable[Card]) -> Cards | None:
    """The multiset ``hand`` minus ``cards``, or ``None`` when ``hand`` does not hold them all."""
    rest = list(hand)
    for c in cards:
        try:
            rest.remove(c)
        except ValueError:
            return None
    return tuple(rest)


def add_cards(hand: Cards, cards: Iterable[Card]) -> Cards:
    """The multiset union, sorted."""
    return tuple(sorted((*hand, *cards)))


def missing_cards(hand: Cards, cards: Iterable[Card]) -> list[Card]:
    """The cards of ``cards`` (with multiplicity) that ``hand`` does not hold."""
    have = Counter(hand)
    missing: list[Card] = []
    for c in cards:
        if have[c] > 0:
            have[c] -= 1
        else:
            missing.append(c)
    return missing
