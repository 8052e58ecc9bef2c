"""`make bench`, the floor of a move: what one `EngineService.Act` must cost, at bare-library CPU, on this machine.

The design's floor of a move is what the libraries Paiju is built on cannot do without, for the work one move
asks of them:

    floor per move = 2 unary gRPC round trips (the move's `Act`, and the mover's `GetLegalActions`)
                   + P JetStream publishes with ack (the events stored, and whatever else the stack publishes)
                   + W streamed gRPC messages (the events sent to every watcher of the game)
                   + one rules-core move (the mover's legal actions, `decide` and `evolve` of the move)

where P and W are the publishes and the Watch messages per `Act` counted in a load run (`bench/load.py`
measures the floor in the same run with its own P, W and game mix) and the rules part weighs 砸六家 and 拖拉机 as
that run did. Each part is measured bare — no interceptor, no token check, no codec, no store of Paiju's — as the
CPU seconds the processes involved used (client and server halves apart), medians over `--rounds` rounds:

- **unary round trip**: a grpc.aio server (a process of its own, no interceptors) whose servicer answers canned
  `GetLegalActions` and `Act` answers of the size the engine gives (legal actions, the events of a move), and a
  grpc.aio client (another process) sending requests of realistic size (a bearer token as long as the lobby's),
  one call at a time; CPU per call of each process (``getrusage``, all of its threads). Given the load run's pace,
  also both round trips at that pace (a call now and then, at random, as many a second as the run's moves), and the
  publishes below at P times it: the floor's parts run back to back, on warm caches, as no process of a quiet stack
  runs. The floor with those at the run's pace is reported beside the floor (`Floor.paced_parts`), not summed into it
  and not gated: a part measured alone at a pace pays a wake-up of its process per operation, which a stack's
  processes share between parts, so it reads high where back to back reads low.
- **JetStream publish with ack**: a nats-py client publishing, one at a time and waiting for each ack, stored
  events (envelopes as the engine stores them) with the event store's headers (message id, version, command id,
  expected last subject sequence) to a file-backed stream on `paiju.game.<partition>.<game>` of an embedded
  nats-server (`paiju.dev.stack.embedded_nats`); the client's CPU and the nats-server's (its threads'
  ``schedstat``) per publish.
- **streamed message**: a grpc.aio server streaming Watch messages (redacted envelopes, a few hundred bytes) to a
  grpc.aio client, paced (one message per stream every `STREAM_PACE` seconds: an event at a time, as games make
  them, not a flood the transport batches), the server fanning each message out through a queue per stream as the
  engine does; over one stream, over `TABLE_STREAMS` streams at once on one connection (the six seats of one 砸六家
  table, which one bot runner holds), and over as many streams each on a connection of its own (as spectators, each
  on a machine of their own, watch: what the engine's CPU per spectator message is held against); server and client
  CPU per message. When the load run had spectators, also at their shape (`Crowd`, not part of the floor's sum): as
  many streams as the run's spectators, each on a connection of its own, a table's streams getting each message at
  once, every table at the pace the run's spectators were sent messages, from a moment of its own — the bare
  library doing what the engine does for the crowd, measured while the streams flow.
- **rules core**: one move of each game's core (`paiju.rules.registry.GAMES`) in seeded playouts of the heuristic
  bots (`paiju.rules.{zlj,tractor}.bots`; games dealt from seeds, not committed shuffles): the CPU (this thread's
  clock) of the mover's `legal_actions` plus `decide` and `evolve` of the move the bot chose (the bot's choice is
  not counted). A round's cost is its mean per move (deals and their big events included, as a load run's CPU per
  Act includes them); the per-move median is printed beside it.

The playouts also give the payloads the other parts send (legal actions, `Act` requests and answers, stored and
redacted envelopes), mixed as the run's games are. "The server side alone" is the floor's server halves: the
engine's share of the round trips, the nats-server, the server side of the streams and the rules move; the client
halves are the bot runner's.

    .venv/bin/python bench/floor.py [--publishes P] [--messages W] [--mix zlj=0.5] [--rounds 5]

prints each part (client and server halves, µs) as one JSON line and a Markdown table. `measure_floor` is what
`bench/load.py` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import dataclasses
import hashlib
import itertools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paiju.platform import event_loop
from paiju.platform.grpc_io import grpc_environment

HERE = Path(__file__).resolve()
ROUNDS = 5
"""Rounds of each part; medians reported."""
ROUND_SECONDS = 1.5
"""About how long one round of a part lasts (its count of operations is sized from a first, short round)."""
STREAM_PACE = 0.001
"""Seconds between two messages of a stream (every stream of a group gets each message at once)."""
TABLE_STREAMS = 6
"""Streams that receive each message at once: the seats of one 砸六家 table."""
PACED_ROUND_SECONDS = 3.0
"""About how long one round of the `Act` round trip at a run's pace lasts."""
CROWD_ROUND_SECONDS = 3.0
"""How long one round of the crowd's streams lasts (`crowd_rounds`), its streams open and their messages flowing."""
ACT_PART, LEGAL_PART, PUBLISH_PART = (
    "unary round trip: Act",
    "unary round trip: GetLegalActions",
    "JetStream publish with ack (P)",
)
PACED_PARTS = (ACT_PART, LEGAL_PART, PUBLISH_PART)
"""The floor's parts that are also measured at a run's pace (`Floor.paced_parts`), by their names in `Floor.parts`."""
OWN_CONNECTION = (("grpc.use_local_subchannel_pool", 1),)
"""Channel options for a connection of the channel's own: gRPC shares one connection among a process's channels to
one address unless each asks for a subchannel pool of its own (`bench/load_watchers.py`'s spectators use them too)."""
RULES_MOVES = 600
"""Moves timed per game in a round of the rules part."""
PLAYOUT_MOVES = 400
"""A playout starts a new game (another seed) after this many moves, so the positions are varied."""
SAMPLES = 400
"""Payloads kept per kind and game."""
TOKEN = "eyJ" + "x" * 347
"""A bearer token as long as the lobby's game tokens (an Ed25519-signed JWT, about 350 characters)."""
GAME_IDS = 64
"""Distinct games (JetStream subjects) the publishes go to."""
PARTITIONS = 16
SERVICE = "paiju.v1.EngineService"
"""The bare servers answer as the engine's service (the generated stubs call it by this name)."""


