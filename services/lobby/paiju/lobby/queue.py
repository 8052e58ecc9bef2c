"""The matchmaking queue as a pure aggregate of the LOBBY stream (``queue``) and the forming of matches from it
(docs/rules/matchmaking.md, the decisions D-MM-n cited below).

One aggregate holds every entry of every game and mode (D-MM-4): so "one entry per account" is one check at one
append, and an entry can be offered to one match only — two replicas forming at once decide on the same version,
and the second's append is refused and decided again, where the entries it wanted are taken.

What that costs (bench/matchmaking.py): every replica holds the state, about 470 bytes per waiting entry, and
the aggregate repository remembers every command id applied to the aggregate (some 370 bytes each, a few per
queued player). So the queue's history comes in generations (`paiju.lobby.generations`): the first is the
aggregate ``queue``, the n-th ``queue-<n>``; once one holds the lobby's `PAIJU_QUEUE_GENERATION_EVENTS` events it
is sealed (`QueueSealed`, refusing every later command with `Sealed`) and its successor begins with the queue as it
left it (`QueueCarried`: entries, offers, recent outcomes, and the ids and digests of the latest commands, whose
retries are answered as the first time). A starting lobby reads only the current generation.

`decide` refuses with a `LobbyError`; `evolve` trusts. `form` is the matchmaker's choice: pure, given the queue, the
time and the entries' ratings, it proposes the matches to offer (`Proposal`: the entries and the player of each
seat). Time comes in with the commands.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from paiju.lobby.table import LobbyError, Mode
from paiju.platform.errors import Reason
from paiju.rules.registry import GAMES

QUEUE = "queue"
"""The queue's aggregate (D-MM-4): its first generation (the later ones: `aggregate_of`)."""
GENERATIONS = "queue-generations"
"""The aggregate that says which generation of the queue is the current one (`QueueGenerationBegun`)."""
BASE_WINDOW = 3.0
"""D-MM-3: how far apart (in rating μ points, the model's scale: 25 at first) two entries may be at once."""
WIDEN_PER_SECOND = 0.2
"""D-MM-3: how much the window widens per second waited (2 points per 10 seconds)."""
MAX_WINDOW = 50.0
"""D-MM-3: the widest window (wider than the ratings spread: after about four minutes anyone matches anyone)."""
CONFIRM_SECONDS = 20
"""D-MM-6: how long the players of an offered match have to confirm it."""
OUTCOMES_KEPT = 1000
"""How many recent ends of entries (seated, dropped) the queue remembers, for the streams that follow them."""
CARRIED_ITEMS = 256
"""How many entries (and as many offers, outcomes and commands) one `QueueCarried` event holds at most: a queue
carried over is as many events as it needs, so that each stays far below a message's size limit (an append of
several is stored as an atomic batch when they are too large together for one message)."""


class LeaveReason(Enum):
    """Why entries left the queue (the contract's `QueueLeaveReason`)."""

    WITHDRAWN = 1
    GONE = 2
    NOT_CONFIRMED = 3
    SEATED = 4


# --- events ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueuedPlayer:
    player_id: str
    name: str
    rating: int
    """The player's rating mean μ when they queued, in hundredths (D-MM-3)."""


@dataclass(frozen=True, slots=True)
class QueueJoined:
    entry_id: str
    mode: Mode
    players: tuple[QueuedPlayer, ...]
    party_id: str
    bot_wait_seconds: int
    at: int
    front: bool
    game: str


@dataclass(frozen=True, slots=True)
class QueueLeft:
    entry_ids: tuple[str, ...]
    reason: LeaveReason
    offer_id: str = ""


@dataclass(frozen=True, slots=True)
class MatchOffered:
    offer_id: str
    mode: Mode
    entry_ids: tuple[str, ...]
    seats: tuple[str, ...]
    confirm_by: int


@dataclass(frozen=True, slots=True)
class MatchConfirmed:
    offer_id: str
    player_id: str


@dataclass(frozen=True, slots=True)
class MatchSeated:
    offer_id: str
    table_id: str


@dataclass(frozen=True, slots=True)
class QueueSealed:
    """The generation takes no more commands: the queue goes on in ``successor``."""

    successor: str
    generation: int


@dataclass(frozen=True, slots=True)
class QueueEntry:
    entry_id: str
    game: str
    mode: Mode
    players: tuple[QueuedPlayer, ...]
    party_id: str
    bot_wait_seconds: int
    at: int
    front: bool
    offer_id: str


