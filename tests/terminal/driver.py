"""Helpers of the terminal client's tests: a real `EngineService` over the in-memory store, served from a thread
of its own (so a test can drive the client's pseudo-terminal with blocking pexpect calls meanwhile) and counting
the calls each token makes, bots playing other seats over the API, and tokens (the engine runs on the real clock,
as `tests.support.tokens` does by default). Import with ``from .driver import ...``."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import threading
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

import grpc
from pexpect import fdpexpect

from paiju.contract.games import TRACTOR, TRACTOR_COMMANDS
from paiju.engine.bootstrap import build
from paiju.engine.games import Games
from paiju.engine.service import EngineService
from paiju.engine.timers import expire_turns
from paiju.platform.callmetrics import CallMetrics
from paiju.platform.edge import Edge
from paiju.platform.serving import SERVER_OPTIONS, build_server
from paiju.platform.store import MemoryEventStore
from paiju.platform.tokens import Role
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor.model import Phase as TractorPhase
from paiju.rules.tractor.model import Play as TractorPlay
from paiju.rules.tractor.model import Redeal as TractorRedeal
from paiju.rules.tractor.view import SeatView as TractorView
from paiju.sdk.refusals import RETRYABLE
from paiju.terminal.client.style import SYMBOLS
from paiju.v1 import engine_pb2, engine_pb2_grpc, tractor_pb2, zlj_pb2

from ..support.credentials import TRUST, bearer
from ..support.fake_lobby import SERVICE, ZLJ_ONE_DEAL
from ..support.tokens import token as mint
from ..support.tokens import token_metadata

T = TypeVar("T")


class CallsByToken(grpc.aio.ServerInterceptor):
    """Counts the calls the engine receives by bearer token and method (a test's own looks, `PEEK`, aside): what
    the client under test asked of the engine."""

    def __init__(self) -> None:
        self.calls: defaultdict[str, Counter[str]] = defaultdict(Counter)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        metadata = {str(k): str(v) for k, v in handler_call_details.invocation_metadata or ()}
        if metadata.get(PEEK[0]) != PEEK[1]:
            token = metadata.get("authorization", "").removeprefix("Bearer ")
            self.calls[token][handler_call_details.method.rpartition("/")[2]] += 1
        return await continuation(handler_call_details)


auth = bearer
"""A call's metadata with a token (`tests.support.credentials.bearer`)."""
PEEK = ("x-paiju-test", "peek")
"""Metadata of the test's own look at the game (`EngineThread.view`, `legal`): not counted as the token's calls."""
SPECTATOR = "watcher"
"""The subject of the bots' spectator token."""


def player_id(seat: int) -> str:
    return f"{Role.PLAYER.value}-{seat}"


def token(role: Role, game: str | None = None, seat: int | None = None) -> str:
    """`tests.support.tokens.token` in the positional form the terminal tests call: the subject of a seat's
    player (`player_id`), else ``<role>-None``."""
    return mint(role=role, subject=f"{role.value}-{seat}", game=game, seat=seat)


class EngineThread:
    """An engine (gRPC, in-memory store, seeded shuffles) in a background thread with its own event loop.

    `call` runs a coroutine on that loop and waits for it; `spawn` starts one there and returns its future.
    `restart` stops the gRPC server and serves the same games again on the same port (a lost connection)."""

    def __init__(self, seed: int = 7) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="engine", daemon=True)
        self.seeds = SeededRandom(seed)
        self.games: Games | None = None
        self.service: EngineService | None = None
        self.server: grpc.aio.Server | None = None
        self.channel: grpc.aio.Channel | None = None
        self.stub: Any = None
        self.port = 0
        self.spawned: list[Future[Any]] = []
        self.others: list[grpc.aio.Server] = []
        self.counted = CallsByToken()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> EngineThread:
        self.thread.start()
        self.call(self._start)
        return self

    def __exit__(self, *exc: object) -> None:
        for future in self.spawned:
            future.cancel()
        self.call(self._stop)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()

    def call(self, work: Callable[[], Awaitable[T]], timeout: float = 60) -> T:
        """Run ``work()`` (a coroutine function, or a gRPC call made on the engine's loop) there and wait."""

        async def run() -> T:
            return await work()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def spawn(self, work: Coroutine[Any, Any, T]) -> Future[T]:
        future = asyncio.run_coroutine_threadsafe(work, self.loop)
        self.spawned.append(future)
        return future

    async def _serve(self, port: int = 0) -> None:
        assert self.service is not None
        service = self.service
        # as `build_server` builds it, with the calls counted by token in front
        server = grpc.aio.server(
            interceptors=[self.counted, CallMetrics(), Edge(service.policy)], options=SERVER_OPTIONS
        )
        service.add_to(server)
        self.port = server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        self.server = server

    async def _start(self) -> None:
        # as production builds it: the games follow the store's feed
        self.games, self.service = await build(
            MemoryEventStore(), TRUST, seeds=lambda game_id, version: self.seeds.next64()
        )
        await self._serve()
        self.channel = grpc.aio.insecure_channel(self.address)
        self.stub = engine_pb2_grpc.EngineServiceStub(self.channel)

    def serve(self, add: Callable[[Any, grpc.aio.Server], None], make: Callable[[], Any]) -> tuple[str, Any]:
        """Serve another servicer (``make()``, built on the engine's loop) on a free port: (address, servicer)."""

        async def run() -> tuple[str, Any]:
            servicer = make()
            server = build_server(getattr(servicer, "policy", None))
            add(servicer, server)
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
            self.others.append(server)
            return f"127.0.0.1:{port}", servicer

        return self.call(run)

    async def _stop(self) -> None:
        for server in self.others:
            await server.stop(None)
        if self.channel is not None:
            await self.channel.close()
        if self.server is not None:
            await self.server.stop(None)

    def restart(self, down_seconds: float = 1.0) -> None:
        """Drop every connection (the server stops) and serve again on the same port after ``down_seconds``."""

        async def bounce() -> None:
            assert self.server is not None
            await self.server.stop(None)
            await asyncio.sleep(down_seconds)
            assert self.games is not None  # a new engine process over the same store: a fresh service
            self.service = EngineService(self.games, TRUST, seeds=lambda game_id, version: self.seeds.next64())
            await self._serve(self.port)

        self.call(bounce)

    def run_timers(self, every: float = 0.2) -> Future[None]:
        """Expire running turns every ``every`` seconds, as the engine's timers do (`paiju.engine.timers`)."""

        async def scan() -> None:
            assert self.games is not None
            while True:
                await expire_turns(self.games, datetime.now(UTC))
                await asyncio.sleep(every)

        return self.spawn(scan())

    def create(self, game_id: str, game: str = "zlj", deals: int = 1, turn_seconds: int = 0) -> int:
        """Create a game with the players whose tokens `token` mints for each seat (砸六家: ``deals`` deals), with a
        turn timer of ``turn_seconds`` (0: none; `run_timers` expires the turns)."""
        seats = 6 if game == "zlj" else 4
        request = engine_pb2.CreateGameRequest(game_id=game_id)
        if game == "zlj":
            request.game = engine_pb2.GAME_ZLJ
            request.zlj_options.CopyFrom(ZLJ_ONE_DEAL)
            request.zlj_options.deals = deals
            request.zlj_options.turn_seconds = turn_seconds
        else:
            request.game = engine_pb2.GAME_TRACTOR
            request.tractor_options.CopyFrom(tractor_pb2.TractorOptions(turn_seconds=turn_seconds))
        for seat in range(seats):
            request.seats.add(seat=seat, player_id=player_id(seat))
        service = token_metadata(role=Role.SERVICE, subject=SERVICE)
        reply = self.call(lambda: self.stub.CreateGame(request, metadata=service))
        return int(reply.version)

    def view(self, game_id: str, tok: str) -> Any:
        """The game's view for ``tok``, the test's own look (`PEEK`: not counted as ``tok``'s call)."""
        return self.call(
            lambda: self.stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=(*auth(tok), PEEK))
        )

    def legal(self, game_id: str, tok: str) -> list[Any]:
        """``tok``'s legal actions, the test's own look (`PEEK`: not counted as ``tok``'s call)."""
        reply = self.call(
            lambda: self.stub.GetLegalActions(
                engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=(*auth(tok), PEEK)
            )
        )
        return list(reply.actions)

    def calls(self, tok: str) -> Counter[str]:
        """The calls made with ``tok`` so far, by method (the test's own looks aside)."""

        async def counted() -> Counter[str]:
            return Counter(self.counted.calls[tok])

        return self.call(counted)


