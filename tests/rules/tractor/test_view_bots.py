"""The 拖拉机 heuristic bot deciding from a seat's view (what a client of the engine has, rules §12).

`HeuristicBot.choose_view(view, legal)` must make a legal move — one of the listed actions, or a follow the
rules accept (the engine lists one representative follow) —, decide exactly as `HeuristicBot.choose(state,
seat)` does on the full state, and depend on nothing the seat may not see.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from paiju.rules.cards import Cards
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor.bots import HeuristicBot, Seen, legal_choice
from paiju.rules.tractor.game import decide, legal_actions, replay, waiting
from paiju.rules.tractor.model import (
    SEATS,
    Cut,
    DealSettled,
    Phase,
    Play,
    Redeal,
    StartGame,
    State,
)
from paiju.rules.tractor.view import view

from ...support.profiles import examples

CONCEALED = (Phase.BID, Phase.COUNTER)
SEEDS = range(12)


def decisions(seed: int, deals: int) -> Iterator[tuple[State, int]]:
    """Every decision of ``deals`` deals played by heuristic bots: (state, seat), before the seat acts.

    While bids are concealed every waiting seat decides on the same state (D-TR-6.2). The game goes on with
    the state-based bots' choices; cuts and redeals get the caller's seeds (§8, D-TR-6.6)."""
    seeds = SeededRandom(seed).fork(99)
    state = replay(decide(State(), StartGame(seed)))
    bots = [HeuristicBot(seed * SEATS + s) for s in range(SEATS)]
    settled = 0
    while state.phase is not Phase.ENDED and settled < deals:
        if state.phase is Phase.FLIP:
            commands: list[Any] = [Redeal(seeds.next64())]
        else:
            seats = waiting(state) if state.phase in CONCEALED else waiting(state)[:1]
            assert seats, f"nobody may act in the {state.phase.value} phase"
            commands = []
            for seat in seats:
                yield state, seat
                action = bots[seat].choose(state, seat)
                commands.append(replace(action, seed=seeds.next64()) if isinstance(action, Cut) else action)
        for command in commands:
            events = decide(state, command)
            state = replay(events, state)
            settled += sum(isinstance(e, DealSettled) for e in events)


def scrambled(state: State, seat: int, rng: SeededRandom) -> State:
    """``state`` with the other seats' cards dealt among them anew, each keeping its hand size."""
    others = [c for s in range(SEATS) if s != seat for c in state.hands[s]]
    rng.shuffle(others)
    hands: list[Cards] = []
    for s in range(SEATS):
        if s == seat:
            hands.append(state.hands[s])
        else:
            size = len(state.hands[s])
            hands.append(tuple(sorted(others[:size])))
            others = others[size:]
    return replace(state, hands=tuple(hands))


def legal(state: State, seat: int, action: Any) -> bool:
    """Whether the rules accept ``action`` of ``seat`` now (a cut with any seed)."""
    try:
        decide(state, replace(action, seed=1) if isinstance(action, Cut) else action)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("seed", SEEDS[: examples(len(SEEDS))])  # all of them unless PAIJU_EXAMPLES scales down
def test_the_view_choice_is_legal_and_the_same_as_the_state_choice(seed: int) -> None:
    """Over two deals (a first deal with the flip, bids and counters; a later deal with the dealer's cut):
    at every decision the view holds all the bot reads, and twin bots (same seed) choose the same from the
    view and the engine's legal actions as from the full state — an action the rules accept."""
    by_state = [HeuristicBot(100 + s) for s in range(SEATS)]
    by_view = [HeuristicBot(100 + s) for s in range(SEATS)]
    phases: set[Phase] = set()
    follows_not_listed = 0
    for state, seat in decisions(500 + seed, deals=2):
        actions = legal_actions(state, seat)
        seat_view = view(state, seat)
        assert Seen.of_view(seat_view) == Seen.of_state(state, seat)
        chosen = by_view[seat].choose_view(seat_view, actions)
        assert chosen == by_state[seat].choose(state, seat)
        assert legal(state, seat, chosen), f"{chosen} of seat {seat}"
        if chosen not in actions:
            assert isinstance(chosen, Play) and state.trick is not None  # a follow, not the listed one
            follows_not_listed += 1
        phases.add(state.phase)
    assert phases >= {Phase.BID, Phase.COUNTER, Phase.PLAY, Phase.CUT}
    assert follows_not_listed > 0


@pytest.mark.parametrize("seed", SEEDS[: examples(3)])  # all of them unless PAIJU_EXAMPLES scales down
def test_the_choice_never_depends_on_other_seats_hidden_cards(seed: int) -> None:
    """Redealing the other seats' cards among them (same sizes) changes neither the seat's view nor what it
    knows, nor the choice of the bot from the view or from the state (§12: a seat sees only its own hand)."""
    mix = SeededRandom(seed)
    checked = changed = 0
    for i, (state, seat) in enumerate(decisions(700 + seed, deals=1)):
        if i % 5:
            continue
        other = scrambled(state, seat, mix)
        changed += other.hands != state.hands
        assert view(other, seat) == view(state, seat)
        assert Seen.of_state(other, seat) == Seen.of_state(state, seat)
        actions = legal_actions(state, seat)
        assert legal_actions(other, seat) == actions
        assert HeuristicBot(seat).choose_view(view(other, seat), actions) == HeuristicBot(seat).choose_view(
            view(state, seat), actions
        )
        assert HeuristicBot(seat).choose(other, seat) == HeuristicBot(seat).choose(state, seat)
        checked += 1
    assert checked > 20 and changed > 20


def test_an_illegal_choice_falls_back_to_a_listed_action() -> None:
    """A follow the rules refuse, or anything not listed outside of play, becomes the first listed action."""
    for state, seat in decisions(42, deals=1):
        if state.phase is Phase.PLAY and state.trick is not None and state.trick.lead.size == 1:
            seen = Seen.of_view(view(state, seat))
            actions = legal_actions(state, seat)
            lead_class = state.trick.lead.suit_class
            t = seen.trumps()
            off = [c for c in state.hands[seat] if t.suit_class[c] != lead_class]
            held = [c for c in state.hands[seat] if t.suit_class[c] == lead_class]
            listed = actions[0]
            assert isinstance(listed, Play) and len(actions) == 1
            others = [c for c in held if (c,) != listed.cards]
            if not off or not others:
                continue  # wanted: a seat holding the led suit (two different cards of it) and another suit
            refused = Play(seat, (off[0],))
            assert not legal(state, seat, refused)
            assert legal_choice(seen, refused, actions) == listed
            follow = Play(seat, (others[0],))
            assert legal(state, seat, follow)
            assert legal_choice(seen, follow, actions) == follow  # legal, though not the listed follow
            return
    raise AssertionError("no single lead to follow in this deal")


def test_a_spectator_view_or_no_legal_action_is_refused() -> None:
    state = replay(decide(State(), StartGame(3)))
    with pytest.raises(ValueError, match="spectator"):
        HeuristicBot(1).choose_view(view(state, None), legal_actions(state, 0))
    state = replace(state, bids=((0, None),))
    with pytest.raises(ValueError, match="nothing to do"):
        HeuristicBot(1).choose_view(view(state, 0), legal_actions(state, 0))
