"""A table of the lobby as an event-sourced aggregate: seats, bots, readiness, matches (docs/architecture.md, "Lobby").

Pure like the rules cores: `decide(table, command) -> events` validates and may refuse with a `LobbyError`
that says why; `evolve(table, event) -> table` trusts. Time comes in with the commands that need it.

A table holds one game's seats (6 for 砸六家, 4 for 拖拉机). People take seats, the owner adds bots,
everyone seated says ready, and the owner starts a match: `MatchStarted` names the game id and who sits
where; the engine creates the game from it. During a match a player who leaves, or whom the owner removes,
is replaced by a bot for the rest of the match; a player who drops out is covered by a bot until back
(`SeatCovered` / `SeatReturned`). Bot runners lease the bot seats of running matches, one runner per seat.
Swaps and substitutes during a match happen only between deals: the engine is asked first, since it knows
the deal; tribute relations stay with the seats (砸六家 §9).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from paiju.contract import games as contract
from paiju.platform.errors import Reason, Refused
from paiju.platform.repository import AFTER_LEGACY_DIGEST
from paiju.platform.text import has_control
from paiju.rules.registry import GAMES
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model

SEATS = {name: rules.seats for name, rules in GAMES.items()}
OPTIONS_FIELDS = {name: codecs.options_field for name, codecs in contract.GAMES.items()}
"""The field of each game's options in a table, its commands and events (named as in the contract's messages)."""
TOURNAMENT_TURN_SECONDS = 10
"""The turn timer of the tournament preset (拖拉机 §11: 10 seconds; the same for 砸六家 tournament tables)."""
DELAYED_MOVES = 6
"""How many moves behind spectators watch a ranked or tournament table opened without a policy of its own
(docs/rules/spectators.md, D-SPEC-3)."""
MOST_DELAYED_MOVES = 16
"""The longest delay a table may choose, in moves (D-SPEC-2: the engine keeps a game's latest 24 events in memory, so
a delayed spectator is served from memory like any other)."""


class Mode(StrEnum):
    """How a table's matches are rated (docs/rules/ratings.md, D-RATE-9): the contract's `MatchMode`, in its order.
    A table opened without one is not rated."""

    RANKED = "ranked"
    CASUAL = "casual"


@dataclass(frozen=True, slots=True)
class Spectators:
    """Who may watch a table's games and how far behind (the contract's `SpectatorPolicy`, docs/rules/spectators.md):
    ``closed``, no spectators at all; else spectators see the game ``delay_moves`` events behind (0: live)."""

    closed: bool = False
    delay_moves: int = 0


def spectators_of(tournament: bool, mode: Mode | None, chosen: Spectators | None) -> Spectators | None:
    """The policy a table is opened with: the one chosen, else delayed for ranked and tournament tables (D-SPEC-3),
    else none (``None``: public, and recorded as nothing, as before policies existed)."""
    if chosen is not None:
        return chosen
    if tournament or mode is Mode.RANKED:
        return Spectators(delay_moves=DELAYED_MOVES)
    return None


class Status(StrEnum):
    NEW = "new"  # no table yet
    OPEN = "open"  # filling seats
    PLAYING = "playing"
    FINISHED = "finished"  # the last match is over
    EXPIRED = "expired"  # closed: nobody sat at it and no match was in play for the lobby's idle time


class LobbyError(Refused):
    """A refused lobby command: the contract's ``reason`` (errors.proto) and a ``message`` for people."""

    def __init__(self, reason: Reason, message: str, metadata: dict[str, object] | None = None) -> None:
        super().__init__(reason, message, metadata)


@dataclass(frozen=True, slots=True)
class Seat:
    """One seat: its player (empty: free), whether a bot, ready, covered by a bot, leased to a bot runner."""

    player_id: str = ""
    name: str = ""
    bot: bool = False
    ready: bool = False
    covered: bool = False
    runner: str = ""
    lease_until: int = 0
    strength: str = ""
    """A seated bot's strength (docs/bots.md, "Strengths"); empty: the default, ``heuristic``."""

    @property
    def free(self) -> bool:
        return not self.player_id

    @property
    def played_by_bot(self) -> bool:
        return self.bot or self.covered


