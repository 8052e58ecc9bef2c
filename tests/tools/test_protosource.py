"""`paiju.tools.protosource`: a FileDescriptorProto printed as .proto source compiles back (with protoc) to the same
descriptor — buf/validate/validate.proto from the pinned protovalidate package, and synthetic proto3, proto2 and
editions files that use the features validate.proto does not; the command writes its files once; and protovalidate
enforces the rules of a message compiled, for the google.protobuf runtime, against the rendered validate.proto."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from paiju.tools import protosource

_GRPC_TOOLS = importlib.util.find_spec("grpc_tools")
assert _GRPC_TOOLS is not None and _GRPC_TOOLS.origin is not None
PROTOC_INCLUDE = Path(_GRPC_TOOLS.origin).parent / "_proto"
"""grpc_tools' own copy of the google/protobuf well-known types."""

OPTIONS_PROTO = """\
syntax = "proto2";

package paiju.test.opts;

import "google/protobuf/descriptor.proto";

message Rule {
  optional string id = 1;
  optional string expr = 2;
  repeated string tags = 3;
  optional Inner inner = 4;
  map<string, int32> weights = 5;

  message Inner {
    optional double ratio = 1;
    optional bytes blob = 2;
    optional Level level = 3;
  }
}

enum Level {
  LEVEL_UNSPECIFIED = 0;
  LEVEL_HIGH = 1;
}

extend google.protobuf.FileOptions { optional string file_tag = 50001; }
extend google.protobuf.MessageOptions {
  repeated Rule rule = 50002;
  optional Rule single = 50003;
}
extend google.protobuf.FieldOptions {
  optional Rule field_rule = 50004;
  optional float weight = 50005;
  repeated int64 numbers = 50006;
  optional Level level = 50007;
  optional double ratio = 50010;
  optional uint64 big = 50011;
  optional bool flag = 50012;
  optional bytes raw = 50013;
}
extend google.protobuf.OneofOptions { optional string oneof_tag = 50008; }
extend google.protobuf.EnumOptions { optional string enum_tag = 50014; }
extend google.protobuf.EnumValueOptions { optional string value_tag = 50015; }
extend google.protobuf.ServiceOptions { optional string service_tag = 50016; }
extend google.protobuf.MethodOptions { optional Rule method_rule = 50017; }
extend google.protobuf.ExtensionRangeOptions { optional string range_tag = 50018; }
"""

PROTO3 = r"""
syntax = "proto3";

package paiju.test.sample;

import "google/protobuf/timestamp.proto";
import "paiju_test/options.proto";

option java_package = "com.example.sample";
option java_multiple_files = true;
option go_package = "example.com/sample;sample";
option optimize_for = CODE_SIZE;
option (paiju.test.opts.file_tag) = "tag \"quoted\" \\ back\nslash\ttab \001 é";

message Seat {
  string name = 1;
}

message Table {
  option deprecated = true;
  option (paiju.test.opts.rule) = { id: "a" expr: "this.x > 0 ? 'yes' : \"no\"" };
  option (paiju.test.opts.rule) = {
    id: "b"
    tags: ["x", "y"]
    inner { ratio: 0.5 blob: "\001\377" level: LEVEL_HIGH }
    weights { key: "k" value: 3 }
    weights { key: "j" value: -4 }
  };
  option (paiju.test.opts.single).inner.ratio = 2.5;

  message Seat {
    string player = 1;
    int32 position = 2 [json_name = "pos"];
    enum Wind {
      WIND_UNSPECIFIED = 0;
      EAST = 1;
    }
    Wind wind = 3;
  }

  enum Phase {
    option allow_alias = true;
    PHASE_UNSPECIFIED = 0;
    PHASE_OPEN = 1;
    PHASE_STARTED = 1 [(paiju.test.opts.value_tag) = "alias"];
    PHASE_DONE = 2 [deprecated = true];
    reserved 5, 10 to 20, 100 to max;
    reserved "PHASE_OLD";
  }

  string id = 1 [
    (paiju.test.opts.field_rule).id = "id.min",
    (paiju.test.opts.weight) = 1.5,
    (paiju.test.opts.numbers) = -9223372036854775808,
    (paiju.test.opts.numbers) = 7
  ];
  optional int32 round = 2 [(paiju.test.opts.ratio) = inf];
  optional string note = 3 [(paiju.test.opts.raw) = "\x00\x7f\xc3\xa9 e"];
  repeated Seat seats = 4;
  map<string, Seat> seats_by_name = 5;
  map<int64, string> labels = 6;
  repeated int32 scores = 7 [packed = false];
  oneof outcome {
    option (paiju.test.opts.oneof_tag) = "o";
    string winner = 8;
    Seat loser = 9 [deprecated = true];
    google.protobuf.Timestamp ended_at = 10;
  }
  Phase phase = 11 [(paiju.test.opts.level) = LEVEL_HIGH];
  optional Seat.Wind dealer_wind = 12 [(paiju.test.opts.big) = 18446744073709551615, (paiju.test.opts.flag) = true];
  bytes blob = 13 [json_name = "BLOB"];
  double nan_ratio = 14 [(paiju.test.opts.ratio) = nan];
  float neg = 15 [(paiju.test.opts.weight) = -0.1];
  string unicode = 16 [(paiju.test.opts.field_rule) = { id: "名字" expr: "size(this) <= 8\t" }];
  .paiju.test.sample.Seat top_seat = 17;  // shadowed by Table.Seat: must not print as `Seat`
  optional Color color = 18;
  reserved 20 to 29, 100;
  reserved "legacy", "old_name";
}

enum Color {
  option (paiju.test.opts.enum_tag) = "c";
  COLOR_UNSPECIFIED = 0;
  RED = 1;
  reserved 3 to 5;
  reserved "BLUE";
}

service TableService {
  option (paiju.test.opts.service_tag) = "svc";
  rpc Get(Table) returns (Table);
  rpc Watch(Table.Seat) returns (stream Table) {
    option (paiju.test.opts.method_rule) = { id: "watch" };
    option idempotency_level = NO_SIDE_EFFECTS;
  }
  rpc Upload(stream Table.Seat) returns (google.protobuf.Timestamp) {
    option deprecated = true;
  }
  rpc Chat(stream Table) returns (stream Table);
}
"""

