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

import structlog
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from paiju.contract import games as contract
from paiju.contract.games import GameCodecs, WithCodecs
from paiju.engine import tractor
from paiju.engine.deadlines import Deadlines, due_of
from paiju.engine.live import LiveGames
from paiju.engine.metrics import ACTIVE_GAMES, CONFLICTS, FEED_EVENTS, PARTITIONS_OWNED
from paiju.platform.repository import (
    CACHED_AGGREGATES,
    SCHEMA_VERSION,
    CommandIdReused,
    Recent,
    Repository,
    StaleVersion,
    Stamp,
    VersionNotReached,
    timestamp_of,
    upcast,
)
from paiju.platform.retry import report
from paiju.platform.store import ConcurrencyConflict, EventStore, Position, Recorded
from paiju.rules import registry
from paiju.rules.fair import Step, settle
from paiju.rules.fair import command as step_command
from paiju.rules.fairness import commitment
from paiju.rules.registry import GameRules
from paiju.v1 import engine_pb2

log = structlog.get_logger("paiju.engine.games")


@dataclass(frozen=True, slots=True)
class Rules(WithCodecs):
    """One game as the engine plays it: its rules (`paiju.rules.registry`) and its codecs in the contract
    (`paiju.contract.games`), and what the engine adds to a seat's legal actions."""

    contract: GameCodecs
    legal_extras: Callable[[Any, int, engine_pb2.GetLegalActionsResponse | engine_pb2.Turn], None]
    """Adds to a `GetLegalActions` answer or a seat's `Turn` what the game tells a seat beside its legal actions
    (拖拉机: what a follow owes, ``tractor_follow``)."""

    @property
    def game(self) -> GameRules:
        return self.contract.rules

    @property
    def new_state(self) -> Callable[[], Any]:
        return self.game.new_state

    @property
    def decide(self) -> Callable[[Any, Any], Sequence[Any]]:
        return self.game.decide

    @property
    def evolve(self) -> Callable[[Any, Any], Any]:
        return self.game.evolve


def _nothing_more(state: Any, seat: int, response: engine_pb2.GetLegalActionsResponse | engine_pb2.Turn) -> None:
    """A game whose legal actions say everything."""


ZLJ = Rules(contract.GAMES[registry.ZLJ.name], _nothing_more)
TRACTOR = Rules(contract.GAMES[registry.TRACTOR.name], tractor.add_follow)
RULES = {rules.name: rules for rules in (ZLJ, TRACTOR)}
"""Every game, by name, in the registry's order."""
assert list(RULES) == list(registry.GAMES), "every game of the registry is played by the engine"


class GameNotFound(Exception):
    """No game has this id."""


RECENT = 24
"""How many of a game's latest events the engine keeps in memory beside its state: enough for every watcher a few
moves behind and for a retry of a recent command. Older events are read from the store when someone asks for them
(a watch from the beginning, a replay, a retry long after), so a game's memory does not grow with its length."""
GAME_BYTES = 16_384
"""What the engine counts for a cached game beside its recent envelopes (its state, the codecs' objects): the cache
of games is bounded in bytes by this estimate (`Game.weight`)."""
CACHED_GAME_BYTES = 128 << 20
"""The default bound of the games held in memory, by their estimated bytes (`Game.weight`)."""
COMMAND_BYTES = 120
"""What the engine counts per command id it remembers (the one index of a game that grows with its length: a retry
is recognised however long ago its command was stored)."""


