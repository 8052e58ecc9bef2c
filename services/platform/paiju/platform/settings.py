"""Settings: what a process reads from its environment, each declared once (twelve-factor configuration).

A process's settings are a frozen dataclass deriving from `Settings`, whose fields are declared with a `Setting` —
the environment variable, the default, the help text, how the text is read (`whole`, `number`, `switch`, ...),
whether it is a secret, which command-line option may give it, and the names it had before. Everything said about
a setting comes from that one declaration:

- `Settings.from_env` reads the environment into the typed, frozen object (options first, for the commands that
  have them), with an error naming the variable when a value cannot be read (`SettingsError`);
- `help_text` is the settings part of ``paiju <process> --help``, `add_options` the options of the commands that
  take settings as options too (``paiju bots``, ``paiju web``);
- the operations guide's tables (docs/operations.md, "Configure") are generated from the declarations and the
  manifests by ``make docs`` (`paiju.tools.settingsdoc`), which ``make lint`` and a test hold to them.

Settings read by several processes (NATS, the streams, the database, the addresses of the services, the log level,
metrics, rate limits, the token keys) are declared here, in a module that imports only the standard library, so that
every command can list its settings in ``--help`` without loading gRPC; a process's own settings are declared in its
``config.py`` or beside what they configure (the engine's seed secret in `paiju.engine.seeds`). A process may reword
a shared declaration's help for its table (`Setting.but`).

**Secrets** (``secret=True``) are read from the file named by ``<NAME>_FILE`` — a mounted Kubernetes Secret, a file
of the development stack — so that they appear in no process listing, no ``env`` dump and no crash report; one
trailing line break is dropped. The secret itself in ``<NAME>`` is still read for one release, with a deprecation
warning. **Renamed settings** keep their old names (``deprecated``) for one release the same way: the value is
read, and the process logs a warning naming the new name once its logging is set up (`Settings.report`). When an
old and a new name (or a secret's file and its plain variable) are both set to different values, the process
refuses to start rather than guess. An empty variable counts as unset.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import textwrap
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

T = TypeVar("T")
METADATA_KEY = "paiju.setting"
"""Where a dataclass field keeps its `Setting` (in the field's metadata)."""
FILE_SUFFIX = "_FILE"
"""``<NAME>_FILE`` names the file that holds the secret ``<NAME>``."""
UNTIL = "the next release"
"""How long a deprecated name is still read."""


class SettingsError(SystemExit):
    """A setting that cannot be read: missing, malformed, unreadable, or set twice differently. The message names
    the variable (never a secret's value). A `SystemExit`, so that a process that cannot read its settings stops
    with the message and no traceback, as a misconfigured process always has."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


# How a variable's text is read. Each parser raises `ValueError` with what is wrong; the reader names the variable.


def text(raw: str) -> str:
    """The text as it is."""
    return raw


def whole(minimum: int = 0, maximum: int | None = None) -> Callable[[str], int]:
    """A whole number from ``minimum`` (to ``maximum``)."""

    def parse(raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ValueError("not a whole number") from None
        if value < minimum or (maximum is not None and value > maximum):
            bound = f"from {minimum} to {maximum}" if maximum is not None else f"at least {minimum}"
            raise ValueError(f"must be {bound}")
        return value

    return parse


def number(minimum: float = 0.0) -> Callable[[str], float]:
    """A finite decimal number, at least ``minimum`` (seconds, by the settings' names)."""

    def parse(raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ValueError("not a number") from None
        if not math.isfinite(value) or value < minimum:
            raise ValueError(f"must be a number of at least {minimum:g}")
        return value

    return parse


def switch(raw: str) -> bool:
    """``on`` or ``off`` (also true/false, 1/0, yes/no)."""
    word = raw.strip().lower()
    if word in ("on", "true", "1", "yes"):
        return True
    if word in ("off", "false", "0", "no"):
        return False
    raise ValueError("must be on or off")


def choice(*words: str) -> Callable[[str], str]:
    """One of ``words`` (any case; read in lower case)."""

    def parse(raw: str) -> str:
        word = raw.strip().lower()
        if word not in words:
            raise ValueError(f"must be one of {', '.join(words)}")
        return word

    return parse


port = whole(0, 65535)
"""A TCP port (0: none, or any free one, as the setting says)."""


def _inferred(default: Any) -> Callable[[str], Any]:
    """The parser of a setting declared without one, by its default's type."""
    if isinstance(default, bool):
        return switch
    if isinstance(default, int):
        return whole()
    if isinstance(default, float):
        return number()
    if isinstance(default, str):
        return text
    raise TypeError(f"a setting whose default is a {type(default).__name__} needs a parser")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """The declaration of one setting: where it is read from, what it is, and what it is when unset.

    ``name``: the environment variable (a secret's file is named by ``<name>_FILE``); ``default``: the value when
    unset (and the dataclass field's default); ``help``: what it does, for ``--help`` and the guide; ``parse``: how
    the text is read (by the default's type when not given: `switch`, `whole`, `number`, `text`); ``secret``: read
    from a file (see the module); ``required``: the process refuses to start without it; ``deprecated``: the names
    it had before, still read for one release; ``option``: the command-line option that gives it too (and wins);
    ``shown_default``: the default as the help and the guide show it, when it is computed (``bots-<host>-<pid>``);
    ``optional_file``: a secret's file that is not there leaves the setting unset (a Secret's optional key, mounted
    only when present) instead of stopping the process; ``default_factory``: makes the default when it is computed;
    ``metavar``: the option's value in ``--help``; ``file_only``: a secret read from its file only, never from the
    environment itself (a secret that never had a plain variable: none is read for a release)."""

    name: str
    default: T
    help: str
    parse: Callable[[str], T] | None = None
    secret: bool = False
    required: bool = False
    deprecated: tuple[str, ...] = ()
    option: str | None = None
    shown_default: str | None = None
    optional_file: bool = False
    default_factory: Callable[[], T] | None = None
    metavar: str | None = None
    file_only: bool = False

    def __post_init__(self) -> None:
        if self.parse is None:
            object.__setattr__(self, "parse", _inferred(self.default))

    @property
    def variable(self) -> str:
        """The variable to set: ``<name>_FILE`` for a secret, else the name."""
        return self.name + FILE_SUFFIX if self.secret else self.name

    def but(self, **changes: Any) -> Setting[T]:
        """The same declaration with some of it changed (a process's own help for a shared setting)."""
        return dataclasses.replace(self, **changes)

    def field(self) -> Any:
        """The dataclass field of this setting, for a `Settings` class: ``port: int = METRICS_PORT.field()``.
        A secret's field stays out of the object's ``repr``."""
        metadata = {METADATA_KEY: self}
        if self.default_factory is not None:
            return dataclasses.field(default_factory=self.default_factory, metadata=metadata, repr=not self.secret)
        return dataclasses.field(default=self.default, metadata=metadata, repr=not self.secret)

    def read(self, raw: str) -> T:
        """The value of the text ``raw`` (`ValueError` saying what is wrong)."""
        assert self.parse is not None  # set by __post_init__
        return self.parse(raw)

    def default_text(self) -> str:
        """The default as ``--help`` and the guide show it ("" for none)."""
        if self.shown_default is not None:
            return self.shown_default
        if self.required or self.secret or self.default is None or self.default in ("", b""):
            return ""
        if isinstance(self.default, bool):
            return "on" if self.default else "off"
        if isinstance(self.default, float):
            return f"{self.default:g}"
        return " ".join(str(self.default).split())


@dataclass(frozen=True)
class Deprecation:
    """A setting read under a name it will lose: ``variable`` was set; ``instead`` is what to set."""

    variable: str
    instead: str
    why: str

    def __str__(self) -> str:
        return f"{self.variable} is deprecated ({self.why}) and read until {UNTIL} only: set {self.instead}"


@dataclass(frozen=True)
class Settings:
    """The base of every process's settings: declare each field with `Setting.field`, read with `from_env`."""

    deprecations: tuple[Deprecation, ...] = dataclasses.field(default=(), kw_only=True, repr=False, compare=False)
    """The deprecated names this object was read from, for `report` once the process logs."""

    @classmethod
    def declarations(cls) -> list[tuple[str, Setting[Any]]]:
        """(field name, declaration) of every setting, in the class's order."""
        return [(f.name, f.metadata[METADATA_KEY]) for f in dataclasses.fields(cls) if METADATA_KEY in f.metadata]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, args: argparse.Namespace | None = None) -> Self:
        """The settings read from ``env`` (this process's environment by default), each option of ``args`` that was
        given winning over its variable (see `add_options`); `SettingsError` names what cannot be read."""
        values = os.environ if env is None else env
        found: dict[str, Any] = {}
        deprecations: list[Deprecation] = []
        for field, setting in cls.declarations():
            given = getattr(args, field, None) if args is not None and setting.option else None
            if given is not None:
                found[field] = _parsed(setting, str(given), setting.option or field, secret=False)
                continue
            value, used = _lookup(setting, values)
            deprecations += used
            if value is not None:
                source, raw = value
                found[field] = _parsed(setting, raw, source, secret=setting.secret)
            elif setting.required:
                also = f" (or, until {UNTIL}, {setting.name})" if setting.secret and not setting.file_only else ""
                raise SettingsError(f"{setting.variable} must be set{also}: {plain(setting.help)}")
        return cls(**found, deprecations=tuple(deprecations))

    def report(self, log: Any) -> None:
        """Log a warning for each deprecated name these settings were read from (call it once logging is set)."""
        for d in self.deprecations:
            log.warning(str(d), variable=d.variable, instead=d.instead)


def _sources(setting: Setting[Any]) -> Iterator[tuple[str, bool, str | None]]:
    """Where a setting may be read from, the current way first: (variable, a file?, why it is deprecated or None)."""
    if setting.secret:
        yield setting.name + FILE_SUFFIX, True, None
        if not setting.file_only:
            yield setting.name, False, "a secret in the environment: put it in a file and name the file"
    else:
        yield setting.name, False, None
    for old in setting.deprecated:
        why = f"renamed {setting.name}"
        if setting.secret:
            yield old + FILE_SUFFIX, True, why
        yield old, False, why


def _lookup(setting: Setting[Any], env: Mapping[str, str]) -> tuple[tuple[str, str] | None, list[Deprecation]]:
    """The text of a setting and the variable it came from (``None``: unset), and the deprecated names used;
    `SettingsError` when two of its variables disagree or a secret's file cannot be read."""
    found: list[tuple[str, str]] = []
    used: list[Deprecation] = []
    for variable, is_file, why in _sources(setting):
        value = env.get(variable, "")
        if not value:
            continue
        if is_file:
            try:
                value = Path(value).read_text(encoding="utf-8")
            except FileNotFoundError:
                if setting.optional_file:
                    continue
                raise SettingsError(f"{variable}: there is no file {value}") from None
            except (OSError, UnicodeError) as e:
                raise SettingsError(f"{variable}: cannot read {value}: {e}") from None
            value = value.removesuffix("\n").removesuffix("\r")
            if not value:
                raise SettingsError(f"{variable}: the file {env[variable]} is empty")
        found.append((variable, value))
        if why is not None:
            used.append(Deprecation(variable, setting.variable, why))
    if not found:
        return None, used
    first, value = found[0]
    for other, other_value in found[1:]:
        if other_value != value:
            raise SettingsError(f"{first} and {other} are both set, to different values: set {setting.variable} only")
    return found[0], used


def _parsed(setting: Setting[T], raw: str, source: str, *, secret: bool) -> T:
    try:
        return setting.read(raw)
    except ValueError as e:
        shown = source if secret else f"{source}={raw!r}"
        raise SettingsError(f"{shown}: {e}") from None


# Commands: --help and options.

HELP_HEADING = 'settings (environment variables; docs/operations.md, "Configure"):'


def plain(help: str) -> str:
    """A help text as a terminal shows it: without the Markdown marks (`code`, *section*) the guide renders."""
    return help.replace("`", "").replace("*", "")


def help_text(settings: type[Settings], width: int = 100) -> str:
    """The settings of a command as ``--help`` lists them (the epilog `describe` gives a parser): each variable,
    with its option, its default and the names it had, and its help."""
    lines = [HELP_HEADING]
    for _, setting in settings.declarations():
        head = f"  {setting.variable}"
        if setting.option:
            head += f" / {setting.option}"
        shown = setting.default_text()
        notes = ["required"] if setting.required else []
        if setting.secret:
            notes.append("a file holding the secret")
        if shown:
            notes.append(f"default {shown}")
        if setting.deprecated:
            notes.append(f"formerly {', '.join(setting.deprecated)}")
        if notes:
            head += f" ({'; '.join(notes)})"
        lines.append(head)
        lines += textwrap.wrap(plain(setting.help), width, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(lines)


def add_options(parser: argparse.ArgumentParser, settings: type[Settings]) -> None:
    """An option for each setting declared with one (its value read by `Settings.from_env` with ``args``, the
    option winning over the variable), and the settings' `help_text` as the parser's epilog."""
    for field, setting in settings.declarations():
        if setting.option:
            parser.add_argument(
                setting.option,
                dest=field,
                default=None,
                metavar=setting.metavar or field.upper(),
                help=f"{setting.variable} (below)",
            )
    describe(parser, settings)


def describe(parser: argparse.ArgumentParser, settings: type[Settings]) -> None:
    """Give ``parser`` the settings' `help_text` as its epilog, kept as written (the description still wrapped)."""
    parser.formatter_class = _HelpFormatter
    parser.epilog = help_text(settings)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, which keeps the settings' lines as `help_text` laid them out."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(HELP_HEADING):
            return text
        return super()._fill_text(text, width, indent)


def without(env: Mapping[str, str], *settings: Setting[Any]) -> dict[str, str]:
    """``env`` without any variable of ``settings`` (their names, old names and secrets' files): what a process that
    sets them itself passes on to its children, so no stale or deprecated value is read beside its own."""
    names = {variable for setting in settings for variable, _, _ in _sources(setting)}
    return {key: value for key, value in env.items() if key not in names}


# Settings that more than one process reads, declared once.

LOG_LEVEL = Setting(
    "PAIJU_LOG_LEVEL",
    "info",
    "the lowest level logged: `debug`, `info`, `warning`, `error` or `critical`",
    parse=choice("debug", "info", "warning", "error", "critical"),
)
NATS_URL = Setting(
    "NATS_URL", "nats://127.0.0.1:4222", "the NATS server or cluster (several URLs may be given, separated by commas)"
)
NATS_SEED = Setting(
    "NATS_NKEY_SEED",
    "",
    "the NKey seed this process authenticates to NATS with (`paiju keys nats` makes one per service; see "
    "*Security*); unset: no authentication, as against a server that asks for none",
    secret=True,
    file_only=True,
)
NATS_CA = Setting(
    "NATS_TLS_CA",
    "",
    "the CA certificate (PEM file) the NATS servers' TLS certificates are checked against; set, every connection to "
    "NATS is TLS",
)
DATABASE_URL = Setting(
    "DATABASE_URL",
    "",
    "the PostgreSQL database of the read models (a URL with its password)",
    secret=True,
    required=True,
)
STREAM_REPLICAS = Setting("PAIJU_STREAM_REPLICAS", 1, "replicas of a stream this process creates")
GAMES_STREAM = Setting("PAIJU_GAMES_STREAM", "GAMES", "the games' stream")
GAMES_PREFIX = Setting(
    "PAIJU_GAMES_SUBJECT_PREFIX",
    "paiju.game",
    "the games' subject prefix: one subject `<prefix>.<partition>.<game id>` per game",
)
LOBBY_STREAM = Setting("PAIJU_LOBBY_STREAM", "LOBBY", "the lobby's stream: tables and accounts")
LOBBY_PREFIX = Setting(
    "PAIJU_LOBBY_SUBJECT_PREFIX",
    "paiju.lobby",
    "the lobby's subject prefix: one subject `<prefix>.<table or account>` each",
)
TOURNAMENTS_STREAM = Setting("PAIJU_TOURNAMENTS_STREAM", "TOURNAMENTS", "scoring's stream of tournaments")
TOURNAMENTS_PREFIX = Setting(
    "PAIJU_TOURNAMENTS_SUBJECT_PREFIX",
    "paiju.tournament",
    "the tournaments' subject prefix: one subject `<prefix>.<tournament id>` each",
)
MESSAGE_FORM = "message"
"""A command of several events stored as one message (``Paiju-Events``), the form this release writes."""
BATCH_FORM = "batch"
"""A command of several events stored as an atomic batch, a message per event: the form releases before 2026-12
wrote, and the only one they read."""


def command_form(raw: str) -> str:
    """How the store writes a command of several events: `MESSAGE_FORM` or `BATCH_FORM` (any case)."""
    word = raw.strip().lower()
    if word not in (MESSAGE_FORM, BATCH_FORM):
        raise ValueError(
            f"must be {MESSAGE_FORM} (a command's events in one message) or {BATCH_FORM} (an atomic batch, a message "
            "per event, which services of releases before 2026-12 read: for the first roll of an upgrade)"
        )
    return word


def batches(form: str) -> bool:
    """Whether the store writes a command of several events as an atomic batch (``batches=`` of the store)."""
    return form == BATCH_FORM


STORE_COMMAND_FORM = Setting(
    "PAIJU_STORE_COMMAND_FORM",
    MESSAGE_FORM,
    "how the streams this process writes store a command of several events: `message` (one message) or `batch` (an "
    "atomic batch, a message per event, the only form services of releases before 2026-12 read: set it for the first "
    "roll of an upgrade from such a release, see *Upgrade*); every reader reads both",
    parse=command_form,
)
EVENT_LOOP = Setting(
    "PAIJU_EVENT_LOOP",
    "uvloop",
    "the event loop this process runs its asyncio code on: `uvloop` (libuv's, less CPU a message) or `asyncio` "
    "(Python's own; see *Configure*)",
    parse=choice("uvloop", "asyncio"),
)
ENGINE_ADDRESS = Setting("PAIJU_ENGINE_ADDRESS", "127.0.0.1:50051", "the engine's gRPC address")
LOBBY_ADDRESS = Setting("PAIJU_LOBBY_ADDRESS", "127.0.0.1:50052", "the lobby's gRPC address")
SCORING_ADDRESS = Setting("PAIJU_SCORING_ADDRESS", "127.0.0.1:50053", "scoring's gRPC address")
METRICS_HOST = Setting(
    "PAIJU_METRICS_HOST",
    "",
    "where Prometheus `/metrics` listens when not on the gRPC address's host (e.g. `0.0.0.0` beside gRPC on "
    "`127.0.0.1`): by default a server on `127.0.0.1` does not publish its metrics to the network",
)


def rate_limits(raw: str) -> str:
    """Rate limit rules as a setting gives them (`paiju.platform.limits`), once they read, or ``off``."""
    from paiju.platform.limits import rules_text  # the limits library, only when the setting is given

    return rules_text(raw)


RATE_LIMITS = Setting(
    "PAIJU_RATE_LIMITS",
    "",
    "rate limits that change or add to the server's own (`method:key=N/period` or `N/open`, separated by `;`), or "
    "`off`: every limit off (see *Rate limits*)",
    parse=rate_limits,
)
TRUSTED_KEYS = Setting(
    "PAIJU_TRUSTED_KEYS", "", "the JWKS file of the token issuers' public keys this service trusts", required=True
)
SIGNING_KEY = Setting(
    "PAIJU_SIGNING_KEY_FILE",
    "",
    "the PEM file of the private key this process signs tokens with",
    required=True,
    deprecated=("PAIJU_SIGNING_KEY",),
)
"""The key of a process that signs (the lobby, a bot runner, ``paiju token``): a file, named ``_FILE`` as every file
holding a secret is (`paiju.platform.tokens`)."""
SIGNING_KEY_ID = Setting("PAIJU_SIGNING_KEY_ID", "", "that key's id, `<issuer>.<version>`", required=True)
LISTEN = "where the gRPC server listens"
"""The help of a server's own address."""


def metrics_port(name: str, default: int, *, deprecated: tuple[str, ...] = ()) -> Setting[int]:
    """A server's Prometheus port, ``PAIJU_<SERVICE>_METRICS_PORT``."""
    return Setting(name, default, "the port of Prometheus `/metrics` (0: none)", parse=port, deprecated=deprecated)


# Traces (`paiju.platform.tracing`): OpenTelemetry's standard variables, off unless an exporter or endpoint is set.

OTEL_SDK_DISABLED = Setting("OTEL_SDK_DISABLED", False, "`on`: no traces, whatever else is set")
OTEL_TRACES_EXPORTER = Setting(
    "OTEL_TRACES_EXPORTER",
    "",
    "where spans go: `otlp` (over OTLP/gRPC to `OTEL_EXPORTER_OTLP_ENDPOINT`) or `none`; unset: `otlp` when an "
    "endpoint is set, else none (see *Traces*)",
    parse=choice("otlp", "none"),
    shown_default="",
)
OTEL_EXPORTER_OTLP_ENDPOINT = Setting(
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "",
    "the OTLP/gRPC receiver of the spans (a collector), e.g. `http://otel-collector:4317` (`http://`: without TLS); "
    "setting it turns tracing on",
)
OTEL_SERVICE_NAME = Setting("OTEL_SERVICE_NAME", "paiju", "the service name the process's spans carry")
OTEL_TRACES_SAMPLER = Setting(
    "OTEL_TRACES_SAMPLER",
    "parentbased_always_on",
    "which traces are recorded: `always_on`, `always_off`, `traceidratio`, `parentbased_always_on`, "
    "`parentbased_always_off` or `parentbased_traceidratio` (parent based: as the caller decided)",
    parse=choice(
        "always_on",
        "always_off",
        "traceidratio",
        "parentbased_always_on",
        "parentbased_always_off",
        "parentbased_traceidratio",
    ),
)


def ratio(raw: str) -> float:
    """A number from 0 to 1."""
    value = number()(raw)
    if value > 1:
        raise ValueError("must be a number from 0 to 1")
    return value


OTEL_TRACES_SAMPLER_ARG = Setting(
    "OTEL_TRACES_SAMPLER_ARG", 1.0, "the share of traces a `traceidratio` sampler records (0 to 1)", parse=ratio
)
OTEL_BSP_SCHEDULE_DELAY = Setting(
    "OTEL_BSP_SCHEDULE_DELAY", 5000, "milliseconds between two exports of the spans ended meanwhile", parse=whole(1)
)


__all__ = [
    "BATCH_FORM",
    "DATABASE_URL",
    "ENGINE_ADDRESS",
    "EVENT_LOOP",
    "GAMES_PREFIX",
    "GAMES_STREAM",
    "LISTEN",
    "LOBBY_ADDRESS",
    "LOBBY_PREFIX",
    "LOBBY_STREAM",
    "LOG_LEVEL",
    "MESSAGE_FORM",
    "METRICS_HOST",
    "NATS_CA",
    "NATS_SEED",
    "NATS_URL",
    "OTEL_BSP_SCHEDULE_DELAY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_SDK_DISABLED",
    "OTEL_SERVICE_NAME",
    "OTEL_TRACES_EXPORTER",
    "OTEL_TRACES_SAMPLER",
    "OTEL_TRACES_SAMPLER_ARG",
    "RATE_LIMITS",
    "SCORING_ADDRESS",
    "SIGNING_KEY",
    "SIGNING_KEY_ID",
    "STORE_COMMAND_FORM",
    "STREAM_REPLICAS",
    "TOURNAMENTS_PREFIX",
    "TOURNAMENTS_STREAM",
    "TRUSTED_KEYS",
    "Deprecation",
    "Setting",
    "Settings",
    "SettingsError",
    "add_options",
    "batches",
    "choice",
    "command_form",
    "describe",
    "help_text",
    "metrics_port",
    "number",
    "port",
    "rate_limits",
    "ratio",
    "switch",
    "text",
    "whole",
    "without",
]
