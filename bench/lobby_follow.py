"""`make bench`, the lobby's part of every game move: what following the GAMES stream costs the lobby per event.

The lobby reads the games' stream for one thing, match results (`paiju.lobby.results`): of every game event stored
it needs the few that end a table's match. This measures what it pays for the others. Games of tables are played
by the heuristic bots through the engine's `Games` on the in-memory store (game ids ``table-…-m1``, as the lobby
names a table's match); then, on an embedded nats-server and PostgreSQL, the lobby's match results consumer runs
as the lobby runs it (`Consumer.run`, its checkpoint in ``lobby_checkpoints``) while a second process appends the
games' commands to GAMES as the engine does (`JetStreamEventStore.append`, one command at a time, each its own
message), at ``--rate`` events per second, so that events arrive one by one as during play. Each round appends the
next ``--events`` events; the lobby's process CPU (`time.process_time`: every thread of this process, none of the
appender's) from the round's first append until its checkpoint covers the round's last, less what the process
spends idle in as long (measured first, nothing appended), divided by the events: the CPU the lobby spends per
game event followed (the lobby holds none of the tables: a match's result is refused, logged and passed over,
where the lobby would record it). Then ``replay``: the checkpoint set back to 0 and the whole stream read again by a
consumer starting from it (a replica taking over far behind), CPU per event. Medians of ``--rounds`` rounds.

Run: ``.venv/bin/python bench/lobby_follow.py [--events N] [--rate R] [--rounds K]`` (1,000 events at 250 a second,
5 rounds by default; a quick run: ``--events 100 --rounds 1``). One JSON line of the figures, then a small table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from paiju.dev.stack import embedded_nats
from paiju.engine.games import Games
from paiju.engine.selfplay import record_zlj
from paiju.lobby.readmodel import CHECKPOINTS, migrate_lobby
from paiju.lobby.results import PROJECTION, match_results
from paiju.lobby.service import new_tables
from paiju.platform.observability import configure_logging
from paiju.platform.partitions import PARTITIONS
from paiju.platform.postgres import embedded
from paiju.platform.postgres.pool import connect
from paiju.platform.store import MemoryEventStore, Position
from paiju.platform.store.jetstream import JetStreamEventStore

EVENTS = 1000
RATE = 250.0
ROUNDS = 5
IDLE_SECONDS = 3.0


async def _record(events: int) -> list[tuple[str, str, list[bytes]]]:
    """Commands of 砸六家 matches of tables, played by the bots, until they hold at least ``events`` events: each
    (game, command id, its events), in the order the engine stored them (games one after another)."""
    store = MemoryEventStore()
    games = Games(store)
    n = 0
    while len(recorded := await store.read_all()) < events:
        await record_zlj(games, f"table-bench{n:04x}-m1", [f"p{n % 53}-{i}" for i in range(6)], seed=n, deals=1)
        n += 1
    commands: list[tuple[str, str, list[bytes]]] = []
    for r in recorded:
        if commands and commands[-1][0] == r.aggregate and commands[-1][1] == r.command_id:
            commands[-1][2].append(r.data)
        else:
            commands.append((r.aggregate, r.command_id, [r.data]))
    return commands


async def _append(nats_url: str, source: Path, rate: float) -> None:
    """The appender (a process of its own): the commands in ``source`` appended to GAMES at ``rate`` events a second,
    each after the one before it is stored, as the engine appends; prints the last stream sequence."""
    commands: list[tuple[str, str, list[bytes]]] = pickle.loads(source.read_bytes())
    store = await JetStreamEventStore.connect(nats_url, partitions=PARTITIONS)
    positions: dict[str, Position] = {}
    for aggregate in {a for a, _, _ in commands}:
        loaded = await store.load(aggregate)
        positions[aggregate] = Position(loaded[-1].version, loaded[-1].sequence) if loaded else Position()
    loop = asyncio.get_running_loop()
    started = loop.time()
    sent = 0
    last = 0
    for aggregate, command_id, events in commands:
        wait = started + sent / rate - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        stored = await store.append(aggregate, positions[aggregate], command_id, events)
        positions[aggregate] = Position(stored[-1].version, stored[-1].sequence)
        last = stored[-1].sequence
        sent += len(events)
    await store.close()
    print(last)


async def _follow(
    nats_url: str, database_url: str, commands: list[Any], *, events: int, rate: float, rounds: int
) -> Any:
    pool = await connect(database_url)
    await migrate_lobby(pool)
    games = await JetStreamEventStore.connect(nats_url, partitions=PARTITIONS)  # GAMES, made as the engine makes it
    lobby = await JetStreamEventStore.connect(nats_url, stream="LOBBY", prefix="paiju.lobby")
    tables = new_tables(lobby)
    await tables.follow()
    stop = asyncio.Event()
    consumer = match_results(pool, games, tables)
    running = asyncio.create_task(consumer.run(stop))
    await asyncio.sleep(1.0)  # its subscription made
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.sleep(IDLE_SECONDS)
    idle = (time.process_time() - cpu) / (time.perf_counter() - started)  # CPU seconds per second, idle
    figures: list[float] = []
    followed = 0
    with tempfile.TemporaryDirectory() as folder:
        for r in range(rounds):
            chunk, taken = [], 0
            while followed < len(commands) and taken < events:
                chunk.append(commands[followed])
                taken += len(commands[followed][2])
                followed += 1
            source = Path(folder) / f"round{r}"
            source.write_bytes(pickle.dumps(chunk))
            started, cpu = time.perf_counter(), time.process_time()
            appender = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--append", nats_url, str(source), "--rate", str(rate), stdout=subprocess.PIPE
            )
            out, _ = await appender.communicate()
            last = int(out.decode().split()[-1])
            while await consumer.checkpoint() < last:
                await asyncio.sleep(0.2)
            wall = time.perf_counter() - started
            spent = time.process_time() - cpu - idle * wall
            figures.append(spent / taken * 1e6)
    stop.set()
    await running
    # a consumer far behind: the whole stream again from checkpoint 0
    await pool.execute(f"UPDATE {CHECKPOINTS} SET sequence = 0 WHERE projection = $1", PROJECTION)
    stop = asyncio.Event()
    replaying = match_results(pool, games, tables)
    cpu = time.process_time()
    running = asyncio.create_task(replaying.run(stop))
    while await replaying.checkpoint() < last:
        await asyncio.sleep(0.1)
    replay = (time.process_time() - cpu) / (followed and sum(len(c[2]) for c in commands[:followed])) * 1e6
    stop.set()
    await running
    await games.close()
    await lobby.close()
    await pool.close()
    return figures, idle, replay


def run(events: int = EVENTS, rate: float = RATE, rounds: int = ROUNDS) -> dict[str, Any]:
    configure_logging("critical")  # the results of tables the lobby does not hold are refused, each logged
    commands = asyncio.run(_record(events * rounds))
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        data.chmod(0o755)
        with embedded_nats(data / "nats") as nats_url:
            server = embedded.start(data / "postgres", durable=True)
            try:
                figures, idle, replay = asyncio.run(
                    _follow(nats_url, server.dsn, commands, events=events, rate=rate, rounds=rounds)
                )
            finally:
                server.stop()
    return {
        "bench": "lobby_follow",
        "events": events,
        "rate": rate,
        "rounds": rounds,
        "us_per_event_median": round(statistics.median(figures), 1),
        "us_per_event": [round(f, 1) for f in figures],
        "idle_cpu_ms_per_s": round(idle * 1e3, 2),
        "replay_us_per_event": round(replay, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=EVENTS, help="events appended per round")
    parser.add_argument("--rate", type=float, default=RATE, help="events appended per second")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds (the figure is their median)")
    parser.add_argument("--append", nargs=2, metavar=("NATS_URL", "COMMANDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.append:
        asyncio.run(_append(args.append[0], Path(args.append[1]), args.rate))
        return
    r = run(args.events, args.rate, args.rounds)
    print(json.dumps(r))
    print(f"The lobby following GAMES for match results: {r['events']} events a round at {r['rate']:g}/s")
    print("| figure | value |")
    print("|---|---|")
    print(f"| lobby CPU per game event (median of {r['rounds']}) | {r['us_per_event_median']} µs |")
    print(f"| lobby CPU idle | {r['idle_cpu_ms_per_s']} ms/s |")
    print(f"| replay from checkpoint 0, CPU per event | {r['replay_us_per_event']} µs |")


if __name__ == "__main__":
    main()
