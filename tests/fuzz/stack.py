"""The system under test, as production runs it: nats-server with JetStream, PostgreSQL, and the engine, lobby,
scoring and bot runner as processes of their own (`paiju.dev.stack`), rate limits off so the fuzzer is not
throttled, a table of each game full of bots playing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from paiju.dev.stack import Services, embedded_database, embedded_nats, open_bot_tables
from paiju.platform.probe import free_port, wait_until_serving
from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_pb2, lobby_pb2_grpc

from ..support.natsusers import NatsServer, authorization
from ..support.waiting import wait_until, wait_until_blocking
from .tokens import Credentials, mint_token

SERVICES = {"engine": "paiju.v1.EngineService", "lobby": "paiju.v1.LobbyService", "scoring": "paiju.v1.ScoringService"}
"""Each service process and the full name of its gRPC service (its health is reported under that name)."""
RUNNER_ID = "fuzz-stack-bots"
"""The bot runner's id: the actor of its seat leases in the LOBBY stream."""
BOT_THINK_SECONDS = 0.1
BOT_MOVES = 5
"""Versions a new game of bots must move by to show the stack still works."""


@dataclass
class Stack:
    folder: Path
    nats_url: str
    addresses: dict[str, str]
    """Service name (engine, lobby, scoring) -> its gRPC address."""
    credentials: Credentials
    services: Services
    tables: dict[str, str]
    """The bot tables playing from the start: game kind (zlj, tractor) -> table id."""

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    def alive(self) -> list[str]:
        """The problems of the processes: empty when every one of them is still running."""
        try:
            self.services.check()
        except RuntimeError as e:
            return [str(e)]
        return []

    def log_errors(self, processes: tuple[str, ...] = tuple(SERVICES)) -> dict[str, list[str]]:
        """The log lines at level error of ``processes`` (an INTERNAL answer is logged there, with its reference)."""
        found: dict[str, list[str]] = {}
        for log in sorted(self.logs / f"{name}.log" for name in processes):
            lines = [line for line in log.read_text(errors="replace").splitlines() if '"level": "error"' in line]
            if lines:
                found[log.stem] = lines
        return found


@contextlib.contextmanager
def running_stack(env: dict[str, str] | None = None) -> Iterator[Stack]:
    """Start everything, open a table of bots for each game; stop everything and remove its data afterwards."""
    # not pytest's tmp_path: run as root, PostgreSQL runs as its own user, which cannot enter that folder
    folder = Path(tempfile.mkdtemp(prefix="paiju-fuzz-"))
    folder.chmod(0o755)
    credentials = Credentials()
    try:
        with contextlib.ExitStack() as stack:
            keys = folder / "nats-keys"
            plain_url = stack.enter_context(embedded_nats(folder / "nats", authorization=authorization(keys)))
            users = NatsServer(plain_url, keys)  # each service its own NATS user; the fuzzer's reads the suite's
            nats_url = users.url
            database_url = stack.enter_context(embedded_database(folder / "postgres"))
            addresses = {name: f"127.0.0.1:{free_port()}" for name in SERVICES}
            common = {
                **os.environ,
                "NATS_URL": plain_url,
                "DATABASE_URL": database_url,
                "PAIJU_ENGINE_ADDRESS": addresses["engine"],
                "PAIJU_LOBBY_ADDRESS": addresses["lobby"],
                "PAIJU_SCORING_ADDRESS": addresses["scoring"],
                "PAIJU_ENGINE_METRICS_PORT": "0",
                "PAIJU_LOBBY_METRICS_PORT": "0",
                "PAIJU_SCORING_METRICS_PORT": "0",
                "PAIJU_RATE_LIMITS": "off",
                "PAIJU_LOG_LEVEL": "warning",
                "PAIJU_RUNNER_ID": RUNNER_ID,
                "PAIJU_BOT_THINK_SECONDS": str(BOT_THINK_SECONDS),
                **(env or {}),
            }
            services = Services(folder / "logs", common)
            stack.callback(services.stop)
            for name in SERVICES:
                services.start(name, name, env={**credentials.env(name), **users.env(name), **(env or {})})
            for name, service in SERVICES.items():
                wait_until_serving(addresses[name], timeout=90, service=service)
            services.start("bots", "bots", env={**credentials.env("bots"), **(env or {})})
            tables = asyncio.run(open_bot_tables(addresses["lobby"]))
            yield Stack(folder, nats_url, addresses, credentials, services, tables)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def health(address: str, service: str) -> str:
    """The gRPC health status of ``service`` at ``address`` ("UNREACHABLE" when the server does not answer)."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        except grpc.aio.AioRpcError as e:
            return f"UNREACHABLE ({e.code().name})"
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


async def healths(stack: Stack) -> dict[str, str]:
    """Each service's health under its own name."""
    return {name: await health(stack.addresses[name], service) for name, service in SERVICES.items()}


async def game_version(stack: Stack, game_id: str) -> int:
    """The game's version as the engine serves it to an analyst (-1: not there)."""
    token = mint_token(stack.credentials, "fuzz-proof", "analyst")
    async with grpc.aio.insecure_channel(stack.addresses["engine"]) as channel:
        engine: Any = engine_pb2_grpc.EngineServiceStub(channel)
        try:
            view = await engine.GetView(
                engine_pb2.GetViewRequest(game_id=game_id),
                metadata=(("authorization", f"Bearer {token}"),),
                timeout=5,
            )
        except grpc.aio.AioRpcError:
            return -1
        return int(view.version)


async def new_bot_table_plays(stack: Stack, seconds: float = 90.0) -> tuple[str, int, int]:
    """Open a new 拖拉机 table, seat four bots, start its match, and wait until the bots have moved its game; the
    game's id, its version once started, and the version it reached (no higher when no bot ever played)."""
    async with grpc.aio.insecure_channel(stack.addresses["lobby"]) as channel:
        lobby: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
        session = (await lobby.Guest(lobby_pb2.GuestRequest(), timeout=10)).session
        md = (("authorization", f"Bearer {session.token}"),)
        request = lobby_pb2.CreateTableRequest(name="after the fuzz", game=engine_pb2.GAME_TRACTOR)
        table = (await lobby.CreateTable(request, metadata=md, timeout=10)).table
        for _ in range(4):
            await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table.table_id), metadata=md, timeout=10)
        start = lobby_pb2.StartMatchRequest(table_id=table.table_id)
        game = (await lobby.StartMatch(start, metadata=md, timeout=30)).table.game_id
    first = await game_version(stack, game)
    version = first

    async def moved() -> bool:
        nonlocal version
        version = await game_version(stack, game)
        return version >= first + BOT_MOVES

    with contextlib.suppress(AssertionError):  # the bots did not play: the version reached tells the report so
        await wait_until(moved, f"the bots to move {game}", seconds=seconds, every=0.5)
    return game, first, version


def wait_for_bots(stack: Stack, games: list[str], moves: int = 2, seconds: float = 60.0) -> dict[str, int]:
    """Wait until every one of ``games`` has moved ``moves`` versions from where it is now; how far each moved (less
    than ``moves`` when the bots did not play within ``seconds``)."""

    def versions() -> dict[str, int]:
        return {game: asyncio.run(game_version(stack, game)) for game in games}

    first = versions()
    moved = dict.fromkeys(games, 0)

    def played() -> bool:
        moved.update((game, version - first[game]) for game, version in versions().items())
        return min(moved.values()) >= moves

    with contextlib.suppress(AssertionError):  # the bots did not play: how far each moved tells the report so
        wait_until_blocking(played, f"the bots to move {games}", seconds=seconds, every=0.5)
    return moved
