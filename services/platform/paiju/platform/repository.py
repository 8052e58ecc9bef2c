"""The aggregate repository: aggregates kept as event streams in the event store (docs/architecture.md, "Event
sourcing") — the lobby's tables and accounts, scoring's tournaments — and what every repository of the project
shares, the engine's games included: one retry policy (`CONFLICT_RETRIES`), one bounded cache (`Recent`), one
command digest for dataclass commands (`digest_of`).

Each aggregate is a subject of a stream (LOBBY, TOURNAMENTS) holding envelopes (`LobbyEnvelope`,
`TournamentEnvelope`: the same metadata fields around an ``event``). Acting reads the aggregate from
the store, decides with the pure core and appends at the position it read: of two lobby replicas deciding
on the same table at once exactly one wins, and the other reads again and decides again (so two players
racing for one seat: one sits, the other is told the seat is taken). A command id already applied is
answered with its events (a retry); reused for another command it is refused.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Generic, TypeVar, cast

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from paiju.contract.codec import OneofCodec
from paiju.platform.store import Changes, ConcurrencyConflict, EventStore, Position, Recorded
from paiju.platform.store.base import NEW
from paiju.v1 import lobby_events_pb2

S = TypeVar("S")
K = TypeVar("K")
V = TypeVar("V")
POLL_SECONDS = 0.05
"""How often a watcher reads the store when no feed keeps the aggregates current."""
SCHEMA_VERSION = 1
CONFLICT_RETRIES = 16
"""How many times a command that lost its append to another writer is decided again before the call gives up
(CONTENTION). Each try reads the aggregate anew, so of N writers racing on one aggregate the last gets through by
its N-th try: a game has its players, their bots, the turn timer and the lobby's seat changes; a table its players
and the lobby; 16 covers them with room, and a caller refused beyond that retries the same command id."""
CACHED_AGGREGATES = 20_000
"""Aggregates kept in memory per process and kind (the least recently changed beyond that are read again)."""


class Recent(Generic[K, V]):
    """A mapping that keeps at most ``size`` entries: storing an entry makes it the most recent, and beyond the size
    the least recently stored are forgotten (read again from the store when asked)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def __delitem__(self, key: K) -> None:
        del self._entries[key]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    def values(self) -> list[V]:
        return list(self._entries.values())

    def clear(self) -> None:
        self._entries.clear()


class CommandIdReused(Exception):
    """A command id already names another command of this aggregate."""


class NewerSchema(Exception):
    """A stored envelope was written by a newer Paiju (a schema version this one does not know): it is not read
    rather than misread."""


M = TypeVar("M", bound=Message)


def upcast(envelope: M) -> M:
    """The one place where a stored envelope of an older schema version becomes the current one, for every stream
    (games, lobby, tournaments). Version 1 is the only one so far (0: written before the field existed, the same
    payloads); a change of a payload's meaning adds a version and its step here, so old streams keep replaying."""
    stored: Any = envelope
    if stored.schema_version > SCHEMA_VERSION:
        owner = getattr(stored, "aggregate", "") or getattr(stored, "game_id", "")
        raise NewerSchema(
            f"event {stored.version} of {owner} has schema version {stored.schema_version}; this Paiju reads up to "
            f"{SCHEMA_VERSION}: upgrade it"
        )
    return envelope


@dataclass(frozen=True, slots=True)
class Loaded(Generic[S]):
    """An aggregate as read: its state, position and the digest of each command applied."""

    aggregate: str
    state: S
    position: Position = NEW
    commands: dict[str, bytes] = field(default_factory=dict)
    events: tuple[Any, ...] = ()

    @property
    def version(self) -> int:
        return self.position.version


def digest_of(command: Any) -> bytes:
    """A command's fingerprint, telling a retry from another command under the same id: SHA-256 of its canonical
    form — the class name and each field not at its default, by name, nested values alike. Like a deterministic
    protobuf serialisation (the engine's digest of its commands), it does not change when a field with a default
    is added to the command, so a retry that crosses a deploy is still recognised."""
    text = json.dumps(canonical(command), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).digest()


def legacy_digest_of(command: Any) -> bytes:
    """The digest commands were stored with before `digest_of` (SHA-256 of the dataclass's ``repr``): a retry of a
    command stored so is still answered as the first time."""
    return hashlib.sha256(repr(command).encode()).digest()