# --- CPU ----------------------------------------------------------------------------------------------------


def own_cpu() -> float:
    """CPU seconds this process used so far, every thread (``getrusage``: microseconds)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def threads_cpu(pid: int) -> float:
    """CPU seconds the live threads of ``pid`` used so far (``/proc/<pid>/task/*/schedstat``: nanoseconds; a
    thread that ended is not counted — for a process whose threads live on, as the nats-server's)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
    return total / 1e9


def busy_seconds() -> float:
    """The machine's busy CPU seconds so far, every core (``/proc/stat``: all but idle, iowait and steal)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4] + (fields[7] if len(fields) > 7 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


# --- payloads from playouts -----------------------------------------------------------------------------------


def playout_moves(game: str, seed: int) -> Iterator[tuple[Any, int, Sequence[Any], Any, Sequence[Any], int]]:
    """Moves of seeded games of ``game`` by its heuristic bots, forever: (state before, mover, the mover's legal
    actions, the command, its events, CPU nanoseconds of legal actions + decide + evolve)."""
    from paiju.rules.registry import GAMES
    from paiju.rules.rng import SeededRandom
    from paiju.rules.tractor import bots as tractor_bots
    from paiju.rules.zlj import bots as zlj_bots

    rules = GAMES[game]
    make_bot: Callable[[int], Any] = {"zlj": zlj_bots.HeuristicBot, "tractor": tractor_bots.HeuristicBot}[game]
    options = rules.options(deals=0) if game == "zlj" else rules.options()
    seeds = SeededRandom(seed)
    clock = time.thread_time_ns
    while True:
        bots = [make_bot(seeds.next64()) for _ in range(rules.seats)]
        state = rules.new_state()
        for event in rules.decide(state, rules.start(seeds.next64(), options, 0, fair=False)):
            state = rules.evolve(state, event)
        for _ in range(PLAYOUT_MOVES):
            again = rules.deal_again(state, seeds.next64())
            if again is not None:  # the engine's own move (a void first 拖拉机 deal): not a player's
                for event in rules.decide(state, again):
                    state = rules.evolve(state, event)
                continue
            waiting = rules.waiting(state)
            if not waiting:
                break
            seat = waiting[0]
            t0 = clock()
            legal = rules.legal_actions(state, seat)
            t1 = clock()
            command: Any = bots[seat].choose(state, seat)
            if type(command) in rules.seeded_commands:
                command = dataclasses.replace(command, seed=seeds.next64())
            t2 = clock()
            events = rules.decide(state, command)
            after = state
            for event in events:
                after = rules.evolve(after, event)
            t3 = clock()
            yield state, seat, legal, command, events, (t1 - t0) + (t3 - t2)
            state = after


@dataclass
class Payloads:
    """Serialized messages of each kind, by game: what the parts send."""

    by_game: dict[str, dict[str, list[bytes]]] = field(default_factory=dict)

    def save(self, path: Path) -> None:
        text = {
            game: {kind: [base64.b64encode(m).decode() for m in items] for kind, items in kinds.items()}
            for game, kinds in self.by_game.items()
        }
        path.write_text(json.dumps(text))

    @classmethod
    def load(cls, path: Path) -> Payloads:
        text = json.loads(path.read_text())
        return cls(
            {
                game: {kind: [base64.b64decode(m) for m in items] for kind, items in kinds.items()}
                for game, kinds in text.items()
            }
        )

    def mixed(self, kind: str, mix: Mapping[str, float], count: int = 1000) -> list[bytes]:
        """``count`` messages of ``kind``, each from a game drawn by ``mix`` (seeded: the same for every run)."""
        rng = random.Random(7)
        games = [g for g in mix if self.by_game.get(g, {}).get(kind)]
        weights = [mix[g] for g in games]
        position = dict.fromkeys(games, 0)
        out = []
        for _ in range(count):
            game = rng.choices(games, weights)[0]
            items = self.by_game[game][kind]
            out.append(items[position[game] % len(items)])
            position[game] += 1
        return out

    def mean_size(self, kind: str, mix: Mapping[str, float]) -> float:
        return statistics.fmean(len(m) for m in self.mixed(kind, mix))


def collect_payloads(game: str, seed: int, moves: int) -> dict[str, list[bytes]]:
    """The messages the engine's clients and store see along a playout of ``game``: ``legal`` (a mover's
    `GetLegalActionsResponse`), ``act_request`` / ``act_response``, ``stored`` (an envelope as stored, with its
    command digest) and ``watch`` (a `WatchResponse` with an envelope redacted for a seat)."""
    from paiju.contract.games import GAMES as CODECS
    from paiju.rules.registry import GAMES
    from paiju.v1 import engine_pb2

    rules, codecs = GAMES[game], CODECS[game]
    game_id = f"{uuid.uuid4()}-m1"
    every = max(1, moves // SAMPLES)
    found: dict[str, list[bytes]] = {k: [] for k in ("legal", "act_request", "act_response", "stored", "watch")}
    version = 0
    for i, (_, seat, legal, command, events, _) in enumerate(playout_moves(game, seed)):
        if i >= moves:
            break
        if i % every:
            version += len(events)
            continue
        answer = engine_pb2.GetLegalActionsResponse(version=version)
        for action in legal:
            getattr(answer.actions.add(), game).CopyFrom(codecs.commands.encode(action))
        found["legal"].append(answer.SerializeToString())
        command_id = uuid.uuid4().hex
        request = engine_pb2.ActRequest(game_id=game_id, command_id=command_id, expected_version=version)
        getattr(request, game).CopyFrom(codecs.commands.encode(command))
        found["act_request"].append(request.SerializeToString())
        digest = hashlib.sha256(request.SerializeToString()).digest()
        response = engine_pb2.ActResponse(version=version + len(events))
        for n, event in enumerate(events, start=1):
            envelope = engine_pb2.Envelope(
                game_id=game_id,
                version=version + n,
                command_id=command_id,
                actor=f"bot-{seat}-{game_id[:8]}",
                schema_version=1,
                command_digest=digest,
            )
            envelope.recorded_at.GetCurrentTime()
            getattr(envelope, game).CopyFrom(codecs.events.encode(event))
            found["stored"].append(envelope.SerializeToString())
            seen = engine_pb2.Envelope()
            seen.CopyFrom(envelope)
            seen.ClearField("command_digest")
            getattr(seen, game).CopyFrom(codecs.events.encode(rules.redact(event, (seat + 1) % rules.seats)))
            response.events.append(seen)
            found["watch"].append(engine_pb2.WatchResponse(envelope=seen).SerializeToString())
        found["act_response"].append(response.SerializeToString())
        version += len(events)
    return found


# --- the parts' processes -----------------------------------------------------------------------------------


class Commands:
    """A worker's control lines on stdin, read without a thread; answers are JSON lines on stdout."""

    def __init__(self) -> None:
        self.reader = asyncio.StreamReader()

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(self.reader), sys.stdin)

    async def __aiter__(self) -> Any:
        while line := await self.reader.readline():
            yield line.decode().split()

    @staticmethod
    def answer(**values: Any) -> None:
        print(json.dumps(values), flush=True)


def _mix_of(text: str) -> dict[str, float]:
    return {k: float(v) for k, v in (item.split("=") for item in text.split(","))}


async def unary_server(payloads: Path, mix: str) -> None:
    """A bare grpc.aio EngineService answering `GetLegalActions` and `Act` with canned answers."""
    import grpc

    from paiju.v1 import engine_pb2

    found = Payloads.load(payloads)
    weights = _mix_of(mix)
    legal = [engine_pb2.GetLegalActionsResponse.FromString(m) for m in found.mixed("legal", weights)]
    acts = [engine_pb2.ActResponse.FromString(m) for m in found.mixed("act_response", weights)]

    served = [0]

    async def get_legal_actions(request: Any, context: Any) -> Any:
        served[0] += 1
        return legal[served[0] % len(legal)]

    async def act(request: Any, context: Any) -> Any:
        served[0] += 1
        return acts[served[0] % len(acts)]

    handlers: dict[str, Any] = {
        "GetLegalActions": grpc.unary_unary_rpc_method_handler(
            get_legal_actions,
            request_deserializer=engine_pb2.GetLegalActionsRequest.FromString,
            response_serializer=engine_pb2.GetLegalActionsResponse.SerializeToString,
        ),
        "Act": grpc.unary_unary_rpc_method_handler(
            act,
            request_deserializer=engine_pb2.ActRequest.FromString,
            response_serializer=engine_pb2.ActResponse.SerializeToString,
        ),
    }
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    commands = Commands()
    await commands.open()
    Commands.answer(port=port)
    async for _ in commands:
        Commands.answer(cpu_s=own_cpu(), calls=served[0])
    await server.stop(None)


async def unary_client(address: str, payloads: Path, mix: str) -> None:
    """Calls of one kind (``act``, ``legal``), one at a time, ``N`` per command line ``<kind> N``: back to back, or
    with ``<kind> N <rate>`` at ``rate`` calls a second (random gaps between them, their mean 1 / ``rate``)."""
    import grpc

    from paiju.v1 import engine_pb2, engine_pb2_grpc

    found = Payloads.load(payloads)
    weights = _mix_of(mix)
    requests: dict[str, list[Any]] = {
        "act": [engine_pb2.ActRequest.FromString(m) for m in found.mixed("act_request", weights)],
        "legal": [
            engine_pb2.GetLegalActionsRequest(game_id=r.game_id, min_version=r.expected_version)
            for r in (engine_pb2.ActRequest.FromString(m) for m in found.mixed("act_request", weights))
        ],
    }
    metadata = (("authorization", f"Bearer {TOKEN}"),)
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
        methods = {"act": stub.Act, "legal": stub.GetLegalActions}
        commands = Commands()
        await commands.open()
        Commands.answer(ready=True)
        gaps = random.Random(7)
        async for kind, count, *paced in commands:
            method, items = methods[kind], requests[kind]
            rate = float(paced[0]) if paced else 0.0
            before = own_cpu()
            for i in range(int(count)):
                await method(items[i % len(items)], metadata=metadata)
                if rate:  # the run's pace: a call now and then, at random, as a run's moves come
                    await asyncio.sleep(gaps.expovariate(rate))
            Commands.answer(cpu_s=own_cpu() - before)


async def stream_server(payloads: Path, mix: str) -> None:
    """A bare grpc.aio EngineService whose `Watch` streams canned messages: the streams of one group (named by
    the request's game id ``<group>:<streams>:<messages>``) get each message at once, through a queue per stream,
    one message every `STREAM_PACE` seconds; a group named ``<group>:<streams>:0:<pace>`` is a table of the crowd
    (`crowd_rounds`): a message every ``pace`` seconds on average, for as long as the server runs."""
    import grpc

    from paiju.v1 import engine_pb2

    found = Payloads.load(payloads)
    messages = [engine_pb2.WatchResponse.FromString(m) for m in found.mixed("watch", _mix_of(mix))]
    groups: dict[str, list[asyncio.Queue[Any]]] = {}
    ticking: set[asyncio.Task[None]] = set()
    chance = random.Random(7)
    open_streams = [0]

    async def tick(queues: list[asyncio.Queue[Any]], count: int) -> None:
        for i in range(count):
            message = messages[i % len(messages)]
            for queue in queues:
                queue.put_nowait(message)
            await asyncio.sleep(STREAM_PACE)
        for queue in queues:
            queue.put_nowait(None)

    async def table(queues: list[asyncio.Queue[Any]], pace: float) -> None:
        """A table of the crowd: a message to all its streams every ``pace`` seconds on average, from a moment of its
        own (tables are not in step), while any of its streams is open."""
        await asyncio.sleep(chance.random() * pace)
        for i in itertools.count():
            if not queues:
                return
            message = messages[i % len(messages)]
            for queue in queues:
                queue.put_nowait(message)
            await asyncio.sleep(pace * (0.5 + chance.random()))

    async def watch(request: Any, context: Any) -> Any:
        _, streams, count, *paced = request.game_id.split(":")
        queue: asyncio.Queue[Any] = asyncio.Queue()
        group = groups.setdefault(request.game_id, [])
        group.append(queue)
        if len(group) == int(streams):
            del groups[request.game_id]
            work = table(group, float(paced[0])) if paced else tick(group, int(count))
            task = asyncio.get_running_loop().create_task(work)
            ticking.add(task)
            task.add_done_callback(ticking.discard)
        open_streams[0] += 1
        try:
            while (message := await queue.get()) is not None:
                yield message
        finally:  # the stream ended (or its watcher left): its table stops sending to it
            open_streams[0] -= 1
            group.remove(queue)

    handlers: dict[str, Any] = {
        "Watch": grpc.unary_stream_rpc_method_handler(
            watch,
            request_deserializer=engine_pb2.WatchRequest.FromString,
            response_serializer=engine_pb2.WatchResponse.SerializeToString,
        )
    }
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    commands = Commands()
    await commands.open()
    Commands.answer(port=port)
    async for _ in commands:
        Commands.answer(cpu_s=own_cpu(), streams=open_streams[0])
    await server.stop(None)


async def stream_client(address: str) -> None:
    """For each command line ``watch <streams> <messages> <apart>``: that many streams at once, each read to its end;
    all on one connection, or with ``apart`` 1 each on a connection of its own (made before the first round, and kept:
    a spectator's connection is open before its messages come). ``crowd <tables> <per table> <pace>`` opens the
    crowd's streams (`crowd_rounds`), each on a connection of its own, and keeps reading them; ``crowd-count`` tells
    this process's CPU and the crowd's messages so far; ``crowd-stop`` ends the crowd's streams."""
    import grpc

    from paiju.v1 import engine_pb2, engine_pb2_grpc

    metadata = (("authorization", f"Bearer {TOKEN}"),)
    own: list[Any] = []
    """The streams' own connections (`OWN_CONNECTION`)."""
    async with grpc.aio.insecure_channel(address) as channel:
        shared: Any = engine_pb2_grpc.EngineServiceStub(channel)
        commands = Commands()
        await commands.open()
        Commands.answer(ready=True)
        group = 0

        async def read(stub: Any, request: Any) -> int:
            received = 0
            async for _ in stub.Watch(request, metadata=metadata):
                received += 1
            return received

        async def connections(count: int) -> list[Any]:
            while len(own) < count:
                made = grpc.aio.insecure_channel(address, options=OWN_CONNECTION)
                await made.channel_ready()
                own.append(made)
            return [engine_pb2_grpc.EngineServiceStub(c) for c in own[:count]]

        crowd: list[asyncio.Task[None]] = []
        heard = [0]
        """The crowd's messages received so far."""

        async def spectate(stub: Any, request: Any, first: asyncio.Event) -> None:
            try:
                async for _ in stub.Watch(request, metadata=metadata):
                    heard[0] += 1
                    first.set()
            finally:  # a stream that fails before its first message does not hold the crowd's opening up
                first.set()

        async for command, *words in commands:
            if command == "crowd":  # crowd <tables> <per table> <pace>: open the crowd's streams, answer once all hear
                tables, per_table, pace = int(words[0]), int(words[1]), float(words[2])
                stubs = await connections(tables * per_table)
                firsts = []
                for i, stub in enumerate(stubs):
                    first = asyncio.Event()
                    request = engine_pb2.WatchRequest(game_id=f"crowd.{i // per_table}:{per_table}:0:{pace}")
                    crowd.append(asyncio.get_running_loop().create_task(spectate(stub, request, first)))
                    firsts.append(first)
                await asyncio.gather(*(first.wait() for first in firsts))
                Commands.answer(streams=len(stubs))
                continue
            if command == "crowd-count":
                Commands.answer(cpu_s=own_cpu(), messages=heard[0])
                continue
            if command == "crowd-stop":
                for task in crowd:
                    task.cancel()
                await asyncio.gather(*crowd, return_exceptions=True)
                crowd.clear()
                Commands.answer(stopped=True)
                continue
            streams, count, apart = words
            group += 1
            request = engine_pb2.WatchRequest(game_id=f"{group}:{streams}:{count}")
            stubs = [shared] * int(streams)
            if apart == "1":
                stubs = await connections(int(streams))
            before = own_cpu()
            received = await asyncio.gather(*(read(stub, request) for stub in stubs))
            Commands.answer(cpu_s=own_cpu() - before, messages=sum(received))
    for made in own:
        await made.close()


async def publish_client(url: str, payloads: Path, mix: str) -> None:
    """For each command line ``publish N``: N stored events published one at a time, each ack awaited, with the
    event store's headers, to `GAME_IDS` games of a file-backed partitioned stream; ``publish N <rate>``: at ``rate``
    publishes a second (random gaps between them, their mean 1 / ``rate``)."""
    import nats
    from nats.js.api import StorageType, StreamConfig

    from paiju.platform.partitions import partition_of

    events = Payloads.load(payloads).mixed("stored", _mix_of(mix))
    client = await nats.connect(url, name="paiju-floor")
    js = client.jetstream()
    await js.add_stream(
        StreamConfig(
            name="FLOOR",
            subjects=["paiju.game.*.*"],
            storage=StorageType.FILE,
            allow_direct=True,
            allow_atomic=True,
            deny_delete=True,
            deny_purge=True,
        )
    )
    games = [f"{uuid.uuid4()}-m1" for _ in range(GAME_IDS)]
    subjects = [f"paiju.game.{partition_of(g, PARTITIONS)}.{g}" for g in games]
    last = dict.fromkeys(subjects, 0)
    versions = dict.fromkeys(subjects, 0)
    commands = Commands()
    await commands.open()
    Commands.answer(ready=True)
    sent = 0
    gaps = random.Random(7)
    async for _, count, *paced in commands:
        rate = float(paced[0]) if paced else 0.0
        before = own_cpu()
        for _ in range(int(count)):
            subject = subjects[sent % len(subjects)]
            command_id = uuid.uuid4().hex
            versions[subject] += 1
            headers = {
                "Nats-Msg-Id": f"{games[sent % len(games)]}:{command_id}:1",
                "Paiju-Version": str(versions[subject]),
                "Paiju-Command-Id": command_id,
                "Nats-Expected-Last-Subject-Sequence": str(last[subject]),
            }
            reply = await client.request(subject, events[sent % len(events)], timeout=10, headers=headers)
            answer = json.loads(reply.data)
            if "error" in answer:
                raise RuntimeError(f"the publish was refused: {answer['error']}")
            last[subject] = int(answer["seq"])
            sent += 1
            if rate:  # the run's pace: a publish now and then, at random
                await asyncio.sleep(gaps.expovariate(rate))
        Commands.answer(cpu_s=own_cpu() - before)
    await client.close()


def rules_worker(seed: int, rounds: int, payloads: Path) -> None:
    """The rules part (each game: ``rounds`` rounds of `RULES_MOVES` moves, after a warm-up) and the payloads
    (written to ``payloads``); prints the costs as one JSON line."""
    from paiju.rules.registry import GAMES

    found = Payloads()
    costs: dict[str, Any] = {}
    for n, game in enumerate(GAMES):
        found.by_game[game] = collect_payloads(game, seed + n, SAMPLES * 4)
        moves = playout_moves(game, seed + 100 + n)
        for _ in range(RULES_MOVES):  # warm-up: imports, caches
            next(moves)
        means, every = [], []
        for _ in range(rounds):
            spent = [next(moves)[5] / 1e3 for _ in range(RULES_MOVES)]
            means.append(statistics.fmean(spent))
            every += spent
        costs[game] = {"mean_us": statistics.median(means), "median_us": statistics.median(every)}
    found.save(payloads)
    print(json.dumps(costs), flush=True)


# --- the measuring process ------------------------------------------------------------------------------------


class Worker:
    """A part's process (this file with ``--role``), driven by lines on its stdin, answering JSON lines."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HERE), "--role", *args],
            # the bare parts run gRPC's I/O path as Paiju's processes do, and their event loop (`role`)
            env=grpc_environment(os.environ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.first = self._read()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the floor's worker {self.process.args!r} stopped (exit {self.process.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, *words: object) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(" ".join(str(w) for w in words) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def workers(*specs: tuple[str, ...]) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    try:
        for spec in specs:
            started.append(Worker(*spec))
        yield started
    finally:
        for worker in reversed(started):
            worker.close()


@dataclass(frozen=True)
class Half:
    """One operation's CPU, client and server halves, in microseconds (medians over rounds)."""

    client_us: float
    server_us: float
    count: int = 0
    """Operations per round."""

    @property
    def total_us(self) -> float:
        return self.client_us + self.server_us


def rounds_of(
    run: Any, server_cpu: Any, rounds: int, first: int, *, per: Any = None, seconds: float = ROUND_SECONDS
) -> Half:
    """Median client and server CPU per operation over ``rounds`` rounds of ``run(count)`` (which returns the
    client's CPU seconds, or (seconds, operations done)); the count is sized from a first round of ``first``."""

    def one(count: int) -> tuple[float, float, float]:
        before = server_cpu()
        started = time.perf_counter()
        result = run(count)
        elapsed = time.perf_counter() - started
        spent, done = result if isinstance(result, tuple) else (result, count)
        server = server_cpu() - before
        return spent / done, server / done, elapsed

    _, _, elapsed = one(first)
    count = max(first, int(first * seconds / max(elapsed, 1e-3)))
    if per is not None:
        count = per(count)
    measured = [one(count) for _ in range(rounds)]
    return Half(
        round(statistics.median(m[0] for m in measured) * 1e6, 1),
        round(statistics.median(m[1] for m in measured) * 1e6, 1),
        count,
    )


@dataclass(frozen=True)
class Crowd:
    """The shape of a load run's spectators, for a bare stream shaped alike (`crowd_rounds`): ``spectators`` spread
    evenly over ``tables``, each spectator on a connection of its own and sent a message every ``pace`` seconds on
    average (as the run measured it), a table's spectators each message at once."""

    spectators: int
    tables: int
    pace: float

    @property
    def per_table(self) -> int:
        return max(1, round(self.spectators / self.tables))

    def describe(self) -> str:
        return (
            f"{self.tables * self.per_table} streams each on its own connection, {self.per_table} a table, "
            f"a message every {self.pace:.2g} s each"
        )


def crowd_rounds(
    client: Worker, server: Worker, crowd: Crowd, rounds: int, *, seconds: float = CROWD_ROUND_SECONDS
) -> Half:
    """A bare streamed message at the load's shape: the crowd's streams opened once (their calls' set-up not counted),
    then ``rounds`` rounds of ``seconds`` of their messages flowing, each round's client and server CPU per message
    received; medians."""
    client.ask("crowd", crowd.tables, crowd.per_table, crowd.pace)
    measured = []
    try:
        for _ in range(rounds):
            server_before, before = server.ask("cpu")["cpu_s"], client.ask("crowd-count")
            time.sleep(seconds)  # a window of the streams' own pace, not a wait for something to happen
            server_after, after = server.ask("cpu")["cpu_s"], client.ask("crowd-count")
            received = max(1, after["messages"] - before["messages"])
            measured.append(
                ((after["cpu_s"] - before["cpu_s"]) / received, (server_after - server_before) / received, received)
            )
    finally:
        client.ask("crowd-stop")
    return Half(
        round(statistics.median(m[0] for m in measured) * 1e6, 1),
        round(statistics.median(m[1] for m in measured) * 1e6, 1),
        int(statistics.median(m[2] for m in measured)),
    )


def nats_server_pid(folder: Path) -> int:
    """The nats-server whose store is under ``folder``."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            command = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
            if command and command[0].endswith(b"nats-server") and str(folder).encode() in command:
                return int(entry.name)
    raise RuntimeError(f"no nats-server with its store in {folder}")


@dataclass
class Floor:
    """The parts of the floor of a move and how they add up with a run's ``publishes`` (P) and ``messages`` (W)."""

    publishes: float
    messages: float
    mix: dict[str, float]
    unary_act: Half
    unary_legal: Half
    publish: Half
    stream_one: Half
    stream_table: Half
    stream_apart: Half
    """`TABLE_STREAMS` streams each on a connection of its own (spectators)."""
    rules: dict[str, dict[str, float]]
    """Per game: ``mean_us`` (the median over rounds of the mean per move) and ``median_us`` (per move)."""
    sizes: dict[str, float]
    """Mean bytes of the payloads sent, by kind."""
    seconds: float = 0.0
    loop: str = event_loop.UVLOOP
    """The event loop the parts ran on (`paiju.platform.event_loop`: the services' in the same environment)."""
    machine_busy_pct: float = 0.0
    """How busy the machine was while the floor was measured (% of one core; the floor's own processes keep about
    one core busy): the parts cost more CPU on a machine that others keep busy too."""
    crowd: Crowd | None = None
    """The load run's spectators, when it had some: the shape of `stream_crowd`."""
    stream_crowd: Half | None = None
    """A bare streamed message at the shape of the run's spectators (`crowd_rounds`): not part of the floor's sum."""
    pace: float | None = None
    """The run's `Act` calls a second, when given: the pace of `unary_act_paced`."""
    unary_act_paced: Half | None = None
    """The `Act` round trip at the run's pace (one call now and then, not back to back): not part of the floor's sum."""
    unary_legal_paced: Half | None = None
    """The `GetLegalActions` round trip at the run's pace."""
    publish_paced: Half | None = None
    """The publish with ack at the run's pace (P × its `Act` calls a second)."""

    def paced_parts(self) -> list[tuple[str, float, Half]] | None:
        """`parts` with the round trips and the publishes at the run's pace (the streams and the rules as they are):
        what the floor's sum would be on a stack as quiet as the run's, reported beside the floor, not gated."""
        if self.unary_act_paced is None or self.unary_legal_paced is None or self.publish_paced is None:
            return None
        paced = {ACT_PART: self.unary_act_paced, LEGAL_PART: self.unary_legal_paced, PUBLISH_PART: self.publish_paced}
        return [(name, n, paced.get(name, half)) for name, n, half in self.parts()]

    @property
    def paced_total_us(self) -> float | None:
        parts = self.paced_parts()
        return None if parts is None else sum(n * h.total_us for _, n, h in parts)

    @property
    def paced_server_us(self) -> float | None:
        parts = self.paced_parts()
        return None if parts is None else sum(n * h.server_us for _, n, h in parts)

    @property
    def rules_us(self) -> float:
        total = sum(self.mix.values()) or 1.0
        return sum(self.rules[g]["mean_us"] * w / total for g, w in self.mix.items() if g in self.rules)

    def parts(self) -> list[tuple[str, float, Half]]:
        """(part, how many per move, CPU per one) for the floor's sum."""
        return [
            (ACT_PART, 1.0, self.unary_act),
            (LEGAL_PART, 1.0, self.unary_legal),
            (PUBLISH_PART, self.publishes, self.publish),
            (f"streamed message, {TABLE_STREAMS} streams (W)", self.messages, self.stream_table),
            ("rules core move", 1.0, Half(0.0, round(self.rules_us, 1))),
        ]

    @property
    def client_us(self) -> float:
        return sum(n * h.client_us for _, n, h in self.parts())

    @property
    def server_us(self) -> float:
        return sum(n * h.server_us for _, n, h in self.parts())

    @property
    def total_us(self) -> float:
        return self.client_us + self.server_us

    @property
    def stream_us(self) -> float:
        """A bare streamed message to streams each on a connection of its own, as spectators' are, server half (what
        the engine's CPU per spectator message is held against)."""
        return self.stream_apart.server_us

    def row(self) -> dict[str, Any]:
        halves = {
            "unary_act": self.unary_act,
            "unary_legal": self.unary_legal,
            "publish": self.publish,
            "stream_one": self.stream_one,
            f"stream_{TABLE_STREAMS}": self.stream_table,
            f"stream_{TABLE_STREAMS}_apart": self.stream_apart,
        }
        out: dict[str, Any] = {"floor": "parts", "publishes_per_act": self.publishes, "messages_per_act": self.messages}
        out["mix"] = self.mix
        for name, half in halves.items():
            out[f"{name}_client_us"], out[f"{name}_server_us"] = half.client_us, half.server_us
        for game, costs in self.rules.items():
            out[f"rules_{game}_mean_us"] = round(costs["mean_us"], 1)
            out[f"rules_{game}_median_us"] = round(costs["median_us"], 1)
        out["rules_mix_us"] = round(self.rules_us, 1)
        out["floor_client_us"] = round(self.client_us, 1)
        out["floor_server_us"] = round(self.server_us, 1)
        out["floor_us"] = round(self.total_us, 1)
        out["payload_bytes"] = {k: round(v) for k, v in self.sizes.items()}
        out["seconds"] = round(self.seconds)
        out["event_loop"] = self.loop
        out["machine_busy_pct"] = round(self.machine_busy_pct)
        if self.pace is not None:
            out["pace_acts_per_s"] = self.pace
            for name, paced_half in (
                ("unary_act_paced", self.unary_act_paced),
                ("unary_legal_paced", self.unary_legal_paced),
                ("publish_paced", self.publish_paced),
            ):
                if paced_half is not None:
                    out[f"{name}_client_us"], out[f"{name}_server_us"] = paced_half.client_us, paced_half.server_us
            if self.paced_total_us is not None:
                out["floor_at_pace_us"] = round(self.paced_total_us, 1)
        if self.crowd is not None and self.stream_crowd is not None:
            out["crowd"] = dataclasses.asdict(self.crowd)
            out["stream_crowd_client_us"] = self.stream_crowd.client_us
            out["stream_crowd_server_us"] = self.stream_crowd.server_us
            out["stream_crowd_messages_per_round"] = self.stream_crowd.count
        return out

    def markdown(self) -> str:
        lines = [
            "| part | per move | client µs | server µs | per move, µs |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, n, half in self.parts():
            lines.append(f"| {name} | {n:g} | {half.client_us:g} | {half.server_us:g} | {n * half.total_us:.1f} |")
        lines.append(
            f"| **floor of a move** | | {self.client_us:.1f} | {self.server_us:.1f} | **{self.total_us:.1f}** |"
        )
        one, apart = self.stream_one, self.stream_apart
        lines.append(f"| (streamed message, one stream) | | {one.client_us:g} | {one.server_us:g} | |")
        lines.append(
            f"| (streamed message, {TABLE_STREAMS} streams each on its own connection: spectators) | | "
            f"{apart.client_us:g} | {apart.server_us:g} | |"
        )
        paced_parts = self.paced_parts()
        if self.pace is not None and paced_parts is not None:
            for name, n, half in paced_parts:
                if name not in PACED_PARTS:
                    continue  # a part measured once only (the streams, the rules)
                lines.append(
                    f"| ({name} at the run's pace, {self.pace:g} moves a second, one at a time) | {n:g} | "
                    f"{half.client_us:g} | {half.server_us:g} | {n * half.total_us:.1f} |"
                )
            lines.append(
                f"| (floor of a move with those at the run's pace: reported, not gated) | | | "
                f"{self.paced_server_us:.1f} | {self.paced_total_us:.1f} |"
            )
        if self.crowd is not None and self.stream_crowd is not None:
            crowd = self.stream_crowd
            lines.append(
                f"| (streamed message at the spectators' shape: {self.crowd.describe()}) | | "
                f"{crowd.client_us:g} | {crowd.server_us:g} | |"
            )
        for game, costs in self.rules.items():
            lines.append(
                f"| (rules core move, {game}: mean / median per move) | {self.mix.get(game, 0):g} | | "
                f"{costs['mean_us']:.1f} / {costs['median_us']:.1f} | |"
            )
        return "\n".join(lines)


def measure_floor(
    publishes: float,
    messages: float,
    mix: Mapping[str, float],
    *,
    rounds: int = ROUNDS,
    seed: int = 7,
    crowd: Crowd | None = None,
    pace: float | None = None,
) -> Floor:
    """Measure each part of the floor on this machine (processes of their own; about a minute and a half) and add
    them up for ``publishes`` (P) and ``messages`` (W) per move, the rules weighted by ``mix`` (game -> share of
    the moves). With ``crowd`` (a run's spectators), also a bare streamed message at their shape (`crowd_rounds`);
    with ``pace`` (the run's `Act` calls a second), also the round trips and the publishes at that pace (`paced_parts`).
    None of these is in the floor's sum."""
    from paiju.dev.stack import embedded_nats

    loop = event_loop.chosen()  # what the parts' processes will read (refused here when it is no loop)
    started = time.monotonic()
    busy_before = busy_seconds()
    weights = {g: float(w) for g, w in mix.items() if w > 0} or {"zlj": 1.0}
    spec = ",".join(f"{g}={w}" for g, w in weights.items())
    with tempfile.TemporaryDirectory(prefix="paiju-floor-") as folder:
        payloads = Path(folder) / "payloads.json"
        rules = json.loads(
            subprocess.run(
                [sys.executable, str(HERE), "--role", "rules", str(seed), str(rounds), str(payloads)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        found = Payloads.load(payloads)
        sizes = {kind: found.mean_size(kind, weights) for kind in ("legal", "act_request", "act_response", "stored")}
        sizes["watch"] = found.mean_size("watch", weights)

        with workers(("unary-server", str(payloads), spec)) as (server,):
            address = f"127.0.0.1:{server.first['port']}"
            with workers(("unary-client", address, str(payloads), spec)) as (client,):
                calls = {}
                for kind in ("act", "legal"):
                    calls[kind] = rounds_of(
                        lambda n, k=kind: client.ask(k, n)["cpu_s"],
                        lambda: server.ask("cpu")["cpu_s"],
                        rounds,
                        300,
                    )
                paced_calls = {}
                calls_per_s = pace or 0.0
                for kind in ("act", "legal") if calls_per_s else ():
                    paced_calls[kind] = rounds_of(
                        lambda n, k=kind: client.ask(k, n, calls_per_s)["cpu_s"],
                        lambda: server.ask("cpu")["cpu_s"],
                        rounds,
                        max(10, round(calls_per_s / 4)),
                        seconds=PACED_ROUND_SECONDS,
                    )

        with workers(("stream-server", str(payloads), spec)) as (server,):
            address = f"127.0.0.1:{server.first['port']}"
            with workers(("stream-client", address)) as (client,):
                streams = {}
                for k, apart in ((1, 0), (TABLE_STREAMS, 0), (TABLE_STREAMS, 1)):

                    def watch(n: int, k: int = k, apart: int = apart) -> tuple[float, int]:
                        answer = client.ask("watch", k, n, apart)
                        return answer["cpu_s"], answer["messages"]

                    streams[k, apart] = rounds_of(
                        watch, lambda: server.ask("cpu")["cpu_s"], rounds, 200, per=lambda n: n
                    )
                stream_crowd = crowd_rounds(client, server, crowd, rounds) if crowd is not None else None

        data = Path(folder) / "nats"
        with embedded_nats(data) as url:
            pid = nats_server_pid(data)
            with workers(("publish-client", url, str(payloads), spec)) as (client,):
                publish = rounds_of(lambda n: client.ask("publish", n)["cpu_s"], lambda: threads_cpu(pid), rounds, 300)
                publish_paced = None
                if pace:
                    rate = pace * publishes
                    publish_paced = rounds_of(
                        lambda n: client.ask("publish", n, rate)["cpu_s"],
                        lambda: threads_cpu(pid),
                        rounds,
                        max(10, round(rate / 4)),
                        seconds=PACED_ROUND_SECONDS,
                    )

    return Floor(
        publishes=round(publishes, 3),
        messages=round(messages, 3),
        mix={g: round(w / sum(weights.values()), 3) for g, w in weights.items()},
        unary_act=calls["act"],
        unary_legal=calls["legal"],
        publish=publish,
        stream_one=streams[1, 0],
        stream_table=streams[TABLE_STREAMS, 0],
        stream_apart=streams[TABLE_STREAMS, 1],
        rules=rules,
        sizes=sizes,
        seconds=time.monotonic() - started,
        loop=loop,
        machine_busy_pct=100 * (busy_seconds() - busy_before) / (time.monotonic() - started),
        crowd=crowd,
        stream_crowd=stream_crowd,
        pace=pace,
        unary_act_paced=paced_calls.get("act"),
        unary_legal_paced=paced_calls.get("legal"),
        publish_paced=publish_paced,
    )


# --- command line -------------------------------------------------------------------------------------------


def role(args: Sequence[str]) -> None:
    """Run as one of the parts' processes."""
    name, rest = args[0], list(args[1:])
    loop = event_loop.chosen()  # the loop Paiju's processes run on in this environment (PAIJU_EVENT_LOOP)
    if name == "rules":
        rules_worker(int(rest[0]), int(rest[1]), Path(rest[2]))
    elif name == "unary-server":
        event_loop.run(unary_server(Path(rest[0]), rest[1]), loop)
    elif name == "unary-client":
        event_loop.run(unary_client(rest[0], Path(rest[1]), rest[2]), loop)
    elif name == "stream-server":
        event_loop.run(stream_server(Path(rest[0]), rest[1]), loop)
    elif name == "stream-client":
        event_loop.run(stream_client(rest[0]), loop)
    elif name == "publish-client":
        event_loop.run(publish_client(rest[0], Path(rest[1]), rest[2]), loop)
    else:
        raise SystemExit(f"no such role: {name}")


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--role"]:
        role(argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--publishes", type=float, default=1.2, help="JetStream publishes per move, P (1.2)")
    parser.add_argument("--messages", type=float, default=6.0, help="Watch messages per move, W (6)")
    parser.add_argument("--mix", default="zlj=0.5,tractor=0.5", help="share of the moves by game (zlj=0.5,tractor=0.5)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"rounds per part, medians reported ({ROUNDS})")
    args = parser.parse_args(argv)
    floor = measure_floor(args.publishes, args.messages, _mix_of(args.mix), rounds=args.rounds)
    print(json.dumps(floor.row(), ensure_ascii=False), flush=True)
    print()
    print(
        f"The floor of a move on this machine ({os.cpu_count()} cores), bare libraries, medians of {args.rounds} "
        f"rounds; P = {floor.publishes:g}, W = {floor.messages:g}, mix {floor.mix}; server side alone "
        f"{floor.server_us:.1f} µs; the parts on {floor.loop}'s event loop; the machine was "
        f"{floor.machine_busy_pct:.0f} % busy (of one core)"
    )
    print()
    print(floor.markdown())


if __name__ == "__main__":
    main()
