"""Between the rules cores' frozen dataclasses and the protobuf contract (protos/paiju/v1).

The contract mirrors the cores by convention, so one generic codec serves every command, event and view:
a dataclass ``X`` of a game is the message ``<Prefix>X`` (``ZljCardsPlayed``, ``TractorBid``) with the same
field names; cards are the enum ``Card`` (card id + 1); a Python enum is the proto enum whose values follow
the members in order from 1; ``Cards | None`` (cards hidden from a seat) is ``repeated Card`` plus a
``<field>_hidden`` flag; a hand list is ``repeated CardList``; a fixed tuple is a message whose fields are
its items in order; an ``X | None`` is an optional field.

The engine encodes a seat's view and its legal actions at every move, and clients decode them, so the codec is
compiled: the first time it meets a dataclass with a message class, it reads the type hints once and writes Python
source for that pair — one function building the message's keyword arguments (a nested message is a dict, a
repeated field a list or an iterator), one reading the message into the dataclass — and compiles it (`_Compiled`).
Each later call runs only that function: no type hint is looked at again. Cards go through tables instead of
arithmetic: a card id maps to its number by a dict, a number to the card by a dict of the 54 valid ones.

Most of a view is history that stays the same from one move to the next (a 拖拉机 deal's tricks, a 砸六家 match's
deal results), and each item of such a list costs a dozen calls into protobuf to build or to read. So the top-level
functions remember the items of a list of deeply frozen dataclasses in a message (`_Compiled.memorable`): encoding,
an item object met before is merged as the wire bytes it gave (`_encoded_items`: the memo is keyed by the object's
identity and holds the object, and a frozen object's bytes cannot change); decoding, an item message with the same
bytes as one read before gives the same (frozen, equal) dataclass (`_remembering`). Each memo keeps the
`MEMO_LIMIT` items last added. An item met for the first time is written as wire bytes in Python when its shape
allows (numbers, booleans, strings, enums, cards, card lists, and dataclasses of them: `_Compiled._write_B`), which
is faster than building it through protobuf; a value that writer does not take is built through protobuf as before.

The compiled functions do what the reflective codec before them did (tests/contract/reference_codec.py keeps it:
tests/contract/test_codec_reference.py holds the two to the same bytes and the same errors):

- a nested message is present exactly when filling it set something (a field, even to its default; a hidden flag;
  an item of a list), and a ``X | None`` of ``None`` leaves its field unset;
- decoding refuses with `CodecError` what does not fit: a card number outside 1..54, an enum value that is no
  member (0 too, unless the field has a default: then 0 takes it), a fixed tuple of ints with the wrong count, a
  wrapper message without its oneof. The fast functions look numbers up in tables, where a bad number is a
  `KeyError`; on a `KeyError` the top-level call runs the exact twin of the fast function (the same code with
  checking helpers, `_card` and `_member`), which raises the `CodecError` with its message at the first bad field
  in field order, as the reflective codec did. A card id outside 0..53 when encoding takes the same way (the exact
  twin computes ``int(card) + 1``).
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import itertools
import keyword
import threading
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any, get_args, get_origin, get_type_hints

from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from paiju.rules.cards import Card

_NONE = type(None)
_SCALARS = (int, bool, str, bytes)


class CodecError(Exception):
    """A message that does not fit the contract (a client sent something malformed)."""


# --- the shapes of annotations --------------------------------------------------------------------------------


def _is_card(tp: Any) -> bool:
    return tp is Card


def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Enum)


def _optional(tp: Any) -> Any | None:
    """``X`` when ``tp`` is ``X | None``."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not _NONE]
        if len(args) == 1 and len(get_args(tp)) == 2:
            return args[0]
    return None


def _homogeneous(tp: Any) -> Any | None:
    """``X`` when ``tp`` is ``tuple[X, ...]`` or ``frozenset[X]``."""
    args = get_args(tp)
    if get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    if get_origin(tp) is frozenset:
        return args[0]
    return None


def _fixed(tp: Any) -> tuple[Any, ...] | None:
    """The item types when ``tp`` is a fixed-size tuple."""
    args = get_args(tp)
    if get_origin(tp) is tuple and args and Ellipsis not in args:
        return args
    return None


def _hints(cls: type) -> dict[str, Any]:
    """The init fields of a dataclass with their resolved types."""
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def _defaults(cls: type) -> dict[str, dataclasses.Field[Any]]:
    """The init fields of a dataclass that have a default (or a default factory)."""
    return {
        f.name: f
        for f in dataclasses.fields(cls)
        if f.init and (f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)
    }


def _frozen(tp: Any, seen: frozenset[Any] = frozenset()) -> bool:
    """Whether values of ``tp`` never change: frozen dataclasses of frozen parts, tuples, frozensets, scalars."""
    if tp in seen or _is_card(tp) or _is_enum(tp) or tp in _SCALARS:
        return True
    args = [a for a in get_args(tp) if a is not Ellipsis and a is not _NONE]
    if get_origin(tp) in (tuple, frozenset, typing.Union, types.UnionType):
        return bool(args) and all(_frozen(a, seen) for a in args)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        params = getattr(tp, "__dataclass_params__", None)
        return bool(params and params.frozen) and all(_frozen(t, seen | {tp}) for t in _hints(tp).values())
    return False


def _field_names(message_class: type[Message]) -> list[str]:
    """The message's field names in declaration order (a fixed tuple's items, in order)."""
    return [typing.cast(Any, f).name for f in message_class.DESCRIPTOR.fields]


def _is_repeated(message_class: type[Message], name: str) -> bool:
    field = message_class.DESCRIPTOR.fields_by_name.get(name)
    return field is not None and bool(field.is_repeated)


