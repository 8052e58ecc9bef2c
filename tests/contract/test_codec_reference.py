"""The compiled codec (`paiju.contract.codec`) against the reflective one it replaced (reference_codec.py, the oracle).

Encoding must give the same bytes (``SerializeToString(deterministic=True)``) or fail alike; decoding must give equal
dataclasses, or refuse alike — a `CodecError` with the same message, raised at the same field — or fail with the same
exception type. Checked on:

- every command, every event (whole and as each seat and a spectator receive it), every seat's view and the spectator's,
  every state and every waiting seat's legal actions of seeded playouts of whole games of both games, dealt from seeds
  and fairly (playouts.py);
- Hypothesis: random values of every dataclass the contract carries (both games, the lobby's and the tournaments'
  events), from their type hints, encoded and decoded back;
- Hypothesis: random messages of every message the contract decodes, field values anywhere in their type's range with
  the edges a client could send (card 0 and 55, enum values 0 and past the last, negative numbers, fixed tuples of the
  wrong length, hidden flags set with cards, a wrapper without its oneof).

The compiled codec remembers the items of lists of frozen dataclasses (a trick, a deal result) between calls; the
playouts run with its memory kept from step to step, each comparison is repeated with the memory emptied, and one
playout runs with a memory so small that it turns over all the time. A last test shows that this comparison notices
a codec that is wrong by one card.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import operator
import typing
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import given
from hypothesis import strategies as st

from paiju.contract import codec as compiled
from paiju.contract.games import GAMES
from paiju.lobby.contract import LOBBY, LOBBY_EVENTS
from paiju.rules.cards import Card
from paiju.rules.registry import GameRules
from paiju.scoring.contract import TOURNAMENT, TOURNAMENT_EVENTS

from ..support.profiles import examples, profile
from . import reference_codec as reference
from .playouts import playout

pytestmark = pytest.mark.unit


# --- the two codecs side by side ------------------------------------------------------------------------------


class Pair:
    """One compiled codec and the reflective codec built the same way."""

    def __init__(self, new: Any, old: Any) -> None:
        self.new = new
        self.old = old


def _reflective_codec(codec: compiled.Codec) -> reference.Codec:
    return reference.Codec(codec._module, codec._prefix, codec._card_list)


def _reflective_oneof(oneof: compiled.OneofCodec, codec: reference.Codec) -> reference.OneofCodec:
    union: Any = functools.reduce(operator.or_, oneof._classes.values())
    return reference.OneofCodec(codec, oneof._wrapper, union, oneof._oneof)


class Contract:
    """Every codec of one module of the contract (a game, the lobby, the tournaments), compiled and reflective."""

    def __init__(self, codec: compiled.Codec, oneofs: list[compiled.OneofCodec], roots: list[type]) -> None:
        old = _reflective_codec(codec)
        self.codec = Pair(codec, old)
        self.oneofs = [Pair(o, _reflective_oneof(o, old)) for o in oneofs]
        self.roots = roots
        """The classes encoded on their own (views, states, options), besides the oneofs' classes."""


def _game(name: str) -> Contract:
    codecs = GAMES[name]
    rules = codecs.rules
    roots = [type(rules.view(rules.new_state(), None)), type(rules.new_state()), rules.options]
    return Contract(codecs.codec, [codecs.events, codecs.commands], roots)


CONTRACTS = {
    **{name: _game(name) for name in GAMES},
    "lobby": Contract(LOBBY, [LOBBY_EVENTS], []),
    "tournament": Contract(TOURNAMENT, [TOURNAMENT_EVENTS], []),
}


def _outcome(work: Callable[[], Any]) -> tuple[str, Any]:
    """What ``work`` gives: its value, or how it failed (a CodecError's message; another exception's type)."""
    try:
        return "value", work()
    except compiled.CodecError as e:
        return "CodecError", str(e)
    except reference.CodecError as e:
        return "CodecError", str(e)
    except Exception as e:  # the reflective codec's other failures (upb's TypeError, ValueError; a KeyError)
        return "raised", type(e).__name__


@contextlib.contextmanager
def forgetting() -> Iterator[None]:
    """The compiled codec with its memory emptied for a while, then given back as it was (the playouts keep theirs
    from step to step, as an engine and a client do)."""
    memos = compiled._COMPILED._memos
    kept = [dict(memo) for memo in memos]
    compiled._COMPILED.forget()
    try:
        yield
    finally:
        for memo, items in zip(memos, kept, strict=False):
            memo.clear()
            memo.update(items)


