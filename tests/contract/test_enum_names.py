"""Stored events keep their meaning: the codecs write a Python enum member as the proto enum value at its
position (``member i`` ↔ number ``i``, 0 left unspecified), so reordering, inserting or renaming a member would
silently change what stored events say. This test pins every enum the contract carries: the proto value with each
member's number is named after that member (its name or its value), and the proto has no value the Python enum
lacks."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from enum import Enum
from typing import Any

import pytest
from google.protobuf.descriptor import EnumDescriptor

from paiju.contract.codec import Codec, OneofCodec
from paiju.contract.games import TRACTOR, TRACTOR_COMMANDS, TRACTOR_EVENTS, ZLJ, ZLJ_COMMANDS, ZLJ_EVENTS
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.rules.tractor.view import SeatView as TractorSeatView
from paiju.rules.zlj.view import SeatView as ZljSeatView
from paiju.scoring.contract import TOURNAMENT_EVENTS

ROOTS: list[tuple[Codec, Any]] = [
    *[
        (c._codec, c)
        for c in (ZLJ_EVENTS, ZLJ_COMMANDS, TRACTOR_EVENTS, TRACTOR_COMMANDS, LOBBY_EVENTS, TOURNAMENT_EVENTS)
    ],
    (ZLJ, ZljSeatView),
    (TRACTOR, TractorSeatView),
]


def _types(tp: Any) -> Iterator[Any]:
    """``tp`` and every type nested in it (optional, tuples, unions)."""
    yield tp
    for arg in typing.get_args(tp):
        if arg is not Ellipsis:
            yield from _types(arg)


def enum_fields(codec: Codec, root: Any) -> Iterator[tuple[str, type[Enum], EnumDescriptor]]:
    """(where, Python enum, proto enum) for every enum field of every dataclass reachable from ``root`` (a nested
    dataclass is the message of its field, as the codec fills it)."""
    classes = list(root._classes.values()) if isinstance(root, OneofCodec) else [root]
    todo: list[tuple[type, Any]] = [(cls, codec.message_class(cls).DESCRIPTOR) for cls in classes]
    seen: set[tuple[type, str]] = set()
    while todo:
        cls, message = todo.pop()
        if (cls, message.full_name) in seen:
            continue
        seen.add((cls, message.full_name))
        for name, tp in typing.get_type_hints(cls).items():
            field = message.fields_by_name[name]
            for inner in _types(tp):
                if isinstance(inner, type) and issubclass(inner, Enum) and field.enum_type is not None:
                    if field.enum_type.full_name != "paiju.v1.Card":
                        yield f"{cls.__name__}.{name}", inner, field.enum_type
                elif dataclasses.is_dataclass(inner) and isinstance(inner, type) and field.message_type is not None:
                    todo.append((inner, field.message_type))


def mismatches(enum: type[Enum], proto: EnumDescriptor) -> list[str]:
    """How ``enum`` and ``proto`` disagree (empty: every member is the proto value of its number)."""
    found = []
    members = list(enum)
    for number, member in enumerate(members, start=1):
        value = proto.values_by_number.get(number)
        names = {member.name.upper(), str(member.value).upper()}
        if value is None or not any(value.name.endswith("_" + n) for n in names):
            found.append(f"{enum.__name__}.{member.name} is #{number}, proto has {value.name if value else None}")
    extra = [v.name for v in proto.values if v.number > len(members)]
    if extra:
        found.append(f"{proto.name} has values {extra} that {enum.__name__} lacks")
    return found


PINNED = sorted(
    {
        (e.__module__ + "." + e.__qualname__, p.full_name): (e, p)
        for codec, root in ROOTS
        for _, e, p in enum_fields(codec, root)
    }.items()
)


def test_the_contract_carries_enums() -> None:
    assert len(PINNED) >= 10, [key for key, _ in PINNED]


@pytest.mark.parametrize(("enum", "proto"), [pair for _, pair in PINNED], ids=[f"{k[0]}-{k[1]}" for k, _ in PINNED])
def test_each_enum_member_is_the_proto_value_of_its_number(enum: type[Enum], proto: EnumDescriptor) -> None:
    assert mismatches(enum, proto) == []


def _enum(name: str, members: list[str]) -> type[Enum]:
    """An enum of ``members`` in that order (numbered from 1)."""
    made: type[Enum] = Enum(name, [(member, i) for i, member in enumerate(members, start=1)])  # type: ignore[misc]
    return made


def test_a_reordered_or_renamed_member_is_caught() -> None:
    _, (enum, proto) = next((k, v) for k, v in PINNED if len(v[0]) >= 2)
    names = [m.name for m in enum]
    assert not mismatches(_enum("Same", names), proto)
    assert mismatches(_enum("Swapped", [names[1], names[0], *names[2:]]), proto)
    assert mismatches(_enum("Renamed", ["SOMETHING_ELSE", *names[1:]]), proto)
    assert mismatches(_enum("Shorter", names[:-1]), proto)
