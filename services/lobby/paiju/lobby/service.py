"""`LobbyService` over gRPC (grpc.aio): accounts, tables, seats, bots, matches, presence and bot-seat leases.

Tables and accounts are aggregates of the LOBBY stream (`paiju.platform.repository`); table lists come from the
PostgreSQL read model (`paiju.lobby.readmodel`). Seat changes during a match go to the engine first
(`EngineService.AssignSeats`: it knows whether the game stands between deals), then into the table. A seated
player's open `WatchTable` stream is its presence (`paiju.lobby.presence`): when the last one closes during a
match, a bot covers the seat after the grace time; when the player watches again (or joins the game), the seat is
handed back. Tokens: the lobby signs sessions (role player, no game) and game tokens (player + game + seat, or
spectator) with its own Ed25519 key (`paiju.platform.tokens`), which every service verifies with the lobby's public
key; they are short-lived, renewed with RenewSession and JoinGame, and revoked with Logout / RevokeSessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, cast

import grpc
import structlog

from paiju.contract.codec import CodecError
from paiju.contract.matches import GAMES, create_request
from paiju.lobby import accounts as acc
from paiju.lobby import games as lobby_games
from paiju.lobby import matchmaking as mm
from paiju.lobby import parties as pt
from paiju.lobby import queue as qu
from paiju.lobby import table as tb
from paiju.lobby.attendance import Attendance
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.lobby.generations import GENERATION_EVENTS, RETRIES_KEPT
from paiju.lobby.leases import SeatLeases, SeatTokens
from paiju.lobby.presence import Presence
from paiju.lobby.spectating import admit_spectator, chosen_spectators, show_spectators
from paiju.platform.aio import unless
from paiju.platform.channels import channel as grpc_channel
from paiju.platform.edge import Policy, caller, peer, refusal_of_rpc_error
from paiju.platform.errors import Reason, Refused
from paiju.platform.limits import LoginFailures, RateLimits
from paiju.platform.repository import Aggregates, CommandIdReused, Loaded
from paiju.platform.tokens import (
    GAME_AUDIENCE,
    GAME_TOKEN_SECONDS,
    SERVICE_TOKEN_SECONDS,
    SESSION_AUDIENCE,
    SESSION_SECONDS,
    Audience,
    Identity,
    Role,
    Signer,
    Trust,
    Verifier,
)
from paiju.rules.errors import RuleError
from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_events_pb2, lobby_pb2, lobby_pb2_grpc

MODES = {lobby_events_pb2.MATCH_MODE_RANKED: tb.Mode.RANKED, lobby_events_pb2.MATCH_MODE_CASUAL: tb.Mode.CASUAL}
"""A table's rating mode from CreateTableRequest.mode (MATCH_MODE_UNSPECIFIED, like no mode: not rated)."""
MODE_NUMBERS = {mode: number for number, mode in MODES.items()}
"""A table's rating mode as the contract's `MatchMode` (a table without one: MATCH_MODE_UNSPECIFIED, not rated)."""
PROVISIONAL_MATCHES = 20
"""D-RATE-6: a rating is provisional until its 20th rated match in the game and mode (as scoring counts them)."""

RATE_LIMITS = """
    Guest:address=10/minute; Register:address=10/minute; Login:address=30/minute;
    CreateTable:account=10/minute; JoinGame:account=60/minute; TakeSeat:account=60/minute;
    AddBot:account=60/minute; Ready:account=60/minute; StartMatch:account=20/minute; ListTables:account=60/minute;
    GetTable:account=120/minute; WatchTable:account=8/open; WatchTable:address=5000/open;
    LeaseBotSeats:account=600/minute; CreateParty:account=10/minute; InviteToParty:account=30/minute;
    AcceptPartyInvite:account=30/minute; DeclinePartyInvite:account=30/minute; LeaveParty:account=30/minute;
    GetParty:account=120/minute; FindMatch:account=30/minute; FindMatch:account=4/open; FindMatch:address=5000/open;
    ConfirmMatch:account=30/minute; LeaveQueue:account=30/minute
"""
"""The lobby's rate limits (`paiju.platform.limits`): sign-ins by client address, the rest by account. Wrong
passwords are limited apart (`paiju.platform.limits.LoginFailures`): per name *and* address, so that nobody can lock
a player out from elsewhere."""


def login_name(method: str, request: Any) -> str | None:
    """What the ``Login:name`` limit counts: the account a Login asks for (``Alice``, ``ALICE`` and ``alice`` are one
    account, so one count)."""
    if method != "Login" or not getattr(request, "name", ""):
        return None
    return acc.account_key(request.name)


TABLES_PER_PLAYER = 3
"""How many open tables (open or in play) one player account may have opened (``PAIJU_TABLES_PER_PLAYER``)."""
TABLE_OPENERS = (Role.ADMIN, Role.REFEREE)
"""The operators who may open tables (not counted against anyone, never expiring: the demo tables)."""
OPENED_KEPT = 10_000
"""Owners whose latest tables a replica remembers (beyond them, the read model has long listed their tables)."""
GUEST_NAME_TRIES = 5
"""How many random guest names Guest draws before it gives up (one draw meets an existing name rarely)."""
OPERATORS = (Role.ADMIN, Role.REFEREE, Role.ANALYST)
ROLES = {
    "RevokeSessions": (Role.ADMIN,),
    "LeaseBotSeats": (Role.BOT_RUNNER, Role.ADMIN),
    "ListReservedNames": (Role.ADMIN,),
}
"""The methods only some roles may call, checked by the edge (ROLE_REQUIRED)."""
FORWARDERS = (Role.WEB,)
"""Whose word the lobby takes for the address of the client a call is made for (`paiju.platform.edge.client_peer`):
the web view's own token (role web, signed with its key) alone, so that the per-address limits — ``Guest``,
``Register`` and ``Login`` a minute, wrong passwords — count each browser, not the web view all its browsers share.
The same metadata from anyone else is ignored."""
ENGINE_SECONDS = 10.0
"""How long the lobby waits for the engine's answer to a seat change before it answers UNAVAILABLE."""
KINDS = {v: k for k, v in GAMES.items()}
TABLE_STATUS = {
    tb.Status.OPEN: lobby_pb2.TABLE_STATUS_OPEN,
    tb.Status.PLAYING: lobby_pb2.TABLE_STATUS_PLAYING,
    tb.Status.FINISHED: lobby_pb2.TABLE_STATUS_FINISHED,
    tb.Status.EXPIRED: lobby_pb2.TABLE_STATUS_EXPIRED,
}
log = structlog.get_logger("paiju.lobby")


