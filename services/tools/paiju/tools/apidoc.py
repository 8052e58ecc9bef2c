"""Render the API reference of the gRPC contract, ``docs/api.md``, from the protos and their comments.

    python -m paiju.tools.apidoc docs/api.md           # (re)write the page
    python -m paiju.tools.apidoc --check docs/api.md   # exit 1 when the page is not what the protos make

The protos' comments are the documentation: clients in other languages read ``protos/`` and this page only. The
command compiles ``protos/paiju/v1/*.proto`` with ``grpc_tools.protoc`` into a descriptor set with source info
(the comments) and its imports (``buf/validate/validate.proto`` and ``google/rpc/*.proto`` must be in ``protos/``:
``make protos`` puts them there), and renders Markdown: the services and their RPCs, the error model
(``ErrorReason``, with the gRPC status code each reason's comment starts with), the project's named validation
rules (``validation.proto``), and every message and enum of package ``paiju.v1``, grouped by file, with each
field's protovalidate constraints written compactly (``1..100 chars, id``, ``0 ≤ x ≤ 5``, ``defined enum, not 0``,
``≤ 108 items; each item: …``, ``required oneof``).

Custom options are unknown fields to the ``descriptor_pb2`` classes; they are read back through message classes of
a descriptor pool built from the same descriptor set, so ``(buf.validate.field)`` and the predefined rules
``(paiju.v1.id)`` etc. resolve as extensions. The output depends only on the protos: the same input gives the same
bytes.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from paiju.rules.registry import GAMES

__all__ = [
    "PACKAGE",
    "Contract",
    "build_descriptor_set",
    "generate",
    "main",
    "render",
]

PACKAGE = "paiju.v1"
_PREFIX = PACKAGE + "."
_FDP = descriptor_pb2.FieldDescriptorProto

# The reading order of the files of package paiju.v1 (by base name); a file not named here follows, by name. Each
# game's messages are in the file named after the game, in the registry's order. errors.proto and validation.proto
# are rendered as the "Errors" and "Validation rules" sections, after the services.
_FILE_ORDER = ("engine", "lobby", "scoring", "cards", *GAMES, "lobby_events", "tournament_events")
_ERRORS_FILE = "errors"
_VALIDATION_FILE = "validation"
_ERROR_ENUM = "ErrorReason"

_SCALARS = {
    _FDP.TYPE_DOUBLE: "double",
    _FDP.TYPE_FLOAT: "float",
    _FDP.TYPE_INT64: "int64",
    _FDP.TYPE_UINT64: "uint64",
    _FDP.TYPE_INT32: "int32",
    _FDP.TYPE_FIXED64: "fixed64",
    _FDP.TYPE_FIXED32: "fixed32",
    _FDP.TYPE_BOOL: "bool",
    _FDP.TYPE_STRING: "string",
    _FDP.TYPE_BYTES: "bytes",
    _FDP.TYPE_UINT32: "uint32",
    _FDP.TYPE_SFIXED32: "sfixed32",
    _FDP.TYPE_SFIXED64: "sfixed64",
    _FDP.TYPE_SINT32: "sint32",
    _FDP.TYPE_SINT64: "sint64",
}
_WELL_KNOWN = "https://protobuf.dev/reference/protobuf/google.protobuf/#"

# Paths into descriptor.proto's messages, for SourceCodeInfo locations (the field numbers of descriptor.proto).
_FILE_PACKAGE, _FILE_MESSAGE, _FILE_ENUM, _FILE_SERVICE, _FILE_EXTENSION, _FILE_SYNTAX = 2, 4, 5, 6, 7, 12
_MESSAGE_FIELD, _MESSAGE_NESTED, _MESSAGE_ENUM, _MESSAGE_ONEOF = 2, 3, 4, 8
_ENUM_VALUE = 2
_SERVICE_METHOD = 2

_CODE_RE = re.compile(r"^([A-Z][A-Z_]*[A-Z]):\s*(.*)\Z", re.DOTALL)
_LIST_ITEM_RE = re.compile(r"^\s{0,3}[-*+] ")
_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_TAG_START_RE = re.compile(r"<(?=[A-Za-z/!?])")
_SINGULAR = {"chars": "char", "bytes": "byte", "items": "item", "entries": "entry"}

# protovalidate's notation, explained once on the page (the section "Validation rules").
_LEGEND = (
    ("`1..100 chars`, `≤ 64 chars`", "the length of a string in characters (Unicode code points), bounds included"),
    ("`0 ≤ x ≤ 5`, `≥ 0`", "the range of a number, bounds included (`<`, `>`: excluded)"),
    ("`defined enum`", "one of the values the enum declares"),
    ("`not 0`", "never the value 0 (an enum's `…_UNSPECIFIED`)"),
    ("`one of " + ", ".join(f'"{name}"' for name in GAMES) + "`", "exactly one of the values listed"),
    ("`≤ 108 items`, `1..6 items`", "the number of entries of a repeated field"),
    ("`each item: …`", "what every entry of a repeated field must satisfy"),
    ("`required`", "the field must be set"),
    ("`required oneof`", "exactly one field of the oneof must be set"),
)


# --------------------------------------------------------------------------------------------------------------
# Building the descriptor set
# --------------------------------------------------------------------------------------------------------------


def build_descriptor_set(protos: Path, includes: Sequence[Path] = ()) -> bytes:
    """Compile ``protos/paiju/v1/*.proto`` (with their imports and comments) into a serialised
    ``FileDescriptorSet``; ``includes`` are further import roots, searched after ``protos``.

    Raises :class:`RuntimeError` with protoc's message when the protos do not compile (e.g. the third-party imports
    are missing: ``make protos``).
    """
    sources = sorted((protos / PACKAGE.replace(".", "/")).glob("*.proto"))
    if not sources:
        raise RuntimeError(f"no .proto files in {protos / PACKAGE.replace('.', '/')}")
    with tempfile.TemporaryDirectory(prefix="apidoc-") as tmp:
        out = Path(tmp) / "contract.binpb"
        command = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{protos}",
            *(f"-I{include}" for include in includes),
            "--include_imports",
            "--include_source_info",
            f"--descriptor_set_out={out}",
            *(str(source) for source in sources),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            hint = ""
            if not (protos / "buf" / "validate" / "validate.proto").is_file():
                hint = "\n(the third-party imports are missing: run `make protos`)"
            raise RuntimeError(f"protoc failed:\n{done.stderr.strip()}{hint}")
        return out.read_bytes()


# --------------------------------------------------------------------------------------------------------------
# The contract, as read from the descriptor set
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Comments:
    """The comments of one file, by SourceCodeInfo path."""

    locations: dict[tuple[int, ...], descriptor_pb2.SourceCodeInfo.Location]

    @classmethod
    def of(cls, file: descriptor_pb2.FileDescriptorProto) -> _Comments:
        return cls({tuple(loc.path): loc for loc in file.source_code_info.location})

    def leading(self, path: tuple[int, ...]) -> str:
        """The comment of an element: its leading comment, else its trailing one (dedented)."""
        loc = self.locations.get(path)
        if loc is None:
            return ""
        return _clean(loc.leading_comments or loc.trailing_comments)

    def detached(self, path: tuple[int, ...]) -> list[str]:
        """The comments separated by a blank line from an element, before it."""
        loc = self.locations.get(path)
        return [] if loc is None else [_clean(text) for text in loc.leading_detached_comments]

    def line(self, path: tuple[int, ...], default: int) -> int:
        """The line an element starts on (its declaration order)."""
        loc = self.locations.get(path)
        return loc.span[0] if loc is not None and loc.span else default


def _clean(comment: str) -> str:
    lines = [line.rstrip() for line in comment.splitlines()]
    return textwrap.dedent("\n".join(lines)).strip("\n")


@dataclass(frozen=True)
class _Type:
    """A message or enum of the package, with where it is declared."""

    full_name: str
    file: descriptor_pb2.FileDescriptorProto
    path: tuple[int, ...]
    message: descriptor_pb2.DescriptorProto | None = None
    enum: descriptor_pb2.EnumDescriptorProto | None = None

    @property
    def name(self) -> str:
        """The name relative to the package (``Outer.Inner`` for a nested type)."""
        return self.full_name.removeprefix(_PREFIX)


@dataclass
class Contract:
    """The files of the descriptor set, their types, and the option extensions protovalidate declares."""

    files: list[descriptor_pb2.FileDescriptorProto]
    pool: descriptor_pool.DescriptorPool
    comments: dict[str, _Comments] = field(default_factory=dict)
    types: dict[str, _Type] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)
    """The package's predefined rules: extension full name -> its short name."""

    @classmethod
    def parse(cls, data: bytes) -> Contract:
        """Read a serialised ``FileDescriptorSet`` (with source info and imports)."""
        files = list(descriptor_pb2.FileDescriptorSet.FromString(data).file)
        pool = descriptor_pool.DescriptorPool()
        for file in files:
            pool.AddSerializedFile(file.SerializeToString())
        contract = cls(files, pool)
        for file in files:
            contract.comments[file.name] = _Comments.of(file)
            scope = f".{file.package}" if file.package else ""
            for i, msg in enumerate(file.message_type):
                contract._add_message(file, f"{scope}.{msg.name}".lstrip("."), msg, (_FILE_MESSAGE, i))
            for i, enum in enumerate(file.enum_type):
                name = f"{scope}.{enum.name}".lstrip(".")
                contract.types[name] = _Type(name, file, (_FILE_ENUM, i), enum=enum)
            if file.package == PACKAGE:
                for ext in file.extension:
                    if ext.extendee.startswith(".buf.validate.") and ext.extendee.endswith("Rules"):
                        contract.rules[f"{_PREFIX}{ext.name}"] = ext.name
        return contract

    def _add_message(
        self,
        file: descriptor_pb2.FileDescriptorProto,
        name: str,
        msg: descriptor_pb2.DescriptorProto,
        path: tuple[int, ...],
    ) -> None:
        self.types[name] = _Type(name, file, path, message=msg)
        for i, nested in enumerate(msg.nested_type):
            self._add_message(file, f"{name}.{nested.name}", nested, (*path, _MESSAGE_NESTED, i))
        for i, enum in enumerate(msg.enum_type):
            self.types[f"{name}.{enum.name}"] = _Type(f"{name}.{enum.name}", file, (*path, _MESSAGE_ENUM, i), enum=enum)

    def package_files(self) -> list[descriptor_pb2.FileDescriptorProto]:
        """The files of package paiju.v1 in reading order."""
        ours = [file for file in self.files if file.package == PACKAGE]

        def key(file: descriptor_pb2.FileDescriptorProto) -> tuple[int, str]:
            base = _base(file)
            return (_FILE_ORDER.index(base) if base in _FILE_ORDER else len(_FILE_ORDER), file.name)

        return sorted(ours, key=key)

    def file_types(self, file: descriptor_pb2.FileDescriptorProto) -> list[_Type]:
        """The messages and enums of a file (nested ones after their parent), in declaration order; map entries
        left out."""
        comments = self.comments[file.name]
        top = [t for t in self.types.values() if t.file is file and len(t.path) == 2]
        top.sort(key=lambda t: (comments.line(t.path, 1 << 30), t.path))
        ordered: list[_Type] = []
        for t in top:
            ordered.extend(self._with_nested(t))
        return ordered

    def _with_nested(self, t: _Type) -> Iterator[_Type]:
        if t.message is not None and t.message.options.map_entry:
            return
        yield t
        if t.message is not None:
            for nested in sorted(
                (n for n in self.types.values() if n.full_name.startswith(t.full_name + ".") and n.file is t.file),
                key=lambda n: n.path,
            ):
                if len(nested.path) == len(t.path) + 2:
                    yield from self._with_nested(nested)

    def options(self, options: Message) -> Any:
        """``options`` (a ``descriptor_pb2`` options message) re-read by this pool's class of its type, whose
        extensions (the custom options) resolve."""
        cls = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(options.DESCRIPTOR.full_name))
        return cls.FromString(options.SerializeToString())

    def extension(self, options: Message, name: str) -> Any | None:
        """The value of the custom option ``name`` (an extension's full name) in ``options``, or None."""
        if not options.ByteSize():
            return None
        try:
            ext = self.pool.FindExtensionByName(name)
        except KeyError:
            return None
        parsed = self.options(options)
        if not parsed.HasExtension(ext):
            return None
        return parsed.Extensions[ext]


def _base(file: descriptor_pb2.FileDescriptorProto) -> str:
    return file.name.rsplit("/", 1)[-1].removesuffix(".proto")


# --------------------------------------------------------------------------------------------------------------
# Markdown helpers
# --------------------------------------------------------------------------------------------------------------


def _escape_inline(text: str) -> str:
    """Escape what Markdown would take for HTML or emphasis, outside code spans."""
    out: list[str] = []
    last = 0
    for match in _CODE_SPAN_RE.finditer(text):
        out.append(_escape_plain(text[last : match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(_escape_plain(text[last:]))
    return "".join(out)


def _escape_plain(text: str) -> str:
    # `<` only where Markdown could read an HTML tag (`<token>`, `</b>`), so `x < 5` stays as written
    return _TAG_START_RE.sub("&lt;", text).replace("*", r"\*")


def _escape_line_start(line: str) -> str:
    """Keep a line of prose from starting a heading, a quote, an ordered list or a setext underline."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if re.match(r"#{1,6}(\s|$)|>", stripped):
        return f"{indent}\\{stripped}"
    if re.fullmatch(r"[-=]+", stripped):
        return f"{indent}\\{stripped}"
    numbered = re.match(r"(\d{1,9})([.)])(\s.*|$)", stripped)
    if numbered:
        return f"{indent}{numbered.group(1)}\\{numbered.group(2)}{numbered.group(3)}"
    return line


def _prose(text: str) -> list[str]:
    """A comment as Markdown blocks: paragraphs and lists as written, indented blocks as code."""
    lines = text.splitlines()
    blocks: list[list[str]] = []  # each: ["p"|"code", lines...]
    current: list[str] = []
    kind = ""
    in_list = False

    def flush() -> None:
        nonlocal current, kind
        if current:
            blocks.append([kind, *current])
        current, kind = [], ""

    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            in_list = False
            i += 1
            continue
        indent = len(line) - len(line.lstrip())
        if _LIST_ITEM_RE.match(line):
            if not in_list:
                flush()
                kind = "p"
            in_list = True
            current.append(line)
        elif indent >= 2 and not in_list:
            flush()
            code: list[str] = []
            while i < len(lines) and (lines[i].startswith("  ") or (not lines[i].strip() and _more_code(lines, i))):
                code.append(lines[i])
                i += 1
            blocks.append(["code", *textwrap.dedent("\n".join(code)).splitlines()])
            continue
        elif indent == 0 and in_list:
            flush()  # a line of prose after a list starts a paragraph, not a lazy continuation of the last item
            in_list = False
            kind = "p"
            current.append(line)
        else:
            kind = kind or "p"
            current.append(line)
        i += 1
    flush()

    out: list[str] = []
    for block in blocks:
        if out:
            out.append("")
        if block[0] == "code":
            out.extend(["```text", *block[1:], "```"])
        else:
            out.extend(_escape_line_start(line) for line in _escape_inline("\n".join(block[1:])).splitlines())
    return out


def _more_code(lines: Sequence[str], i: int) -> bool:
    rest = [line for line in lines[i:] if line.strip()]
    return bool(rest) and rest[0].startswith("  ")


def _cell(text: str) -> str:
    """A comment (or rendered text) as one table cell: lines joined, paragraphs and list items on new lines."""
    paragraphs: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        words: list[str] = []
        for line in paragraph.splitlines():
            if _LIST_ITEM_RE.match(line) and words:
                words.append("<br>")
            words.append(line.strip())
        paragraphs.append(" ".join(words).replace(" <br> ", "<br>"))
    joined = "<br><br>".join(p for p in paragraphs if p)
    return _escape_inline(joined).replace("|", r"\|")


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def _cell_raw(text: str) -> str:
    """Markdown written by this module as a table cell (only ``|`` escaped)."""
    return text.replace("|", r"\|")


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    return [_row(header), _row("---" for _ in header), *(_row(row) for row in rows)]


def _anchor(anchor: str) -> str:
    return f'<a id="{anchor}"></a>'


def _heading(level: int, anchor: str, text: str) -> str:
    return f"{'#' * level} {_anchor(anchor)}{text}"


def _code(text: str) -> str:
    ticks = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _quote(value: str) -> str:
    out = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{out}"'


# --------------------------------------------------------------------------------------------------------------
# Constraints
# --------------------------------------------------------------------------------------------------------------


def _number(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Message):
        return _message_value(value)
    return str(value)


def _message_value(value: Message) -> str:
    name = value.DESCRIPTOR.full_name
    if name == "google.protobuf.Duration":
        seconds, nanos = getattr(value, "seconds", 0), getattr(value, "nanos", 0)
        total = seconds + nanos / 1e9
        return f"{total:g}s"
    return "{" + text_format.MessageToString(value, as_one_line=True) + "}"


def _range(low: tuple[str, Any] | None, high: tuple[str, Any] | None, unit: str = "") -> str:
    """A range of a value, e.g. ``0 ≤ x ≤ 5``, ``≥ 1``, ``< 10``."""
    symbol = {"gte": "≤", "gt": "<", "lte": "≤", "lt": "<"}
    suffix = f" {unit}" if unit else ""
    if low is not None and high is not None:
        lo, hi = _number(low[1]), _number(high[1])
        if _comparable(low[1], high[1]) and low[1] > high[1]:
            # protovalidate: a lower bound above the upper bound means outside the range
            below = "≤" if high[0] == "lte" else "<"
            above = "≥" if low[0] == "gte" else ">"
            return f"x {below} {hi} or x {above} {lo}{suffix}"
        return f"{lo} {symbol[low[0]]} x {symbol[high[0]]} {hi}{suffix}"
    if low is not None:
        return f"{'≥' if low[0] == 'gte' else '>'} {_number(low[1])}{suffix}"
    if high is not None:
        return f"{'≤' if high[0] == 'lte' else '<'} {_number(high[1])}{suffix}"
    return ""


def _comparable(a: Any, b: Any) -> bool:
    return isinstance(a, int | float) and isinstance(b, int | float)


def _size(low: Any, high: Any, exact: Any, unit: str) -> str:
    """A count of things (characters, bytes, items), e.g. ``1..100 chars``, ``≤ 64 chars``."""

    def count(n: Any) -> str:
        return f"{n} {_SINGULAR.get(unit, unit) if n == 1 else unit}"

    if exact is not None:
        return f"exactly {count(exact)}"
    if low is not None and high is not None:
        return f"exactly {count(low)}" if low == high else f"{low}..{high} {unit}"
    if high is not None:
        return f"≤ {count(high)}"
    if low is not None:
        return f"≥ {count(low)}"
    return ""


def _listed(values: Sequence[Any], fmt: Callable[[Any], str], negate: bool) -> str:
    shown = ", ".join(fmt(v) for v in values)
    if negate:
        return f"not {shown}" if len(values) == 1 else f"none of {shown}"
    return f"= {shown}" if len(values) == 1 else f"one of {shown}"


@dataclass
class _Parts:
    """Constraints of one field as short phrases; ``tail`` (rules of items, keys, values) comes last."""

    parts: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)

    def text(self) -> str:
        head = ", ".join(p for p in self.parts if p)
        tail = "; ".join(t for t in self.tail if t)
        return "; ".join(x for x in (head, tail) if x)


class _Constraints:
    """Writes protovalidate rules (``buf.validate.FieldRules`` and friends, as dynamic messages) compactly."""

    def __init__(self, contract: Contract) -> None:
        self.contract = contract

    def field_rules(self, rules: Any) -> str:
        """``(buf.validate.field)`` of one field."""
        return self._field_rules(rules).text()

    def _field_rules(self, rules: Any) -> _Parts:
        out = _Parts()
        typed: list[tuple[FieldDescriptor, Any]] = []
        rest: list[tuple[FieldDescriptor, Any]] = []
        for fd, value in rules.ListFields():
            if fd.containing_oneof is not None and fd.containing_oneof.name == "type":
                typed.append((fd, value))
            else:
                rest.append((fd, value))
        names = {fd.name: value for fd, value in rest}
        if names.get("required"):
            out.parts.append("required")
        for fd, value in typed:
            sub = self._typed(fd.name, value)
            out.parts.extend(sub.parts)
            out.tail.extend(sub.tail)
        for fd, value in rest:
            if fd.name == "required":
                continue
            if fd.name == "ignore":
                out.parts.append(self._ignore(fd, value))
            elif fd.name == "cel":
                out.parts.extend(self._cel(rule) for rule in value)
            elif fd.name == "cel_expression":
                out.parts.extend(f"CEL {_code(expr)}" for expr in value)
            else:
                out.parts.append(self._fallback(fd, value))
        return out

    @staticmethod
    def _ignore(fd: FieldDescriptor, value: int) -> str:
        enum = fd.enum_type
        name = enum.values_by_number[value].name if enum is not None and value in enum.values_by_number else str(value)
        if name in ("IGNORE_IF_ZERO_VALUE", "IGNORE_IF_UNPOPULATED", "IGNORE_IF_DEFAULT_VALUE"):
            return "checked only when set"
        if name == "IGNORE_ALWAYS":
            return "not checked"
        return f"ignore {name}"

    @staticmethod
    def _cel(rule: Any) -> str:
        rule_id, message, expression = (getattr(rule, n, "") for n in ("id", "message", "expression"))
        if message:
            return f"{_code(rule_id)}: {message}" if rule_id else message
        return f"CEL {_code(expression)}" if expression else _code(rule_id)

    def _fallback(self, fd: FieldDescriptor, value: Any) -> str:
        if fd.is_extension:
            return self._extension(fd, value)
        if fd.is_repeated:
            shown = ", ".join(_number(v) if not isinstance(v, str) else _quote(v) for v in value)
            return f"{fd.name}: [{shown}]"
        if isinstance(value, str):
            return f"{fd.name}: {_quote(value)}"
        return f"{fd.name}: {_number(value)}"

    def _extension(self, fd: FieldDescriptor, value: Any) -> str:
        short = self.contract.rules.get(fd.full_name)
        if short is not None:
            if value is True:
                return f"[{short}](#{fd.full_name})"
            if value is False:
                return ""
            return f"[{short}](#{fd.full_name}) = {_number(value)}"
        return f"({fd.full_name}) = {_number(value) if not isinstance(value, str) else _quote(value)}"

    def _typed(self, kind: str, rules: Any) -> _Parts:
        fields = {fd.name: value for fd, value in rules.ListFields() if not fd.is_extension}
        if "well_known_regex" in fields:  # KnownRegex: HTTP header names and values
            regex = rules.DESCRIPTOR.fields_by_name["well_known_regex"].enum_type.values_by_number.get(
                fields["well_known_regex"]
            )
            name = regex.name if regex is not None else str(fields["well_known_regex"])
            fields["well_known_regex"] = (
                name.removeprefix("KNOWN_REGEX_").replace("_", " ").lower().replace("http", "HTTP")
            )
        extensions = [(fd, value) for fd, value in rules.ListFields() if fd.is_extension]
        out = _Parts()
        if kind in ("string", "bytes"):
            out.parts.extend(self._text_rules(kind, fields))
        elif kind == "enum":
            if "const" in fields:
                out.parts.append(f"= {fields['const']}")
            if fields.get("defined_only"):
                out.parts.append("defined enum")
            if fields.get("in"):
                out.parts.append(_listed(fields["in"], str, negate=False))
            if fields.get("not_in"):
                out.parts.append(_listed(fields["not_in"], str, negate=True))
        elif kind == "bool":
            if "const" in fields:
                out.parts.append(f"= {_number(fields['const'])}")
        elif kind == "repeated":
            out.parts.append(_size(fields.get("min_items"), fields.get("max_items"), None, "items"))
            if fields.get("unique"):
                out.parts.append("unique items")
            if "items" in fields:
                out.tail.append(f"each item: {self.field_rules(fields['items'])}")
        elif kind == "map":
            out.parts.append(_size(fields.get("min_pairs"), fields.get("max_pairs"), None, "entries"))
            if "keys" in fields:
                out.tail.append(f"each key: {self.field_rules(fields['keys'])}")
            if "values" in fields:
                out.tail.append(f"each value: {self.field_rules(fields['values'])}")
        elif kind == "any":
            if fields.get("in"):
                out.parts.append(_listed(fields["in"], _quote, negate=False))
            if fields.get("not_in"):
                out.parts.append(_listed(fields["not_in"], _quote, negate=True))
        else:  # the numbers, durations, timestamps and field masks
            out.parts.extend(self._number_rules(fields))
        handled = {
            "const", "len", "min_len", "max_len", "len_bytes", "min_bytes", "max_bytes", "pattern", "prefix",
            "suffix", "contains", "not_contains", "in", "not_in", "defined_only", "min_items", "max_items", "unique",
            "items", "min_pairs", "max_pairs", "keys", "values", "lt", "lte", "gt", "gte", "finite", "lt_now",
            "gt_now", "within", "example", "well_known_regex", "strict",
        }  # fmt: skip
        well_known = {
            fd.name
            for fd, _ in rules.ListFields()
            if fd.containing_oneof is not None and fd.containing_oneof.name == "well_known"
        }
        for fd, value in rules.ListFields():
            if fd.is_extension or fd.name in handled or fd.name in well_known:
                continue
            out.parts.append(self._fallback(fd, value))
        out.parts.extend(self._extension(fd, value) for fd, value in extensions)
        return out

    @staticmethod
    def _text_rules(kind: str, fields: dict[str, Any]) -> list[str]:
        unit = "chars" if kind == "string" else "bytes"
        fmt: Callable[[Any], str] = _quote if kind == "string" else lambda b: _code(repr(b))
        parts = [
            _size(fields.get("min_len"), fields.get("max_len"), fields.get("len"), unit),
            _size(fields.get("min_bytes"), fields.get("max_bytes"), fields.get("len_bytes"), "bytes"),
        ]
        if "const" in fields:
            parts.append(f"= {fmt(fields['const'])}")
        if fields.get("in"):
            parts.append(_listed(fields["in"], fmt, negate=False))
        if fields.get("not_in"):
            parts.append(_listed(fields["not_in"], fmt, negate=True))
        if "pattern" in fields:
            pattern = fields["pattern"]
            parts.append(f"matches {_code(pattern if isinstance(pattern, str) else repr(pattern))}")
        for name, phrase in (
            ("prefix", "starts with"),
            ("suffix", "ends with"),
            ("contains", "contains"),
            ("not_contains", "does not contain"),
        ):
            if name in fields:
                parts.append(f"{phrase} {fmt(fields[name])}")
        for name, value in fields.items():
            if name == "well_known_regex":
                parts.append(f"matches the {value} grammar")
            elif name in _WELL_KNOWN_STRINGS and value is True:
                parts.append(_WELL_KNOWN_STRINGS[name])
        return parts

    @staticmethod
    def _number_rules(fields: dict[str, Any]) -> list[str]:
        low = next(((n, fields[n]) for n in ("gt", "gte") if n in fields), None)
        high = next(((n, fields[n]) for n in ("lt", "lte") if n in fields), None)
        parts = []
        if "const" in fields:
            parts.append(f"= {_number(fields['const'])}")
        parts.append(_range(low, high))
        if fields.get("lt_now"):
            parts.append("before now")
        if fields.get("gt_now"):
            parts.append("after now")
        if "within" in fields:
            parts.append(f"within {_number(fields['within'])} of now")
        if fields.get("in"):
            parts.append(_listed(fields["in"], _number, negate=False))
        if fields.get("not_in"):
            parts.append(_listed(fields["not_in"], _number, negate=True))
        if fields.get("finite"):
            parts.append("finite")
        return parts

    def oneof_rules(self, rules: Any) -> str:
        """``(buf.validate.oneof)`` of one oneof."""
        parts = []
        for fd, value in rules.ListFields():
            if fd.name == "required":
                if value:
                    parts.append("required oneof")
            else:
                parts.append(self._fallback(fd, value))
        return ", ".join(p for p in parts if p)

    def message_rules(self, rules: Any) -> list[str]:
        """``(buf.validate.message)`` of one message, one phrase per rule."""
        parts: list[str] = []
        for fd, value in rules.ListFields():
            if fd.name == "cel":
                parts.extend(self._cel(rule) for rule in value)
            elif fd.name == "cel_expression":
                parts.extend(f"CEL {_code(expr)}" for expr in value)
            elif fd.name == "oneof":
                for rule in value:
                    names = ", ".join(_code(name) for name in rule.fields)
                    required = getattr(rule, "required", False)
                    parts.append(f"{'exactly' if required else 'at most'} one of {names}")
            elif fd.name != "disabled":
                parts.append(self._fallback(fd, value))
        return [p for p in parts if p]


_WELL_KNOWN_STRINGS = {
    "email": "email",
    "hostname": "hostname",
    "ip": "IP address",
    "ipv4": "IPv4 address",
    "ipv6": "IPv6 address",
    "uri": "URI",
    "uri_ref": "URI reference",
    "address": "hostname or IP address",
    "uuid": "UUID",
    "tuuid": "UUID without dashes",
    "ip_with_prefixlen": "IP with prefix length",
    "ipv4_with_prefixlen": "IPv4 with prefix length",
    "ipv6_with_prefixlen": "IPv6 with prefix length",
    "ip_prefix": "IP prefix",
    "ipv4_prefix": "IPv4 prefix",
    "ipv6_prefix": "IPv6 prefix",
    "host_and_port": "host and port",
    "ulid": "ULID",
    "protobuf_fqn": "protobuf name",
    "protobuf_dot_fqn": "protobuf name with a leading dot",
}


# --------------------------------------------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------------------------------------------


class _Page:
    def __init__(self, contract: Contract) -> None:
        self.contract = contract
        self.constraints = _Constraints(contract)
        self.files = contract.package_files()
        self.lines: list[str] = []
        self.anchors: set[str] = set()

    # -- output

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    def gap(self) -> None:
        if self.lines and self.lines[-1] != "":
            self.lines.append("")

    def heading(self, level: int, anchor: str, text: str) -> None:
        if anchor in self.anchors:
            raise ValueError(f"two sections with the anchor {anchor!r}")
        self.anchors.add(anchor)
        self.gap()
        self.emit(_heading(level, anchor, text), "")

    def prose(self, text: str) -> None:
        if text:
            self.gap()
            self.emit(*_prose(text), "")

    # -- references

    def type_link(self, type_name: str) -> str:
        name = type_name.lstrip(".")
        if name.startswith(_PREFIX) and name in self.contract.types:
            return f"[{_code(name.removeprefix(_PREFIX))}](#{name})"
        if name.startswith("google.protobuf.") and name.count(".") == 2:
            return f"[{_code(name)}]({_WELL_KNOWN}{name.rsplit('.', 1)[1].lower()})"
        return _code(name)

    def field_type(self, fld: descriptor_pb2.FieldDescriptorProto) -> str:
        if fld.type in (_FDP.TYPE_MESSAGE, _FDP.TYPE_GROUP, _FDP.TYPE_ENUM):
            entry = self.contract.types.get(fld.type_name.lstrip("."))
            if entry is not None and entry.message is not None and entry.message.options.map_entry:
                key, value = sorted(entry.message.field, key=lambda f: f.number)[:2]
                return f"map<{self.field_type(key)}, {self.field_type(value)}>"
            return self.type_link(fld.type_name)
        return _code(_SCALARS.get(fld.type, str(fld.type)))

    def services(self) -> list[tuple[descriptor_pb2.FileDescriptorProto, int, descriptor_pb2.ServiceDescriptorProto]]:
        return [(file, i, service) for file in self.files for i, service in enumerate(file.service)]

    def file_anchor(self, file: descriptor_pb2.FileDescriptorProto) -> str:
        return file.name

    def special(self, base: str) -> descriptor_pb2.FileDescriptorProto | None:
        return next((file for file in self.files if _base(file) == base), None)

    def file_comment(self, file: descriptor_pb2.FileDescriptorProto) -> str:
        comments = self.contract.comments[file.name]
        parts = [*comments.detached((_FILE_SYNTAX,)), comments.leading((_FILE_SYNTAX,))]
        parts += [*comments.detached((_FILE_PACKAGE,)), comments.leading((_FILE_PACKAGE,))]
        return "\n\n".join(p for p in parts if p)

    # -- the page

    def render(self) -> str:
        errors, validation = self.special(_ERRORS_FILE), self.special(_VALIDATION_FILE)
        type_files = [f for f in self.files if f not in (errors, validation)]
        self.header(type_files)
        self.contents(errors, validation, type_files)
        self.service_section()
        if errors is not None:
            self.errors_section(errors)
        if validation is not None:
            self.validation_section(validation)
        for file in type_files:
            self.file_section(file)
        text = "\n".join(self.lines).strip("\n") + "\n"
        text = re.sub(r"\n{3,}", "\n\n", text)
        return "\n".join(line.rstrip() for line in text.split("\n"))

    def header(self, type_files: Sequence[descriptor_pb2.FileDescriptorProto]) -> None:
        n_rpcs = sum(len(service.method) for _, _, service in self.services())
        n_messages = sum(1 for t in self.contract.types.values() if t.full_name.startswith(_PREFIX) and t.message)
        n_enums = sum(1 for t in self.contract.types.values() if t.full_name.startswith(_PREFIX) and t.enum)
        self.emit(
            "<!-- Code generated by `python -m paiju.tools.apidoc` from protos/paiju/v1/*.proto. DO NOT EDIT: change"
            " the protos and run `make docs`. -->",
            "",
            f"# Paiju gRPC API reference ({_code(PACKAGE)})",
            "",
            "> Generated from the protos and their comments (`protos/paiju/v1/*.proto`) by `paiju.tools.apidoc`: do"
            " not edit this page, change the protos and run `make docs`.",
            "",
            f"The contract of Paiju: {len(self.services())} services, {n_rpcs} RPCs, {n_messages} messages and"
            f" {n_enums} enums of package {_code(PACKAGE)}. Every refusal is a gRPC status with a reason from the"
            " [error model](#errors); every request is checked against the constraints its fields declare (column"
            " *Constraints*, notation in [Validation rules](#validation-rules)) before anything else.",
            "",
        )

    def contents(
        self,
        errors: descriptor_pb2.FileDescriptorProto | None,
        validation: descriptor_pb2.FileDescriptorProto | None,
        type_files: Sequence[descriptor_pb2.FileDescriptorProto],
    ) -> None:
        self.emit("## Contents", "", "- [Services](#services)")
        for _, _, service in self.services():
            full = f"{_PREFIX}{service.name}"
            methods = " · ".join(f"[{m.name}](#{full}.{m.name})" for m in service.method)
            self.emit(f"  - [{service.name}](#{full}): {methods}")
        if errors is not None:
            self.emit("- [Errors](#errors): [ErrorReason](#paiju.v1.ErrorReason)")
        if validation is not None:
            rules = " · ".join(f"[{short}](#{full})" for full, short in self.contract.rules.items())
            self.emit(f"- [Validation rules](#validation-rules): {rules}" if rules else "- [Validation rules]")
        self.emit("- Messages and enums, by file:")
        for file in type_files:
            types = " · ".join(f"[{t.name}](#{t.full_name})" for t in self.contract.file_types(file))
            self.emit(f"  - [{_base(file)}.proto](#{self.file_anchor(file)}): {types}")
        self.emit("")

    # -- services

    def service_section(self) -> None:
        self.heading(2, "services", "Services")
        for file, index, service in self.services():
            comments = self.contract.comments[file.name]
            full = f"{_PREFIX}{service.name}"
            self.heading(3, full, service.name)
            self.emit(f"Defined in [{_base(file)}.proto](#{self.file_anchor(file)}).", "")
            self.prose(comments.leading((_FILE_SERVICE, index)))
            for m_index, method in enumerate(service.method):
                self.heading(4, f"{full}.{method.name}", f"{service.name}.{method.name}")
                request = ("stream " if method.client_streaming else "") + self.type_link(method.input_type)
                response = ("stream " if method.server_streaming else "") + self.type_link(method.output_type)
                deprecated = " *(deprecated)*" if method.options.deprecated else ""
                self.emit(f"{request} → {response}{deprecated}", "")
                self.prose(comments.leading((_FILE_SERVICE, index, _SERVICE_METHOD, m_index)))

    def source_line(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        """Where a section that is not titled by its file comes from (with the file's anchor)."""
        anchor = self.file_anchor(file)
        if anchor in self.anchors:
            raise ValueError(f"two sections with the anchor {anchor!r}")
        self.anchors.add(anchor)
        self.emit(f"{_anchor(anchor)}From {_code('protos/' + file.name)}.", "")

    # -- errors

    def errors_section(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self.heading(2, "errors", "Errors")
        self.source_line(file)
        self.prose(self.file_comment(file))
        for t in self.contract.file_types(file):
            self.type_section(t, level=3)

    def error_reasons(self, t: _Type) -> None:
        assert t.enum is not None
        comments = self.contract.comments[t.file.name]
        rows: list[list[str]] = []
        for i, value in enumerate(t.enum.value):
            path = (*t.path, _ENUM_VALUE, i)
            for detached in comments.detached(path):
                title = detached.strip().strip("-").strip()
                if title:
                    rows.append([f"**{_cell(title[:1].upper() + title[1:])}**", "", ""])
            comment = comments.leading(path)
            match = _CODE_RE.match(comment)
            code, text = (match.group(1), _capitalized(match.group(2))) if match else ("", comment)
            rows.append([_code(value.name), _code(code) if code else "—", _cell(text)])
        self.emit(*_table(["Reason", "Status code", "Meaning"], rows), "")

    # -- validation rules

    def validation_section(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self.heading(2, "validation-rules", "Validation rules")
        self.source_line(file)
        self.prose(self.file_comment(file))
        self.gap()
        self.emit(
            "The column *Constraints* of the message tables writes each field's `buf.validate` rules compactly:",
            "",
            *_table(["Notation", "Meaning"], [[a, _cell_raw(b)] for a, b in _LEGEND]),
            "",
            "The project's own rules, named in the column by their short name:",
            "",
        )
        comments = self.contract.comments[file.name]
        field_rules = self.contract.pool.FindMessageTypeByName("buf.validate.FieldRules")
        for index, ext in enumerate(file.extension):
            full = f"{_PREFIX}{ext.name}"
            if full not in self.contract.rules:
                continue
            self.heading(3, full, ext.name)
            kind = next(
                (
                    f.name
                    for f in field_rules.fields
                    if f.message_type and f".{f.message_type.full_name}" == ext.extendee
                ),
                None,
            )
            if kind is not None:
                self.emit(
                    f"Declared as {_code(f'[(buf.validate.field).{kind}.({full}) = true]')} on {kind} fields.", ""
                )
            self.prose(comments.leading((_FILE_EXTENSION, index)))
            predefined = self.contract.extension(ext.options, "buf.validate.predefined")
            if predefined is not None:
                for rule in getattr(predefined, "cel", ()):
                    self.gap()
                    label = f"Rule {_code(rule.id)}" if rule.id else "Rule"
                    self.emit(f"{label} (CEL):", "", "```text", rule.expression, "```", "")

    # -- files and types

    def file_section(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self.heading(2, self.file_anchor(file), f"{_base(file)}.proto")
        self.prose(self.file_comment(file))
        services = [s.name for f, _, s in self.services() if f is file]
        if services:
            links = ", ".join(f"[{name}](#{_PREFIX}{name})" for name in services)
            self.gap()
            self.emit(f"Services: {links}.", "")
        for t in self.contract.file_types(file):
            self.type_section(t, level=3)

    def type_section(self, t: _Type, level: int) -> None:
        comments = self.contract.comments[t.file.name]
        if t.enum is not None:
            deprecated = " *(deprecated)*" if t.enum.options.deprecated else ""
            self.heading(level, t.full_name, f"{t.name} (enum){deprecated}")
            self.prose(comments.leading(t.path))
            if t.enum.name == _ERROR_ENUM and _base(t.file) == _ERRORS_FILE:
                self.error_reasons(t)
            else:
                self.enum_table(t)
            return
        assert t.message is not None
        deprecated = " *(deprecated)*" if t.message.options.deprecated else ""
        self.heading(level, t.full_name, f"{t.name}{deprecated}")
        self.prose(comments.leading(t.path))
        self.message_body(t)

    def enum_table(self, t: _Type) -> None:
        assert t.enum is not None
        comments = self.contract.comments[t.file.name]
        rows = []
        for i, value in enumerate(t.enum.value):
            text = _cell(comments.leading((*t.path, _ENUM_VALUE, i)))
            if value.options.deprecated:
                text = f"*(deprecated)* {text}".strip()
            rows.append([_code(value.name), str(value.number), text])
        self.gap()
        self.emit(*_table(["Value", "Number", "Description"], rows), "")

    def message_body(self, t: _Type) -> None:
        msg = t.message
        assert msg is not None
        comments = self.contract.comments[t.file.name]
        message_rules = self.contract.extension(msg.options, "buf.validate.message")
        if message_rules is not None:
            phrases = self.constraints.message_rules(message_rules)
            if phrases:
                self.gap()
                self.emit("Constraints: " + "; ".join(phrases) + ".", "")
        if not msg.field:
            self.gap()
            self.emit("No fields.", "")
            return
        real_oneofs = {
            i
            for i, _ in enumerate(msg.oneof_decl)
            if any(f.HasField("oneof_index") and f.oneof_index == i and not f.proto3_optional for f in msg.field)
        }
        rows: list[list[str]] = []
        any_constraints = False
        for i, fld in enumerate(msg.field):
            label = ""
            if fld.label == _FDP.LABEL_REPEATED and not self.field_type(fld).startswith("map<"):
                label = "repeated"
            elif fld.HasField("oneof_index") and fld.oneof_index in real_oneofs:
                label = f"oneof {_code(msg.oneof_decl[fld.oneof_index].name)}"
            elif fld.proto3_optional or (fld.label == _FDP.LABEL_OPTIONAL and t.file.syntax in ("", "proto2")):
                label = "optional"
            elif fld.label == _FDP.LABEL_REQUIRED:
                label = "required"
            rules = self.contract.extension(fld.options, "buf.validate.field")
            constraints = _cell_raw(_escape_inline(self.constraints.field_rules(rules))) if rules is not None else ""
            any_constraints = any_constraints or bool(constraints)
            text = _cell(comments.leading((*t.path, _MESSAGE_FIELD, i)))
            if fld.options.deprecated:
                text = f"*(deprecated)* {text}".strip()
            rows.append([_code(fld.name), _cell_raw(self.field_type(fld)), label, text, constraints])
        header = ["Field", "Type", "Label", "Description", "Constraints"]
        if not any_constraints:
            header = header[:-1]
            rows = [row[:-1] for row in rows]
        self.gap()
        self.emit(*_table(header, rows), "")
        for index in sorted(real_oneofs):
            oneof = msg.oneof_decl[index]
            members = ", ".join(
                _code(f.name) for f in msg.field if f.HasField("oneof_index") and f.oneof_index == index
            )
            rules = self.contract.extension(oneof.options, "buf.validate.oneof")
            ruled = self.constraints.oneof_rules(rules) if rules is not None else ""
            note = f", {ruled} (exactly one is set)" if ruled == "required oneof" else f", {ruled}" if ruled else ""
            text = _cell(comments.leading((*t.path, _MESSAGE_ONEOF, index)))
            self.emit(f"- **oneof {_code(oneof.name)}**{note}: {members}" + (f" — {text}" if text else ""))
        if real_oneofs:
            self.emit("")


def render(data: bytes) -> str:
    """The Markdown page of a serialised ``FileDescriptorSet`` (compiled with source info and imports)."""
    return _Page(Contract.parse(data)).render()


def generate(protos: Path) -> str:
    """The Markdown page of the protos in ``protos`` (the ``-I`` root holding ``paiju/v1/``)."""
    return render(build_descriptor_set(protos))


def main(argv: Sequence[str] | None = None) -> int:
    """Write the page to OUT, or with ``--check`` say whether OUT is up to date (exit 1 when not)."""
    parser = argparse.ArgumentParser(
        prog="python -m paiju.tools.apidoc", description="Render the gRPC contract's API reference (Markdown)."
    )
    parser.add_argument("out", type=Path, metavar="OUT.md", help="the page (docs/api.md)")
    parser.add_argument("--protos", type=Path, default=Path("protos"), help="the proto root (default: protos)")
    parser.add_argument("--check", action="store_true", help="only check that OUT is what the protos make")
    args = parser.parse_args(argv)
    try:
        page = generate(args.protos)
    except RuntimeError as exc:
        print(f"apidoc: {exc}", file=sys.stderr)
        return 2
    out: Path = args.out
    if args.check:
        current = out.read_text(encoding="utf-8") if out.is_file() else ""
        if current == page:
            return 0
        print(f"{out} is not up to date with {args.protos}/: run `make docs` (and commit {out})", file=sys.stderr)
        diff = list(
            difflib.unified_diff(current.splitlines(), page.splitlines(), f"{out}", "generated", lineterm="", n=1)
        )
        for line in diff[:40]:
            print(line, file=sys.stderr)
        if len(diff) > 40:
            print(f"... ({len(diff) - 40} more diff lines)", file=sys.stderr)
        return 1
    data = page.encode("utf-8")
    if not (out.is_file() and out.read_bytes() == data):
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
