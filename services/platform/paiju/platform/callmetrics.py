"""Prometheus metrics of every Paiju gRPC server (engine, lobby, scoring): calls by method and status
(``paiju_grpc_calls_total{method,code}``), and their duration (``paiju_grpc_call_seconds{method}``, a histogram; for a
server stream, until it ends). Each method's handler is wrapped once, at registration
(`paiju.platform.serving.build_server`: the edge's own wrapper records its calls), so each service counts its calls
without code of its own.

A call is counted in plain numbers, one `_Recorder` per method, and a collector hands them to Prometheus when it
scrapes: no lock and no metric object is touched per call (the client library's labelled children take a lock for
each count, each bucket and the sum)."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeAlias

import grpc
from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from paiju.platform.edge import cached_wrap

BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0)
"""The upper bounds (seconds) of the call duration histogram's buckets (and +Inf)."""
_LE = (*(repr(bound) for bound in BUCKETS), "+Inf")
"""The buckets' ``le`` labels, as Prometheus writes them."""

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"


class _Recorder:
    """Counts and times the calls of one method: calls by status code, and per bucket of `BUCKETS` the calls that
    took at most its bound (not cumulative; the last: longer) and their total time."""

    __slots__ = ("by_code", "in_bucket", "method", "seconds")

    def __init__(self, method: str) -> None:
        self.method = method
        self.by_code: dict[str, int] = {}
        self.in_bucket = [0] * (len(BUCKETS) + 1)
        self.seconds = 0.0

    def __call__(self, context: Any, started: float, failed: bool) -> None:
        """Count a finished call under its status code (a handler that raised without one: UNKNOWN) and time it."""
        code = context.code()
        name = code.name if isinstance(code, grpc.StatusCode) else ("UNKNOWN" if failed else "OK")
        by_code = self.by_code
        by_code[name] = by_code.get(name, 0) + 1
        elapsed = time.perf_counter() - started
        self.seconds += elapsed
        self.in_bucket[bisect_left(BUCKETS, elapsed)] += 1


_RECORDERS: dict[str, _Recorder] = {}
"""Each method's recorder (every server of the process counts a method together)."""


class _Collector(Collector):
    """Hands the recorders' counts to Prometheus at each scrape (called on the metrics server's thread: what it
    reads is copied first)."""

    def collect(self) -> Iterator[Metric]:
        calls = CounterMetricFamily(
            "paiju_grpc_calls", "gRPC calls served, by method and status code", labels=["method", "code"]
        )
        seconds = HistogramMetricFamily(
            "paiju_grpc_call_seconds",
            "Time to answer a unary gRPC call (streams: until the stream ends)",
            labels=["method"],
        )
        for method, recorder in list(_RECORDERS.items()):
            for code, count in list(recorder.by_code.items()):
                calls.add_metric([method, code], count)
            cumulative = 0
            buckets = []
            for le, count in zip(_LE, list(recorder.in_bucket), strict=True):
                cumulative += count
                buckets.append((le, float(cumulative)))
            seconds.add_metric([method], buckets, recorder.seconds)
        yield calls
        yield seconds


REGISTRY.register(_Collector())


class CallMetrics(grpc.aio.ServerInterceptor):
    """Counts and times every unary and server-streaming call of the server it is installed on (not the health
    checks)."""

    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[Handler, Handler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        return cached_wrap(
            self._wrapped, self.wrap, handler_call_details.method, await continuation(handler_call_details)
        )

    @staticmethod
    def recorder(full: str) -> _Recorder | None:
        """What counts and times the calls of the method ``full`` (``None``: the health checks, not counted)."""
        method = full.rpartition("/")[2]
        if method in ("Check", "Watch") and "Health" in full:
            return None
        recorder = _RECORDERS.get(method)
        if recorder is None:
            recorder = _RECORDERS[method] = _Recorder(method)
        return recorder

    def wrap(self, full: str, handler: Handler | None) -> Handler | None:
        """``handler`` of the method ``full`` (``/paiju.v1.EngineService/Act``), counted and timed."""
        record = self.recorder(full)
        if handler is None or record is None:
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
                    record(context, started, failed)

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
                    record(context, started, failed)

            return grpc.unary_stream_rpc_method_handler(
                stream, handler.request_deserializer, handler.response_serializer
            )
        return handler
