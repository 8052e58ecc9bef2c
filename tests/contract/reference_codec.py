"""The reflective codec: the oracle that `paiju.contract.codec` must match.

This is `services/contract/paiju/contract/codec.py` as it was before it compiled one encoder and one decoder per
class, copied verbatim below this paragraph: it walks the type hints of every field at every call, simple enough to
read as the definition of the contract's mapping, and slow. tests/contract/test_codec_reference.py holds the
compiled codec to it (the same bytes when encoding, equal dataclasses or a `CodecError` alike when decoding), and
bench/codec.py measures the compiled codec against it. Do not "fix" it: it is the behaviour being kept.

Between the rules cores' frozen dataclasses and the protobuf contract (protos/paiju/v1).

The contract mirrors the cores by convention, so one generic codec serves every command, event and view:
a dataclass ``X`` of a game is the message ``<Prefix>X`` (``ZljCardsPlayed``, ``TractorBid``) with the same
field names; cards are the enum ``Card`` (card id + 1); a Python enum is the proto enum whose values follow
the members in order from 1; ``Cards | None`` (cards hidden from a seat) is ``repeated Card`` plus a
``<field>_hidden`` flag; a hand list is ``repeated CardList``; a fixed tuple is a message whose fields are
its items in order; an ``X | None`` is an optional field.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any, get_args, get_origin, get_type_hints

from google.protobuf.message import Message

from paiju.rules.cards import Card

_NONE = type(None)


class CodecError(Exception):
    """A message that does not fit the contract (a client sent something malformed)."""


def _is_card(tp: Any) -> bool:
    return tp is Card


def _memo(analyse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Remember what ``analyse`` found for each type (types are few and fixed: the cores' annotations)."""
    found: dict[Any, Any] = {}

    def cached(tp: Any) -> Any:
        try:
            return found[tp]
        except KeyError:
            result = found[tp] = analyse(tp)
            return result
        except TypeError:  # an unhashable annotation: analyse it each time
            return analyse(tp)

    cached.__doc__ = analyse.__doc__
    return cached


