"""Print a compiled ``FileDescriptorProto`` back as ``.proto`` source, and the command that renders the
third-party contract files our protos import.

Our protos import ``buf/validate/validate.proto`` (protovalidate's annotations), but no registry we can reach ships
that file as source. The pinned ``protovalidate`` PyPI package does carry its complete descriptor (and its comments,
as the docstrings of the generated protobuf-py classes), so the build renders the file from there:

    python -m paiju.tools.protosource validate OUTDIR    # OUTDIR/buf/validate/validate.proto
    python -m paiju.tools.protosource googlerpc OUTDIR   # OUTDIR/google/rpc/{status,error_details,code}.proto

:func:`render` is general: it prints any proto2, proto3 or editions file so that ``protoc`` compiles the text back
to the same descriptor (bar ``source_code_info`` and the ``json_name`` protoc derives itself). Custom options are
kept as unknown fields in a raw descriptor; they are read back through message classes of a descriptor pool that
knows their extensions (:func:`pool_for`), and printed as option names with text-format values. Both commands write
a file only when its content changes, so make's timestamps keep their meaning.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.metadata
import inspect
import math
import re
import struct
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, unknown_fields
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor
from google.protobuf.message import Message

if TYPE_CHECKING:
    from protobuf import DescEnum, DescFile, DescMessage

__all__ = [
    "GOOGLE_RPC_FILES",
    "VALIDATE_PROTO",
    "default_json_name",
    "docstring_comments",
    "googlerpc_sources",
    "main",
    "pool_for",
    "render",
    "validate_descriptor",
    "validate_proto_source",
    "write_if_changed",
]

_FDP = descriptor_pb2.FieldDescriptorProto
VALIDATE_PROTO = "buf/validate/validate.proto"
_DESCRIPTOR_PROTO = "google/protobuf/descriptor.proto"
GOOGLE_RPC_FILES = ("google/rpc/status.proto", "google/rpc/error_details.proto", "google/rpc/code.proto")

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
_MAX_FIELD_END = 536_870_912  # exclusive end of `to max` in message reserved and extension ranges (2^29)
_MAX_ENUM_END = 2_147_483_647  # inclusive end of `to max` in enum reserved ranges
_AGGREGATES = frozenset({"package", "message", "enum", "service"})
_TYPES = frozenset({"message", "enum"})
_WIDTH = 120  # an options list that fits goes on the line of its element


# ---------------------------------------------------------------------------------------------------------------
# Descriptor pools


def pool_for(
    file: descriptor_pb2.FileDescriptorProto, dependencies: Iterable[descriptor_pb2.FileDescriptorProto] = ()
) -> descriptor_pool.DescriptorPool:
    """A new descriptor pool holding ``file`` and, transitively, every file it imports.

    An import is taken from ``dependencies`` when given there, otherwise from the default pool of the
    google.protobuf runtime; a file the default pool does not know yet is loaded by importing its generated module
    (``google/protobuf/duration.proto`` -> ``google.protobuf.duration_pb2``). Raises :class:`LookupError` when an
    import is found nowhere.
    """
    given = {dep.name: dep for dep in dependencies}
    given[file.name] = file
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str) -> None:
        if name in added:
            return
        proto = given.get(name) or _installed_file(name)
        for dep in proto.dependency:
            add(dep)
        pool.AddSerializedFile(proto.SerializeToString())
        added.add(name)

    add(file.name)
    return pool


def _installed_file(name: str) -> descriptor_pb2.FileDescriptorProto:
    default = descriptor_pool.Default()
    try:
        found = default.FindFileByName(name)
    except KeyError:
        module = name.removesuffix(".proto").replace("/", ".") + "_pb2"
        try:
            importlib.import_module(module)
            found = default.FindFileByName(name)
        except (ImportError, KeyError) as exc:
            raise LookupError(
                f"{name} is not in the default descriptor pool, nor defined by a module {module}"
            ) from exc
    return descriptor_pb2.FileDescriptorProto.FromString(found.serialized_pb)


def _options_pool(source: descriptor_pool.DescriptorPool, root: FileDescriptor) -> descriptor_pool.DescriptorPool:
    """A pool of ``root``, its imports and descriptor.proto (which defines the options) in which no message is a
    map entry, for reading options: a map field then reads as the repeated field of entries it is on the wire, in
    the order the source gave (a map's own iteration order is not), so the printed options serialize to the same
    bytes."""
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(file: FileDescriptor) -> None:
        if file.name in added:
            return
        for dep in file.dependencies:
            add(dep)
        proto = descriptor_pb2.FileDescriptorProto.FromString(file.serialized_pb)
        pending = list(proto.message_type)
        while pending:
            msg = pending.pop()
            msg.options.ClearField("map_entry")
            if not msg.options.ListFields():
                msg.ClearField("options")
            pending.extend(msg.nested_type)
        pool.AddSerializedFile(proto.SerializeToString())
        added.add(file.name)

    add(root)
    if _DESCRIPTOR_PROTO not in added:
        try:
            add(source.FindFileByName(_DESCRIPTOR_PROTO))
        except KeyError:
            add(descriptor_pb2.DESCRIPTOR)
    return pool


class _Symbols:
    """The names protoc could resolve in a file (its own and every transitive import's: a superset of what protoc
    sees, which is safe for choosing the shortest reference that still resolves to the same symbol)."""

    def __init__(self, pool: descriptor_pool.DescriptorPool, root: FileDescriptor) -> None:
        self.kinds: dict[str, str] = {}
        seen: set[str] = set()
        pending = [root]
        while pending:
            file = pending.pop()
            if file.name in seen:
                continue
            seen.add(file.name)
            pending.extend(file.dependencies)
            parts = file.package.split(".") if file.package else []
            for i in range(1, len(parts) + 1):
                self.kinds.setdefault(".".join(parts[:i]), "package")
            for msg in file.message_types_by_name.values():
                self._message(msg)
            for enum in file.enum_types_by_name.values():
                self._enum(enum)
            for ext in file.extensions_by_name.values():
                self.kinds[ext.full_name] = "extension"
            for service in file.services_by_name.values():
                self.kinds[service.full_name] = "service"
                for method in service.methods:
                    self.kinds[method.full_name] = "method"

    def _message(self, msg: Descriptor) -> None:
        self.kinds[msg.full_name] = "message"
        for field in msg.fields:
            self.kinds[field.full_name] = "field"
        for oneof in msg.oneofs:
            self.kinds[oneof.full_name] = "oneof"
        for ext in msg.extensions:
            self.kinds[ext.full_name] = "extension"
        for nested in msg.nested_types:
            self._message(nested)
        for enum in msg.enum_types:
            self._enum(enum)

    def _enum(self, enum: EnumDescriptor) -> None:
        self.kinds[enum.full_name] = "enum"
        scope = enum.full_name.rpartition(".")[0]
        for value in enum.values:
            self.kinds[f"{scope}.{value.name}" if scope else value.name] = "enum value"

    def resolve(self, name: str, relative_to: str, *, types_only: bool) -> str | None:
        """What protoc's lookup finds for ``name`` written in the scope of element ``relative_to``."""
        if name.startswith("."):
            return self._found(name[1:], types_only)
        first = name.partition(".")[0]
        scope = relative_to
        while "." in scope:
            scope = scope.rpartition(".")[0]
            kind = self.kinds.get(f"{scope}.{first}")
            if kind is None:
                continue
            if first != name:
                if kind in _AGGREGATES:
                    return self._found(f"{scope}.{name}", types_only)
            elif not types_only or kind in _TYPES:
                return f"{scope}.{first}"
        return self._found(name, types_only)

    def _found(self, name: str, types_only: bool) -> str | None:
        kind = self.kinds.get(name)
        return name if kind is not None and (not types_only or kind in _TYPES) else None

    def type_ref(self, full_name: str, relative_to: str) -> str:
        """The shortest name of the type ``full_name`` (with or without a leading dot) that resolves to it from
        ``relative_to``."""
        target = full_name.removeprefix(".")
        parts = target.split(".")
        for i in range(len(parts) - 1, -1, -1):
            candidate = ".".join(parts[i:])
            if self.resolve(candidate, relative_to, types_only=True) == target:
                return candidate
        return f".{target}"

    def extension_ref(self, full_name: str, scopes: Sequence[str]) -> str:
        """The fully qualified name of extension ``full_name`` when it resolves from every scope in ``scopes``,
        else the name with a leading dot (which always does)."""
        if all(self.resolve(full_name, scope, types_only=False) == full_name for scope in scopes):
            return full_name
        return f".{full_name}"


# ---------------------------------------------------------------------------------------------------------------
# Literals


def _quote(value: str | bytes) -> str:
    """A string literal that protoc's tokenizer (in .proto files and in text format alike) reads back exactly;
    text is kept as UTF-8, bytes outside printable ASCII become octal escapes."""
    utf8 = isinstance(value, str)
    raw = value.encode("utf-8") if isinstance(value, str) else value
    out = bytearray(b'"')
    for byte in raw:
        if byte == 0x5C:
            out += b"\\\\"
        elif byte == 0x22:
            out += b'\\"'
        elif byte == 0x0A:
            out += b"\\n"
        elif byte == 0x0D:
            out += b"\\r"
        elif byte == 0x09:
            out += b"\\t"
        elif 0x20 <= byte < 0x7F or (utf8 and byte >= 0x80):
            out.append(byte)
        else:
            out += f"\\{byte:03o}".encode()
    out += b'"'
    return out.decode("utf-8")


def _double(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _float32(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return _double(value)
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    for digits in range(1, 18):
        text = f"{value:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value:
            return text
    return repr(value)


def default_json_name(name: str) -> str:
    """The JSON name protoc gives a field that declares none (``max_len`` -> ``maxLen``)."""
    out: list[str] = []
    upper = False
    for ch in name:
        if ch == "_":
            upper = True
        elif upper:
            out.append(ch.upper())
            upper = False
        else:
            out.append(ch)
    return "".join(out)


def _ranges(ranges: Iterable[tuple[int, int]], max_end: int) -> str:
    """``2, 9 to 11, 40 to max`` from inclusive (start, end) pairs."""
    parts = []
    for start, end in ranges:
        if end == start:
            parts.append(str(start))
        else:
            parts.append(f"{start} to {'max' if end == max_end else end}")
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------------------------------
# The renderer


Lines = list[str]


class _Renderer:
    def __init__(
        self,
        file: descriptor_pb2.FileDescriptorProto,
        pool: descriptor_pool.DescriptorPool,
        comments: Mapping[str, str],
    ) -> None:
        self.file = file
        self.pool = pool
        self.comments = comments
        root = pool.FindFileByName(file.name)
        self.symbols = _Symbols(pool, root)
        self.options_pool = _options_pool(pool, root)
        self.editions = file.syntax == "editions"
        self.proto3 = file.syntax == "proto3"
        self.out: Lines = []

    # -- output helpers

    def emit(self, depth: int, text: str = "") -> None:
        self.out.append(f"{'  ' * depth}{text}" if text else "")

    def comment(self, depth: int, key: str) -> bool:
        text = self.comments.get(key)
        if not text:
            return False
        for line in text.split("\n"):
            self.emit(depth, f"// {line}" if line else "//")
        return True

    def gap(self) -> None:
        if self.out and self.out[-1] and not self.out[-1].endswith("{"):
            self.emit(0)

    # -- options

    def parsed_options(self, options: Message, element: str) -> Message | None:
        """``options`` read through the pool's own class of it, so that custom options become extensions."""
        if not options.ByteSize():
            return None
        cls = message_factory.GetMessageClass(self.options_pool.FindMessageTypeByName(options.DESCRIPTOR.full_name))
        parsed = cls.FromString(options.SerializeToString())
        unknown = _first_unknown(parsed)
        if unknown is not None:
            raise ValueError(
                f"{element}: the options hold fields the descriptor pool does not know (in {unknown}); "
                "give render() a pool with the files that define those extensions"
            )
        return parsed

    def option_assignments(self, options: Message, scopes: Sequence[str]) -> list[Lines]:
        """Each set option as the lines of ``name = value`` (the value of an aggregate spans lines)."""
        assignments: list[Lines] = []
        for fd, value in options.ListFields():
            if fd.name == "uninterpreted_option" and not fd.is_extension:
                continue
            name = f"({self.symbols.extension_ref(fd.full_name, scopes)})" if fd.is_extension else fd.name
            assignments.extend(self.assign(name, fd, value, scopes))
        return assignments

    def assign(self, name: str, fd: FieldDescriptor, value: Any, scopes: Sequence[str]) -> list[Lines]:
        if fd.is_repeated:
            # A repeated message option can only be set by an aggregate: `(ext).rules = { ... }`, once per element.
            if fd.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
                return [self.aggregate_value(name, self.aggregate(item, scopes[0])) for item in value]
            return [[f"{name} = {self.scalar(fd, item)}"] for item in value]
        if fd.cpp_type != FieldDescriptor.CPPTYPE_MESSAGE:
            return [[f"{name} = {self.scalar(fd, value)}"]]
        fields = value.ListFields()
        if len(fields) == 1:
            sub_fd, sub_value = fields[0]
            sub = f"({self.symbols.extension_ref(sub_fd.full_name, scopes)})" if sub_fd.is_extension else sub_fd.name
            return self.assign(f"{name}.{sub}", sub_fd, sub_value, scopes)
        return [self.aggregate_value(name, self.aggregate(value, scopes[0]))]

    @staticmethod
    def aggregate_value(name: str, body: Lines) -> Lines:
        if not body:
            return [f"{name} = {{}}"]
        return [f"{name} = {{", *(f"  {line}" for line in body), "}"]

    def aggregate(self, msg: Message, scope: str) -> Lines:
        """The text-format body of message ``msg`` (without braces), one field a line."""
        lines: Lines = []
        for fd, value in msg.ListFields():
            if fd.is_extension:
                # protoc looks the name up from the scope of the message being filled in.
                ref = self.symbols.resolve(fd.full_name, msg.DESCRIPTOR.full_name, types_only=False)
                if ref != fd.full_name:
                    raise ValueError(f"{scope}: extension {fd.full_name} cannot be named in a text-format value")
                name = f"[{fd.full_name}]"
            elif fd.type == FieldDescriptor.TYPE_GROUP and fd.message_type is not None:
                name = fd.message_type.name if fd.message_type.name.lower() == fd.name else fd.name
            else:
                name = fd.name
            if fd.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
                for item in value if fd.is_repeated else [value]:
                    lines.extend(self.block(name, self.aggregate(item, scope)))
            else:
                lines.extend(f"{name}: {self.scalar(fd, item)}" for item in (value if fd.is_repeated else [value]))
        return lines

    @staticmethod
    def block(name: str, body: Lines) -> Lines:
        if not body:
            return [f"{name} {{}}"]
        return [f"{name} {{", *(f"  {line}" for line in body), "}"]

    @staticmethod
    def scalar(fd: FieldDescriptor, value: Any) -> str:
        if fd.type == FieldDescriptor.TYPE_BOOL:
            return "true" if value else "false"
        if fd.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
            return _quote(value)
        if fd.type == FieldDescriptor.TYPE_ENUM:
            assert fd.enum_type is not None
            known = fd.enum_type.values_by_number.get(value)
            return known.name if known is not None else str(value)
        if fd.type == FieldDescriptor.TYPE_FLOAT:
            return _float32(value)
        if fd.type == FieldDescriptor.TYPE_DOUBLE:
            return _double(value)
        return str(value)

    def statement_options(self, depth: int, options: Message, element: str, scopes: Sequence[str]) -> None:
        """``option name = value;`` lines in the body of ``element``."""
        parsed = self.parsed_options(options, element)
        if parsed is None:
            return
        for lines in self.option_assignments(parsed, scopes):
            self.emit(depth, f"option {lines[0]}")
            for line in lines[1:-1]:
                self.emit(depth, line)
            if len(lines) > 1:
                self.emit(depth, f"{lines[-1]};")
            else:
                self.out[-1] += ";"

    def inline_options(
        self,
        head: str,
        depth: int,
        *,
        extra: Sequence[str] = (),
        options: Message | None,
        element: str,
        scopes: Sequence[str],
    ) -> None:
        """Emit ``head [extra..., options...];`` (``head`` being e.g. ``string id = 1``)."""
        assignments: list[Lines] = [[item] for item in extra]
        if options is not None:
            parsed = self.parsed_options(options, element)
            if parsed is not None:
                assignments.extend(self.option_assignments(parsed, scopes))
        if not assignments:
            self.emit(depth, f"{head};")
            return
        if all(len(lines) == 1 for lines in assignments):
            one_line = f"{head} [{', '.join(lines[0] for lines in assignments)}];"
            if len(assignments) == 1 or len(one_line) + 2 * depth <= _WIDTH:
                self.emit(depth, one_line)
                return
        if len(assignments) == 1:
            lines = assignments[0]
            self.emit(depth, f"{head} [{lines[0]}")
            for line in lines[1:-1]:
                self.emit(depth, line)
            self.emit(depth, f"{lines[-1]}];")
            return
        self.emit(depth, f"{head} [")
        for i, lines in enumerate(assignments):
            last = i == len(assignments) - 1
            for j, line in enumerate(lines):
                self.emit(depth + 1, line + ("," if j == len(lines) - 1 and not last else ""))
        self.emit(depth, "];")

    # -- the file

    def render(self) -> str:
        file = self.file
        if self.editions:
            edition = descriptor_pb2.Edition.Name(file.edition).removeprefix("EDITION_")
            self.emit(0, f'edition = "{edition}";')
        else:
            self.emit(0, f'syntax = "{file.syntax or "proto2"}";')
        if file.package:
            self.emit(0)
            self.emit(0, f"package {file.package};")
        imports = []
        for i, dep in enumerate(file.dependency):
            modifier = "public " if i in file.public_dependency else "weak " if i in file.weak_dependency else ""
            imports.append(f'import {modifier}"{dep}";')
        imports.extend(f'import option "{dep}";' for dep in file.option_dependency)
        if imports:
            self.emit(0)
            for line in imports:
                self.emit(0, line)
        package_scopes = [f"{file.package}.x", file.package] if file.package else ["x"]
        if file.HasField("options"):
            start = len(self.out)
            self.emit(0)
            self.statement_options(0, file.options, file.name, package_scopes)
            if len(self.out) == start + 1:
                self.out.pop()
        prefix = f"{file.package}." if file.package else ""
        for msg in file.message_type:
            self.emit(0)
            self.message(0, msg, f"{prefix}{msg.name}")
        for enum in file.enum_type:
            self.emit(0)
            self.enum(0, enum, f"{prefix}{enum.name}")
        for extendee, group in _extend_groups(file.extension):
            self.emit(0)
            self.extend(0, extendee, group, file.package)
        for service in file.service:
            self.emit(0)
            self.service(0, service, f"{prefix}{service.name}")
        return "\n".join(self.out) + "\n"

    # -- messages

    def message(self, depth: int, msg: descriptor_pb2.DescriptorProto, full: str) -> None:
        self.comment(depth, full)
        self.emit(depth, f"message {msg.name} {{")
        self.message_body(depth + 1, msg, full)
        self.emit(depth, "}")

    def message_body(self, depth: int, msg: descriptor_pb2.DescriptorProto, full: str) -> None:
        inner = depth
        self.statement_options(inner, msg.options, full, [f"{full}.x", full])
        for enum in msg.enum_type:
            self.gap()
            self.enum(inner, enum, f"{full}.{enum.name}")
        # protoc appends the entry type of a map field and the type of a group to the nested types where the field
        # is declared, so a nested message that follows one of those in `nested_type` must follow its field.
        anchors: dict[int, int] = {}
        for i, field in enumerate(msg.field):
            for k, nested in enumerate(msg.nested_type):
                own = nested.options.map_entry or (field.type == _FDP.TYPE_GROUP and not self.editions)
                if own and f".{full}.{nested.name}" == field.type_name:
                    anchors[i] = k
        pending = [k for k in range(len(msg.nested_type)) if k not in anchors.values()]

        def nested_before(limit: float) -> None:
            while pending and pending[0] < limit:
                nested = msg.nested_type[pending.pop(0)]
                self.gap()
                self.message(inner, nested, f"{full}.{nested.name}")

        units: list[list[int]] = []  # a field, or the fields of a oneof
        oneof_units: dict[int, list[int]] = {}
        for i, field in enumerate(msg.field):
            if field.HasField("oneof_index") and not field.proto3_optional:
                if field.oneof_index not in oneof_units:
                    oneof_units[field.oneof_index] = []
                    units.append(oneof_units[field.oneof_index])
                oneof_units[field.oneof_index].append(i)
            else:
                units.append([i])
        later = [min((anchors[i] for i in unit if i in anchors), default=math.inf) for unit in units]
        nested_before(min(later, default=math.inf))
        for n, unit in enumerate(units):
            field = msg.field[unit[0]]
            if field.HasField("oneof_index") and not field.proto3_optional:
                self.oneof(inner, msg, field.oneof_index, full)
            else:
                self.field(inner, msg, field, full, in_oneof=False)
            nested_before(min(later[n + 1 :], default=math.inf))
        nested_before(math.inf)
        if msg.extension_range:
            self.gap()
        for ext_range in msg.extension_range:
            text = f"extensions {_ranges([(ext_range.start, ext_range.end - 1)], _MAX_FIELD_END - 1)}"
            options = ext_range.options if ext_range.HasField("options") else None
            self.inline_options(text, inner, options=options, element=f"{full} extensions", scopes=[f"{full}.x", full])
        if msg.reserved_range or msg.reserved_name:
            self.gap()
        if msg.reserved_range:
            ranges = [(r.start, r.end - 1) for r in msg.reserved_range]
            self.emit(inner, f"reserved {_ranges(ranges, _MAX_FIELD_END - 1)};")
        if msg.reserved_name:
            self.emit(inner, f"reserved {self.reserved_names(msg.reserved_name)};")
        for extendee, group in _extend_groups(msg.extension):
            self.gap()
            self.extend(inner, extendee, group, full)

    def reserved_names(self, names: Iterable[str]) -> str:
        if self.editions:  # editions reserve identifiers, the older syntaxes string literals
            return ", ".join(names)
        return ", ".join(_quote(name) for name in names)

    def oneof(self, depth: int, msg: descriptor_pb2.DescriptorProto, index: int, scope: str) -> None:
        decl = msg.oneof_decl[index]
        full = f"{scope}.{decl.name}"
        self.gap()
        self.comment(depth, full)
        self.emit(depth, f"oneof {decl.name} {{")
        self.statement_options(depth + 1, decl.options, full, [full, scope])
        for field in msg.field:
            if field.HasField("oneof_index") and field.oneof_index == index and not field.proto3_optional:
                self.field(depth + 1, msg, field, scope, in_oneof=True)
        self.emit(depth, "}")

    def label(self, field: descriptor_pb2.FieldDescriptorProto, *, in_oneof: bool, extension: bool) -> str:
        if field.label == _FDP.LABEL_REPEATED:
            return "repeated "
        if self.editions or in_oneof:
            return ""
        if field.label == _FDP.LABEL_REQUIRED:
            return "required "
        if self.proto3:
            return "optional " if field.proto3_optional and not extension else ""
        return "optional "

    def type_text(self, field: descriptor_pb2.FieldDescriptorProto, relative_to: str) -> str:
        if field.type in _SCALARS:
            return _SCALARS[field.type]
        return self.symbols.type_ref(field.type_name, relative_to)

    def field(
        self,
        depth: int,
        msg: descriptor_pb2.DescriptorProto | None,
        field: descriptor_pb2.FieldDescriptorProto,
        scope: str,
        *,
        in_oneof: bool,
        extension: bool = False,
    ) -> None:
        """A field of message ``msg`` (``scope`` being its full name), or an extension declared in ``scope``."""
        full = f"{scope}.{field.name}" if scope else field.name
        if full in self.comments or (self.out and self.out[-1].strip() == "}"):
            self.gap()
        self.comment(depth, full)
        nested = _nested(msg, scope, field.type_name) if msg is not None else None
        group: descriptor_pb2.DescriptorProto | None = None
        if nested is not None and nested.options.map_entry and field.label == _FDP.LABEL_REPEATED:
            entry_scope = f"{scope}.{nested.name}.value"
            key, value = (self.type_text(entry_field, entry_scope) for entry_field in nested.field[:2])
            head = f"map<{key}, {value}> {field.name} = {field.number}"
        elif field.type == _FDP.TYPE_GROUP and not self.editions:
            if nested is None:
                raise ValueError(f"{full}: the group's message type is not declared beside it")
            group = nested
            label = self.label(field, in_oneof=in_oneof, extension=extension)
            head = f"{label}group {group.name} = {field.number}"
        else:
            label = self.label(field, in_oneof=in_oneof, extension=extension)
            head = f"{label}{self.type_text(field, full)} {field.name} = {field.number}"
        extra: list[str] = []
        if field.HasField("default_value"):
            extra.append(f"default = {self.default(field)}")
        if field.HasField("json_name") and field.json_name != default_json_name(field.name) and not extension:
            extra.append(f"json_name = {_quote(field.json_name)}")
        options = field.options if field.HasField("options") else None
        self.inline_options(head, depth, extra=extra, options=options, element=full, scopes=[full, scope])
        if group is not None:
            last = self.out.pop()
            self.emit(depth, f"{last.strip().removesuffix(';')} {{")
            self.message_body(depth + 1, group, f"{scope}.{group.name}")
            self.emit(depth, "}")

    @staticmethod
    def default(field: descriptor_pb2.FieldDescriptorProto) -> str:
        text = field.default_value
        if field.type == _FDP.TYPE_STRING:
            return _quote(text)
        if field.type == _FDP.TYPE_BYTES:
            return f'"{text}"'  # already C-escaped by protoc
        return text

    def extend(
        self, depth: int, extendee: str, fields: Sequence[descriptor_pb2.FieldDescriptorProto], scope: str
    ) -> None:
        first = f"{scope}.{fields[0].name}" if scope else fields[0].name
        self.emit(depth, f"extend {self.symbols.type_ref(extendee, first)} {{")
        for field in fields:
            if field.type == _FDP.TYPE_GROUP and not self.editions:
                raise ValueError(f"{scope}.{field.name}: group extensions are not supported")
            self.field(depth + 1, None, field, scope, in_oneof=False, extension=True)
        self.emit(depth, "}")

    # -- enums and services

    def enum(self, depth: int, enum: descriptor_pb2.EnumDescriptorProto, full: str) -> None:
        self.comment(depth, full)
        self.emit(depth, f"enum {enum.name} {{")
        inner = depth + 1
        self.statement_options(inner, enum.options, full, [f"{full}.x", full])
        for value in enum.value:
            value_full = f"{full}.{value.name}"
            if value_full in self.comments:
                self.gap()
            self.comment(inner, value_full)
            options = value.options if value.HasField("options") else None
            head = f"{value.name} = {value.number}"
            self.inline_options(head, inner, options=options, element=value_full, scopes=[value_full, full])
        if enum.reserved_range or enum.reserved_name:
            self.gap()
        if enum.reserved_range:
            ranges = [(r.start, r.end) for r in enum.reserved_range]
            self.emit(inner, f"reserved {_ranges(ranges, _MAX_ENUM_END)};")
        if enum.reserved_name:
            self.emit(inner, f"reserved {self.reserved_names(enum.reserved_name)};")
        self.emit(depth, "}")

    def service(self, depth: int, service: descriptor_pb2.ServiceDescriptorProto, full: str) -> None:
        self.comment(depth, full)
        self.emit(depth, f"service {service.name} {{")
        inner = depth + 1
        self.statement_options(inner, service.options, full, [f"{full}.x", full])
        for method in service.method:
            method_full = f"{full}.{method.name}"
            if method_full in self.comments:
                self.gap()
            self.comment(inner, method_full)
            request = self.symbols.type_ref(method.input_type, method_full)
            response = self.symbols.type_ref(method.output_type, method_full)
            head = (
                f"rpc {method.name}({'stream ' if method.client_streaming else ''}{request})"
                f" returns ({'stream ' if method.server_streaming else ''}{response})"
            )
            start = len(self.out)
            self.statement_options(inner + 1, method.options, method_full, [method_full, full])
            if len(self.out) == start:
                self.emit(inner, f"{head};")
            else:
                body = self.out[start:]
                del self.out[start:]
                self.emit(inner, f"{head} {{")
                self.out.extend(body)
                self.emit(inner, "}")
        self.emit(depth, "}")


def _nested(msg: descriptor_pb2.DescriptorProto, full: str, type_name: str) -> descriptor_pb2.DescriptorProto | None:
    """The message nested directly in ``msg`` (whose full name is ``full``) that ``type_name`` names, if any."""
    for nested in msg.nested_type:
        if f".{full}.{nested.name}" == type_name:
            return nested
    return None


def _extend_groups(
    extensions: Iterable[descriptor_pb2.FieldDescriptorProto],
) -> Iterator[tuple[str, list[descriptor_pb2.FieldDescriptorProto]]]:
    """Consecutive extensions of one message, each run printed as one ``extend`` block."""
    run: list[descriptor_pb2.FieldDescriptorProto] = []
    for ext in extensions:
        if run and run[0].extendee != ext.extendee:
            yield run[0].extendee, run
            run = []
        run.append(ext)
    if run:
        yield run[0].extendee, run


def _first_unknown(msg: Message) -> str | None:
    """The full name of the first message in ``msg`` (itself included) that holds unknown fields."""
    if len(unknown_fields.UnknownFieldSet(msg)):
        return msg.DESCRIPTOR.full_name
    for fd, value in msg.ListFields():
        if fd.cpp_type != FieldDescriptor.CPPTYPE_MESSAGE:
            continue
        for item in value if fd.is_repeated else [value]:
            found = _first_unknown(item)
            if found is not None:
                return found
    return None


def render(
    file: descriptor_pb2.FileDescriptorProto,
    pool: descriptor_pool.DescriptorPool | None = None,
    comments: Mapping[str, str] | None = None,
) -> str:
    """``file`` as .proto source text that protoc compiles back to the same descriptor.

    ``pool`` must know the files ``file`` imports, and with them every extension its options use; by default it is
    built by :func:`pool_for`. A pool that does not know ``file`` itself gets it added. ``comments`` maps the fully
    qualified name of an element to the text printed as ``//`` lines above it: messages, fields, oneofs and
    extensions go by their protobuf names (``buf.validate.FieldRules``, ``buf.validate.FieldRules.string``,
    ``buf.validate.field``), enum values by the enum's name and theirs (``buf.validate.Ignore.IGNORE_ALWAYS``),
    methods by the service's and theirs. Raises :class:`ValueError` for options the pool cannot read.
    """
    if pool is None:
        pool = pool_for(file)
    else:
        try:
            pool.FindFileByName(file.name)
        except KeyError:
            pool.AddSerializedFile(file.SerializeToString())
    return _Renderer(file, pool, comments or {}).render()


# ---------------------------------------------------------------------------------------------------------------
# Comments from protobuf-py docstrings


def docstring_comments(module: ModuleType, file: DescFile) -> dict[str, str]:
    """The proto comments that protoc-gen-py (protobuf-py's generator) kept in the docstrings of ``module``, the
    generated module of ``file``, keyed as :func:`render` wants them.

    The generator puts an element's leading and trailing comments (one space after ``//`` dropped) above a fenced
    ``proto`` block naming the element; fields and oneofs are entries of the message's ``Attributes:`` section, enum
    values of the enum's. Extensions' docstrings are attribute docstrings, which only the module's source has.
    """
    from protobuf import Extension

    comments: dict[str, str] = {}

    def message(msg: DescMessage) -> None:
        top, members = _split_docstring(msg.type.__doc__ or "")
        _put(comments, msg.type_name, top)
        for member in msg.members:
            _put(comments, f"{msg.type_name}.{member.name}", members.get(member.local_name, ""))
        for nested in msg.nested_messages:
            message(nested)
        for enum in msg.nested_enums:
            enum_(enum)

    def enum_(enum: DescEnum) -> None:
        top, values = _split_docstring(enum.type.__doc__ or "")
        _put(comments, enum.type_name, top)
        for value in enum.values:
            _put(comments, f"{enum.type_name}.{value.name}", values.get(value.local_name, ""))

    for msg in file.messages:
        message(msg)
    for enum in file.enums:
        enum_(enum)
    attribute_docs = _attribute_docstrings(module)
    owners: list[ModuleType | type] = [module, *_classes(module)]
    for owner in owners:
        qualname = "" if isinstance(owner, ModuleType) else owner.__qualname__
        for name, value in vars(owner).items():
            doc = attribute_docs.get((qualname, name))
            if isinstance(value, Extension) and doc is not None:
                _put(comments, value.desc().type_name, _split_docstring(doc)[0])
    return comments


def _put(comments: dict[str, str], key: str, text: str) -> None:
    if text:
        comments[key] = text


def _classes(module: ModuleType) -> Iterator[type]:
    """The classes defined in ``module``, nested ones included."""
    seen: set[type] = set()
    pending: list[object] = list(vars(module).values())
    while pending:
        value = pending.pop()
        if isinstance(value, type) and value.__module__ == module.__name__ and value not in seen:
            seen.add(value)
            yield value
            pending.extend(vars(value).values())


def _attribute_docstrings(module: ModuleType) -> dict[tuple[str, str], str]:
    """``{(class qualname or "", attribute): docstring}`` for every string literal that follows an assignment."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return {}
    found: dict[tuple[str, str], str] = {}

    def walk(body: Sequence[ast.stmt], qualname: str) -> None:
        for stmt, after in zip(body, [*body[1:], None], strict=True):
            if isinstance(stmt, ast.ClassDef):
                walk(stmt.body, f"{qualname}.{stmt.name}" if qualname else stmt.name)
                continue
            target: ast.expr | None = stmt.target if isinstance(stmt, ast.AnnAssign) else None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
            if (
                isinstance(target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                found[(qualname, target.id)] = after.value.value

    walk(tree.body, "")
    return found


def _split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """``(comment of the element, {attribute: comment})`` from a protoc-gen-py docstring."""
    lines = doc.split("\n")
    indent = lines[-1] if not lines[-1].strip() else ""
    fences = [i for i, line in enumerate(lines) if line == f"{indent}```proto"]
    if not fences:
        return "", {}
    fence = fences[-1]
    top = _dedent(lines[1:fence], indent)
    members: dict[str, str] = {}
    if f"{indent}Attributes:" in lines[fence:]:
        start = lines.index(f"{indent}Attributes:", fence) + 1
        header = re.compile(rf"^{re.escape(indent)}    (\S+):$")
        name: str | None = None
        body: list[str] = []
        for line in [*lines[start:], f"{indent}    -:"]:
            match = header.match(line)
            if match is None:
                body.append(line)
                continue
            if name is not None:
                members[name] = _member_comment(body, f"{indent}        ")
            name, body = match.group(1), []
    return top, members


def _member_comment(body: list[str], indent: str) -> str:
    fences = [i for i, line in enumerate(body) if line == f"{indent}```proto"]
    return _dedent(body[: fences[-1]], indent) if fences else ""


def _dedent(lines: Sequence[str], indent: str) -> str:
    out = [line.removeprefix(indent) if line.startswith(indent) else line.strip() for line in lines]
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------------------
# The files the build renders


def validate_descriptor() -> tuple[descriptor_pb2.FileDescriptorProto, dict[str, str]]:
    """The FileDescriptorProto of buf/validate/validate.proto from the installed protovalidate package, and its
    comments. Raises :class:`ImportError` when protovalidate is not installed."""
    from protovalidate._gen.buf.validate import validate_pb

    desc = validate_pb.desc()
    file = descriptor_pb2.FileDescriptorProto.FromString(desc.proto.to_binary())
    return file, docstring_comments(validate_pb, desc)


def _copyright_line(module_name: str) -> str:
    """The copyright line of the generated module's own header, e.g. ``Copyright (c) 2023-2026 Buf Technologies``."""
    try:
        source = inspect.getsource(importlib.import_module(module_name))
    except (ImportError, OSError, TypeError):
        source = ""
    match = re.search(r"^# (Copyright .*Buf Technologies, Inc\.)$", source, re.MULTILINE)
    return match.group(1) if match else "Copyright Buf Technologies, Inc."


def validate_proto_source() -> str:
    """buf/validate/validate.proto rendered from the installed protovalidate package, with its header."""
    file, comments = validate_descriptor()
    version = importlib.metadata.version("protovalidate")
    copyright_line = _copyright_line("protovalidate._gen.buf.validate.validate_pb")
    header = f"""\
// {VALIDATE_PROTO}: rendered by `python -m paiju.tools.protosource validate` from the FileDescriptorProto
// (and the comments) in the pinned `protovalidate` PyPI package, version {version}. Do not edit by hand: the
// build renders it again from that package. The package keeps no comments for the fields of a oneof, so those
// fields have none here.
//
// {copyright_line}
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

"""
    return header + render(file, comments=comments)


def googlerpc_sources() -> dict[str, bytes]:
    """``{path: content}`` of the google.rpc protos shipped by the installed googleapis-common-protos package.
    Raises :class:`ImportError` when the package (or one of the files) is missing."""
    module = importlib.import_module("google.rpc.status_pb2")
    directory = Path(module.__file__ or "").parent
    sources: dict[str, bytes] = {}
    for path in GOOGLE_RPC_FILES:
        source = directory / Path(path).name
        if not source.is_file():
            raise ImportError(f"googleapis-common-protos ships no {path} (looked for {source})")
        sources[path] = source.read_bytes()
    return sources


def write_if_changed(path: Path, content: bytes) -> bool:
    """Write ``content`` to ``path`` (making its directory) unless the file already holds exactly that; whether it
    wrote."""
    if path.is_file() and path.read_bytes() == content:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(content)
    temporary.replace(path)
    return True


def _validate_files() -> dict[str, bytes]:
    return {VALIDATE_PROTO: validate_proto_source().encode("utf-8")}


_COMMANDS: dict[str, tuple[str, Callable[[], dict[str, bytes]]]] = {
    "validate": ("protovalidate", _validate_files),
    "googlerpc": ("googleapis-common-protos", googlerpc_sources),
}


def main(argv: Sequence[str] | None = None) -> int:
    """The command: ``validate OUTDIR`` or ``googlerpc OUTDIR``. Exit status 1 when a package is missing."""
    parser = argparse.ArgumentParser(
        prog="python -m paiju.tools.protosource",
        description="Write the third-party .proto files our contract imports, from the pinned Python packages.",
    )
    parser.add_argument(
        "what",
        choices=sorted(_COMMANDS),
        help="validate: buf/validate/validate.proto; googlerpc: google/rpc/{status,error_details,code}.proto",
    )
    parser.add_argument("outdir", type=Path, help="the include root to write into")
    args = parser.parse_args(argv)
    package, produce = _COMMANDS[args.what]
    try:
        files = produce()
    except ImportError as exc:
        print(f"protosource: the {package} package is needed (uv sync installs it): {exc}", file=sys.stderr)
        return 1
    for relative, content in files.items():
        path = args.outdir / relative
        state = "wrote" if write_if_changed(path, content) else "unchanged"
        print(f"protosource: {state} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
