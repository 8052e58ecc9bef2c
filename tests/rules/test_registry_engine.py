"""What the registry tells the layers above of a game beyond deciding: its team size, and the commands the engine
issues on its own (拖拉机 deals a void first deal again, D-TR-6.6, and tells a timed round the time, D-TR-9)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from paiju.rules.registry import GAMES, TRACTOR, ZLJ
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.settlement import RoundClock


@pytest.mark.parametrize("name", list(GAMES))
def test_two_teams_share_the_seats(name: str) -> None:
    rules = GAMES[name]
    assert rules.team_size * 2 == rules.seats


def test_team_sizes() -> None:
    assert (ZLJ.team_size, TRACTOR.team_size) == (3, 2)


def test_a_game_without_engine_steps_never_asks_for_one() -> None:
    state = ZLJ.new_state()
    for event in ZLJ.decide(state, ZLJ.start(7, ZLJ.options(), 0)):
        state = ZLJ.evolve(state, event)
    assert ZLJ.deal_again(state, 5) is None
    assert ZLJ.tell_time(state, 10_000) is None


def test_a_void_first_deal_is_dealt_again_with_the_engines_seed() -> None:
    flipping = tractor_model.State(phase=tractor_model.Phase.FLIP)
    assert TRACTOR.deal_again(flipping, 5) == tractor_model.Redeal(5)
    for phase in tractor_model.Phase:
        if phase is not tractor_model.Phase.FLIP:
            assert TRACTOR.deal_again(tractor_model.State(phase=phase), 5) is None


def test_only_a_timed_round_not_announced_yet_is_told_the_time() -> None:
    timed = tractor_model.State(options=tractor_model.Options(round_minutes=30))
    assert TRACTOR.tell_time(timed, 1234) == tractor_model.ClockTick(1234)
    assert TRACTOR.tell_time(replace(timed, clock=RoundClock(announced=True)), 1234) is None
    assert TRACTOR.tell_time(tractor_model.State(), 1234) is None