def _nested(message_class: type[Message], name: str) -> type[Message]:
    """The message class of field ``name`` (a singular or a repeated message field)."""
    field = message_class.DESCRIPTOR.fields_by_name.get(name)
    if field is None or field.message_type is None:
        raise CodecError(f"{message_class.DESCRIPTOR.full_name} has no message field {name}")
    return message_factory.GetMessageClass(typing.cast(Any, field.message_type))


# --- what the compiled functions call -------------------------------------------------------------------------

_CARD_NUMBER: dict[int, int] = {c: c + 1 for c in range(54)}
"""A card id's number in the contract (id + 1)."""
_CARD_OF: dict[int, Card] = {n: Card(n - 1) for n in range(1, 55)}
"""The card of each valid number; any other number is not a card."""


def _card(value: int) -> Card:
    if not 1 <= value <= 54:
        raise CodecError(f"{value} is not a card (Card values are 1..54)")
    return Card(value - 1)


def _member(enum: type[Enum], value: int) -> Any:
    members = list(enum)
    if not 1 <= value <= len(members):
        raise CodecError(f"{value} is not a value of {enum.__name__}")
    return members[value - 1]


def _fail(message: str) -> Any:
    raise CodecError(message)


def _ints(values: Any, name: str, count: int) -> tuple[int, ...]:
    """A fixed tuple of ``count`` ints carried as a repeated field."""
    found = tuple(values)
    if len(found) != count:
        raise CodecError(f"{name} needs {count} numbers, got {len(found)}")
    return found


def _unzippable(name: str) -> Any:
    raise ValueError(f"{name}: the message's fields and the tuple's items differ in number")


MEMO_LIMIT = 1 << 12
"""Items remembered per remembered field (`_encoded_items`, `_remembering`); the oldest go first. A 拖拉机 trick
remembered holds about 400 bytes (its wire bytes, and the object when no state holds it any more): under 2 MB per
field. What is worth remembering is the items of the games being played: a 拖拉机 deal holds at most about 54 tricks
(22 on average), so 4,096 hold those of 50 拖拉机 tables at once even when every deal is near its end. More only
fills a long-running process's memory with tricks of deals long over (8,192 took 13 minutes to fill at 30 tables)."""


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL = 2048
_VARINTS = tuple(_varint(n) for n in range(_SMALL))
"""The varint of each number below `_SMALL`."""
_CARD_WIRE = bytes(range(1, 55)) + bytes(256 - 54)
"""Card id -> its number, as a bytes translation (0 for a byte that is no card id)."""
_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(1 << 31), 1 << 31),
    FieldDescriptor.TYPE_INT64: (-(1 << 63), 1 << 63),
    FieldDescriptor.TYPE_UINT32: (0, 1 << 32),
    FieldDescriptor.TYPE_UINT64: (0, 1 << 64),
}
"""The integer fields written on the wire directly, each with its numbers (from, to before)."""


class _Slow(Exception):
    """A value the wire writer leaves to protobuf (a negative or an out-of-range number, an unexpected type)."""


class _Unwritable(Exception):
    """A shape the wire writer does not write (its items are built through protobuf instead)."""


def varint(n: int) -> bytes:
    """``n`` (not negative: a length, a tag) as a protobuf varint; those below `_SMALL` made once."""
    return _VARINTS[n] if n < _SMALL else _varint(n)


def _number(value: Any, low: int, high: int) -> bytes:
    """The varint of an int from ``low`` to before ``high`` (a negative one as 64 bits, as protobuf writes an int32
    or an int64); anything else (a bool, a number out of range) is left to protobuf."""
    if type(value) is not int or not low <= value < high:
        raise _Slow
    if 0 <= value < _SMALL:
        return _VARINTS[value]
    return _varint(value + (1 << 64) if value < 0 else value)


def _packed(values: Any, low: int, high: int) -> bytes:
    return b"".join([_number(value, low, high) for value in values])


def _card_bytes(cards: Any) -> bytes:
    """The numbers of card ids, one byte each."""
    found = bytes(cards).translate(_CARD_WIRE)
    if 0 in found:
        raise _Slow
    return found


def _card_lists(lists: Any, tag: bytes, inner: bytes) -> bytes:
    """Repeated ``CardList``-like messages (their cards field's tag ``inner``) of field ``tag``."""
    out = []
    for cards in lists:
        if cards:
            found = bytes(cards).translate(_CARD_WIRE)
            if 0 in found:
                raise _Slow
            n = len(found)
            body = inner + (_VARINTS[n] if n < _SMALL else _varint(n)) + found
            n = len(body)
            out.append(tag + (_VARINTS[n] if n < _SMALL else _varint(n)) + body)
        else:
            out.append(tag + b"\x00")
    return b"".join(out)


def _encoded_items(memo: dict[int, tuple[Any, bytes]], items: Any, encode: Callable[[Any], bytes]) -> bytes:
    """The wire form of a repeated message field holding ``items``, each item's (tag, length and message) taken from
    ``memo`` when this very object was encoded before (items are deeply frozen: the same object, the same bytes)."""
    pieces = []
    for item in items:
        found = memo.get(id(item))
        if found is None or found[0] is not item:
            found = (item, encode(item))  # the memo holds the item: its id is not reused while it is there
            if len(memo) >= MEMO_LIMIT:
                memo.pop(next(iter(memo)), None)
            memo[id(item)] = found
        pieces.append(found[1])
    return b"".join(pieces)


def _item_encoder(
    number: int,
    message_class: type[Message],
    build: Callable[[Any], dict[str, Any]],
    write: Callable[[Any], bytes] | None,
) -> Callable[[Any], bytes]:
    """An item of repeated message field ``number`` as it stands on the wire: tag, length, message. The message is
    written by ``write`` (the wire writer of its class, when it has one), else built through protobuf; a value the
    writer does not take (`_Slow`, or any failure) is built through protobuf, which takes it or refuses it."""
    tag = _varint(number << 3 | 2)

    def encode(item: Any) -> bytes:
        if write is not None:
            try:
                wire = write(item)
            except Exception:
                pass
            else:
                return tag + varint(len(wire)) + wire
        wire = message_class(**build(item)).SerializeToString()
        return tag + varint(len(wire)) + wire

    return encode


