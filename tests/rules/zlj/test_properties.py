"""Property tests of the 砸六家 core on reachable states (Hypothesis, derandomized: no flakes).

A `Recipe` is what Hypothesis draws: a match seed, the options (deals 1..6, reverse tribute, resist), a
list of choice indices (the i-th action takes ``legal[choices[i] % len(legal)]``; after the list runs out a
seeded stream continues), the seeds of the cuts, and a stop target: a step count, a phase (cut, tribute
pick, return, take-back), a lead or a follow in play, just after a four-take, just after a 接风, someone out
while play goes on, or the end of the match — from a drawn deal on. `play` turns a recipe into the state
and the events that reach it, so every phase of the game is covered (`test_the_strategy_reaches_every_phase`).

On those states:
- cards are conserved (`conserved`, and independently: exactly two full decks, §14);
- ``decide`` accepts every listed action, and for random candidate commands of the acting seat accepts
  exactly those that have the same type and the same ranks (`same_choice`) as a listed action and whose
  cards are really there; an independent reading of §3-§5 and §9-§11 agrees with the list, also over every
  combination shape the hand can form (legal or not) and every small tribute choice;
- commands of every other seat are rejected; every rejection is a `RuleError` with a reason and leaves the
  state equal and unmutated;
- replaying the events from ``State()`` gives the live state, twice the same;
- a seat's view shows its hand and nothing of other hands or hidden tribute cards (§14); a spectator sees
  no hand; ``redact`` strips other hands and the seed from ``HandsDealt`` and tribute cards from those not
  receiving them.
"""

from __future__ import annotations

import copy
import pickle
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest
from hypothesis import Phase as Stage
from hypothesis import find, given, settings
from hypothesis import strategies as st

from paiju.rules.cards import CARD_KINDS, RANK_SYMBOLS, Card, Cards
from paiju.rules.errors import RuleError
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import (
    Command,
    Cut,
    EndMatch,
    Event,
    Options,
    Pass,
    Phase,
    PickTribute,
    Play,
    ReturnTribute,
    StartMatch,
    State,
    TakeBack,
    Timeout,
    conserved,
    decide,
    default_action,
    legal_actions,
    redact,
    replay,
    same_choice,
    view,
)
from paiju.rules.zlj.model import (
    FourTake,
    HandsDealt,
    Resist,
    ReturnTakenBack,
    ReverseTribute,
    RoundWon,
    Transfer,
    TributeGiven,
    TributePicked,
    TributeReturned,
)

from ...support.profiles import profile

SEATS = 6
TWO_DECKS: Cards = tuple(sorted(Card(c) for c in range(CARD_KINDS) for _ in range(2)))
ORDER = "456789TJQKA23"
"""§2 order of the suited ranks, low to high; SJ is 13 and BJ 14."""
SJ_LEVEL, BJ_LEVEL, FOUR_LEVEL, ACE_LEVEL = 13, 14, 0, 10
RETURN_LEVELS = range(ORDER.index("5"), ORDER.index("Q") + 1)


