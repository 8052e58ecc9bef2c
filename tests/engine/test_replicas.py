"""Two engine processes serve one game: one is killed with SIGKILL mid-game, the other finishes it.

The log loses and repeats nothing, and equals the log of the same game played on one process: seeds are
derived from the deployment secret and the game position, so every replica decides alike.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import grpc

from paiju.platform.probe import free_port
from paiju.platform.tokens import Identity, Role
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, engine_pb2_grpc, zlj_pb2

from ..support.credentials import mint_token, process_env
from .test_process import wait_for_health

SEED_SECRET = "replica-test-seeds-" * 3


def start_engine(nats_url: str, stream: str) -> tuple[subprocess.Popen[bytes], str]:
    address = f"127.0.0.1:{free_port()}"
    env = {
        **os.environ,
        "PAIJU_ENGINE_ADDRESS": address,
        "NATS_URL": nats_url,
        "PAIJU_GAMES_STREAM": stream,
        "PAIJU_GAMES_SUBJECT_PREFIX": f"game.{stream.lower()}",
        "PAIJU_ENGINE_METRICS_PORT": "0",
        **process_env(Path(tempfile.mkdtemp(prefix="paiju-replica-"))),
        "PAIJU_SEED_SECRET": SEED_SECRET,
        "PAIJU_RATE_LIMITS": "off",  # the test's bots poll one engine as fast as they can
        "PAIJU_FAIR_PROTOCOL": "1",  # seats contribute as they come (version 2: test_fair_dealing.py)
        "PAIJU_LOG_LEVEL": "warning",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "paiju.cli", "engine"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        wait_for_health(address, time.monotonic() + 30)
    except AssertionError:
        process.kill()
        raise AssertionError(process.communicate()[1].decode(errors="replace")[-3000:]) from None
    return process, address


def md(identity: Identity) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {mint_token(identity)}"),)


async def play(addresses: list[str], kill: subprocess.Popen[bytes] | None, kill_after: int) -> list[tuple[Any, ...]]:
    """Play game r1 with seeded random bots through the first address; optionally SIGKILL ``kill`` after
    ``kill_after`` acts and go on through the next address. Returns the log as an analyst replays it."""
    expires = int(time.time()) + 900  # as long as a game token may live
    seats = [md(Identity(f"p{s}", Role.PLAYER, "r1", s, expires)) for s in range(6)]
    spectator = md(Identity("w", Role.SPECTATOR, "r1", expires=expires))
    rng = SeededRandom(17)
    current = 0
    channel = grpc.aio.insecure_channel(addresses[current])
    stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
    create = engine_pb2.CreateGameRequest(game_id="r1", game=engine_pb2.GAME_ZLJ)
    create.zlj_options.CopyFrom(
        zlj_pb2.ZljOptions(
            deals=1, reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL
        )
    )
    service = md(Identity("lobby", Role.SERVICE, expires=int(time.time()) + 300))
    await stub.CreateGame(create, metadata=service)
    acts = 0
    last: engine_pb2.ActRequest | None = None
    while True:
        view = await stub.GetView(engine_pb2.GetViewRequest(game_id="r1"), metadata=spectator)
        if view.zlj.phase == zlj_pb2.ZLJ_PHASE_ENDED:
            break
        if view.zlj.phase == zlj_pb2.ZLJ_PHASE_SHUFFLE:  # every seat adds to the committed shuffle, which deals it
            for seat in range(6):
                mine = zlj_pb2.ZljContribute(seat=seat, contribution=b"seat %d" % seat)
                contribute = zlj_pb2.ZljCommand(contribute=mine)
                await stub.Act(
                    engine_pb2.ActRequest(game_id="r1", command_id=f"c{acts}", zlj=contribute), metadata=seats[seat]
                )
                acts += 1
            continue
        seat = view.zlj.turn
        legal = await stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id="r1"), metadata=seats[seat])
        last = engine_pb2.ActRequest(
            game_id="r1", command_id=f"c{acts}", zlj=legal.actions[rng.below(len(legal.actions))].zlj
        )
        answer = await stub.Act(last, metadata=seats[seat])
        acts += 1
        if kill is not None and acts == kill_after:
            kill.send_signal(signal.SIGKILL)
            kill.wait()
            await channel.close()
            current += 1
            channel = grpc.aio.insecure_channel(addresses[current])
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            # the client never saw its answer, say, and retries through the other engine: same answer
            again = await stub.Act(last, metadata=seats[seat])
            assert list(again.events) == list(answer.events) and again.version == answer.version
    analyst = md(Identity("a", Role.ANALYST, expires=expires))
    log = [
        (r.envelope.version, r.envelope.command_id, r.envelope.zlj.SerializeToString(deterministic=True))
        async for r in stub.Replay(engine_pb2.ReplayRequest(game_id="r1"), metadata=analyst)
    ]
    await channel.close()
    return log


def test_a_game_survives_the_sigkill_of_its_engine(nats_url: str) -> None:
    alone_stream = "A" + uuid.uuid4().hex[:10].upper()
    alone, address = start_engine(nats_url, alone_stream)
    try:
        reference = asyncio.run(play([address], None, 0))
    finally:
        alone.terminate()
        alone.wait(timeout=30)

    stream = "R" + uuid.uuid4().hex[:10].upper()
    first, first_address = start_engine(nats_url, stream)
    second, second_address = start_engine(nats_url, stream)
    try:
        log = asyncio.run(play([first_address, second_address], first, kill_after=60))
    finally:
        for process in (first, second):
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)
    assert [v for v, _, _ in log] == list(range(1, len(log) + 1)), "no event lost or repeated"
    assert log == reference, "the same game on one process has the same log"