def remembered(
    memo: dict[bytes, Any], message: Message, read: Callable[[Message], Any], limit: int | None = None
) -> Any:
    """What ``read`` gives for ``message``, from ``memo`` when a message with the same bytes was read before (the
    dataclass it gives is deeply frozen, and the bytes are all that reading looks at); ``memo`` holds ``limit``
    entries at most (by default `MEMO_LIMIT`, read at each call), the oldest forgotten first."""
    key = message.SerializeToString()
    found = memo.get(key)
    if found is None:
        found = read(message)
        if len(memo) >= (MEMO_LIMIT if limit is None else limit):
            memo.pop(next(iter(memo)), None)
        memo[key] = found
    return found


def _remembering(read: Callable[[Message], Any], memo: dict[bytes, Any]) -> Callable[[Message], Any]:
    """``read`` answering again from ``memo`` (`remembered`)."""
    return lambda message: remembered(memo, message, read)


# --- the compiler ---------------------------------------------------------------------------------------------


def _attr(var: str, name: str) -> str:
    """Source reading attribute ``name`` of ``var``."""
    return f"getattr({var}, {name!r})" if keyword.iskeyword(name) else f"{var}.{name}"


def _dict(pairs: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{key!r}: {expr}" for key, expr in pairs) + "}"


def _call(callee: str, pairs: list[tuple[str, str]]) -> str:
    """Source calling ``callee`` with keyword arguments (through a dict when a name is a Python keyword)."""
    if any(keyword.iskeyword(key) for key, _ in pairs):
        return f"{callee}(**{_dict(pairs)})"
    return f"{callee}(" + ", ".join(f"{key}={expr}" for key, expr in pairs) + ")"


