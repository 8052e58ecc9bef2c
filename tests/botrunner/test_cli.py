"""``paiju bots`` on the command line: `add_parser` registers the subcommand with `run`, and each setting comes
from its option, else its environment variable (or the name it had before, with a warning), else the default."""

from __future__ import annotations

import argparse

import pytest

from paiju.botrunner import cli

KEY = {"PAIJU_SIGNING_KEY_FILE": "/keys/bots.pem", "PAIJU_SIGNING_KEY_ID": "bots.1"}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="paiju")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.add_parser(sub)
    return parser.parse_args(argv)


def test_add_parser_registers_bots_with_run() -> None:
    args = parse(["bots", "--lobby", "lobby:1", "--engine", "engine:2", "--runner-id", "r", "--think", "0"])
    assert args.command == "bots" and args.func is cli.run
    settings = cli.Settings.resolve(args, env=KEY)
    assert (settings.lobby, settings.engine, settings.runner_id, settings.think) == ("lobby:1", "engine:2", "r", 0.0)


def test_options_then_environment_then_defaults() -> None:
    env = {
        **KEY,
        "PAIJU_LOBBY_ADDRESS": "lobby:9",
        "PAIJU_ENGINE_ADDRESS": "engine:9",
        "PAIJU_BOT_RUNNER_ID": "from-env",
        "PAIJU_BOT_THINK_SECONDS": "1.5",
        "PAIJU_BOT_MAX_SEATS": "12",
        "PAIJU_BOT_RENEW_SECONDS": "4",
        "PAIJU_LOG_LEVEL": "debug",
    }
    from_env = cli.Settings.resolve(parse(["bots"]), env=env)
    assert from_env == cli.Settings(
        "lobby:9", "engine:9", "from-env", 1.5, 12, 4.0, "debug", signing_key="/keys/bots.pem", signing_key_id="bots.1"
    )
    overridden = cli.Settings.resolve(parse(["bots", "--think", "0.1", "--max-seats", "3"]), env=env)
    assert (overridden.think, overridden.max_seats, overridden.lobby) == (0.1, 3, "lobby:9")
    defaults = cli.Settings.resolve(parse(["bots"]), env=KEY)
    assert (defaults.lobby, defaults.engine, defaults.think, defaults.max_seats, defaults.renew) == (
        "127.0.0.1:50052",
        "127.0.0.1:50051",
        0.3,
        0,
        10.0,
    )
    assert defaults.runner_id.startswith("bots-")


def test_the_runner_id_read_under_its_old_name_with_a_warning() -> None:
    settings = cli.Settings.resolve(parse(["bots"]), env={**KEY, "PAIJU_RUNNER_ID": "old-name"})
    assert settings.runner_id == "old-name"
    assert [(d.variable, d.instead) for d in settings.deprecations] == [("PAIJU_RUNNER_ID", "PAIJU_BOT_RUNNER_ID")]


def test_the_settings_are_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["bots", "--help"])
    out = capsys.readouterr().out
    for variable in (
        "PAIJU_BOT_RUNNER_ID / --runner-id",
        "PAIJU_BOT_THINK_SECONDS / --think",
        "PAIJU_SIGNING_KEY_FILE",
    ):
        assert variable in out
    assert "formerly PAIJU_RUNNER_ID" in out
