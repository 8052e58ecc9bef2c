"""The engine as an operator runs it: `paiju engine`, configured by the environment (its seed secret from a file, a
setting under the name it had before, which still works with a warning in the log), health, metrics, SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import grpc

from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.tokens import Identity, Role
from paiju.v1 import engine_pb2, engine_pb2_grpc, zlj_pb2

from ..support.credentials import mint_token, process_env
from ..support.waiting import wait_until

SEED_SECRET = "process-test-seeds-" * 3


def wait_for_health(address: str, deadline: float) -> None:
    try:
        wait_until_serving(address, max(0.1, deadline - time.monotonic()))
    except TimeoutError:
        raise AssertionError("the engine did not report SERVING") from None


def test_the_engine_process_serves_reports_and_stops_cleanly(nats_url: str) -> None:
    port, metrics = free_port(), free_port()
    stream = "P" + uuid.uuid4().hex[:10].upper()
    address = f"127.0.0.1:{port}"
    folder = Path(tempfile.mkdtemp(prefix="paiju-engine-"))
    seed = folder / "seed"
    seed.write_text(SEED_SECRET + "\n")
    env = {
        **os.environ,
        "PAIJU_ENGINE_ADDRESS": address,
        "NATS_URL": nats_url,
        "PAIJU_GAMES_STREAM": stream,
        "PAIJU_GAMES_SUBJECT_PREFIX": f"game.{stream.lower()}",
        "PAIJU_METRICS_PORT": str(metrics),  # PAIJU_ENGINE_METRICS_PORT's old name
        **process_env(folder),
        "PAIJU_SEED_SECRET_FILE": str(seed),
        "PAIJU_TIMER_SECONDS": "0.2",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "paiju.cli", "engine"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_for_health(address, time.monotonic() + 30)

        async def play() -> int:
            service = mint_token(Identity("lobby", Role.SERVICE, expires=int(time.time()) + 60))
            async with grpc.aio.insecure_channel(address) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)
                md = (("authorization", f"Bearer {service}"),)
                created = await stub.CreateGame(
                    engine_pb2.CreateGameRequest(game_id="p1", game=engine_pb2.GAME_TRACTOR), metadata=md
                )
                # a timed 砸六家 game nobody plays: the engine's timers play the expired turns
                timed = engine_pb2.CreateGameRequest(game_id="p2", game=engine_pb2.GAME_ZLJ)
                timed.zlj_options.CopyFrom(
                    zlj_pb2.ZljOptions(
                        deals=1,
                        turn_seconds=1,
                        reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
                        resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
                    )
                )
                await stub.CreateGame(timed, metadata=md)
                await stub.CreateGame(timed, metadata=md)  # a retried creation: the same game, not another
                analyst = mint_token(Identity("a", Role.ANALYST, expires=int(time.time()) + 60))

                async def timed_out() -> bool:
                    kinds = [
                        r.envelope.zlj.WhichOneof("event")
                        async for r in stub.Replay(
                            engine_pb2.ReplayRequest(game_id="p2"), metadata=(("authorization", f"Bearer {analyst}"),)
                        )
                    ]
                    return "turn_timed_out" in kinds

                # the first deal waits for contributions; Replay allows 30 calls a minute: at most 27 here
                await wait_until(timed_out, "a turn timed out by the engine's timers", seconds=40, every=1.5)
                return int(created.version)

        assert asyncio.run(play()) > 0
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        assert "paiju_engine_active_games 2.0" in text and "paiju_engine_act_seconds" in text
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
        assert process.returncode == 0, err.decode()
        lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
        assert [entry["event"] for entry in lines][-1] == "engine stopped"
        assert all("timestamp" in entry and "level" in entry for entry in lines)
        (deprecated,) = [entry for entry in lines if entry.get("variable")]
        assert (deprecated["level"], deprecated["variable"], deprecated["instead"]) == (
            "warning",
            "PAIJU_METRICS_PORT",
            "PAIJU_ENGINE_METRICS_PORT",
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