class _Compiled:
    """Every compiled function, in one namespace: each (kind, dataclass, message class, exact) is written once.

    Kinds, for a dataclass and its message class: ``E`` encodes it into a new message (the top-level encoder, with
    its exact twin ``M`` after a `KeyError`), ``W`` into the member of a oneof wrapper (for `OneofCodec`), ``D`` builds
    the keyword arguments of its message as a dict (to nest it), ``T`` says whether filling that message sets anything
    (written only for a dataclass whose message may stay empty); ``C`` decodes it (the top-level decoder, with its
    exact twin ``R`` after a `KeyError`), ``R`` reads it (nested), ``P`` reads a fixed tuple carried as a small
    message. ``exact`` picks the twin of a kind: card ids by arithmetic, numbers checked by `_card` and `_member`."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {
            "__builtins__": builtins,
            "CN": _CARD_NUMBER,
            "CARD": _CARD_OF,
            "_card": _card,
            "_member": _member,
            "_fail": _fail,
            "_ints": _ints,
            "_unzippable": _unzippable,
            "_encoded_items": _encoded_items,
            "_Slow": _Slow,
            "_number": _number,
            "_packed": _packed,
            "_length": varint,
            "varint": varint,
            "_card_bytes": _card_bytes,
            "_card_lists": _card_lists,
            "VI": _VARINTS,
        }
        self.sources: dict[str, str] = {}
        """The source of each compiled function, by name (to read what the codec does with a class)."""
        self._names: dict[tuple[Any, ...], str] = {}
        self._writing: dict[tuple[Any, ...], str] = {}
        self._always: dict[tuple[Any, ...], bool] = {}
        self._constants: dict[Any, str] = {}
        self._memos: list[dict[Any, Any]] = []
        self._count = itertools.count()
        self._lock = threading.RLock()

    def function(self, kind: str, cls: Any, message_class: Any, exact: bool = False) -> str:
        """The name of a compiled function, compiling it (and what it calls) the first time."""
        key = (kind, cls, message_class, exact)
        name = self._names.get(key)
        if name is not None:
            return name
        with self._lock:
            name = self._names.get(key) or self._writing.get(key)
            if name is not None:
                return name
            name = f"{kind}{'x' if exact else ''}_{getattr(cls, '__name__', 'tuple')}_{next(self._count)}"
            self._writing[key] = name  # before writing it: a dataclass nested in itself calls itself
            try:
                source = getattr(self, f"_write_{kind}")(name, cls, message_class, exact)
                exec(compile(source, f"<paiju.contract.codec {name}>", "exec"), self.namespace)
            finally:
                del self._writing[key]
            self.sources[name] = source
            self._names[key] = name  # only now that it exists, for other threads
            return name

    def get(self, name: str) -> Any:
        return self.namespace[name]

    def memo(self) -> dict[Any, Any]:
        """A new memo of remembered items (`_encoded_items`, `_remembering`)."""
        made: dict[Any, Any] = {}
        self._memos.append(made)
        return made

    def forget(self) -> None:
        """Empty every memo: the next call encodes and decodes every item afresh (for benchmarks and tests)."""
        for memo in self._memos:
            memo.clear()

    def constant(self, value: Any, hint: str, key: Any = None) -> str:
        """A name in the namespace bound to ``value`` (one name per ``key``, or per object when ``key`` is None)."""
        key = ("id", id(value)) if key is None else key
        found = self._constants.get(key)
        if found is None:
            found = self._constants[key] = f"{hint}_{next(self._count)}"
            self.namespace[found] = value
        return found

    def enum_numbers(self, enum: type[Enum]) -> str:
        """Each member's proto number: its position among the members, from 1."""
        numbers = {member: i for i, member in enumerate(enum, start=1)}
        return self.constant(numbers, f"N_{enum.__name__}", ("numbers", enum))

    def enum_members(self, enum: type[Enum]) -> str:
        """The member of each valid proto number."""
        return self.constant(dict(enumerate(enum, start=1)), f"V_{enum.__name__}", ("members", enum))

    # --- encoding -----------------------------------------------------------------------------------------

    def _fields(
        self,
        cls: type,
        message_class: type[Message],
        exact: bool,
        remembered: list[str] | None = None,
        indent: str = "    ",
    ) -> tuple[list[str], list[tuple[str, str]]]:
        """Statements binding each field of ``o`` to a local, and the message's keyword arguments from them. With
        ``remembered``, a list of deeply frozen dataclasses is left out of the arguments: the statement merging the
        items' remembered wire form into the message ``made`` is added there instead."""
        binds: list[str] = []
        pairs: list[tuple[str, str]] = []
        for i, (name, tp) in enumerate(_hints(cls).items()):
            binds.append(f"{indent}f{i} = o.{name}")
            item = self.memorable(tp)
            if remembered is not None and item is not None:
                memo, encode = self.remembered_items(message_class, name, item)
                remembered.append(
                    f"{indent}if f{i}:\n{indent}    made.MergeFromString(_encoded_items({memo}, f{i}, {encode}))"
                )
                continue
            pairs += self.encoding(message_class, name, tp, f"f{i}", exact)
        return binds, pairs

    def remembered_items(self, message_class: type[Message], name: str, item: type) -> tuple[str, str]:
        """The names of the memo and of the item encoder of repeated field ``name`` holding deeply frozen ``item``
        dataclasses (`_encoded_items`): one pair per field, shared by the field's message encoder and its wire
        writer."""
        field = message_class.DESCRIPTOR.fields_by_name[name]
        sub = _nested(message_class, name)
        key = (message_class, name)
        try:
            write = self.get(self.function("B", item, sub))
        except _Unwritable:
            write = None
        encode = _item_encoder(field.number, sub, self.get(self.function("D", item, sub)), write)
        memo = self.constant(self.memo(), f"MEMO_{item.__name__}", ("memo", *key))
        return memo, self.constant(encode, f"WIRE_{item.__name__}", ("wire", *key))

    def memorable(self, tp: Any) -> type | None:
        """The item class when ``tp`` is a tuple of deeply frozen dataclasses (whose encoding and decoding may be
        remembered: the same object, the same message; the same message, an equal object)."""
        item = _homogeneous(tp)
        if item is None or get_origin(tp) is not tuple or not dataclasses.is_dataclass(item):
            return None
        return typing.cast(type, item) if _frozen(item) else None

    def _write_E(self, name: str, cls: type, message_class: type[Message], exact: bool) -> str:
        remembered: list[str] = []
        binds, pairs = self._fields(cls, message_class, False, remembered, indent="        ")
        made = _call(self.constant(message_class, f"K_{message_class.__name__}"), pairs)
        twin = self.function("M", cls, message_class, exact=True)
        return "\n".join(
            [
                f"def {name}(o):",
                "    try:",
                *binds,
                f"        made = {made}",
                *remembered,
                "        return made",
                "    except KeyError:",
                f"        return {twin}(o)",
            ]
        )

    def _write_M(self, name: str, cls: type, message_class: type[Message], exact: bool) -> str:
        binds, pairs = self._fields(cls, message_class, exact)
        made = _call(self.constant(message_class, f"K_{message_class.__name__}"), pairs)
        return "\n".join([f"def {name}(o):", *binds, f"    return {made}"])

    def _write_W(self, name: str, cls: type, member: tuple[type[Message], str], exact: bool) -> str:
        wrapper, field = member
        sub = _nested(wrapper, field)
        binds, pairs = self._fields(cls, sub, False, indent="        ")
        callee = self.constant(wrapper, f"K_{wrapper.__name__}")
        twin = f"{self.function('D', cls, sub, exact=True)}(o)"
        return "\n".join(
            [
                f"def {name}(o):",
                "    try:",
                *binds,
                f"        return {_call(callee, [(field, _dict(pairs))])}",
                "    except KeyError:",
                f"        return {_call(callee, [(field, twin)])}",
            ]
        )

    def _write_D(self, name: str, cls: type, message_class: type[Message], exact: bool) -> str:
        binds, pairs = self._fields(cls, message_class, exact)
        return "\n".join([f"def {name}(o):", *binds, f"    return {_dict(pairs)}"])

    def _write_T(self, name: str, cls: type, message_class: type[Message], exact: bool) -> str:
        tests = [self.touches(message_class, n, tp, f"o.{n}") for n, tp in _hints(cls).items()]
        return f"def {name}(o):\n    return bool({' or '.join(f'({t})' for t in tests) or 'False'})"

    def always_touches(self, cls: type, message_class: type[Message]) -> bool:
        """Filling ``cls``'s message sets something whatever the values (a field that is always set)."""
        key = (cls, message_class)
        found = self._always.get(key)
        if found is None:
            self._always[key] = False  # a dataclass nested in itself: not known to touch through itself
            found = any(self.touches(message_class, n, tp, "v") == "True" for n, tp in _hints(cls).items())
            self._always[key] = found
        return found

    def touches(self, message_class: type[Message], name: str, tp: Any, v: str) -> str:
        """Source saying whether setting field ``name`` of type ``tp`` to ``v`` sets anything in the message."""
        inner = _optional(tp)
        if inner is not None:
            if _homogeneous(inner) is not None:
                return f"{v} is None or len({v}) > 0"  # None sets the hidden flag; the cards are their items
            present = self.touches(message_class, name, inner, v)
            return f"{v} is not None" if present == "True" else f"{v} is not None and ({present})"
        if _is_card(tp) or _is_enum(tp) or tp in _SCALARS:
            return "True"
        if dataclasses.is_dataclass(tp):
            sub = _nested(message_class, name)
            cls = typing.cast(type, tp)
            return "True" if self.always_touches(cls, sub) else f"{self.function('T', cls, sub)}({v})"
        if _homogeneous(tp) is not None:
            return f"len({v}) > 0"
        parts = _fixed(tp)
        if parts is not None:
            if all(p is int for p in parts) and _is_repeated(message_class, name):
                return "True"  # extending a repeated field sets the message even with no items
            sub = _nested(message_class, name)
            tests = [
                self.touches(sub, n, p, f"{v}[{i}]")
                for i, (n, p) in enumerate(zip(_field_names(sub), parts, strict=False))
            ]
            return "True" if "True" in tests else " or ".join(f"({t})" for t in tests) or "False"
        return "True"

    def encoding(self, message_class: type[Message], name: str, tp: Any, v: str, exact: bool) -> list[tuple[str, str]]:
        """The keyword arguments that set field ``name`` (of type ``tp``) of the message to the value ``v``: a
        keyword argument of ``None`` leaves its field unset."""
        inner = _optional(tp)
        if inner is not None:
            # a keyword argument of None leaves the field unset: the value itself when it is passed as it is
            pairs = [
                (key, expr if expr == v else f"(None if {v} is None else {expr})")
                for key, expr in self.encoding(message_class, name, inner, v, exact)
            ]
            if _homogeneous(inner) is not None:
                pairs.insert(0, (f"{name}_hidden", f"(True if {v} is None else None)"))
            return pairs
        if _is_card(tp):
            return [(name, f"(int({v}) + 1)" if exact else f"CN[{v}]")]
        if _is_enum(tp):
            return [(name, f"{self.enum_numbers(tp)}[{v}]")]
        if tp in _SCALARS:
            return [(name, v)]
        if dataclasses.is_dataclass(tp):
            sub = _nested(message_class, name)
            cls = typing.cast(type, tp)
            built = f"{self.function('D', cls, sub, exact)}({v})"
            if self.always_touches(cls, sub):
                return [(name, built)]
            return [(name, f"({built} if {self.function('T', cls, sub)}({v}) else None)")]
        item = _homogeneous(tp)
        if item is not None:
            return [
                (
                    name,
                    self.items(message_class, name, item, f"sorted({v})" if get_origin(tp) is frozenset else v, exact),
                )
            ]
        parts = _fixed(tp)
        if parts is not None:
            if all(p is int for p in parts) and _is_repeated(message_class, name):
                return [(name, v)]
            return [(name, self.positional(_nested(message_class, name), parts, v, exact))]
        return [(name, f"_fail({f'cannot encode {name} of type {tp}'!r})")]

    def items(self, message_class: type[Message], name: str, item: Any, seq: str, exact: bool) -> str:
        """Source of the items of repeated field ``name`` from the sequence ``seq`` of values of type ``item``."""
        x = f"x{next(self._count)}"
        if _is_card(item):
            return f"[int({x}) + 1 for {x} in {seq}]" if exact else f"map(CN.__getitem__, {seq})"
        if item in _SCALARS:
            return seq
        inner = _homogeneous(item)
        if inner is not None and _is_card(inner):
            cards = f"[int(c) + 1 for c in {x}]" if exact else f"map(CN.__getitem__, {x})"
            return f"[{{'cards': {cards}}} for {x} in {seq}]"
        if inner is not None:
            # a list of lists: each inner list is a message with one repeated field
            wrapper = _nested(message_class, name)
            first = _field_names(wrapper)[0]
            return f"[{_dict(self.encoding(wrapper, first, item, x, exact))} for {x} in {seq}]"
        if dataclasses.is_dataclass(item):
            return f"map({self.function('D', typing.cast(type, item), _nested(message_class, name), exact)}, {seq})"
        parts = _fixed(item)
        if parts is not None:
            return f"[{self.positional(_nested(message_class, name), parts, x, exact)} for {x} in {seq}]"
        return f"(_fail({f'cannot encode {name}: items of type {item}'!r}) if {seq} else ())"

    def positional(self, sub: type[Message], parts: tuple[Any, ...], v: str, exact: bool) -> str:
        """Source of the message ``sub`` whose fields are the items of the fixed tuple ``v``, in order."""
        names = _field_names(sub)
        if len(names) != len(parts):
            return f"_unzippable({sub.DESCRIPTOR.full_name!r})"
        pairs: list[tuple[str, str]] = []
        for i, (n, p) in enumerate(zip(names, parts, strict=True)):
            pairs += self.encoding(sub, n, p, f"{v}[{i}]", exact)
        return _dict(pairs)

    # --- the wire writer of remembered items ---------------------------------------------------------------

    def _write_B(self, name: str, cls: type, message_class: type[Message], exact: bool) -> str:
        """The message of ``cls`` written as wire bytes in Python (for the items `_encoded_items` remembers: writing a
        few bytes beats a dozen calls into protobuf), for dataclasses of numbers, booleans, strings, enums, cards and
        card lists, and of such dataclasses; `_Unwritable` for any other shape. The bytes are parsed by protobuf
        (merged into the message), so only their content counts: fields left at zero are left out, as protobuf
        leaves them; a value it would refuse or that needs care (a negative number, a wrong type) is `_Slow`."""
        lines = [f"def {name}(o):", "    out = []", "    ap = out.append"]
        parts: list[tuple[int, list[str]]] = []
        for i, (n, tp) in enumerate(_hints(cls).items()):
            lines.append(f"    f{i} = o.{n}")
            parts += self.wire(message_class, n, tp, f"f{i}", "    ")
        for _, statements in sorted(parts, key=lambda part: part[0]):  # in the order of the fields' numbers
            lines += statements
        lines.append('    return b"".join(out)')
        return "\n".join(lines)

    def _write_Q(self, name: str, parts: Any, message_class: type[Message], exact: bool) -> str:
        """`_write_B` for a fixed tuple carried as a small message: its items are the message's fields, in order."""
        lines = [f"def {name}(o):", "    out = []", "    ap = out.append"]
        groups: list[tuple[int, list[str]]] = []
        for i, (n, tp) in enumerate(zip(_field_names(message_class), parts, strict=True)):
            lines.append(f"    f{i} = o[{i}]")
            groups += self.wire(message_class, n, tp, f"f{i}", "    ")
        for _, statements in sorted(groups, key=lambda group: group[0]):
            lines += statements
        lines.append('    return b"".join(out)')
        return "\n".join(lines)

    def _tag(self, field: Any, wire_type: int) -> str:
        """The name of the tag bytes of ``field`` (a field descriptor) with ``wire_type``."""
        return self.constant(_varint(field.number << 3 | wire_type), "TAG", ("tag", field.number, wire_type))

    def wire(
        self, message_class: type[Message], name: str, tp: Any, v: str, indent: str
    ) -> list[tuple[int, list[str]]]:
        """Statements appending field ``name`` (of type ``tp``, value ``v``) to ``out`` on the wire, each group under
        the number of the field it writes (a list of hidden cards writes its ``_hidden`` flag under that flag's)."""
        field = message_class.DESCRIPTOR.fields_by_name.get(name)
        if field is None:
            raise _Unwritable(name)
        inner = _optional(tp)
        if inner is not None:
            if _homogeneous(inner) is not None:
                hidden = message_class.DESCRIPTOR.fields_by_name.get(f"{name}_hidden")
                if hidden is None or hidden.type != FieldDescriptor.TYPE_BOOL:
                    raise _Unwritable(name)
                present = [
                    line for _, lines in self.wire(message_class, name, inner, v, indent + "    ") for line in lines
                ]
                flag = [f"{indent}if {v} is None:", f"{indent}    ap({self._tag(hidden, 0)} + b'\\x01')"]
                return [
                    (hidden.number, flag),
                    (field.number, [f"{indent}if {v} is not None:", *present] if present else []),
                ]
            present = self.value(message_class, field, inner, v, indent + "    ", explicit=True)
            return [(field.number, [f"{indent}if {v} is not None:", *present])]
        return [(field.number, self.value(message_class, field, tp, v, indent, explicit=False))]

    def value(
        self, message_class: type[Message], field: Any, tp: Any, v: str, indent: str, *, explicit: bool
    ) -> list[str]:
        """Statements writing the value ``v`` of ``tp`` to ``field`` (``explicit``: a field with presence, written
        even at zero)."""
        kind = field.type
        explicit = explicit or bool(field.has_presence)  # protobuf keeps a zero set in a field with presence
        nonzero = "" if explicit else f"{indent}if {v}:"
        deeper = indent if explicit else indent + "    "

        def guarded(*body: str) -> list[str]:
            return [nonzero, *body] if nonzero else list(body)

        if tp is int and kind in _INT_RANGES and not field.is_repeated:
            low, high = _INT_RANGES[kind]
            small = f"VI[{v}] if 0 <= {v} < {_SMALL} else _number({v}, {low}, {high})"
            return [
                f"{indent}if type({v}) is not int:",
                f"{indent}    raise _Slow",
                *guarded(f"{deeper}ap({self._tag(field, 0)} + ({small}))"),
            ]
        if tp is bool and kind == FieldDescriptor.TYPE_BOOL and not field.is_repeated:
            return [
                f"{indent}if type({v}) is not bool:",
                f"{indent}    raise _Slow",
                *guarded(f"{deeper}ap({self._tag(field, 0)} + (b'\\x01' if {v} else b'\\x00'))"),
            ]
        if tp in (str, bytes) and kind in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
            if field.is_repeated or (tp is str) != (kind == FieldDescriptor.TYPE_STRING):
                raise _Unwritable(field.name)
            encoded = f"{v}.encode()" if tp is str else v
            return [
                f"{indent}if type({v}) is not {tp.__name__}:",
                f"{indent}    raise _Slow",
                *guarded(f"{deeper}b = {encoded}", f"{deeper}ap({self._tag(field, 2)} + varint(len(b)) + b)"),
            ]
        if (_is_enum(tp) or _is_card(tp)) and kind == FieldDescriptor.TYPE_ENUM and not field.is_repeated:
            numbers = "CN" if _is_card(tp) else self.enum_numbers(tp)
            return [f"{indent}ap({self._tag(field, 0)} + varint({numbers}[{v}]))"]
        if dataclasses.is_dataclass(tp) and kind == FieldDescriptor.TYPE_MESSAGE and not field.is_repeated:
            sub = _nested(message_class, field.name)
            cls = typing.cast(type, tp)
            writer = self.function("B", cls, sub)
            written = [f"b = {writer}({v})", f"ap({self._tag(field, 2)} + varint(len(b)) + b)"]
            if self.always_touches(cls, sub):
                return [f"{indent}{line}" for line in written]
            # a message that filling may leave empty is left unset then, as the encoder leaves it
            return [f"{indent}if {self.function('T', cls, sub)}({v}):", *(f"{indent}    {line}" for line in written)]
        parts = _fixed(tp)
        if parts is not None and not field.is_repeated and kind == FieldDescriptor.TYPE_MESSAGE:
            sub = _nested(message_class, field.name)
            if len(_field_names(sub)) != len(parts):
                raise _Unwritable(field.name)
            writer = self.function("Q", parts, sub)
            written = [f"b = {writer}({v})", f"ap({self._tag(field, 2)} + varint(len(b)) + b)"]
            touched = self.touches(message_class, field.name, tp, v)
            if touched == "True":
                return [f"{indent}{line}" for line in written]
            return [f"{indent}if {touched}:", *(f"{indent}    {line}" for line in written)]
        remembered = self.memorable(tp)
        if remembered is not None and field.is_repeated and kind == FieldDescriptor.TYPE_MESSAGE:
            memo, encode = self.remembered_items(message_class, field.name, remembered)
            return [f"{indent}if {v}:", f"{indent}    ap(_encoded_items({memo}, {v}, {encode}))"]
        item = _homogeneous(tp)
        parts = _fixed(tp)
        if parts is not None and all(p is int for p in parts) and field.is_repeated:
            item = int
        if item is not None and field.is_repeated:
            seq = f"sorted({v})" if get_origin(tp) is frozenset else v
            tag = self._tag(field, 2)
            if _is_card(item) and kind == FieldDescriptor.TYPE_ENUM:
                body = f"_card_bytes({seq})"
            elif item is int and kind in _INT_RANGES:
                low, high = _INT_RANGES[kind]
                body = f"_packed({seq}, {low}, {high})"
            elif (
                _homogeneous(item) is not None and _is_card(_homogeneous(item)) and kind == FieldDescriptor.TYPE_MESSAGE
            ):
                wrapper = _nested(message_class, field.name)
                cards = wrapper.DESCRIPTOR.fields_by_name.get("cards")
                if cards is None or cards.type != FieldDescriptor.TYPE_ENUM or not cards.is_repeated:
                    raise _Unwritable(field.name)
                return [f"{indent}if {v}:", f"{indent}    ap(_card_lists({seq}, {tag}, {self._tag(cards, 2)}))"]
            else:
                raise _Unwritable(field.name)
            return [f"{indent}if {v}:", f"{indent}    b = {body}", f"{indent}    ap({tag} + varint(len(b)) + b)"]
        raise _Unwritable(field.name)

    # --- decoding -----------------------------------------------------------------------------------------

    def _write_R(self, name: str, cls: type, message_class: type[Message], exact: bool) -> str:
        return f"def {name}(m):\n    return {self._made(cls, message_class, exact, remember=False)}"

    def _write_C(self, name: str, cls: type, message_class: type[Message], exact: bool) -> str:
        made = self._made(cls, message_class, False, remember=True)
        twin = self.function("R", cls, message_class, exact=True)
        return f"def {name}(m):\n    try:\n        return {made}\n    except KeyError:\n        return {twin}(m)"

    def _made(self, cls: type, message_class: type[Message], exact: bool, *, remember: bool) -> str:
        """Source of ``cls`` read from the message ``m``; with ``remember``, each item of a list of deeply frozen
        dataclasses is read once for the same bytes (`_remembering`)."""
        defaults = _defaults(cls)
        kw_only = any(f.kw_only for f in dataclasses.fields(cls) if f.init)
        args = []
        for i, (n, tp) in enumerate(_hints(cls).items()):
            item = self.memorable(tp) if remember else None
            if item is not None:
                reader = self.get(self.function("R", item, _nested(message_class, n), exact))
                remembered = _remembering(reader, self.memo())
                read = f"tuple(map({self.constant(remembered, f'REMEMBERED_{item.__name__}')}, {_attr('m', n)}))"
            elif n in defaults and _is_enum(tp):
                # an enum left unspecified (0) takes the field's default
                field = defaults[n]
                if field.default is not dataclasses.MISSING:
                    default = self.constant(field.default, "DEFAULT")
                else:
                    default = f"{self.constant(field.default_factory, 'FACTORY')}()"
                value = self.decoding(message_class, n, tp, f"t{i}", exact, read_field=False)
                read = f"({default} if (t{i} := {_attr('m', n)}) == 0 else {value})"
            else:
                read = self.decoding(message_class, n, tp, "m", exact)
            args.append(f"{n}={read}" if kw_only else read)
        return f"{self.constant(cls, f'CLS_{cls.__name__}')}({', '.join(args)})"

    def _write_P(self, name: str, parts: Any, message_class: type[Message], exact: bool) -> str:
        names = _field_names(message_class)
        if len(names) != len(parts):
            return f"def {name}(m):\n    return _unzippable({message_class.DESCRIPTOR.full_name!r})"
        reads = [self.decoding(message_class, n, p, "m", exact) for n, p in zip(names, parts, strict=True)]
        return f"def {name}(m):\n    return ({', '.join(reads)},)"

    def decoding(
        self, message_class: type[Message], name: str, tp: Any, m: str, exact: bool, *, read_field: bool = True
    ) -> str:
        """Source reading field ``name`` of type ``tp`` from the message ``m`` (``read_field`` false: ``m`` is the
        field's value already, for a scalar or an enum)."""
        value = _attr(m, name) if read_field else m
        inner = _optional(tp)
        if inner is not None:
            read = self.decoding(message_class, name, inner, m, exact)
            if _homogeneous(inner) is not None:
                return f"(None if {_attr(m, name + '_hidden')} else {read})"
            return f"({read} if {m}.HasField({name!r}) else None)"
        if _is_card(tp):
            return f"_card({value})" if exact else f"CARD[{value}]"
        if _is_enum(tp):
            if exact:
                return f"_member({self.constant(tp, f'ENUM_{tp.__name__}')}, {value})"
            return f"{self.enum_members(tp)}[{value}]"
        if tp in _SCALARS:
            return value
        if dataclasses.is_dataclass(tp):
            return f"{self.function('R', typing.cast(type, tp), _nested(message_class, name), exact)}({value})"
        item = _homogeneous(tp)
        if item is not None:
            made = "frozenset" if get_origin(tp) is frozenset else "tuple"
            x = f"x{next(self._count)}"
            value = f"{value}[:]"  # a repeated field read as a list at once: faster than iterating it
            if _is_card(item):
                if exact:
                    return f"{made}([_card({x}) for {x} in {value}])"
                return f"{made}(map(CARD.__getitem__, {value}))"
            if item in _SCALARS:
                return f"{made}({value})"
            inner = _homogeneous(item)
            if inner is not None and _is_card(inner):
                cards = (
                    f"tuple([_card(c) for c in {x}.cards])" if exact else f"tuple(map(CARD.__getitem__, {x}.cards[:]))"
                )
                return f"{made}([{cards} for {x} in {value}])"
            if inner is not None:
                wrapper = _nested(message_class, name)
                read = self.decoding(wrapper, _field_names(wrapper)[0], item, x, exact)
                return f"{made}([{read} for {x} in {value}])"
            if dataclasses.is_dataclass(item):
                reader = self.function("R", typing.cast(type, item), _nested(message_class, name), exact)
                return f"{made}(map({reader}, {value}))"
            parts = _fixed(item)
            if parts is not None:
                return f"{made}(map({self.function('P', parts, _nested(message_class, name), exact)}, {value}))"
            return f"_fail({f'cannot decode {name}: items of type {item}'!r})"
        parts = _fixed(tp)
        if parts is not None:
            if all(p is int for p in parts) and _is_repeated(message_class, name):
                return f"_ints({value}, {name!r}, {len(parts)})"
            return f"{self.function('P', parts, _nested(message_class, name), exact)}({value})"
        return f"_fail({f'cannot decode {name} of type {tp}'!r})"


