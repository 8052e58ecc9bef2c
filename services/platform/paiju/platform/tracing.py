"""Traces of every Paiju process with OpenTelemetry: one move followed from the client's call through the engine's
append and the stream to every watcher's message and to the projections that fold it.

What is traced, when tracing is on:

- **every gRPC call, on both sides**: a server span per call of a Paiju service (`server_handler`, made once per
  method when the server is built: `paiju.platform.serving.build_server`), a client span per call made through
  `paiju.platform.channels` or with `client_interceptors` (the bot runner, the lobby's calls to the engine, any
  Python client); the W3C trace context (``traceparent``, ``tracestate``) travels in the call's metadata;
- **every append** to an event store (`appending`): a producer span, child of the call that appended, whose trace
  context the stored messages carry in their NATS headers (``traceparent``: the trace and the append's own span)
  and `Recorded.trace` keeps; a caller's ``tracestate`` (free text of its vendors) stays out of the stored events,
  which keep nothing a client wrote; the headers mean nothing to the rules (events stored without them replay as
  before), and they change nothing of an append's idempotency: a retry is recognised by its ``Nats-Msg-Id`` alone;
- **every message a watcher is sent** about a new event (`sending`): a span child of the append that stored the
  event, linked to the watcher's own stream;
- **every batch a stream consumer handles** (`batch`: the lobby's and scoring's projections and reactions): a
  consumer span with a link to the append of each event it folds (span links: a batch folds many moves).

Configured by the standard ``OTEL_*`` variables, declared in `paiju.platform.settings` (`Config.of` reads them from a
process's settings); spans are exported over OTLP/gRPC in batches. Off by default: with no exporter configured,
`install` does nothing, no OpenTelemetry module is even imported, the servers' handlers are not wrapped, channels have
no interceptor, and what remains on the hot paths is one test of a module global per append, per watcher message and
per batch (``bench/tracing.py`` measures it)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
TRACE_HEADERS = (TRACEPARENT, TRACESTATE)
"""The W3C trace context's headers, in gRPC metadata and in NATS message headers alike."""
Trace = tuple[tuple[str, str], ...]
"""A trace context as carried: its headers (``()``: none)."""
REMEMBERED = 4096
"""The latest events whose trace context a process keeps (aggregate and version), for the watchers' messages."""
MAX_LINKS = 128
"""The links a batch span carries at most (OpenTelemetry's default limit)."""
DEFAULT_ENDPOINT = "http://localhost:4317"
"""OTLP/gRPC's standard endpoint, when the exporter is named without one."""
ERROR_CODES = frozenset(
    {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)
"""The status codes that mark a server span failed (OpenTelemetry's conventions for gRPC: a refusal of the client's
request is the client's error, not the server's)."""


@dataclass(frozen=True)
class Config:
    """How a process traces, from its ``OTEL_*`` settings."""

    service_name: str
    exporter: str = ""
    endpoint: str = ""
    sampler: str = "parentbased_always_on"
    sampler_arg: float = 1.0
    schedule_delay_ms: int = 5000
    disabled: bool = False

    @classmethod
    def of(cls, settings: Any) -> Config:
        """The tracing settings of a process's `paiju.platform.settings.Settings` (its ``otel_*`` fields)."""
        return cls(
            service_name=settings.otel_service_name,
            exporter=settings.otel_traces_exporter,
            endpoint=settings.otel_exporter_otlp_endpoint,
            sampler=settings.otel_traces_sampler,
            sampler_arg=settings.otel_traces_sampler_arg,
            schedule_delay_ms=settings.otel_bsp_schedule_delay,
            disabled=settings.otel_sdk_disabled,
        )

    @property
    def exporting(self) -> bool:
        """Whether spans are exported: ``OTEL_TRACES_EXPORTER=otlp``, or an endpoint given and no exporter named
        (``none``: never), and the SDK not disabled."""
        if self.disabled or self.exporter == "none":
            return False
        return self.exporter == "otlp" or bool(self.endpoint)


class _State:
    """The process's tracing: its tracer once installed (``None``: tracing is off)."""

    tracer: Any = None
    provider: Any = None
    propagator: Any = None


_STATE = _State()
_REMEMBERED: dict[tuple[str, int], Trace] = {}
_NOTHING: contextlib.nullcontext[Trace] = contextlib.nullcontext(())
"""What the hooks give when tracing is off: a context that does nothing (and carries no trace)."""


def enabled() -> bool:
    """Whether this process traces."""
    return _STATE.tracer is not None


def install(config: Config) -> bool:
    """Start tracing as ``config`` says: spans sampled by its sampler, exported over OTLP/gRPC in batches. Nothing
    when it exports nowhere (the default); whether tracing is on."""
    if not config.exporting:
        return False
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    endpoint = config.endpoint or DEFAULT_ENDPOINT
    exporter = OTLPSpanExporter(endpoint=endpoint, insecure=endpoint.startswith("http://"))
    provider = new_provider(config)
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=config.schedule_delay_ms))
    use(provider)
    return True


