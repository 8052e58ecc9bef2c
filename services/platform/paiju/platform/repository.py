"""The aggregate repository: every aggregate of Paiju — the engine's games, the lobby's tables, accounts and name
claims, scoring's tournaments — is an event stream in the event store (docs/architecture.md, "Event sourcing"),
loaded, decided on and appended to by one `Repository`.

`Repository` holds what every kind shares: one bounded cache (`Recent`) kept current by the store's feed, one
retry policy (`CONFLICT_RETRIES`), one idempotency path (a command id already applied is answered as the first
time; reused for another command it is refused, `CommandIdReused`), watchers woken by changes, and reads that
never go back in time. What differs between kinds is passed in as small collaborators; no method of `Repository`
is meant to be overridden:

- a `Fold`, how a kind folds its aggregates: the aggregate with no event (``absent``), the aggregate after stored
  events (``extend``), and after the events an act has just stored, with the act's answer (``appended``);
- an `Envelopes`, how a kind encodes them: the envelopes of a command's events (``encode``, with the command's
  `Stamp`), and what a command id stored already (``stored``: its digest and the answer to give again);
- a ``noun``, how refusals name one of its aggregates ("the game");
- optionally ``carries``, which aggregates the feed keeps current in this process (the engine's replicas share the
  games out by partition), and a `Listener` told when the memory of an aggregate moves (the engine's deadlines and
  live set, the lobby's bot-seat moves).

`Aggregates` is the repository of the lobby and scoring: envelopes of one stream around the events of one pure
core (`CoreFold`, `EventEnvelopes`). The engine's `paiju.engine.games.Games` holds one over game envelopes.

One act, top to bottom — `Repository.execute`, which is the whole of it:

1. the aggregate: the cached one when the feed keeps it current, else read from the store (``fold.extend``);
2. ``envelopes.stored``: a command id already applied is answered as the first time, or refused;
3. ``expected_version`` checked (`StaleVersion`), then the caller's ``decide`` (the pure core) gives the events;
4. ``envelopes.encode`` wraps them in envelopes with the command's stamp, and the store appends them at the
   position they were decided from;
5. ``fold.appended``: the aggregate after them and the answer, without reading them back;
6. the cache remembers it (it never goes back), the listener hears of it (``listener.remembered``) and the
   aggregate's watchers wake.

A lost append (another writer first), and a refusal or "nothing to do" decided on the cache, go back to 1 and read
the store (`CONFLICT_RETRIES` times at most). Meanwhile the feed brings every writer's events in stream order
(``listener.fed``): another writer's are folded into the cached aggregate (``fold.extend``), this process's own are
passed over (its act remembers them), and an aggregate the feed moves while it is not held here is forgotten
(``listener.forgotten``).

Acting decides with the pure core on the aggregate as this process knows it and appends at the position it
decided from: of two replicas deciding on one aggregate at once exactly one wins, and the other reads again and
decides again (two players racing for one seat: one sits, the other is told the seat is taken).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import hashlib
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar, cast

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from paiju.contract.codec import OneofCodec
from paiju.platform.store import Changes, ConcurrencyConflict, EventStore, Position, Recorded
from paiju.platform.store.base import NEW
from paiju.v1 import lobby_events_pb2

S = TypeVar("S")
E = TypeVar("E")
K = TypeVar("K")
V = TypeVar("V")
POLL_SECONDS = 0.05
"""How often a watcher reads the store when no feed keeps the aggregates current."""
RECHECK_SECONDS = (0.02, 0.05, 0.25, 1.0)
"""After a notice of an append to an aggregate the feed does not carry here, how long to wait before reading again
while the store does not show it yet (the notice of a batch can come before its commit)."""
NOTICED_SECONDS = 10.0
"""How long an aggregate the feed does not carry here, kept by notices, is trusted without reading the store (a
notice lost while the connection was down costs at most this long)."""
SCHEMA_VERSION = 1
CONFLICT_RETRIES = 16
"""How many times a command that lost its append to another writer is decided again before the call gives up
(CONTENTION). Each try reads the aggregate anew, so of N writers racing on one aggregate the last gets through by
its N-th try: a game has its players, their bots, the turn timer and the lobby's seat changes; a table its players
and the lobby; 16 covers them with room, and a caller refused beyond that retries the same command id."""
CACHED_AGGREGATES = 20_000
"""Aggregates kept in memory per process and kind (the least recently changed beyond that are read again)."""


class Recent(Generic[K, V]):
    """A mapping that keeps at most ``size`` entries and, with ``weigh``, at most ``budget`` of their total weight
    (an estimate of their bytes): storing an entry makes it the most recent, and beyond either bound the least
    recently stored are forgotten (read again from the store when asked). The most recent entry always stays."""

    def __init__(self, size: int, *, weigh: Callable[[V], int] | None = None, budget: int | None = None) -> None:
        self._size = size
        self._weigh = weigh
        self._budget = budget
        self._weights: dict[K, int] = {}
        self.weight = 0
        """The total weight of the entries (0 without ``weigh``)."""
        self._entries: OrderedDict[K, V] = OrderedDict()
        self.on_evict: Callable[[K], None] | None = None
        """Told of each key forgotten for the size (not of those deleted)."""

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        if self._weigh is not None:
            weight = self._weigh(value)
            self.weight += weight - self._weights.get(key, 0)
            self._weights[key] = weight
        while len(self._entries) > self._size or (
            self._budget is not None and self.weight > self._budget and len(self._entries) > 1
        ):
            key, _ = self._entries.popitem(last=False)
            self.weight -= self._weights.pop(key, 0)
            if self.on_evict is not None:
                self.on_evict(key)

    def __delitem__(self, key: K) -> None:
        del self._entries[key]
        self.weight -= self._weights.pop(key, 0)

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
        self._weights.clear()
        self.weight = 0


@dataclass(slots=True)
class Appending:
    """The appends this process has in flight to one aggregate: their command ids, and the latest version the feed
    delivered of it meanwhile."""

    commands: set[str] = field(default_factory=set)
    fed: int = 0


@dataclass(slots=True)
class Noticed:
    """An aggregate kept by notices: the latest version a notice told of, when it was last read from the store, and
    how to stop the notices."""

    heard: int = 0
    read: float = 0.0
    stop: Callable[[], Awaitable[None]] | None = None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)


def timestamp_of(when: datetime) -> Timestamp:
    """``when`` as a protobuf `Timestamp`: what ``Timestamp.FromDatetime`` makes (a naive datetime read as UTC), by
    arithmetic instead of a time tuple (an envelope is stamped at every append)."""
    delta = when - (_NAIVE_EPOCH if when.tzinfo is None else _EPOCH)
    return Timestamp(seconds=delta.days * 86_400 + delta.seconds, nanos=delta.microseconds * 1_000)


def seconds_of(stamp: Timestamp) -> float:
    """A protobuf `Timestamp` as seconds since the epoch (what ``ToDatetime(tzinfo=UTC).timestamp()`` gives): its
    nanoseconds as one integer, divided once (an integer division, correctly rounded), so a moment before 1970 is the
    same float as datetime's too (``-2 + 0.999996`` is not ``-1.000004``)."""
    return (stamp.seconds * 1_000_000_000 + stamp.nanos) / 1_000_000_000


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
    """An aggregate as read: its state, position, the digest of each command applied and the latest event of each
    kind — not its history (a table that lives for months, its seats leased every few seconds, costs the same to
    append to and to hold on its last day as on its first)."""

    aggregate: str
    state: S
    position: Position = NEW
    commands: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    """Command id -> (index of its first event, the digest of its request). Shared by an aggregate's successive
    snapshots (append-only): an entry at or past a snapshot's version belongs to a later snapshot."""
    latest: dict[type, Any] = field(default_factory=dict)
    """The latest event of each kind (by class)."""

    @property
    def version(self) -> int:
        return self.position.version

    def last(self, kind: type[E]) -> E | None:
        """The latest event of class ``kind``, ``None`` when there was none."""
        found: E | None = self.latest.get(kind)
        return found

    def digest(self, command_id: str) -> bytes | None:
        """The digest ``command_id`` was stored with, when this snapshot holds it."""
        found = self.commands.get(command_id)
        return found[1] if found is not None and found[0] < self.version else None


