"""`make bench`, load part: the whole stack as production runs it, loaded with tables of bots and spectators, and
what one move costs it against the floor of the design (`bench/floor.py`).

An embedded NATS (JetStream) and PostgreSQL, and the services as their own processes — `paiju engine`,
`paiju lobby`, `paiju scoring` and ONE `paiju bots` runner (`PAIJU_BOT_THINK_SECONDS`, 0.3 s by default) —
with rate limits off (`PAIJU_RATE_LIMITS=off`: every client here comes from one address; one guest opens every
table, `PAIJU_TABLES_PER_PLAYER`) and the engine's, the
lobby's and scoring's Prometheus metrics on ports of their own. Then, on that one stack, configurations one after
another (tables are added, never removed: each configuration is the one before it and more, as a stack that fills
up in the evening):

1. **Idle watchers**: one 砸六家 table of six guests, seated, ready and started, who never act (no turn timer):
   the engine's CPU with nobody watching, then with 100 spectators watching that game (`--idle-watchers`).
2. **Bot tables**: 1, 30 and 100 tables full of bots (`--tables`), alternately 砸六家 (open-ended: ``deals: 0``)
   and 拖拉机 (untimed), so that no match ends while it is measured.
3. **Spectators**: the largest number of tables, plus 500 guests (`--spectators`) that `JoinGame` a table (spread
   evenly over every table) and `Watch` its game for the whole measurement, from a process of their own
   (`bench/load_watchers.py`); then the same tables once more, the spectators gone (`measure_again`): what the
   spectators cost the engine is their window's CPU beyond the mean of the windows before and after it, so that the
   machine's drift during the run (tens of percent within minutes) is not put on them.

Besides the bots, a probe plays one more 砸六家 table of six guests through the public API from this process
(each seat watches the game and, on a turn that names it, takes the fair-dealing step the turn asks of it, then
pauses as long as the bots do and acts at the turn's version with one of the turn's actions): the latencies a client
sees. For each configuration, after a
warm-up, during a fixed window (`--window`, 60 s):

- events stored per second, per table (median) and in all, counted on the games' subjects
  ``paiju.game.<partition>.<game>`` (or ``paiju.game.<game>`` for a game stored before the stream had partitions):
  each game's version, read from its last message (a command's events are one message, so the stream's sequence
  counts commands, not events), and how many tables stored none;
- `Act` latency p50 / p99 as the probe sees it, and `Act` and `GetLegalActions` as the engine's histogram
  ``paiju_grpc_call_seconds`` (all callers, bots included; interpolated within its buckets) has them;
- the CPU of each process (``/proc/<pid>/stat``, % of one core): engine, bot runner, lobby, scoring, NATS,
  PostgreSQL (every process of the embedded server, and the backends that ended meanwhile, from the postmaster's
  children's time), the spectators' process and this one (the probe); how long the engine, bot runner and lobby
  waited for a CPU (``schedstat``); and the machine's busy and steal time, and what other programs used;
- **per `Act`** (every `Act` call the engine served, bots' and probe's): the CPU of each process in ms; the unary
  calls of the engine, the lobby and scoring (their ``paiju_grpc_calls_total``) by method, besides `Act` itself;
  P, the JetStream publishes (the messages added to every stream: GAMES, the lobby's and scoring's streams, the
  key-value buckets of leases and presence), by stream; W, the Watch messages the engine sent (its count,
  ``paiju_engine_watch_messages_total``: a watch that asks for one message per change gets the events of a command
  in one message, so W is what was sent, not the events; an engine without the count has W estimated: each bot seat
  watches its game, so each event stored in a bot table's game is one message per seat, plus the messages the
  spectators' process received), and that estimate beside it (``watch_events_per_act``: the events the watchers
  received); and the mix of games among the moves (``paiju_engine_acts_total``);
- the engine's calls per second by method (and `GetLegalActions` calls per `Act`), and its refusals;
- the lobby's `LeaseBotSeats` time and the bot runner's failed leases and expired seats (from its log);
- stalls told apart: the engine's gRPC health check and a NATS direct get, every 0.2 s, timed.

One JSON line per configuration. Then, with the stack stopped, the floor of a move (`bench/floor.py`) measured on
this machine, and composed for each configuration with its P, W and mix: the stack's CPU per `Act` against it, and
the server side alone (everything but the bot runner) against the floor's server halves. Then the spectators' cost
(the engine's CPU per spectator message, against a bare streamed message to streams each on a connection of its own,
as spectators' are), the capacity at human pace (7.5 moves per table-minute, five seats per table: seated players
per core, from the server side's CPU per move, with and without spectators), and the gates, PASS or FAIL, each
against its target (`GATES`), for the reference configuration (`--reference`, 30 tables), followed by NOT TRUSTED
for each loaded window the host disturbed (its steal time over `STEAL_TRUSTED_PCT`, or other programs over
`OTHERS_TRUSTED_PCT`): measure again. Markdown tables for docs/benchmarks.md last.

With ``--repeat N`` each loaded configuration is measured in N windows one after another and the medians are
reported (counts are summed). ``--fresh`` starts a new stack for each configuration instead. ``--py-spy PATH``
records the engine (idle samples included), the bot runner and the lobby with py-spy during each window, as folded
stacks in the run's folder (kept with ``--keep``); it costs the processes a little. ``--no-floor`` skips the floor.
Stopped with SIGTERM or Ctrl-C, a run stops its stack and removes its folder (unless ``--keep``) before it exits.

**Memory soak** (``--soak [MINUTES]``, 30 by default; nothing else is measured): `--soak-tables` tables of bots
(30) play for that long while every process's resident memory (``VmRSS``; PostgreSQL: all of its processes
summed) is sampled every 10 s; each process's growth in MiB per minute over the last 20 minutes (two thirds of a
shorter soak: ``--soak 3`` fits the last 2 minutes) by least squares, PASS or FAIL for the engine and the bot runner
against 0.5 MiB per minute.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import random
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import nats
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from paiju.dev import stack as dev_stack
from paiju.dev.stack import Services, embedded_database, embedded_nats
from paiju.platform.grpc_io import grpc_environment
from paiju.platform.partitions import partition_of
from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.store.messages import versions
from paiju.sdk.fairness import Pledges
from paiju.sdk.games import GAMES
from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_pb2, lobby_pb2_grpc, scoring_pb2, zlj_pb2

if TYPE_CHECKING:  # mypy reads bench/ as a package; `python bench/load.py` has bench/ itself on its path
    from bench.floor import Crowd, Floor, measure_floor
else:
    from floor import Crowd, Floor, measure_floor

HERE = Path(__file__).parent
GAMES_PREFIX = "paiju.game"
"""The GAMES stream's subjects: ``paiju.game.<partition>.<game>`` (``paiju.game.<game>`` before partitions)."""
PARTITIONS_KEY = "paiju-partitions"
"""The GAMES stream's metadata entry with its number of partitions (`paiju.platform.store.jetstream`)."""
ACTS = ("Act", "ActStream")
"""The engine's methods that act: `Act` calls, and the acts on `ActStream` streams (each counted as a call)."""
ACT_CALLS = frozenset(f"engine.{method}" for method in ACTS)
STREAMING = frozenset(
    f"{service.name.removesuffix('Service').lower()}.{method.name}"
    for module in (engine_pb2, lobby_pb2, scoring_pb2)
    for service in module.DESCRIPTOR.services_by_name.values()
    for method in service.methods
    if method.server_streaming and not method.client_streaming
)
"""The server-streaming methods (``engine.Watch``, ``lobby.WatchTable``...): counted when a stream ends, not calls
a move makes (a stream of calls, ``engine.ActStream``, counts each call)."""
STREAMED_METRICS = ("paiju_grpc_stream_messages_total", "paiju_engine_watch_messages_total")
"""Counters of the messages the engine streams, by method (the engine's Watch count has no label: Watch), if it has
one (either name); else W is estimated from the events."""
HUMAN_MOVES_PER_TABLE_MINUTE = 7.5
HUMAN_SEATS = 5
"""People at a table: 7.5 moves a table-minute among five seated players (the capacity at human pace)."""
GATES = {
    "stack_over_floor": 2.0,
    "engine_ms_per_act": 1.5,
    "unary_calls_per_act": 0.2,
    "spectator_message_over_bare": 1.3,
    "players_per_core": 14_000,
    "memory_mib_per_min": 0.5,
}
"""The targets: stack CPU per Act at most 2x the floor; the engine's alone at most 1.5 ms; at most 0.2 unary calls per
Act besides Act; the engine's CPU per spectator message at most 1.3x a bare streamed message (server half, each
stream on its own connection as a spectator's is); at least 14,000 seated players per core at human pace (server
side); the engine's and the bot runner's memory growing by at most 0.5 MiB a minute in the soak."""
SOAK_SAMPLE_SECONDS = 10.0
SOAK_SLOPE_MINUTES = 20.0
THINK = 0.3
"""Seconds a bot (and the probe) pauses before each move: a brisk player's pace, the bot runner's default."""
CALL_SECONDS = 30.0
"""The probe's deadline for one call (a call that takes longer counts as a failure and at this latency)."""
STEP_TRIES = 5
"""How many times the probe sends a fair-dealing step that failed (the same command id: it applies once)."""
MOVING_EVENTS = 3
"""A new table is playing once its game has stored this many events after its start."""
MOVING_SECONDS = 180.0
"""How long to wait for every new table to play (the bot runner leases new seats every few seconds)."""
SETTLE_SECONDS = 5.0
"""Pause before measuring the idle engine, so that start-up work (tables opened, watches opened) is over."""
OPEN_AT_ONCE = 8
"""Tables opened at the same time."""
SEATS = {"zlj": 6, "tractor": 4}
RENEW_BEFORE_SECONDS = 120
"""A session or game token is renewed when it has less than this left (tokens last 15 minutes)."""
BOT_LOG_MARKS = {
    "engine call failed": "engine_call_failed",
    "watch cut": "watch_cut",
    "move refused": "move_refused",
    "engine not ready": "engine_not_ready",
    "could not lease seats": "lease_failed",
    '"reason": "expired", "event": "seat stopped"': "seats_expired",
    '"event": "playing seat"': "seats_started",
}
"""Lines of the bot runner's log counted per window: its calls that failed (timeouts, refusals), the lease calls
to the lobby that failed, and the seats it stopped because their lease ran out (and started again)."""


