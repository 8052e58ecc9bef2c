"""An in-process Paiju for lobby tests: the engine and the lobby built by their bootstraps (the engine's match
starter, the lobby's read model, results and round tables consumers), on real NATS and PostgreSQL, each test on
streams and a database of its own."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc

from paiju.engine.bootstrap import CHECKPOINTS, run_timers
from paiju.engine.bootstrap import build as build_engine
from paiju.engine.games import Games
from paiju.engine.matches import match_starter
from paiju.engine.service import EngineService
from paiju.lobby.bootstrap import build as build_lobby
from paiju.lobby.readmodel import TableReadModel
from paiju.lobby.service import login_name
from paiju.platform.consumer import KeyValueTracking, in_background
from paiju.platform.limits import LoginFailures, RateLimits
from paiju.platform.postgres import connect
from paiju.platform.serving import build_server
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Identity, Revocations, Role
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_pb2, lobby_pb2_grpc

from ..engine.harness import auth as bearer
from ..support.credentials import LOBBY, TRUST, mint_token
from ..support.waiting import SECONDS, wait_until

PASSWORD = "correct horse battery"
SEED_SECRET = b"lobby-test-seeds-" * 3


def service_token() -> tuple[tuple[str, str], ...]:
    """A bot runner's token (what a runner leases bot seats with)."""
    return bearer(mint_token(Identity("test-runner", Role.BOT_RUNNER, expires=int(time.time()) + 300)))


@dataclass
class Stack:
    lobby: Any
    engine: Any
    games: Games
    lobby_store: JetStreamEventStore
    games_store: JetStreamEventStore
    service: EngineService
    stop: asyncio.Event
    engine_address: str
    listing: TableReadModel
    lobby_address: str = ""
    tournaments_store: Any = None
    extra: list[Any] = field(default_factory=list)
    pool: Any = None
    grace: float = 0.3
    lobby_service: Any = None
    lobby_v6: Any = None
    """The lobby reached from another client address (``::1``)."""

    async def player(self, name: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """Register ``name``: its player id and session metadata."""
        session = (await self.lobby.Register(lobby_pb2.RegisterRequest(name=name, password=PASSWORD))).session
        return session.player_id, bearer(session.token)

    async def table(self, owner: Any, game: engine_pb2.Game.ValueType = engine_pb2.GAME_ZLJ, **options: Any) -> str:
        request = lobby_pb2.CreateTableRequest(name="test table", game=game)
        if game == engine_pb2.GAME_ZLJ:
            from paiju.v1 import zlj_pb2

            request.zlj_options.CopyFrom(
                zlj_pb2.ZljOptions(
                    deals=options.get("deals", 1),
                    reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
                    resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
                )
            )
        return str((await self.lobby.CreateTable(request, metadata=owner)).table.table_id)

    async def game_exists(self, game_id: str) -> Any:
        """The engine's game once the match starter has created it."""
        return await wait_until(
            lambda: self.games.refresh(game_id), f"the engine to create {game_id}", ignoring=(Exception,)
        )

    async def listed(self, table_id: str, predicate: Any, seconds: float = SECONDS) -> lobby_pb2.Table:
        """The table as the read model lists it, once ``predicate`` holds."""
        rows: dict[str, lobby_pb2.Table] = {}

        async def shown() -> lobby_pb2.Table | None:
            await self.listing.catch_up()
            rows.update((t.table_id, t) for t in await self.listing.list_tables(None, None, 200))
            return rows[table_id] if table_id in rows and predicate(rows[table_id]) else None

        return await wait_until(
            shown,
            f"the read model to list {table_id} as expected",
            seconds=seconds,
            every=0.1,
            explain=lambda: f"it lists: {rows.get(table_id)}",
        )


async def play_leased_bots(stack: Stack, game_id: str, rng: SeededRandom, *, until_phase: str = "ended") -> int:
    """Lease every bot seat from the lobby (as a bot runner does) and play them with random legal actions
    until the game reaches ``until_phase`` (or ends), or a person is to act. Returns the acts made."""

    async def leased() -> dict[int, tuple[tuple[str, str], ...]]:
        answer = await stack.lobby.LeaseBotSeats(
            lobby_pb2.LeaseBotSeatsRequest(runner_id="test-runner"), metadata=service_token()
        )
        return {s.seat: bearer(s.token) for s in answer.seats if s.game_id == game_id}

    # the read model names the playing tables with bots a moment after the start
    tokens = await wait_until(leased, f"the bot seats of {game_id} leased")
    acts = 0
    for _ in range(5000):
        game = await stack.games.refresh(game_id)
        phase = game.state.phase.value
        if phase in ("ended", until_phase):
            return acts
        movers = [s for s in tokens if game.state.turn == s] if game.rules.name == "zlj" else list(tokens)
        progressed = False
        for seat in movers:
            legal = await stack.engine.GetLegalActions(
                engine_pb2.GetLegalActionsRequest(game_id=game_id, min_version=game.version), metadata=tokens[seat]
            )
            if not legal.actions:
                continue
            choice = legal.actions[rng.below(len(legal.actions))]
            request = engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex)
            getattr(request, game.rules.name).CopyFrom(getattr(choice, game.rules.name))
            await stack.engine.Act(request, metadata=tokens[seat])
            acts += 1
            progressed = True
            break
        if not progressed:
            return acts  # a person is to act
    raise AssertionError(f"{game_id} did not reach {until_phase}")


