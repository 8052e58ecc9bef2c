"""What the registry tells the layers above of a game beyond deciding: its team size, the commands the engine
issues on its own (拖拉机 deals a void first deal again, D-TR-6.6, and tells a timed round the time, D-TR-9), and who
may issue which commands (the engine, referees) and which carry the engine's seed."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import get_args

import pytest

from paiju.rules.registry import GAMES, TRACTOR, ZLJ
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.settlement import RoundClock
from paiju.rules.zlj import model as zlj_model


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


def test_the_engines_and_the_referees_commands_are_the_games_own() -> None:
    for rules, model in ((ZLJ, zlj_model), (TRACTOR, tractor_model)):
        commands = set(get_args(model.Command))
        assert set(rules.system_commands) <= commands and set(rules.referee_commands) <= commands
        assert not set(rules.system_commands) & set(rules.referee_commands)
        assert type(rules.start(7, rules.options(), 0)) in rules.system_commands
        assert type(rules.timeout(0, 7)) in rules.system_commands and type(rules.timeout(0, 7)) in rules.seeded_commands
        for command in rules.seeded_commands:
            assert command in commands and "seed" in {f.name for f in fields(command)}
    redeal = TRACTOR.deal_again(tractor_model.State(phase=tractor_model.Phase.FLIP), 1)
    tick = TRACTOR.tell_time(tractor_model.State(options=tractor_model.Options(round_minutes=30)), 1)
    assert type(redeal) in TRACTOR.system_commands and type(tick) in TRACTOR.system_commands
    assert set(TRACTOR.referee_commands) == {tractor_model.Penalize, tractor_model.DeclareLabourReform}
