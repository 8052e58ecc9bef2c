"""The settings reader (`paiju.platform.settings`): typed values and their defaults, errors that name the variable,
deprecated names read with a warning (and refused when they disagree with the new), secrets read from files, options
and the settings' part of ``--help``."""

from __future__ import annotations

import argparse
from dataclasses import FrozenInstanceError, dataclass
from pathlib import Path
from typing import Any

import pytest

from paiju.platform import settings as s
from paiju.platform.settings import Setting, Settings, SettingsError

SECRET = "a-secret-of-more-than-thirty-two-bytes!"

TOKEN = Setting("PAIJU_TEST_TOKEN", "", "a test's secret", secret=True, deprecated=("PAIJU_OLD_TOKEN",))


@dataclass(frozen=True)
class Sample(Settings):
    """One setting of each kind."""

    address: str = Setting("PAIJU_TEST_ADDRESS", "127.0.0.1:1", "where it listens", option="--address").field()
    port: int = Setting("PAIJU_TEST_PORT", 9000, "a port", parse=s.port, deprecated=("PAIJU_PORT",)).field()
    seconds: float = Setting("PAIJU_TEST_SECONDS", 1.5, "how long").field()
    count: int = Setting("PAIJU_TEST_COUNT", 3, "how many").field()
    enabled: bool = Setting("PAIJU_TEST_ENABLED", True, "whether it does it").field()
    level: str = s.LOG_LEVEL.field()
    token: str = TOKEN.field()
    previous: str | None = Setting(
        "PAIJU_TEST_PREVIOUS", None, "the secret before", parse=s.text, secret=True, optional_file=True
    ).field()


@dataclass(frozen=True)
class Needs(Settings):
    database_url: str = s.DATABASE_URL.field()


def written(tmp_path: Path, name: str, content: str) -> str:
    path = tmp_path / name
    path.write_text(content)
    return str(path)


def test_defaults_when_nothing_is_set() -> None:
    settings = Sample.from_env({})
    assert settings == Sample()
    assert (settings.address, settings.port, settings.seconds, settings.count, settings.enabled) == (
        "127.0.0.1:1",
        9000,
        1.5,
        3,
        True,
    )
    assert (settings.level, settings.token, settings.previous, settings.deprecations) == ("info", "", None, ())


def test_values_are_read_into_their_types_and_the_object_is_frozen() -> None:
    settings = Sample.from_env(
        {
            "PAIJU_TEST_ADDRESS": "0.0.0.0:2",
            "PAIJU_TEST_PORT": "0",
            "PAIJU_TEST_SECONDS": "0.25",
            "PAIJU_TEST_COUNT": " 12 ",
            "PAIJU_TEST_ENABLED": "off",
            "PAIJU_LOG_LEVEL": "DEBUG",
        }
    )
    assert (settings.address, settings.port, settings.seconds, settings.count, settings.enabled, settings.level) == (
        "0.0.0.0:2",
        0,
        0.25,
        12,
        False,
        "debug",
    )
    with pytest.raises(FrozenInstanceError):
        settings.port = 1  # type: ignore[misc]
    assert Sample.from_env({"PAIJU_TEST_ENABLED": "yes"}).enabled is True


def test_an_empty_variable_is_unset() -> None:
    assert Sample.from_env({"PAIJU_TEST_PORT": "", "PAIJU_TEST_ADDRESS": ""}) == Sample()


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("PAIJU_TEST_PORT", "http", "PAIJU_TEST_PORT='http': not a whole number"),
        ("PAIJU_TEST_PORT", "70000", "PAIJU_TEST_PORT='70000': must be from 0 to 65535"),
        ("PAIJU_TEST_COUNT", "-1", "PAIJU_TEST_COUNT='-1': must be at least 0"),
        ("PAIJU_TEST_SECONDS", "soon", "PAIJU_TEST_SECONDS='soon': not a number"),
        ("PAIJU_TEST_SECONDS", "nan", "PAIJU_TEST_SECONDS='nan': must be a number of at least 0"),
        ("PAIJU_TEST_ENABLED", "maybe", "PAIJU_TEST_ENABLED='maybe': must be on or off"),
        ("PAIJU_LOG_LEVEL", "loud", "PAIJU_LOG_LEVEL='loud': must be one of debug, info, warning, error, critical"),
    ],
)
def test_a_value_that_does_not_read_is_refused_naming_the_variable(variable: str, value: str, problem: str) -> None:
    with pytest.raises(SettingsError) as refused:
        Sample.from_env({variable: value})
    assert str(refused.value) == problem
    assert isinstance(refused.value, SystemExit)  # the process stops with the message, no traceback