def _wire(message: Message) -> bytes:
    return message.SerializeToString(deterministic=True)


def same_encoding(pair: Pair, obj: Any, *, oneof: bool, round_trip: bool = True) -> bytes | None:
    """Both codecs encode ``obj`` to the same bytes (returned), or fail alike (``None``); then both decode those
    bytes alike: to ``obj`` itself with ``round_trip`` (a value the cores make)."""
    new = _outcome(lambda: _wire(pair.new.encode(obj)))
    with forgetting():
        again = _outcome(lambda: _wire(pair.new.encode(obj)))
    old = _outcome(lambda: _wire(pair.old.encode(obj)))
    assert new == again == old, f"{obj!r}: compiled {new}, compiled without memory {again}, reflective {old}"
    if new[0] != "value":
        return None
    message_class = type(pair.old.encode(obj))
    decoded = same_decoding(pair, message_class.FromString(new[1]), None if oneof else type(obj))
    assert not round_trip or decoded == ("value", obj), f"{obj!r} came back as {decoded}"
    return typing.cast(bytes, new[1])


def same_decoding(pair: Pair, message: Message, cls: type | None) -> tuple[str, Any]:
    """Both codecs read ``message`` (as ``cls``; ``None``: through the oneof codecs) alike: what they gave."""

    def read(codec: Any) -> Callable[[], Any]:
        return (lambda: codec.decode(message)) if cls is None else (lambda: codec.decode(message, cls))

    new = _outcome(read(pair.new))
    with forgetting():
        again = _outcome(read(pair.new))
    old = _outcome(read(pair.old))
    assert new == again == old, f"{message}: compiled {new}, compiled without memory {again}, reflective {old}"
    return new


# --- playouts -------------------------------------------------------------------------------------------------


def _check_step(rules: GameRules, contract: Contract, step: Any) -> Iterator[str]:
    """Compare the codecs on everything one step shows; yields the names of the classes met."""
    events, commands = contract.oneofs
    view_codec = contract.codec
    yield type(step.command).__name__
    assert same_encoding(commands, step.command, oneof=True) is not None
    for event in step.events:
        yield type(event).__name__
        for seen in (event, *(rules.redact(event, seat) for seat in (None, *range(rules.seats)))):
            assert same_encoding(events, seen, oneof=True) is not None
    for seat in (None, *range(rules.seats)):
        assert same_encoding(view_codec, rules.view(step.state, seat), oneof=False) is not None
    assert same_encoding(view_codec, step.state, oneof=False) is not None
    for seat in rules.waiting(step.state):
        for action in rules.legal_actions(step.state, seat):
            assert same_encoding(commands, action, oneof=True) is not None


PLAYOUTS = [(name, fair, seed) for name in GAMES for fair in (False, True) for seed in range(examples(3))]


@pytest.mark.parametrize(("name", "fair", "seed"), PLAYOUTS)
def test_the_codecs_agree_on_whole_games(name: str, fair: bool, seed: int) -> None:
    rules = GAMES[name].rules
    contract = CONTRACTS[name]
    met: set[str] = set()
    steps = 0
    for step in playout(rules, 1000 * seed + 17 * fair + len(name), fair_dealing=fair):
        steps += 1
        met.update(_check_step(rules, contract, step))
    assert steps > 100
    played = {"zlj": {"CardsPlayed", "Passed", "HandsDealt", "DealEnded", "MatchEnded", "Timeout", "TurnTimedOut"}}
    played["tractor"] = {"CardsPlayed", "TrickWon", "BidEntered", "BidsRevealed", "DealSettled", "GameEnded"}
    if fair:
        played[name] |= {"SeedCommitted", "SeedContributed", "SeedRevealed", "CommitSeed", "DealShuffle"}
    assert played[name] <= met, played[name] - met


def test_the_codecs_agree_when_the_memory_turns_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """A memory of a few items only: the oldest items are forgotten and met again, move after move."""
    monkeypatch.setattr(compiled, "MEMO_LIMIT", 5)
    rules = GAMES["tractor"].rules
    contract = CONTRACTS["tractor"]
    compiled._COMPILED.forget()
    for n, step in enumerate(playout(rules, 3, fair_dealing=False)):
        if n % 3 == 0:
            for seat in (None, 0):
                assert same_encoding(contract.codec, rules.view(step.state, seat), oneof=False) is not None
    assert max(len(memo) for memo in compiled._COMPILED._memos) == 5


# --- random values of every dataclass -------------------------------------------------------------------------

