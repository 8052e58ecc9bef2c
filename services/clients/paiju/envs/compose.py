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


@lru_cache(maxsize=256)
def _suit_class_of(trumps: Trumps, cls: int) -> list[bool]:
    """For each card kind whether it is of suit class ``cls``."""
    return [trumps.suit_class[c] == cls for c in range(CARD_KINDS)]


class Composer:
    """One seat's play composed a card at a time (see the module): a lead when ``lead`` is ``None``, else a follow
    of ``lead`` from ``hand`` under ``trumps``."""

    __slots__ = (
        "_alternatives",
        "_class_above",
        "_class_kinds",
        "_class_total",
        "_composed",
        "_held",
        "_in_class",
        "_owed",
        "_prefixes",
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
        held: Counter[Card] = Counter(hand)
        self._held = held
        self._composed: Counter[Card] = Counter()
        self._prefixes: dict[Cards, tuple[set[Card], bool]] = {}
        self._alternatives: tuple[tuple[tuple[int, int], ...], ...] = ()
        self._owed: Realisation | None = None
        self._class_kinds: list[Card] = []
        self._in_class: list[bool] = []
        self._class_above: dict[Card, int] = {}
        self._class_total = 0
        if lead is None:
            return  # a lead's prefixes are listed once its first card is known (`_lead_options`)
        self._in_class = in_class = _suit_class_of(trumps, lead.suit_class)
        self._class_kinds = kinds = sorted(c for c in held if in_class[c])
        # the cards of the suit class held with ids from k up, for each held kind k of it
        total = 0
        for k in reversed(kinds):
            total += held[k]
            self._class_above[k] = total
        self._class_total = total
        if total <= lead.size or lead.kind is Kind.SINGLE:
            return
        counts = tuple((k, held[k]) for k in kinds)
        if lead.kind in (Kind.TRACTOR, Kind.SPECIAL_TRACTOR):
            self._owed = best_realisation(counts, lead.size, lead.unit, trumps)
            return
        row, _ = _first_pattern(lead, counts, trumps)
        self._alternatives = tuple(
            tuple(sorted(((c.unit, c.places) for c in alt if c.name != "x"), key=lambda up: -up[0] * up[1]))
            for alt in PRIORITIES[(lead.kind, lead.size)][row]
        )
        if any(not alt for alt in self._alternatives):
            self._alternatives = ()  # a row of free cards only (`x x`): nothing structured is owed

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
        self._composed[card] += 1

    def options(self) -> tuple[list[Card], bool]:
        """The cards that may come next (ascending ids), and whether the composed cards may end here as a lead."""
        if self.lead is None:
            return self._lead_options()
        n = self.lead.size
        placed = len(self.cards)
        if placed >= n:
            return [], False
        low = self.cards[-1] if self.cards else 0
        held, composed = self._held, self._composed
        if self._class_total <= n:
            return self._all_of_class(low, n, placed), False
        found: list[Card] = []
        for k in self._class_kinds:
            if k < low or held[k] <= composed[k]:
                continue
            # enough cards of the suit class from id k up (k's own copies already composed aside)
            if self._class_above[k] - composed[k] < n - placed:
                break  # fewer still at higher ids
            if self._owed is None and not self._alternatives:
                found.append(k)  # free cards only (a single lead, a row like `x x`, §6.2)
            elif self._structured(k, n, placed):
                found.append(k)
        return found, False

    def _lead_options(self) -> tuple[list[Card], bool]:
        """Any held card starts a lead (a single); after it, the prefixes of the leads (§4) of its suit class."""
        cards = self.cards
        if not cards:
            return sorted(self._held), False
        first = cards[0]
        if len(cards) == 1 and self._held[first] == 1:
            return [], True  # every longer lead holds at least two copies of its lowest card
        if not self._prefixes:
            t = self.trumps
            cls = t.suit_class[first]
            for lead in leads(tuple(c for c in self.hand if t.suit_class[c] == cls), t):
                ordered = tuple(sorted(lead))
                if ordered[0] != first:
                    continue
                for depth in range(1, len(ordered) + 1):
                    nexts, ends = self._prefixes.get(ordered[:depth], (set(), False))
                    if depth == len(ordered):
                        ends = True
                    else:
                        nexts.add(ordered[depth])
                    self._prefixes[ordered[:depth]] = (nexts, ends)
        nexts, ends = self._prefixes.get(tuple(cards), (set(), False))
        return sorted(nexts), ends

    def _all_of_class(self, low: int, n: int, placed: int) -> list[Card]:
        """§6.1, ``|H| <= n``: every card of the suit class is in the play, the others are free."""
        held, composed, in_class = self._held, self._composed, self._in_class
        missing = next((k for k in self._class_kinds if composed[k] < held[k]), CARD_KINDS)
        outside = sum(1 for c in self.cards if not in_class[c])
        above = sum(v for c, v in held.items() if c >= low)  # cards held with ids from k up
        found: list[Card] = []
        for k in sorted(c for c in held if c >= low):
            if k > missing:
                break  # a card of the suit class below k would be left out
            fits = held[k] > composed[k] and placed - composed[k] + above >= n  # enough cards left from id k up
            if fits and (in_class[k] or (k != missing and outside + 1 + self._class_total <= n)):
                found.append(k)
            above -= held[k]
        return found

    def _structured(self, k: Card, n: int, placed: int) -> bool:
        """Whether the composed cards and ``k`` still allow what the lead's priority row or D-TR-5 requires, with the
        other cards from id ``k`` up."""
        lead = self.lead
        assert lead is not None
        composed, held = self._composed, self._held
        budget = n - placed - 1
        if self._owed is None and all(len(alt) == 1 and alt[0][1] == 1 for alt in self._alternatives):
            # one group of identical cards (P, T, B4 …) and free cards: a kind that can hold the group, the cards it
            # adds within the places left (below k only composed cards count; k's own copies are composed or free)
            units = [alt[0][0] for alt in self._alternatives]
            for c in self._class_kinds:
                if c < k:
                    have = forced = composed[c]
                else:
                    have, forced = held[c], composed[c] + (1 if c == k else 0)
                if any(have >= unit and unit - forced <= budget for unit in units):
                    return True
            return False
        forced_counts = tuple((c, v) for c in self._class_kinds if c <= k and (v := composed[c] + (1 if c == k else 0)))
        pool = tuple((c, held[c] if c >= k else composed[c]) for c in self._class_kinds if c >= k or composed[c])
        t = self.trumps
        if self._owed is not None:
            return _best_forced(pool, forced_counts, budget, lead.unit, t) >= self._owed
        return any(_embeds(pool, forced_counts, alt, budget, t) for alt in self._alternatives)
