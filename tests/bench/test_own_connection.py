"""The benchmarks' spectators and the floor's spectator streams each watch on a connection of their own, as
spectators on machines of their own do (`bench/floor.py`, ``OWN_CONNECTION``): gRPC shares one connection among a
process's channels to one address unless each asks for a subchannel pool of its own. Checked on a real server, by the
client address each call arrives from."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ..support.bench import bench_module


def _own_connection() -> Any:
    """`bench/floor.py`'s ``OWN_CONNECTION``."""
    return bench_module("floor.py", "paiju_bench_floor").OWN_CONNECTION


class _Peers(health_pb2_grpc.HealthServicer):
    def __init__(self) -> None:
        self.peers: set[str] = set()

    async def Check(self, request: Any, context: Any) -> Any:
        self.peers.add(context.peer())
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


async def _connections(options: Any, channels: int) -> int:
    server = grpc.aio.server()
    peers = _Peers()
    health_pb2_grpc.add_HealthServicer_to_server(peers, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    opened = [grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=options) for _ in range(channels)]
    try:
        for channel in opened:
            stub: Any = health_pb2_grpc.HealthStub(channel)
            await stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
    finally:
        for channel in opened:
            await channel.close()
        await server.stop(None)
    return len(peers.peers)


def test_channels_with_own_connection_options_each_open_a_connection() -> None:
    assert asyncio.run(_connections(_own_connection(), 4)) == 4
    assert asyncio.run(_connections(None, 4)) == 1, "gRPC's default: one process, one connection to one address"