def only_acts_and_watches(calls: Counter[str]) -> None:
    """A client that played from its Watch stream: it called nothing but Watch and Act (no GetView, no
    GetLegalActions, not even to start), and each Watch it opened is far fewer than its moves."""
    print(f"the client's calls: {dict(calls)}")
    assert set(calls) <= {"Watch", "Act"}, f"the client asked for more than its stream and its moves: {dict(calls)}"
    assert calls["Watch"] >= 1


def choose(actions: list[Any], rng: random.Random) -> Any:
    """A bot's choice over listed actions: mostly a play of the most cards (a shorter deal), else any."""
    if rng.random() < 0.75:
        sizes = [len(a.zlj.play.cards) if a.zlj.WhichOneof("command") == "play" else 0 for a in actions]
        actions = [a for a, n in zip(actions, sizes, strict=True) if n == max(sizes)]
    return actions[rng.randrange(len(actions))]


async def zlj_bots(
    stub: Any,
    game_id: str,
    seats: set[int] | dict[int, str],
    seed: int,
    *,
    pause: float = 0.0,
    until: Callable[[Any], bool] = lambda view: False,
) -> int:
    """Play the ``seats`` of a 砸六家 game with random legal actions until the match ends (or the public view
    satisfies ``until``); the acts made. ``seats`` maps each seat to its player id (a set: the ids `token`
    gives). Connection losses (an engine restart) are waited out."""
    rng = random.Random(seed)
    subjects = seats if isinstance(seats, dict) else {s: player_id(s) for s in seats}
    players = {s: token_metadata(role=Role.PLAYER, subject=who, game=game_id, seat=s) for s, who in subjects.items()}
    # whose turn it is, from an analyst's view: a spectator's may be moves behind (a delayed table, D-SPEC-2)
    analyst = token_metadata(role=Role.ANALYST, subject="analyst")
    acts = 0
    while True:
        try:
            public = await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=analyst)
            if public.zlj.phase == zlj_pb2.ZLJ_PHASE_ENDED or until(public.zlj):
                return acts
            seat = public.zlj.turn if public.zlj.HasField("turn") else None
            if seat not in subjects:
                await asyncio.sleep(0.02)
                continue
            assert seat is not None
            legal = await stub.GetLegalActions(
                engine_pb2.GetLegalActionsRequest(game_id=game_id, min_version=public.version), metadata=players[seat]
            )
            if not legal.actions:
                await asyncio.sleep(0.02)
                continue
            if pause:
                await asyncio.sleep(pause)
            choice = choose(list(legal.actions), rng)
            await stub.Act(
                engine_pb2.ActRequest(
                    game_id=game_id, command_id=uuid.uuid4().hex, expected_version=legal.version, zlj=choice.zlj
                ),
                metadata=players[seat],
            )
            acts += 1
        except grpc.aio.AioRpcError as e:
            if e.code() not in WAITED_OUT:
                raise
            await asyncio.sleep(0.1)


