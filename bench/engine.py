"""`make bench`, engine part: act latency and throughput of one engine process, and replay speed.

Starts an embedded nats-server with JetStream and one `paiju engine` process; this process is the load:
1, 16 and 64 concurrent 砸六家 tables whose seats act through the gRPC API (random legal actions), each
act timed from request to answer. Then the replay speed: events per second to load a game's log from
JetStream and rebuild its state. One JSON line of the figures, then the same in words.

Run: ``.venv/bin/python bench/engine.py [acts per table]`` (150 by default; 2 for a quick run).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from paiju.engine.games import Games
from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import MAX_SECONDS, Identity, Issuer, Role, Signer, Trust
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, engine_pb2_grpc, zlj_pb2

LOBBY = Signer(Ed25519PrivateKey.generate(), f"{Issuer.LOBBY.value}.1")
"""The benchmark mints the tokens the lobby would: players' and the lobby's own service token."""
PACED_THINK = 0.05
"""Seconds a paced bot waits after its act before the next seat asks for its legal actions."""


def _md(identity: Identity) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {LOBBY.mint(identity)}"),)


async def _table(stub: Any, game_id: str, acts: int, latencies: list[float], seed: int, *, think: float) -> None:
    now = int(time.time())  # tokens as long-lived as their roles allow (MAX_SECONDS): a table's acts take seconds
    seats = [_md(Identity(f"p{s}", Role.PLAYER, game_id, s, now + MAX_SECONDS[Role.PLAYER], now)) for s in range(6)]
    create = engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_ZLJ)
    create.zlj_options.CopyFrom(
        zlj_pb2.ZljOptions(
            deals=0, reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL
        )
    )
    service = Identity("lobby", Role.SERVICE, expires=now + MAX_SECONDS[Role.SERVICE], issued=now)
    await stub.CreateGame(create, metadata=_md(service))
    rng = SeededRandom(seed)
    done = 0
    last = 5
    while done < acts:
        # each bot asks for its legal actions; the turn usually passes to the next seat, so ask there first
        for seat in ((last + 1 + i) % 6 for i in range(6)):
            legal = await stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=seats[seat])
            if not legal.actions:
                continue
            request = engine_pb2.ActRequest(
                game_id=game_id, command_id=uuid.uuid4().hex, zlj=legal.actions[rng.below(len(legal.actions))].zlj
            )
            started = time.perf_counter()
            await stub.Act(request, metadata=seats[seat])
            latencies.append(time.perf_counter() - started)
            done += 1
            last = seat
            if think:
                await asyncio.sleep(think)
            break


async def _load(address: str, tables: int, acts: int, think: float = 0.0) -> dict[str, float]:
    latencies: list[float] = []
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
        started = time.perf_counter()
        await asyncio.gather(
            *(
                _table(stub, f"b{tables}-{i}-{uuid.uuid4().hex[:6]}", acts, latencies, i, think=think)
                for i in range(tables)
            )
        )
        elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "tables": tables,
        "think_ms": think * 1000,
        "acts": len(ordered),
        "acts_per_second": round(len(ordered) / elapsed, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 2),
    }


async def _replay(nats_url: str, stream: str, prefix: str) -> dict[str, float]:
    """Every game the load left, read from JetStream and rebuilt by a fresh engine (no cache), one after another."""
    store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix)
    try:
        started = time.perf_counter()
        games = await Games(store).load_all()
        elapsed = time.perf_counter() - started
        events = sum(g.game.version for g in games.values())
        one_by_one = Games(store)
        started = time.perf_counter()
        for game_id in games:
            await one_by_one.refresh(game_id)
        each = time.perf_counter() - started
        return {
            "games": len(games),
            "events": events,
            "events_per_second": round(events / elapsed, 1),
            "game_by_game_events_per_second": round(events / each, 1),
        }
    finally:
        await store.close()


def _median_run(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over repeated runs of one load (and how many runs)."""
    median = {key: statistics.median(row[key] for row in rows) for key in ("acts_per_second", "p50_ms", "p99_ms")}
    return {**rows[0], **median, "acts": sum(row["acts"] for row in rows), "runs": len(rows)}


