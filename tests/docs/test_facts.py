"""The facts the code defines, as the documents state them, are the code's.

Each test imports the modules that define a fact and reads the documents for readers (the README and docs/*.md;
the subjects also in the generated api.md, whose source is the protos' comments):

- the subjects of the streams, as the services' stores make them (`JetStreamEventStore.subject`), and the streams
  of architecture.md's table; the key-value buckets the services keep beside them;
- the ports of the services, by the service the text names beside each;
- the metrics: every name mentioned is exported by a service, every one exported is in operations.md;
- the error reasons: every reason-like name is a reason of errors.proto (or another name the code defines), and a
  status code written beside a reason is the one errors.proto declares for it;
- the settings named (`PAIJU_*`) are read by the code; the default rate limits of clients.md are the services'
  `RATE_LIMITS`; the read-model tables named are the migrations'; the export's columns are `DEAL_COLUMNS` and
  `PLAY_COLUMNS`; the cores' commands and options of cores.md are their `Command` unions and `Options`.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import typing
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from .markdown import API, DOCS, REPOSITORY, code_spans, name, paragraphs, readers_documents, section

OPERATIONS = DOCS / "operations.md"


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _mentions(pattern: str, documents: list[Path] | None = None) -> Iterator[tuple[str, re.Match[str]]]:
    """(document:line, match) of every match of ``pattern`` in the documents for readers."""
    for document in documents if documents is not None else readers_documents():
        text = _text(document)
        for match in re.finditer(pattern, text):
            yield f"{name(document)}:{text.count(chr(10), 0, match.start()) + 1}", match


# --- streams and subjects ---------------------------------------------------------------------------------------


@cache
def _settings() -> dict[str, Any]:
    """Each service's settings at their defaults (no environment)."""
    from paiju.engine.config import Settings as Engine
    from paiju.lobby.config import Settings as Lobby
    from paiju.scoring.config import Settings as Scoring

    def defaults(settings: Any) -> Any:
        """The settings with every default, and a stand-in for each required one (the documents state defaults)."""
        required = {s.name: "x" * 48 for _, s in settings.declarations() if s.required}
        return settings.from_env(required)

    return {"engine": defaults(Engine), "lobby": defaults(Lobby), "scoring": defaults(Scoring)}


@cache
def _streams() -> dict[str, tuple[str, int, str]]:
    """Each stream's default name -> (its subject prefix, the partitions its aggregates fall in, a subject the
    services' store makes for the aggregate ``X``), as the services create them: the games partitioned
    (the engine's ``partitions`` setting), the lobby's and the tournaments' not."""
    from paiju.platform.store.jetstream import JetStreamEventStore

    engine, lobby, scoring = (_settings()[s] for s in ("engine", "lobby", "scoring"))
    assert engine.stream == lobby.games_stream == scoring.games_stream
    assert lobby.stream == engine.lobby_stream == scoring.lobby_stream
    assert scoring.stream == lobby.tournaments_stream
    found: dict[str, tuple[str, int, str]] = {}
    for stream, prefix, partitions in (
        (engine.stream, engine.prefix, engine.partitions),
        (lobby.stream, lobby.prefix, 0),
        (scoring.stream, scoring.prefix, 0),
    ):
        client: Any = SimpleNamespace(jetstream=lambda timeout: None)  # no server: only the subjects are asked for
        store = JetStreamEventStore(client, stream, prefix, partitions=partitions)
        found[stream] = (prefix, partitions, store.subject("X"))
    return found


PLACEHOLDER = re.compile(r"^(<[^>]+>|[A-Z][A-Z_]*|.*….*|[a-z]+-(<[^>]+>|…))$")
"""A token of a subject written as a template: ``<game id>``, ``GAME_ID``, ``account-…``, ``table-<id>``."""


