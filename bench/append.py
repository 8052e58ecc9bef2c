"""What appending a command of N events costs, stored as one message or as an atomic batch of a message per event.

An embedded nats-server (JetStream, file storage, one replica, as a stack's streams are) and this process's
`JetStreamEventStore`: for N in 1, 2, 4 and 8, commands of N events (envelope-sized, 300 bytes) are appended one after
another, each awaited, to 16 aggregates of a stream of their own — once in the stored form of today (one message
per command, `paiju.platform.store.messages`) and once as streams were written before it (``batches=True``: an
atomic batch, a message per event with ``Nats-Batch-Id``, ``Nats-Batch-Sequence`` and ``Nats-Batch-Commit``). For
each: the nats-server's CPU per command (its threads' ``schedstat``), this process's CPU per command (the client:
headers, the publishes, the acknowledgements) and the wall time per command, each the median of `ROUNDS` rounds of
`COMMANDS` commands after a warm-up; and the ratio of the batch to the one message.

One JSON line, then a Markdown table. ``--commands`` and ``--rounds`` change the counts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from paiju.dev.stack import embedded_nats
from paiju.platform.store import Position
from paiju.platform.store.jetstream import JetStreamEventStore

if TYPE_CHECKING:  # mypy reads bench/ as a package; `python bench/append.py` has bench/ itself on its path
    from bench.floor import nats_server_pid
else:
    from floor import nats_server_pid

SIZES = (1, 2, 4, 8)
"""Events per command measured."""
COMMANDS = 200
"""Commands appended per round."""
ROUNDS = 3
AGGREGATES = 16
EVENT_BYTES = 300
"""About an engine's envelope of one move."""


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def threads_cpu(pid: int) -> float:
    """CPU seconds the live threads of ``pid`` used so far (``/proc/<pid>/task/*/schedstat``, nanoseconds)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
    return total / 1e9


async def rounds(url: str, pid: int, size: int, *, batches: bool, commands: int, count: int) -> dict[str, float]:
    """Server CPU, client CPU and wall µs per command of ``size`` events (medians of ``count`` rounds)."""
    stream = "APPEND" + uuid.uuid4().hex[:8].upper()
    store = await JetStreamEventStore.connect(url, stream=stream, prefix=f"append.{stream.lower()}", batches=batches)
    positions = {f"g{i}": Position() for i in range(AGGREGATES)}
    payload = [bytes([65 + i]) * EVENT_BYTES for i in range(size)]
    sent = 0

    async def run(n: int) -> None:
        nonlocal sent
        for _ in range(n):
            aggregate = f"g{sent % AGGREGATES}"
            stored = await store.append(aggregate, positions[aggregate], uuid.uuid4().hex, payload)
            positions[aggregate] = stored[-1].position
            sent += 1

    measured: list[tuple[float, float, float]] = []
    try:
        await run(max(20, commands // 10))  # warm-up: the stream's files, the connection
        for _ in range(count):
            server, client, wall = threads_cpu(pid), own_cpu(), time.perf_counter()
            await run(commands)
            measured.append(
                (
                    (threads_cpu(pid) - server) / commands * 1e6,
                    (own_cpu() - client) / commands * 1e6,
                    (time.perf_counter() - wall) / commands * 1e6,
                )
            )
    finally:
        await store.close()
    return {
        "server_us": round(statistics.median(m[0] for m in measured), 1),
        "client_us": round(statistics.median(m[1] for m in measured), 1),
        "wall_us": round(statistics.median(m[2] for m in measured), 1),
    }


async def measure(commands: int, count: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="paiju-append-") as folder, embedded_nats(Path(folder)) as url:
        pid = nats_server_pid(Path(folder))
        rows = []
        for size in SIZES:
            one = await rounds(url, pid, size, batches=False, commands=commands, count=count)
            batch = await rounds(url, pid, size, batches=True, commands=commands, count=count) if size > 1 else one
            rows.append(
                {
                    "events": size,
                    "one_message": one,
                    "atomic_batch": batch,
                    "server_batch_over_one": round(batch["server_us"] / one["server_us"], 2),
                    "client_batch_over_one": round(batch["client_us"] / one["client_us"], 2),
                }
            )
    return {"bench": "append", "commands_per_round": commands, "rounds": count, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=COMMANDS, help=f"commands per round ({COMMANDS})")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"rounds, medians reported ({ROUNDS})")
    args = parser.parse_args()
    result = asyncio.run(measure(args.commands, args.rounds))
    print(json.dumps(result), flush=True)
    print()
    print(
        "| events per command | server µs: one message | atomic batch | × | client µs: one message | atomic batch | × |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in result["rows"]:  # type: ignore[attr-defined]
        one, batch = row["one_message"], row["atomic_batch"]
        print(
            f"| {row['events']} | {one['server_us']} | {batch['server_us']} | {row['server_batch_over_one']} | "
            f"{one['client_us']} | {batch['client_us']} | {row['client_batch_over_one']} |"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