@dataclass(frozen=True, slots=True)
class Result:
    """A finished match: 砸六家 team and individual points, or 拖拉机 winner (``None``: equal) and levels."""

    team_points: tuple[int, ...] = ()
    individual_points: tuple[int, ...] = ()
    winner_team: int | None = None
    levels: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Table:
    table_id: str = ""
    name: str = ""
    game: str = ""
    owner: str = ""
    tournament: bool = False
    zlj_options: zlj_model.Options | None = None
    tractor_options: tractor_model.Options | None = None
    mode: Mode | None = None
    seats: tuple[Seat, ...] = ()
    status: Status = Status.NEW
    game_id: str = ""
    matches: int = 0
    last_result: Result | None = None
    last_game_id: str = ""
    """The game ``last_result`` is the result of: ``game_id`` names the next match's game once it has started."""
    spectators: Spectators | None = None
    """Who may watch its games (``None``: public, as every table opened before policies existed)."""

    def seat_of(self, player_id: str) -> int | None:
        return next((i for i, s in enumerate(self.seats) if s.player_id == player_id and not s.bot), None)


def bot_id(table_id: str, number: int) -> str:
    """The player id of a table's bot number ``number``."""
    return f"bot-{table_id}-{number}"


def cover_id(table_id: str, seat: int) -> str:
    """The player id of the bot that covers for an absent player in ``seat``."""
    return f"cover-{table_id}-{seat}"


def new_bot_id(table: Table) -> str:
    """The id of the next bot seated at ``table``: the lowest number no seat uses (ids stay unique however
    bots are swapped around)."""
    used = {s.player_id for s in table.seats}
    return next(bot_id(table.table_id, n) for n in range(len(table.seats) + 1) if bot_id(table.table_id, n) not in used)


def bot_taking_over(table: Table, seat: int) -> str:
    """Who plays ``seat`` when its player leaves during a match: a new bot (a covering bot's runner keeps its
    lease of the seat, see `evolve`)."""
    return new_bot_id(table)


def game_id_of(table_id: str, match: int) -> str:
    """The engine game of a table's ``match``-th match (1-based): the same whoever starts it, so the
    engine creates it once."""
    return f"{table_id}-m{match}"


# --- commands -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenTable:
    table_id: str
    name: str
    game: str
    owner: str
    tournament: bool = False
    zlj_options: zlj_model.Options | None = None
    tractor_options: tractor_model.Options | None = None
    mode: Mode | None = field(default=None, metadata=AFTER_LEGACY_DIGEST)
    spectators: Spectators | None = field(default=None, metadata=AFTER_LEGACY_DIGEST)
    """The policy chosen (``None``: the default of `spectators_of`)."""


@dataclass(frozen=True, slots=True)
class TakeSeat:
    player_id: str
    name: str
    seat: int | None = None


@dataclass(frozen=True, slots=True)
class LeaveSeat:
    player_id: str


@dataclass(frozen=True, slots=True)
class AddBot:
    by: str
    seat: int | None = None
    strength: str = field(default="", metadata=AFTER_LEGACY_DIGEST)


@dataclass(frozen=True, slots=True)
class RemovePlayer:
    by: str
    seat: int


@dataclass(frozen=True, slots=True)
class SwapSeats:
    by: str
    seat: int
    other_seat: int


@dataclass(frozen=True, slots=True)
class Substitute:
    by: str
    seat: int
    player_id: str
    name: str


@dataclass(frozen=True, slots=True)
class SetReady:
    player_id: str
    ready: bool


@dataclass(frozen=True, slots=True)
class StartMatch:
    by: str


@dataclass(frozen=True, slots=True)
class CoverSeat:
    """A bot covers an absent player's seat (the grace time after the player dropped has passed)."""

    seat: int


@dataclass(frozen=True, slots=True)
class ReturnToSeat:
    player_id: str


@dataclass(frozen=True, slots=True)
class LeaseSeat:
    runner: str
    seat: int
    now: int
    until: int


@dataclass(frozen=True, slots=True)
class FinishMatch:
    game_id: str
    result: Result


