"""Every game of the registry is read and played over the contract through one `GameContract`, found by name, by
the contract's ``Game`` value or by the oneof an answer carries."""

from __future__ import annotations

import pytest

from paiju.contract.matches import GAMES as KINDS
from paiju.rules import fair
from paiju.rules.registry import GAMES as RULES
from paiju.sdk.games import GAMES, of_command, of_kind, of_view
from paiju.v1 import engine_pb2


def test_every_game_of_the_registry_is_there_by_name_and_by_kind() -> None:
    assert list(GAMES) == list(RULES)
    for name, game in GAMES.items():
        assert game.rules is RULES[name] and game.seats == RULES[name].seats and game.title == RULES[name].title
        assert of_kind(KINDS[name]) is game
    assert of_kind(engine_pb2.GAME_UNSPECIFIED) is None


def test_a_view_its_actions_a_move_and_an_event_round_trip_for_every_game() -> None:
    for game in GAMES.values():
        state = game.rules.new_state()
        seat = 0
        start = game.rules.start(7, game.rules.options(), 2_000_000_000)
        for event in game.rules.decide(state, start):
            state = game.rules.evolve(state, event)
        view = game.rules.view(state, seat)
        response = engine_pb2.GetViewResponse(version=3)
        getattr(response, game.name).CopyFrom(game.codec.encode(view))
        assert of_view(response) is game and game.view(response) == view and not game.ended(response)
        waiting = game.rules.waiting(state)
        actor = waiting[0] if waiting else seat
        legal = list(game.rules.legal_actions(state, actor))
        listed = engine_pb2.GetLegalActionsResponse(version=3)
        for action in legal:
            getattr(listed.actions.add(), game.name).CopyFrom(game.commands.encode(action))
        assert game.actions(listed) == legal
        if legal:
            request = game.act("g", "c1", legal[0], 3)
            assert of_command(request) is game and request.expected_version == 3 and request.command_id == "c1"
            assert not game.act("g", "c2", legal[0]).HasField("expected_version")
        event = next(iter(game.rules.decide(game.rules.new_state(), start)))
        envelope = engine_pb2.Envelope(game_id="g", version=1)
        getattr(envelope, game.name).CopyFrom(game.events.encode(event))
        assert game.event(envelope) == event
        assert game.event(engine_pb2.Envelope(seats_assigned=engine_pb2.SeatsAssigned())) is None


def test_a_seat_decodes_the_fair_dealing_steps_it_checks_and_no_other_event() -> None:
    steps = [
        fair.SeedCommitted(number=1, deal=1, commitment=b"c" * 32),
        fair.ContributionCommitted(number=1, seat=2, commitment=b"d" * 32),
        fair.CommitsClosed(number=1, committed=(0, 2)),
        fair.ContributionRevealed(number=1, seat=2, salt=b"s" * 16, contribution=b"x" * 16, cut=None, matches=True),
        fair.RevealsClosed(number=1, contributors=(2,), withheld=(0,), mismatched=()),
    ]
    for game in GAMES.values():
        for step in steps:
            envelope = engine_pb2.Envelope(game_id="g", version=4)
            getattr(envelope, game.name).CopyFrom(game.events.encode(step))
            assert game.fair_dealing_event(envelope) == step == game.event(envelope)
        start = game.rules.start(7, game.rules.options(), 2_000_000_000)
        for event in game.rules.decide(game.rules.new_state(), start):
            envelope = engine_pb2.Envelope(game_id="g", version=1)
            getattr(envelope, game.name).CopyFrom(game.events.encode(event))
            assert game.fair_dealing_event(envelope) is None and game.event(envelope) == event
        assert game.fair_dealing_event(engine_pb2.Envelope(seats_assigned=engine_pb2.SeatsAssigned())) is None


def test_legal_actions_are_decoded_once_for_the_same_bytes_and_the_kept_ones_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A seat's legal actions come again turn after turn: the second listing hands back the very commands of the
    first, equal to a fresh decoding, and a full memo forgets its oldest entry first."""
    from paiju.sdk import games as sdk_games

    for game in GAMES.values():
        state = game.rules.new_state()
        for event in game.rules.decide(state, game.rules.start(11, game.rules.options(), 2_000_000_000)):
            state = game.rules.evolve(state, event)
        waiting = game.rules.waiting(state)
        legal = list(game.rules.legal_actions(state, waiting[0] if waiting else 0))
        assert legal
        listed = engine_pb2.Turn()
        for action in legal:
            getattr(listed.actions.add(), game.name).CopyFrom(game.commands.encode(action))
        first = game.actions(listed)
        again = game.actions(engine_pb2.Turn.FromString(listed.SerializeToString()))
        assert first == again == legal == [game.commands.decode(getattr(a, game.name)) for a in listed.actions]
        assert all(a is b for a, b in zip(first, again, strict=True))

    game = next(iter(GAMES.values()))
    monkeypatch.setattr(sdk_games, "ACTIONS_KEPT", 2)
    game._decoded.clear()
    state = game.rules.new_state()
    for event in game.rules.decide(state, game.rules.start(11, game.rules.options(), 2_000_000_000)):
        state = game.rules.evolve(state, event)
    waiting = game.rules.waiting(state)
    legal = list(game.rules.legal_actions(state, waiting[0] if waiting else 0))
    listed = engine_pb2.Turn()
    for action in legal[:3]:
        getattr(listed.actions.add(), game.name).CopyFrom(game.commands.encode(action))
    assert len(listed.actions) == 3
    assert game.actions(listed) == legal[:3]
    assert list(game._decoded) == [getattr(x, game.name).SerializeToString() for x in listed.actions[1:]]
    game._decoded.clear()
