"""`bench/queue_history.py`: what a starting lobby pays to read the matchmaking queue after many matchmaking
commands, with the queue's history in one aggregate (as before generations) and in generations
(`paiju.lobby.generations`, docs/operations.md "The matchmaking queue's history").

In one process, no servers (the in-memory event store): `--commands` matchmaking commands (a player joins; once
`WAITING` wait, the longest waiting leaves: the queue stays about that long, as a busy queue does), written once
through a lobby that never rolls the queue over, and once through one that rolls it over every `--generation`
events. Then, for each, a new lobby reads the queue as it starts:

- **load**: the time to read it (the median of `--repeat` starts), and the events it read;
- **memory**: what the lobby holds after (tracemalloc: the queue's state and the command ids the repository keeps
  for exact retries).

Prints a JSON line per form, then one with the ratios (one aggregate over generations), then a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import tracemalloc
from collections import Counter
from typing import Any

from paiju.lobby import queue as qu
from paiju.lobby.generations import Generations
from paiju.lobby.service import new_queue
from paiju.lobby.table import Mode
from paiju.platform.store import MemoryEventStore
from paiju.platform.store.base import NEW, Position

WAITING = 200
"""How many entries wait at a time while the commands are written."""
NEVER = 1 << 62
"""A generation size never reached: the queue as one aggregate."""


async def write(store: MemoryEventStore, commands: int, generation: int) -> None:
    """``commands`` matchmaking commands through a lobby whose generations hold ``generation`` events."""
    history = Generations(new_queue(store), events=generation)
    await history.queue.follow()
    waiting: list[str] = []
    written = 0
    while written < commands:
        if len(waiting) >= WAITING:
            player = waiting.pop(0)
            await history.act(qu.Withdraw(player), f"withdraw-{player}", player)
        else:
            player = f"account-{written:07d}"
            queued = (qu.QueuedPlayer(player, "P", 2500),)
            await history.act(
                qu.Enqueue(f"entry-{written:07d}", "zlj", Mode.CASUAL, queued, "", 0, written), player, player
            )
            waiting.append(player)
        written += 1


class Counting:
    """The store as a starting lobby reads it, counting the events read."""

    def __init__(self, store: MemoryEventStore) -> None:
        self.store = store
        self.read: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def load(self, aggregate: str, after: Position = NEW) -> list[Any]:
        events = await self.store.load(aggregate, after)
        self.read[aggregate] += len(events)
        return events


async def start(store: MemoryEventStore) -> tuple[float, int, int]:
    """A new lobby reads the queue: seconds, events read, entries waiting."""
    counting = Counting(store)
    history = Generations(new_queue(counting))
    began = time.perf_counter()
    loaded = await history.load()
    return time.perf_counter() - began, sum(counting.read.values()), len(loaded.state.entries)


async def held(store: MemoryEventStore) -> int:
    """The bytes a new lobby holds after reading the queue."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    history = Generations(new_queue(store))
    loaded = await history.load()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert loaded.state.entries
    return after - before


async def measure(commands: int, generation: int, repeat: int) -> dict[str, Any]:
    store = MemoryEventStore()
    began = time.perf_counter()
    await write(store, commands, generation)
    writing = time.perf_counter() - began
    starts = [await start(store) for _ in range(repeat)]
    return {
        "bench": "queue_history",
        "form": "one aggregate" if generation == NEVER else f"generations of {generation}",
        "commands": commands,
        "write_s": round(writing, 2),
        "load_ms_median": round(statistics.median(s[0] for s in starts) * 1e3, 2),
        "events_read": starts[0][1],
        "entries": starts[0][2],
        "memory_bytes": await held(store),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=50_000, help="matchmaking commands written")
    parser.add_argument("--generation", type=int, default=10_000, help="events per generation (the default setting)")
    parser.add_argument("--repeat", type=int, default=5, help="starts measured per form (the median is shown)")
    args = parser.parse_args()
    rows = [asyncio.run(measure(args.commands, g, args.repeat)) for g in (NEVER, args.generation)]
    for row in rows:
        print(json.dumps(row))
    before, after = rows
    print(
        json.dumps(
            {
                "bench": "queue_history",
                "commands": args.commands,
                "load_ratio": round(before["load_ms_median"] / max(after["load_ms_median"], 1e-3), 1),
                "memory_ratio": round(before["memory_bytes"] / max(after["memory_bytes"], 1), 1),
                "events_read_ratio": round(before["events_read"] / max(after["events_read"], 1), 1),
            }
        )
    )
    print()
    print("| form | commands | load ms (median) | events read | entries | memory KiB |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['form']} | {r['commands']} | {r['load_ms_median']} | {r['events_read']} | {r['entries']} | "
            f"{r['memory_bytes'] // 1024} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