# --- the stack -----------------------------------------------------------------------------------------------


class Stack:
    """NATS, PostgreSQL, engine, lobby, scoring and one bot runner, as `make run` starts them, in ``folder``."""

    def __init__(self, folder: Path, think: float) -> None:
        self.folder = folder
        self.think = think
        self.engine = f"127.0.0.1:{free_port()}"
        self.lobby = f"127.0.0.1:{free_port()}"
        self.scoring = f"127.0.0.1:{free_port()}"
        self.metrics_port = free_port()
        self.lobby_metrics_port = free_port()
        self.scoring_metrics_port = free_port()
        self.nats_url = ""
        self.pids: dict[str, int] = {}
        self.services: Services | None = None
        self._exit = contextlib.ExitStack()

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    def __enter__(self) -> Stack:
        try:
            self._start()
        except BaseException:
            self._exit.close()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self._exit.close()

    def _start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o755)  # PostgreSQL runs as its own user when the bench runs as root
        self.nats_url = self._exit.enter_context(embedded_nats(self.folder / "nats"))
        database_url = self._exit.enter_context(embedded_database(self.folder / "postgres"))
        database_file = self.folder / "database-url"  # a secret: given as a file, as `make run` gives it
        database_file.write_text(database_url)
        database_file.chmod(0o600)
        env = {
            **os.environ,
            "NATS_URL": self.nats_url,
            "DATABASE_URL_FILE": str(database_file),
            "PAIJU_ENGINE_ADDRESS": self.engine,
            "PAIJU_LOBBY_ADDRESS": self.lobby,
            "PAIJU_SCORING_ADDRESS": self.scoring,
            "PAIJU_ENGINE_METRICS_PORT": str(self.metrics_port),
            "PAIJU_LOBBY_METRICS_PORT": str(self.lobby_metrics_port),
            "PAIJU_SCORING_METRICS_PORT": str(self.scoring_metrics_port),
            "PAIJU_RATE_LIMITS": "off",
            "PAIJU_TABLES_PER_PLAYER": "100000",  # one guest opens every table of the run
            "PAIJU_BOT_THINK_SECONDS": str(self.think),
        }
        # each process gets its own credentials as `make run` gives them (`Credentials`: the token keys); a tree
        # from before the token keys shares one secret
        credentials = getattr(dev_stack, "Credentials", None)
        if credentials is not None:
            keys = credentials(self.folder / "keys")

            def own(name: str) -> dict[str, str]:
                return dict(keys.env(name))

        else:
            env["PAIJU_TOKEN_SECRET"] = secrets.token_urlsafe(48)

            def own(name: str) -> dict[str, str]:
                return {}

        self.services = Services(self.logs, env)
        self._exit.callback(self.services.stop)
        for name in ("engine", "lobby", "scoring"):
            self.pids[name] = self.services.start(name, name, env=own(name)).pid
        wait_until_serving(self.engine, timeout=60)
        wait_until_serving(self.lobby, timeout=60, service="paiju.v1.LobbyService")
        wait_until_serving(self.scoring, timeout=60, service="paiju.v1.ScoringService")
        self.pids["bots"] = self.services.start("bots", "bots", env=own("bots")).pid

    def check(self) -> None:
        assert self.services is not None
        self.services.check()


# --- CPU from /proc ------------------------------------------------------------------------------------------

TICKS = os.sysconf("SC_CLK_TCK")


def _processes() -> dict[int, tuple[int, str, float, float]]:
    """Every process: pid -> (parent pid, command name, CPU seconds used so far, CPU seconds of its children that
    ended and were waited for)."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        own, ended = int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
        found[int(entry.name)] = (int(fields[1]), name, own / TICKS, ended / TICKS)
    return found


ROLE_NAMES = {"nats": ("nats-server",), "postgres": ("postgres", "postmaster")}
"""This process's descendants counted by their command name."""


def _descendants(table: dict[int, tuple[int, str, float, float]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, *_) in table.items():
        children.setdefault(parent, []).append(pid)
    descendants: list[int] = []
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        descendants.append(pid)
        todo.extend(children.get(pid, ()))
    return descendants


def pids_by_role(pids: dict[str, int]) -> dict[str, list[int]]:
    """The processes of each role: the named ones, and this process's descendants by kind (`ROLE_NAMES`)."""
    table = _processes()
    found = {name: [pid] for name, pid in pids.items()}
    descendants = _descendants(table)
    for role, names in ROLE_NAMES.items():
        found[role] = [p for p in descendants if table[p][1] in names]
    return found


def cpu_by_role(pids: dict[str, int]) -> dict[str, dict[int, float]]:
    """CPU seconds so far of each named process, and of this process's descendants by kind: ``nats`` (the
    nats-server), ``postgres`` (the postmaster and every backend, and — under the postmaster's negated pid — the
    backends and workers that ended and were waited for), ``bench`` (this process: the probe); by pid, so that a
    process that came or went between two readings counts for what it used in between (see `cpu_used`)."""
    table = _processes()
    used = {name: {pid: table[pid][2]} if pid in table else {} for name, pid in pids.items()}
    descendants = _descendants(table)
    for role, names in ROLE_NAMES.items():
        used[role] = {p: table[p][2] for p in descendants if table[p][1] in names}
    used["postgres"].update({-p: table[p][3] for p in descendants if table[p][1] in ROLE_NAMES["postgres"]})
    used["bench"] = {os.getpid(): table[os.getpid()][2]}
    return used


def rss_mib(pid: int, kind: str = "VmRSS") -> float:
    """The resident memory of ``pid`` (``VmRSS``; ``RssAnon``: its private part), in MiB (0 for a process gone)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{kind}:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds used between two readings of one role (a process started in between counts from its start; one
    that ended in between is not seen: PostgreSQL's short-lived workers)."""
    return sum(max(0.0, seconds - before.get(pid, 0.0)) for pid, seconds in after.items())


def runqueue_wait(pid: int) -> float:
    """Seconds the threads of ``pid`` have spent runnable but waiting for a CPU (``/proc/<pid>/task/*/schedstat``):
    how much a process was held back by the others on the machine."""
    waited = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return math.nan
    for task in tasks:
        with contextlib.suppress(OSError, IndexError, ValueError):
            waited += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[1])
    return waited / 1e9


