"""A small OTLP/gRPC trace receiver for the tests: what an OpenTelemetry collector is to a deployment, built on
opentelemetry-proto's `TraceService`. The processes under test export their spans to it; it keeps every span it is
sent, with the service name of the process that sent it, for the tests to read."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1 import trace_pb2

KINDS = {
    trace_pb2.Span.SPAN_KIND_INTERNAL: "internal",
    trace_pb2.Span.SPAN_KIND_SERVER: "server",
    trace_pb2.Span.SPAN_KIND_CLIENT: "client",
    trace_pb2.Span.SPAN_KIND_PRODUCER: "producer",
    trace_pb2.Span.SPAN_KIND_CONSUMER: "consumer",
}


@dataclass(frozen=True)
class Received:
    """One span as exported: the process's service name, its name and kind, its ids (hex), its parent's span id
    ("" for a root), its links (trace id, span id), its attributes, and when it started and ended (ns)."""

    service: str
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    links: tuple[tuple[str, str], ...]
    attributes: dict[str, Any]
    start: int
    end: int


def _value(value: Any) -> Any:
    which = value.WhichOneof("value")
    return getattr(value, which) if which else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    """Keeps the spans of every export it answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[Received] = []
        self.exports = 0

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        received = []
        for resource_spans in request.resource_spans:
            service = str(_attributes(resource_spans.resource.attributes).get("service.name", ""))
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        Received(
                            service=service,
                            name=span.name,
                            kind=KINDS.get(span.kind, "unspecified"),
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            links=tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links),
                            attributes=_attributes(span.attributes),
                            start=span.start_time_unix_nano,
                            end=span.end_time_unix_nano,
                        )
                    )
        with self._lock:
            self._spans += received
            self.exports += 1
        return trace_service_pb2.ExportTraceServiceResponse()

    def spans(self) -> list[Received]:
        """Every span received so far."""
        with self._lock:
            return list(self._spans)


@contextmanager
def otlp_receiver() -> Iterator[tuple[Receiver, str]]:
    """A receiver listening on a free local port, on threads of its own (whatever event loop the test runs);
    yields it and its endpoint (``http://127.0.0.1:PORT``, as ``OTEL_EXPORTER_OTLP_ENDPOINT`` names it)."""
    receiver = Receiver()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(receiver, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield receiver, f"http://127.0.0.1:{port}"
    finally:
        server.stop(None)
