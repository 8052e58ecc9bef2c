"""The contract's registry of games (`paiju.contract.games`): every game of the rules registry, with codecs that
round-trip its start, its ``Game`` value, and the fields the contract names after it."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from paiju.contract.games import BY_KIND, GAMES
from paiju.contract.matches import GAME_NAMES, create_request
from paiju.contract.matches import GAMES as KINDS
from paiju.rules.registry import GAMES as RULES
from paiju.v1 import engine_pb2, lobby_events_pb2, lobby_pb2


def test_every_game_of_the_registry_is_in_the_contract_once() -> None:
    assert list(GAMES) == list(RULES)
    assert {name: codecs.kind for name, codecs in GAMES.items()} == KINDS
    assert {codecs.kind: name for name, codecs in GAMES.items()} == GAME_NAMES
    assert all(BY_KIND[codecs.kind] is codecs and codecs.rules is RULES[name] for name, codecs in GAMES.items())
    assert engine_pb2.GAME_UNSPECIFIED not in BY_KIND
    assert set(BY_KIND) == set(engine_pb2.Game.values()) - {engine_pb2.GAME_UNSPECIFIED}


@pytest.mark.parametrize("name", list(GAMES))
def test_the_contract_names_a_games_fields_after_it(name: str) -> None:
    codecs = GAMES[name]
    named: tuple[type[Message], ...] = (
        engine_pb2.Envelope,
        engine_pb2.GetViewResponse,
        engine_pb2.GameCommand,
        engine_pb2.ActRequest,
    )
    for message in named:
        assert name in message.DESCRIPTOR.fields_by_name, message.DESCRIPTOR.name
    optioned: tuple[type[Message], ...] = (
        engine_pb2.CreateGameRequest,
        lobby_pb2.CreateTableRequest,
        lobby_pb2.Table,
        lobby_events_pb2.LobbyTableOpened,
        lobby_events_pb2.LobbyMatchStarted,
    )
    for message in optioned:
        assert codecs.options_field in message.DESCRIPTOR.fields_by_name, message.DESCRIPTOR.name


@pytest.mark.parametrize("name", list(GAMES))
def test_a_games_start_and_options_round_trip(name: str) -> None:
    codecs = GAMES[name]
    rules = codecs.rules
    start = rules.start(7, rules.options(), 2_000_000_000)
    assert codecs.commands.decode(codecs.commands.encode(start)) == start
    for event in rules.decide(rules.new_state(), start):
        assert codecs.events.decode(codecs.events.encode(event)) == event
    options = rules.options(turn_seconds=10)
    assert codecs.codec.decode(codecs.codec.encode(options), rules.options) == options


@pytest.mark.parametrize("name", list(GAMES))
def test_a_match_start_carries_its_games_options_into_the_engine_request(name: str) -> None:
    codecs = GAMES[name]
    started = lobby_events_pb2.LobbyMatchStarted(game_id="table-1-m1", match=1, players=["a", "b"], game=name)
    options: Any = codecs.codec.encode(codecs.rules.options(turn_seconds=10))
    getattr(started, codecs.options_field).CopyFrom(options)
    request = create_request(started)
    assert request.game == codecs.kind
    assert request.WhichOneof("options") == codecs.options_field
    assert getattr(request, codecs.options_field) == options
    assert [(s.seat, s.player_id) for s in request.seats] == [(0, "a"), (1, "b")]