def _subject_templates(documents: list[Path]) -> Iterator[tuple[str, str, list[str], str]]:
    """(where, prefix, tokens after it, paragraph) of each subject template the documents write: a prefix of a stream
    followed by tokens of which one at least is a placeholder (``paiju.lobby.presence``, a module, is not one)."""
    prefixes = "|".join(re.escape(prefix) for prefix, _, _ in _streams().values())
    start = re.compile(rf"(?<![\w.])(?P<prefix>{prefixes})(?=\.)")
    for document in documents:
        for first, paragraph in paragraphs(document):
            for match in start.finditer(paragraph):
                tokens, i, current, depth = [], match.end(), "", 0
                while i < len(paragraph):
                    c = paragraph[i]
                    if depth == 0 and (c.isspace() or c in "`|,;)\"'*"):
                        break
                    depth += {"<": 1, ">": -1}.get(c, 0)
                    current += c
                    i += 1
                tokens = [t for t in current.split(".") if t] if current.startswith(".") else []
                if tokens and any(PLACEHOLDER.match(t) for t in tokens):
                    where = f"{name(document)}:{first + paragraph.count(chr(10), 0, match.start())}"
                    yield where, match.group("prefix"), tokens, paragraph


def test_the_subjects_written_are_the_ones_the_stores_make() -> None:
    streams = {prefix: (stream, partitions, subject) for stream, (prefix, partitions, subject) in _streams().items()}
    assert streams["paiju.game"][2].count(".") == 3, "the games' subjects carry their partition"
    wrong, seen = [], 0
    for where, prefix, tokens, paragraph in _subject_templates([*readers_documents(), API]):
        seen += 1
        stream, partitions, subject = streams[prefix]
        expected = subject.count(".") - prefix.count(".")
        stored_before = partitions and len(tokens) == 1 and re.search(r"\bbefore\b", paragraph)
        if len(tokens) != expected and not stored_before:
            shape = ".".join(["<partition>", "<id>"] if partitions else ["<id>"])
            wrong.append(f"{where}: {prefix}.{'.'.join(tokens)} — the {stream} stream's subjects are {prefix}.{shape}")
    assert seen >= 10, "the subjects of the documents are read"
    assert wrong == []


def test_a_subject_without_its_partition_is_found(tmp_path: Path) -> None:
    document = tmp_path / "wrong.md"
    document.write_text("Every game is a subject `paiju.game.<game id>` of the stream.\n\nA module: `paiju.game.x`.\n")
    found = [(prefix, tokens) for _, prefix, tokens, _ in _subject_templates([document])]
    assert found == [("paiju.game", ["<game id>"])]
    assert _streams()["GAMES"][2].count(".") == 3


def test_the_streams_table_is_the_services_streams() -> None:
    table = section(DOCS / "architecture.md", "Streams and read models")
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    named = {code_spans(row.split("|")[1])[0]: code_spans(row.split("|")[2])[0] for row in rows}
    assert set(named) == set(_streams()), (
        f"architecture.md's streams {sorted(named)} vs the code's {sorted(_streams())}"
    )
    for stream, first_subject in named.items():
        prefix = _streams()[stream][0]
        assert first_subject.startswith(prefix + "."), f"{stream}: {first_subject} is not under {prefix}"


def test_the_key_value_buckets_named_are_the_services() -> None:
    from paiju.engine import bootstrap, live
    from paiju.lobby import attendance

    games, lobby = _settings()["engine"].stream, _settings()["lobby"].stream
    families = {
        "paiju-owners-": (bootstrap.owners_bucket(games).removesuffix(games), games),
        "paiju-live-": (_literal(live, "paiju-live-"), games),
        "paiju-presence-": (_literal(attendance, "paiju-presence-"), lobby),
    }
    wrong, seen = [], 0
    for where, match in _mentions(r"paiju-(?:owners|live|presence|engine)-[\w<>…-]*(?: [a-z]+>)?"):
        seen += 1
        text = match.group(0)
        if text == bootstrap.CHECKPOINTS:
            continue
        family = next((f for f in families if text.startswith(f)), None)
        if family is None:
            wrong.append(f"{where}: {text} is no bucket of the code")
            continue
        prefix, stream = families[family]
        rest = text.removeprefix(prefix)
        if not (rest == stream or rest.startswith("<")):
            wrong.append(f"{where}: {text} — the bucket is {prefix}{stream} (or {prefix}<stream>)")
    assert seen >= 5
    assert wrong == []


