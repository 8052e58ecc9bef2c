"""`make bench`, tracing: what traces cost the engine, off (the default) and on.

Two measures, in one run:

- **The engine's CPU per act, tracing off and on.** An embedded nats-server and one `paiju engine` process; this
  process is the load: `TABLES` 砸六家 tables, each with one seat's Watch stream open, whose seats act through the
  gRPC API (random legal actions, each act after its mover's `GetLegalActions`, as bots play). The engine's CPU
  (``/proc/<pid>/stat``: every thread) over the measured acts, divided by the acts. Tracing on: the engine exports
  every span (always sampled) over OTLP/gRPC to a receiver in this process. The modes alternate, a fresh engine for
  each run, `ROUNDS` runs each; medians and their ratio.
- **The hooks tracing leaves on the hot paths when off**, against the same code without them: the producer span
  around an append (`tracing.appending`), the span around a watcher's message (`tracing.sending`), the trace
  header looked for in each stored message read (`paiju.platform.store.messages.decode`). Each in µs per call
  (medians of `REPEATS` timings), and what one act pays for them — one append, the `WATCHERS` messages of a table's
  six watchers, `EVENTS_READ` stored messages read — as a share of the engine's CPU per act measured with tracing
  off. The target: at most 1 %.
- **What the spans of one act cost when on**, hook by hook in this process (every span sampled, then encoded in
  batches as the OTLP exporter sends them): the server spans of the act's `SERVER_CALLS` calls, its append, its
  watchers' messages, the trace context read back from its stored messages. The same share of an act, without the
  noise of a shared machine that the engine runs above carry.

Run: ``.venv/bin/python bench/tracing.py [acts per table] [--rounds N] [--quick]`` (``--quick``: the timings of the
hooks a hundredth as long and two warm-up acts; with ``2 --rounds 1``, a run that only shows the benchmark works).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import timeit
import uuid
from collections import deque
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace import SpanProcessor

from paiju.dev.stack import embedded_nats
from paiju.platform import tracing
from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.store import messages
from paiju.platform.store.base import Recorded
from paiju.platform.tokens import MAX_SECONDS, Identity, Issuer, Role, Signer, Trust
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, engine_pb2_grpc, zlj_pb2

LOBBY = Signer(Ed25519PrivateKey.generate(), f"{Issuer.LOBBY.value}.1")
TABLES = 8
ROUNDS = 5
REPEATS = 7
WARM_ACTS = 20
WATCHERS = 6
"""Watch messages one act sends at a table whose six seats watch."""
EVENTS_READ = 2
"""Stored messages read per act: the engine's feed delivers its own append back, and the move's event."""
SERVER_CALLS = 2
"""The calls of one act: the mover's `GetLegalActions` and its `Act`."""
EXPORT_BATCH = 512
"""Spans the exporter sends at a time (OpenTelemetry's batch processor's default)."""
TARGET = 0.01
"""Tracing off may cost at most 1 % of the engine's CPU per act."""


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP/gRPC receiver that counts the spans it is sent."""

    def __init__(self) -> None:
        self.spans = 0
        self._lock = threading.Lock()

    def Export(self, request: Any, context: Any) -> Any:
        count = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
        with self._lock:
            self.spans += count
        return trace_service_pb2.ExportTraceServiceResponse()


def _md(identity: Identity) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {LOBBY.mint(identity)}"),)


async def _table(stub: Any, game_id: str, acts: int, seed: int) -> int:
    """Create a table's game, open one seat's Watch, and play ``acts`` random legal acts; the acts made. Its tokens
    live as long as their roles allow (`MAX_SECONDS`): a table's acts take seconds."""
    now = int(time.time())
    seats = [_md(Identity(f"p{s}", Role.PLAYER, game_id, s, now + MAX_SECONDS[Role.PLAYER], now)) for s in range(6)]
    service = Identity("lobby", Role.SERVICE, expires=now + MAX_SECONDS[Role.SERVICE], issued=now)
    create = engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_ZLJ)
    create.zlj_options.CopyFrom(
        zlj_pb2.ZljOptions(
            deals=0, reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL
        )
    )
    await stub.CreateGame(create, metadata=_md(service))
    watch = stub.Watch(engine_pb2.WatchRequest(game_id=game_id), metadata=seats[0])

    async def watching() -> None:
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.CancelledError):
            async for _ in watch:
                pass

    watcher = asyncio.create_task(watching())
    rng = SeededRandom(seed)
    done, last = 0, 5
    while done < acts:
        for seat in ((last + 1 + i) % 6 for i in range(6)):
            legal = await stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=seats[seat])
            if not legal.actions:
                continue
            request = engine_pb2.ActRequest(
                game_id=game_id, command_id=uuid.uuid4().hex, zlj=legal.actions[rng.below(len(legal.actions))].zlj
            )
            await stub.Act(request, metadata=seats[seat])
            done += 1
            last = seat
            break
    watch.cancel()
    watcher.cancel()
    return done


