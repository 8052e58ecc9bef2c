"""The client's side of the engine API: a seat's (or a spectator's) calls, the Watch stream resumed after a
disconnect, and refusals explained in plain words.

Only the public gRPC contract is used (protos/paiju/v1/engine.proto): GetView, GetLegalActions, Act with a
client command id (a retry after a lost connection reuses it, so it applies once), Watch from a version.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import grpc

from paiju.contract.games import TRACTOR, TRACTOR_COMMANDS, ZLJ, ZLJ_COMMANDS
from paiju.rules.tractor.view import SeatView as TractorView
from paiju.rules.zlj.view import SeatView as ZljView
from paiju.sdk import RETRYABLE, refusal_of
from paiju.v1 import engine_pb2, engine_pb2_grpc

RETRY_SECONDS = 30.0
"""How long calls and the Watch stream keep retrying a lost engine before giving up."""
SEAT_PATIENCE = 300.0
"""How long a player waits for its seat back while a bot covers it (the lobby covers the seat of a player
who was away longer than its grace time, and hands it back when the player's table watch returns)."""
SEAT_AWAY = "A bot is playing your seat for now (you were away); waiting to get it back..."
CALL_TIMEOUT = 10.0


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
    """A call the engine answered with an error; ``message`` explains it to the player."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def refused(error: grpc.aio.AioRpcError) -> Refused:
    return Refused(error.code(), explain(error.code(), error.details() or "", rule_violation(error)))


View = ZljView | TractorView


@dataclass(frozen=True)
class Snapshot:
    """A view of the game at ``version``."""

    version: int
    game: str
    view: Any

    @property
    def ended(self) -> bool:
        return str(self.view.phase.value) == "ended"


class EngineClient:
    """One game's calls for one token (a seat's or a spectator's)."""

    def __init__(self, address: str, token: str, game_id: str) -> None:
        self.address = address
        self.game_id = game_id
        self.metadata = (("authorization", f"Bearer {token}"),)
        self.channel = grpc.aio.insecure_channel(address)
        self.stub: Any = engine_pb2_grpc.EngineServiceStub(self.channel)
        self.game = ""
        self.notice: Callable[[str], None] = lambda text: None

    async def close(self) -> None:
        await self.channel.close()

    async def _call(self, method: Callable[..., Any], request: Any, *, read: bool = False) -> Any:
        """A unary call, retried while the engine cannot be reached (for up to `RETRY_SECONDS`); a read is also
        retried while a bot covers the caller's seat (up to `SEAT_PATIENCE`)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        delay = 0.2
        away = False
        while True:
            try:
                reply = await method(request, metadata=self.metadata, timeout=CALL_TIMEOUT)
                if away:
                    self.notice("You have your seat back.")
                return reply
            except grpc.aio.AioRpcError as e:
                waited = loop.time() - started
                if e.code() in RETRYABLE and waited < RETRY_SECONDS:
                    pass
                elif read and e.code() == grpc.StatusCode.PERMISSION_DENIED and waited < SEAT_PATIENCE:
                    if not away:
                        self.notice(SEAT_AWAY)
                        away = True
                else:
                    raise refused(e) from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def view(self, min_version: int = 0) -> Snapshot:
        reply = await self._call(
            self.stub.GetView, engine_pb2.GetViewRequest(game_id=self.game_id, min_version=min_version), read=True
        )
        which = reply.WhichOneof("view")
        self.game = which
        if which == "zlj":
            return Snapshot(reply.version, "zlj", ZLJ.decode(reply.zlj, ZljView))
        return Snapshot(reply.version, "tractor", TRACTOR.decode(reply.tractor, TractorView))

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

    async def legal(self, min_version: int = 0) -> tuple[int, list[Any]]:
        """The game's version and the caller's legal actions at it, as the rules cores' commands."""
        reply = await self._call(
            self.stub.GetLegalActions,
            engine_pb2.GetLegalActionsRequest(game_id=self.game_id, min_version=min_version),
            read=True,
        )
        actions = []
        for a in reply.actions:
            which = a.WhichOneof("command")
            codec = ZLJ_COMMANDS if which == "zlj" else TRACTOR_COMMANDS
            actions.append(codec.decode(getattr(a, which)))
        return reply.version, actions

    async def act(self, command: Any, expected_version: int | None = None) -> int:
        """Send a command for the caller's seat; the game's version after it. A retry after a lost connection
        reuses the command id, so the command applies once. Raises `Refused` with the reason in plain words."""
        request = engine_pb2.ActRequest(game_id=self.game_id, command_id=uuid.uuid4().hex)
        if expected_version is not None:
            request.expected_version = expected_version
        if self.game == "zlj":
            request.zlj.CopyFrom(cast(Any, ZLJ_COMMANDS.encode(command)))
        else:
            request.tractor.CopyFrom(cast(Any, TRACTOR_COMMANDS.encode(command)))
        reply = await self._call(self.stub.Act, request)
        return int(reply.version)


class GameFeed:
    """Follows the game's Watch stream, resuming from the last version received after a disconnect, and hands
    each envelope to ``receive``. ``version`` is the last version received; waiters are woken on each."""

    def __init__(
        self,
        engine: EngineClient,
        receive: Callable[[engine_pb2.Envelope], None],
        notice: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.engine = engine
        self.receive = receive
        self.notice = notice
        self.version = 0
        self.finished = False
        self.failure: str | None = None
        self._moved = asyncio.Condition()

    async def run(self, from_version: int = 0) -> None:
        """Until the game ends (the engine closes the stream after the last event) or the engine stays away for
        `RETRY_SECONDS`."""
        self.version = from_version
        loop = asyncio.get_running_loop()
        lost_since: float | None = None
        back = ""
        try:
            while True:
                request = engine_pb2.WatchRequest(game_id=self.engine.game_id, from_version=self.version)
                try:
                    draining = False
                    async for reply in self.engine.stub.Watch(request, metadata=self.engine.metadata):
                        if lost_since is not None:
                            self.notice(back)
                            lost_since = None
                        if reply.HasField("end"):  # the last message: the game is over, or the engine shuts down
                            draining = reply.end.reason == engine_pb2.WATCH_END_REASON_DRAINING
                            break
                        envelope = reply.envelope
                        if envelope.version <= self.version:
                            continue
                        self.receive(envelope)
                        async with self._moved:
                            self.version = envelope.version
                            self._moved.notify_all()
                    if not draining:
                        return  # the engine ends the stream once the game is over
                    await asyncio.sleep(0.3)  # the engine shuts down: watch again, another replica answers
                    continue
                except grpc.aio.AioRpcError as e:
                    if e.code() in RETRYABLE:
                        lost, back, patience = (
                            "Lost the connection to the engine; reconnecting...",
                            "Reconnected.",
                            RETRY_SECONDS,
                        )
                    elif e.code() == grpc.StatusCode.PERMISSION_DENIED:  # a bot covers the seat for now
                        lost, back, patience = SEAT_AWAY, "You have your seat back.", SEAT_PATIENCE
                    else:
                        self.failure = explain(e.code(), e.details() or "", rule_violation(e))
                        return
                    now = loop.time()
                    if lost_since is None:
                        self.notice(lost)
                        lost_since = now
                    if now - lost_since > patience:
                        self.failure = explain(e.code(), e.details() or "")
                        return
                await asyncio.sleep(0.3)
        finally:
            async with self._moved:
                self.finished = True
                self._moved.notify_all()

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
