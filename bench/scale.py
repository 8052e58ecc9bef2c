"""`make bench`, scale out: do more engine replicas mean each one does only its share?

Over one embedded nats-server, for 1, 2 and 4 `paiju engine` processes on a fresh GAMES stream each time, the same
``TABLES`` 砸六家 tables are played by random-legal bots over gRPC, table i's seats talking to replica i mod R (as a
Service spreads connections) and one spectator of table i watching it through replica i+1 mod R (the spectator's
replica seldom owns the game: it watches through the store's notices). Per replica: the events its feed delivered
(``paiju_engine_feed_events_total``), the acts it served (``paiju_engine_acts_total``) and the CPU seconds it used
(/proc); overall: the events stored and the acts per second.

The target: each replica's feed carries only its share (at most 1.25 × events/R) and the CPU per act does not grow
with R. One JSON line per configuration. The machine has two cores, so acts/s cannot grow past two processes, and R
processes share them with the load: CPU per act then grows with R for reasons that are the machine's, not the
design's (a process with less to do batches less per wake-up; five busy processes on two cores switch more). So
each configuration with several replicas is run a second time with every call sent to the game's owner (read from
the leases), which costs nothing for a replica that does not own the game: ``cpu_s_per_act_calls_to_owner`` beside
``cpu_s_per_act`` isolates what serving another replica's game costs.

Run: ``.venv/bin/python bench/scale.py [--tables N] [--acts N] [--rounds N] [--replicas R ...]`` (a quick run:
``--tables 4 --acts 4 --rounds 1 --replicas 1 2``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
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
from paiju.platform.partitions import PARTITIONS, partition_of
from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.tokens import MAX_SECONDS, Identity, Issuer, Role, Signer, Trust
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, engine_pb2_grpc, zlj_pb2

LOBBY = Signer(Ed25519PrivateKey.generate(), f"{Issuer.LOBBY.value}.1")
TABLES = 128
ACTS = 30
REPLICAS = (1, 2, 4)
ROUNDS = 3
"""Each configuration is run this many times, interleaved with its control, and the medians reported (the machine is
shared and noisy)."""
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


def _seed_file(keys: Path, secret: str) -> Path:
    """The engine's seed secret, as a file beside the token keys (a secret is never given in the environment)."""
    path = keys.parent / "seed-secret"
    path.write_text(secret)
    path.chmod(0o600)
    return path


async def _table(players: Any, spectators: Any, game_id: str, seed: int, watched: list[int], *, acts: int) -> None:
    now = int(time.time())  # tokens as long-lived as their roles allow (MAX_SECONDS): a table's acts take seconds
    seats = [_md(Identity(f"p{s}", Role.PLAYER, game_id, s, now + MAX_SECONDS[Role.PLAYER], now)) for s in range(6)]
    create = engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_ZLJ)
    create.zlj_options.CopyFrom(zlj_pb2.ZljOptions(deals=0))
    service = Identity("lobby", Role.SERVICE, expires=now + MAX_SECONDS[Role.SERVICE], issued=now)
    await players.CreateGame(create, metadata=_md(service))
    spectator = _md(Identity("watcher", Role.SPECTATOR, game_id, expires=now + MAX_SECONDS[Role.SPECTATOR], issued=now))
    watch = spectators.Watch(engine_pb2.WatchRequest(game_id=game_id), metadata=spectator)

    async def follow() -> None:
        async for message in watch:
            if message.HasField("envelope"):
                watched[0] += 1

    following = asyncio.create_task(follow())
    rng = SeededRandom(seed)
    done, last = 0, 5
    while done < acts:
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


async def _owners(url: str, stream: str) -> dict[int, int]:
    """Which engine (by its number) owns each partition, from the leases (the member names start with HOSTNAME)."""
    import nats

    client = await nats.connect(url)
    try:
        kv = await client.jetstream().key_value(f"paiju-owners-{stream}")
        owners = {}
        for p in range(PARTITIONS):
            member = ((await kv.get(f"p.{p}")).value or b"").decode()
            owners[p] = int(member.removeprefix("engine").split("-")[0])
        return owners
    finally:
        await client.close()


async def _play(addresses: list[str], owners: dict[int, int] | None, tables: int, acts: int) -> tuple[float, int]:
    """Play ``tables`` tables of ``acts`` acts: table i through engine i mod R, watched through i+1 mod R
    (``owners``: both through the game's owner)."""
    channels = [grpc.aio.insecure_channel(a) for a in addresses]
    stubs = [engine_pb2_grpc.EngineServiceStub(c) for c in channels]
    watched = [0]
    r = len(stubs)
    played = []
    for i in range(tables):
        game_id = f"s{i}-{uuid.uuid4().hex[:8]}"
        play, watch = (i % r, (i + 1) % r) if owners is None else (owners[partition_of(game_id, PARTITIONS)],) * 2
        played.append(_table(stubs[play], stubs[watch], game_id, i, watched, acts=acts))
    started = time.perf_counter()
    await asyncio.gather(*played)
    elapsed = time.perf_counter() - started - 0.5
    for channel in channels:
        await channel.close()
    return elapsed, watched[0]