@dataclass(frozen=True, slots=True)
class QueueOffer:
    offer_id: str
    game: str
    mode: Mode
    entry_ids: tuple[str, ...]
    seats: tuple[str, ...]
    confirm_by: int
    confirmed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class QueueOutcome:
    entry_id: str
    reason: LeaveReason
    table_id: str
    offer_id: str


@dataclass(frozen=True, slots=True)
class QueueCommand:
    command_id: str
    digest: bytes


@dataclass(frozen=True, slots=True)
class QueueCarried:
    """The first events of a generation: the queue as the one before left it (`carried`), in parts of at most
    `CARRIED_ITEMS` items of each kind (each part adds to the ones before)."""

    generation: int
    previous: str
    entries: tuple[QueueEntry, ...]
    offers: tuple[QueueOffer, ...]
    outcomes: tuple[QueueOutcome, ...]
    commands: tuple[QueueCommand, ...]


@dataclass(frozen=True, slots=True)
class QueueGenerationBegun:
    """(`GENERATIONS`) The queue goes on in ``generation``."""

    generation: int


Event = (
    QueueJoined
    | QueueLeft
    | MatchOffered
    | MatchConfirmed
    | MatchSeated
    | QueueSealed
    | QueueCarried
    | QueueGenerationBegun
)

# --- state ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entry:
    """A player alone or a party, waiting (or offered a match: ``offer_id``)."""

    entry_id: str
    game: str
    mode: Mode
    players: tuple[QueuedPlayer, ...]
    party_id: str
    bot_wait_seconds: int
    at: int
    front: bool
    offer_id: str = ""

    @property
    def rating(self) -> float:
        """The entry's rating: its players' mean (D-MM-2: a party is matched as one)."""
        return sum(p.rating for p in self.players) / len(self.players) / 100

    def window(self, now: int) -> float:
        """D-MM-3: how far from its rating the entry takes others now."""
        return min(MAX_WINDOW, BASE_WINDOW + WIDEN_PER_SECOND * max(0, now - self.at))


@dataclass(frozen=True, slots=True)
class Offer:
    offer_id: str
    game: str
    mode: Mode
    entry_ids: tuple[str, ...]
    seats: tuple[str, ...]
    confirm_by: int
    confirmed: frozenset[str] = frozenset()

    @property
    def humans(self) -> frozenset[str]:
        return frozenset(s for s in self.seats if s)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an entry left: seated at ``table_id`` in ``seat``s, or dropped (``reason``)."""

    entry_id: str
    reason: LeaveReason
    table_id: str = ""
    offer_id: str = ""


@dataclass(frozen=True, slots=True)
class Queue:
    entries: Mapping[str, Entry] = field(default_factory=dict)
    offers: Mapping[str, Offer] = field(default_factory=dict)
    players: Mapping[str, str] = field(default_factory=dict)
    """Player id -> their entry."""
    outcomes: tuple[Outcome, ...] = ()
    generation: int = 0
    """Which generation of the queue's history this aggregate is (`aggregate_of`)."""
    successor: str = ""
    """Sealed: the aggregate the queue goes on in (every command here is refused with `Sealed`)."""
    recent: Mapping[str, bytes] = field(default_factory=dict)
    """The latest commands of the generations before (command id -> digest): their retries are answered here as the
    first time (`paiju.lobby.generations`)."""
    begun: bool = False
    """A later generation: carried over already (`Carry` does nothing again)."""

    def entry_of(self, player_id: str) -> Entry | None:
        entry_id = self.players.get(player_id)
        return self.entries.get(entry_id) if entry_id else None

    def outcome(self, entry_id: str) -> Outcome | None:
        return next((o for o in reversed(self.outcomes) if o.entry_id == entry_id), None)


# --- commands -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Enqueue:
    entry_id: str
    game: str
    mode: Mode
    players: tuple[QueuedPlayer, ...]
    party_id: str
    bot_wait_seconds: int
    at: int


@dataclass(frozen=True, slots=True)
class Withdraw:
    """The entry's player (a party: its leader) leaves, or (``reason`` GONE) no stream of theirs stayed open."""

    player_id: str
    reason: LeaveReason = LeaveReason.WITHDRAWN
    entry_id: str = ""
    """GONE: only if the player's entry is still this one."""


@dataclass(frozen=True, slots=True)
class Propose:
    offer_id: str
    entry_ids: tuple[str, ...]
    seats: tuple[str, ...]
    confirm_by: int