Command = (
    OpenTable
    | TakeSeat
    | LeaveSeat
    | AddBot
    | RemovePlayer
    | SwapSeats
    | Substitute
    | SetReady
    | StartMatch
    | CoverSeat
    | ReturnToSeat
    | LeaseSeat
    | FinishMatch
)

# --- events ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TableOpened:
    table_id: str
    name: str
    game: str
    owner: str
    tournament: bool
    zlj_options: zlj_model.Options | None
    tractor_options: tractor_model.Options | None
    mode: Mode | None = None
    spectators: Spectators | None = None


@dataclass(frozen=True, slots=True)
class SeatTaken:
    seat: int
    player_id: str
    name: str


@dataclass(frozen=True, slots=True)
class SeatLeft:
    """The seat's player left (or was removed); during a match a bot takes the seat over (``bot``)."""

    seat: int
    player_id: str
    removed: bool
    bot: bool


@dataclass(frozen=True, slots=True)
class BotSeated:
    seat: int
    player_id: str
    strength: str = ""


@dataclass(frozen=True, slots=True)
class SeatsSwapped:
    seat: int
    other_seat: int


@dataclass(frozen=True, slots=True)
class Substituted:
    seat: int
    player_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ReadyChanged:
    seat: int
    ready: bool


@dataclass(frozen=True, slots=True)
class MatchStarted:
    """A match starts: everything the engine needs to create its game (the options include the preset's)."""

    game_id: str
    match: int
    players: tuple[str, ...]
    game: str
    zlj_options: zlj_model.Options | None
    tractor_options: tractor_model.Options | None
    mode: Mode | None = None
    spectators: Spectators | None = None


@dataclass(frozen=True, slots=True)
class SeatCovered:
    seat: int


@dataclass(frozen=True, slots=True)
class SeatReturned:
    seat: int


@dataclass(frozen=True, slots=True)
class SeatLeased:
    seat: int
    runner: str
    until: int


@dataclass(frozen=True, slots=True)
class MatchFinished:
    game_id: str
    result: Result


@dataclass(frozen=True, slots=True)
class ExpireTable:
    """Close a table nobody has sat at, with no match in play, for ``idle_seconds`` (the lobby's deadline)."""

    idle_seconds: int


@dataclass(frozen=True, slots=True)
class TableExpired:
    idle_seconds: int


Event = (
    TableOpened
    | SeatTaken
    | SeatLeft
    | BotSeated
    | SeatsSwapped
    | Substituted
    | ReadyChanged
    | MatchStarted
    | SeatCovered
    | SeatReturned
    | SeatLeased
    | MatchFinished
    | TableExpired
)


PLAYER_OWNER = "account-"
QUEUE_OWNER = "matchmaking"
"""The owner of the tables the matchmaking queue opens, one match each (`paiju.lobby.matchmaking`)."""
"""The owner ids of the tables players open (account keys): an operator's or the lobby's tables are not theirs."""


def expirable(table: Table) -> bool:
    """Whether ``table`` would expire when left alone: a table a player opened (not an operator's, not a tournament
    round's), open or finished, with no person seated (bots do not keep a table) and no match in play; or a table the
    queue opened, once its match has ended (or while it is still open), whoever sits at it: only its owner, the
    queue, could start another match there, and it never does — its players queue again."""
    if table.owner == QUEUE_OWNER:
        return table.status in (Status.OPEN, Status.FINISHED) and not table.tournament
    return (
        table.status in (Status.OPEN, Status.FINISHED)
        and not table.tournament
        and table.owner.startswith(PLAYER_OWNER)
        and all(seat.free or seat.bot for seat in table.seats)
    )


def counts_against_owner(table: Table) -> bool:
    """Whether ``table`` is one of its owner's open tables (open or playing: a finished one is not)."""
    return table.status in (Status.OPEN, Status.PLAYING)


# --- decide ---------------------------------------------------------------------------------------------


def _seat_index(table: Table, seat: int) -> int:
    if not 0 <= seat < len(table.seats):
        raise LobbyError(
            Reason.INVALID_REQUEST,
            f"a {table.game} table has seats 0..{len(table.seats) - 1}, not {seat}",
            {"field": "seat"},
        )
    return seat


