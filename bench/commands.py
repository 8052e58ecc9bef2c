"""`make bench`, the command line's start-up: the CPU a `paiju` command spends before it does anything.

`paiju --help` lists every command without importing any command's module (`paiju.cli.COMMANDS`); each command
imports only its own module. For `paiju --help` and each command's `--help` (its imports and its parser, nothing
else), the CPU time (user + system) of the child process, from ``getrusage(RUSAGE_CHILDREN)``, median of
``ROUNDS`` runs, against a bare ``python -c pass`` in the same run. Target: ``paiju --help``, ``paiju watch`` and
``paiju play`` ≤ 0.3 s of CPU. One JSON line per command, then a Markdown table.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path

from paiju.cli import COMMANDS

ROUNDS = 5
TARGET_SECONDS = 0.3
GATED = ("", "watch", "play")


def cpu_of(argv: list[str]) -> float:
    """The CPU seconds one run of ``argv`` took, user and system."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(argv: list[str]) -> float:
    return statistics.median(cpu_of(argv) for _ in range(ROUNDS))


def main() -> None:
    bare = median_cpu([sys.executable, "-c", "pass"])
    rows = []
    for command in ("", *COMMANDS):
        argv = [str(Path(sys.executable).parent / "paiju"), *([command] if command else []), "--help"]
        seconds = median_cpu(argv)
        row = {
            "bench": "commands",
            "command": f"paiju {command} --help".replace("  ", " "),
            "cpu_s": round(seconds, 3),
            "bare_python_s": round(bare, 3),
            "gated": command in GATED,
            "pass": seconds <= TARGET_SECONDS if command in GATED else None,
        }
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
    print(f"\n| command | CPU s (median of {ROUNDS}) | target |\n|---|---:|---|")
    print(f"| `python -c pass` | {bare:.3f} | |")
    for row in rows:
        target = f"≤ {TARGET_SECONDS}: {'PASS' if row['pass'] else 'FAIL'}" if row["gated"] else ""
        print(f"| `{row['command']}` | {row['cpu_s']:.3f} | {target} |")


if __name__ == "__main__":
    main()