@dataclass(frozen=True, slots=True)
class Game:
    """A game as the engine holds it: its rules, state and position in the store, its latest envelopes (`RECENT`), and
    the indexes that answer for the rest — which command stored which events, who held each seat when. Not its
    history: that is in the store (`Games.history`). Successive snapshots share the indexes, which only grow."""

    game_id: str
    rules: Rules
    state: Any
    position: Position
    recent: tuple[engine_pb2.Envelope, ...]
    """The latest envelopes, oldest first: versions `first_recent` to `version` (at most `RECENT`)."""
    recent_events: tuple[Any, ...]
    """Each recent envelope's rules event, decoded once (``None`` for the engine's own events, e.g. seats)."""
    commands: dict[str, int]
    """Command id -> index (version - 1) of its first event. Shared by a game's successive snapshots (append-only):
    an entry at or past a snapshot's version belongs to a later snapshot."""
    seats: tuple[str, ...] = ()
    """The player id in each seat (``()``: a game created without seat assignments, e.g. for development)."""
    holders: tuple[tuple[int, tuple[str, ...]], ...] = ()
    """Who sat where from which version on: (version of the seat change, the seats after it), oldest first."""
    recent_bytes: int = 0
    """The serialized size of the recent envelopes (for the cache's bound in bytes)."""

    @property
    def version(self) -> int:
        return self.position.version

    @property
    def first_recent(self) -> int:
        """The version of the oldest envelope held in memory (``version + 1`` when none is)."""
        return self.version - len(self.recent) + 1

    @property
    def weight(self) -> int:
        """An estimate of the bytes this game holds in memory (`GAME_BYTES`, the recent envelopes, its commands)."""
        return GAME_BYTES + 2 * self.recent_bytes + COMMAND_BYTES * len(self.commands)

    @property
    def last_recorded(self) -> Timestamp | None:
        """When the engine recorded the game's last event (``None``: it has none)."""
        return self.recent[-1].recorded_at if self.recent else None

    def envelope(self, version: int) -> engine_pb2.Envelope | None:
        """The envelope of ``version`` when it is held in memory (``None``: read it from the store)."""
        index = version - self.first_recent
        return self.recent[index] if 0 <= index < len(self.recent) else None

    def event(self, version: int) -> Any:
        """The rules event of a ``version`` held in memory (``None`` for the engine's own events)."""
        return self.recent_events[version - self.first_recent]

    def extended(
        self,
        state: Any,
        envelopes: Sequence[engine_pb2.Envelope],
        events: Sequence[Any],
        recorded: Sequence[Recorded],
        seats: tuple[str, ...] | None = None,
    ) -> Game:
        """This game after ``recorded`` (whose envelopes are ``envelopes``) brought it to ``state``: its latest
        envelopes and indexes move on; nothing older is copied (an append costs the same however long the game)."""
        for i, r in enumerate(recorded, start=self.version):
            self.commands.setdefault(r.command_id, i)
        holders = self.holders
        for envelope in envelopes:
            if envelope.WhichOneof("payload") == "seats_assigned":
                before = holders[-1][1] if holders else ()
                holders = (
                    *holders,
                    (envelope.version, assigned(before, envelope.seats_assigned, seat_count(self.rules))),
                )
        recent = (*self.recent, *envelopes)
        recent_events = (*self.recent_events, *events)
        size = self.recent_bytes + sum(len(r.data) for r in recorded)
        if len(recent) > RECENT:
            dropped = len(recent) - RECENT
            size -= sum(e.ByteSize() for e in recent[:dropped])
            recent, recent_events = recent[dropped:], recent_events[dropped:]
        return Game(
            self.game_id,
            self.rules,
            state,
            recorded[-1].position,
            recent,
            recent_events,
            self.commands,
            self.seats if seats is None else seats,
            holders,
            size,
        )

    def holds(self, seat: int, player: str) -> bool:
        """Whether ``player`` sits in ``seat``, a seat of this game (any player may, in a game created without
        seat assignments)."""
        return 0 <= seat < seat_count(self.rules) and (not self.seats or self.seats[seat] == player)

    def held_at(self, seat: int, player: str, version: int) -> bool:
        """Whether ``player`` held ``seat`` when ``version`` was stored: a seat's hidden information goes to whoever
        held the seat then, never to a later holder (a swap, a substitute). The events stored with the game's
        creation come before its first seat assignment and belong to its first holders; in a game created without
        seat assignments any player holds every seat."""
        if not 0 <= seat < seat_count(self.rules):
            return False
        if not self.holders:
            return True
        seats = self.holders[0][1]
        for changed, after in self.holders:
            if changed > version:
                break
            seats = after
        return seats[seat] == player


@dataclass(frozen=True, slots=True)
class History:
    """A game's whole log as read from the store: its envelopes and their rules events (``None`` for the engine's
    own), and the game they fold to."""

    game: Game
    envelopes: tuple[engine_pb2.Envelope, ...]
    events: tuple[Any, ...]


