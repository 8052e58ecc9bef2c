"""Helpers for scripts and tests that start engines: a free local port (one a server can count on: `listening_port`),
and waiting for SERVING."""

from __future__ import annotations

import asyncio
import random
import socket
import time
from pathlib import Path
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


EPHEMERAL_PORTS = Path("/proc/sys/net/ipv4/ip_local_port_range")
"""The kernel's range of ports for the source of outgoing connections (and for binding port 0)."""
_HANDED: set[int] = set()
"""The ports `listening_port` gave out in this process (never twice)."""


def listening_port(chance: random.Random | None = None, lowest: int = 10_000) -> int:
    """A TCP port on 127.0.0.1 that nothing uses right now, below the kernel's ephemeral range: for a server started
    after its port is chosen, since no outgoing connection can take such a port as its source in between. A port of
    `free_port` can be: the nodes of a NATS cluster, connecting to each other's routes as they start, once took a
    node's route port before that node listened on it. Never the same port twice in a process; `free_port` when the
    range leaves no room below it."""
    try:
        low = int(EPHEMERAL_PORTS.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32_768
    if low <= lowest + 1:
        return free_port()
    draw = chance or random.SystemRandom()
    for _ in range(200):
        port = draw.randrange(lowest, low)
        if port in _HANDED:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED.add(port)
        return port
    return free_port()


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