def _configuration(
    url: str, keys: Path, replicas: int, tables: int, acts: int, *, to_owner: bool = False
) -> dict[str, Any]:
    stream = f"SCALE{replicas}{uuid.uuid4().hex[:4].upper()}"
    engines: list[tuple[subprocess.Popen[bytes], str, int]] = []
    try:
        for k in range(replicas):
            address, metrics = f"127.0.0.1:{free_port()}", free_port()
            env = {
                **os.environ,
                "HOSTNAME": f"engine{k}",  # the start of its name in the leases
                "PAIJU_ENGINE_ADDRESS": address,
                "NATS_URL": url,
                "PAIJU_GAMES_STREAM": stream,
                "PAIJU_GAMES_SUBJECT_PREFIX": f"scale.{stream.lower()}",
                "PAIJU_ENGINE_METRICS_PORT": str(metrics),
                "PAIJU_TRUSTED_KEYS": str(keys),
                "PAIJU_SEED_SECRET_FILE": str(_seed_file(keys, "scale-bench-seeds-" * 3)),
                "PAIJU_RATE_LIMITS": "off",
                "PAIJU_LOG_LEVEL": "warning",
                # dealt fairly (the default), with windows that wait for nobody: these bots send no contributions,
                # and a window that waited for them would stall every table
                "PAIJU_FIRST_DEAL_SECONDS": "0",
                "PAIJU_CONTRIBUTION_SECONDS": "0",
            }
            process = subprocess.Popen(  # its log is quiet but for warnings; its stop's are not the benchmark's
                [sys.executable, "-m", "paiju.cli", "engine"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            engines.append((process, address, metrics))
        for _, address, _ in engines:
            wait_until_serving(address)
        deadline = time.monotonic() + 60
        while True:  # the partitions shared out: every one owned, every replica with its share
            owned = [_metrics(m)["paiju_engine_partitions_owned"] for _, _, m in engines]
            if sum(owned) == PARTITIONS and min(owned) >= PARTITIONS // replicas:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"the partitions were not shared out: {owned}")
            time.sleep(0.2)
        before = [(_cpu_seconds(p.pid), _metrics(m)) for p, _, m in engines]
        owners = asyncio.run(_owners(url, stream)) if to_owner else None
        elapsed, watched = asyncio.run(_play([a for _, a, _ in engines], owners, tables, acts))
        after = [(_cpu_seconds(p.pid), _metrics(m)) for p, _, m in engines]
    finally:
        for process, _, _ in engines:
            process.terminate()
        for process, _, _ in engines:
            process.wait(timeout=30)
    per: list[dict[str, float]] = [
        {
            "feed_events": int(a[1]["paiju_engine_feed_events_total"] - b[1]["paiju_engine_feed_events_total"]),
            "acts": int(a[1]["paiju_engine_acts_total"] - b[1]["paiju_engine_acts_total"]),
            "cpu_s": round(a[0] - b[0], 2),
        }
        for b, a in zip(before, after, strict=True)
    ]
    events = asyncio.run(_events(url, stream))
    made = sum(p["acts"] for p in per)
    return {
        "replicas": replicas,
        "calls_to": "the owner" if to_owner else "any replica",
        "tables": tables,
        "events_total": events,
        "feed_events_max_replica": max(p["feed_events"] for p in per),
        "feed_share_bound": round(1.25 * events / replicas),
        "cpu_s_per_act": round(sum(p["cpu_s"] for p in per) / made, 5),
        "acts_per_s": round(made / elapsed, 1),
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=TABLES)
    parser.add_argument("--acts", type=int, default=ACTS, help="acts per table")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="runs of each configuration")
    parser.add_argument("--replicas", type=int, nargs="+", default=list(REPLICAS))
    args = parser.parse_args()
    rounds = args.rounds
    print(
        f"Engine replicas over one NATS: {args.tables} tables of random-legal bots, {args.acts} acts each, a "
        f"spectator each; medians of {rounds} runs (the largest feed of any run)"
    )
    with tempfile.TemporaryDirectory() as folder, embedded_nats(Path(folder) / "nats") as url:
        keys = Path(folder) / "keys.json"
        keys.write_text(Trust.of([LOBBY]).jwks())
        lines = []
        for r in args.replicas:
            runs, controls = [], []
            for _ in range(rounds):
                runs.append(_configuration(url, keys, r, args.tables, args.acts))
                if r > 1:
                    controls.append(
                        _configuration(url, keys, r, args.tables, args.acts, to_owner=True)["cpu_s_per_act"]
                    )
            line = sorted(runs, key=lambda run: run["cpu_s_per_act"])[len(runs) // 2]  # the median run
            line["acts_per_s"] = statistics.median(run["acts_per_s"] for run in runs)
            line["feed_events_max_replica"] = max(run["feed_events_max_replica"] for run in runs)
            line["feed_share_bound"] = min(run["feed_share_bound"] for run in runs)
            line["runs"] = rounds
            if controls:
                line["cpu_s_per_act_calls_to_owner"] = statistics.median(controls)
            print(json.dumps(line), flush=True)
            lines.append(line)
        base = lines[0]["cpu_s_per_act"]
        summary = {
            "cpu_per_act_over_one_replica": {str(x["replicas"]): round(x["cpu_s_per_act"] / base, 2) for x in lines},
            "cpu_per_act_any_replica_over_calls_to_owner": {
                str(x["replicas"]): round(x["cpu_s_per_act"] / x["cpu_s_per_act_calls_to_owner"], 2)
                for x in lines
                if "cpu_s_per_act_calls_to_owner" in x
            },
            "feed_share_within_bound": all(x["feed_events_max_replica"] <= x["feed_share_bound"] for x in lines),
        }
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
