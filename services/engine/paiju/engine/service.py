"""`EngineService` over gRPC (grpc.aio): create games, views, legal actions, act, watch and replay.

Every call carries a bearer token (metadata ``authorization: Bearer <token>``). A player token acts only
for its own seat of its own game and sees only what that seat may see; a spectator sees public
information; referees issue referee commands; the service role (the lobby, the engine's own timers)
creates games and issues system commands; analysts and admins replay full information. The engine, not
the client, supplies every shuffle seed. Errors: INVALID_ARGUMENT (malformed), FAILED_PRECONDITION (against
the rules, with the rule's reason), PERMISSION_DENIED (not your seat or role), ABORTED (stale expected
version), NOT_FOUND, ALREADY_EXISTS (a command id reused for another command), UNAUTHENTICATED.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
import typing
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn, cast

import grpc
import structlog
from google.protobuf.message import Message
from google.rpc import status_pb2

from paiju.engine.auth import Identity, Role, TokenError, Verifier, shuffle_seed
from paiju.engine.codec import CodecError
from paiju.engine.contract import TRACTOR, ZLJ
from paiju.engine.games import (
    RULES,
    CommandIdReused,
    Game,
    GameNotFound,
    Games,
    SeatChangeRefused,
    StaleVersion,
)
from paiju.engine.metrics import ACTIVE_GAMES, ACTS, LATENCY, REJECTIONS
from paiju.rules.errors import RuleError
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.view import redact as tractor_redact
from paiju.rules.tractor.view import view as tractor_seat_view
from paiju.rules.zlj import game as zlj_game
from paiju.rules.zlj import model as zlj_model
from paiju.rules.zlj.view import redact as zlj_redact
from paiju.rules.zlj.view import view as zlj_seat_view
from paiju.v1 import engine_pb2, engine_pb2_grpc

SYSTEM_COMMANDS = (
    zlj_model.StartMatch,
    zlj_model.Timeout,
    zlj_model.EndMatch,
    tractor_model.StartGame,
    tractor_model.Redeal,
    tractor_model.Timeout,
    tractor_model.ClockTick,
)
REFEREE_COMMANDS = (tractor_model.Penalize, tractor_model.DeclareLabourReform)
SEEDED = (zlj_model.Cut, zlj_model.Timeout, tractor_model.Cut, tractor_model.Timeout, tractor_model.Redeal)
FULL_INFORMATION = (Role.ANALYST, Role.ADMIN)
STATUS = {"malformed": grpc.StatusCode.INVALID_ARGUMENT, "rule": grpc.StatusCode.FAILED_PRECONDITION}
STATUS_DETAILS = "grpc-status-details-bin"
RULE_CITED = re.compile(r"\((D-(?:TR|ZLJ)-[0-9.]+|§[0-9.]+)\)\s*$")
WATCH_POLL_SECONDS = 0.05
"""How often a watch looks at the store when no feed of new events keeps the games current."""
WATCH_IDLE_SECONDS = 1.0
"""How long a watch waits for the feed before it looks at the store anyway (a safety net)."""
log = structlog.get_logger("paiju.engine")


async def _abort(
    context: grpc.aio.ServicerContext[Any, Any], code: grpc.StatusCode, reason: str, *details: Message
) -> NoReturn:
    """End the call with ``code`` and ``reason``; ``details`` go packed in a google.rpc.Status trailer."""
    REJECTIONS.labels(code.name).inc()
    log.info("refused", status=code.name, reason=reason)
    trailers: tuple[tuple[str, bytes], ...] = ()
    if details:
        status = status_pb2.Status(code=code.value[0], message=reason)
        for detail in details:
            status.details.add().Pack(detail)
        trailers = ((STATUS_DETAILS, status.SerializeToString()),)
    await context.abort(code, reason, trailing_metadata=trailers)
    raise AssertionError("unreachable")  # context.abort raises


def rule_violation(reason: str) -> engine_pb2.RuleViolation:
    """A rule error as the contract's `RuleViolation`: the reason, and the rule it cites at its end."""
    cited = RULE_CITED.search(reason)
    return engine_pb2.RuleViolation(reason=reason, rule=cited.group(1) if cited else "")