async def _load(address: str, tables: int, acts: int) -> int:
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
        made = await asyncio.gather(*(_table(stub, f"t{i}-{uuid.uuid4().hex[:8]}", acts, i) for i in range(tables)))
    return sum(made)


def process_cpu(pid: int) -> float:
    """CPU seconds process ``pid`` used so far, every thread (``/proc/<pid>/stat``: utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def engine_run(env: dict[str, str], address: str, acts: int, warm: int = WARM_ACTS) -> tuple[float, int]:
    """Start an engine, warm it up (``warm`` acts), measure its CPU over ``TABLES`` tables of ``acts`` acts; (µs per
    act, acts)."""
    engine = subprocess.Popen(
        [sys.executable, "-m", "paiju.cli", "engine"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until_serving(address)
        asyncio.run(_load(address, 1, warm))
        before = process_cpu(engine.pid)
        made = asyncio.run(_load(address, TABLES, acts))
        used = process_cpu(engine.pid) - before
    finally:
        engine.terminate()
        engine.wait(timeout=30)
    return used / made * 1e6, made


def engine_cpu(acts: int, rounds: int = ROUNDS, warm: int = WARM_ACTS) -> dict[str, Any]:
    """The engine's CPU per act, tracing off and on, alternating (medians of ``rounds`` runs each)."""
    receiver = Receiver()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(receiver, server)  # type: ignore[no-untyped-call]
    otlp = server.add_insecure_port("127.0.0.1:0")
    server.start()
    runs: dict[str, list[float]] = {"off": [], "on": []}
    acts_made = 0
    try:
        with tempfile.TemporaryDirectory() as data, embedded_nats(Path(data) / "nats") as nats_url:
            keys = Path(data) / "keys.json"
            keys.write_text(Trust.of([LOBBY]).jwks())
            seed = Path(data) / "seed-secret"
            seed.write_text("bench-seeds-" * 4)
            seed.chmod(0o600)
            for round_ in range(rounds):
                for mode in ("off", "on"):
                    address = f"127.0.0.1:{free_port()}"
                    env = {
                        **os.environ,
                        "PAIJU_ENGINE_ADDRESS": address,
                        "NATS_URL": nats_url,
                        "PAIJU_GAMES_STREAM": f"B{round_}{mode.upper()}",
                        "PAIJU_GAMES_SUBJECT_PREFIX": f"b{round_}{mode}.game",
                        "PAIJU_ENGINE_METRICS_PORT": "0",
                        "PAIJU_TRUSTED_KEYS": str(keys),
                        "PAIJU_SEED_SECRET_FILE": str(seed),
                        "PAIJU_RATE_LIMITS": "off",
                        "PAIJU_LOG_LEVEL": "warning",
                        "PAIJU_TIMER_SECONDS": "5",
                        # dealt fairly (the default), with windows that wait for nobody: these bots send no
                        # contributions, and a window that waited for them would stall every table
                        "PAIJU_FIRST_DEAL_SECONDS": "0",
                        "PAIJU_CONTRIBUTION_SECONDS": "0",
                    }
                    for variable in [v for v in env if v.startswith("OTEL_")]:
                        del env[variable]
                    if mode == "on":
                        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{otlp}"
                        env["OTEL_TRACES_SAMPLER"] = "always_on"
                    per_act, made = engine_run(env, address, acts, warm)
                    runs[mode].append(per_act)
                    acts_made += made
    finally:
        server.stop(None)
    off, on = statistics.median(runs["off"]), statistics.median(runs["on"])
    return {
        "off_us_per_act": round(off),
        "on_us_per_act": round(on),
        "on_over_off": round(on / off, 3),
        "runs_off": [round(r) for r in runs["off"]],
        "runs_on": [round(r) for r in runs["on"]],
        "acts": acts_made,
        "spans_received": receiver.spans,
    }


