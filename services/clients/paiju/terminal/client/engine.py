"""The client's side of the engine API: the Watch stream, resumed after a disconnect, that tells the client
everything it shows and plays from; its acts; and refusals explained in plain words.

Only the public gRPC contract is used (protos/paiju/v1/engine.proto), and only two of its calls: Watch with
``views`` (every turn carries the caller's view — a spectator's is the public one — and, when the caller's seat may
act, its legal actions, what a 拖拉机 follow owes, ``tractor_follow``, and the fair-dealing step it may take), and
Act with a client command id (a retry after a lost connection reuses it, so it applies once) at the turn's version.
The client never asks for a view or the legal actions (GetView, GetLegalActions), not even at its start: the
stream's first turn says which game it is and where it stands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from paiju.rules.cards import Card
from paiju.rules.tractor.order import TRUMP
from paiju.sdk import RETRYABLE, GameWatch, Stale, act, backoff, new_command_id, refusal_of
from paiju.sdk.fairness import Pledges
from paiju.sdk.games import GAMES, GameContract
from paiju.terminal.client.render import FollowOwed
from paiju.v1 import engine_pb2, engine_pb2_grpc, tractor_pb2

RETRY_SECONDS = 30.0
"""How long a move (`Act`) is sent again while the engine cannot be reached before the player is told it was not
sent (the Watch stream itself never gives up on an engine that does not answer: `RETRY_EVERY`)."""
RETRY_EVERY = 5.0
"""The longest pause between two tries to watch again an engine that does not answer: 0.3 s after the first
failure, doubled after each, up to this; the client keeps trying until the engine answers or the person quits."""
SEAT_PATIENCE = 300.0
"""How long a player waits for its seat back while a bot covers it (the lobby covers the seat of a player
who was away longer than its grace time, and hands it back when the player's table watch returns)."""
SEAT_AWAY = "A bot is playing your seat for now (you were away); waiting to get it back..."
START_PATIENCE = 60.0
"""How long the client waits for a game that is not there yet (the lobby has just started its match)."""
CALL_TIMEOUT = 10.0
WATCH_PAUSE = 0.3
"""Seconds before the Watch stream is opened again after it broke or the engine drained it."""


def watch_pause(failures: int) -> float:
    """Seconds before the Watch stream is opened again after ``failures`` broken or ended streams in a row:
    `WATCH_PAUSE`, doubled after each, up to `RETRY_EVERY`."""
    return backoff(failures, base=WATCH_PAUSE, most=RETRY_EVERY)


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
        return "The engine is not answering."
    return f"The engine refused ({code.name}): {reason}"


def not_answering(address: str) -> str:
    """What the client says when the engine at ``address`` stopped answering (the stack stopped, the network broke),
    in words rather than gRPC's."""
    return (
        f"The engine at {address} is not answering; trying again every {RETRY_EVERY:g} s at most "
        "(it resumes where it left off; q stops)..."
    )


ANSWERING_AGAIN = "The engine is answering again; carrying on from where the game was."


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
    """What a 拖拉机 follow owes, as the engine's turn says it (``tractor_follow``, §6)."""
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


@dataclass(frozen=True)
class Turn:
    """A turn the Watch stream brought (`engine_pb2.Turn`), read: the caller's view at its version (the client
    watches with ``views``, so every turn has it), the seats that may act, the caller's legal actions (none unless
    its seat may act), when the turn runs out and which committed shuffle waits for the caller's random bytes."""

    snap: Snapshot
    seats: tuple[int, ...]
    legal: Legal
    deadline: float | None
    """When the turn runs out, by the engine's clock (seconds since the epoch); ``None``: nothing runs out."""
    contribution: int | None
    """The committed shuffle (its number) the caller's seat may add its random bytes to now (``fair_step``)."""
    pledge: tuple[str, int, int] | None = None
    """Protocol version 2: the step the caller's seat owes (``commit`` or ``reveal``), for which shuffle, and the
    most cards its cut may move when it cuts (else 0)."""

    @property
    def version(self) -> int:
        return self.snap.version


def game_of(turn: engine_pb2.Turn) -> GameContract | None:
    """The game of a turn, by the member of its view's oneof (``None``: the turn carries no view)."""
    name = turn.WhichOneof("view")
    return None if name is None else GAMES.get(name)


def read_turn(game: GameContract, turn: engine_pb2.Turn) -> Turn:
    """A turn of ``game`` as the client uses it (its view must be there: the client watches with ``views``)."""
    follow = follow_owed(turn.tractor_follow) if turn.HasField("tractor_follow") else None
    deadline = turn.deadline.seconds + turn.deadline.nanos / 1e9 if turn.HasField("deadline") else None
    contributes = turn.fair_step.kind == engine_pb2.FAIR_DEALING_STEP_KIND_CONTRIBUTE
    step = turn.fair_step
    pledge = (
        ("commit" if step.kind == engine_pb2.FAIR_DEALING_STEP_KIND_COMMIT else "reveal", step.shuffle, step.max_cut)
        if step.kind in (engine_pb2.FAIR_DEALING_STEP_KIND_COMMIT, engine_pb2.FAIR_DEALING_STEP_KIND_REVEAL)
        else None
    )
    return Turn(
        snap=Snapshot(turn.version, game.name, game.view(turn)),
        seats=tuple(turn.seats),
        legal=Legal(turn.version, game.actions(turn), follow),
        deadline=deadline,
        contribution=turn.fair_step.shuffle if contributes else None,
        pledge=pledge,
    )


def _patient(error: grpc.aio.AioRpcError, waited: float) -> bool:
    """Whether a failed `Act` of the terminal client is sent again (with its command id, so it applies once): while
    the engine cannot be reached, for up to `RETRY_SECONDS`."""
    return error.code() in RETRYABLE and waited < RETRY_SECONDS


class EngineClient:
    """One game's calls for one token (a seat's or a spectator's): `Act`; everything else comes on the Watch stream
    (`GameFeed`)."""

    def __init__(self, address: str, token: str, game_id: str) -> None:
        self.address = address
        self.game_id = game_id
        self.metadata = (("authorization", f"Bearer {token}"),)
        self.channel = grpc.aio.insecure_channel(address)
        self.stub: Any = engine_pb2_grpc.EngineServiceStub(self.channel)
        self.game: GameContract | None = None
        """The game, once the Watch stream's first turn has said it."""

    async def close(self) -> None:
        await self.channel.close()

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata  # renewed by the caller while the game goes on

    async def contribute(self, seat: int) -> bool:
        """Add this machine's random bytes to a fair game's committed shuffle, which a turn's ``fair_step`` says
        waits for the seat's (docs/fairness.md); whether the engine took them. A refusal (the shuffle was dealt
        meanwhile) is no error."""
        assert self.game is not None, "the game is known from the first turn"
        try:
            await self.act(self.game.contribute(seat))
        except Refused:
            return False
        return True

    async def pledge(self, pledges: Pledges, seat: int, step: tuple[str, int, int]) -> bool:
        """Protocol version 2: commit to this machine's fresh salt and random bytes (the cutter's cut too, drawn
        here), or reveal them (`paiju.sdk.fairness`); whether the engine took the step. A refusal (the window closed
        meanwhile) is no error."""
        kind, number, max_cut = step
        if kind == "commit":
            command: Any = pledges.commit(self.game_id, seat, number, max_cut=max_cut)
        else:
            command = pledges.reveal(self.game_id, number)
            if command is None:
                return False
        try:
            await self.act(command)
        except Refused:
            return False
        (pledges.committed if kind == "commit" else pledges.revealed)(self.game_id, number)
        return True

    async def act(self, command: Any, expected_version: int | None = None) -> int:
        """Send a command for the caller's seat; the game's version after it. A retry after a lost connection
        reuses the command id, so the command applies once (`paiju.sdk.act`). Raises `Refused` with the reason in
        plain words."""
        assert self.game is not None, "the game is known from the first turn"
        command = self.game.with_contribution(command)  # a cut adds this machine's random bytes to the shuffle
        request = self.game.act(self.game_id, new_command_id(), command, expected_version)
        try:
            return await act(
                self.stub, request, metadata=self._metadata, timeout=CALL_TIMEOUT, again=_patient, pause=call_pause
            )
        except Stale:
            raise Refused(grpc.StatusCode.ABORTED, explain(grpc.StatusCode.ABORTED, "")) from None
        except grpc.aio.AioRpcError as e:
            if e.code() in RETRYABLE:
                message = f"The engine at {self.address} is not answering: your move was not sent. Try it again."
                raise Refused(e.code(), message) from None
            raise refused(e) from None


class GameFeed:
    """Follows the game's Watch stream with the caller's view in every turn (`paiju.sdk.GameWatch` with ``views``:
    resumed from the last version received after a disconnect) and hands each envelope to ``receive`` and each
    turn, read (`Turn`), to ``turned``; ``turn`` is the latest, and waiters are woken on each. The first turn comes
    with the newest envelope of the backlog (the game as it stands when the client came): the envelopes before it
    are the game's history. This is all the client reads of the game: it never asks for a view or the legal
    actions."""

    def __init__(
        self,
        engine: EngineClient,
        receive: Callable[[engine_pb2.Envelope], None],
        turned: Callable[[Turn], None] = lambda turn: None,
        notice: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.engine = engine
        self.receive = receive
        self.turned = turned
        self.notice = notice
        self.finished = False
        self.failure: str | None = None
        """Why the feed stopped before the game's end, in plain words."""
        self.failure_code: grpc.StatusCode | None = None
        self.turn: Turn | None = None
        """The latest turn."""
        self._moved = asyncio.Condition()
        self._watch = GameWatch(
            engine.stub,
            engine.game_id,
            self._received,
            metadata=lambda: self.engine.metadata,
            on_break=self._broke,
            on_close=self._closed,
            on_reconnect=self._reconnected,
            on_turn=self._turned,
            views=True,
            pause=watch_pause,
        )
        self._lost_since: float | None = None
        self._back = ""

    @property
    def version(self) -> int:
        """The last version received."""
        return self._watch.version

    @property
    def turn_version(self) -> int:
        """The version of the latest turn (-1 before the first)."""
        return -1 if self.turn is None else self.turn.version

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

    async def _turned(self, message: engine_pb2.Turn) -> None:
        game = self.engine.game or game_of(message)
        if game is None:  # a turn without the view asked for: not a turn this client can play from
            return
        self.engine.game = game
        turn = read_turn(game, message)
        self.turn = turn
        self.turned(turn)
        async with self._moved:
            self._moved.notify_all()

    async def _reconnected(self) -> None:
        if self._lost_since is not None and self._back:
            self.notice(self._back)
        self._lost_since = None

    async def _broke(self, error: grpc.aio.AioRpcError) -> bool:
        """Watch again while the engine cannot be reached (until it answers again or the person quits: the stack may
        be restarting), a bot covers the seat (for `SEAT_PATIENCE`), or the game is not there yet (the lobby has just
        started the match; `START_PATIENCE`), telling the player once, in words; otherwise stop with the reason in
        ``failure``."""
        code = error.code()
        if code in RETRYABLE:
            lost, back, patience = not_answering(self.engine.address), ANSWERING_AGAIN, float("inf")
        elif code == grpc.StatusCode.PERMISSION_DENIED:  # a bot covers the seat for now
            lost, back, patience = SEAT_AWAY, "You have your seat back.", SEAT_PATIENCE
        elif code == grpc.StatusCode.NOT_FOUND and self.turn is None:
            lost, back, patience = "", "", START_PATIENCE
        else:
            self.failure = explain(code, error.details() or "", rule_violation(error))
            self.failure_code = code
            return False
        now = asyncio.get_running_loop().time()
        if self._lost_since is None:
            if lost:
                self.notice(lost)
            self._lost_since = now
            self._back = back
        if now - self._lost_since > patience:
            self.failure = explain(code, error.details() or "", rule_violation(error))
            self.failure_code = code
            return False
        return True

    async def _closed(self, reason: int | None) -> bool:
        """The stream ended: watch again unless the game is over (the engine said so, or the latest turn shows it);
        a draining engine's replica is replaced by another."""
        if reason == engine_pb2.WATCH_END_REASON_GAME_ENDED:
            return False
        return self.turn is None or not self.turn.snap.ended

    async def wait_beyond(self, version: int, timeout: float | None = None) -> bool:
        """Wait until a turn after ``version`` arrived (True) or the feed finished / the timeout passed."""
        async with self._moved:
            try:
                await asyncio.wait_for(
                    self._moved.wait_for(lambda: self.turn_version > version or self.finished), timeout=timeout
                )
            except TimeoutError:
                return False
            return self.turn_version > version

    async def turn_at(self, version: int, timeout: float | None = None) -> Turn | None:
        """The latest turn once it is at ``version`` or later (``None``: the feed finished first, or the timeout
        passed)."""
        if self.turn_version >= version or await self.wait_beyond(version - 1, timeout):
            return self.turn
        return None
