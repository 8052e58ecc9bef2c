"""Dependencies that vanish: the whole stack as processes, bots playing, then NATS gone for 150 seconds and
PostgreSQL for 60. Each service says so on its health (NOT_SERVING for its own name, so a load balancer takes it
out of rotation; the process itself stays alive), answers UNAVAILABLE meanwhile, and serves again by itself within
seconds of the dependency's return: play resumes without any restart, and no event is lost or stored twice."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from paiju.dev.stack import Services, _create_database, open_bot_tables
from paiju.platform.postgres import embedded
from paiju.platform.postgres.pool import with_database
from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.tokens import Identity, Issuer, Role
from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_pb2, lobby_pb2_grpc

from ..engine.harness import refusal_of
from ..support.credentials import mint_token, process_env
from ..support.nats_server import RestartableNats
from ..support.waiting import SECONDS, wait_until_blocking

pytestmark = [pytest.mark.e2e, pytest.mark.outage]  # the stack as processes, its servers taken away

NATS_DOWN_SECONDS = 150
POSTGRES_DOWN_SECONDS = 60

SERVICES = {"engine": "paiju.v1.EngineService", "lobby": "paiju.v1.LobbyService", "scoring": "paiju.v1.ScoringService"}


def health(address: str, service: str) -> str:
    """The gRPC health status of ``service`` at ``address`` ("UNREACHABLE" when the server does not answer)."""

    async def check() -> str:
        async with grpc.aio.insecure_channel(address) as channel:
            stub: Any = health_pb2_grpc.HealthStub(channel)
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            except grpc.aio.AioRpcError:
                return "UNREACHABLE"
            return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))

    return asyncio.run(check())


def has(address: str, service: str, status: str) -> Callable[[], bool]:
    """Whether ``service`` at ``address`` reports ``status`` now (a condition for `seconds_until`)."""
    return lambda: health(address, service) == status


def seconds_until(what: str, condition: Callable[[], bool], services: Services, seconds: float = SECONDS) -> float:
    """Wait until ``condition()`` (a service that dies fails the wait at once); how long it took, which the test
    prints: it asserts that the stack recovered, and reports how fast, without holding it to a number."""
    started = time.monotonic()

    def holds() -> bool:
        services.check(except_for=("bots",))
        return condition()

    wait_until_blocking(holds, what, seconds=seconds, every=0.5)
    return time.monotonic() - started


def analyst() -> tuple[tuple[str, str], ...]:
    token = mint_token(Identity("outage-test", Role.ANALYST, expires=int(time.time()) + 3600))
    return (("authorization", f"Bearer {token}"),)


def versions(engine: str, games: list[str]) -> dict[str, int]:
    """Each game's version now (as the engine serves it)."""

    async def read() -> dict[str, int]:
        async with grpc.aio.insecure_channel(engine) as channel:
            stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
            found = {}
            for game in games:
                try:
                    found[game] = (
                        await stub.GetView(engine_pb2.GetViewRequest(game_id=game), metadata=analyst(), timeout=5)
                    ).version
                except grpc.aio.AioRpcError:
                    found[game] = -1
            return found

    return asyncio.run(read())


def logs_of(engine: str, games: list[str]) -> dict[str, list[engine_pb2.Envelope]]:
    async def read() -> dict[str, list[engine_pb2.Envelope]]:
        async with grpc.aio.insecure_channel(engine) as channel:
            stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
            return {
                game: [
                    r.envelope
                    async for r in stub.Replay(engine_pb2.ReplayRequest(game_id=game), metadata=analyst(), timeout=30)
                ]
                for game in games
            }

    return asyncio.run(read())


