"""The ``paiju`` command's table of commands (`paiju.cli.COMMANDS`) against what the commands' modules build:
every command a module registers is in the table with the same help line, and the table names no command its
module does not build. `paiju --help` lists the table without importing any command's module."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from paiju.cli import COMMANDS, parser_for


def _built_by(target: str) -> dict[str, str | None]:
    module, _, function = target.partition(":")
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    getattr(importlib.import_module(module), function)(sub)
    return {action.dest: action.help for action in sub._choices_actions}


@pytest.mark.parametrize("target", sorted({target for _, target in COMMANDS.values()}))
def test_the_table_says_what_each_module_builds(target: str) -> None:
    built = _built_by(target)
    listed = {name: text for name, (text, where) in COMMANDS.items() if where == target}
    assert built == listed


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_parses_its_own_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        parser_for(command).parse_args([command, "--help"])
    assert done.value.code == 0
    assert f"usage: paiju {command}" in capsys.readouterr().out


@pytest.mark.integration  # starts a fresh interpreter: the only way to see what `--help` imports
def test_help_imports_no_command_module() -> None:
    heavy = ["grpc", "nats", "paiju.terminal.client", "paiju.tools.analyst", "paiju.engine.config", "cryptography"]
    probe = (
        "import sys, contextlib, io\n"
        "from paiju.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def test_an_unknown_command_is_refused_with_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        parser_for(None).parse_args(["nonesuch"])
    assert done.value.code == 2
    assert "invalid choice: 'nonesuch'" in capsys.readouterr().err