def _free_seat(table: Table, seat: int | None) -> int:
    if seat is not None:
        if not table.seats[_seat_index(table, seat)].free:
            raise LobbyError(Reason.SEAT_TAKEN, f"seat {seat} is taken", {"seat": seat})
        return seat
    free = next((i for i, s in enumerate(table.seats) if s.free), None)
    if free is None:
        raise LobbyError(Reason.TABLE_FULL, "the table is full")
    return free


def _owner(table: Table, by: str) -> None:
    if by != table.owner:
        raise LobbyError(Reason.NOT_TABLE_OWNER, "only the table's owner may do that")


def _not_playing(table: Table, what: str) -> None:
    if table.status is Status.PLAYING:
        raise LobbyError(Reason.MATCH_IN_PROGRESS, f"a match is being played: {what} after it")


def decide(table: Table, command: Any) -> list[Any]:
    """The events of ``command`` at ``table``, or `LobbyError` with the reason it is refused."""
    if isinstance(command, OpenTable):
        if table.status is not Status.NEW:
            raise LobbyError(Reason.TABLE_EXISTS, f"table {table.table_id} exists already")
        if command.game not in SEATS:
            raise LobbyError(Reason.INVALID_REQUEST, f"a table plays {' or '.join(SEATS)}")
        name = command.name.strip()
        if not name or len(name) > 60 or has_control(name):
            raise LobbyError(Reason.INVALID_REQUEST, "a table's name has 1..60 characters, no control characters")
        if any(getattr(command, field) is not None for game, field in OPTIONS_FIELDS.items() if game != command.game):
            raise LobbyError(Reason.INVALID_OPTIONS, f"a {command.game} table takes {command.game} options only")
        options = {field: getattr(command, field) for field in OPTIONS_FIELDS.values()}
        mode = None if command.tournament else command.mode
        policy = command.spectators
        if policy is not None and not 0 <= policy.delay_moves <= MOST_DELAYED_MOVES:
            raise LobbyError(
                Reason.INVALID_REQUEST,
                f"spectators are delayed by 0..{MOST_DELAYED_MOVES} moves",
                {"field": "spectators.delay_moves"},
            )
        return [
            TableOpened(
                command.table_id,
                command.name.strip(),
                command.game,
                command.owner,
                command.tournament,
                **options,
                mode=mode,
                spectators=spectators_of(command.tournament, mode, policy),
            )
        ]
    if table.status is Status.NEW:
        raise LobbyError(Reason.TABLE_NOT_FOUND, "there is no such table")
    if table.status is Status.EXPIRED:
        raise LobbyError(Reason.TABLE_NOT_FOUND, "this table expired: nobody sat at it for a long while")
    if isinstance(command, ExpireTable):
        if not expirable(table):
            raise LobbyError(Reason.MATCH_IN_PROGRESS, "a person sits at this table or a match is in play")
        return [TableExpired(command.idle_seconds)]
    if isinstance(command, TakeSeat):
        _not_playing(table, "take a seat")
        if table.seat_of(command.player_id) is not None:
            seat = table.seat_of(command.player_id)
            raise LobbyError(Reason.ALREADY_SEATED, f"you sit in seat {seat} already", {"seat": seat})
        return [SeatTaken(_free_seat(table, command.seat), command.player_id, command.name)]
    if isinstance(command, LeaveSeat):
        seat = table.seat_of(command.player_id)
        if seat is None:
            raise LobbyError(Reason.NOT_SEATED, "you are not seated at this table")
        return [SeatLeft(seat, command.player_id, removed=False, bot=table.status is Status.PLAYING)]
    if isinstance(command, AddBot):
        _owner(table, command.by)
        _not_playing(table, "add bots")
        seat = _free_seat(table, command.seat)
        return [BotSeated(seat, new_bot_id(table), command.strength)]
    if isinstance(command, RemovePlayer):
        _owner(table, command.by)
        place = table.seats[_seat_index(table, command.seat)]
        if place.free:
            raise LobbyError(Reason.SEAT_EMPTY, f"seat {command.seat} is free", {"seat": command.seat})
        playing = table.status is Status.PLAYING
        if place.bot and playing:
            raise LobbyError(Reason.SEAT_HELD_BY_BOT, "a bot plays this seat until the match ends")
        return [SeatLeft(command.seat, place.player_id, removed=True, bot=playing)]
    if isinstance(command, SwapSeats):
        _owner(table, command.by)
        a, b = _seat_index(table, command.seat), _seat_index(table, command.other_seat)
        if a == b:
            raise LobbyError(Reason.INVALID_REQUEST, "a swap needs two different seats", {"field": "other_seat"})
        return [SeatsSwapped(a, b)]
    if isinstance(command, Substitute):
        _owner(table, command.by)
        place = table.seats[_seat_index(table, command.seat)]
        if place.free:
            raise LobbyError(
                Reason.SEAT_EMPTY, f"seat {command.seat} is free: the player may take it", {"seat": command.seat}
            )
        if table.seat_of(command.player_id) is not None:
            raise LobbyError(Reason.ALREADY_SEATED, f"{command.name} sits at this table already")
        return [Substituted(command.seat, command.player_id, command.name)]
    if isinstance(command, SetReady):
        seat = table.seat_of(command.player_id)
        if seat is None:
            raise LobbyError(Reason.NOT_SEATED, "you are not seated at this table")
        _not_playing(table, "say ready")
        return [ReadyChanged(seat, command.ready)] if table.seats[seat].ready != command.ready else []
    if isinstance(command, StartMatch):
        _owner(table, command.by)
        _not_playing(table, "start the next one")
        free = [i for i, s in enumerate(table.seats) if s.free]
        if free:
            seats = ", ".join(map(str, free))
            raise LobbyError(
                Reason.TABLE_NOT_READY, f"every seat must be filled first (free: {seats})", {"free": seats}
            )
        waiting = [s.name for s in table.seats if not s.bot and not s.ready]
        if waiting:
            raise LobbyError(Reason.TABLE_NOT_READY, f"not everyone is ready: {', '.join(waiting)}")
        match = table.matches + 1
        players = tuple(s.player_id for s in table.seats)
        options = options_fields(table.game, match_options(table))
        game_id = game_id_of(table.table_id, match)
        return [
            MatchStarted(game_id, match, players, table.game, **options, mode=table.mode, spectators=table.spectators)
        ]
    if isinstance(command, CoverSeat):
        place = table.seats[_seat_index(table, command.seat)]
        if table.status is not Status.PLAYING or place.bot or place.covered or place.free:
            return []  # nothing to cover (the match ended, or the seat is a bot's or covered already)
        return [SeatCovered(command.seat)]
    if isinstance(command, ReturnToSeat):
        seat_index = table.seat_of(command.player_id)
        if seat_index is None or not table.seats[seat_index].covered:
            return []
        return [SeatReturned(seat_index)]
    if isinstance(command, LeaseSeat):
        place = table.seats[_seat_index(table, command.seat)]
        if table.status is not Status.PLAYING or not place.played_by_bot:
            raise LobbyError(Reason.SEAT_EMPTY, f"seat {command.seat} has no bot to play", {"seat": command.seat})
        if place.runner and place.runner != command.runner and place.lease_until > command.now:
            raise LobbyError(Reason.SEAT_LEASED, f"seat {command.seat} is leased to another runner")
        return [SeatLeased(command.seat, command.runner, command.until)]
    if isinstance(command, FinishMatch):
        if table.status is not Status.PLAYING or command.game_id != table.game_id:
            return []  # finished already (a redelivered end), or not this table's match
        return [MatchFinished(command.game_id, command.result)]
    raise LobbyError(Reason.INVALID_REQUEST, f"not a lobby command: {type(command).__name__}")


