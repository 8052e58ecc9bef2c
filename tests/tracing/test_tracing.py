"""Tracing in one process (`paiju.platform.tracing`): off by default and configured by the ``OTEL_*`` settings; the
trace context an append stores in its messages' headers, which means nothing to the rules (a game stored partly
without it replays as before) and nothing to an append's idempotency; the links of a consumer's batch span."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import grpc
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from paiju.engine.bootstrap import build
from paiju.engine.config import Settings as EngineSettings
from paiju.engine.games import replayed
from paiju.platform import tracing
from paiju.platform.channels import channel
from paiju.platform.consumer import Consumer, MemoryTracking, Tracked
from paiju.platform.serving import build_server
from paiju.platform.settings import SettingsError
from paiju.platform.store import MemoryEventStore, Position, Recorded
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Role
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, engine_pb2_grpc, zlj_pb2

from ..engine.harness import FAIR_SECRET, NOW, auth, engine, reason_of, seated, token
from ..platform.test_store_contract import events
from ..support.credentials import TRUST

ENGINE_ENV = {"PAIJU_TRUSTED_KEYS": "keys.json", "PAIJU_SEED_SECRET": "s" * 32}


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on in this process, every span ended kept in memory; off again afterwards."""
    exporter = InMemorySpanExporter()
    provider = tracing.new_provider(tracing.Config("paiju-test"))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    try:
        yield exporter
    finally:
        tracing.shutdown()


def test_tracing_is_off_by_default() -> None:
    settings = EngineSettings.from_env(ENGINE_ENV)
    config = tracing.Config.of(settings)
    assert config.service_name == "paiju-engine" and not config.exporting
    assert tracing.install(config) is False
    assert not tracing.enabled() and tracing.client_interceptors() is None
    with tracing.appending("GAMES", "g1") as trace:
        assert trace == ()  # nothing to carry


@pytest.mark.parametrize(
    ("env", "exporting"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, False),
    ],
)
def test_the_standard_variables_turn_tracing_on(env: dict[str, str], exporting: bool) -> None:
    config = tracing.Config.of(EngineSettings.from_env({**ENGINE_ENV, **env, "OTEL_SERVICE_NAME": "engine-eu"}))
    assert config.exporting is exporting and config.service_name == "engine-eu"


@pytest.mark.parametrize(
    "env",
    [
        {"OTEL_TRACES_EXPORTER": "zipkin"},
        {"OTEL_TRACES_SAMPLER": "sometimes"},
        {"OTEL_TRACES_SAMPLER_ARG": "1.5"},
        {"OTEL_BSP_SCHEDULE_DELAY": "0"},
    ],
)
def test_a_setting_that_does_not_read_stops_the_process(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match=next(iter(env))):
        EngineSettings.from_env({**ENGINE_ENV, **env})


def test_the_sampler_is_the_one_named() -> None:
    config = tracing.Config("x", sampler="parentbased_traceidratio", sampler_arg=0.25)
    assert "0.25" in tracing.sampler(config).get_description()
    assert tracing.sampler(dataclasses.replace(config, sampler="always_off")).get_description() == "AlwaysOffSampler"


def _named(exporter: InMemorySpanExporter, prefix: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if (s.name or "").startswith(prefix)]


def test_an_append_stores_its_trace_context_in_the_headers_and_a_retry_stays_one_append(
    nats_url: str, spans: InMemorySpanExporter
) -> None:
    async def main() -> None:
        stream = "TR" + uuid.uuid4().hex[:10].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"tr.{stream.lower()}")
        try:
            first = await store.append("g1", Position(), "c1", events("a", "b"))
            appended = _named(spans, "append ")
            assert len(appended) == 1
            context = appended[0].get_span_context()
            assert context is not None
            parent = dict(first[0].trace)["traceparent"]
            assert f"{context.trace_id:032x}" in parent and f"{context.span_id:016x}" in parent
            loaded = await store.load("g1")
            assert [r.trace for r in loaded] == [first[0].trace] * 2  # every message of the batch carries it
            # a retry of the command, in a trace of its own: answered with the events stored, nothing written again
            again = await store.append("g1", Position(), "c1", events("a", "b"))
            assert again == first and [r.trace for r in again] == [first[0].trace] * 2
            assert [r.data for r in await store.load("g1")] == [b"a", b"b"]
            # an untraced append retried traced (and the other way round): one append each
            tracing_provider = tracing._STATE.tracer
            tracing._STATE.tracer = None
            plain = await store.append("g1", first[-1].position, "c2", events("c"))
            tracing._STATE.tracer = tracing_provider
            assert plain[0].trace == ()
            assert await store.append("g1", first[-1].position, "c2", events("c")) == plain
            assert [r.data for r in await store.load("g1")] == [b"a", b"b", b"c"]
            assert (await store.load("g1"))[-1].trace == ()
        finally:
            await store.close()

    asyncio.run(main())