def _recorded_before(aggregate: str, sequence: int, headers: dict[str, str] | None, data: bytes | None) -> Recorded:
    """The decoding of a stored message of one event as it was before tracing: the baseline of its hook."""
    if not headers or messages.VERSION not in headers or messages.COMMAND not in headers:
        raise ValueError("not a Paiju event")
    version, command = int(headers[messages.VERSION]), headers[messages.COMMAND]
    return Recorded(aggregate, version, sequence, command, bytes(data or b""))


def _per_call_us(statement: Any, number: int = 200_000) -> float:
    """CPU µs per call of ``statement`` (this thread's CPU time: what others running on the machine take is not
    counted): the median of `REPEATS` timings of ``number`` calls."""
    number = max(1, number)
    timings = timeit.repeat(statement, number=number, repeat=REPEATS, timer=time.thread_time)
    return statistics.median(timings) / number * 1e6


def hooks(scale: float = 1.0) -> dict[str, float]:
    """µs per call of each off-path hook and of the same code without it (tracing off in this process); each timing
    ``scale`` times its usual number of calls."""
    number = int(200_000 * scale)
    assert not tracing.enabled()
    headers = {
        "Nats-Msg-Id": "g1:c1:1",
        messages.VERSION: "12",
        messages.COMMAND: "0123456789abcdef0123456789abcdef",
        "Nats-Expected-Last-Subject-Sequence": "4411",
    }
    data = b"x" * 300

    def bare() -> None:
        pass

    def appending() -> None:
        with tracing.appending("GAMES", "g1"):
            pass

    def sending() -> None:
        with tracing.sending("g1", 12):
            pass

    figures = {
        "empty_call_us": _per_call_us(bare, number),
        "appending_us": _per_call_us(appending, number),
        "sending_us": _per_call_us(sending, number),
        "recorded_before_us": _per_call_us(lambda: _recorded_before("g1", 4412, headers, data), number),
        "recorded_us": _per_call_us(lambda: messages.decode("g1", 4412, headers, data), number),
    }
    return {key: round(value, 4) for key, value in figures.items()}


class _Kept(SpanProcessor):
    """A span processor that keeps the spans ended (the last `EXPORT_BATCH`), as the batch processor queues them
    for its exporting thread."""

    def __init__(self) -> None:
        self.spans: deque[Any] = deque(maxlen=EXPORT_BATCH)

    def on_end(self, span: Any) -> None:
        self.spans.append(span)


class _Context:
    """What a server span reads of a gRPC call's context: its metadata (a client's trace context) and its code."""

    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self._metadata = metadata

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def code(self) -> Any:
        return grpc.StatusCode.OK


