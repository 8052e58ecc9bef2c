"""Scoring's registry of games (`paiju.scoring.games`): every game of the rules registry, with its fold, its
tournament match length and default deals, its team size and its result sheet's title and difference heading."""

from __future__ import annotations

from paiju.contract.games import GAMES as CONTRACT
from paiju.rules.registry import GAMES as RULES
from paiju.scoring import sheets
from paiju.scoring.fold import GameFold
from paiju.scoring.games import GAMES
from paiju.v1 import engine_pb2


def test_every_game_of_the_registry_is_scored() -> None:
    assert list(GAMES) == list(RULES) == list(sheets.GAMES)
    for name, game in GAMES.items():
        assert game.rules is RULES[name] and game.contract is CONTRACT[name]


def test_each_games_sheet_title_and_difference_heading() -> None:
    assert {name: game.sheet_title for name, game in GAMES.items()} == {
        "tractor": "拖拉机比赛成绩单",
        "zlj": "砸六家比赛成绩单",
    }
    assert {name: game.difference_heading for name, game in GAMES.items()} == {"tractor": "级差", "zlj": "团体分差"}


def test_each_games_team_size_and_default_deals() -> None:
    assert {name: game.rules.team_size for name, game in GAMES.items()} == {"tractor": 2, "zlj": 3}
    assert {name: game.default_deals for name, game in GAMES.items()} == {"tractor": 0, "zlj": 6}


def test_each_games_tournament_match_length() -> None:
    zlj, tractor = GAMES["zlj"].match_length, GAMES["tractor"].match_length
    assert zlj(1, 0) is None and zlj(60, 0) is None and zlj(6, 0) is None
    assert zlj(0, 0) == zlj(61, 0) == "a 砸六家 tournament match has 1 to 60 deals"
    assert zlj(6, 30) == "砸六家 rounds are as long as their deals; only 拖拉机 rounds are timed (D-TR-9)"
    assert tractor(0, 0) is None and tractor(0, 90) is None
    assert tractor(6, 0) == (
        "a 拖拉机 match is played to past A or to the round's time (D-TR-9), not to a number of deals"
    )


def test_a_fold_names_its_game_from_the_first_event_of_the_game() -> None:
    for name, game in GAMES.items():
        rules = game.rules
        fold = GameFold("g")
        for event in rules.decide(rules.new_state(), rules.start(7, rules.options(), 0)):
            envelope = engine_pb2.Envelope(game_id="g", version=1)
            getattr(envelope, name).CopyFrom(game.contract.events.encode(event))
            fold.apply(envelope)
        assert fold.game == name and not fold.ended
    fold = GameFold("g")
    assert fold.apply(engine_pb2.Envelope(game_id="g")) == [] and fold.game == ""
