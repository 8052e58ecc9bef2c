"""Following 跟牌 (rules `tractor.md` §6): what a follower must play, checked exactly.

Let C be the led suit class, n the lead's card count and H the follower's cards of C.

1. ``|H| <= n``: play all of H and any other cards to make n.
2. ``|H| > n``: play exactly n cards of C that realise the *first* pattern of the lead's priority list
   that H can realise (single, pair, triple and bomb leads: the source's tables, `PRIORITIES`);
   for every tractor and special-tractor lead, rule D-TR-5: the play's best realisation must be as good
   as the best that H allows (`best_realisation`).

`check_follow` is the single source of truth; `requirement` describes what is owed and `make_follow`
builds one legal play for bots (property-tested against the validator).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from paiju.rules.cards import Card, Cards, format_cards
from paiju.rules.errors import IllegalAction
from paiju.rules.tractor.combos import Combo, Kind
from paiju.rules.tractor.order import CLASS_NAMES, TRUMP, Trumps

# --- components ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Component:
    """A named part of a follow pattern: ``unit`` identical cards on each of ``places`` consecutive places.

    ``P`` is (2, 1), ``T`` (3, 1), ``B4`` (4, 1) .. ``B6`` (6, 1), ``TR2`` (2, 2), ``TR3`` (2, 3),
    ``ST3x2`` (3, 2); ``x`` is any one card of the suit (``unit`` 1).
    """

    name: str
    unit: int
    places: int

    @property
    def size(self) -> int:
        return self.unit * self.places


P = Component("P", 2, 1)
T = Component("T", 3, 1)
B4 = Component("B4", 4, 1)
B5 = Component("B5", 5, 1)
B6 = Component("B6", 6, 1)
TR2 = Component("TR2", 2, 2)
TR3 = Component("TR3", 2, 3)
ST3x2 = Component("ST3x2", 3, 2)
X = Component("x", 1, 1)

Pattern = tuple[tuple[Component, ...], ...]
"""A pattern: alternatives of component lists; ``(TR2|B4)`` is two alternatives."""


def _p(*parts: Component | tuple[Component, ...]) -> tuple[tuple[Component, ...], ...]:
    """Expand ``(TR2|B4) P``-style parts into the list of alternative component lists."""
    alternatives: list[tuple[Component, ...]] = [()]
    for part in parts:
        options = part if isinstance(part, tuple) else (part,)
        alternatives = [(*alt, o) for alt in alternatives for o in options]
    return tuple(alternatives)


PRIORITIES: dict[tuple[Kind, int], tuple[Pattern, ...]] = {
    # 四.1 出对: pair -> any two cards
    (Kind.PAIR, 2): (_p(P), _p(X, X)),
    # 四.2 出3张
    (Kind.TRIPLE, 3): (_p(T), _p(P, X), _p(X, X, X)),
    # 四.3 4炸
    (Kind.BOMB, 4): (_p(B4), _p(T, X), _p(TR2), _p(P, P), _p(P, X, X), _p(X, X, X, X)),
    # 四.4 5炸
    (Kind.BOMB, 5): (
        _p(B5),
        _p(B4, X),
        _p(TR2, X),
        _p(T, P),
        _p(T, X, X),
        _p(P, P, X),
        _p(P, X, X, X),
        _p(X, X, X, X, X),
    ),
    # 四.5 6炸
    (Kind.BOMB, 6): (
        _p(B6),
        _p(B5, X),
        _p(ST3x2),
        _p(TR3),
        _p(B4, P),
        _p(B4, X, X),
        _p(TR2, P),
        _p(TR2, X, X),
        _p(T, P, X),
        _p(T, X, X, X),
        _p(P, P, P),
        _p(P, P, X, X),
        _p(P, X, X, X, X),
        _p(X, X, X, X, X, X),
    ),
}
"""The source's priority tables for pair, triple and bomb leads (四.1-四.5), first to last. Normative."""

PATTERN_NAMES: dict[tuple[Kind, int], tuple[str, ...]] = {
    (Kind.PAIR, 2): ("P", "x x"),
    (Kind.TRIPLE, 3): ("T", "P x", "x x x"),
    (Kind.BOMB, 4): ("B4", "T x", "TR2", "P P", "P x x", "x×4"),
    (Kind.BOMB, 5): ("B5", "B4 x", "TR2 x", "T P", "T x x", "P P x", "P x×3", "x×5"),
    (Kind.BOMB, 6): (
        "B6",
        "B5 x",
        "ST3×2",
        "TR3",
        "B4 P",
        "B4 x x",
        "TR2 P",
        "TR2 x x",
        "T P x",
        "T x×3",
        "P P P",
        "P P x x",
        "P x×4",
        "x×6",
    ),
}