_INTS = st.one_of(
    st.integers(0, 120),
    st.integers(-5, -1),
    st.sampled_from([2**31 - 1, -(2**31), 2**31, 2**32, 2**63 - 1, 2**64 - 1, 2**64, -(2**63)]),
)


def values(tp: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of the annotation ``tp``: mostly what the cores make, now and then what they would not."""
    inner = compiled._optional(tp)
    if inner is not None:
        return st.none() | values(inner, depth)
    if tp is Card:
        return st.integers(0, 53) | st.sampled_from([54, 60, -1])
    if isinstance(tp, type) and issubclass(tp, Enum):
        return st.sampled_from(list(tp))
    if tp is int:
        return _INTS
    if tp is bool:
        return st.booleans()
    if tp is str:
        return st.text(max_size=6)
    if tp is bytes:
        return st.binary(max_size=6)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        fields = compiled._hints(tp)
        return st.builds(tp, **{name: values(t, depth + 1) for name, t in fields.items()})
    item = compiled._homogeneous(tp)
    if item is not None:
        size = 0 if depth > 4 else 3
        if typing.get_origin(tp) is frozenset:
            return st.frozensets(values(item, depth + 1), max_size=size)
        return st.lists(values(item, depth + 1), max_size=size).map(tuple)
    parts = compiled._fixed(tp)
    assert parts is not None, tp
    return st.tuples(*(values(p, depth + 1) for p in parts))


def _classes(contract: Contract) -> list[tuple[Pair, type, bool]]:
    """(codec, class, through its oneof) for every class the contract encodes on its own."""
    found = [(contract.codec, cls, False) for cls in contract.roots]
    for oneof in contract.oneofs:
        found += [(oneof, cls, True) for cls in oneof.new._classes.values()]
    return found


ENCODED = [(name, pair, cls, oneof) for name, contract in CONTRACTS.items() for pair, cls, oneof in _classes(contract)]


@pytest.mark.parametrize(
    ("pair", "cls", "oneof"),
    [(pair, cls, oneof) for _, pair, cls, oneof in ENCODED],
    ids=[f"{name}.{cls.__name__}" for name, _, cls, _ in ENCODED],
)
@profile(30)
@given(data=st.data())
def test_the_codecs_agree_on_random_values(pair: Pair, cls: type, oneof: bool, data: st.DataObject) -> None:
    obj = data.draw(values(cls), label="value")
    same_encoding(pair, obj, oneof=oneof, round_trip=False)


def test_every_class_the_contract_carries_is_drawn_from() -> None:
    names = {f"{name}.{cls.__name__}" for name, _, cls, _ in ENCODED}
    assert {"zlj.SeatView", "tractor.SeatView", "zlj.State", "tractor.State", "zlj.CardsPlayed"} <= names
    assert any(name.startswith("lobby.") for name in names) and any(name.startswith("tournament.") for name in names)


# --- random messages ------------------------------------------------------------------------------------------

_RANGES = {
    FieldDescriptor.CPPTYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.CPPTYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.CPPTYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.CPPTYPE_UINT64: (0, 2**64 - 1),
}


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = field.cpp_type
    if field.enum_type is not None:
        top = max(v.number for v in field.enum_type.values)
        return st.integers(1, top) | st.sampled_from([0, -1, top + 1, 2**31 - 1])
    if kind in _RANGES:
        low, high = _RANGES[kind]
        return st.integers(max(low, 0), min(high, 60)) | st.integers(low, high)
    if kind == FieldDescriptor.CPPTYPE_BOOL:
        return st.booleans()
    if kind == FieldDescriptor.CPPTYPE_DOUBLE:  # the ratings' exact doubles (ratings_events.proto)
        return st.floats(allow_nan=False)
    if kind == FieldDescriptor.CPPTYPE_STRING:
        return st.binary(max_size=6) if field.type == FieldDescriptor.TYPE_BYTES else st.text(max_size=6)
    raise AssertionError(f"no values for {field.full_name}")


_MESSAGES: dict[tuple[str, int], st.SearchStrategy[dict[str, Any]]] = {}


def messages(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """The keyword arguments of a random message: any field set or not, any value its type takes."""
    key = (descriptor.full_name, depth)
    if key not in _MESSAGES:
        _MESSAGES[key] = _messages(descriptor, depth)
    return _MESSAGES[key]


def _messages(descriptor: Descriptor, depth: int) -> st.SearchStrategy[dict[str, Any]]:
    present: dict[str, st.SearchStrategy[Any]] = {}
    """Each field's strategy when it is set."""
    oneofs: dict[str, list[str]] = {}
    for field in descriptor.fields:
        if field.message_type is not None:
            if depth >= 3:
                continue
            value: st.SearchStrategy[Any] = messages(field.message_type, depth + 1)
        else:
            value = _scalar(field)
        if field.is_repeated:
            present[field.name] = st.lists(value, max_size=2 if field.message_type is not None else 4)
        else:
            present[field.name] = value
        if field.containing_oneof is not None:  # a oneof, or the synthetic one of a proto3 optional field
            oneofs.setdefault(field.containing_oneof.name, []).append(field.name)
    members = {name for names in oneofs.values() for name in names}

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        kwargs = {}
        for name, strategy in present.items():
            if name not in members and draw(st.booleans()):
                kwargs[name] = draw(strategy)
        for names in oneofs.values():
            chosen = draw(st.sampled_from([None, *names]))
            if chosen is not None:
                kwargs[chosen] = draw(present[chosen])
        return kwargs

    return build()


def _decoded(contract: Contract) -> list[tuple[Pair, type[Message], type | None]]:
    """(codec, message class, class it is read as; ``None``: a oneof wrapper) for every message the contract reads."""
    found: list[tuple[Pair, type[Message], type | None]] = [
        (contract.codec, contract.codec.new.message_class(cls), cls) for cls in contract.roots
    ]
    for oneof in contract.oneofs:
        found.append((oneof, oneof.new._wrapper, None))
        found += [(contract.codec, contract.codec.new.message_class(cls), cls) for cls in oneof.new._classes.values()]
    return found


DECODED = [(name, *entry) for name, contract in CONTRACTS.items() for entry in _decoded(contract)]


@pytest.mark.parametrize(
    ("pair", "message_class", "cls"),
    [(pair, message_class, cls) for _, pair, message_class, cls in DECODED],
    ids=[f"{name}.{message_class.__name__}" for name, _, message_class, _ in DECODED],
)
@profile(40)
@given(data=st.data())
def test_the_codecs_agree_on_random_messages(
    pair: Pair, message_class: type[Message], cls: type | None, data: st.DataObject
) -> None:
    kwargs = data.draw(messages(typing.cast(Any, message_class.DESCRIPTOR)), label="fields")
    message = message_class(**kwargs)
    same_decoding(pair, message_class.FromString(message.SerializeToString()), cls)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"play": {"seat": 1, "cards": [0]}}, "0 is not a card (Card values are 1..54)"),
        ({"play": {"seat": 1, "cards": [3, 55]}}, "55 is not a card (Card values are 1..54)"),
        ({"start_match": {"seed": 1, "options": {"deals": 2, "resist": 3}}}, "3 is not a value of Resist"),
        ({}, "ZljCommand carries no command"),
    ],
)
def test_malformed_commands_are_refused_with_the_reflective_codecs_words(kwargs: dict[str, Any], expected: str) -> None:
    commands = CONTRACTS["zlj"].oneofs[1]
    message = commands.new._wrapper(**kwargs)
    assert same_decoding(commands, message, None) == ("CodecError", expected)