def _decoded(
    game_id: str, rules: Rules | None, tail: Sequence[Recorded]
) -> tuple[Rules, list[engine_pb2.Envelope], list[Any]]:
    """The envelopes of stored events and their rules events (``rules``: the game's, when known)."""
    envelopes = [upcast(engine_pb2.Envelope.FromString(r.data)) for r in tail]
    if rules is None:
        rules = next(RULES[w] for e in envelopes if (w := e.WhichOneof("payload")) in RULES)
    events: list[Any] = []
    for envelope in envelopes:
        which = envelope.WhichOneof("payload")
        if which == "seats_assigned":
            events.append(None)
        elif which == rules.name:
            events.append(rules.events.decode(getattr(envelope, which)))
        else:
            raise ValueError(f"event {envelope.version} of {game_id} is a {which} event in a {rules.name} game")
    return rules, envelopes, events


def _extend(game_id: str, game: Game | None, tail: Sequence[Recorded]) -> Game:
    """``game`` (``None``: a game not seen yet) after the stored events ``tail``."""
    rules, envelopes, events = _decoded(game_id, game.rules if game is not None else None, tail)
    return _folded(game_id, rules, game, tail, envelopes=envelopes, events=events)


def _folded(
    game_id: str,
    rules: Rules,
    game: Game | None,
    tail: Sequence[Recorded],
    *,
    envelopes: Sequence[engine_pb2.Envelope],
    events: Sequence[Any],
) -> Game:
    if game is None:
        game = Game(game_id, rules, rules.new_state(), Position(), (), (), {})
    state, seats = game.state, game.seats
    for envelope, event in zip(envelopes, events, strict=True):
        if event is None:
            seats = assigned(seats, envelope.seats_assigned, seat_count(rules))
        else:
            state = rules.evolve(state, event)
    return game.extended(state, envelopes, events, tail, seats)


def replayed(game_id: str, stored: Sequence[Recorded]) -> History:
    """A game's whole log (``stored``: every event of it, in order) with the game it folds to."""
    rules, envelopes, events = _decoded(game_id, None, stored)
    game = _folded(game_id, rules, None, stored, envelopes=envelopes, events=events)
    return History(game, tuple(envelopes), tuple(events))


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