def digest_of(command: Any) -> bytes:
    """A command's fingerprint, telling a retry from another command under the same id: SHA-256 of its canonical
    form — the class name and each field not at its default, by name, nested values alike. Like a deterministic
    protobuf serialisation (the engine's digest of its commands), it does not change when a field with a default
    is added to the command, so a retry that crosses a deploy is still recognised."""
    text = json.dumps(canonical(command), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).digest()


AFTER_LEGACY_DIGEST = {"after_legacy_digest": True}
"""The metadata of a command's field added after `legacy_digest_of` gave way to `digest_of`
(``field(default=..., metadata=AFTER_LEGACY_DIGEST)``): the legacy digest leaves it out while it is at its default,
as the ``repr`` commands were stored with did not have it."""


def legacy_digest_of(command: Any) -> bytes:
    """The digest commands were stored with before `digest_of` (SHA-256 of the dataclass's ``repr``, `legacy_repr`):
    a retry of a command stored so is still answered as the first time."""
    return hashlib.sha256(legacy_repr(command).encode()).digest()


def legacy_repr(value: Any) -> str:
    """``repr(value)`` as it was when commands were stored with `legacy_digest_of`: a dataclass's fields added since
    (`AFTER_LEGACY_DIGEST`) left out while at their defaults, nested dataclasses alike."""
    if not (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return repr(value)
    shown = []
    for f in dataclasses.fields(value):
        if not f.repr:
            continue
        item = getattr(value, f.name)
        if f.metadata.get("after_legacy_digest") and f.default is not dataclasses.MISSING and item == f.default:
            continue
        shown.append(f"{f.name}={legacy_repr(item)}")
    return f"{type(value).__qualname__}({', '.join(shown)})"


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


A = TypeVar("A", bound="Snapshot")


class Snapshot(Protocol):
    """What the repository needs of an aggregate as loaded: where it stands in the store."""

    @property
    def position(self) -> Position: ...

    @property
    def version(self) -> int: ...


A_contra = TypeVar("A_contra", bound=Snapshot, contravariant=True)


@dataclass(frozen=True, slots=True)
class Stamp:
    """What every envelope of one command carries: its id, who sent it, its request's digest, when it was stored."""

    command_id: str
    actor: str
    digest: bytes
    when: Timestamp


class Fold(Protocol[A]):
    """How a kind folds its aggregates: what the repository holds of one, built from its events."""

    def absent(self, aggregate: str) -> A:
        """An aggregate with no stored event (or raise: the kind has no such thing)."""
        ...

    def extend(self, aggregate: str, snapshot: A | None, tail: Sequence[Recorded]) -> A:
        """``snapshot`` (``None``: not read yet) after the stored events ``tail`` (decoded here)."""
        ...

    def appended(
        self, snapshot: A, events: Sequence[Any], envelopes: Sequence[Any], recorded: Sequence[Recorded]
    ) -> tuple[A, Sequence[Any]]:
        """The aggregate after ``events`` were stored in ``envelopes`` as ``recorded`` (from what the act holds, not
        decoded again), and what acting answers."""
        ...


class Envelopes(Protocol[A_contra]):
    """How a kind encodes its events: the envelopes a command's events are stored in, and what a command stored."""

    def encode(self, snapshot: A_contra, events: Sequence[Any], stamp: Stamp) -> list[Any]:
        """The envelopes that store ``events`` after ``snapshot``, each with the ``stamp`` of their command."""
        ...

    async def stored(self, snapshot: A_contra, command_id: str) -> tuple[bytes, Sequence[Any]] | None:
        """The digest ``command_id`` was stored with and what acting answers for it again; ``None`` when the
        aggregate holds no such command (a kind that keeps only its latest events may read the rest)."""
        ...


class Listener(Protocol[A_contra]):
    """Told when the repository's memory of an aggregate moves; it decides nothing and stores nothing (the engine
    keeps its deadlines and its live set so, the lobby counts bot-seat moves). Called synchronously, in the order of
    the feed and of the acts: each call is cheap or starts a task of its own."""

    def fed(self, recorded: Recorded) -> None:
        """An event of this kind appended by any writer (this process too), as the feed brings it."""
        ...

    def remembered(self, snapshot: A_contra) -> None:
        """The cache moved to ``snapshot`` (an act, the feed or a read)."""
        ...

    def forgotten(self, aggregate: str) -> None:
        """``aggregate`` moved while the cache does not hold it as it now stands (the feed skipped some of its events,
        or brought one of an aggregate not in memory): what was derived from it must be read again."""
        ...


class Unheard:
    """The `Listener` of a kind that needs none."""

    def fed(self, recorded: Recorded) -> None:
        pass

    def remembered(self, snapshot: Any) -> None:
        pass

    def forgotten(self, aggregate: str) -> None:
        pass


UNHEARD = Unheard()


class StaleVersion(Exception):
    """The caller expected the aggregate at a version it is no longer at (``version``: where it is)."""

    def __init__(self, message: str, version: int) -> None:
        super().__init__(message)
        self.version = version


class VersionNotReached(Exception):
    """The aggregate did not reach the version asked for in time (``version``: where it is)."""

    def __init__(self, version: int) -> None:
        super().__init__(f"the aggregate is at version {version}")
        self.version = version


class Repository(Generic[A]):
    """Load, watch and act on the aggregates of one kind over an event store.

    Aggregates are cached as last seen (at most `CACHED_AGGREGATES`). With `follow` started, the store's feed of
    new events (from every replica) keeps cached aggregates current, so reads answer from memory; a read that must
    see at least a given version (``min_version``: one an act answered through another replica) goes to the store
    when the cache is behind. The cache only ever moves forward: an answer never shows an aggregate older than one
    this process answered before. Acting starts from the cached aggregate without asking the store: the append
    names the position it decided from, so a stale cache can only lose the append (a conflict) and never store a
    wrong decision; a conflict, or a refusal decided on a cached aggregate, reads the store and decides again.

    A kind is what it is given (see the module's docstring): its ``fold``, its ``envelopes``, its ``noun``, which
    aggregates the feed ``carries`` here and who listens. Nothing of it is a method to override.
    """

    def __init__(
        self,
        store: EventStore,
        fold: Fold[A],
        envelopes: Envelopes[A],
        *,
        noun: str = "the aggregate",
        carries: Callable[[str], bool] | None = None,
        listener: Listener[A] = UNHEARD,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        on_conflict: Callable[[], None] = lambda: None,
        weigh: Callable[[A], int] | None = None,
        cache_bytes: int | None = None,
    ) -> None:
        """``carries``: whether the feed keeps an aggregate current in this process once it follows (``None``: every
        aggregate; a kind whose replicas share the aggregates out says no for those another replica owns: they are
        read from the store and kept by notices). ``weigh`` and ``cache_bytes``: the cache is bounded by the
        aggregates' estimated bytes too, not only by their number (`CACHED_AGGREGATES`)."""
        self._store = store
        self._fold = fold
        self._envelopes = envelopes
        self.noun = noun
        """How refusals name an aggregate of this kind."""
        self._carries = carries
        self._listener = listener
        self._clock = clock
        self._on_conflict = on_conflict
        self._cache: Recent[str, A] = Recent(CACHED_AGGREGATES, weigh=weigh, budget=cache_bytes)
        self._following = False
        # aggregates being read from the store: the highest stream sequence the feed delivered for each meanwhile
        self._loading: dict[str, list[int]] = {}
        self._changes = Changes()
        self._noticed: dict[str, Noticed] = {}  # cached aggregates the feed does not carry here, kept by notices
        self._appending: dict[str, Appending] = {}
        """The appends this process has in flight, by aggregate: the feed passes over their events, which the act
        itself remembers (they would be decoded and folded twice)."""
        self._cache.on_evict = self._evicted
        self._stopping: set[asyncio.Future[None]] = set()

    def _current(self, aggregate: str) -> bool:
        """Whether the feed keeps ``aggregate`` current here."""
        return self._following and (self._carries is None or self._carries(aggregate))

    # -- reading -----------------------------------------------------------------------------------------------

    @property
    def store(self) -> EventStore:
        return self._store

    @property
    def following(self) -> bool:
        """Whether the store's feed keeps the cache current (`follow` was called)."""
        return self._following

    async def follow(self) -> None:
        """Keep cached aggregates current from the store's feed of appended events (call once, at start)."""
        await self._store.follow(self._observe)
        self._following = True

    def _observe(self, recorded: Recorded) -> None:
        """One event appended by any writer, in stream order: extend the cached aggregate it belongs to."""
        aggregate = recorded.aggregate
        self._listener.fed(recorded)
        loading = self._loading.get(aggregate)
        if loading is not None:
            loading[1] = max(loading[1], recorded.sequence)
        appending = self._appending.get(aggregate)
        if appending is not None:
            appending.fed = max(appending.fed, recorded.version)
            if recorded.command_id in appending.commands:
                return  # this process's own append, which its act remembers
        cached = self._cache.get(aggregate)
        if cached is None:
            self._listener.forgotten(aggregate)
            self._changes.notify(aggregate)  # not in memory: whoever waits for it reads it from the store
            return
        if recorded.version <= cached.version:
            return  # already known (this process stored it)
        if recorded.version == cached.version + 1:
            self.remember(aggregate, self._fold.extend(aggregate, cached, [recorded]))
        else:
            del self._cache[aggregate]  # a gap: the next read loads from the store
            self._listener.forgotten(aggregate)
            self._changes.notify(aggregate)

    def remember(self, aggregate: str, snapshot: A) -> None:
        """Cache ``snapshot`` unless the cache already holds the aggregate at a later version: an act's answer and
        the feed may arrive in either order (the feed can have delivered part of an act's events when the act
        resumes), and the cache never goes back. Also for a kind's own reads of whole logs (the engine's replays)."""
        before = self._cache.get(aggregate)
        if before is not None and before.version >= snapshot.version:
            return
        self._cache[aggregate] = snapshot  # the least recently changed beyond the cache's size are read again
        self._listener.remembered(snapshot)
        self._changes.notify(aggregate)  # only a real change wakes the aggregate's watchers

    def cached(self, aggregate: str) -> A | None:
        """The aggregate as this process holds it in memory (``None``: not held), without reading the store and
        without asking whether it is current."""
        return self._cache.get(aggregate)

    def held(self) -> list[str]:
        """The aggregates held in memory, the least recently changed first."""
        return list(self._cache)

    def reset(self) -> None:
        """Forget every cached aggregate and wake every watcher, which reads its aggregate again from the store:
        for when the feed may have missed events (it was restarted after the connection to the store was lost)."""
        self._cache.clear()
        self._changes.notify_all()

    async def load(self, aggregate: str, min_version: int = 0) -> A:
        """The aggregate: from the cache when the feed keeps it current (and it is at ``min_version`` at least),
        else as stored now."""
        cached = self._cache.get(aggregate)
        if cached is not None and cached.version >= min_version and self._trusted(aggregate, cached):
            return cached
        return await self.refresh(aggregate)

    def _trusted(self, aggregate: str, cached: A) -> bool:
        """Whether the cached ``aggregate`` is current: the feed carries it, or (another replica's) it is kept by
        notices, none of a later version came, and it was read from the store less than `NOTICED_SECONDS` ago."""
        if self._following and (self._carries is None or self._carries(aggregate)):  # `_current`, on every act
            return True
        noticed = self._noticed.get(aggregate)
        return (
            self._following
            and noticed is not None
            and noticed.heard <= cached.version
            and asyncio.get_running_loop().time() - noticed.read < NOTICED_SECONDS
        )

    async def _notice(self, aggregate: str) -> None:
        """Keep ``aggregate`` (not carried by the feed here, just read from the store) by notices of its appends."""
        noticed = self._noticed.get(aggregate)
        if noticed is None:
            noticed = self._noticed[aggregate] = Noticed()

            def heard(version: int) -> None:
                noticed.heard = max(noticed.heard, version)
                cached = self._cache.get(aggregate)
                if cached is None or version > cached.version:
                    self._changes.notify(aggregate)

            noticed.stop = await self._store.notice(aggregate, heard)
        noticed.read = asyncio.get_running_loop().time()

    def forget(self, aggregate: str) -> None:
        """Drop ``aggregate`` from the cache (read from the store when asked again) and stop its notices (a kind
        that starts owning an aggregate it held while another replica did: maybe behind)."""
        if aggregate in self._cache:
            del self._cache[aggregate]
        self._evicted(aggregate)

    def _evicted(self, aggregate: str) -> None:
        noticed = self._noticed.pop(aggregate, None)
        if noticed is not None and noticed.stop is not None:
            task: asyncio.Future[None] = asyncio.ensure_future(noticed.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def refresh(self, aggregate: str) -> A:
        """The aggregate as stored now: the cached one brought up to date with the events after it."""
        loading = self._loading.setdefault(aggregate, [0, 0])
        loading[0] += 1
        try:
            while True:
                cached = self._cache.get(aggregate)
                tail = await self._store.load(aggregate, cached.position if cached is not None else NEW)
                current = self._cache.get(aggregate)
                if current is not cached:
                    continue  # the feed or an act moved it meanwhile: read again from where it is now
                if not tail and cached is None:
                    return self._fold.absent(aggregate)
                snapshot = self._fold.extend(aggregate, cached, tail) if tail else cached
                assert snapshot is not None
                self.remember(aggregate, snapshot)
                if self._following and not self._current(aggregate):
                    await self._notice(aggregate)
                if loading[1] <= snapshot.position.sequence:
                    return snapshot
                # the feed delivered a later event of it while it was being read: read the rest
        finally:
            loading[0] -= 1
            if not loading[0]:
                del self._loading[aggregate]

    async def next_change(self, aggregate: str, version: int) -> A:
        """The aggregate once it is past ``version``: woken by the feed the moment it changes (a watcher waiting
        here costs nothing while nothing happens); without a feed, the store is read every `POLL_SECONDS`. An
        aggregate the feed does not carry here is woken by the store's notice of its appends (`EventStore.notice`)."""
        changed = await self.next_change_unless(aggregate, version, None)
        assert changed is not None
        return changed

    async def next_change_unless(self, aggregate: str, version: int, stop: asyncio.Event | None) -> A | None:
        """`next_change`, or ``None`` once ``stop`` is set (see `wake_all`): how a stream waiting for the next change
        ends when its server begins shutting down, with no task of its own while it waits."""
        if self._following and not self._current(aggregate):
            return await self._next_change_noticed(aggregate, version, stop)
        while True:
            if stop is not None and stop.is_set():
                return None
            cached = self._cache.get(aggregate)
            if cached is not None and cached.version > version:
                return cached
            if not self._following:
                await asyncio.sleep(POLL_SECONDS)
            elif cached is not None:
                await self._changes.wait(aggregate)
                if self._cache.get(aggregate) is not None:
                    continue  # woken by a real change (or a reset, or a stop): look again
            if stop is not None and stop.is_set():
                return None
            snapshot = await self.refresh(aggregate)  # not in memory (evicted, a gap, no feed): read it once
            if snapshot.version > version:
                return snapshot
            if self._following:
                await self._changes.wait(aggregate)

    def wake_all(self) -> None:
        """Wake every watcher waiting for a change (they look again: a `next_change_unless` whose stop is set ends)."""
        self._changes.notify_all()

    async def _next_change_noticed(self, aggregate: str, version: int, stop: asyncio.Event | None) -> A | None:
        """`next_change` for an aggregate the feed does not carry here: woken by the notices of its appends, it reads
        the aggregate from the store; a notice the store does not show yet (a batch not committed) is looked at again
        shortly (`RECHECK_SECONDS`)."""
        rechecks = 0
        while True:
            if stop is not None and stop.is_set():
                return None
            snapshot = await self.load(aggregate)
            if snapshot.version > version:
                return snapshot
            noticed = self._noticed.get(aggregate)
            if noticed is not None and noticed.heard > snapshot.version and rechecks < len(RECHECK_SECONDS):
                await asyncio.sleep(RECHECK_SECONDS[rechecks])
                rechecks += 1
                continue
            rechecks = 0
            await self._changes.wait(aggregate, NOTICED_SECONDS)

    async def reach(self, aggregate: str, min_version: int, timeout: float) -> A:
        """The aggregate at ``min_version`` or later: read from the store when this replica is behind, then waited
        for (the feed) for up to ``timeout`` seconds; `VersionNotReached` when it is not there by then."""
        snapshot = await self.load(aggregate, min_version)
        if snapshot.version >= min_version:
            return snapshot
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while snapshot.version < min_version:
            left = deadline - loop.time()
            if left <= 0:
                raise VersionNotReached(snapshot.version)
            try:
                snapshot = await asyncio.wait_for(self.next_change(aggregate, snapshot.version), left)
            except TimeoutError:
                raise VersionNotReached(snapshot.version) from None
        return snapshot

    # -- acting ------------------------------------------------------------------------------------------------

    async def execute(
        self,
        aggregate: str,
        decide: Callable[[A], Sequence[Any]],
        command_id: str,
        actor: str,
        digest: bytes | Callable[[A], bytes],
        *,
        also: Collection[bytes] = (),
        expected_version: int | None = None,
        fresh: bool = False,
    ) -> tuple[A, Sequence[Any]]:
        """Decide with ``decide`` (the events to store, given the aggregate) and append them, as the command
        ``command_id`` whose request has ``digest``; a command id already applied is answered as the first time.

        ``digest`` may be a function of the aggregate (a digest that depends on its kind, e.g. its game's codec).
        ``also``: other digests a retry of the same request may have been stored with (an earlier digest).
        ``fresh``: decide on the aggregate as stored now, never on the cache (for decisions that must see other
        writers' latest events, such as seat changes). Raises what ``decide`` raises when it refuses (nothing is
        stored), `StaleVersion` when the aggregate is not at ``expected_version``, `CommandIdReused`, and
        `ConcurrencyConflict` after `CONFLICT_RETRIES` lost appends.

        The steps, in this order, are the module's "one act, top to bottom"; each collaborator is called here and
        nowhere else during an act.
        """
        # 1. the aggregate: as cached while the feed keeps it current, else as stored (each retry reads it anew)
        cached = self._cache.get(aggregate)
        snapshot = None if fresh or not self._following or cached is None else cached
        if snapshot is not None and not self._trusted(aggregate, snapshot):
            snapshot = None
        for _ in range(CONFLICT_RETRIES):
            read = snapshot is None
            if snapshot is None:
                snapshot = await self.refresh(aggregate)
            if callable(digest):
                digest = digest(snapshot)
            # 2. a command id already applied: answered as the first time, or refused
            stored = await self._envelopes.stored(snapshot, command_id)
            if stored is not None:
                if stored[0] != digest and stored[0] not in also:
                    raise CommandIdReused(f"command id {command_id!r} was already used for another command")
                return snapshot, stored[1]
            # 3. the expected version, then the decision
            try:
                if expected_version is not None and expected_version != snapshot.version:
                    at = snapshot.version
                    raise StaleVersion(
                        f"{self.noun} is at version {at}, not {expected_version}: reload and decide again", at
                    )
                events = list(decide(snapshot))
            except Exception:
                if read:
                    raise
                snapshot = None  # decided on a cached aggregate that may have moved on: read it and decide again
                continue
            if not events:
                if not read:
                    snapshot = None  # nothing to do, as the cache saw it: make sure from the store
                    continue
                return snapshot, []
            # 4. the envelopes, appended at the position decided from
            envelopes = self._envelopes.encode(
                snapshot, events, Stamp(command_id, actor, digest, timestamp_of(self._clock()))
            )
            data = [e.SerializeToString() for e in envelopes]
            appending = self._appending.get(aggregate)
            if appending is None:
                appending = self._appending[aggregate] = Appending()
            appending.commands.add(command_id)
            try:
                recorded = await self._store.append(aggregate, snapshot.position, command_id, data)
            except ConcurrencyConflict:
                self._on_conflict()
                snapshot = None  # another writer appended first: read again and decide again
                continue
            finally:
                appending.commands.discard(command_id)
                if not appending.commands:
                    self._appending.pop(aggregate, None)
            if [r.data for r in recorded] != data or recorded[0].version != snapshot.version + 1:
                snapshot = None  # stored earlier under this command id: the next round answers from the log
                continue
            # 5. the aggregate after them, and the answer; 6. remembered (the listener hears, the watchers wake)
            after, answer = self._fold.appended(snapshot, events, envelopes, recorded)
            self.remember(aggregate, after)
            cached = self._cache.get(aggregate)
            if appending.fed > after.version and cached is not None and cached.version < appending.fed:
                # the feed brought another writer's later events meanwhile, past the one it passed over: they are
                # not in the cache, so the next read takes the aggregate from the store
                self.forget(aggregate)
                self._listener.forgotten(aggregate)
                self._changes.notify(aggregate)
            return after, answer
        raise ConcurrencyConflict(f"{aggregate}: gave up after {CONFLICT_RETRIES} conflicting appends")


MOVES_KEPT = 1024
"""How many of the last moves' aggregates `Moves` remembers."""


class CoreFold(Generic[S]):
    """The `Fold` of an aggregate decided by a pure core (``initial``, ``evolve``) over envelopes of one stream
    (``envelope``, e.g. `LobbyEnvelope`: metadata around an ``event`` that ``codec`` decodes): a `Loaded` — its
    state, position, command ids and latest event of each kind."""

    def __init__(
        self, envelope: type[Message], codec: OneofCodec, initial: Callable[[], S], evolve: Callable[[S, Any], S]
    ) -> None:
        self._envelope = envelope
        self._codec = codec
        self._initial = initial
        self._evolve = evolve

    def absent(self, aggregate: str) -> Loaded[S]:
        return Loaded(aggregate, self._initial())

    def extend(self, aggregate: str, snapshot: Loaded[S] | None, tail: Sequence[Recorded]) -> Loaded[S]:
        loaded = snapshot or self.absent(aggregate)
        state = loaded.state
        commands = loaded.commands
        latest = dict(loaded.latest)
        for r in tail:
            envelope: Any = upcast(self._envelope.FromString(r.data))
            event = self._codec.decode(envelope.event)
            state = self._evolve(state, event)
            commands.setdefault(envelope.command_id, (r.version - 1, envelope.command_digest))
            latest[type(event)] = event
        return Loaded(aggregate, state, tail[-1].position, commands, latest)

    def appended(
        self, snapshot: Loaded[S], events: Sequence[Any], envelopes: Sequence[Any], recorded: Sequence[Recorded]
    ) -> tuple[Loaded[S], Sequence[Any]]:
        """The aggregate after its core's ``events``, which are the answer."""
        commands = snapshot.commands
        commands.setdefault(recorded[0].command_id, (recorded[0].version - 1, envelopes[0].command_digest))
        latest = dict(snapshot.latest)
        for event in events:
            latest[type(event)] = event
        after = Loaded(
            snapshot.aggregate,
            _evolved(self._evolve, snapshot.state, events),
            recorded[-1].position,
            commands,
            latest,
        )
        return after, events


class EventEnvelopes(Generic[S]):
    """The `Envelopes` of one stream's envelopes (``envelope``: aggregate, version, command id, actor, time, schema
    version, command digest) around one core's events (``codec``). A retried command is answered with no events."""

    def __init__(self, envelope: type[Message], codec: OneofCodec) -> None:
        self._envelope = envelope
        self._codec = codec

    def encode(self, snapshot: Loaded[S], events: Sequence[Any], stamp: Stamp) -> list[Any]:
        envelopes = []
        for i, event in enumerate(events, start=1):
            envelope: Any = self._envelope(
                aggregate=snapshot.aggregate,
                version=snapshot.version + i,
                command_id=stamp.command_id,
                actor=stamp.actor,
                recorded_at=stamp.when,
                schema_version=SCHEMA_VERSION,
                command_digest=stamp.digest,
            )
            envelope.event.CopyFrom(cast(Any, self._codec.encode(event)))
            envelopes.append(envelope)
        return envelopes

    async def stored(self, snapshot: Loaded[S], command_id: str) -> tuple[bytes, Sequence[Any]] | None:
        digest = snapshot.digest(command_id)
        return None if digest is None else (digest, [])


class Moves:
    """The `Listener` that counts moves: the stored envelopes (of type ``envelope``) that ``moves`` names, as the
    feed brings them from any writer, and the aggregates of the latest (`MOVES_KEPT`) — what a long poll waits on
    (the lobby's `LeaseBotSeats`: a bot seat moved). ``moves`` ``None``: nothing counts."""

    def __init__(self, envelope: type[Message], moves: Callable[[Any], bool] | None) -> None:
        self._envelope = envelope
        self._filter = moves
        self.count = 0
        """How many moves the feed has brought."""
        self._moved: collections.deque[str] = collections.deque(maxlen=MOVES_KEPT)
        """The aggregates of the last moves, the latest last."""
        self._move: asyncio.Event | None = None

    def fed(self, recorded: Recorded) -> None:
        if self._filter is None or not self._filter(self._envelope.FromString(recorded.data)):
            return
        self.count += 1
        self._moved.append(recorded.aggregate)
        waiting, self._move = self._move, None
        if waiting is not None:
            waiting.set()

    def remembered(self, snapshot: Any) -> None:
        pass

    def forgotten(self, aggregate: str) -> None:
        pass

    def since(self, moves: int) -> list[str]:
        """The aggregates that moved after the first ``moves`` (the latest `MOVES_KEPT` at most), each once."""
        count = min(self.count - moves, len(self._moved))
        return list(dict.fromkeys(list(self._moved)[len(self._moved) - count :])) if count > 0 else []

    async def after(self, moves: int, timeout: float) -> bool:
        """Wait until the feed brings a move after the first ``moves`` (the `count` read before), at most
        ``timeout`` seconds; whether one came."""
        if self.count > moves:
            return True
        if self._move is None:
            self._move = asyncio.Event()
        waiting = self._move
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await waiting.wait()
        return self.count > moves


class Aggregates(Repository["Loaded[S]"], Generic[S]):
    """The lobby's and scoring's aggregates of one kind: envelopes of one stream (``envelope``, e.g.
    `LobbyEnvelope`) around the events of one pure core (``initial``, ``decide``, ``evolve``) — a `Repository`
    given a `CoreFold`, `EventEnvelopes` and, as its listener, `Moves`; it adds acting with the core's ``decide``
    and waiting for moves, and overrides nothing."""

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
        moves: Callable[[Any], bool] | None = None,
    ) -> None:
        """``moves``: which stored envelopes count as moves that `moved_after` waits for (``None``: none)."""
        self._moves = Moves(envelope, moves)
        super().__init__(
            store,
            CoreFold(envelope, codec, initial, evolve),
            EventEnvelopes(envelope, codec),
            listener=self._moves,
            clock=clock,
        )
        self._decide = decide

    @property
    def moves(self) -> int:
        """How many moves the feed has brought (see `moved_after`)."""
        return self._moves.count

    def moved_since(self, moves: int) -> list[str]:
        """The aggregates that moved after the first ``moves`` (the latest `MOVES_KEPT` at most), each once."""
        return self._moves.since(moves)

    async def moved_after(self, moves: int, timeout: float) -> bool:
        """Wait until the feed brings a move after the first ``moves`` (the value of `moves` read before), at most
        ``timeout`` seconds; whether one came."""
        return await self._moves.after(moves, timeout)

    async def act(
        self, aggregate: str, command: Any, command_id: str, actor: str, *, digest: bytes | None = None
    ) -> tuple[Loaded[S], Sequence[Any]]:
        """Decide ``command`` with the core and append its events (answered with them); a retried command id is
        answered with the aggregate and no events.

        ``digest`` identifies the request (default: the command's own, `digest_of`): give it when the command holds
        what a retry cannot repeat, such as the time it was decided. A retry stored with the digest used before
        `digest_of` (`legacy_digest_of`) is answered the same. Raises whatever the core's ``decide`` raises when it
        refuses (nothing is stored), `CommandIdReused`.
        """
        also = () if digest is not None else (legacy_digest_of(command),)
        return await self.execute(
            aggregate,
            lambda loaded: self._decide(loaded.state, command),
            command_id,
            actor,
            digest or digest_of(command),
            also=also,
        )


def _evolved(evolve: Callable[[Any, Any], Any], state: Any, events: Sequence[Any]) -> Any:
    for event in events:
        state = evolve(state, event)
    return state
