"""The client's side of the engine API: a seat's (or a spectator's) calls, the Watch stream resumed after a
disconnect, and refusals explained in plain words.

Only the public gRPC contract is used (protos/paiju/v1/engine.proto): GetView, GetLegalActions (with what a
拖拉机 follow owes, ``tractor_follow``), Act with a client command id (a retry after a lost connection reuses it, so
it applies once), Watch from a version.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from paiju.rules.cards import Card
from paiju.rules.tractor.order import TRUMP
from paiju.sdk import RETRYABLE, GameWatch, Stale, act, backoff, call, new_command_id, refusal_of
from paiju.sdk.games import GameContract, of_command, of_view
from paiju.terminal.client.render import FollowOwed
from paiju.v1 import engine_pb2, engine_pb2_grpc, tractor_pb2

RETRY_SECONDS = 30.0
"""How long calls and the Watch stream keep retrying a lost engine before giving up."""
SEAT_PATIENCE = 300.0
"""How long a player waits for its seat back while a bot covers it (the lobby covers the seat of a player
who was away longer than its grace time, and hands it back when the player's table watch returns)."""
SEAT_AWAY = "A bot is playing your seat for now (you were away); waiting to get it back..."
CALL_TIMEOUT = 10.0
WATCH_PAUSE = 0.3
"""Seconds before the Watch stream is opened again after it broke or the engine drained it."""


def call_pause(failures: int) -> float:
    """Seconds before a call is tried again: 0.2, doubled after each failure, up to 2."""
    return backoff(failures, base=0.2, most=2.0)


def rule_violation(error: grpc.aio.AioRpcError) -> engine_pb2.RuleViolation | None:
    """The `RuleViolation` a refusal carries, when the engine sent one."""
    return refusal_of(error).violation


def explain(code: grpc.StatusCode, details: str, violation: engine_pb2.RuleViolation | None = None) -> str:
    """A refusal in plain words: what kind of refusal, then the engine's reason (the rule's own words)."""
    reason = (violation.reason if violation is not None and violation.reason else details).strip()
    if violation is not None and violation.rule and violation.rule not in reason:
        reason += f" (rule {violation.rule})"
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return f"Not allowed: {reason}"
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return f"Not yours to do: {reason}"
    if code == grpc.StatusCode.ABORTED:
        return "The table moved on before your move arrived; here it is again."
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return f"The engine could not read that move: {reason}"
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return f"Your game token was refused: {reason}"
    if code == grpc.StatusCode.NOT_FOUND:
        return f"No such game: {reason}"
    if code in RETRYABLE:
        return f"The engine cannot be reached: {reason}"
    return f"The engine refused ({code.name}): {reason}"


class Refused(Exception):
    """A call the engine answered with an error; ``message`` explains it to the player, ``rule`` is the id of the
    rule a refused move broke (``§6.2``, ``D-TR-5``; empty when the refusal names none)."""

    def __init__(self, code: grpc.StatusCode, message: str, rule: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.rule = rule


def refused(error: grpc.aio.AioRpcError) -> Refused:
    violation = rule_violation(error)
    rule = violation.rule if violation is not None else ""
    return Refused(error.code(), explain(error.code(), error.details() or "", violation), rule)


def _cards(values: Any) -> tuple[Card, ...]:
    return tuple(Card(int(v) - 1) for v in values)


def follow_owed(message: tractor_pb2.TractorFollowRequirement) -> FollowOwed:
    """What a 拖拉机 follow owes, as `GetLegalActions` says it (``tractor_follow``, §6)."""
    return FollowOwed(
        count=message.count,
        suit_class=TRUMP if message.trumps else int(message.suit) - 1,
        suit_cards=_cards(message.suit_cards),
        must_include=_cards(message.must_include),
        exact=message.exact,
        free=message.free,
        free_of_suit=message.free_of_suit,
        pattern=message.pattern,
    )


@dataclass(frozen=True)
class Legal:
    """The caller's legal actions at ``version`` (the rules cores' commands) and, when it is to follow a 拖拉机 lead,
    what any legal follow owes (the engine lists one representative follow)."""

    version: int
    actions: list[Any]
    follow: FollowOwed | None = None


@dataclass(frozen=True)
class Snapshot:
    """A view of the game at ``version``: ``game`` is the game's name (`paiju.rules.registry`)."""

    version: int
    game: str
    view: Any

    @property
    def ended(self) -> bool:
        return str(self.view.phase.value) == "ended"


class _Patience:
    """Whether a failed call of the terminal client is tried again: while the engine cannot be reached (for up to
    `RETRY_SECONDS`), and a read also while a bot covers the caller's seat (up to `SEAT_PATIENCE`, telling the
    player once: ``away``)."""

    def __init__(self, notice: Callable[[str], None], *, read: bool) -> None:
        self.notice = notice
        self.read = read
        self.away = False

    def __call__(self, error: grpc.aio.AioRpcError, waited: float) -> bool:
        if error.code() in RETRYABLE and waited < RETRY_SECONDS:
            return True
        if self.read and error.code() == grpc.StatusCode.PERMISSION_DENIED and waited < SEAT_PATIENCE:
            if not self.away:
                self.notice(SEAT_AWAY)
                self.away = True
            return True
        return False


class EngineClient:
    """One game's calls for one token (a seat's or a spectator's)."""

    def __init__(self, address: str, token: str, game_id: str) -> None:
        self.address = address
        self.game_id = game_id
        self.metadata = (("authorization", f"Bearer {token}"),)
        self.channel = grpc.aio.insecure_channel(address)
        self.stub: Any = engine_pb2_grpc.EngineServiceStub(self.channel)
        self.game: GameContract | None = None
        """The game, once a view has been read."""
        self.notice: Callable[[str], None] = lambda text: None

    async def close(self) -> None:
        await self.channel.close()

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata  # renewed by the caller while the game goes on

    async def _read(self, method: Callable[..., Any], request: Any) -> Any:
        """A read, tried again while the engine cannot be reached or a bot covers the caller's seat."""
        patience = _Patience(self.notice, read=True)
        try:
            reply = await call(
                method, request, metadata=self._metadata, timeout=CALL_TIMEOUT, again=patience, pause=call_pause
            )
        except grpc.aio.AioRpcError as e:
            raise refused(e) from None
        if patience.away:
            self.notice("You have your seat back.")
        return reply

    async def view(self, min_version: int = 0) -> Snapshot:
        reply = await self._read(
            self.stub.GetView, engine_pb2.GetViewRequest(game_id=self.game_id, min_version=min_version)
        )
        self.game = of_view(reply)
        return Snapshot(reply.version, self.game.name, self.game.view(reply))

    async def view_when_ready(self, patience: float = 60.0) -> Snapshot:
        """The view, waiting while the game does not exist yet (the lobby has just started the match)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience
        while True:
            try:
                return await self.view()
            except Refused as e:
                if e.code != grpc.StatusCode.NOT_FOUND or loop.time() > deadline:
                    raise
            await asyncio.sleep(0.25)

    async def contribute(self) -> bool:
        """Add this machine's random bytes to a fair game's committed shuffle when it waits for the caller's seat's
        (docs/fairness.md); whether a contribution was made. A refusal (the shuffle was dealt meanwhile) is no
        error."""
        snap = await self.view()
        seat = snap.view.seat
        contribution = None if seat is None or self.game is None else self.game.contribution(snap.view, seat)
        if contribution is None:
            return False
        try:
            await self.act(contribution)
        except Refused:
            return False
        return True

    async def legal(self, min_version: int = 0) -> Legal:
        """The game's version and the caller's legal actions at it, as the rules cores' commands, with what a
        拖拉机 follow owes."""
        reply = await self._read(
            self.stub.GetLegalActions, engine_pb2.GetLegalActionsRequest(game_id=self.game_id, min_version=min_version)
        )
        actions = []
        for action in reply.actions:
            game = of_command(action)
            actions.append(game.commands.decode(getattr(action, game.name)))
        follow = follow_owed(reply.tractor_follow) if reply.HasField("tractor_follow") else None
        return Legal(reply.version, actions, follow)

    async def act(self, command: Any, expected_version: int | None = None) -> int:
        """Send a command for the caller's seat; the game's version after it. A retry after a lost connection
        reuses the command id, so the command applies once (`paiju.sdk.act`). Raises `Refused` with the reason in
        plain words."""
        assert self.game is not None, "read the view first"
        command = self.game.with_contribution(command)  # a cut adds this machine's random bytes to the shuffle
        request = self.game.act(self.game_id, new_command_id(), command, expected_version)
        try:
            return await act(
                self.stub,
                request,
                metadata=self._metadata,
                timeout=CALL_TIMEOUT,
                again=_Patience(self.notice, read=False),
                pause=call_pause,
            )
        except Stale:
            raise Refused(grpc.StatusCode.ABORTED, explain(grpc.StatusCode.ABORTED, "")) from None
        except grpc.aio.AioRpcError as e:
            raise refused(e) from None


class GameFeed:
    """Follows the game's Watch stream (`paiju.sdk.GameWatch`: resumed from the last version received after a
    disconnect) and hands each envelope to ``receive``. ``version`` is the last version received; waiters are
    woken on each."""

    def __init__(
        self,
        engine: EngineClient,
        receive: Callable[[engine_pb2.Envelope], None],
        notice: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.engine = engine
        self.receive = receive
        self.notice = notice
        self.finished = False
        self.failure: str | None = None
        self._moved = asyncio.Condition()
        self._watch = GameWatch(
            engine.stub,
            engine.game_id,
            self._received,
            metadata=lambda: self.engine.metadata,
            on_break=self._broke,
            on_reconnect=self._reconnected,
            pause=lambda failures: WATCH_PAUSE,
        )
        self._lost_since: float | None = None
        self._back = ""

    @property
    def version(self) -> int:
        return self._watch.version

    async def run(self, from_version: int = 0) -> None:
        """Until the game ends (the engine closes the stream after the last event) or the engine stays away for
        `RETRY_SECONDS`."""
        self._watch.version = from_version
        try:
            await self._watch.run()
        finally:
            async with self._moved:
                self.finished = True
                self._moved.notify_all()

    async def _received(self, envelope: engine_pb2.Envelope) -> None:
        self.receive(envelope)
        async with self._moved:
            self._moved.notify_all()

    async def _reconnected(self) -> None:
        if self._lost_since is not None:
            self.notice(self._back)
            self._lost_since = None

    async def _broke(self, error: grpc.aio.AioRpcError) -> bool:
        """Watch again while the engine cannot be reached (for `RETRY_SECONDS`) or a bot covers the seat (for
        `SEAT_PATIENCE`), telling the player once; otherwise stop with the reason in ``failure``."""
        if error.code() in RETRYABLE:
            lost, back, patience = "Lost the connection to the engine; reconnecting...", "Reconnected.", RETRY_SECONDS
        elif error.code() == grpc.StatusCode.PERMISSION_DENIED:  # a bot covers the seat for now
            lost, back, patience = SEAT_AWAY, "You have your seat back.", SEAT_PATIENCE
        else:
            self.failure = explain(error.code(), error.details() or "", rule_violation(error))
            return False
        self._back = back
        now = asyncio.get_running_loop().time()
        if self._lost_since is None:
            self.notice(lost)
            self._lost_since = now
        if now - self._lost_since > patience:
            self.failure = explain(error.code(), error.details() or "")
            return False
        return True

    async def wait_beyond(self, version: int, timeout: float | None = None) -> bool:
        """Wait until an event after ``version`` arrived (True) or the feed finished / the timeout passed."""
        async with self._moved:
            try:
                await asyncio.wait_for(
                    self._moved.wait_for(lambda: self.version > version or self.finished), timeout=timeout
                )
            except TimeoutError:
                return False
            return self.version > version

    async def wait_for(self, version: int, timeout: float) -> bool:
        """Wait until ``version`` itself arrived (its narration printed), up to ``timeout`` seconds."""
        if self.version >= version:
            return True
        return await self.wait_beyond(version - 1, timeout) or self.version >= version