def canonical(value: Any) -> Any:
    """``value`` (a dataclass of plain values, enums, tuples, dicts...) as JSON-ready data: a dataclass is its class
    name and its fields not at their defaults, an enum member its class and name."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if f.default is not dataclasses.MISSING and item == f.default:
                continue
            if f.default_factory is not dataclasses.MISSING and item == f.default_factory():
                continue
            fields[f.name] = canonical(item)
        return {"type": type(value).__name__, "fields": fields}
    if isinstance(value, Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((canonical(v) for v in value), key=repr)
    if isinstance(value, dict):
        return [[canonical(k), canonical(v)] for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))]
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a command holds a {type(value).__name__}, which has no canonical form")


class Aggregates(Generic[S]):
    """Load and act on the aggregates of one kind, kept current by the store's feed once `follow` runs."""

    def __init__(
        self,
        store: EventStore,
        codec: OneofCodec,
        initial: Callable[[], S],
        decide: Callable[[S, Any], Sequence[Any]],
        evolve: Callable[[S, Any], S],
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        envelope: type[Message] = lobby_events_pb2.LobbyEnvelope,
    ) -> None:
        self._store = store
        self._envelope = envelope
        self._codec = codec
        self._initial = initial
        self._decide = decide
        self._evolve = evolve
        self._clock = clock
        self._cache: Recent[str, Loaded[S]] = Recent(CACHED_AGGREGATES)
        self._changes = Changes()
        self._following = False

    @property
    def store(self) -> EventStore:
        return self._store

    async def follow(self) -> None:
        await self._store.follow(self._observe)
        self._following = True

    def _observe(self, recorded: Recorded) -> None:
        cached = self._cache.get(recorded.aggregate)
        if cached is None:
            self._changes.notify(recorded.aggregate)  # not in memory: whoever waits for it reads it from the store
            return
        if recorded.version <= cached.version:
            return
        if recorded.version == cached.version + 1:
            self._remember(self._extend(cached, [recorded]))
        else:
            del self._cache[recorded.aggregate]
            self._changes.notify(recorded.aggregate)

    def _remember(self, loaded: Loaded[S]) -> None:
        before = self._cache.get(loaded.aggregate)
        self._cache[loaded.aggregate] = loaded
        if before is None or loaded.version > before.version:
            self._changes.notify(loaded.aggregate)  # only a real change wakes the aggregate's watchers

    async def next_change(self, aggregate: str, version: int) -> Loaded[S]:
        """The aggregate once it is past ``version``: woken by the feed the moment it changes (a watcher waiting
        here costs nothing while nothing happens); without a feed, the store is read every `POLL_SECONDS`."""
        while True:
            cached = self._cache.get(aggregate)
            if cached is not None and cached.version > version:
                return cached
            if not self._following:
                await asyncio.sleep(POLL_SECONDS)
            elif cached is not None:
                await self._changes.wait(aggregate)
                if self._cache.get(aggregate) is not None:
                    continue
            loaded = await self.refresh(aggregate)
            if loaded.version > version:
                return loaded
            if self._following:
                await self._changes.wait(aggregate)

    def reset(self) -> None:
        """Forget every cached aggregate and wake every watcher (the feed may have missed events)."""
        self._cache.clear()
        self._changes.notify_all()

    def _extend(self, loaded: Loaded[S], tail: Sequence[Recorded]) -> Loaded[S]:
        state = loaded.state
        commands = dict(loaded.commands)
        events = list(loaded.events)
        for r in tail:
            envelope: Any = upcast(self._envelope.FromString(r.data))
            event = self._codec.decode(envelope.event)
            state = self._evolve(state, event)
            commands.setdefault(envelope.command_id, envelope.command_digest)
            events.append(event)
        return Loaded(loaded.aggregate, state, tail[-1].position, commands, tuple(events))

    async def load(self, aggregate: str) -> Loaded[S]:
        """The aggregate as this replica knows it (kept current by the feed), read from the store otherwise."""
        cached = self._cache.get(aggregate)
        if self._following and cached is not None:
            return cached
        return await self.refresh(aggregate)

    async def refresh(self, aggregate: str) -> Loaded[S]:
        """The aggregate as stored now (an aggregate without events is the initial state at version 0)."""
        cached = self._cache.get(aggregate) or Loaded(aggregate, self._initial())
        tail = await self._store.load(aggregate, cached.position)
        loaded = self._extend(cached, tail) if tail else cached
        if loaded.version:
            self._remember(loaded)
        return loaded

    async def act(
        self, aggregate: str, command: Any, command_id: str, actor: str, *, digest: bytes | None = None
    ) -> tuple[Loaded[S], list[Any]]:
        """Decide ``command`` and append its events; a retried command id answers with the state, no events.

        ``digest`` identifies the request (default: the command's own): give it when the command holds what a
        retry cannot repeat, such as the time it was decided.
        Raises whatever the core's ``decide`` raises when it refuses (nothing is stored), `CommandIdReused`.
        """
        given = digest is not None
        digest = digest or digest_of(command)
        for _ in range(CONFLICT_RETRIES):
            loaded = await self.refresh(aggregate)
            done = loaded.commands.get(command_id)
            if done is not None:
                if done != digest and (given or done != legacy_digest_of(command)):
                    raise CommandIdReused(f"command id {command_id!r} was already used for another command")
                return loaded, []
            events = list(self._decide(loaded.state, command))
            if not events:
                return loaded, []
            when = Timestamp()
            when.FromDatetime(self._clock())
            data = []
            for i, event in enumerate(events, start=1):
                envelope: Any = self._envelope(
                    aggregate=aggregate,
                    version=loaded.version + i,
                    command_id=command_id,
                    actor=actor,
                    recorded_at=when,
                    schema_version=SCHEMA_VERSION,
                    command_digest=digest,
                )
                envelope.event.CopyFrom(cast(Any, self._codec.encode(event)))
                data.append(envelope.SerializeToString())
            try:
                recorded = await self._store.append(aggregate, loaded.position, command_id, data)
            except ConcurrencyConflict:
                continue  # another replica decided first: read again and decide again
            if [r.data for r in recorded] != data:
                continue  # stored earlier under this command id: the next round answers from the log
            after = self._extend(loaded, recorded)
            self._remember(after)
            return after, events
        raise ConcurrencyConflict(f"{aggregate}: gave up after {CONFLICT_RETRIES} conflicting appends")
