"""Send the generated requests to the running stack, concurrently (at most ``concurrency`` at once), and check every
answer against the contract's error model (errors.proto):

- never UNKNOWN, never INTERNAL;
- every refusal carries, in ``grpc-status-details-bin``, a ``google.rpc.Status`` of the same code and message with a
  ``google.rpc.ErrorInfo`` of domain ``paiju.v1``, a reason errors.proto defines, the status code errors.proto gives
  that reason, a ``BadRequest`` for INVALID_REQUEST and a ``RuleViolation`` for RULE_VIOLATION — except the answers
  gRPC gives itself: RESOURCE_EXHAUSTED for a request over the size limit, DEADLINE_EXCEEDED when the client's own
  deadline passed, CANCELLED for a stream the fuzzer cancelled;
- a refusal's message shows no internals (`INTERNALS`);
- a refused mutating call changed nothing: mutating calls are sent one at a time (reads go on meanwhile), and the last
  sequence of the GAMES, LOBBY and TOURNAMENTS streams is read before and after each; every message a refused call's
  window added is read and must be someone else's (`background`): the bots' moves, the bot runner's seat leases, the
  engine's turn timers, the lobby's own bookkeeping (a finished match, a bot covering an absent player), scoring's
  results and tournament tables — never one with the refused call's command id, never one by any other actor.
"""

from __future__ import annotations

import asyncio
import re
import time
import urllib.parse
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import nats
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2

from paiju.platform.store.messages import decode
from paiju.v1 import engine_pb2, errors_pb2, lobby_events_pb2, tournament_events_pb2

from .generate import MAX_REQUEST_BYTES, Generator, Known, Method, Planned, call_of
from .stack import RUNNER_ID

STATUS_DETAILS = "grpc-status-details-bin"
DOMAIN = "paiju.v1"
ERRORS_PROTO = Path(__file__).absolute().parents[2] / "protos" / "paiju" / "v1" / "errors.proto"
STREAMS: dict[str, Any] = {
    "GAMES": engine_pb2.Envelope,
    "LOBBY": lobby_events_pb2.LobbyEnvelope,
    "TOURNAMENTS": tournament_events_pb2.TournamentEnvelope,
}
READS = {
    "engine": {"GetView", "GetLegalActions", "Watch", "Replay"},
    "lobby": {"Login", "ListTables", "GetTable"},
    "scoring": {"GetTournament", "GetStandings", "GetResultSheet", "GetMatchScore", "GetPlayerStats", "GetLeaderboard"},
}
"""Methods that change nothing; every other method may (Login only checks a password; WatchTable hands a covered
seat back to its player, JoinGame too)."""
INTERNALS = re.compile(
    r"Traceback|nats:|nats\.|asyncpg|Exception|NoneType|File \"|site-packages|\.py\b|/work/|/usr/lib|"
    r"object at 0x|KeyError|IndexError|AttributeError|TypeError|ValueError|StopIteration|AssertionError|"
    r"RuntimeError|StoreError|psycopg|sqlstate|jetstream",
    re.IGNORECASE,
)
"""What a refusal's message must not show."""
STREAM_SECONDS = 0.3
"""How long a server stream is read before the fuzzer cancels it."""
DEADLINE_SECONDS = 10.0
WAITING_DEADLINE_SECONDS = 1.5
"""The deadline of a call that asks for a ``min_version`` (the server waits for it until then)."""
TRAILER_LIMIT = 8 * 1024
"""The metadata a gRPC client reads by default without refusing it (``grpc.max_metadata_size``, the soft limit; past
it the client drops trailers at random, past 16 KiB always): a refusal with larger trailers reaches a default client
as RESOURCE_EXHAUSTED "received metadata size exceeds soft limit", its reason lost."""


