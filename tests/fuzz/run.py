"""One fuzz run, start to end, for the test and for ``bench/fuzz.py``: the stack up, the world made, the requests sent
and checked, then the proof that the stack still works — every process alive, every service SERVING on gRPC health
under its own name, a new table of bots starting and playing."""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import grpc

from . import world
from .fuzzer import Fuzzer, Report
from .stack import BOT_MOVES, Stack, healths, new_bot_table_plays, running_stack, wait_for_bots

CONCURRENCY = 16
BOT_MOVES_BEFORE = 2
"""The bots' games move this much before the fuzz begins (there is live state to probe)."""


@dataclass
class Outcome:
    report: Report
    health: dict[str, str] = field(default_factory=dict)
    processes: list[str] = field(default_factory=list)
    new_game: tuple[str, int, int] = ("", -1, -1)
    """A new table of bots' game after the fuzz: its id, its version once started, the version the bots took it to."""
    log_errors: dict[str, list[str]] = field(default_factory=dict)
    """The services' (engine, lobby, scoring) error lines."""
    bot_errors: list[str] = field(default_factory=list)
    """The bot runner's: a bot whose seat the fuzzer gave away (AssignSeats) says so, which is no failure."""
    setup_seconds: float = 0.0
    bots_before: dict[str, int] = field(default_factory=dict)
    """How far the bot tables' games moved while the fuzzer waited for them before it began."""

    def failures(self) -> list[str]:
        found = list(self.report.problems)
        found += [f"process: {p}" for p in self.processes]
        found += [f"{name} is {status}, not SERVING" for name, status in self.health.items() if status != "SERVING"]
        if min(self.bots_before.values(), default=0) < BOT_MOVES_BEFORE:
            found.append(f"the bots were not playing before the fuzz: {self.bots_before}")
        game, first, version = self.new_game
        if first < 1 or version < first + BOT_MOVES:
            found.append(f"a new table of bots did not play: its game {game!r} went from version {first} to {version}")
        for name, lines in self.log_errors.items():
            found += [f"{name} logged an error: {line[:2000]}" for line in lines]
        return found

    def grouped(self, examples: int = 2) -> str:
        """The failures by kind (their first line, numbers left out), with the count and the first examples of each."""
        kinds: dict[str, list[str]] = {}
        for failure in self.failures():
            kinds.setdefault(kind_of(failure), []).append(failure)
        parts = []
        for kind, found in sorted(kinds.items(), key=lambda item: -len(item[1])):
            parts.append(f"{len(found)} x {kind}")
            parts += ["  " + failure.replace("\n", "\n  ") for failure in found[:examples]]
        return "\n".join(parts)

    def line(self) -> str:
        """The counts, as one JSON line."""
        summary: dict[str, Any] = self.report.summary()
        summary.update(
            setup_seconds=round(self.setup_seconds, 1),
            health=self.health,
            new_game_versions=self.new_game[1:],
            bot_runner_errors=len(self.bot_errors),
            failures=len(self.failures()),
        )
        return json.dumps(summary, ensure_ascii=False)


def kind_of(failure: str) -> str:
    """A failure's kind: its first line without numbers, or for a log line its event, method and exception."""
    first = failure.partition("\n")[0]
    logged = re.match(r"(\w+) logged an error: (\{.*)", first)
    if logged:
        try:
            entry = json.loads(logged.group(2))
        except ValueError:
            entry = {}
        error = str(entry.get("exc_info") or entry.get("error") or "")
        return f"{logged.group(1)} logged {entry.get('event')!r} in {entry.get('method')}: {error.partition('(')[0]}"
    return re.sub(r"\d+", "N", first)


def fuzz(seed: int, count: int, *, concurrency: int = CONCURRENCY, progress: bool = False) -> Outcome:
    started = time.monotonic()
    with running_stack() as stack:
        return fuzz_stack(stack, seed, count, concurrency=concurrency, progress=progress, started=started)


def fuzz_stack(stack: Stack, seed: int, count: int, *, concurrency: int, progress: bool, started: float) -> Outcome:
    known = asyncio.run(world.build(stack))
    played = wait_for_bots(stack, [f"{table}-m1" for table in stack.tables.values()], moves=BOT_MOVES_BEFORE)
    setup = time.monotonic() - started
    fuzzer = Fuzzer(stack.addresses, stack.nats_url, known, seed, count, concurrency=concurrency, progress=progress)
    report = asyncio.run(fuzzer.run())
    outcome = Outcome(report, setup_seconds=setup, bots_before=played)
    outcome.processes = stack.alive()
    outcome.health = asyncio.run(healths(stack))
    try:
        outcome.new_game = asyncio.run(new_bot_table_plays(stack))
    except grpc.aio.AioRpcError as e:
        outcome.new_game = (f"(none: the lobby answered {e.code().name} {e.details()!r})", -1, -1)
    outcome.processes += stack.alive()
    outcome.log_errors = stack.log_errors()
    outcome.bot_errors = stack.log_errors(("bots",)).get("bots", [])
    return outcome
