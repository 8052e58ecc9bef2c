"""The bot runner: plays leased bot seats through the engine's public gRPC API with the rules cores' bots, at the
strength each table chose for the seat (`bot_for`; the heuristic bots by default).

A bot is an ordinary client (docs/architecture.md, "Clients and bots"): for each seat it holds only the seat's
token and follows the game with `EngineService.Watch` (resuming from the last version received after a disconnect),
which tells it everything it needs: the newest event of each change carries the turn it leads to, and in the stream
of a seat that may act, the turn holds the seat's legal actions and its view at that version. So a seat asks the
engine nothing between moves: when a turn says it may act, it lets the seat's bot (`choose_view`) decide from
what the seat may see and acts with a fresh command id and the turn's version as ``expected_version``
(`paiju.sdk.act`: sent again with the same command id while the engine cannot be reached, so it applies once); when
a fair deal's committed shuffle waits for its contribution, it adds 16 random bytes (protocol version 2: when the turn
says COMMIT, it commits to a fresh salt and 16 random bytes drawn on this machine, the cutter to its cut too, and
reveals them when the turn says REVEAL; every event of the log is checked against what it sent,
`paiju.sdk.fairness`: a change is logged as an error and counted in `SeatStats.altered`). The engine refuses a stale
move (ABORTED): the seat waits for the next turn, so two runners playing one seat never make two moves for one decision.
FAILED_PRECONDITION (the rules refuse the move) plays the first action the turn lists instead; PERMISSION_DENIED or
UNAUTHENTICATED means the seat is no longer this token's: the seat is dropped.

`BotRunner` asks its seat source (`paiju.botrunner.leases`) for the leased seats before the leases expire,
starts one asyncio task per new seat, hands renewed tokens to the running ones and stops the seats the
source no longer returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc
import structlog

from paiju.botrunner.leases import SeatLease, SeatSource
from paiju.platform import repeats
from paiju.rules import registry
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.zlj import bots as zlj_bots
from paiju.sdk import (
    RETRY_SECONDS,
    RETRYABLE,
    SEAT_GONE,
    ActStream,
    GameWatch,
    Stale,
    act,
    backoff,
    new_command_id,
    retryable_for,
)
from paiju.sdk.fairness import ContributionAltered, Pledges
from paiju.sdk.games import GAMES
from paiju.v1 import engine_pb2

log = structlog.get_logger("paiju.botrunner")

LOST = SEAT_GONE
"""The engine no longer lets the seat's token see or act: another player holds the seat, or the token lapsed."""
TRY_AGAIN = frozenset({grpc.StatusCode.RESOURCE_EXHAUSTED, *RETRYABLE})
"""Failures after which a fair-dealing step (a contribution, commitment or reveal) is taken again later (throttled,
or the engine away longer than ``act_patience``), not given up: nothing else would take it."""
Envelope = engine_pb2.Envelope
EnvelopeObserver = Callable[[SeatLease, Envelope], None]
"""Called with every envelope a seat's watch receives (in version order, each once)."""


class ViewBot(Protocol):
    """A bot that decides from its seat's view and the engine's legal actions (both games' `HeuristicBot`)."""

    def choose_view(self, view: Any, legal: Any) -> Any: ...


BOTS: dict[str, Callable[[int], ViewBot]] = {
    registry.ZLJ.name: zlj_bots.HeuristicBot,
    registry.TRACTOR.name: tractor_bots.HeuristicBot,
}
"""The bot that plays each game (by the game's name) when the table chose no strength, made with its seed
(`bot_seed`)."""
assert set(BOTS) == set(registry.GAMES), "every game of the registry has its bot"
STRENGTHS: dict[str, dict[str, Callable[[int], ViewBot]]] = {
    registry.ZLJ.name: dict(zlj_bots.STRENGTHS),
    registry.TRACTOR.name: dict(tractor_bots.STRENGTHS),
}
"""The strengths a table may choose for a bot (the rules cores' `STRENGTHS`), per game."""
assert set(STRENGTHS) == set(registry.GAMES), "every game of the registry has its strengths"