def test_a_game_stored_partly_without_trace_context_replays_as_before(
    nats_url: str, request: pytest.FixtureRequest
) -> None:
    async def main() -> None:
        rng = SeededRandom(7)
        async with engine("jetstream", request) as (stub, games):
            game_id = "traced-replay"
            create = engine_pb2.CreateGameRequest(
                game_id=game_id,
                game=engine_pb2.GAME_ZLJ,
                zlj_options=zlj_pb2.ZljOptions(
                    deals=1,
                    reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
                    resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
                ),
            )
            await stub.CreateGame(seated(create, 6), metadata=auth(token(Role.SERVICE)))

            async def move() -> None:
                game = await games.refresh(game_id)
                for seat in range(6):
                    legal = await stub.GetLegalActions(
                        engine_pb2.GetLegalActionsRequest(game_id=game_id, min_version=game.version),
                        metadata=auth(token(Role.PLAYER, game_id, seat)),
                    )
                    if legal.actions:
                        act = engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex)
                        act.zlj.CopyFrom(legal.actions[rng.below(len(legal.actions))].zlj)
                        await stub.Act(act, metadata=auth(token(Role.PLAYER, game_id, seat)))
                        return
                raise AssertionError("no seat may move")

            for _ in range(3):
                await move()  # untraced: stored as every event was before tracing
            exporter = InMemorySpanExporter()
            provider = tracing.new_provider(tracing.Config("paiju-test"))
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            tracing.use(provider)
            try:
                for _ in range(3):
                    await move()  # traced: the same events, with trace context in their headers
            finally:
                tracing.shutdown()
            assert _named(exporter, "append ")
            stored = await games.store.load(game_id)
            traced = [r for r in stored if r.trace]
            assert traced and len(traced) < len(stored) and stored[0].trace == ()
            live = await games.refresh(game_id)
            with_traces = replayed(game_id, stored)
            without = replayed(game_id, [dataclasses.replace(r, trace=()) for r in stored])
            assert with_traces.game.state == without.game.state == live.state
            assert with_traces.envelopes == without.envelopes
            assert with_traces.game.version == live.version == len(stored)

    asyncio.run(main())


class _Folding:
    """A handler that keeps what it folds."""

    name = "folding"

    def __init__(self) -> None:
        self.folded: list[Recorded] = []

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        self.folded += batch


def test_a_batch_span_links_to_the_append_of_each_event_it_folds(spans: InMemorySpanExporter) -> None:
    async def main() -> None:
        store = MemoryEventStore()
        await store.append("a", Position(), "c1", events("x"))
        untraced = tracing._STATE.tracer
        tracing._STATE.tracer = None
        await store.append("b", Position(), "c2", events("y"))  # stored untraced: folded, not linked
        tracing._STATE.tracer = untraced
        await store.append("c", Position(), "c3", events("z", "w"))
        handler = _Folding()
        await Consumer(store, MemoryTracking(), handler).catch_up()
        assert len(handler.folded) == 4
        appends = {s.get_span_context().span_id for s in _named(spans, "append ")}  # type: ignore[union-attr]
        (batch,) = _named(spans, "consume folding")
        linked = [link.context.span_id for link in batch.links]
        assert set(linked) == appends and len(linked) == 3  # x, and z and w of one append; not y

    asyncio.run(main())


