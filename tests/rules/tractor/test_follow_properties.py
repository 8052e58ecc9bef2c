"""Property tests of 拖拉机 following (docs/rules/tractor.md §6, D-TR-5) — Hypothesis, derandomized: no flakes.

A situation is: random trumps (level 3..A, any trump suit); a leader's random hand (clumps of identical cards,
so tractors, special tractors and bombs occur) and a real combination from it as the lead (`classify` must
accept it); a follower's random hand of up to 81 cards drawn from what six decks have left.

Checked:
- `make_follow` is held, has the lead's count, and `check_follow` accepts it;
- mutations of it: a card of a required component swapped for another held card of the suit is accepted
  exactly when an independent reading of §6 says the new play still realises what the hand owes
  (the first realisable table row by a brute-force search, or the D-TR-5 value by brute force over every split);
- wrong counts and off-suit cards while holding more than n of the suit are always rejected;
- on hands with at most 12 cards of the suit, an oracle that tries every n-card choice agrees with
  `best_realisation` and with `check_follow` on every choice.
The oracle is written in this file from the rules text; it shares nothing with the engine but the card model.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from hypothesis import given
from hypothesis import strategies as st

from paiju.rules.cards import DECK, Card, Cards, Rank, Suit, card, full_decks
from paiju.rules.tractor.combos import Combo, Kind, classify
from paiju.rules.tractor.follow import best_realisation, check_follow, counts_of, make_follow, requirement
from paiju.rules.tractor.order import TRUMP, Trumps

from ...support.profiles import profile
from .oracle import Value, accepted, add_part, choices, less, o_class, o_next

LEVELS = [Rank(r) for r in range(Rank.THREE, Rank.ACE + 1)]


# --- the oracle: §3-§4 classes and runs, §6 tables, D-TR-5 ---------------------------------------------


def runs_in(have: Counter[Card], unit: int, places: int, tr: Trumps) -> Iterator[tuple[Card, ...]]:
    for start in sorted(x for x in have if have[x] >= unit):
        run = [start]
        while len(run) < places:
            nxt = o_next(run[-1], tr)
            if nxt is None or have[nxt] < unit:
                break
            run.append(nxt)
        if len(run) != places:
            continue
        if places > 2 and card(Rank.TWO, tr.trump) in run:
            continue  # D-TR-3
        yield tuple(run)


Component = tuple[int, int]
BASE: dict[str, Component] = {
    "x": (1, 1),
    "P": (2, 1),
    "T": (3, 1),
    "B4": (4, 1),
    "B5": (5, 1),
    "B6": (6, 1),
    "TR2": (2, 2),
    "TR3": (2, 3),
    "ST3×2": (3, 2),
}
ROWS: dict[tuple[Kind, int], list[str]] = {
    (Kind.PAIR, 2): ["P", "x x"],
    (Kind.TRIPLE, 3): ["T", "P x", "x x x"],
    (Kind.BOMB, 4): ["B4", "T x", "TR2", "P P", "P x x", "x×4"],
    (Kind.BOMB, 5): ["B5", "B4 x", "TR2 x", "T P", "T x x", "P P x", "P x×3", "x×5"],
    (Kind.BOMB, 6): [
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
    ],
}
"""rules §6, pair / triple / bomb leads, transcribed."""


def parse_row(text: str) -> list[Component]:
    comps: list[Component] = []
    for token in text.split():
        name, times = token, 1
        if token not in BASE and "×" in token:
            name, count = token.rsplit("×", 1)
            times = int(count)
        comps += [BASE[name]] * times
    return comps


def embeds(have: Counter[Card], comps: Sequence[Component], tr: Trumps) -> bool:
    structured = sorted((c for c in comps if c != (1, 1)), key=lambda c: -c[0] * c[1])
    free = len(comps) - len(structured)

    def go(left: Counter[Card], todo: list[Component]) -> bool:
        if not todo:
            return sum(left.values()) >= free
        (unit, places), rest = todo[0], todo[1:]
        for run in runs_in(left, unit, places, tr):
            nxt = left.copy()
            for x in run:
                nxt[x] -= unit
            if go(+nxt, rest):
                return True
        return False

    return go(+have, structured)


def realises(cards: Sequence[Card], row: str, tr: Trumps) -> bool:
    return embeds(Counter(cards), parse_row(row), tr)


def first_row(cards: Sequence[Card], rows: Sequence[str], tr: Trumps) -> int:
    return next(i for i, row in enumerate(rows) if realises(cards, row, tr))


def _runs_through(x: Card, rest: Counter[Card], unit: int, tr: Trumps) -> Iterator[tuple[Card, ...]]:
    for places in range(2, 16):
        found = False
        for run in runs_in(rest, unit, places, tr):
            found = True
            if x in run:
                yield run
        if not found:
            return


def _parts_with(x: Card, rest: Counter[Card], m: int, tr: Trumps) -> list[tuple[Cards, tuple[int, int] | None, int]]:
    """Every part of a split that contains x: (cards, structure value or None, group value)."""
    parts: list[tuple[Cards, tuple[int, int] | None, int]] = []
    for s in range(1, rest[x] + 1):
        parts.append(((x,) * s, None, min(s, m) if s >= 2 else 0))  # a group; singles count nothing
    for s in (4, 6):
        if rest[x] >= s:
            parts.append(((x,) * s, (s, int(m == 2)), 0))  # a bomb counts as a tractor, unit 2
    for unit in range(2, rest[x] + 1):
        for run in _runs_through(x, rest, unit, tr):
            parts.append((tuple(y for y in run for _ in range(unit)), (unit * len(run), int(unit == m)), 0))
    return parts


@lru_cache(maxsize=200_000)
def _values(items: tuple[tuple[Card, int], ...], m: int, tr: Trumps) -> frozenset[Value]:
    """D-TR-5: the value of every split of the multiset into structures, groups and singles."""
    if not items:
        return frozenset({((), ())})
    x = items[0][0]
    out: set[Value] = set()
    for taken, structure, group in _parts_with(x, Counter(dict(items)), m, tr):
        for value in _values(less(items, taken), m, tr):
            out.add(add_part(value, structure, group))
    return frozenset(out)


@lru_cache(maxsize=200_000)
def _best_upto(items: tuple[tuple[Card, int], ...], budget: int, m: int, tr: Trumps) -> Value:
    """The best D-TR-5 value of a split of at most ``budget`` cards of ``items``, over every split (adding a
    part is monotone in the D-TR-5 order, so the best of each rest is enough)."""
    if not items or budget == 0:
        return ((), ())
    x = items[0][0]
    best = _best_upto(less(items, (x,)), budget, m, tr)  # one copy of x is not played
    for taken, structure, group in _parts_with(x, Counter(dict(items)), m, tr):
        if len(taken) <= budget:
            best = max(best, add_part(_best_upto(less(items, taken), budget - len(taken), m, tr), structure, group))
    return best


def dtr5_value(cards: Sequence[Card], m: int, tr: Trumps) -> Value:
    return max(_values(tuple(sorted(Counter(cards).items())), m, tr))


def dtr5_best(hand: Sequence[Card], n: int, m: int, tr: Trumps) -> Value:
    return _best_upto(tuple(sorted(Counter(hand).items())), n, m, tr)


# --- situations ----------------------------------------------------------------------------------------


def combos_in(pool: Counter[Card], cls: int, n: int, tr: Trumps) -> list[Cards]:
    kinds = sorted(x for x in pool if pool[x] > 0 and o_class(x, tr) == cls)
    found: list[Cards] = []
    if n <= 6:
        found += [(x,) * n for x in kinds if pool[x] >= n]
    for unit in range(2, 7):
        if n % unit or n // unit < 2:
            continue
        found += [tuple(sorted(x for x in run for _ in range(unit))) for run in runs_in(pool, unit, n // unit, tr)]
    return found


def clumps(rng: random.Random, pool: Counter[Card], kinds: list[Card], size: int, tr: Trumps) -> Counter[Card]:
    """Up to ``size`` cards of ``kinds`` taken from ``pool`` in clumps of identical copies."""
    got: Counter[Card] = Counter()
    kinds = [x for x in kinds if pool[x] > 0]
    x: Card | None = None
    while sum(got.values()) < size and kinds:
        up = o_next(x, tr) if x is not None else None
        # often continue upwards from the last clump (runs, A-2 of trumps, SJ-BJ), else jump anywhere
        x = up if up in kinds and rng.random() < 0.6 else rng.choice(kinds)
        k = min(pool[x] - got[x], rng.choice((1, 2, 2, 3, 3, 4, 5, 6)), size - sum(got.values()))
        got[x] += k
        kinds = [y for y in kinds if pool[y] - got[y] > 0]
    return got


@dataclass(frozen=True)
class Situation:
    tr: Trumps
    lead_cards: Cards
    lead: Combo
    hand: Cards

    @property
    def own(self) -> Cards:
        return tuple(x for x in self.hand if o_class(x, self.tr) == self.lead.suit_class)

    def __repr__(self) -> str:  # readable falsifying examples
        from paiju.rules.cards import format_cards

        return (
            f"Situation(level={self.tr.level.symbol}, trump={self.tr.trump.letter}, "
            f"lead='{format_cards(self.lead_cards)}', hand='{format_cards(sorted(self.hand))}')"
        )


SHAPES = ["single", "pair", "pair", "triple", "bomb", "bomb", "tractor", "tractor", "tractor", "special", "special"]


def build(seed: int, tr: Trumps, small: bool, max_n: int = 12, tractors: bool = False) -> Situation:
    """One situation from a seed; ``small`` keeps the follower at 12 cards of the led suit or fewer."""
    rng = random.Random(seed)
    pool = Counter(full_decks(6))
    classes = [TRUMP, TRUMP, *(int(s) for s in Suit if s != tr.trump)]  # trumps have the odd links
    cls = rng.choice(classes)
    kinds = [x for x in DECK if o_class(x, tr) == cls]
    leader = clumps(rng, pool, kinds, rng.randint(6, 40), tr)
    by_shape: dict[str, list[Cards]] = {}
    for n in range(1, max_n + 1):
        for combo in combos_in(leader, cls, n, tr):
            groups = Counter(combo)
            unit, places = len(combo) // len(groups), len(groups)
            if places == 1:
                shape = {1: "single", 2: "pair", 3: "triple"}.get(unit, "bomb")
            else:
                shape = "tractor" if unit == 2 else "special"
            by_shape.setdefault(shape, []).append(combo)
    shapes = [s for s in SHAPES if s in by_shape]
    if tractors and any(s in ("tractor", "special") for s in shapes):
        shapes = [s for s in shapes if s in ("tractor", "special")]
    shape = rng.choice(shapes)
    sizes = sorted({len(c) for c in by_shape[shape]})
    size = rng.choice(sizes)  # long leads as often as short ones
    options = [c for c in by_shape[shape] if len(c) == size]
    lead_cards = rng.choice(options)
    lead = classify(lead_cards, tr)
    pool.subtract(lead_cards)
    n = lead.size
    if small:
        suit_size = rng.randint(max(0, n - 2), 12 if not tractors else 30)
    else:
        suit_size = rng.choice([rng.randint(0, n + 3), rng.randint(n, 40), rng.randint(20, 81)])
    own = clumps(rng, pool, kinds, suit_size, tr)
    pool.subtract(own)
    rest = [x for x in pool.elements() if o_class(x, tr) != cls]
    others = rng.randint(max(0, n - sum(own.values())), 81 - sum(own.values()))  # every seat holds ≥ n cards
    hand = tuple(sorted([*own.elements(), *rng.sample(rest, min(others, len(rest)))]))
    return Situation(tr, lead_cards, lead, hand)


@st.composite
def situations(draw: st.DrawFn, small: bool = False, max_n: int = 12, tractors: bool = False) -> Situation:
    tr = Trumps(draw(st.sampled_from(LEVELS)), draw(st.sampled_from(list(Suit))))
    return build(draw(st.integers(0, 2**32 - 1)), tr, small, max_n, tractors)


def owed_row(sit: Situation) -> str | None:
    key = (sit.lead.kind, sit.lead.size)
    if key not in ROWS:
        return None
    rows = ROWS[key]
    return rows[first_row(sit.own, rows, sit.tr)]


def is_tractor_lead(lead: Combo) -> bool:
    return lead.kind in (Kind.TRACTOR, Kind.SPECIAL_TRACTOR)


# --- properties ----------------------------------------------------------------------------------------


@given(situations())
@profile(400)
def test_make_follow_is_always_accepted(sit: Situation) -> None:
    play = make_follow(sit.lead, sit.hand, sit.tr)
    assert len(play) == sit.lead.size
    assert not Counter(play) - Counter(sit.hand), "make_follow plays held cards only"
    own_played = [x for x in play if o_class(x, sit.tr) == sit.lead.suit_class]
    if len(sit.own) > sit.lead.size:
        assert len(own_played) == sit.lead.size
    else:
        assert Counter(own_played) == Counter(sit.own)
    check_follow(sit.lead, sit.hand, play, sit.tr)


@given(situations())
@profile(400)
def test_make_follow_fills_with_the_lowest_cards(sit: Situation) -> None:
    """Beyond the cards its requirement names, `make_follow` plays the follower's lowest eligible cards: plain cards
    before trumps, then by strength (its docstring's order), of the led suit class when the free cards must be."""
    owed = requirement(sit.lead, sit.hand, sit.tr)
    play = make_follow(sit.lead, sit.hand, sit.tr)
    rest = Counter(sit.hand) - Counter(owed.must_include)
    eligible = sorted(
        (c for c in rest.elements() if not owed.free_of_suit or sit.tr.suit_class[c] == owed.suit_class),
        key=lambda c: (sit.tr.is_trump(c), sit.tr.strength[c], c),
    )
    assert Counter(play) - Counter(owed.must_include) == Counter(eligible[: owed.free])
    assert requirement(sit.lead, list(sit.hand), sit.tr) == owed, "the same requirement, however the hand is held"


@given(situations(max_n=10), st.integers(0, 2**32 - 1))
@profile(400)
def test_breaking_a_required_component_is_rejected_exactly_when_the_oracle_says_so(sit: Situation, seed: int) -> None:
    """Swap one card of `requirement`'s realisation (or a free card) for another held card of the suit: the
    result is legal iff it still realises what the hand owes (first realisable row / best D-TR-5 value), by
    the oracle. Breaking a required component the hand cannot rebuild from the play is always rejected."""
    n = sit.lead.size
    if len(sit.own) <= n or sit.lead.kind is Kind.SINGLE:
        return
    tr = sit.tr
    req = requirement(sit.lead, sit.hand, tr)
    play = make_follow(sit.lead, sit.hand, tr)
    row = owed_row(sit)
    if row is not None:
        assert realises(play, row, tr), (sit, row, play)
    else:
        owed = dtr5_value(play, sit.lead.unit, tr)
        assert best_realisation(counts_of(sit.own), n, sit.lead.unit, tr) == owed, (sit, play)
    spare = Counter(sit.own)
    spare.subtract(play)
    free_suit = sorted(x for x in +spare)
    rng = random.Random(seed)
    swaps = [(c, d) for c in sorted(set(req.must_include)) for d in free_suit if d != c]
    free_played = Counter(play)
    free_played.subtract(req.must_include)
    # and the free cards: swapping one of them keeps the play legal, unless the oracle finds otherwise
    free_swaps = [(c, d) for c in sorted(+free_played) for d in free_suit if d != c]
    for c, d in rng.sample(swaps, min(8, len(swaps))) + rng.sample(free_swaps, min(3, len(free_swaps))):
        mutated = list(play)
        mutated.remove(c)
        mutated.append(d)
        expected = realises(mutated, row, tr) if row is not None else dtr5_value(mutated, sit.lead.unit, tr) >= owed
        assert accepted(sit.lead, sit.hand, mutated, tr) == expected, (sit, row, play, c, d)


@given(situations(), st.integers(0, 2**32 - 1))
@profile(300)
def test_wrong_count_or_off_suit_cards_are_rejected(sit: Situation, seed: int) -> None:
    tr, lead = sit.tr, sit.lead
    rng = random.Random(seed)
    play = list(make_follow(lead, sit.hand, tr))
    left = Counter(sit.hand)
    left.subtract(play)
    spare = sorted(+left)
    # one card too many, one too few
    if spare:
        assert not accepted(lead, sit.hand, [*play, rng.choice(spare)], tr)
    assert not accepted(lead, sit.hand, play[:-1], tr)
    # off-suit cards while holding more than n of the suit (and: missing a suit card when holding ≤ n)
    off = [x for x in spare if o_class(x, tr) != lead.suit_class]
    own_in_play = [x for x in play if o_class(x, tr) == lead.suit_class]
    if off and own_in_play:
        mutated = list(play)
        mutated.remove(rng.choice(own_in_play))
        mutated.append(rng.choice(off))
        assert not accepted(lead, sit.hand, mutated, tr), (sit, mutated)


@given(situations(small=True, max_n=8))
@profile(400)
def test_brute_force_oracle_on_small_hands(sit: Situation) -> None:
    """Every n-card choice of the suit: accepted iff it realises what the hand owes, by brute force."""
    tr, lead, n = sit.tr, sit.lead, sit.lead.size
    own = sit.own
    if len(own) <= n or len(own) > 12:
        return
    subsets = list(choices(Counter(own), n))
    if lead.kind is Kind.SINGLE:
        assert all(accepted(lead, sit.hand, s, tr) for s in subsets)
        return
    row = owed_row(sit)
    if row is not None:
        assert requirement(lead, sit.hand, tr).pattern == row, sit
        for s in subsets:
            assert accepted(lead, sit.hand, s, tr) == realises(s, row, tr), (sit, row, s)
        return
    m = lead.unit
    values = {s: dtr5_value(s, m, tr) for s in subsets}
    owed = max(values.values())
    assert dtr5_best(own, n, m, tr) == owed, "oracle self-check: whole-hand search = every n-card choice"
    assert best_realisation(counts_of(own), n, m, tr) == owed, sit
    for s, v in values.items():
        assert best_realisation(counts_of(s), n, m, tr) == v, (sit, s)
        assert accepted(lead, sit.hand, s, tr) == (v == owed), (sit, s, v, owed)


@given(situations(small=True, max_n=12, tractors=True))
@profile(500)
def test_dtr5_whole_hand_search_agrees_on_medium_hands(sit: Situation) -> None:
    """Tractor and special-tractor leads, up to 30 cards of the suit: `best_realisation` of the hand equals the
    best D-TR-5 value over every split of every choice of at most n cards (exhaustive search)."""
    n, m, tr = sit.lead.size, sit.lead.unit, sit.tr
    if not is_tractor_lead(sit.lead) or len(sit.own) <= n:
        return
    owed = dtr5_best(sit.own, n, m, tr)
    assert best_realisation(counts_of(sit.own), n, m, tr) == owed, sit
    play = make_follow(sit.lead, sit.hand, tr)
    assert dtr5_value(play, m, tr) == owed, (sit, play)


@given(situations(max_n=10), st.permutations(list(Suit)))
@profile(150)
def test_following_is_symmetric_under_renaming_suits(sit: Situation, perm: list[Suit]) -> None:
    """Renaming the suits (and the trump suit with them) keeps what is legal (§6 names no suit)."""
    mapping = {card(r, s): card(r, perm[s]) for r in Rank if r < Rank.SMALL_JOKER for s in Suit}

    def rename(cards: Sequence[Card]) -> Cards:
        return tuple(sorted(mapping.get(x, x) for x in cards))

    tr2 = Trumps(sit.tr.level, perm[sit.tr.trump])
    lead2 = classify(rename(sit.lead_cards), tr2)
    play = make_follow(sit.lead, sit.hand, sit.tr)
    assert accepted(lead2, rename(sit.hand), rename(play), tr2)
    req1, req2 = requirement(sit.lead, sit.hand, sit.tr), requirement(lead2, rename(sit.hand), tr2)
    assert (req1.free, req1.pattern, len(req1.must_include)) == (req2.free, req2.pattern, len(req2.must_include))


def test_the_generator_covers_the_interesting_cases() -> None:
    """Self-check: every lead shape, both cases of §6, big hands, and mutations both kept and rejected."""
    seen: Counter[str] = Counter()
    for seed in range(120):
        tr = Trumps(LEVELS[seed % 12], Suit(seed % 4))
        sit = build(seed, tr, small=seed % 2 == 0, max_n=10)
        seen[sit.lead.kind.value] += 1
        seen["case 2" if len(sit.own) > sit.lead.size else "case 1"] += 1
        if len(sit.hand) >= 60:
            seen["big hand"] += 1
        if len(sit.own) > sit.lead.size and sit.lead.kind is not Kind.SINGLE:
            play = make_follow(sit.lead, sit.hand, tr)
            spare = Counter(sit.own)
            spare.subtract(play)
            for c in set(play):
                for d in sorted(+spare):
                    if d != c:
                        mutated = list(play)
                        mutated.remove(c)
                        mutated.append(d)
                        seen["kept" if accepted(sit.lead, sit.hand, mutated, tr) else "rejected"] += 1
    for key in ("single", "pair", "triple", "bomb", "tractor", "special tractor", "case 1", "case 2", "big hand"):
        assert seen[key] > 0, (key, seen)
    assert seen["kept"] > 0 and seen["rejected"] > 0, seen