def bot_for(game: str, strength: str) -> Callable[[int], ViewBot]:
    """The bot of ``strength`` in ``game``; the default (`BOTS`) for an empty or unknown name (the lobby refuses
    unknown names: one can come only from a lobby newer than this runner)."""
    return STRENGTHS[game].get(strength, BOTS[game])


def bot_seed(game_id: str, seat: int) -> int:
    """The seed of a seat's bot: stable per game and seat, so a restarted runner plays alike."""
    return int.from_bytes(hashlib.sha256(f"{game_id}:{seat}".encode()).digest()[:8], "big") >> 1


class SeatLost(Exception):
    """The engine refuses the seat's token (PERMISSION_DENIED, UNAUTHENTICATED): the seat is not ours."""


@dataclass
class SeatStats:
    """What one seat's player did."""

    acts: int = 0
    """Moves the engine applied."""
    aborted: int = 0
    """Moves refused as stale (ABORTED): the game had moved on; read again."""
    refused: int = 0
    """Moves refused by the rules (FAILED_PRECONDITION); the listed action was played next."""
    fallbacks: int = 0
    """Decisions the bot could not make (an error): the first listed action instead."""
    resumes: int = 0
    """Watch streams resumed after a disconnect."""
    errors: int = 0
    """Calls that failed otherwise (engine unreachable, timeouts), retried after a backoff."""
    altered: int = 0
    """Fair dealing: events that did not show this seat's commitment or reveal as it sent it (each logged as an
    error naming the deal)."""


