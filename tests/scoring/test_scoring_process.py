"""`paiju scoring` as a process: killed with SIGKILL mid-projection and started again, its tables equal a clean
`paiju scoring rebuild` of the same streams (nothing lost, nothing applied twice)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import asyncpg
import grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from paiju.engine.games import Games
from paiju.platform.partitions import PARTITIONS
from paiju.platform.postgres.pool import connect
from paiju.platform.probe import free_port
from paiju.scoring.projector import checkpoint
from paiju.scoring.readmodels import migrate_scoring

from ..support.credentials import process_env
from ..support.waiting import wait_until_blocking
from .recorded import open_games, record_tractor, record_zlj
from .test_readmodels import snapshot

SHARD = "games.0"
"""The shard of the games projection that reads partition 0, and with it every game stored before the stream had
partitions: the games recorded here, on a stream the scoring process gives partitions at its start (an upgrade)."""


async def record(nats_url: str) -> tuple[str, str, int]:
    store, stream, prefix = await open_games(nats_url)
    games = Games(store)
    try:
        for n in range(4):
            await record_zlj(games, f"z-{n}", [f"z{n}{i}" for i in range(6)], seed=n, deals=2)
            await record_tractor(games, f"t-{n}", [f"t{n}{i}" for i in range(4)], seed=100 + n)
        last = (await store.read_all())[-1].sequence
    finally:
        await store.close()
    return stream, prefix, last


async def read(database_dsn: str) -> tuple[int, dict[str, list[tuple[Any, ...]]]]:
    pool: asyncpg.Pool[Any] = await connect(database_dsn)
    try:
        await migrate_scoring(pool)  # (what the process does at start; applied once whoever comes first)
        return await checkpoint(pool, SHARD), await snapshot(pool)
    finally:
        await pool.close()


def reflected(address: str) -> set[str]:
    """The services a server lists through gRPC reflection (v1alpha)."""
    with grpc.insecure_channel(address) as channel:
        info: Any = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo  # (untyped stubs)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        for answer in info(iter([request]), timeout=10):
            return {service.name for service in answer.list_services_response.service}
    return set()


async def made(url: str, stream: str, prefix: str, partitions: int = 0) -> None:
    """``stream`` made, or given ``partitions``, as its owner does at its start."""
    from paiju.platform.store.jetstream import JetStreamEventStore

    await (await JetStreamEventStore.connect(url, stream=stream, prefix=prefix, partitions=partitions)).close()


def test_a_scoring_process_killed_mid_projection_resumes_and_equals_a_rebuild(nats_url: str, database_dsn: str) -> None:
    stream, prefix, last = asyncio.run(record(nats_url))
    suffix = stream.lower()
    env = {
        **os.environ,
        "NATS_URL": nats_url,
        "DATABASE_URL": database_dsn,
        **process_env(Path(tempfile.mkdtemp(prefix="paiju-scoring-"))),
        "PAIJU_GAMES_STREAM": stream,
        "PAIJU_GAMES_SUBJECT_PREFIX": prefix,
        "PAIJU_LOBBY_STREAM": f"L{suffix.upper()}",
        "PAIJU_LOBBY_SUBJECT_PREFIX": f"l{suffix}.lobby",
        "PAIJU_TOURNAMENTS_STREAM": f"T{suffix.upper()}",
        "PAIJU_TOURNAMENTS_SUBJECT_PREFIX": f"t{suffix}.tour",
        "PAIJU_SCORING_METRICS_PORT": "0",
        "PAIJU_SCORING_BATCH": "40",
        "PAIJU_LOG_LEVEL": "warning",
    }

    # the streams scoring reads and never makes or changes, as their owners leave them: the lobby's made, the games'
    # given its partitions (what the engine does at its start to a stream stored before partitions)
    asyncio.run(made(nats_url, env["PAIJU_LOBBY_STREAM"], env["PAIJU_LOBBY_SUBJECT_PREFIX"]))
    asyncio.run(made(nats_url, stream, prefix, partitions=PARTITIONS))
    metrics_port = free_port()
    addresses: list[str] = []

    def scoring(*args: str) -> subprocess.Popen[bytes]:
        address = f"127.0.0.1:{free_port()}"
        addresses.append(address)
        extra = {"PAIJU_SCORING_ADDRESS": address, "PAIJU_SCORING_METRICS_PORT": str(metrics_port)}
        return subprocess.Popen([sys.executable, "-m", "paiju.cli", "scoring", *args], env={**env, **extra})

    def applied(process: subprocess.Popen[bytes]) -> int:
        """How many events the projection has applied (checkpointed) so far; the process must still run."""
        assert process.poll() is None, f"scoring exited with {process.returncode}"
        return asyncio.run(read(database_dsn))[0]

    first = scoring()
    try:
        done = wait_until_blocking(lambda: applied(first), "scoring to apply a batch", seconds=60, every=0.01)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
    assert 0 < done < last, f"the kill came too late to test anything ({done} of {last})"

    second = scoring()
    try:
        wait_until_blocking(
            lambda: applied(second) >= last,
            f"the second scoring process to apply the {last} events",
            seconds=90,
            every=0.1,
            explain=lambda: f"it applied {asyncio.run(read(database_dsn))[0]}",
        )
        # its metrics: the projection's, the gRPC server's; none of the engine's
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as answer:
            metrics = answer.read().decode()
        assert f'paiju_scoring_events_applied_total{{projection="{SHARD}"}}' in metrics
        assert f'paiju_scoring_checkpoint{{projection="{SHARD}"}} {float(last)}' in metrics
        assert "paiju_engine_" not in metrics
        # reflection names both services it serves, for grpcurl and other generic clients
        assert {"paiju.v1.ScoringService", "paiju.v1.RatingsService"} <= reflected(addresses[-1])
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=30) == 0
    finally:
        if second.poll() is None:
            second.kill()
    _, resumed = asyncio.run(read(database_dsn))
    assert len(resumed["scoring_matches"]) == 8

    rebuild = subprocess.run(
        [sys.executable, "-m", "paiju.cli", "scoring", "rebuild"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rebuild.returncode == 0, rebuild.stderr
    assert '"games_events"' in rebuild.stdout
    assert asyncio.run(read(database_dsn))[1] == resumed
