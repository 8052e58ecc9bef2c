"""The cluster rehearsal (`make cluster-test`): Paiju on a three-node NATS JetStream cluster over loopback, its
streams at three replicas, two engine processes, the lobby, scoring and a bot runner, all real processes.

Bots play 砸六家 and 拖拉机 tables. Mid-game the node leading the GAMES stream is killed with SIGKILL, then one
engine process. The games finish through the survivors; every game's log is complete (versions 1..N, each
command's events once) and the two surviving nodes store identical streams; scoring's tables equal a rebuild from
the streams. Then the killed node is started again on its old folder and catches up. The figures (events lost,
time to recover, time to catch up) are printed and written to ``cluster-rehearsal.json`` in the test's folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import nats
import pytest

from paiju.dev.cluster import NatsCluster, messages_on
from paiju.dev.stack import Services
from paiju.platform.postgres.pool import connect
from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Identity, Issuer, Role
from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_pb2, lobby_pb2_grpc, tractor_pb2, zlj_pb2

from ..support.credentials import mint_token, process_env

SEED_SECRET = "cluster-rehearsal-seeds-0123456789abcdef"
STREAMS = ("GAMES", "LOBBY", "TOURNAMENTS")
ZLJ_TABLES = 2
TRACTOR_TABLES = 1
SNAPSHOT = (
    "SELECT * FROM scoring_deals ORDER BY game_id, deal",
    "SELECT * FROM scoring_ledger ORDER BY game_id, kind, deal, who",
    "SELECT * FROM scoring_matches ORDER BY game_id",
    "SELECT * FROM scoring_player_stats ORDER BY player_id, game",
)

pytestmark = pytest.mark.cluster


def analyst() -> tuple[tuple[str, str], ...]:
    token = mint_token(Identity("rehearsal", Role.ANALYST, expires=int(time.time()) + 3600))
    return (("authorization", f"Bearer {token}"),)


def wait_for(what: str, check: Callable[[], bool], timeout: float, services: Services | None = None) -> float:
    """Seconds until ``check`` holds (AssertionError after ``timeout``)."""
    started = time.monotonic()
    while not check():
        if services is not None:
            services.check(except_for=("engine-a",))
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.2)
    return time.monotonic() - started


async def jetstream_ready(url: str) -> bool:
    try:
        client = await nats.connect(servers=url.split(","), connect_timeout=2, max_reconnect_attempts=0)
    except Exception:
        return False
    try:
        await client.jetstream(timeout=2).account_info()
        return True
    except Exception:
        return False
    finally:
        await client.close()


async def open_tables(lobby_address: str) -> list[str]:
    async with grpc.aio.insecure_channel(lobby_address) as channel:
        lobby: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
        session = (await lobby.Guest(lobby_pb2.GuestRequest())).session
        md = (("authorization", f"Bearer {session.token}"),)
        games = []
        for n in range(ZLJ_TABLES + TRACTOR_TABLES):
            request = lobby_pb2.CreateTableRequest(name=f"rehearsal {n}")
            if n < ZLJ_TABLES:
                request.game = engine_pb2.GAME_ZLJ
                request.zlj_options.CopyFrom(
                    zlj_pb2.ZljOptions(
                        deals=2,
                        reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
                        resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
                    )
                )
            else:
                request.game = engine_pb2.GAME_TRACTOR
            table = (await lobby.CreateTable(request, metadata=md)).table
            for _ in range(6 if n < ZLJ_TABLES else 4):
                await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table.table_id), metadata=md)
            started = await lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table.table_id), metadata=md)
            games.append(started.table.game_id)
        return games


async def versions(engines: str, games: list[str]) -> dict[str, tuple[int, bool]]:
    """Each game's version and whether it has ended, as the engines answer (any replica)."""
    found: dict[str, tuple[int, bool]] = {}
    async with grpc.aio.insecure_channel(engines) as channel:
        engine: Any = engine_pb2_grpc.EngineServiceStub(channel)
        for game_id in games:
            try:
                view = await engine.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=analyst(), timeout=5)
            except grpc.aio.AioRpcError:
                continue
            which = view.WhichOneof("view")
            ended = (
                view.zlj.phase == zlj_pb2.ZLJ_PHASE_ENDED
                if which == "zlj"
                else view.tractor.phase == tractor_pb2.TRACTOR_PHASE_ENDED
            )
            found[game_id] = (view.version, ended)
    return found


