"""The 砸六家 heuristic bot deciding from a seat's view (what a client of the engine has, rules §14).

`HeuristicBot.choose_view(view, legal)` must pick one of the seat's legal actions, decide exactly as
`HeuristicBot.choose(state, seat)` does on the full state, and depend on nothing the seat may not see.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from paiju.rules.cards import Cards
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import (
    Cut,
    Options,
    Pass,
    Phase,
    Play,
    StartMatch,
    State,
    decide,
    legal_actions,
    replay,
    view,
)
from paiju.rules.zlj.bots import HeuristicBot, Seen, legal_choice
from paiju.rules.zlj.model import SEATS

from ...support.profiles import examples

SEEDS = range(24)


def decisions(seed: int, deals: int) -> Iterator[tuple[State, int]]:
    """Every decision of a match played by heuristic bots: (state, seat to act), before the seat acts.

    The match goes on with the choice of the state-based bots; cuts get the caller's shuffle seed (§9)."""
    state = replay(decide(State(), StartMatch(seed, Options(deals=deals))))
    bots = [HeuristicBot(seed * SEATS + s) for s in range(SEATS)]
    cut_seeds = SeededRandom(seed).fork(7)
    while state.phase is not Phase.ENDED:
        seat = state.turn
        assert seat is not None
        yield state, seat
        action = bots[seat].choose(state, seat)
        if isinstance(action, Cut):
            action = replace(action, seed=cut_seeds.next64())
        state = replay(decide(state, action), state)


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


@pytest.mark.parametrize("seed", SEEDS[: examples(len(SEEDS))])  # all of them unless PAIJU_EXAMPLES scales down
def test_the_view_choice_is_legal_and_the_same_as_the_state_choice(seed: int) -> None:
    """Over two-deal matches (play, then cut, tribute, return and take-back, §9-§11): at every decision the
    view holds all the bot reads, and twin bots (same seed) pick the same action from the view and the
    engine's legal actions as from the full state — an action the rules accept."""
    by_state = [HeuristicBot(100 + s) for s in range(SEATS)]
    by_view = [HeuristicBot(100 + s) for s in range(SEATS)]
    count = 0
    for state, seat in decisions(1000 + seed, deals=2):
        legal = legal_actions(state, seat)
        seat_view = view(state, seat)
        assert Seen.of_view(seat_view) == Seen.of_state(state, seat)
        chosen = by_view[seat].choose_view(seat_view, legal)
        assert chosen in legal
        assert chosen == by_state[seat].choose(state, seat)
        decide(state, replace(chosen, seed=1) if isinstance(chosen, Cut) else chosen)  # raises if illegal
        count += 1
    assert count > 50


def test_every_phase_of_a_match_is_decided_from_the_view() -> None:
    phases = {state.phase for seed in SEEDS for state, _ in decisions(1000 + seed, deals=2)}
    assert phases == {Phase.PLAY, Phase.CUT, Phase.PICK, Phase.RETURN, Phase.TAKE_BACK}


@pytest.mark.parametrize("seed", SEEDS[: examples(8)])  # all of them unless PAIJU_EXAMPLES scales down
def test_the_choice_never_depends_on_other_seats_hidden_cards(seed: int) -> None:
    """Redealing the other seats' cards among them (same sizes) changes neither the seat's view nor what it
    knows, nor the choice of the bot from the view or from the state (§14: a seat sees only its own hand)."""
    mix = SeededRandom(seed)
    checked = changed = 0
    for i, (state, seat) in enumerate(decisions(2000 + seed, deals=2)):
        if i % 3:
            continue
        other = scrambled(state, seat, mix)
        changed += other.hands != state.hands
        assert view(other, seat) == view(state, seat)
        assert Seen.of_state(other, seat) == Seen.of_state(state, seat)
        legal = legal_actions(state, seat)
        assert legal_actions(other, seat) == legal
        assert HeuristicBot(seat).choose_view(view(other, seat), legal) == HeuristicBot(seat).choose_view(
            view(state, seat), legal
        )
        assert HeuristicBot(seat).choose(other, seat) == HeuristicBot(seat).choose(state, seat)
        checked += 1
    assert checked > 20 and changed > 20


def test_a_choice_the_engine_does_not_list_falls_back_to_a_listed_action() -> None:
    """On a partner's play the bot passes (§1); told that only a play is legal, it makes that play."""
    for state, seat in decisions(1000, deals=1):
        maker = state.current_by
        plays = tuple(a for a in legal_actions(state, seat) if isinstance(a, Play))
        if maker is None or maker % 2 != seat % 2 or not plays or not state.hands[maker]:
            continue
        if HeuristicBot(1).choose(state, seat) == Pass(seat):
            assert HeuristicBot(1).choose_view(view(state, seat), plays[:1]) == plays[0]
            assert legal_choice(Pass(seat), plays[:1]) == plays[0]
            return
    raise AssertionError("no partner's play was passed in this deal")


def test_a_spectator_view_or_no_legal_action_is_refused() -> None:
    state = replay(decide(State(), StartMatch(3, Options(deals=1))))
    seat = state.turn
    assert seat is not None
    legal = legal_actions(state, seat)
    with pytest.raises(ValueError, match="spectator"):
        HeuristicBot(1).choose_view(view(state, None), legal)
    with pytest.raises(ValueError, match="nothing to do"):
        HeuristicBot(1).choose_view(view(state, (seat + 1) % SEATS), ())
