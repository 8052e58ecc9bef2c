"""`bench/matchmaking.py`: what the matchmaking queue costs the lobby per queued player (docs/rules/matchmaking.md).

In one process, no servers, for queues of `SIZES` waiting players (singles of 砸六家, casual, ratings spread
N(25, 5²) by a seeded generator, joined a second apart):

- **memory**: the queue's state (`paiju.lobby.queue.Queue`, as every lobby replica keeps it) per entry, by
  tracemalloc;
- **join**: the time to fold one more `QueueJoined` into the state (the state is immutable: a join copies the maps);
- **form**: one forming round (`paiju.lobby.queue.form`) over the queue at a wait where the windows are wide enough to
  seat everyone, and at none (nobody fits: the worst case, every entry looked at against every other); the lease
  holder runs a round per change of the queue, and once a second while entries wait;
- **a change**: what one change of the queue (a player joins) costs with every waiting player's `FindMatch` stream
  open. Now: one follower per replica compares the two states by identity and wakes only the touched players'
  streams (`paiju.lobby.matchmaking.touched`). Beside it, what waking every stream costs (each waits for the queue's
  next change through the lobby's aggregate repository over the in-memory event store and reads its entry): the way
  a stream would follow the queue on its own.

Medians of `REPEAT` runs, measured in one run; prints a JSON line, then a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
import tracemalloc

from paiju.lobby import queue as qu
from paiju.lobby.matchmaking import touched
from paiju.lobby.service import new_queue
from paiju.lobby.table import Mode
from paiju.platform.store import MemoryEventStore

SIZES = (100, 1000, 5000)
REPEAT = 5


def _queue(n: int, seed: int = 7) -> qu.Queue:
    rng = random.Random(seed)
    entries: dict[str, qu.Entry] = {}
    players: dict[str, str] = {}
    for i in range(n):
        player = qu.QueuedPlayer(f"account-{i:06d}", f"P{i}", round(100 * rng.gauss(25.0, 5.0)))
        entry = qu.Entry(f"entry-{i:06d}", "zlj", Mode.CASUAL, (player,), "", 0, i, False)
        entries[entry.entry_id] = entry
        players[player.player_id] = entry.entry_id
    return qu.Queue(entries, {}, players)


def memory_per_entry(n: int) -> float:
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    queue = _queue(n)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    size = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert queue.entries
    return size / n


def join_us(n: int) -> float:
    queue = _queue(n)
    player = qu.QueuedPlayer("account-new", "New", 2500)
    event = qu.QueueJoined("entry-new", Mode.CASUAL, (player,), "", 0, n, False, "zlj")
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        qu.evolve(queue, event)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def form_ms(n: int, wait: int) -> tuple[float, int]:
    queue = _queue(n)
    times, offers = [], 0
    for _ in range(REPEAT):
        start = time.perf_counter()
        offers = len(qu.form(queue, "zlj", Mode.CASUAL, now=n + wait))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, offers


def form_none_ms(n: int) -> float:
    """Nobody fits anybody: ratings 100 points apart (the worst case: every entry against every other)."""
    queue = _queue(n)
    entries = {
        k: qu.Entry(
            e.entry_id, e.game, e.mode, (qu.QueuedPlayer(e.players[0].player_id, "", 10_000 * i),), "", 0, 0, False
        )
        for i, (k, e) in enumerate(queue.entries.items())
    }
    far = qu.Queue(entries, {}, queue.players)
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        assert qu.form(far, "zlj", Mode.CASUAL, now=0) == []
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def touched_ms(n: int) -> float:
    """The follower's comparison of the states before and after one join (the median of `REPEAT`)."""
    queue = _queue(n)
    player = qu.QueuedPlayer("account-new", "New", 2500)
    after = qu.evolve(queue, qu.QueueJoined("entry-new", Mode.CASUAL, (player,), "", 0, n, False, "zlj"))
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        assert touched(queue, after) == {"account-new"}
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


async def wake_ms(n: int) -> float:
    """One change of the queue reaching ``n`` waiting streams (the median of `REPEAT` changes)."""
    queue = new_queue(MemoryEventStore())
    await queue.follow()
    loaded = await queue.load(qu.QUEUE)
    times = []
    for round_ in range(REPEAT):
        woke = 0
        done = asyncio.Event()

        async def stream(version: int, player: str, done: asyncio.Event = done) -> None:
            nonlocal woke
            moved = await queue.next_change(qu.QUEUE, version)
            moved.state.entry_of(player)  # what a stream reads of the change
            woke += 1
            if woke == n:
                done.set()

        tasks = [asyncio.create_task(stream(loaded.version, f"account-{i}")) for i in range(n)]
        await asyncio.sleep(0)
        player = qu.QueuedPlayer(f"account-r{round_}", "R", 2500)
        command = qu.Enqueue(f"entry-r{round_}", "zlj", Mode.CASUAL, (player,), "", 0, 0)
        start = time.perf_counter()
        loaded, _ = await queue.act(qu.QUEUE, command, f"bench-{round_}", "bench")
        await done.wait()
        times.append(time.perf_counter() - start)
        await asyncio.gather(*tasks)
    return statistics.median(times) * 1e3


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    rows = []
    for n in SIZES:
        memory = memory_per_entry(n)
        join = join_us(n)
        seated, offers = form_ms(n, wait=300)
        none = form_none_ms(n)
        wake = asyncio.run(wake_ms(n))
        change = touched_ms(n)
        rows.append(
            {
                "queued": n,
                "bytes_per_entry": round(memory),
                "join_us_median": round(join, 1),
                "form_ms_all_seated": round(seated, 2),
                "offers": offers,
                "form_ms_nobody_fits": round(none, 2),
                "form_us_per_entry_nobody_fits": round(1000 * none / n, 2),
                "change_ms_now": round(change, 3),
                "change_ms_waking_every_stream": round(wake, 2),
                "change_ratio": round(wake / change, 1),
            }
        )
    print(json.dumps({"bench": "matchmaking", "repeat": REPEAT, "rows": rows}))
    print()
    print(
        "| queued | bytes/entry | join µs | form ms (all seated) | offers | form ms (nobody fits) "
        "| a change, ms | waking every stream, ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['queued']} | {r['bytes_per_entry']} | {r['join_us_median']} | {r['form_ms_all_seated']} | "
            f"{r['offers']} | {r['form_ms_nobody_fits']} | {r['change_ms_now']} | "
            f"{r['change_ms_waking_every_stream']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
