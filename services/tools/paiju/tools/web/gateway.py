"""`paiju web`: the web view's server — the pages, and a small JSON and server-sent-events gateway over the public
gRPC API (`paiju.tools.web.upstream`: a guest and a spectator, never more).

Routes (every answer JSON, errors as ``{"reason", "message"}`` with the HTTP status of the gRPC refusal):

- ``GET /`` and ``/static/…``: the page (one HTML file, its script and its style; no build step, no CDN);
- ``GET /api/tables``: the lobby's tables (read at most every two seconds);
- ``GET /api/tables/{table}/live``: ``text/event-stream`` of the table as a spectator sees it — one ``board``
  message at once, then one after each change of its game (the board, the events told in words, the turn timer's
  deadline), ``ended`` when the game is over; then the table's next match, if it starts one;
- ``GET /api/games/{game}/replay?table=…&deal=N``: one deal of an ended game move by move, every hand shown (its
  record is public once it has ended), with the index of its deals (each deal's first and last version), so that a
  page asks for the deal it shows and a match of a thousand deals is never built whole in memory; a running game is
  not found (404: the engine tells a guest nothing of it);
- ``GET /api/tournaments/{tournament}``: a tournament, its standings and each round's result sheet;
- ``GET /api/ratings/{game}?mode=casual|ranked&limit=N``: the leaderboard by rating (μ − 3σ, provisional players
  marked), from scoring's RatingsService;
- ``GET /api/players/{player}?game=…&mode=…&before=N``: a player's rating and rated matches, the latest first;
- ``GET /api/players/{player}/versus/{other}?game=…&mode=…``: two players' rated matches with each other;
- ``GET /api/tables/{table}/result``: the table's last finished match — who won, by how much, and each player's
  rating before and after it, as the lobby's table holds them once scoring has rated the match (the live table's
  ``waiting`` messages carry the same answer, ``last``, sent again when the ratings arrive);
- ``GET /healthz``.

A crowd costs the services nothing more than one viewer: each table is watched upstream once (`LiveTable`, shared
by every page showing it, stopped when the last one leaves), and each board is drawn from the public view the
watch's turns carry (``views``), so following a game asks the engine for nothing after its first view; a table is
read at most every two seconds for every page (`Upstream.table`), and so is the tables list; between matches a
live table follows the lobby's watch of the table (its changes, and its last match's ratings when they arrive),
asking nothing. Each
client address has limits of its own (``PAIJU_WEB_RATE_LIMITS``, the rules of `paiju.platform.limits`); the server
holds at most ``PAIJU_WEB_MAX_CONNECTIONS`` connections and closes one that sends no complete request head within
``PAIJU_WEB_HEADER_SECONDS`` (`paiju.tools.web.bounds.ConnectionGuard`); its caches hold at most
``PAIJU_WEB_CACHE_MIB`` (`paiju.tools.web.bounds.ByteCache`), whatever their clients ask. The ratings' answers are
kept `RATINGS_SECONDS` in a cache of their own (an eighth of the whole), so a crowd on a leaderboard asks scoring
once every few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network
from pathlib import Path
from typing import Any

import grpc
import structlog
from aiohttp import web
from google.protobuf import json_format

from paiju.platform.edge import refusal_of_rpc_error
from paiju.platform.errors import Refused
from paiju.platform.limits import RateLimits
from paiju.platform.tokens import Signer
from paiju.sdk.games import GAMES as CONTRACT_GAMES
from paiju.sdk.games import GameContract, of_kind
from paiju.terminal.client.games import PRESENTATIONS
from paiju.terminal.client.render import Seats
from paiju.tools.analyst.games import GAMES as ANALYST_GAMES
from paiju.tools.analyst.log import decode
from paiju.tools.analyst.people import seat_names
from paiju.tools.analyst.replay import Teller
from paiju.tools.analyst.timeline import timeline
from paiju.tools.web.boards import Board, board, result_words, with_hands
from paiju.tools.web.bounds import ByteCache, ConnectionGuard
from paiju.tools.web.session import Voucher
from paiju.tools.web.upstream import RENEW_BEFORE_SECONDS, TABLES_PER_GUEST, Spectator, Upstream
from paiju.v1 import engine_pb2, lobby_events_pb2, lobby_pb2, ratings_pb2

log = structlog.get_logger("paiju.web")

STATIC = Path(__file__).parent / "static"
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
"""An id as the contract accepts one (paiju.v1.id): anything else is refused before any call is made."""
VERSION_GUTTER = re.compile(r"^\d+\s\s")
"""The version a replay's line starts with (the page shows the version beside the slider)."""
IDLE_SECONDS = 30.0
"""A table no page has shown for this long is no longer watched upstream."""
RETRY_SECONDS = 5.0
"""How long a live table waits before following its table again after its upstream failed."""
TABLES_CACHE_SECONDS = 2.0
CACHE_BYTES = 32 << 20
"""The memory the answers kept for replays may hold (``PAIJU_WEB_CACHE_MIB``)."""
MAX_DEAL = 100_000
"""The highest deal number a replay is asked for (a match has far fewer)."""
SHUTDOWN_SECONDS = 5.0
MAX_CONNECTIONS = 1000
"""The connections held open at once (``PAIJU_WEB_MAX_CONNECTIONS``)."""
HEADER_SECONDS = 10.0
"""How long a request's head may take to arrive (``PAIJU_WEB_HEADER_SECONDS``)."""
KEEPALIVE_SECONDS = 15.0
"""How long an idle kept-alive connection between two requests stays open."""
CLOSING = {"event": "closing", "data": {"message": "the web view is restarting: this page reconnects by itself"}}
DRAINING_PAUSE_SECONDS = 0.5
BACK_OFF_SECONDS = 15.0
"""How long a live table waits after the lobby said the gateway's guest is over a limit."""
STATUS_WORDS = {
    lobby_pb2.TABLE_STATUS_OPEN: "open",
    lobby_pb2.TABLE_STATUS_PLAYING: "playing",
}
MODES = {"casual": lobby_events_pb2.MATCH_MODE_CASUAL, "ranked": lobby_events_pb2.MATCH_MODE_RANKED}
"""The ratings' modes, as a page names them (docs/rules/ratings.md, D-RATE-7)."""
DEFAULT_GAME = next(iter(CONTRACT_GAMES))
"""The game a player's page shows when none is asked for (the first of the contract's)."""
RATINGS_SECONDS = 5.0
"""How long an answer of the ratings (a leaderboard, a player, a head-to-head) serves every page that asks."""
LEADERBOARD_SECONDS = 10.0
"""How long a leaderboard serves every page (read whole, `MAX_ROWS`, whatever length a page asks: scoring is asked
for each game and mode's at most once in this time, within its 60 a minute for the web view's guest)."""
LEADERBOARD_ROWS = 50
"""The rows of a leaderboard by default; at most `MAX_ROWS`."""
MAX_ROWS = 100
HISTORY_MATCHES = 50
"""The rated matches a player's page shows at once (the page asks for the next ones with ``before``)."""
HEAD_TO_HEAD_MATCHES = 20
MAX_MATCH_NUMBER = 10**15
"""The highest ``before`` a player's page may ask for (a ledger's match numbers are far below)."""
HTTP_OF_REASON = {
    "GAME_NOT_FOUND": 404,
    "TABLE_NOT_FOUND": 404,
    "TOURNAMENT_NOT_FOUND": 404,
    "PLAYER_NOT_FOUND": 404,
    "NOT_FOUND": 404,
    "INVALID_REQUEST": 400,
    "RATE_LIMITED": 429,
    "SPECTATORS_NOT_ALLOWED": 403,
    "DEPENDENCY_UNAVAILABLE": 503,
}