PROTO2 = r"""
syntax = "proto2";

package paiju.test.legacy;

import public "paiju_test/options.proto";

message Old {
  required int32 id = 1;
  optional string name = 2 [default = "a \"b\"\n\\c é"];
  optional bytes raw = 3 [default = "\001\377x"];
  optional double ratio = 4 [default = -inf];
  optional float f = 5 [default = 1.5e+20];
  optional Kind kind = 6 [default = KIND_B];
  optional bool on = 7 [default = true];
  optional int64 big = 8 [default = -9223372036854775808, jstype = JS_STRING];
  optional uint64 ubig = 17 [default = 18446744073709551615];
  optional group Result = 9 {
    optional int32 score = 1;
    repeated string notes = 2;
  }
  repeated int32 packed_nums = 10 [packed = true];
  oneof choice {
    int32 a = 11;
    group Pick = 12 {
      optional string why = 1;
    }
  }

  enum Kind {
    KIND_A = 1;
    KIND_B = 2;
  }

  extensions 100 to 199, 500;
  extensions 1000 to max [(paiju.test.opts.range_tag) = "r"];

  extend Old {
    optional string nested_ext = 150;
  }
}

extend Old {
  optional int32 extra = 100;
  repeated string extra_tags = 101;
  optional paiju.test.opts.Level level = 102 [default = LEVEL_HIGH];
}
"""

EDITIONS = """
edition = "2023";

package paiju.test.modern;

option features.field_presence = IMPLICIT;

message Thing {
  string name = 1;
  int32 count = 2 [features.field_presence = EXPLICIT];
  repeated int32 nums = 3 [features.repeated_field_encoding = EXPANDED];
  Thing child = 4 [features.message_encoding = DELIMITED];
  int32 must = 5 [features.field_presence = LEGACY_REQUIRED];
  map<string, int32> counts = 6;
  reserved old;
}

enum E {
  option features.enum_type = CLOSED;
  E_A = 0;
  E_B = 1;
}
"""

NO_PACKAGE = """
syntax = "proto2";

import "google/protobuf/descriptor.proto";

extend google.protobuf.FieldOptions {
  optional string note = 50100;
}

message Bare {
  optional string a = 1 [(note) = "a note too long for the line of its field, however wide the editor window is made"];
  map<string, Entry> e = 2;  // its entry type precedes Entry among the nested types
  message Entry {
    optional Bare back = 1;
  }
  optional .Bare.Entry self = 3;
}
"""

PROBE_PROTO = """\
syntax = "proto3";

package paiju.test.protosource.probe;

import "buf/validate/validate.proto";

message Probe {
  string id = 1 [(buf.validate.field).string = {min_len: 1, max_len: 8, pattern: "^[a-z]+$"}];
}
"""