@dataclass(frozen=True, slots=True)
class Confirm:
    offer_id: str
    player_id: str


@dataclass(frozen=True, slots=True)
class Lapse:
    """The confirmation window of ``offer_id`` is over at ``now``: its non-confirmers' entries are dropped."""

    offer_id: str
    now: int


@dataclass(frozen=True, slots=True)
class Seat:
    offer_id: str
    table_id: str


@dataclass(frozen=True, slots=True)
class Seal:
    """Close the generation (the ``generation``-th): the queue goes on in the next."""

    generation: int


@dataclass(frozen=True, slots=True)
class Carry:
    """Begin a generation with the queue as its predecessor was sealed (`carried`)."""

    parts: tuple[QueueCarried, ...]


@dataclass(frozen=True, slots=True)
class BeginGeneration:
    """(`GENERATIONS`) The queue goes on in ``generation`` (carried over already)."""

    generation: int


class Sealed(Exception):
    """A command reached a generation of the queue that is sealed: it is decided again in ``successor``."""

    def __init__(self, successor: str) -> None:
        super().__init__(f"the queue goes on in {successor}")
        self.successor = successor


def aggregate_of(generation: int) -> str:
    """The aggregate of the queue's ``generation``: ``queue``, then ``queue-1``, ``queue-2``..."""
    return QUEUE if generation == 0 else f"{QUEUE}-{generation}"


def carried(queue: Queue, previous: str, commands: Iterable[tuple[str, bytes]]) -> tuple[QueueCarried, ...]:
    """What the generation after ``queue`` (sealed, the aggregate ``previous``) begins with: its entries, offers and
    outcomes, and ``commands`` (the latest commands applied, oldest first), in a deterministic order (two lobbies
    carrying the same sealed queue over write the same events), in parts of at most `CARRIED_ITEMS` of each."""
    whole = QueueCarried(
        queue.generation + 1,
        previous,
        tuple(
            QueueEntry(e.entry_id, e.game, e.mode, e.players, e.party_id, e.bot_wait_seconds, e.at, e.front, e.offer_id)
            for e in queue.entries.values()
        ),
        tuple(
            QueueOffer(o.offer_id, o.game, o.mode, o.entry_ids, o.seats, o.confirm_by, tuple(sorted(o.confirmed)))
            for o in queue.offers.values()
        ),
        tuple(QueueOutcome(o.entry_id, o.reason, o.table_id, o.offer_id) for o in queue.outcomes),
        tuple(QueueCommand(c, d) for c, d in commands),
    )
    items = max(len(whole.entries), len(whole.offers), len(whole.outcomes), len(whole.commands), 1)
    return tuple(
        replace(
            whole,
            entries=whole.entries[at : at + CARRIED_ITEMS],
            offers=whole.offers[at : at + CARRIED_ITEMS],
            outcomes=whole.outcomes[at : at + CARRIED_ITEMS],
            commands=whole.commands[at : at + CARRIED_ITEMS],
        )
        for at in range(0, items, CARRIED_ITEMS)
    )


# --- decide ---------------------------------------------------------------------------------------------


