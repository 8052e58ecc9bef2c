"""One move traced across every process: the engine, the lobby and scoring run as processes of their own
(`paiju.dev.stack.Services`, as `make run` starts them) and export their spans over OTLP/gRPC to a receiver of the
suite (`tests.support.otlp_receiver`); a client in this process, traced as well, makes one move while two other seats
watch the game. The move's spans must join into one trace — the client's call, the engine's server span, its
append to the stream, the message each watcher is sent — and the batches of the lobby's and scoring's consumers
that fold the move must link to its append."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from paiju.dev.stack import Services
from paiju.platform import tracing
from paiju.platform.channels import channel
from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.settings import NATS_SEED
from paiju.v1 import engine_pb2, engine_pb2_grpc, zlj_pb2

from ..fuzz.tokens import Credentials, mint_token
from ..support.otlp_receiver import Received, Receiver, otlp_receiver
from ..support.waiting import wait_until

pytestmark = pytest.mark.e2e  # the services as processes

SERVICES = {"engine": "paiju.v1.EngineService", "lobby": "paiju.v1.LobbyService", "scoring": "paiju.v1.ScoringService"}
CLIENT = "paiju-test-client"
TRACE_FILE = os.environ.get("PAIJU_TRACE_OUT", "")
"""Where to write the move's spans as JSON lines (the operations guide's trace is taken from it), when set."""


@pytest.fixture
def traced_stack(nats_url: str, database_dsn: str) -> Iterator[tuple[Receiver, str, dict[str, str], Credentials]]:
    """The engine, lobby and scoring as processes exporting their spans to a receiver; the receiver, its endpoint,
    the services' addresses and the credentials they trust."""
    suffix = uuid.uuid4().hex[:8].upper()
    folder = Path(tempfile.mkdtemp(prefix="paiju-traces-"))
    credentials = Credentials()
    with otlp_receiver() as (receiver, endpoint):
        addresses = {name: f"127.0.0.1:{free_port()}" for name in SERVICES}
        env = {
            **os.environ,
            "NATS_URL": nats_url,
            "DATABASE_URL": database_dsn,
            "PAIJU_ENGINE_ADDRESS": addresses["engine"],
            "PAIJU_LOBBY_ADDRESS": addresses["lobby"],
            "PAIJU_SCORING_ADDRESS": addresses["scoring"],
            "PAIJU_ENGINE_METRICS_PORT": "0",
            "PAIJU_LOBBY_METRICS_PORT": "0",
            "PAIJU_SCORING_METRICS_PORT": "0",
            "PAIJU_GAMES_STREAM": f"G{suffix}",
            "PAIJU_GAMES_SUBJECT_PREFIX": f"g{suffix.lower()}.game",
            "PAIJU_LOBBY_STREAM": f"L{suffix}",
            "PAIJU_LOBBY_SUBJECT_PREFIX": f"l{suffix.lower()}.lobby",
            "PAIJU_TOURNAMENTS_STREAM": f"T{suffix}",
            "PAIJU_TOURNAMENTS_SUBJECT_PREFIX": f"t{suffix.lower()}.tour",
            "PAIJU_FAIR_DEALING": "off",  # dealt at once from seeds: the move is the test's, not the contributions'
            "PAIJU_RATE_LIMITS": "off",
            "PAIJU_LOG_LEVEL": "warning",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        services = Services(folder / "logs", env)
        try:
            for name in SERVICES:
                # the suite's NATS user (in NATS_URL): the services' own may use only a deployment's stream names
                own = {k: v for k, v in credentials.env(name).items() if k != NATS_SEED.variable}
                services.start(name, name, env=own)
            for name, service in SERVICES.items():
                wait_until_serving(addresses[name], timeout=90, service=service)
            yield receiver, endpoint, addresses, credentials
        finally:
            services.stop()
            shutil.rmtree(folder, ignore_errors=True)


def test_one_moves_spans_from_every_process_join_into_one_trace(
    traced_stack: tuple[Receiver, str, dict[str, str], Credentials],
) -> None:
    asyncio.run(_one_move(*traced_stack))


async def _one_move(receiver: Receiver, endpoint: str, addresses: dict[str, str], credentials: Credentials) -> None:
    game_id = f"traced-{uuid.uuid4().hex[:8]}"
    players = [f"p{seat}-{game_id}" for seat in range(6)]
    service = (("authorization", "Bearer " + mint_token(credentials, "engine-test", "service")),)

    def seat_token(seat: int) -> tuple[tuple[str, str], ...]:
        token = mint_token(credentials, players[seat], "player", game=game_id, seat=seat)
        return (("authorization", f"Bearer {token}"),)

    request = engine_pb2.CreateGameRequest(
        game_id=game_id,
        game=engine_pb2.GAME_ZLJ,
        zlj_options=zlj_pb2.ZljOptions(
            deals=1, reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL
        ),
    )
    for seat, player in enumerate(players):
        request.seats.add(seat=seat, player_id=player)
    assert tracing.install(tracing.Config(CLIENT, endpoint=endpoint, schedule_delay_ms=100))
    try:
        engine_channel = channel(addresses["engine"])  # traced: a client span per call
        engine: Any = engine_pb2_grpc.EngineServiceStub(engine_channel)
        await engine.CreateGame(request, metadata=service, timeout=20)
        turn = await _seat_to_move(engine, game_id, seat_token)
        legal = await engine.GetLegalActions(
            engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=seat_token(turn), timeout=10
        )
        watches = [
            engine.Watch(engine_pb2.WatchRequest(game_id=game_id), metadata=seat_token((turn + i) % 6)) for i in (1, 2)
        ]
        version = (await engine.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=service)).version
        seen: list[list[int]] = [[] for _ in watches]

        async def watching(watch: Any, into: list[int]) -> None:
            async for message in watch:
                if message.HasField("envelope"):
                    into.append(message.envelope.version)
                    if message.envelope.version > version:
                        return

        watchers = [asyncio.create_task(watching(w, into)) for w, into in zip(watches, seen, strict=True)]
        act = engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex)
        act.zlj.CopyFrom(legal.actions[0].zlj)
        answer = await engine.Act(act, metadata=seat_token(turn), timeout=10)
        moved = answer.version
        await asyncio.wait_for(asyncio.gather(*watchers), 20)
        for watch in watches:
            watch.cancel()
        await engine_channel.close()
    finally:
        tracing.shutdown()  # the client's spans exported

    def act_trace() -> list[Received] | None:
        spans = receiver.spans()
        clients = [s for s in spans if s.service == CLIENT and s.name == "paiju.v1.EngineService/Act"]
        if not clients:
            return None
        trace = [s for s in spans if s.trace_id == clients[0].trace_id]
        appends = [s for s in trace if s.name.startswith("append ")]
        linked = [s for s in spans if any(link[1] in {a.span_id for a in appends} for link in s.links)]
        sends = {link[1] for s in trace if s.name == "send watch message" for link in s.links}
        watches = {s.span_id for s in spans if s.name == "paiju.v1.EngineService/Watch"}  # ended when cancelled
        if not appends or len(sends) < 2 or sends - watches:
            return None  # the move's message to each watcher, and the two Watch calls' own spans
        if {"paiju-lobby", "paiju-scoring"} - {s.service for s in linked}:
            return None  # the projections of both fold the move: the lobby's game results, scoring's games
        return trace + [s for s in linked if s not in trace]

    spans = await wait_until(act_trace, "the move's spans from every process", seconds=60, every=0.2)
    by_id = {s.span_id: s for s in spans}
    client = next(s for s in spans if s.service == CLIENT and s.name == "paiju.v1.EngineService/Act")
    server = next(s for s in spans if s.service == "paiju-engine" and s.name == "paiju.v1.EngineService/Act")
    assert server.kind == "server" and server.parent_id == client.span_id and server.trace_id == client.trace_id
    appends = [s for s in spans if s.name.startswith("append ") and s.parent_id == server.span_id]
    assert appends and all(a.service == "paiju-engine" and a.kind == "producer" for a in appends), spans
    append = appends[0]
    sends = [s for s in spans if s.name == "send watch message" and s.parent_id == append.span_id]
    assert sends, "the watchers' messages are children of the append"
    assert {s.attributes["paiju.version"] for s in sends} & set(range(version + 1, moved + 1))
    assert all(s.trace_id == client.trace_id for s in sends)
    watch_servers = {s.span_id for s in receiver.spans() if s.name == "paiju.v1.EngineService/Watch"}
    assert all(any(link[1] in watch_servers for link in s.links) for s in sends), "linked to the watcher's stream"
    assert len({link[1] for s in sends for link in s.links}) == 2, "a message to each of the two watchers"
    batches = [s for s in spans if s.kind == "consumer" and (client.trace_id, append.span_id) in s.links]
    assert {b.service for b in batches} == {"paiju-lobby", "paiju-scoring"}, "their batches link to the append"
    assert all(into and max(into) >= moved for into in seen)
    for span in spans:  # every span of the trace hangs from the client's call, or links to its append
        if span.trace_id == client.trace_id and span is not client:
            assert span.parent_id in by_id, span
    if TRACE_FILE:
        with Path(TRACE_FILE).open("w") as out:
            for span in sorted(spans, key=lambda s: s.start):
                out.write(json.dumps(span.__dict__, default=str) + "\n")


async def _seat_to_move(engine: Any, game_id: str, seat_token: Any) -> int:
    """The seat whose turn it is (the one with legal actions)."""

    async def mover() -> tuple[int] | None:
        for seat in range(6):
            try:
                legal = await engine.GetLegalActions(
                    engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=seat_token(seat), timeout=10
                )
            except grpc.aio.AioRpcError:
                return None
            if legal.actions:
                return (seat,)  # seat 0 too: a found seat is never falsy
        return None

    (seat,) = await wait_until(mover, "a seat to move", seconds=30, every=0.1)
    return seat