def test_a_required_setting_missing_is_refused_naming_the_variable_to_set() -> None:
    with pytest.raises(SettingsError, match=r"^DATABASE_URL_FILE must be set \(or, until the next release, "):
        Needs.from_env({})


def test_an_old_name_is_read_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    settings = Sample.from_env({"PAIJU_PORT": "9100"})
    assert settings.port == 9100
    (deprecation,) = settings.deprecations
    assert (deprecation.variable, deprecation.instead) == ("PAIJU_PORT", "PAIJU_TEST_PORT")
    assert "PAIJU_PORT is deprecated (renamed PAIJU_TEST_PORT)" in str(deprecation)
    logged: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def warning(self, event: str, **fields: Any) -> None:
            logged.append((event, fields))

    settings.report(Log())
    assert logged == [(str(deprecation), {"variable": "PAIJU_PORT", "instead": "PAIJU_TEST_PORT"})]


def test_an_old_and_a_new_name_that_agree_are_read_and_warned_of() -> None:
    settings = Sample.from_env({"PAIJU_PORT": "9100", "PAIJU_TEST_PORT": "9100"})
    assert settings.port == 9100
    assert [d.variable for d in settings.deprecations] == ["PAIJU_PORT"]


def test_an_old_and_a_new_name_that_disagree_are_refused() -> None:
    with pytest.raises(SettingsError) as refused:
        Sample.from_env({"PAIJU_PORT": "9100", "PAIJU_TEST_PORT": "9200"})
    assert str(refused.value) == (
        "PAIJU_TEST_PORT and PAIJU_PORT are both set, to different values: set PAIJU_TEST_PORT only"
    )


def test_a_secret_is_read_from_its_file_without_its_last_line_break(tmp_path: Path) -> None:
    settings = Sample.from_env({"PAIJU_TEST_TOKEN_FILE": written(tmp_path, "token", SECRET + "\n")})
    assert settings.token == SECRET
    assert settings.deprecations == ()
    assert SECRET not in repr(settings)  # a secret stays out of logs that print the settings


def test_a_secret_in_the_environment_is_read_with_a_warning() -> None:
    settings = Sample.from_env({"PAIJU_TEST_TOKEN": SECRET})
    assert settings.token == SECRET
    (deprecation,) = settings.deprecations
    assert (deprecation.variable, deprecation.instead) == ("PAIJU_TEST_TOKEN", "PAIJU_TEST_TOKEN_FILE")
    assert "put it in a file" in deprecation.why
    old = Sample.from_env({"PAIJU_OLD_TOKEN": SECRET})  # a renamed secret's old name, plain
    assert old.token == SECRET and [d.variable for d in old.deprecations] == ["PAIJU_OLD_TOKEN"]


def test_a_secret_in_its_file_and_in_the_environment_must_agree(tmp_path: Path) -> None:
    path = written(tmp_path, "token", SECRET)
    agreed = Sample.from_env({"PAIJU_TEST_TOKEN_FILE": path, "PAIJU_TEST_TOKEN": SECRET})
    assert agreed.token == SECRET and [d.variable for d in agreed.deprecations] == ["PAIJU_TEST_TOKEN"]
    with pytest.raises(SettingsError) as refused:
        Sample.from_env({"PAIJU_TEST_TOKEN_FILE": path, "PAIJU_TEST_TOKEN": "another-secret"})
    assert "PAIJU_TEST_TOKEN_FILE and PAIJU_TEST_TOKEN are both set, to different values" in str(refused.value)
    assert SECRET not in str(refused.value) and "another-secret" not in str(refused.value)


def test_a_secret_file_that_cannot_be_read_is_refused_naming_the_variable(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"^PAIJU_TEST_TOKEN_FILE: there is no file .*/missing$"):
        Sample.from_env({"PAIJU_TEST_TOKEN_FILE": str(tmp_path / "missing")})
    with pytest.raises(SettingsError, match=r"^PAIJU_TEST_TOKEN_FILE: cannot read "):
        Sample.from_env({"PAIJU_TEST_TOKEN_FILE": str(tmp_path)})  # a folder
    with pytest.raises(SettingsError, match=r"^PAIJU_TEST_TOKEN_FILE: the file .* is empty$"):
        Sample.from_env({"PAIJU_TEST_TOKEN_FILE": written(tmp_path, "empty", "\n")})


def test_an_optional_secret_file_that_is_not_there_is_unset(tmp_path: Path) -> None:
    """A Secret's optional key is mounted only when the Secret has it: its file's absence is no error."""
    assert Sample.from_env({"PAIJU_TEST_PREVIOUS_FILE": str(tmp_path / "previous")}).previous is None
    path = written(tmp_path, "previous", "older")
    assert Sample.from_env({"PAIJU_TEST_PREVIOUS_FILE": path}).previous == "older"