class CreateRefused(Exception):
    """A game that cannot be created as asked: the gRPC status and the reason."""

    def __init__(self, code: grpc.StatusCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class EngineService(engine_pb2_grpc.EngineServiceServicer):
    def __init__(
        self,
        games: Games,
        secret: bytes,
        *,
        now: Callable[[], int] = lambda: int(time.time()),
        seeds: Callable[[str, int], int] | None = None,
    ) -> None:
        self._games = games
        self._now = now
        self._seeds = seeds or (lambda game_id, version: shuffle_seed(secret, game_id, version))
        self._verifier = Verifier(secret, now)

    # --- helpers ------------------------------------------------------------------------------------

    async def _identity(self, context: grpc.aio.ServicerContext[Any, Any]) -> Identity:
        try:
            return self._verifier.identify(context.invocation_metadata())
        except TokenError as e:
            await _abort(context, grpc.StatusCode.UNAUTHENTICATED, str(e))

    async def _load(self, context: grpc.aio.ServicerContext[Any, Any], game_id: str, min_version: int = 0) -> Game:
        try:
            return await self._games.load(game_id, min_version)
        except GameNotFound as e:
            await _abort(context, grpc.StatusCode.NOT_FOUND, str(e))

    async def _seat(self, context: grpc.aio.ServicerContext[Any, Any], who: Identity, game: Game) -> int | None:
        """The seat whose information ``who`` may see in ``game`` (``None``: public only).

        A player token is for one seat of one game, and only while its player holds that seat (a removed or
        substituted player's token no longer sees or acts)."""
        if who.role is Role.PLAYER:
            if who.game != game.game_id or who.seat is None:
                await _abort(context, grpc.StatusCode.PERMISSION_DENIED, f"this token is not for game {game.game_id}")
            if not game.holds(who.seat, who.subject):
                reason = f"{who.subject} no longer holds seat {who.seat} of game {game.game_id}"
                await _abort(context, grpc.StatusCode.PERMISSION_DENIED, reason)
            return who.seat
        return None

    @staticmethod
    def _redact(game: Game, envelope: engine_pb2.Envelope, seat: int | None, full: bool) -> engine_pb2.Envelope:
        """``envelope`` (one of ``game``'s) as ``seat`` may see it (``full``: as stored)."""
        if full:
            return envelope
        out = engine_pb2.Envelope()
        out.CopyFrom(envelope)
        out.ClearField("command_digest")
        event = game.events[envelope.version - 1]  # decoded once, when the game was read
        if event is not None:  # a rules event; the engine's own (seats) are public
            hidden = zlj_redact(event, seat) if game.rules.name == "zlj" else tractor_redact(event, seat)
            getattr(out, game.rules.name).CopyFrom(game.rules.events.encode(hidden))
        return out

    # --- RPCs ---------------------------------------------------------------------------------------

    async def CreateGame(
        self, request: engine_pb2.CreateGameRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> engine_pb2.CreateGameResponse:
        who = await self._identity(context)
        if who.role not in (Role.SERVICE, Role.ADMIN):
            await _abort(context, grpc.StatusCode.PERMISSION_DENIED, "only the lobby (service role) creates games")
        try:
            game = await self.create_game(request, who.subject)
        except CreateRefused as e:
            await _abort(context, e.code, e.reason)
        return engine_pb2.CreateGameResponse(game_id=request.game_id, version=game.version)

    async def create_game(self, request: engine_pb2.CreateGameRequest, actor: str) -> Game:
        """Create the game a request describes (for CreateGame and for the lobby's match starts): idempotent
        by request, `CreateRefused` with the status and reason otherwise."""
        if not request.game_id:
            raise CreateRefused(grpc.StatusCode.INVALID_ARGUMENT, "a game needs a game_id")
        try:
            if request.game == engine_pb2.GAME_ZLJ:
                options = (
                    ZLJ.decode(request.zlj_options, zlj_model.Options)
                    if request.HasField("zlj_options")
                    else zlj_model.Options()
                )
                start: Any = zlj_model.StartMatch(self._seeds(request.game_id, 0), options)
                kind = "zlj"
            elif request.game == engine_pb2.GAME_TRACTOR:
                t_options = (
                    TRACTOR.decode(request.tractor_options, tractor_model.Options)
                    if request.HasField("tractor_options")
                    else tractor_model.Options()
                )
                start = tractor_model.StartGame(self._seeds(request.game_id, 0), t_options, at=self._now())
                kind = "tractor"
            else:
                raise CreateRefused(grpc.StatusCode.INVALID_ARGUMENT, "game must be GAME_ZLJ or GAME_TRACTOR")
            seats = self._seating(request, 6 if kind == "zlj" else 4)
            if isinstance(seats, str):
                raise CreateRefused(grpc.StatusCode.INVALID_ARGUMENT, seats)
            digest = hashlib.sha256(request.SerializeToString(deterministic=True)).digest()
            game = await self._games.create(
                request.game_id, kind, start, f"create:{request.game_id}", actor, seats=seats, digest=digest
            )
        except CodecError as e:
            raise CreateRefused(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None
        except RuleError as e:
            raise CreateRefused(grpc.StatusCode.INVALID_ARGUMENT, e.reason) from None
        except CommandIdReused:
            raise CreateRefused(grpc.StatusCode.ALREADY_EXISTS, f"game {request.game_id} exists already") from None
        ACTIVE_GAMES.inc()
        return game

    @staticmethod
    def _seating(request: engine_pb2.CreateGameRequest, count: int) -> tuple[str, ...] | str:
        """The player of each seat, or the reason the request's seats are wrong."""
        if not request.seats:
            return ()
        players: dict[int, str] = {}
        for assignment in request.seats:
            if not 0 <= assignment.seat < count or assignment.seat in players or not assignment.player_id:
                return f"seats name each seat 0..{count - 1} once with a player id"
            players[assignment.seat] = assignment.player_id
        if len(players) != count:
            return f"seats name each seat 0..{count - 1} once with a player id"
        return tuple(players[s] for s in range(count))

    async def AssignSeats(
        self, request: engine_pb2.AssignSeatsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> engine_pb2.AssignSeatsResponse:
        who = await self._identity(context)
        if who.role not in (Role.SERVICE, Role.ADMIN):
            await _abort(context, grpc.StatusCode.PERMISSION_DENIED, "only the lobby (service role) assigns seats")
        if not request.command_id:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, "a seat change needs a command_id")
        seats: dict[int, str] = {}
        for assignment in request.seats:
            if assignment.seat in seats:
                await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"seat {assignment.seat} is named twice")
            seats[assignment.seat] = assignment.player_id
        await self._load(context, request.game_id)
        try:
            _, version = await self._games.assign_seats(
                request.game_id, seats, request.change, request.command_id, who.subject
            )
        except SeatChangeRefused as e:
            await _abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(e))
        except CommandIdReused as e:
            await _abort(context, grpc.StatusCode.ALREADY_EXISTS, str(e))
        log.info("seats assigned", game=request.game_id, seats=seats, change=request.change)
        return engine_pb2.AssignSeatsResponse(version=version)

    async def GetView(
        self, request: engine_pb2.GetViewRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> engine_pb2.GetViewResponse:
        who = await self._identity(context)
        game = await self._load(context, request.game_id, request.min_version)
        seat = await self._seat(context, who, game)
        response = engine_pb2.GetViewResponse(version=game.version)
        if game.rules.name == "zlj":
            response.zlj.CopyFrom(cast(Any, ZLJ.encode(zlj_seat_view(game.state, seat))))
        else:
            response.tractor.CopyFrom(cast(Any, TRACTOR.encode(tractor_seat_view(game.state, seat))))
        return response

    async def GetLegalActions(
        self, request: engine_pb2.GetLegalActionsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> engine_pb2.GetLegalActionsResponse:
        who = await self._identity(context)
        game = await self._load(context, request.game_id, request.min_version)
        seat = await self._seat(context, who, game)
        response = engine_pb2.GetLegalActionsResponse(version=game.version)
        if seat is None:
            return response
        legal = zlj_game.legal_actions if game.rules.name == "zlj" else tractor_game.legal_actions
        for action in legal(game.state, seat):
            getattr(response.actions.add(), game.rules.name).CopyFrom(game.rules.commands.encode(action))
        return response

    async def Act(
        self, request: engine_pb2.ActRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> engine_pb2.ActResponse:
        started = time.perf_counter()
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(game=request.game_id, command=request.command_id)
        who = await self._identity(context)
        structlog.contextvars.bind_contextvars(actor=who.subject, seat=who.seat)
        if not request.command_id:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, "an act needs a client command_id")
        try:
            rules = await self._games.rules_of(request.game_id)
        except GameNotFound as e:
            await _abort(context, grpc.StatusCode.NOT_FOUND, str(e))
        which = request.WhichOneof("command")
        if which != rules.name:
            reason = f"game {request.game_id} takes {rules.name} commands"
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, reason)
        try:
            command = rules.commands.decode(getattr(request, which))
        except CodecError as e:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))
        await self._authorise(context, who, request.game_id, command)
        expected = request.expected_version if request.HasField("expected_version") else None
        prepare = self._seed_for if isinstance(command, SEEDED) else None
        try:
            after, stored = await self._games.act(
                request.game_id, command, request.command_id, who.subject, expected_version=expected, prepare=prepare
            )
        except RuleError as e:
            code = grpc.StatusCode.PERMISSION_DENIED if e.kind == "seat" else STATUS[e.kind]
            if code is grpc.StatusCode.FAILED_PRECONDITION:
                await _abort(context, code, e.reason, rule_violation(e.reason))
            await _abort(context, code, e.reason)
        except StaleVersion as e:
            await _abort(context, grpc.StatusCode.ABORTED, str(e))
        except CommandIdReused as e:
            await _abort(context, grpc.StatusCode.ALREADY_EXISTS, str(e))
        ACTS.labels(after.rules.name).inc()
        LATENCY.observe(time.perf_counter() - started)
        log.info("applied", version=after.version, events=len(stored))
        seat = who.seat if who.role is Role.PLAYER else None
        full = who.role in FULL_INFORMATION
        return engine_pb2.ActResponse(
            version=after.version, events=[self._redact(after, e, seat, full) for e in stored]
        )

    def _seed_for(self, command: Any, game: Game) -> Any:
        """A seeded command completed with the engine's seed for the position it is decided at."""
        return dataclasses.replace(command, seed=self._seeds(game.game_id, game.version))

    async def _authorise(
        self, context: grpc.aio.ServicerContext[Any, Any], who: Identity, game_id: str, command: Any
    ) -> None:
        if isinstance(command, SYSTEM_COMMANDS):
            if who.role not in (Role.SERVICE, Role.ADMIN):
                await _abort(context, grpc.StatusCode.PERMISSION_DENIED, "system commands come from the engine only")
            return
        if isinstance(command, REFEREE_COMMANDS):
            if who.role not in (Role.REFEREE, Role.ADMIN):
                await _abort(context, grpc.StatusCode.PERMISSION_DENIED, "only a referee issues referee actions")
            return
        seat = await self._seat(context, who, await self._load(context, game_id))
        if who.role is not Role.PLAYER or getattr(command, "seat", None) != seat:
            await _abort(context, grpc.StatusCode.PERMISSION_DENIED, f"this token acts only for seat {seat}")

    async def Watch(
        self, request: engine_pb2.WatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[engine_pb2.WatchResponse]:
        who = await self._identity(context)
        full = who.role in FULL_INFORMATION
        game = await self._load(context, request.game_id)
        seat = None if full else await self._seat(context, who, game)
        sent = max(0, request.from_version)
        wait = WATCH_IDLE_SECONDS if self._games.following else WATCH_POLL_SECONDS
        while True:
            if seat is not None and not game.holds(seat, who.subject):
                # the seat changed hands (a swap, a substitute, a bot covering): this token sees no more
                await _abort(
                    context,
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"{who.subject} no longer holds seat {seat} of game {game.game_id}",
                )
            for envelope in game.envelopes[sent:]:
                yield engine_pb2.WatchResponse(envelope=self._redact(game, envelope, seat, full))
            sent = max(sent, len(game.envelopes))
            if game.state.phase.value == "ended":
                return
            # woken by the feed as soon as the game moves; after ``wait`` without news, ask the store itself
            await self._games.changed(request.game_id, sent, wait)
            game = await self._load(context, request.game_id, sent + 1)

    async def Replay(
        self, request: engine_pb2.ReplayRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[engine_pb2.ReplayResponse]:
        who = await self._identity(context)
        game = await self._load(context, request.game_id)
        ended = game.state.phase.value == "ended"
        full = who.role in FULL_INFORMATION or ended
        holds = who.role is Role.PLAYER and who.game == request.game_id and who.seat is not None
        seat = who.seat if holds and game.holds(typing.cast(int, who.seat), who.subject) else None
        for envelope in game.envelopes:
            yield engine_pb2.ReplayResponse(envelope=self._redact(game, envelope, seat, full))


__all__ = ["RULES", "EngineService"]