def machine_cpu() -> tuple[float, float, float]:
    """The machine's CPU seconds so far, over every core: (busy, steal, total)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    steal = fields[7] if len(fields) > 7 else 0
    total = sum(fields[:8])
    return (total - idle - steal) / TICKS, steal / TICKS, total / TICKS


# --- the engine's Prometheus metrics -------------------------------------------------------------------------


@dataclass
class Metrics:
    """What one service's Prometheus metrics say (the engine's, the lobby's or scoring's)."""

    buckets: dict[str, dict[float, float]] = field(default_factory=dict)
    """``paiju_grpc_call_seconds`` by method: upper bound -> cumulative count."""
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    """``paiju_grpc_calls_total``: (method, code) -> count."""
    acts: Counter[str] = field(default_factory=Counter)
    """``paiju_engine_acts_total`` by game (the engine's)."""
    streamed: Counter[str] | None = None
    """Messages streamed by method (`STREAMED_METRICS`), when the service counts them."""

    def minus(self, earlier: Metrics) -> Metrics:
        buckets = {
            method: {le: n - earlier.buckets.get(method, {}).get(le, 0.0) for le, n in bounds.items()}
            for method, bounds in self.buckets.items()
        }
        calls = Counter({k: v - earlier.calls.get(k, 0) for k, v in self.calls.items()})
        acts = Counter({k: v - earlier.acts.get(k, 0) for k, v in self.acts.items()})
        streamed = None
        if self.streamed is not None:
            streamed = Counter({k: v - (earlier.streamed or Counter()).get(k, 0) for k, v in self.streamed.items()})
        return Metrics(buckets, calls, acts, streamed)


def scrape(port: int) -> Metrics:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    found = Metrics()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "paiju_grpc_call_seconds_bucket":
                bound = float(sample.labels["le"])
                found.buckets.setdefault(sample.labels["method"], {})[bound] = sample.value
            elif sample.name == "paiju_grpc_calls_total":
                found.calls[(sample.labels["method"], sample.labels["code"])] += int(sample.value)
            elif sample.name == "paiju_engine_acts_total":
                found.acts[sample.labels.get("game", "")] += int(sample.value)
            elif sample.name in STREAMED_METRICS:
                if found.streamed is None:
                    found.streamed = Counter()
                found.streamed[sample.labels.get("method", "Watch")] += int(sample.value)
    return found


def merged(histograms: Iterable[dict[float, float]]) -> dict[float, float]:
    """Histograms' cumulative bucket counts added up, bound by bound (the acts sent by `Act` and on `ActStream`)."""
    total: dict[float, float] = {}
    for histogram in histograms:
        for bound, count in histogram.items():
            total[bound] = total.get(bound, 0.0) + count
    return total


def histogram_quantile(q: float, cumulative: dict[float, float]) -> float | None:
    """The ``q`` quantile of a histogram's cumulative bucket counts, interpolated within its bucket as Prometheus
    does (``None`` without observations; the largest finite bound when it falls in the last bucket)."""
    bounds = sorted(cumulative)
    if not bounds or cumulative[bounds[-1]] <= 0:
        return None
    rank = q * cumulative[bounds[-1]]
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = cumulative[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower
            inside = count - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 0.0)
        lower, below = bound, count
    return lower


# --- clients of the lobby and the engine -----------------------------------------------------------------------


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


@dataclass(frozen=True)
class BotTable:
    table_id: str
    game_id: str
    game: str


@dataclass
class Guest:
    """A guest's session and, once it joined a game, its game token (each renewed before it expires)."""

    player_id: str
    session: str
    session_expires: float
    game_token: str = ""
    game_expires: float = 0.0

    @property
    def lobby_md(self) -> tuple[tuple[str, str], ...]:
        return bearer(self.session)

    @property
    def game_md(self) -> tuple[tuple[str, str], ...]:
        return bearer(self.game_token)


@dataclass(frozen=True)
class PeopleTable:
    """A 砸六家 table of six guests (seat i: guest i) and its game."""

    table_id: str
    game_id: str
    guests: tuple[Guest, ...]


class Clients:
    """The benchmark's own channels to the lobby and the engine."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.lobby_channel = grpc.aio.insecure_channel(stack.lobby)
        self.engine_channel = grpc.aio.insecure_channel(stack.engine)
        self.lobby: Any = lobby_pb2_grpc.LobbyServiceStub(self.lobby_channel)
        self.engine: Any = engine_pb2_grpc.EngineServiceStub(self.engine_channel)
        self._owner: Guest | None = None
        self.refused: Counter[str] = Counter()
        """Lobby calls answered UNAVAILABLE or past their deadline while tables were opened (looked at again)."""

    async def close(self) -> None:
        await self.lobby_channel.close()
        await self.engine_channel.close()

    async def guest(self) -> Guest:
        session = (await self.lobby.Guest(lobby_pb2.GuestRequest(), timeout=CALL_SECONDS)).session
        return Guest(session.player_id, session.token, float(session.expires_at))

    async def join(self, guest: Guest, table_id: str) -> lobby_pb2.JoinGameResponse:
        """``guest`` joins the game of ``table_id``: its game token (renewed by joining again)."""
        await self.fresh_session(guest)
        joined: lobby_pb2.JoinGameResponse = await self.lobby.JoinGame(
            lobby_pb2.JoinGameRequest(table_id=table_id), metadata=guest.lobby_md, timeout=CALL_SECONDS
        )
        guest.game_token = joined.token
        # a lobby that does not say when the token expires gives 15 minutes at least
        guest.game_expires = float(getattr(joined, "expires_at", 0) or time.time() + 15 * 60)
        return joined

    async def fresh_session(self, guest: Guest) -> None:
        """Renew ``guest``'s session when it is about to expire (RenewSession, where the lobby has it)."""
        if guest.session_expires - time.time() > RENEW_BEFORE_SECONDS or not hasattr(lobby_pb2, "RenewSessionRequest"):
            return
        request = lobby_pb2.RenewSessionRequest()  # type: ignore[attr-defined,unused-ignore]
        renewed = await self.lobby.RenewSession(request, metadata=guest.lobby_md, timeout=CALL_SECONDS)
        guest.session, guest.session_expires = renewed.session.token, float(renewed.session.expires_at)

    async def bot_table(self, index: int) -> BotTable:
        """Table ``index``, full of bots and playing: 砸六家 (open-ended) for even ones, 拖拉机 (untimed) for odd."""
        if self._owner is None:
            self._owner = await self.guest()
        await self.fresh_session(self._owner)
        md = self._owner.lobby_md
        kind = "zlj" if index % 2 == 0 else "tractor"
        request = lobby_pb2.CreateTableRequest(
            name=f"load {index}", game=engine_pb2.GAME_ZLJ if kind == "zlj" else engine_pb2.GAME_TRACTOR
        )
        if kind == "zlj":
            request.zlj_options.CopyFrom(zlj_pb2.ZljOptions(deals=0))
        table_id = (await self.lobby.CreateTable(request, metadata=md, timeout=CALL_SECONDS)).table.table_id
        # each step is decided from the table as it is: a call answered UNAVAILABLE (the lobby could not reach the
        # engine in time, under load) may have done its work all the same, and is looked at again
        failures = 0
        while True:
            table = (
                await self.lobby.GetTable(
                    lobby_pb2.GetTableRequest(table_id=table_id), metadata=md, timeout=CALL_SECONDS
                )
            ).table
            if table.status == lobby_pb2.TABLE_STATUS_PLAYING and table.game_id:
                return BotTable(table_id, table.game_id, kind)
            free = sum(1 for seat in table.seats if not seat.player_id)
            try:
                for _ in range(free):
                    await self.lobby.AddBot(
                        lobby_pb2.AddBotRequest(table_id=table_id), metadata=md, timeout=CALL_SECONDS
                    )
                started = await self.lobby.StartMatch(
                    lobby_pb2.StartMatchRequest(table_id=table_id), metadata=md, timeout=CALL_SECONDS
                )
                return BotTable(table_id, started.table.game_id, kind)
            except grpc.aio.AioRpcError as e:
                failures += 1
                if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) or failures > 5:
                    raise
                self.refused[f"{e.code().name}: {(e.details() or '')[:60]}"] += 1
                await asyncio.sleep(1.0)

    async def people_table(self, name: str) -> PeopleTable:
        """A 砸六家 table (open-ended, no turn timer) of six guests, seated, ready and started; their game tokens."""
        guests = [await self.guest() for _ in range(6)]
        owner = guests[0].lobby_md
        request = lobby_pb2.CreateTableRequest(name=name, game=engine_pb2.GAME_ZLJ)
        request.zlj_options.CopyFrom(zlj_pb2.ZljOptions(deals=0, turn_seconds=0))
        table_id = (await self.lobby.CreateTable(request, metadata=owner, timeout=CALL_SECONDS)).table.table_id
        for seat, guest in enumerate(guests):
            await self.lobby.TakeSeat(
                lobby_pb2.TakeSeatRequest(table_id=table_id, seat=seat), metadata=guest.lobby_md, timeout=CALL_SECONDS
            )
            await self.lobby.Ready(
                lobby_pb2.ReadyRequest(table_id=table_id, ready=True), metadata=guest.lobby_md, timeout=CALL_SECONDS
            )
        await self.lobby.StartMatch(
            lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner, timeout=CALL_SECONDS
        )
        game_id = ""
        for seat, guest in enumerate(guests):
            joined = await self.join(guest, table_id)
            assert joined.seat == seat, f"guest {seat} sits in seat {joined.seat}"
            game_id = joined.game_id
        return PeopleTable(table_id, game_id, tuple(guests))


@dataclass(frozen=True)
class Turn:
    """A seat whose turn it is, at a version of the game, and what it may do (the engine's `GameCommand`s)."""

    seat: int
    version: int
    actions: Sequence[Any]


@dataclass
class Probe:
    """Plays every seat of a `PeopleTable` through the engine's API as a client of the stream does, timing each
    `Act`: each seat watches the game, and on a turn that names it, takes the fair-dealing step the turn asks of it
    (each deal's commitment, reveal or contribution, as the bot runner does: without it the next deal would wait for
    the seat for good, and the probe would stop after its first deal), then waits as long as the bots do and acts
    at the turn's version with one of the turn's actions. It asks the engine nothing else."""

    clients: Clients
    table: PeopleTable
    think: float
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    acts: list[tuple[float, float]] = field(default_factory=list)
    """(when it was answered, monotonic; seconds it took) of each `Act` that is a move."""
    steps: list[tuple[float, float]] = field(default_factory=list)
    """The same for each fair-dealing step (not counted among the moves' latencies)."""
    legal: list[tuple[float, float]] = field(default_factory=list)
    """The same for each `GetLegalActions` (none: the probe learns its turns from its streams)."""
    errors: list[tuple[float, str]] = field(default_factory=list)
    pledges: dict[int, Pledges] = field(default_factory=dict)
    """Each seat's commitments, kept for their reveals."""
    stepped: set[tuple[int, int, int]] = field(default_factory=set)
    """The fair-dealing steps taken: (seat, kind, shuffle)."""

    async def _call(self, method: str, request: Any, md: Any, timings: list[tuple[float, float]]) -> Any:
        """The call's answer (``None`` when it failed), its time added to ``timings`` (a timeout's too)."""
        started = time.perf_counter()
        try:
            answer = await getattr(self.clients.engine, method)(request, metadata=md, timeout=CALL_SECONDS)
        except grpc.aio.AioRpcError as e:
            self.errors.append((time.monotonic(), f"{method}:{e.code().name}"))
            if e.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
                timings.append((time.monotonic(), time.perf_counter() - started))
            return None
        timings.append((time.monotonic(), time.perf_counter() - started))
        return answer

    async def run(self) -> None:
        await asyncio.gather(*(self.seat(s) for s in range(len(self.table.guests))))

    async def seat(self, seat: int) -> None:
        """One seat: its Watch stream (opened again after a failure, or before its game token expires), acting on
        each turn that names it."""
        version = 0
        while True:
            guest = await self._fresh(seat)
            stream = self.clients.engine.Watch(
                engine_pb2.WatchRequest(game_id=self.table.game_id, from_version=version), metadata=guest.game_md
            )
            try:
                async for reply in stream:
                    if reply.HasField("envelope"):
                        version = max(version, reply.envelope.version)
                    turn = reply.turn
                    if reply.HasField("turn") and seat in turn.seats:
                        if turn.fair_step.kind:
                            await self.step(seat, turn.fair_step)
                        if turn.actions:
                            await asyncio.sleep(self.think)
                            await self.act(Turn(seat, int(turn.version), list(turn.actions)))
                    if guest.game_expires - time.time() < RENEW_BEFORE_SECONDS:
                        break  # watch again with a fresh token
            except grpc.aio.AioRpcError as e:
                self.errors.append((time.monotonic(), f"Watch:{e.code().name}"))
                await asyncio.sleep(0.5)
            finally:
                stream.cancel()

    async def act(self, turn: Turn) -> None:
        """Play one of ``turn``'s actions (at random) with the version it was decided at, timed."""
        guest = await self._fresh(turn.seat)
        action = turn.actions[self.rng.randrange(len(turn.actions))]
        request = engine_pb2.ActRequest(
            game_id=self.table.game_id, command_id=uuid.uuid4().hex, expected_version=turn.version, zlj=action.zlj
        )
        await self._call("Act", request, guest.game_md, self.acts)

    async def step(self, seat: int, step: Any) -> None:
        """The fair-dealing step ``step`` asks of ``seat`` (`paiju.sdk.fairness`), once; tried again a few times
        after a failure, since nothing else would take it."""
        key = (seat, int(step.kind), int(step.shuffle))
        if key in self.stepped:
            return
        game = GAMES["zlj"]
        pledges = self.pledges.setdefault(seat, Pledges())
        game_id = self.table.game_id
        command: Any = (
            game.contribute(seat)
            if step.kind == engine_pb2.FAIR_DEALING_STEP_KIND_CONTRIBUTE
            else pledges.step(game_id, seat, step)
        )
        if command is None:  # a reveal of nothing this seat committed to
            return
        request = game.act(game_id, uuid.uuid4().hex, command)
        for _ in range(STEP_TRIES):
            guest = await self._fresh(seat)
            if await self._call("Act", request, guest.game_md, self.steps) is not None:
                self.stepped.add(key)
                pledges.taken(game_id, step)
                return
            await asyncio.sleep(0.5)

    async def _fresh(self, seat: int) -> Guest:
        """The guest of ``seat``, its game token renewed (by joining again) when it is about to expire."""
        guest = self.table.guests[seat]
        if guest.game_expires - time.time() < RENEW_BEFORE_SECONDS:
            try:
                await self.clients.join(guest, self.table.table_id)
            except grpc.aio.AioRpcError as e:
                self.errors.append((time.monotonic(), f"JoinGame:{e.code().name}"))
        return guest