def level(c: int) -> int:
    if c == 52:
        return SJ_LEVEL
    if c == 53:
        return BJ_LEVEL
    return ORDER.index(RANK_SYMBOLS[c // 4])


# --- reachable states ------------------------------------------------------------------------------

TRIBUTE_PHASES = ("tribute", "return", "take_back")
BOMB_TARGETS = ("bomb", "four_bomb")
PLAY_TARGETS = ("lead", "follow", "four_take", "jiefeng", "someone_out", *BOMB_TARGETS)
TARGETS = ("steps", "cut", *TRIBUTE_PHASES, *PLAY_TARGETS, "ended")


@dataclass(frozen=True)
class Recipe:
    seed: int
    options: Options
    choices: tuple[int, ...]
    tail_seed: int
    cut_seeds: tuple[int, ...]
    target: str
    from_deal: int
    nth: int
    steps: int


class Reached:
    """A reachable state with the events and actions that lead to it (a plain class: Hypothesis prints its
    short repr, the recipe, rather than the whole state)."""

    __slots__ = ("actions", "events", "recipe", "state")

    def __init__(self, recipe: Recipe, state: State, events: tuple[Event, ...], actions: tuple[Command, ...]) -> None:
        self.recipe = recipe
        self.state = state
        self.events = events
        self.actions = actions

    def __repr__(self) -> str:  # what Hypothesis prints for a falsifying example: enough to reproduce it
        s = self.state
        return f"play({self.recipe!r})  # -> deal {s.deal}, {s.phase.value}, turn {s.turn}, {len(self.actions)} actions"


def at_target(recipe: Recipe, state: State, events: tuple[Event, ...], step: int) -> bool:
    t = recipe.target
    if t == "steps":
        return step >= recipe.steps
    if state.deal < recipe.from_deal:
        return False
    if t in ("cut", *TRIBUTE_PHASES):
        return state.phase.value == t
    if state.phase is not Phase.PLAY:
        return False
    if t == "lead":
        return state.current is None
    if t == "follow":
        return state.current is not None
    if t == "four_take":
        return any(isinstance(e, FourTake) for e in events)
    if t == "jiefeng":
        return any(isinstance(e, RoundWon) and e.leader != e.winner for e in events)
    if t == "someone_out":
        return bool(state.out)
    if t in BOMB_TARGETS:  # a bomb (of 4s) to answer by a seat holding two or more fours (four-takes, §4-§5)
        fours = sum(1 for c in state.hands[state.turn or 0] if level(c) == FOUR_LEVEL)
        current = classify(state.current_cards) if state.current_cards else None
        if current is None or current[0] != "bomb" or fours < 2:
            return False
        return t == "bomb" or current[2] == FOUR_LEVEL
    return False  # "ended": play to the end


def play(recipe: Recipe) -> Reached:
    """Play a match by the recipe until its target (the nth time it holds) or the end of the match."""
    state = State()
    start = StartMatch(recipe.seed, recipe.options)
    events = decide(state, start)
    all_events = list(events)
    actions: list[Command] = [start]
    state = replay(events, state)
    tail = SeededRandom(recipe.tail_seed)
    hits = 0
    cuts = 0
    step = 0
    while state.phase is not Phase.ENDED:
        if at_target(recipe, state, events, step):
            hits += 1
            if hits >= recipe.nth or recipe.target == "steps":
                break
        seat = state.turn
        assert seat is not None
        legal = legal_actions(state, seat)
        i = recipe.choices[step] if step < len(recipe.choices) else tail.next64()
        action = legal[i % len(legal)]
        if isinstance(action, Cut):
            action = Cut(seat, action.count, recipe.cut_seeds[cuts % len(recipe.cut_seeds)])
            cuts += 1
        events = decide(state, action)
        actions.append(action)
        all_events.extend(events)
        state = replay(events, state)
        step += 1
    return Reached(recipe, state, tuple(all_events), tuple(actions))


U64 = st.integers(0, 2**64 - 1)


@st.composite
def recipes(draw: st.DrawFn, targets: tuple[str, ...] = TARGETS) -> Recipe:
    target = draw(st.sampled_from(targets))
    later = target in ("cut", *TRIBUTE_PHASES)
    # a cut follows deals 1..deals-1; tribute phases and bombs to answer are rarer: the first one will do
    rare = later or target in BOMB_TARGETS
    deals = draw(st.integers(4 if rare else 1, 6))
    from_deal = draw(st.integers(1, deals - 1 if target == "cut" else 1 if rare else deals))
    nth = draw(st.integers(1, 1 if rare else 4))
    options = Options(
        deals=deals,
        reverse_tribute=draw(st.sampled_from(ReverseTribute)),
        resist=draw(st.sampled_from(Resist)),
    )
    return Recipe(
        seed=draw(U64),
        options=options,
        choices=tuple(draw(st.lists(st.integers(0, 2**16 - 1), max_size=48))),
        tail_seed=draw(U64),
        cut_seeds=tuple(draw(st.lists(U64, min_size=1, max_size=5))),
        target=target,
        from_deal=from_deal,
        nth=nth,
        steps=draw(st.integers(0, 1500)),
    )


def reachable(targets: tuple[str, ...] = TARGETS) -> st.SearchStrategy[Reached]:
    return recipes(targets).map(play)


# --- helpers -----------------------------------------------------------------------------------------


def is_subset(cards: Cards, source: Cards) -> bool:
    return not Counter(cards) - Counter(source)


class Guard:
    """Calls ``decide`` and checks that it left the state equal and unmutated, and how it rejected."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.twin = copy.deepcopy(state)
        self.frozen = pickle.dumps(state)

    def attempt(self, command: Command) -> tuple[Event, ...] | RuleError:
        result: tuple[Event, ...] | RuleError
        try:
            result = decide(self.state, command)
        except RuleError as e:
            assert isinstance(e.reason, str) and e.reason.strip(), f"{command}: a rejection needs a reason"
            assert str(e).strip()
            result = e
        else:
            assert isinstance(result, tuple) and result, f"{command} was accepted without events"
        assert self.state == self.twin, f"decide({command}) changed the state"
        assert pickle.dumps(self.state) == self.frozen, f"decide({command}) mutated the state"
        return result


def source_of(state: State, command: Command) -> Cards:
    """Where the command's cards must come from: the hand (play, return) or the tribute pool (pick, take back)."""
    assert hasattr(command, "seat")
    if isinstance(command, PickTribute | TakeBack):
        return state.tribute.pool_cards() if state.tribute is not None else ()
    return state.hands[command.seat] if 0 <= command.seat < SEATS else ()


def listed_oracle(state: State, command: Command, legal: tuple[Command, ...]) -> bool:
    """Accepted iff a listed action has the same type and the same ranks, and the cards are there (§1)."""
    if isinstance(command, Cut):
        return any(isinstance(a, Cut) and a.count == command.count for a in legal)
    if isinstance(command, Pass):
        return any(isinstance(a, Pass) for a in legal)
    assert isinstance(command, Play | PickTribute | ReturnTribute | TakeBack)
    return is_subset(command.cards, source_of(state, command)) and any(
        type(a) is type(command) and same_choice(a.cards, command.cards) for a in legal
    )


def classify(cards: Cards) -> tuple[str, int, int] | None:
    """§3, read independently: (kind, cards, top level) or None."""
    lv = sorted(level(c) for c in cards)
    n = len(lv)
    if n == 0:
        return None
    if n == 1:
        return ("single", 1, lv[0])
    if lv[0] >= SJ_LEVEL:
        return ("joker bomb", n, BJ_LEVEL) if lv[0] == SJ_LEVEL and lv[-1] == BJ_LEVEL and n <= 4 else None
    if lv[-1] >= SJ_LEVEL:
        return None
    if lv[0] == lv[-1]:
        return ("pair", 2, lv[0]) if n == 2 else ("bomb", n, lv[0])
    counts = Counter(lv)
    ranks = sorted(counts)
    per = set(counts.values())
    if ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) >= 3 and ranks[-1] <= ACE_LEVEL:
        if per == {1}:
            return ("straight", n, ranks[-1])
        if per == {2}:
            return ("pair-straight", n, ranks[-1])
    return None


def beats(play_: tuple[str, int, int], current: tuple[str, int, int]) -> bool:
    """§4 (D-ZLJ-1, D-ZLJ-2), the four-take aside."""
    if current[0] == "joker bomb":
        return False
    if play_[0] == "joker bomb":
        return True
    if play_[0] == "bomb":
        return current[0] != "bomb" or (play_[1], play_[2]) > (current[1], current[2])
    return play_[0] == current[0] and play_[1] == current[1] and play_[2] > current[2]


def rules_oracle(state: State, command: Command) -> bool | None:
    """Whether the rules allow ``command`` of the acting seat, read from the rules file (None: not judged)."""
    seat = state.turn
    if isinstance(command, Cut):
        return state.phase is Phase.CUT and 1 <= command.count <= 107  # §9: 1..107 cards
    if isinstance(command, Pass):
        return state.phase is Phase.PLAY and bool(state.current_cards)  # the leader must play (§6)
    assert isinstance(command, Play | PickTribute | ReturnTribute | TakeBack)
    cards = command.cards
    if not is_subset(cards, source_of(state, command)):
        return False
    tribute = state.tribute
    if isinstance(command, Play):
        if state.phase is not Phase.PLAY:
            return False
        combo = classify(cards)
        if not state.current_cards:
            return combo is not None
        current = classify(state.current_cards)
        assert current is not None
        # §5: m-1 fours take a bomb of m cards whose rank is not 4
        fours = all(level(c) == FOUR_LEVEL for c in cards)
        if fours and current[0] == "bomb" and current[2] != FOUR_LEVEL and len(cards) == current[1] - 1:
            return True
        return combo is not None and beats(combo, current)
    if tribute is None or seat is None:
        return False
    if isinstance(command, PickTribute):  # §10: the winner's quota, from the pool
        return state.phase is Phase.PICK and len(cards) == dict(tribute.winners)[seat]
    if isinstance(command, ReturnTribute):  # §11, D-ZLJ-11: as many as received, 5..Q, or all it has in 5..Q
        if state.phase is not Phase.RETURN:
            return False
        received = sum(len(t.cards) for t in tribute.picks if t.receiver == seat)
        in_range = sum(1 for c in state.hands[seat] if level(c) in RETURN_LEVELS)
        return len(cards) == min(received, in_range) and all(level(c) in RETURN_LEVELS for c in cards)
    # TakeBack, §11: as many as it gave, or what is left of the returned cards
    return state.phase is Phase.TAKE_BACK and len(cards) == min(dict(tribute.losers)[seat], len(tribute.pool))


def choice_key(action: Command) -> tuple[object, ...]:
    if isinstance(action, Cut):
        return ("cut", action.count)
    cards = getattr(action, "cards", ())
    return (type(action).__name__, tuple(sorted(level(c) for c in cards)))


@st.composite
def sub_multiset(draw: st.DrawFn, source: Cards, max_size: int = 10) -> Cards:
    if not source:
        return ()
    picks = draw(st.lists(st.integers(0, len(source) - 1), unique=True, max_size=min(max_size, len(source))))
    return tuple(source[i] for i in picks)


ANY_CARD = st.integers(0, CARD_KINDS - 1).map(Card)


def same_ranks_variant(data: st.DataObject, cards: Cards, source: Cards) -> Cards:
    """Other cards of ``source`` with exactly the same ranks as ``cards`` (other suits where there are some)."""
    by_level: dict[int, list[Card]] = {}
    for c in source:
        by_level.setdefault(level(c), []).append(c)
    chosen: list[Card] = []
    for lv, n in Counter(level(c) for c in cards).items():
        pool = by_level[lv]
        idx = data.draw(st.lists(st.integers(0, len(pool) - 1), unique=True, min_size=n, max_size=n))
        chosen.extend(pool[i] for i in idx)
    return tuple(data.draw(st.permutations(chosen)))


def candidate(data: st.DataObject, state: State, seat: int, legal: tuple[Command, ...]) -> Command:
    """A random command for ``seat``: plays, passes, picks, returns, take-backs from its hand or the pool,
    cuts of any count, suit variants and small mutations of listed actions."""
    hand = state.hands[seat] if 0 <= seat < SEATS else ()
    pool = state.tribute.pool_cards() if state.tribute is not None else ()
    kind = data.draw(st.sampled_from(("play", "pass", "pick", "return", "take_back", "cut", "variant", "mutant")))
    if kind == "pass":
        return Pass(seat)
    if kind == "cut":
        count = data.draw(st.sampled_from((0, 108, -1, 1, 107, 500)) | st.integers(1, 107))
        return Cut(seat, count, data.draw(U64))
    if kind in ("variant", "mutant"):
        with_cards = [a for a in legal if isinstance(a, Play | PickTribute | ReturnTribute | TakeBack)]
        if with_cards:
            base = data.draw(st.sampled_from(with_cards))
            source = source_of(state, base)
            cards = same_ranks_variant(data, base.cards, source)
            if kind == "mutant":
                how = data.draw(st.sampled_from(("drop", "add", "swap", "outsider")))
                extra = data.draw(st.sampled_from(source)) if source else data.draw(ANY_CARD)
                if how == "drop" and cards:
                    cards = cards[1:]
                elif how == "add":
                    cards = (*cards, extra)
                elif how == "swap" and cards:
                    cards = (*cards[1:], extra)
                else:
                    cards = (*cards, data.draw(ANY_CARD))
            return replace(base, seat=seat, cards=cards)
        kind = "play"
    source = pool if kind in ("pick", "take_back") else hand
    if kind == "return" and data.draw(st.booleans()):
        source = tuple(c for c in source if level(c) in RETURN_LEVELS)
    cards = data.draw(sub_multiset(source))
    if data.draw(st.integers(0, 4)) == 0:
        cards = (*cards, data.draw(ANY_CARD))
    if kind == "pick":
        return PickTribute(seat, cards)
    if kind == "return":
        return ReturnTribute(seat, cards)
    if kind == "take_back":
        return TakeBack(seat, cards)
    return Play(seat, cards)


# --- the strategy covers the game -----------------------------------------------------------------

COVERAGE: dict[str, Callable[[Reached], bool]] = {
    "cut": lambda r: r.state.phase is Phase.CUT,
    "tribute pick": lambda r: r.state.phase is Phase.PICK,
    "return": lambda r: r.state.phase is Phase.RETURN,
    "take back": lambda r: r.state.phase is Phase.TAKE_BACK,
    "lead": lambda r: r.state.phase is Phase.PLAY and r.state.current is None,
    "follow": lambda r: r.state.phase is Phase.PLAY and r.state.current is not None,
    "after a four-take": lambda r: r.state.phase is Phase.PLAY and isinstance(r.events[-1], FourTake),
    "after a 接风": lambda r: (
        r.state.phase is Phase.PLAY and any(isinstance(e, RoundWon) and e.leader != e.winner for e in r.events[-2:])
    ),
    "a bomb to answer": lambda r: (
        r.state.phase is Phase.PLAY and r.state.current is not None and r.state.current.is_bomb
    ),
    "a bomb of 4s to answer holding fours": lambda r: (
        r.state.phase is Phase.PLAY
        and r.state.current_cards != ()
        and r.state.current is not None
        and r.state.current.kind.value == "bomb"
        and all(level(c) == FOUR_LEVEL for c in r.state.current_cards)
        and sum(1 for c in r.state.hands[r.state.turn or 0] if level(c) == FOUR_LEVEL) >= 2
    ),
    "someone out, play goes on": lambda r: r.state.phase is Phase.PLAY and len(r.state.out) >= 2,
    "a later deal in play": lambda r: r.state.phase is Phase.PLAY and r.state.deal >= 3,
    "ended": lambda r: r.state.phase is Phase.ENDED and r.state.deal == 6,
}


COVERAGE_TARGETS: dict[str, tuple[str, ...]] = {
    "cut": ("cut",),
    "tribute pick": ("tribute",),
    "return": ("return",),
    "take back": ("take_back",),
    "lead": ("lead",),
    "follow": ("follow",),
    "after a four-take": ("four_take",),
    "after a 接风": ("jiefeng",),
    "a bomb to answer": ("bomb",),
    "a bomb of 4s to answer holding fours": ("four_bomb",),
    "someone out, play goes on": ("someone_out",),
    "a later deal in play": ("lead", "follow"),
    "ended": ("ended",),
}
"""The targets the property tests draw for each phase (they run once per target, see `GROUPS`)."""


@pytest.mark.parametrize("name", COVERAGE)
def test_the_strategy_reaches_every_phase(name: str) -> None:
    # generate only: the first state found is enough, shrinking it would only cost time
    strategy = reachable(COVERAGE_TARGETS[name])
    found = find(strategy, COVERAGE[name], settings=settings(profile(300, scaled=False), phases=[Stage.generate]))
    assert COVERAGE[name](found)


# --- properties --------------------------------------------------------------------------------------


@profile(150)
@given(reachable())
def test_cards_are_conserved(r: Reached) -> None:
    state = r.state
    assert conserved(state)
    everything = [c for hand in state.hands for c in hand]
    everything.extend(state.table)
    everything.extend(state.played)
    if state.tribute is not None:
        everything.extend(c for c, _ in state.tribute.pool)
    assert tuple(sorted(everything)) == TWO_DECKS, "hands + table + played + tribute pool must be two full decks"
    assert sorted(state.dealt) == list(TWO_DECKS)


GROUPS = {target: (target,) for target in ("cut", *TRIBUTE_PHASES, *PLAY_TARGETS)} | {"any": ("steps", "ended")}
"""The targeted tests run once per target, so that every phase gets its share of examples (Hypothesis
does not draw `sampled_from` evenly)."""


@pytest.mark.parametrize("group", GROUPS)
@profile(20)
@given(data=st.data())
def test_every_listed_action_is_accepted(group: str, data: st.DataObject) -> None:
    r = data.draw(reachable(GROUPS[group]))
    state = r.state
    guard = Guard(state)
    for seat in range(SEATS):
        if seat != state.turn:
            assert legal_actions(state, seat) == (), f"seat {seat} is not to act but has legal actions"
    if state.turn is None:
        assert state.phase in (Phase.ENDED, Phase.NEW)
        return
    seat = state.turn
    legal = legal_actions(state, seat)
    assert legal, "the seat to act always has a legal action"
    keys = [choice_key(a) for a in legal]
    assert len(keys) == len(set(keys)), "one representative per choice of ranks"
    for listed in legal:
        assert getattr(listed, "seat", None) == seat
        action = replace(listed, seed=data.draw(U64)) if isinstance(listed, Cut) else listed
        assert rules_oracle(state, action), f"listed {action} is against the rules"
        result = guard.attempt(action)
        assert not isinstance(result, RuleError), f"listed {action} rejected: {result}"
        assert conserved(replay(result, state))
    # a timeout plays the default action, which is one of the listed choices (§13)
    default = default_action(state, seat, data.draw(U64))
    assert choice_key(default) in keys, f"the default action {default} is not a listed choice"
    timed = replace(state, options=replace(state.options, turn_seconds=30))
    assert not isinstance(Guard(timed).attempt(Timeout(seat, 7)), RuleError)
    assert isinstance(guard.attempt(Timeout(seat, 7)), RuleError), "no timer, no timeout (§13)"


@pytest.mark.parametrize("group", GROUPS)
@profile(20)
@given(data=st.data())
def test_decide_accepts_exactly_the_listed_choices(group: str, data: st.DataObject) -> None:
    r = data.draw(reachable(GROUPS[group]))
    state = r.state
    seat = state.turn
    if seat is None:
        return
    legal = legal_actions(state, seat)
    guard = Guard(state)
    for _ in range(30):
        command = candidate(data, state, seat, legal)
        expected = listed_oracle(state, command, legal)
        assert rules_oracle(state, command) == expected, f"legal_actions and the rules disagree on {command}"
        result = guard.attempt(command)
        accepted = not isinstance(result, RuleError)
        assert accepted == expected, f"{command}: decide {'accepted' if accepted else 'rejected'} ({result})"


def level_shapes(source: Cards, max_cards: int | None = None) -> set[tuple[int, ...]]:
    """Level multisets worth asking about, built from ``source`` without the engine's help.

    With ``max_cards``: every sub-multiset by level up to that many cards (tribute choices). Without: every
    n-of-a-kind (singles, pairs, bombs, and the joker pairs §3 forbids), every mix of jokers, every run of 2+
    consecutive levels with 1, 2 or 3 cards each, 2 and 3 included (straights, pair-straights, and the
    shapes §3 forbids: short runs, runs through 2 or 3, triple runs).
    """
    counts = Counter(level(c) for c in source)
    if max_cards is not None:
        shapes: set[tuple[int, ...]] = {()}
        for _ in range(max_cards):
            shapes |= {tuple(sorted((*sh, lv))) for sh in shapes for lv in counts if sh.count(lv) < counts[lv]}
        return shapes
    shapes = set()
    for lv, n in counts.items():
        shapes.update((lv,) * k for k in range(1, n + 1))
    for small in range(counts[SJ_LEVEL] + 1):
        for big in range(counts[BJ_LEVEL] + 1):
            if small + big >= 2:
                shapes.add((SJ_LEVEL,) * small + (BJ_LEVEL,) * big)
    for unit in (1, 2, 3):
        for low in range(SJ_LEVEL):
            for high in range(low + 1, SJ_LEVEL):
                if counts[high] < unit or counts[low] < unit:
                    break
                shapes.add(tuple(x for x in range(low, high + 1) for _ in range(unit)))
    return shapes


def cards_for(shape: tuple[int, ...], source: Cards) -> Cards:
    """Cards of ``source`` with these levels, the highest suits first (``legal_actions`` lists the lowest)."""
    rest = sorted(source, reverse=True)
    chosen = []
    for lv in shape:
        c = next(c for c in rest if level(c) == lv)
        rest.remove(c)
        chosen.append(c)
    return tuple(chosen)


@pytest.mark.parametrize("group", [g for g in GROUPS if g != "cut"])
@profile(20)
@given(data=st.data())
def test_legal_actions_are_exactly_what_the_rules_allow(group: str, data: st.DataObject) -> None:
    """Every structured choice (every combination shape the hand can form, legal or not; every small
    tribute choice) is judged by the rules as read here, by ``legal_actions`` and by ``decide``: all agree."""
    r = data.draw(reachable(GROUPS[group]))
    state = r.state
    seat = state.turn
    if seat is None or state.phase is Phase.CUT:
        return
    legal = legal_actions(state, seat)
    listed = {tuple(sorted(level(c) for c in a.cards)) for a in legal if hasattr(a, "cards")}
    guard = Guard(state)
    make: type[Play] | type[PickTribute] | type[ReturnTribute] | type[TakeBack]
    if state.phase is Phase.PLAY:
        make, source, shapes = Play, state.hands[seat], level_shapes(state.hands[seat])
    elif state.phase is Phase.RETURN:
        # every choice of up to 4 cards 5..Q, and each other rank alone (§11)
        make, source = ReturnTribute, state.hands[seat]
        shapes = level_shapes(tuple(c for c in source if level(c) in RETURN_LEVELS), max_cards=4)
        shapes |= {(level(c),) for c in source}
    else:
        assert state.tribute is not None
        make = PickTribute if state.phase is Phase.PICK else TakeBack
        source = state.tribute.pool_cards()
        shapes = level_shapes(source, max_cards=4)
    allowed = set()
    for shape in shapes:
        command = make(seat, cards_for(shape, source))
        ok = rules_oracle(state, command)
        result = guard.attempt(command)
        assert (not isinstance(result, RuleError)) == ok, f"{command}: the rules say {ok}, decide says {result}"
        if ok:
            allowed.add(shape)
    assert listed == allowed, f"listed but not allowed: {listed - allowed}; allowed but not listed: {allowed - listed}"


@pytest.mark.parametrize("group", GROUPS)
@profile(12)
@given(data=st.data())
def test_other_seats_are_always_rejected(group: str, data: st.DataObject) -> None:
    r = data.draw(reachable(GROUPS[group]))
    state = r.state
    guard = Guard(state)
    legal = legal_actions(state, state.turn) if state.turn is not None else ()
    for seat in (-1, *range(SEATS), 6):
        if seat == state.turn:
            continue
        commands: list[Command] = [candidate(data, state, seat, ()) for _ in range(8)]
        commands.extend(replace(a, seat=seat) for a in legal[:20])  # the acting seat's choices, by someone else
        commands.append(Timeout(seat, 1))
        for command in commands:
            result = guard.attempt(command)
            assert isinstance(result, RuleError), f"{command} from a seat not to act was accepted"
    systems: list[Command] = [StartMatch(1, Options())]
    if state.phase is not Phase.CUT:
        systems.append(EndMatch())
    for system in systems:
        assert isinstance(guard.attempt(system), RuleError), f"{system} accepted in {state.phase.value}"


def test_a_new_table_accepts_only_the_start() -> None:
    state = State()
    guard = Guard(state)
    for seat in range(SEATS):
        assert legal_actions(state, seat) == ()
        for command in (Play(seat, (Card(8),)), Pass(seat), Cut(seat, 5, 1), PickTribute(seat, ()), Timeout(seat)):
            assert isinstance(guard.attempt(command), RuleError)
    assert isinstance(guard.attempt(EndMatch()), RuleError)
    assert isinstance(guard.attempt(StartMatch(1, Options(deals=-1))), RuleError)
    assert not isinstance(guard.attempt(StartMatch(1, Options())), RuleError)


@profile(100)
@given(data=st.data())
def test_replay_rebuilds_the_live_state(data: st.DataObject) -> None:
    r = data.draw(reachable())
    once = replay(r.events)
    twice = replay(r.events, State())
    assert once == r.state
    assert twice == once and repr(twice) == repr(once), "the same events give the same state"
    assert replay(pickle.loads(pickle.dumps(r.events))) == r.state, "events survive serialization"
    k = data.draw(st.integers(0, len(r.events)))
    assert replay(r.events[k:], replay(r.events[:k])) == r.state
    # the actions, decided again from the start, give the same events
    state = State()
    events: list[Event] = []
    for action in r.actions:
        step = decide(state, action)
        events.extend(step)
        state = replay(step, state)
    assert tuple(events) == r.events


def visible_transfers(seat: int, state: State) -> tuple[set[Transfer], set[Transfer]]:
    """§14: tribute cards to the side receiving them (the winners), returned cards to the losers; a giver
    knows what it gave."""
    tribute = state.tribute
    assert tribute is not None
    winners = {s for s, _ in tribute.winners}
    picks = {t for t in tribute.picks if seat in winners or seat == t.giver}
    returns = {t for t in tribute.returns if seat not in winners or seat == t.giver}
    return picks, returns


def random_hand(data: st.DataObject, size: int, unlike: Cards) -> Cards:
    hand = tuple(sorted(data.draw(st.lists(ANY_CARD, min_size=size, max_size=size))))
    if hand == unlike:
        hand = tuple(sorted((Card((hand[0] + 1) % CARD_KINDS), *hand[1:])))
    return hand


def with_hands(state: State, hands: list[Cards]) -> State:
    """A copy with other hands; ``dealt`` follows them so the copy is a consistent state."""
    rest = [c for h in hands for c in h] + list(state.table) + list(state.played)
    if state.tribute is not None:
        rest.extend(state.tribute.pool_cards())
    return replace(state, hands=tuple(hands), dealt=tuple(sorted(rest)))


@pytest.mark.parametrize("group", [g for g in GROUPS if g != "cut"])
@profile(12)
@given(data=st.data())
def test_a_view_shows_only_what_the_seat_may_see(group: str, data: st.DataObject) -> None:
    r = data.draw(reachable(GROUPS[group]))
    state = r.state
    spectator = view(state, None)
    assert spectator.hand == () and spectator.tribute_pool is None
    assert spectator.tribute == () and spectator.returned == ()
    assert spectator.hand_sizes == tuple(len(h) for h in state.hands)
    for seat in range(SEATS):
        mine = view(state, seat)
        assert mine.seat == seat and mine.hand == state.hands[seat]
        assert mine.hand_sizes == tuple(len(h) for h in state.hands)
        # any other seat's hand, replaced by a different hand of the same size: the view does not change
        for other in range(SEATS):
            if other == seat or not state.hands[other]:
                continue
            hands = list(state.hands)
            hands[other] = random_hand(data, len(hands[other]), hands[other])
            assert view(with_hands(state, hands), seat) == mine, f"seat {seat} sees seat {other}'s hand"
        # the hidden cards dealt again among the other seats (sizes kept, all cards conserved): no change
        hidden = [c for s in range(SEATS) if s != seat for c in state.hands[s]]
        shuffled = list(data.draw(st.permutations(hidden)))
        hands = list(state.hands)
        for s in range(SEATS):
            if s != seat:
                hands[s] = tuple(sorted(shuffled[: len(hands[s])]))
                del shuffled[: len(hands[s])]
        moved = with_hands(state, hands)
        assert conserved(moved)
        assert view(moved, seat) == mine, f"seat {seat} sees how the hidden cards lie"
        tribute = state.tribute
        if tribute is None:
            assert mine.tribute_pool is None and mine.tribute == () and mine.returned == ()
            continue
        # tribute and returned cards: only to the players who receive them (§14)
        winners = {s for s, _ in tribute.winners}
        may_see_pool = (state.phase is Phase.PICK and seat in winners) or (
            state.phase is Phase.TAKE_BACK and seat not in winners
        )
        assert (mine.tribute_pool is not None) == may_see_pool
        if may_see_pool:
            assert mine.tribute_pool == tribute.pool_cards()
        picks, returns = visible_transfers(seat, state)
        assert set(mine.tribute) == picks and set(mine.returned) == returns
        # what the seat may not see, changed: the view does not change
        hidden_pool = not may_see_pool and bool(tribute.pool)
        changed = replace(
            tribute,
            pool=tuple((random_hand(data, 1, (c,))[0], o) for c, o in tribute.pool) if hidden_pool else tribute.pool,
            picks=tuple(
                t if t in picks else replace(t, cards=random_hand(data, len(t.cards), t.cards)) for t in tribute.picks
            ),
            returns=tuple(
                t if t in returns else replace(t, cards=random_hand(data, len(t.cards), t.cards))
                for t in tribute.returns
            ),
        )
        assert view(replace(state, tribute=changed), seat) == mine, f"seat {seat} sees hidden tribute cards"


TRIBUTE_EVENTS = (TributeGiven, TributePicked, TributeReturned, ReturnTakenBack)


def may_see_tribute_event(event: Event, seat: int | None) -> bool:
    """§14: the giver, and the side receiving the cards. Tribute goes from losers to winners, returns back."""
    if seat is None:
        return False
    assert isinstance(event, TRIBUTE_EVENTS)
    own_team = {s for s in range(SEATS) if s % 2 == event.seat % 2}
    other_team = set(range(SEATS)) - own_team
    if isinstance(event, TributeGiven | TributeReturned):  # from event.seat to the other team
        return seat == event.seat or seat in other_team
    return seat in own_team  # TributePicked, ReturnTakenBack: cards arriving at event.seat's team


@profile(60)
@given(reachable(("tribute", "return", "take_back", "lead", "ended")))
def test_redacted_events_keep_hands_and_seeds_private(r: Reached) -> None:
    for event in r.events:
        for seat in (None, *range(SEATS)):
            shown = redact(event, seat)
            if isinstance(event, HandsDealt):
                assert isinstance(shown, HandsDealt)
                assert shown.seed is None, "the deal seed determines every hand"
                for s in range(SEATS):
                    assert shown.hands[s] == (event.hands[s] if s == seat else ()), f"seat {seat} got seat {s}'s hand"
                assert shown.sizes == tuple(len(h) for h in event.hands)
                assert (shown.deal, shown.first_drawer, shown.cut, shown.cutter) == (
                    event.deal,
                    event.first_drawer,
                    event.cut,
                    event.cutter,
                )
            elif isinstance(event, TRIBUTE_EVENTS):
                assert type(shown) is type(event)
                if may_see_tribute_event(event, seat):
                    assert shown == event
                else:
                    assert shown.cards is None, f"seat {seat} may not see {event}"
                    assert replace(shown, cards=event.cards) == event
            else:
                assert shown == event, "public events are not redacted"
