"""The Makefile as a newcomer meets it: `make help` lists every target with what it does, and a set-up step prints
one line while its output goes to the set-up log, whose end is printed when the step fails (the Makefile's `STEP`)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from .markdown import REPOSITORY

MAKEFILE = REPOSITORY / "Makefile"


def _make(*arguments: str, cwd: Path = REPOSITORY) -> subprocess.CompletedProcess[str]:
    """``make -s ARGUMENTS`` as a person types it (not as a sub-make of `make test`, whose flags it would inherit)."""
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}}
    return subprocess.run(
        ["make", "--no-print-directory", "-s", *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _phony() -> set[str]:
    declared = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", MAKEFILE.read_text(), re.MULTILINE)
    assert declared is not None
    return set(declared.group(1).replace("\\\n", " ").split())


def test_make_help_lists_every_target_with_what_it_does() -> None:
    done = _make("help")
    assert done.returncode == 0, done.stderr
    listed = {}
    for line in done.stdout.splitlines():
        match = re.fullmatch(r"  make (\S+)\s+(\S.*)", line)
        assert match, f"not a target and its description: {line!r}"
        listed[match.group(1)] = match.group(2)
    assert set(listed) == _phony(), "make help lists the Makefile's targets (.PHONY), each once"
    assert all(len(description) > 10 for description in listed.values())


def _probe(tmp_path: Path, recipe: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run one target using `STEP`, defined in a makefile read after the project's, with the log in ``tmp_path``."""
    extra = tmp_path / "probe.mk"
    extra.write_text(f"probe:\n\t@$(STEP) {recipe}\n")
    log = tmp_path / "logs" / "setup.log"
    done = _make("-f", str(MAKEFILE), "-f", str(extra), f"SETUP_LOG={log}", "probe")
    return done, log


def test_a_set_up_step_prints_one_line_and_logs_its_output(tmp_path: Path) -> None:
    done, log = _probe(tmp_path, "\"installing the world\" sh -c 'echo the tool says a lot; echo and warns >&2'")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "  installing the world\n"
    assert done.stderr == ""
    assert "the tool says a lot" in log.read_text() and "and warns" in log.read_text()
    assert "installing the world" in log.read_text()


def test_a_failing_step_prints_the_end_of_the_log(tmp_path: Path) -> None:
    many = "; ".join(f"echo line {n}" for n in range(100))
    done, log = _probe(tmp_path, f"\"generating code\" sh -c '{many}; echo the cause >&2; exit 3'")
    assert done.returncode != 0
    assert done.stdout == "  generating code\n"
    assert f"generating code: failed (exit 3); the end of {log}:" in done.stderr
    assert "the cause" in done.stderr and "line 99" in done.stderr
    assert "line 0\n" not in done.stderr, "only the end of the log is printed"
    assert "line 0" in log.read_text()
