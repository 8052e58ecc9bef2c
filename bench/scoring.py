"""`make bench`, scoring part: projection throughput into PostgreSQL and the rebuild time for 1,000 games.

1,000 complete games (900 砸六家 matches of one deal, 100 timed 拖拉机 games of two or three deals) are played
by the heuristic bots through the engine's `Games` on the in-memory store, then their events are published to
a GAMES stream on an embedded nats-server, as the engine stores them. Then scoring's GAMES projection runs on
an embedded PostgreSQL: first as the running service does (from an empty database), then as
`paiju scoring rebuild` does (read models emptied, the stream replayed). Events per second are stream
messages applied per second, every event of every game. Then the CPU scoring spends per event as it runs under
load: the events of `LIVE_TABLES` games interleaved as tables playing at once store them, applied by a running
projector (`Consumer._handle`, the path of `Consumer.run`) in batches of `LIVE_BATCHES` events, what a quarter of a
second's linger gathers at about 108 events a second for one of the four shards and for one projection of every
game; this process's CPU time (``time.process_time``, not PostgreSQL's) per event, the median of ``ROUNDS`` runs,
each from emptied read models. Last, `paiju scoring
rebuild` itself, its four shards of the games projection read and applied in one process and in two, alternately
(``ROUNDS`` each, medians); and the analysts' `paiju export` of every game (JSON Lines), its partitions read and
folded in one process and in two.
One JSON line of the figures, then the same in words.

Run: ``.venv/bin/python bench/scoring.py [games] [--rounds N]`` (1,000 games and 2 rounds by default; a quick run:
``10 --rounds 1``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import nats

from paiju.dev.stack import embedded_nats
from paiju.engine.games import Games
from paiju.engine.selfplay import record_tractor, record_zlj
from paiju.platform.partitions import PARTITIONS, partition_of
from paiju.platform.postgres import embedded
from paiju.platform.postgres.pool import connect
from paiju.platform.store import MemoryEventStore, Recorded
from paiju.platform.store.base import whole
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.store.messages import COMMAND, VERSION
from paiju.scoring.bootstrap import rebuild
from paiju.scoring.config import Settings
from paiju.scoring.projector import Projector
from paiju.scoring.readmodels import GamesProjection, migrate_scoring
from paiju.tools.analyst.cli import export_games
from paiju.tools.analyst.streams import Source

GAMES = 1000
TRACTOR_GAMES = 100
ROUNDS = 2
LIVE_TABLES = 30
"""Games played at once for the CPU per event (the tables of ``bench/load.py --tables 30``)."""
LIVE_BATCHES = (7, 27)
"""Events per batch for the CPU per event: about 108 events a second gathered for `LINGER_SECONDS` by one of four
shards, and by one projection."""


async def _record(count: int) -> list[Any]:
    """``count`` games played by the bots, a tenth of them 拖拉机 (`TRACTOR_GAMES` of `GAMES`; one at least), their
    events as the engine stored them."""
    store = MemoryEventStore()
    games = Games(store)
    tractor = max(1, count * TRACTOR_GAMES // GAMES)
    every = max(1, count // tractor)
    for n in range(count):
        if n % every == 0 and n // every < tractor:
            await record_tractor(games, f"bench-t{n}", [f"t{n % 37}-{i}" for i in range(4)], seed=n)
        else:
            await record_zlj(games, f"bench-z{n}", [f"z{n % 53}-{i}" for i in range(6)], seed=n, deals=1)
    return await store.read_all()


async def _publish(nats_url: str, recorded: list[Any]) -> None:
    store = await JetStreamEventStore.connect(nats_url, partitions=PARTITIONS)  # creates GAMES as the engine does
    await store.close()
    # the lobby's stream, empty, as the lobby creates it: scoring reads it (matches to rate) and waits for it
    lobby = await JetStreamEventStore.connect(nats_url, stream="LOBBY", prefix="paiju.lobby")
    await lobby.close()
    client = await nats.connect(nats_url)
    js = client.jetstream()
    for r in recorded:
        headers = {
            "Nats-Msg-Id": f"{r.aggregate}:{r.command_id}:{r.version}",
            VERSION: str(r.version),
            COMMAND: r.command_id,
        }
        subject = f"paiju.game.{partition_of(r.aggregate, PARTITIONS)}.{r.aggregate}"
        await js.publish_async(subject, r.data, headers=headers)
    await js.publish_async_completed()
    await client.close()


async def _project(nats_url: str, database_url: str) -> dict[str, float]:
    pool = await connect(database_url)
    client = await nats.connect(nats_url)
    try:
        await migrate_scoring(pool)
        reading = JetStreamEventStore(client, "GAMES", "paiju.game")
        await reading.discover()
        projector = Projector(pool, client, GamesProjection(), store=reading)  # one projection of the whole stream
        started = time.perf_counter()
        events = await projector.catch_up(timeout=3600)
        incremental = time.perf_counter() - started
        started = time.perf_counter()
        await projector.reset()
        rebuilt = await projector.catch_up(timeout=3600)
        rebuild = time.perf_counter() - started
        deals = await pool.fetchval("SELECT count(*) FROM scoring_deals")
        matches = await pool.fetchval("SELECT count(*) FROM scoring_matches")
        await projector.close()
    finally:
        await client.close()
        await pool.close()
    return {
        "events": events,
        "deals": deals,
        "matches": matches,
        "events_per_second": round(events / incremental),
        "rebuild_seconds": round(rebuild, 2),
        "rebuild_events_per_second": round(rebuilt / rebuild),
    }


def _interleaved(recorded: list[Any], tables: int) -> list[Recorded]:
    """The first ``tables`` games' events as that many tables playing at once store them: one message of each game
    in turn (a message's events keep their one stream sequence), numbered again in that order."""
    messages: dict[str, list[list[Any]]] = {}
    for r in recorded:
        game = messages.setdefault(r.aggregate, [])
        if len(messages) > tables:
            del messages[r.aggregate]
            continue
        if game and game[-1][0].sequence == r.sequence:
            game[-1].append(r)
        else:
            game.append([r])
    out: list[Recorded] = []
    queues = [iter(m) for m in messages.values()]
    while queues:
        left = []
        for queue in queues:
            message = next(queue, None)
            if message is not None:
                sequence = len(out) + 1
                out += [replace(r, sequence=sequence) for r in message]
                left.append(queue)
        queues = left
    return out


async def _cpu_per_event(
    nats_url: str, database_url: str, recorded: list[Any], size: int, rounds: int = ROUNDS
) -> dict[str, float]:
    """Scoring's CPU per event as it runs under load, in batches of ``size`` events (see the module):
    microseconds, medians of ``rounds``."""
    events = _interleaved(recorded, LIVE_TABLES)
    batches: list[tuple[int, list[Recorded]]] = []
    start = 0
    while start < len(events):
        end = start + whole(events[start:], size)
        batches.append((events[start - 1].sequence if start else 0, events[start:end]))
        start = end
    pool = await connect(database_url)
    client = await nats.connect(nats_url)
    cpu: list[float] = []
    wall: list[float] = []
    try:
        await migrate_scoring(pool)
        reading = JetStreamEventStore(client, "GAMES", "paiju.game")
        projector = Projector(pool, client, GamesProjection(name="games-live"), store=reading)
        for _ in range(rounds):
            await projector.reset()
            started, started_cpu = time.perf_counter(), time.process_time()
            for after, held in batches:
                await projector._handle(after, held)
            cpu.append((time.process_time() - started_cpu) / len(events) * 1e6)
            wall.append((time.perf_counter() - started) / len(events) * 1e6)
        await projector.reset()
    finally:
        await client.close()
        await pool.close()
    return {
        "live_events": len(events),
        f"live_{size}_cpu_us_per_event": round(statistics.median(cpu), 1),
        f"live_{size}_wall_us_per_event": round(statistics.median(wall), 1),
    }


def _rebuilds(nats_url: str, database_url: str, rounds: int = ROUNDS) -> dict[str, float]:
    """`paiju scoring rebuild` in one process and in two, alternately: the games' events per second (medians)."""
    settings = Settings(nats_url=nats_url, database_url=database_url, log_level="warning")
    speeds: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for processes in (1, 2):
            figures = asyncio.run(rebuild(settings, processes=processes))
            speeds[processes].append(figures["games_events_per_second"])
    one, two = (statistics.median(speeds[p]) for p in (1, 2))
    return {"rebuild_1_process": round(one), "rebuild_2_processes": round(two), "rebuild_2_over_1": round(two / one, 2)}


def _exports(nats_url: str, events: int, rounds: int = ROUNDS) -> dict[str, float]:
    """`paiju export` of every game in one process and in two, alternately: events per second (medians)."""
    source = Source(nats_url, "GAMES", "paiju.game")
    speeds: dict[int, list[float]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds):
            for processes in (1, 2):
                started = time.perf_counter()
                asyncio.run(export_games(None, Path(folder) / str(processes), source=source, processes=processes))
                speeds[processes].append(events / (time.perf_counter() - started))
    one, two = (statistics.median(speeds[p]) for p in (1, 2))
    return {"export_1_process": round(one), "export_2_processes": round(two), "export_2_over_1": round(two / one, 2)}


def run(games: int = GAMES, rounds: int = ROUNDS) -> dict[str, Any]:
    started = time.perf_counter()
    recorded = asyncio.run(_record(games))
    played = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        data.chmod(0o755)
        with embedded_nats(data / "nats") as nats_url:
            asyncio.run(_publish(nats_url, recorded))
            server = embedded.start(data / "postgres", durable=True)
            try:
                figures = asyncio.run(_project(nats_url, server.dsn))
                for size in LIVE_BATCHES:
                    figures.update(asyncio.run(_cpu_per_event(nats_url, server.dsn, recorded, size, rounds)))
                figures.update(_rebuilds(nats_url, server.dsn, rounds))
                figures.update(_exports(nats_url, int(figures["events"]), rounds))
            finally:
                server.stop()
    return {"games": games, "rounds": rounds, "played_seconds": round(played, 1), **figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("games", type=int, nargs="?", default=GAMES, help="games played and projected")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="runs of the rebuilds and the exports each")
    args = parser.parse_args()
    r = run(args.games, args.rounds)
    print(json.dumps({"bench": "scoring", **r}))
    print("Scoring, GAMES projection into an embedded PostgreSQL (one process, batches of 500 events)")
    print(
        f"  {r['games']} games ({r['matches']} matches, {r['deals']} deals, {r['events']} events; "
        f"played by bots in {r['played_seconds']} s)"
    )
    print(f"  projection from empty: {r['events_per_second']} events/s")
    print(f"  rebuild (emptied, replayed): {r['rebuild_seconds']} s, {r['rebuild_events_per_second']} events/s")
    for size in LIVE_BATCHES:
        print(
            f"  running under load ({r['live_events']} events of {LIVE_TABLES} games at once, batches of {size}): "
            f"{r[f'live_{size}_cpu_us_per_event']} µs of scoring's CPU per event "
            f"({r[f'live_{size}_wall_us_per_event']} µs wall; medians of {r['rounds']})"
        )
    print(
        f"  `paiju scoring rebuild`, games projection in 4 shards: {r['rebuild_1_process']} events/s in one process, "
        f"{r['rebuild_2_processes']} in two ({r['rebuild_2_over_1']}x; medians of {r['rounds']})"
    )
    print(
        f"  `paiju export` of every game: {r['export_1_process']} events/s in one process, "
        f"{r['export_2_processes']} in two ({r['export_2_over_1']}x; medians of {r['rounds']})"
    )


if __name__ == "__main__":
    main()
