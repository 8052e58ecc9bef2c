"""Requests for every method of every Paiju service, generated from the request messages' descriptors.

Request ``i`` of seed ``s`` is made by its own ``random.Random(f"{s}:{i}")``: the same draws whatever ran before it, in
any order, 16 at a time (`Generator.plan` makes it again; the ids it names are those of the run's world, and an Act
of "the k-th legal action" plays what the game allows when it is sent). A request is either a message or raw bytes:

- a **message**: each field is left unset, given a valid-looking value (the known ids of the world — the tables and
  games the bots play, the fuzzer's own games, a registered player, a tournament —, fresh command ids, legal-looking
  seats, counts and cards), or a hostile one (`HOSTILE_STRINGS`, boundary and huge ints, undefined enum numbers,
  repeated fields of 0..5,000 items, required oneofs unset, two members of a oneof on the wire); how hostile is drawn
  per request, so that some requests are entirely valid-looking and run deep. An Act may name "the k-th legal action
  of this seat", resolved when it is sent from what GetLegalActions last answered for the seat;
- **raw bytes** that are not a message of the type (random bytes, a valid message cut short, wrong wire types,
  invalid UTF-8 in a string, overlong varints, lengths past the end, field number 0) or a message of 1 MB.

Each request comes with its token: a role's token (player at the right game and seat, a player of another game,
spectator, analyst, referee, service, admin, a lobby session), or none, a forged one, an expired one, or garbage in
the authorization header.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message

from paiju.v1 import engine_pb2, lobby_pb2, ratings_pb2, scoring_pb2

SERVICE_FILES = (engine_pb2, lobby_pb2, scoring_pb2, ratings_pb2)
MAX_REQUEST_BYTES = 64 * 1024
"""The servers' request size limit (paiju.platform.serving): gRPC refuses larger requests before the service."""
MEGABYTE = 1024 * 1024

HOSTILE_STRINGS: tuple[str, ...] = (
    "",
    "*",
    ">",
    ".",
    "a.b",
    "paiju.game.*",
    "paiju.game.>",
    "$JS.API.STREAM.INFO.GAMES",
    "_INBOX.x",
    " ",
    "a b",
    " leading",
    "trailing ",
    "\t",
    "\n",
    "\r\n",
    "line\nbreak",
    "\x00",
    "a\x00b",
    "\x00" * 64,
    "\x01\x02\x1b[31m\x7f",
    "\x85",
    "\u200b",  # zero width space (format)
    "\u200d",  # zero width joiner (format)
    "\u200e",  # left-to-right mark
    "\u200f",  # right-to-left mark
    "\u202e" + "evil",  # right-to-left override
    "\u2066isolate\u2069",
    "\ufeff",
    "\u2028",
    "\u2029",
    "\ue000",  # private use
    "\U000f0000",
    "\ufffd",
    "\uffff",
    "😀",
    "👨\u200d👩\u200d👧",
    "🏳️\u200d🌈",
    "𝔭𝔞𝔦𝔧𝔲",
    "ｔａｂｌｅ",
    "аdmin",  # Cyrillic а
    "раypal",  # Cyrillic р and а
    "paypa1",
    "İstanbul",
    "ß",
    "ﬁ",
    "e\u0301",
    "Ⅻ",
    "砸六家",
    "拖拉机" * 30,
    "-",
    "_",
    "-a",
    "a" * 100,
    "a" * 101,
    "a" * 128,
    "a" * 129,
    "a" * 5000,
    "😀" * 5000,
    "x" * 100_000,
    "%s%n%x",
    "{}",
    "{{7*7}}",
    "${jndi:ldap://x}",
    "'; DROP TABLE scoring_games; --",
    "' OR '1'='1",
    "<script>alert(1)</script>",
    "\\",
    "'",
    '"',
    "%00",
    "null",
    "None",
    "true",
    "-1",
    "1e309",
    "NaN",
    "guest-000000",
    "bot-x-0",
    "cover-x-0",
    "gu℮st-1",
    "lobby",
    "engine",
)
"""Strings no id may be and most text fields must refuse, and some they must take."""