class Games(Repository[Game]):
    """Load, create and act on games: the aggregate repository (`paiju.platform.repository.Repository`) over the
    GAMES stream's envelopes, plus what only games have — the deadlines of the games this replica owns (turn
    timers), creation with the seats, seat changes and dry runs.

    Replicas share the games out by partition (`own`, `paiju.platform.ownership`): a replica's feed carries only the
    partitions it owns, it keeps those games current in memory and runs their timers; any other game it is asked
    about it reads from the store, and acts on it with the position it read, so a request is answered correctly
    whichever replica it reaches (docs/architecture.md, "Ownership of games")."""

    noun = "the game"

    def __init__(
        self,
        store: EventStore,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        live: LiveGames | None = None,
        cache_bytes: int = CACHED_GAME_BYTES,
    ) -> None:
        """``live``: where the games that may still need the engine are kept (`paiju.engine.live`), read at start
        instead of every game of the store. ``cache_bytes``: the games held in memory, by their estimated bytes
        (`Game.weight`)."""
        super().__init__(
            store, clock=clock, on_conflict=CONFLICTS.inc, weigh=lambda game: game.weight, cache_bytes=cache_bytes
        )
        self._live = live
        self._ending: set[asyncio.Task[None]] = set()
        self._gone: Recent[str, bool] = Recent(CACHED_AGGREGATES)  # ended games this process took off the live set
        self.deadlines = Deadlines()
        """When each game this replica owns next needs the engine (its turn timers)."""
        self._unindexed: set[str] = set()  # moved (or known at start) but not read here since: deadline unknown
        self._owned: frozenset[int] | None = None
        """The partitions this replica owns (``None``: every game, a replica alone)."""
        self._server_seeds: Callable[[str, int], Sequence[bytes]] | None = None
        self._fair_new_games = False
        self.contribution_seconds = 0.0
        """How long a fair deal without a cut waits for the seats' contributions (0: it is dealt at once)."""

    def deal_fairly(
        self,
        server_seeds: Callable[[str, int], Sequence[bytes]],
        contribution_seconds: float,
        *,
        new_games: bool = True,
    ) -> None:
        """Take each fair game's commit, deal and reveal steps (`paiju.rules.fair`) in the append that makes them due,
        with ``server_seeds`` (the candidate server seeds of a game's n-th shuffle: the one of the engine's secret
        first, then those of its previous secret, so a shuffle committed before the secret changed is still dealt and
        revealed); a deal without a cut waits ``contribution_seconds`` for the seats' contributions (the timers deal
        it then). ``new_games``: new games are started fair too (else from seeds; the fair games already started go
        on being dealt fairly either way)."""
        self._server_seeds = server_seeds
        self.contribution_seconds = contribution_seconds
        self._fair_new_games = new_games

    @property
    def fair(self) -> bool:
        """Whether new games are dealt from committed shuffles."""
        return self._server_seeds is not None and self._fair_new_games

    @property
    def takes_fair_steps(self) -> bool:
        """Whether this engine takes fair games' steps (it has the server seeds)."""
        return self._server_seeds is not None

    def fair_command(self, game: Game, step: Step) -> Any:
        """The engine's command for a fair game's due ``step`` (with that shuffle's server seed)."""
        shuffle = game.state.shuffle
        committed = shuffle.commitment if shuffle is not None and step.kind != "commit" else None
        return step_command(step, self._server_seed(game.game_id, step.number, committed))

    def _server_seed(self, game_id: str, number: int, committed: bytes | None) -> bytes:
        """The seed of a game's ``number``-th shuffle: the one that matches ``committed`` (the recorded commitment)
        among the candidates, else the current secret's."""
        assert self._server_seeds is not None
        candidates = self._server_seeds(game_id, number)
        if committed is not None:
            for seed in candidates:
                if commitment(seed) == committed:
                    return seed
        return candidates[0]

    def _settled(self, game_id: str, rules: GameRules, state: Any, events: Sequence[Any]) -> list[Any]:
        """The events of the fair-dealing steps that ``events`` make due (`paiju.rules.fair.settle`): none in a game
        not dealt fairly, or when this engine deals no game fairly."""
        if self._server_seeds is None:
            return []
        if not getattr(state, "fair", False) and not any(getattr(e, "fair", False) for e in events):
            return []  # a game dealt from seeds (only its start can make it fair)
        for event in events:
            if not isinstance(event, engine_pb2.SeatsAssigned):
                state = rules.evolve(state, event)
        if not getattr(state, "fair", False):
            return []
        return settle(
            rules.decide,
            rules.evolve,
            rules.fair_step,
            state,
            lambda number, committed: self._server_seed(game_id, number, committed),
            window_over=self.contribution_seconds <= 0,
        )

    async def follow(self) -> None:
        """Keep cached games current from the store's feed of appended events (call once, at start)."""
        await super().follow()
        self._unindexed.update(await self._known())

    async def _known(self) -> list[str]:
        """The games that may still need the engine (the live set; without one, every game of the store)."""
        return await self._live.members() if self._live is not None else await self._store.aggregates()

    def owns(self, game_id: str) -> bool:
        """Whether this replica owns ``game_id``'s partition (keeps it current from its feed, runs its timers)."""
        return self._owned is None or self._store.partition(game_id) in self._owned

    async def own(self, partitions: frozenset[int] | None) -> None:
        """From now on this replica owns ``partitions`` (``None``: every game): its feed carries only them, and the
        live games of a partition it gains are read from the store for their deadlines (a new owner rebuilds the
        index from the log). The deadlines of a partition it loses are dropped; its cached games stay, read from
        the store again (from where the cache stands) whenever they are asked for."""
        before = self._owned
        if partitions == before:
            return
        self._owned = partitions
        PARTITIONS_OWNED.set(self._store.partitions if partitions is None else len(partitions))
        await self._store.own(partitions)

        def gained(game_id: str) -> bool:
            return before is not None and self._store.partition(game_id) not in before and self.owns(game_id)

        for game_id in [g for g in self._cache if gained(g)]:
            self._forget(game_id)  # cached while another replica owned it: maybe behind
        self._unindexed = {g for g in self._unindexed if self.owns(g)}
        self.deadlines.keep(self.owns)
        if before is not None:
            self._unindexed.update(g for g in await self._known() if gained(g))

    def _current(self, aggregate: str) -> bool:
        return self._following and (self.owns(aggregate) or self._store.unpartitioned(aggregate))

    # -- the game kind -----------------------------------------------------------------------------------------

    async def due(self, now: float) -> list[str]:
        """The games whose deadline has passed at ``now`` (seconds), taken out of the deadline index, and those
        whose deadline is not known yet (moved by another replica while not in memory here, or known only from
        the start): what a scan of the turn timers reads. Without the feed, every game of the store."""
        if not self._following:
            return await self._store.aggregates()
        unknown, self._unindexed = self._unindexed, set()
        return [*self.deadlines.expired(now), *sorted(g for g in unknown if self.owns(g))]

    def reschedule(self, game_id: str) -> None:
        """Set the game's deadline again from the game as this replica holds it (after a scan took it out)."""
        if not self.owns(game_id):
            return
        cached = self._cache.get(game_id)
        if cached is None:
            self._unindexed.add(game_id)
        else:
            self.deadlines.set(game_id, due_of(cached, self.contribution_seconds))

    def _observed(self, recorded: Recorded) -> None:
        FEED_EVENTS.inc()
        if self._cache.get(recorded.aggregate) is None and self.owns(recorded.aggregate):
            self._unindexed.add(recorded.aggregate)

    def _forgotten(self, aggregate: str) -> None:
        if self.owns(aggregate):
            self._unindexed.add(aggregate)  # its deadline may have moved with the events the feed skipped

    def _remembered(self, snapshot: Game) -> None:
        if snapshot.state.phase.value == "ended" and snapshot.game_id not in self._gone:
            self._gone[snapshot.game_id] = True
            if self._live is not None:
                ending = asyncio.get_running_loop().create_task(self._discard(snapshot.game_id))
                self._ending.add(ending)
                ending.add_done_callback(self._ending.discard)
        if not self.owns(snapshot.game_id):
            return
        try:
            due = due_of(snapshot, self.contribution_seconds)
        except Exception:
            # the feed delivers a command's events one by one, and a rules core need not tell who is waiting in a
            # state between two events of one command: the next scan reads the game as stored, whole commands only
            self.deadlines.set(snapshot.game_id, None)
            self._unindexed.add(snapshot.game_id)
            return
        self.deadlines.set(snapshot.game_id, due)
        self._unindexed.discard(snapshot.game_id)

    def _absent(self, aggregate: str) -> Game:
        raise GameNotFound(f"there is no game {aggregate!r}")

    def _extend(self, aggregate: str, snapshot: Game | None, tail: Sequence[Recorded]) -> Game:
        return _extend(aggregate, snapshot, tail)

    async def _stored(self, snapshot: Game, command_id: str) -> tuple[bytes, Sequence[Any]] | None:
        index = snapshot.commands.get(command_id)
        if index is None or index >= snapshot.version:
            return None
        if index + 1 >= snapshot.first_recent:
            envelopes: Sequence[engine_pb2.Envelope] = snapshot.recent[index + 1 - snapshot.first_recent :]
        else:  # a retry of a command older than the game's recent events: its answer is read from the store
            envelopes = (await self.history(snapshot.game_id, index)).envelopes
        answer = [e for e in envelopes[: snapshot.version - index] if e.command_id == command_id]
        return answer[0].command_digest, answer

    def _encode(self, snapshot: Game, events: Sequence[Any], stamp: Stamp) -> list[Any]:
        return _envelopes(snapshot.game_id, snapshot.position, _payloads(snapshot.rules, events), stamp)

    def _appended(
        self, snapshot: Game, events: Sequence[Any], envelopes: Sequence[Any], recorded: Sequence[Recorded]
    ) -> tuple[Game, Sequence[Any]]:
        # the new state is the old one evolved by what was just stored: no need to read it back
        state, seats = snapshot.state, snapshot.seats
        decoded: list[Any] = []
        for event in events:
            if isinstance(event, engine_pb2.SeatsAssigned):
                seats = assigned(seats, event, seat_count(snapshot.rules))
                decoded.append(None)
            else:
                state = snapshot.rules.evolve(state, event)
                decoded.append(event)
        return snapshot.extended(state, envelopes, decoded, recorded, seats), list(envelopes)

    async def _discard(self, game_id: str) -> None:
        try:
            await self._live.discard(game_id)  # type: ignore[union-attr]
        except Exception as e:  # the game stays listed: the next start reads it once, sees it ended, drops it
            report(log, "an ended game could not be taken off the live games", e, game=game_id)

    # -- what the engine does with games -----------------------------------------------------------------------

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

    async def load_all(self, partitions: frozenset[int] | None = None) -> dict[str, History]:
        """Every stored game's whole log (of ``partitions`` only, when given: one reader of several in parallel), from
        one read of the stream; the games they fold to are cached (replacing what the cache held)."""
        by_game: dict[str, list[Recorded]] = {}
        for recorded in await self._store.read_all(partitions=partitions):
            by_game.setdefault(recorded.aggregate, []).append(recorded)
        histories = {game_id: replayed(game_id, tail) for game_id, tail in by_game.items()}
        for history in histories.values():
            self._remember(history.game.game_id, history.game)
        return histories

    async def history(self, game_id: str, after: int = 0) -> History:
        """The game's log as stored now, read from the store: its envelopes and events after version ``after`` (all
        of them by default), and the game they fold to. `GameNotFound` when there is none."""
        stored = await self._store.load(game_id)
        if not stored:
            raise GameNotFound(f"there is no game {game_id!r}")
        whole = replayed(game_id, stored)
        self._remember(game_id, whole.game)
        return History(whole.game, whole.envelopes[after:], whole.events[after:])

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
        events: list[Any] = list(rules.decide(rules.new_state(), start))
        events += self._settled(game_id, rules.game, rules.new_state(), events)
        if seats:
            start_seats = engine_pb2.SeatsAssigned(change=engine_pb2.SEAT_CHANGE_START)
            for seat, player in enumerate(seats):
                start_seats.seats.add(seat=seat, player_id=player)
            events.append(start_seats)
        digest = digest or command_digest(rules, start)
        if self._live is not None:
            await self._live.add(game_id)  # before its first event: a live game is never missing from the set
        stamp = Stamp(command_id, actor, digest, timestamp_of(self._clock()))
        envelopes = _envelopes(game_id, Position(), _payloads(rules, events), stamp)
        written = [e.SerializeToString() for e in envelopes]
        # when it exists already, it is the same creation (a retry, another replica) or another game
        with contextlib.suppress(ConcurrencyConflict):
            recorded = await self._store.append(game_id, Position(), command_id, written)
            if [r.data for r in recorded] == written and recorded[0].version == 1:
                ACTIVE_GAMES.inc()  # a retried creation is not another game
        created = await self.refresh(game_id)
        first = created.envelope(1) or (await self.history(game_id)).envelopes[0]
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

        def decide(game: Game) -> Sequence[Any]:
            events = list(game.rules.decide(game.state, command if prepare is None else prepare(command, game)))
            return events + self._settled(game_id, game.rules.game, game.state, events)

        game, stored = await self.execute(
            game_id,
            decide,
            command_id,
            actor,
            lambda game: command_digest(game.rules, command),  # as the caller sent it: a retry sends the same
            expected_version=expected_version,
        )
        return game, list(stored)

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

        def decide(game: Game) -> Sequence[Any]:
            _check_seat_change(game, seats, change)
            return [message]

        game, stored = await self.execute(game_id, decide, command_id, actor, digest, fresh=True)
        return game, stored[0].version