_COMPILED = _Compiled()


class Codec:
    """Encodes and decodes one game's dataclasses with the messages of one generated module."""

    def __init__(self, module: types.ModuleType, prefix: str, card_list: type[Message]) -> None:
        self._module = module
        self._prefix = prefix
        self._card_list = card_list
        self._classes: dict[type, type[Message]] = {}
        self._encoders: dict[type, Callable[[Any], Message]] = {}
        self._writers: dict[type, Callable[[Any], bytes] | None] = {}

    def message_class(self, cls: type) -> type[Message]:
        found = self._classes.get(cls)
        if found is None:
            found = getattr(self._module, self._prefix + cls.__name__, None)
            if found is None:
                raise CodecError(f"the contract has no message {self._prefix}{cls.__name__}")
            self._classes[cls] = found
        return typing.cast(type[Message], found)

    def encode(self, obj: Any) -> Message:
        encoder = self._encoders.get(type(obj))
        if encoder is None:
            cls = type(obj)
            encoder = self._encoders[cls] = _COMPILED.get(_COMPILED.function("E", cls, self.message_class(cls)))
        return encoder(obj)

    def wire(self, obj: Any) -> bytes:
        """``encode(obj).SerializeToString()``, the same bytes, written directly when the shape of ``obj``'s class
        allows (`_Compiled._write_B`; a view is, every field of it): no message is built. A value the writer does not
        take (a negative number, a card id out of range...) is encoded as `encode` does, which takes it or refuses it
        with its `CodecError`."""
        cls = type(obj)
        try:
            writer = self._writers[cls]
        except KeyError:
            try:
                writer = _COMPILED.get(_COMPILED.function("B", cls, self.message_class(cls)))
            except _Unwritable:
                writer = None
            self._writers[cls] = writer
        if writer is not None:
            try:
                return writer(obj)
            except Exception:  # left to protobuf, as a remembered item is (`_item_encoder`)
                pass
        return self.encode(obj).SerializeToString()

    def decode(self, message: Message, cls: type) -> Any:
        """The dataclass ``cls`` a message carries. An enum field left unspecified (0) takes the field's
        default when it has one (e.g. options: unset means the rules' default), and is refused otherwise."""
        return _decoder(cls, type(message))(message)


