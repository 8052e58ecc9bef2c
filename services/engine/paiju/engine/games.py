"""Games as event-sourced aggregates: load the log, decide, append — the heart of the engine service.

A game is one match at one table, stored as the subject of its id. Each stored event is an `Envelope`
(game id, version, command id, actor, engine-recorded time, schema version, payload). Acting loads the
game, refuses a command id already used by a different command, returns the stored result of a command
id already applied (a retry), decides with the game's rules core and appends with the position it loaded;
when another writer appended first it reloads and decides again, so whichever engine replica serves a
game, exactly one decision per position is stored (docs/architecture.md, "Optimistic concurrency and exact retries").

The core decides; time comes from the injected clock and is recorded in the envelope, never read by
the rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from paiju.contract.codec import Codec, OneofCodec
from paiju.contract.games import TRACTOR as TRACTOR_CODEC
from paiju.contract.games import TRACTOR_COMMANDS, TRACTOR_EVENTS, ZLJ_COMMANDS, ZLJ_EVENTS
from paiju.contract.games import ZLJ as ZLJ_CODEC
from paiju.engine.metrics import ACTIVE_GAMES, CONFLICTS
from paiju.platform.repository import CACHED_AGGREGATES, CONFLICT_RETRIES, SCHEMA_VERSION, Recent, upcast
from paiju.platform.store import Changes, ConcurrencyConflict, EventStore, Position, Recorded
from paiju.rules import registry
from paiju.rules.errors import RuleError
from paiju.rules.registry import GameRules
from paiju.v1 import engine_pb2

POLL_SECONDS = 0.05
"""How often a watch reads the store when no feed keeps the games current (tests and tools without a feed)."""
CACHED_GAMES = CACHED_AGGREGATES
"""Games kept in memory per engine process (the least recently changed beyond that are read again when asked)."""


@dataclass(frozen=True, slots=True)
class Rules:
    """One game's rules (`paiju.rules.registry`) and its codecs in the contract."""

    game: GameRules
    codec: Codec
    events: OneofCodec
    commands: OneofCodec

    @property
    def name(self) -> str:
        return self.game.name

    @property
    def new_state(self) -> Callable[[], Any]:
        return self.game.new_state

    @property
    def decide(self) -> Callable[[Any, Any], Sequence[Any]]:
        return self.game.decide

    @property
    def evolve(self) -> Callable[[Any, Any], Any]:
        return self.game.evolve


ZLJ = Rules(registry.ZLJ, ZLJ_CODEC, ZLJ_EVENTS, ZLJ_COMMANDS)
TRACTOR = Rules(registry.TRACTOR, TRACTOR_CODEC, TRACTOR_EVENTS, TRACTOR_COMMANDS)
RULES = {rules.name: rules for rules in (ZLJ, TRACTOR)}
assert set(RULES) == set(registry.GAMES), "every game of the registry has its codecs"


class GameNotFound(Exception):
    """No game has this id."""


class CommandIdReused(Exception):
    """A command id already names a different command of this game."""


class VersionNotReached(Exception):
    """The game did not reach the version asked for in time (``version``: where it is)."""

    def __init__(self, version: int) -> None:
        super().__init__(f"the game is at version {version}")
        self.version = version


class StaleVersion(Exception):
    """The client expected the game at a version it is no longer at (``version``: where it is)."""

    def __init__(self, message: str, version: int) -> None:
        super().__init__(message)
        self.version = version


