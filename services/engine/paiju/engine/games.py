"""Games as event-sourced aggregates: load the log, decide, append — the heart of the engine service.

A game is one match at one table, stored as the subject of its id. Each stored event is an `Envelope`
(game id, version, command id, actor, engine-recorded time, schema version, payload). Acting loads the
game, refuses a command id already used by a different command, returns the stored result of a command
id already applied (a retry), decides with the game's rules core and appends with the position it loaded;
when another writer appended first it reloads and decides again, so whichever engine replica serves a
game, exactly one decision per position is stored (design.md, Event sourcing).

The core decides; time comes from the injected clock and is recorded in the envelope, never read by
the rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from paiju.engine.codec import OneofCodec
from paiju.engine.contract import TRACTOR_COMMANDS, TRACTOR_EVENTS, ZLJ_COMMANDS, ZLJ_EVENTS
from paiju.engine.observability import CONFLICTS
from paiju.engine.store import ConcurrencyConflict, EventStore, Position, Recorded
from paiju.rules.errors import RuleError
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import game as zlj_game
from paiju.rules.zlj import model as zlj_model
from paiju.v1 import engine_pb2

SCHEMA_VERSION = 1
CONFLICT_RETRIES = 8


@dataclass(frozen=True, slots=True)
class Rules:
    """One game's rules core and its codecs."""

    name: str
    new_state: Callable[[], Any]
    decide: Callable[[Any, Any], Sequence[Any]]
    evolve: Callable[[Any, Any], Any]
    events: OneofCodec
    commands: OneofCodec


ZLJ = Rules("zlj", zlj_model.State, zlj_game.decide, zlj_game.evolve, ZLJ_EVENTS, ZLJ_COMMANDS)
TRACTOR = Rules(
    "tractor", tractor_model.State, tractor_game.decide, tractor_game.evolve, TRACTOR_EVENTS, TRACTOR_COMMANDS
)
RULES = {"zlj": ZLJ, "tractor": TRACTOR}


class GameNotFound(Exception):
    """No game has this id."""


class CommandIdReused(Exception):
    """A command id already names a different command of this game."""


class StaleVersion(Exception):
    """The client expected the game at a version it is no longer at."""


@dataclass(frozen=True, slots=True)
class Game:
    """A game as loaded: its rules, state, position in the store and envelopes."""

    game_id: str
    rules: Rules
    state: Any
    position: Position
    envelopes: tuple[engine_pb2.Envelope, ...]
    recorded: tuple[Recorded, ...]
    commands: dict[str, int]
    """Command id -> index of its first event. Shared by a game's successive snapshots (append-only): an
    entry at or past a snapshot's version belongs to a later snapshot."""

    @property
    def version(self) -> int:
        return self.position.version

    def extended(self, state: Any, envelopes: Sequence[engine_pb2.Envelope], recorded: Sequence[Recorded]) -> Game:
        """This game after ``recorded`` (whose envelopes are ``envelopes``) brought it to ``state``."""
        for i, r in enumerate(recorded, start=self.version):
            self.commands.setdefault(r.command_id, i)
        return Game(
            self.game_id,
            self.rules,
            state,
            recorded[-1].position,
            (*self.envelopes, *envelopes),
            (*self.recorded, *recorded),
            self.commands,
        )


def _extend(game_id: str, game: Game | None, tail: Sequence[Recorded]) -> Game:
    """``game`` (``None``: a game not seen yet) after the stored events ``tail``."""
    envelopes = [engine_pb2.Envelope.FromString(r.data) for r in tail]
    if game is None:
        rules, _ = _envelope_payload(envelopes[0])
        game = Game(game_id, rules, rules.new_state(), Position(), (), (), {})
    rules, state = game.rules, game.state
    for envelope in envelopes:
        kind, payload = _envelope_payload(envelope)
        if kind is not rules:
            raise ValueError(f"event {envelope.version} of {game_id} is a {kind.name} event in a {rules.name} game")
        state = rules.evolve(state, rules.events.decode(payload))
    return game.extended(state, envelopes, tail)