@_memo
def _optional(tp: Any) -> Any | None:
    """``X`` when ``tp`` is ``X | None``."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not _NONE]
        if len(args) == 1 and len(get_args(tp)) == 2:
            return args[0]
    return None


@_memo
def _homogeneous(tp: Any) -> Any | None:
    """``X`` when ``tp`` is ``tuple[X, ...]`` or ``frozenset[X]``."""
    args = get_args(tp)
    if get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    if get_origin(tp) is frozenset:
        return args[0]
    return None


@_memo
def _fixed(tp: Any) -> tuple[Any, ...] | None:
    """The item types when ``tp`` is a fixed-size tuple."""
    args = get_args(tp)
    if get_origin(tp) is tuple and args and Ellipsis not in args:
        return args
    return None


class Codec:
    """Encodes and decodes one game's dataclasses with the messages of one generated module."""

    def __init__(self, module: types.ModuleType, prefix: str, card_list: type[Message]) -> None:
        self._module = module
        self._prefix = prefix
        self._card_list = card_list
        self._classes: dict[type, type[Message]] = {}
        self._decoders: dict[type, Callable[[Message], Any]] = {}

    def message_class(self, cls: type) -> type[Message]:
        found = self._classes.get(cls)
        if found is None:
            found = getattr(self._module, self._prefix + cls.__name__, None)
            if found is None:
                raise CodecError(f"the contract has no message {self._prefix}{cls.__name__}")
            self._classes[cls] = found
        return typing.cast(type[Message], found)

    # --- encoding -----------------------------------------------------------------------------------

    def encode(self, obj: Any) -> Message:
        message = self.message_class(type(obj))()
        self._fill(message, obj)
        return message

    def _fill(self, message: Message, obj: Any) -> None:
        for name, tp in _hints(type(obj)).items():
            self._set(message, name, tp, getattr(obj, name))

    def _set(self, message: Message, name: str, tp: Any, value: Any) -> None:
        inner = _optional(tp)
        if inner is not None:
            if value is None:
                if _homogeneous(inner) is not None:
                    setattr(message, f"{name}_hidden", True)
                return
            tp = inner
        if _is_card(tp):
            setattr(message, name, int(value) + 1)
        elif isinstance(tp, type) and issubclass(tp, Enum):
            setattr(message, name, _enum_numbers(tp)[value])
        elif tp in (int, bool, str, bytes):
            setattr(message, name, value)
        elif dataclasses.is_dataclass(tp):
            self._fill(getattr(message, name), value)
        elif (item := _homogeneous(tp)) is not None:
            field = getattr(message, name)
            items = sorted(value) if get_origin(tp) is frozenset else value
            for v in items:
                if _is_card(item):
                    field.append(int(v) + 1)
                elif item in (int, bool, str, bytes):
                    field.append(v)
                elif _homogeneous(item) is not None and _is_card(_homogeneous(item)):
                    field.add().cards.extend(int(c) + 1 for c in v)
                elif _homogeneous(item) is not None:
                    # a list of lists: each inner list is a message with one repeated field
                    sub = field.add()
                    self._set(sub, _field_names(sub)[0], item, v)
                elif dataclasses.is_dataclass(item):
                    self._fill(field.add(), v)
                elif (parts := _fixed(item)) is not None:
                    self._fill_positional(field.add(), parts, v)
                else:
                    raise CodecError(f"cannot encode {name}: items of type {item}")
        elif (parts := _fixed(tp)) is not None:
            if all(p is int for p in parts) and _is_repeated(message, name):
                getattr(message, name).extend(value)
            else:
                self._fill_positional(getattr(message, name), parts, value)
        else:
            raise CodecError(f"cannot encode {name} of type {tp}")

    def _fill_positional(self, message: Message, parts: tuple[Any, ...], value: tuple[Any, ...]) -> None:
        for name, tp, v in zip(_field_names(message), parts, value, strict=True):
            self._set(message, name, tp, v)

    # --- decoding -----------------------------------------------------------------------------------

    def decode(self, message: Message, cls: type) -> Any:
        """The dataclass ``cls`` a message carries. An enum field left unspecified (0) takes the field's
        default when it has one (e.g. options: unset means the rules' default), and is refused otherwise."""
        return self._decoder(cls)(message)

    def _decoder(self, cls: type) -> Callable[[Message], Any]:
        """A function reading ``cls`` from its message, made once per class from the field types."""
        found = self._decoders.get(cls)
        if found is None:
            defaulted = _defaulted(cls)
            fields = [
                (name, self._reader(name, tp), name in defaulted and _is_enum(tp)) for name, tp in _hints(cls).items()
            ]

            def read(message: Message) -> Any:
                values = {}
                for name, reader, may_default in fields:
                    if may_default and getattr(message, name) == 0:
                        continue
                    values[name] = reader(message)
                return cls(**values)

            found = self._decoders[cls] = read
        return found

    def _reader(self, name: str, tp: Any) -> Callable[[Message], Any]:
        """How to read field ``name`` of type ``tp``: the common shapes as direct functions, the rest by `_get`."""
        inner = _optional(tp)
        if inner is not None:
            if _homogeneous(inner) is not None:
                hidden, read_inner = f"{name}_hidden", self._reader(name, inner)
                return lambda m: None if getattr(m, hidden) else read_inner(m)
            if (
                _is_card(inner)
                or _is_enum(inner)
                or dataclasses.is_dataclass(inner)
                or inner in (int, bool, str, bytes)
            ):
                read_present = self._reader(name, inner)
                return lambda m: read_present(m) if m.HasField(name) else None
            return lambda m: self._get(m, name, tp)
        if _is_card(tp):
            return lambda m: _card(getattr(m, name))
        if _is_enum(tp):
            return lambda m: _member(tp, getattr(m, name))
        if tp in (int, bool, str, bytes):
            return operator.attrgetter(name)
        if dataclasses.is_dataclass(tp):
            return lambda m: self._decoder(typing.cast(type, tp))(getattr(m, name))
        item = _homogeneous(tp)
        if item is not None and get_origin(tp) is tuple:
            if _is_card(item):
                return lambda m: tuple(_card(c) for c in getattr(m, name))
            if item in (int, bool, str, bytes):
                return lambda m: tuple(getattr(m, name))
            if dataclasses.is_dataclass(item):
                return lambda m: tuple(self._decoder(typing.cast(type, item))(v) for v in getattr(m, name))
        return lambda m: self._get(m, name, tp)

    def _get(self, message: Message, name: str, tp: Any) -> Any:
        inner = _optional(tp)
        if inner is not None:
            if _homogeneous(inner) is not None:
                if getattr(message, f"{name}_hidden"):
                    return None
            elif not message.HasField(name):
                return None
            tp = inner
        if _is_card(tp):
            return _card(getattr(message, name))
        if isinstance(tp, type) and issubclass(tp, Enum):
            return _member(tp, getattr(message, name))
        if tp in (int, bool, str, bytes):
            return getattr(message, name)
        if dataclasses.is_dataclass(tp):
            return self.decode(getattr(message, name), typing.cast(type, tp))
        if (item := _homogeneous(tp)) is not None:
            field = getattr(message, name)
            maker: Callable[[Any], Any]
            if _is_card(item):
                maker = _card
            elif item in (int, bool, str, bytes):
                maker = lambda v: v  # noqa: E731
            elif _homogeneous(item) is not None and _is_card(_homogeneous(item)):
                maker = lambda v: tuple(_card(c) for c in v.cards)  # noqa: E731
            elif _homogeneous(item) is not None:
                maker = lambda v: self._get(v, _field_names(v)[0], item)  # noqa: E731
            elif dataclasses.is_dataclass(item):
                maker = lambda v: self.decode(v, typing.cast(type, item))  # noqa: E731
            elif (item_parts := _fixed(item)) is not None:
                fixed_parts: tuple[Any, ...] = item_parts
                maker = lambda v: self._positional(v, fixed_parts)  # noqa: E731
            else:
                raise CodecError(f"cannot decode {name}: items of type {item}")
            items = [maker(v) for v in field]
            return frozenset(items) if get_origin(tp) is frozenset else tuple(items)
        if (parts := _fixed(tp)) is not None:
            if all(p is int for p in parts) and _is_repeated(message, name):
                values = tuple(getattr(message, name))
                if len(values) != len(parts):
                    raise CodecError(f"{name} needs {len(parts)} numbers, got {len(values)}")
                return values
            return self._positional(getattr(message, name), parts)
        raise CodecError(f"cannot decode {name} of type {tp}")

    def _positional(self, message: Message, parts: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(self._get(message, name, tp) for name, tp in zip(_field_names(message), parts, strict=True))


_REPEATED: dict[tuple[Any, str], bool] = {}


def _is_repeated(message: Message, name: str) -> bool:
    key = (message.DESCRIPTOR, name)
    found = _REPEATED.get(key)
    if found is None:
        field = message.DESCRIPTOR.fields_by_name.get(name)
        found = _REPEATED[key] = field is not None and bool(field.is_repeated)
    return found


def _card(value: int) -> Card:
    if not 1 <= value <= 54:
        raise CodecError(f"{value} is not a card (Card values are 1..54)")
    return Card(value - 1)


_ENUM_NUMBERS: dict[type[Enum], dict[Any, int]] = {}


def _enum_numbers(enum: type[Enum]) -> dict[Any, int]:
    """Each member's proto number: its position among the members, from 1."""
    found = _ENUM_NUMBERS.get(enum)
    if found is None:
        found = _ENUM_NUMBERS[enum] = {member: i for i, member in enumerate(enum, start=1)}
    return found


def _member(enum: type[Enum], value: int) -> Any:
    members = _members(enum)
    if not 1 <= value <= len(members):
        raise CodecError(f"{value} is not a value of {enum.__name__}")
    return members[value - 1]


_MEMBERS: dict[type[Enum], list[Any]] = {}


def _members(enum: type[Enum]) -> list[Any]:
    found = _MEMBERS.get(enum)
    if found is None:
        found = _MEMBERS[enum] = list(enum)
    return found


_FIELD_NAMES: dict[Any, list[str]] = {}


def _field_names(message: Message) -> list[str]:
    """The message's field names in declaration order (a fixed tuple's items, in order)."""
    descriptor = message.DESCRIPTOR
    found = _FIELD_NAMES.get(descriptor)
    if found is None:
        found = _FIELD_NAMES[descriptor] = [typing.cast(Any, f).name for f in descriptor.fields]
    return found


def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Enum)