def _literal(module: Any, start: str) -> str:
    """The bucket prefix ``start`` as a module's source writes it (``f"paiju-live-{stream}"``): the code names it."""
    import inspect

    source = inspect.getsource(module)
    assert f'f"{start}{{' in source, f"{module.__name__} no longer names its bucket {start}<stream>"
    return start


# --- ports --------------------------------------------------------------------------------------------------------


@cache
def _ports() -> dict[int, str]:
    """Each port the code gives a Paiju process or its NATS by default -> the process."""
    from paiju.tools.web import DEFAULT_PORT

    settings = _settings()
    ports = {DEFAULT_PORT: "web", int(settings["engine"].nats_url.rsplit(":", 1)[1]): "nats"}
    for service, s in settings.items():
        ports[int(s.address.rsplit(":", 1)[1])] = service
        ports[s.metrics_port] = service
    assert len(ports) == 8, ports
    return ports


SERVICE_WORDS = re.compile(r"engine|lobby|scoring|web|nats", re.IGNORECASE)


def _owner(lines: list[str], index: int, position: int) -> str | None:
    """The process a port at ``position`` of line ``index`` belongs to by the text: the last process named before it
    in its table row, or in its paragraph; else in the nearest heading above."""
    if lines[index].lstrip().startswith("|"):
        before = lines[index][:position]
    else:
        start = index
        while start > 0 and lines[start - 1].strip() and not lines[start - 1].lstrip().startswith(("|", "#", "```")):
            start -= 1
        before = "\n".join([*lines[start:index], lines[index][:position]])
    named: list[str] = SERVICE_WORDS.findall(before)
    if named:
        return named[-1].lower()
    for line in reversed(lines[:index]):
        if line.startswith("#"):
            found: list[str] = SERVICE_WORDS.findall(line)
            return found[-1].lower() if found else None
    return None


def _port_mistakes(document: Path) -> list[str]:
    lines = _text(document).splitlines()
    wrong = []
    for i, line in enumerate(lines):
        for match in re.finditer(r"(?<![\w.])(5005\d|946\d|8080|4222)(?!\w|\.\d)", line):  # not inside hex
            port = int(match.group(1))
            owner = _owner(lines, i, match.start())
            expected = _ports().get(port)
            if expected is None:
                wrong.append(f"{name(document)}:{i + 1}: {port} is no port of the code ({sorted(_ports())})")
            elif owner != expected:
                wrong.append(f"{name(document)}:{i + 1}: {port} is the {expected}'s port, written beside {owner}")
    return wrong


def test_the_ports_are_the_services() -> None:
    assert _ports()[50051] == "engine" and _ports()[8080] == "web"
    wrong = [mistake for document in readers_documents() for mistake in _port_mistakes(document)]
    assert wrong == []


def test_a_port_beside_the_wrong_service_is_found(tmp_path: Path) -> None:
    document = tmp_path / "wrong.md"
    document.write_text("The lobby listens on 127.0.0.1:50051.\n\n## engine\n\n| metrics | 9464 |\n| x | 50059 |\n")
    assert len(_port_mistakes(document)) == 2


# --- metrics ------------------------------------------------------------------------------------------------------