def test_nats_down_150_seconds_and_postgresql_down_60_seconds_with_bots_playing() -> None:
    folder = Path(tempfile.mkdtemp(prefix="paiju-outage-"))
    folder.chmod(0o755)  # PostgreSQL runs as its own user when the suite runs as root
    nats = RestartableNats(folder / "nats")
    nats.start()
    pg_port = free_port()
    pg_data = folder / "postgres"
    postgres = embedded.start(pg_data, port=pg_port)
    services: Services | None = None
    try:
        asyncio.run(_create_database(postgres.dsn, "paiju"))
        addresses = {name: f"127.0.0.1:{free_port()}" for name in SERVICES}
        env = {
            **os.environ,
            **process_env(folder / "keys"),
            "PAIJU_SEED_SECRET": "outage-test-seeds-" * 3,
            "DATABASE_URL": with_database(postgres.dsn, "paiju"),
            "PAIJU_ENGINE_ADDRESS": addresses["engine"],
            "PAIJU_LOBBY_ADDRESS": addresses["lobby"],
            "PAIJU_SCORING_ADDRESS": addresses["scoring"],
            "PAIJU_ENGINE_METRICS_PORT": "0",
            "PAIJU_LOBBY_METRICS_PORT": "0",
            "PAIJU_SCORING_METRICS_PORT": "0",
            "PAIJU_BOT_THINK_SECONDS": "0.05",
        }
        services = Services(folder / "logs", env)
        for name in SERVICES:
            signing = process_env(folder / "keys", Issuer.LOBBY) if name == "lobby" else {}
            services.start(name, name, env={**signing, **nats.env(name)})  # each service its own NATS user
        for name, service in SERVICES.items():
            wait_until_serving(addresses[name], timeout=60, service=service)
        services.start("bots", "bots", env=process_env(folder / "keys", Issuer.BOTS))
        tables = asyncio.run(open_bot_tables(addresses["lobby"]))
        games = [f"{table}-m1" for table in tables.values()]
        seconds_until("bots play", lambda: min(versions(addresses["engine"], games).values()) > 20, services, 60)

        # --- NATS is gone for 150 seconds ---------------------------------------------------------------------
        before = versions(addresses["engine"], games)
        nats.kill()
        down = time.monotonic()
        for name, service in SERVICES.items():
            noticed = seconds_until(f"{name} says NATS is gone", has(addresses[name], service, "NOT_SERVING"), services)
            assert health(addresses[name], "") == "SERVING", f"{name}: the process itself is alive"
            print(f"{name} NOT_SERVING {noticed:.1f} s after NATS went away")
        refused = asyncio.run(_engine_call(addresses["engine"], games[0]))
        assert refused == (grpc.StatusCode.UNAVAILABLE, "DEPENDENCY_UNAVAILABLE")
        while time.monotonic() - down < NATS_DOWN_SECONDS:
            services.check(except_for=("bots",))
            statuses = {n: health(addresses[n], s) for n, s in SERVICES.items()}
            assert set(statuses.values()) == {"NOT_SERVING"}, (
                f"{time.monotonic() - down:.0f} s without NATS: {statuses}"
            )
            time.sleep(5)
        nats.start()
        back = time.monotonic()
        for name, service in SERVICES.items():
            seconds_until(f"{name} serves again after NATS", has(addresses[name], service, "SERVING"), services)
        serving_again = time.monotonic() - back
        resumed = seconds_until(
            "play resumes after NATS",
            lambda: all(v > before[g] + 5 for g, v in versions(addresses["engine"], games).items()),
            services,
            90,
        )
        print(
            f"NATS: every service SERVING {serving_again:.1f} s after its return, play resumed within {resumed:.1f} s"
        )

        # --- PostgreSQL is gone for 60 seconds -----------------------------------------------------------------
        postgres.stop()
        for name in ("lobby", "scoring"):
            seconds_until(
                f"{name} says PostgreSQL is gone", has(addresses[name], SERVICES[name], "NOT_SERVING"), services
            )
        assert health(addresses["engine"], SERVICES["engine"]) == "SERVING", "the engine does not need PostgreSQL"
        listed = asyncio.run(_list_tables(addresses["lobby"]))
        assert listed == (grpc.StatusCode.UNAVAILABLE, "DEPENDENCY_UNAVAILABLE")
        time.sleep(POSTGRES_DOWN_SECONDS)
        services.check(except_for=("bots",))
        postgres = embedded.start(pg_data, port=pg_port)
        middle = versions(addresses["engine"], games)
        back = time.monotonic()
        for name in ("lobby", "scoring"):
            seconds_until(
                f"{name} serves again after PostgreSQL", has(addresses[name], SERVICES[name], "SERVING"), services
            )
        print(f"PostgreSQL: lobby and scoring SERVING {time.monotonic() - back:.1f} s after its return")
        assert asyncio.run(_list_tables(addresses["lobby"])) == (grpc.StatusCode.OK, "")
        seconds_until(
            "play goes on after PostgreSQL",
            lambda: all(v > middle[g] + 5 for g, v in versions(addresses["engine"], games).items()),
            services,
            90,
        )

        # --- nothing lost, nothing stored twice, no process restarted ------------------------------------------
        services.check()
        for game, envelopes in logs_of(addresses["engine"], games).items():
            assert [e.version for e in envelopes] == list(range(1, len(envelopes) + 1)), game
            per_command = Counter((e.command_id, e.version) for e in envelopes)
            assert all(n == 1 for n in per_command.values()), game
            # one command's events are stored together, once: versions of a command id are contiguous
            spans: dict[str, list[int]] = {}
            for e in envelopes:
                spans.setdefault(e.command_id, []).append(e.version)
            for command, stored in spans.items():
                assert stored == list(range(stored[0], stored[0] + len(stored))), (game, command)
    finally:
        if services is not None:
            services.stop()
        with contextlib.suppress(Exception):
            nats.kill()
        with contextlib.suppress(Exception):
            postgres.stop()
        shutil.rmtree(folder, ignore_errors=True)


async def _engine_call(engine: str, game: str) -> tuple[grpc.StatusCode, str]:
    async with grpc.aio.insecure_channel(engine) as channel:
        stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
        return await refusal_of(stub.GetView(engine_pb2.GetViewRequest(game_id=game), metadata=analyst(), timeout=5))


async def _list_tables(lobby: str) -> tuple[grpc.StatusCode, str]:
    async with grpc.aio.insecure_channel(lobby) as channel:
        stub: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
        token = mint_token(Identity("someone", Role.ANALYST, expires=int(time.time()) + 600))
        md = (("authorization", f"Bearer {token}"),)
        return await refusal_of(stub.ListTables(lobby_pb2.ListTablesRequest(), metadata=md, timeout=5))
