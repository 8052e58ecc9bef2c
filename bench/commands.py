"""`make bench`, the command line's start-up: the CPU a `paiju` command spends before it does anything.

`paiju --help` lists every command without importing any command's module (`paiju.cli.COMMANDS`); each command
imports only its own module. For `paiju --help` and each command's `--help` (its imports and its parser, nothing
else), the CPU time (user + system) of the child process, from ``getrusage(RUSAGE_CHILDREN)``, median of
``ROUNDS`` runs, against a bare ``python -c pass`` in the same run. Target: ``paiju --help``, ``paiju watch`` and
``paiju play`` ≤ 0.3 s of CPU. One JSON line per command, then a Markdown table.

Then `paiju watch TABLE` against the stack `make run` starts (its bots at full speed until the watched game has a
history of ``HISTORY`` events or ``PATIENCE`` seconds passed): the CPU (user + system, from ``/proc/PID/stat``) the
command has spent when it prints its first line, and when it has shown the table (its ``Watching;`` line), median
of ``ROUNDS`` watches of each table. Target: the first line ≤ 0.3 s of CPU. ``--no-stack`` leaves it out.

Run: ``.venv/bin/python bench/commands.py [--no-stack] [--rounds N] [--history EVENTS]`` (a quick run: ``--rounds 1
--history 0``, the watches as soon as the stack is up).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from paiju.cli import COMMANDS

ROUNDS = 5
TARGET_SECONDS = 0.3
GATED = ("", "watch", "play")
HISTORY = 1500
"""Events the watched games should have before the watches (a client's start costs more over a long history)."""
PATIENCE = 150.0
"""Seconds the bots play at most before the watches."""
SHOWN = "Watching; type t for the table"


def cpu_of(argv: list[str]) -> float:
    """The CPU seconds one run of ``argv`` took, user and system."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(argv: list[str], rounds: int = ROUNDS) -> float:
    return statistics.median(cpu_of(argv) for _ in range(rounds))


def main(rounds: int = ROUNDS) -> None:
    bare = median_cpu([sys.executable, "-c", "pass"], rounds)
    rows = []
    for command in ("", *COMMANDS):
        argv = [str(Path(sys.executable).parent / "paiju"), *([command] if command else []), "--help"]
        seconds = median_cpu(argv, rounds)
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
    print(f"\n| command | CPU s (median of {rounds}) | target |\n|---|---:|---|")
    print(f"| `python -c pass` | {bare:.3f} | |")
    for row in rows:
        target = f"≤ {TARGET_SECONDS}: {'PASS' if row['pass'] else 'FAIL'}" if row["gated"] else ""
        print(f"| `{row['command']}` | {row['cpu_s']:.3f} | {target} |")


def process_cpu(pid: int) -> float:
    """The CPU seconds (user + system) process ``pid`` has spent so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def watch_cpu(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """One ``paiju watch``: its CPU when it printed its first line, when it showed the table, and that first line."""
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True
    )
    assert process.stdout is not None and process.stdin is not None
    first: tuple[float, str] | None = None
    shown = float("nan")
    try:
        for line in process.stdout:
            if first is None and line.strip():
                first = (process_cpu(process.pid), line.strip())
            if SHOWN in line:
                shown = process_cpu(process.pid)
                break
        process.stdin.write("q\n")
        process.stdin.flush()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert first is not None, "paiju watch printed nothing"
    return first[0], shown, first[1]


def watches(rounds: int, events: int = HISTORY) -> list[dict[str, Any]]:
    """`paiju watch` of each of the stack's bot tables, ``rounds`` times each, once their games have a history of
    ``events`` events (or `PATIENCE` seconds passed)."""
    import grpc

    from paiju.dev.stack import run
    from paiju.platform.tokens import Identity, Issuer, Role
    from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_pb2, lobby_pb2_grpc

    for variable in ("NATS_URL", "DATABASE_URL", "DATABASE_URL_FILE", "PAIJU_STACK_PORTS"):
        os.environ.pop(variable, None)
    # not the checkout's .data: a stack of its own (run as root, PostgreSQL must be able to enter the folder)
    folder = Path(tempfile.mkdtemp(prefix="paiju-bench-commands-"))
    folder.chmod(0o755)
    rows: list[dict[str, Any]] = []

    def measure(started: dict[str, Any]) -> None:
        now = int(time.time())
        signer = started["credentials"].signer(Issuer.ADMIN)
        analyst = (("authorization", f"Bearer {signer.mint(Identity('bench', Role.ANALYST, expires=now + 900))}"),)
        admin = (("authorization", f"Bearer {signer.mint(Identity('bench', Role.ADMIN, expires=now + 900))}"),)

        async def histories() -> dict[str, int]:
            found = {}
            async with grpc.aio.insecure_channel(started["lobby"]) as lobby_channel:
                lobby: Any = lobby_pb2_grpc.LobbyServiceStub(lobby_channel)
                async with grpc.aio.insecure_channel(started["engine"]) as channel:
                    engine: Any = engine_pb2_grpc.EngineServiceStub(channel)
                    for kind, table in started["tables"].items():
                        game = (await lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table), metadata=admin)).table
                        view = await engine.GetView(engine_pb2.GetViewRequest(game_id=game.game_id), metadata=analyst)
                        found[kind] = int(view.version)
            return found

        deadline = time.monotonic() + PATIENCE
        history = asyncio.run(histories())
        while min(history.values()) < events and time.monotonic() < deadline:
            time.sleep(2)
            history = asyncio.run(histories())
        paiju = str(Path(sys.executable).parent / "paiju")
        here = ["--lobby", started["lobby"], "--engine", started["engine"]]
        env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
        for kind, table in started["tables"].items():
            measured = [watch_cpu([paiju, "watch", table, *here], env) for _ in range(rounds)]
            first = statistics.median(m[0] for m in measured)
            shown = statistics.median(m[1] for m in measured)
            row = {
                "bench": "commands",
                "command": f"paiju watch TABLE ({kind}), to its first line",
                "history_events": history[kind],
                "cpu_s": round(first, 3),
                "shown_cpu_s": round(shown, 3),
                "first_line": measured[0][2],
                "gated": True,
                "pass": first <= TARGET_SECONDS,
            }
            rows.append(row)
            print(json.dumps(row, ensure_ascii=False), flush=True)

    try:
        run(io.StringIO(), data=folder / ".data", think=0.0, until=measure)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-stack", action="store_true", help="the commands' --help only, not paiju watch")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="runs of each command (the median is reported)")
    parser.add_argument("--history", type=int, default=HISTORY, help="events the watched games have first")
    args = parser.parse_args()
    main(args.rounds)
    if not args.no_stack:
        found = watches(args.rounds, args.history)
        print("\n| command | events before | CPU s to the first line | CPU s to the table | target |")
        print("|---|---:|---:|---:|---|")
        for row in found:
            verdict = f"≤ {TARGET_SECONDS}: {'PASS' if row['pass'] else 'FAIL'}"
            print(
                f"| `{row['command']}` | {row['history_events']} | {row['cpu_s']:.3f} | {row['shown_cpu_s']:.3f} | "
                f"{verdict} |"
            )
