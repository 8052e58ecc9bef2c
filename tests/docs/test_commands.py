"""The commands of the documents parse, whether or not the snippet tests run them (test_snippets.py runs the others).

Every ``sh`` and ``python`` block of the README and docs/ (not api.md) is either run against a stack or marked just
before it as interactive, long-running or cluster (`markdown.MARKER`). Here, for every block and code span: each
`paiju` command parses with the `paiju` command's own parser (a synopsis such as ``paiju export [--game ID]...``
names a subcommand and options that exist), each `make` target exists, each kustomize directory a cluster block
applies renders with ``kubectl kustomize`` and each manifest it names exists, and a JSON block that states a
scenario passes the scenario checker."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .commands import PAIJU, make_commands, make_targets, paiju_commands, parse_problem, shell_commands
from .markdown import KINDS, REPOSITORY, Block, blocks, code_spans, name, prose_lines, readers_documents

RUN_LANGUAGES = ("sh", "python")
SHELLS = ("bash", "shell", "console", "zsh", "shell-session")
"""Other names of shell blocks: the documents write ``sh``, the language the snippet tests run."""


def _blocks() -> list[Block]:
    return [block for document in readers_documents() for block in blocks(document)]


def test_every_block_is_run_or_marked_as_what_it_is() -> None:
    wrong = []
    for block in _blocks():
        if block.marker is not None and block.marker not in KINDS:
            wrong.append(f"{block.where}: 'not run: {block.marker}' is none of {KINDS}")
        if block.marker is not None and block.language not in RUN_LANGUAGES:
            wrong.append(f"{block.where}: a marker before a {block.language or 'plain'} block, which is never run")
        if block.language in SHELLS:
            wrong.append(f"{block.where}: a {block.language} block: write shell commands as sh, which is run")
    assert wrong == []
    assert sum(block.marker is None and block.language in RUN_LANGUAGES for block in _blocks()) >= 15


def _inline_commands(document: Path) -> list[tuple[str, list[str]]]:
    """(where, arguments) of each code span of a document's prose that is a `paiju` command."""
    found = []
    for number, line in prose_lines(document):
        for span in code_spans(line):
            words = span.split()
            if len(words) > 1 and PAIJU.match(words[0]) and re.match(r"^[a-z]", words[1]):
                found.append((f"{name(document)}:{number}", words[1:]))
    return found


@pytest.mark.parametrize("document", readers_documents(), ids=name)
def test_the_paiju_commands_parse(document: Path) -> None:
    written = [(b.where, args) for b in blocks(document) if b.language == "sh" for args in paiju_commands(b)]
    wrong = [
        f"{where}: paiju {' '.join(args)}: {problem}" for where, args in written if (problem := parse_problem(args))
    ]
    wrong += [
        f"{where}: paiju {' '.join(args)}: {problem}"
        for where, args in _inline_commands(document)
        if (problem := parse_problem(args, mention=True))
    ]
    assert wrong == []


def test_the_documents_name_many_commands() -> None:
    inline = sum(len(_inline_commands(d)) for d in readers_documents())
    written = sum(1 for d in readers_documents() for b in blocks(d) if b.language == "sh" for _ in paiju_commands(b))
    assert inline >= 30 and written >= 20, (inline, written)


def test_a_command_that_does_not_parse_is_found() -> None:
    assert parse_problem(["replay", "GAME", "--at", "10"]) is None
    assert parse_problem(["replay", "GAME", "--at"]) is not None
    assert parse_problem(["bots", "--agnt", "my_agent:make"]) is not None
    assert (
        parse_problem(["export", "[--game", "ID]...", "[--formats", "jsonl|csv]"])
        == "paiju export has no option --formats"
    )


def test_the_make_targets_named_exist() -> None:
    named = [(block.where, command) for block in _blocks() for command in make_commands(block)]
    for document in readers_documents():
        for number, line in prose_lines(document):
            for span in code_spans(line):
                if span.startswith("make ") and re.fullmatch(r"make [a-z-]+(?: [A-Z]+=\S*)*", span):
                    named.append((f"{name(document)}:{number}", span.split()[1:]))
    assert len(named) >= 10
    unknown = [f"{where}: make {' '.join(args)}" for where, args in named if args and args[0] not in make_targets()]
    assert unknown == []


def test_the_scenarios_of_the_documents_check(tmp_path: Path) -> None:
    from paiju.scenario import check, load, run

    scenarios = [block for block in _blocks() if block.language == "json" and '"steps"' in block.text]
    assert scenarios, "cores.md states a scenario"
    for i, block in enumerate(scenarios):
        file = tmp_path / f"scenario-{i}.json"  # read as `paiju scenario FILE` reads it
        file.write_text(block.text)
        document = load(file)
        assert document == json.loads(block.text)
        assert check(document, run(document)) == [], block.where


def _kustomizations() -> dict[str, str]:
    """Each kustomize directory or manifest a cluster block names -> where."""
    found: dict[str, str] = {}
    for block in _blocks():
        if block.marker != "cluster":
            continue
        for command in shell_commands(block.text):
            if command[0] != "kubectl":
                continue
            for flag, value in itertools.pairwise(command):
                if flag in ("-k", "-f") and not value.startswith(("-", "/")) and "/" in value:
                    found.setdefault(f"{flag} {value}", block.where)
            if command[1:2] == ["kustomize"] and len(command) > 2:
                found.setdefault(f"-k {command[2]}", block.where)
    return found


@pytest.mark.integration  # kubectl, as make lint needs it
def test_the_manifests_the_cluster_blocks_apply_render() -> None:
    kustomizations = _kustomizations()
    assert any(key.startswith("-k ") for key in kustomizations)
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "the cluster blocks are checked with kubectl kustomize (make lint needs it too)"
    for key, where in kustomizations.items():
        flag, path = key.split(" ", 1)
        assert (REPOSITORY / path).exists(), f"{where}: {path} does not exist"
        if flag == "-k":
            done = subprocess.run(
                [kubectl, "kustomize", path], cwd=REPOSITORY, capture_output=True, text=True, check=False
            )
            assert done.returncode == 0 and "kind: Deployment" in done.stdout, f"{where}: {path}: {done.stderr}"
