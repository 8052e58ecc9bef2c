"""Helpers of the bot runner tests: an in-process engine (restartable on its port, its clock fixed at `NOW`), games
seated with bot players, leases with player tokens for that clock, and reading who decided what from a game's
log.

Import with ``from .harness import ...`` (sibling module under pytest's importlib mode)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import grpc

from paiju.botrunner.leases import SeatLease
from paiju.engine.bootstrap import build
from paiju.engine.games import Games
from paiju.engine.service import EngineService
from paiju.platform.channels import channel
from paiju.platform.serving import build_server
from paiju.platform.store import MemoryEventStore
from paiju.platform.tokens import Role
from paiju.v1 import engine_pb2, engine_pb2_grpc, tractor_pb2, zlj_pb2

from ..support.credentials import TRUST
from ..support.tokens import token, token_metadata

NOW = 2_000_000_000
"""The engine's clock (tokens expire against it; a 拖拉机 game starts at it)."""
ROUND_MINUTES = 90
ANNOUNCED_AT = NOW + (ROUND_MINUTES - 25) * 60
"""D-TR-9: 25 minutes before the end of a timed round the table plays two more deals."""


SERVICE = token_metadata(role=Role.SERVICE, subject="lobby", now=NOW)


def bot_player(game_id: str, seat: int) -> str:
    """The player id of the bot seated at ``seat`` of ``game_id``."""
    return f"bot-{game_id}-{seat}"


class Engine:
    """An `EngineService` in this process on a local port, over a `MemoryEventStore` whose feed keeps the games
    current; `restart` stops the gRPC server (cutting every call and stream) and serves again on the port."""

    def __init__(self, *, fair: bool = False, protocol: int = 1) -> None:
        self.fair = fair
        self.protocol = protocol
        """The fair-dealing protocol version of new fair games (2: commit, then reveal)."""
        """Whether new games are dealt from committed shuffles (`paiju.rules.fair`): a deal without a cut waits
        until every seat contributed (no contribution window elapses in a test)."""
        self.store = MemoryEventStore()
        self.games: Games
        self.service: EngineService
        self.port = 0
        self._server: grpc.aio.Server | None = None
        self._channel: grpc.aio.Channel | None = None
        self.stub: Any = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        # as production builds it: the games follow the store's feed
        self.games, self.service = await build(
            self.store,
            TRUST,
            now=lambda: NOW,
            seed_secret=b"bot-runner-tests-seeds-" * 2,
            contribution_seconds=3600.0 if self.fair else None,
            fair_protocol=self.protocol,
            first_deal_seconds=3600.0,
        )
        await self._serve()
        self._channel = channel(self.address)
        self.stub = engine_pb2_grpc.EngineServiceStub(self._channel)

    async def _serve(self) -> None:
        server = build_server(self.service.policy)
        self.service.add_to(server)
        self.port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        await server.start()
        self._server = server

    async def restart(self, down: float = 0.3) -> None:
        assert self._server is not None
        await self._server.stop(None)
        await asyncio.sleep(down)
        await self._serve()

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
        if self._server is not None:
            await self._server.stop(None)
        await self.store.close()

    def runner_stub(self) -> tuple[Any, grpc.aio.Channel]:
        """A stub on a channel of its own (as a separate runner process has), with the runner's options."""
        runner = channel(self.address)
        return engine_pb2_grpc.EngineServiceStub(runner), runner

    async def state(self, game_id: str) -> Any:
        return (await self.games.load(game_id)).state

    async def log(self, game_id: str) -> tuple[engine_pb2.Envelope, ...]:
        return (await self.games.history(game_id)).envelopes

    async def ended(self, game_id: str) -> bool:
        return bool((await self.state(game_id)).phase.value == "ended")


@asynccontextmanager
async def engine(*, fair: bool = False, protocol: int = 1) -> AsyncIterator[Engine]:
    e = Engine(fair=fair, protocol=protocol)
    await e.start()
    try:
        yield e
    finally:
        await e.close()


def seated(request: engine_pb2.CreateGameRequest, seats: int) -> engine_pb2.CreateGameRequest:
    for seat in range(seats):
        request.seats.add(seat=seat, player_id=bot_player(request.game_id, seat))
    return request


async def create_zlj(e: Engine, game_id: str, deals: int = 1) -> None:
    await e.stub.CreateGame(
        seated(
            engine_pb2.CreateGameRequest(
                game_id=game_id,
                game=engine_pb2.GAME_ZLJ,
                zlj_options=zlj_pb2.ZljOptions(
                    deals=deals,
                    reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
                    resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
                ),
            ),
            6,
        ),
        metadata=SERVICE,
    )


async def create_tractor(e: Engine, game_id: str, *, timed: bool = True) -> None:
    """A 拖拉机 game; ``timed``: a 90-minute round whose "two more deals" are announced at once (D-TR-9), so
    the game ends after two deals."""
    options = tractor_pb2.TractorOptions(round_minutes=ROUND_MINUTES if timed else 0)
    await e.stub.CreateGame(
        seated(engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_TRACTOR, tractor_options=options), 4),
        metadata=SERVICE,
    )
    if timed:
        tick = tractor_pb2.TractorCommand(clock_tick=tractor_pb2.TractorClockTick(at=ANNOUNCED_AT))
        await e.stub.Act(
            engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, tractor=tick), metadata=SERVICE
        )


async def redeal_void_deals(e: Engine, game_id: str) -> None:
    """The table's part of a 拖拉机 game no seat plays: a void first deal is dealt again (D-TR-6.6), by the
    service (the engine draws the seed). Runs until the game ends."""
    while not await e.ended(game_id):
        state = await e.state(game_id)
        if state.phase.value == "flip" and not state.fair:  # a fair game's seats contribute, and the engine deals
            redeal = tractor_pb2.TractorCommand(redeal=tractor_pb2.TractorRedeal(seed=0))
            await e.stub.Act(
                engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, tractor=redeal), metadata=SERVICE
            )
        await asyncio.sleep(0.05)


def lease(game_id: str, kind: str, seat: int, *, player: str | None = None, expires_in: float = 3600) -> SeatLease:
    """A lease of ``seat`` with a player token for its bot player (or ``player``)."""
    subject = player or bot_player(game_id, seat)
    return SeatLease(
        table_id=f"table-{game_id}",
        game_id=game_id,
        game=kind,
        seat=seat,
        token=token(role=Role.PLAYER, subject=subject, game=game_id, seat=seat, now=NOW),
        expires_at=time.time() + expires_in,
    )


def leases(game_id: str, kind: str, seats: Iterable[int]) -> list[SeatLease]:
    return [lease(game_id, kind, s) for s in seats]


def decisions(envelopes: Iterable[engine_pb2.Envelope]) -> Counter[str]:
    """How many commands each actor made in a game's log (one command id per decision, whatever its events)."""
    seen: dict[str, str] = {}
    for envelope in envelopes:
        seen.setdefault(envelope.command_id, envelope.actor)
    return Counter(seen.values())


def run(body: Callable[[], Any]) -> None:
    asyncio.run(body())
