"""A full log, seen and survived: JetStream's store is small (``max_file_store``), bots play until it is full. The
engine then says so — NOT_SERVING on its health, ``paiju_store_full{stream="GAMES"}`` 1 on its metrics — and answers
UNAVAILABLE (retryable) at once; the lobby and scoring say so too at their first append refused (a table opened, a
tournament created), each of its own stream; once the operator gives nats-server room and restarts it
(docs/operations.md, "A full log"), the three are SERVING again by themselves, play resumes, the lobby and scoring
take their writes, and no event was lost or stored twice."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
import nats as nats_client
import pytest

from paiju.dev.stack import Services, _create_database, open_bot_tables
from paiju.platform.postgres import embedded
from paiju.platform.postgres.pool import with_database
from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.store import Recorded
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Identity, Issuer, Role
from paiju.v1 import lobby_pb2, lobby_pb2_grpc, scoring_pb2, scoring_pb2_grpc
from paiju.v1.engine_pb2 import GAME_ZLJ

from ..engine.harness import refusal_of
from ..support.credentials import bearer, mint_token, process_env
from ..support.nats_server import RestartableNats
from .test_outages import SERVICES, _engine_call, has, health, seconds_until

pytestmark = [pytest.mark.e2e, pytest.mark.outage]  # the stack as processes, its log's store filled

SMALL_STORE = "max_file_store: 1MB"
ROOMY_STORE = "max_file_store: 256MB"


def metric(port: int, name: str) -> float | None:
    """A sample's value on a Prometheus ``/metrics`` page (``None``: not there)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:  # loopback
        for line in page.read().decode().splitlines():
            if line.startswith((name + " ", name + "{")):
                if name + "{" in line and "}" not in line:
                    continue
                return float(line.rsplit(" ", 1)[1])
    return None


async def stored(url: str) -> tuple[int, dict[str, list[Recorded]]]:
    """The games' stream's last sequence, and every game's events as stored."""
    store = JetStreamEventStore(await nats_client.connect(url), "GAMES", "paiju.game")
    try:
        await store.discover()
        last = (await store.client.jetstream().stream_info("GAMES")).state.last_seq
        return last, {game: await store.load(game) for game in await store.aggregates()}
    finally:
        await store.close()


async def _write(service: str, address: str, attempt: str) -> tuple[grpc.StatusCode, str]:
    """An operator's append to the lobby's or scoring's own stream (a table opened, a tournament created): its
    answer."""
    admin = bearer(mint_token(Identity("operator", Role.ADMIN, expires=int(time.time()) + 600)))
    async with grpc.aio.insecure_channel(address) as channel:
        if service == SERVICES["lobby"]:
            lobby: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
            table = lobby_pb2.CreateTableRequest(name=f"table {attempt}", game=GAME_ZLJ)
            return await refusal_of(lobby.CreateTable(table, metadata=admin, timeout=15))
        scoring: Any = scoring_pb2_grpc.ScoringServiceStub(channel)
        cup = scoring_pb2.CreateTournamentRequest(
            command_id=f"full-{attempt}", name=f"Cup {attempt}", game="zlj", rounds=1
        )
        return await refusal_of(scoring.CreateTournament(cup, metadata=admin, timeout=15))