async def check_logs(url: str, games: list[str]) -> int:
    """Every game's log read back through the cluster: versions 1..N without a gap or a repeat, each command's
    events together; returns the number of events."""
    store = await JetStreamEventStore.connect(url, stream="GAMES", prefix="paiju.game", replicas=3)
    try:
        total = 0
        for game_id in games:
            stored = await store.load(game_id)
            assert [r.version for r in stored] == list(range(1, len(stored) + 1)), f"{game_id}: a gap or a repeat"
            seen: list[str] = []
            for r in stored:
                if not seen or seen[-1] != r.command_id:
                    assert r.command_id not in seen, f"{game_id}: command {r.command_id} stored twice"
                    seen.append(r.command_id)
            total += len(stored)
        every = await store.read_all()
        assert sorted({r.aggregate for r in every}) == sorted(games)
        assert len(every) == total, "events outside the games' logs"
        return total
    finally:
        await store.close()


async def snapshot(dsn: str) -> list[list[tuple[Any, ...]]]:
    pool: asyncpg.Pool[Any] = await connect(dsn)
    try:
        return [[tuple(r) for r in await pool.fetch(q)] for q in SNAPSHOT]
    finally:
        await pool.close()


async def scoring_checkpoint(dsn: str) -> int:
    pool: asyncpg.Pool[Any] = await connect(dsn)
    try:
        return int(await pool.fetchval("SELECT sequence FROM scoring_checkpoints WHERE projection = 'games'") or 0)
    finally:
        await pool.close()