@dataclass
class SeatPlayer:
    """Plays one leased seat until its game ends, the seat is lost, or the task is cancelled: from the turns its
    Watch stream brings, asking nothing in between."""

    lease: SeatLease
    engine: Any
    """An `EngineServiceStub` on an async channel."""
    think: float = 0.3
    """Seconds the bot waits before each move (its pace at a table with people)."""
    call_timeout: float = 10.0
    on_envelope: EnvelopeObserver | None = None
    stats: SeatStats = field(default_factory=SeatStats)
    watched: int = 0
    """The last version the watch received: a new watch resumes after it."""
    agent: Callable[[str, int], ViewBot] | None = None
    """Makes the bot of a seat from the game's name and a seed (``paiju bots --agent``; default: `BOTS`)."""
    act_patience: float = RETRY_SECONDS
    """How long a move is sent again (with its command id, so it applies once) while the engine cannot be
    reached."""

    def __post_init__(self) -> None:
        self.game = GAMES[self.lease.game]
        self.acts = ActStream(self.engine)
        """The seat's moves, over one stream (`paiju.sdk.calls.ActStream`)."""
        seed = bot_seed(self.lease.game_id, self.lease.seat)
        if self.agent is None:
            self.bot = bot_for(self.lease.game, self.lease.strength)(seed)
        else:
            self.bot = self.agent(self.lease.game, seed)
        self.log = log.bind(game=self.lease.game_id, seat=self.lease.seat, table=self.lease.table_id)
        self._turn: engine_pb2.Turn | None = None
        """The latest turn the watch brought."""
        self._turned = asyncio.Event()
        self._done_at = 0
        """The latest version this seat acted at (or was refused at, or contributed at)."""
        self._contributed: set[int] = set()
        """The committed shuffles this seat added its contribution to."""
        self._stepped: set[tuple[int, int]] = set()
        """The fair-dealing steps (kind, shuffle) this seat took (protocol version 2)."""
        self.pledges = Pledges()
        """This seat's commitments and reveals, checked against the log (`paiju.sdk.fairness`)."""

    def renew(self, lease: SeatLease) -> None:
        """The renewed lease: its token is used from the next call on."""
        self.lease = lease

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.lease.token}"),)

    async def play(self) -> str:
        """Play until the game ends ("ended") or the engine refuses the token ("lost")."""
        watch = asyncio.create_task(self._watch(), name=f"watch {self.lease.key}")
        decide = asyncio.create_task(self._decide(), name=f"decide {self.lease.key}")
        try:
            done, _ = await asyncio.wait((watch, decide), return_when=asyncio.FIRST_COMPLETED)
            finished = done.pop()
            try:
                return finished.result()
            except SeatLost as e:
                self.log.info("seat lost", reason=str(e))
                return "lost"
        finally:
            for task in (watch, decide):
                task.cancel()
            await asyncio.gather(watch, decide, return_exceptions=True)
            self.acts.close()

    # --- following the game -----------------------------------------------------------------------------

    async def _watch(self) -> str:
        """Follow the game's events and turns (`paiju.sdk.GameWatch`: resumed from the last version after a
        disconnect; a game not created yet is watched again after a back-off). The events come with the seat's turns
        (`WatchRequest.until_turn`): a bot decides from its turn alone. Returns at the game's end."""
        watch = GameWatch(
            self.engine,
            self.lease.game_id,
            self._received,
            version=self.watched,
            metadata=self._metadata,
            on_break=self._watch_broke,
            on_close=self._watch_closed,
            on_turn=self._new_turn,
            until_turn=True,  # a bot acts from its turns: it is told nothing between them
        )
        await watch.run()
        self.log.info("game over", version=self.watched, acts=self.stats.acts, altered=self.stats.altered)
        return "ended"

    async def _received(self, envelope: Envelope) -> None:
        self.watched = envelope.version
        event = self.game.fair_dealing_event(envelope)  # the only events a seat checks: the others are not decoded
        if event is not None:
            try:
                self.pledges.check(self.lease.game_id, event)
            except ContributionAltered as e:
                self.stats.altered += 1
                self.log.error(
                    "fair dealing: this seat's part is not in the log as it sent it", deal=e.deal, what=e.what
                )
        if self.on_envelope is not None:
            self.on_envelope(self.lease, envelope)

    async def _new_turn(self, turn: engine_pb2.Turn) -> None:
        self._turn = turn
        if self.lease.seat in turn.seats:  # only a turn the seat may act in wakes the deciding task
            self._turned.set()

    async def _watch_broke(self, error: grpc.aio.AioRpcError) -> bool:
        if error.code() in LOST:
            raise SeatLost(error.details() or error.code().name) from None
        if error.code() is grpc.StatusCode.NOT_FOUND:
            self.stats.errors += 1  # the game is not created yet (the match starter is behind): watch again
            self.log.info("game not there yet", status=error.code().name)
            return True
        self.stats.resumes += 1
        self.log.info("watch cut, resuming", version=self.watched, status=error.code().name)
        return True

    async def _watch_closed(self, reason: int | None) -> bool:
        """Watch again unless the game is over: the engine ends a watch when the game is over (and says so); else
        another replica answers next time."""
        return not (reason == engine_pb2.WATCH_END_REASON_GAME_ENDED or await self._ended())

    async def _ended(self) -> bool:
        try:
            response = await self.engine.GetView(
                engine_pb2.GetViewRequest(game_id=self.lease.game_id, min_version=self.watched),
                metadata=self._metadata(),
                timeout=self.call_timeout,
            )
        except grpc.aio.AioRpcError as e:
            if e.code() in LOST:
                raise SeatLost(e.details() or e.code().name) from None
            return False
        return self.game.ended(response)

    # --- deciding -----------------------------------------------------------------------------------------

    async def _decide(self) -> str:
        """Act on each turn the watch brings in which the seat may act (the latest one, when several came
        meanwhile); nothing is asked of the engine in between."""
        failures = 0
        while True:
            await self._turned.wait()
            self._turned.clear()
            turn = self._turn
            if turn is None or turn.version <= self._done_at or self.lease.seat not in turn.seats:
                continue
            try:
                await self._take(turn)
                failures = 0
            except grpc.aio.AioRpcError as e:
                if e.code() in LOST:
                    raise SeatLost(e.details() or e.code().name) from None
                failures += 1
                self.stats.errors += 1
                self.log.info("engine call failed, retrying", status=e.code().name, details=e.details())
                await asyncio.sleep(backoff(failures))
                if self._turn is turn:
                    self._turned.set()  # nothing newer came meanwhile: try this turn again

    async def _take(self, turn: engine_pb2.Turn) -> None:
        """The seat's part of ``turn``: its contribution to a committed shuffle that waits for it, else a move
        decided from the turn's view and legal actions, acted at the turn's version."""
        version = turn.version
        kind = turn.fair_step.kind
        if kind == engine_pb2.FAIR_DEALING_STEP_KIND_CONTRIBUTE:
            if turn.fair_step.shuffle not in self._contributed:
                await self._contribute()  # raises when it may be tried again: the turn is, later
                self._contributed.add(turn.fair_step.shuffle)
            if not turn.actions:
                return
        elif kind in (engine_pb2.FAIR_DEALING_STEP_KIND_COMMIT, engine_pb2.FAIR_DEALING_STEP_KIND_REVEAL):
            if (kind, turn.fair_step.shuffle) not in self._stepped:
                await self._pledge(turn.fair_step)  # raises when it may be tried again: the turn is, later
                self._stepped.add((kind, turn.fair_step.shuffle))
            if not turn.actions:
                return
        actions = self.game.actions(turn)
        if not actions:
            return
        action = self.game.with_contribution(self._choose(self.game.view(turn), actions, version))
        if self.think > 0:
            await asyncio.sleep(self.think)
        for attempt in range(2):
            command_id = new_command_id()
            try:
                acted = await act(
                    self.acts,
                    self.game.act(self.lease.game_id, command_id, action, version),
                    metadata=self._metadata,
                    timeout=self.call_timeout,
                    again=retryable_for(self.act_patience),
                )
            except Stale:  # someone moved first (another seat, another runner, the turn timer): the next turn says
                self.stats.aborted += 1
                self._done_at = version
                return
            except grpc.aio.AioRpcError as e:
                if e.code() not in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ALREADY_EXISTS):
                    raise
                self.stats.refused += 1
                self.log.warning("move refused", version=version, action=repr(action), reason=e.details())
                if attempt == 0 and action != actions[0]:
                    action = self.game.with_contribution(actions[0])  # the engine's own first listed action
                    continue
                self._done_at = version
                return
            self._done_at = version
            self.stats.acts += 1
            self.log.debug("acted", version=acted, command=command_id, action=action)  # rendered only when logged
            return

    async def _contribute(self) -> None:
        """Add 16 random bytes of this machine to the committed shuffle that waits for this seat's contribution (a
        refusal: the shuffle was dealt meanwhile, or the seat contributed already). A contribution throttled by the
        engine's rate limits, or not answered while the engine was away, is raised (`TRY_AGAIN`): `_decide` takes
        the turn again after a pause, as for a commitment or a reveal (`_pledge`) — given up, the deal would lack
        this seat's randomness."""
        try:
            await act(
                self.acts,
                self.game.act(self.lease.game_id, new_command_id(), self.game.contribute(self.lease.seat)),
                metadata=self._metadata,
                timeout=self.call_timeout,
                again=retryable_for(self.act_patience),
            )
        except grpc.aio.AioRpcError as e:
            if e.code() in LOST or e.code() in TRY_AGAIN:
                raise
            self.log.info("contribution not taken", reason=e.details())

    async def _pledge(self, step: engine_pb2.FairDealingStep) -> None:
        """Protocol version 2: commit to a fresh salt and contribution (the cutter's cut too, drawn here) or reveal
        them (`paiju.sdk.fairness.Pledges`); a refusal: the window closed meanwhile. A step throttled by the engine's
        rate limits, or not answered while the engine was away, is raised (`TRY_AGAIN`): `_decide` takes the turn
        again after a pause. A step given up would be missing for good, and a cutter's commitment at a table without
        a turn timer is waited for without end."""
        game_id = self.lease.game_id
        committing = step.kind == engine_pb2.FAIR_DEALING_STEP_KIND_COMMIT
        command = self.pledges.step(game_id, self.lease.seat, step)
        if command is None:
            return
        try:
            await act(
                self.acts,
                self.game.act(game_id, new_command_id(), command),
                metadata=self._metadata,
                timeout=self.call_timeout,
                again=retryable_for(self.act_patience),
            )
        except grpc.aio.AioRpcError as e:
            if e.code() in LOST or e.code() in TRY_AGAIN:
                raise
            self.log.info("fair-dealing step not taken", step="commit" if committing else "reveal", reason=e.details())
            return
        self.pledges.taken(game_id, step)

    def _choose(self, seat_view: Any, actions: list[Any], version: int) -> Any:
        try:
            return self.bot.choose_view(seat_view, actions)
        except Exception:
            self.stats.fallbacks += 1
            self.log.exception("the bot could not decide: playing the first listed action", version=version)
            return actions[0]


