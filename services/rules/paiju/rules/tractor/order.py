"""拖拉机 trumps, card order and adjacency (rules `tractor.md` §3-§4).

A deal's trumps are fixed by its level rank ``L`` and trump suit ``T`` (there is no no-trump deal,
D-TR-2). `Trumps` precomputes, for each of the 54 cards, its *suit class* (trump or its natural suit),
its *strength* inside that class, and its place on an adjacency chain for tractors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from paiju.rules.cards import BIG_JOKER, RANK_OF, SMALL_JOKER, SUIT_OF, Card, Rank, Suit

TRUMP = 4
"""The suit class of trump cards; plain suits are classes 0..3 (`Suit`)."""
CLASS_NAMES = ("spades", "hearts", "clubs", "diamonds", "trump")

LEVEL_RANKS = (
    Rank.THREE,
    Rank.FOUR,
    Rank.FIVE,
    Rank.SIX,
    Rank.SEVEN,
    Rank.EIGHT,
    Rank.NINE,
    Rank.TEN,
    Rank.JACK,
    Rank.QUEEN,
    Rank.KING,
    Rank.ACE,
)
"""The level sequence 3 .. A (§2); index 12 is "past A"."""

_NATURAL = {r: i for i, r in enumerate(LEVEL_RANKS, start=3)}
"""Natural place of the ranks 3..A: 3 -> 3 ... A -> 14 (2 is always trump and has no natural place)."""

# trump strengths, above every plain card (plain strengths are 3..14)
_TRUMP_BASE = 100
_OFF_TWO = 150
_TRUMP_TWO = 151
_OFF_LEVEL = 160
_TRUMP_LEVEL = 161
_SMALL = 170
_BIG = 171

JOKER_CHAIN = 5
"""Chain id of the jokers: ``SJ`` then ``BJ`` (a tractor ``SJ SJ BJ BJ``, §4 (b))."""


@dataclass(frozen=True, slots=True)
class Trumps:
    """The trump context of a deal: level rank ``level`` and trump suit ``trump``."""

    level: Rank
    trump: Suit
    suit_class: tuple[int, ...] = field(init=False, repr=False, compare=False)
    strength: tuple[int, ...] = field(init=False, repr=False, compare=False)
    chain: tuple[tuple[int, int] | None, ...] = field(init=False, repr=False, compare=False)
    """(chain id, place) for cards that can sit in a tractor; ``None`` for those that cannot."""

    def __post_init__(self) -> None:
        if self.level not in _NATURAL:
            raise ValueError(f"a level rank is 3..A, not {self.level.name}")
        classes: list[int] = []
        strengths: list[int] = []
        chains: list[tuple[int, int] | None] = []
        for c in range(54):
            cls, strength, chain = self._describe(Card(c))
            classes.append(cls)
            strengths.append(strength)
            chains.append(chain)
        object.__setattr__(self, "suit_class", tuple(classes))
        object.__setattr__(self, "strength", tuple(strengths))
        object.__setattr__(self, "chain", tuple(chains))

    def _describe(self, c: Card) -> tuple[int, int, tuple[int, int] | None]:
        if c == BIG_JOKER:
            return TRUMP, _BIG, (JOKER_CHAIN, 1)
        if c == SMALL_JOKER:
            return TRUMP, _SMALL, (JOKER_CHAIN, 0)
        rank, suit = RANK_OF[c], SUIT_OF[c]
        assert suit is not None
        if rank == self.level:
            # level cards: trump, never linked to anything (§4: level cards do not link)
            return TRUMP, _TRUMP_LEVEL if suit == self.trump else _OFF_LEVEL, None
        if rank is Rank.TWO:
            if suit == self.trump:
                # the 2 of the trump suit links only to its A, in AA22 (D-TR-3)
                return TRUMP, _TRUMP_TWO, (TRUMP, 15)
            return TRUMP, _OFF_TWO, None
        place = _NATURAL[rank]
        if suit == self.trump:
            return TRUMP, _TRUMP_BASE + place, (TRUMP, place)
        return int(suit), place, (int(suit), place)

    def is_trump(self, c: Card) -> bool:
        return self.suit_class[c] == TRUMP

    def order_key(self, c: Card) -> int:
        """A total sort key for showing cards in this deal's order (lowest first): plain suits, then trumps."""
        cls = self.suit_class[c]
        return (cls if cls != TRUMP else 9) * 1000 + self.strength[c]

    def adjacent(self, low: Card, high: Card) -> bool:
        """Whether ``high``'s unit follows ``low``'s on a chain (不能隔张: the level rank breaks runs).

        The pair ``A`` / ``2`` of the trump suit is adjacent only in a two-unit run (`runs_ok` checks that).
        """
        a, b = self.chain[low], self.chain[high]
        if a is None or b is None or a[0] != b[0]:
            return False
        return b[1] == a[1] + 1
