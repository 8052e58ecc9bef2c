"""The lobby's registry of games (`paiju.lobby.games`): every game of the rules registry, the result a table keeps
of a game's end event (read from the GAMES stream), the options of its tournament tables, and a table's options
field for each game."""

from __future__ import annotations

import dataclasses

import pytest

from paiju.contract.games import GAMES as CONTRACT
from paiju.lobby import table as tb
from paiju.lobby.games import BY_OPTIONS_FIELD, GAMES
from paiju.lobby.results import ends, result_of
from paiju.platform.store import Recorded
from paiju.rules.registry import GAMES as RULES
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.v1 import engine_pb2
from paiju.v1 import tournament_events_pb2 as te

END_EVENTS = {
    "zlj": (zlj_model.MatchEnded((12, -12), (5, -3, 4, -4, 3, -5)), tb.Result((12, -12), (5, -3, 4, -4, 3, -5))),
    "tractor": (tractor_model.GameEnded(1, (7, 13)), tb.Result(winner_team=1, levels=(7, 13))),
}


def test_every_game_of_the_registry_is_in_the_lobby() -> None:
    assert list(GAMES) == list(RULES) == list(END_EVENTS)
    for name, game in GAMES.items():
        assert game.rules is RULES[name] and game.contract is CONTRACT[name]
        assert BY_OPTIONS_FIELD[game.contract.options_field] is game
        assert tb.OPTIONS_FIELDS[name] == game.contract.options_field


def envelope_of(name: str, event: object) -> engine_pb2.Envelope:
    envelope = engine_pb2.Envelope(game_id="table-ab12cd34-m3", version=40)
    getattr(envelope, name).CopyFrom(CONTRACT[name].events.encode(event))
    return envelope


@pytest.mark.parametrize("name", list(GAMES))
def test_a_games_end_event_finishes_the_tables_match_with_its_result(name: str) -> None:
    ended, result = END_EVENTS[name]
    envelope = envelope_of(name, ended)
    assert result_of(envelope) == result
    recorded = Recorded("table-ab12cd34-m3", 40, 40, "c", envelope.SerializeToString())
    assert ends(recorded)
    assert not ends(dataclasses.replace(recorded, aggregate="fixture-game"))


@pytest.mark.parametrize("name", list(GAMES))
def test_any_other_event_finishes_nothing(name: str) -> None:
    rules = RULES[name]
    for event in rules.decide(rules.new_state(), rules.start(7, rules.options(), 0)):
        assert result_of(envelope_of(name, event)) is None
    seats = engine_pb2.Envelope(game_id="table-ab12cd34-m3", seats_assigned=engine_pb2.SeatsAssigned())
    assert result_of(seats) is None
    assert result_of(engine_pb2.Envelope(game_id="table-ab12cd34-m3")) is None


def test_a_tournament_tables_options_carry_the_rounds_length() -> None:
    paired = te.TournamentRoundPaired(round=2, round_minutes=90, deals=4)
    assert GAMES["zlj"].tournament_options(paired) == zlj_model.Options(deals=4)
    assert GAMES["tractor"].tournament_options(paired) == tractor_model.Options(round_minutes=90)


@pytest.mark.parametrize("name", list(GAMES))
def test_a_table_keeps_its_games_options_in_that_games_field(name: str) -> None:
    options = RULES[name].options(turn_seconds=7)
    opened = tb.decide(tb.Table(), tb.OpenTable("table-1", "T", name, "owner", **tb.options_fields(name, options)))
    table = tb.evolve(tb.Table(), opened[0])
    assert getattr(table, GAMES[name].contract.options_field) == options
    assert tb.match_options(table) == options
    assert all(getattr(table, field) is None for other, field in tb.OPTIONS_FIELDS.items() if other != name)
    for other, field in tb.OPTIONS_FIELDS.items():
        if other != name:
            with pytest.raises(tb.LobbyError, match=f"a {name} table takes {name} options only"):
                tb.decide(tb.Table(), tb.OpenTable("table-1", "T", name, "owner", **{field: RULES[other].options()}))


def test_a_table_plays_a_game_of_the_registry() -> None:
    with pytest.raises(tb.LobbyError, match="a table plays zlj or tractor"):
        tb.decide(tb.Table(), tb.OpenTable("table-1", "T", "mahjong", "owner"))