if TYPE_CHECKING:
    _Terminal = fdpexpect.fdspawn[str]
else:
    _Terminal = fdpexpect.fdspawn


WAITED_OUT = RETRYABLE | {grpc.StatusCode.ABORTED}
"""What the helper bots wait out and try again, as the SDK does (`paiju.sdk.refusals.RETRYABLE`): an engine restarting
(UNAVAILABLE, and CANCELLED for a call in flight when it stopped), and a move another seat made first (ABORTED)."""


PLAIN_TERMINAL = {"NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
"""The client's environment in the tests: a UTF-8 terminal (cards with suit symbols) without colour (NO_COLOR), so
that what it prints does not depend on the machine's locale and holds no escape codes."""


def shown(card: str) -> str:
    """A card as the client shows it on a UTF-8 terminal: ``7S`` -> ``7♠`` (jokers as they are)."""
    return card if card in ("SJ", "BJ") else card[:-1] + SYMBOLS[card[-1]]


class ClientTerminal(_Terminal):
    """The terminal client (``python -m paiju.terminal.client ...``) on a pseudo-terminal, driven with pexpect.
    ``env`` is added to the client's environment (default `PLAIN_TERMINAL`).

    Started without forking this process (subprocess uses vfork here, which runs no fork handlers): the test
    process runs gRPC threads, and a plain fork of it (pexpect.spawn) can break the child before its exec."""

    def __init__(self, argv: tuple[str, ...], timeout: float, env: dict[str, str] | None = None) -> None:
        controller, terminal = os.openpty()
        environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "paiju.terminal.client", *argv],
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            start_new_session=True,
            close_fds=True,
            env={**environ, **(PLAIN_TERMINAL if env is None else env)},
        )
        os.close(terminal)
        super().__init__(controller, timeout=timeout, encoding="utf-8")

    def sendeof(self) -> None:
        """Ctrl-D: end of input on an empty line."""
        self.send("\x04")

    def exit_code(self, timeout: float = 10) -> int:
        return self.process.wait(timeout)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        if not self.closed:
            super().close()


