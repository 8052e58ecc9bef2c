"""`EngineService` over gRPC (grpc.aio): create games, views, legal actions, act, watch and replay.

Every call carries a bearer token (metadata ``authorization: Bearer <token>``), checked by the gRPC edge
(`paiju.platform.edge`) with the request's validity before a handler runs. A player token acts only for its
own seat of its own game and sees only what that seat may see; a spectator token sees the public
information of its own game; referees issue referee commands; the service role (the lobby, the engine's own
timers) creates games and issues system commands; analysts and admins replay full information. The engine,
not the client, supplies every shuffle seed. Refusals are `Refused` with the contract's reasons
(errors.proto): a game the token may not see answers exactly like a game that does not exist.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import grpc
import structlog

from paiju.contract.codec import CodecError
from paiju.engine.creation import GameCreation
from paiju.engine.dealing import opens_on_watch
from paiju.engine.games import (
    RULES,
    CommandIdReused,
    Game,
    GameNotFound,
    Games,
    SeatChangeRefused,
    StaleVersion,
    VersionNotReached,
)
from paiju.engine.metrics import ACTS, LATENCY, WATCH_MESSAGES
from paiju.engine.seeds import shuffle_seed
from paiju.engine.spectating import Spectating
from paiju.engine.timers import waiting_seats
from paiju.engine.watching import FULL, Change, Encodings, audience, event_bytes, held_back, redacted, register
from paiju.platform import tracing
from paiju.platform.edge import Policy, caller
from paiju.platform.errors import Reason, Refused
from paiju.platform.limits import RateLimits
from paiju.platform.store import ConcurrencyConflict
from paiju.platform.tokens import Audience, Identity, Revocations, Role, Trust, Verifier
from paiju.rules.errors import RuleError
from paiju.v1 import engine_pb2, engine_pb2_grpc

FULL_INFORMATION = (Role.ANALYST, Role.ADMIN)
ANY_GAME = (Role.ANALYST, Role.ADMIN, Role.SERVICE, Role.REFEREE)
"""Roles whose tokens are not bound to one game."""
RATE_LIMITS = """
    Act:account=30/second; GetView:account=60/second; GetLegalActions:account=60/second;
    Replay:account=30/minute; Watch:account=16/open; Watch:address=5000/open;
    ActStream:account=16/open; ActStream:address=5000/open