class Watchers:
    """Spectators in a process of their own (`bench/load_watchers.py`)."""

    def __init__(self, process: asyncio.subprocess.Process, opened: dict[str, Any]) -> None:
        self.process = process
        self.opened = opened

    @classmethod
    async def start(cls, stack: Stack, count: int, tables: Sequence[str]) -> Watchers:
        log = (stack.logs / "watchers.log").open("ab")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(HERE / "load_watchers.py"),
            stack.lobby,
            stack.engine,
            str(count),
            *tables,
            # the spectators are gRPC clients like the services' own, on their event loop (PAIJU_EVENT_LOOP, read by
            # bench/load_watchers.py as by the services)
            env=grpc_environment(os.environ),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
        )
        log.close()
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), timeout=600)
        if not line:
            raise RuntimeError(f"the spectators' process stopped; see {stack.logs / 'watchers.log'}")
        return cls(process, json.loads(line))

    @property
    def pid(self) -> int:
        return self.process.pid

    async def count(self) -> dict[str, Any]:
        """What the watches received so far: ``{"messages": m, "cpu_s": s, ...}``."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(b"count\n")
        await self.process.stdin.drain()
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout=60)
        return dict(json.loads(line)) if line else {}

    async def stop(self) -> dict[str, Any]:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout=60)
        await self.process.wait()
        return dict(json.loads(line)) if line else {}


# --- measuring -----------------------------------------------------------------------------------------------


@dataclass
class Snapshot:
    at: float
    cpu: dict[str, dict[int, float]]
    waits: dict[str, float]
    """Seconds each service process waited for a CPU so far."""
    machine: tuple[float, float, float]
    last_sequence: int
    events: dict[str, int]
    """Events stored so far by game id."""
    metrics: Metrics
    lobby_metrics: Metrics
    bot_log: int
    """The bot runner's log size."""
    scoring_metrics: Metrics = field(default_factory=Metrics)
    streams: dict[str, int] = field(default_factory=dict)
    """Every JetStream stream's last sequence (the key-value buckets' too), by name."""
    spectators: dict[str, Any] = field(default_factory=dict)
    """What the spectators' watches received so far (`Watchers.count`)."""


def quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


PULSE_SECONDS = 0.2
"""How often the stall watch asks the engine and NATS."""


@dataclass
class Pulse:
    """Stalls, told apart: every `PULSE_SECONDS` the engine's gRPC health check (answered on its event loop: how
    long a call waits there before it is served) and a direct get from the GAMES stream (how long NATS takes to
    answer, whatever the engine does), each timed."""

    stack: Stack
    stream: Any
    subject: str
    engine: list[tuple[float, float]] = field(default_factory=list)
    nats: list[tuple[float, float]] = field(default_factory=list)

    async def run(self) -> None:
        async with grpc.aio.insecure_channel(self.stack.engine) as channel:
            health: Any = health_pb2_grpc.HealthStub(channel)
            request = health_pb2.HealthCheckRequest(service="")
            while True:
                await asyncio.gather(self._time(self.engine, health.Check(request, timeout=30)), self._nats())
                await asyncio.sleep(PULSE_SECONDS)

    async def _nats(self) -> None:
        await self._time(self.nats, self.stream.get_last_msg("GAMES", self.subject, direct=True))

    @staticmethod
    async def _time(timings: list[tuple[float, float]], call: Any) -> None:
        started = time.perf_counter()
        with contextlib.suppress(Exception):  # a failure is timed like an answer: how long it kept the caller
            await call
        timings.append((time.monotonic(), time.perf_counter() - started))