def reason_codes() -> dict[str, str]:
    """Each reason errors.proto defines and the status code its comment gives it (``INVALID_REQUEST`` ->
    ``INVALID_ARGUMENT``)."""
    codes: dict[str, str] = {}
    comment: list[str] = []
    for line in ERRORS_PROTO.read_text().splitlines():
        text = line.strip()
        if text.startswith("//"):
            comment.append(text.removeprefix("//").strip())
            continue
        found = re.fullmatch(r"([A-Z_]+) = \d+( \[.*\])?;", text)
        if found and comment:
            code = comment[0].partition(":")[0]
            if code in grpc.StatusCode.__members__:
                codes[found.group(1)] = code
        comment = []
    declared = {v.name for v in errors_pb2.ErrorReason.DESCRIPTOR.values} - {"ERROR_REASON_UNSPECIFIED"}
    assert declared <= set(codes), f"errors.proto: reasons without a status code: {declared - set(codes)}"
    return codes


@dataclass
class Answer:
    """What a call ended with."""

    code: grpc.StatusCode
    message: str = ""
    trailers: tuple[tuple[str, Any], ...] = ()
    responses: list[bytes] = field(default_factory=list)
    cancelled: bool = False
    """The fuzzer cancelled the stream after reading it for a while."""
    client_deadline: bool = False
    """DEADLINE_EXCEEDED with no details: the client's own deadline passed."""


@dataclass
class Report:
    """The run's counts and what was wrong."""

    seed: int
    requests: int = 0
    seconds: float = 0.0
    by_status: Counter[str] = field(default_factory=Counter)
    by_reason: Counter[str] = field(default_factory=Counter)
    by_shape: Counter[str] = field(default_factory=Counter)
    by_method: dict[str, Counter[str]] = field(default_factory=dict)
    method_seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    """Time spent per method: waiting for the domain's turn and the stream checks of mutating calls included."""
    refused_mutations_checked: int = 0
    background_events: int = 0
    problems: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "requests": self.requests,
            "seconds": round(self.seconds, 1),
            "by_status": dict(self.by_status.most_common()),
            "by_reason": dict(self.by_reason.most_common()),
            "refused_mutations_checked": self.refused_mutations_checked,
            "background_events_in_refused_windows": self.background_events,
            "problems": len(self.problems),
        }


@dataclass(frozen=True)
class Stored:
    """One event a stream holds (the events of a message share its sequence)."""

    stream: str
    sequence: int
    subject: str
    actor: str
    command_id: str


ACCOUNTS = ("Register", "Guest", "Logout", "RevokeSessions")
"""The lobby's calls that write accounts (and only accounts: subjects ``paiju.lobby.account-*`` and ``name-*``):
making them, and revoking their sessions."""


def domain(method: Method) -> str:
    """The calls sent one at a time: the mutating calls of one domain (see `background`)."""
    if method.service == "lobby" and method.name in ACCOUNTS:
        return "accounts"
    return method.service


def background(stored: Stored, planned: Planned) -> bool:
    """Whether a message stored while ``planned`` was refused was written by someone else (see the module).

    The mutating calls of one domain (`domain`) are sent one at a time, those of different domains side by side: an
    engine call writes GAMES only (as the token's subject), a lobby call LOBBY tables and GAMES (through the engine,
    as "lobby"), an accounts call (Register, Guest, Logout, RevokeSessions) LOBBY accounts and name claims only, a
    scoring call TOURNAMENTS only. So a message in a window is the call's when it carries the call's command id, or
    when it is where the call's domain writes, by an actor other than the background writers'."""
    if stored.command_id in planned.command_ids:
        return False
    where = domain(planned.method)
    actor, command = stored.actor, stored.command_id
    account = stored.subject.removeprefix("paiju.lobby.").startswith(("account-", "name-"))
    if stored.stream == "GAMES":
        if where in ("scoring", "accounts") or (where == "lobby" and actor != "lobby"):
            return True
        return (
            actor.startswith(("bot-", "cover-"))
            or actor in ("engine", "tournaments")
            or (actor == "lobby" and (where == "engine" or command.startswith("cover:")))
        )
    if stored.stream == "LOBBY":
        if where == "accounts":
            return not account
        if where != "lobby" or account:
            return True
        return actor in (RUNNER_ID, "tournaments") or (
            actor == "lobby" and command.startswith(("finish:", "cover:", "queue:"))
        )
    return where != "scoring" or actor == "scoring"


