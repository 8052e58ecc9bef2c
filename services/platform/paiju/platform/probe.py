"""Helpers for scripts and tests that start engines: a free local port, and waiting for SERVING."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

SERVICE = "paiju.v1.EngineService"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def serving(address: str, service: str = SERVICE) -> bool:
    """Whether the gRPC server at ``address`` reports ``service`` (the engine's by default) SERVING."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=1)
        except grpc.aio.AioRpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def wait_until_serving(address: str, timeout: float = 30.0, service: str = SERVICE) -> None:
    """Block until ``service`` (the engine by default) at ``address`` is SERVING, or raise `TimeoutError`."""
    deadline = time.monotonic() + timeout
    while not asyncio.run(serving(address, service)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{service} at {address} did not report SERVING within {timeout:.0f} s")
        time.sleep(0.1)