@dataclass(frozen=True, slots=True)
class Game:
    """A game as loaded: its rules, state, position in the store and envelopes (the stored bytes themselves are
    not kept: the envelopes say everything, each command id among them)."""

    game_id: str
    rules: Rules
    state: Any
    position: Position
    envelopes: tuple[engine_pb2.Envelope, ...]
    events: tuple[Any, ...]
    """Each envelope's rules event, decoded once (``None`` for the engine's own events, e.g. seats)."""
    commands: dict[str, int]
    """Command id -> index of its first event. Shared by a game's successive snapshots (append-only): an
    entry at or past a snapshot's version belongs to a later snapshot."""
    seats: tuple[str, ...] = ()
    """The player id in each seat (``()``: a game created without seat assignments, e.g. for development)."""

    @property
    def version(self) -> int:
        return self.position.version

    def extended(
        self,
        state: Any,
        envelopes: Sequence[engine_pb2.Envelope],
        events: Sequence[Any],
        recorded: Sequence[Recorded],
        seats: tuple[str, ...] | None = None,
    ) -> Game:
        """This game after ``recorded`` (whose envelopes are ``envelopes``) brought it to ``state``."""
        for i, r in enumerate(recorded, start=self.version):
            self.commands.setdefault(r.command_id, i)
        return Game(
            self.game_id,
            self.rules,
            state,
            recorded[-1].position,
            (*self.envelopes, *envelopes),
            (*self.events, *events),
            self.commands,
            self.seats if seats is None else seats,
        )

    def holds(self, seat: int, player: str) -> bool:
        """Whether ``player`` sits in ``seat``, a seat of this game (any player may, in a game created without
        seat assignments)."""
        return 0 <= seat < seat_count(self.rules) and (not self.seats or self.seats[seat] == player)

    def held(self, seat: int, player: str) -> list[bool]:
        """For each version, whether ``player`` held ``seat`` when it was stored: a seat's hidden information goes
        to whoever held the seat then, never to a later holder (a swap, a substitute). The events stored with the
        game's creation come before its first seat assignment and belong to its first holders; in a game created
        without seat assignments any player holds every seat."""
        count = seat_count(self.rules)
        seats: tuple[str, ...] = ()
        holders: list[tuple[str, ...]] = []
        for envelope in self.envelopes:
            if envelope.WhichOneof("payload") == "seats_assigned":
                seats = assigned(seats, envelope.seats_assigned, count)
            holders.append(seats)
        first = next((s for s in holders if s), ())
        return [0 <= seat < count and (not (s or first) or (s or first)[seat] == player) for s in holders]


def _extend(game_id: str, game: Game | None, tail: Sequence[Recorded]) -> Game:
    """``game`` (``None``: a game not seen yet) after the stored events ``tail``."""
    envelopes = [upcast(engine_pb2.Envelope.FromString(r.data)) for r in tail]
    if game is None:
        rules = next(RULES[w] for e in envelopes if (w := e.WhichOneof("payload")) in RULES)
        game = Game(game_id, rules, rules.new_state(), Position(), (), (), {})
    rules, state, seats = game.rules, game.state, game.seats
    events: list[Any] = []
    for envelope in envelopes:
        which = envelope.WhichOneof("payload")
        if which == "seats_assigned":
            seats = assigned(seats, envelope.seats_assigned, seat_count(rules))
            events.append(None)
            continue
        if which != rules.name:
            raise ValueError(f"event {envelope.version} of {game_id} is a {which} event in a {rules.name} game")
        event = rules.events.decode(getattr(envelope, which))
        state = rules.evolve(state, event)
        events.append(event)
    return game.extended(state, envelopes, events, tail, seats)


def seat_count(rules: Rules) -> int:
    return rules.game.seats


def assigned(seats: tuple[str, ...], change: engine_pb2.SeatsAssigned, count: int) -> tuple[str, ...]:
    """Who sits where after ``change``."""
    players = list(seats) if seats else [""] * count
    for assignment in change.seats:
        players[assignment.seat] = assignment.player_id
    return tuple(players)


def between_deals(game: Game) -> bool:
    """Whether the game stands between deals (or before the first): when players may swap or be substituted."""
    return game.state.phase.value in game.rules.game.between_deal_phases


