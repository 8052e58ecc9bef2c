"""`paiju.tools.apidoc`: the committed API reference (docs/api.md) is what the protos make now, so a contract change
without `make docs` fails the suite; every RPC and every error reason is on the page; fields show their protovalidate
constraints compactly; every link has its anchor; the output is deterministic; `--check` says when to run
`make docs`."""

from __future__ import annotations

import re
from pathlib import Path

import grpc
import pytest

from paiju.tools import apidoc

pytestmark = pytest.mark.integration  # protoc compiles the contract, as a process of its own

ROOT = Path(__file__).resolve().parents[2]
PROTOS = ROOT / "protos"
DOC = ROOT / "docs" / "api.md"


@pytest.fixture(scope="module")
def descriptor_set() -> bytes:
    return apidoc.build_descriptor_set(PROTOS)


@pytest.fixture(scope="module")
def page(descriptor_set: bytes) -> str:
    return apidoc.render(descriptor_set)


@pytest.fixture(scope="module")
def contract(descriptor_set: bytes) -> apidoc.Contract:
    return apidoc.Contract.parse(descriptor_set)


def section(page: str, anchor: str) -> str:
    """The text of the section whose heading carries ``anchor``, up to the next heading."""
    start = page.index(f'<a id="{anchor}"></a>')
    start = page.index("\n", start) + 1
    following = re.search(r"^#{1,6} ", page[start:], re.MULTILINE)
    return page[start : start + following.start()] if following else page[start:]


def cells(text: str, first: str) -> list[str]:
    """The cells of the table row of ``text`` whose first cell is ``first``."""
    for line in text.splitlines():
        if line.startswith(f"| {first} |"):
            return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
    raise AssertionError(f"no row {first!r} in:\n{text}")


def field_constraints(page: str, message: str, field: str) -> str:
    text = section(page, f"paiju.v1.{message}")
    header = next(line for line in text.splitlines() if line.startswith("| Field |"))
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    assert "Constraints" in columns, f"{message} has no Constraints column"
    return cells(text, f"`{field}`")[columns.index("Constraints")]


def test_the_committed_page_is_up_to_date(page: str) -> None:
    assert DOC.is_file(), "docs/api.md is missing: run `make docs`"
    assert DOC.read_text(encoding="utf-8") == page, (
        "docs/api.md is not what the protos make: run `make docs` and commit docs/api.md"
    )


def test_every_rpc_of_every_service_is_documented(page: str, contract: apidoc.Contract) -> None:
    services = [service for file in contract.package_files() for service in file.service]
    assert {service.name for service in services} >= {"EngineService", "LobbyService", "ScoringService"}
    for service in services:
        assert f'<a id="paiju.v1.{service.name}"></a>' in page
        assert f"  - [{service.name}](#paiju.v1.{service.name}): " in page  # in the contents
        for method in service.method:
            text = section(page, f"paiju.v1.{service.name}.{method.name}")
            request = f"[`{method.input_type.removeprefix('.paiju.v1.')}`](#{method.input_type.lstrip('.')})"
            response = f"[`{method.output_type.removeprefix('.paiju.v1.')}`](#{method.output_type.lstrip('.')})"
            stream = "stream " if method.server_streaming else ""
            assert f"{request} → {stream}{response}" in text, f"{service.name}.{method.name}"


def test_streaming_rpcs_say_so(page: str) -> None:
    assert "→ stream [`WatchResponse`](#paiju.v1.WatchResponse)" in section(page, "paiju.v1.EngineService.Watch")
    assert "stream" not in section(page, "paiju.v1.EngineService.Act").split("\n\n")[0]


def test_every_error_reason_is_in_the_error_table_with_its_status_code(page: str, contract: apidoc.Contract) -> None:
    reasons = contract.types["paiju.v1.ErrorReason"].enum
    assert reasons is not None
    text = section(page, "paiju.v1.ErrorReason")
    codes = {code.name for code in grpc.StatusCode}
    for value in reasons.value:
        row = cells(text, f"`{value.name}`")
        if value.number == 0:
            assert row[1] == "—"
        else:
            assert row[1].strip("`") in codes, f"{value.name}: {row[1]}"
            assert row[2] and not row[2].startswith(row[1].strip("`")), value.name
    assert cells(text, "`NOT_YOUR_TURN`")[1] == "`FAILED_PRECONDITION`"
    assert page.index('<a id="errors"></a>') < page.index('<a id="paiju/v1/engine.proto"></a>')


def test_sample_fields_show_their_constraints(page: str) -> None:
    assert field_constraints(page, "ActRequest", "game_id") == "[id](#paiju.v1.id)"
    assert field_constraints(page, "ActRequest", "command_id") == "[command_id](#paiju.v1.command_id)"
    assert field_constraints(page, "ZljPlay", "cards") == "≤ 108 items; each item: defined enum, not 0"
    assert field_constraints(page, "ListTablesRequest", "limit") == "0 ≤ x ≤ 200"
    assert field_constraints(page, "CreateGameRequest", "game") == "defined enum, not 0"
    oneof = section(page, "paiju.v1.ActRequest")
    assert "- **oneof `command`**, required oneof (exactly one is set): `zlj`, `tractor`" in oneof


