"""The commands the documents write, as the tests of tests/docs read them: the `paiju` commands of their shell
blocks and code spans, checked to parse with the `paiju` command's own argument parser, and the `make` targets they
name."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from collections.abc import Iterator
from functools import cache

from .markdown import REPOSITORY, Block

PAIJU = re.compile(r"^(?:\.venv/bin/)?paiju$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SYNOPSIS = re.compile(r"[\[\]|…]|\.\.\.")
"""A command written as a synopsis (``[--at VERSION]``, ``jsonl|csv``, ``--game ID...``), not as one to run."""


class _Captured(Exception):
    """The parser `paiju.cli.main` built, caught before it parses anything."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


@cache
def paiju_parser() -> argparse.ArgumentParser:
    """The `paiju` command's argument parser with every command built (`paiju.cli.complete_parser`)."""
    from paiju import cli

    return cli.complete_parser()


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def parse_problem(arguments: list[str], *, mention: bool = False) -> str | None:
    """Why ``paiju ARGUMENTS`` does not parse (``None``: it does). A synopsis (``[--at VERSION]``) or a ``mention``
    in prose (``paiju replay``, ``--processes N``) is checked for its subcommands and that each option it names
    exists."""
    parser = paiju_parser()
    words = list(arguments)
    if mention or any(SYNOPSIS.search(word) for word in words):
        if words and _subparsers(parser) and words[0] not in _subparsers(parser):
            return f"paiju has no subcommand {words[0]}"
        while words and words[0] in _subparsers(parser):
            parser = _subparsers(parser)[words.pop(0)]
        options = {option for action in parser._actions for option in action.option_strings}
        named = set(re.findall(r"--[a-z][a-z-]*", " ".join(words)))
        unknown = sorted(named - options)
        return f"{parser.prog} has no option {', '.join(unknown)}" if unknown else None
    error = io.StringIO()
    try:
        with contextlib.redirect_stderr(error), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(words)
    except SystemExit as exit:
        if exit.code not in (0, None):
            return error.getvalue().strip().splitlines()[-1]
    return None


def shell_commands(text: str) -> Iterator[list[str]]:
    """The simple commands of a shell text, as words: lines joined at ``\\``, split at ``&&``, ``;`` and ``|``,
    without comments, leading variable assignments or a trailing ``&``; a command substitution ``$(…)`` is a command
    too."""
    joined = re.sub(r"\\\n\s*", " ", text)
    for written in joined.splitlines():
        for inner in re.findall(r"\$\(([^()]*)\)", written):
            yield from shell_commands(inner)
        line = re.sub(r"\$\([^()]*\)", "VALUE", written)
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        command: list[str] = []
        target = False
        for word in [*words, ";"]:
            if target:  # the file of a redirection
                target = False
            elif word in {"&&", "||", ";", "|", "&"} or word.endswith(";"):
                if word.endswith(";") and word != ";":
                    command.append(word[:-1])
                while command and ASSIGNMENT.match(command[0]):
                    command.pop(0)
                if command:
                    yield command
                command = []
            elif re.fullmatch(r"\d*>>?", word):
                target = True
            elif not re.match(r"\d*>", word):
                command.append(word)


def paiju_commands(block: Block) -> Iterator[list[str]]:
    """The arguments of each `paiju` command of a shell block."""
    for command in shell_commands(block.text):
        if PAIJU.match(command[0]):
            yield command[1:]


@cache
def make_targets() -> frozenset[str]:
    """The targets the Makefile defines."""
    text = (REPOSITORY / "Makefile").read_text()
    return frozenset(re.findall(r"^([a-z][a-z-]*)\s*:(?!=)", text, re.MULTILINE))


def make_commands(block: Block) -> Iterator[list[str]]:
    """The arguments of each `make` command of a shell block."""
    for command in shell_commands(block.text):
        if command[0] == "make":
            yield command[1:]
