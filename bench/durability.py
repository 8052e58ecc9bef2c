"""What JetStream's durability setting costs: appends per second with the server's default ``sync_interval`` (the
file store is flushed to disk every two minutes; an acknowledged event survives a process crash, and a machine's
crash only if another replica has it) and with ``sync_interval: always`` (every acknowledged event is on disk).

The engine's appends as players make them: ``WRITERS`` games at once, each appending one command (one event) at a
time at its position, through `JetStreamEventStore`. One JSON line per setting with its ratio to the default; the
medians of ``ROUNDS`` rounds measured in this one run.

Run: ``.venv/bin/python bench/durability.py [--writers N] [--appends N] [--rounds N]`` (a quick run: ``--writers 2
--appends 5 --rounds 1``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from paiju.dev.stack import embedded_nats
from paiju.platform.store import Position
from paiju.platform.store.jetstream import JetStreamEventStore

WRITERS = 32
APPENDS = 100
"""Appends per writer and round."""
ROUNDS = 3
SETTINGS = (None, "1s", "always")
"""The server's default, prod's choice (docs/operations.md, "Durability") and every write on disk."""
EVENT = b"x" * 300
"""About the size of a play event in its envelope."""


async def appends_per_second(url: str, writers: int = WRITERS, appends: int = APPENDS) -> float:
    stream = "D" + uuid.uuid4().hex[:10].upper()
    store = await JetStreamEventStore.connect(url, stream=stream, prefix=f"d.{stream.lower()}")
    try:

        async def writer(n: int) -> None:
            position = Position()
            for i in range(appends):
                recorded = await store.append(f"g{n}", position, f"c{i}", [EVENT])
                position = recorded[-1].position

        started = time.perf_counter()
        await asyncio.gather(*(writer(n) for n in range(writers)))
        return writers * appends / (time.perf_counter() - started)
    finally:
        await store.close()


def measure(sync: str | None, writers: int = WRITERS, appends: int = APPENDS, rounds: int = ROUNDS) -> float:
    settings = f"sync_interval: {sync}" if sync else ""
    with tempfile.TemporaryDirectory() as folder, embedded_nats(Path(folder), settings) as url:
        asyncio.run(appends_per_second(url, writers, appends))  # warm-up: stream creation, connections
        return statistics.median(asyncio.run(appends_per_second(url, writers, appends)) for _ in range(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=WRITERS, help="games appending at once")
    parser.add_argument("--appends", type=int, default=APPENDS, help="appends per writer and round")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    print(f"JetStream durability: {args.writers} games appending one event at a time, medians of {args.rounds} rounds")
    rates = {setting: measure(setting, args.writers, args.appends, args.rounds) for setting in SETTINGS}
    default = rates[None]
    for setting, rate in rates.items():
        print(
            json.dumps(
                {
                    "sync_interval": setting or "default (2m)",
                    "writers": args.writers,
                    "appends_per_s": round(rate),
                    "over_default": round(rate / default, 3),
                }
            )
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