def spawn_client(*argv: str, timeout: float = 30, env: dict[str, str] | None = None) -> ClientTerminal:
    """The terminal client with these arguments, in a pseudo-terminal (``env``: see `ClientTerminal`)."""
    return ClientTerminal(argv, timeout, env)


def screen(child: ClientTerminal) -> str:
    """What the client printed before the last match."""
    return child.before if isinstance(child.before, str) else ""


def tractor_movers(view: TractorView) -> list[int]:
    """The seats that may act now, from the public view (several while bids are concealed)."""
    if view.phase in (TractorPhase.PLAY, TractorPhase.CUT):
        return [] if view.turn is None else [view.turn]
    if view.phase is TractorPhase.BID:
        return [s for s in range(4) if s not in view.acted]
    if view.phase is TractorPhase.COUNTER and view.bid is not None:
        return [s for s in range(4) if s % 2 != view.bid.seat % 2 and s not in view.acted]
    return []


async def tractor_bots(stub: Any, game_id: str, seats: set[int], seed: int) -> int:
    """Play the ``seats`` of a 拖拉机 game with random legal actions (bids now and then, mostly the largest
    leads); a service token redeals a void first deal. Runs until the game ends or it is cancelled."""
    rng = random.Random(seed)
    players = {s: token_metadata(role=Role.PLAYER, subject=player_id(s), game=game_id, seat=s) for s in seats}
    spectator = token_metadata(role=Role.SPECTATOR, subject=SPECTATOR, game=game_id)
    service = token_metadata(role=Role.SERVICE, subject=SERVICE)
    acts = 0
    while True:
        try:
            public = await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=spectator)
            view = TRACTOR.decode(public.tractor, TractorView)
            if view.phase is TractorPhase.ENDED:
                return acts
            if view.phase is TractorPhase.FLIP:
                redeal = cast(Any, TRACTOR_COMMANDS.encode(TractorRedeal(0)))
                await stub.Act(
                    engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, tractor=redeal),
                    metadata=service,
                )
                continue
            movers = [s for s in tractor_movers(view) if s in seats]
            if not movers:
                await asyncio.sleep(0.02)
                continue
            seat = movers[rng.randrange(len(movers))]
            legal = await stub.GetLegalActions(
                engine_pb2.GetLegalActionsRequest(game_id=game_id, min_version=public.version), metadata=players[seat]
            )
            actions = [TRACTOR_COMMANDS.decode(a.tractor) for a in legal.actions]
            if not actions:
                await asyncio.sleep(0.02)
                continue
            if isinstance(actions[0], TractorPlay) and view.trick is None:
                largest = max(len(a.cards) for a in actions)
                actions = [a for a in actions if len(a.cards) == largest]
            choice = actions[rng.randrange(len(actions))]
            bidding = view.phase in (TractorPhase.BID, TractorPhase.COUNTER)
            request = engine_pb2.ActRequest(
                game_id=game_id, command_id=uuid.uuid4().hex, tractor=cast(Any, TRACTOR_COMMANDS.encode(choice))
            )
            if not bidding:
                request.expected_version = legal.version
            await stub.Act(request, metadata=players[seat])
            acts += 1
        except grpc.aio.AioRpcError as e:
            if e.code() not in WAITED_OUT:
                raise
            await asyncio.sleep(0.1)
