"""Every command, event (whole and as each seat receives it) and view of both games survives the contract."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from google.protobuf.message import Message

from paiju.contract.codec import Codec, CodecError, OneofCodec
from paiju.contract.games import TRACTOR, TRACTOR_COMMANDS, TRACTOR_EVENTS, ZLJ, ZLJ_COMMANDS, ZLJ_EVENTS
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import game as tractor
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor import view as tractor_view
from paiju.rules.tractor.bots import RandomBot as TractorBot
from paiju.rules.zlj import Cut, Options, Phase, StartMatch, State, decide, evolve, legal_actions, redact, view
from paiju.rules.zlj import model as zlj_model
from paiju.rules.zlj.bots import RandomBot
from paiju.v1 import zlj_pb2


def through_the_wire(codec: OneofCodec, obj: Any) -> Any:
    message = codec.encode(obj)
    parsed = type(message)()
    parsed.ParseFromString(message.SerializeToString())
    return codec.decode(parsed)


def view_through_the_wire(codec: Codec, obj: Any) -> Any:
    message: Message = codec.encode(obj)
    parsed = type(message)()
    parsed.ParseFromString(message.SerializeToString())
    return codec.decode(parsed, type(obj))


def test_zlj_commands_events_and_views_round_trip() -> None:
    seeds = SeededRandom(11)
    kinds: set[str] = set()
    for _ in range(2):
        bots = [RandomBot(seeds.next64()) for _ in range(6)]
        state = State()
        command: Any = StartMatch(seeds.next64(), Options(deals=3, turn_seconds=0))
        while True:
            assert through_the_wire(ZLJ_COMMANDS, command) == command
            for event in decide(state, command):
                kinds.add(type(event).__name__)
                assert through_the_wire(ZLJ_EVENTS, event) == event
                for seat in (*range(6), None):
                    seen = redact(event, seat)
                    assert through_the_wire(ZLJ_EVENTS, seen) == seen
                state = evolve(state, event)
            for seat in (*range(6), None):
                seat_view = view(state, seat)
                assert view_through_the_wire(ZLJ, seat_view) == seat_view
            if state.phase is Phase.ENDED:
                break
            seat = state.turn
            assert seat is not None
            for action in legal_actions(state, seat)[:5]:
                assert through_the_wire(ZLJ_COMMANDS, action) == action
            command = bots[seat].choose(state, seat)
            if isinstance(command, Cut):
                command = Cut(seat, command.count, seeds.next64())
    assert {"HandsDealt", "TributeGiven", "TributePicked", "CardsPlayed", "Passed", "DealEnded", "MatchEnded"} <= kinds


def test_tractor_commands_events_and_views_round_trip() -> None:
    seeds = SeededRandom(12)
    bots = [TractorBot(seeds.next64()) for _ in range(4)]
    state = tractor_model.State()
    command: Any = tractor_model.StartGame(seeds.next64(), tractor_model.Options(round_minutes=60), at=1000)
    kinds: set[str] = set()
    deals = 0
    while deals < 2:
        assert through_the_wire(TRACTOR_COMMANDS, command) == command
        events = tractor.decide(state, command)
        for event in events:
            kinds.add(type(event).__name__)
            assert through_the_wire(TRACTOR_EVENTS, event) == event
            for seat in (*range(4), None):
                seen = tractor_view.redact(event, seat)
                assert through_the_wire(TRACTOR_EVENTS, seen) == seen
            state = tractor.evolve(state, event)
            deals += isinstance(event, tractor_model.DealSettled)
        for seat in (*range(4), None):
            seat_view = tractor_view.view(state, seat)
            assert view_through_the_wire(TRACTOR, seat_view) == seat_view
        if state.phase is tractor_model.Phase.FLIP:
            command = tractor_model.Redeal(seeds.next64())
            continue
        seat = tractor.waiting(state)[0]
        command = bots[seat].choose(state, seat)
        if isinstance(command, tractor_model.Cut):
            command = tractor_model.Cut(seat, command.count, seeds.next64())
    assert {"CardFlipped", "HandsDealt", "BidEntered", "TrumpDeclared", "TrickWon", "DealSettled"} <= kinds


def test_hidden_cards_stay_hidden_on_the_wire() -> None:
    given = zlj_model.TributeGiven(3, None, 2, zlj_model.Team.A)
    message = ZLJ.encode(given)
    assert message.cards_hidden and list(message.cards) == []  # type: ignore[attr-defined]
    assert ZLJ.decode(message, zlj_model.TributeGiven) == given


@pytest.mark.parametrize(
    "message",
    [
        zlj_pb2.ZljCommand(play=zlj_pb2.ZljPlay(seat=1, cards=typing.cast(Any, [0]))),
        zlj_pb2.ZljCommand(play=zlj_pb2.ZljPlay(seat=1, cards=typing.cast(Any, [55]))),
        zlj_pb2.ZljCommand(),
    ],
)
def test_malformed_messages_are_refused(message: Message) -> None:
    with pytest.raises(CodecError):
        ZLJ_COMMANDS.decode(message)


def test_an_unspecified_enum_takes_the_fields_default_only_where_there_is_one() -> None:
    from paiju.rules.zlj import model
    from paiju.rules.zlj.combos import Combo
    from paiju.v1 import zlj_pb2

    options = ZLJ.decode(zlj_pb2.ZljOptions(deals=2), model.Options)
    assert options == model.Options(deals=2), "unset options are the rules' defaults"
    explicit = zlj_pb2.ZljOptions(deals=2, reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_TEAM_TOTAL)
    assert ZLJ.decode(explicit, model.Options).reverse_tribute is model.ReverseTribute.TEAM_TOTAL
    # a required enum (no default) left at 0 is malformed
    with pytest.raises(CodecError):
        ZLJ.decode(zlj_pb2.ZljCombo(size=1, top=3), Combo)
