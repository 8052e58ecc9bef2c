"""拖拉机 bot strengths (`STRENGTHS`): ``basic`` and ``heuristic``, neither uniformly random, both legal over whole
deals, deterministic given their seeds, deciding from the seat's view as from the state (bench/bots.py measures
the stronger against the weaker)."""

from __future__ import annotations

import pytest

from paiju.rules.tractor.bots import STRENGTHS, BasicBot, HeuristicBot, RandomBot
from paiju.rules.tractor.game import legal_actions
from paiju.rules.tractor.model import DealSettled
from paiju.rules.tractor.view import view

from ...support.profiles import examples
from .test_bots import BotFactory, play, table
from .test_view_bots import decisions

pytestmark = pytest.mark.unit


def test_the_strengths_are_basic_and_heuristic_weaker_first() -> None:
    assert list(STRENGTHS) == ["basic", "heuristic"]
    assert STRENGTHS["basic"] is BasicBot and STRENGTHS["heuristic"] is HeuristicBot
    assert all(bot is not RandomBot for bot in list[type](STRENGTHS.values())), "neither is uniformly random"


@pytest.mark.parametrize(("team_a", "team_b"), [(BasicBot, BasicBot), (HeuristicBot, BasicBot)], ids=["basic", "mixed"])
@pytest.mark.parametrize("seed", range(examples(3)))
def test_basic_bots_make_only_legal_moves(seed: int, team_a: BotFactory, team_b: BotFactory) -> None:
    """Two deals: a first deal (flip, bids, counters) and a later one with a cut."""
    log, _ = play(700 + seed, table(seed, team_a, team_b), deals=2)
    assert sum(isinstance(e, DealSettled) for e in log) == 2


@pytest.mark.parametrize("name", list(STRENGTHS))
def test_a_strength_is_deterministic_given_its_seed(name: str) -> None:
    factory = STRENGTHS[name]
    first, _ = play(79, table(6, factory, factory), deals=1)
    again, _ = play(79, table(6, factory, factory), deals=1)
    assert first == again


def test_the_basic_bot_decides_from_its_view_as_from_the_state() -> None:
    checked = 0
    for state, seat in decisions(3, deals=1):
        legal = legal_actions(state, seat)
        if not legal:
            continue
        assert BasicBot(seat).choose_view(view(state, seat), legal) == BasicBot(seat).choose(state, seat)
        checked += 1
        if checked > 400:
            break
    assert checked > 100
