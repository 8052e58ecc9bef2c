"""The engine's other answers by the table's spectator policy, against a real nats-server: Replay of a running
delayed game stops at the spectators' version (a seat, an analyst and an admin get it all); a spectator that comes late
to a long game gets its backlog from the store and the delayed picture folded once from the log; a closed table's
running game refuses spectators (PERMISSION_DENIED, SPECTATORS_NOT_ALLOWED) in Watch, GetView, GetLegalActions and
Replay, and its whole record is public once it has ended; a game created without a policy (as every game before
policies) is public and live; a crowd of delayed watchers shares one encoding of each event and turn."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import grpc
import pytest

from paiju.platform.tokens import Role
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, spectators_pb2

from ..engine.harness import auth, refusal_of, token
from .harness import served_engine
from .test_engine_delay import Watcher, _create, _ended, _step

pytestmark = pytest.mark.integration


async def _replayed(stub: Any, game_id: str, md: Any) -> list[engine_pb2.Envelope]:
    call = stub.Replay(engine_pb2.ReplayRequest(game_id=game_id), metadata=md)
    return [reply.envelope async for reply in call]


async def _play(stub: Any, games: Any, game_id: str, moves: int, rng: SeededRandom) -> int:
    version = 0
    for _ in range(moves):
        moved = await _step(stub, game_id, rng)
        assert moved is not None and not _ended(games, game_id)
        version = moved
    return version


def test_replay_of_a_running_delayed_game_stops_at_the_spectators_version(request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with served_engine(request) as (stub, games, service):
            game_id = "replay-" + uuid.uuid4().hex[:8]
            await _create(stub, game_id, spectators_pb2.SpectatorPolicy(delay_moves=5))
            version = await _play(stub, games, game_id, 30, SeededRandom(8))
            spectator = await _replayed(stub, game_id, auth(token(Role.SPECTATOR, game_id)))
            assert [e.version for e in spectator] == list(range(1, version - 5 + 1))
            for role in (Role.ANALYST, Role.ADMIN):
                assert len(await _replayed(stub, game_id, auth(token(role)))) == version
            seat = await _replayed(stub, game_id, auth(token(Role.PLAYER, game_id, 0)))
            assert len(seat) == version, "a seat's player is not delayed"
            # a spectator coming late: its backlog from the store, the delayed picture folded from the log once
            watcher = Watcher(stub, games, game_id, Role.SPECTATOR)
            await watcher.reach(version - 5)
            assert [e.version for e in watcher.envelopes] == list(range(1, version - 5 + 1))
            assert watcher.turns[-1].version == version - 5
            assert service.spectating.folded == 1, "the delayed picture folded from the log once, then shared"
            await watcher.close()

    asyncio.run(body())


def test_a_closed_table_refuses_spectators_while_its_game_runs(request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with served_engine(request) as (stub, games, _):
            game_id = "closed-" + uuid.uuid4().hex[:8]
            await _create(stub, game_id, spectators_pb2.SpectatorPolicy(closed=True))
            rng = SeededRandom(3)
            await _play(stub, games, game_id, 3, rng)
            md = auth(token(Role.SPECTATOR, game_id))
            refused = (grpc.StatusCode.PERMISSION_DENIED, "SPECTATORS_NOT_ALLOWED")
            assert await refusal_of(stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=md)) == refused
            assert (
                await refusal_of(stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=md))
                == refused
            )
            assert await refusal_of(_replayed(stub, game_id, md)) == refused
            assert await refusal_of(_watched(stub, game_id, md)) == refused
            # a seat's player and an analyst are not spectators
            player = auth(token(Role.PLAYER, game_id, 0))
            assert (await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=player)).version > 0
            assert await _replayed(stub, game_id, auth(token(Role.ANALYST)))
            while await _step(stub, game_id, rng) is not None:
                pass
            # once over, its whole record is public (docs/api.md, Replay)
            record = await _replayed(stub, game_id, md)
            final = games.repository.cached(game_id)
            assert final is not None and record and record[-1].version == final.version
            dealt = [e.zlj.hands_dealt for e in record if e.zlj.WhichOneof("event") == "hands_dealt"]
            assert dealt and all(all(hand.cards for hand in d.hands) for d in dealt), "every hand as dealt"
            watched = await _watched(stub, game_id, md)
            assert watched[-1].HasField("end") and watched[-1].end.reason == engine_pb2.WATCH_END_REASON_GAME_ENDED

    asyncio.run(body())


async def _watched(stub: Any, game_id: str, md: Any) -> list[engine_pb2.WatchResponse]:
    call = stub.Watch(engine_pb2.WatchRequest(game_id=game_id), metadata=md)
    replies = []
    async for reply in call:
        replies.append(reply)
        if reply.HasField("end"):
            break
    return replies


def test_a_game_without_a_policy_is_public_and_live(request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with served_engine(request) as (stub, games, _):
            game_id = "public-" + uuid.uuid4().hex[:8]
            await _create(stub, game_id, None)
            version = await _play(stub, games, game_id, 6, SeededRandom(4))
            watcher = Watcher(stub, games, game_id, Role.SPECTATOR)
            await watcher.reach(version)
            assert watcher.envelopes[-1].version == version
            assert not watcher.envelopes[0].HasField("spectators"), "nothing stored for a game without a policy"
            md = auth(token(Role.SPECTATOR, game_id))
            assert (await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=md)).version == version
            assert len(await _replayed(stub, game_id, md)) == version
            await watcher.close()

    asyncio.run(body())


def test_a_crowd_of_delayed_watchers_shares_each_encoding(request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with served_engine(request) as (stub, games, service):
            game_id = "crowd-" + uuid.uuid4().hex[:8]
            opening = await _create(stub, game_id, spectators_pb2.SpectatorPolicy(delay_moves=2))
            rng = SeededRandom(6)
            version = await _play(stub, games, game_id, 4, rng)
            crowd = [Watcher(stub, games, game_id, Role.SPECTATOR, from_version=version - 2) for _ in range(20)]
            for watcher in crowd:
                await watcher.reach(version - 2)
            spectating = service.spectating
            before = (spectating.encodings.made, spectating.folded)
            moved = await _step(stub, game_id, rng)
            assert moved is not None
            for watcher in crowd:
                await watcher.reach(max(opening, moved - 2))
            made = spectating.encodings.made - before[0]
            assert 0 < made <= 2 * (moved - version) + 1, f"{made} encodings for {len(crowd)} watchers"
            assert spectating.folded == before[1], "moved on from memory, not from the log"
            for watcher in crowd:
                await watcher.close()

    asyncio.run(body())
