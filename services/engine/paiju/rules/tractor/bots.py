"""拖拉机 bots. Pure: their only randomness is a `SeededRandom` from their seed.

A `Cut` is returned as `legal_actions` lists it: the caller supplies the shuffle ``seed``.
"""

from __future__ import annotations

from paiju.rules.rng import SeededRandom
from paiju.rules.tractor.follow import make_follow
from paiju.rules.tractor.game import leads, legal_actions, trumps
from paiju.rules.tractor.model import Phase, Play, SeatAction, State


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