# --- places, runs and embeddings ------------------------------------------------------------------

Counts = tuple[tuple[Card, int], ...]
"""A multiset of cards of one suit class, as sorted (card, copies) pairs."""


def counts_of(cards: Sequence[Card]) -> Counts:
    return tuple(sorted(Counter(cards).items()))


def _runs(counts: Counts, unit: int, places: int, trumps: Trumps) -> Iterator[tuple[Card, ...]]:
    """Every run of ``places`` consecutive places (§4 adjacency) holding at least ``unit`` cards each."""
    have = [c for c, n in counts if n >= unit]
    if places == 1:
        # weakest first, so that the default follow keeps the strongest groups (§11: the lowest legal follow)
        yield from ((c,) for c in sorted(have, key=lambda c: (trumps.strength[c], c)))
        return
    chain = trumps.chain
    on_chain = sorted((chain[c], c) for c in have if chain[c] is not None)
    for i in range(len(on_chain)):
        run = [on_chain[i][1]]
        for j in range(i + 1, len(on_chain)):
            if not trumps.adjacent(run[-1], on_chain[j][1]):
                break
            run.append(on_chain[j][1])
            if len(run) == places:
                break
        if len(run) == places and _run_allowed(run, trumps):
            yield tuple(run)


def _run_allowed(run: Sequence[Card], trumps: Trumps) -> bool:
    """The 2 of trumps links only in the two-unit run A-2 (D-TR-3)."""
    return len(run) == 2 or all(trumps.chain[c] != (TRUMP, 15) for c in run)


def _remove(counts: Counts, cards: tuple[Card, ...], unit: int) -> Counts:
    taken = dict(counts)
    for c in cards:
        taken[c] -= unit
    return tuple((c, n) for c, n in sorted(taken.items()) if n)


def _total(counts: Counts) -> int:
    return sum(n for _, n in counts)


def embed(counts: Counts, components: Sequence[Component], trumps: Trumps) -> list[tuple[Card, ...]] | None:
    """Disjoint cards of ``counts`` forming every component (``x`` is any card), or ``None``."""
    structured = sorted((c for c in components if c.name != "x"), key=lambda c: -c.size)
    free = sum(1 for c in components if c.name == "x")

    def search(rest: Counts, todo: Sequence[Component]) -> list[tuple[Card, ...]] | None:
        if not todo:
            return [] if _total(rest) >= free else None
        first, *others = todo
        for run in _runs(rest, first.unit, first.places, trumps):
            found = search(_remove(rest, run, first.unit), others)
            if found is not None:
                return [tuple(c for c in run for _ in range(first.unit)), *found]
        return None

    return search(counts, structured)


# --- D-TR-5: realisations of tractor leads --------------------------------------------------------

Realisation = tuple[tuple[tuple[int, int], ...], tuple[int, ...]]
"""(structures as (cards, 1 if its unit is the lead's), groups counted min(size, m)), each largest first."""


def best_realisation(counts: Counts, budget: int, m: int, trumps: Trumps) -> Realisation:
    """The best realisation, by D-TR-5, of at most ``budget`` cards chosen from ``counts``."""
    return _best(counts, budget, m, trumps)[0]


@lru_cache(maxsize=4096)
def _best(counts: Counts, budget: int, m: int, trumps: Trumps) -> tuple[Realisation, tuple[tuple[Card, ...], ...]]:
    """(best realisation, the card groups realising it) — memoised: the search revisits positions. The revisits are
    close together (one search, one trick), so a small memo does it: over a 6,000-move game a requirement cost the
    same with 2,048, 8,192 or 65,536 entries (about 9.4 µs), and a large memo only fills a long-running engine's
    memory for nothing."""
    options = list(_structures(counts, budget, m, trumps))
    if not options:
        return _groups(counts, budget, m, trumps)
    top = max(key for key, _, _ in options)
    best: tuple[Realisation, tuple[tuple[Card, ...], ...]] | None = None
    seen: set[tuple[Counts, tuple[int, ...]]] = set()
    for key, run, unit in options:
        if key != top:
            continue
        cards = tuple(c for c in run for _ in range(unit))
        rest = _remove(counts, run, unit)
        shape = _shape(rest, trumps)
        if shape in seen:
            continue  # an equivalent remainder has been searched already (see `_shape`)
        seen.add(shape)
        (structures, groups), parts = _best(rest, budget - len(cards), m, trumps)
        candidate: tuple[Realisation, tuple[tuple[Card, ...], ...]] = (
            ((key, *structures), groups),
            (cards, *parts),
        )
        if best is None or candidate[0] > best[0]:
            best = candidate
    assert best is not None
    return best


