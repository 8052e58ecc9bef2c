"""Dependencies that vanish: the whole stack as processes, bots playing, then NATS gone for 150 seconds and
PostgreSQL for 60. Each service says so on its health (NOT_SERVING for its own name, so a load balancer takes it
out of rotation; the process itself stays alive), answers UNAVAILABLE meanwhile, and serves again by itself within
seconds of the dependency's return: play resumes without any restart, and no event is lost or stored twice. While a
dependency is away no service spins: its log and its memory stay within bounds (`Footprint`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
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
LOG_LINES_PER_MINUTE_AWAY = 60
"""At most this many log lines a minute from a service while a dependency is away: each loop that keeps trying warns
at its first failure and then once a minute (`paiju.platform.repeats`), and so do the refusals the outage makes call
after call (about 20 lines a minute from a lobby in all). A loop that warns at every try, a backoff apart, logged
140 lines a minute from the lobby; one that goes round at once logs thousands a second (a lobby's matchmaker once
logged 12,000)."""
GROWTH_AWAY_MIB = 64
"""At most this much more resident memory for a service at the end of an outage than at its start (a loop that
keeps something of every failed try grows by megabytes a second)."""


class Footprint:
    """What each service process wrote to its log and held in memory, measured at the start of an outage and
    compared at its end: an outage costs a service no growing log and no growing memory."""

    def __init__(self, processes: dict[str, int], logs: Path) -> None:
        self.processes = processes
        self.logs = logs
        self.started = time.monotonic()
        self.at_start = self._now()

    def _now(self) -> dict[str, tuple[int, int, float]]:
        """Each service's (log size in bytes, resident KiB, CPU seconds)."""
        found = {}
        for name, pid in self.processes.items():
            size = (self.logs / f"{name}.log").stat().st_size
            status = Path(f"/proc/{pid}/status").read_text()
            rss = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
            stat = Path(f"/proc/{pid}/stat").read_text()
            ticks = stat[stat.rindex(")") + 2 :].split()[11:13]  # utime, stime
            found[name] = (size, rss, sum(int(t) for t in ticks) / os.sysconf("SC_CLK_TCK"))
        return found

    def _logged(self, name: str, since: int) -> tuple[Counter[str], list[str], list[str]]:
        """The lines ``name`` logged after byte ``since`` of its log, by what they say (their event); the lines that
        are no JSON object, and the events logged with a traceback."""
        said: Counter[str] = Counter()
        unreadable: list[str] = []
        traced: list[str] = []
        with (self.logs / f"{name}.log").open("rb") as log:
            log.seek(since)
            for line in log:
                try:
                    entry = json.loads(line)
                    event = str(entry.get("event"))
                except (ValueError, AttributeError):
                    unreadable.append(line[:100].decode(errors="replace"))
                    said[line[:60].decode(errors="replace")] += 1
                    continue
                said[event] += 1
                if "exception" in entry:
                    traced.append(event)
        return said, unreadable, traced

    def check(self, what: str) -> None:
        """Assert the bounds over the outage so far; print each service's log lines (the most frequent three),
        growth and CPU."""
        minutes = (time.monotonic() - self.started) / 60
        for name, (_, rss, cpu) in self._now().items():
            size0, rss0, cpu0 = self.at_start[name]
            said, unreadable, traced = self._logged(name, size0)
            logged, grown, busy = sum(said.values()), (rss - rss0) / 1024, cpu - cpu0
            often = ", ".join(f"{n}× {event!r}" for event, n in said.most_common(3))
            print(
                f"{name} with {what}: {logged} log lines in {minutes:.1f} min ({often}), {grown:+.1f} MiB, "
                f"{busy / (minutes * 60):.1%} of a core"
            )
            assert logged <= LOG_LINES_PER_MINUTE_AWAY * max(minutes, 1), (
                f"{name} logged {logged} lines in {minutes:.1f} min with {what} ({often}): a loop that does not "
                f"back off? see {self.logs / (name + '.log')}"
            )
            assert grown <= GROWTH_AWAY_MIB, f"{name} grew by {grown:.0f} MiB in {minutes:.1f} min with {what}"
            # an operator's log reader takes each line as a JSON object; a dependency away is a warning, not a fault
            assert not unreadable, f"{name} logged {len(unreadable)} lines that are no JSON: {unreadable[:5]}"
            assert not traced, f"{name} logged tracebacks with {what}: {Counter(traced).most_common(5)}"


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
        pids = {}
        for name in SERVICES:
            signing = process_env(folder / "keys", Issuer.LOBBY) if name == "lobby" else {}
            pids[name] = services.start(name, name, env={**signing, **nats.env(name)}).pid  # its own NATS user
        for name, service in SERVICES.items():
            wait_until_serving(addresses[name], timeout=60, service=service)
        pids["bots"] = services.start("bots", "bots", env=process_env(folder / "keys", Issuer.BOTS)).pid
        tables = asyncio.run(open_bot_tables(addresses["lobby"]))
        games = [f"{table}-m1" for table in tables.values()]
        seconds_until("bots play", lambda: min(versions(addresses["engine"], games).values()) > 20, services, 60)

        # --- NATS is gone for 150 seconds ---------------------------------------------------------------------
        before = versions(addresses["engine"], games)
        nats.kill()
        down = time.monotonic()
        footprint = Footprint(pids, folder / "logs")
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
        footprint.check("NATS away")
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
        footprint = Footprint(pids, folder / "logs")
        for name in ("lobby", "scoring"):
            seconds_until(
                f"{name} says PostgreSQL is gone", has(addresses[name], SERVICES[name], "NOT_SERVING"), services
            )
        assert health(addresses["engine"], SERVICES["engine"]) == "SERVING", "the engine does not need PostgreSQL"
        listed = asyncio.run(_list_tables(addresses["lobby"]))
        assert listed == (grpc.StatusCode.UNAVAILABLE, "DEPENDENCY_UNAVAILABLE")
        time.sleep(POSTGRES_DOWN_SECONDS)
        services.check(except_for=("bots",))
        footprint.check("PostgreSQL away")
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
