"""The registry of games (`paiju.rules.registry`): each entry starts a game and answers for it as its core does."""

from __future__ import annotations

import pytest

from paiju.rules.registry import GAMES, rules_of


@pytest.mark.parametrize("name", sorted(GAMES))
def test_each_game_starts_and_someone_may_act(name: str) -> None:
    rules = rules_of(name)
    state = rules.new_state()
    assert rules.waiting(state) == ()  # nobody's turn before the game starts
    for event in rules.decide(state, rules.start(7, rules.options(), 0)):
        state = rules.evolve(state, event)
    assert rules.seats == len(state.hands)
    movers = rules.waiting(state)
    assert movers, "after the start some seat has a running turn"
    assert all(rules.legal_actions(state, seat) for seat in movers)
    assert rules.view(state, None) is not None and rules.view(state, movers[0]) is not None


def test_an_unknown_game_is_no_game() -> None:
    with pytest.raises(KeyError):
        rules_of("mahjong")
    assert {rules.name for rules in GAMES.values()} == {"zlj", "tractor"}