class TableListing(Protocol):
    """Where table lists come from (the PostgreSQL read model)."""

    async def list_tables(
        self, game: str | None, status: str | None, limit: int, after: str = ""
    ) -> list[lobby_pb2.Table]: ...

    async def page_of_tables(
        self, game: str | None, status: str | None, limit: int, after: str = ""
    ) -> list[tuple[lobby_pb2.Table, str]]: ...

    async def open_tables_of(self, owner: str) -> set[str]: ...

    async def account_names(self, after: str, limit: int) -> list[tuple[str, str]]: ...

    async def playing_tables_with_bots(self) -> list[str]: ...

    async def confusable_with(self, name: str) -> str | None: ...

    async def playing_table_of(self, player_id: str) -> str | None: ...


def options_refusal(game: str, options: Any) -> Refused | None:
    """Why the rules core would refuse to start a match with ``options`` (``None``: it would not): the lobby asks
    the core itself, so no table can exist whose match the engine would refuse."""
    rules = lobby_games.GAMES[game].rules
    try:
        rules.decide(rules.new_state(), rules.start(0, options or rules.options(), 0))
    except RuleError as e:
        return Refused(Reason.INVALID_OPTIONS, e.reason, {"rule": e.rule} if e.rule else None)
    return None


def table_message(table: tb.Table, version: int, rated: mm.RatedMatch | None = None) -> lobby_pb2.Table:
    """The API's picture of a table; ``rated``: how its last match was rated (`mm.Ratings.of_match`), shown with its
    result while the match is the table's last (not once the next one started)."""
    message = lobby_pb2.Table(
        table_id=table.table_id,
        name=table.name,
        game=GAMES[table.game],
        owner_id=table.owner,
        preset=lobby_pb2.TABLE_PRESET_TOURNAMENT if table.tournament else lobby_pb2.TABLE_PRESET_CASUAL,
        status=TABLE_STATUS[table.status],
        game_id=table.game_id,
        matches=table.matches,
        version=version,
        mode=MODE_NUMBERS[table.mode] if table.mode is not None else lobby_events_pb2.MATCH_MODE_UNSPECIFIED,
    )
    codecs = lobby_games.GAMES[table.game].contract
    getattr(message, codecs.options_field).CopyFrom(codecs.codec.encode(tb.match_options(table)))
    for i, seat in enumerate(table.seats):
        message.seats.add(
            seat=i,
            player_id=seat.player_id,
            name=seat.name,
            bot=seat.bot,
            ready=seat.ready,
            covered=seat.covered,
            strength=seat.strength,
        )
    show_spectators(table, message)
    if table.last_result is not None:
        r = table.last_result
        result = message.last_result
        result.game_id = table.last_game_id
        result.team_points.extend(r.team_points)
        result.individual_points.extend(r.individual_points)
        result.levels.extend(r.levels)
        if r.winner_team is not None:
            result.winner_team = r.winner_team
        if rated is not None and rated.updated.game_id == table.last_game_id:
            _rated_into(result.ratings, rated)
    return message


def _rated_into(message: lobby_pb2.MatchRatings, rated: mm.RatedMatch) -> None:
    """A result's ratings from its `RatingUpdated` event (docs/rules/ratings.md): each seat's rating before and
    after, and the ratings shown, μ − 3σ (D-RATE-5)."""
    updated = rated.updated
    message.model = updated.model
    message.mode = updated.mode
    message.number = rated.number
    message.team_scores.extend(updated.team_scores)
    if updated.HasField("winner_team"):
        message.winner_team = updated.winner_team
    message.at = updated.at
    for seat in updated.seats:
        message.seats.add(
            seat=seat.seat,
            player_id=seat.player_id,
            bot=seat.bot,
            before=seat.before,
            after=seat.after,
            shown_before=seat.before.mu - 3 * seat.before.sigma,
            shown_after=seat.after.mu - 3 * seat.after.sigma,
            matches=seat.matches,
            provisional=not seat.bot and seat.matches < PROVISIONAL_MATCHES,
        )


BOT_SEAT_MOVES = frozenset(
    {"match_started", "match_finished", "bot_seated", "seat_left", "seat_covered", "seat_returned", "substituted"}
)
"""The table events that may give a bot runner a seat to play or take one away (what a long-polling
`LeaseBotSeats` waits for; a lease's own `seat_leased` is not one)."""


def _bot_seat_move(envelope: Any) -> bool:
    return envelope.event.WhichOneof("event") in BOT_SEAT_MOVES


def new_tables(store: Any) -> Aggregates[tb.Table]:
    return Aggregates(store, LOBBY_EVENTS, tb.Table, tb.decide, tb.evolve, moves=_bot_seat_move)


def new_accounts(store: Any) -> Aggregates[acc.Account | None]:
    return Aggregates(store, LOBBY_EVENTS, lambda: None, acc.decide_account, acc.evolve_account)


def new_parties(store: Any) -> Aggregates[pt.Party]:
    return Aggregates(store, LOBBY_EVENTS, pt.Party, pt.decide_party, pt.evolve_party)


def new_memberships(store: Any) -> Aggregates[pt.Membership]:
    return Aggregates(store, LOBBY_EVENTS, pt.Membership, pt.decide_membership, pt.evolve_membership)


