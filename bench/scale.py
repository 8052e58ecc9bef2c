"""`make bench`, scale out: do more engine replicas mean each one does only its share?

Over one embedded nats-server, for 1, 2 and 4 `paiju engine` processes on a fresh GAMES stream each time, the same
``TABLES`` 砸六家 tables are played by random-legal bots over gRPC, table i's seats talking to replica i mod R (as a
Service spreads connections) and one spectator of table i watching it through replica i+1 mod R (the spectator's
replica seldom owns the game: it watches through the store's notices). Per replica: the events its feed delivered
(``paiju_engine_feed_events_total``), the acts it served (``paiju_engine_acts_total``) and the CPU seconds it used
(/proc); overall: the events stored and the acts per second.

The target: each replica's feed carries only its share (at most 1.25 × events/R) and the CPU per act does not grow
with R. One JSON line per configuration. The machine has two cores, so acts/s cannot grow past two processes: the
figures that matter are the shares and the CPU per act.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import grpc
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from paiju.dev.stack import embedded_nats
from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.tokens import Identity, Issuer, Role, Signer, Trust
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, engine_pb2_grpc, zlj_pb2

LOBBY = Signer(Ed25519PrivateKey.generate(), f"{Issuer.LOBBY.value}.1")
TABLES = 128
ACTS = 30
REPLICAS = (1, 2, 4)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _md(identity: Identity) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {LOBBY.mint(identity)}"),)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def _metrics(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    found: dict[str, float] = {}
    for name in ("paiju_engine_feed_events_total", "paiju_engine_acts_total", "paiju_engine_partitions_owned"):
        found[name] = sum(float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))
    return found


async def _table(players: Any, spectators: Any, game_id: str, seed: int, watched: list[int]) -> None:
    expires = int(time.time()) + 3600
    seats = [_md(Identity(f"p{s}", Role.PLAYER, game_id, s, expires)) for s in range(6)]
    create = engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_ZLJ)
    create.zlj_options.CopyFrom(zlj_pb2.ZljOptions(deals=0))
    await players.CreateGame(create, metadata=_md(Identity("lobby", Role.SERVICE, expires=expires)))
    spectator = _md(Identity("watcher", Role.SPECTATOR, game_id, expires=expires))
    watch = spectators.Watch(engine_pb2.WatchRequest(game_id=game_id), metadata=spectator)

    async def follow() -> None:
        async for message in watch:
            if message.HasField("envelope"):
                watched[0] += 1

    following = asyncio.create_task(follow())
    rng = SeededRandom(seed)
    done, last = 0, 5
    while done < ACTS:
        for seat in ((last + 1 + i) % 6 for i in range(6)):
            legal = await players.GetLegalActions(
                engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=seats[seat]
            )
            if not legal.actions:
                continue
            action = legal.actions[rng.below(len(legal.actions))].zlj
            await players.Act(
                engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, zlj=action), metadata=seats[seat]
            )
            done, last = done + 1, seat
            break
    await asyncio.sleep(0.5)  # the spectator sees the last events
    watch.cancel()
    following.cancel()


async def _play(addresses: list[str]) -> tuple[float, int]:
    channels = [grpc.aio.insecure_channel(a) for a in addresses]
    stubs = [engine_pb2_grpc.EngineServiceStub(c) for c in channels]
    watched = [0]
    started = time.perf_counter()
    r = len(stubs)
    await asyncio.gather(
        *(_table(stubs[i % r], stubs[(i + 1) % r], f"s{i}-{uuid.uuid4().hex[:8]}", i, watched) for i in range(TABLES))
    )
    elapsed = time.perf_counter() - started - 0.5
    for channel in channels:
        await channel.close()
    return elapsed, watched[0]


def _configuration(url: str, keys: Path, replicas: int) -> dict[str, Any]:
    stream = f"SCALE{replicas}{uuid.uuid4().hex[:4].upper()}"
    engines: list[tuple[subprocess.Popen[bytes], str, int]] = []
    try:
        for _ in range(replicas):
            address, metrics = f"127.0.0.1:{free_port()}", free_port()
            env = {
                **os.environ,
                "PAIJU_ENGINE_ADDRESS": address,
                "NATS_URL": url,
                "PAIJU_GAMES_STREAM": stream,
                "PAIJU_GAMES_SUBJECT_PREFIX": f"scale.{stream.lower()}",
                "PAIJU_METRICS_PORT": str(metrics),
                "PAIJU_TRUSTED_KEYS": str(keys),
                "PAIJU_SEED_SECRET": "scale-bench-seeds-" * 3,
                "PAIJU_RATE_LIMITS": "off",
                "PAIJU_LOG_LEVEL": "warning",
            }
            process = subprocess.Popen([sys.executable, "-m", "paiju.cli", "engine"], env=env)
            engines.append((process, address, metrics))
        for _, address, _ in engines:
            wait_until_serving(address)
        deadline = time.monotonic() + 60
        while True:  # the partitions shared out: every one owned, every replica with its share
            owned = [_metrics(m)["paiju_engine_partitions_owned"] for _, _, m in engines]
            if sum(owned) == 16 and min(owned) >= 16 // replicas:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"the partitions were not shared out: {owned}")
            time.sleep(0.2)
        before = [(_cpu_seconds(p.pid), _metrics(m)) for p, _, m in engines]
        elapsed, watched = asyncio.run(_play([a for _, a, _ in engines]))
        after = [(_cpu_seconds(p.pid), _metrics(m)) for p, _, m in engines]
    finally:
        for process, _, _ in engines:
            process.terminate()
        for process, _, _ in engines:
            process.wait(timeout=30)
    per = [
        {
            "feed_events": int(a[1]["paiju_engine_feed_events_total"] - b[1]["paiju_engine_feed_events_total"]),
            "acts": int(a[1]["paiju_engine_acts_total"] - b[1]["paiju_engine_acts_total"]),
            "cpu_s": round(a[0] - b[0], 2),
        }
        for b, a in zip(before, after, strict=True)
    ]
    events = asyncio.run(_events(url, stream))
    acts = sum(p["acts"] for p in per)
    return {
        "replicas": replicas,
        "tables": TABLES,
        "events_total": events,
        "feed_events_max_replica": max(p["feed_events"] for p in per),
        "feed_share_bound": round(1.25 * events / replicas),
        "cpu_s_per_act": round(sum(p["cpu_s"] for p in per) / acts, 5),
        "acts_per_s": round(acts / elapsed, 1),
        "spectator_events": watched,
        "per_replica": per,
    }


async def _events(url: str, stream: str) -> int:
    import nats

    client = await nats.connect(url)
    try:
        return int((await client.jetstream().stream_info(stream)).state.messages)
    finally:
        await client.close()


def main() -> None:
    print(f"Engine replicas over one NATS: {TABLES} tables of random-legal bots, {ACTS} acts each, a spectator each")
    with tempfile.TemporaryDirectory() as folder, embedded_nats(Path(folder) / "nats") as url:
        keys = Path(folder) / "keys.json"
        keys.write_text(Trust.of([LOBBY]).jwks())
        lines = [_configuration(url, keys, r) for r in REPLICAS]
        for line in lines:
            print(json.dumps(line))
        base = lines[0]["cpu_s_per_act"]
        print(
            json.dumps(
                {
                    "cpu_per_act_over_one_replica": {
                        str(line["replicas"]): round(line["cpu_s_per_act"] / base, 2) for line in lines
                    },
                    "feed_share_within_bound": all(
                        line["feed_events_max_replica"] <= line["feed_share_bound"] for line in lines
                    ),
                }
            )
        )


if __name__ == "__main__":
    main()
