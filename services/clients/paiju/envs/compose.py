"""Composing one 拖拉机 play a card at a time, each step with the cards that keep a legal play reachable.

A lead (§4) or a follow (§6) is chosen card by card, in ascending card id, so that every legal play has exactly one
sequence of steps. `Composer.options` gives the cards that may come next — exactly those for which some legal play
holds the cards composed so far and that card, with only cards of the same or a higher id still to come — and
whether the composed cards may end here (a lead that is one combination; a follow ends by itself at the lead's count).

A follow's legal plays can be astronomically many (an 81-card hand), so they are never listed: the question "can the
composed cards still be completed legally?" is answered from the rule itself.

- §6.1, ``|H| <= n`` (H the follower's cards of the led suit class, n the lead's count): every card of H must be in
  the play, the rest is free.
- §6.2 with a single lead: any n cards of the suit class.
- §6.2 with a pair, triple or bomb lead: the play must realise one alternative of the first row of the lead's
  priority list that H realises (`follow.PRIORITIES`): some disjoint structured components of that alternative must
  fit within the composed cards plus the cards still to come, the cards outside the composed ones no more than the
  places left.
- §6.2 with a tractor or special-tractor lead (D-TR-5): the play's best realisation must equal the best H allows.
  `_best_forced` is the rules core's search for the best realisation (`follow._best`: the largest structure first,
  then the remaining groups) with the composed cards already paid for: a part costs only the cards it adds.

The rules core stays the judge: the environment hands the finished play to ``decide``, which validates it with
`follow.check_follow`; the property test (tests/envs) checks over many seeded deals that every masked-in sequence is
accepted and that every play the core accepts is reachable.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from paiju.rules.cards import CARD_KINDS, Card, Cards
from paiju.rules.tractor.combos import Combo, Kind
from paiju.rules.tractor.follow import (
    PRIORITIES,
    Counts,
    Realisation,
    _first_pattern,
    _remove,
    _runs,
    _structures,
    best_realisation,
    counts_of,
)
from paiju.rules.tractor.game import leads
from paiju.rules.tractor.order import Trumps


def _cost(run: Sequence[Card], unit: int, forced: dict[Card, int]) -> int:
    """The cards a part (``unit`` copies of each card of ``run``) adds beyond the ``forced`` (composed) ones."""
    need = Counter(run)
    return sum(max(0, unit * k - forced.get(c, 0)) for c, k in need.items())


def _take_forced(forced: Counts, run: Sequence[Card], unit: int) -> Counts:
    """The composed cards a part does not cover."""
    left = dict(forced)
    for c, k in Counter(run).items():
        if c in left:
            left[c] = max(0, left[c] - unit * k)
    return tuple((c, n) for c, n in sorted(left.items()) if n)


@lru_cache(maxsize=8192)
def _best_forced(counts: Counts, forced: Counts, budget: int, m: int, trumps: Trumps) -> Realisation:
    """The best realisation (D-TR-5) among the cards ``counts`` of parts that add at most ``budget`` cards to the
    ``forced`` ones (which are among ``counts`` and already in the play)."""
    fmap = dict(forced)
    limit = budget + sum(n for _, n in forced)
    options = [
        (key, run, unit, cost)
        for key, run, unit in _structures(counts, limit, m, trumps)
        if (cost := _cost(run, unit, fmap)) <= budget
    ]
    if not options:
        return _groups_forced(counts, fmap, budget, m)
    top = max(key for key, _, _, _ in options)
    best: Realisation | None = None
    for key, run, unit, cost in options:
        if key != top:
            continue
        structures, groups = _best_forced(
            _remove(counts, run, unit), _take_forced(forced, run, unit), budget - cost, m, trumps
        )
        candidate: Realisation = ((key, *structures), groups)
        if best is None or candidate > best:
            best = candidate
    assert best is not None
    return best


def _groups_forced(counts: Counts, forced: dict[Card, int], budget: int, m: int) -> Realisation:
    """The remaining groups, largest first, each worth ``min(size, m)`` (singles nothing), adding at most ``budget``
    cards beyond the forced ones in all: the largest group within reach first, the cheapest among equals (it leaves
    the most for the rest; each card id gives one group, as in `follow._groups`)."""
    left = dict(counts)
    groups: list[int] = []
    while True:
        pick: tuple[int, int, int] | None = None  # (size, -cost, -card)
        for c, n in left.items():
            f = forced.get(c, 0)
            take = min(n, m, f + budget)
            if take >= 2:
                option = (take, -max(0, take - f), -c)
                if pick is None or option > pick:
                    pick = option
        if pick is None:
            return (), tuple(groups)
        take, minus_cost, minus_card = pick
        groups.append(take)
        budget += minus_cost
        del left[Card(-minus_card)]


def _embeds(counts: Counts, forced: Counts, components: Sequence[tuple[int, int]], budget: int, trumps: Trumps) -> bool:
    """Whether disjoint parts of ``counts`` form every ``(unit, places)`` component, adding at most ``budget``
    cards beyond the ``forced`` ones (`follow.embed` with the composed cards already paid for)."""
    if not components:
        return True
    (unit, places), others = components[0], components[1:]
    fmap = dict(forced)
    for run in _runs(counts, unit, places, trumps):
        cost = _cost(run, unit, fmap)
        if cost <= budget and _embeds(
            _remove(counts, run, unit), _take_forced(forced, run, unit), others, budget - cost, trumps
        ):
            return True
    return False


class Composer:
    """One seat's play composed a card at a time (see the module): a lead when ``lead`` is ``None``, else a follow
    of ``lead`` from ``hand`` under ``trumps``."""

    __slots__ = (
        "_alternatives",
        "_candidates",
        "_class_cards",
        "_held",
        "_owed",
        "cards",
        "hand",
        "lead",
        "trumps",
    )

    def __init__(self, hand: Cards, lead: Combo | None, trumps: Trumps) -> None:
        self.hand = hand
        self.lead = lead
        self.trumps = trumps
        self.cards: list[Card] = []
        self._held = [0] * CARD_KINDS
        for c in hand:
            self._held[c] += 1
        self._candidates: list[Cards] = []
        self._alternatives: tuple[tuple[tuple[int, int], ...], ...] = ()
        self._owed: Realisation | None = None
        self._class_cards = 0
        if lead is None:
            self._candidates = sorted(tuple(sorted(cards)) for cards in leads(hand, trumps))
            return
        cls = lead.suit_class
        own = [c for c in hand if trumps.suit_class[c] == cls]
        self._class_cards = len(own)
        if len(own) <= lead.size or lead.kind is Kind.SINGLE:
            return
        counts = counts_of(own)
        if lead.kind in (Kind.TRACTOR, Kind.SPECIAL_TRACTOR):
            self._owed = best_realisation(counts, lead.size, lead.unit, trumps)
            return
        row, _ = _first_pattern(lead, counts, trumps)
        self._alternatives = tuple(
            tuple(sorted(((c.unit, c.places) for c in alt if c.name != "x"), key=lambda up: -up[0] * up[1]))
            for alt in PRIORITIES[(lead.kind, lead.size)][row]
        )

    @property
    def size(self) -> int | None:
        """The play's card count when it is fixed (a follow: the lead's), else ``None``."""
        return None if self.lead is None else self.lead.size

    def complete(self) -> bool:
        """Whether the composed cards are a whole follow (a lead ends when its composer says so, `options`)."""
        return self.lead is not None and len(self.cards) == self.lead.size

    def add(self, card: Card) -> None:
        if self.cards and card < self.cards[-1]:
            raise ValueError("cards are composed in ascending order")
        self.cards.append(card)

    def options(self) -> tuple[list[Card], bool]:
        """The cards that may come next (ascending ids), and whether the composed cards may end here as a lead."""
        if self.lead is None:
            return self._lead_options()
        if len(self.cards) >= self.lead.size:
            return [], False
        low = self.cards[-1] if self.cards else 0
        composed = Counter(self.cards)
        found = [
            Card(k)
            for k in range(low, CARD_KINDS)
            if self._held[k] > composed[Card(k)] and self._reachable(composed, Card(k))
        ]
        return found, False

    def _lead_options(self) -> tuple[list[Card], bool]:
        prefix = tuple(self.cards)
        depth = len(prefix)
        nexts: set[Card] = set()
        ends = False
        for cards in self._candidates:
            if cards[:depth] != prefix:
                continue
            if len(cards) == depth:
                ends = True
            else:
                nexts.add(cards[depth])
        return sorted(nexts), ends

    def _reachable(self, composed: Counter[Card], k: Card) -> bool:
        """Whether a legal follow holds the composed cards and ``k``, its other cards of ids ``k`` and above."""
        lead = self.lead
        assert lead is not None
        t = self.trumps
        n = lead.size
        cls = lead.suit_class
        forced = composed.copy()
        forced[k] += 1
        placed = len(self.cards) + 1
        # the pool: the composed cards, and every held card from id k up
        pool = {c: (self._held[c] if c >= k else forced.get(Card(c), 0)) for c in range(CARD_KINDS)}
        if sum(pool.values()) < n:
            return False
        if self._class_cards <= n:  # §6.1: every card of the suit class, the rest free
            for c in range(k):
                if t.suit_class[c] == cls and forced.get(Card(c), 0) < self._held[c]:
                    return False
            outside = sum(v for c, v in forced.items() if t.suit_class[c] != cls)
            return outside + self._class_cards <= n
        # §6.2: n cards of the suit class
        if any(t.suit_class[c] != cls for c in forced):
            return False
        pool_class = tuple((Card(c), v) for c, v in pool.items() if v and t.suit_class[c] == cls)
        if sum(v for _, v in pool_class) < n:
            return False
        if lead.kind is Kind.SINGLE:
            return True
        forced_counts = tuple(sorted((c, v) for c, v in forced.items() if v))
        budget = n - placed
        if self._owed is not None:
            return _best_forced(pool_class, forced_counts, budget, lead.unit, t) >= self._owed
        return any(_embeds(pool_class, forced_counts, alt, budget, t) for alt in self._alternatives)