# --- evolve ---------------------------------------------------------------------------------------------


def _with_seat(table: Table, index: int, seat: Seat) -> Table:
    seats = list(table.seats)
    seats[index] = seat
    return replace(table, seats=tuple(seats))


def bot_name(player_id: str) -> str:
    """The name a bot player is shown by: ``Bot 3`` for ``bot-<table>-3``, ``Bot for seat 2`` for the bot covering
    an absent player's seat (``cover-<table>-2``)."""
    number = player_id.rsplit("-", 1)[-1]
    if player_id.startswith("bot-"):
        return "Bot " + number
    if player_id.startswith("cover-") and number.isdigit():
        return "Bot for seat " + number
    return "Bot"


def evolve(table: Table, event: Any) -> Table:
    """``table`` after ``event``."""
    if isinstance(event, TableOpened):
        options: dict[str, Any] = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
        return Table(**options, seats=tuple(Seat() for _ in range(SEATS[event.game])), status=Status.OPEN)
    if isinstance(event, SeatTaken):
        return _with_seat(table, event.seat, Seat(event.player_id, event.name))
    if isinstance(event, SeatLeft):
        if not event.bot:
            return _with_seat(table, event.seat, Seat())
        # a new bot plays on; when a bot was covering the seat, its runner keeps the lease
        left = table.seats[event.seat]
        player = bot_taking_over(table, event.seat)
        seat = Seat(player, bot_name(player), bot=True, ready=True, runner=left.runner, lease_until=left.lease_until)
        return _with_seat(table, event.seat, seat if left.covered else replace(seat, runner="", lease_until=0))
    if isinstance(event, BotSeated):
        seated = Seat(event.player_id, bot_name(event.player_id), bot=True, ready=True, strength=event.strength)
        return _with_seat(table, event.seat, seated)
    if isinstance(event, SeatsSwapped):
        seats = list(table.seats)
        seats[event.seat], seats[event.other_seat] = seats[event.other_seat], seats[event.seat]
        return replace(table, seats=tuple(seats))
    if isinstance(event, Substituted):
        # a substitute during a match plays at once; before one, says ready like everyone
        ready = table.status is Status.PLAYING
        return _with_seat(table, event.seat, Seat(event.player_id, event.name, ready=ready))
    if isinstance(event, ReadyChanged):
        return _with_seat(table, event.seat, replace(table.seats[event.seat], ready=event.ready))
    if isinstance(event, MatchStarted):
        return replace(table, status=Status.PLAYING, game_id=event.game_id, matches=event.match)
    if isinstance(event, SeatCovered):
        return _with_seat(table, event.seat, replace(table.seats[event.seat], covered=True))
    if isinstance(event, SeatReturned):
        seat = table.seats[event.seat]
        return _with_seat(table, event.seat, replace(seat, covered=False, runner="", lease_until=0))
    if isinstance(event, SeatLeased):
        seat = table.seats[event.seat]
        return _with_seat(table, event.seat, replace(seat, runner=event.runner, lease_until=event.until))
    if isinstance(event, MatchFinished):
        after = tuple(
            replace(s, ready=s.bot, covered=False, runner="", lease_until=0) if not s.free else s for s in table.seats
        )
        return replace(table, status=Status.FINISHED, seats=after, last_result=event.result, last_game_id=table.game_id)
    if isinstance(event, TableExpired):
        return replace(table, status=Status.EXPIRED)
    raise TypeError(f"not a lobby event: {type(event).__name__}")


def replay(events: list[Any]) -> Table:
    table = Table()
    for event in events:
        table = evolve(table, event)
    return table


def engine_seats(table: Table) -> tuple[str, ...]:
    """Who plays each seat in the engine now: the player, or the seat's bot while it covers."""
    return tuple(cover_id(table.table_id, i) if s.covered else s.player_id for i, s in enumerate(table.seats))


def match_options(table: Table) -> Any:
    """The rule options of the table's matches, with the tournament preset's turn timer."""
    options = getattr(table, OPTIONS_FIELDS[table.game]) or GAMES[table.game].options()
    return replace(options, turn_seconds=TOURNAMENT_TURN_SECONDS) if table.tournament else options


def options_fields(game: str, options: Any) -> dict[str, Any]:
    """The options fields of a table's command or event for a ``game`` table with ``options`` (the other games'
    fields ``None``)."""
    return {field: options if name == game else None for name, field in OPTIONS_FIELDS.items()}


assert all(
    set(OPTIONS_FIELDS.values()) <= {f.name for f in dataclasses.fields(cls)}
    for cls in (Table, OpenTable, TableOpened, MatchStarted)
), "a table, OpenTable, TableOpened and MatchStarted have a field for every game's options"