def test_an_option_wins_over_its_variable_and_is_named_when_it_does_not_read() -> None:
    parser = argparse.ArgumentParser()
    s.add_options(parser, Sample)
    given = Sample.from_env({"PAIJU_TEST_ADDRESS": "env:1"}, args=parser.parse_args(["--address", "option:2"]))
    assert given.address == "option:2"
    assert Sample.from_env({"PAIJU_TEST_ADDRESS": "env:1"}, args=parser.parse_args([])).address == "env:1"

    @dataclass(frozen=True)
    class Counted(Settings):
        count: int = Setting("PAIJU_TEST_COUNT", 3, "how many", option="--count").field()

    parser = argparse.ArgumentParser()
    s.add_options(parser, Counted)
    with pytest.raises(SettingsError, match=r"^--count='many': not a whole number$"):
        Counted.from_env({}, args=parser.parse_args(["--count", "many"]))


def test_the_help_lists_every_setting_with_its_default_and_old_names(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="sample", description="A sample command.")
    s.add_options(parser, Sample)
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    out = capsys.readouterr().out
    assert "--address ADDRESS PAIJU_TEST_ADDRESS (below)" in " ".join(out.split())
    lines = out[out.index(s.HELP_HEADING) :].splitlines()
    assert lines[1:3] == ["  PAIJU_TEST_ADDRESS / --address (default 127.0.0.1:1)", "      where it listens"]
    assert "  PAIJU_TEST_PORT (default 9000; formerly PAIJU_PORT)" in lines
    assert "  PAIJU_TEST_SECONDS (default 1.5)" in lines
    assert "  PAIJU_TEST_ENABLED (default on)" in lines
    assert "  PAIJU_TEST_TOKEN_FILE (a file holding the secret; formerly PAIJU_OLD_TOKEN)" in lines
    assert s.help_text(Needs).splitlines()[1] == "  DATABASE_URL_FILE (required; a file holding the secret)"


def test_rate_limits_are_checked_when_read() -> None:
    @dataclass(frozen=True)
    class Limited(Settings):
        limits: str = s.RATE_LIMITS.field()

    assert Limited.from_env({"PAIJU_RATE_LIMITS": "Act:account=5/second"}).limits == "Act:account=5/second"
    assert Limited.from_env({"PAIJU_RATE_LIMITS": "off"}).limits == "off"
    with pytest.raises(SettingsError, match=r"^PAIJU_RATE_LIMITS='Act=5': not a rate limit rule"):
        Limited.from_env({"PAIJU_RATE_LIMITS": "Act=5"})


@dataclass(frozen=True)
class Writer(Settings):
    form: str = s.STORE_COMMAND_FORM.field()


@pytest.mark.parametrize(
    ("given", "form", "batches"),
    [
        (None, "message", False),
        ("", "message", False),
        ("message", "message", False),
        ("batch", "batch", True),
        (" Batch ", "batch", True),
        ("MESSAGE", "message", False),
    ],
)
def test_the_command_form_reads_message_or_batch(given: str | None, form: str, batches: bool) -> None:
    """``message`` unless set (an empty variable is unset); ``batch`` makes the store write atomic batches."""
    env = {} if given is None else {"PAIJU_STORE_COMMAND_FORM": given}
    read = Writer.from_env(env).form
    assert (read, s.batches(read)) == (form, batches)


@pytest.mark.parametrize(
    "given", ["batches", "messages", "atomic", "on", "1", "message,batch", "batch\x00", "b" * 5000]
)
def test_any_other_command_form_is_refused_naming_the_variable_and_both_forms(given: str) -> None:
    with pytest.raises(SettingsError) as refused:
        Writer.from_env({"PAIJU_STORE_COMMAND_FORM": given})
    assert str(refused.value).startswith(f"PAIJU_STORE_COMMAND_FORM={given!r}: must be message (a command's events in")
    assert "or batch (an atomic batch, a message per event" in str(refused.value)


def test_without_drops_every_name_of_the_settings_a_process_sets_itself() -> None:
    env = {"PAIJU_PORT": "1", "PAIJU_TEST_PORT": "2", "PAIJU_TEST_TOKEN": "x", "PAIJU_TEST_TOKEN_FILE": "y"}
    port = next(setting for name, setting in Sample.declarations() if name == "port")
    assert s.without({**env, "PAIJU_OLD_TOKEN_FILE": "z", "KEEP": "me"}, port, TOKEN) == {"KEEP": "me"}
