"""Games as event-sourced aggregates: load the log, decide, append — the heart of the engine service.

A game is one match at one table, stored as the subject of its id. Each stored event is an `Envelope` (game id,
version, command id, actor, engine-recorded time, schema version, payload). Whichever engine replica serves a game,
exactly one decision per position is stored: an act appends at the position it decided from, and when another
writer appended first it reads again and decides again (docs/architecture.md, "Optimistic concurrency and exact
retries"). The core decides; time comes from the injected clock and is recorded in the envelope, never read by the
rules.

The shape: `Games` is the engine's game service. It holds a `paiju.platform.repository.Repository` of games, given
what is particular to games — `GameFold` (a `Game` from its envelopes), `GameEnvelopes` (a game's events in
envelopes, and a retried command's answer) and `Tending` (what follows when the engine's memory of a game moves) —
and four collaborators, each in a module of its own with its own tests: `OwnedPartitions` (`paiju.engine.owning`:
which games this replica owns), `Schedule` (`paiju.engine.deadlines`: when each game it owns next needs the
engine), `LiveSet` (`paiju.engine.live`: the games that may still need one) and `FairDealing`
(`paiju.engine.dealing`: the engine's own steps of fair games). Nothing is overridden; each part is called by name.

One move, top to bottom (`Games.act`, then `Repository.execute`; `EngineService.Act` has authorised and decoded the
command before):

1. the game: from memory when the feed keeps it current here (a game this replica owns,
   `OwnedPartitions.carries`, or one kept by the store's notices), else read from the store (`GameFold.extend`);
2. a retry: a command id already applied is answered with the envelopes it stored (`GameEnvelopes.stored`: from
   the game's recent envelopes, or from its log for an older command), or refused when it named another command;
3. ``expected_version`` is checked; the command is prepared (the engine's seed for this version), the rules core
   decides, and the fair-dealing steps its events make due are added to them (`FairDealing.settled`);
4. the events go in envelopes with the command's stamp (`GameEnvelopes.encode`) and are appended at the version
   decided from (a lost append goes back to 1);
5. the game after them, evolved from what was decided, not read back (`GameFold.appended`); the answer is the
   envelopes;
6. the game is remembered: `Tending` takes an ended game off the live set (`LiveSet.moved`) and sets the deadline
   of a game this replica owns (`Schedule.moved`); the game's watchers wake (`paiju.engine.watching`).

The feed brings the same events to every replica: the one that acted passes over its own; the others fold them
into the game they hold (`GameFold.extend`) and remember it as in 6, or, for a game not in memory, leave its
deadline to the next scan (`Schedule.lost`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import typing
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from paiju.contract import games as contract
from paiju.contract.games import GameCodecs, WithCodecs
from paiju.engine import tractor
from paiju.engine.commandindex import CommandIndex
from paiju.engine.deadlines import Schedule
from paiju.engine.dealing import FairDealing
from paiju.engine.live import LiveGames, LiveSet
from paiju.engine.metrics import ACTIVE_GAMES, CONFLICTS, FEED_EVENTS
from paiju.engine.owning import OwnedPartitions
from paiju.platform.repository import (
    SCHEMA_VERSION,
    CommandIdReused,
    Repository,
    StaleVersion,
    Stamp,
    VersionNotReached,
    timestamp_of,
    upcast,
)
from paiju.platform.store import ConcurrencyConflict, EventStore, Position, Recorded
from paiju.rules import registry
from paiju.rules.registry import GameRules
from paiju.v1 import engine_pb2, spectators_pb2


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
ENDED_GAMES_KEPT = 256
"""The games over that the engine keeps in memory: those that ended last (`Tending`). A game over is rarely asked for
again (its watchers' last messages, a last look, a late spectator), and beyond these it is read from the store when
it is. Without this bound ended games stayed until the byte bound above pushed them out: about 3,900 one-deal 砸六家
games by their estimate (34 KB each), 15 KB of heap each as measured, so an engine whose games end grew by some
55 MiB over the hours it took to fill; with it, they hold about 4 MiB."""


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
    commands: CommandIndex
    """Command id -> index (version - 1) of its first event (`CommandIndex`: compact, the one part of a game that
    grows with its length). Shared by a game's successive snapshots (append-only): an entry at or past a snapshot's
    version belongs to a later snapshot."""
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
        return GAME_BYTES + 2 * self.recent_bytes + self.commands.nbytes

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
        game = Game(game_id, rules, rules.new_state(), Position(), (), (), CommandIndex())
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


class GameFold:
    """How the engine folds a game (the repository's `paiju.platform.repository.Fold`): a `Game` from its stored
    envelopes (decoded here: rules events and seat assignments), or after the events an act just stored — evolved
    from what the act holds, never read back (or taken as its decision worked it out: `expect`). There is no game
    before its first event (`GameNotFound`)."""

    def __init__(self) -> None:
        self._expected: dict[str, tuple[Any, tuple[Any, ...], Any]] = {}
        """Per game, the state a decision worked out after its events: (the state decided on, the events, after)."""

    def expect(self, game_id: str, state: Any, events: Sequence[Any], after: Any) -> None:
        """``events``, decided on ``state``, bring the game to ``after`` (worked out while deciding): when exactly
        these events are appended to exactly this state (the same objects), the game is not evolved again."""
        self._expected[game_id] = (state, tuple(events), after)

    def unexpect(self, game_id: str) -> None:
        """Forget what `expect` said of ``game_id`` (its act is over)."""
        self._expected.pop(game_id, None)

    def _known(self, game: Game, events: Sequence[Any]) -> Any | None:
        expected = self._expected.pop(game.game_id, None)
        if expected is None:
            return None
        state, decided, after = expected
        if state is not game.state or len(decided) != len(events):
            return None
        if any(a is not b for a, b in zip(decided, events, strict=True)):
            return None
        return after

    def absent(self, game_id: str) -> Game:
        raise GameNotFound(f"there is no game {game_id!r}")

    def extend(self, game_id: str, game: Game | None, tail: Sequence[Recorded]) -> Game:
        rules, envelopes, events = _decoded(game_id, game.rules if game is not None else None, tail)
        return _folded(game_id, rules, game, tail, envelopes=envelopes, events=events)

    def appended(
        self, game: Game, events: Sequence[Any], envelopes: Sequence[Any], recorded: Sequence[Recorded]
    ) -> tuple[Game, Sequence[Any]]:
        """The game after its act's ``events``; the answer is their envelopes."""
        state, seats = game.state, game.seats
        known = self._known(game, events)
        decoded: list[Any] = []
        for event in events:
            if isinstance(event, engine_pb2.SeatsAssigned):
                seats = assigned(seats, event, seat_count(game.rules))
                decoded.append(None)
            else:
                if known is None:
                    state = game.rules.evolve(state, event)
                decoded.append(event)
        if known is not None:
            state = known
        return game.extended(state, envelopes, decoded, recorded, seats), list(envelopes)


class GameEnvelopes:
    """How the engine encodes a game's events (the repository's `paiju.platform.repository.Envelopes`): each in an
    `Envelope` with its command's stamp, the payload its game's codec makes (a seat change is the engine's own);
    and what a command id stored, answered again as its envelopes — from the game's recent envelopes, or for an
    older command from its log as stored (``history``)."""

    def __init__(self, history: Callable[[str, int], Awaitable[History]]) -> None:
        self._history = history

    def encode(self, game: Game, events: Sequence[Any], stamp: Stamp) -> list[Any]:
        return _envelopes(game.game_id, game.position, _payloads(game.rules, events), stamp)

    async def stored(self, game: Game, command_id: str) -> tuple[bytes, Sequence[Any]] | None:
        for index in game.commands.candidates(command_id):
            if index >= game.version:
                continue
            if index + 1 >= game.first_recent:
                envelopes: Sequence[engine_pb2.Envelope] = game.recent[index + 1 - game.first_recent :]
            else:  # a retry of a command older than the game's recent events: its answer is read from the store
                envelopes = (await self._history(game.game_id, index)).envelopes
            answer = [e for e in envelopes[: game.version - index] if e.command_id == command_id]
            if answer:  # else another command whose id hashes alike (`CommandIndex`)
                return answer[0].command_digest, answer
        return None


class EndedGames:
    """The games over held in memory, of which only the ``kept`` that ended last stay: a game over is rarely asked
    for again, so each one beyond is dropped through ``forget`` (the engine's games, `Tending`; their encodings,
    `paiju.engine.watching.Encodings`)."""

    def __init__(self, kept: int, forget: Callable[[str], None] = lambda game_id: None) -> None:
        self.kept = kept
        self.forget = forget
        self._ids: OrderedDict[str, None] = OrderedDict()
        """The games over, the first to end (or to be read ended) first."""

    def held(self, game: Game) -> None:
        """``game`` is held as it now stands: one more game over when it has ended (the game over longest ago is
        forgotten beyond ``kept``)."""
        if game.state.phase.value == "ended" and game.game_id not in self._ids:
            self._ids[game.game_id] = None
            while len(self._ids) > self.kept:
                self.forget(self._ids.popitem(last=False)[0])

    def discard(self, game_id: str) -> None:
        """``game_id`` is no longer held."""
        self._ids.pop(game_id, None)


class Tending:
    """What the engine does when its memory of a game moves (the repository's `paiju.platform.repository.Listener`):
    every event of the feed is counted (``paiju_engine_feed_events_total``); a game held as it now stands has its
    deadline set (`Schedule.moved`) and, ended, is taken off the live set (`LiveSet.moved`) and counted among the
    games over held in memory (`EndedGames`), of which only the `ENDED_GAMES_KEPT` that ended last stay there (the
    others are dropped through its ``forget``, given the repository's once it exists); a game that moved while not
    held has its deadline left to the next scan (`Schedule.lost`)."""

    def __init__(self, live: LiveSet, deadlines: Schedule, ended_kept: int = ENDED_GAMES_KEPT) -> None:
        self._live = live
        self._deadlines = deadlines
        self.ended = EndedGames(ended_kept)

    def fed(self, recorded: Recorded) -> None:
        FEED_EVENTS.inc()

    def remembered(self, game: Game) -> None:
        self._live.moved(game)
        self._deadlines.moved(game)
        self.ended.held(game)

    def forgotten(self, game_id: str) -> None:
        self._deadlines.lost(game_id)


class Games:
    """Load, create and act on games: the engine's game service. It holds a `Repository` of games, given the
    game's `GameFold` and `GameEnvelopes`, and its four collaborators, each a module of its own:

    - ``ownership`` (`OwnedPartitions`): the partitions this replica owns. Replicas share the games out by partition
      (`own`, `paiju.platform.ownership`): a replica's feed carries only the partitions it owns, it keeps those games
      current in memory and runs their timers; any other game it is asked about it reads from the store, and acts on
      it with the position it read, so a request is answered correctly whichever replica it reaches
      (docs/architecture.md, "Ownership of games");
    - ``deadlines`` (`Schedule`): when each game it owns next needs the engine (its turn timers, `due`);
    - ``live`` (`LiveSet`): the games that may still need an engine, read at start instead of every game stored;
    - ``dealing`` (`FairDealing`): the engine's own steps of fair games, taken in the append that makes them due.

    Beside acting (the module's "one move, top to bottom") it creates games with their seats, records seat changes,
    decides without storing (`check`) and reads whole logs (`history`, `load_all`)."""

    def __init__(
        self,
        store: EventStore,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        live: LiveGames | None = None,
        cache_bytes: int = CACHED_GAME_BYTES,
        dealing: FairDealing | None = None,
        *,
        ended_kept: int = ENDED_GAMES_KEPT,
    ) -> None:
        """``live``: where the games that may still need the engine are kept (`paiju.engine.live`), read at start
        instead of every game of the store. ``cache_bytes``: the games held in memory, by their estimated bytes
        (`Game.weight`). ``dealing``: how this engine deals fairly (by default it does not: games from seeds).
        ``ended_kept``: how many games over stay in memory (`ENDED_GAMES_KEPT`)."""
        self._store = store
        self._clock = clock
        self.ownership = OwnedPartitions(store)
        """The partitions this replica owns (every game until `own` says otherwise)."""
        self._unread_partitions: set[int] = set()
        """Partitions gained whose live games' deadlines are not read yet (the read failed: `own` tries again)."""
        self.dealing = dealing if dealing is not None else FairDealing()
        """The engine's part in dealing fairly."""
        self.deadlines = Schedule(self.ownership.owns, self.dealing)
        """When each game this replica owns next needs the engine (its turn timers)."""
        self.live = LiveSet(live, store)
        """The games that may still need the engine."""
        self._fold = GameFold()
        self._turns = Turns()
        """This process's acts on one game, one at a time: each decides on the game the one before it left."""
        tending = Tending(self.live, self.deadlines, ended_kept)
        self.repository: Repository[Game] = Repository(
            store,
            self._fold,
            GameEnvelopes(self.history),
            noun="the game",
            carries=self.ownership.carries,
            listener=tending,
            clock=clock,
            on_conflict=CONFLICTS.inc,
            weigh=_weight,
            cache_bytes=cache_bytes,
        )
        """The games as event-sourced aggregates: the cache kept current by the feed, reads, the act loop."""
        tending.ended.forget = self.repository.forget

    # -- reading: the repository's ------------------------------------------------------------------------------

    @property
    def store(self) -> EventStore:
        return self._store

    async def load(self, game_id: str, min_version: int = 0) -> Game:
        """The game, from memory when it is current there (`Repository.load`); `GameNotFound`."""
        return await self.repository.load(game_id, min_version)

    async def refresh(self, game_id: str) -> Game:
        """The game as stored now (`Repository.refresh`); `GameNotFound`."""
        return await self.repository.refresh(game_id)

    async def reach(self, game_id: str, min_version: int, timeout: float) -> Game:
        """The game at ``min_version`` or later, waited for up to ``timeout`` seconds (`Repository.reach`)."""
        return await self.repository.reach(game_id, min_version, timeout)

    async def next_change(self, game_id: str, version: int) -> Game:
        """The game once it is past ``version`` (`Repository.next_change`)."""
        return await self.repository.next_change(game_id, version)

    async def next_change_unless(self, game_id: str, version: int, stop: asyncio.Event | None) -> Game | None:
        """`next_change`, or ``None`` once ``stop`` is set (`Repository.next_change_unless`)."""
        return await self.repository.next_change_unless(game_id, version, stop)

    def wake_all(self) -> None:
        """Wake every watcher waiting for a change (`Repository.wake_all`)."""
        self.repository.wake_all()

    # -- following, ownership and the timers ------------------------------------------------------------------

    async def follow(self) -> None:
        """Keep cached games current from the store's feed of appended events (call once, at start); the live games'
        deadlines are read at the first scan."""
        await self.repository.follow()
        self.deadlines.unread(await self.live.members())

    def owns(self, game_id: str) -> bool:
        """Whether this replica owns ``game_id``'s partition (keeps it current from its feed, runs its timers)."""
        return self.ownership.owns(game_id)

    async def own(self, partitions: frozenset[int] | None) -> None:
        """From now on this replica owns ``partitions`` (``None``: every game): its feed carries only them, and the
        live games of a partition it gains are read from the store for their deadlines (a new owner rebuilds the
        index from the log). The deadlines of a partition it loses are dropped; its cached games stay, read from
        the store again (from where the cache stands) whenever they are asked for.

        A change NATS fails half-way raises, and the next call (the next round of the leases) finishes it: the
        feed is made then (`OwnedPartitions.own`), and the live games of every partition gained and not read yet
        are read then, however many calls it takes."""
        gained = await self.ownership.own(partitions)
        if gained is not None:
            partition = self.ownership.partition
            for game_id in [g for g in self.repository.held() if partition(g) in gained]:
                self.repository.forget(game_id)  # cached while another replica owned it: maybe behind
            self.deadlines.keep()
            self._unread_partitions |= gained
        owned = self.ownership.partitions
        if owned is not None:
            self._unread_partitions &= owned  # a partition gained and lost again before it was read
        if self._unread_partitions:
            unread, partition = self._unread_partitions, self.ownership.partition
            members = await self.live.members()
            self.deadlines.unread(g for g in members if partition(g) in unread)
            self._unread_partitions = set()

    async def due(self, now: float) -> list[str]:
        """The games whose deadline has passed at ``now`` (seconds), taken out of the deadline index, and those
        whose deadline is not known yet (moved by another replica while not in memory here, or known only from
        the start): what a scan of the turn timers reads (`Schedule.due`). Without the feed, every game of the
        store."""
        if not self.repository.following:
            return await self._store.aggregates()
        return self.deadlines.due(now)

    def reschedule(self, game_id: str) -> None:
        """Set the game's deadline again from the game as this replica holds it (after a scan took it out)."""
        self.deadlines.reschedule(game_id, self.repository.cached(game_id))

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
            self.repository.remember(history.game.game_id, history.game)
        return histories

    async def history(self, game_id: str, after: int = 0) -> History:
        """The game's log as stored now, read from the store: its envelopes and events after version ``after`` (all
        of them by default), and the game they fold to. `GameNotFound` when there is none."""
        stored = await self._store.load(game_id)
        if not stored:
            raise GameNotFound(f"there is no game {game_id!r}")
        whole = replayed(game_id, stored)
        self.repository.remember(game_id, whole.game)
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
        spectators: spectators_pb2.SpectatorPolicy | None = None,
    ) -> Game:
        """Start a game with its first command (``StartMatch`` / ``StartGame``, seed drawn by the caller) and,
        when given, the player in each seat. Creating it again with the same request (``digest``, by default
        the start command's) is answered with the game; `CommandIdReused` when it exists from another one.
        ``spectators``: the game's spectator policy, stored on its first event."""
        rules = RULES[game]
        if seats and len(seats) != seat_count(rules):
            raise ValueError(f"a {rules.name} game has {seat_count(rules)} seats, not {len(seats)}")
        events: list[Any] = list(rules.decide(rules.new_state(), start))
        events += self.dealing.settled(game_id, rules.game, rules.new_state(), events)
        if seats:
            start_seats = engine_pb2.SeatsAssigned(change=engine_pb2.SEAT_CHANGE_START)
            for seat, player in enumerate(seats):
                start_seats.seats.add(seat=seat, player_id=player)
            events.append(start_seats)
        digest = digest or command_digest(rules, start)
        await self.live.add(game_id)  # before its first event: a live game is never missing from the set
        stamp = Stamp(command_id, actor, digest, timestamp_of(self._clock()))
        envelopes = _envelopes(game_id, Position(), _payloads(rules, events), stamp)
        if spectators is not None:  # kept with the game from its first event (`paiju.engine.spectating`)
            envelopes[0].spectators.CopyFrom(spectators)
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
        """Decide and append ``command``; a retried command id returns what it stored the first time (the module's
        "one move, top to bottom").

        ``prepare`` completes the command from the game it is decided on (the engine's shuffle seed for the
        game's version); the command id's digest is of the command before, as its caller sends it every time.
        Raises the core's `RuleError` when the rules reject it (nothing is stored), `StaleVersion` when the game is
        not at ``expected_version``.
        """

        cached = self.repository.cached(game_id)
        if (
            expected_version is not None
            and cached is not None
            and cached.version > expected_version
            and not cached.commands.candidates(command_id)
        ):
            # a game never goes back: past the expected version here, it is past it in the store too (a command
            # already applied is answered as the first time instead, below)
            raise StaleVersion(
                f"the game is at version {cached.version}, not {expected_version}: reload and decide again",
                cached.version,
            )

        def decide(game: Game) -> Sequence[Any]:
            events = list(game.rules.decide(game.state, command if prepare is None else prepare(command, game)))
            steps, after = self.dealing.settled_state(game_id, game.rules.game, game.state, events)
            events += steps
            if after is not None:  # a fair game's state after the events, worked out already: not evolved again
                self._fold.expect(game_id, game.state, events, after)
            return events

        turn = await self._turns.take(game_id)
        try:
            game, stored = await self.repository.execute(
                game_id,
                decide,
                command_id,
                actor,
                lambda game: command_digest(game.rules, command),  # as the caller sent it: a retry sends the same
                expected_version=expected_version,
            )
        finally:
            self._fold.unexpect(game_id)
            self._turns.give_back(game_id, turn)
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

        game, stored = await self.repository.execute(game_id, decide, command_id, actor, digest, fresh=True)
        return game, stored[0].version


class Turns:
    """The acts of this process on each game, taken one at a time (in the order they came): an act decides on the
    game as the one before it left it, instead of racing it to the same position and losing the append (then
    reading the game from the store and deciding again) — as the seats of a fair deal do when they all commit or
    reveal at once. Other writers (another replica) are still told apart by the store's expected sequence. A game
    no act waits for holds nothing."""

    def __init__(self) -> None:
        self._games: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    async def take(self, game_id: str) -> tuple[asyncio.Lock, list[int]]:
        """Wait for the game's turn (`give_back` it once the act is over, whatever happened)."""
        entry = self._games.get(game_id)
        if entry is None:
            entry = self._games[game_id] = (asyncio.Lock(), [0])
        entry[1][0] += 1
        try:
            await entry[0].acquire()
        except BaseException:
            self._leave(game_id, entry)
            raise
        return entry

    def give_back(self, game_id: str, entry: tuple[asyncio.Lock, list[int]]) -> None:
        entry[0].release()
        self._leave(game_id, entry)

    def _leave(self, game_id: str, entry: tuple[asyncio.Lock, list[int]]) -> None:
        entry[1][0] -= 1
        if not entry[1][0] and self._games.get(game_id) is entry:
            del self._games[game_id]

    def __len__(self) -> int:
        """The games some act holds or waits for."""
        return len(self._games)


def _weight(game: Game) -> int:
    return game.weight


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
    "GameEnvelopes",
    "GameFold",
    "GameNotFound",
    "Games",
    "History",
    "Rules",
    "SeatChangeRefused",
    "StaleVersion",
    "Tending",
    "VersionNotReached",
    "assigned",
    "between_deals",
    "command_digest",
    "replayed",
    "seat_count",
]