@dataclass
class Run:
    """One stack under load, and what it measures."""

    stack: Stack
    clients: Clients
    think: float
    stream: Any = None
    nc: Any = None
    probe: Probe | None = None
    probe_task: asyncio.Task[None] | None = None
    pulse: Pulse | None = None
    pulse_task: asyncio.Task[None] | None = None
    tables: list[BotTable] = field(default_factory=list)
    watchers: Watchers | None = None
    watching: tuple[str, int] = ("", 0)
    """Whom the spectators watch ("idle" or "tables") and how many there are."""
    py_spy: str = ""

    async def open(self) -> None:
        self.nc = await nats.connect(self.stack.nats_url, name="paiju-bench-load")
        self.stream = self.nc.jetstream()

    async def close(self) -> None:
        if self.watchers is not None:
            await self.watchers.stop()
            self.watchers = None
        for task in (self.probe_task, self.pulse_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.pulse is not None:  # the stall watch's timeline, kept with the logs (``--keep``)
            start = time.time() - time.monotonic()
            with (self.stack.logs / "pulse.jsonl").open("w") as out:
                for name, timings in (("engine", self.pulse.engine), ("nats", self.pulse.nats)):
                    for at, took in timings:
                        out.write(
                            json.dumps({"of": name, "at": round(start + at, 3), "ms": round(took * 1000, 1)}) + "\n"
                        )
        await self.clients.close()
        if self.nc is not None:
            await self.nc.close()

    async def stored(self) -> tuple[int, dict[str, int]]:
        """The GAMES stream's last sequence and the events of each game (on its subject
        ``paiju.game.<partition>.<game>``, or ``paiju.game.<game>`` if stored before the stream had partitions): the
        version of its last event, from its last message's headers (`paiju.platform.store.messages.versions`)."""
        info = await self.stream.stream_info("GAMES", subjects_filter=f"{GAMES_PREFIX}.>")
        subjects = list(info.state.subjects or {})
        lasts = await asyncio.gather(*(self.stream.get_last_msg("GAMES", subject, direct=True) for subject in subjects))
        events: Counter[str] = Counter()
        for subject, last in zip(subjects, lasts, strict=True):
            events[subject.rpartition(".")[2]] += versions(last.seq or 0, last.headers)[1]
        return int(info.state.last_seq), dict(events)

    async def subject(self, game_id: str) -> str:
        """The subject of ``game_id``'s events in the GAMES stream (partitioned as the stream says)."""
        info = await self.stream.stream_info("GAMES")
        partitions = int((info.config.metadata or {}).get(PARTITIONS_KEY, "0"))
        if not partitions:
            return f"{GAMES_PREFIX}.{game_id}"
        return f"{GAMES_PREFIX}.{partition_of(game_id, partitions)}.{game_id}"

    async def streams(self) -> dict[str, int]:
        """Every stream's last sequence, by name (the key-value buckets are streams ``KV_<bucket>``)."""
        return {info.config.name: int(info.state.last_seq) for info in await self.stream.streams_info()}

    async def snapshot(self) -> Snapshot:
        pids = dict(self.stack.pids)
        if self.watchers is not None:
            pids["spectators"] = self.watchers.pid
        last, events = await self.stored()
        streams = await self.streams()
        spectators = await self.watchers.count() if self.watchers is not None else {}
        metrics = await asyncio.to_thread(scrape, self.stack.metrics_port)
        lobby_metrics = await asyncio.to_thread(scrape, self.stack.lobby_metrics_port)
        scoring_metrics = await asyncio.to_thread(scrape, self.stack.scoring_metrics_port)
        bot_log = (self.stack.logs / "bots.log").stat().st_size
        waits = {name: runqueue_wait(pid) for name, pid in self.stack.pids.items()}
        return Snapshot(
            time.monotonic(),
            cpu_by_role(pids),
            waits,
            machine_cpu(),
            last,
            events,
            metrics,
            lobby_metrics,
            bot_log,
            scoring_metrics,
            streams,
            spectators,
        )

    # --- building the load --------------------------------------------------------------------------------------

    async def start_probe(self) -> None:
        table = await self.clients.people_table("load probe")
        self.probe = Probe(self.clients, table, self.think)
        self.probe_task = asyncio.create_task(self.probe.run(), name="probe")
        self.pulse = Pulse(self.stack, self.stream, await self.subject(table.game_id))
        self.pulse_task = asyncio.create_task(self.pulse.run(), name="pulse")

    async def add_tables(self, count: int) -> None:
        """Open tables of bots until there are ``count``; wait until every new one plays."""
        first = len(self.tables)
        if count <= first:
            return
        started = time.monotonic()
        opening = asyncio.Semaphore(OPEN_AT_ONCE)

        async def one(index: int) -> BotTable:
            async with opening:
                return await self.clients.bot_table(index)

        new = list(await asyncio.gather(*(one(i) for i in range(first, count))))
        self.tables += new
        opened = time.monotonic() - started
        _, at_start = await self.stored()
        waiting = {t.game_id for t in new}
        while waiting and time.monotonic() - started < MOVING_SECONDS:
            self.stack.check()
            await asyncio.sleep(2)
            _, events = await self.stored()
            waiting = {g for g in waiting if events.get(g, 0) < at_start.get(g, 0) + MOVING_EVENTS}
        if self.clients.refused:
            note(f"while opening tables the lobby answered: {dict(self.clients.refused)}")
            self.clients.refused.clear()
        note(
            f"{len(new)} tables opened in {opened:.0f} s; "
            + (f"{len(waiting)} not playing yet" if waiting else "all playing")
            + f" after {time.monotonic() - started:.0f} s"
        )

    async def set_spectators(self, count: int, tables: Sequence[str], kind: str) -> None:
        """``count`` spectators spread over ``tables`` (and none of the others)."""
        if self.watching == (kind, count) or (count == 0 and self.watchers is None):
            return
        if self.watchers is not None:
            final = await self.watchers.stop()
            note(f"spectators stopped: {final}")
            self.watchers = None
        self.watching = (kind, count)
        if count:
            started = time.monotonic()
            self.watchers = await Watchers.start(self.stack, count, tables)
            note(f"{count} spectators ({kind}): {self.watchers.opened} in {time.monotonic() - started:.0f} s")

    # --- one window ---------------------------------------------------------------------------------------------

    async def measure(self, label: dict[str, Any], window: float) -> dict[str, Any]:
        spies = self._py_spy(label, window)
        before = await self.snapshot()
        deadline = before.at + window
        while time.monotonic() < deadline:
            self.stack.check()
            await asyncio.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        after = await self.snapshot()
        for spy in spies:
            await asyncio.to_thread(spy.wait)
        return self._row(label, before, after)

    def _py_spy(self, label: dict[str, Any], window: float) -> list[subprocess.Popen[bytes]]:
        """py-spy recording the engine (idle samples too: the share of time its event loop waits), the bot runner,
        the lobby and scoring during the window: folded stacks (``--format raw``) in the run's folder."""
        if not self.py_spy:
            return []
        name = str(label["config"]).replace(" ", "").replace(",", "-").replace("+", "-")
        recorders = []
        for process in ("engine", "bots", "lobby", "scoring"):
            out = self.stack.folder / f"py-spy-{process}-{name}-{int(time.time())}.txt"
            options = ["--idle"] if process == "engine" else []
            recorders.append(
                subprocess.Popen(
                    [
                        *(self.py_spy, "record", "--pid", str(self.stack.pids[process]), "--format", "raw"),
                        *("--duration", str(max(1, int(window) - 2)), "--rate", "50", "--output", str(out)),
                        *options,
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        note(f"py-spy records the engine, bot runner, lobby and scoring into {self.stack.folder}")
        return recorders

    def _row(self, label: dict[str, Any], before: Snapshot, after: Snapshot) -> dict[str, Any]:
        seconds = after.at - before.at
        row: dict[str, Any] = dict(label)
        row["window_s"] = round(seconds, 1)
        events = sum(after.events.values()) - sum(before.events.values())
        row["events_per_s"] = round(events / seconds, 1)
        games = [t.game_id for t in self.tables]
        if games:
            moved = [after.events.get(g, 0) - before.events.get(g, 0) for g in games]
            row["events_per_table_per_s"] = round(statistics.median(moved) / seconds, 2)
            row["tables_stalled"] = sum(1 for m in moved if m == 0)
        if self.probe is not None and label.get("tables"):
            acts = [d for t, d in self.probe.acts if before.at <= t <= after.at]
            legal = [d for t, d in self.probe.legal if before.at <= t <= after.at]
            row["probe_acts"] = len(acts)
            row["act_p50_ms"], row["act_p99_ms"] = ms(quantile(acts, 0.5)), ms(quantile(acts, 0.99))
            row["legal_p50_ms"], row["legal_p99_ms"] = ms(quantile(legal, 0.5)), ms(quantile(legal, 0.99))
            if self.pulse is not None:
                for name, timings in (("engine_pulse", self.pulse.engine), ("nats_pulse", self.pulse.nats)):
                    seen = [d for t, d in timings if before.at <= t <= after.at]
                    row[f"{name}_p99_ms"], row[f"{name}_max_ms"] = ms(quantile(seen, 0.99)), ms(max(seen, default=None))
            failed = Counter(e for t, e in self.probe.errors if before.at <= t <= after.at)
            if failed:
                row["probe_errors"] = dict(failed)
        served = after.metrics.minus(before.metrics)
        for methods, key in ((ACTS, "act"), (("GetLegalActions",), "legal")):
            cumulative = merged(served.buckets.get(method, {}) for method in methods)
            row[f"engine_{key}_p50_ms"] = ms(histogram_quantile(0.5, cumulative))
            row[f"engine_{key}_p99_ms"] = ms(histogram_quantile(0.99, cumulative))
        by_method: Counter[str] = Counter()
        refused: Counter[str] = Counter()
        for (method, code), n in served.calls.items():
            if n:
                by_method[method] += n
                if code != "OK":
                    refused[f"{method}:{code}"] += n
        row["engine_calls_per_s"] = {m: round(n / seconds, 1) for m, n in sorted(by_method.items())}
        if sum(by_method[m] for m in ACTS):
            row["legal_per_act"] = round(by_method["GetLegalActions"] / sum(by_method[m] for m in ACTS), 1)
        if refused:
            row["engine_refusals"] = dict(refused)
        for name in ("engine", "bots", "lobby", "scoring", "nats", "postgres", "spectators", "bench"):
            if name in after.cpu and name in before.cpu:
                row[f"{name}_cpu_pct"] = round(100 * cpu_used(before.cpu[name], after.cpu[name]) / seconds, 1)
        for name in ("engine", "bots", "lobby"):
            row[f"{name}_runqueue_wait_pct"] = round(100 * (after.waits[name] - before.waits[name]) / seconds, 1)
        leases = after.lobby_metrics.minus(before.lobby_metrics)
        lease_calls = {code: n for (method, code), n in leases.calls.items() if method == "LeaseBotSeats" and n}
        if lease_calls:
            row["lease_calls"] = lease_calls
            row["lease_p50_ms"] = ms(histogram_quantile(0.5, leases.buckets.get("LeaseBotSeats", {})))
            row["lease_max_ms"] = ms(histogram_quantile(1.0, leases.buckets.get("LeaseBotSeats", {})))
        busy, steal, total = (a - b for a, b in zip(after.machine, before.machine, strict=True))
        ours = sum(cpu_used(before.cpu.get(n, {}), after.cpu[n]) for n in after.cpu)
        row["machine_busy_pct"] = round(100 * busy / seconds, 1)
        row["others_cpu_pct"] = round(100 * (busy - ours) / seconds, 1)
        row["machine_steal_pct"] = round(100 * steal / seconds, 1)
        row["cores"] = round(total / seconds)
        with (self.stack.logs / "bots.log").open("rb") as log:
            log.seek(before.bot_log)
            text = log.read(after.bot_log - before.bot_log).decode(errors="replace")
        marks = {key: text.count(mark) for mark, key in BOT_LOG_MARKS.items() if mark in text}
        if marks:
            row["bot_log"] = marks
        row.update(self._per_act(before, after, seconds))
        return row

    def _per_act(self, before: Snapshot, after: Snapshot, seconds: float) -> dict[str, Any]:
        """What one `Act` costs the stack in the window (nothing when none was served): CPU by process, unary calls
        by service and method, JetStream publishes (P) by stream, Watch messages (W), and the mix of games."""
        engine = after.metrics.minus(before.metrics)
        acts = sum(n for (method, _), n in engine.calls.items() if method in ACTS)
        if acts <= 0:
            return {}
        out: dict[str, Any] = {"acts": acts, "acts_per_s": round(acts / seconds, 1)}
        cpu = {n: cpu_used(before.cpu.get(n, {}), after.cpu[n]) for n in STACK_PROCESSES if n in after.cpu}
        out["cpu_per_act_ms"] = {name: round(1000 * used / acts, 3) for name, used in cpu.items()}
        out["stack_ms_per_act"] = round(1000 * sum(cpu.values()) / acts, 3)
        out["server_ms_per_act"] = round(1000 * sum(c for n, c in cpu.items() if n != "bots") / acts, 3)
        calls: Counter[str] = Counter()
        streams_ended: Counter[str] = Counter()
        services = (
            ("engine", engine),
            ("lobby", after.lobby_metrics.minus(before.lobby_metrics)),
            ("scoring", after.scoring_metrics.minus(before.scoring_metrics)),
        )
        for service, metrics in services:
            for (method, _), n in metrics.calls.items():
                name = f"{service}.{method}"
                if name in STREAMING:
                    streams_ended[name] += n
                elif name not in ACT_CALLS:
                    calls[name] += n
        out["calls_per_act"] = {name: round(n / acts, 4) for name, n in calls.most_common() if n > 0}
        out["unary_calls_per_act"] = round(sum(calls.values()) / acts, 3)
        if +streams_ended:
            out["streams_ended_per_act"] = {name: round(n / acts, 4) for name, n in (+streams_ended).items()}
        published = {name: last - before.streams.get(name, 0) for name, last in after.streams.items()}
        out["publishes_per_act_by_stream"] = {n: round(v / acts, 4) for n, v in sorted(published.items()) if v > 0}
        out["publishes_per_act"] = round(sum(published.values()) / acts, 3)
        spectated = int(after.spectators.get("messages", 0)) - int(before.spectators.get("messages", 0))
        seats = {t.game_id: SEATS[t.game] for t in self.tables}
        to_seats = sum((after.events.get(g, 0) - before.events.get(g, 0)) * n for g, n in seats.items())
        out["watch_events_per_act"] = round((to_seats + spectated) / acts, 3)
        if engine.streamed is not None:
            out["watch_messages_per_act"] = round(engine.streamed.get("Watch", 0) / acts, 3)
            out["watch_messages_counted"] = "the engine's count of the Watch messages it sent"
        else:
            out["watch_messages_per_act"] = out["watch_events_per_act"]
            out["watch_messages_counted"] = "events of the bot tables' games x their seats, + spectators' messages"
        out["watch_messages_by_watcher"] = {
            "bot seats (events)": round(to_seats / acts, 3),
            "spectators": round(spectated / acts, 3),
        }
        moved = {game: n for game, n in engine.acts.items() if n > 0}
        if moved:
            out["mix"] = {game: round(n / sum(moved.values()), 3) for game, n in sorted(moved.items())}
        if after.spectators and before.spectators:
            out["spectator_messages_per_s"] = round(spectated / seconds, 1)
            spent = float(after.spectators["cpu_s"]) - float(before.spectators["cpu_s"])
            if spectated:
                out["spectators_us_per_message"] = round(1e6 * spent / spectated, 1)
        return out


STACK_PROCESSES = ("engine", "bots", "scoring", "nats", "lobby", "postgres")
"""The stack's processes, whose CPU per Act is counted (the probe's and the spectators' are the clients')."""


def saturated(row: dict[str, Any], pace: float | None) -> bool:
    """Whether the stack is past what the machine serves: tables stalled or playing at under a quarter of the
    pace of one table alone (``pace``, events per table per second), latencies in seconds, or the engine's CPU
    at 95 %."""
    stalled = row.get("tables") and (row.get("tables_stalled", 0) > row["tables"] / 10)
    slow_tables = pace is not None and row.get("events_per_table_per_s", pace) < pace / 4
    slow_calls = any((row.get(k) or 0) >= 1000 for k in ("act_p50_ms", "legal_p50_ms"))
    return bool(stalled or slow_tables or slow_calls or row.get("engine_cpu_pct", 0) >= 95)


def note(text: str) -> None:
    print(f"# {text}", file=sys.stderr, flush=True)


COUNTS = ("bot_log", "engine_refusals", "probe_errors", "lease_calls")
"""Fields that count what happened in a window (summed over repeated windows, not their median)."""


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of repeated windows of one configuration: the median of each number over the windows that have
    it, and of rates by name (calls per method) name by name; the `COUNTS` summed."""
    if len(rows) == 1:
        return rows[0]

    def numeric(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for row in rows for k in row):
        values = [row[key] for row in rows if row.get(key) is not None]
        if not values:
            out[key] = None
        elif key in ("tables", "spectators", "idle_watchers"):
            out[key] = values[0]
        elif all(numeric(v) for v in values):
            out[key] = round(statistics.median(values), 2)
        elif key in COUNTS:
            out[key] = dict(sum((Counter(v) for v in values), Counter()))
        elif all(isinstance(v, dict) for v in values):
            names = dict.fromkeys(n for v in values for n in v)
            out[key] = {n: round(statistics.median(row.get(key, {}).get(n, 0) for row in rows), 4) for n in names}
        else:
            out[key] = values[0]
    out["windows"] = len(rows)
    return out


# --- the configurations ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    tables: int
    spectators: int = 0
    idle_watchers: int | None = None
    """Set for the idle-game configurations: spectators on a game nobody plays (no bot table, no probe)."""

    def label(self) -> dict[str, Any]:
        if self.idle_watchers is not None:
            return {"config": f"idle game, {self.idle_watchers} watchers", "idle_watchers": self.idle_watchers}
        name = f"{self.tables} table{'s' if self.tables != 1 else ''}"
        if self.spectators:
            name += f" + {self.spectators} spectators"
        return {"config": name, "tables": self.tables, "spectators": self.spectators}


def configurations(args: argparse.Namespace) -> list[Config]:
    found: list[Config] = []
    if args.idle_watchers:
        found += [Config(0, idle_watchers=0), Config(0, idle_watchers=args.idle_watchers)]
    found += [Config(n) for n in args.tables]
    if args.spectators:
        found.append(Config(max(args.tables, default=0), args.spectators))
    return found


async def measure_all(run: Run, configs: Sequence[Config], args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    await run.open()
    idle: PeopleTable | None = None
    try:
        for config in configs:
            if config.idle_watchers is not None:
                if idle is None:
                    idle = await run.clients.people_table("load idle")
                await run.set_spectators(config.idle_watchers, [idle.table_id], "idle")
                await asyncio.sleep(SETTLE_SECONDS)
            else:
                if run.watching[0] == "idle":
                    await run.set_spectators(0, [], "tables")  # the idle game's watchers are done
                if run.probe is None:
                    await run.start_probe()
                await run.add_tables(config.tables)
                await run.set_spectators(config.spectators, [t.table_id for t in run.tables], "tables")
                note(f"{config.label()['config']}: warming up for {args.warmup:.0f} s")
                await asyncio.sleep(args.warmup)
            repeat = 1 if config.idle_watchers is not None else args.repeat  # an idle engine does not vary
            windows = [await run.measure(config.label(), args.window) for _ in range(repeat)]
            row = median_row(windows)
            if config.tables and config.idle_watchers is None:
                pace = next((r.get("events_per_table_per_s") for r in rows if r.get("tables") == 1), None)
                row["saturated"] = saturated(row, pace)
            print(json.dumps(row, ensure_ascii=False), flush=True)
            rows.append(row)
            if config.spectators and any(is_base_of(r, row) for r in rows):
                rows.append(await measure_again(run, config, args))
    finally:
        await run.close()
    return rows


def is_base_of(row: dict[str, Any], spect: dict[str, Any]) -> bool:
    """Whether ``row`` measured the same tables as ``spect`` without its spectators (before them or after)."""
    return bool(row.get("acts")) and row.get("tables") == spect["tables"] and not row.get("spectators")


async def measure_again(run: Run, config: Config, args: argparse.Namespace) -> dict[str, Any]:
    """The tables of ``config`` measured once more, its spectators gone: the spectators' cost to the engine is what
    their window cost beyond the mean of the windows before and after it (`summarize`), so that a machine whose speed
    drifts during the run (it does, by tens of percent within minutes) does not put the drift on the spectators."""
    await run.set_spectators(0, [], "tables")
    note(f"{config.tables} tables again, the spectators gone: settling for {SETTLE_SECONDS:.0f} s")
    await asyncio.sleep(SETTLE_SECONDS)
    label = Config(config.tables).label()
    label["config"] += ", again after the spectators"
    row = median_row([await run.measure(label, args.window) for _ in range(args.repeat)])
    row["again"] = True
    print(json.dumps(row, ensure_ascii=False), flush=True)
    return row


def run_stack(folder: Path, configs: Sequence[Config], args: argparse.Namespace) -> list[dict[str, Any]]:
    with Stack(folder, args.think) as stack:
        note(f"stack up: engine {stack.engine}, lobby {stack.lobby}, logs {stack.logs}")

        async def go() -> list[dict[str, Any]]:
            run = Run(stack, Clients(stack), args.think, py_spy=args.py_spy or "")
            return await measure_all(run, configs, args)

        return asyncio.run(go())


# --- the report -----------------------------------------------------------------------------------------------

COLUMNS = (
    ("config", "configuration"),
    ("events_per_s", "events/s"),
    ("events_per_table_per_s", "events/s per table"),
    ("act_p50_ms", "Act p50 / p99 ms"),
    ("legal_p50_ms", "GetLegalActions p50 / p99 ms"),
    ("engine_act_p50_ms", "engine: Act p50 / p99 ms"),
    ("engine_legal_p50_ms", "engine: GetLegalActions p50 / p99 ms"),
    ("engine_cpu_pct", "engine CPU %"),
    ("bots_cpu_pct", "bot runner CPU %"),
    ("spectators_cpu_pct", "spectators' CPU %"),
    ("lease_p50_ms", "LeaseBotSeats p50 ms"),
    ("others_cpu_pct", "others' CPU %"),
)
"""The benchmarks document's table: (field, title); a p50 field's cell shows its p99 too."""


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    def number(value: Any) -> str:
        if value is None:
            return "–"
        return f"{value:g}" if isinstance(value, float) else str(value)

    def cell(row: dict[str, Any], key: str) -> str:
        if key == "config":
            return str(row["config"]) + (" (saturated)" if row.get("saturated") else "")
        if "p50" in key and key != "lease_p50_ms":
            p99 = key.replace("p50", "p99")
            return f"{number(row.get(key))} / {number(row.get(p99))}" if row.get(key) is not None else "–"
        return number(row.get(key))

    lines = [
        "| " + " | ".join(title for _, title in COLUMNS) + " |",
        "|" + "|".join("---" if key == "config" else "---:" for key, _ in COLUMNS) + "|",
    ]
    lines += ["| " + " | ".join(cell(row, key) for key, _ in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


PER_ACT_COLUMNS = (
    ("engine", "engine"),
    ("bots", "bot runner"),
    ("scoring", "scoring"),
    ("nats", "NATS"),
    ("lobby", "lobby"),
    ("postgres", "PostgreSQL"),
)
"""The per-Act table's processes: (field of ``cpu_per_act_ms``, title)."""


def per_act_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """CPU per Act by process against the floor, calls, P and W: one line per loaded configuration."""
    loaded = [row for row in rows if row.get("acts")]
    titles = [
        "configuration",
        "Acts/s",
        *(f"{title} ms" for _, title in PER_ACT_COLUMNS),
        "stack ms",
        "server side ms",
        "floor ms (server)",
        "stack / floor",
        "server / floor's server",
        "unary calls",
        "P",
        "W",
    ]
    lines = ["| " + " | ".join(titles) + " |", "|---" + "|---:" * (len(titles) - 1) + "|"]
    for row in loaded:
        cpu = row.get("cpu_per_act_ms", {})
        floor = f"{row['floor_ms']:.2f} ({row['floor_server_ms']:.2f})" if "floor_ms" in row else "–"
        cells = [
            str(row["config"]) + (" (saturated)" if row.get("saturated") else ""),
            f"{row['acts_per_s']:g}",
            *(f"{cpu.get(key, 0):.2f}" for key, _ in PER_ACT_COLUMNS),
            f"{row['stack_ms_per_act']:.2f}",
            f"{row['server_ms_per_act']:.2f}",
            floor,
            f"{row['stack_over_floor']:.1f}×" if "stack_over_floor" in row else "–",
            f"{row['server_over_floor_server']:.1f}×" if "server_over_floor_server" in row else "–",
            f"{row['unary_calls_per_act']:g}",
            f"{row['publishes_per_act']:g}",
            f"{row['watch_messages_per_act']:g}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def calls_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """Unary calls per Act by service and method (besides Act), and publishes per Act by stream."""
    loaded = [row for row in rows if row.get("acts")]
    if not loaded:
        return ""
    lines = ["| per Act | " + " | ".join(str(r["config"]) for r in loaded) + " |", "|---" + "|---:" * len(loaded) + "|"]
    for key, what in (("calls_per_act", "calls"), ("publishes_per_act_by_stream", "publishes to")):
        names = dict.fromkeys(n for row in loaded for n in row.get(key, {}))
        for name in names:
            lines.append(f"| {what} {name} | " + " | ".join(f"{r.get(key, {}).get(name, 0):g}" for r in loaded) + " |")
    return "\n".join(lines)


def with_floor(row: dict[str, Any], floor: Floor) -> Floor:
    """``floor`` composed with ``row``'s P, W and mix (the parts are per operation: only the counts change)."""
    return dataclasses.replace(
        floor,
        publishes=row["publishes_per_act"],
        messages=row["watch_messages_per_act"],
        mix=row.get("mix") or floor.mix,
    )


def reference(rows: Sequence[dict[str, Any]], tables: int) -> dict[str, Any] | None:
    """The loaded configuration without spectators with the number of tables nearest ``tables`` (its first window:
    not the one measured again after the spectators, `measure_again`)."""
    plain = [row for row in rows if row.get("acts") and not row.get("spectators") and not row.get("again")]
    return min(plain, key=lambda row: abs(row["tables"] - tables), default=None)


def spectated(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The configuration whose spectators the run reports on: the last loaded one with some."""
    watched = [row for row in rows if row.get("acts") and row.get("spectators")]
    return watched[-1] if watched else None


def crowd_of(rows: Sequence[dict[str, Any]]) -> Crowd | None:
    """The shape of the run's spectators (`spectated`): how many, over how many tables, and how often each was sent
    a message."""
    row = spectated(rows)
    if row is None or not row.get("spectator_messages_per_s"):
        return None
    return Crowd(row["spectators"], row["tables"], pace=row["spectators"] / row["spectator_messages_per_s"])


def players_per_core(server_ms_per_act: float) -> float:
    """Seated players one core serves at human pace (`HUMAN_MOVES_PER_TABLE_MINUTE` among `HUMAN_SEATS`), when a
    move costs the server side ``server_ms_per_act`` (measured at the bots' pace: the work done by the second —
    lease renewals, heartbeats — is spread over more moves than people make, and busier processes batch more)."""
    moves_per_player_per_s = HUMAN_MOVES_PER_TABLE_MINUTE / 60 / HUMAN_SEATS
    return 1.0 / (server_ms_per_act / 1000 * moves_per_player_per_s)


def assess(rows: Sequence[dict[str, Any]], floor: Floor | None, tables: int) -> dict[str, Any]:
    """The floor composed for each loaded row (added to it), the spectators' cost, the capacity at human pace and
    the gates (for the reference configuration, `reference`)."""
    summary: dict[str, Any] = {"summary": "per Act"}
    for row in rows:
        if row.get("acts") and floor is not None:
            composed = with_floor(row, floor)
            row["floor_ms"] = round(composed.total_us / 1000, 3)
            row["floor_server_ms"] = round(composed.server_us / 1000, 3)
            row["stack_over_floor"] = round(row["stack_ms_per_act"] / row["floor_ms"], 2)
            row["server_over_floor_server"] = round(row["server_ms_per_act"] / row["floor_server_ms"], 2)
    ref = reference(rows, tables)
    gates: dict[str, dict[str, Any]] = {}

    def gate(name: str, value: float | None, target: float, *, at_least: bool = False, what: str = "") -> None:
        if value is None:
            return
        passed = value >= target if at_least else value <= target
        gates[name] = {"value": round(value, 3), "target": target, "pass": passed, "what": what}

    if ref is not None:
        summary["reference"] = ref["config"]
        if "stack_over_floor" in ref:
            gate(
                "stack_over_floor",
                ref["stack_over_floor"],
                GATES["stack_over_floor"],
                what=f"stack CPU per Act {ref['stack_ms_per_act']:.2f} ms / floor {ref['floor_ms']:.2f} ms",
            )
        if floor is not None and floor.unary_act_paced is not None:
            # reported, not gated: the floor's round trips come back to back; the run's come now and then
            paced, back_to_back = floor.unary_act_paced, floor.unary_act
            summary["unary_act_at_run_pace_us"] = {"client": paced.client_us, "server": paced.server_us}
            summary["unary_act_at_run_pace_over_back_to_back"] = round(paced.total_us / back_to_back.total_us, 2)
            at_pace = with_floor(ref, floor).paced_total_us
            if at_pace:
                summary["floor_at_run_pace_ms"] = round(at_pace / 1000, 3)
                summary["stack_over_floor_at_run_pace"] = round(ref["stack_ms_per_act"] / (at_pace / 1000), 2)
        engine_ms = ref["cpu_per_act_ms"].get("engine")
        gate("engine_ms_per_act", engine_ms, GATES["engine_ms_per_act"], what="engine CPU per Act, ms")
        gate(
            "unary_calls_per_act",
            ref["unary_calls_per_act"],
            GATES["unary_calls_per_act"],
            what="unary calls per Act besides Act (engine, lobby, scoring)",
        )
        summary["players_per_core"] = round(players_per_core(ref["server_ms_per_act"]))
        gate(
            "players_per_core",
            summary["players_per_core"],
            GATES["players_per_core"],
            at_least=True,
            what=f"seated players per core at human pace, server side {ref['server_ms_per_act']:.2f} ms per move",
        )
    plain = [row for row in rows if row.get("acts") and not row.get("spectators") and not row.get("again")]
    if plain:
        most = max(plain, key=lambda row: row["tables"])
        summary["probe_act_ms"] = {
            "config": most["config"],
            "p50": most.get("act_p50_ms"),
            "p99": most.get("act_p99_ms"),
        }
    spect = spectated(rows)
    if spect is not None:
        bases = [r for r in rows if is_base_of(r, spect)]
        summary["players_per_core_with_spectators"] = round(players_per_core(spect["server_ms_per_act"]))
        summary["spectators_per_table"] = round(spect["spectators"] / spect["tables"], 2)
        per_s = spect.get("spectator_messages_per_s") or 0
        if bases and per_s > 0:
            # the engine's CPU beyond what the same moves cost it without spectators (the mean of the windows before
            # and after theirs, `measure_again`), per spectator message
            base_ms = statistics.mean(r["cpu_per_act_ms"]["engine"] for r in bases)
            summary["engine_ms_per_act_without_spectators"] = [r["cpu_per_act_ms"]["engine"] for r in bases]
            engine_s = spect["engine_cpu_pct"] / 100
            moves_s = base_ms / 1000 * spect["acts_per_s"]
            per_message_us = 1e6 * (engine_s - moves_s) / per_s
            summary["engine_us_per_spectator_message"] = round(per_message_us, 1)
            if floor is not None:
                summary["bare_stream_message_server_us"] = floor.stream_us
                gate(
                    "spectator_message_over_bare",
                    per_message_us / floor.stream_us,
                    GATES["spectator_message_over_bare"],
                    what=f"engine CPU per spectator message {per_message_us:.1f} µs / bare streamed message "
                    f"{floor.stream_us:g} µs (server half, each stream on its own connection)",
                )
            if floor is not None and floor.stream_crowd is not None and floor.crowd is not None:
                # reported beside the gate, not gated: the bare library doing what the engine does for this crowd
                shaped = floor.stream_crowd.server_us
                summary["bare_stream_message_at_spectators_shape_server_us"] = shaped
                summary["spectators_shape"] = floor.crowd.describe()
                summary["spectator_message_over_bare_at_spectators_shape"] = round(per_message_us / shaped, 3)
        if "spectators_us_per_message" in spect and floor is not None:
            summary["spectators_us_per_message"] = spect["spectators_us_per_message"]
            summary["bare_stream_message_client_us"] = floor.stream_apart.client_us
    idle = {row.get("idle_watchers"): row for row in rows if row.get("idle_watchers") is not None}
    if len(idle) == 2:
        quiet, watched_idle = idle[0], idle[max(k for k in idle if k is not None)]
        summary["idle_watchers_engine_cpu_pct"] = [quiet.get("engine_cpu_pct"), watched_idle.get("engine_cpu_pct")]
    summary["gates"] = gates
    return summary


STEAL_TRUSTED_PCT = 2.0
"""A window in which the machine's hypervisor took more than this (% of one core: its steal time) is not to be
trusted: its processes ran slower and cost more CPU per move for it (a window with 15.6 % stolen read the engine at
2.57 ms a move, the same code 1.80 in a clean window twenty minutes before)."""
OTHERS_TRUSTED_PCT = 5.0
"""A window in which programs outside the stack used more than this (% of one core) is not to be trusted either."""


def disturbed(rows: Sequence[dict[str, Any]], profiled: bool = False) -> list[str]:
    """What made a loaded window's figures untrustworthy: the host took its CPU (steal) or other programs ran; or the
    run was ``profiled`` (`--py-spy`: py-spy stops each process it samples, a hundred times a second, and its own CPU
    counts as the others')."""
    found = ["py-spy recorded this run: a profile, not a measurement of the gates"] if profiled else []
    for row in rows:
        if not row.get("acts"):
            continue
        steal, others = row.get("machine_steal_pct") or 0.0, row.get("others_cpu_pct") or 0.0
        if steal > STEAL_TRUSTED_PCT:
            found.append(f"{row['config']}: the hypervisor took {steal:g} % of a core (steal): measure again")
        if others > OTHERS_TRUSTED_PCT:
            found.append(f"{row['config']}: other programs used {others:g} % of a core: measure again")
    return found


def gates_text(gates: dict[str, dict[str, Any]]) -> str:
    lines = []
    for name, gate in gates.items():
        sign = "≥" if name == "players_per_core" else "≤"
        verdict = "PASS" if gate["pass"] else "FAIL"
        lines.append(f"{verdict}  {name}: {gate['value']:g} {sign} {gate['target']:g}  ({gate['what']})")
    return "\n".join(lines)


# --- the memory soak ----------------------------------------------------------------------------------------


def slope(samples: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of (minutes, MiB) samples, in MiB per minute (``None`` for fewer than 3)."""
    if len(samples) < 3:
        return None
    mean_t = statistics.fmean(t for t, _ in samples)
    mean_m = statistics.fmean(m for _, m in samples)
    spread = sum((t - mean_t) ** 2 for t, _ in samples)
    return sum((t - mean_t) * (m - mean_m) for t, m in samples) / spread if spread else None


async def soak(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    """Bot tables play for ``args.soak`` minutes; every process's resident memory sampled every
    `SOAK_SAMPLE_SECONDS`; slopes over the last `SOAK_SLOPE_MINUTES` (two thirds of a shorter soak)."""
    run = Run(stack, Clients(stack), args.think)
    await run.open()
    samples: list[tuple[float, dict[str, float]]] = []
    try:
        await run.add_tables(args.soak_tables)
        engine_before = await asyncio.to_thread(scrape, stack.metrics_port)
        started = time.monotonic()
        note(f"soak: {len(run.tables)} tables play for {args.soak:g} minutes; memory sampled every 10 s")
        with (stack.logs / "rss.jsonl").open("w") as out:
            while True:
                elapsed = time.monotonic() - started
                by_role = pids_by_role(stack.pids)
                rss = {role: round(sum(rss_mib(pid) for pid in pids), 2) for role, pids in by_role.items()}
                # PostgreSQL's backends each count the shared buffers they touched: its private memory apart
                rss["postgres_private"] = round(sum(rss_mib(pid, "RssAnon") for pid in by_role["postgres"]), 2)
                samples.append((elapsed / 60, rss))
                out.write(json.dumps({"minute": round(elapsed / 60, 3), **rss}) + "\n")
                out.flush()
                if elapsed >= args.soak * 60:
                    break
                stack.check()
                await asyncio.sleep(min(SOAK_SAMPLE_SECONDS, args.soak * 60 - elapsed))
        engine = (await asyncio.to_thread(scrape, stack.metrics_port)).minus(engine_before)
    finally:
        await run.close()
    window = min(SOAK_SLOPE_MINUTES, args.soak * 2 / 3)
    end = samples[-1][0]
    recent = [(t, rss) for t, rss in samples if t >= end - window]
    slopes = {role: slope([(t, rss[role]) for t, rss in recent]) for role in samples[-1][1]}
    acts = sum(n for (method, _), n in engine.calls.items() if method in ACTS)
    result: dict[str, Any] = {
        "soak_minutes": args.soak,
        "tables": len(run.tables),
        "slope_window_minutes": round(window, 2),
        "samples": len(samples),
        "acts": acts,
        "rss_mib_start": samples[0][1],
        "rss_mib_end": samples[-1][1],
        "slope_mib_per_min": {role: None if v is None else round(v, 3) for role, v in slopes.items()},
    }
    target = GATES["memory_mib_per_min"]
    result["gates"] = {
        f"memory_{role}": {
            "value": round(slopes[role] or 0.0, 3),
            "target": target,
            "pass": slopes[role] is not None and (slopes[role] or 0.0) <= target,
            "what": f"{role} resident memory growth, MiB per minute over the last {window:g} minutes",
        }
        for role in ("engine", "bots")
        if role in slopes
    }
    return result


def soak_markdown(result: dict[str, Any]) -> str:
    lines = [
        "| process | RSS at start, MiB | RSS at end, MiB | MiB per minute "
        f"(last {result['slope_window_minutes']:g} min) |",
        "|---|---:|---:|---:|",
    ]
    for role, value in result["slope_mib_per_min"].items():
        shown = "–" if value is None else f"{value:+.3f}"
        lines.append(
            f"| {role} | {result['rss_mib_start'].get(role, 0):.1f} | "
            f"{result['rss_mib_end'].get(role, 0):.1f} | {shown} |"
        )
    return "\n".join(lines)


def run_soak(folder: Path, args: argparse.Namespace) -> None:
    with Stack(folder, args.think) as stack:
        note(f"stack up: engine {stack.engine}, lobby {stack.lobby}, logs {stack.logs}")
        result = asyncio.run(soak(stack, args))
    print(json.dumps(result, ensure_ascii=False), flush=True)
    print()
    print(
        f"Memory soak on one machine ({os.cpu_count()} cores): {result['tables']} tables of bots "
        f"({args.think:g} s per move) for {args.soak:g} minutes, {result['acts']} Acts; resident memory every "
        f"{SOAK_SAMPLE_SECONDS:g} s (PostgreSQL: all of its processes summed, the shared buffers each touched "
        "counted in each; postgres_private: their private memory, RssAnon)"
    )
    print()
    print(soak_markdown(result))
    print()
    print(gates_text(result["gates"]))
    if args.out:
        args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1))


@contextlib.contextmanager
def run_folder(keep: bool) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="paiju-load-"))
    folder.chmod(0o755)  # so that PostgreSQL, under its own user when the bench runs as root, keeps its data here
    try:
        yield folder
    finally:
        if keep:
            note(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--tables", type=int, nargs="*", default=[1, 30, 100], help="bot tables (1 30 100)")
    parser.add_argument("--spectators", type=int, default=500, help="spectators with the most tables (500)")
    parser.add_argument("--idle-watchers", type=int, default=100, help="watchers of an idle game (100; 0: skip)")
    parser.add_argument("--window", type=float, default=60.0, help="seconds measured per configuration (60)")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds of play before measuring (20)")
    parser.add_argument("--repeat", type=int, default=1, help="windows per loaded configuration, medians reported (1)")
    parser.add_argument("--think", type=float, default=THINK, help=f"bots' and probe's pause per move ({THINK})")
    parser.add_argument("--fresh", action="store_true", help="a new stack for each configuration")
    parser.add_argument("--py-spy", metavar="PATH", help="record engine, bots and lobby with py-spy in each window")
    parser.add_argument("--keep", action="store_true", help="keep the run's folder (logs, data, flame graphs)")
    parser.add_argument("--out", type=Path, help="also write the rows to this JSON file")
    parser.add_argument("--reference", type=int, default=30, help="tables of the configuration gated (30)")
    parser.add_argument("--no-floor", action="store_true", help="do not measure the floor (bench/floor.py)")
    parser.add_argument("--floor-rounds", type=int, default=5, help="rounds of each part of the floor (5)")
    parser.add_argument(
        "--soak", type=float, nargs="?", const=30.0, metavar="MINUTES", help="memory soak only, MINUTES long (30)"
    )
    parser.add_argument("--soak-tables", type=int, default=30, help="bot tables in the memory soak (30)")
    return parser.parse_args(argv)


def stop_at_sigterm(signum: int, frame: object) -> None:
    """SIGTERM (a job's timeout, ``kill``, a supervisor) stops the run as its end does: the exception unwinds it, so
    the spectators, the stack's services and servers are stopped and its folder removed, and the run exits 143."""
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> None:
    signal.signal(signal.SIGTERM, stop_at_sigterm)
    args = parse(argv)
    if args.soak is not None:
        with run_folder(args.keep) as folder:
            run_soak(folder / "soak", args)
        return
    configs = configurations(args)
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    with run_folder(args.keep or bool(args.py_spy)) as folder:
        if args.fresh:
            groups = [[c] for c in configs if c.idle_watchers is None]
            idle = [c for c in configs if c.idle_watchers is not None]
            groups = ([idle] if idle else []) + groups
        else:
            groups = [list(configs)]
        for i, group in enumerate(groups):
            rows += run_stack(folder / f"stack{i}", group, args)
    floor: Floor | None = None
    ref = reference(rows, args.reference)
    if ref is not None and not args.no_floor:
        note(f"the floor, with the P, W and mix of {ref['config']} (the stack is stopped)")
        floor = measure_floor(
            ref["publishes_per_act"],
            ref["watch_messages_per_act"],
            ref.get("mix") or {},
            rounds=args.floor_rounds,
            crowd=crowd_of(rows),
            pace=ref.get("acts_per_s"),
        )
        print(json.dumps(floor.row(), ensure_ascii=False), flush=True)
    summary = assess(rows, floor, args.reference)
    print(json.dumps(summary, ensure_ascii=False), flush=True)
    print()
    print(
        f"Load on one machine ({os.cpu_count()} cores), one engine, one bot runner ({args.think:g} s per move), "
        f"{args.window:g} s windows; the whole run took {time.monotonic() - started:.0f} s"
    )
    print()
    print(markdown(rows))
    print()
    print("CPU per Act by process (ms), against the floor of a move composed with each configuration's P and W:")
    print()
    print(per_act_markdown(rows))
    print()
    print(calls_markdown(rows))
    if floor is not None:
        print()
        print(
            f"The floor's parts (bench/floor.py; P, W and mix of {summary.get('reference')}; measured in "
            f"{floor.seconds:.0f} s with the machine {floor.machine_busy_pct:.0f} % busy, of one core):"
        )
        print()
        print(floor.markdown())
    print()
    for key, title in (
        ("probe_act_ms", "Act p50 / p99 as the probe sees it, with the most tables of bots"),
        ("players_per_core", "seated players per core at human pace (server side)"),
        ("players_per_core_with_spectators", "the same, from the configuration with spectators"),
        ("spectators_per_table", "spectators per table in it"),
        ("engine_ms_per_act_without_spectators", "engine CPU per Act without them, the windows before and after, ms"),
        ("engine_us_per_spectator_message", "engine CPU per spectator message, µs (beyond the mean of those)"),
        ("bare_stream_message_server_us", "a bare streamed message, own connection, server half, µs"),
        ("spectators_us_per_message", "spectators' process CPU per message received, µs"),
        ("bare_stream_message_client_us", "the same, client half, µs"),
        ("unary_act_at_run_pace_us", "a bare Act round trip at the reference run's pace, µs (reported, not gated)"),
        ("unary_act_at_run_pace_over_back_to_back", "its CPU over the floor's back-to-back round trip's"),
        ("floor_at_run_pace_ms", "the floor with its round trips and publishes at that pace, ms (reported, not gated)"),
        ("stack_over_floor_at_run_pace", "the stack's CPU per Act over that floor"),
        ("spectators_shape", "the spectators' shape (bare streams shaped alike, reported, not gated)"),
        ("bare_stream_message_at_spectators_shape_server_us", "a bare streamed message at that shape, server half, µs"),
        ("spectator_message_over_bare_at_spectators_shape", "engine CPU per spectator message / that"),
        ("idle_watchers_engine_cpu_pct", "engine CPU % of an idle game with 0 and with the idle watchers"),
    ):
        if key in summary:
            print(f"- {title}: {summary[key]}")
    print()
    print(f"Gates ({summary.get('reference')}; the memory gates are the soak's, bench/load.py --soak):")
    print(gates_text(summary["gates"]))
    summary["disturbed"] = disturbed(rows, profiled=bool(args.py_spy))
    for warning in summary["disturbed"]:
        print(f"NOT TRUSTED  {warning}")
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "summary": summary}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