def new_provider(config: Config) -> Any:
    """An OpenTelemetry SDK `TracerProvider` for ``config``'s service and sampler (no exporter yet)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    return TracerProvider(resource=Resource.create({"service.name": config.service_name}), sampler=sampler(config))


def sampler(config: Config) -> Any:
    """The sampler ``OTEL_TRACES_SAMPLER`` (and ``OTEL_TRACES_SAMPLER_ARG``) names."""
    from opentelemetry.sdk.trace import sampling

    ratio = sampling.TraceIdRatioBased(config.sampler_arg)
    made: dict[str, Callable[[], Any]] = {
        "always_on": lambda: sampling.ALWAYS_ON,
        "always_off": lambda: sampling.ALWAYS_OFF,
        "traceidratio": lambda: ratio,
        "parentbased_always_on": lambda: sampling.ParentBased(sampling.ALWAYS_ON),
        "parentbased_always_off": lambda: sampling.ParentBased(sampling.ALWAYS_OFF),
        "parentbased_traceidratio": lambda: sampling.ParentBased(ratio),
    }
    return made[config.sampler]()


def use(provider: Any) -> None:
    """Trace with ``provider`` (an SDK `TracerProvider` with its processors) from now on."""
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _STATE.propagator = TraceContextTextMapPropagator()
    _STATE.provider = provider
    _STATE.tracer = provider.get_tracer("paiju")


def shutdown() -> None:
    """Export the spans not exported yet and stop tracing (a process calls it as it stops)."""
    provider = _STATE.provider
    _STATE.tracer = _STATE.provider = _STATE.propagator = None
    _REMEMBERED.clear()
    if provider is not None:
        provider.shutdown()


# --- trace contexts ----------------------------------------------------------------------------------------


def _context_of(trace: Iterable[tuple[str, Any]] | None) -> Any:
    """The OpenTelemetry context a trace's headers carry (the current one for none)."""
    carrier = {key: value for key, value in trace or () if key in TRACE_HEADERS and isinstance(value, str)}
    return _STATE.propagator.extract(carrier) if carrier else None


def _trace_of(context: Any = None) -> Trace:
    """The headers that carry ``context``'s span (the current one by default)."""
    carrier: dict[str, str] = {}
    _STATE.propagator.inject(carrier, context=context)
    return tuple((key, carrier[key]) for key in TRACE_HEADERS if key in carrier)


def span_context(trace: Trace) -> Any:
    """The span context a trace's headers name (an invalid one when they name none)."""
    from opentelemetry import trace as api

    return api.get_current_span(_context_of(trace)).get_span_context()


def remember(aggregate: str, version: int, trace: Trace) -> None:
    """Keep the trace context of an event just stored or fed (the latest `REMEMBERED`), for `sending`."""
    if not trace or _STATE.tracer is None:
        return
    remembered = _REMEMBERED
    remembered[aggregate, version] = trace
    if len(remembered) > REMEMBERED:
        del remembered[next(iter(remembered))]


def remembered(aggregate: str, version: int) -> Trace:
    """The trace context of an event of ``aggregate`` kept by `remember` (``()``: none kept)."""
    return _REMEMBERED.get((aggregate, version), ())


