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

    @property
    def version(self) -> int:
        return self.position.version


def _envelope_payload(envelope: engine_pb2.Envelope) -> tuple[Rules, Any]:
    which = envelope.WhichOneof("payload")
    if which is None:
        raise ValueError(f"envelope {envelope.game_id}@{envelope.version} has no payload")
    return RULES[which], getattr(envelope, which)


class Games:
    """Load, create and act on games over an event store."""

    def __init__(self, store: EventStore, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._store = store
        self._clock = clock
        self._cache: dict[str, Game] = {}

    @property
    def store(self) -> EventStore:
        return self._store

    async def load(self, game_id: str) -> Game:
        """The game as stored now: the cached game brought up to date with the events after it."""
        cached = self._cache.get(game_id)
        tail = await self._store.load(game_id, cached.position if cached is not None else Position())
        if cached is not None and not tail:
            return cached
        if cached is None and not tail:
            raise GameNotFound(f"there is no game {game_id!r}")
        rules = cached.rules if cached is not None else None
        state: Any = cached.state if cached is not None else None
        envelopes = list(cached.envelopes) if cached is not None else []
        for r in tail:
            envelope = engine_pb2.Envelope.FromString(r.data)
            kind, payload = _envelope_payload(envelope)
            if rules is None:
                rules, state = kind, kind.new_state()
            state = rules.evolve(state, rules.events.decode(payload))
            envelopes.append(envelope)
        assert rules is not None
        recorded = (*(cached.recorded if cached is not None else ()), *tail)
        game = Game(game_id, rules, state, tail[-1].position, tuple(envelopes), recorded)
        self._cache[game_id] = game
        return game

    async def create(self, game_id: str, game: str, start: Any, command_id: str, actor: str) -> Game:
        """Start a game with its first command (``StartMatch`` / ``StartGame``, seed drawn by the caller)."""
        rules = RULES[game]
        events = rules.decide(rules.new_state(), start)
        digest = command_digest(rules, start)
        await self._append((game_id, rules), Position(), events, command_id=command_id, actor=actor, digest=digest)
        return await self.load(game_id)

    async def rules_of(self, game_id: str) -> Rules:
        """The rules of a game (from the cache when it has been loaded: a game never changes its kind)."""
        cached = self._cache.get(game_id)
        return cached.rules if cached is not None else (await self.load(game_id)).rules

    async def act(
        self, game_id: str, command: Any, command_id: str, actor: str, expected_version: int | None = None
    ) -> tuple[Game, list[engine_pb2.Envelope]]:
        """Decide and append ``command``; a retried command id returns what it stored the first time.

        Raises the core's `RuleError` when the rules reject it (nothing is stored), `StaleVersion` when the
        game is not at ``expected_version``.
        """
        for _ in range(CONFLICT_RETRIES):
            game = await self.load(game_id)
            done = [e for e, r in zip(game.envelopes, game.recorded, strict=True) if r.command_id == command_id]
            if done:
                if command_digest(game.rules, command) != done[0].command_digest:
                    raise CommandIdReused(f"command id {command_id!r} was already used for another command")
                return game, done
            if expected_version is not None and expected_version != game.version:
                raise StaleVersion(
                    f"the game is at version {game.version}, not {expected_version}: reload and decide again"
                )
            events = game.rules.decide(game.state, command)
            if not events:
                return game, []
            digest = command_digest(game.rules, command)
            try:
                envelopes, recorded = await self._append(
                    (game_id, game.rules), game.position, events, command_id=command_id, actor=actor, digest=digest
                )
            except ConcurrencyConflict:
                CONFLICTS.inc()
                continue
            # the new state is the old one evolved by what was just stored: no need to read it back
            state = game.state
            for event in events:
                state = game.rules.evolve(state, event)
            after = Game(
                game_id,
                game.rules,
                state,
                recorded[-1].position,
                (*game.envelopes, *envelopes),
                (*game.recorded, *recorded),
            )
            if self._cache.get(game_id) is game:
                self._cache[game_id] = after
            return after, envelopes
        raise ConcurrencyConflict(f"{game_id}: gave up after {CONFLICT_RETRIES} conflicting appends")

    async def _append(
        self,
        game: tuple[str, Rules],
        expected: Position,
        events: Sequence[Any],
        *,
        command_id: str,
        actor: str,
        digest: bytes,
    ) -> tuple[list[engine_pb2.Envelope], list[Recorded]]:
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
        recorded = await self._store.append(game_id, expected, command_id, [e.SerializeToString() for e in envelopes])
        return envelopes, recorded


def command_digest(rules: Rules, command: Any) -> bytes:
    """SHA-256 of a command's deterministic serialisation: tells a retry from a reused command id."""
    return hashlib.sha256(rules.commands.encode(command).SerializeToString(deterministic=True)).digest()