"""
"""The engine's rate limits (`paiju.platform.limits`): per account (a seat's player, a bot seat) and, for open
watch streams, per client address — high, since one bot runner plays many seats from one machine."""
MIN_VERSION_WAIT_SECONDS = 30.0
"""The longest a call waits for the game to reach its `min_version` (less when the call's deadline is sooner)."""
log = structlog.get_logger("paiju.engine")


def rule_violation(error: RuleError) -> engine_pb2.RuleViolation:
    """A rule error as the contract's `RuleViolation`: the reason, and the rule it enforces."""
    return engine_pb2.RuleViolation(reason=error.reason, rule=error.rule)


def refusal(error: RuleError, game: Game | None = None, command: Any = None) -> Refused:
    """The refusal of a command the rules core rejected: malformed, out of turn, or against a rule."""
    if error.kind == "seat":
        waiting = waiting_seats(game) if game is not None else ()
        metadata = {"waiting": ",".join(map(str, waiting)), "rule": error.rule}
        seat = getattr(command, "seat", None)
        if seat is not None:
            metadata["seat"] = str(seat)
        return Refused(Reason.NOT_YOUR_TURN, error.reason, metadata)
    if error.kind == "rule":
        return Refused(Reason.RULE_VIOLATION, error.reason, {"rule": error.rule}, (rule_violation(error),))
    return Refused(Reason.MALFORMED_COMMAND, error.reason)


def watch_end(reason: int, version: int) -> engine_pb2.WatchResponse:
    return engine_pb2.WatchResponse(end=engine_pb2.WatchEnd(reason=cast(Any, reason), version=version))


def not_found(game_id: str) -> Refused:
    """The one answer for a game that does not exist and for a game the caller may not see."""
    return Refused(Reason.GAME_NOT_FOUND, f"there is no game {game_id!r} you may see", {"game": game_id})


ACTS_BY_GAME = {name: ACTS.labels(name) for name in RULES}
"""The counter of applied commands of each game (its label looked up once)."""
ROLES = {"CreateGame": (Role.SERVICE, Role.ADMIN), "AssignSeats": (Role.SERVICE, Role.ADMIN)}
"""The methods only some roles may call, checked by the edge (the others: any token, the handler decides)."""


class EngineService(engine_pb2_grpc.EngineServiceServicer):
    def __init__(
        self,
        games: Games,
        trust: Trust,
        *,
        now: Callable[[], int] = lambda: int(time.time()),
        seed_secret: bytes | None = None,
        seeds: Callable[[str, int], int] | None = None,
        limits: RateLimits | None = None,
        revocations: Revocations | None = None,
    ) -> None:
        """``trust``: the keys whose tokens it accepts; ``seed_secret`` draws the shuffle seeds (or ``seeds``, a
        function of the game and its version, in tests); ``revocations``: the lobby's revoked sessions, whose game
        tokens are refused (``None``: no lobby stream to read them from, as in the engine's own tests)."""
        self._revocations = revocations
        self._games = games
        self._now = now
        if seeds is None:
            if seed_secret is None:
                raise ValueError("the engine needs its seed secret (or a seeds function)")
            secret = seed_secret
            seeds = lambda game_id, version: shuffle_seed(secret, game_id, version)  # noqa: E731
        self._seeds = seeds
        self.creation = GameCreation(games, seeds, now)
        """Creating games: for CreateGame and for the match starter."""
        self.encodings = Encodings(lambda: games.dealing)
        self.spectating = Spectating(games, lambda: games.dealing)
        """Spectators by the table's policy: closed tables, delayed games (`paiju.engine.spectating`)."""
        """What Watch streams send, encoded once per audience and shared (`paiju.engine.watching`)."""
        self.draining = asyncio.Event()
        """Set when the server shuts down (`drain`): open watch streams end with a WatchEnd saying so."""
        self.verifier = Verifier(trust, now, Audience.ENGINE)
        self.policy = Policy(authenticator=self.verifier, limits=limits, roles=ROLES)
        """What the gRPC edge does for this service (every method needs a token)."""

    def drain(self) -> None:
        """The server is shutting down: every open watch stream ends with a WatchEnd saying so (its client watches
        again elsewhere)."""
        self.draining.set()
        self._games.wake_all()

    def add_to(self, server: grpc.aio.Server) -> None:
        """Serve this service on ``server`` (its Watch streams send bytes encoded once per audience)."""
        register(self, server)

    # --- helpers ------------------------------------------------------------------------------------

    async def _caller(self) -> Identity:
        """The call's identity (the edge checked its token), unless it is a game token minted under a session the
        lobby has revoked since (TOKEN_REVOKED)."""
        who: Identity = caller()
        if self._revocations is not None:
            await self._revocations.check(who)
        return who

    async def _load(self, game_id: str, min_version: int = 0) -> Game:
        try:
            return await self._games.load(game_id, min_version)
        except GameNotFound:
            raise not_found(game_id) from None

    async def _visible(
        self,
        who: Identity,
        game_id: str,
        min_version: int = 0,
        context: grpc.aio.ServicerContext[Any, Any] | None = None,
    ) -> Game:
        """The game, if ``who`` may see it at all (a token for another game answers as if there were none), at
        ``min_version`` at least: waited for until the call's deadline (at most `MIN_VERSION_WAIT_SECONDS`)."""
        if who.role not in ANY_GAME and who.game is None:
            raise Refused(
                Reason.ROLE_REQUIRED,
                "this token is a lobby session: the engine takes a game token (LobbyService.JoinGame)",
                {"required": "game token"},
            )
        if who.role not in ANY_GAME and who.game != game_id:
            raise not_found(game_id)
        if min_version <= 0:
            return await self._load(game_id)
        left = context.time_remaining() if context is not None else None
        wait = MIN_VERSION_WAIT_SECONDS if left is None else max(0.0, min(left - 0.05, MIN_VERSION_WAIT_SECONDS))
        try:
            return await self._games.reach(game_id, min_version, wait)
        except GameNotFound:
            raise not_found(game_id) from None
        except VersionNotReached as e:
            raise Refused(
                Reason.VERSION_NOT_REACHED,
                f"game {game_id} is at version {e.version}; version {min_version} was not reached in time",
                {"version": e.version, "min_version": min_version},
            ) from None

    @staticmethod
    def _seat(who: Identity, game: Game) -> int | None:
        """The seat whose information ``who`` may see in ``game`` (``None``: public only).

        A player token is for one seat of one game, and only while its player holds that seat (a removed or
        substituted player's token no longer sees or acts)."""
        if who.role is not Role.PLAYER:
            return None
        if who.seat is None:
            raise not_found(game.game_id)
        if not game.holds(who.seat, who.subject):
            raise Refused(
                Reason.SEAT_LOST,
                f"you no longer hold seat {who.seat} of game {game.game_id}: ask the lobby (JoinGame) what you may do",
                {"seat": who.seat, "game": game.game_id},
            )
        return who.seat

    async def _spectating(self, who: Identity, game: Game) -> Game:
        """``game`` as ``who`` may see it by its table's spectator policy (`paiju.engine.spectating`)."""
        return await self.spectating.seen_by(who, game)

    @staticmethod
    def _redact(game: Game, envelope: engine_pb2.Envelope, seat: int | None, full: bool) -> engine_pb2.Envelope:
        """``envelope`` (one of ``game``'s) as ``seat`` may see it (``full``: every hand, as stored). Command
        digests never leave the engine."""
        if envelope.WhichOneof("payload") != game.rules.name:
            event = None  # the engine's own (seats): public
        elif game.envelope(envelope.version) is envelope:
            event = game.event(envelope.version)  # decoded once, when the game was read
        else:
            event = game.rules.events.decode(getattr(envelope, game.rules.name))
        return redacted(game, envelope, event, FULL if full else seat)

    # --- RPCs ---------------------------------------------------------------------------------------

    async def CreateGame(
        self, request: engine_pb2.CreateGameRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> engine_pb2.CreateGameResponse:
        who: Identity = caller()  # a service or an admin (the edge's policy)
        game = await self.creation.create(request, who.subject)
        return engine_pb2.CreateGameResponse(game_id=request.game_id, version=game.version)

    async def AssignSeats(
        self, request: engine_pb2.AssignSeatsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> engine_pb2.AssignSeatsResponse:
        who: Identity = caller()  # a service or an admin (the edge's policy)
        seats: dict[int, str] = {}
        for assignment in request.seats:
            if assignment.seat in seats:
                raise Refused(Reason.INVALID_REQUEST, f"seat {assignment.seat} is named twice", {"field": "seats"})
            seats[assignment.seat] = assignment.player_id
        await self._load(request.game_id)
        try:
            _, version = await self._games.assign_seats(
                request.game_id, seats, request.change, request.command_id, who.subject
            )
        except SeatChangeRefused as e:
            raise Refused(Reason.SEAT_CHANGE_REFUSED, str(e)) from None
        except CommandIdReused as e:
            raise Refused(Reason.COMMAND_ID_REUSED, str(e)) from None
        log.info("seats assigned", game=request.game_id, seats=seats, change=request.change)
        return engine_pb2.AssignSeatsResponse(version=version)

    async def GetView(
        self, request: engine_pb2.GetViewRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> engine_pb2.GetViewResponse:
        who = await self._caller()
        game = await self._spectating(who, await self._visible(who, request.game_id, request.min_version, context))
        seat = self._seat(who, game)
        response = engine_pb2.GetViewResponse(version=game.version)
        view = game.rules.codec.encode(game.rules.game.view(game.state, seat))
        getattr(response, game.rules.name).CopyFrom(view)
        return response

    async def GetLegalActions(
        self, request: engine_pb2.GetLegalActionsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> engine_pb2.GetLegalActionsResponse:
        who = await self._caller()
        game = await self._spectating(who, await self._visible(who, request.game_id, request.min_version, context))
        seat = self._seat(who, game)
        response = engine_pb2.GetLegalActionsResponse(version=game.version)
        if seat is None:
            return response
        for action in game.rules.game.legal_actions(game.state, seat):
            getattr(response.actions.add(), game.rules.name).CopyFrom(game.rules.commands.encode(action))
        game.rules.legal_extras(game.state, seat, response)
        return response

    async def Act(
        self, request: engine_pb2.ActRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> engine_pb2.ActResponse:
        started = time.perf_counter()
        who = await self._caller()
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(
            game=request.game_id, command=request.command_id, actor=who.subject, seat=who.seat
        )
        expected = request.expected_version if request.HasField("expected_version") else None
        game = await self._visible(who, request.game_id)
        if expected is not None and game.version < expected:
            # the caller saw a version this replica has not caught up with yet (another replica's stream, or an
            # append this replica's feed has not brought): it acts once the game is there here too, as a read at
            # min_version does — refused as stale, the caller would wait for a turn it already has
            game = await self._visible(who, request.game_id, expected, context)
        which = request.WhichOneof("command")
        if which != game.rules.name:
            raise Refused(
                Reason.WRONG_GAME_KIND,
                f"game {request.game_id} is a {game.rules.name} game: send a {game.rules.name} command",
                {"game_kind": game.rules.name},
            )
        try:
            command = game.rules.commands.decode(getattr(request, which))
        except CodecError as e:
            raise Refused(Reason.MALFORMED_COMMAND, str(e)) from None
        self._authorise(who, game, command)
        prepare = None
        if isinstance(command, game.rules.game.seeded_commands):
            # the engine draws the seed: whatever seed the client sent, a retry is the same command
            command, prepare = dataclasses.replace(cast(Any, command), seed=0), self._seed_for
        if request.validate_only:
            try:
                checked = await self._games.check(request.game_id, command, expected_version=expected, prepare=prepare)
            except RuleError as e:
                raise refusal(e, await self._load(request.game_id), command) from None
            except StaleVersion as e:
                raise Refused(Reason.STALE_VERSION, str(e), {"version": e.version}) from None
            return engine_pb2.ActResponse(version=checked.version)
        try:
            after, stored = await self._games.act(
                request.game_id, command, request.command_id, who.subject, expected_version=expected, prepare=prepare
            )
        except RuleError as e:
            raise refusal(e, await self._load(request.game_id), command) from None
        except StaleVersion as e:
            raise Refused(Reason.STALE_VERSION, str(e), {"version": e.version}) from None
        except CommandIdReused as e:
            raise Refused(Reason.COMMAND_ID_REUSED, str(e)) from None
        ACTS_BY_GAME[after.rules.name].inc()
        LATENCY.observe(time.perf_counter() - started)
        # a retry is answered as the first time: the version right after the command's own events
        version = stored[-1].version if stored else after.version
        log.debug("applied", version=version, events=len(stored))
        seat = who.seat if who.role is Role.PLAYER else None
        full = who.role in FULL_INFORMATION
        return engine_pb2.ActResponse(version=version, events=[self._redact(after, e, seat, full) for e in stored])

    async def ActStream(  # served by the edge (watching.register), not by this method
        self, request_iterator: AsyncIterator[engine_pb2.ActStreamRequest], context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[engine_pb2.ActStreamResponse]:
        """Each request is one `Act` call: the edge admits and answers it as one (`paiju.platform.edge.CallStream`,
        registered by `paiju.engine.watching.register`), so this method is not what serves the stream; a server
        that registered it directly, without the edge, answers UNIMPLEMENTED."""
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "ActStream is served behind Paiju's gRPC edge only")
        yield engine_pb2.ActStreamResponse()  # pragma: no cover  (abort raises)

    def _seed_for(self, command: Any, game: Game) -> Any:
        """A seeded command completed with the engine's seed for the position it is decided at."""
        return dataclasses.replace(command, seed=self._seeds(game.game_id, game.version))

    def _authorise(self, who: Identity, game: Game, command: Any) -> None:
        if isinstance(command, game.rules.game.system_commands):
            if who.role not in (Role.SERVICE, Role.ADMIN):
                raise Refused(
                    Reason.ROLE_REQUIRED, "system commands come from the engine only", {"required": "service"}
                )
            return
        if isinstance(command, game.rules.game.referee_commands):
            if who.role not in (Role.REFEREE, Role.ADMIN):
                raise Refused(Reason.ROLE_REQUIRED, "only a referee issues referee actions", {"required": "referee"})
            return
        if who.role is not Role.PLAYER:
            raise Refused(Reason.ROLE_REQUIRED, "only a seated player acts for a seat", {"required": "player"})
        seat = self._seat(who, game)
        named = getattr(command, "seat", None)
        if named != seat:
            raise Refused(
                Reason.NOT_YOUR_SEAT,
                f"this token acts for seat {seat}, and the command is for seat {named}",
                {"seat": seat, "command_seat": named},
            )

    async def Watch(  # type: ignore[override]  # it yields bytes encoded once per audience (watching.register)
        self, request: engine_pb2.WatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[engine_pb2.WatchResponse | bytes]:
        """Every event after ``from_version`` as the caller's audience may see it, then each new one as it is
        recorded; the newest of each change with the turn it leads to, and the turn alone when the watch opens at the
        game's current version (`paiju.engine.watching`). The events still in the game's memory and the turns are
        encoded once per audience and shared by every watcher; an older backlog is read from the store. A watch that
        asked for ``batched`` gets the events of each change (and a backlog) together, in as few messages as the
        bounds allow (`paiju.engine.watching.Change`). Every message sent is counted (``WATCH_MESSAGES``)."""
        who = await self._caller()
        full = who.role in FULL_INFORMATION
        game = await self._visible(who, request.game_id)
        policy = await self.spectating.of(who, game)
        counted = WATCH_MESSAGES.inc
        if policy.delay:  # a delayed spectator (`paiju.engine.spectating`)
            async for delayed in self.spectating.watch(game, policy, request, self.draining):
                counted()
                yield delayed
            return
        seat = None if full else self._seat(who, game)
        if seat is not None:
            game = await self._open_first_shuffle(game)
        player = who.subject
        sent = request.from_version
        turned = -1  # the version whose turn was sent last
        encodings = self.encodings
        # one message per change (WatchRequest.batched, which until_turn implies), and for a seat that asked, only
        # when it may act
        until_turn = request.until_turn and seat is not None
        change = Change() if request.batched or request.until_turn else None
        while True:
            if seat is not None:
                self._seat(who, game)  # the seat changed hands (a swap, a substitute, a bot covering): no more
            if sent + 1 < game.first_recent and sent < game.version:
                # a backlog older than the game's memory: from the store, encoded for this watcher alone
                history = await self._games.history(game.game_id, sent)
                held: bytes | None = None  # the last event, sent with the turn when it is the newest
                for envelope, event in zip(history.envelopes, history.events, strict=True):
                    if envelope.version > sent:
                        data = event_bytes(
                            history.game, envelope, event, audience(history.game, envelope.version, seat, player, full)
                        )
                        sent = envelope.version
                        if change is not None:
                            message = change.add(data)
                            if message is not None:  # a long backlog: the message is full
                                counted()
                                yield message
                            continue
                        if held is not None:
                            counted()
                            yield held
                        held = data
                game = await self._games.load(game.game_id, sent)
                turn = b""
                if game.version == sent:
                    turn = encodings.turn(game, seat, views=request.views)
                    turned = sent
                if change is not None and change.count:
                    counted()
                    yield change.message(turn)
                elif held is not None:
                    counted()
                    yield held + turn
                continue
            newest = game.version
            # a seat that asked to be told only at its turns (until_turn) and may not act: nothing sent, the events held
            holding = until_turn and held_back(game, seat, sent, encodings)
            if not holding:
                if change is not None and sent < newest:
                    for version in range(sent + 1, newest + 1):
                        data = encodings.event(game, version, audience(game, version, seat, player, full))
                        message = change.add(data)
                        if message is not None:
                            counted()
                            with tracing.sending(game.game_id, version - 1):
                                yield message
                    counted()
                    with tracing.sending(game.game_id, newest):  # traced: a span in the trace of the newest's append
                        yield change.message(encodings.turn(game, seat, views=request.views))
                else:
                    for version in range(sent + 1, newest + 1):
                        shown = audience(game, version, seat, player, full)
                        if version == newest:  # the event with the turn, joined once for many watchers (`change`)
                            data = encodings.change(game, shown, seat, views=request.views)
                        else:
                            data = encodings.event(game, version, shown)
                        counted()
                        # traced: a span in the trace of the event's append
                        with tracing.sending(game.game_id, version):
                            yield data
                if sent == newest and turned != newest:
                    counted()
                    yield encodings.turn(game, seat, views=request.views)
                sent = max(sent, newest)
                turned = newest
                if game.state.phase.value == "ended":
                    counted()
                    yield watch_end(engine_pb2.WATCH_END_REASON_GAME_ENDED, sent)
                    return
            moved = await self._games.next_change_unless(request.game_id, newest, self.draining)
            if moved is None:
                counted()
                yield watch_end(engine_pb2.WATCH_END_REASON_DRAINING, sent)
                return
            game = moved

    async def _open_first_shuffle(self, game: Game) -> Game:
        """A seat's client watches a version-2 fair game whose first shuffle waits for one (`paiju.engine.dealing`):
        the engine commits to it now, so the seats watching can commit to their contributions. Taken once, at the
        game's version (a command id of the game and version: replicas and watchers racing store it once)."""
        dealing = self._games.dealing
        step = opens_on_watch(game.rules.game, game.state) if dealing.takes_steps else None
        if step is None:
            return game
        try:
            after, _ = await self._games.act(
                game.game_id,
                dealing.command(game.game_id, game.state, step),
                f"fair:{game.game_id}:{game.version}",
                "engine",
                expected_version=game.version,
            )
        except (CommandIdReused, ConcurrencyConflict, RuleError, StaleVersion):
            return game  # another watcher or the timers took it first: the watch sends it as it comes
        log.info("first shuffle committed for a watching seat", game=game.game_id, version=after.version)
        return after

    async def Replay(
        self, request: engine_pb2.ReplayRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[engine_pb2.ReplayResponse]:
        who = await self._caller()
        game = await self._load(request.game_id)
        ended = game.state.phase.value == "ended"
        if not ended and who.role not in ANY_GAME and who.game != request.game_id:
            raise not_found(request.game_id)
        full = who.role in FULL_INFORMATION or ended
        last = (await self._spectating(who, game)).version  # a delayed spectator replays what it may see
        holds = who.role is Role.PLAYER and who.game == request.game_id and who.seat is not None
        seat = who.seat if holds and who.seat is not None and game.holds(who.seat, who.subject) else None
        try:
            history = await self._games.history(request.game_id)
        except GameNotFound:
            raise not_found(request.game_id) from None
        for envelope, event in zip(history.envelopes, history.events, strict=True):
            if envelope.version > last:
                break  # the game as it was when the replay was asked for
            shown = audience(history.game, envelope.version, seat, who.subject, full)
            yield engine_pb2.ReplayResponse(envelope=redacted(history.game, envelope, event, shown))


__all__ = ["RULES", "EngineService"]