def protoc(*args: str | Path) -> None:
    """Run grpc_tools' protoc with its own include directory last; fail the test with protoc's message."""
    command = [sys.executable, "-m", "grpc_tools.protoc", *map(str, args), f"-I{PROTOC_INCLUDE}"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.fail(f"protoc failed ({result.returncode}):\n{result.stderr}")


def compile_files(includes: list[Path], names: list[str], out: Path) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """``{name: FileDescriptorProto}`` of ``names`` and, transitively, everything they import."""
    protoc(*(f"-I{include}" for include in includes), "--include_imports", f"--descriptor_set_out={out}", *names)
    descriptor_set = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return {file.name: file for file in descriptor_set.file}


def comparable(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """A copy without ``source_code_info`` and without the ``json_name`` values protoc would derive anyway."""
    copy = descriptor_pb2.FileDescriptorProto.FromString(file.SerializeToString())
    copy.ClearField("source_code_info")

    def clear(fields: Iterable[descriptor_pb2.FieldDescriptorProto]) -> None:
        for field in fields:
            if field.json_name == protosource.default_json_name(field.name):
                field.ClearField("json_name")

    def message(msg: descriptor_pb2.DescriptorProto) -> None:
        clear(msg.field)
        clear(msg.extension)
        for nested in msg.nested_type:
            message(nested)

    for msg in copy.message_type:
        message(msg)
    clear(copy.extension)
    return copy


def assert_same(original: descriptor_pb2.FileDescriptorProto, compiled: descriptor_pb2.FileDescriptorProto) -> None:
    want, got = comparable(original), comparable(compiled)
    assert got == want
    # Unknown fields (the custom options protoc keeps undecoded) take part in the bytes too.
    assert got.SerializeToString(deterministic=True) == want.SerializeToString(deterministic=True)


def write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.integration  # protoc, as a process of its own
def test_validate_proto_compiles_back_to_the_packaged_descriptor(tmp_path: Path) -> None:
    write(tmp_path / "rendered", {protosource.VALIDATE_PROTO: protosource.validate_proto_source()})
    compiled = compile_files([tmp_path / "rendered"], [protosource.VALIDATE_PROTO], tmp_path / "set.pb")
    original, _ = protosource.validate_descriptor()
    assert_same(original, compiled[protosource.VALIDATE_PROTO])


def test_validate_proto_carries_header_and_comments() -> None:
    text = protosource.validate_proto_source()
    head = text.split("\nsyntax = ", 1)[0]
    version = importlib.metadata.version("protovalidate")
    assert f"pinned `protovalidate` PyPI package, version {version}" in head
    assert "Buf Technologies, Inc." in head and "Apache License, Version 2.0" in head
    assert "Do not edit by hand" in head
    assert "// `Rule` represents a validation rule written in the Common Expression\n" in text
    assert (
        "extend google.protobuf.FieldOptions {\n"
        "  // Rules specify the validations to be performed on this field. By default,\n"
        "  // no validation is performed against a field.\n"
        "  optional FieldRules field = 1159;\n"
    ) in text
    _, comments = protosource.validate_descriptor()
    for key in (
        "buf.validate.FieldRules",
        "buf.validate.FieldRules.required",
        "buf.validate.StringRules.in",
        "buf.validate.Ignore.IGNORE_IF_ZERO_VALUE",
        "buf.validate.field",
        "buf.validate.predefined",
    ):
        assert comments.get(key), key
    # The comment ends before the generator's own ```proto block naming the element.
    assert not comments["buf.validate.FieldRules.required"].rstrip().endswith("```")
    assert "optional bool required = 25;" not in comments["buf.validate.FieldRules.required"]


@pytest.mark.integration  # protoc, as a process of its own
@pytest.mark.parametrize(
    "source", [PROTO3, PROTO2, EDITIONS, NO_PACKAGE], ids=["proto3", "proto2", "editions", "no-package"]
)
def test_synthetic_file_round_trips(tmp_path: Path, source: str) -> None:
    name = "paiju_test/sample.proto"
    write(tmp_path / "src", {"paiju_test/options.proto": OPTIONS_PROTO, name: source})
    first = compile_files([tmp_path / "src"], [name], tmp_path / "first.pb")
    pool = protosource.pool_for(first[name], first.values())
    write(tmp_path / "rendered", {name: protosource.render(first[name], pool)})
    second = compile_files([tmp_path / "rendered", tmp_path / "src"], [name], tmp_path / "second.pb")
    assert_same(first[name], second[name])


@pytest.mark.integration  # protoc, as a process of its own
def test_comments_are_printed_above_their_elements(tmp_path: Path) -> None:
    name = "paiju_test/sample.proto"
    write(tmp_path / "src", {"paiju_test/options.proto": OPTIONS_PROTO, name: PROTO3})
    first = compile_files([tmp_path / "src"], [name], tmp_path / "first.pb")
    comments = {
        "paiju.test.sample.Table": "A table.\n\n  Indented.",
        "paiju.test.sample.Table.outcome": "How it ended.",
        "paiju.test.sample.Table.Phase.PHASE_DONE": "Over.",
        "paiju.test.sample.TableService.Watch": "Streams the table.",
    }
    text = protosource.render(first[name], protosource.pool_for(first[name], first.values()), comments)
    assert "// A table.\n//\n//   Indented.\nmessage Table {\n" in text
    assert "  // How it ended.\n  oneof outcome {\n" in text
    assert "    // Over.\n    PHASE_DONE = 2 [deprecated = true];\n" in text
    assert "  // Streams the table.\n  rpc Watch(Table.Seat) returns (stream Table) {\n" in text


def test_unknown_custom_options_are_refused() -> None:
    file = descriptor_pb2.FileDescriptorProto(name="x.proto", syntax="proto3", package="x")
    msg = file.message_type.add(name="M")
    # Field 50001 of MessageOptions (varint 1): an extension nothing in the pool defines.
    tag, encoded = 50001 << 3, bytearray()
    while tag > 0x7F:
        encoded.append(tag & 0x7F | 0x80)
        tag >>= 7
    msg.options.MergeFromString(bytes([*encoded, tag, 1]))
    with pytest.raises(ValueError, match="does not know"):
        protosource.render(file)


def run_command(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "paiju.tools.protosource", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True)


@pytest.mark.integration  # protoc, as a process of its own
def test_command_writes_once(tmp_path: Path) -> None:
    run_command("validate", str(tmp_path))
    run_command("googlerpc", str(tmp_path))
    written = [tmp_path / protosource.VALIDATE_PROTO, *(tmp_path / name for name in protosource.GOOGLE_RPC_FILES)]
    before = {path: path.stat().st_mtime_ns for path in written}
    rpc_dir = Path(importlib.import_module("google.rpc.status_pb2").__file__ or "").parent
    for name in protosource.GOOGLE_RPC_FILES:
        assert (tmp_path / name).read_bytes() == (rpc_dir / Path(name).name).read_bytes()
    assert (tmp_path / protosource.VALIDATE_PROTO).read_text(encoding="utf-8") == protosource.validate_proto_source()

    again = run_command("validate", str(tmp_path)).stdout + run_command("googlerpc", str(tmp_path)).stdout
    assert "wrote" not in again and again.count("unchanged") == len(written)
    assert {path: path.stat().st_mtime_ns for path in written} == before


@pytest.mark.parametrize(
    "case",
    [
        ("validate", "protovalidate._gen.buf.validate", "protovalidate"),
        ("googlerpc", "google.rpc.status_pb2", "googleapis-common-protos"),
    ],
    ids=["validate", "googlerpc"],
)
def test_command_fails_clearly_without_its_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], case: tuple[str, str, str]
) -> None:
    what, module, package = case
    monkeypatch.setitem(sys.modules, module, None)  # makes the import fail
    assert protosource.main([what, str(tmp_path)]) == 1
    assert f"the {package} package is needed" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


