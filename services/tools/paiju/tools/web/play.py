"""Playing in a browser: the page ``/play`` (a card table: the seats round it in their order, the player's hand fanned
along the bottom, the trick or the play to beat in the middle, what happened in the order it happened) and the
gateway's routes behind it, each made with the browser's own lobby session (`paiju.tools.web.session`) and only
through the public API — the lobby's tables and seats, ``JoinGame`` for the player's game token, the engine's
``Watch`` (with views) and ``Act``.

Routes (JSON, errors as ``{"reason", "message"}``; every ``POST`` only from the page itself, `session.same_origin`):

- ``GET /play`` and ``/play/{play.js,play.css}``: the page;
- ``POST /api/play/tables``: ``{"game": "zlj"|"tractor", "bots": true, "deals": N}`` opens a table, sits the
  player in seat 0, ready; with ``bots`` fills the other seats with bots and starts the match;
- ``POST /api/play/tables/{table}/sit``: take any free seat (``{"seat": N}`` for one) and say ready;
- ``POST /api/play/tables/{table}/start``: (the owner) fill the empty seats with bots (``{"bots": true}``) and
  start the match;
- ``POST /api/play/tables/{table}/leave``: stand up (a bot covers the seat during a match);
- ``GET /api/play/tables/{table}/live``: ``text/event-stream``: ``table`` (who sits where) whenever the table
  changes, and for its match ``turn`` after every change of the game — the player's own view drawn (its hand
  included, nobody else's), the legal actions when its seat may act (each with the command to send), what a
  拖拉机 follow owes, the turn's deadline, the events told in order — then ``ended``. Reloading the page opens it
  again: the game is taken up where it stands. The stream holds the lobby's table watch open, which is the
  player's presence at the table (a seat left without one is covered by a bot after the grace time);
- ``POST /api/play/act``: ``{"table_id", "version", "command"}``: ``command`` is a ``GameCommand`` in the
  contract's JSON form (one of the turn's actions, its cards changed to the ones chosen); the engine judges it.

Parties and the queue (docs/rules/matchmaking.md), each the lobby's call of the same name:

- ``GET /api/play/party``: the player's party and the invites they have not answered (``GetParty``);
- ``POST /api/play/party``: ``{"game"}`` forms a party the player leads (``CreateParty``);
- ``POST /api/play/party/invite``: ``{"name"}`` invites a player by name (``InviteToParty``);
- ``POST /api/play/party/accept`` and ``/decline``: ``{"party_id"}`` answers an invite;
- ``POST /api/play/party/leave``: leaves the party (its leader leaving disbands it);
- ``GET /api/play/queue?game=zlj&mode=casual&bot_wait=60``: ``text/event-stream`` relaying ``FindMatch`` —
  ``waiting``, ``offer``, then ``found`` (the table and seat: the page goes to the table) or ``ended``. A party's
  leader queues the party; a member follows the party's entry. The stream open is the player's presence in the
  queue (D-MM-5); a refusal (a running match, ranked with bots, …) is the answer's status, before any event;
- ``POST /api/play/queue/confirm``: ``{"offer_id"}`` confirms an offered match (``ConfirmMatch``);
- ``POST /api/play/queue/leave``: leaves the queue (``LeaveQueue``).

What a page costs the services: one lobby ``WatchTable`` and one engine ``Watch`` while it is open (plus one
``GetView`` and one ``JoinGame`` when a game is taken up), and per move the player makes one ``Act``. The game token
of the seat a move is made from is taken with ``JoinGame`` at the game's first move and kept by the browser sealed
in a second ``HttpOnly`` cookie (`paiju.tools.web.session.SeatGrant`: bound to the player and the table, sent with
moves only, never readable by the page's scripts); it is taken again when it is about to expire, when the table's
next match began, or when the engine no longer takes it. Leaving the seat clears it, and ends its token at the
engine: during a match a bot takes the seat over, and the engine refuses a seat's token once its player no longer
holds the seat (``SEAT_LOST``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import structlog
from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2

from paiju.platform.edge import STATUS_DETAILS
from paiju.rules.cards import Card, format_card
from paiju.rules.zlj.combos import order as zlj_order
from paiju.sdk import new_command_id
from paiju.sdk.games import GAMES, GameContract, of_kind
from paiju.terminal.client.engine import follow_owed
from paiju.terminal.client.games import PRESENTATIONS
from paiju.terminal.client.render import Seats, tractor_follow_lines, tractor_order
from paiju.tools.web.boards import BOARDS
from paiju.tools.web.gateway import (
    DRAINING_PAUSE_SECONDS,
    STATIC,
    Gateway,
    Problem,
    _mark_bots,
    _names,
    _page_headers,
    _table_json,
    checked_id,
    problem_of,
)
from paiju.tools.web.session import (
    BadBody,
    BrowserSession,
    NotSignedIn,
    SeatGrant,
    Sessions,
    SignInOff,
    add_routes,
    json_body,
    same_origin,
)
from paiju.v1 import cards_pb2, engine_pb2, lobby_events_pb2, lobby_pb2

log = structlog.get_logger("paiju.web")

CALL_SECONDS = 10.0
TITLES = {"zlj": "Za Liu Jia 砸六家", "tractor": "Tractor 拖拉机"}
"""Each game's name in English with its Chinese beside."""
HAND_ORDERS: dict[str, Callable[[Any], Callable[[Card], Any]]] = {
    "zlj": lambda view: zlj_order,
    "tractor": tractor_order,
}
"""Each game's order of a hand shown at a view (the terminal client's)."""
assert set(TITLES) == set(HAND_ORDERS) == set(GAMES), "every game is played on the page"
HISTORY = 60
"""How many events before the current one a page taking a game up is told (what happened lately, in order)."""
MAX_ACT_BYTES = 16384
"""An act's JSON body is at most this long (a command of 324 cards fits)."""
MAX_DEALS = 50
RENEW_BEFORE_SECONDS = 90
"""A stream's session is renewed (in the stream's memory only) this long before it expires."""
HEARTBEAT_SECONDS = 15.0
MODES = {"casual": lobby_events_pb2.MATCH_MODE_CASUAL, "ranked": lobby_events_pb2.MATCH_MODE_RANKED}
"""The queue's modes (D-MM-7): ranked humans only, casual with bots after the player's own wait."""
MAX_BOT_WAIT = 600
MAX_NAME = 64
LEAVE_REASONS = {
    lobby_events_pb2.QUEUE_LEAVE_REASON_WITHDRAWN: "you (or your party's leader) left the queue",
    lobby_events_pb2.QUEUE_LEAVE_REASON_GONE: "the queue lost sight of you for too long",
    lobby_events_pb2.QUEUE_LEAVE_REASON_NOT_CONFIRMED: "a player of your entry did not confirm the match in time",
    lobby_events_pb2.QUEUE_LEAVE_REASON_SEATED: "seated",
}
CHANGING = ("POST", "PUT", "PATCH", "DELETE")
FAIR_STEPS = {
    engine_pb2.FAIR_DEALING_STEP_KIND_CONTRIBUTE: "contribute",
    engine_pb2.FAIR_DEALING_STEP_KIND_COMMIT: "commit",
    engine_pb2.FAIR_DEALING_STEP_KIND_REVEAL: "reveal",
}
"""A seat's part in fair dealing (docs/fairness.md), which the page takes by itself: its random bytes, salt and cut
are drawn in the browser (`crypto.getRandomValues`), the commitment computed there, and kept there until revealed,
so that neither the gateway nor the engine knows them before the reveal."""