class Problem(Exception):
    """An HTTP refusal: its status, a stable reason and words for a person."""

    def __init__(self, status: int, reason: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        """Seconds to wait before trying again (a 429's ``Retry-After``)."""


def problem_of(error: grpc.aio.AioRpcError, what: str) -> Problem:
    """A service's refusal as an HTTP one (the same reason and words; UNAVAILABLE when it could not answer)."""
    refused = refusal_of_rpc_error(error, what)
    reason = refused.reason.value
    status = HTTP_OF_REASON.get(reason) or (404 if reason.endswith("_NOT_FOUND") else 502)
    return Problem(status, reason, refused.message)


def checked_id(value: str, what: str) -> str:
    if not ID.match(value):
        raise Problem(400, "INVALID_REQUEST", f"the {what} must be an id: 1 to 100 letters, digits, - or _")
    return value


# --- a table watched live ----------------------------------------------------------------------------------------


@dataclass
class LiveTable:
    """One table as a spectator sees it, followed upstream once for every page that shows it: one spectator's
    Watch stream with the public view in every turn, each turn drawn as a board for every page."""

    table_id: str
    upstream: Upstream
    guest: int
    """The guest this table is followed as (`Upstream.spectate`)."""
    drawn: Counter[str] = field(default_factory=Counter)
    """Boards drawn (``boards``), shared by the gateway's live tables (the health page's)."""
    person: Callable[[str], dict[str, Any]] = field(default=lambda player_id: _person_of(player_id, ""))
    """A player as the pages name them (`Gateway._person`)."""
    queues: set[asyncio.Queue[dict[str, Any]]] = field(default_factory=set)
    last: dict[str, Any] | None = None
    idle_since: float = field(default_factory=time.monotonic)
    task: asyncio.Task[None] | None = None

    def subscribe(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=256)
        if self.last is not None:
            queue.put_nowait(self.last)
        self.queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self.queues.discard(queue)
        if not self.queues:
            self.idle_since = time.monotonic()

    def publish(self, message: dict[str, Any]) -> None:
        if message.get("event") not in ("ended", "closing"):
            self.last = message
        for queue in list(self.queues):
            if queue.full():  # a page that reads nothing is not waited for: it gets the latest board next
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
            queue.put_nowait(message)

    async def run(self) -> None:
        """Follow the table's games until no page shows it (or it is gone)."""
        seen_game = ""
        while True:
            try:
                table = await self._between_matches(seen_game)
                spectator = await self._spectate()
                await self._follow(table, spectator)
                seen_game = spectator.game_id
            except grpc.aio.AioRpcError as e:
                problem = problem_of(e, "the lobby or the engine")
                if problem.status in (403, 404):  # gone, or a table that admits no spectators (D-SPEC-1)
                    self.publish({"event": "gone", "data": {"message": problem.message}})
                    return
                log.info("a live table's upstream failed; trying again", table=self.table_id, reason=problem.reason)
                self.publish({"event": "trouble", "data": {"message": problem.message}})
                limited = e.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # a limit of the services: wait it out
                await asyncio.sleep(BACK_OFF_SECONDS if limited else RETRY_SECONDS)
            except Problem as e:
                self.publish({"event": "gone", "data": {"message": e.message}})
                return
            except Exception:  # a bug must not leave the table's pages waiting on a task that died in silence
                log.exception("a live table failed; following it again", table=self.table_id)
                self.publish({"event": "trouble", "data": {"message": "the server failed to draw this table"}})
                await asyncio.sleep(RETRY_SECONDS)

    async def _between_matches(self, seen_game: str) -> lobby_pb2.Table:
        """The table once it has a game not followed yet (``seen_game``: the last one followed), told by the lobby's
        watch of the table; meanwhile each table the watch sends — each change, and the last match's ratings when
        scoring has rated it — is published as ``waiting``."""
        while True:
            try:
                async for reply in self.upstream.watch_table(self.table_id, self.guest):
                    if not reply.HasField("table"):
                        break  # the lobby replica is draining: another answers the next watch
                    table = reply.table
                    if table.game_id and table.game_id != seen_game:
                        return table
                    self.publish(_waiting(table, seen_game, self.person))
            except grpc.aio.AioRpcError as e:
                if e.code() is grpc.StatusCode.UNAUTHENTICATED:  # the lobby no longer takes the guest's session
                    self.upstream.forget_session(self.guest)
                raise
            await asyncio.sleep(DRAINING_PAUSE_SECONDS)

    async def _spectate(self) -> Spectator:
        try:
            return await self.upstream.spectate(self.table_id, self.guest)
        except grpc.aio.AioRpcError as e:
            if e.code() is grpc.StatusCode.UNAUTHENTICATED:  # the lobby no longer takes the guest's session
                self.upstream.forget_session(self.guest)
            raise

    async def _fresh(self, spectator: Spectator) -> Spectator:
        """The spectator's token, taken again from the lobby when it is about to expire."""
        if spectator.expires_at - RENEW_BEFORE_SECONDS < time.time():
            return await self._spectate()
        return spectator

    async def _follow(self, table: lobby_pb2.Table, spectator: Spectator) -> None:
        """Follow one game to its end: its view once, to know where it stands, then its Watch stream from the event
        before (whose turn draws the first board at once), a board for every turn (the public view it carries, the
        events before it told in words) and nothing asked of the engine in between."""
        game = of_kind(spectator.game)
        if game is None:
            raise Problem(502, "UNKNOWN_GAME", f"table {self.table_id} plays a game this page does not know")
        seats = Seats(names=_names(table))
        narration = PRESENTATIONS[game.name].narration(seats)
        first = (await self.upstream.view(spectator)).version
        version = max(0, first - 1)  # the last event again: its turn draws the first board, with its deadline
        lines: list[str] = []
        while True:
            spectator = await self._fresh(spectator)
            stream = self.upstream.watch(spectator, version)
            ended = False
            async for message in stream:
                if message.HasField("end"):
                    ended = message.end.reason == engine_pb2.WATCH_END_REASON_GAME_ENDED
                    if not ended:  # the engine replica is draining: another answers in a moment
                        await asyncio.sleep(DRAINING_PAUSE_SECONDS)
                    break
                if message.HasField("envelope"):
                    envelope = message.envelope
                    version = envelope.version
                    if version > first:  # the events before the first board are not told again
                        lines += [line.strip() for line in narration.lines(envelope) if line.strip()]
                    if envelope.WhichOneof("payload") == "seats_assigned":
                        table = await self.upstream.table(self.table_id, fresh=True)
                        seats.names = _names(table)
                if message.HasField("turn") and message.turn.WhichOneof("view") == game.name:
                    self.publish(self._board(table, spectator, game, message.turn, lines))
                    lines = []
            if ended:
                self.publish({"event": "ended", "data": {"game_id": spectator.game_id, "version": version}})
                return

    def _board(
        self,
        table: lobby_pb2.Table,
        spectator: Spectator,
        game: GameContract,
        turn: engine_pb2.Turn,
        lines: list[str],
    ) -> dict[str, Any]:
        """The board message of a turn: its public view drawn, the events before it told, and, on a table with a
        turn timer, when the running turn runs out (the turn's deadline)."""
        view = game.view(turn)
        drawn: Board = board(view, _names(table))
        _mark_bots(drawn, {seat.seat for seat in table.seats if seat.bot or seat.covered})
        self.drawn["boards"] += 1
        timer = int(getattr(view.options, "turn_seconds", 0) or 0)
        delay = table.spectators.delay_moves
        deadline = None
        if timer and turn.HasField("deadline") and not delay:  # a delayed board's turn ran out long ago
            deadline = turn.deadline.ToMilliseconds()
        return {
            "event": "board",
            "data": {
                "table_id": table.table_id,
                "table": table.name,
                "game_id": spectator.game_id,
                "version": turn.version,
                "board": drawn,
                "lines": lines,
                "deadline_ms": deadline,
                "timer_seconds": timer,
                "delay_moves": delay,
            },
        }


BOT_IDS = ("bot-", "cover-")
"""The player ids the lobby gives its bots (a seat's own bot, a bot covering an absent player): no account has one."""


def _mark_bots(drawn: Board, bots: set[int]) -> None:
    """Mark each seat of a board played by a bot (``bot``: the page shows it), whatever its name says."""
    for seat in drawn["seats"]:
        seat["bot"] = seat["seat"] in bots


def _names(table: lobby_pb2.Table) -> dict[int, str]:
    """Each seat's player's name as the lobby shows it."""
    return {seat.seat: seat.name for seat in table.seats if seat.name}


def _waiting(table: lobby_pb2.Table, seen_game: str, person: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """The message of a table between matches: what it is doing, in words (`doing_words`), and its last match's
    result with the rating changes once rated (``last``: the answer of ``/api/tables/{table}/result``)."""
    last_game = table.last_result.game_id if table.HasField("last_result") else seen_game
    finished = table.HasField("last_result") and table.status != lobby_pb2.TABLE_STATUS_PLAYING
    return {
        "event": "waiting",
        "data": {
            "table_id": table.table_id,
            "table": table.name,
            "message": doing_words(table, ended=seen_game),
            "last_game_id": last_game,
            "result": _result_json(_game_name(table), table),
            # (while a match plays, the table's last result is the match before: not shown as this one's)
            "last": result_answer(table, person) if finished else None,
        },
    }


RATED_MODES = {lobby_events_pb2.MATCH_MODE_CASUAL: "casual", lobby_events_pb2.MATCH_MODE_RANKED: "ranked"}
"""The ratings' modes by the contract's `MatchMode`."""


def result_answer(table: lobby_pb2.Table, person: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """A table's last finished match: who won and by how much, and each person's rating change when scoring has
    rated it (the lobby's `MatchResult.ratings`, docs/rules/ratings.md; the bots' fixed ratings are left out)."""
    game = _game_name(table)
    if not table.HasField("last_result") or not game:
        return {"table_id": table.table_id, "game": game, "game_id": "", "result": "", "rated": False, "ratings": []}
    last = table.last_result
    rows: list[dict[str, Any]] = []
    mode = ""
    if last.HasField("ratings") and last.ratings.mode in RATED_MODES:
        rated = last.ratings
        mode = RATED_MODES[rated.mode]
        winner = rated.winner_team if rated.HasField("winner_team") else None
        players = [seat.player_id for seat in rated.seats]
        for seat in rated.seats:
            if seat.bot or seat.player_id.startswith(BOT_IDS):
                continue
            team = seat.seat % 2  # team A: seats 0, 2, 4; team B: 1, 3, 5
            outcome = "drawn" if winner is None else ("won" if winner == team else "lost")
            rows.append(
                {
                    **person(seat.player_id),
                    "number": rated.number,
                    "game_id": last.game_id,
                    "table_id": table.table_id,
                    "at": rated.at,
                    "seat": seat.seat,
                    "team": "AB"[team],
                    "result": outcome,
                    "team_scores": list(rated.team_scores),
                    "before": {"mu": seat.before.mu, "sigma": seat.before.sigma, "conservative": seat.shown_before},
                    "after": {"mu": seat.after.mu, "sigma": seat.after.sigma, "conservative": seat.shown_after},
                    "change": seat.shown_after - seat.shown_before,
                    "others": [person(other) for i, other in enumerate(players) if rated.seats[i].seat != seat.seat],
                }
            )
        rows.sort(key=lambda row: row["seat"])
    return {
        "table_id": table.table_id,
        "game": game,
        "game_id": last.game_id,
        "result": _result_json(game, table),
        "mode": mode,
        "rated": bool(rows),
        "ratings": rows,
    }


def _person_of(player_id: str, name: str) -> dict[str, Any]:
    """A player as the pages name them: by ``name`` when known, else their id; a bot as a bot."""
    if player_id.startswith(BOT_IDS):
        return {"player_id": player_id, "name": "a bot", "bot": True}
    return {"player_id": player_id, "name": name or player_id, "bot": False}


def doing_words(table: lobby_pb2.Table, ended: str = "") -> str:
    """What a table is doing, as the lobby has it: waiting for players, playing its match, or its match over — who
    won and by how much — and what the next match waits for. (A match being played is told in more words by its
    boards' ``doing``: dealing, playing deal N.) ``ended``: a game seen to end, which the lobby may not have
    recorded yet."""
    seats = list(table.seats)
    taken = sum(1 for seat in seats if seat.player_id)
    result = _result_json(_game_name(table), table)
    over = f"Match over: {result}. " if table.status == lobby_pb2.TABLE_STATUS_FINISHED and result else ""
    if table.status == lobby_pb2.TABLE_STATUS_EXPIRED:
        return f"{over}The table has expired: it plays no more matches"
    if table.status == lobby_pb2.TABLE_STATUS_PLAYING:
        if ended and table.game_id == ended:
            return "Match over: its result is being recorded"
        return f"Playing match {table.matches}" if table.matches else "Starting the match"
    if taken < len(seats):
        return f"{over}Waiting for players: {taken} of {len(seats)} seats taken"
    unready = sum(1 for seat in seats if not seat.ready)
    if unready:
        players = "player" if unready == 1 else "players"
        return f"{over}Waiting for {unready} {players} to say they are ready"
    following = "the next match" if table.matches else "the match"
    return f"{over}Every seat is ready: waiting for the table's owner to start {following}"


def _game_name(table: lobby_pb2.Table) -> str:
    game = of_kind(table.game)
    return game.name if game is not None else ""


# --- the server ---------------------------------------------------------------------------------------------------


class Gateway:
    """The web view's server state: the upstream client, the live tables, the limits and a short cache."""

    def __init__(
        self,
        upstream: Upstream,
        limits: RateLimits,
        trusted: Sequence[IPv4Network | IPv6Network] = (),
        *,
        cache_bytes: int = CACHE_BYTES,
        session_key: bytes = b"",
        signer: Signer | None = None,
    ) -> None:
        self.upstream = upstream
        self.session_key = session_key
        self.voucher = Voucher(signer)
        """The web view's own token, which vouches to the lobby for the address of each browser it calls for (none
        without ``signer``, the web view's key)."""
        """The key that seals browsers' sign-ins in their cookies (`paiju.tools.web.session`; none: nobody signs in)."""
        self.limits = limits
        self.trusted = tuple(trusted)
        """The proxies whose ``X-Forwarded-For`` names the client."""
        self.live: dict[str, LiveTable] = {}
        self.drawn: Counter[str] = Counter()
        """Boards the live tables drew (each fanned out to every page of its table)."""
        self._tables: tuple[float, list[dict[str, Any]]] | None = None
        self._tables_lock = asyncio.Lock()
        self._replays: ByteCache[bytes] = ByteCache(cache_bytes)
        """The deals of replays answered lately, as sent, within ``cache_bytes`` (an ended game never changes)."""
        self._building = asyncio.Semaphore(1)
        """One replay read and drawn at a time: however many pages ask, one game's log is in memory at once."""
        self._ratings: ByteCache[tuple[float, int, bytes]] = ByteCache(max(1 << 16, cache_bytes // 8))
        """The ratings' answers lately given (until when, the status, the body as sent), within an eighth of
        ``cache_bytes``: however many pages show a leaderboard, scoring is asked once every `RATINGS_SECONDS`."""
        self._ratings_calls: dict[str, asyncio.Future[tuple[float, int, bytes]]] = {}
        self._names: ByteCache[str] = ByteCache(max(1 << 16, cache_bytes // 32))
        """The players' names seen at the lobby's tables (a player's id to their name), for the ratings' pages."""
        self.guard: ConnectionGuard | None = None
        """The server's connection guard (its counts are on the health page)."""
        self._reaper: asyncio.Task[None] | None = None

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._errors])
        app.router.add_get("/", self.index)
        app.router.add_get("/healthz", self.health)
        app.router.add_get("/api/tables", self.tables)
        app.router.add_get("/api/tables/{table}/live", self.live_table)
        app.router.add_get("/api/games/{game}/replay", self.replay)
        app.router.add_get("/api/tournaments/{tournament}", self.tournament)
        app.router.add_get("/api/ratings/{game}", self.leaderboard)
        app.router.add_get("/api/players/{player}", self.player)
        app.router.add_get("/api/players/{player}/versus/{other}", self.head_to_head)
        app.router.add_get("/api/tables/{table}/result", self.result)
        app.router.add_get("/static/{name}", self.static)
        from paiju.tools.web.play import install  # sign-in and play (it imports this module: imported here)

        install(app, self, self.session_key)
        app.on_startup.append(self._start)
        app.on_shutdown.append(self._closing)
        app.on_cleanup.append(self._stop)
        return app

    async def _start(self, _: web.Application) -> None:
        self._reaper = asyncio.create_task(self._reap())

    async def _closing(self, _: web.Application) -> None:
        """Shutting down: every page's stream is ended (browsers reconnect by themselves, to another replica)."""
        for live in self.live.values():
            live.publish(CLOSING)

    async def _stop(self, _: web.Application) -> None:
        tasks = [t for t in (self._reaper, *(live.task for live in self.live.values())) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        await self.upstream.close()

    async def _reap(self) -> None:
        """Stop following the tables no page has shown for `IDLE_SECONDS`."""
        while True:
            await asyncio.sleep(IDLE_SECONDS / 3)
            now = time.monotonic()
            for table_id, live in list(self.live.items()):
                if not live.queues and now - live.idle_since > IDLE_SECONDS:
                    if live.task is not None:
                        live.task.cancel()
                    del self.live[table_id]

    def _guest_for_a_table(self) -> int:
        """The guest a newly followed table is watched as: the first (from 1) following fewer than
        `TABLES_PER_GUEST` tables, so that no guest holds more watches open than the engine allows one account."""
        following = Counter(live.guest for live in self.live.values())
        guest = 1
        while following[guest] >= TABLES_PER_GUEST:
            guest += 1
        return guest

    @web.middleware
    async def _errors(self, request: web.Request, handler: Callable[[web.Request], Awaitable[Any]]) -> Any:
        kind = "api" if request.path.startswith("/api/") else "page"
        try:
            self.limits.check(kind, self.client(request), None)  # a live table's opening counts as an API call
            return await handler(request)
        except Problem as e:
            return _problem(e)
        except web.HTTPException as e:  # the router's own answers (no such route, method not allowed): JSON too
            if e.status < 400:
                raise
            reason = "NOT_FOUND" if e.status == 404 else "INVALID_REQUEST"
            return _problem(Problem(e.status, reason, f"{e.reason}: {request.path[:100]}"))
        except Refused as e:  # one of this client address's limits
            delays = [d.retry_delay.ToTimedelta().total_seconds() for d in e.details if hasattr(d, "retry_delay")]
            answer = _problem(Problem(429, e.reason.value, e.message))
            answer.headers["Retry-After"] = str(max([1, *(round(d) for d in delays)]))
            return answer
        except grpc.aio.AioRpcError as e:
            if e.code() is grpc.StatusCode.UNAUTHENTICATED:
                self.upstream.forget_session()
            return _problem(problem_of(e, "a Paiju service"))

    def client(self, request: web.Request) -> str:
        """The client's address: the connection's, or, from a trusted proxy (`PAIJU_WEB_TRUSTED_PROXIES`), the
        nearest address in ``X-Forwarded-For`` that is not one of the proxies."""
        remote = request.remote or ""
        if not self.trusted or not _within(remote, self.trusted):
            return remote
        for part in reversed(request.headers.get("X-Forwarded-For", "").split(",")):
            hop = part.strip()
            if hop and not _within(hop, self.trusted):
                return hop
        return remote

    def browser_address(self, request: web.Request) -> str:
        """The address the lobby is told a browser's calls come from: `client`'s when it is an IP address (what a
        proxy puts in ``X-Forwarded-For`` may be anything), else the connection's, written as `ipaddress` writes it
        (no zone); ``""`` when neither is one."""
        for candidate in (self.client(request), request.remote or ""):
            try:
                return str(ip_address(candidate.partition("%")[0]))
            except ValueError:
                continue
        return ""

    async def index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html", headers=_page_headers())

    async def static(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name not in {"app.js", "style.css"}:
            raise Problem(404, "NOT_FOUND", "no such file")
        return web.FileResponse(STATIC / name, headers=_page_headers())

    async def health(self, request: web.Request) -> web.StreamResponse:
        return web.json_response(
            {
                "status": "serving",
                "live_tables": len(self.live),
                "pages": sum(len(live.queues) for live in self.live.values()),
                "upstream_calls": dict(self.upstream.calls),
                "boards_drawn": self.drawn["boards"],
                "cached_bytes": self._replays.bytes + self._ratings.bytes + self._names.bytes,
                "connections": self.guard.open if self.guard is not None else None,
                "connections_refused": self.guard.refused if self.guard is not None else 0,
                "connections_timed_out": self.guard.timed_out if self.guard is not None else 0,
            }
        )

    async def tables(self, request: web.Request) -> web.StreamResponse:
        async with self._tables_lock:  # the pages asking at once wait for one read
            now = time.monotonic()
            if self._tables is None or now - self._tables[0] > TABLES_CACHE_SECONDS:
                found = await self.upstream.tables()
                for table in found:
                    self._remember_names(table)
                self._tables = (now, [_table_json(t) for t in found])
        return web.json_response({"tables": self._tables[1]})

    async def live_table(self, request: web.Request) -> web.StreamResponse:
        table_id = checked_id(request.match_info["table"], "table")
        async with self.limits.stream("live", self.client(request), None):
            known = self.live.get(table_id)
            if known is None or known.last is None:
                await self.upstream.table(table_id)  # a table that does not exist is refused before the stream opens
            live = self.live.get(table_id)  # (again: another page may have opened it meanwhile)
            if live is None:
                live = self.live[table_id] = LiveTable(
                    table_id, self.upstream, self._guest_for_a_table(), self.drawn, person=self._person
                )
            if live.task is None or live.task.done():
                live.task = asyncio.create_task(live.run())
            response = web.StreamResponse(
                headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
            )
            queue: asyncio.Queue[dict[str, Any]] | None = None
            try:
                await response.prepare(request)
                queue = live.subscribe()
                while True:
                    try:
                        message = await asyncio.wait_for(queue.get(), timeout=15)
                    except TimeoutError:
                        await response.write(b": still here\n\n")  # keeps proxies from closing an idle stream
                        continue
                    data = json.dumps(message["data"], ensure_ascii=False, separators=(",", ":"))
                    await response.write(f"event: {message['event']}\ndata: {data}\n\n".encode())
                    if message is CLOSING:
                        break
            except ConnectionResetError:  # the page went away
                pass
            finally:
                if queue is not None:
                    live.unsubscribe(queue)
            return response

    async def replay(self, request: web.Request) -> web.StreamResponse:
        """One deal of an ended game (``deal``, from 1; the first by default) and the index of its deals."""
        game_id = checked_id(request.match_info["game"], "game")
        table_id = request.query.get("table", "")
        if table_id:
            checked_id(table_id, "table")
        deal = _deal_number(request.query.get("deal", "1"))
        key = f"{game_id} {table_id} {deal}"
        cached = self._replays.get(key)
        if cached is None:
            async with self._building:
                cached = self._replays.get(key)  # drawn while this one waited
                if cached is None:
                    cached = await self._draw_deal(game_id, table_id, deal)
                    self._replays.put(key, cached, len(cached))
        return web.Response(body=cached, content_type="application/json")

    async def _draw_deal(self, game_id: str, table_id: str, deal: int) -> bytes:
        """Deal ``deal`` of the game drawn step by step: the game's log is read and folded once, each moment told
        (the narration keeps its context), but only the requested deal's moments are drawn and kept."""
        names: dict[str, str] = {}
        if table_id:
            table = await self.upstream.table(table_id)
            names = {seat.player_id: seat.name for seat in table.seats if seat.player_id and seat.name}
        try:
            envelopes = await self.upstream.replay(game_id, await self.upstream.metadata())
        except grpc.aio.AioRpcError as e:
            if e.code() is not grpc.StatusCode.NOT_FOUND:
                raise
            raise Problem(
                404,
                "GAME_NOT_FOUND",
                f"there is no ended game {game_id} (a game still being played is watched live, from its table)",
            ) from None
        if not envelopes:
            raise Problem(404, "GAME_NOT_FOUND", f"there is no game {game_id}")
        game_log = decode(envelopes)
        del envelopes
        if not game_log.ended:
            raise Problem(409, "GAME_LIVE", f"game {game_id} is still being played: watch it live instead")
        analyst = ANALYST_GAMES[game_log.game]
        teller = Teller(game_log, names)
        steps = []
        deals: dict[int, list[int]] = {}
        for moment in timeline(game_log):
            lines = [VERSION_GUTTER.sub("", line.strip()) for line in teller.lines(moment) if line.strip()]
            number = max(1, moment.deal)  # the moments before the first deal are shown with it
            span = deals.setdefault(number, [moment.version, moment.version])
            span[1] = moment.version
            if number != deal:
                continue
            state: Any = moment.state
            view = game_log.rules.game.view(state, None)
            order = analyst.card_order(state)
            drawn = board(view, seat_names(moment.players, names))
            with_hands(drawn, [sorted(hand, key=order) for hand in state.hands])
            _mark_bots(drawn, {i for i, player in enumerate(moment.players) if player.startswith(BOT_IDS)})
            steps.append({"version": moment.version, "deal": number, "lines": lines, "board": drawn})
        if not steps:
            raise Problem(404, "DEAL_NOT_FOUND", f"game {game_id} has {len(deals)} deals: there is no deal {deal}")
        index = [{"deal": n, "first": first, "last": last} for n, (first, last) in sorted(deals.items())]
        return json.dumps(
            {
                "game_id": game_id,
                "title": game_log.title,
                "game": game_log.game,
                "deal": deal,
                "deals": index,
                "last_version": game_log.version,
                "steps": steps,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()

    async def tournament(self, request: web.Request) -> web.StreamResponse:
        tournament_id = checked_id(request.match_info["tournament"], "tournament")
        found, standings, sheets = await self.upstream.tournament(tournament_id)

        def as_json(message: Any) -> dict[str, Any]:
            return json_format.MessageToDict(
                message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )

        return web.json_response(
            {
                "tournament": as_json(found),
                "standings": as_json(standings).get("standings", []),
                "sheets": [{"round": n, "lines": as_json(sheet).get("lines", [])} for n, sheet in sheets],
            },
            dumps=lambda value: json.dumps(value, ensure_ascii=False),
        )

    # --- the ratings (scoring's RatingsService, docs/rules/ratings.md) -------------------------------------------

    def _remember_names(self, table: lobby_pb2.Table) -> None:
        for seat in table.seats:
            if seat.player_id and seat.name and not seat.bot and not seat.player_id.startswith(BOT_IDS):
                self._names.put(seat.player_id, seat.name, len(seat.name.encode()))

    def _person(self, player_id: str) -> dict[str, Any]:
        """A player as the ratings' pages name them: their name at the lobby's tables when seen, else their id; a
        bot (a casual match's, at its fixed rating, D-RATE-8) as a bot."""
        return _person_of(player_id, "" if player_id.startswith(BOT_IDS) else self._names.get(player_id) or "")

    async def _ratings_answer(
        self, key: str, make: Callable[[], Awaitable[tuple[dict[str, Any], float]]]
    ) -> web.Response:
        """The answer kept under ``key`` while it is fresh, else made by ``make`` (its JSON and how long it stays
        fresh) once for every page that asks at that moment; a refusal of scoring's is kept as long as an answer."""
        now = time.monotonic()
        kept = self._ratings.get(key)
        if kept is None or kept[0] < now:
            pending = self._ratings_calls.get(key)
            if pending is None:
                pending = asyncio.ensure_future(self._make_ratings_answer(key, make))
                self._ratings_calls[key] = pending
                pending.add_done_callback(lambda _: self._ratings_calls.pop(key, None))
            kept = await asyncio.shield(pending)
        _, status, body = kept
        return web.Response(body=body, status=status, content_type="application/json")

    async def _make_ratings_answer(
        self, key: str, make: Callable[[], Awaitable[tuple[dict[str, Any], float]]]
    ) -> tuple[float, int, bytes]:
        try:
            value, seconds = await make()
            status = 200
        except grpc.aio.AioRpcError as e:
            if e.code() is grpc.StatusCode.UNAUTHENTICATED:
                self.upstream.forget_session()
            problem = problem_of(e, "scoring's ratings")
            if problem.status >= 500 or problem.status == 429:
                raise problem from None  # not kept: asked again next time
            value, seconds, status = (
                {"reason": problem.reason, "message": problem.message},
                RATINGS_SECONDS,
                problem.status,
            )
        body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
        kept = (time.monotonic() + seconds, status, body)
        self._ratings.put(key, kept, len(body))
        return kept

    async def leaderboard(self, request: web.Request) -> web.StreamResponse:
        """The players of a game and mode by their conservative estimate, best first, provisional ones marked."""
        game = _game_of(request.match_info["game"])
        mode = _mode_of(request.query.get("mode", "casual"))
        limit = _whole(request.query.get("limit", str(LEADERBOARD_ROWS)), "limit", 1, MAX_ROWS)

        async def make() -> tuple[dict[str, Any], float]:
            answer = await self.upstream.leaderboard(game, MODES[mode], MAX_ROWS)
            rows = [{**self._person(r.player_id), **_rating_json(r)} for r in answer.rows]
            return {"game": game, "mode": mode, "model": answer.model, "rows": rows}, LEADERBOARD_SECONDS

        if limit == MAX_ROWS:
            return await self._ratings_answer(f"board {game} {mode}", make)
        whole = await self._ratings_answer(f"board {game} {mode}", make)  # one call for every length asked
        if whole.status != 200:
            return whole
        assert isinstance(whole.body, bytes)
        found = json.loads(whole.body)
        found["rows"] = found["rows"][:limit]
        return web.json_response(found, dumps=lambda value: json.dumps(value, ensure_ascii=False))

    async def player(self, request: web.Request) -> web.StreamResponse:
        """A player's rating in a game and mode and their rated matches, the latest first (``before``: the next
        ones, below a match number an earlier answer gave)."""
        player_id = checked_id(request.match_info["player"], "player")
        game = _game_of(request.query.get("game", DEFAULT_GAME))
        mode = _mode_of(request.query.get("mode", "casual"))
        before = _whole(request.query.get("before", "0"), "before", 0, MAX_MATCH_NUMBER)

        async def make() -> tuple[dict[str, Any], float]:
            rating = await self.upstream.player_rating(player_id, game, MODES[mode])
            history = await self.upstream.rating_history(player_id, game, MODES[mode], HISTORY_MATCHES, before)
            return {
                **self._person(player_id),
                "game": game,
                "mode": mode,
                "model": rating.model,
                "rating": _rating_json(rating.rating),
                "matches": [self._match_json(m) for m in history.matches],
                "more": len(history.matches) == HISTORY_MATCHES,
            }, RATINGS_SECONDS

        return await self._ratings_answer(f"player {player_id} {game} {mode} {before}", make)

    async def head_to_head(self, request: web.Request) -> web.StreamResponse:
        """Two players' rated matches with each other: against each other (won, lost, drawn), as partners, and
        the latest of them."""
        player_id = checked_id(request.match_info["player"], "player")
        other_id = checked_id(request.match_info["other"], "other player")
        if other_id == player_id:
            raise Problem(400, "INVALID_REQUEST", "a head-to-head is between two different players")
        game = _game_of(request.query.get("game", DEFAULT_GAME))
        mode = _mode_of(request.query.get("mode", "casual"))

        async def make() -> tuple[dict[str, Any], float]:
            h = await self.upstream.head_to_head(player_id, other_id, game, MODES[mode], HEAD_TO_HEAD_MATCHES)
            return {
                "player": {**self._person(player_id), "rating": _rating_json(h.player) if h.player.player_id else None},
                "other": {**self._person(other_id), "rating": _rating_json(h.other) if h.other.player_id else None},
                "game": game,
                "mode": mode,
                "model": h.model,
                "against": h.against,
                "wins": h.wins,
                "losses": h.losses,
                "draws": h.draws,
                "together": h.together,
                "together_wins": h.together_wins,
                "matches": [self._match_json(m) for m in h.matches],
            }, RATINGS_SECONDS

        return await self._ratings_answer(f"versus {player_id} {other_id} {game} {mode}", make)

    async def result(self, request: web.Request) -> web.StreamResponse:
        """The table's last finished match: who won and by how much, and each of its players' rating before and
        after it (once scoring has rated it; a match formed as neither ranked nor casual is not rated) — all from the
        lobby's table (`result_answer`): scoring is asked nothing."""
        table_id = checked_id(request.match_info["table"], "table")
        table = await self.upstream.table(table_id)
        self._remember_names(table)
        return web.json_response(
            result_answer(table, self._person), dumps=lambda value: json.dumps(value, ensure_ascii=False)
        )

    def _match_json(self, m: ratings_pb2.RatedMatch) -> dict[str, Any]:
        before = m.before.mu - 3 * m.before.sigma
        return {
            "number": m.number,
            "game_id": m.game_id,
            "table_id": m.table_id,
            "at": m.at.ToMilliseconds(),
            "seat": m.seat,
            "team": "AB"[m.team] if m.team in (0, 1) else str(m.team),
            "result": m.result,
            "team_scores": list(m.team_scores),
            "before": {"mu": m.before.mu, "sigma": m.before.sigma, "conservative": before},
            "after": {"mu": m.after.mu, "sigma": m.after.sigma, "conservative": m.conservative},
            "change": m.conservative - before,
            "others": [self._person(other) for other in m.others],
        }


def _game_of(text: str) -> str:
    """A game's name as the ratings know it (``zlj``, ``tractor``; `Problem` 400 otherwise)."""
    if text not in CONTRACT_GAMES:
        raise Problem(400, "INVALID_REQUEST", f"the game must be one of {', '.join(sorted(CONTRACT_GAMES))}")
    return text


def _mode_of(text: str) -> str:
    """A ratings' mode (``casual``, ``ranked``; `Problem` 400 otherwise)."""
    if text not in MODES:
        raise Problem(400, "INVALID_REQUEST", "the mode must be casual or ranked")
    return text


def _whole(text: str, what: str, low: int, high: int) -> int:
    """A whole number parameter within ``low``..``high`` (`Problem` 400 otherwise)."""
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(high)) and low <= int(text) <= high):
        raise Problem(400, "INVALID_REQUEST", f"the {what} must be a whole number from {low} to {high}")
    return int(text)


def _rating_json(r: ratings_pb2.PlayerRating) -> dict[str, Any]:
    """A player's standing: the conservative estimate shown (μ − 3σ, D-RATE-5), μ, σ, counts, provisional."""
    return {
        "place": r.place,
        "conservative": r.conservative,
        "mu": r.rating.mu,
        "sigma": r.rating.sigma,
        "matches": r.matches,
        "wins": r.wins,
        "draws": r.draws,
        "provisional": r.provisional,
        "updated_at": r.updated_at.ToMilliseconds(),
    }


def _deal_number(text: str) -> int:
    """A replay's ``deal`` parameter: a whole number 1..`MAX_DEAL` (`Problem` 400 otherwise)."""
    if not (text.isascii() and text.isdigit() and len(text) <= 6 and 1 <= int(text) <= MAX_DEAL):
        raise Problem(400, "INVALID_REQUEST", f"the deal must be a whole number from 1 to {MAX_DEAL}")
    return int(text)


def _within(address: str, networks: Sequence[IPv4Network | IPv6Network]) -> bool:
    try:
        found = ip_address(address)
    except ValueError:
        return False
    return any(found in network for network in networks)


def trusted_proxies(text: str) -> list[IPv4Network | IPv6Network]:
    """The networks of ``PAIJU_WEB_TRUSTED_PROXIES`` (comma-separated, e.g. ``10.0.0.0/8,fd00::/8``)."""
    return [ip_network(part.strip(), strict=False) for part in text.split(",") if part.strip()]


def _table_json(table: lobby_pb2.Table) -> dict[str, Any]:
    game = of_kind(table.game)
    return {
        "table_id": table.table_id,
        "name": table.name,
        "game": game.name if game is not None else "",
        "title": game.title if game is not None else "",
        "status": STATUS_WORDS.get(table.status, "ended"),
        "game_id": table.game_id,
        "matches": table.matches,
        "last_game_id": table.last_result.game_id if table.HasField("last_result") else "",
        "last_result": _result_json(game.name if game is not None else "", table),
        "doing": doing_words(table),
        "seats": [{"seat": s.seat, "name": s.name, "bot": s.bot} for s in table.seats],
    }


def _result_json(game: str, table: lobby_pb2.Table) -> str:
    """Who won the table's last match and by how much, in words (``""`` before its first match ends)."""
    if not table.HasField("last_result"):
        return ""
    r = table.last_result
    winner = r.winner_team if r.HasField("winner_team") else None
    return result_words(game, list(r.team_points), winner, list(r.levels))


def _problem(problem: Problem) -> web.Response:
    answer = web.json_response({"reason": problem.reason, "message": problem.message}, status=problem.status)
    if problem.retry_after is not None:
        answer.headers["Retry-After"] = str(max(1, round(problem.retry_after)))
    return answer


def _page_headers() -> dict[str, str]:
    """The page loads nothing from elsewhere and runs no script but its own."""
    return {
        "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }


assert set(CONTRACT_GAMES) == set(ANALYST_GAMES), "every game is drawn by the web view"


async def serve(
    lobby: str,
    engine: str,
    scoring: str,
    *,
    host: str,
    port: int,
    limits: RateLimits,
    trusted: Sequence[IPv4Network | IPv6Network] = (),
    max_connections: int = MAX_CONNECTIONS,
    header_seconds: float = HEADER_SECONDS,
    cache_bytes: int = CACHE_BYTES,
    session_key: bytes = b"",
    signer: Signer | None = None,
) -> None:
    """Serve until cancelled (then the pages' streams are ended and the server stops within `SHUTDOWN_SECONDS`):
    at most ``max_connections`` open at once, each request's head read within ``header_seconds``."""
    gateway = Gateway(
        Upstream(lobby, engine, scoring),
        limits,
        trusted,
        cache_bytes=cache_bytes,
        session_key=session_key,
        signer=signer,
    )
    runner = web.AppRunner(
        gateway.app(), access_log=None, shutdown_timeout=SHUTDOWN_SECONDS, keepalive_timeout=KEEPALIVE_SECONDS
    )
    await runner.setup()
    assert runner.server is not None  # made by setup
    gateway.guard = ConnectionGuard(runner.server, max_connections, header_seconds)
    server = await asyncio.get_running_loop().create_server(gateway.guard, host, port, reuse_address=True)
    log.info("web view serving", url=f"http://{host}:{port}/")
    try:
        await asyncio.Event().wait()
    finally:
        server.close()
        await runner.cleanup()
