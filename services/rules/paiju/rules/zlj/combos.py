"""砸六家 card order, combinations, beating and the four-take (rules §2-§5).

Suits never matter in play (§1), so everything here works on *levels*: a card's place in the
砸六家 order ``4 5 6 7 8 9 10 J Q K A 2 3 SJ BJ`` (level 0 is the 4, level 14 the big joker).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum

from paiju.rules.cards import RANK_OF, Card, Rank
from paiju.rules.errors import IllegalAction

LEVELS = 15
FOUR = 0
ACE = 10
TWO = 11
THREE = 12
SMALL_JOKER = 13
BIG_JOKER = 14
LEVEL_NAMES = ("4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "2", "3", "SJ", "BJ")


def _level_table() -> tuple[int, ...]:
    table = []
    for c in range(54):
        rank = RANK_OF[c]
        if rank is Rank.TWO:
            table.append(TWO)
        elif rank is Rank.THREE:
            table.append(THREE)
        elif rank is Rank.SMALL_JOKER:
            table.append(SMALL_JOKER)
        elif rank is Rank.BIG_JOKER:
            table.append(BIG_JOKER)
        else:
            table.append(rank - Rank.FOUR)
    return tuple(table)


LEVEL_OF: tuple[int, ...] = _level_table()
"""``LEVEL_OF[card]``: the card's place in the 砸六家 order (§2), 0 (the 4) .. 14 (big joker)."""


def order(c: Card) -> int:
    """Sort key for output in 砸六家 order (§2)."""
    return LEVEL_OF[c]


class Kind(Enum):
    """The combinations of §3."""

    SINGLE = "single"
    PAIR = "pair"
    STRAIGHT = "straight"  # 顺子
    PAIR_STRAIGHT = "pair-straight"  # 连对
    BOMB = "bomb"  # 炸弹
    JOKER_BOMB = "joker bomb"  # 王炸


@dataclass(frozen=True, slots=True)
class Combo:
    """A legal play: its kind, number of cards and top level."""

    kind: Kind
    size: int
    top: int

    @property
    def is_bomb(self) -> bool:
        return self.kind is Kind.BOMB or self.kind is Kind.JOKER_BOMB

    def describe(self) -> str:
        top = LEVEL_NAMES[self.top]
        if self.kind is Kind.SINGLE:
            return f"a single {top}"
        if self.kind is Kind.PAIR:
            return f"a pair of {top}"
        if self.kind is Kind.STRAIGHT:
            return f"{_a(self.size)} {self.size}-card straight to {top}"
        if self.kind is Kind.PAIR_STRAIGHT:
            return f"{_a(self.size // 2)} {self.size // 2}-pair pair-straight to {top}"
        if self.kind is Kind.BOMB:
            return f"{_a(self.size)} {self.size}-card bomb of {top}"
        return f"{_a(self.size)} {self.size}-card joker bomb"


def _a(n: int) -> str:
    """The article before a number said aloud: "an 8-card", "an 11-card", "an 18-card"; "a 5-card"."""
    return "an" if str(n).startswith("8") or n in (11, 18) else "a"


def level_counts(cards: Iterable[Card]) -> list[int]:
    """How many cards of each level."""
    counts = [0] * LEVELS
    for c in cards:
        counts[LEVEL_OF[c]] += 1
    return counts


def classify(cards: Iterable[Card]) -> Combo:
    """The combination these cards form (§3), or `IllegalAction` naming what is wrong."""
    levels = sorted(LEVEL_OF[c] for c in cards)
    n = len(levels)
    if n == 0:
        raise IllegalAction("a play needs at least one card", rule="§3")
    low, high = levels[0], levels[-1]
    if n == 1:
        return Combo(Kind.SINGLE, 1, low)
    if low >= SMALL_JOKER:
        # only jokers: a joker bomb needs both kinds (D-ZLJ-1)
        if low == SMALL_JOKER and high == BIG_JOKER and n <= 4:
            return Combo(Kind.JOKER_BOMB, n, BIG_JOKER)
        raise IllegalAction(
            "two jokers of one kind are no pair (§3); a joker bomb needs a small and a big joker (D-ZLJ-1)"
        )
    if low == high:
        if n == 2:
            return Combo(Kind.PAIR, 2, low)
        return Combo(Kind.BOMB, n, low)
    if high >= SMALL_JOKER:
        raise IllegalAction("jokers combine only with each other (joker bomb, D-ZLJ-1)", rule="D-ZLJ-1")
    counts: dict[int, int] = {}
    for level in levels:
        counts[level] = counts.get(level, 0) + 1
    per_rank = set(counts.values())
    ranks = len(counts)
    if per_rank in ({1}, {2}):
        name = "straight" if per_rank == {1} else "pair-straight"
        if high > ACE:
            raise IllegalAction(f"2 and 3 never sit in a {name} (§3: ranks 4..A only)", rule="§3")
        if high - low + 1 != ranks:
            raise IllegalAction(f"a {name} needs consecutive ranks (§3)")
        if ranks < 3:
            raise IllegalAction(f"a {name} needs at least 3 ranks (§3)")
        kind = Kind.STRAIGHT if per_rank == {1} else Kind.PAIR_STRAIGHT
        return Combo(kind, n, high)
    raise IllegalAction(
        "not a combination: plays are singles, pairs, straights, pair-straights, bombs and joker bombs (§3)"
    )


def is_four_take(cards: Iterable[Card], current: Combo | None) -> bool:
    """Whether playing ``cards`` on ``current`` is a four-take 4取炸弹 (§5).

    The current play must be a bomb of ``m`` cards whose rank is not 4; the play is exactly ``m-1`` fours.
    """
    if current is None or current.kind is not Kind.BOMB or current.top == FOUR:
        return False
    n = 0
    for c in cards:
        if LEVEL_OF[c] != FOUR:
            return False
        n += 1
    return n == current.size - 1