def new_queue(store: Any) -> Aggregates[qu.Queue]:
    return Aggregates(store, LOBBY_EVENTS, qu.Queue, qu.decide, qu.evolve)


def party_message(party: pt.Party) -> lobby_pb2.Party:
    """The API's picture of a party."""
    message = lobby_pb2.Party(party_id=party.party_id, game=GAMES[party.game], leader_id=party.leader)
    for member in party.members:
        message.members.add(player_id=member.player_id, name=member.name)
    for invited in party.invited:
        message.invited.add(player_id=invited.player_id, name=invited.name)
    return message


def new_name_claims(store: Any) -> Aggregates[acc.NameClaim | None]:
    return Aggregates(store, LOBBY_EVENTS, lambda: None, acc.decide_claim, acc.evolve_claim)


class LobbyService(lobby_pb2_grpc.LobbyServiceServicer):
    def __init__(
        self,
        tables: Aggregates[tb.Table],
        accounts: Aggregates[acc.Account | None],
        listing: TableListing,
        engine: Callable[[], Any],
        *,
        signer: Signer,
        trust: Trust,
        grace_seconds: float = 30.0,
        now: Callable[[], int] = lambda: int(time.time()),
        limits: RateLimits | None = None,
        attendance: Attendance | None = None,
        login_failures: LoginFailures | None = None,
        tables_per_player: int = TABLES_PER_PLAYER,
        matchmaker: mm.Matchmaker | None = None,
        queue_grace_seconds: float = mm.GRACE_SECONDS,
        confirm_seconds: int = qu.CONFIRM_SECONDS,
        queue_generation_events: int = GENERATION_EVENTS.default,
        queue_retries_kept: int = RETRIES_KEPT.default,
    ) -> None:
        self._tables_per_player = tables_per_player
        self._opening = asyncio.Lock()
        """One table opened at a time in this replica: a player's count of open tables is read and moved at once."""
        self._opened: OrderedDict[str, list[str]] = OrderedDict()
        """The tables this replica opened lately, by owner (the read model may not list them yet)."""
        self._tables = tables
        self._failures = login_failures if login_failures is not None else LoginFailures()
        self._accounts = accounts
        self._claims = new_name_claims(accounts.store)
        self.draining = asyncio.Event()
        """Set when the server shuts down: open table watches end with a WatchEnd saying so."""
        self._listing = listing
        self._engine = engine
        self._signer = signer
        self._now = now
        self.verifier = Verifier(trust, now, Audience.LOBBY)
        self.policy = Policy(
            authenticator=self.verifier,
            public=("Register", "Login", "Guest"),
            limits=limits,
            roles=ROLES,
            forwarders=FORWARDERS,
        )
        """What the gRPC edge does for this service (every method but the three that sign in needs a token; the
        per-address limits count the browser the web view names, `FORWARDERS`)."""
        self.presence = Presence(tables, self._engine_seats, grace_seconds, attendance)
        """Who is at which table; a bot covers an absent player's seat, and hands it back."""
        self.leases = SeatLeases(tables, listing.playing_tables_with_bots)
        """The bot seats leased to bot runners."""
        self.seat_tokens = SeatTokens(signer.mint)
        """The engine tokens of the leased seats (reused across renewals while they serve)."""
        self.parties = mm.Parties(new_parties(accounts.store), new_memberships(accounts.store))
        """Parties (docs/rules/matchmaking.md)."""
        self.matchmaker = matchmaker or mm.Matchmaker(
            new_queue(accounts.store),
            tables,
            self.parties,
            mm.Ratings(),
            now,
            attendance=attendance,
            grace_seconds=queue_grace_seconds,
            confirm_seconds=confirm_seconds,
            generation_events=queue_generation_events,
            retries_kept=queue_retries_kept,
        )
        """The matchmaking queue (docs/rules/matchmaking.md)."""

    # --- helpers ------------------------------------------------------------------------------------

    def _token(
        self,
        subject: str,
        role: Role,
        seconds: int,
        game: str | None = None,
        seat: int | None = None,
        *,
        generation: int = 0,
        audience: tuple[str, ...] = GAME_AUDIENCE,
    ) -> str:
        """A token the lobby signs: a session (for every service) or a game token or its own service token
        (for the engine)."""
        now = self._now()
        identity = Identity(
            subject, role, game, seat, expires=now + seconds, issued=now, generation=generation, audience=audience
        )
        return self._signer.mint(identity)

    def _service_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self._token('lobby', Role.SERVICE, SERVICE_TOKEN_SECONDS)}"),)

    async def _signed_in(self) -> tuple[Identity, acc.Account]:
        """The caller's session and account: a lobby session token (role player, no game), of an account that
        exists, not revoked."""
        who: Identity = caller()
        if who.role is not Role.PLAYER or who.game is not None:
            raise Refused(
                Reason.SESSION_REQUIRED, "this call needs a lobby session token (from Register, Login or Guest)"
            )
        account = (await self._accounts.load(who.subject)).state
        if account is None:
            raise Refused(Reason.TOKEN_INVALID, "this token's account does not exist")
        if who.generation < account.generation:
            raise Refused(Reason.TOKEN_REVOKED, "this session was revoked (signed out): sign in again")
        return who, account

    async def _reader(self) -> Identity | None:
        """Who may read tables: a signed-in player (a session, not revoked: returned) or an operator (admin, referee,
        analyst: ``None``). Game tokens, bot runners and services read no table."""
        who: Identity = caller()
        if who.role in OPERATORS:
            return None
        signed_in, _ = await self._signed_in()
        return signed_in

    async def _player(self) -> tuple[str, str]:
        """The signed-in player's id and name (a lobby session token, not revoked)."""
        _, account = await self._signed_in()
        return account.player_id, account.name

    async def _table(self, table_id: str) -> Loaded[tb.Table]:
        loaded = await self._tables.load(table_id)
        if loaded.state.status is tb.Status.NEW:
            raise Refused(Reason.TABLE_NOT_FOUND, f"there is no table {table_id!r}", {"table": table_id})
        return loaded

    async def _act(self, table_id: str, command: Any, actor: str, command_id: str = "") -> Loaded[tb.Table]:
        try:
            loaded, _ = await self._tables.act(table_id, command, command_id or uuid.uuid4().hex, actor)
        except CommandIdReused as e:
            raise Refused(Reason.COMMAND_ID_REUSED, str(e)) from None
        return loaded

    async def _engine_seats(self, table: tb.Table, seats: dict[int, str], change: int, command_id: str) -> None:
        """Tell the engine who sits where now in the table's running match (it refuses swaps mid-deal); its
        refusal is passed on as the lobby's."""
        request = engine_pb2.AssignSeatsRequest(game_id=table.game_id, command_id=command_id, change=cast(Any, change))
        for seat, player in sorted(seats.items()):
            request.seats.add(seat=seat, player_id=player)
        try:
            await self._engine().AssignSeats(
                request, metadata=self._service_metadata(), timeout=ENGINE_SECONDS, wait_for_ready=True
            )
        except grpc.aio.AioRpcError as e:
            raise refusal_of_rpc_error(e, "the engine") from None

    def _session(self, account: acc.Account) -> lobby_pb2.Session:
        expires = self._now() + SESSION_SECONDS
        token = self._token(
            account.player_id, Role.PLAYER, SESSION_SECONDS, generation=account.generation, audience=SESSION_AUDIENCE
        )
        return lobby_pb2.Session(player_id=account.player_id, name=account.name, token=token, expires_at=expires)

    # --- accounts -----------------------------------------------------------------------------------

    async def _register(self, name: str, password_hash: str, guest: bool) -> acc.Account:
        player_id = acc.account_key(name)
        command = acc.Register(player_id, name, password_hash, guest)
        loaded, _ = await self._accounts.act(player_id, command, f"register:{uuid.uuid4().hex}", player_id)
        assert loaded.state is not None
        return loaded.state

    async def Register(
        self, request: lobby_pb2.RegisterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.RegisterResponse:
        name = acc.check_name(request.name)
        await asyncio.to_thread(acc.check_password, name, request.password)
        # a name that looks like an existing one (UTS #39 confusables) is refused: the read model knows every
        # account, and claiming the name's skeleton settles two such names registered at the same moment
        existing = await self._listing.confusable_with(name)
        if existing is not None:
            raise acc.name_confusable(name, existing)
        player_id = acc.account_key(name)
        claim = acc.ClaimName(acc.name_skeleton(name), player_id, name)
        await self._claims.act(acc.claim_key(name), claim, f"claim:{uuid.uuid4().hex}", player_id)
        hashed = await asyncio.to_thread(acc.hash_password, request.password)
        account = await self._register(name, hashed, guest=False)
        log.info("registered", player=account.player_id)
        return lobby_pb2.RegisterResponse(session=self._session(account))

    async def Login(
        self, request: lobby_pb2.LoginRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.LoginResponse:
        key, address = acc.account_key(request.name), peer()
        # an address over its wrong passwords (for this name, or for all) is refused before any password is checked
        self._failures.attempt(key, address)
        account = (await self._accounts.load(key)).state
        # the same work (one scrypt) whether or not the name exists: the answer's time tells nothing
        if not await asyncio.to_thread(acc.login_matches, account, request.password) or account is None:
            raise Refused(Reason.WRONG_CREDENTIALS, "wrong name or password")
        self._failures.succeeded(key, address)
        return lobby_pb2.LoginResponse(session=self._session(account))

    async def Guest(
        self, request: lobby_pb2.GuestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.GuestResponse:
        for attempt in range(GUEST_NAME_TRIES):
            try:
                account = await self._register(acc.guest_name(), "", guest=True)
                break
            except Refused as e:  # a random name met an existing one: draw another
                if e.reason not in (Reason.NAME_TAKEN, Reason.NAME_CONFUSABLE) or attempt == GUEST_NAME_TRIES - 1:
                    raise
        return lobby_pb2.GuestResponse(session=self._session(account))

    async def RenewSession(
        self, request: lobby_pb2.RenewSessionRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.RenewSessionResponse:
        _, account = await self._signed_in()
        return lobby_pb2.RenewSessionResponse(session=self._session(account))

    async def Logout(
        self, request: lobby_pb2.LogoutRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.LogoutResponse:
        who, account = await self._signed_in()
        await self._revoke(account.player_id, who.subject)
        log.info("signed out everywhere", player=account.player_id)
        return lobby_pb2.LogoutResponse()

    async def RevokeSessions(
        self, request: lobby_pb2.RevokeSessionsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.RevokeSessionsResponse:
        who: Identity = caller()  # an admin (the edge's policy)
        if (await self._accounts.load(request.player_id)).state is None:
            raise Refused(Reason.PLAYER_NOT_FOUND, f"there is no account {request.player_id!r}")
        await self._revoke(request.player_id, who.subject)
        log.info("sessions revoked", player=request.player_id, by=who.subject)
        return lobby_pb2.RevokeSessionsResponse()

    async def _revoke(self, player_id: str, actor: str) -> None:
        """Revoke every session of the account issued until now."""
        await self._accounts.act(player_id, acc.RevokeSessions(), f"revoke:{uuid.uuid4().hex}", actor)

    # --- tables -------------------------------------------------------------------------------------

    async def _owner(self) -> str:
        """Who acts as a table's owner: the signed-in player, or an operator (admin, referee) by their subject."""
        who: Identity = caller()
        if who.role in TABLE_OPENERS:
            return who.subject
        player, _ = await self._player()
        return player

    async def _open_tables(self, owner: str) -> list[str]:
        """The tables ``owner`` opened that are open or in play: the read model's, and those opened here lately."""
        known = await self._listing.open_tables_of(owner)
        recent = [t for t in self._opened.get(owner, ()) if t not in known]
        for table_id in recent:
            if tb.counts_against_owner((await self._tables.load(table_id)).state):
                known.add(table_id)
        return sorted(known)

    def _remember_opened(self, owner: str, table_id: str) -> None:
        opened = self._opened.pop(owner, [])
        self._opened[owner] = [*opened, table_id][-(self._tables_per_player + 1) :]
        while len(self._opened) > OPENED_KEPT:
            self._opened.popitem(last=False)

    async def CreateTable(
        self, request: lobby_pb2.CreateTableRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.CreateTableResponse:
        player = await self._owner()
        counted = player.startswith(tb.PLAYER_OWNER)
        game = KINDS[request.game]  # the contract allows the registry's games only
        options = None
        field = request.WhichOneof("options")
        if field is not None:
            owner = lobby_games.BY_OPTIONS_FIELD[field]
            if owner.name != game:
                raise Refused(Reason.INVALID_OPTIONS, f"{field} are for a {owner.rules.title} table")
            try:
                options = owner.contract.codec.decode(getattr(request, field), owner.rules.options)
            except CodecError as e:
                raise Refused(Reason.INVALID_OPTIONS, str(e)) from None
        refused = options_refusal(game, options)
        if refused is not None:
            raise refused
        table_id = "table-" + secrets.token_hex(4)
        tournament = request.preset == lobby_pb2.TABLE_PRESET_TOURNAMENT
        fields = tb.options_fields(game, options)
        mode = MODES[request.mode] if request.HasField("mode") else None
        command = tb.OpenTable(
            table_id, request.name, game, player, tournament, **fields, mode=mode, spectators=chosen_spectators(request)
        )
        async with self._opening if counted else contextlib.nullcontext():
            if counted:
                open_tables = await self._open_tables(player)
                if len(open_tables) >= self._tables_per_player:
                    raise Refused(
                        Reason.TABLE_LIMIT,
                        f"you have {len(open_tables)} open tables, as many as one account may: finish a match at "
                        "one, or leave one empty (it expires), before opening another",
                        {"limit": self._tables_per_player, "open": len(open_tables)},
                    )
            loaded = await self._act(table_id, command, player)
            if counted:
                self._remember_opened(player, table_id)
        log.info("table opened", table=table_id, game=game, owner=player)
        return lobby_pb2.CreateTableResponse(table=table_message(loaded.state, loaded.version))

    async def ListTables(
        self, request: lobby_pb2.ListTablesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.ListTablesResponse:
        await self._reader()
        size = request.page_size or request.limit or 50
        status = {v: k.value for k, v in TABLE_STATUS.items()}.get(request.status)
        try:
            page = await self._listing.page_of_tables(KINDS.get(request.game), status, size + 1, request.page_token)
        except ValueError:
            raise Refused(
                Reason.INVALID_REQUEST,
                "page_token is not a token this listing gave: send the next_page_token of the page before, as it came",
                {"field": "page_token"},
            ) from None
        response = lobby_pb2.ListTablesResponse(tables=[table for table, _ in page[:size]])
        if len(page) > size:
            response.next_page_token = page[size - 1][1]
        return response

    async def ListReservedNames(
        self, request: lobby_pb2.ListReservedNamesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.ListReservedNamesResponse:
        """The existing accounts whose names read as reserved (an admin's: the edge's policy): read from the
        accounts read model in batches, each name judged by `paiju.lobby.accounts.reserved_reading`."""
        limit = request.limit or 200
        response = lobby_pb2.ListReservedNamesResponse()
        after = ""
        while len(response.names) < limit:
            batch = await self._listing.account_names(after, 1000)
            if not batch:
                break
            for player_id, name in batch:
                word = acc.reserved_reading(name)
                if word is not None and len(response.names) < limit:
                    response.names.add(player_id=player_id, name=name, reads_as=word)
            after = batch[-1][0]
        response.names.sort(key=lambda n: n.name)
        return response

    async def GetTable(
        self, request: lobby_pb2.GetTableRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.GetTableResponse:
        await self._reader()
        loaded = await self._table(request.table_id)
        return lobby_pb2.GetTableResponse(table=self._table_message(loaded))

    def _table_message(self, loaded: Loaded[tb.Table]) -> lobby_pb2.Table:
        """A table as GetTable and WatchTable show it: its last result with its ratings once scoring rated it."""
        table = loaded.state
        return table_message(
            table, loaded.version, self.matchmaker.ratings.of_match(table.table_id, table.last_game_id)
        )

    async def WatchTable(
        self, request: lobby_pb2.WatchTableRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[lobby_pb2.WatchTableResponse]:
        who = await self._reader()
        loaded = await self._table(request.table_id)
        # a signed-in player's watch is their presence (an operator's is nobody's)
        present = self.presence.watching(request.table_id, who.subject) if who is not None else contextlib.nullcontext()
        # the table again after each of its changes, and when the ratings of its match arrive (the ratings' fold
        # sets ``rated``: the same version, its result now with the rating changes)
        with self.matchmaker.ratings.watching(request.table_id) as rated:
            async with present:
                while True:
                    rated.clear()
                    yield lobby_pb2.WatchTableResponse(table=self._table_message(loaded))
                    moved = await unless(self._next_table_change(loaded, rated), self.draining)
                    if moved is None:
                        end = engine_pb2.WatchEnd(reason=engine_pb2.WATCH_END_REASON_DRAINING, version=loaded.version)
                        yield lobby_pb2.WatchTableResponse(end=end)
                        return
                    loaded = moved

    async def _next_table_change(self, loaded: Loaded[tb.Table], rated: asyncio.Event) -> Loaded[tb.Table]:
        """The table once it is past ``loaded``'s version, or as it is when ``rated`` is set first."""
        changed = asyncio.ensure_future(self._tables.next_change(loaded.state.table_id, loaded.version))
        arrived = asyncio.ensure_future(rated.wait())
        try:
            await asyncio.wait((changed, arrived), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (changed, arrived):
                task.cancel()
        if changed.done() and not changed.cancelled():
            return changed.result()
        return loaded

    async def TakeSeat(
        self, request: lobby_pb2.TakeSeatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.TakeSeatResponse:
        player, name = await self._player()
        await self._table(request.table_id)
        seat = request.seat if request.HasField("seat") else None
        loaded = await self._act(request.table_id, tb.TakeSeat(player, name, seat), player)
        return lobby_pb2.TakeSeatResponse(table=table_message(loaded.state, loaded.version))

    async def _change_seats(
        self,
        context: grpc.aio.ServicerContext[Any, Any],
        loaded: Loaded[tb.Table],
        *,
        actor: str,
        command: Any,
        key: str,
        in_match: Callable[[], tuple[dict[int, str], int]],
    ) -> lobby_pb2.Table:
        """A seat change: refused by the table first; during a match the engine is told next (it refuses swaps
        and substitutes mid-deal), with ``in_match``'s seats and reason; then it is recorded at the table, both
        under one command id."""
        table = loaded.state
        tb.decide(table, command)  # refused by the table first, before the engine is asked to change seats
        command_id = f"{key}:{loaded.version}"
        if table.status is tb.Status.PLAYING:
            seats, change = in_match()
            await self._engine_seats(table, seats, change, command_id)
        after = await self._act(table.table_id, command, actor, command_id)
        return table_message(after.state, after.version)

    async def LeaveSeat(
        self, request: lobby_pb2.LeaveSeatRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.LeaveSeatResponse:
        player, _ = await self._player()
        loaded = await self._table(request.table_id)
        seat = loaded.state.seat_of(player)

        def bot_takes_over() -> tuple[dict[int, str], int]:
            assert seat is not None  # the table refused a player who is not seated
            return {seat: tb.bot_taking_over(loaded.state, seat)}, engine_pb2.SEAT_CHANGE_COVER

        table = await self._change_seats(
            context, loaded, actor=player, command=tb.LeaveSeat(player), key=f"leave:{seat}", in_match=bot_takes_over
        )
        return lobby_pb2.LeaveSeatResponse(table=table)

    async def RemovePlayer(
        self, request: lobby_pb2.RemovePlayerRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.RemovePlayerResponse:
        player, _ = await self._player()
        loaded = await self._table(request.table_id)
        seat = request.seat
        table = await self._change_seats(
            context,
            loaded,
            actor=player,
            command=tb.RemovePlayer(player, seat),
            key=f"remove:{seat}",
            in_match=lambda: ({seat: tb.bot_taking_over(loaded.state, seat)}, engine_pb2.SEAT_CHANGE_COVER),
        )
        return lobby_pb2.RemovePlayerResponse(table=table)

    async def SwapSeats(
        self, request: lobby_pb2.SwapSeatsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.SwapSeatsResponse:
        player, _ = await self._player()
        loaded = await self._table(request.table_id)
        a, b = request.seat, request.other_seat

        def swapped() -> tuple[dict[int, str], int]:
            held = tb.engine_seats(loaded.state)
            return {a: held[b], b: held[a]}, engine_pb2.SEAT_CHANGE_SWAP

        table = await self._change_seats(
            context, loaded, actor=player, command=tb.SwapSeats(player, a, b), key=f"swap:{a}:{b}", in_match=swapped
        )
        return lobby_pb2.SwapSeatsResponse(table=table)

    async def Substitute(
        self, request: lobby_pb2.SubstituteRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.SubstituteResponse:
        player, _ = await self._player()
        loaded = await self._table(request.table_id)
        substitute = (await self._accounts.load(acc.account_key(request.player_name or "?"))).state
        if substitute is None:
            raise Refused(Reason.PLAYER_NOT_FOUND, f"there is no player named {request.player_name!r}")
        seat = request.seat
        table = await self._change_seats(
            context,
            loaded,
            actor=player,
            command=tb.Substitute(player, seat, substitute.player_id, substitute.name),
            key=f"substitute:{seat}",
            in_match=lambda: ({seat: substitute.player_id}, engine_pb2.SEAT_CHANGE_SUBSTITUTE),
        )
        return lobby_pb2.SubstituteResponse(table=table)

    async def AddBot(
        self, request: lobby_pb2.AddBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.AddBotResponse:
        player = await self._owner()
        await self._table(request.table_id)
        seat = request.seat if request.HasField("seat") else None
        strength = request.strength  # validated against the strengths in the contract (lobby.proto)
        loaded = await self._act(request.table_id, tb.AddBot(player, seat, strength), player)
        return lobby_pb2.AddBotResponse(table=table_message(loaded.state, loaded.version))

    async def Ready(
        self, request: lobby_pb2.ReadyRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.ReadyResponse:
        player, _ = await self._player()
        await self._table(request.table_id)
        loaded = await self._act(request.table_id, tb.SetReady(player, request.ready), player)
        return lobby_pb2.ReadyResponse(table=table_message(loaded.state, loaded.version))

    async def StartMatch(
        self, request: lobby_pb2.StartMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.StartMatchResponse:
        player = await self._owner()
        before = await self._table(request.table_id)
        # the match's game id must be free in the engine before the start is recorded: a game made there under that
        # id by anyone else would leave the table playing a game that is not its own
        for event in tb.decide(before.state, tb.StartMatch(player)):
            if isinstance(event, tb.MatchStarted):
                await self._game_id_free(event.game_id)
        loaded = await self._act(request.table_id, tb.StartMatch(player), player)
        # answered once the game exists: the engine creates it now (the engine's own consumer of the match start
        # would too, a moment later; creating is idempotent, so whichever comes second changes nothing)
        try:
            await self._game_exists(loaded)
        except Refused as e:
            if e.reason is not Reason.DEPENDENCY_UNAVAILABLE:
                raise
            raise Refused(
                Reason.DEPENDENCY_UNAVAILABLE,
                "the match has started, but the engine could not be reached to create its game yet: it will be "
                "created as soon as the engine is back; JoinGame answers once it exists",
                {"dependency": "engine", "game": loaded.state.game_id},
                e.details,
            ) from None
        log.info("match started", table=request.table_id, game=loaded.state.game_id)
        return lobby_pb2.StartMatchResponse(table=table_message(loaded.state, loaded.version))

    async def _game_id_free(self, game_id: str) -> None:
        """`Refused` (GAME_EXISTS) when the engine has a game of that id already."""
        try:
            await self._engine().GetView(
                engine_pb2.GetViewRequest(game_id=game_id),
                metadata=self._service_metadata(),
                timeout=ENGINE_SECONDS,
                wait_for_ready=True,
            )
        except grpc.aio.AioRpcError as e:
            refused = refusal_of_rpc_error(e, "the engine")
            if refused.reason is Reason.GAME_NOT_FOUND:
                return
            raise refused from None
        raise Refused(
            Reason.GAME_EXISTS,
            f"the engine has a game {game_id!r} already: this table cannot start its match under that id",
            {"game": game_id},
        )

    async def _game_exists(self, loaded: Loaded[tb.Table]) -> None:
        """Make sure the game of the table's latest match exists in the engine (CreateGame with the very request
        the engine's match starter builds from the `MatchStarted` event: idempotent)."""
        started = loaded.last(tb.MatchStarted)
        if started is None:
            return
        event: Any = LOBBY_EVENTS.encode(started)
        request = create_request(event.match_started)
        try:
            await self._engine().CreateGame(
                request, metadata=self._service_metadata(), timeout=ENGINE_SECONDS, wait_for_ready=True
            )
        except grpc.aio.AioRpcError as e:
            raise refusal_of_rpc_error(e, "the engine") from None

    async def JoinGame(
        self, request: lobby_pb2.JoinGameRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.JoinGameResponse:
        who, _ = await self._signed_in()
        loaded = await self._table(request.table_id)
        table = loaded.state
        if not table.game_id:
            raise Refused(Reason.NO_MATCH_YET, "no match has started at this table yet")
        await self._game_exists(loaded)
        seat = table.seat_of(who.subject)
        response = lobby_pb2.JoinGameResponse(
            game_id=table.game_id, game=GAMES[table.game], expires_at=self._now() + GAME_TOKEN_SECONDS
        )
        if seat is None:
            admit_spectator(table)
            response.token = self._token(
                who.subject, Role.SPECTATOR, GAME_TOKEN_SECONDS, table.game_id, generation=who.generation
            )
            return response
        with contextlib.suppress(Refused):
            await self.presence.returned(request.table_id, who.subject)
        response.seat = seat
        # the game token carries its session's generation: revoking the session revokes it too (the engine checks)
        response.token = self._token(
            who.subject, Role.PLAYER, GAME_TOKEN_SECONDS, table.game_id, seat, generation=who.generation
        )
        return response

    async def LeaseBotSeats(
        self, request: lobby_pb2.LeaseBotSeatsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.LeaseBotSeatsResponse:
        who = caller()  # a bot runner or an admin (the edge's policy)
        if who.role is Role.BOT_RUNNER and request.runner_id != who.subject:
            # a runner's token names the runner: it renews and plays its own leases only
            raise Refused(
                Reason.NOT_YOUR_RUNNER_ID,
                "a bot runner leases seats under its own id (the subject of its token)",
                {"runner": who.subject},
            )
        moves = self._tables.moves
        now = self._now()
        held = await self.leases.lease(request.runner_id, now, request.max_seats)
        # long polling: nothing new for this runner yet? lease again each time a table's bot seats move, until one
        # gives it a seat or the wait is over
        loop = asyncio.get_running_loop()
        deadline = loop.time() + request.wait_seconds
        while request.wait_seconds and not any(leased.new for leased in held):
            remaining = deadline - loop.time()
            if remaining <= 0 or not await unless(self._tables.moved_after(moves, remaining), self.draining):
                break
            moved = self._tables.moved_since(moves)  # the tables that moved, whether or not the read model lists them
            moves = self._tables.moves
            now = self._now()
            held = await self.leases.lease(request.runner_id, now, request.max_seats, also=moved)
        response = lobby_pb2.LeaseBotSeatsResponse()
        for leased in held:
            token = self.seat_tokens.token(request.runner_id, leased, now)
            response.seats.add(
                table_id=leased.table_id,
                game_id=leased.game_id,
                game=GAMES[leased.game],
                seat=leased.seat,
                token=token,
                lease_expires_at=leased.expires,
                strength=leased.strength,
            )
        return response

    # --- parties and the queue (docs/rules/matchmaking.md) ------------------------------------------------

    async def _known(self, name: str) -> acc.Account:
        """The account of a player's name, or PLAYER_NOT_FOUND (like any unknown id)."""
        found = (await self._accounts.load(acc.account_key(name or "?"))).state
        if found is None:
            raise Refused(Reason.PLAYER_NOT_FOUND, f"there is no player named {name!r}")
        return found

    async def CreateParty(
        self, request: lobby_pb2.CreatePartyRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.CreatePartyResponse:
        player, name = await self._player()
        party = await self.parties.create(player, name, KINDS[request.game])
        return lobby_pb2.CreatePartyResponse(party=party_message(party))

    async def InviteToParty(
        self, request: lobby_pb2.InviteToPartyRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.InviteToPartyResponse:
        player, _ = await self._player()
        invitee = await self._known(request.player_name)
        if invitee.player_id == player:
            raise Refused(Reason.ALREADY_IN_PARTY, "you are in your party already")
        party = await self.parties.invite(player, invitee.player_id, invitee.name)
        return lobby_pb2.InviteToPartyResponse(party=party_message(party))

    async def AcceptPartyInvite(
        self, request: lobby_pb2.AcceptPartyInviteRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.AcceptPartyInviteResponse:
        player, name = await self._player()
        if (await self.matchmaker.history.load()).state.entry_of(player) is not None:
            raise Refused(Reason.ALREADY_QUEUED, "you are in the queue: leave it before you join a party")
        party = await self.parties.accept(player, name, request.party_id)
        # a queued party leaves the queue (it is no longer the party that queued): its leader queues it again, whole
        await self._withdraw_party(party.party_id, party.leader, player)
        return lobby_pb2.AcceptPartyInviteResponse(party=party_message(party))

    async def _withdraw_party(self, party_id: str, leader: str, actor: str) -> None:
        """Take the party's entry out of the queue, if it has one (its members are told on their FindMatch streams)."""
        entry = (await self.matchmaker.history.load()).state.entry_of(leader)
        if entry is not None and entry.party_id == party_id:
            with contextlib.suppress(Refused):  # gone meanwhile (seated, withdrawn): nothing to take out
                await self.matchmaker.history.act(qu.Withdraw(leader, entry_id=entry.entry_id), uuid.uuid4().hex, actor)

    async def DeclinePartyInvite(
        self, request: lobby_pb2.DeclinePartyInviteRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.DeclinePartyInviteResponse:
        player, _ = await self._player()
        await self.parties.decline(player, request.party_id)
        return lobby_pb2.DeclinePartyInviteResponse()

    async def LeaveParty(
        self, request: lobby_pb2.LeavePartyRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.LeavePartyResponse:
        player, _ = await self._player()
        party = await self.parties.party_of(player)
        if party is not None:  # a queued party leaves the queue first (it would not be the party that queued)
            await self._withdraw_party(party.party_id, party.leader, player)
        await self.parties.leave(player)
        return lobby_pb2.LeavePartyResponse()

    async def GetParty(
        self, request: lobby_pb2.GetPartyRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.GetPartyResponse:
        player, _ = await self._player()
        response = lobby_pb2.GetPartyResponse()
        party = await self.parties.party_of(player)
        if party is not None:
            response.party.CopyFrom(party_message(party))
        for invited in await self.parties.invites(player):
            response.invites.add(
                party_id=invited.party_id, game=GAMES[invited.game], leader_name=invited.members[0].name
            )
        return response

    async def _not_playing(self, player: str) -> None:
        """MATCH_IN_PROGRESS when the player sits in a running match (D-MM-1)."""
        table_id = await self._listing.playing_table_of(player)
        if table_id is not None:
            raise Refused(
                Reason.MATCH_IN_PROGRESS,
                "you sit in a running match: queue when it is over",
                {"table": table_id},
            )

    async def FindMatch(
        self, request: lobby_pb2.FindMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[lobby_pb2.FindMatchResponse]:
        player, name = await self._player()
        mode = MODES[request.mode]
        if mode is tb.Mode.RANKED and request.bot_wait_seconds:
            raise Refused(
                Reason.INVALID_REQUEST, "ranked matches are humans only: no bot wait", {"field": "bot_wait_seconds"}
            )
        party = await self.parties.party_of(player)
        member = party is not None and party.leader != player
        if not member:
            for seated in party.members if party is not None else (pt.Member(player, name),):
                await self._not_playing(seated.player_id)
            await self.matchmaker.enqueue(player, name, KINDS[request.game], mode, request.bot_wait_seconds)
        async for kind, value in self.matchmaker.updates(player, self.draining, until_queued=member):
            yield queue_update(kind, value, player, self._now())

    async def ConfirmMatch(
        self, request: lobby_pb2.ConfirmMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.ConfirmMatchResponse:
        player, _ = await self._player()
        await self.matchmaker.confirm(player, request.offer_id)
        return lobby_pb2.ConfirmMatchResponse()

    async def LeaveQueue(
        self, request: lobby_pb2.LeaveQueueRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.LeaveQueueResponse:
        player, _ = await self._player()
        await self.matchmaker.withdraw(player)
        return lobby_pb2.LeaveQueueResponse()

    async def close(self) -> None:
        await self.presence.close()
        await self.matchmaker.close()


LEAVE_REASONS = {reason: reason.value for reason in qu.LeaveReason}


def queue_update(kind: str, value: Any, player: str, now: int) -> lobby_pb2.FindMatchResponse:
    """One update of a player's `FindMatch` stream (`paiju.lobby.matchmaking.Matchmaker.updates`)."""
    if kind == "waiting":
        entry: qu.Entry = value
        waiting = lobby_pb2.QueueWaiting(
            entry_id=entry.entry_id, waited_seconds=max(0, now - entry.at), window=entry.window(now)
        )
        for p in entry.players:
            waiting.players.add(player_id=p.player_id, name=p.name)
        return lobby_pb2.FindMatchResponse(waiting=waiting)
    if kind == "offer":
        offer, entry = value
        names = {p.player_id: p.name for p in entry.players}
        message = lobby_pb2.MatchOffer(offer_id=offer.offer_id, confirm_by=offer.confirm_by)
        for i, seated in enumerate(offer.seats):
            message.seats.add(player_id=seated, name=names.get(seated, "Player" if seated else "Bot"))
            if seated == player:
                message.seat = i
        message.confirmed.extend(sorted(offer.confirmed))
        return lobby_pb2.FindMatchResponse(offer=message)
    if kind == "found":
        table_id, seat = value
        return lobby_pb2.FindMatchResponse(found=lobby_pb2.MatchFound(table_id=table_id, seat=seat or 0))
    if kind == "ended":
        return lobby_pb2.FindMatchResponse(ended=lobby_pb2.QueueEnded(reason=cast(Any, LEAVE_REASONS[value])))
    return lobby_pb2.FindMatchResponse(end=engine_pb2.WatchEnd(reason=engine_pb2.WATCH_END_REASON_DRAINING))


def engine_client(address: str) -> Callable[[], Any]:
    """A lazily opened EngineService stub (one channel per lobby process)."""
    channel: list[grpc.aio.Channel] = []

    def stub() -> Any:
        if not channel:
            channel.append(grpc_channel(address))
        return engine_pb2_grpc.EngineServiceStub(channel[0])

    return stub