@cache
def _metrics() -> dict[str, set[str]]:
    """Each Paiju metric family the services export -> the names of its samples, read from the Prometheus registry
    after importing the services (each registers its own) and the engine's `register`."""
    from prometheus_client import REGISTRY

    for module in ("paiju.engine.bootstrap", "paiju.lobby.bootstrap", "paiju.scoring.bootstrap"):
        importlib.import_module(module)
    from paiju.engine import metrics

    metrics.register()
    families: dict[str, set[str]] = {}
    for family in REGISTRY.collect():
        if not family.name.startswith("paiju_"):
            continue
        base = family.name + ("_total" if family.type == "counter" else "")
        suffixes = {"histogram": ("_bucket", "_sum", "_count"), "counter": ()}.get(family.type, ())
        families[base] = {base, *(family.name + s for s in suffixes)}
    return families


def test_every_metric_named_is_exported() -> None:
    known = {sample for samples in _metrics().values() for sample in samples}
    named = list(_mentions(r"\bpaiju_[a-z_]+[a-z]\b"))
    assert len(named) > 15
    unknown = [f"{where}: {m.group(0)}" for where, m in named if m.group(0) not in known]
    assert unknown == []


def test_every_metric_exported_is_in_the_operators_guide() -> None:
    text = section(OPERATIONS, "Observe")
    assert len(_metrics()) >= 12
    missing = [metric for metric in sorted(_metrics()) if not re.search(rf"\b{metric}\b", text)]
    assert missing == [], "operations.md, Observe, does not describe these metrics"


# --- error reasons ------------------------------------------------------------------------------------------------


@cache
def _reasons() -> dict[str, str]:
    """Each `ErrorReason` of errors.proto -> the name of the gRPC status code it declares."""
    from google.rpc import code_pb2

    from paiju.v1 import errors_pb2

    values = errors_pb2.ErrorReason.DESCRIPTOR.values
    return {
        v.name: code_pb2.Code.Name(v.GetOptions().Extensions[errors_pb2.status_code]) for v in values if v.number != 0
    }


@cache
def _codes() -> frozenset[str]:
    import grpc

    return frozenset(code.name for code in grpc.StatusCode)


@cache
def _other_names() -> frozenset[str]:
    """Upper-case names that are not reasons but that the code defines: the contract's enum values, the health
    statuses, and the constants, variables and words its sources, manifests and tests write."""
    import grpc_health.v1.health_pb2 as health

    import paiju.v1

    found: set[str] = set(health.HealthCheckResponse.ServingStatus.keys())
    for info in pkgutil.iter_modules(paiju.v1.__path__):
        if info.name.endswith("_pb2"):
            module = importlib.import_module(f"paiju.v1.{info.name}")
            for enum in module.DESCRIPTOR.enum_types_by_name.values():
                found.update(enum.values_by_name)
    sources = [*(REPOSITORY / "services").rglob("*.py"), *(REPOSITORY / "tests").rglob("*.py")]
    sources += [p for p in (REPOSITORY / "deploy").rglob("*") if p.is_file()]
    sources += [*(REPOSITORY / "clients" / "node" / "src").glob("*.ts")]  # the TypeScript client's own names
    for path in sources:
        found.update(re.findall(r"\b[A-Z][A-Z0-9_]{2,}\b", path.read_text(encoding="utf-8", errors="replace")))
    return frozenset(found - set(_reasons()))


CARDS = re.compile(r"^((10|[2-9TJQKA])[SHCD]|[SB]J|[2-9TJQKA]+)$")
"""Cards and ranks in the card notation (`QS`, `SJ`, `AA22`)."""


def test_every_reason_named_is_a_reason_of_the_contract() -> None:
    known = set(_reasons()) | _codes() | _other_names() | set(RETIRED)
    unknown = []
    for where, match in _mentions(r"`([A-Z][A-Z0-9_]+)`"):
        word = match.group(1)
        if word not in known and not CARDS.match(word):
            unknown.append(f"{where}: {word}")
    assert unknown == []