PROBE_SCRIPT = """\
import json, sys

sys.path.insert(0, sys.argv[1])
import protovalidate
from buf.validate import validate_pb2
from paiju_test_protosource.probe_pb2 import Probe

assert validate_pb2.__file__.startswith(sys.argv[1]), validate_pb2.__file__
try:
    protovalidate.validate(Probe(id="ABC"))
    raised = False
except protovalidate.ValidationError:
    raised = True
violations = {
    value: sorted(violation.proto.rule_id for violation in protovalidate.collect_violations(Probe(id=value)))
    for value in ("", "abc", "abcdefghi", "ABC")
}
print(json.dumps({"violations": violations, "raised": raised}))
"""


@pytest.mark.integration  # protoc, as a process of its own
def test_protovalidate_enforces_rules_compiled_against_the_rendered_file(tmp_path: Path) -> None:
    """The generated modules are imported in a fresh interpreter: the google.protobuf default descriptor pool
    refuses a second, different buf/validate/validate.proto, and the suite's own processes may already hold one
    (the services' generated code imports it)."""
    probe = "paiju_test_protosource/probe.proto"
    write(tmp_path / "src", {protosource.VALIDATE_PROTO: protosource.validate_proto_source(), probe: PROBE_PROTO})
    generated = tmp_path / "gen"
    generated.mkdir()
    protoc(f"-I{tmp_path / 'src'}", f"--python_out={generated}", protosource.VALIDATE_PROTO, probe)

    command = [sys.executable, "-c", PROBE_SCRIPT, str(generated)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["violations"] == {
        "": ["string.min_len", "string.pattern"],
        "abc": [],
        "abcdefghi": ["string.max_len"],
        "ABC": ["string.pattern"],
    }
    assert report["raised"] is True
