"""拖拉机 bots: a uniformly random player (for benchmarks and tests) and two strengths a table may choose
(`STRENGTHS`): ``basic``, which plays as the turn timer would (§11) and bids plainly, and ``heuristic``. Pure: their
only randomness is a `SeededRandom` from their seed; they read their own hand and public facts, never the clock.

A `Cut` is returned as `legal_actions` lists it: the caller supplies the shuffle ``seed``.

`HeuristicBot` decides from a `Seen`: its seat's hand and the public facts of the table (rules §12), made from
the full `State` (`HeuristicBot.choose`) or from the seat's `SeatView` a client of the engine receives
(`HeuristicBot.choose_view`, with the legal actions the engine lists), so a bot playing through the public API
decides exactly as it would in-process.
"""

from __future__ import annotations

import itertools
from collections import Counter as Multiset
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from paiju.rules.cards import CARD_KINDS, RANK_OF, SUIT_OF, Card, Cards, Rank, Suit
from paiju.rules.errors import IllegalAction
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor.combos import Combo, beats, classify, contends, run_value, trick_winner
from paiju.rules.tractor.follow import check_follow, make_follow
from paiju.rules.tractor.game import bid_count, leads, legal_actions, level_rank, trumps, trumps_for
from paiju.rules.tractor.model import (
    DECKS,
    SEATS,
    Bid,
    Counter,
    MakeBid,
    Pass,
    Phase,
    Play,
    SeatAction,
    State,
    Trick,
    team_of,
)
from paiju.rules.tractor.order import TRUMP, Trumps
from paiju.rules.tractor.settlement import card_points
from paiju.rules.tractor.view import SeatView


class RandomBot:
    """Random legal actions: a random bid or pass, a random lead, a follow with random free cards."""

    __slots__ = ("_rng",)

    def __init__(self, seed: int) -> None:
        self._rng = SeededRandom(seed)

    def choose(self, state: State, seat: int) -> SeatAction:
        if state.phase is Phase.PLAY and state.turn == seat:
            t = trumps(state)
            hand = state.hands[seat]
            if state.trick is None:
                options = leads(hand, t)
                return Play(seat, options[self._rng.below(len(options))])
            order = list(hand)
            self._rng.shuffle(order)
            return Play(seat, make_follow(state.trick.lead, hand, t, order))
        actions = legal_actions(state, seat)
        if not actions:
            raise ValueError(f"seat {seat} has nothing to do in the {state.phase.value} phase")
        return actions[self._rng.below(len(actions))]


# --- what a seat sees -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Seen:
    """What ``seat`` knows when it decides (rules §12): its own hand and public facts, nothing of other hands.

    All `HeuristicBot` reads besides the legal actions; the same from a `State` and from the seat's `SeatView`
    of it. ``first_deal`` is public: no deal has been settled yet (a view tells it by having no settlement).
    """

    seat: int
    phase: Phase
    turn: int | None
    hand: Cards
    levels: tuple[int, int]
    dealer: int | None
    first_deal: bool
    flipped: Card | None
    trump: Suit | None
    bid: Bid | None
    """The winning bid, once revealed (D-TR-6.3)."""
    trick: Trick | None
    tricks: tuple[Trick, ...]

    @classmethod
    def of_state(cls, state: State, seat: int) -> Seen:
        return cls(
            seat,
            state.phase,
            state.turn,
            state.hands[seat],
            state.levels,
            state.dealer,
            state.first_deal,
            state.flipped,
            state.trump,
            state.bid,
            state.trick,
            state.tricks,
        )

    @classmethod
    def of_view(cls, view: SeatView) -> Seen:
        if view.seat is None:
            raise ValueError("a spectator's view has no seat to decide for")
        return cls(
            view.seat,
            view.phase,
            view.turn,
            view.hand,
            view.levels,
            view.dealer,
            view.settlement is None,
            view.flipped,
            view.trump,
            view.bid,
            view.trick,
            view.tricks,
        )

    @property
    def playing(self) -> bool:
        """Whether the seat is to lead or follow now (§5-§6)."""
        return self.phase is Phase.PLAY and self.turn == self.seat

    def public(self) -> State:
        """A `State` of the public facts the rule helpers read (level rank, trumps, bid counts): no hands."""
        return State(
            phase=self.phase,
            levels=self.levels,
            dealer=self.dealer,
            first_deal=self.first_deal,
            flipped=self.flipped,
            trump=self.trump,
            bid=self.bid,
        )

    def trumps(self) -> Trumps:
        assert self.trump is not None
        return trumps_for(level_rank(self.public()), self.trump)