def title(game: str) -> str:
    return TITLES.get(game, game)


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def _pb_card(card: Card) -> str:
    """A card's name in the contract (``CARD_QS``), as the page puts it in a command."""
    return str(cards_pb2.Card.Name(cards_pb2.Card.ValueType(int(card) + 1)))


def _card_json(card: Card) -> dict[str, str]:
    return {"card": format_card(card), "pb": _pb_card(card)}


def _sorted_hand(game: str, view: Any) -> list[Card]:
    return sorted(view.hand, key=HAND_ORDERS[game](view))


def _action_json(game: GameContract, option: Any) -> dict[str, Any]:
    command: engine_pb2.GameCommand = engine_pb2.GameCommand()
    getattr(command, game.name).CopyFrom(game.commands.encode(option.command))
    kind = str(getattr(command, game.name).WhichOneof("command"))
    found = getattr(option.command, "cards", None)
    return {
        "kind": kind,
        "label": option.label,
        "group": option.group,
        "cards": [format_card(c) for c in found] if found is not None else None,
        "command": json_format.MessageToDict(command, preserving_proto_field_name=True),
    }


class Play:
    """The play routes of one gateway (stateless: every call is made with the browser's own session)."""

    def __init__(self, gateway: Gateway, key: bytes, secure: bool = True) -> None:
        self.gateway = gateway
        self.upstream = gateway.upstream
        self.sessions = Sessions(
            key, gateway.upstream, secure=secure, voucher=gateway.voucher, address_of=gateway.browser_address
        )
        """The sign-ins; the calls made with browsers' sessions are counted with the gateway's own, as ``player
        <method>`` (the health page's ``upstream_calls``)."""

    def count(self, method: str) -> None:
        self.sessions.count(method)

    # --- the checks every request of the play routes passes -----------------------------------------------------

    @web.middleware
    async def guard(self, request: web.Request, handler: Callable[[web.Request], Awaitable[Any]]) -> Any:
        """Refuse a request that changes something from anywhere but the page itself, and turn the play routes'
        refusals into the gateway's (`Problem`)."""
        if request.method in CHANGING and not same_origin(request):
            raise Problem(403, "CROSS_SITE", "a request that changes something must come from this site's own page")
        try:
            return await handler(request)
        except NotSignedIn:
            raise Problem(401, "NOT_SIGNED_IN", "sign in first (as a guest, or with your name and password)") from None
        except SignInOff:
            raise Problem(
                503, "SIGN_IN_OFF", "this web view signs nobody in (it has no PAIJU_WEB_SESSION_KEY_FILE)"
            ) from None
        except BadBody as e:
            raise Problem(400, "INVALID_REQUEST", e.message) from None
        except grpc.aio.AioRpcError as e:
            if not request.path.startswith(("/api/play/", "/api/session/", "/api/me")):
                raise
            if e.code() is grpc.StatusCode.RESOURCE_EXHAUSTED:
                # the lobby counts a browser's calls by its session's account or by its own address (which the web
                # view tells it): a limit met is the browser's own, said as the lobby says it
                raise Problem(429, "RATE_LIMITED", (e.details() or "too many calls")[:500], _retry_after(e)) from None
            problem = problem_of(e, "a Paiju service")
            if e.code() is grpc.StatusCode.UNAUTHENTICATED:
                problem.status = 401
            elif e.code() is grpc.StatusCode.PERMISSION_DENIED:
                problem.status = 403
            elif e.code() in (
                grpc.StatusCode.FAILED_PRECONDITION,
                grpc.StatusCode.ABORTED,
                grpc.StatusCode.ALREADY_EXISTS,
            ):
                problem.status = 409
            elif e.code() is grpc.StatusCode.INVALID_ARGUMENT:
                problem.status = 400
            raise problem from None

    # --- the page ---------------------------------------------------------------------------------------------

    async def page(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "play.html", headers=_page_headers())

    async def static(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name not in {"play.js", "play.css"}:
            raise Problem(404, "NOT_FOUND", "no such file")
        return web.FileResponse(STATIC / name, headers=_page_headers())

    # --- tables and seats -------------------------------------------------------------------------------------

    async def _lobby(self, method: str, request: Any, session: BrowserSession) -> Any:
        self.count(method)
        metadata = self.sessions.metadata(session)
        return await getattr(self.upstream.lobby, method)(request, metadata=metadata, timeout=CALL_SECONDS)

    async def create(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        body = await json_body(request)
        game = body.get("game")
        if game not in GAMES:
            raise BadBody(f"the game must be one of {', '.join(GAMES)}")
        bots = body.get("bots", False)
        if not isinstance(bots, bool):
            raise BadBody("bots must be true or false")
        deals = body.get("deals")
        if deals is not None and (isinstance(deals, bool) or not isinstance(deals, int) or not 1 <= deals <= MAX_DEALS):
            raise BadBody(f"deals must be a whole number from 1 to {MAX_DEALS}")
        contract = GAMES[game]
        create = lobby_pb2.CreateTableRequest(
            name=f"{session.name[:40]}'s table", game=engine_pb2.Game.ValueType(contract.kind)
        )
        create.mode = lobby_events_pb2.MATCH_MODE_CASUAL  # a casual match: rated, bots at their fixed ratings
        options = PRESENTATIONS[game].table_options(deals)  # as `paiju play` asks: a match of so many deals
        if options is not None:
            getattr(create, f"{game}_options").CopyFrom(options)
        table = (await self._lobby("CreateTable", create, session)).table
        take = lobby_pb2.TakeSeatRequest(table_id=table.table_id, seat=0)
        table = (await self._lobby("TakeSeat", take, session)).table
        await self._lobby("Ready", lobby_pb2.ReadyRequest(table_id=table.table_id, ready=True), session)
        if bots:
            table = await self._fill_and_start(table, session)
        return web.json_response({"table": self._table(table, session)})

    async def _fill_and_start(self, table: lobby_pb2.Table, session: BrowserSession) -> lobby_pb2.Table:
        for seat in table.seats:
            if not seat.player_id and not seat.bot:
                await self._lobby("AddBot", lobby_pb2.AddBotRequest(table_id=table.table_id, seat=seat.seat), session)
        started = await self._lobby("StartMatch", lobby_pb2.StartMatchRequest(table_id=table.table_id), session)
        return started.table  # type: ignore[no-any-return]

    async def sit(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        table_id = checked_id(request.match_info["table"], "table")
        body = await json_body(request)
        seat = body.get("seat")
        take = lobby_pb2.TakeSeatRequest(table_id=table_id)
        if seat is not None:
            if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat <= 5:
                raise BadBody("seat must be a whole number from 0 to 5")
            take.seat = seat
        table = (await self._lobby("TakeSeat", take, session)).table
        await self._lobby("Ready", lobby_pb2.ReadyRequest(table_id=table_id, ready=True), session)
        return web.json_response({"table": self._table(table, session)})

    async def start(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        table_id = checked_id(request.match_info["table"], "table")
        body = await json_body(request)
        bots = body.get("bots", True)
        if not isinstance(bots, bool):
            raise BadBody("bots must be true or false")
        table = (await self._lobby("GetTable", lobby_pb2.GetTableRequest(table_id=table_id), session)).table
        if bots:
            table = await self._fill_and_start(table, session)
        else:
            table = (await self._lobby("StartMatch", lobby_pb2.StartMatchRequest(table_id=table_id), session)).table
        return web.json_response({"table": self._table(table, session)})

    async def leave(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        table_id = checked_id(request.match_info["table"], "table")
        table = (await self._lobby("LeaveSeat", lobby_pb2.LeaveSeatRequest(table_id=table_id), session)).table
        response = web.json_response({"table": self._table(table, session)})
        self.sessions.clear_seat(response)  # the seat's game token kept for moves goes with the seat
        return response

    def _table(self, table: lobby_pb2.Table, session: BrowserSession) -> dict[str, Any]:
        found = _table_json(table)
        found["title"] = title(found["game"])
        mine = [seat.seat for seat in table.seats if seat.player_id == session.player_id and not seat.bot]
        found["my_seat"] = mine[0] if mine else None
        found["owner"] = table.owner_id == session.player_id
        for seat, raw in zip(found["seats"], table.seats, strict=True):
            seat["ready"] = raw.ready
            seat["covered"] = raw.covered
            seat["empty"] = not raw.player_id and not raw.bot
        return found

    # --- acting -----------------------------------------------------------------------------------------------

    async def act(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        body = await json_body(request, MAX_ACT_BYTES)
        table_id = body.get("table_id")
        if not isinstance(table_id, str):
            raise BadBody("table_id must be a table's id")
        checked_id(table_id, "table")
        version = body.get("version")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
            raise BadBody("version must be a whole number (or null for a concealed move)")
        raw = body.get("command")
        if not isinstance(raw, dict):
            raise BadBody("command must be a GameCommand in the contract's JSON form")
        command = engine_pb2.GameCommand()
        try:
            json_format.ParseDict(raw, command, max_recursion_depth=16)
        except (json_format.ParseError, RecursionError, TypeError, ValueError) as e:
            raise BadBody(f"command is not a GameCommand: {str(e)[:200]}") from None
        which = command.WhichOneof("command")
        if which is None:
            raise BadBody("command names no game's command")
        kept = self.sessions.seat(request)
        if (
            kept is None
            or kept.player_id != session.player_id
            or kept.table_id != table_id
            or kept.expires_at - RENEW_BEFORE_SECONDS < time.time()
        ):
            kept = None
        grant = kept if kept is not None else await self._seat(table_id, session)
        try:
            answer = await self._act(grant, which, command, version)
        except grpc.aio.AioRpcError as e:
            if kept is None:
                raise
            # the seat kept may be of the table's previous match, or its token no longer good: the seat taken
            # again; the move is tried again only when that changed something (a refusal of the same game stands)
            grant = await self._seat(table_id, session)
            if grant.game_id == kept.game_id and e.code() is not grpc.StatusCode.UNAUTHENTICATED:
                raise
            answer = await self._act(grant, which, command, version)
        response = web.json_response({"version": int(answer.version)})
        if grant is not kept:
            self.sessions.set_seat(response, grant)
        return response

    async def _seat(self, table_id: str, session: BrowserSession) -> SeatGrant:
        """The player's seat at the table's match and its game token (the lobby's ``JoinGame``)."""
        join = await self._lobby("JoinGame", lobby_pb2.JoinGameRequest(table_id=table_id), session)
        if not join.HasField("seat"):
            raise Problem(403, "NOT_SEATED", "you hold no seat at this table's match")
        return SeatGrant(
            join.token, session.player_id, table_id, join.game_id, int(join.game), join.seat, int(join.expires_at)
        )

    async def _act(
        self, grant: SeatGrant, which: str, command: engine_pb2.GameCommand, version: int | None
    ) -> engine_pb2.ActResponse:
        game = of_kind(grant.game)
        if game is None or game.name != which:
            raise BadBody(f"this table plays {game.name if game else 'another game'}, not {which}")
        act = engine_pb2.ActRequest(game_id=grant.game_id, command_id=new_command_id())
        if version is not None:
            act.expected_version = version
        getattr(act, which).CopyFrom(getattr(command, which))
        self.count("Act")
        answer: engine_pb2.ActResponse = await self.upstream.engine.Act(
            act, metadata=grant.metadata, timeout=CALL_SECONDS
        )
        return answer

    # --- parties and the queue (docs/rules/matchmaking.md) ---------------------------------------------------

    def _party(self, party: lobby_pb2.Party, session: BrowserSession) -> dict[str, Any]:
        return {
            "party_id": party.party_id,
            "game": _game_name(party.game),
            "leader_id": party.leader_id,
            "leader": party.leader_id == session.player_id,
            "members": [{"player_id": m.player_id, "name": m.name} for m in party.members],
            "invited": [{"player_id": m.player_id, "name": m.name} for m in party.invited],
        }

    async def _party_now(self, session: BrowserSession) -> dict[str, Any]:
        found = await self._lobby("GetParty", lobby_pb2.GetPartyRequest(), session)
        return {
            "party": self._party(found.party, session) if found.HasField("party") else None,
            "invites": [
                {"party_id": i.party_id, "game": _game_name(i.game), "leader_name": i.leader_name}
                for i in found.invites
            ],
        }

    async def party(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        return web.json_response(await self._party_now(session))

    async def party_create(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        body = await _only(request, "game")
        game = body.get("game")
        if not isinstance(game, str) or game not in GAMES:
            raise BadBody(f"the game must be one of {', '.join(GAMES)}")
        create = lobby_pb2.CreatePartyRequest(game=engine_pb2.Game.ValueType(GAMES[game].kind))
        await self._lobby("CreateParty", create, session)
        return web.json_response(await self._party_now(session))

    async def party_invite(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        body = await _only(request, "name")
        name = body.get("name")
        if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME or not name.isprintable():
            raise BadBody(f"name must be a player's name: 1 to {MAX_NAME} printable characters")
        await self._lobby("InviteToParty", lobby_pb2.InviteToPartyRequest(player_name=name), session)
        return web.json_response(await self._party_now(session))

    async def _party_id(self, request: web.Request) -> str:
        body = await _only(request, "party_id")
        party_id = body.get("party_id")
        if not isinstance(party_id, str):
            raise BadBody("party_id must be a party's id")
        return checked_id(party_id, "party")

    async def party_accept(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        party_id = await self._party_id(request)
        await self._lobby("AcceptPartyInvite", lobby_pb2.AcceptPartyInviteRequest(party_id=party_id), session)
        return web.json_response(await self._party_now(session))

    async def party_decline(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        party_id = await self._party_id(request)
        await self._lobby("DeclinePartyInvite", lobby_pb2.DeclinePartyInviteRequest(party_id=party_id), session)
        return web.json_response(await self._party_now(session))

    async def party_leave(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        await _only(request)
        await self._lobby("LeaveParty", lobby_pb2.LeavePartyRequest(), session)
        return web.json_response(await self._party_now(session))

    async def queue_confirm(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        body = await _only(request, "offer_id")
        offer_id = body.get("offer_id")
        if not isinstance(offer_id, str):
            raise BadBody("offer_id must be an offer's id")
        checked_id(offer_id, "offer")
        await self._lobby("ConfirmMatch", lobby_pb2.ConfirmMatchRequest(offer_id=offer_id), session)
        return web.json_response({"confirmed": offer_id})

    async def queue_leave(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        await _only(request)
        await self._lobby("LeaveQueue", lobby_pb2.LeaveQueueRequest(), session)
        return web.json_response({"queued": False})

    async def queue(self, request: web.Request) -> web.StreamResponse:
        """``FindMatch`` relayed as server-sent events, with the browser's own session. Opening it queues the
        player (a party's leader: the party), so only the page itself opens it: a browser saying the request comes
        from another site (``Sec-Fetch-Site``) is refused, as a cross-site ``POST`` is."""
        site = request.headers.get("Sec-Fetch-Site")
        if site is not None and site != "same-origin":
            raise Problem(403, "CROSS_SITE", "the queue opens only from this site's own page")
        session = self.sessions.required(request)
        query = request.query
        game = query.get("game", "")
        if game not in GAMES:
            raise BadBody(f"the game must be one of {', '.join(GAMES)}")
        mode = query.get("mode", "casual")
        if mode not in MODES:
            raise BadBody("the mode must be casual or ranked")
        raw_wait = query.get("bot_wait", "0")
        if not (raw_wait.isascii() and raw_wait.isdigit() and len(raw_wait) <= 3) or int(raw_wait) > MAX_BOT_WAIT:
            raise BadBody(f"bot_wait must be a whole number of seconds from 0 to {MAX_BOT_WAIT}")
        wait = int(raw_wait)
        if mode == "ranked" and wait:
            raise BadBody("ranked matches are humans only: no bot wait")
        find = lobby_pb2.FindMatchRequest(
            game=engine_pb2.Game.ValueType(GAMES[game].kind), mode=MODES[mode], bot_wait_seconds=wait
        )
        gateway = self.gateway
        async with gateway.limits.stream("live", gateway.client(request), None):
            self.count("FindMatch")
            call = self.upstream.lobby.FindMatch(find, metadata=self.sessions.metadata(session))
            response: web.StreamResponse | None = None
            read: asyncio.Future[Any] | None = None
            try:
                first = await call.read()  # a refusal is the answer's status, before any event
                response = web.StreamResponse(
                    headers={
                        "Content-Type": "text/event-stream",
                        "Cache-Control": "no-store",
                        "X-Accel-Buffering": "no",
                    }
                )
                await response.prepare(request)
                update = first
                while True:
                    if update is grpc.aio.EOF:
                        await _event(response, "ended", {"message": "the queue closed this stream"})
                        break
                    kind = update.WhichOneof("update")
                    if kind == "end":  # the lobby is restarting: the entry waits; follow it again, after a pause
                        call.cancel()
                        await asyncio.sleep(DRAINING_PAUSE_SECONDS)  # a draining lobby ends a new stream at once
                        self.count("FindMatch")
                        call = self.upstream.lobby.FindMatch(find, metadata=self.sessions.metadata(session))
                    else:
                        event, data = _queue_update(kind, update, session)
                        await _event(response, event, data)
                        if event in ("found", "ended"):
                            break
                    read = asyncio.ensure_future(call.read())
                    while True:
                        done, _ = await asyncio.wait({read}, timeout=HEARTBEAT_SECONDS)
                        if done:
                            break
                        await response.write(b": still here\n\n")
                    update = read.result()
            except (ConnectionResetError, asyncio.CancelledError):
                pass
            except grpc.aio.AioRpcError as e:
                if response is None:
                    raise
                problem = problem_of(e, "the lobby")
                with contextlib.suppress(ConnectionResetError):
                    await _event(response, "trouble", {"reason": problem.reason, "message": problem.message})
            finally:
                call.cancel()
                if read is not None and not read.done():
                    read.cancel()
                    with contextlib.suppress(BaseException):
                        await read
            return response if response is not None else web.Response(status=204)

    # --- the live table ---------------------------------------------------------------------------------------

    async def live(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.required(request)
        table_id = checked_id(request.match_info["table"], "table")
        gateway = self.gateway
        async with gateway.limits.stream("live", gateway.client(request), None):
            await self._lobby("GetTable", lobby_pb2.GetTableRequest(table_id=table_id), session)  # 404 before streaming
            response = web.StreamResponse(
                headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
            )
            await response.prepare(request)
            stream = LiveSeat(self, table_id, session)
            task = asyncio.create_task(stream.run())
            try:
                while True:
                    try:
                        message = await asyncio.wait_for(stream.queue.get(), timeout=HEARTBEAT_SECONDS)
                    except TimeoutError:
                        await response.write(b": still here\n\n")
                        continue
                    data = json.dumps(message["data"], ensure_ascii=False, separators=(",", ":"))
                    await response.write(f"event: {message['event']}\ndata: {data}\n\n".encode())
                    if message["event"] == "gone":
                        break
            except (ConnectionResetError, asyncio.CancelledError):
                pass
            finally:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            return response


async def _only(request: web.Request, *fields: str) -> dict[str, Any]:
    """A request's JSON body holding no field but ``fields`` (a field the route does not know is refused: a body
    meant for another route does nothing here)."""
    body = await json_body(request)
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise BadBody(f"this request takes {', '.join(fields) or 'no field'}, not {unknown[0][:40]}")
    return body


def _retry_after(error: grpc.aio.AioRpcError) -> float:
    """How long a rate-limited call's `google.rpc.RetryInfo` says to wait (1 s when it says nothing)."""
    for key, value in error.trailing_metadata() or ():
        if key == STATUS_DETAILS and isinstance(value, bytes):
            with contextlib.suppress(DecodeError):
                for detail in status_pb2.Status.FromString(value).details:
                    retry = error_details_pb2.RetryInfo()
                    if detail.Unpack(retry):
                        return float(retry.retry_delay.ToTimedelta().total_seconds())
    return 1.0


def _game_name(kind: int) -> str:
    game = of_kind(kind)
    return game.name if game is not None else ""


async def _event(response: web.StreamResponse, event: str, data: dict[str, Any]) -> None:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    await response.write(f"event: {event}\ndata: {text}\n\n".encode())


def _queue_update(kind: str | None, update: lobby_pb2.FindMatchResponse, session: BrowserSession) -> tuple[str, Any]:
    """One ``FindMatch`` update as the page's event: its name and data."""
    if kind == "waiting":
        w = update.waiting
        return "waiting", {
            "waited_seconds": int(w.waited_seconds),
            "window": round(w.window, 1),
            "players": [m.name for m in w.players],
        }
    if kind == "offer":
        o = update.offer
        return "offer", {
            "offer_id": o.offer_id,
            "seats": [
                {"name": s.name, "bot": not s.player_id, "me": s.player_id == session.player_id} for s in o.seats
            ],
            "seat": o.seat,
            "confirm_by": int(o.confirm_by),
            "confirmed": len(o.confirmed),
            "humans": sum(1 for s in o.seats if s.player_id),
            "i_confirmed": session.player_id in o.confirmed,
        }
    if kind == "found":
        return "found", {"table_id": update.found.table_id, "seat": update.found.seat}
    reason = update.ended.reason if kind == "ended" else lobby_events_pb2.QUEUE_LEAVE_REASON_UNSPECIFIED
    return "ended", {"message": LEAVE_REASONS.get(reason, "you are out of the queue")}


class LiveSeat:
    """One page's table as its player sees it: the lobby's table watch (who sits where, and the player's
    presence) and, while a match is played, the engine's watch of the game with the player's view."""

    def __init__(self, play: Play, table_id: str, session: BrowserSession) -> None:
        self.play = play
        self.table_id = table_id
        self.session = session
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=64)
        self.table: lobby_pb2.Table | None = None
        self.changed = asyncio.Event()

    def publish(self, event: str, data: dict[str, Any]) -> None:
        if self.queue.full():  # a page that reads nothing gets the latest next
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
        self.queue.put_nowait({"event": event, "data": data})

    async def _metadata(self) -> tuple[tuple[str, str], ...]:
        """The browser's session, renewed in this stream's memory when about to expire (the page renews its
        cookie by itself)."""
        if self.session.expires_at - RENEW_BEFORE_SECONDS < time.time():
            self.play.count("RenewSession")
            s = (
                await self.play.upstream.lobby.RenewSession(
                    lobby_pb2.RenewSessionRequest(),
                    metadata=self.play.sessions.metadata(self.session),
                    timeout=CALL_SECONDS,
                )
            ).session
            self.session = BrowserSession(s.token, s.player_id, s.name, int(s.expires_at), self.session.address)
        return self.play.sessions.metadata(self.session)

    async def run(self) -> None:
        watching = asyncio.create_task(self._watch_table())
        try:
            followed = ""
            while True:
                await self.changed.wait()
                self.changed.clear()
                table = self.table
                if table is None or not table.game_id or table.game_id == followed:
                    continue
                if table.status != lobby_pb2.TABLE_STATUS_PLAYING:
                    continue
                followed = table.game_id
                try:
                    await self._follow()
                except grpc.aio.AioRpcError as e:
                    problem = problem_of(e, "the lobby or the engine")
                    self.publish("trouble", {"message": problem.message, "reason": problem.reason})
                    followed = ""
                    await asyncio.sleep(2)
                    self.changed.set()
        except Exception:
            log.exception("a player's live table failed", table=self.table_id)
            self.publish("gone", {"message": "the server failed to follow this table: reload the page"})
        finally:
            watching.cancel()
            with contextlib.suppress(BaseException):
                await watching

    async def _watch_table(self) -> None:
        """The lobby's watch of the table: each change published, and the player's presence while it is open."""
        while True:
            try:
                self.play.count("WatchTable")
                call = self.play.upstream.lobby.WatchTable(
                    lobby_pb2.WatchTableRequest(table_id=self.table_id), metadata=await self._metadata()
                )
                async for message in call:
                    if message.HasField("table"):
                        self.table = message.table
                        self.publish("table", self.play._table(message.table, self.session))
                        self.changed.set()
                    if message.HasField("end"):
                        break
            except grpc.aio.AioRpcError as e:
                problem = problem_of(e, "the lobby")
                if problem.status == 404 or e.code() is grpc.StatusCode.UNAUTHENTICATED:
                    self.publish("gone", {"message": problem.message, "reason": problem.reason})
                    return
            await asyncio.sleep(1)

    async def _follow(self) -> None:
        """Follow the table's current game to its end: the player's game token, where the game stands (its view
        once), then its Watch stream from a little before (what happened lately, told in order) with the player's
        view in every turn."""
        upstream = self.play.upstream
        self.play.count("JoinGame")
        join = await upstream.lobby.JoinGame(
            lobby_pb2.JoinGameRequest(table_id=self.table_id), metadata=await self._metadata(), timeout=CALL_SECONDS
        )
        game = of_kind(join.game)
        if game is None:
            self.publish("gone", {"message": "this table plays a game this page does not know"})
            return
        seat: int | None = join.seat if join.HasField("seat") else None
        table = self.table
        seats = Seats(me=seat, names=_names(table) if table is not None else {})
        narration = PRESENTATIONS[game.name].narration(seats)
        token, expires = join.token, join.expires_at
        self.play.count("GetView")
        first = (
            await upstream.engine.GetView(
                engine_pb2.GetViewRequest(game_id=join.game_id), metadata=_bearer(token), timeout=CALL_SECONDS
            )
        ).version
        version = max(0, first - HISTORY)
        lines: list[str] = []
        while True:
            if expires - RENEW_BEFORE_SECONDS < time.time():
                self.play.count("JoinGame")
                again = await upstream.lobby.JoinGame(
                    lobby_pb2.JoinGameRequest(table_id=self.table_id),
                    metadata=await self._metadata(),
                    timeout=CALL_SECONDS,
                )
                token, expires = again.token, again.expires_at
            self.play.count("Watch")
            call = upstream.engine.Watch(
                engine_pb2.WatchRequest(game_id=join.game_id, from_version=version, views=True),
                metadata=_bearer(token),
            )
            ended = False
            async for message in call:
                if message.HasField("end"):
                    ended = message.end.reason == engine_pb2.WATCH_END_REASON_GAME_ENDED
                    if not ended:
                        await asyncio.sleep(0.5)
                    break
                if message.HasField("envelope"):
                    version = message.envelope.version
                    if message.envelope.WhichOneof("payload") == "seats_assigned" and self.table is not None:
                        seats.names = _names(self.table)
                    lines += [line.strip() for line in narration.lines(message.envelope) if line.strip()]
                turn = message.turn if message.HasField("turn") else None
                if turn is not None and turn.WhichOneof("view") == game.name and turn.version >= first:
                    self.publish("turn", self._turn(game, join.game_id, seat, turn, lines))
                    lines = []
                if expires - RENEW_BEFORE_SECONDS < time.time():
                    break  # the game token is about to expire: taken again, and the watch opened again
            if ended:
                self.publish("ended", {"game_id": join.game_id, "version": version, "lines": lines})
                return

    def _turn(
        self, game: GameContract, game_id: str, seat: int | None, turn: engine_pb2.Turn, lines: list[str]
    ) -> dict[str, Any]:
        view = game.view(turn)
        table = self.table
        names = _names(table) if table is not None else {}
        drawn = BOARDS[type(view)](view, names)
        if table is not None:
            _mark_bots(drawn, {s.seat for s in table.seats if s.bot or s.covered})
        presentation = PRESENTATIONS[game.name]
        mine = seat is not None and seat in turn.seats
        actions = []
        if mine:
            actions = [_action_json(game, option) for option in presentation.options(view, game.actions(turn))]
        follow: list[str] = []
        owed_cards: list[str] = []
        if mine and turn.HasField("tractor_follow") and turn.tractor_follow.count:
            owed = follow_owed(turn.tractor_follow)
            # the terminal's lines, but its last, which says what to type there
            follow = [line for line in tractor_follow_lines(view, owed) if not line.startswith("Type ")]
            owed_cards = [] if owed.exact else [format_card(c) for c in owed.suit_cards]  # none: any card may go
        timer = int(getattr(view.options, "turn_seconds", 0) or 0)
        deadline = turn.deadline.ToMilliseconds() if timer and turn.HasField("deadline") else None
        hand = _sorted_hand(game.name, view) if seat is not None and drawn["dealt"] else []
        fair = None
        if seat is not None and turn.HasField("fair_step") and turn.fair_step.kind in FAIR_STEPS:
            step = turn.fair_step
            fair = {"kind": FAIR_STEPS[step.kind], "shuffle": step.shuffle, "max_cut": step.max_cut, "seat": seat}
        return {
            "game_id": game_id,
            "game": game.name,
            "title": title(game.name),
            "version": turn.version,
            "my_seat": seat,
            "to_act": list(turn.seats),
            "mine": mine,
            "concealed": view.phase in presentation.concealed,
            "hint": presentation.prompt_hint(view) if mine else "",
            "board": drawn,
            "hand": [_card_json(c) for c in hand],
            "actions": actions,
            "follow": follow,
            "follow_cards": owed_cards,
            "deadline_ms": deadline,
            "timer_seconds": timer,
            "lines": lines,
            "fair_step": fair,
        }


def install(app: web.Application, gateway: Gateway, key: bytes, *, secure: bool = True) -> Play:
    """Add the sign-in and play routes to the gateway's app (``key``: the session key; none: nobody signs in)."""
    play = Play(gateway, key, secure=secure)
    app.middlewares.append(play.guard)
    add_routes(app, play.sessions)
    app.router.add_get("/play", play.page)
    app.router.add_get("/play/{name}", play.static)
    app.router.add_post("/api/play/tables", play.create)
    app.router.add_post("/api/play/tables/{table}/sit", play.sit)
    app.router.add_post("/api/play/tables/{table}/start", play.start)
    app.router.add_post("/api/play/tables/{table}/leave", play.leave)
    app.router.add_get("/api/play/tables/{table}/live", play.live)
    app.router.add_post("/api/play/act", play.act)
    app.router.add_get("/api/play/party", play.party)
    app.router.add_post("/api/play/party", play.party_create)
    app.router.add_post("/api/play/party/invite", play.party_invite)
    app.router.add_post("/api/play/party/accept", play.party_accept)
    app.router.add_post("/api/play/party/decline", play.party_decline)
    app.router.add_post("/api/play/party/leave", play.party_leave)
    app.router.add_get("/api/play/queue", play.queue)
    app.router.add_post("/api/play/queue/confirm", play.queue_confirm)
    app.router.add_post("/api/play/queue/leave", play.queue_leave)
    return play


__all__ = ["TITLES", "Play", "install"]