class Games:
    """Load, create and act on games over an event store.

    Games are cached as they were last seen. With `follow` started, the store's feed of new events (from every
    engine replica) keeps the cached games current, so reads answer from memory; a read that must see at least
    a given version (``min_version``, e.g. the one an act answered through another replica) goes to the store
    when the cache is behind. Acting starts from the cached game without asking the store: the append names the
    position it decided from, so a stale cache can only lose the append (a conflict) and never store a wrong
    decision; a conflict, or a rejection decided on a cached game, reloads from the store and decides again.
    """

    def __init__(self, store: EventStore, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._store = store
        self._clock = clock
        self._cache: Recent[str, Game] = Recent(CACHED_GAMES)
        self._active: set[str] = set()  # games that may still need the engine (turn timers), not seen ended
        self._following = False
        # games being loaded from the store: the highest stream sequence the feed delivered for each meanwhile
        self._loading: dict[str, list[int]] = {}
        self._changes = Changes()

    @property
    def store(self) -> EventStore:
        return self._store

    async def follow(self) -> None:
        """Keep cached games current from the store's feed of appended events (call once, at start)."""
        await self._store.follow(self._observe)
        self._following = True
        self._active.update(await self._store.aggregates())

    async def active(self) -> list[str]:
        """The games that may still be running: those seen by the feed (and at start) and not seen ended.
        Without the feed, every game of the store."""
        if not self._following:
            return await self._store.aggregates()
        return sorted(self._active)

    def _observe(self, recorded: Recorded) -> None:
        """One event appended by any writer, in stream order: extend the cached game it belongs to."""
        game_id = recorded.aggregate
        self._active.add(game_id)
        loading = self._loading.get(game_id)
        if loading is not None:
            loading[1] = max(loading[1], recorded.sequence)
        cached = self._cache.get(game_id)
        if cached is None:
            self._changes.notify(game_id)  # not in memory: whoever waits for it reads it from the store
            return
        if recorded.version <= cached.version:
            return  # already known (this process stored it)
        if recorded.version == cached.version + 1:
            self._remember(_extend(game_id, cached, [recorded]))
        else:
            del self._cache[game_id]  # a gap: the next read loads from the store
            self._changes.notify(game_id)

    def _remember(self, game: Game) -> None:
        before = self._cache.get(game.game_id)
        self._cache[game.game_id] = game  # the least recently changed games beyond the cache's size are read again
        if game.state.phase.value == "ended":
            self._active.discard(game.game_id)
        if before is None or game.version > before.version:
            self._changes.notify(game.game_id)  # only a real change wakes the game's watchers

    async def next_change(self, game_id: str, version: int) -> Game:
        """The game once it is past ``version``: woken by the feed the moment the game moves (a watch waiting here
        costs nothing while nothing happens); without a feed, the store is read every `POLL_SECONDS`."""
        while True:
            cached = self._cache.get(game_id)
            if cached is not None and cached.version > version:
                return cached
            if not self._following:
                await asyncio.sleep(POLL_SECONDS)
            elif cached is not None:
                await self._changes.wait(game_id)
                if self._cache.get(game_id) is not None:
                    continue  # woken by a real change (or a reset): look again
            game = await self.refresh(game_id)  # not in memory (evicted, a gap, no feed): read it once
            if game.version > version:
                return game
            if self._following:
                await self._changes.wait(game_id)

    async def reach(self, game_id: str, min_version: int, timeout: float) -> Game:
        """The game at ``min_version`` or later: read from the store when this replica is behind, then waited for
        (the feed) for up to ``timeout`` seconds; `VersionNotReached` when it is not there by then."""
        game = await self.load(game_id, min_version)
        if game.version >= min_version:
            return game
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while game.version < min_version:
            left = deadline - loop.time()
            if left <= 0:
                raise VersionNotReached(game.version)
            try:
                game = await asyncio.wait_for(self.next_change(game_id, game.version), left)
            except TimeoutError:
                raise VersionNotReached(game.version) from None
        return game

    async def check(
        self,
        game_id: str,
        command: Any,
        *,
        expected_version: int | None = None,
        prepare: Callable[[Any, Game], Any] | None = None,
    ) -> Game:
        """Decide ``command`` on the game as it is now and store nothing (a dry run): the game, or the core's
        `RuleError` / `StaleVersion` that acting would raise."""
        game = await self.refresh(game_id)
        if expected_version is not None and expected_version != game.version:
            raise StaleVersion(
                f"the game is at version {game.version}, not {expected_version}: reload and decide again",
                game.version,
            )
        if prepare is not None:
            command = prepare(command, game)
        game.rules.decide(game.state, command)
        return game

    def reset(self) -> None:
        """Forget every cached game and wake every watcher, which reads its game again from the store: for when
        the feed may have missed events (it was restarted after the connection to the store was lost)."""
        self._cache.clear()
        self._changes.notify_all()

    async def load(self, game_id: str, min_version: int = 0) -> Game:
        """The game: from the cache when the feed keeps it current (and it is at ``min_version`` at least),
        else as stored now."""
        cached = self._cache.get(game_id)
        if self._following and cached is not None and cached.version >= min_version:
            return cached
        return await self.refresh(game_id)

    async def refresh(self, game_id: str) -> Game:
        """The game as stored now: the cached game brought up to date with the events after it."""
        loading = self._loading.setdefault(game_id, [0, 0])
        loading[0] += 1
        try:
            while True:
                cached = self._cache.get(game_id)
                tail = await self._store.load(game_id, cached.position if cached is not None else Position())
                current = self._cache.get(game_id)
                if current is not cached:
                    continue  # the feed or an act moved the game meanwhile: read again from where it is now
                if cached is None and not tail:
                    raise GameNotFound(f"there is no game {game_id!r}")
                game = _extend(game_id, cached, tail) if tail else cached
                assert game is not None
                self._remember(game)
                if loading[1] <= game.position.sequence:
                    return game
                # the feed delivered a later event of this game while it was being read: read the rest
        finally:
            loading[0] -= 1
            if not loading[0]:
                del self._loading[game_id]

    async def load_all(self) -> dict[str, Game]:
        """Every stored game, rebuilt from one read of the whole stream (replaces what the cache held)."""
        by_game: dict[str, list[Recorded]] = {}
        for recorded in await self._store.read_all():
            by_game.setdefault(recorded.aggregate, []).append(recorded)
        games = {game_id: _extend(game_id, None, tail) for game_id, tail in by_game.items()}
        for game in games.values():
            cached = self._cache.get(game.game_id)
            if cached is None or cached.version <= game.version:
                self._remember(game)
        return games

    async def create(
        self,
        game_id: str,
        game: str,
        start: Any,
        command_id: str,
        actor: str,
        *,
        seats: Sequence[str] = (),
        digest: bytes | None = None,
    ) -> Game:
        """Start a game with its first command (``StartMatch`` / ``StartGame``, seed drawn by the caller) and,
        when given, the player in each seat. Creating it again with the same request (``digest``, by default
        the start command's) is answered with the game; `CommandIdReused` when it exists from another one."""
        rules = RULES[game]
        if seats and len(seats) != seat_count(rules):
            raise ValueError(f"a {rules.name} game has {seat_count(rules)} seats, not {len(seats)}")
        events = rules.decide(rules.new_state(), start)
        payloads: list[tuple[str, Message]] = [(rules.name, rules.events.encode(e)) for e in events]
        if seats:
            start_seats = engine_pb2.SeatsAssigned(change=engine_pb2.SEAT_CHANGE_START)
            for seat, player in enumerate(seats):
                start_seats.seats.add(seat=seat, player_id=player)
            payloads.append(("seats_assigned", start_seats))
        digest = digest or command_digest(rules, start)
        # when it exists already, it is the same creation (a retry, another replica) or another game
        appended = False
        with contextlib.suppress(ConcurrencyConflict):
            appended = (
                await self._append(game_id, Position(), payloads, command_id=command_id, actor=actor, digest=digest)
                is not None
            )
        if appended:
            ACTIVE_GAMES.inc()  # a retried creation is not another game
        created = await self.refresh(game_id)
        first = created.envelopes[0]
        if first.command_id != command_id or first.command_digest != digest:
            raise CommandIdReused(f"game {game_id} exists already")
        return created

    async def act(
        self,
        game_id: str,
        command: Any,
        command_id: str,
        actor: str,
        *,
        expected_version: int | None = None,
        prepare: Callable[[Any, Game], Any] | None = None,
    ) -> tuple[Game, list[engine_pb2.Envelope]]:
        """Decide and append ``command``; a retried command id returns what it stored the first time.

        ``prepare`` completes the command from the game it is decided on (the engine's shuffle seed for the
        game's version); the command id's digest is of the command before, as its caller sends it every time.
        Raises the core's `RuleError` when the rules reject it (nothing is stored), `StaleVersion` when the game is
        not at ``expected_version``.
        """
        game = self._cache.get(game_id)
        fresh = game is None
        for _ in range(CONFLICT_RETRIES):
            if game is None:
                game = await self.refresh(game_id)
                fresh = True
            try:
                return await self._decide_and_append(
                    game, command, command_id, actor, expected_version=expected_version, prepare=prepare
                )
            except (RuleError, StaleVersion):
                if fresh:
                    raise
            except ConcurrencyConflict:
                CONFLICTS.inc()
            game = None  # decided on a game that had moved on: read it from the store and decide again
        raise ConcurrencyConflict(f"{game_id}: gave up after {CONFLICT_RETRIES} conflicting appends")

    async def _decide_and_append(
        self,
        game: Game,
        command: Any,
        command_id: str,
        actor: str,
        *,
        expected_version: int | None,
        prepare: Callable[[Any, Game], Any] | None,
    ) -> tuple[Game, list[engine_pb2.Envelope]]:
        index = game.commands.get(command_id)
        if index is not None and index < game.version:
            first = game.envelopes[index]
            if command_digest(game.rules, command) != first.command_digest:
                raise CommandIdReused(f"command id {command_id!r} was already used for another command")
            return game, [e for e in game.envelopes[index:] if e.command_id == command_id]
        if expected_version is not None and expected_version != game.version:
            raise StaleVersion(
                f"the game is at version {game.version}, not {expected_version}: reload and decide again",
                game.version,
            )
        digest = command_digest(game.rules, command)  # as the caller sent it: a retry sends the same
        if prepare is not None:
            command = prepare(command, game)
        events = game.rules.decide(game.state, command)
        if not events:
            return game, []
        payloads = [(game.rules.name, game.rules.events.encode(e)) for e in events]
        appended = await self._append(
            game.game_id, game.position, payloads, command_id=command_id, actor=actor, digest=digest
        )
        if appended is None:  # stored before, maybe from another position: answer from the log as it is
            stored = await self.refresh(game.game_id)
            index = stored.commands[command_id]
            if stored.envelopes[index].command_digest != digest:
                raise CommandIdReused(f"command id {command_id!r} was already used for another command")
            return stored, [e for e in stored.envelopes[index:] if e.command_id == command_id]
        envelopes, recorded = appended
        # the new state is the old one evolved by what was just stored: no need to read it back
        state = game.state
        for event in events:
            state = game.rules.evolve(state, event)
        after = game.extended(state, envelopes, events, recorded)
        if self._cache.get(game.game_id) is game:
            self._remember(after)
        return after, envelopes

    async def assign_seats(
        self, game_id: str, seats: dict[int, str], change: int, command_id: str, actor: str
    ) -> tuple[Game, int]:
        """Record who sits where from now on (`SeatsAssigned`); swaps and substitutes only between deals.
        Returns the game and the version of the change (of the first time, for a retry).

        Raises `SeatChangeRefused` with the reason, `CommandIdReused` for a command id used by another command.
        """
        message = engine_pb2.SeatsAssigned(change=typing.cast(Any, change))
        for seat, player in sorted(seats.items()):
            message.seats.add(seat=seat, player_id=player)
        digest = hashlib.sha256(message.SerializeToString(deterministic=True)).digest()
        for _ in range(CONFLICT_RETRIES):
            game = await self.refresh(game_id)
            index = game.commands.get(command_id)
            if index is not None and index < game.version:
                if game.envelopes[index].command_digest != digest:
                    raise CommandIdReused(f"command id {command_id!r} was already used for another command")
                return game, index + 1
            _check_seat_change(game, seats, change)
            try:
                appended = await self._append(
                    game_id,
                    game.position,
                    [("seats_assigned", message)],
                    command_id=command_id,
                    actor=actor,
                    digest=digest,
                )
            except ConcurrencyConflict:
                CONFLICTS.inc()
                continue
            if appended is None:
                continue  # stored before: the next round answers from the log
            envelopes, recorded = appended
            after = game.extended(
                game.state, envelopes, (None,), recorded, assigned(game.seats, message, seat_count(game.rules))
            )
            if self._cache.get(game_id) is game:
                self._remember(after)
            return after, after.version
        raise ConcurrencyConflict(f"{game_id}: gave up after {CONFLICT_RETRIES} conflicting appends")

    async def _append(
        self,
        game_id: str,
        expected: Position,
        payloads: Sequence[tuple[str, Message]],
        *,
        command_id: str,
        actor: str,
        digest: bytes,
    ) -> tuple[list[engine_pb2.Envelope], list[Recorded]] | None:
        """Append one command's events (each a payload field of the envelope and its message); ``None`` when the
        store answered with events stored earlier under the same command id (a retry that another replica, or
        an earlier attempt, stored)."""
        when = Timestamp()
        when.FromDatetime(self._clock())
        envelopes = []
        for i, (field, payload) in enumerate(payloads, start=1):
            envelope = engine_pb2.Envelope(
                game_id=game_id,
                version=expected.version + i,
                command_id=command_id,
                actor=actor,
                recorded_at=when,
                schema_version=SCHEMA_VERSION,
                command_digest=digest,
            )
            getattr(envelope, field).CopyFrom(payload)
            envelopes.append(envelope)
        written = [e.SerializeToString() for e in envelopes]
        recorded = await self._store.append(game_id, expected, command_id, written)
        if [r.data for r in recorded] != written or recorded[0].version != expected.version + 1:
            return None
        return envelopes, recorded


class SeatChangeRefused(Exception):
    """A seat change the game does not allow now (the reason says why)."""


def _check_seat_change(game: Game, seats: dict[int, str], change: int) -> None:
    count = seat_count(game.rules)
    if not seats:
        raise SeatChangeRefused("name at least one seat and its player")
    for seat, player in seats.items():
        if not 0 <= seat < count:
            raise SeatChangeRefused(f"a {game.rules.name} game has seats 0..{count - 1}, not {seat}")
        if not player:
            raise SeatChangeRefused(f"seat {seat} needs a player id")
    if game.state.phase.value == "ended":
        raise SeatChangeRefused("the game has ended")
    if change in (engine_pb2.SEAT_CHANGE_SWAP, engine_pb2.SEAT_CHANGE_SUBSTITUTE) and not between_deals(game):
        raise SeatChangeRefused("players swap seats or are substituted only between deals")
    if change == engine_pb2.SEAT_CHANGE_SWAP and sorted(seats.values()) != sorted(
        game.seats[s] if game.seats else "" for s in seats
    ):
        raise SeatChangeRefused("a swap moves the players of the named seats among those seats")
    if change not in (
        engine_pb2.SEAT_CHANGE_SWAP,
        engine_pb2.SEAT_CHANGE_SUBSTITUTE,
        engine_pb2.SEAT_CHANGE_COVER,
        engine_pb2.SEAT_CHANGE_RETURN,
    ):
        raise SeatChangeRefused("say why the seats change: swap, substitute, cover or return")


def command_digest(rules: Rules, command: Any) -> bytes:
    """SHA-256 of a command's deterministic serialisation: tells a retry from a reused command id."""
    return hashlib.sha256(rules.commands.encode(command).SerializeToString(deterministic=True)).digest()