def decide(queue: Queue, command: Any) -> list[Any]:
    """The events of ``command`` in ``queue``, or `LobbyError` saying why not; `Sealed` when the queue goes on in
    another generation."""
    if isinstance(command, Carry):
        return [] if queue.begun else list(command.parts)
    if queue.successor:
        if isinstance(command, Seal):
            return []
        raise Sealed(queue.successor)
    if isinstance(command, Seal):
        return [QueueSealed(aggregate_of(command.generation + 1), command.generation + 1)]
    if isinstance(command, Enqueue):
        if not command.players or command.game not in GAMES:
            raise LobbyError(Reason.INVALID_REQUEST, "an entry names a game and its players")
        if len(command.players) > GAMES[command.game].team_size:
            raise LobbyError(Reason.PARTY_FULL, "a party larger than a team cannot queue")
        for player in command.players:
            entry = queue.entry_of(player.player_id)
            if entry is None:
                continue
            if entry.entry_id == command.entry_id:
                return []
            raise LobbyError(
                Reason.ALREADY_QUEUED,
                f"{player.name} is queued already ({entry.game}, {entry.mode.value}): leave the queue first",
                {"game": entry.game, "mode": entry.mode.value},
            )
        if queue.outcome(command.entry_id) is not None:
            return []  # the entry was queued and has left: a late retry queues it again no more
        bot_wait = command.bot_wait_seconds if command.mode is Mode.CASUAL else 0  # D-MM-7: ranked, humans only
        return [
            QueueJoined(
                command.entry_id,
                command.mode,
                command.players,
                command.party_id,
                bot_wait,
                command.at,
                False,
                command.game,
            )
        ]
    if isinstance(command, Withdraw):
        entry = queue.entry_of(command.player_id)
        if entry is None or (command.entry_id and entry.entry_id != command.entry_id):
            if command.reason is LeaveReason.WITHDRAWN:
                raise LobbyError(Reason.NOT_QUEUED, "you are not in the queue")
            return []
        return [QueueLeft((entry.entry_id,), command.reason, entry.offer_id)]
    if isinstance(command, Propose):
        if command.offer_id in queue.offers:
            return []  # offered already
        entries = [queue.entries.get(e) for e in command.entry_ids]
        if any(e is None or e.offer_id for e in entries):
            raise LobbyError(Reason.NOT_QUEUED, "an entry of this offer left the queue or is offered another match")
        first = entries[0]
        assert first is not None
        return [MatchOffered(command.offer_id, first.mode, command.entry_ids, command.seats, command.confirm_by)]
    if isinstance(command, Confirm):
        offer = queue.offers.get(command.offer_id)
        if offer is None or command.player_id not in offer.humans:
            raise LobbyError(Reason.NOT_QUEUED, "there is no offer of that id for you (it was seated or fell through)")
        if command.player_id in offer.confirmed:
            return []
        return [MatchConfirmed(command.offer_id, command.player_id)]
    if isinstance(command, Lapse):
        offer = queue.offers.get(command.offer_id)
        if offer is None or command.now < offer.confirm_by or offer.confirmed >= offer.humans:
            return []
        # D-MM-8: every entry with a player who did not confirm is dropped (a party as a whole); the others stay
        missing = offer.humans - offer.confirmed
        dropped = tuple(e for e in offer.entry_ids if any(p.player_id in missing for p in queue.entries[e].players))
        return [QueueLeft(dropped, LeaveReason.NOT_CONFIRMED, offer.offer_id)]
    if isinstance(command, Seat):
        offer = queue.offers.get(command.offer_id)
        if offer is None:
            return []
        if not offer.confirmed >= offer.humans:
            raise LobbyError(Reason.NOT_QUEUED, "not every player confirmed this match yet")
        return [MatchSeated(command.offer_id, command.table_id)]
    raise LobbyError(Reason.INVALID_REQUEST, f"not a queue command: {type(command).__name__}")


# --- evolve ---------------------------------------------------------------------------------------------


def _without(
    queue: Queue, entry_ids: Sequence[str], outcome: Any
) -> tuple[dict[str, Entry], dict[str, str], tuple[Outcome, ...]]:
    entries = dict(queue.entries)
    players = dict(queue.players)
    ends = list(queue.outcomes)
    for entry_id in entry_ids:
        entry = entries.pop(entry_id, None)
        if entry is None:
            continue
        for p in entry.players:
            if players.get(p.player_id) == entry_id:
                del players[p.player_id]
        ends.append(outcome(entry_id))
    return entries, players, tuple(ends[-OUTCOMES_KEPT:])