def test_the_cluster_survives_a_nats_node_and_an_engine_and_the_node_catches_up(database_dsn: str) -> None:
    folder = Path(tempfile.mkdtemp(prefix="paiju-cluster-"))
    cluster = NatsCluster(folder / "nats")
    figures: dict[str, Any] = {}
    passed = False
    try:
        cluster.start()
        wait_for("JetStream cluster ready", lambda: asyncio.run(jetstream_ready(cluster.url)), 60)
        ports = {name: free_port() for name in ("engine-a", "engine-b", "lobby", "scoring")}
        engines = f"ipv4:127.0.0.1:{ports['engine-a']},127.0.0.1:{ports['engine-b']}"
        env = {
            **os.environ,
            "NATS_URL": cluster.url,
            "DATABASE_URL": database_dsn,
            **process_env(folder / "keys"),
            "PAIJU_SEED_SECRET": SEED_SECRET,
            "PAIJU_STREAM_REPLICAS": "3",
            "PAIJU_ENGINE_ADDRESS": engines,
            "PAIJU_LOBBY_ADDRESS": f"127.0.0.1:{ports['lobby']}",
            "PAIJU_SCORING_ADDRESS": f"127.0.0.1:{ports['scoring']}",
            "PAIJU_METRICS_PORT": "0",
            "PAIJU_LOBBY_METRICS_PORT": "0",
            "PAIJU_SCORING_METRICS_PORT": "0",
            "PAIJU_BOT_THINK_SECONDS": "0",
            "PAIJU_TIMER_SECONDS": "2",
            "PAIJU_LOG_LEVEL": "info",
        }
        services = Services(folder / "logs", env)
        try:
            for name in ("engine-a", "engine-b"):
                services.start(name, "engine", env={"PAIJU_ENGINE_ADDRESS": f"127.0.0.1:{ports[name]}"})
            for name in ("engine-a", "engine-b"):
                wait_until_serving(f"127.0.0.1:{ports[name]}", timeout=60)
            services.start("lobby", "lobby", env=process_env(folder / "keys", Issuer.LOBBY))
            services.start("scoring", "scoring")
            wait_until_serving(f"127.0.0.1:{ports['lobby']}", timeout=60, service="paiju.v1.LobbyService")
            wait_until_serving(f"127.0.0.1:{ports['scoring']}", timeout=60, service="paiju.v1.ScoringService")
            services.start("bots", "bots", env=process_env(folder / "keys", Issuer.BOTS))
            games = asyncio.run(open_tables(f"127.0.0.1:{ports['lobby']}"))
            state: dict[str, tuple[int, bool]] = {}

            def progressed(beyond: int) -> Callable[[], bool]:
                def check() -> bool:
                    state.update(asyncio.run(versions(engines, games)))
                    return len(state) == len(games) and sum(v for v, _ in state.values()) > beyond

                return check

            wait_for("the bots playing", progressed(60 * len(games)), 120, services)

            # 1. the node leading the GAMES stream is lost
            leader = asyncio.run(stream_leader(cluster.url, "GAMES"))
            before = sum(v for v, _ in state.values())
            cluster.kill(leader)
            killed_at = time.monotonic()
            figures["nats_node_killed"] = leader
            figures["seconds_to_progress_after_node_loss"] = round(
                wait_for("play after the node loss", progressed(before + 10), 120, services), 1
            )
            figures["games_stream_leader_after"] = asyncio.run(stream_leader(cluster.url, "GAMES"))

            # 2. then one engine process
            before = sum(v for v, _ in state.values())
            services.kill("engine-a")
            figures["seconds_to_progress_after_engine_loss"] = round(
                wait_for("play after the engine loss", progressed(before + 10), 120, services), 1
            )

            # 3. every game ends
            def ended() -> bool:
                state.update(asyncio.run(versions(engines, games)))
                return len(state) == len(games) and all(done for _, done in state.values())

            wait_for("every game ending", ended, 600, services)
            events = asyncio.run(check_logs(cluster.url, games))
            figures["events"] = events
            figures["events_lost"] = sum(v for v, _ in state.values()) - events  # the engines' versions vs the log

            # 4. the surviving nodes store the same streams
            survivors = [n.name for n in cluster.running()]
            states = {name: cluster.stream_states(name) for name in survivors}
            for stream in STREAMS:
                kept = [
                    {k: states[n][stream][k] for k in ("messages", "bytes", "first_seq", "last_seq")} for n in survivors
                ]
                assert all(k == kept[0] for k in kept), f"{stream} differs between {survivors}: {kept}"
            figures["games_stream_on_survivors"] = states[survivors[0]]["GAMES"]["messages"]

            # 5. scoring's tables equal a rebuild from the streams
            last = states[survivors[0]]["GAMES"]["last_seq"]
            wait_for("scoring catching up", lambda: asyncio.run(scoring_checkpoint(database_dsn)) >= last, 120)
            built = asyncio.run(snapshot(database_dsn))
            assert services.stop_one("scoring") == 0
            rebuild = Services(folder / "logs", env).start("rebuild", "scoring", "rebuild")
            assert rebuild.wait(timeout=300) == 0
            assert asyncio.run(snapshot(database_dsn)) == built
            assert len(built[2]) == len(games)  # one match row per game

            # 6. the lost node comes back on its folder and catches up
            cluster.start(leader)
            figures["nats_node_down_seconds"] = round(time.monotonic() - killed_at, 1)

            def caught_up() -> bool:
                try:
                    mine = cluster.stream_states(leader)
                except OSError:
                    return False
                return all(
                    stream in mine
                    and mine[stream]["last_seq"] == states[survivors[0]][stream]["last_seq"]
                    and mine[stream]["messages"] == states[survivors[0]][stream]["messages"]
                    for stream in STREAMS
                )

            figures["seconds_for_restarted_node_to_catch_up"] = round(
                wait_for("the node catching up", caught_up, 120), 1
            )
            # 7. byte for byte: each node in turn leads GAMES and serves the whole stream from its own copy
            copies = {
                node.name: asyncio.run(messages_on(cluster.url, node.name, "GAMES", "paiju.game"))
                for node in cluster.nodes
            }
            first = copies[cluster.nodes[0].name]
            assert len(first) == figures["events"]
            for name, copy in copies.items():
                assert copy == first, f"node {name} stores other GAMES messages than {cluster.nodes[0].name}"
            figures["nodes_with_identical_games_stream"] = len(copies)
        finally:
            services.stop()
        print("\ncluster rehearsal:", json.dumps(figures, indent=2))
        (folder.parent / "cluster-rehearsal.json").write_text(json.dumps(figures, indent=2))
        assert figures["events_lost"] == 0
        passed = True
    finally:
        cluster.stop()
        if not passed or os.environ.get("PAIJU_KEEP_REHEARSAL"):
            print("the rehearsal's logs and data are kept in", folder, file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)


async def stream_leader(url: str, stream: str) -> str:
    client = await nats.connect(servers=url.split(","), connect_timeout=2)
    try:
        for _ in range(100):
            try:
                info = await client.jetstream(timeout=2).stream_info(stream)
                if info.cluster is not None and info.cluster.leader:
                    return str(info.cluster.leader)
            except Exception:
                pass
            await asyncio.sleep(0.2)
        raise AssertionError(f"{stream} has no leader")
    finally:
        await client.close()