HOSTILE_TRACE_CONTEXTS = [
    {"traceparent": ""},
    {"traceparent": "not a trace context"},
    {"traceparent": "00-" + "0" * 32 + "-" + "0" * 16 + "-01"},  # the invalid all-zero ids
    {"traceparent": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},  # the forbidden version
    {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" + "x" * 5000},
    {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "a=b," * 1000},
    {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "=, ;==~" * 10},
    # a well-formed tracestate: free text of the client's vendors, carried on in the trace but never stored
    {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "kept=" + "x" * 250},
]


@pytest.mark.parametrize("carried", HOSTILE_TRACE_CONTEXTS, ids=range(len(HOSTILE_TRACE_CONTEXTS)))
def test_a_hostile_trace_context_changes_nothing_but_the_trace(
    carried: dict[str, str], request: pytest.FixtureRequest, spans: InMemorySpanExporter
) -> None:
    """A client's trace context is input like any other: whatever it sends, the call is answered as without it,
    and what is stored in the events' headers is the engine's own trace context: a valid ``traceparent`` naming the
    engine's append, and no ``tracestate`` (nothing a client wrote is stored)."""

    async def main() -> None:
        async with engine("memory", request) as (stub, games):
            create = engine_pb2.CreateGameRequest(
                game_id="hostile",
                game=engine_pb2.GAME_ZLJ,
                zlj_options=zlj_pb2.ZljOptions(
                    deals=1,
                    reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
                    resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
                ),
            )
            metadata = (*auth(token(Role.SERVICE)), *carried.items())
            await stub.CreateGame(seated(create, 6), metadata=metadata)
            view = await stub.GetView(engine_pb2.GetViewRequest(game_id="hostile"), metadata=metadata)
            assert view.version > 0
            stored = await games.store.load("hostile")
            appends = {s.get_span_context().span_id for s in _named(spans, "append ")}  # type: ignore[union-attr]
            for recorded in stored:
                headers = dict(recorded.trace)
                assert set(headers) == {"traceparent"} and len(headers["traceparent"]) == 55, headers
                context = tracing.span_context(recorded.trace)
                assert context.is_valid and context.span_id in appends  # the engine's own span
        served = [s for s in spans.get_finished_spans() if s.name == "paiju.v1.EngineService/CreateGame"]
        assert len(served) == 1
        context = served[0].get_span_context()
        assert context is not None and context.is_valid

    asyncio.run(main())


def test_a_traced_client_gets_the_refusal_as_it_was_sent(spans: InMemorySpanExporter) -> None:
    """Through a traced channel (`paiju.platform.channels`) a refusal reaches the client whole — its code, its
    message, its error details — and the client's span and the server's are one trace, both marked with its code."""

    async def main() -> None:
        _, service = await build(
            MemoryEventStore(), TRUST, now=lambda: NOW, seeds=lambda game_id, version: 7, seed_secret=FAIR_SECRET
        )
        server = build_server(service.policy)
        service.add_to(server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        client = channel(f"127.0.0.1:{port}")
        try:
            stub: Any = engine_pb2_grpc.EngineServiceStub(client)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.GetView(engine_pb2.GetViewRequest(game_id="nowhere"), metadata=auth(token(Role.ANALYST)))
            assert refused.value.code() == grpc.StatusCode.NOT_FOUND
            assert reason_of(refused.value) == "GAME_NOT_FOUND"
        finally:
            await client.close()
            await server.stop(None)
        by_kind = {s.kind.name: s for s in spans.get_finished_spans() if s.name == "paiju.v1.EngineService/GetView"}
        client_span, server_span = by_kind["CLIENT"], by_kind["SERVER"]
        assert server_span.parent is not None and client_span.context is not None
        assert server_span.parent.span_id == client_span.context.span_id
        code = grpc.StatusCode.NOT_FOUND.value[0]
        assert client_span.attributes is not None and client_span.attributes["rpc.grpc.status_code"] == code
        assert server_span.attributes is not None and server_span.attributes["rpc.grpc.status_code"] == code

    asyncio.run(main())