def traced_hooks(scale: float = 1.0) -> dict[str, float]:
    """CPU µs per call of each hook with tracing on, every span sampled; and the CPU µs per span of encoding them as
    the OTLP exporter sends them, a batch at a time (the protobuf request, serialized; the network not counted); each
    timing ``scale`` times its usual number of calls."""
    number = int(20_000 * scale)
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    provider = tracing.new_provider(tracing.Config("bench", sampler="always_on"))
    kept = _Kept()
    provider.add_span_processor(kept)
    tracing.use(provider)
    try:
        with tracing.appending("GAMES", "g1") as trace:
            pass
        tracing.remember("g1", 12, trace)
        metadata = (("authorization", "Bearer " + "x" * 400), *trace)

        async def handler(request: Any, context: Any) -> bytes:
            return b""

        wrapped = tracing.server_handler("/paiju.v1.EngineService/Act", grpc.unary_unary_rpc_method_handler(handler))
        assert wrapped is not None
        served = wrapped.unary_unary
        context = _Context(metadata)

        def server_call() -> None:
            call = served(b"", context)
            with contextlib.suppress(StopIteration):
                call.send(None)

        def appending() -> None:
            with tracing.appending("GAMES", "g1"):
                pass

        def sending() -> None:
            with tracing.sending("g1", 12):
                pass

        headers = {
            "Nats-Msg-Id": "g1:c1:1",
            messages.VERSION: "12",
            messages.COMMAND: "0123456789abcdef0123456789abcdef",
            **dict(trace),
        }
        figures = {
            "on_server_span_us": _per_call_us(server_call, number),
            "on_appending_us": _per_call_us(appending, number),
            "on_sending_us": _per_call_us(sending, number),
            "on_recorded_us": _per_call_us(lambda: messages.decode("g1", 4412, headers, b"x" * 300), number),
        }
        batch = list(kept.spans)
        figures["on_export_us_per_span"] = _per_call_us(
            lambda: encode_spans(batch).SerializeToString(), int(20 * scale)
        ) / len(batch)
    finally:
        tracing.shutdown()
    return {key: round(value, 3) for key, value in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("acts", type=int, nargs="?", default=60, help="acts per table and run")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="engine runs of each mode")
    parser.add_argument("--quick", action="store_true", help="hooks timed a hundredth as long, two warm-up acts")
    args = parser.parse_args()
    scale = 0.01 if args.quick else 1.0
    measured = hooks(scale)
    traced = traced_hooks(scale)
    cpu = engine_cpu(args.acts, args.rounds, 2 if args.quick else WARM_ACTS)
    rounds = args.rounds
    # the hooks' cost beyond the code without them, per act
    appending = measured["appending_us"] - measured["empty_call_us"]
    sending = measured["sending_us"] - measured["empty_call_us"]
    reading = measured["recorded_us"] - measured["recorded_before_us"]
    per_act = appending + WATCHERS * sending + EVENTS_READ * reading
    share = per_act / cpu["off_us_per_act"]
    spans_per_act = SERVER_CALLS + 1 + WATCHERS
    on_per_act = (
        SERVER_CALLS * traced["on_server_span_us"]
        + traced["on_appending_us"]
        + WATCHERS * traced["on_sending_us"]
        + EVENTS_READ * (traced["on_recorded_us"] - measured["recorded_before_us"])
        + spans_per_act * traced["on_export_us_per_span"]
    )
    result = {
        "benchmark": "tracing",
        **cpu,
        **measured,
        **traced,
        "on_spans_us_per_act": round(on_per_act, 1),
        "on_spans_share_of_act": round(on_per_act / cpu["off_us_per_act"], 4),
        "off_hooks_us_per_act": round(per_act, 3),
        "off_hooks_share_of_act": round(share, 5),
        "target_share": TARGET,
        "met": share <= TARGET,
    }
    print(json.dumps(result))
    print()
    print(f"| engine, {TABLES} tables flat out, one Watch each | CPU per act (median of {rounds}) | ratio |")
    print("|---|---|---|")
    print(f"| tracing off (the default) | {cpu['off_us_per_act']} µs | 1 |")
    print(f"| tracing on, every span exported | {cpu['on_us_per_act']} µs | {cpu['on_over_off']} |")
    print()
    print("| hook, tracing off | µs per call | without the hook | per act |")
    print("|---|---|---|---|")
    print(f"| producer span around an append | {measured['appending_us']} | {measured['empty_call_us']} | ×1 |")
    print(f"| span around a watcher's message | {measured['sending_us']} | {measured['empty_call_us']} | ×{WATCHERS} |")
    print(
        f"| trace header looked for in a stored message | {measured['recorded_us']} | "
        f"{measured['recorded_before_us']} | ×{EVENTS_READ} |"
    )
    print(
        f"| **what an act pays for the hooks** | {per_act:.3f} µs | | {share:.4%} of {cpu['off_us_per_act']} µs "
        f"(target ≤ {TARGET:.0%}) |"
    )
    print()
    print("| tracing on, every span sampled and encoded for export | µs per call | per act |")
    print("|---|---|---|")
    print(f"| server span of a call | {traced['on_server_span_us']} | ×{SERVER_CALLS} |")
    print(f"| producer span of an append | {traced['on_appending_us']} | ×1 |")
    print(f"| span of a watcher's message | {traced['on_sending_us']} | ×{WATCHERS} |")
    print(f"| trace context read from a stored message | {traced['on_recorded_us']} | ×{EVENTS_READ} |")
    export = traced["on_export_us_per_span"]
    print(f"| a span encoded for export (in batches of {EXPORT_BATCH}) | {export} | ×{spans_per_act} |")
    print(
        f"| **what an act pays for its spans** | {on_per_act:.1f} µs | "
        f"{on_per_act / cpu['off_us_per_act']:.2%} of {cpu['off_us_per_act']} µs |"
    )


if __name__ == "__main__":
    main()
