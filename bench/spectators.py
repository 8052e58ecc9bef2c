"""Delayed spectators against live ones (docs/rules/spectators.md, "What it costs"), in one run.

Starts an embedded nats-server with JetStream and an engine in this process (as `paiju engine` builds it), and for
each policy — live, and delayed by 6 moves — a 砸六家 game watched by COUNT spectators over gRPC (one Watch stream
each, in this process too). Measured per move, with its watchers all open: the time from `Act` until every watcher has
received the event the move made due (the move itself when live, the one 6 moves before when delayed), and this
process's CPU seconds over that time (engine and watchers together); and, with nothing moving, the CPU the open
watchers cost over a few seconds. Prints one JSON line and a Markdown table: medians, and delayed / live ratios.

    python bench/spectators.py [COUNT] [MOVES]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from paiju.engine.bootstrap import build
from paiju.platform.probe import free_port
from paiju.platform.serving import build_server
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Identity, Issuer, Role, Signer, Trust
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, engine_pb2_grpc, spectators_pb2, zlj_pb2

LOBBY = Signer(Ed25519PrivateKey.generate(), f"{Issuer.LOBBY.value}.1")
ADMIN = Signer(Ed25519PrivateKey.generate(), f"{Issuer.ADMIN.value}.1")
"""The keys of the tokens the benchmark mints: the lobby's (players, spectators, its service token), an admin's
(the analyst who reads whose turn it is)."""
DELAY = 6
IDLE_SECONDS = 3.0


def _md(identity: Identity) -> tuple[tuple[str, str], ...]:
    signer = ADMIN if identity.role is Role.ANALYST else LOBBY
    return (("authorization", f"Bearer {signer.mint(identity)}"),)


def _token(role: Role, subject: str, game: str | None = None, seat: int | None = None) -> Any:
    lifetime = 240  # within every role's longest life (a service token: 300 s)
    return _md(Identity(subject, role, game=game, seat=seat, expires=int(time.time()) + lifetime))


class Crowd:
    """COUNT spectators' Watch streams of one game: the newest version each has received."""

    def __init__(self, stub: Any, game_id: str, count: int, from_version: int) -> None:
        md = _token(Role.SPECTATOR, "bench-spectator", game_id)
        self.received = [from_version] * count
        self.changed = asyncio.Event()
        request = engine_pb2.WatchRequest(game_id=game_id, from_version=from_version)
        self.calls = [stub.Watch(request, metadata=md) for _ in range(count)]
        self.tasks = [asyncio.create_task(self._read(i, call)) for i, call in enumerate(self.calls)]

    async def _read(self, index: int, call: Any) -> None:
        async for reply in call:
            if reply.HasField("envelope"):
                self.received[index] = reply.envelope.version
                self.changed.set()

    async def all_at(self, version: int) -> None:
        while min(self.received) < version:
            self.changed.clear()
            await self.changed.wait()

    async def close(self) -> None:
        for call in self.calls:
            call.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def _move(stub: Any, game_id: str, rng: SeededRandom) -> int:
    analyst = _token(Role.ANALYST, "bench-analyst")
    view = await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=analyst)
    seat = view.zlj.turn
    player = _token(Role.PLAYER, f"p{seat}", game_id, seat)
    legal = await stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=player)
    choice = legal.actions[rng.below(len(legal.actions))]
    acted = await stub.Act(
        engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, zlj=choice.zlj), metadata=player
    )
    return int(acted.version)


async def _policy_run(stub: Any, delay: int, count: int, moves: int) -> dict[str, Any]:
    game_id = f"bench-{delay}-{uuid.uuid4().hex[:6]}"
    request = engine_pb2.CreateGameRequest(
        game_id=game_id, game=engine_pb2.GAME_ZLJ, zlj_options=zlj_pb2.ZljOptions(deals=0)
    )
    if delay:
        request.spectators.CopyFrom(spectators_pb2.SpectatorPolicy(delay_moves=delay))
    for seat in range(6):
        request.seats.add(seat=seat, player_id=f"p{seat}")
    await stub.CreateGame(request, metadata=_token(Role.SERVICE, "bench-lobby"))
    rng = SeededRandom(delay + 1)
    version = 0
    for _ in range(DELAY + 4):
        version = await _move(stub, game_id, rng)
    crowd = Crowd(stub, game_id, count, version - delay)
    await crowd.all_at(version - delay)
    await asyncio.sleep(0.5)
    cpu = time.process_time()
    await asyncio.sleep(IDLE_SECONDS)
    idle_cpu = time.process_time() - cpu
    walls, cpus = [], []
    for _ in range(moves):
        wall, cpu = time.perf_counter(), time.process_time()
        version = await _move(stub, game_id, rng)
        await crowd.all_at(version - delay)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    await crowd.close()
    return {
        "delay_moves": delay,
        "watchers": count,
        "moves": moves,
        "move_to_all_ms_p50": round(statistics.median(walls) * 1000, 2),
        "cpu_ms_per_move_p50": round(statistics.median(cpus) * 1000, 2),
        "idle_cpu_ms_per_second": round(idle_cpu / IDLE_SECONDS * 1000, 2),
    }


async def _run(nats_url: str, count: int, moves: int) -> list[dict[str, Any]]:
    stream = "B" + uuid.uuid4().hex[:10].upper()
    store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"b.{stream.lower()}", partitions=16)
    _, service = await build(store, Trust.of([LOBBY, ADMIN]), seed_secret=b"bench-spectator-seeds-" * 2)
    server = build_server(service.policy)
    service.add_to(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        return [await _policy_run(stub, delay, count, moves) for delay in (0, DELAY)]
    finally:
        await channel.close()
        await server.stop(None)
        await store.close()


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    moves = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        scripts = Path(sysconfig.get_path("scripts"))
        nats = subprocess.Popen(
            [str(scripts / "nats-server"), "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", data],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(0.5)
            live, delayed = asyncio.run(_run(f"nats://127.0.0.1:{port}", count, moves))
        finally:
            nats.terminate()
            nats.wait(timeout=30)
    keys = ("move_to_all_ms_p50", "cpu_ms_per_move_p50", "idle_cpu_ms_per_second")
    ratios = {key: round(delayed[key] / live[key], 2) if live[key] else None for key in keys}
    print(json.dumps({"bench": "spectators", "live": live, "delayed": delayed, "delayed_over_live": ratios}))
    print()
    print(f"| {count} spectators, medians of {moves} moves | live | delayed by {DELAY} moves | delayed / live |")
    print("|---|---|---|---|")
    names = {
        "move_to_all_ms_p50": "a move to every watcher (ms)",
        "cpu_ms_per_move_p50": "CPU per move, engine and watchers (ms)",
        "idle_cpu_ms_per_second": "CPU while idle (ms per second)",
    }
    for key in keys:
        print(f"| {names[key]} | {live[key]} | {delayed[key]} | {ratios[key]} |")


if __name__ == "__main__":
    main()
