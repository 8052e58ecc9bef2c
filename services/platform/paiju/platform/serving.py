"""What every Paiju gRPC server does the same way: health checking, reflection, metrics, SIGTERM, draining."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from paiju.platform import tracing
from paiju.platform.callmetrics import CallMetrics
from paiju.platform.edge import PACKAGE, Edge, Policy, Validator, cached_wrap
from paiju.platform.health import Dependencies

GRACE_SECONDS = 10.0
"""How long calls in flight may finish after SIGTERM before the server closes."""
MAX_REQUEST_BYTES = 64 * 1024
"""The largest request a server reads (the largest real one, an act with a whole 拖拉机 hand, is about 1 KB);
gRPC refuses a larger one with RESOURCE_EXHAUSTED before it is decoded."""
SERVER_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
    # a client gone without closing its streams (a dead watcher) is noticed within a minute and its streams end
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
)


Wrap = Callable[[str, "grpc.RpcMethodHandler[Any, Any] | None"], "grpc.RpcMethodHandler[Any, Any] | None"]


def build_server(policy: Policy | None = None, *, validator: Validator | None = None) -> grpc.aio.Server:
    """A gRPC server whose every method passes call metrics, then the edge (decoding, validation, tokens, limits,
    the error model; see `paiju.platform.edge`). Production and the tests build servers with it. The handlers are
    wrapped as they are registered, once per method (`EdgeServer`), not by interceptors at every call. When the
    process traces (`paiju.platform.tracing`), each call of a Paiju service runs in a server span around the edge;
    otherwise nothing is added.
    ``validator``: the edge's (by default the process's protovalidate `Validator`)."""
    metrics, edge = CallMetrics(), Edge(policy, validator)
    traced = tracing.server_handler if tracing.enabled() else None

    def wrap(full: str, handler: grpc.RpcMethodHandler[Any, Any] | None) -> grpc.RpcMethodHandler[Any, Any] | None:
        if handler is not None and full.startswith(PACKAGE):
            made = edge.wrap(full, handler, metrics.recorder(full))  # one wrapper: the edge times its own calls
            return traced(full, made) if traced is not None else made
        return metrics.wrap(full, handler)

    return EdgeServer(grpc.aio.server(options=SERVER_OPTIONS), wrap)


class EdgeServer(grpc.aio.Server):
    """A grpc.aio server whose method handlers are wrapped (by ``wrap``: the edge and the call metrics) when they
    are registered: each call then runs the wrapped handler gRPC finds, with no interceptor between — gRPC's
    interceptor machinery awaits every interceptor and builds a new handler for every call. A wrapped handler keeps
    the registered handler's response serializer (a method may send pre-encoded bytes). Everything else is the
    inner server's."""

    def __init__(self, server: grpc.aio.Server, wrap: Wrap) -> None:
        self._server = server
        self._wrap = wrap

    def add_generic_rpc_handlers(self, generic_rpc_handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        self._server.add_generic_rpc_handlers(tuple(_Wrapping(h, self._wrap) for h in generic_rpc_handlers))

    def add_registered_method_handlers(
        self, service_name: str, method_handlers: Mapping[str, grpc.RpcMethodHandler[Any, Any]]
    ) -> None:
        wrapped = {}
        for name, handler in method_handlers.items():
            made = self._wrap(f"/{service_name}/{name}", handler)
            if made is not None:
                wrapped[name] = made
        self._server.add_registered_method_handlers(service_name, wrapped)

    def add_insecure_port(self, address: str) -> int:
        return self._server.add_insecure_port(address)

    def add_secure_port(self, address: str, server_credentials: grpc.ServerCredentials) -> int:
        return self._server.add_secure_port(address, server_credentials)

    async def start(self) -> None:
        await self._server.start()

    async def stop(self, grace: float | None) -> None:
        await self._server.stop(grace)

    async def wait_for_termination(self, timeout: float | None = None) -> bool:
        return await self._server.wait_for_termination(timeout)


class _Wrapping(grpc.GenericRpcHandler):
    """A generic handler whose handlers are wrapped, each method's once (then remembered while the inner handler
    answers it with the same handler)."""

    def __init__(self, inner: grpc.GenericRpcHandler, wrap: Wrap) -> None:
        self._inner = inner
        self._wrap = wrap
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler[Any, Any], grpc.RpcMethodHandler[Any, Any]]] = {}

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any] | None:
        return cached_wrap(
            self._wrapped, self._wrap, handler_call_details.method, self._inner.service(handler_call_details)
        )


class Serving:
    """A started gRPC server with its health service: ``""`` (the process is alive: the liveness probe's) and the
    service's name (it can serve now: the readiness probe's, NOT_SERVING while a dependency is unreachable)."""

    def __init__(
        self,
        server: grpc.aio.Server,
        health_servicer: health.aio.HealthServicer,
        name: str,
        port: int,
        *,
        watching: asyncio.Task[None] | None = None,
        stop_watching: asyncio.Event | None = None,
    ):
        self.server = server
        self.port = port
        self.health = health_servicer
        self._name = name
        self._watching = watching
        self._stop_watching = stop_watching

    async def drain(self, grace: float = GRACE_SECONDS) -> None:
        """Say NOT_SERVING (load balancers stop sending), let calls in flight finish, then close."""
        if self._stop_watching is not None and self._watching is not None:
            self._stop_watching.set()
            await self._watching
        for name in ("", self._name):
            await self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.stop(grace)


async def serve_grpc(
    address: str,
    name: str,
    register: Callable[[grpc.aio.Server], None],
    metrics_port: int = 0,
    policy: Policy | None = None,
    *,
    dependencies: Dependencies | None = None,
    metrics_host: str | None = None,
) -> Serving:
    """Start a gRPC server on ``address`` with the service ``register`` adds (full name ``name``), the edge's
    ``policy``, health checking (following ``dependencies``: see `paiju.platform.health`), reflection (v1alpha)
    and, when ``metrics_port``, Prometheus metrics on ``metrics_host`` (by default where gRPC listens)."""
    if dependencies is not None:
        policy = dataclasses.replace(policy or Policy(), ready=dependencies.missing)
    server = build_server(policy)
    register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((name, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    port = server.add_insecure_port(address)
    await server.start()
    for service in ("", name):
        await health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    if metrics_port:
        host = metrics_host or host_of(address)
        start_http_server(metrics_port, addr=host)
    if dependencies is None:
        return Serving(server, health_servicer, name, port)
    stop_watching = asyncio.Event()
    watching = asyncio.create_task(dependencies.watch(health_servicer, name, stop_watching))
    return Serving(server, health_servicer, name, port, watching=watching, stop_watching=stop_watching)


def host_of(address: str) -> str:
    """The host part of a listening address (``127.0.0.1:50051`` -> ``127.0.0.1``, ``[::]:50051`` -> ``::``)."""
    host = address.rpartition(":")[0]
    return host.strip("[]") or "0.0.0.0"


def stop_on_signals(stop: asyncio.Event | None = None) -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (``stop`` when given)."""
    stopping = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    return stopping