class Streams:
    """The JetStream streams' last sequences, and the messages between two of them."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._js = client.jetstream(timeout=10)

    @classmethod
    async def connect(cls, url: str) -> Streams:
        return cls(await nats.connect(url, name="paiju-fuzz"))

    async def last(self) -> dict[str, int]:
        infos = await asyncio.gather(*(self._js.stream_info(name) for name in STREAMS))
        return {name: info.state.last_seq for name, info in zip(STREAMS, infos, strict=True)}

    async def between(self, before: dict[str, int], after: dict[str, int]) -> list[Stored]:
        found = []
        for name, envelope in STREAMS.items():
            for sequence in range(before[name] + 1, after[name] + 1):
                msg = await self._js.get_msg(name, seq=sequence)
                for recorded in decode(msg.subject, sequence, msg.headers, msg.data):  # every event of the message
                    decoded: Any = envelope.FromString(recorded.data)
                    found.append(Stored(name, sequence, msg.subject, decoded.actor, decoded.command_id))
        return found

    async def close(self) -> None:
        await self._client.close()


class Fuzzer:
    """Sends requests ``0..count-1`` of ``seed`` and checks each answer; see the module."""

    def __init__(
        self,
        addresses: dict[str, str],
        nats_url: str,
        known: Known,
        seed: int,
        count: int,
        *,
        concurrency: int = 16,
        progress: bool = False,
    ) -> None:
        self.addresses = addresses
        self.nats_url = nats_url
        self.generator = Generator(known, seed)
        self.count = count
        self.concurrency = concurrency
        self.progress = progress
        self.report = Report(seed)
        self.codes = reason_codes()
        self.reasons = set(self.codes)
        self.write_locks = {name: asyncio.Lock() for name in ("engine", "lobby", "accounts", "scoring")}
        """One mutating call of each domain at a time (see `background`)."""
        self.legal: dict[tuple[str, int], tuple[int, list[Any]]] = {}
        self.channels: dict[str, grpc.aio.Channel] = {}
        self.streams: Streams | None = None
        self.reading: set[asyncio.Future[None]] = set()
        """Streams read on after their first message (WatchTable), outside the write lock."""

    # --- running ----------------------------------------------------------------------------------------------

    async def run(self) -> Report:
        options = [
            ("grpc.max_send_message_length", -1),
            ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            # read refusals of any size, and judge their size (`TRAILER_LIMIT`) instead of losing them
            ("grpc.max_metadata_size", 4 * 1024 * 1024),
            ("grpc.absolute_max_metadata_size", 4 * 1024 * 1024),
        ]
        self.channels = {n: grpc.aio.insecure_channel(a, options=options) for n, a in self.addresses.items()}
        self.streams = await Streams.connect(self.nats_url)
        started = time.monotonic()
        try:
            specials = [self.generator.megabyte(-1 - n, m) for n, m in enumerate(self._one_unary_per_service())]
            for planned in specials:
                await self._one(planned)
            indices = iter(range(self.count))
            await asyncio.gather(*(self._worker(indices) for _ in range(self.concurrency)))
            await asyncio.gather(*self.reading)
        finally:
            self.report.seconds = time.monotonic() - started
            for channel in self.channels.values():
                await channel.close()
            await self.streams.close()
        return self.report

    def _one_unary_per_service(self) -> list[Method]:
        found: dict[str, Method] = {}
        for method in self.generator.methods:
            if not method.streaming:
                found.setdefault(method.service, method)
        return list(found.values())

    async def _worker(self, indices: Iterator[int]) -> None:
        for index in indices:
            await self._one(self.generator.plan(index))
            if self.progress and index and index % 5000 == 0:
                print(f"  {index} requests sent, {len(self.report.problems)} problems so far", flush=True)

    async def _one(self, planned: Planned) -> None:
        method = planned.method
        if planned.legal is not None:
            self._resolve_legal(planned)
        mutating = method.name not in READS[method.service]
        began = time.monotonic()
        if mutating:
            async with self.write_locks[domain(method)]:
                assert self.streams is not None
                before = await self.streams.last()
                answer = await self._send(planned)
                refused = answer.code is not grpc.StatusCode.OK and not answer.cancelled and not answer.client_deadline
                if refused:
                    after = await self.streams.last()
                    if after != before:
                        await self._changed(planned, answer, await self.streams.between(before, after))
                    self.report.refused_mutations_checked += 1
        else:
            answer = await self._send(planned)
        self.report.method_seconds[f"{method.service}.{method.name}"] += time.monotonic() - began
        self._record(planned, answer)

    async def _changed(self, planned: Planned, answer: Answer, stored: list[Stored]) -> None:
        culprits = [s for s in stored if not background(s, planned)]
        self.report.background_events += len(stored) - len(culprits)
        if culprits:
            shown = ", ".join(
                f"{s.stream}#{s.sequence} {s.subject} by {s.actor!r} ({s.command_id!r})" for s in culprits
            )
            self._problem(planned, answer, f"refused, yet the streams changed: {shown}")

    # --- one call ---------------------------------------------------------------------------------------------

    async def _send(self, planned: Planned) -> Answer:
        method = planned.method
        channel = self.channels[method.service]
        payload = planned.payload()
        metadata = (("authorization", planned.token.header),) if planned.token.header is not None else ()
        message = planned.message
        waits = message is not None and getattr(message, "min_version", 0) > 0
        timeout = WAITING_DEADLINE_SECONDS if waits else DEADLINE_SECONDS
        started = time.monotonic()
        if method.calls:
            return await self._call_on_stream(planned, channel, payload, metadata, timeout=timeout, started=started)
        if not method.streaming:
            unary: Any = channel.unary_unary(method.path, request_serializer=None, response_deserializer=None)
            try:
                response = await unary(payload, metadata=metadata, timeout=timeout)
            except grpc.aio.AioRpcError as e:
                return self._failed(e, started, timeout)
            self._learn(planned, [response])
            return Answer(grpc.StatusCode.OK, responses=[response])
        streaming: Any = channel.unary_stream(method.path, request_serializer=None, response_deserializer=None)
        call = streaming(payload, metadata=metadata, timeout=timeout)
        responses: list[bytes] = []
        mutating = method.name not in READS[method.service]
        try:
            end = time.monotonic() + STREAM_SECONDS
            while True:
                left = end - time.monotonic()
                if left <= 0 or (mutating and responses):
                    # the stream is read on without the write lock: WatchTable writes only before its first message
                    break
                try:
                    item = await asyncio.wait_for(call.read(), left)
                except TimeoutError:
                    break
                if item is grpc.aio.EOF:
                    code = await call.code()
                    return Answer(code, await call.details() or "", tuple(await call.trailing_metadata() or ()))
                responses.append(item)
        except grpc.aio.AioRpcError as e:
            return self._failed(e, started, timeout)
        if mutating and responses:
            reading = asyncio.ensure_future(self._read_on(planned, call, end, started, timeout))
            self.reading.add(reading)
            reading.add_done_callback(self.reading.discard)
            return Answer(grpc.StatusCode.CANCELLED, cancelled=True, responses=responses)
        call.cancel()
        return Answer(grpc.StatusCode.CANCELLED, cancelled=True, responses=responses)

    async def _call_on_stream(
        self, planned: Planned, channel: Any, payload: bytes, metadata: Any, *, timeout: float, started: float
    ) -> Answer:
        """A stream of calls (ActStream): the request sent as its one call, judged by its answer as a unary call's
        end is — a refusal in the answer (`ActStreamResponse.refused`) is the code, message and status trailer of that
        call — or by the stream's own end when it is refused as a whole (its token)."""
        method: Any = channel.stream_stream(planned.method.path, request_serializer=None, response_deserializer=None)
        call = method(metadata=metadata, timeout=timeout)
        try:
            await call.write(payload)
            raw = await call.read()
            if raw is grpc.aio.EOF:
                return Answer(
                    await call.code(), await call.details() or "", tuple(await call.trailing_metadata() or ())
                )
        except grpc.aio.AioRpcError as e:
            return self._failed(e, started, timeout)
        finally:
            call.cancel()
        answer = engine_pb2.ActStreamResponse.FromString(raw)
        if answer.WhichOneof("result") == "refused":
            refused = answer.refused
            code = next((c for c in grpc.StatusCode if c.value[0] == refused.code), grpc.StatusCode.UNKNOWN)
            return Answer(code, refused.message, ((STATUS_DETAILS, refused.SerializeToString()),))
        return Answer(grpc.StatusCode.OK, responses=[answer.accepted.SerializeToString()])

    async def _read_on(self, planned: Planned, call: Any, end: float, started: float, timeout: float) -> None:
        """Read on a stream already counted (its first message came) until ``end``, then cancel it; an error it ends
        with meanwhile is judged all the same."""
        try:
            while (left := end - time.monotonic()) > 0:
                item = await asyncio.wait_for(call.read(), left)
                if item is grpc.aio.EOF:
                    return
        except TimeoutError:
            pass
        except grpc.aio.AioRpcError as e:
            answer = self._failed(e, started, timeout)
            for problem in self._judge(planned, answer)[1]:
                self._problem(planned, answer, f"{problem} (ending the stream after its first message)")
        call.cancel()

    @staticmethod
    def _failed(error: grpc.aio.AioRpcError, started: float, timeout: float) -> Answer:
        trailers = tuple(error.trailing_metadata() or ())
        own_deadline = (
            error.code() is grpc.StatusCode.DEADLINE_EXCEEDED
            and not any(key == STATUS_DETAILS for key, _ in trailers)
            and time.monotonic() - started >= timeout * 0.9
        )
        return Answer(error.code(), error.details() or "", trailers, client_deadline=own_deadline)

    # --- deep paths: legal actions ----------------------------------------------------------------------------

    def _learn(self, planned: Planned, responses: list[bytes]) -> None:
        """Remember what GetLegalActions answered for a seat (for the Acts that play "the k-th legal action")."""
        token = planned.token
        if planned.method.name != "GetLegalActions" or token.game is None or token.seat is None:
            return
        message = planned.message
        if message is None or getattr(message, "game_id", None) != token.game:
            return
        reply = engine_pb2.GetLegalActionsResponse.FromString(responses[0])
        if reply.actions:
            self.legal[(token.game, token.seat)] = (reply.version, list(reply.actions))
        else:
            self.legal.pop((token.game, token.seat), None)

    def _resolve_legal(self, planned: Planned) -> None:
        """Make the Act "the k-th legal action" of a seat of its game that GetLegalActions listed actions for (the
        token becomes that seat's); left as generated when none is known yet."""
        message, legal = planned.message, planned.legal
        assert legal is not None and message is not None
        act: Any = call_of(planned.method, message)
        seats = sorted(seat for game, seat in self.legal if game == act.game_id)
        if not seats:
            return
        seat = seats[legal.k % len(seats)]
        token = next((t for t in self.generator.known.seat_tokens(act.game_id) if t.seat == seat), None)
        if token is None:
            return
        version, actions = self.legal[(act.game_id, seat)]
        action = actions[legal.k % len(actions)]
        which = action.WhichOneof("command")
        getattr(act, which).CopyFrom(getattr(action, which))
        if legal.k % 3 == 0:
            act.expected_version = version
        else:
            act.ClearField("expected_version")
        act.validate_only = legal.k % 7 == 0
        planned.token = token

    # --- checks -----------------------------------------------------------------------------------------------

    def _record(self, planned: Planned, answer: Answer) -> None:
        report = self.report
        report.requests += 1
        code = answer.code.name
        reason, problems = self._judge(planned, answer)
        label = code
        if answer.cancelled:
            label = "CANCELLED (by the fuzzer, stream read)"
        elif answer.client_deadline:
            label = "DEADLINE_EXCEEDED (client deadline)"
        report.by_status[label] += 1
        if answer.code is not grpc.StatusCode.OK and not answer.cancelled:
            report.by_reason[reason or "(no ErrorInfo)"] += 1
        report.by_shape[planned.shape] += 1
        name = f"{planned.method.service}.{planned.method.name}"
        report.by_method.setdefault(name, Counter())[label] += 1
        if planned.shape == "legal":
            report.by_method.setdefault(f"{name} (a listed legal action)", Counter())[reason or label] += 1
        if planned.method.name == "Watch":
            problems += self._turns(planned, answer.responses)
        for problem in problems:
            self._problem(planned, answer, problem)

    def _turns(self, planned: Planned, responses: list[bytes]) -> list[str]:
        """What is wrong with the turns of a Watch stream's messages (each must decode): a seat's actions, fair step
        or view go only to a player token of that game whose seat may act (a view also to whoever asked for views),
        and the actions are that seat's. A turn that lists the token's actions is learnt like a GetLegalActions."""
        problems = []
        token = planned.token
        asked: Any = planned.message
        if planned.raw is not None or (planned.suffix and planned.message is not None):  # what the server read
            sent = planned.raw if planned.raw is not None else asked.SerializeToString() + planned.suffix
            try:
                asked = engine_pb2.WatchRequest.FromString(sent)
            except DecodeError:
                asked = None
        game_id = getattr(asked, "game_id", None)
        views = bool(getattr(asked, "views", False))
        # a watch told only at its seat's turns is batched too (WatchRequest.until_turn)
        batched = bool(getattr(asked, "batched", False) or getattr(asked, "until_turn", False))
        for data in responses:
            try:
                reply = engine_pb2.WatchResponse.FromString(data)
            except DecodeError:
                problems.append("a Watch message does not decode as a WatchResponse")
                continue
            if reply.HasField("envelope") if batched else bool(reply.envelopes):
                problems.append(f"a Watch message in the form of the other stream (batched {batched})")
            versions = [e.version for e in reply.envelopes]
            if versions != list(range(versions[0], versions[0] + len(versions))) if versions else False:
                problems.append(f"a Watch message's events are not in order without a gap: {versions}")
            if not reply.HasField("turn"):
                continue
            turn = reply.turn
            mine = token.game is not None and token.game == game_id and token.seat is not None
            acts = mine and token.seat in turn.seats
            if (turn.actions or turn.HasField("fair_step")) and not acts:
                problems.append(f"a turn told {token.kind} the actions of a seat that is not its own: {turn.seats}")
            if turn.WhichOneof("view") is not None and not (acts or views):
                problems.append(f"a turn showed {token.kind} a view it did not ask for")
            seats = {_seat_of(action) for action in turn.actions}
            if acts and seats - {token.seat}:
                problems.append(f"a turn listed actions of seats {sorted(seats, key=str)} to seat {token.seat}")
            if acts and turn.actions and token.game is not None and token.seat is not None:
                self.legal[(token.game, token.seat)] = (turn.version, list(turn.actions))
        return problems

    def _problem(self, planned: Planned, answer: Answer, what: str) -> None:
        self.report.problems.append(
            f"{what}\n    answer: {answer.code.name} {answer.message[:300]!r}\n    request: {planned.describe()}"
        )

    def _judge(self, planned: Planned, answer: Answer) -> tuple[str, list[str]]:
        """The refusal's reason, and what is wrong with the answer."""
        code = answer.code
        if code is grpc.StatusCode.OK or answer.cancelled:
            return "", []
        problems = []
        if code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL):
            problems.append(f"answered {code.name} (a fault of the server, see its log)")
        status = None
        for key, value in answer.trailers:
            if key == STATUS_DETAILS:
                status = status_pb2.Status.FromString(value)
        if status is None:
            if code is grpc.StatusCode.RESOURCE_EXHAUSTED and len(planned.payload()) > MAX_REQUEST_BYTES:
                return "", problems  # gRPC's own size limit
            if answer.client_deadline:
                return "", problems
            problems.append("no google.rpc.Status in grpc-status-details-bin")
            return "", problems
        size = len(urllib.parse.quote(answer.message, safe=" ")) + sum(
            4 * ((len(v) + 2) // 3) if k.endswith("-bin") else len(v) for k, v in answer.trailers
        )
        if size > TRAILER_LIMIT:
            problems.append(f"the refusal's trailers are about {size} bytes: a default gRPC client cannot read them")
        info = error_details_pb2.ErrorInfo()
        kinds = set()
        for detail in status.details:
            kinds.add(detail.TypeName())
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                detail.Unpack(info)
        reason = info.reason
        if "google.rpc.ErrorInfo" not in kinds:
            problems.append(f"no ErrorInfo among the details {sorted(kinds)}")
        elif info.domain != DOMAIN:
            problems.append(f"ErrorInfo domain {info.domain!r}")
        elif reason not in self.reasons:
            problems.append(f"reason {reason!r} is not in errors.proto")
        elif self.codes[reason] != code.name:
            problems.append(f"reason {reason} goes with {self.codes[reason]}, answered {code.name}")
        if status.code != code.value[0]:
            problems.append(f"the details' status code {status.code} is not the call's {code.value[0]}")
        if status.message != answer.message:
            problems.append("the details' message is not the call's")
        if reason == "INVALID_REQUEST" and "google.rpc.BadRequest" not in kinds:
            problems.append("INVALID_REQUEST without a BadRequest")
        if reason == "RULE_VIOLATION" and "paiju.v1.RuleViolation" not in kinds:
            problems.append("RULE_VIOLATION without a RuleViolation")
        if reason == "RATE_LIMITED":
            problems.append("RATE_LIMITED with the rate limits off")
        leaked = INTERNALS.search(self._strip_echo(planned, answer.message))
        if leaked:
            problems.append(f"the message shows internals ({leaked.group(0)!r})")
        return reason, problems

    @staticmethod
    def _strip_echo(planned: Planned, text: str) -> str:
        """The message without the request's own strings echoed back (a name the caller sent is not a leak)."""
        if planned.message is None:
            return text
        for value in _strings(planned.message):
            if len(value) >= 3:
                text = text.replace(repr(value)[1:-1], "").replace(value, "")
        return text


def _strings(message: Any) -> Iterator[str]:
    for descriptor, value in message.ListFields():
        if descriptor.type == descriptor.TYPE_STRING:
            yield from value if descriptor.is_repeated else (value,)
        elif descriptor.type == descriptor.TYPE_MESSAGE:
            for item in value if descriptor.is_repeated else (value,):
                yield from _strings(item)


def _seat_of(action: engine_pb2.GameCommand) -> int | None:
    """The seat a listed action is for (its game's command's ``seat``)."""
    which = action.WhichOneof("command")
    if which is None:
        return None
    command = getattr(action, which)
    inner = command.WhichOneof("command")
    return None if inner is None else getattr(getattr(command, inner), "seat", None)
