"""`bench/web.py` reads the CPU of its own stack's web view and engine: a test running another stack beside it (the
suite runs in parallel) must not be taken for it. Once, the benchmark took the newest ``paiju.cli engine`` on the
machine, another test's, which ended during the window: its ``/proc`` entry was gone and the benchmark failed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support.bench import bench_module
from ..support.waiting import wait_until_blocking

pytestmark = pytest.mark.integration  # starts processes

web = bench_module("web.py", "bench_web_processes")

SLEEP = "import time; time.sleep(60)"
STACK = (
    "import subprocess, sys, time\n"
    f"subprocess.Popen([sys.executable, '-c', {SLEEP!r}, 'paiju.cli', 'engine'])\n"
    "print('started', flush=True)\n"
    "time.sleep(60)\n"
)


def engine_argv(pid: int, stack: int) -> bytes:
    """The command line of ``pid``'s engine: its own for the other engine, its child's for the stack."""
    if pid == stack:
        children = Path(f"/proc/{stack}/task/{stack}/children").read_text().split()
        if not children:
            return b""
        pid = int(children[0])
    return Path(f"/proc/{pid}/cmdline").read_bytes()


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        os.killpg(process.pid, signal.SIGKILL)  # each in a session of its own: the stack's engine with it
        process.wait()


def test_the_engine_read_is_the_one_its_stack_started_not_a_newer_one_elsewhere(
    processes: list[subprocess.Popen[bytes]],
) -> None:
    stack = subprocess.Popen([sys.executable, "-c", STACK], stdout=subprocess.PIPE, start_new_session=True)
    processes.append(stack)
    assert stack.stdout is not None
    assert stack.stdout.readline() == b"started\n"
    # started later, so with the higher pid here: the newest engine on the machine, but not the stack's
    other = subprocess.Popen([sys.executable, "-c", SLEEP, "paiju.cli", "engine"], start_new_session=True)
    processes.append(other)

    def started() -> bool:  # both engines' commands are theirs (after their exec)
        return all(b"paiju.cli" in engine_argv(process.pid, stack.pid) for process in processes)

    wait_until_blocking(started, "the engines started")

    found = web.process_of("engine", stack.pid)

    assert found != other.pid
    assert found != stack.pid
    assert int(Path(f"/proc/{found}/stat").read_text().rsplit(")", 1)[1].split()[1]) == stack.pid  # the stack's own
    with pytest.raises(RuntimeError, match="no paiju web process"):
        web.process_of("web", stack.pid)