# --- the hooks ---------------------------------------------------------------------------------------------


def appending(stream: str, aggregate: str) -> contextlib.AbstractContextManager[Trace]:
    """A producer span around one append to ``aggregate`` of ``stream``; what it gives is the trace context the
    stored messages carry in their headers (``()`` when tracing is off): the span's ``traceparent`` alone, never the
    ``tracestate`` a caller sent (stored events keep no text of a client's)."""
    if _STATE.tracer is None:
        return _NOTHING
    return _appending(stream, aggregate)


@contextlib.contextmanager
def _appending(stream: str, aggregate: str) -> Iterator[Trace]:
    from opentelemetry.trace import SpanKind

    with _STATE.tracer.start_as_current_span(
        f"append {stream}",
        kind=SpanKind.PRODUCER,
        attributes={"messaging.system": "nats", "messaging.destination.name": stream, "paiju.aggregate": aggregate},
    ):
        yield tuple((key, value) for key, value in _trace_of() if key == TRACEPARENT)


def sending(aggregate: str, version: int) -> contextlib.AbstractContextManager[Any]:
    """A span around sending a watcher the message of ``aggregate``'s event ``version``: a child of the append that
    stored the event (when its trace context is kept: `remember`), linked to the watcher's stream (the call being
    served)."""
    if _STATE.tracer is None:
        return _NOTHING
    return _sending(aggregate, version)


@contextlib.contextmanager
def _sending(aggregate: str, version: int) -> Iterator[None]:
    from opentelemetry import trace as api
    from opentelemetry.trace import Link, SpanKind

    stored = remembered(aggregate, version)
    watching = api.get_current_span().get_span_context()
    links = [Link(watching)] if stored and watching.is_valid else None
    span = _STATE.tracer.start_span(
        "send watch message",
        context=_context_of(stored) if stored else None,
        kind=SpanKind.PRODUCER,
        links=links,
        attributes={"paiju.aggregate": aggregate, "paiju.version": version},
    )
    try:
        yield
    finally:
        span.end()


def batch(consumer: str, events: Sequence[Any]) -> contextlib.AbstractContextManager[Any]:
    """A consumer span around handling one batch of ``events`` (`paiju.platform.store.Recorded`) by the consumer
    ``consumer``, linked to the append of each event that carries a trace context (the first `MAX_LINKS`)."""
    if _STATE.tracer is None:
        return _NOTHING
    from opentelemetry.trace import Link, SpanKind

    links = []
    for event in events:
        if event.trace:
            context = span_context(event.trace)
            if context.is_valid:
                links.append(Link(context, {"paiju.aggregate": event.aggregate, "paiju.version": event.version}))
                if len(links) >= MAX_LINKS:
                    break
    made: contextlib.AbstractContextManager[Any] = _STATE.tracer.start_as_current_span(
        f"consume {consumer}",
        kind=SpanKind.CONSUMER,
        links=links,
        attributes={"messaging.system": "nats", "messaging.batch.message_count": len(events)},
    )
    return made


# --- gRPC ----------------------------------------------------------------------------------------------------


def _rpc_attributes(full: str) -> dict[str, str]:
    service, _, method = full.lstrip("/").partition("/")
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}


def _ended(span: Any, code: Any) -> None:
    """End a server span with the call's status code."""
    from opentelemetry.trace import Status, StatusCode

    if isinstance(code, grpc.StatusCode):
        span.set_attribute("rpc.grpc.status_code", code.value[0])
        if code in ERROR_CODES:
            span.set_status(Status(StatusCode.ERROR, code.name))
    elif code is None:
        span.set_attribute("rpc.grpc.status_code", 0)  # answered without a status set: OK
    span.end()


Handler = Any
"""A `grpc.RpcMethodHandler`."""


