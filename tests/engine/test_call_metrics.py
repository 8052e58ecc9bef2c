"""Every gRPC server started by `serve_grpc` (engine, lobby, scoring) counts its calls by method and status
code and times them (`paiju_grpc_calls_total`, `paiju_grpc_call_seconds`)."""

from __future__ import annotations

import asyncio
import contextlib

import grpc
from prometheus_client import REGISTRY

from paiju.engine.games import Games
from paiju.engine.service import EngineService
from paiju.platform.serving import serve_grpc
from paiju.platform.store import MemoryEventStore
from paiju.platform.tokens import Role
from paiju.v1 import engine_pb2, engine_pb2_grpc

from ..support.credentials import TRUST
from .harness import NOW, auth, token


def calls(method: str, code: str) -> float:
    return REGISTRY.get_sample_value("paiju_grpc_calls_total", {"method": method, "code": code}) or 0.0


def test_calls_are_counted_by_method_and_status_and_timed() -> None:
    async def body() -> None:
        service = EngineService(
            Games(MemoryEventStore()), TRUST, seed_secret=b"call-metrics-seeds-" * 2, now=lambda: NOW
        )
        serving = await serve_grpc(
            "127.0.0.1:0",
            "paiju.v1.EngineService",
            service.add_to,
            policy=service.policy,
        )
        before = (calls("GetView", "NOT_FOUND"), calls("GetView", "UNAUTHENTICATED"), calls("Watch", "NOT_FOUND"))
        timed = REGISTRY.get_sample_value("paiju_grpc_call_seconds_count", {"method": "GetView"}) or 0.0
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{serving.port}") as channel:
                engine = engine_pb2_grpc.EngineServiceStub(channel)
                spectator = auth(token(Role.SPECTATOR, "no-such-game"))
                for metadata in (spectator, spectator, (("authorization", "Bearer forged"),)):
                    with contextlib.suppress(grpc.aio.AioRpcError):
                        await engine.GetView(engine_pb2.GetViewRequest(game_id="no-such-game"), metadata=metadata)
                try:
                    async for _ in engine.Watch(engine_pb2.WatchRequest(game_id="no-such-game"), metadata=spectator):
                        pass
                except grpc.aio.AioRpcError:
                    pass
        finally:
            await serving.drain(0)
        assert calls("GetView", "NOT_FOUND") - before[0] == 2
        assert calls("GetView", "UNAUTHENTICATED") - before[1] == 1
        assert calls("Watch", "NOT_FOUND") - before[2] == 1
        assert (REGISTRY.get_sample_value("paiju_grpc_call_seconds_count", {"method": "GetView"}) or 0) - timed == 3

    asyncio.run(body())