def evolve(queue: Queue, event: Any) -> Queue:
    if isinstance(event, QueueSealed):
        return replace(queue, successor=event.successor)
    if isinstance(event, QueueCarried):  # the first part starts the generation, the others add to it
        base = queue if queue.begun and queue.generation == event.generation else Queue()
        added = {
            e.entry_id: Entry(
                e.entry_id, e.game, e.mode, e.players, e.party_id, e.bot_wait_seconds, e.at, e.front, e.offer_id
            )
            for e in event.entries
        }
        offers = {
            o.offer_id: Offer(o.offer_id, o.game, o.mode, o.entry_ids, o.seats, o.confirm_by, frozenset(o.confirmed))
            for o in event.offers
        }
        return Queue(
            {**base.entries, **added},
            {**base.offers, **offers},
            {**base.players, **{p.player_id: e.entry_id for e in added.values() for p in e.players}},
            (*base.outcomes, *(Outcome(o.entry_id, o.reason, o.table_id, o.offer_id) for o in event.outcomes)),
            event.generation,
            "",
            {**base.recent, **{c.command_id: c.digest for c in event.commands}},
            True,
        )
    if isinstance(event, QueueJoined):
        entry = Entry(
            event.entry_id,
            event.game,
            event.mode,
            event.players,
            event.party_id,
            event.bot_wait_seconds,
            event.at,
            event.front,
        )
        players = dict(queue.players)
        players.update((p.player_id, entry.entry_id) for p in entry.players)
        return replace(queue, entries={**queue.entries, entry.entry_id: entry}, players=players)
    if isinstance(event, QueueLeft):
        entries, players, outcomes = _without(
            queue, event.entry_ids, lambda e: Outcome(e, event.reason, offer_id=event.offer_id)
        )
        offers = dict(queue.offers)
        offer = offers.pop(event.offer_id, None) if event.offer_id else None
        if offer is not None:  # D-MM-8: the offer fell through; its other entries wait again, at the front
            for entry_id in offer.entry_ids:
                if entry_id in entries:
                    entries[entry_id] = replace(entries[entry_id], offer_id="", front=True)
        return replace(queue, entries=entries, offers=offers, players=players, outcomes=outcomes)
    if isinstance(event, MatchOffered):
        entries = dict(queue.entries)
        for entry_id in event.entry_ids:
            entries[entry_id] = replace(entries[entry_id], offer_id=event.offer_id)
        game = entries[event.entry_ids[0]].game
        offer = Offer(event.offer_id, game, event.mode, event.entry_ids, event.seats, event.confirm_by)
        return replace(queue, entries=entries, offers={**queue.offers, event.offer_id: offer})
    if isinstance(event, MatchConfirmed):
        offer = queue.offers[event.offer_id]
        confirmed = replace(offer, confirmed=offer.confirmed | {event.player_id})
        return replace(queue, offers={**queue.offers, event.offer_id: confirmed})
    if isinstance(event, MatchSeated):
        offers = dict(queue.offers)
        offer = offers.pop(event.offer_id)
        entries, players, outcomes = _without(
            queue,
            offer.entry_ids,
            lambda e: Outcome(e, LeaveReason.SEATED, event.table_id, event.offer_id),
        )
        return replace(queue, entries=entries, offers=offers, players=players, outcomes=outcomes)
    raise TypeError(f"not a queue event: {type(event).__name__}")


def decide_generation(current: int, command: Any) -> list[Any]:
    """(`GENERATIONS`) The queue goes on in a later generation; never back."""
    if not isinstance(command, BeginGeneration):
        raise LobbyError(Reason.INVALID_REQUEST, f"not a queue generation command: {type(command).__name__}")
    return [] if command.generation <= current else [QueueGenerationBegun(command.generation)]


def evolve_generation(current: int, event: Any) -> int:
    if not isinstance(event, QueueGenerationBegun):
        raise TypeError(f"not a queue generation event: {type(event).__name__}")
    return max(current, event.generation)


# --- forming --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Proposal:
    """A match to offer: its entries and the player of each seat (empty: a bot)."""

    entry_ids: tuple[str, ...]
    seats: tuple[str, ...]


def team_seats(game: str, team: int) -> list[int]:
    """The seats of a team: alternating seats (砸六家 0/2/4 and 1/3/5; 拖拉机 partners opposite, 0/2 and 1/3)."""
    return list(range(team, GAMES[game].seats, 2))


def _pack(game: str, entries: Iterable[Entry]) -> tuple[list[Entry], list[Entry]] | None:
    """Two teams of whole entries (D-MM-2: an entry is never split), filled in the given order, first fit; ``None``
    when the entries given do not fill both."""
    size = GAMES[game].team_size
    teams: tuple[list[Entry], list[Entry]] = ([], [])
    room = [size, size]
    for entry in entries:
        n = len(entry.players)
        team = 0 if room[0] >= n else 1 if room[1] >= n else None
        if team is None:
            continue
        teams[team].append(entry)
        room[team] -= n
        if room == [0, 0]:
            return teams
    return None


def _seats(game: str, teams: tuple[list[Entry], list[Entry]]) -> tuple[str, ...]:
    seats = [""] * GAMES[game].seats
    for team, members in enumerate(teams):
        places = team_seats(game, team)
        players = [p.player_id for e in members for p in e.players]
        for place, player in zip(places, players, strict=False):
            seats[place] = player
    return tuple(seats)


def waiting_order(entries: Sequence[Entry]) -> list[Entry]:
    """D-MM-8: those kept at the front first, then by the time they joined (then their id, for a stable order)."""
    return sorted(entries, key=lambda e: (not e.front, e.at, e.entry_id))