def _payloads(rules: Rules, events: Sequence[Any]) -> list[tuple[str, Message]]:
    """Each event as the envelope's payload field and its message (a seat change is the engine's own)."""
    return [
        ("seats_assigned", e) if isinstance(e, engine_pb2.SeatsAssigned) else (rules.name, rules.events.encode(e))
        for e in events
    ]


def _envelopes(
    game_id: str, after: Position, payloads: Sequence[tuple[str, Message]], stamp: Stamp
) -> list[engine_pb2.Envelope]:
    envelopes = []
    for i, (field, payload) in enumerate(payloads, start=1):
        envelope = engine_pb2.Envelope(
            game_id=game_id,
            version=after.version + i,
            command_id=stamp.command_id,
            actor=stamp.actor,
            recorded_at=stamp.when,
            schema_version=SCHEMA_VERSION,
            command_digest=stamp.digest,
        )
        getattr(envelope, field).CopyFrom(payload)
        envelopes.append(envelope)
    return envelopes


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


__all__ = [
    "RECENT",
    "RULES",
    "CommandIdReused",
    "Game",
    "GameNotFound",
    "Games",
    "History",
    "Rules",
    "SeatChangeRefused",
    "StaleVersion",
    "VersionNotReached",
    "assigned",
    "between_deals",
    "command_digest",
    "replayed",
    "seat_count",
]