class BotRunner:
    """Plays every seat its source leases to it, one asyncio task per seat, until `run` is stopped."""

    def __init__(
        self,
        source: SeatSource,
        engine: Any,
        *,
        runner_id: str = "botrunner",
        think: float = 0.3,
        renew_every: float = 10.0,
        retry_every: float = 2.0,
        call_timeout: float = 10.0,
        on_envelope: EnvelopeObserver | None = None,
        now: Callable[[], float] = time.time,
        agent: Callable[[str, int], ViewBot] | None = None,
    ) -> None:
        """``agent``: makes each seat's bot from the game's name and a seed (default: the heuristic `BOTS`)."""
        self._source = source
        self._agent = agent
        self._engine = engine
        self.runner_id = runner_id
        self.think = think
        self.renew_every = renew_every
        self.retry_every = retry_every
        self.call_timeout = call_timeout
        self._on_envelope = on_envelope
        self._now = now
        self._players: dict[tuple[str, int], SeatPlayer] = {}
        self._tasks: dict[tuple[str, int], asyncio.Task[str]] = {}
        self._answered = False
        self._started = 0
        """Seats the last answer started."""
        self.done: dict[tuple[str, int], str] = {}
        """Seats this runner stopped playing and why: "ended", "lost", "released" (no longer leased),
        "expired" (the lease ran out while the source could not be asked) or "failed"."""
        self._done_leases: dict[tuple[str, int], tuple[str, float]] = {}
        """The token and lease end each stopped seat had: a lost seat is taken up again only with another token or a
        renewed lease (the lobby hands the same token back across renewals while it serves)."""
        self.starts: Counter[tuple[str, int]] = Counter()
        """How many times each seat was taken up (again after it was released, lost with another token or lease,
        or failed), while its lease is still returned (a seat the source no longer leases is forgotten)."""
        self.stats: dict[tuple[str, int], SeatStats] = {}
        """Per seat, everything its players did (across restarts of the seat), while its lease is still returned."""
        self.seats_played = 0
        """Seats taken up since the runner started."""
        self.acts = 0
        """Moves the engine applied for the seats this runner no longer holds (`total_acts` adds the others')."""
        self.altered = 0
        """Fair dealing: events that did not show a seat's part as it sent it, for the seats this runner no longer
        holds (`total_altered` adds the others')."""
        self.log = log.bind(runner=runner_id)

    @property
    def playing(self) -> frozenset[tuple[str, int]]:
        """The seats being played now: (game id, seat)."""
        return frozenset(self._tasks)

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Lease and play seats until ``stop`` is set (or the task is cancelled); then stop every seat."""
        stopping = stop or asyncio.Event()
        self.log.info("bot runner started", think=self.think)
        long_polls = getattr(self._source, "wait_seconds", 0) > 0
        try:
            while not stopping.is_set():
                asked_at = time.monotonic()
                wait, asked = await self._refresh_unless(stopping, long_polls)
                if asked:
                    # the lobby held the call until something moved (or a while), or gave a new seat: ask again at
                    # once; one that answered at once with nothing new is asked at most once a second
                    elapsed = time.monotonic() - asked_at
                    if self._started or elapsed >= 1.0:
                        continue
                    wait = 1.0 - elapsed
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await stopping.wait()
        finally:
            await self.close()
            self.log.info(
                "bot runner stopped", seats=self.seats_played, acts=self.total_acts, altered=self.total_altered
            )

    async def _refresh_unless(self, stopping: asyncio.Event, long_polls: bool) -> tuple[float, bool]:
        """`refresh`, cut short when the runner stops (a long-polling call may be waiting at the lobby); the wait
        until the next one, and whether the source answered."""
        refreshing = asyncio.ensure_future(self.refresh())
        stopped = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait((refreshing, stopped), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if not refreshing.done():
            refreshing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await refreshing
            return 0.0, False
        wait = refreshing.result()
        return wait, long_polls and self._answered

    async def refresh(self) -> float:
        """Ask the source once and start, renew or stop seats; returns the seconds until it should ask again."""
        now = self._now()
        self._answered = False
        try:
            async with asyncio.timeout(self.call_timeout + getattr(self._source, "wait_seconds", 0)):
                leases = await self._source()
        except Exception as e:  # the source is down: keep the seats whose leases still run
            repeats.REPEATS.warn(self.log, "could not lease seats", error=repr(e))  # a line a minute while it is away
            for key, running in list(self._players.items()):
                if running.lease.expires_at <= now:
                    self._stop(key, "expired")
            return self._next(now, self.retry_every)
        self._answered = True
        self._started = 0
        current = {lease.key: lease for lease in leases}
        for key in [k for k in self._players if k not in current]:
            self._stop(key, "released")
        for key, lease in current.items():
            player = self._players.get(key)
            if player is not None:
                player.renew(lease)
                continue
            reason = self.done.get(key)
            if reason == "ended" or (
                reason == "lost" and self._done_leases.get(key) == (lease.token, lease.expires_at)
            ):
                continue  # over, or lost with this very token and lease: not again
            self._start(lease)
            self._started += 1
        for key in [k for k in self.done if k not in current]:
            self._forget(key)
        return self._next(now, self.renew_every)

    @property
    def total_acts(self) -> int:
        """Moves the engine applied for this runner's seats since it started."""
        return self.acts + sum(s.acts for s in self.stats.values())

    @property
    def total_altered(self) -> int:
        """Fair dealing: events, since the runner started, that did not show one of its seats' commitment or reveal
        as the seat sent it (each also logged as an error naming the game and the deal)."""
        return self.altered + sum(s.altered for s in self.stats.values())

    def _forget(self, key: tuple[str, int]) -> None:
        """A seat done with and no longer leased: nothing about it is kept (a runner's memory follows the seats it
        plays now, not every seat it ever played)."""
        del self.done[key]
        self._done_leases.pop(key, None)
        self.starts.pop(key, None)
        stats = self.stats.pop(key, None)
        if stats is not None:
            self.acts += stats.acts
            self.altered += stats.altered

    def _next(self, now: float, most: float) -> float:
        """Ask again within ``most`` seconds, and by half the time left of the first lease to expire."""
        expiries = [p.lease.expires_at for p in self._players.values()]
        if not expiries:
            return most
        return max(0.2, min(most, (min(expiries) - now) / 2))

    def _start(self, lease: SeatLease) -> None:
        key = lease.key
        self.done.pop(key, None)
        self._done_leases.pop(key, None)
        player = SeatPlayer(
            lease,
            self._engine,
            think=self.think,
            call_timeout=self.call_timeout,
            on_envelope=self._on_envelope,
            stats=self.stats.setdefault(key, SeatStats()),
            agent=self._agent,
        )
        self._players[key] = player
        self.starts[key] += 1
        self.seats_played += 1
        task = asyncio.create_task(player.play(), name=f"seat {key}")
        self._tasks[key] = task
        task.add_done_callback(lambda t: self._finished(key, player, t))
        self.log.info("playing seat", game=lease.game_id, seat=lease.seat, kind=lease.game, table=lease.table_id)

    def _finished(self, key: tuple[str, int], player: SeatPlayer, task: asyncio.Task[str]) -> None:
        if self._tasks.get(key) is not task:
            return
        del self._tasks[key]
        del self._players[key]
        if task.cancelled():
            reason = self.done.get(key, "released")
        elif task.exception() is not None:
            reason = "failed"
            self.log.error("seat failed", game=key[0], seat=key[1], error=repr(task.exception()))
        else:
            reason = task.result()
        self.done[key] = reason
        self._done_leases[key] = (player.lease.token, player.lease.expires_at)

    def _stop(self, key: tuple[str, int], reason: str) -> None:
        task = self._tasks.get(key)
        if task is not None:
            self.done[key] = reason
            task.cancel()
            self.log.info("seat stopped", game=key[0], seat=key[1], reason=reason)

    async def close(self) -> None:
        """Stop every seat and wait for their tasks."""
        tasks = list(self._tasks.values())
        for key in list(self._tasks):
            self._stop(key, "stopped")
        await asyncio.gather(*tasks, return_exceptions=True)


__all__ = [
    "BOTS",
    "GAMES",
    "STRENGTHS",
    "BotRunner",
    "SeatLost",
    "SeatPlayer",
    "SeatStats",
    "ViewBot",
    "bot_for",
    "bot_seed",
]