SMALL_RANGE = 64
"""An anchor with at most this many entries within its window looks at just those (sorted into the waiting order);
one with more scans the waiting order itself, and stops once its table is full (`form`)."""
BISECT_SLACK = 1e-9
"""How much wider than the window, relative to the numbers, an anchor's bisection looks: more than a rounding error."""


def form(queue: Queue, game: str, mode: Mode, now: int) -> list[Proposal]:
    """The matches to offer now in ``game`` and ``mode`` (D-MM-3, D-MM-7): for each waiting entry in the waiting
    order (the *anchor*), the entries within its window — and it within theirs — in the same order, packed into two
    teams; an entry that finds no full table waits, unless casual and its bot wait is over: then the entries whose
    bot wait is over too join it, and bots fill the empty seats.

    The entries are ranked by rating once per round, so an anchor finds those within its window by bisection: one
    too far from everyone costs a logarithm, not a pass over the queue (bench/matchmaking.py)."""
    free = waiting_order([e for e in queue.entries.values() if e.game == game and e.mode is mode and not e.offer_id])
    n = len(free)
    need = 2 * GAMES[game].team_size
    ratings = [e.rating for e in free]
    windows = [e.window(now) for e in free]
    sizes = [len(e.players) for e in free]
    by_rating = sorted(range(n), key=ratings.__getitem__)
    sorted_ratings = [ratings[i] for i in by_rating]
    players_below = [0]
    for i in by_rating:
        players_below.append(players_below[-1] + sizes[i])
    taken = bytearray(n)
    proposals = []

    def fits(a: int, b: int) -> bool:
        gap = abs(ratings[a] - ratings[b])
        return gap <= windows[a] and gap <= windows[b]

    for a, anchor in enumerate(free):
        if taken[a]:
            continue
        # the bounds a little wide: ``rating + window`` is rounded, and may fall short of a rating whose gap to the
        # anchor is exactly the window (7.02 + 50 < 57.02, whose gap is 50.0); `fits` decides, exactly, after
        slack = BISECT_SLACK * (abs(ratings[a]) + windows[a] + 1)
        lo = bisect.bisect_left(sorted_ratings, ratings[a] - windows[a] - slack)
        hi = bisect.bisect_right(sorted_ratings, ratings[a] + windows[a] + slack)
        bots = mode is Mode.CASUAL and _bots_allowed(anchor, now)
        if not bots and players_below[hi] - players_below[lo] < need:
            continue  # not enough players within its window, even counting those taken already
        if hi - lo <= SMALL_RANGE:
            candidates: Iterable[int] = sorted(i for i in by_rating[lo:hi] if i != a and not taken[i] and fits(a, i))
        else:
            candidates = (i for i in range(n) if i != a and not taken[i] and fits(a, i))
        looked: list[int] = []

        def recorded(found: Iterable[int] = candidates, looked: list[int] = looked) -> Iterator[Entry]:
            for i in found:
                looked.append(i)
                yield free[i]

        teams = _pack(game, itertools.chain((anchor,), recorded()))
        if teams is None and bots:  # _pack looked at every candidate
            teams = _with_bots(game, anchor, [free[i] for i in looked], now)
        if teams is None:
            continue
        chosen = [e for team in teams for e in team]
        index = {e.entry_id: i for i, e in ((a, anchor), *((i, free[i]) for i in looked))}
        for e in chosen:
            taken[index[e.entry_id]] = 1
        proposals.append(Proposal(tuple(e.entry_id for e in chosen), _seats(game, teams)))
    return proposals


def _with_bots(game: str, anchor: Entry, near: Sequence[Entry], now: int) -> tuple[list[Entry], list[Entry]] | None:
    """D-MM-7: a casual table with bots in its empty seats, of the entries whose bot wait is over (the anchor's
    first), when the anchor's is."""
    if not _bots_allowed(anchor, now):
        return None
    size = GAMES[game].team_size
    teams: tuple[list[Entry], list[Entry]] = ([], [])
    room = [size, size]
    for entry in [anchor, *(e for e in near if _bots_allowed(e, now))]:
        n = len(entry.players)
        team = 0 if room[0] >= n else 1 if room[1] >= n else None
        if team is not None:
            teams[team].append(entry)
            room[team] -= n
    return teams


def _bots_allowed(entry: Entry, now: int) -> bool:
    return entry.mode is Mode.CASUAL and entry.bot_wait_seconds > 0 and now - entry.at >= entry.bot_wait_seconds