def test_a_fixed_tuple_of_the_wrong_length_is_refused_alike() -> None:
    views = CONTRACTS["tractor"].codec
    cls = CONTRACTS["tractor"].roots[0]
    message = views.new.message_class(cls)(levels=[1, 2, 3], phase=1, options={})
    assert same_decoding(views, message, cls) == ("CodecError", "levels needs 2 numbers, got 3")


# --- the comparison can fail ----------------------------------------------------------------------------------


def test_the_comparison_notices_a_codec_wrong_by_one_card(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = GAMES["zlj"].rules
    contract = CONTRACTS["zlj"]
    step = next(s for s in playout(rules, 5, fair_dealing=False) if s.state.phase.value == "play")
    seat_view = rules.view(step.state, 0)
    assert same_encoding(contract.codec, seat_view, oneof=False) is not None
    wrong = {card: number + 1 for card, number in compiled._CARD_NUMBER.items()}
    monkeypatch.setitem(compiled._COMPILED.namespace, "CN", wrong)
    compiled._COMPILED.forget()
    try:
        with pytest.raises(AssertionError, match="compiled"):
            same_encoding(contract.codec, seat_view, oneof=False)
    finally:
        monkeypatch.undo()
        compiled._COMPILED.forget()
    assert same_encoding(contract.codec, seat_view, oneof=False) is not None
