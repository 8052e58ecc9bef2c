"""Seeded random playouts of whole 砸六家 matches, checked against the rules after every step.

Each match starts from ``StartMatch`` and every seat plays a uniformly random legal action drawn from
`SeededRandom` (a cut also gets a random seed), so the run is the same on every machine. The auditor
below keeps its own shadow of the hands, the tribute pool and the round, and re-derives from
`docs/rules/zalioujia.md` — not from the engine's helpers — what must happen:

- every step: cards conserved (§14), hands equal to the shadow, a hand never above 18 plus the cards it
  received (tribute, take-back, four-take), the acting seat never out and holding cards, the turn order;
- every play: a legal combination that beats the current play, or a four-take (§3-§5); rounds won exactly
  when all other holders passed, 接风 to the next holder (§6, D-ZLJ-4, D-ZLJ-5);
- every deal end: finishing order, caught seats, outcome by the §7 table, points by §8; the deal ended
  exactly when a whole team was out;
- every later deal: the previous 大贡's next seat cuts and dealing starts at the previous 大贡 (§9); resistance,
  forced tribute, pick quotas with the shortfall on the lowest winner, return and take-back amounts and
  order, and the leader (§10-§12);
- match end: after the last deal, totals equal to the sum of the deal results (§8, D-ZLJ-7).

The matches are split into chunks (pytest-xdist spreads them); each chunk asserts how many deals it played
and that every outcome, a four-take, a 接风 and a resistance happened in it.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import pytest

from paiju.rules.cards import CARD_KINDS, RANK_SYMBOLS, Card, Cards
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import (
    Cut,
    Options,
    Outcome,
    Phase,
    Play,
    StartMatch,
    State,
    conserved,
    decide,
    evolve,
    legal_actions,
)
from paiju.rules.zlj.dealing import shuffled_deck
from paiju.rules.zlj.model import (
    CardsPlayed,
    DealEnded,
    DealResult,
    Event,
    FourTake,
    HandsDealt,
    MatchEnded,
    MatchStarted,
    Passed,
    PlayStarted,
    Resist,
    ReturnTakenBack,
    ReverseTribute,
    RockPaperScissors,
    RoundWon,
    Team,
    TributeGiven,
    TributeOrdered,
    TributePicked,
    TributeResisted,
    TributeReturned,
    WentOut,
)

from ...support.profiles import examples

CHUNKS = 8
MATCHES_PER_CHUNK = 45
DEALS_PER_MATCH = 6
MAX_STEPS_PER_MATCH = 20_000
"""A safety valve: a match that does not end within this many actions is a failure, not a hang."""

# --- the rules, re-derived here from docs/rules/zalioujia.md (independent of the engine's helpers) ----

SEATS = 6
HAND_SIZE = 18
TWO_DECKS: Cards = tuple(sorted(Card(c) for c in range(CARD_KINDS) for _ in range(2)))
ORDER = "456789TJQKA23"
"""§2 rank order of the suited ranks, low to high; then SJ (13) and BJ (14)."""
SJ_LEVEL, BJ_LEVEL = 13, 14
FOUR_LEVEL, ACE_LEVEL = 0, 10
KING_LEVEL = ORDER.index("K")
RETURN_LEVELS = range(ORDER.index("5"), ORDER.index("Q") + 1)
SMALL_JOKER_CARD, BIG_JOKER_CARD = Card(52), Card(53)
ACE_OF_SPADES = Card(RANK_SYMBOLS.index("A") * 4 + 0)


def level(c: int) -> int:
    if c == SMALL_JOKER_CARD:
        return SJ_LEVEL
    if c == BIG_JOKER_CARD:
        return BJ_LEVEL
    return ORDER.index(RANK_SYMBOLS[c // 4])


def team(seat: int) -> int:
    """0 for team A (seats 0, 2, 4), 1 for team B (§1)."""
    return seat % 2


def team_seats(t: int) -> tuple[int, ...]:
    return tuple(s for s in range(SEATS) if s % 2 == t)


def levels(cards: Cards) -> list[int]:
    return sorted(level(c) for c in cards)


def classify(cards: Cards) -> tuple[str, int, int] | None:
    """(kind, cards, top level) of a §3 combination, or None when it is not one."""
    lv = levels(cards)
    n = len(lv)
    if n == 0:
        return None
    if n == 1:
        return ("single", 1, lv[0])
    if lv[0] >= SJ_LEVEL:  # only jokers: D-ZLJ-1 joker bomb, 2-4 jokers with both kinds
        return ("joker bomb", n, BJ_LEVEL) if lv[0] == SJ_LEVEL and lv[-1] == BJ_LEVEL and n <= 4 else None
    if lv[-1] >= SJ_LEVEL:
        return None
    if lv[0] == lv[-1]:
        return ("pair", 2, lv[0]) if n == 2 else ("bomb", n, lv[0])
    counts = Counter(lv)
    ranks = sorted(counts)
    per = set(counts.values())
    consecutive = ranks == list(range(ranks[0], ranks[0] + len(ranks)))
    if consecutive and len(ranks) >= 3 and ranks[-1] <= ACE_LEVEL and per in ({1}, {2}):
        return ("straight" if per == {1} else "pair-straight", n, ranks[-1])
    return None


def beats(play: tuple[str, int, int], current: tuple[str, int, int]) -> bool:
    """§4 without the four-take."""
    if current[0] == "joker bomb":
        return False
    if play[0] == "joker bomb":
        return True
    if play[0] == "bomb":
        if current[0] != "bomb":
            return True
        return play[1] > current[1] or (play[1] == current[1] and play[2] > current[2])
    return play[0] == current[0] and play[1] == current[1] and play[2] > current[2]


def is_four_take(cards: Cards, current: Cards) -> bool:
    """§5: m-1 fours on a bomb of m cards whose rank is not 4."""
    cur = classify(current)
    if cur is None or cur[0] != "bomb" or cur[2] == FOUR_LEVEL:
        return False
    return len(cards) == cur[1] - 1 and all(level(c) == FOUR_LEVEL for c in cards)


OUTCOME_TABLE: dict[tuple[tuple[int, ...], int], Outcome] = {
    # (places of the head team's members who went out, how many went out) -> result, the §7 table
    ((1, 2, 3), 3): Outcome.CATCH3,
    ((1, 2, 4), 4): Outcome.CATCH2,
    ((1, 3, 4), 4): Outcome.CATCH2,
    ((1, 2, 5), 5): Outcome.CATCH1,
    ((1, 3, 5), 5): Outcome.CATCH1,
    ((1, 4, 5), 5): Outcome.CATCH1,
    ((1, 2), 5): Outcome.DRAW,  # 126: opponents 345
    ((1, 3), 5): Outcome.DRAW,  # 136: opponents 245
    ((1, 4), 5): Outcome.DRAW,  # 146: opponents 235
    ((1,), 4): Outcome.REVERSE,  # 156: opponents 234
}
TEAM_POINTS = {Outcome.CATCH3: 10, Outcome.CATCH2: 5, Outcome.CATCH1: 2, Outcome.DRAW: 0, Outcome.REVERSE: 0}
PLACE_POINTS = {1: 3, 2: 2, 3: 1, 4: 0, 5: 0}
CAUGHT_POINTS = -1
TRIBUTE_PER_LOSER = {Outcome.CATCH3: 3, Outcome.CATCH2: 2, Outcome.CATCH1: 1, Outcome.REVERSE: 1}


def whole_team_out(out: list[int] | tuple[int, ...]) -> bool:
    return any(all(s in out for s in team_seats(t)) for t in (0, 1))


def forced_tribute_levels(hand: Counter[Card], n: int) -> list[int]:
    """§10: the n highest cards by §2 order, only K or higher."""
    top = sorted((level(c) for c in hand.elements()), reverse=True)[:n]
    return sorted(lv for lv in top if lv >= KING_LEVEL)


def quotas(per_winner: int, pool: int) -> list[int]:
    """§10: each winner picks per_winner; a shortfall is borne by the lowest-placed winner first."""
    q = [per_winner] * 3
    short = 3 * per_winner - pool
    i = 2
    while short > 0 and i >= 0:
        cut = min(short, q[i])
        q[i] -= cut
        short -= cut
        i -= 1
    return q


def my_deal(deck: list[Card], first: int) -> tuple[Cards, ...]:
    """§9: one card at a time in play order, starting at ``first``."""
    hands: list[list[Card]] = [[] for _ in range(SEATS)]
    for i, c in enumerate(deck):
        hands[(first + i) % SEATS].append(c)
    return tuple(tuple(sorted(h)) for h in hands)


def rps_order(event: RockPaperScissors) -> tuple[int, ...]:
    """Rebuild the order D-ZLJ-8 gives from the recorded throws: rounds without exactly two shapes are
    replayed; the seats throwing the winning shape go first; each group is ordered the same way."""
    rounds = iter(event.rounds)

    def order(group: tuple[int, ...]) -> tuple[int, ...]:
        if len(group) == 1:
            return group
        while True:
            throws = next(rounds)
            assert tuple(s for s, _ in throws) == group, (throws, group)
            shapes = {t for _, t in throws}
            assert shapes <= {0, 1, 2}
            if len(shapes) != 2:
                continue
            a, b = shapes
            win = a if (a - b) % 3 == 1 else b  # paper (1) beats rock (0), scissors (2) beat paper, rock beats scissors
            return order(tuple(s for s, t in throws if t == win)) + order(tuple(s for s, t in throws if t != win))

    result = order(tuple(s for s, _ in event.rounds[0]))
    assert next(rounds, None) is None, "rock-paper-scissors has rounds left over"
    return result


# --- the auditor -----------------------------------------------------------------------------------


@dataclass
class Stats:
    matches: int = 0
    deals: int = 0
    steps: int = 0
    outcomes: Counter[Outcome] = field(default_factory=Counter)
    four_takes: int = 0
    four_takes_of_out_players: int = 0
    jiefeng: int = 0
    resistances: Counter[Resist] = field(default_factory=Counter)
    tributes: int = 0
    team_total_tributes: int = 0
    no_tribute_cards: int = 0
    shortfalls: int = 0
    return_shortfalls: int = 0


@dataclass
class TributePlan:
    winners: list[tuple[int, int]]
    losers: list[tuple[int, int]]
    leader: int
    picked: dict[int, int] = field(default_factory=dict)
    returned: set[int] = field(default_factory=set)
    taken_back: set[int] = field(default_factory=set)


class Auditor:
    """Follows one match event by event and checks it against the rules re-derived above."""

    def __init__(self, options: Options, stats: Stats) -> None:
        self.options = options
        self.stats = stats
        self.hands: list[Cards] = [() for _ in range(SEATS)]
        """Shadow hands as sorted tuples (cheap to compare after every step)."""
        self.received = [0] * SEATS
        self.pool: Cards = ()
        self.out: list[int] = []
        self.current: Cards | None = None
        self.maker: int | None = None
        self.passed: set[int] = set()
        self.deal = 0
        self.previous: DealResult | None = None
        self.team_totals = [0, 0]
        self.individual = [0] * SEATS
        self.results: list[DealResult] = []
        self.plan: TributePlan | None = None
        self.expected_turn: int | None = None
        self.ended = False

    # -- helpers --

    def holders_after(self, seat: int) -> int | None:
        for i in range(1, SEATS + 1):
            s = (seat + i) % SEATS
            if self.hands[s]:
                return s
        return None

    @staticmethod
    def minus(cards: Cards, gone: Cards, what: str) -> Cards:
        rest = list(cards)
        for c in gone:
            assert c in rest, f"{what}: {gone} not all in {cards}"
            rest.remove(c)
        return tuple(rest)

    @staticmethod
    def plus(cards: Cards, more: Cards) -> Cards:
        return tuple(sorted(cards + more))

    # -- one decision --

    def check_batch(self, action: object, events: tuple[Event, ...], seat: int | None) -> None:
        assert events, f"{action} was accepted but caused no events"
        kinds = [type(e) for e in events]
        for i, e in enumerate(events):
            self.apply(e, action, seat, events[i + 1 :])
        if isinstance(action, Play):
            # a play that empties a hand goes out; a deal ends exactly when a whole team is out (§6)
            if WentOut in kinds:
                assert kinds[:2] == [CardsPlayed, WentOut]
                assert (DealEnded in kinds) == whole_team_out(self.out), (self.out, kinds)
            else:
                assert kinds in ([CardsPlayed], [FourTake]), kinds
        if Passed in kinds:
            everyone_passed = all(s in self.passed for s in range(SEATS) if s != self.maker and self.hands[s])
            if RoundWon not in kinds:
                assert not everyone_passed, "all other holders passed but the round was not won (D-ZLJ-4)"

    def apply(self, e: Event, action: object, seat: int | None, rest: tuple[Event, ...]) -> None:
        if isinstance(e, MatchStarted):
            assert e.options == self.options
        elif isinstance(e, HandsDealt):
            self.on_hands_dealt(e, action)
        elif isinstance(e, RockPaperScissors):
            assert rps_order(e) == e.order
        elif isinstance(e, TributeResisted | TributeGiven | TributeOrdered):
            pass  # checked with the whole opening in on_hands_dealt
        elif isinstance(e, PlayStarted):
            if self.plan is not None:
                # §12: after tribute, the loser with the largest tribute card leads; everything was done
                assert self.next_tribute_step() is None
                assert not self.pool, f"returned cards left in the pool: {self.pool}"
                assert e.leader == self.plan.leader
            self.expected_turn = e.leader
        elif isinstance(e, TributePicked):
            self.on_pick(e, seat)
        elif isinstance(e, TributeReturned):
            self.on_return(e, seat)
        elif isinstance(e, ReturnTakenBack):
            self.on_take_back(e, seat)
        elif isinstance(e, CardsPlayed):
            self.on_played(e, seat)
        elif isinstance(e, FourTake):
            self.on_four_take(e, seat)
        elif isinstance(e, Passed):
            assert e.seat == seat
            assert self.current is not None, "a pass with no current play: the leader must play (§6)"
            self.passed.add(e.seat)
            self.expected_turn = self.holders_after(e.seat)
        elif isinstance(e, RoundWon):
            self.on_round_won(e)
        elif isinstance(e, WentOut):
            assert not self.hands[e.seat], f"seat {e.seat} went out holding {self.hands[e.seat]}"
            assert e.seat not in self.out
            self.out.append(e.seat)
            assert e.place == len(self.out)
            assert (bool(rest) and isinstance(rest[0], DealEnded)) == whole_team_out(self.out)
        elif isinstance(e, DealEnded):
            self.on_deal_ended(e)
            if self.deal < self.options.deals:
                assert not rest, "the match goes on: nothing may follow DealEnded"
        elif isinstance(e, MatchEnded):
            self.on_match_ended(e)
        else:
            raise AssertionError(f"unexpected event {e!r}")

    # -- dealing and the opening of a deal (§9-§12) --

    def on_hands_dealt(self, e: HandsDealt, action: object) -> None:
        assert e.deal == self.deal + 1
        self.deal = e.deal
        assert all(len(h) == HAND_SIZE for h in e.hands)
        assert tuple(sorted(c for h in e.hands for c in h)) == TWO_DECKS
        assert e.seed is not None
        deck = shuffled_deck(e.seed)
        if e.deal == 1:
            assert isinstance(action, StartMatch) and e.seed == action.seed
            assert e.cut is None and e.cutter is None
            assert e.hands == my_deal(deck, e.first_drawer)
        else:
            prev = self.previous
            assert prev is not None and isinstance(action, Cut)
            # §9: the previous 大贡's next seat cuts; dealing starts at the previous 大贡
            assert e.cutter == action.seat == (prev.order[0] + 1) % SEATS
            assert e.first_drawer == prev.order[0]
            assert e.cut == action.count and e.seed == action.seed
            assert e.hands == my_deal(deck[action.count :] + deck[: action.count], prev.order[0])
        self.hands = list(e.hands)
        self.received = [0] * SEATS
        self.pool = ()
        self.out = []
        self.current, self.maker, self.passed = None, None, set()
        self.plan = None

    def check_opening(self, events: tuple[Event, ...]) -> None:
        """The events after HandsDealt, against §9 (first deal) or §10-§12 (later deals)."""
        i = next(k for k, e in enumerate(events) if isinstance(e, HandsDealt))
        dealt = events[i]
        assert isinstance(dealt, HandsDealt)
        opening = events[i + 1 :]
        hands = [Counter(h) for h in dealt.hands]
        starts = [e for e in opening if isinstance(e, PlayStarted)]
        rps = [e for e in opening if isinstance(e, RockPaperScissors)]
        if dealt.deal == 1:
            holders = tuple(s for s in range(SEATS) if hands[s][ACE_OF_SPADES])
            assert len(starts) == 1 and opening[-1] is starts[0]
            if len(holders) == 1:  # one player holds both ♠A and leads
                assert not rps and starts[0].leader == holders[0]
            else:  # the two holders play rock-paper-scissors (D-ZLJ-8)
                assert len(rps) == 1 and set(rps[0].order) == set(holders)
                assert starts[0].leader == rps[0].order[0]
            return
        prev = self.previous
        assert prev is not None
        big = prev.order[0]
        tribute_kinds = (TributeResisted, TributeGiven, TributeOrdered)
        if prev.outcome is Outcome.DRAW:  # §12: no tribute, the previous 大贡 leads
            assert not any(isinstance(e, tribute_kinds) for e in opening)
            assert starts and starts[0].leader == big and len(opening) == 1
            return
        winners_team = team(prev.order[0]) if prev.outcome is not Outcome.REVERSE else 1 - team(prev.order[0])
        loser_seats = team_seats(1 - winners_team)
        if self.options.resist is Resist.BIG_AND_SMALL:
            resisters = [s for s in loser_seats if hands[s][SMALL_JOKER_CARD] and hands[s][BIG_JOKER_CARD]]
        else:
            resisters = [s for s in loser_seats if hands[s][BIG_JOKER_CARD] >= 2]
        resisted = [e for e in opening if isinstance(e, TributeResisted)]
        if resisters:  # D-ZLJ-10: no tribute, no return, the jokers are shown; the previous 大贡 leads (§12)
            assert len(resisted) == 1 and resisted[0].seat in resisters
            assert not Counter(resisted[0].cards) - hands[resisted[0].seat]
            want = {SJ_LEVEL, BJ_LEVEL} if self.options.resist is Resist.BIG_AND_SMALL else {BJ_LEVEL}
            assert len(resisted[0].cards) == 2 and {level(c) for c in resisted[0].cards} == want
            assert not any(isinstance(e, TributeGiven | TributeOrdered) for e in opening)
            assert len(starts) == 1 and starts[0].leader == big
            self.stats.resistances[self.options.resist] += 1
            return
        assert not resisted
        given = {e.seat: e for e in opening if isinstance(e, TributeGiven)}
        assert set(given) == set(loser_seats), "every loser's tribute is recorded"
        n = TRIBUTE_PER_LOSER[prev.outcome]
        team_total = prev.outcome is Outcome.REVERSE and self.options.reverse_tribute is ReverseTribute.TEAM_TOTAL
        gifts: dict[int, Cards] = {}
        for s, g in given.items():
            assert g.cards is not None and g.count == len(g.cards)
            assert not Counter(g.cards) - hands[s], f"seat {s} gave cards it does not hold"
            gifts[s] = g.cards
        if team_total:  # D-ZLJ-9 option: one card in all, from the loser with the highest card (K or higher)
            self.stats.team_total_tributes += 1
            tops = {s: max(level(c) for c in hands[s].elements()) for s in loser_seats}
            best = max(tops.values())
            givers = [s for s in loser_seats if gifts[s]]
            if best >= KING_LEVEL:
                assert len(givers) == 1 and tops[givers[0]] == best
                assert levels(gifts[givers[0]]) == [best]
            else:
                assert not givers
        else:  # §10: each loser gives its n highest cards, only K or higher
            for s in loser_seats:
                assert levels(gifts[s]) == forced_tribute_levels(hands[s], n), (s, gifts[s], n)
        pool = sum(len(g) for g in gifts.values())
        ordered = [e for e in opening if isinstance(e, TributeOrdered)]
        if pool == 0:  # D-ZLJ-12: no loser gave a card, the previous 大贡 leads
            assert not ordered and len(starts) == 1 and starts[0].leader == big
            self.stats.no_tribute_cards += 1
            return
        assert len(ordered) == 1 and not starts, "play starts after the tribute, not before"
        plan = ordered[0]
        self.stats.tributes += 1
        # §10: winners pick in their finishing order, each n (one in all for team_total), shortfall from the bottom
        winners_in_order = [s for s in prev.order if team(s) == winners_team]
        assert len(winners_in_order) == 3
        expected_quotas = quotas(1 if team_total else n, pool)
        assert list(plan.winners) == list(zip(winners_in_order, expected_quotas, strict=True)), (plan, pool)
        if sum(expected_quotas) < 3 * (1 if team_total else n):
            self.stats.shortfalls += 1
        # §11-§12: losers who gave take back in order of their highest tribute card, largest first; the first leads
        givers = [s for s in loser_seats if gifts[s]]
        assert sorted(s for s, _ in plan.losers) == sorted(givers)
        assert all(count == len(gifts[s]) for s, count in plan.losers)
        tops_given = [max(levels(gifts[s])) for s, _ in plan.losers]
        assert tops_given == sorted(tops_given, reverse=True), (plan.losers, tops_given)
        assert plan.leader == plan.losers[0][0]
        for top in set(tops_given):
            tied = tuple(s for s, _ in plan.losers if max(levels(gifts[s])) == top)
            if len(tied) > 1:  # ties broken by seeded rock-paper-scissors
                assert any(r.order == tied for r in rps), (tied, rps)
        for s in loser_seats:
            if gifts[s]:
                self.hands[s] = self.minus(self.hands[s], gifts[s], f"tribute of seat {s}")
                self.pool = self.plus(self.pool, gifts[s])
        self.plan = TributePlan(list(plan.winners), list(plan.losers), plan.leader)

    def next_tribute_step(self) -> tuple[Phase, int] | None:
        """Who must act next in the tribute: pick (§10), return (§11, D-ZLJ-11), take back (§11)."""
        plan = self.plan
        assert plan is not None
        for s, q in plan.winners:
            if q and s not in plan.picked:
                return (Phase.PICK, s)
        for s, _ in plan.winners:
            owed = min(plan.picked.get(s, 0), sum(1 for c in self.hands[s] if level(c) in RETURN_LEVELS))
            if owed and s not in plan.returned:
                return (Phase.RETURN, s)
        for s, gave in plan.losers:
            if min(gave, len(self.pool)) and s not in plan.taken_back:
                return (Phase.TAKE_BACK, s)
        return None

    def on_pick(self, e: TributePicked, seat: int | None) -> None:
        plan = self.plan
        assert plan is not None and e.cards is not None
        assert self.next_tribute_step() == (Phase.PICK, e.seat) and e.seat == seat
        assert len(e.cards) == e.count == dict(plan.winners)[e.seat]
        self.pool = self.minus(self.pool, e.cards, "pick")
        self.hands[e.seat] = self.plus(self.hands[e.seat], e.cards)
        self.received[e.seat] += len(e.cards)
        plan.picked[e.seat] = len(e.cards)

    def on_return(self, e: TributeReturned, seat: int | None) -> None:
        plan = self.plan
        assert plan is not None and e.cards is not None
        assert self.next_tribute_step() == (Phase.RETURN, e.seat) and e.seat == seat
        in_range = sum(1 for c in self.hands[e.seat] if level(c) in RETURN_LEVELS)
        owed = min(plan.picked[e.seat], in_range)
        if owed < plan.picked[e.seat]:
            self.stats.return_shortfalls += 1
        assert len(e.cards) == e.count == owed
        assert all(level(c) in RETURN_LEVELS for c in e.cards), "returned cards are 5..Q (§11)"
        self.hands[e.seat] = self.minus(self.hands[e.seat], e.cards, "return")
        self.pool = self.plus(self.pool, e.cards)
        plan.returned.add(e.seat)

    def on_take_back(self, e: ReturnTakenBack, seat: int | None) -> None:
        plan = self.plan
        assert plan is not None and e.cards is not None
        assert self.next_tribute_step() == (Phase.TAKE_BACK, e.seat) and e.seat == seat
        assert len(e.cards) == e.count == min(dict(plan.losers)[e.seat], len(self.pool))
        self.pool = self.minus(self.pool, e.cards, "take back")
        self.hands[e.seat] = self.plus(self.hands[e.seat], e.cards)
        self.received[e.seat] += len(e.cards)
        plan.taken_back.add(e.seat)

    # -- play (§3-§6) --

    def on_played(self, e: CardsPlayed, seat: int | None) -> None:
        assert e.seat == seat
        combo = classify(e.cards)
        assert combo is not None, f"{e.cards} is no combination (§3)"
        assert (e.combo.kind.value, e.combo.size, e.combo.top) == combo
        if self.current is not None:
            current = classify(self.current)
            assert current is not None and beats(combo, current), f"{e.cards} does not beat {self.current} (§4)"
        self.hands[e.seat] = self.minus(self.hands[e.seat], e.cards, "play")
        self.current, self.maker, self.passed = e.cards, e.seat, set()
        self.expected_turn = self.holders_after(e.seat)

    def on_four_take(self, e: FourTake, seat: int | None) -> None:
        assert e.seat == seat and self.current is not None
        assert is_four_take(e.fours, self.current), (e.fours, self.current)
        assert Counter(e.taken) == Counter(self.current) and e.taken_from == self.maker
        if e.taken_from in self.out:
            self.stats.four_takes_of_out_players += 1  # D-ZLJ-3: they stay out
        self.hands[e.seat] = self.plus(self.minus(self.hands[e.seat], e.fours, "four-take"), e.taken)
        self.received[e.seat] += len(e.taken)
        self.current, self.maker, self.passed = e.fours, e.seat, set()
        self.expected_turn = self.holders_after(e.seat)
        self.stats.four_takes += 1

    def on_round_won(self, e: RoundWon) -> None:
        assert e.winner == self.maker
        assert all(s in self.passed for s in range(SEATS) if s != self.maker and self.hands[s]), "D-ZLJ-4"
        # 接风 (§6, D-ZLJ-5): the maker leads, or when out the next seat still holding cards
        expected = e.winner if self.hands[e.winner] else self.holders_after(e.winner)
        assert e.leader == expected, (e, expected)
        if e.leader != e.winner:
            self.stats.jiefeng += 1
        self.current, self.maker, self.passed = None, None, set()
        self.expected_turn = e.leader

    # -- deal and match end (§7-§8) --

    def on_deal_ended(self, e: DealEnded) -> None:
        r = e.result
        assert r.deal == self.deal
        assert r.order == tuple(self.out)
        assert whole_team_out(self.out) and not whole_team_out(self.out[:-1]), "ended exactly when a team was out"
        caught = tuple(s for s in range(SEATS) if s not in self.out)
        assert sorted(r.caught) == list(caught)
        assert all(self.hands[s] for s in caught) and not any(self.hands[s] for s in self.out)
        head = team(self.out[0])
        head_places = tuple(i + 1 for i, s in enumerate(self.out) if team(s) == head)
        outcome = OUTCOME_TABLE[(head_places, len(self.out))]
        assert r.outcome is outcome, (self.out, r.outcome, outcome)
        assert r.head_team is (Team.A if head == 0 else Team.B)
        winners = {Outcome.DRAW: None, Outcome.REVERSE: 1 - head}.get(outcome, head)
        assert r.winners == (None if winners is None else (Team.A if winners == 0 else Team.B))
        points = [0, 0]
        if winners is not None:
            points[winners] = TEAM_POINTS[outcome]
        individual = [CAUGHT_POINTS if s in caught else PLACE_POINTS[self.out.index(s) + 1] for s in range(SEATS)]
        assert list(r.team_points) == points and list(r.individual) == individual, r
        self.team_totals = [a + b for a, b in zip(self.team_totals, points, strict=True)]
        self.individual = [a + b for a, b in zip(self.individual, individual, strict=True)]
        self.results.append(r)
        self.previous = r
        self.stats.deals += 1
        self.stats.outcomes[outcome] += 1
        self.expected_turn = (r.order[0] + 1) % SEATS  # §9: the 大贡's next seat cuts

    def on_match_ended(self, e: MatchEnded) -> None:
        assert self.deal == self.options.deals, "the match ends after its last deal, not before"
        assert list(e.team_points) == self.team_totals
        assert list(e.individual) == self.individual
        assert e.team_points == tuple(sum(r.team_points[t] for r in self.results) for t in (0, 1))
        self.ended = True
        self.expected_turn = None

    # -- after every step --

    def check_state(self, state: State) -> None:
        assert conserved(state)
        everything = [c for h in state.hands for c in h]
        everything.extend(state.table)
        everything.extend(state.played)
        if state.tribute is not None:
            everything.extend(c for c, _ in state.tribute.pool)
        assert tuple(sorted(everything)) == TWO_DECKS, "the 108 cards are not exactly two decks (§14)"
        assert list(state.hands) == self.hands, (state.hands, self.hands)
        for s in range(SEATS):
            assert len(state.hands[s]) <= HAND_SIZE + self.received[s]
        assert list(state.out) == self.out
        assert (state.tribute.pool_cards() if state.tribute else ()) == self.pool
        if state.phase is Phase.ENDED:
            assert self.ended and state.turn is None
            return
        assert state.turn is not None
        if state.phase is Phase.PLAY:
            assert state.turn not in state.out, "the acting seat is never out"
            assert state.hands[state.turn], "the acting seat holds cards"
            assert state.turn == self.expected_turn, (state.turn, self.expected_turn)
            assert (state.current_cards or None) == self.current and state.current_by == self.maker
        elif state.phase is Phase.CUT:
            assert state.turn == self.expected_turn
        else:
            assert self.plan is not None and self.next_tribute_step() == (state.phase, state.turn)


def play_match(match_seed: int, options: Options, stats: Stats) -> None:
    rng = SeededRandom(match_seed)
    auditor = Auditor(options, stats)
    state = State()
    start = StartMatch(rng.next64(), options)
    events = decide(state, start)
    auditor.check_batch(start, events, None)
    auditor.check_opening(events)
    for e in events:
        state = evolve(state, e)
    auditor.check_state(state)
    steps = 0
    while state.phase is not Phase.ENDED:
        steps += 1
        assert steps <= MAX_STEPS_PER_MATCH, f"match {match_seed} does not end"
        seat = state.turn
        assert seat is not None
        if state.phase is Phase.PLAY:  # between deals `out` still shows the finished deal
            assert seat not in state.out and state.hands[seat]
        actions = legal_actions(state, seat)
        assert actions, f"seat {seat} is to act but has no legal action"
        action = actions[rng.below(len(actions))]
        if isinstance(action, Cut):
            action = Cut(seat, action.count, rng.next64())
        assert action.seat == seat
        events = decide(state, action)
        auditor.check_batch(action, events, seat)
        if isinstance(action, Cut):
            auditor.check_opening(events)
        for e in events:
            state = evolve(state, e)
        auditor.check_state(state)
    assert auditor.deal == options.deals and len(auditor.results) == options.deals
    stats.steps += steps
    stats.matches += 1


def chunk_options(i: int) -> Options:
    """Cycle through the tribute options so both ways of reverse tribute and of resisting are played."""
    reverse = (ReverseTribute.PER_PLAYER, ReverseTribute.TEAM_TOTAL)[i % 2]
    resist = (Resist.BIG_AND_SMALL, Resist.TWO_BIG)[(i // 2) % 2]
    return Options(deals=DEALS_PER_MATCH, reverse_tribute=reverse, resist=resist)


def test_the_run_is_large_enough() -> None:
    assert CHUNKS * MATCHES_PER_CHUNK * DEALS_PER_MATCH >= 2000


@pytest.mark.timeout(300)
@pytest.mark.parametrize("chunk", range(examples(CHUNKS)))  # all of them unless PAIJU_EXAMPLES scales down
def test_random_playouts(chunk: int) -> None:
    stats = Stats()
    started = time.perf_counter()
    for m in range(MATCHES_PER_CHUNK):
        i = chunk * MATCHES_PER_CHUNK + m
        play_match(0x5A6C_0000 + i, chunk_options(i), stats)
    elapsed = time.perf_counter() - started
    print(f"chunk {chunk}: {stats.deals} deals, {stats.steps} steps in {elapsed:.2f}s; {stats}")
    assert stats.matches == MATCHES_PER_CHUNK
    assert stats.deals == MATCHES_PER_CHUNK * DEALS_PER_MATCH
    # Every outcome, a four-take, a 接风, a resistance of each option and a tribute happen in every chunk
    # (each is seen ~20+ times per chunk with these seeds, so this is no coincidence of the seeds).
    assert set(stats.outcomes) == set(Outcome), stats.outcomes
    assert stats.four_takes > 0
    assert stats.jiefeng > 0
    assert stats.resistances[Resist.BIG_AND_SMALL] > 0 and stats.resistances[Resist.TWO_BIG] > 0, stats.resistances
    assert stats.tributes > 0 and stats.team_total_tributes > 0