@lru_cache(maxsize=64)
def _neighbours(trumps: Trumps) -> tuple[tuple[Card, ...], ...]:
    """For each card, the cards whose units sit next to its own on a chain (either side)."""
    table = []
    for c in range(54):
        table.append(
            tuple(Card(o) for o in range(54) if trumps.adjacent(Card(c), Card(o)) or trumps.adjacent(Card(o), Card(c)))
        )
    return tuple(table)


def _shape(counts: Counts, trumps: Trumps) -> tuple[Counts, tuple[int, ...]]:
    """What the best realisation of ``counts`` depends on: linked places exactly, isolated places by count.

    A place none of whose chain neighbours holds a pair can only ever form bombs and groups, whose worth
    depends on its count alone; remainders that differ only in which isolated place holds which count
    realise equally well, so the search explores one of them.
    """
    neighbours = _neighbours(trumps)
    pairs = {c for c, n in counts if n >= 2}
    linked: list[tuple[Card, int]] = []
    isolated: list[int] = []
    for c, n in counts:
        if any(o in pairs for o in neighbours[c]):
            linked.append((c, n))
        else:
            isolated.append(n)
    return tuple(linked), tuple(sorted(isolated))


def _structures(
    counts: Counts, budget: int, m: int, trumps: Trumps
) -> Iterator[tuple[tuple[int, int], tuple[Card, ...], int]]:
    """Structures that fit the budget: runs of units >= 2 on >= 2 places, and bombs as pairs (D-TR-5)."""
    for c, n in counts:
        # a bomb of s cards counts as a tractor of floor(s/2) pairs, unit 2: B4 = TR2, B6 = TR3
        for size in (4, 6):
            if n >= size and size <= budget:
                yield (size, 1 if m == 2 else 0), (c,) * (size // 2), 2
    for unit in range(2, 7):
        for places in range(2, budget // unit + 1):
            found = False
            for run in _runs(counts, unit, places, trumps):
                found = True
                yield (unit * places, 1 if unit == m else 0), run, unit
            if not found:
                break


def _groups(counts: Counts, budget: int, m: int, trumps: Trumps) -> tuple[Realisation, tuple[tuple[Card, ...], ...]]:
    """The remaining groups, largest first, each worth min(size, m); singles are worth nothing."""
    groups: list[int] = []
    parts: list[tuple[Card, ...]] = []
    for c, n in sorted(counts, key=lambda cn: (-min(cn[1], m), trumps.strength[cn[0]], cn[0])):
        take = min(n, m, budget)
        if take < 2:
            break
        groups.append(take)
        parts.append((c,) * take)
        budget -= take
    return ((), tuple(groups)), tuple(parts)


# --- the requirement, the validator and the generator ---------------------------------------------


REQUIREMENTS_KEPT = 64
"""How many requirements `requirement` remembers: the asks of one turn come one right after the other."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """What a follower owes (§6): ``must_include`` cards, then ``free`` more cards.

    ``free_of_suit`` tells whether the free cards must be of the led suit class (case 2) or may be any
    (case 1). ``pattern`` names the priority row or D-TR-5 realisation that applies.
    """

    suit_class: int
    count: int
    must_include: Cards
    free: int
    free_of_suit: bool
    pattern: str


def suit_cards(hand: Sequence[Card], suit_class: int, trumps: Trumps) -> list[Card]:
    return [c for c in hand if trumps.suit_class[c] == suit_class]


def _first_pattern(lead: Combo, counts: Counts, trumps: Trumps) -> tuple[int, list[tuple[Card, ...]]]:
    table = PRIORITIES[(lead.kind, lead.size)]
    for i, alternatives in enumerate(table):
        for components in alternatives:
            found = embed(counts, components, trumps)
            if found is not None:
                return i, found
    raise AssertionError("the last row (any cards) is always realisable")


def requirement(lead: Combo, hand: Sequence[Card], trumps: Trumps) -> Requirement:
    """What ``hand`` must play to follow ``lead`` (§6), with one realisation of it as ``must_include``."""
    return _requirement(lead, tuple(hand), trumps)


@lru_cache(maxsize=REQUIREMENTS_KEPT)
def _requirement(lead: Combo, hand: Cards, trumps: Trumps) -> Requirement:
    """`requirement`, remembered: a follower's turn asks for it twice (its legal follow, `make_follow`, and what the
    follow owes, which the engine sends with the seat's turn), and a bot asks again when it chooses."""
    n = lead.size
    own = suit_cards(hand, lead.suit_class, trumps)
    if len(own) <= n:
        return Requirement(lead.suit_class, n, tuple(sorted(own)), n - len(own), False, "all of the suit")
    counts = counts_of(own)
    if lead.kind is Kind.SINGLE:
        return Requirement(lead.suit_class, n, (), n, True, "any card of the suit")
    if lead.kind in (Kind.TRACTOR, Kind.SPECIAL_TRACTOR):
        realisation, parts = _best(counts, n, lead.unit, trumps)
        cards = tuple(sorted(c for part in parts for c in part))
        return Requirement(lead.suit_class, n, cards, n - len(cards), True, describe_realisation(realisation))
    row, embedded = _first_pattern(lead, counts, trumps)
    cards = tuple(sorted(c for part in embedded for c in part))
    return Requirement(lead.suit_class, n, cards, n - len(cards), True, PATTERN_NAMES[(lead.kind, lead.size)][row])


def describe_realisation(realisation: Realisation) -> str:
    structures, groups = realisation
    words = [f"a {size}-card structure" for size, _ in structures]
    words += [f"a group of {g}" for g in groups]
    return " + ".join(words) if words else "any cards of the suit"


def check_follow(lead: Combo, hand: Sequence[Card], play: Sequence[Card], trumps: Trumps) -> None:
    """Raise `IllegalAction` unless ``play`` (held cards) follows ``lead`` correctly from ``hand`` (§6)."""
    n = lead.size
    cls = CLASS_NAMES[lead.suit_class]
    if len(play) != n:
        raise IllegalAction(f"the lead has {n} card{'s' if n > 1 else ''}: play {n}, not {len(play)} (§5)")
    own = suit_cards(hand, lead.suit_class, trumps)
    played_own = suit_cards(play, lead.suit_class, trumps)
    if len(own) <= n:
        if len(played_own) != len(own):
            raise IllegalAction(
                f"you hold {len(own)} card(s) of {cls}, no more than the lead's {n}: play all of them (§6.1)"
            )
        return
    if len(played_own) != n:
        raise IllegalAction(f"you hold more than {n} card(s) of {cls}: all {n} must be {cls} (§6.2)")
    if lead.kind is Kind.SINGLE:
        return
    counts, played = counts_of(own), counts_of(play)
    if lead.kind in (Kind.TRACTOR, Kind.SPECIAL_TRACTOR):
        owed = best_realisation(counts, n, lead.unit, trumps)
        got = best_realisation(played, n, lead.unit, trumps)
        if got < owed:
            raise IllegalAction(
                f"follow {lead.describe()} with {describe_realisation(owed)} of {cls}, which you hold; "
                f"{format_cards(play)} gives only {describe_realisation(got)} (D-TR-5)"
            )
        return
    row, _ = _first_pattern(lead, counts, trumps)
    names = PATTERN_NAMES[(lead.kind, lead.size)]
    if not any(embed(played, components, trumps) is not None for components in PRIORITIES[(lead.kind, lead.size)][row]):
        raise IllegalAction(
            f"follow {lead.describe()} with {names[row]} of {cls}, which you hold "
            f"(priority: {' → '.join(names[: row + 1])}, §6)",
            rule="§6.2",
        )


@lru_cache(maxsize=64)
def _lowest_first(trumps: Trumps) -> tuple[int, ...]:
    """Per card, `make_follow`'s default order of free cards as one number: plain cards before trumps, then by
    strength, then by card."""
    return tuple(trumps.is_trump(Card(c)) * 100_000 + trumps.strength[c] * 100 + c for c in range(54))


def make_follow(lead: Combo, hand: Sequence[Card], trumps: Trumps, filler: Sequence[Card] | None = None) -> Cards:
    """One legal follow: the requirement's cards, then free cards in ``filler``'s order (default: lowest first,
    plain cards before trumps, by strength)."""
    req = requirement(lead, hand, trumps)
    if not req.free:
        return req.must_include  # sorted already
    rest = Counter(hand)
    rest.subtract(req.must_include)
    if filler is None:
        filler = sorted(hand, key=_lowest_first(trumps).__getitem__)
    pool = [c for c in filler if rest[c] > 0]
    chosen: list[Card] = []
    for c in pool:
        if len(chosen) == req.free:
            break
        if rest[c] > 0 and (not req.free_of_suit or trumps.suit_class[c] == req.suit_class):
            chosen.append(c)
            rest[c] -= 1
    return tuple(sorted((*req.must_include, *chosen)))