def test_the_named_rules_have_a_section(page: str, contract: apidoc.Contract) -> None:
    assert set(contract.rules) == {
        "paiju.v1.id",
        "paiju.v1.command_id",
        "paiju.v1.text",
        "paiju.v1.multiline_text",
    }
    for full, short in contract.rules.items():
        text = section(page, full)
        assert f"[(buf.validate.field).string.({full}) = true]" in text
        assert f"paiju.{short}" in text  # the CEL rule's id


def test_every_link_within_the_page_has_its_anchor(page: str) -> None:
    anchors = re.findall(r'<a id="([^"]+)"></a>', page)
    assert len(anchors) == len(set(anchors)), "duplicate anchors"
    targets = set(re.findall(r"\]\(#([^)]+)\)", page))
    assert targets - set(anchors) == set()


def test_the_page_is_tidy(page: str) -> None:
    assert page.startswith("<!-- Code generated by `python -m paiju.tools.apidoc`")
    assert "make docs" in page.splitlines()[0]
    assert page.endswith("\n") and not page.endswith("\n\n")
    assert [n for n, line in enumerate(page.splitlines(), 1) if line != line.rstrip()] == []
    assert "\n\n\n" not in page


def test_the_output_is_deterministic(descriptor_set: bytes, page: str) -> None:
    assert apidoc.render(descriptor_set) == page
    assert apidoc.generate(PROTOS) == page


def test_check_says_to_run_make_docs(tmp_path: Path, page: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "api.md"
    out.write_text(page.replace("ErrorReason", "ErrorReasons", 1), encoding="utf-8")
    assert apidoc.main(["--protos", str(PROTOS), "--check", str(out)]) == 1
    assert "make docs" in capsys.readouterr().err
    assert apidoc.main(["--protos", str(PROTOS), str(out)]) == 0
    assert out.read_text(encoding="utf-8") == page
    assert apidoc.main(["--protos", str(PROTOS), "--check", str(out)]) == 0
    assert apidoc.main(["--protos", str(PROTOS), "--check", str(tmp_path / "missing.md")]) == 1


SAMPLE = """\
// A sample: <b>no HTML</b>, *no emphasis*.
syntax = "proto3";

package paiju.v1;

import "buf/validate/validate.proto";
import "google/protobuf/duration.proto";
import "paiju/v1/validation.proto";

// Rules of every kind.
message Sample {
  option (buf.validate.message).cel = {
    id: "sample.order", message: "low below high", expression: "this.low < this.high"
  };
  // Required, a well-known format.
  string email = 1 [(buf.validate.field).string.email = true, (buf.validate.field).required = true];
  // A pattern | a pipe.
  string code = 2 [(buf.validate.field).string = {pattern: "^[a-z|]+$", len: 4}];
  // Bounds excluded.
  double ratio = 3 [(buf.validate.field).double = {gt: 0, lt: 1}];
  // Outside a range.
  int32 low = 4 [(buf.validate.field).int32 = {gt: 10, lt: 5}];
  // Checked only when set.
  int32 high = 5 [(buf.validate.field).int32.const = 3, (buf.validate.field).ignore = IGNORE_IF_ZERO_VALUE];
  // A map.
  map<string, int32> weights = 6 [(buf.validate.field).map = {max_pairs: 4, values: {int32: {gte: 0}}}];
  // A duration.
  google.protobuf.Duration wait = 7 [(buf.validate.field).duration = {gte: {seconds: 1}, lte: {seconds: 90}}];
  // A field CEL rule.
  string note = 8 [(buf.validate.field).cel = {id: "note.short", message: "too long", expression: "size(this) < 5"}];
  // Ids.
  repeated string ids = 9 [(buf.validate.field).repeated = {
    max_items: 1, unique: true, items: {string: {[paiju.v1.id]: true}}
  }];
  // A nested message.
  Inner inner = 10;
  // Inside.
  message Inner {
    // A level.
    int32 level = 1;
  }
}
"""


def test_rules_of_every_kind_render_compactly(tmp_path: Path) -> None:
    sample = tmp_path / "paiju" / "v1" / "sample.proto"
    sample.parent.mkdir(parents=True)
    sample.write_text(SAMPLE, encoding="utf-8")
    page = apidoc.render(apidoc.build_descriptor_set(tmp_path, [PROTOS]))
    text = section(page, "paiju.v1.Sample")
    expected = {
        "email": "required, email",
        "code": r"exactly 4 chars, matches `^[a-z\|]+$`",
        "ratio": "0.0 < x < 1.0",
        "low": "x < 5 or x > 10",
        "high": "= 3, checked only when set",
        "weights": "≤ 4 entries; each value: ≥ 0",
        "wait": "1s ≤ x ≤ 90s",
        "note": "`note.short`: too long",
        "ids": "≤ 1 item, unique items; each item: [id](#paiju.v1.id)",
    }
    for name, constraints in expected.items():
        assert cells(text, f"`{name}`")[-1] == constraints, name
    assert "Constraints: `sample.order`: low below high." in text
    assert cells(text, "`weights`")[1] == "map<`string`, `int32`>"
    assert cells(text, "`code`")[3] == r"A pattern \| a pipe."
    assert '### <a id="paiju.v1.Sample.Inner"></a>Sample.Inner' in page
    assert "A sample: &lt;b>no HTML&lt;/b>, \\*no emphasis\\*." in page