def legal_choice(seen: Seen, choice: SeatAction, legal: Sequence[SeatAction]) -> SeatAction:
    """``choice`` when it is legal for ``seen.seat`` — one of ``legal`` (the engine's list), or a follow that
    `check_follow` accepts (a follow is listed as one representative play) — else the first listed action."""
    if not legal:
        raise ValueError(f"seat {seen.seat} has no legal action to choose from")
    if choice in legal:
        return choice
    if isinstance(choice, Play) and choice.seat == seen.seat and seen.playing and seen.trick is not None:
        try:
            check_follow(seen.trick.lead, seen.hand, choice.cards, seen.trumps())
        except IllegalAction:
            return legal[0]
        return choice
    return legal[0]


# --- the heuristic bot ------------------------------------------------------------------------------

HIGH_TRUMP = 150
"""Strength of the off-suit 2s: from here up (2s, level cards, jokers) trumps are kept for tricks with points."""
SWAP_TRIALS = 12
"""How many candidate swaps `_shaped` checks with `check_follow` at most, per decision."""
_POINTS: tuple[int, ...] = tuple(card_points((Card(c),)) for c in range(CARD_KINDS))
"""Points of each card: 5 = 5, 10 = 10, K = 10 (§1)."""


class _Knowledge:
    """What ``seat`` can know in a play position: its hand, the unseen cards and the voids others have shown.

    Only public facts and the bot's own hand are read (never another hand). "Unseen" cards are the six decks
    minus this hand minus every card played in the deal; a combination counts as possible for the others
    when the unseen cards could form it (as if one player held all of them: a safe over-estimate).
    """

    __slots__ = ("_cache", "t", "unseen", "voids")

    def __init__(self, seen: Seen, t: Trumps) -> None:
        self.t = t
        unseen = [DECKS] * CARD_KINDS
        for c in seen.hand:
            unseen[c] -= 1
        voids: list[set[int]] = [set() for _ in range(SEATS)]
        tricks = (*seen.tricks, seen.trick) if seen.trick is not None else seen.tricks
        for trick in tricks:
            led = trick.lead.suit_class
            for i, play in enumerate(trick.plays):
                for c in play:
                    unseen[c] -= 1
                if i and any(t.suit_class[c] != led for c in play):
                    voids[(trick.leader + i) % SEATS].add(led)  # did not follow suit: void in it (§6.1)
        self.unseen = unseen
        self.voids = voids
        self._cache: dict[tuple[int, int, int], int] = {}

    def top(self, cls: int, unit: int, units: int) -> int:
        """The highest value of a combination of ``units`` runs of ``unit`` identical unseen cards of ``cls``.

        ``-1`` when the unseen cards cannot form one.
        """
        key = (cls, unit, units)
        found = self._cache.get(key)
        if found is not None:
            return found
        t = self.t
        have = [Card(c) for c in range(CARD_KINDS) if self.unseen[c] >= unit and t.suit_class[c] == cls]
        best = -1
        if units == 1:
            best = max((t.strength[c] for c in have), default=-1)
        else:
            on_chain = sorted((place, c) for c in have if (place := t.chain[c]) is not None)
            cards = [c for _, c in on_chain]
            for i in range(len(cards) - units + 1):
                run = cards[i : i + units]
                if all(t.adjacent(a, b) for a, b in itertools.pairwise(run)):
                    value = run_value(run, t)
                    if value is not None:
                        best = max(best, value)
        self._cache[key] = best
        return best

    def can_beat(self, cls: int, size: int, min_unit: int, mark: tuple[int, int]) -> bool:
        """Whether unseen cards of ``cls`` could make a ``size``-card play, unit >= ``min_unit``, above ``mark``.

        ``mark`` is the (unit, value) of the play to beat (§5: larger unit, then higher value).
        """
        for unit in range(min_unit, min(size, DECKS) + 1):
            if size % unit:
                continue
            value = self.top(cls, unit, size // unit)
            if value >= 0 and (unit, value) > mark:
                return True
        return False

    def secure(self, lead: Combo, combo: Combo, later: Sequence[int]) -> bool:
        """Whether no seat in ``later`` can beat ``combo`` (a play on ``lead``) as far as the bot can tell."""
        cls = lead.suit_class
        mark = (combo.unit, combo.value)
        void_after = cls != TRUMP and any(cls in self.voids[s] for s in later)
        if combo.suit_class == cls:
            return not later or not (void_after or self.can_beat(cls, lead.size, lead.unit, mark))
        # a trump play on a plain lead (将吃): only a void seat with a higher trump play beats it
        return not (void_after and self.can_beat(TRUMP, lead.size, lead.unit, mark))

    def top_of_kind(self, combo: Combo, later: Sequence[int]) -> bool:
        """Whether no unseen combination of ``combo``'s own shape beats it (bigger units aside)."""
        cls = combo.suit_class
        if cls != TRUMP and any(cls in self.voids[s] for s in later):
            return False
        return self.top(cls, combo.unit, combo.units) <= combo.value


class HeuristicBot:
    """A plain, readable strategy a casual player finds reasonable (rule sections in brackets).

    * Bidding (D-TR-6): bid the suit where it shows the most level cards, with at least ``bid_min`` of them
      (or ``bid_min - 1`` when that suit is long: ``long_suit`` cards or more), showing all it holds; pass
      otherwise. Counter (反) only with at least ``counter_margin`` level cards more than the bid, or one
      more in a long suit.
    * Leading (§4-§5): the bot tracks unseen cards and shown voids. It leads, in this order: combinations
      of a plain suit nobody can beat (largest first: tractors, bombs, triples, pairs, then top singles),
      counting a plain tractor that only a bomb or special tractor could beat as nearly unbeatable; with
      many trumps (at least ``pull_share`` of the unseen trumps) trump combinations to draw trumps
      (unbeatable ones and non-point ones, largest and lowest first); otherwise a low non-point single of
      a short plain suit (without breaking a pair), then low trumps; a point card (5, 10, K) the others can
      beat only when nothing else is left.
    * Following (§5-§6): when the partner wins the trick and nobody after can beat it, feed points (10s
      and Ks of the suit first, then 5s); when an opponent wins, win with the cheapest contending play that
      beats it and will hold (the cheapest that beats when playing last), trumping 将吃 only a trick with
      points; otherwise play the lowest non-point cards. Every play is checked with `check_follow`, with
      `make_follow` as the fallback.
    * Cut (§8): any count from its seeded random source.
    """

    __slots__ = ("_rng",)

    bid_min: ClassVar[int] = 3
    """Level cards of one suit that make a bid on their own."""
    long_suit: ClassVar[int] = 17
    """A suit is long from this `_suit_quality` (its cards, half a point a pair; a hand averages 16.5 a suit)."""
    counter_margin: ClassVar[int] = 2
    """A counter needs this many level cards more than the bid (or one more in a long suit)."""
    top_tractors: ClassVar[bool] = True
    """Lead a plain tractor that only a bomb or special tractor could beat almost as readily as a sure one."""
    pull_share: ClassVar[float] = 0.4
    """Leads trumps to draw them when it holds at least this share of the trumps it has not seen."""

    def __init__(self, seed: int) -> None:
        self._rng = SeededRandom(seed)

    def choose(self, state: State, seat: int) -> SeatAction:
        seen = Seen.of_state(state, seat)
        if seen.playing:
            return self._play(seen, trumps(state))
        return self._act(seen, legal_actions(state, seat))

    def choose_view(self, view: SeatView, legal: Sequence[SeatAction]) -> SeatAction:
        """The choice of ``view.seat`` from what it sees and ``legal``, its legal actions at the same version
        (the engine's GetLegalActions). Always legal: one of ``legal`` or, when following, a play `check_follow`
        accepts; should the strategy pick anything else, the first listed action instead."""
        seen = Seen.of_view(view)
        if not legal:
            raise ValueError(f"seat {seen.seat} has nothing to do in the {seen.phase.value} phase")
        return legal_choice(seen, self.decide(seen, legal), legal)

    def decide(self, seen: Seen, actions: Sequence[SeatAction]) -> SeatAction:
        """The seat's choice from what it has ``seen`` and its legal ``actions`` (read outside of play only)."""
        if seen.playing:
            return self._play(seen, seen.trumps())
        return self._act(seen, actions)

    def _play(self, seen: Seen, t: Trumps) -> Play:
        know = _Knowledge(seen, t)
        if seen.trick is None:
            return Play(seen.seat, self._lead(seen, t, know))
        return Play(seen.seat, self._follow(seen, t, know))

    def _act(self, seen: Seen, actions: Sequence[SeatAction]) -> SeatAction:
        if not actions:
            raise ValueError(f"seat {seen.seat} has nothing to do in the {seen.phase.value} phase")
        if seen.phase in (Phase.BID, Phase.COUNTER):
            return self._bid(seen, actions)
        return actions[self._rng.below(len(actions))]

    # -- bidding ---------------------------------------------------------------------------------

    def _bid(self, seen: Seen, actions: Sequence[SeatAction]) -> SeatAction:
        seat = seen.seat
        hand = seen.hand
        public = seen.public()
        level = level_rank(public)
        offers = [a for a in actions if isinstance(a, MakeBid | Counter)]
        if not offers:
            return Pass(seat)

        def rank(a: MakeBid | Counter) -> tuple[int, int, int]:
            return (bid_count(public, a.suit, a.cards), _suit_quality(hand, a.suit, level), -a.suit)

        best = max(offers, key=rank)
        count, quality, _ = rank(best)
        long = quality >= self.long_suit
        if isinstance(best, Counter):
            assert seen.bid is not None
            wanted = seen.bid.count + (1 if long else self.counter_margin)
            return best if count >= wanted else Pass(seat)
        return best if count >= self.bid_min or (long and count >= self.bid_min - 1) else Pass(seat)

    # -- leading ---------------------------------------------------------------------------------

    def _lead(self, seen: Seen, t: Trumps, know: _Knowledge) -> Cards:
        seat = seen.seat
        hand = seen.hand
        held = Multiset(hand)
        lengths = [0] * 5
        for c in hand:
            lengths[t.suit_class[c]] += 1
        unseen_trumps = sum(n for c, n in enumerate(know.unseen) if t.suit_class[c] == TRUMP)
        pull = lengths[TRUMP] > 0 and lengths[TRUMP] >= self.pull_share * unseen_trumps
        opponents = ((seat + 1) % SEATS, (seat + 3) % SEATS)

        def score(cards: Cards) -> tuple[int, int]:
            combo = classify(cards, t)
            n = combo.size
            pts = sum(_POINTS[c] for c in cards)
            safe = know.secure(combo, combo, opponents)
            broken = 1 if held[cards[0]] > len(cards) and combo.units == 1 else 0
            if combo.suit_class != TRUMP:
                if safe:
                    return 7, 10 * n + pts
                if self.top_tractors and combo.units > 1 and know.top_of_kind(combo, opponents):
                    return 7, 10 * n + pts - 15  # only a bomb or a special tractor beats it
                low = -3 * combo.value - 2 * lengths[combo.suit_class] - 4 * n - 8 * broken
                return (4, low) if pts == 0 else (1, low - 10 * pts)
            rank = combo.value - 100 if combo.value < HIGH_TRUMP else combo.value - 120
            if pull and (safe or pts == 0):
                return 5, 10 * n - rank
            if pull:
                return 3, -rank - 20 * pts
            return 2, -rank - 20 * pts - 4 * n - 8 * broken

        return max(leads(hand, t), key=lambda cards: (score(cards), [-c for c in cards]))

    # -- following -------------------------------------------------------------------------------

    def _follow(self, seen: Seen, t: Trumps, know: _Knowledge) -> Cards:
        seat = seen.seat
        trick = seen.trick
        assert trick is not None
        lead = trick.lead
        hand = seen.hand
        plays = trick.plays
        at = trick_winner(plays, t)
        best = lead if at == 0 else contends(lead, plays[at], t)
        assert best is not None
        later = [(trick.leader + i) % SEATS for i in range(len(plays) + 1, SEATS)]
        later_opponents = [s for s in later if team_of(s) != team_of(seat)]
        points = sum(_POINTS[c] for play in plays for c in play)
        dump = _dump_key(t)
        if team_of((trick.leader + at) % SEATS) == team_of(seat):
            if know.secure(lead, best, later_opponents):
                return _shaped(lead, hand, t, _feed_key(t))
            # the partner may lose the trick: take over only with a play that holds, else give nothing
            for cards in self._winners(
                lead, best, hand, t, know, later=later_opponents, points=points, secure_only=True
            ):
                return cards
            return _shaped(lead, hand, t, dump)
        for cards in self._winners(lead, best, hand, t, know, later=later_opponents, points=points, secure_only=False):
            return cards
        return _shaped(lead, hand, t, dump)

    def _winners(
        self,
        lead: Combo,
        best: Combo,
        hand: Cards,
        t: Trumps,
        know: _Knowledge,
        *,
        later: Sequence[int],
        points: int,
        secure_only: bool,
    ) -> Iterator[Cards]:
        """Legal contending plays that beat ``best``, the cheapest first, filtered by whether they will hold.

        Playing last, any play that beats wins; earlier, only one nobody after can beat (as far as the bot
        can tell). Trumping 将吃 is only for a trick that holds points, and so are 2s, level cards and jokers.
        """
        n = lead.size
        own = tuple(c for c in hand if t.suit_class[c] == lead.suit_class)
        if len(own) >= n:
            pool = own
        elif not own and lead.suit_class != TRUMP and points > 0:
            pool = tuple(c for c in hand if t.suit_class[c] == TRUMP)
        else:
            return
        holding: list[tuple[tuple[int, int, int], Cards]] = []
        risky: list[tuple[tuple[int, int, int], Cards]] = []
        for cards in leads(pool, t):
            if len(cards) != n:
                continue
            combo = contends(lead, cards, t)
            if combo is None or not beats(combo, best):
                continue
            if not points and any(t.strength[c] >= HIGH_TRUMP for c in cards):
                continue  # no 2s, level cards or jokers for a trick without points
            cost = (combo.unit, combo.value, -sum(_POINTS[c] for c in cards))
            (holding if know.secure(lead, combo, later) else risky).append((cost, cards))
        # the cheapest play that holds; failing that, with points at stake, the strongest play that may
        ordered = sorted(holding)
        if not secure_only and points >= 10:
            ordered += sorted(risky, reverse=True)
        for _, cards in ordered:
            try:
                check_follow(lead, hand, cards, t)
            except IllegalAction:
                continue
            yield cards


def _suit_quality(hand: Cards, suit: Suit, level: Rank) -> int:
    """How good ``suit`` would be as trump: its cards (not the level rank or 2s), and half a point a pair."""
    counts = Multiset(c for c in hand if SUIT_OF[c] == suit and RANK_OF[c] not in (level, Rank.TWO))
    return sum(counts.values()) + sum(1 for n in counts.values() if n >= 2) // 2


def _dump_key(t: Trumps) -> Callable[[Card], int]:
    """Which cards to give away first: low plain cards, low trumps, plain points, then high trumps."""

    def key(c: Card) -> int:
        s = t.strength[c]
        pts = _POINTS[c]
        if t.suit_class[c] != TRUMP:
            return (40 + pts if pts else 0) + (s if s < 14 else 25)
        if s < HIGH_TRUMP:
            return 30 + (s - 100) + (40 if pts else 0)
        return 70 + (s - HIGH_TRUMP)

    return key


def _feed_key(t: Trumps) -> Callable[[Card], int]:
    """Which cards to give a partner who wins the trick first: 10s and Ks, then 5s, then low cards."""
    dump = _dump_key(t)

    def key(c: Card) -> int:
        pts = _POINTS[c]
        if pts:
            return (10 - pts) + (0 if t.suit_class[c] != TRUMP else 20)
        return 40 + dump(c)

    return key


def _shaped(lead: Combo, hand: Cards, t: Trumps, key: Callable[[Card], int]) -> Cards:
    """A legal follow preferring low ``key`` cards: `make_follow` with that order, then swap groups.

    The requirement's structured part (pairs, triples, bombs) is the engine's choice; each group of identical
    cards in it is swapped for a group the bot prefers when `check_follow` still accepts the play (at most
    `SWAP_TRIALS` checks). Groups next to another group of the play are left alone: they may form a tractor,
    and swapping one unit out of a tractor breaks it.
    """
    order = sorted(hand, key=lambda c: (key(c), c))
    chosen = Multiset(make_follow(lead, hand, t, order))
    held = Multiset(hand)
    cls = lead.suit_class
    trials = SWAP_TRIALS
    swapped = True
    while swapped and trials:
        swapped = False
        groups = sorted(
            (c for c in chosen if chosen[c] >= 2 and t.suit_class[c] == cls and not _in_run(c, chosen, t)),
            key=lambda c: (-key(c), c),
        )
        for x in groups:
            size = chosen[x]
            better = sorted(
                (c for c in held if t.suit_class[c] == cls and held[c] - chosen[c] >= size and key(c) < key(x)),
                key=lambda c: (key(c), c),
            )
            for y in better:
                if not trials:
                    break
                trials -= 1
                trial = chosen.copy()
                trial[x] -= size
                trial[y] += size
                try:
                    check_follow(lead, hand, tuple(sorted(trial.elements())), t)
                except IllegalAction:
                    continue
                chosen, swapped = trial, True
                break
            if swapped or not trials:
                break
    return tuple(sorted(chosen.elements()))


def _in_run(c: Card, chosen: Multiset[Card], t: Trumps) -> bool:
    """Whether ``c`` sits next to another group of two or more in ``chosen`` (§4 adjacency)."""
    return any(n >= 2 and (t.adjacent(c, d) or t.adjacent(d, c)) for d, n in chosen.items() if d != c)


class BasicBot:
    """The weaker strength (``basic``): the turn timer's plays (§11) and a plain bid.

    * Bidding (D-TR-6): bid the suit where it shows the most level cards when it shows at least ``bid_min`` (all of
      them); never counter.
    * Leading (§4-§5): the lowest single, plain cards before trumps (the timer's default).
    * Following (§6): the lowest legal follow (`follow.make_follow`, the timer's default): what it owes, then its
      lowest cards, plain before trump.
    * Cut (§8): any count from its seeded random source.

    Deterministic given its seed; decides from what its seat sees (`Seen`), like `HeuristicBot`.
    """

    __slots__ = ("_rng",)

    bid_min: ClassVar[int] = 2

    def __init__(self, seed: int) -> None:
        self._rng = SeededRandom(seed)

    def choose(self, state: State, seat: int) -> SeatAction:
        seen = Seen.of_state(state, seat)
        return self.decide(seen, () if seen.playing else legal_actions(state, seat))

    def choose_view(self, view: SeatView, legal: Sequence[SeatAction]) -> SeatAction:
        """The choice of ``view.seat`` from what it sees and ``legal`` (the engine's list); always legal."""
        seen = Seen.of_view(view)
        if not legal:
            raise ValueError(f"seat {seen.seat} has nothing to do in the {seen.phase.value} phase")
        return legal_choice(seen, self.decide(seen, legal), legal)

    def decide(self, seen: Seen, actions: Sequence[SeatAction]) -> SeatAction:
        if seen.playing:
            t = seen.trumps()
            if seen.trick is None:
                low = min(seen.hand, key=lambda c: (t.suit_class[c] == TRUMP, t.strength[c], c))
                return Play(seen.seat, (low,))
            return Play(seen.seat, make_follow(seen.trick.lead, seen.hand, t))
        if not actions:
            raise ValueError(f"seat {seen.seat} has nothing to do in the {seen.phase.value} phase")
        if seen.phase is Phase.BID:
            public = seen.public()
            bids = [a for a in actions if isinstance(a, MakeBid)]
            best = max(bids, key=lambda a: (bid_count(public, a.suit, a.cards), -a.suit), default=None)
            if best is not None and bid_count(public, best.suit, best.cards) >= self.bid_min:
                return best
            return Pass(seen.seat)
        if seen.phase is Phase.COUNTER:
            return Pass(seen.seat)
        return actions[self._rng.below(len(actions))]


STRENGTHS: dict[str, type[BasicBot] | type[HeuristicBot]] = {"basic": BasicBot, "heuristic": HeuristicBot}
"""The bot strengths a table may choose, weaker first (docs/bots.md, "Strengths"); bench/bots.py measures them."""
