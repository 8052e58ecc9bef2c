"""砸六家 bot strengths (`STRENGTHS`): ``basic`` and ``heuristic``, neither uniformly random, both legal over whole
matches, deterministic given their seeds, deciding from the seat's view as from the state (bench/bots.py measures
the stronger against the weaker)."""

from __future__ import annotations

import pytest

from paiju.rules.zlj.bots import STRENGTHS, BasicBot, HeuristicBot, RandomBot
from paiju.rules.zlj.game import legal_actions
from paiju.rules.zlj.view import view

from ...support.profiles import examples
from .test_bots import BotFactory, play_match, table

pytestmark = pytest.mark.unit


def test_the_strengths_are_basic_and_heuristic_weaker_first() -> None:
    assert list(STRENGTHS) == ["basic", "heuristic"]
    assert STRENGTHS["basic"] is BasicBot and STRENGTHS["heuristic"] is HeuristicBot
    assert all(bot is not RandomBot for bot in list[type](STRENGTHS.values())), "neither is uniformly random"


@pytest.mark.parametrize(("even", "odd"), [(BasicBot, BasicBot), (BasicBot, HeuristicBot)], ids=["basic", "mixed"])
@pytest.mark.parametrize("seed", range(examples(4)))
def test_basic_bots_make_only_legal_moves_over_whole_matches(seed: int, even: BotFactory, odd: BotFactory) -> None:
    _, state = play_match(2000 + seed, table(seed, even, odd))
    assert len(state.results) == 6, "six deals, tribute included"


@pytest.mark.parametrize("name", list(STRENGTHS))
def test_a_strength_is_deterministic_given_its_seed(name: str) -> None:
    factory = STRENGTHS[name]
    first, _ = play_match(78, table(4, factory, factory), deals=2)
    again, _ = play_match(78, table(4, factory, factory), deals=2)
    assert first == again


def test_the_basic_bot_decides_from_its_view_as_from_the_state() -> None:
    from paiju.rules.zlj import Options, StartMatch, State, decide
    from paiju.rules.zlj.game import replay

    state = replay(decide(State(), StartMatch(5, Options(deals=1))))
    for _ in range(60):
        seat = state.turn
        assert seat is not None
        legal = legal_actions(state, seat)
        by_state = BasicBot(seat).choose(state, seat)
        assert BasicBot(seat).choose_view(view(state, seat), legal) == by_state
        state = replay(decide(state, by_state), state)
        if state.results:
            break