CONTROL_CHARS = "".join(chr(c) for c in (*range(32), 127, *range(128, 160)))
NASTY_CHARS = (
    CONTROL_CHARS
    + "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff\u2028\u2029"
    + "\ue000\uf8ff*>. -_/\\:;,'\"`%$#@!?~^&|(){}[]<>"
    + "аеорсхАВЕКМНОРСТХ"  # Cyrillic confusables
    + "😀🀄🂡砸六家拖拉机ß İ"
    + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

INT32_EDGES: tuple[int, ...] = (0, -1, 1, 2, 3, 4, 5, 6, 7, 15, 16, 100, 101, 107, 108, 200, 201, 323, 324, 500, 501)
INT32_EDGES += (600, 601, 1000, 1001, 3600, 3601, 100_000, 100_001, 2**31 - 1, 2**31 - 2, -(2**31), -(2**31) + 1, -1001)
INT64_EDGES = (*INT32_EDGES, 2**53 + 1, 2**62, 2**63 - 1, -(2**63), 2**31, -(2**31) - 1)
UINT32_EDGES = (*(v for v in INT32_EDGES if v >= 0), 2**32 - 1, 2**31)
UINT64_EDGES = (*(v for v in INT64_EDGES if v >= 0), 2**64 - 1, 2**63)
UNDEFINED_ENUMS = (-1, -(2**31), 2**31 - 1, 3, 5, 6, 7, 99, 100, 1000, 109, 200)

WEIGHTS = {"Act": 3.0, "ActStream": 2.0, "GetLegalActions": 3.0}
"""How much more often than the others a method is drawn (the engine's games move only by acts, sent by Act or on
ActStream, which play what GetLegalActions listed)."""
ACTS = ("Act", "ActStream")
"""The methods that act: each request one move (ActStream: one call of Act on a stream)."""


def call_of(method: Method, message: Any) -> Any:
    """The request of the call a request makes: an `ActStream` request's ``act``, else the request itself."""
    return message.act if method.calls and "act" in message.DESCRIPTOR.fields_by_name else message


INT32 = (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32)
INT64 = (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64)
UINT32 = (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32)
UINT64 = (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64)


@dataclass(frozen=True)
class Method:
    """One RPC: ``/paiju.v1.EngineService/Act``."""

    service: str
    """The process that serves it: engine, lobby or scoring."""
    name: str
    path: str
    request: Descriptor
    streaming: bool
    """The server answers a request with a stream (Watch, Replay)."""
    calls: bool = False
    """A stream of calls (ActStream): each request is answered by one message, its call's answer."""

    @property
    def message_class(self) -> type[Message]:
        return message_factory.GetMessageClass(self.request)


def methods() -> list[Method]:
    """Every method of every Paiju service, in the protos' order."""
    found = []
    for module, service, process in zip(
        SERVICE_FILES,
        ("EngineService", "LobbyService", "ScoringService", "RatingsService"),
        ("engine", "lobby", "scoring", "scoring"),  # the scoring process serves RatingsService too
        strict=True,
    ):
        descriptor = module.DESCRIPTOR.services_by_name[service]
        for m in descriptor.methods:
            method: MethodDescriptor = m
            request: Any = method.input_type
            calls = method.client_streaming
            path = f"/{descriptor.full_name}/{method.name}"
            found.append(Method(process, method.name, path, request, method.server_streaming and not calls, calls))
    return found


@dataclass(frozen=True)
class Token:
    """A way to call: the authorization header's value (``None``: no header) and a label for the counts."""

    kind: str
    header: str | None
    game: str | None = None
    seat: int | None = None


@dataclass
class Known:
    """The world's known-good ids and tokens (see `tests.fuzz.world`)."""

    games: list[str]
    tables: list[str]
    tournaments: list[str]
    teams: list[str]
    players: list[str]
    names: list[str]
    password: str
    referee: str
    tokens: list[Token]
    """Every token the fuzzer may send; seat tokens have ``game`` and ``seat``."""
    kinds: dict[str, str] = field(default_factory=dict)
    """Game id -> zlj or tractor."""
    parties: list[str] = field(default_factory=list)

    def seat_tokens(self, game: str) -> list[Token]:
        return [t for t in self.tokens if t.game == game and t.seat is not None]


@dataclass
class Legal:
    """Placeholder for "the ``k``-th legal action GetLegalActions last listed for a seat of the Act's game" (the
    fuzzer resolves it when it sends the Act, and sends it with that seat's token)."""

    k: int


@dataclass
class Planned:
    """One request, ready to send."""

    index: int
    method: Method
    token: Token
    message: Message | None = None
    raw: bytes | None = None
    """Bytes sent as they are (not a message of the type, or too large)."""
    suffix: bytes = b""
    """Bytes appended to the serialised message (a second member of a oneof)."""
    legal: Legal | None = None
    shape: str = "message"
    """What kind of request: message, valid, legal, both-oneofs, raw:<variant>, 1MB."""
    command_ids: tuple[str, ...] = ()

    def payload(self) -> bytes:
        if self.raw is not None:
            return self.raw
        assert self.message is not None
        return self.message.SerializeToString() + self.suffix

    def describe(self, limit: int = 600) -> str:
        """How to see and resend it: its seed index, method, token and content (cut at ``limit`` characters)."""
        if self.raw is not None:
            body = f"raw {len(self.raw)} bytes: {self.raw[:200].hex()}"
        else:
            assert self.message is not None
            body = repr(str(self.message))
            if self.suffix:
                body += f" + suffix {self.suffix[:100].hex()}"
        if len(body) > limit:
            body = body[:limit] + f"... ({len(body)} characters)"
        return f"#{self.index} {self.method.path} [{self.shape}] token={self.token.kind}: {body}"


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _tag(number: int, wire: int) -> bytes:
    return _varint((number << 3) | wire)


def _message_type(f: FieldDescriptor) -> Descriptor:
    assert f.message_type is not None
    return f.message_type


def _synthetic(oneof: Any) -> bool:
    """A proto3 ``optional`` field's hidden oneof (not a real choice)."""
    return len(oneof.fields) == 1 and oneof.name == "_" + oneof.fields[0].name


class Generator:
    """Seeded requests over `methods` for the `Known` world."""

    def __init__(self, known: Known, seed: int) -> None:
        self.known = known
        self.seed = seed
        self.methods = methods()
        self.weights = [WEIGHTS.get(m.name, 1.0) for m in self.methods]

    # --- one request ------------------------------------------------------------------------------------------

    def plan(self, index: int) -> Planned:
        rng = random.Random(f"{self.seed}:{index}")
        method = rng.choices(self.methods, self.weights)[0]
        roll = rng.random()
        if roll < 0.002:
            return self._megabyte(rng, index, method)
        if roll < 0.08:
            return self._raw(rng, index, method)
        hostility = rng.choice((0.0, 0.0, 0.0, 0.03, 0.1, 0.3, 0.6, 1.0))
        command_ids: list[str] = []
        message = self._message(rng, method.request, hostility, depth=0, index=index, command_ids=command_ids)
        planned = Planned(
            index, method, self._token(rng, method, message, hostility), message, command_ids=tuple(command_ids)
        )
        planned.shape = "valid" if hostility == 0.0 else "message"
        if method.name in ACTS and hostility == 0.0 and rng.random() < 0.6:
            planned.legal = Legal(rng.randrange(1000))
            planned.shape = "legal"
            seat_tokens = self.known.seat_tokens(getattr(call_of(method, message), "game_id", ""))
            if seat_tokens:
                planned.token = rng.choice(seat_tokens)
        elif rng.random() < 0.03:
            suffix = self._second_member(rng, message, index)
            if suffix:
                planned.suffix = suffix
                planned.shape = "both-oneofs"
        return planned

    # --- tokens -----------------------------------------------------------------------------------------------

    def _token(self, rng: random.Random, method: Method, message: Message, hostility: float) -> Token:
        """A token for the call: invalid now and then (more often for hostile requests), else one a caller of this
        method would likely hold, else any role's."""
        tokens = self.known.tokens
        if rng.random() < 0.12 + 0.2 * hostility:
            return rng.choice([t for t in tokens if t.kind.startswith("invalid:")])
        valid = [t for t in tokens if not t.kind.startswith("invalid:")]
        call = call_of(method, message)
        game = getattr(call, "game_id", "") if "game_id" in call.DESCRIPTOR.fields_by_name else ""
        if game and rng.random() < 0.6:
            fitting = [t for t in valid if t.game == game]
            if fitting:
                return rng.choice(fitting)
        likely = {
            "lobby": ("session:",),
            "scoring": ("session:", "role:admin", "role:referee"),
            "engine": ("role:service", "role:admin", "role:analyst"),
        }[method.service]
        if rng.random() < 0.6:
            return rng.choice([t for t in valid if t.kind.startswith(likely)])
        return rng.choice(valid)

    # --- messages ---------------------------------------------------------------------------------------------

    def _message(
        self,
        rng: random.Random,
        descriptor: Descriptor,
        hostility: float,
        *,
        depth: int,
        index: int,
        command_ids: list[str],
        context: str = "",
        small: bool = False,
    ) -> Message:
        message = message_factory.GetMessageClass(descriptor)()
        chosen: dict[str, FieldDescriptor | None] = {}
        for f in descriptor.fields:
            oneof = f.containing_oneof
            if oneof is None or _synthetic(oneof):
                self._set(rng, message, f, hostility, depth=depth, index=index, command_ids=command_ids, small=small)
                continue
            if oneof.name not in chosen:  # decided at its first member, once the fields before it are set
                chosen[oneof.name] = self._member(rng, message, oneof, hostility, context)
            if chosen[oneof.name] is not f:
                continue
            sub = self._message(
                rng,
                _message_type(f),
                hostility,
                depth=depth + 1,
                index=index,
                command_ids=command_ids,
                context=context or self._kind_of(message),
                small=small,
            )
            getattr(message, f.name).CopyFrom(sub)
        return message

    def _member(
        self, rng: random.Random, message: Message, oneof: Any, hostility: float, context: str
    ) -> FieldDescriptor | None:
        """The member of ``oneof`` to set (``None``: none, even when the oneof is required): one that fits the game
        the message names, unless the request is hostile."""
        if rng.random() < 0.05 + 0.1 * hostility:
            return None
        members: list[FieldDescriptor] = list(oneof.fields)
        kind = context or self._kind_of(message)
        if kind and rng.random() >= hostility:
            members = [m for m in members if m.name.startswith(kind)] or members
        return rng.choice(members)

    def _kind_of(self, message: Message) -> str:
        """zlj or tractor when the message names a known game (its commands and options then fit it)."""
        game = getattr(message, "game_id", "") if "game_id" in message.DESCRIPTOR.fields_by_name else ""
        if game:
            return self.known.kinds.get(game, "")
        kind = getattr(message, "game", None)
        if kind == engine_pb2.GAME_ZLJ:
            return "zlj"
        if kind == engine_pb2.GAME_TRACTOR:
            return "tractor"
        return ""

    def _set(
        self,
        rng: random.Random,
        message: Message,
        f: FieldDescriptor,
        hostility: float,
        *,
        depth: int,
        index: int,
        command_ids: list[str],
        small: bool = False,
    ) -> None:
        hostile = rng.random() < hostility
        if not hostile and rng.random() < 0.08 and f.name not in ("game_id", "table_id", "command_id"):
            return  # left unset
        if f.is_repeated:
            if hostile:
                count = rng.choice((0, 0, 1, 2, 3, 5, 6, 7, 50, 100, 1000, 5000))
            else:
                count = rng.choice((1, 1, 2, 3, 4, 6)) if f.name != "seats" else rng.choice((1, 4, 6))
            container = getattr(message, f.name)
            if f.type == FieldDescriptor.TYPE_MESSAGE:
                for n in range(min(count, 5000)):
                    item = container.add()
                    if n < 50:
                        item.CopyFrom(
                            self._message(
                                rng,
                                _message_type(f),
                                hostility,
                                depth=depth + 1,
                                index=index,
                                command_ids=command_ids,
                                small=True,
                            )
                        )
                        if f.name == "seats" and not hostile and "seat" in item.DESCRIPTOR.fields_by_name:
                            item.seat = n
                    else:
                        item.CopyFrom(container[n % 50])
                return
            container.extend(
                self._scalar(rng, message, f, hostile and rng.random() < 0.3, index=index, ids=command_ids, small=True)
                for _ in range(count)
            )
            return
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            if depth >= 3:
                return
            sub = self._message(
                rng, _message_type(f), hostility, depth=depth + 1, index=index, command_ids=command_ids, small=small
            )
            getattr(message, f.name).CopyFrom(sub)
            return
        setattr(message, f.name, self._scalar(rng, message, f, hostile, index=index, ids=command_ids, small=small))

    def _scalar(
        self,
        rng: random.Random,
        message: Message,
        f: FieldDescriptor,
        hostile: bool,
        *,
        index: int,
        ids: list[str],
        small: bool = False,
    ) -> Any:
        t = f.type
        if t == FieldDescriptor.TYPE_STRING:
            value = self._hostile_string(rng, small) if hostile else self._string(rng, message, f.name, index)
            if f.name == "command_id":
                ids.append(value)
            return value
        if t == FieldDescriptor.TYPE_BOOL:
            return rng.random() < 0.5
        if t == FieldDescriptor.TYPE_ENUM:
            assert f.enum_type is not None
            return self._enum(rng, f.enum_type, hostile)
        if t == FieldDescriptor.TYPE_BYTES:
            return rng.randbytes(rng.choice((0, 1, 16, 300)))
        if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            return rng.choice((0.0, -1.0, 1e308, float("nan"), float("inf")))
        if hostile:
            edges = INT32_EDGES if t in INT32 else INT64_EDGES if t in INT64 else UINT32_EDGES if t in UINT32 else None
            return rng.choice(edges if edges is not None else UINT64_EDGES)
        return self._int(rng, message, f.name)

    def _enum(self, rng: random.Random, enum: EnumDescriptor, hostile: bool) -> int:
        defined = [v.number for v in enum.values]
        if hostile:
            return rng.choice((*UNDEFINED_ENUMS, 0, *defined))
        return rng.choice([n for n in defined if n != 0] or defined)

    def _hostile_string(self, rng: random.Random, small: bool = False) -> str:
        """A hostile string; ``small``: none of the huge ones (an item of a repeated field)."""
        if rng.random() < 0.7:
            value = rng.choice(HOSTILE_STRINGS)
            return value[:300] if small else value
        length = rng.choice((1, 2, 3, 8, 32, 64, 99, 100, 101, 129, 300))
        return "".join(rng.choice(NASTY_CHARS) for _ in range(length))

    def _string(self, rng: random.Random, message: Message, name: str, index: int) -> str:
        known = self.known

        def pick(values: Sequence[str], made: Callable[[], str]) -> str:
            return rng.choice(values) if values and rng.random() < 0.85 else made()

        def an_id() -> str:
            return f"fz{rng.randrange(16**8):08x}"

        if name == "game_id":
            return pick(known.games, an_id)
        if name == "table_id":
            return pick(known.tables, lambda: "table-" + f"{rng.randrange(16**8):08x}")
        if name == "tournament_id":
            return pick(known.tournaments, lambda: "tour" + f"{rng.randrange(16**12):012x}")
        if name == "team_id":
            return pick(known.teams, lambda: "team" + f"{rng.randrange(16**12):012x}")
        if name in ("player_id", "runner_id"):
            return pick(known.players, an_id) if name == "player_id" else f"fz-runner-{rng.randrange(3)}"
        if name == "party_id":
            return pick(known.parties, lambda: "party-" + f"{rng.randrange(16**16):016x}")
        if name == "offer_id":
            return "offer-" + f"{rng.randrange(16**16):016x}"
        if name == "referee":
            return known.referee
        if name == "command_id":
            if rng.random() < 0.1:
                # reused within one service only (the fuzzer tells a refused call's events by its command id)
                return f"fz-reused-{message.DESCRIPTOR.file.name.rpartition('/')[2]}-{rng.randrange(8)}"
            return f"fz{self.seed}-{index}-{rng.randrange(10**9)}"
        if name in ("name", "player_name"):
            if isinstance(message, lobby_pb2.RegisterRequest):
                if known.names and rng.random() < 0.6:  # taken, or looks like a taken one
                    return self._lookalike(rng, rng.choice(known.names))
                return f"Fz{rng.randrange(36**6):x}"
            if isinstance(
                message, lobby_pb2.LoginRequest | lobby_pb2.SubstituteRequest | lobby_pb2.InviteToPartyRequest
            ):
                return pick(known.names, lambda: f"Fz{rng.randrange(36**6):x}")
            if isinstance(message, scoring_pb2.TeamPlayer):
                return rng.choice(("Ann", "Bo", "李雷", ""))
            return rng.choice(("Fuzz table", "Team Fuzz", "Round robin", "桌子 1"))
        if name == "password":
            if isinstance(message, lobby_pb2.LoginRequest) and rng.random() < 0.5:
                return known.password
            return "".join(rng.choice("abcdefghijkmnpqrstuvwxyz23456789-") for _ in range(18))
        if name == "game":
            return rng.choice(("zlj", "tractor"))
        if name == "page_token":  # the shape of the listing's tokens, and near misses
            return rng.choice(("p1.2.1", "p1.1.99", "p1.0.0", "p1.3.5", "p1.1.", "p0.1.5", "p1.1.18446744073709551616"))
        if name == "strength":
            return rng.choice(("basic", "heuristic", "expert", ""))
        if name in ("text", "decision"):
            return rng.choice(("The other team played out of turn.", "Upheld.\nTable 1 replays deal 3.", ""))
        return rng.choice(("x", "fuzz", "1"))

    @staticmethod
    def _lookalike(rng: random.Random, name: str) -> str:
        """``name``, or a name the lobby must take for it (case, width, confusables, spaces around)."""
        return rng.choice(
            (
                name,
                name.upper(),
                name.replace("a", "а").replace("e", "е").replace("o", "о"),  # Cyrillic а, е, о
                f" {name} ",
                "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in name),  # full width
                name.replace("l", "1").replace("i", "1"),
                name.replace("-", "‐"),  # hyphen U+2010
            )
        )

    def _int(self, rng: random.Random, message: Message, name: str) -> int:
        if name in ("seat", "other_seat", "offender"):
            return rng.randrange(6)
        if name == "count":
            return rng.randrange(1, 108)
        if name in ("round", "appeal"):
            return rng.randrange(1, 4)
        if name == "rounds":
            return rng.randrange(1, 6)
        if name in ("limit", "max_seats"):
            return rng.choice((0, 1, 3, 50, 200))
        if name in ("min_version", "from_version"):
            return rng.choice((0, 0, 0, 0, 0, 0, 1, 2, 5, 10, 40, 100, 100_000))
        if name == "expected_version":
            return rng.choice((0, 1, 5, 30, 100))
        if name == "deals":
            return rng.choice((0, 1, 2, 6))
        if name in ("turn_seconds", "round_minutes"):
            return rng.choice((0, 0, 0, 5, 30))
        if name == "delay_moves":  # a table's spectator delay (0..16) and near misses
            return rng.choice((0, 0, 1, 6, 16, 17))
        if name == "corrected_difference":
            return rng.randrange(-5, 6)
        if name == "cards":
            return rng.randrange(1, 10)
        if name in ("seed", "at"):
            return rng.randrange(2**40)
        return rng.randrange(10)

    def _second_member(self, rng: random.Random, message: Message, index: int) -> bytes:
        """The bytes of another member of one of the message's oneofs (sent after the message: two members on the
        wire; the last one read wins), or of a nested command's oneof."""
        descriptor: Any = message.DESCRIPTOR
        for oneof in descriptor.oneofs:
            if _synthetic(oneof):
                continue
            present = message.WhichOneof(oneof.name)
            others: list[FieldDescriptor] = [f for f in oneof.fields if f.name != present]
            if not others:
                continue
            other = rng.choice(others)
            carrier = message_factory.GetMessageClass(descriptor)()
            sub = self._message(rng, _message_type(other), 0.0, depth=1, index=index, command_ids=[])
            getattr(carrier, other.name).CopyFrom(sub)
            return carrier.SerializeToString()
        return b""

    # --- bytes that are not a request ---------------------------------------------------------------------------

    def _raw(self, rng: random.Random, index: int, method: Method) -> Planned:
        numbers = [f.number for f in method.request.fields] or [1]
        number = rng.choice(numbers)
        valid = self._message(rng, method.request, 0.0, depth=0, index=index, command_ids=[]).SerializeToString()
        variant = rng.choice(
            (
                "random",
                "truncated",
                "wire-type",
                "utf8",
                "varint",
                "length",
                "field-0",
                "group",
                "nested",
                "unknown-field",
                "empty",
            )
        )
        if variant == "random":
            raw = rng.randbytes(rng.choice((1, 2, 3, 7, 16, 64, 300)))
        elif variant == "truncated":
            raw = valid[: rng.randrange(1, len(valid))] if len(valid) > 1 else b"\x0a"
        elif variant == "wire-type":
            f = method.request.fields_by_number[number] if method.request.fields else None
            string_like = f is not None and f.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE)
            if string_like:
                raw = rng.choice((_tag(number, 0) + b"\x01", _tag(number, 5) + b"\x01\x02\x03\x04"))
            else:
                raw = rng.choice((_tag(number, 2) + b"\x03abc", _tag(number, 1) + b"\x01" * 8))
            raw = valid + raw
        elif variant == "utf8":
            raw = valid + _tag(number, 2) + b"\x04\xff\xfe\xc0\x80"
        elif variant == "varint":
            raw = _tag(number, 0) + b"\xff" * 10 + b"\x01"
        elif variant == "length":
            raw = _tag(number, 2) + _varint(rng.choice((1000, 2**31, 2**63))) + b"abc"
        elif variant == "field-0":
            raw = b"\x00\x01" + valid
        elif variant == "group":
            raw = valid + _tag(number, 3) + _tag(number + 1, 0) + b"\x01"
        elif variant == "nested":
            messages = [f.number for f in method.request.fields if f.type == FieldDescriptor.TYPE_MESSAGE]
            target = rng.choice(messages) if messages else number
            junk = rng.randbytes(9)
            raw = valid + _tag(target, 2) + _varint(len(junk)) + junk
        elif variant == "unknown-field":
            raw = valid + _tag(rng.choice((99, 2**29 - 1, 19000)), 2) + b"\x02hi"
        else:
            raw = b""
        token = self._token(rng, method, method.message_class(), 0.0)
        return Planned(index, method, token, raw=raw, shape=f"raw:{variant}")

    def _megabyte(self, rng: random.Random, index: int, method: Method) -> Planned:
        """A request of 1 MB: a string field that long, or unknown bytes when the message has no string."""
        strings = [f for f in method.request.fields if f.type == FieldDescriptor.TYPE_STRING and not f.is_repeated]
        number = strings[0].number if strings else 99
        raw = _tag(number, 2) + _varint(MEGABYTE) + b"a" * MEGABYTE
        token = self._token(rng, method, method.message_class(), 0.0)
        return Planned(index, method, token, raw=raw, shape="1MB")

    def megabyte(self, index: int, method: Method) -> Planned:
        return self._megabyte(random.Random(f"{self.seed}:mb:{index}"), index, method)
