"""What every Paiju gRPC server does the same way: health checking, reflection, metrics, SIGTERM, draining."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from paiju.engine.callmetrics import CallMetrics

GRACE_SECONDS = 10.0
"""How long calls in flight may finish after SIGTERM before the server closes."""


class Serving:
    """A started gRPC server with its health service (SERVING for ``""`` and the service's name)."""

    def __init__(self, server: grpc.aio.Server, health_servicer: health.aio.HealthServicer, name: str, port: int):
        self.server = server
        self.port = port
        self._health = health_servicer
        self._name = name

    async def drain(self, grace: float = GRACE_SECONDS) -> None:
        """Say NOT_SERVING (load balancers stop sending), let calls in flight finish, then close."""
        for name in ("", self._name):
            await self._health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.stop(grace)


async def serve_grpc(
    address: str, name: str, register: Callable[[grpc.aio.Server], None], metrics_port: int = 0
) -> Serving:
    """Start a gRPC server on ``address`` with the service ``register`` adds (full name ``name``), health
    checking, reflection (v1alpha) and, when ``metrics_port``, Prometheus metrics."""
    server = grpc.aio.server(interceptors=[CallMetrics()])
    register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((name, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    port = server.add_insecure_port(address)
    await server.start()
    for service in ("", name):
        await health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    if metrics_port:
        start_http_server(metrics_port)
    return Serving(server, health_servicer, name, port)


def stop_on_signals(stop: asyncio.Event | None = None) -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (``stop`` when given)."""
    stopping = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    return stopping