def _pairs(text: str) -> Iterator[tuple[str, str]]:
    """(status code, reason) as a text writes them together: ``CODE / REASON``, ``REASON (CODE``, ``(REASON, CODE)``
    and ``CODE with REASON, REASON or REASON``."""
    for m in re.finditer(r"`([A-Z_]+)`\s*/\s*`([A-Z_]+)`", text):
        yield m.group(1), m.group(2)
    for m in re.finditer(r"`([A-Z_]+)`\s*\(`([A-Z_]+)`", text):
        yield m.group(2), m.group(1)
    for m in re.finditer(r"\(`([A-Z_]+)`,\s*`([A-Z_]+)`\)", text):
        yield m.group(2), m.group(1)
    for m in re.finditer(r"`([A-Z_]+)` with ((?:`[A-Z_]+`(?:,\s*|\s+or\s+|\s+and\s+)?)+)", text):
        for reason in re.findall(r"`([A-Z_]+)`", m.group(2)):
            yield m.group(1), reason


def _pair_mistakes(text: str) -> list[str]:
    wrong = []
    for code, reason in _pairs(text.replace("\n", " ")):
        if code in _codes() and reason in _reasons() and _reasons()[reason] != code:
            wrong.append(f"{reason} is {_reasons()[reason]}, not {code}")
    return wrong


def test_the_status_code_beside_a_reason_is_the_one_it_declares() -> None:
    checked, wrong = 0, []
    for document in readers_documents():
        for first, paragraph in paragraphs(document):
            pairs = [(c, r) for c, r in _pairs(paragraph.replace("\n", " ")) if c in _codes() and r in _reasons()]
            checked += len(pairs)
            wrong += [f"{name(document)}:{first}: {mistake}" for mistake in _pair_mistakes(paragraph)]
    assert checked >= 15, "the reasons' codes of the documents are read"
    assert wrong == []


def test_a_reason_with_the_wrong_code_is_found() -> None:
    assert _pair_mistakes("`NOT_FOUND` / `RULE_VIOLATION`; `SEAT_LOST` (`ABORTED`)") == [
        "RULE_VIOLATION is FAILED_PRECONDITION, not NOT_FOUND",
        "SEAT_LOST is PERMISSION_DENIED, not ABORTED",
    ]
    assert _pair_mistakes("`UNAUTHENTICATED` with `TOKEN_MISSING` or `ROLE_REQUIRED`") == [
        "ROLE_REQUIRED is PERMISSION_DENIED, not UNAUTHENTICATED"
    ]


# --- settings, rate limits, tables, columns, commands -------------------------------------------------------------


@cache
def _code_text() -> str:
    paths = [*(REPOSITORY / "services").rglob("*.py"), *(p for p in (REPOSITORY / "deploy").rglob("*") if p.is_file())]
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in paths)


RETIRED = {"PAIJU_TOKEN_SECRET": "Upgrade"}
"""Settings the code read once and no longer does, named only where upgrading from them is explained."""


def test_every_setting_named_is_read_by_the_code() -> None:
    named = {m.group(0): where for where, m in _mentions(r"\b(?:PAIJU_[A-Z0-9_]*[A-Z0-9]|NATS_URL|DATABASE_URL)\b")}
    assert len(named) > 20
    unread = [
        f"{where}: {variable}"
        for variable, where in sorted(named.items())
        if variable not in _code_text() and variable not in RETIRED
    ]
    assert unread == []
    for variable, where in RETIRED.items():
        assert variable not in _code_text(), f"{variable} is read again: it is no longer retired"
        assert variable in section(OPERATIONS, where)


def test_the_default_rate_limits_are_the_services() -> None:
    from paiju.engine.service import RATE_LIMITS as ENGINE
    from paiju.lobby.service import RATE_LIMITS as LOBBY
    from paiju.platform.limits import parse_rules
    from paiju.scoring.service import RATE_LIMITS as SCORING

    table = section(DOCS / "clients.md", "Rate limits")
    rows = {row.split("|")[1].strip(): row.split("|")[2] for row in table.splitlines() if row.startswith("| ")}
    for service, declared in (("engine", ENGINE), ("lobby", LOBBY), ("scoring", SCORING)):
        documented = {key: rule.text for key, rule in parse_rules(";".join(code_spans(rows[service]))).items()}
        defaults = {key: rule.text for key, rule in parse_rules(declared).items()}
        assert documented == defaults, f"clients.md's {service} limits differ from its RATE_LIMITS"


