"""Spectators for `bench/load.py`, in a process of their own (so that their CPU is measured apart from the probe's).

Each spectator is a guest of the lobby: `Guest`, `JoinGame` on its table (a spectator token), `GetView` for the
game's version, then `Watch` from the version before it (so the stream's first message, the game's last event,
arrives at once and says the watch is open), for as long as the process runs. Each watches on a connection to the
engine of its own, as spectators on machines of their own do (`floor.OWN_CONNECTION`: without it, gRPC would carry
every spectator of this process on one connection).

    python bench/load_watchers.py LOBBY ENGINE COUNT TABLE [TABLE ...]

The spectators are spread round-robin over the tables (evenly: COUNT / tables each, give or take one). Prints one
JSON line when every watch is open (or has failed): ``{"ready": n, "failed": k, "errors": {...}}``; then, for each
line ``count`` on stdin, what the watches received so far, and at SIGTERM (or when stdin closes) once more:
``{"messages": m, "ended": e, "cut": c, "cpu_s": s}`` (``cpu_s``: this process's CPU seconds so far, so that the
CPU per message received can be set against a bare streamed message's client half, `bench/floor.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import grpc

from paiju.platform import event_loop
from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_pb2, lobby_pb2_grpc

if TYPE_CHECKING:  # mypy reads bench/ as a package; `python bench/load_watchers.py` has bench/ itself on its path
    from bench.floor import OWN_CONNECTION
else:
    from floor import OWN_CONNECTION

CALL_SECONDS = 60.0
OPEN_AT_ONCE = 20
"""Spectators that sign in and open their watch at the same time (the rest wait their turn)."""


class Spectators:
    def __init__(self, lobby: str, engine: str) -> None:
        self.lobby = lobby
        self.engine = engine
        self.messages = 0
        self.ended = 0
        self.cut = 0
        self.errors: Counter[str] = Counter()
        self.channels: list[grpc.aio.Channel] = []

    async def spectate(self, table_id: str, opening: asyncio.Semaphore, opened: asyncio.Future[bool]) -> None:
        """One spectator of ``table_id``: sets ``opened`` once its watch delivers (False when it could not)."""
        lobby_channel = grpc.aio.insecure_channel(self.lobby)
        engine_channel = grpc.aio.insecure_channel(self.engine, options=OWN_CONNECTION)
        self.channels += [lobby_channel, engine_channel]
        try:
            async with opening:
                lobby: Any = lobby_pb2_grpc.LobbyServiceStub(lobby_channel)
                session = (await lobby.Guest(lobby_pb2.GuestRequest(), timeout=CALL_SECONDS)).session
                md = (("authorization", f"Bearer {session.token}"),)
                joined = await lobby.JoinGame(
                    lobby_pb2.JoinGameRequest(table_id=table_id), metadata=md, timeout=CALL_SECONDS
                )
                engine: Any = engine_pb2_grpc.EngineServiceStub(engine_channel)
                game_md = (("authorization", f"Bearer {joined.token}"),)
                view = await engine.GetView(
                    engine_pb2.GetViewRequest(game_id=joined.game_id), metadata=game_md, timeout=CALL_SECONDS
                )
                call = engine.Watch(
                    engine_pb2.WatchRequest(game_id=joined.game_id, from_version=max(0, view.version - 1)),
                    metadata=game_md,
                )
                iterator = call.__aiter__()
                first = await asyncio.wait_for(iterator.__anext__(), CALL_SECONDS)
        except Exception as e:  # counted and reported: the bench says how many could not watch
            code = e.code().name if isinstance(e, grpc.aio.AioRpcError) else type(e).__name__
            self.errors[f"open:{code}"] += 1
            opened.set_result(False)
            return
        opened.set_result(True)
        self.messages += 1
        try:
            if first.HasField("end"):
                self.ended += 1
                return
            async for response in iterator:
                self.messages += 1
                if response.HasField("end"):
                    self.ended += 1
                    return
        except grpc.aio.AioRpcError as e:
            if e.code() is not grpc.StatusCode.CANCELLED:
                self.cut += 1
                self.errors[f"watch:{e.code().name}"] += 1


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def received(spectators: Spectators) -> dict[str, Any]:
    return {
        "messages": spectators.messages,
        "ended": spectators.ended,
        "cut": spectators.cut,
        "errors": dict(spectators.errors),
        "cpu_s": round(cpu_seconds(), 3),
    }


def asked(spectators: Spectators, stopping: asyncio.Event) -> None:
    """A ``count`` line on stdin: print what the watches received so far; stdin closed: stop."""
    data = os.read(sys.stdin.fileno(), 4096)
    if not data:
        asyncio.get_running_loop().remove_reader(sys.stdin.fileno())
        stopping.set()
        return
    for _ in range(data.count(b"count")):
        print(json.dumps(received(spectators)), flush=True)


async def main(lobby: str, engine: str, count: int, tables: list[str]) -> None:
    spectators = Spectators(lobby, engine)
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    loop.add_reader(sys.stdin.fileno(), lambda: asked(spectators, stopping))
    opening = asyncio.Semaphore(OPEN_AT_ONCE)
    opened: list[asyncio.Future[bool]] = [loop.create_future() for _ in range(count)]
    tasks = [
        asyncio.create_task(spectators.spectate(tables[i % len(tables)], opening, opened[i])) for i in range(count)
    ]
    started = time.monotonic()
    results = await asyncio.gather(*opened)
    ready = sum(results)
    report = {"ready": ready, "failed": count - ready, "errors": dict(spectators.errors)}
    print(json.dumps({**report, "seconds": round(time.monotonic() - started, 1)}), flush=True)
    await stopping.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for channel in spectators.channels:
        with contextlib.suppress(Exception):
            await channel.close()
    print(json.dumps(received(spectators)), flush=True)


if __name__ == "__main__":
    # on the loop the services run on in this environment (PAIJU_EVENT_LOOP), as they are their clients
    event_loop.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]), event_loop.chosen())
