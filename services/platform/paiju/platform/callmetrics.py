"""Prometheus metrics of every Paiju gRPC server (engine, lobby, scoring): calls by method and status, and
their duration. A server interceptor, so each service counts its calls without code of its own."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from prometheus_client import Counter, Histogram

CALLS = Counter("paiju_grpc_calls_total", "gRPC calls served, by method and status code", ["method", "code"])
CALL_SECONDS = Histogram(
    "paiju_grpc_call_seconds",
    "Time to answer a unary gRPC call (streams: until the stream ends)",
    ["method"],
    buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0),
)


def _record(method: str, context: Any, started: float, failed: bool) -> None:
    """Count a finished call under its status code (a handler that raised without one: UNKNOWN) and time it."""
    code = context.code()
    name = code.name if isinstance(code, grpc.StatusCode) else ("UNKNOWN" if failed else "OK")
    CALLS.labels(method, name).inc()
    CALL_SECONDS.labels(method).observe(time.perf_counter() - started)


class CallMetrics(grpc.aio.ServerInterceptor):
    """Counts and times every unary and server-streaming call of the server it is installed on."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method.rpartition("/")[2]
        if handler is None or (method in ("Check", "Watch") and "Health" in handler_call_details.method):
            return handler
        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary(request: Any, context: Any) -> Any:
                started, failed = time.perf_counter(), True
                try:
                    answer = await inner(request, context)
                    failed = False
                    return answer
                finally:
                    _record(method, context, started, failed)

            return grpc.unary_unary_rpc_method_handler(unary, handler.request_deserializer, handler.response_serializer)
        if handler.unary_stream is not None:
            streaming: Any = handler.unary_stream

            async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
                started, failed = time.perf_counter(), True
                try:
                    async for item in streaming(request, context):
                        yield item
                    failed = False
                finally:
                    _record(method, context, started, failed)

            return grpc.unary_stream_rpc_method_handler(
                stream, handler.request_deserializer, handler.response_serializer
            )
        return handler