def _seed_file(keys: Path, secret: str) -> Path:
    """The engine's seed secret, as a file beside the token keys (a secret is never given in the environment)."""
    path = keys.parent / "seed-secret"
    path.write_text(secret)
    path.chmod(0o600)
    return path


async def _lobby_stream(nats_url: str) -> None:
    """The lobby's stream, empty, made as the lobby makes it: the engine reads its match starts and waits for it."""
    store = await JetStreamEventStore.connect(nats_url, stream="LOBBY", prefix="paiju.lobby")
    await store.close()


def run(acts_per_table: int = 150) -> dict[str, Any]:
    import sysconfig

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as data:
        keys = Path(data) / "keys.json"
        keys.write_text(Trust.of([LOBBY]).jwks())
        nats_port = free_port()
        nats = subprocess.Popen(
            [
                str(Path(sysconfig.get_path("scripts")) / "nats-server"),
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                str(nats_port),
                "-sd",
                data,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        nats_url = f"nats://127.0.0.1:{nats_port}"
        address = f"127.0.0.1:{free_port()}"
        env = {
            **os.environ,
            "PAIJU_ENGINE_ADDRESS": address,
            "NATS_URL": nats_url,
            "PAIJU_ENGINE_METRICS_PORT": "0",
            "PAIJU_TRUSTED_KEYS": str(keys),
            "PAIJU_SEED_SECRET_FILE": str(_seed_file(keys, "bench-seeds-" * 4)),
            "PAIJU_RATE_LIMITS": "off",
            "PAIJU_LOG_LEVEL": "warning",
            "PAIJU_TIMER_SECONDS": "5",
            # the games are dealt fairly (the default) with windows that wait for nobody: these bots send no
            # contributions, and a window that waited for them would stall every table (fair dealing's own cost is
            # bench/fair_dealing.py's)
            "PAIJU_FIRST_DEAL_SECONDS": "0",
            "PAIJU_CONTRIBUTION_SECONDS": "0",
        }
        engine = subprocess.Popen([sys.executable, "-m", "paiju.cli", "engine"], env=env)
        try:
            asyncio.run(_lobby_stream(nats_url))
            wait_until_serving(address)
            results["load"] = [asyncio.run(_load(address, tables, acts_per_table)) for tables in (1, 16, 64)]
            # tables whose bots take a moment between acts, as bot runners and people do: latency below saturation
            # the paced runs are short and the machine is shared: each is run three times, the median reported
            results["paced"] = [
                _median_run([asyncio.run(_load(address, tables, acts_per_table, PACED_THINK)) for _ in range(3)])
                for tables in (16, 64)
            ]
            results["replay"] = asyncio.run(_replay(nats_url, "GAMES", "paiju.game"))
        finally:
            engine.terminate()
            engine.wait(timeout=30)
            nats.terminate()
            nats.wait(timeout=30)
    return results


def main() -> None:
    results = run(int(sys.argv[1]) if len(sys.argv) > 1 else 150)
    print(json.dumps({"bench": "engine", **results}))
    print("Engine service, one process, embedded NATS (load from this process, random legal acts over gRPC)")
    for row in results["load"]:
        print(
            f"  {row['tables']:>2} tables flat out: {row['acts_per_second']} acts/s, "
            f"act latency p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms ({row['acts']} acts)"
        )
    for row in results["paced"]:
        print(
            f"  {row['tables']:>2} tables, {row['think_ms']:.0f} ms between acts: {row['acts_per_second']} acts/s, "
            f"act latency p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms "
            f"(medians of {row['runs']} runs, {row['acts']} acts)"
        )
    replay = results["replay"]
    print(
        f"  replay: {replay['events_per_second']} events/s "
        f"({replay['games']} games, {replay['events']} events, the whole stream read from JetStream and rebuilt); "
        f"game by game: {replay['game_by_game_events_per_second']} events/s"
    )


if __name__ == "__main__":
    main()