def server_handler(full: str, handler: Handler | None) -> Handler | None:
    """``handler`` of the method ``full`` (``/paiju.v1.EngineService/Act``) in a server span, child of the trace
    context the call's metadata carries, current while the handler runs (what it appends and calls joins the
    trace). The handler unchanged when tracing is off."""
    if handler is None or _STATE.tracer is None:
        return handler
    from opentelemetry import context as otel
    from opentelemetry.trace import SpanKind, set_span_in_context

    tracer, name, attributes = _STATE.tracer, full.lstrip("/"), _rpc_attributes(full)

    def started(context: Any) -> tuple[Any, Any]:
        span = tracer.start_span(
            name, context=_context_of(context.invocation_metadata()), kind=SpanKind.SERVER, attributes=attributes
        )
        return span, otel.attach(set_span_in_context(span))

    if handler.unary_unary is not None:
        inner: Any = handler.unary_unary

        async def unary(request: Any, context: Any) -> Any:
            span, token = started(context)
            try:
                return await inner(request, context)
            finally:
                _ended(span, context.code())
                otel.detach(token)

        return grpc.unary_unary_rpc_method_handler(unary, handler.request_deserializer, handler.response_serializer)
    if handler.unary_stream is not None:
        streaming: Any = handler.unary_stream

        async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
            span, _ = started(context)  # the call's own task: its context ends with it
            try:
                async for item in streaming(request, context):
                    yield item
            finally:
                _ended(span, context.code())

        return grpc.unary_stream_rpc_method_handler(stream, handler.request_deserializer, handler.response_serializer)
    return handler


def _traced_details(details: Any, span: Any) -> Any:
    """The call's details with the trace context of ``span`` added to its metadata."""
    from opentelemetry.trace import set_span_in_context

    metadata = grpc.aio.Metadata(*tuple(details.metadata or ()))
    for key, value in _trace_of(set_span_in_context(span)):
        metadata[key] = value
    return grpc.aio.ClientCallDetails(
        details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
    )


def _method(details: Any) -> str:
    method = details.method
    return (method.decode() if isinstance(method, bytes) else str(method)).lstrip("/")


class _UnaryClient(grpc.aio.UnaryUnaryClientInterceptor):
    """A client span per unary call, its trace context sent in the call's metadata."""

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        tracer = _STATE.tracer
        if tracer is None:
            return await continuation(client_call_details, request)
        from opentelemetry.trace import SpanKind, Status, StatusCode

        name = _method(client_call_details)
        span = tracer.start_span(name, kind=SpanKind.CLIENT, attributes=_rpc_attributes(name))
        try:
            call = await continuation(_traced_details(client_call_details, span), request)
            await call
            span.set_attribute("rpc.grpc.status_code", 0)
            return call
        except grpc.aio.AioRpcError as e:
            span.set_attribute("rpc.grpc.status_code", e.code().value[0])
            span.set_status(Status(StatusCode.ERROR, e.code().name))
            raise
        finally:
            span.end()


class _StreamClient(grpc.aio.UnaryStreamClientInterceptor):
    """A client span per server-streaming call (until the stream ends), its trace context sent in the call's
    metadata."""

    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        tracer = _STATE.tracer
        if tracer is None:
            return await continuation(client_call_details, request)
        from opentelemetry.trace import SpanKind

        name = _method(client_call_details)
        span = tracer.start_span(name, kind=SpanKind.CLIENT, attributes=_rpc_attributes(name))
        try:
            call = await continuation(_traced_details(client_call_details, span), request)
        except BaseException:
            span.end()
            raise
        call.add_done_callback(lambda _: span.end())
        return call


def client_interceptors() -> list[Any] | None:
    """The interceptors that trace a client channel's calls (``None`` when tracing is off: a channel made then has
    none, and costs nothing)."""
    if _STATE.tracer is None:
        return None
    return [_UnaryClient(), _StreamClient()]


__all__ = [
    "MAX_LINKS",
    "REMEMBERED",
    "TRACEPARENT",
    "TRACESTATE",
    "Config",
    "Trace",
    "appending",
    "batch",
    "client_interceptors",
    "enabled",
    "install",
    "new_provider",
    "remember",
    "remembered",
    "sampler",
    "sending",
    "server_handler",
    "shutdown",
    "span_context",
    "use",
]