_DECODERS: dict[tuple[type, type], Callable[[Message], Any]] = {}


def _decoder(cls: type, message_class: type) -> Callable[[Message], Any]:
    """The compiled top-level decoder of ``cls`` from a ``message_class``."""
    key = (cls, message_class)
    found = _DECODERS.get(key)
    if found is None:
        found = _DECODERS[key] = _COMPILED.get(_COMPILED.function("C", cls, message_class))
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
        self._encoders: dict[type, Callable[[Any], Message]] = {}
        self._decoders: dict[str, tuple[type, Callable[[Message], Any]]] = {}

    def encode(self, obj: Any) -> Message:
        encoder = self._encoders.get(type(obj))
        if encoder is None:
            encoder = self._encoders[type(obj)] = self._encoder(type(obj))
        return encoder(obj)

    def _encoder(self, cls: type) -> Callable[[Any], Message]:
        """The wrapper with ``cls``'s message in its member: built in one call, the member's fields as a dict."""
        message_class = self._codec.message_class(cls)
        member = snake(cls.__name__)
        field = self._wrapper.DESCRIPTOR.fields_by_name.get(member)
        if field is None or field.message_type is None or _nested(self._wrapper, member) is not message_class:
            # not the contract's shape: copy the class's message into the member, as the reflective codec did
            def copied(obj: Any) -> Message:
                wrapper = self._wrapper()
                getattr(wrapper, member).CopyFrom(self._codec.encode(obj))
                return wrapper

            return copied
        return typing.cast(
            Callable[[Any], Message], _COMPILED.get(_COMPILED.function("W", cls, (self._wrapper, member)))
        )

    def decode(self, wrapper: Message) -> Any:
        which = wrapper.WhichOneof(self._oneof)
        if which is None:
            raise CodecError(f"{self._wrapper.__name__} carries no {self._oneof}")
        message = getattr(wrapper, which)
        found = self._decoders.get(which)
        if found is None or found[0] is not type(message):
            found = self._decoders[which] = (type(message), _decoder(self._classes[which], type(message)))
        return found[1](message)