def test_a_full_store_makes_the_engine_not_serving_and_it_serves_again_once_nats_has_room() -> None:
    folder = Path(tempfile.mkdtemp(prefix="paiju-full-"))
    folder.chmod(0o755)  # PostgreSQL runs as its own user when the suite runs as root
    nats = RestartableNats(folder / "nats", jetstream=SMALL_STORE)
    nats.start()
    postgres = embedded.start(folder / "postgres", port=free_port())
    services: Services | None = None
    try:
        asyncio.run(_create_database(postgres.dsn, "paiju"))
        addresses = {name: f"127.0.0.1:{free_port()}" for name in SERVICES}
        engine_metrics, lobby_metrics, scoring_metrics = free_port(), free_port(), free_port()
        env = {
            **os.environ,
            **process_env(folder / "keys"),
            "PAIJU_SEED_SECRET": "full-store-test-seeds-" * 3,
            "DATABASE_URL": with_database(postgres.dsn, "paiju"),
            "PAIJU_ENGINE_ADDRESS": addresses["engine"],
            "PAIJU_LOBBY_ADDRESS": addresses["lobby"],
            "PAIJU_SCORING_ADDRESS": addresses["scoring"],
            "PAIJU_ENGINE_METRICS_PORT": str(engine_metrics),
            "PAIJU_LOBBY_METRICS_PORT": str(lobby_metrics),
            "PAIJU_SCORING_METRICS_PORT": str(scoring_metrics),
            "PAIJU_BOT_THINK_SECONDS": "0",
            "PAIJU_RATE_LIMITS": "off",  # the bots play flat out: the store must fill, not their calls be throttled
        }
        services = Services(folder / "logs", env)
        for name in SERVICES:
            signing = process_env(folder / "keys", Issuer.LOBBY) if name == "lobby" else {}
            services.start(name, name, env={**signing, **nats.env(name)})
        for name, service in SERVICES.items():
            wait_until_serving(addresses[name], timeout=60, service=service)
        services.start("bots", "bots", env=process_env(folder / "keys", Issuer.BOTS))
        tables = asyncio.run(open_bot_tables(addresses["lobby"]))
        games = [f"{table}-m1" for table in tables.values()]
        engine = addresses["engine"], SERVICES["engine"]
        lobby, scoring = (addresses["lobby"], SERVICES["lobby"]), (addresses["scoring"], SERVICES["scoring"])

        # --- the store fills under the bots ---------------------------------------------------------------------
        filled = seconds_until("the store to fill: the engine NOT_SERVING", has(*engine, "NOT_SERVING"), services, 240)
        print(f"the engine NOT_SERVING {filled:.1f} s after the bots started")
        assert metric(engine_metrics, 'paiju_store_full{stream="GAMES"}') == 1.0
        assert (metric(engine_metrics, 'paiju_store_full_refusals_total{stream="GAMES"}') or 0) >= 1
        assert health(engine[0], "") == "SERVING", "the process itself is alive: nothing restarts it"
        code, reason = asyncio.run(_engine_call(engine[0], games[0]))
        assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "DEPENDENCY_UNAVAILABLE")
        # it stays so while the store is full: the engine lets calls in again a while after the last refusal, their
        # appends are refused again, and it is NOT_SERVING again
        seconds_until("the engine to let calls in again", has(*engine, "SERVING"), services, 60)
        seconds_until("the engine refused again: NOT_SERVING", has(*engine, "NOT_SERVING"), services, 60)
        assert metric(engine_metrics, 'paiju_store_full{stream="GAMES"}') == 1.0
        # the lobby and scoring: at their first append refused, each answers UNAVAILABLE and is NOT_SERVING
        others = ((lobby, lobby_metrics, "LOBBY"), (scoring, scoring_metrics, "TOURNAMENTS"))
        for (address, service), port, stream in others:
            answer = asyncio.run(_write(service, address, "while-full"))
            assert answer == (grpc.StatusCode.UNAVAILABLE, "DEPENDENCY_UNAVAILABLE"), service
            seconds_until(f"{service} NOT_SERVING", has(address, service, "NOT_SERVING"), services, 4)
            assert metric(port, f'paiju_store_full{{stream="{stream}"}}') == 1.0, service
            assert (metric(port, f'paiju_store_full_refusals_total{{stream="{stream}"}}') or 0) >= 1, service

        # --- the operator gives the server room and restarts it ---------------------------------------------------
        nats.stop()
        nats.jetstream = ROOMY_STORE
        nats.start()
        back = time.monotonic()
        seconds_until("the engine to serve again", has(*engine, "SERVING"), services, 90)
        print(f"the engine SERVING again {time.monotonic() - back:.1f} s after nats-server had room")
        at_return = asyncio.run(stored(nats.url))
        resumed = seconds_until(
            "play to resume: the games' stream grows",
            lambda: asyncio.run(stored(nats.url))[0] > at_return[0] + 100,
            services,
            120,
        )
        print(f"play resumed within {resumed:.1f} s")
        seconds_until(
            "paiju_store_full back to 0",
            lambda: metric(engine_metrics, 'paiju_store_full{stream="GAMES"}') == 0.0,
            services,
            30,
        )
        assert has(*engine, "SERVING")()
        # the lobby and scoring serve and take their writes again
        for (address, service), port, stream in others:
            seconds_until(f"{service} to serve again", has(address, service, "SERVING"), services, 30)
            assert asyncio.run(_write(service, address, "after")) == (grpc.StatusCode.OK, ""), service
            assert metric(port, f'paiju_store_full{{stream="{stream}"}}') == 0.0, service

        # --- nothing lost, nothing stored twice ------------------------------------------------------------------
        services.check()
        _, games_stored = asyncio.run(stored(nats.url))
        assert len(games_stored) >= len(tables), games_stored.keys()
        for game, recorded in games_stored.items():
            assert [r.version for r in recorded] == list(range(1, len(recorded) + 1)), game
            assert all(n == 1 for n in Counter((r.command_id, r.version) for r in recorded).values()), game
    finally:
        if services is not None:
            services.stop()
        with contextlib.suppress(Exception):
            nats.kill()
        with contextlib.suppress(Exception):
            postgres.stop()
        shutil.rmtree(folder, ignore_errors=True)