@asynccontextmanager
async def stack(
    nats_url: str,
    database_dsn: str,
    *,
    grace: float = 0.3,
    limits: str | None = None,
    attendance: Any = None,
    contribution_seconds: float = 0.0,
    login_failures: str | None = None,
    **options: Any,
) -> AsyncIterator[Stack]:
    """The engine and the lobby in this process over real NATS and PostgreSQL (``limits``: the lobby's rate limits
    as `paiju.platform.limits` rules; none by default; ``attendance``: where the lobby keeps who watches which
    table, given the lobby's store — by default its memory; ``contribution_seconds``: how long a first deal waits for
    the seats' contributions — by default not at all)."""
    suffix = uuid.uuid4().hex[:10]
    games_store = await JetStreamEventStore.connect(nats_url, stream=f"G{suffix.upper()}", prefix=f"g{suffix}.game")
    lobby_store = await JetStreamEventStore.connect(nats_url, stream=f"L{suffix.upper()}", prefix=f"l{suffix}.lobby")
    tournaments_store = await JetStreamEventStore.connect(
        nats_url, stream=f"T{suffix.upper()}", prefix=f"t{suffix}.tour"
    )
    # as every engine runs, dealing fairly
    revocations = Revocations(lobby_store)  # as every engine runs: the lobby's revoked sessions refused
    await revocations.follow()
    games, service = await build_engine(
        games_store,
        TRUST,
        seed_secret=SEED_SECRET,
        contribution_seconds=contribution_seconds,
        revocations=revocations,
    )
    engine_server = build_server(service.policy)
    service.add_to(engine_server)
    engine_port = engine_server.add_insecure_port("127.0.0.1:0")
    await engine_server.start()
    engine_address = f"127.0.0.1:{engine_port}"
    stop = asyncio.Event()
    checkpoints = await KeyValueTracking.open(lobby_store.client, CHECKPOINTS, scope=lobby_store.stream)
    starter = in_background(match_starter(lobby_store, checkpoints, service.creation), stop)
    timers = asyncio.create_task(run_timers(games, SEED_SECRET, 0.2, stop))

    pool = await connect(database_dsn)
    engine_channel = grpc.aio.insecure_channel(engine_address)
    engine_stub: Any = engine_pb2_grpc.EngineServiceStub(engine_channel)
    built = await build_lobby(  # as every lobby runs: its read model, results and round tables consumers included
        pool,
        lobby_store,
        games_store,
        tournaments_store,
        lambda: engine_stub,
        signer=LOBBY,
        trust=TRUST,
        grace_seconds=grace,
        limits=RateLimits(limits, name_of=login_name) if limits is not None else None,
        attendance=await attendance(lobby_store) if attendance is not None else None,
        login_failures=LoginFailures(login_failures) if login_failures is not None else None,
        **options,
    )
    lobby, listing = built.service, built.listing
    lobby_server = build_server(lobby.policy)
    lobby_pb2_grpc.add_LobbyServiceServicer_to_server(lobby, lobby_server)
    lobby_port = lobby_server.add_insecure_port("127.0.0.1:0")
    v6_port = lobby_server.add_insecure_port("[::1]:0")
    await lobby_server.start()
    workers = [in_background(consumer, stop) for consumer in built.consumers]
    workers.append(asyncio.create_task(built.expiry.run(stop)))
    lobby_channel = grpc.aio.insecure_channel(f"127.0.0.1:{lobby_port}")
    v6_channel = grpc.aio.insecure_channel(f"[::1]:{v6_port}")
    try:
        yield Stack(
            lobby=lobby_pb2_grpc.LobbyServiceStub(lobby_channel),
            engine=engine_stub,
            games=games,
            lobby_store=lobby_store,
            games_store=games_store,
            service=service,
            stop=stop,
            engine_address=engine_address,
            listing=listing,
            lobby_address=f"127.0.0.1:{lobby_port}",
            tournaments_store=tournaments_store,
            pool=pool,
            grace=grace,
            lobby_service=lobby,
            lobby_v6=lobby_pb2_grpc.LobbyServiceStub(v6_channel),
        )
    finally:
        stop.set()
        await lobby_channel.close()
        await v6_channel.close()
        await engine_channel.close()
        await lobby_server.stop(None)
        await lobby.close()
        await engine_server.stop(None)
        for task in (*workers, starter, timers):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, timeout=5)
        await pool.close()
        await tournaments_store.close()
        await lobby_store.close()
        await games_store.close()
