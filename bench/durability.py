"""What JetStream's durability setting costs: appends per second with the server's default ``sync_interval`` (the
file store is flushed to disk every two minutes; an acknowledged event survives a process crash, and a machine's
crash only if another replica has it) and with ``sync_interval: always`` (every acknowledged event is on disk).

The engine's appends as players make them: ``WRITERS`` games at once, each appending one command (one event) at a
time at its position, through `JetStreamEventStore`. One JSON line per setting with its ratio to the default; the
medians of ``ROUNDS`` rounds measured in this one run.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def nats_server(data: Path, sync: str | None) -> Iterator[str]:
    port = free_port()
    config = data / "nats.conf"
    sync_line = f"  sync_interval: {sync}\n" if sync else ""
    config.write_text(f'listen: 127.0.0.1:{port}\njetstream {{\n  store_dir: "{data / "js"}"\n{sync_line}}}\n')
    binary = Path(sysconfig.get_path("scripts")) / "nats-server"
    process = subprocess.Popen([str(binary), "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("nats-server did not start") from None
                time.sleep(0.05)
        yield f"nats://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=15)


async def appends_per_second(url: str) -> float:
    stream = "D" + uuid.uuid4().hex[:10].upper()
    store = await JetStreamEventStore.connect(url, stream=stream, prefix=f"d.{stream.lower()}")
    try:

        async def writer(n: int) -> None:
            position = Position()
            for i in range(APPENDS):
                recorded = await store.append(f"g{n}", position, f"c{i}", [EVENT])
                position = recorded[-1].position

        started = time.perf_counter()
        await asyncio.gather(*(writer(n) for n in range(WRITERS)))
        return WRITERS * APPENDS / (time.perf_counter() - started)
    finally:
        await store.close()


def measure(sync: str | None) -> float:
    with tempfile.TemporaryDirectory() as folder, nats_server(Path(folder), sync) as url:
        asyncio.run(appends_per_second(url))  # warm-up: stream creation, connections
        return statistics.median(asyncio.run(appends_per_second(url)) for _ in range(ROUNDS))


def main() -> None:
    print(f"JetStream durability: {WRITERS} games appending one event at a time, medians of {ROUNDS} rounds")
    rates = {setting: measure(setting) for setting in SETTINGS}
    default = rates[None]
    for setting, rate in rates.items():
        print(
            json.dumps(
                {
                    "sync_interval": setting or "default (2m)",
                    "writers": WRITERS,
                    "appends_per_s": round(rate),
                    "over_default": round(rate / default, 3),
                }
            )
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
