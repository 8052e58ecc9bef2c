"""What a `Watch` stream sends, made once and shared: each event redacted and encoded once per audience, and each
turn once per seat (docs/architecture.md, "Watching a game").

An event reaches a watcher as one of a few *audiences*: full information (analysts and admins, and everyone once
the game is over elsewhere), the spectators (public information), or one seat — and a seat's hidden information goes
only to the player who held that seat when the event was recorded (a substitute watching from version 0 gets the
earlier holder's events as a spectator does). So the bytes of an event are the same for every watcher of one
audience: `Encodings` makes them the first time one asks and hands the same bytes to the others, and the engine's
gRPC serializer passes bytes through as they are (`register`). The same holds for the `Turn` that follows a change:
who may act, the deadline, and for a seat that may act its legal actions, what a 拖拉机 follow owes, its view and the
fair-dealing step it may take — the same for every watcher of that seat, or of the spectators.

A message of the stream is the bytes of a `WatchResponse` holding the envelope, followed by those of one holding
the turn when it goes with it: protobuf reads two serialized messages one after the other as one message with the
fields of both, so the two parts are encoded once each and joined.

A watch that asked for one message per change (`WatchRequest.batched`) gets every event it has to deliver at once in
one message, as entries of `WatchResponse.envelopes`. An entry is the same envelope bytes as `WatchResponse.envelope`
under another field's tag (both length-delimited, the length unchanged), so it is made from the shared encoding by
changing its first byte (`Change`): nothing is encoded again, and the message is the entries joined, followed by the
turn's bytes when they go with it. A message holds at most `MESSAGE_EVENTS` events and `MESSAGE_BYTES` of them.

Only the latest versions of a game are kept (those still in the game's memory, `RECENT`), and all games' encodings
together at most `ENCODINGS_BYTES`: an idle watcher costs nothing, and a crowd of spectators of one table costs one
encoding per event. Of the games that ended, only the `ENDED_KEPT` that ended last keep theirs (their watchers are
sent the end from them), so an engine that plays one match after another does not fill the budget with the
encodings of matches long over.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from google.rpc import status_pb2

from paiju.contract.codec import varint
from paiju.engine.dealing import FairDealing
from paiju.engine.games import RECENT, EndedGames, Game
from paiju.platform.edge import CallStream
from paiju.platform.repository import Recent
from paiju.rules import fair
from paiju.v1 import engine_pb2, engine_pb2_grpc

FULL = -1
"""The audience of full information (analysts and admins): events as stored (command digests removed)."""
SPECTATORS = None
"""The audience of the spectators: public information."""
ENCODINGS_BYTES = 32 << 20
"""The encodings kept for all games together (the least recently watched games' are dropped first)."""
KEPT_VERSIONS = 8
ENDED_KEPT = 64
"""The games over whose encodings are kept, those that ended last (the others' are dropped: see the module)."""
"""The latest versions of a game whose encodings are kept (a watcher further behind has its own made)."""


def audience(game: Game, version: int, seat: int | None, player: str, full: bool) -> int | None:
    """The audience a watcher belongs to for the event of ``version``: `FULL`, ``seat`` while ``player`` held it when
    the event was recorded, else the spectators (``None``)."""
    if full:
        return FULL
    if seat is None or not game.held_at(seat, player, version):
        return SPECTATORS
    return seat


def redacted(game: Game, envelope: engine_pb2.Envelope, event: Any, audience: int | None) -> engine_pb2.Envelope:
    """``envelope`` (whose rules event is ``event``; ``None`` for the engine's own) as ``audience`` may see it. Command
    digests never leave the engine."""
    out = engine_pb2.Envelope()
    out.CopyFrom(envelope)
    out.ClearField("command_digest")
    if audience == FULL or event is None:
        return out
    hidden = game.rules.game.redact(event, audience)
    if hidden is not event:  # an event with nothing hidden from this audience keeps its stored payload
        getattr(out, game.rules.name).CopyFrom(game.rules.events.encode(hidden))
    return out


def event_bytes(game: Game, envelope: engine_pb2.Envelope, event: Any, audience: int | None) -> bytes:
    """A `WatchResponse` holding ``envelope`` as ``audience`` may see it, serialized."""
    return engine_pb2.WatchResponse(envelope=redacted(game, envelope, event, audience)).SerializeToString()


_STEP_KINDS = {
    "contribute": engine_pb2.FAIR_DEALING_STEP_KIND_CONTRIBUTE,
    "commit": engine_pb2.FAIR_DEALING_STEP_KIND_COMMIT,
    "reveal": engine_pb2.FAIR_DEALING_STEP_KIND_REVEAL,
}
"""The fair-dealing step a seat owes (`paiju.rules.fair.owed`), as a turn tells it."""


def turn_of(game: Game, seat: int | None, *, views: bool, contribution_seconds: float | FairDealing) -> engine_pb2.Turn:
    """The turn at ``game``'s version as ``seat`` receives it (``None``: a spectator, or full information): who may act
    and when the turn runs out, and when ``seat`` may act, what it needs to act (its view too with ``views``).
    ``contribution_seconds``: how long fair dealing's windows wait (the engine's `FairDealing`, or one time for
    every window)."""
    common, actions, follow, view, step = _turn_parts(
        game, seat, views=views, head=turn_head(game, contribution_seconds)
    )
    head = engine_pb2.Turn()
    head.CopyFrom(common.turn)
    name = game.rules.name
    encode = game.rules.commands.encode
    for action in actions:
        getattr(head.actions.add(), name).CopyFrom(encode(action))
    head.MergeFrom(follow)
    if view is not None:
        getattr(head, name).CopyFrom(game.rules.codec.encode(view))
    head.MergeFrom(step)
    return head


class TurnHead(NamedTuple):
    """What a turn tells every watcher alike, worked out once per version (`turn_head`): its fields before the legal
    actions (version, the seats that may act, the deadline), as a message and serialized, and the seats that may
    act: those whose move is awaited and those that may still contribute to a fair deal."""

    turn: engine_pb2.Turn
    encoded: bytes
    seats: frozenset[int]
    contributors: tuple[int, ...]


def turn_head(game: Game, contribution_seconds: float | FairDealing) -> TurnHead:
    """The `TurnHead` of ``game`` at its version (``contribution_seconds``: see `turn_of`)."""
    rules = game.rules.game
    state = game.state
    waiting = rules.waiting(state)
    contributors = rules.contributors(state)
    seats = frozenset((*waiting, *contributors))
    turn = engine_pb2.Turn(version=game.version, seats=sorted(seats))
    deadline = _deadline(game, bool(waiting), bool(contributors), contribution_seconds)
    if deadline is not None:
        turn.deadline.CopyFrom(deadline)
    return TurnHead(turn, turn.SerializeToString(), seats, tuple(contributors))


def _turn_parts(
    game: Game, seat: int | None, *, views: bool, head: TurnHead
) -> tuple[TurnHead, Sequence[Any], engine_pb2.Turn, Any | None, engine_pb2.Turn]:
    """`turn_of` in parts, in the order of their fields: the turn's fields before its legal actions (``head``), the
    legal actions as the rules give them, what a follow owes, the seat's view as the rules give it (``None``: none
    sent), and the fair-dealing step."""
    rules = game.rules.game
    state = game.state
    contributors = head.contributors
    follow = engine_pb2.Turn()
    step = engine_pb2.Turn()
    actions: Sequence[Any] = ()
    acts = seat is not None and seat in head.seats
    if acts:
        assert seat is not None
        actions = rules.legal_actions(state, seat)
        game.rules.legal_extras(state, seat, follow)
        owed = fair.owed(state, seat) if seat in contributors else None
        if owed is not None:
            step.fair_step.kind = _STEP_KINDS[owed]
            step.fair_step.shuffle = state.shuffle.number
            if owed == "commit" and seat == state.shuffle.cutter:
                step.fair_step.max_cut = rules.deck_size - 1
    view = rules.view(state, seat) if acts or views else None
    return head, actions, follow, view, step


ACTIONS_KEPT = 1 << 14
"""How many legal actions' encodings `action_bytes` keeps (the oldest forgotten first, `Recent`): a seat's legal
actions are mostly the same from one turn to the next (the same cards stay playable), so each is encoded about once
while its seat's turns last. The actions of every game ever played are far more (a play names its cards, and
fair-dealt decks keep bringing new ones for hours): a bound the live games fill within minutes keeps a long-running
engine's memory level. Over 60,000 moves of 30 fair-dealt tables, 16,384 kept (forgetting a quarter at once) missed
0.59 actions a move, against 0.46 never seen before (65,536 kept: filling for half an hour at that pace); a miss
costs about 3 µs."""
_actions: Recent[tuple[str, Any], bytes] = Recent(ACTIONS_KEPT)
_TURN_ACTION = 4
"""The field number of `Turn.actions`."""
_WATCH_TURN = 3
"""The field number of `WatchResponse.turn`."""


def _tag(field: int) -> bytes:
    return varint(field << 3 | 2)


_WATCH_ENVELOPE = 1
"""The field number of `WatchResponse.envelope`."""
_WATCH_ENVELOPES = 4
"""The field number of `WatchResponse.envelopes`."""
_ACTION_TAG = _tag(_TURN_ACTION)
_COMMAND_TAGS = {field.name: _tag(field.number) for field in engine_pb2.GameCommand.DESCRIPTOR.fields}
_TURN_TAG = _tag(_WATCH_TURN)
_VIEW_TAGS = {field.name: _tag(field.number) for field in engine_pb2.Turn.DESCRIPTOR.oneofs_by_name["view"].fields}
"""The tag of each game's member of `Turn.view`."""


def action_bytes(game: Game, action: Any) -> bytes:
    """One legal action as an entry of `Turn.actions` (its tag, length and `GameCommand`), serialized; made once per
    action while it is kept (`ACTIONS_KEPT`)."""
    name = game.rules.name
    key = (name, action)
    try:
        found = _actions.get(key)
    except TypeError:  # an action that is not hashable: encoded every time
        return _action_entry(name, game.rules.commands.encode(action).SerializeToString())
    if found is None:
        found = _actions[key] = _action_entry(name, game.rules.commands.encode(action).SerializeToString())
    return found


def _action_entry(name: str, command: bytes) -> bytes:
    wrapped = _COMMAND_TAGS[name] + varint(len(command)) + command
    return _ACTION_TAG + varint(len(wrapped)) + wrapped


def _deadline(
    game: Game, waiting: bool, contributing: bool, contribution_seconds: float | FairDealing
) -> Timestamp | None:
    """When the running turn runs out: the turn timer's end while seats' moves are awaited, else the end of a fair
    deal's window while only fair-dealing steps are (the engine takes its own step then)."""
    recorded = game.last_recorded
    if recorded is None:
        return None
    seconds: float = game.state.options.turn_seconds if waiting else 0
    if not seconds and contributing:
        step = game.rules.game.fair_step(game.state)
        if step is not None and step.waits:
            wait = (
                contribution_seconds.wait(game.state, step)
                if isinstance(contribution_seconds, FairDealing)
                else contribution_seconds
            )
            seconds = wait or 0
    if seconds <= 0:
        return None
    at = recorded.seconds * 1_000_000_000 + recorded.nanos + round(seconds * 1e9)
    return Timestamp(seconds=at // 1_000_000_000, nanos=at % 1_000_000_000)


def turn_bytes(
    game: Game,
    seat: int | None,
    *,
    views: bool,
    contribution_seconds: float | FairDealing,
    head: TurnHead | None = None,
) -> bytes:
    """A `WatchResponse` holding the turn (see `turn_of`), serialized: the same bytes as serializing it, put together
    from its parts, each legal action's encoding made once and reused (`action_bytes`). ``head``: the version's
    `turn_head`, when it was worked out already (shared by every watcher's turn)."""
    if head is None:
        head = turn_head(game, contribution_seconds)
    head, actions, follow, view, step = _turn_parts(game, seat, views=views, head=head)
    shown = b""
    if view is not None:  # the view written straight to its bytes (`Codec.wire`), under its member's tag
        written = game.rules.codec.wire(view)
        shown = _VIEW_TAGS[game.rules.name] + varint(len(written)) + written
    body = b"".join(
        (
            head.encoded,
            *(action_bytes(game, action) for action in actions),
            follow.SerializeToString(),
            shown,
            step.SerializeToString(),
        )
    )
    return _TURN_TAG + varint(len(body)) + body


MESSAGE_EVENTS = 256
"""The most events one message of a batched watch holds (`WatchRequest.batched`; the contract says so)."""
MESSAGE_BYTES = 1 << 20
"""The most bytes of events one message of a batched watch holds (the contract says so): a client's gRPC takes
messages of 4 MiB by default, and a backlog after a reconnection can be a whole match."""
_ENVELOPE_TAG = _tag(_WATCH_ENVELOPE)
_ENTRY_TAG = _tag(_WATCH_ENVELOPES)
assert len(_ENVELOPE_TAG) == len(_ENTRY_TAG) == 1


class Change:
    """The events of one message of a batched watch (`WatchRequest.batched`): each event's `WatchResponse` bytes as the
    engine shares them (one `envelope`), added as an entry of `envelopes` — the same bytes under the tag of field 4 —
    until the message is full (`MESSAGE_EVENTS`, `MESSAGE_BYTES`); then `message` joins them, with the turn after the
    last when it goes with it."""

    __slots__ = ("_parts", "count", "size")

    def __init__(self) -> None:
        self._parts: list[bytes | memoryview] = []
        self.count = 0
        """The events held."""
        self.size = 0
        """Their bytes."""

    def fits(self, event: bytes) -> bool:
        """Whether ``event`` (a `WatchResponse` holding one envelope) may join this message: always into an empty one,
        else within the bounds."""
        return not self.count or (self.count < MESSAGE_EVENTS and self.size + len(event) <= MESSAGE_BYTES)

    def add(self, event: bytes) -> bytes | None:
        """Add ``event`` (the bytes of a `WatchResponse` holding one envelope, as `Encodings.event` and `event_bytes`
        make them) as the next entry of `envelopes`. When it does not fit (`fits`), the message held so far is
        returned, to be sent first, and ``event`` begins the next one; else ``None``."""
        if event[:1] != _ENVELOPE_TAG:
            raise ValueError("not a WatchResponse holding one envelope")
        full = None if self.fits(event) else self.message()
        self._parts.append(_ENTRY_TAG)
        self._parts.append(memoryview(event)[1:])
        self.count += 1
        self.size += len(event)
        return full

    def message(self, turn: bytes = b"") -> bytes:
        """The message: the entries held, then ``turn`` (a `WatchResponse` holding the turn, or nothing); the change is
        empty again afterwards."""
        if turn:
            self._parts.append(turn)
        data = b"".join(self._parts)
        self._parts.clear()
        self.count = self.size = 0
        return data


HELD_MOST = 16
"""The most events a watch that waits for its seat's turn (`WatchRequest.until_turn`) holds back: fewer than the
events a game keeps in memory (`paiju.engine.games.RECENT`), so what it then sends is never read from the store."""
assert HELD_MOST < RECENT


def held_back(game: Game, seat: int | None, sent: int, encodings: Encodings) -> bool:
    """Whether the watch of ``seat`` that waits for its turn (`WatchRequest.until_turn`), having sent the events up to
    ``sent``, holds ``game``'s latest change back: the seat may not act at the game's version, the game goes on, and
    the stream would hold no more than `HELD_MOST` events."""
    if seat is None or game.version - sent > HELD_MOST or game.state.phase.value == "ended":
        return False
    return seat not in encodings.head(game).seats


class Encodings:
    """The encodings of the games being watched: each event's once per audience, each turn's once per seat (and
    spectators), shared by every watcher. Bounded: per game the versions still in its memory, in all
    ``budget`` bytes (the least recently used games' first)."""

    def __init__(
        self, contribution_seconds: Callable[[], float | FairDealing] = lambda: 0.0, budget: int = ENCODINGS_BYTES
    ) -> None:
        """``contribution_seconds``: how long fair dealing's windows wait (the engine's `FairDealing`, or one time for
        every window; for the turns' deadlines)."""
        self._contribution_seconds = contribution_seconds
        self._budget = budget
        self._games: OrderedDict[str, _GameEncodings] = OrderedDict()
        self._ended = EndedGames(ENDED_KEPT, self._drop)
        """The games seen ended: the encodings of `ENDED_KEPT` at most are kept."""
        self.bytes = 0
        """The bytes held."""
        self.made = 0
        """Encodings made (each shared by every watcher of its audience)."""
        self.shared = 0
        """Encodings handed out again without being made."""

    def event(self, game: Game, version: int, audience: int | None) -> bytes:
        """The `WatchResponse` bytes of ``game``'s event ``version`` (held in its memory) for ``audience``. An
        audience from which the event hides nothing shares the bytes of the event as stored (most events: a play is
        the same for everyone); for the spectators, whom many watch as, they are kept under their own key too, so
        their next watcher is handed them without the rules being asked again what the event hides from them (a
        seat's audience is mostly one watcher: it asks the rules again, which costs less than keeping them)."""
        key = ("e", version, audience)
        found = self._lookup(game, key, version)
        if found is not None:
            self.shared += 1
            return found
        shown = audience
        if audience != FULL:
            event = game.event(version)
            if event is None or game.rules.game.redact(event, audience) is event:
                shown = FULL
        if shown == audience:  # redacted for this audience: made here (looked for above)
            data = self._event(game, version, audience)
            self.made += 1
            self._store(game, key, version, data)
            return data
        data = self._get(game, ("e", version, FULL), version, lambda: self._event(game, version, FULL))
        if audience is SPECTATORS:
            self._store(game, key, version, data)
        return data

    def turn(self, game: Game, seat: int | None, *, views: bool) -> bytes:
        """The `WatchResponse` bytes of the turn at ``game``'s version for ``seat`` (``None``: the spectators). A
        seat that may not act, and did not ask for views, is told what the spectators are: it shares their bytes."""
        head = self.head(game)
        if seat is not None and not views and seat not in head.seats:
            seat = None
        return self._get(
            game,
            ("t", game.version, seat, views),
            game.version,
            lambda: turn_bytes(game, seat, views=views, contribution_seconds=self._contribution_seconds(), head=head),
        )

    def change(self, game: Game, audience: int | None, seat: int | None, *, views: bool) -> bytes:
        """What a live watch sends with a change: the `event` of ``game``'s version for ``audience`` followed by the
        `turn` for ``seat``. Joined once and kept for the audiences many watch with one key — the spectators, full
        information — so each of their watchers is handed it with one look-up; a seat's watcher, one per audience,
        gets the two joined for it."""
        version = game.version
        if audience is not SPECTATORS and audience != FULL:
            return self.event(game, version, audience) + self.turn(game, seat, views=views)
        return self._get(
            game,
            ("c", version, audience, seat, views),
            version,
            lambda: self.event(game, version, audience) + self.turn(game, seat, views=views),
        )

    def head(self, game: Game) -> TurnHead:
        """`turn_head` of ``game``, worked out once per version for all its watchers."""
        entry = self._games.get(game.game_id)
        if entry is None:
            return turn_head(game, self._contribution_seconds())
        if entry.head is None or entry.head.turn.version != game.version:
            entry.head = turn_head(game, self._contribution_seconds())
        return entry.head

    @staticmethod
    def _event(game: Game, version: int, audience: int | None) -> bytes:
        envelope = game.envelope(version)
        if envelope is None:
            raise ValueError(f"version {version} of {game.game_id} is not in memory")
        return event_bytes(game, envelope, game.event(version), audience)

    def _get(self, game: Game, key: tuple[Any, ...], version: int, make: Callable[[], bytes]) -> bytes:
        found = self._lookup(game, key, version)
        if found is not None:
            self.shared += 1
            return found
        data = make()
        self.made += 1
        self._store(game, key, version, data)
        return data

    def _lookup(self, game: Game, key: tuple[Any, ...], version: int) -> bytes | None:
        """The bytes kept under ``key`` for ``game``'s ``version`` (``None``: none); the game is the most recently
        watched from now on."""
        entry = self._games.get(game.game_id)
        if entry is None:
            return None
        self._games.move_to_end(game.game_id)
        kept = entry.versions.get(version)
        return kept.get(key) if kept is not None else None

    def _store(self, game: Game, key: tuple[Any, ...], version: int, data: bytes) -> None:
        """Keep ``data`` under ``key`` for ``game``'s ``version`` while it is among the latest (`KEPT_VERSIONS`), in
        the budget (the least recently watched games' dropped first)."""
        entry = self._games.get(game.game_id)
        if entry is None:
            entry = self._games[game.game_id] = _GameEncodings()
        else:
            self._games.move_to_end(game.game_id)
        if version > entry.newest:
            entry.newest = version
            self.bytes -= entry.prune(version - KEPT_VERSIONS)
        if version > entry.newest - KEPT_VERSIONS:
            entry.versions.setdefault(version, {})[key] = data
            entry.bytes += len(data)
            self.bytes += len(data)
        while self.bytes > self._budget and len(self._games) > 1:
            _, dropped = self._games.popitem(last=False)
            self.bytes -= dropped.bytes
        self._ended.held(game)

    def forget(self, game_id: str) -> None:
        """Drop a game's encodings (nobody watches it any more)."""
        self._ended.discard(game_id)
        self._drop(game_id)

    def _drop(self, game_id: str) -> None:
        dropped = self._games.pop(game_id, None)
        if dropped is not None:
            self.bytes -= dropped.bytes


class _GameEncodings:
    """One game's encodings by version."""

    __slots__ = ("bytes", "head", "newest", "versions")

    def __init__(self) -> None:
        self.versions: dict[int, dict[tuple[Any, ...], bytes]] = {}
        self.newest = 0
        self.bytes = 0
        self.head: TurnHead | None = None
        """The turn head of the latest version a turn was made at."""

    def prune(self, below: int) -> int:
        """Drop the encodings of versions ``below`` or older; the bytes dropped."""
        dropped = 0
        for version in [v for v in self.versions if v <= below]:
            dropped += sum(len(data) for data in self.versions.pop(version).values())
        self.bytes -= dropped
        return dropped


def _passthrough(serialize: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    def serialized(message: Any) -> bytes:
        return message if isinstance(message, bytes) else serialize(message)

    return serialized


class _Handlers:
    """Stands in for a server to collect the method handlers the generated code registers."""

    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        self.handlers = dict(handlers)


_RESULT_COMMAND_ID = _tag(1)
_RESULT_ACCEPTED = _tag(2)
_RESULT_REFUSED = _tag(3)
"""The tags of `ActStreamResponse`'s fields: the command id, accepted, refused."""


def act_result(
    request: engine_pb2.ActRequest | None, answer: engine_pb2.ActResponse | None, refused: status_pb2.Status | None
) -> bytes:
    """The answer `ActStream` sends to one request, serialized: the command id, and Act's response (serialized once,
    as the `Act` call's would be) or its refusal; the same bytes as serializing the `ActStreamResponse`."""
    command_id = request.command_id.encode() if request is not None else b""
    head = _RESULT_COMMAND_ID + varint(len(command_id)) + command_id if command_id else b""
    if refused is not None:
        body = bytes(refused.SerializeToString())
        return head + _RESULT_REFUSED + varint(len(body)) + body
    body = answer.SerializeToString() if answer is not None else b""
    return head + _RESULT_ACCEPTED + varint(len(body)) + body


def _act_of(request: engine_pb2.ActStreamRequest) -> engine_pb2.ActRequest:
    return request.act


def register(servicer: Any, server: grpc.aio.Server) -> None:
    """Serve ``servicer`` as `EngineService` on ``server`` as the generated `add_EngineServiceServicer_to_server`
    does, but with a Watch serializer that passes bytes through as they are (messages are serialized as usual), and
    `ActStream` served by the edge as a stream of `Act` calls (`paiju.platform.edge.CallStream`)."""
    collected = _Handlers()
    engine_pb2_grpc.add_EngineServiceServicer_to_server(servicer, collected)  # type: ignore[arg-type]
    handlers = collected.handlers
    watch = handlers["Watch"]
    handlers["Watch"] = grpc.unary_stream_rpc_method_handler(
        watch.unary_stream, watch.request_deserializer, _passthrough(watch.response_serializer)
    )
    handlers["ActStream"] = grpc.stream_stream_rpc_method_handler(
        CallStream("Act", handlers["Act"], _act_of, act_result),
        engine_pb2.ActStreamRequest.FromString,
        _passthrough(engine_pb2.ActStreamResponse.SerializeToString),
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_registered_method_handlers(SERVICE, handlers)


SERVICE = "paiju.v1.EngineService"


__all__ = [
    "ENCODINGS_BYTES",
    "FULL",
    "HELD_MOST",
    "MESSAGE_BYTES",
    "MESSAGE_EVENTS",
    "SPECTATORS",
    "Change",
    "Encodings",
    "TurnHead",
    "audience",
    "event_bytes",
    "held_back",
    "redacted",
    "register",
    "turn_bytes",
    "turn_head",
    "turn_of",
]