_DEFAULTED: dict[type, frozenset[str]] = {}


def _defaulted(cls: type) -> frozenset[str]:
    """The init fields of a dataclass that have a default."""
    found = _DEFAULTED.get(cls)
    if found is None:
        found = _DEFAULTED[cls] = frozenset(
            f.name
            for f in dataclasses.fields(cls)
            if f.init and (f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)
        )
    return found


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The init fields of a dataclass with their resolved types (computed once per class)."""
    found = _HINTS.get(cls)
    if found is None:
        hints = get_type_hints(cls)
        found = _HINTS[cls] = {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}
    return found


@functools.cache
def snake(name: str) -> str:
    """``CardsPlayed`` -> ``cards_played``: the oneof field of a class in a wrapper message."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


class OneofCodec:
    """A game's wrapper message (``ZljEvent``, ``TractorCommand``...): one oneof over the classes of a union."""

    def __init__(self, codec: Codec, wrapper: type[Message], union: Any, oneof: str) -> None:
        self._codec = codec
        self._wrapper = wrapper
        self._oneof = oneof
        self._classes = {snake(cls.__name__): cls for cls in get_args(union)}

    def encode(self, obj: Any) -> Message:
        wrapper = self._wrapper()
        getattr(wrapper, snake(type(obj).__name__)).CopyFrom(self._codec.encode(obj))
        return wrapper

    def decode(self, wrapper: Message) -> Any:
        which = wrapper.WhichOneof(self._oneof)
        if which is None:
            raise CodecError(f"{self._wrapper.__name__} carries no {self._oneof}")
        return self._codec.decode(getattr(wrapper, which), self._classes[which])
