"""A load run stopped with SIGTERM (a CI job's timeout, ``kill``, an operator's supervisor) stops its stack with it:
nats-server, PostgreSQL, the services, the bot runner, and its run's folder is removed, as when it ends by itself.
(Before, the run died at once and left its stack playing on, costing the machine every later measurement.)"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support.waiting import wait_until_blocking

pytestmark = pytest.mark.integration  # the load benchmark runs as a process and starts a whole stack

LOAD = Path(__file__).resolve().parents[2] / "bench" / "load.py"


def _processes() -> Iterator[tuple[int, int, str]]:
    """(pid, session id, command line and environment) of every process still running (not the zombies, gone but
    not reaped). The environment names the run's folder for the services, each in a session of its own."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            raw = (entry / "cmdline").read_bytes() + b" " + (entry / "environ").read_bytes()
        except OSError:
            continue
        command = raw.replace(b"\0", b" ").decode(errors="replace")
        fields = stat[stat.rindex(")") + 2 :].split()  # after the command's name, which may hold spaces
        if fields[0] != "Z":
            yield int(entry.name), int(fields[3]), command


def _left_over(session: int, folder: Path) -> list[str]:
    """The processes of the run still there: those of its session, and those that name its folder: PostgreSQL
    (which pg_ctl starts in a session of its own) and the services (each started in a session of its own)."""
    return [
        f"{pid} {command[:200]}"
        for pid, sid, command in _processes()
        if pid != session and (sid == session or str(folder) in command)
    ]


def _kill(session: int, folder: Path) -> None:
    for pid, sid, command in _processes():
        if sid == session or str(folder) in command:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_sigterm_stops_the_runs_stack_and_removes_its_folder() -> None:
    run = subprocess.Popen(
        [sys.executable, str(LOAD), "--tables", "1", "--spectators", "0", "--idle-watchers", "0", "--no-floor"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its session holds every process it starts, but PostgreSQL's
    )
    assert run.stderr is not None
    folder: Path | None = None
    try:
        said: list[str] = []
        for raw in run.stderr:
            line = raw.decode(errors="replace")
            said.append(line)
            up = re.search(r"stack up: .* logs (\S+)", line)
            if up:
                folder = Path(up.group(1)).parents[1]  # <run folder>/stack0/logs
                break
        assert folder is not None, "the load run never said its stack was up:\n" + "".join(said[-30:])
        assert folder.name.startswith("paiju-load-") and folder.exists(), folder
        assert _left_over(run.pid, folder), "the stack it says is up has no processes"
        time.sleep(5)  # its tables are playing: the stack is under load when it is stopped
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=120)
        stopped = folder  # PostgreSQL's last backends may leave just after its postmaster said it stopped
        wait_until_blocking(
            lambda: not _left_over(run.pid, stopped),
            "the run's processes to be gone",
            seconds=30,
            explain=lambda: "\n".join(_left_over(run.pid, stopped)),
        )
        assert not folder.exists(), f"the run's folder {folder} is left behind"
        assert run.returncode == 128 + signal.SIGTERM, run.returncode
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        if folder is not None:
            _kill(run.pid, folder)
        run.stderr.close()