def _envelope_payload(envelope: engine_pb2.Envelope) -> tuple[Rules, Any]:
    which = envelope.WhichOneof("payload")
    if which is None:
        raise ValueError(f"envelope {envelope.game_id}@{envelope.version} has no payload")
    return RULES[which], getattr(envelope, which)


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
        self._cache: dict[str, Game] = {}
        self._following = False
        # games being loaded from the store: the highest stream sequence the feed delivered for each meanwhile
        self._loading: dict[str, list[int]] = {}
        self._changed: dict[str, asyncio.Event] = {}

    @property
    def store(self) -> EventStore:
        return self._store

    async def follow(self) -> None:
        """Keep cached games current from the store's feed of appended events (call once, at start)."""
        await self._store.follow(self._observe)
        self._following = True

    def _observe(self, recorded: Recorded) -> None:
        """One event appended by any writer, in stream order: extend the cached game it belongs to."""
        game_id = recorded.aggregate
        loading = self._loading.get(game_id)
        if loading is not None:
            loading[1] = max(loading[1], recorded.sequence)
        cached = self._cache.get(game_id)
        if cached is None or recorded.version <= cached.version:
            return  # not cached, or already known (this process stored it)
        if recorded.version == cached.version + 1:
            self._remember(_extend(game_id, cached, [recorded]))
        else:
            del self._cache[game_id]  # a gap: the next read loads from the store
            self._notify(game_id)

    def _remember(self, game: Game) -> None:
        self._cache[game.game_id] = game
        self._notify(game.game_id)

    def _notify(self, game_id: str) -> None:
        changed = self._changed.pop(game_id, None)
        if changed is not None:
            changed.set()

    async def changed(self, game_id: str, version: int, timeout: float) -> None:
        """Wait until the cached game is past ``version`` (or ``timeout`` seconds pass)."""
        cached = self._cache.get(game_id)
        if cached is not None and cached.version > version:
            return
        event = self._changed.setdefault(game_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)

    @property
    def following(self) -> bool:
        return self._following

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

    async def create(self, game_id: str, game: str, start: Any, command_id: str, actor: str) -> Game:
        """Start a game with its first command (``StartMatch`` / ``StartGame``, seed drawn by the caller)."""
        rules = RULES[game]
        events = rules.decide(rules.new_state(), start)
        digest = command_digest(rules, start)
        await self._append((game_id, rules), Position(), events, command_id=command_id, actor=actor, digest=digest)
        return await self.refresh(game_id)

    async def rules_of(self, game_id: str) -> Rules:
        """The rules of a game (from the cache when it has been loaded: a game never changes its kind)."""
        cached = self._cache.get(game_id)
        return cached.rules if cached is not None else (await self.load(game_id)).rules

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
        game's version). Raises the core's `RuleError` when the rules reject it (nothing is stored),
        `StaleVersion` when the game is not at ``expected_version``.
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
                f"the game is at version {game.version}, not {expected_version}: reload and decide again"
            )
        if prepare is not None:
            command = prepare(command, game)
        events = game.rules.decide(game.state, command)
        if not events:
            return game, []
        digest = command_digest(game.rules, command)
        appended = await self._append(
            (game.game_id, game.rules), game.position, events, command_id=command_id, actor=actor, digest=digest
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
        after = game.extended(state, envelopes, recorded)
        if self._cache.get(game.game_id) is game:
            self._remember(after)
        return after, envelopes

    async def _append(
        self,
        game: tuple[str, Rules],
        expected: Position,
        events: Sequence[Any],
        *,
        command_id: str,
        actor: str,
        digest: bytes,
    ) -> tuple[list[engine_pb2.Envelope], list[Recorded]] | None:
        """Append one command's events; ``None`` when the store answered with events stored earlier under the
        same command id (a retry that another replica, or an earlier attempt, stored)."""
        game_id, rules = game
        when = Timestamp()
        when.FromDatetime(self._clock())
        envelopes = []
        for i, event in enumerate(events, start=1):
            envelope = engine_pb2.Envelope(
                game_id=game_id,
                version=expected.version + i,
                command_id=command_id,
                actor=actor,
                recorded_at=when,
                schema_version=SCHEMA_VERSION,
                command_digest=digest,
            )
            getattr(envelope, rules.name).CopyFrom(rules.events.encode(event))
            envelopes.append(envelope)
        written = [e.SerializeToString() for e in envelopes]
        recorded = await self._store.append(game_id, expected, command_id, written)
        if [r.data for r in recorded] != written or recorded[0].version != expected.version + 1:
            return None
        return envelopes, recorded


def command_digest(rules: Rules, command: Any) -> bytes:
    """SHA-256 of a command's deterministic serialisation: tells a retry from a reused command id."""
    return hashlib.sha256(rules.commands.encode(command).SerializeToString(deterministic=True)).digest()