@cache
def _tables() -> frozenset[str]:
    """The tables the services' migrations create, and the migrations' own."""
    sql = "\n".join(p.read_text() for p in (REPOSITORY / "services").rglob("migrations/*.sql"))
    return frozenset(re.findall(r"CREATE TABLE (\w+)", sql)) | {"schema_migrations"}


def test_the_read_model_tables_are_the_migrations() -> None:
    named = list(_mentions(r"`((?:lobby|scoring)_[a-z_]+|schema_migrations)`"))
    assert len(named) > 10
    unknown = [f"{where}: {m.group(1)}" for where, m in named if m.group(1) not in _tables()]
    assert unknown == []
    backup = section(OPERATIONS, "Back up")
    missing = [table for table in sorted(_tables()) if f"`{table}`" not in backup]
    assert missing == [], "operations.md, Back up, does not say how these tables are rebuilt"


def _columns(cell: str) -> dict[str, str]:
    """The columns of a schema cell: ``a``, ``b`` (type); ``x_0``…``x_5`` (type), with a game's prefix allowed."""
    found: dict[str, str] = {}
    for part in cell.split(";"):
        for group in re.finditer(r"((?:`[^`]+`(?:…`[^`]+`)?(?:,\s*)?)+)\s*\(([a-z0-9]+)", part):
            for item in re.finditer(r"`([a-z_]+?)(\d)?`(?:…`[a-z_]+?(\d)`)?", group.group(1)):
                if item.group(3) is not None:
                    for n in range(int(item.group(2)), int(item.group(3)) + 1):
                        found[f"{item.group(1)}{n}"] = group.group(2)
                else:
                    found[item.group(1) + (item.group(2) or "")] = group.group(2)
    return found


def test_the_export_columns_are_the_exports() -> None:
    from paiju.tools.analyst.export import ARROW_TYPES, DEAL_COLUMNS, PLAY_COLUMNS

    table = section(DOCS / "analysts.md", "The files")
    rows = {row.split("|")[1].strip(" `"): row.split("|")[2] for row in table.splitlines() if row.startswith("| `")}
    for file, columns in (("deals.parquet", DEAL_COLUMNS), ("plays.parquet", PLAY_COLUMNS)):
        documented = _columns(rows[file])
        code = {c.name: ARROW_TYPES[c.kind].rstrip("_") for c in columns}
        assert documented == code, f"analysts.md's {file} columns differ from the export's"


def _listed(document: Path, opening: str) -> set[str]:
    """The names in code spans of the paragraph that starts with ``opening``."""
    for _, paragraph in paragraphs(document):
        if paragraph.startswith(opening):
            return {span for span in code_spans(paragraph) if re.fullmatch(r"[A-Za-z_]+", span)}
    raise AssertionError(f"{name(document)} has no paragraph starting {opening!r}")


@pytest.mark.parametrize("game", ["zlj", "tractor"])
def test_the_cores_commands_and_options_are_theirs(game: str) -> None:
    model = importlib.import_module(f"paiju.rules.{game}.model")
    where = f"paiju.rules.{game}" if game == "zlj" else f"paiju.rules.{game}.model"
    commands = {command.__name__ for command in typing.get_args(model.Command)}
    options = {field.name for field in dataclasses.fields(model.Options)}
    cores = DOCS / "cores.md"
    listed = _listed(cores, f"Commands (`{where}.Command`)")
    assert commands <= listed and listed - commands <= {where.rsplit(".", 1)[-1]}, (
        f"cores.md lists {sorted(listed)}, the core's commands are {sorted(commands)}"
    )
    documented = _listed(cores, f"Rule options (`{where}.Options`)")
    assert options <= documented, f"cores.md's options of {game} miss {sorted(options - documented)}"