def beat_failure(play: Combo, current: Combo) -> IllegalAction | None:
    """Why ``play`` does not beat ``current`` (§4), as the refusal to raise, or ``None`` when it does."""
    if current.kind is Kind.JOKER_BOMB:
        return IllegalAction("a joker bomb can never be beaten (D-ZLJ-1)")
    if play.kind is Kind.JOKER_BOMB:
        return None
    if play.kind is Kind.BOMB:
        if current.kind is not Kind.BOMB:
            return None
        if play.size != current.size:
            if play.size > current.size:
                return None
            return IllegalAction(
                f"a bomb beats a bomb by more cards first (D-ZLJ-2): {play.size} cards vs {current.size}",
                rule="D-ZLJ-2",
            )
        if play.top > current.top:
            return None
        return IllegalAction(f"{play.describe()} does not beat {current.describe()}: it needs a higher rank (D-ZLJ-2)")
    if current.kind is Kind.BOMB:
        return IllegalAction(f"only a bigger bomb, a joker bomb or a four-take beats {current.describe()} (§4)")
    if play.kind is not current.kind:
        return IllegalAction(
            f"{play.describe()} cannot beat {current.describe()}: it must be the same kind or a bomb (§4)"
        )
    if play.size != current.size:
        return IllegalAction(f"a {play.kind.value} needs the same length: {play.size} cards vs {current.size} (§4)")
    if play.top > current.top:
        return None
    return IllegalAction(f"{play.describe()} does not beat {current.describe()}: it needs a higher top rank (§4)")


def beats(play: Combo, current: Combo) -> bool:
    """Whether ``play`` beats ``current`` (§4); four-takes are judged by `is_four_take`."""
    kind = play.kind
    ckind = current.kind
    if ckind is Kind.JOKER_BOMB:
        return False
    if kind is Kind.JOKER_BOMB:
        return True
    if kind is Kind.BOMB:
        if ckind is not Kind.BOMB:
            return True
        return play.size > current.size or (play.size == current.size and play.top > current.top)
    return kind is ckind and play.size == current.size and play.top > current.top


# --- generation -------------------------------------------------------------------------------------

Shape = tuple[tuple[int, int], ...]
"""A play up to suits: ``((level, count), ...)`` in increasing level."""


def _runs(counts: Sequence[int], need: int) -> Iterator[Shape]:
    """Every run of 3+ consecutive levels 4..A holding ``need`` cards each (straights, pair-straights)."""
    level = 0
    while level <= ACE:
        if counts[level] < need:
            level += 1
            continue
        end = level
        while end + 1 <= ACE and counts[end + 1] >= need:
            end += 1
        for lo in range(level, end - 1):
            for hi in range(lo + 2, end + 1):
                yield tuple((x, need) for x in range(lo, hi + 1))
        level = end + 1


def _bombs(counts: Sequence[int], current: Combo | None) -> Iterator[Shape]:
    """Bombs and joker bombs that beat ``current`` (every one when ``current`` is not a bomb)."""
    floor_size, floor_top = (
        (current.size, current.top) if current is not None and current.kind is Kind.BOMB else (0, -1)
    )
    for level in range(SMALL_JOKER):
        n = counts[level]
        if n < 3:
            continue
        low = 3 if floor_size < 3 else (floor_size if level > floor_top else floor_size + 1)
        for size in range(low, n + 1):
            yield ((level, size),)
    small, big = counts[SMALL_JOKER], counts[BIG_JOKER]
    for s in range(1, small + 1):
        for b in range(1, big + 1):
            yield ((SMALL_JOKER, s), (BIG_JOKER, b))


def all_plays(counts: Sequence[int]) -> Iterator[Shape]:
    """Every combination a hand with these level counts can lead (§3), as level shapes."""
    for level in range(LEVELS):
        n = counts[level]
        if not n:
            continue
        yield ((level, 1),)
        if n >= 2 and level < SMALL_JOKER:
            yield ((level, 2),)
    yield from _runs(counts, 1)
    yield from _runs(counts, 2)
    yield from _bombs(counts, None)


def four_take_size(current: Combo | None) -> int:
    """How many fours take the current play (§5), or 0 when it cannot be taken."""
    if current is None or current.kind is not Kind.BOMB or current.top == FOUR:
        return 0
    return current.size - 1


def answers(counts: Sequence[int], current: Combo) -> Iterator[Shape]:
    """Every play from these level counts that beats ``current``, four-takes included (§4-§5).

    Generated directly rather than by filtering `all_plays`: this is the hot path of every bot.
    """
    kind = current.kind
    if kind is Kind.JOKER_BOMB:
        return
    top = current.top
    if kind is Kind.SINGLE:
        for level in range(top + 1, LEVELS):
            if counts[level]:
                yield ((level, 1),)
    elif kind is Kind.PAIR:
        for level in range(top + 1, SMALL_JOKER):
            if counts[level] >= 2:
                yield ((level, 2),)
    elif kind is Kind.STRAIGHT or kind is Kind.PAIR_STRAIGHT:
        unit = 1 if kind is Kind.STRAIGHT else 2
        length = current.size // unit
        for high in range(top + 1, ACE + 1):
            low = high - length + 1
            if all(counts[x] >= unit for x in range(low, high + 1)):
                yield tuple((x, unit) for x in range(low, high + 1))
    yield from _bombs(counts, current)
    fours = four_take_size(current)
    if fours and counts[FOUR] >= fours:
        yield ((FOUR, fours),)
