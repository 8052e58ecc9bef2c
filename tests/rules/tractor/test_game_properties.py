"""Property tests of the 拖拉机 core on reachable states (Hypothesis, derandomized: the same examples everywhere).

A few seeded games are played by `RandomBot` seats plus a seeded "table" that now and then lets a turn time
out, has a referee penalise or declare 劳改, ticks the round clock, and forces a void deal — so every phase
is reached (`test_the_games_reach_every_phase`). Hypothesis draws a game and a position in it (any step, or
a step of a drawn kind: a part-filled bidding or counter stage, a lead, a follow, a cut, 劳改, a void first
deal, the end), and checks docs/rules/tractor.md §12:

- cards are conserved: hands + the current trick + won tricks are the 324 dealt, 6 copies of each of 54 cards;
- replaying the events from ``State()`` gives an equal state, and the same command gives the same events;
- every action `legal_actions` lists, and every `RandomBot` choice, is accepted by ``decide``; seats that are
  not waiting have no actions and are refused;
- ``view(state, seat).hand`` is the seat's own hand; changing another seat's hand (same size) or another seat's
  concealed bid — a bid into a pass or back — changes nothing in ``view(state, seat)`` (D-TR-6.2);
- ``redact(event, seat)`` never carries another seat's hand, the seed, or another seat's concealed bid.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cache

from hypothesis import given
from hypothesis import strategies as st

from paiju.rules.cards import Card, Cards, Suit, full_decks
from paiju.rules.errors import RuleError
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor.bots import RandomBot
from paiju.rules.tractor.game import decide, legal_actions, replay, waiting
from paiju.rules.tractor.model import (
    Bid,
    BidEntered,
    BidsRevealed,
    ChooseLabourReform,
    ClockTick,
    Command,
    CountersRevealed,
    Cut,
    DeclareLabourReform,
    Event,
    HandsDealt,
    Options,
    Pass,
    Penalize,
    Phase,
    Play,
    Redeal,
    StartGame,
    State,
    Timeout,
)
from paiju.rules.tractor.settlement import LabourReform
from paiju.rules.tractor.view import redact, view

from ...support.profiles import profile

ALL_CARDS = Counter(full_decks(6))
assert len(ALL_CARDS) == 54 and set(ALL_CARDS.values()) == {6}

MAX_STEPS = 1300
GAME_OPTIONS = (
    Options(),
    Options(turn_seconds=10),
    Options(round_minutes=30, turn_seconds=10),  # the clock announces at once: the game ends after 2 deals
    Options(round_minutes=120),
    Options(turn_seconds=10),
    Options(round_minutes=30),
    Options(),
    Options(turn_seconds=10),
)
GAMES = len(GAME_OPTIONS)


@dataclass
class Game:
    """One seeded game: ``states[i]`` is reached by ``events[: marks[i]]``; ``commands[i]`` leads to ``states[i+1]``."""

    states: list[State] = field(default_factory=list)
    marks: list[int] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    kinds: dict[str, list[int]] = field(default_factory=dict)


def kinds_of(state: State) -> list[str]:
    found = ["any"]
    if state.phase is Phase.BID:
        found.append("bid, part-filled" if state.bids else "bid, fresh")
    elif state.phase is Phase.COUNTER:
        found.append("counter, part-filled" if state.bids else "counter, fresh")
    elif state.phase is Phase.PLAY:
        found.append("lead" if state.trick is None else "follow")
    elif state.phase in (Phase.CUT, Phase.REFORM, Phase.FLIP, Phase.ENDED):
        found.append(state.phase.value)
    return found


KINDS = (
    "any",
    "bid, fresh",
    "bid, part-filled",
    "counter, fresh",
    "counter, part-filled",
    "lead",
    "follow",
    "cut",
    "reform",
    "flip",
    "ended",
)


def _table_command(state: State, rng: SeededRandom, bots: list[RandomBot], game: int, now: int) -> Command:
    """The next command: the seeded table's occasional system/referee command, else a bot's (or a timeout)."""
    options = state.options
    if state.phase is Phase.FLIP:
        return Redeal(rng.next64())
    if state.phase is Phase.REFORM:
        assert state.reform_by is not None
        return ChooseLabourReform(
            1 - state.reform_by + 2 * rng.below(2), (LabourReform.LEVELS, LabourReform.POINTS)[rng.below(2)]
        )
    if options.round_minutes and rng.below(30) == 0:
        return ClockTick(now)
    if state.phase is Phase.PLAY:
        if rng.below(250) == 0:
            return Penalize(f"referee-{game}", rng.below(4), 1 + rng.below(3))
        if rng.below(600) == 0:
            return DeclareLabourReform(f"referee-{game}", rng.below(4))
    seats = waiting(state)
    seat = seats[rng.below(len(seats))]
    force_void = state.phase is Phase.BID and (
        (state.first_deal and game % 3 == 0) or (state.deal == 3 and game % 3 == 1)
    )
    if force_void:
        return Pass(seat)
    if options.turn_seconds and rng.below(15) == 0:
        return Timeout(seat, rng.next64())
    command = bots[seat].choose(state, seat)
    if isinstance(command, Cut):
        return Cut(seat, command.count, rng.next64())
    return command


@cache
def game(index: int) -> Game:
    rng = SeededRandom(0x7A11 + index)
    bots = [RandomBot(rng.next64()) for _ in range(4)]
    options = GAME_OPTIONS[index]
    g = Game()
    g.events.extend(decide(State(), StartGame(rng.next64(), options, at=1_000)))
    state = replay(g.events)
    now = 1_000
    voided_once = False
    for _ in range(MAX_STEPS):
        g.states.append(state)
        g.marks.append(len(g.events))
        if state.phase is Phase.ENDED:
            break
        command = _table_command(state, rng, bots, index, now)
        if state.phase is Phase.FLIP:
            voided_once = True
        if voided_once and state.first_deal and index % 3 == 0 and state.phase is Phase.BID:
            command = bots[waiting(state)[0]].choose(state, waiting(state)[0])  # one void first deal is enough
        now += 6
        g.commands.append(command)
        events = decide(state, command)
        g.events.extend(events)
        state = replay(events, state)
    for i, s in enumerate(g.states):
        for kind in kinds_of(s):
            g.kinds.setdefault(kind, []).append(i)
    return g


@dataclass(frozen=True)
class Position:
    """A step of a seeded game (a small handle, so that a failing example prints briefly)."""

    game: int
    step: int

    def unpack(self) -> tuple[Game, int]:
        return game(self.game), self.step


@st.composite
def positions(draw: st.DrawFn) -> Position:
    """A game and a step index in it, of a drawn kind when the game reaches that kind."""
    index = draw(st.integers(0, GAMES - 1))
    g = game(index)
    kind = draw(st.sampled_from(KINDS))
    steps = g.kinds.get(kind) or g.kinds["any"]
    return Position(index, steps[draw(st.integers(0, len(steps) - 1))])


def in_play(state: State) -> Counter[Card]:
    held: Counter[Card] = Counter()
    for hand in state.hands:
        held.update(hand)
    tricks = (*state.tricks, state.trick) if state.trick is not None else state.tricks
    for trick in tricks:
        for play in trick.plays:
            held.update(play)
    return held


# --- coverage of the strategy -------------------------------------------------------------------------


def test_the_games_reach_every_phase() -> None:
    reached = {kind for i in range(GAMES) for kind in game(i).kinds}
    assert reached == set(KINDS)
    assert any(game(i).states[-1].phase is Phase.ENDED for i in range(GAMES))


# --- §12: conservation --------------------------------------------------------------------------------


@profile(150)
@given(positions())
def test_cards_are_conserved(position: Position) -> None:
    g, i = position.unpack()
    state = g.states[i]
    assert Counter(state.dealt) == ALL_CARDS
    assert in_play(state) == ALL_CARDS
    if state.phase is Phase.PLAY and state.trick is None:
        assert len({len(h) for h in state.hands}) == 1, "between tricks every hand has the same size"
    if state.phase is Phase.BID:
        assert [len(h) for h in state.hands] == [81] * 4


# --- §12: replay and determinism ----------------------------------------------------------------------


@profile(60)
@given(positions())
def test_replaying_the_events_gives_an_equal_state(position: Position) -> None:
    g, i = position.unpack()
    events = g.events[: g.marks[i]]
    assert replay(events) == g.states[i]
    assert replay(list(events)) == replay(tuple(events)), "same events, same state"
    if i < len(g.commands):
        again = decide(replay(events), g.commands[i])
        assert list(again) == g.events[g.marks[i] : g.marks[i + 1]], "same state and command, same events"


# --- legal actions --------------------------------------------------------------------------------------


@profile(80)
@given(positions(), st.integers(0, 2**32), st.integers(2, 322))
def test_every_listed_action_and_every_bot_choice_is_accepted(position: Position, bot_seed: int, some_cut: int) -> None:
    g, i = position.unpack()
    state = g.states[i]
    before = copy.deepcopy(state)
    acting = waiting(state)
    assert len(set(acting)) == len(acting)
    for seat in range(4):
        actions = legal_actions(state, seat)
        if seat not in acting:
            assert actions == (), f"seat {seat} is not waiting but has actions"
            for command in (Pass(seat), Play(seat, state.hands[seat][:1]), Cut(seat, 5, 5)):
                try:
                    decide(state, command)
                except RuleError:
                    continue
                raise AssertionError(f"{command} accepted from a seat that is not waiting")
            continue
        assert actions, f"seat {seat} is waiting but has no action"
        if state.phase is Phase.CUT:
            assert [a.count for a in actions if isinstance(a, Cut)] == list(range(1, 324))
            actions = tuple(a for a in actions if isinstance(a, Cut) and a.count in (1, some_cut, 323))
        for action in actions:
            events = decide(state, action)
            assert events, action
        choice = RandomBot(bot_seed).choose(state, seat)
        if isinstance(choice, Cut):
            choice = Cut(seat, choice.count, bot_seed)
        assert decide(state, choice)
    assert state == before


# --- views and redaction (D-TR-6.2, §12) ------------------------------------------------------------------


def _other_hand(hand: Cards) -> Cards:
    """A different hand of the same size."""
    changed = tuple(sorted(Card((c + 7) % 54) for c in hand))
    return changed if changed != hand else tuple(sorted(Card((c + 1) % 54) for c in hand))


def _other_entry(seat: int, entry: Bid | None) -> Bid | None:
    """A bid becomes a pass; a pass becomes a bid."""
    if entry is None:
        return Bid(seat, Suit.DIAMONDS, (Card(0), Card(0)), 2)
    return None


@profile(150)
@given(positions(), st.sampled_from([0, 1, 2, 3, None]))
def test_a_view_shows_the_own_hand_and_hides_other_hands_and_concealed_bids(
    position: Position, seat: int | None
) -> None:
    g, i = position.unpack()
    state = g.states[i]
    seen = view(state, seat)
    assert seen.hand == (state.hands[seat] if seat is not None else ())
    assert seen.hand_sizes == tuple(len(h) for h in state.hands)
    for other in range(4):
        if other == seat:
            continue
        hands = list(state.hands)
        hands[other] = _other_hand(hands[other])
        assert view(replace(state, hands=tuple(hands)), seat) == seen, f"seat {seat} sees seat {other}'s hand"
    if state.phase in (Phase.BID, Phase.COUNTER):
        assert set(seen.acted) == {s for s, _ in state.bids}
        for k, (other, entry) in enumerate(state.bids):
            if other == seat:
                assert seen.my_bid == entry
                continue
            for changed in (_other_entry(other, entry), Bid(other, Suit.HEARTS, (Card(4),), 1)):
                bids = list(state.bids)
                bids[k] = (other, changed)
                assert view(replace(state, bids=tuple(bids)), seat) == seen, (
                    f"seat {seat} learns whether seat {other} bid or passed"
                )


@profile(40)
@given(positions(), st.sampled_from([0, 1, 2, 3, None]))
def test_redact_never_carries_another_hand_the_seed_or_a_concealed_bid(position: Position, seat: int | None) -> None:
    g, i = position.unpack()
    for event in g.events[: g.marks[i]]:
        shown = redact(event, seat)
        assert type(shown) is type(event)
        if isinstance(event, HandsDealt):
            assert isinstance(shown, HandsDealt)
            assert shown.seed is None
            for s in range(4):
                assert shown.hands[s] == (event.hands[s] if s == seat else ()), (seat, s)
            assert (shown.deal, shown.first_drawer, shown.cut) == (event.deal, event.first_drawer, event.cut)
        elif isinstance(event, BidEntered):
            assert isinstance(shown, BidEntered)
            if event.seat == seat:
                assert shown == event
            else:
                assert shown.bid is None and shown.seat == event.seat
                # a bid and a pass look the same to everyone else
                assert (
                    shown
                    == redact(BidEntered(event.seat, None), seat)
                    == redact(BidEntered(event.seat, Bid(event.seat, Suit.SPADES, (Card(4),), 1)), seat)
                )
        elif isinstance(event, BidsRevealed | CountersRevealed):
            assert isinstance(shown, BidsRevealed | CountersRevealed)
            assert shown.winner == event.winner
            assert all(b == event.winner or b.seat == seat for b in shown.bids)
        else:
            assert shown == event
            assert not hasattr(event, "hands") and not hasattr(event, "seed")
