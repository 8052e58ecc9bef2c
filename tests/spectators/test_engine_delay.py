"""Spectators by the table's policy in the engine (docs/rules/spectators.md), against a real nats-server: a delayed
spectator never sees a move before its delay — in Watch from version 0 and resumed with ``from_version``, in GetView
and GetLegalActions, in Replay of the running game — and gets the rest once the game ends; a closed table's running
game refuses spectators with SPECTATORS_NOT_ALLOWED; seats, analysts and admins are not delayed; a game created
without a policy is public and live; what a delayed spectator is sent is exactly what a live spectator was sent for
those versions (hidden information unchanged); a crowd of delayed watchers shares one encoding of each event."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from paiju.engine.games import Games
from paiju.platform.tokens import Role
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, spectators_pb2, zlj_pb2

from ..engine.harness import auth, choose_zlj, engine, seated, token

pytestmark = pytest.mark.integration

DELAY = 3
SPECTATOR = Role.SPECTATOR
ANALYST = Role.ANALYST


def _request(game_id: str, policy: spectators_pb2.SpectatorPolicy | None) -> engine_pb2.CreateGameRequest:
    request = engine_pb2.CreateGameRequest(
        game_id=game_id,
        game=engine_pb2.GAME_ZLJ,
        zlj_options=zlj_pb2.ZljOptions(deals=1, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL),
    )
    if policy is not None:
        request.spectators.CopyFrom(policy)
    return seated(request, 6)


async def _create(stub: Any, game_id: str, policy: spectators_pb2.SpectatorPolicy | None) -> int:
    created = await stub.CreateGame(_request(game_id, policy), metadata=auth(token(Role.SERVICE)))
    return int(created.version)


async def _step(stub: Any, game_id: str, rng: SeededRandom) -> int | None:
    """One move of the seat whose turn it is (its turn read with an analyst's token, which no policy delays); the
    game's version after it, or ``None`` once the game has ended."""
    analyst = auth(token(ANALYST))
    public = await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=analyst)
    if public.zlj.phase == zlj_pb2.ZLJ_PHASE_ENDED:
        return None
    seat = public.zlj.turn
    player = auth(token(Role.PLAYER, game_id, seat))
    legal = await stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=player)
    choice = choose_zlj(list(legal.actions), rng)
    acted = await stub.Act(
        engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, zlj=choice.zlj), metadata=player
    )
    return int(acted.version)


class Watcher:
    """A spectator's Watch stream read in the background: every envelope's version in order, and at its arrival the
    game's version in the engine (an in-process engine: `Games` holds it), so that an event sent early is caught."""

    def __init__(
        self, stub: Any, games: Games, game_id: str, role: Role, from_version: int = 0, *, batched: bool = False
    ) -> None:
        self.stub, self.games, self.game_id = stub, games, game_id
        self.md = auth(token(role, game_id) if role is SPECTATOR else token(role))
        self.envelopes: list[engine_pb2.Envelope] = []
        self.turns: list[engine_pb2.Turn] = []
        self.arrivals: list[tuple[int, int]] = []  # (event version, the game's version when it arrived)
        self.end: engine_pb2.WatchEnd | None = None
        self.changed = asyncio.Event()
        self.from_version = from_version
        self.messages = 0
        self.batched = batched
        request = engine_pb2.WatchRequest(game_id=game_id, from_version=from_version, views=True, batched=batched)
        self.call = stub.Watch(request, metadata=self.md)
        self.task = asyncio.create_task(self._read())

    @property
    def version(self) -> int:
        """The last version the stream has sent (its ``from_version`` before it sends one)."""
        return self.envelopes[-1].version if self.envelopes else self.from_version

    async def _read(self) -> None:
        async for reply in self.call:
            self.messages += 1
            assert not (reply.HasField("envelope") if self.batched else reply.envelopes), "the form asked for"
            for envelope in reply.envelopes if self.batched else [reply.envelope] if reply.HasField("envelope") else []:
                cached = self.games.repository.cached(self.game_id)
                now = cached.version if cached is not None else 0
                self.envelopes.append(envelope)
                self.arrivals.append((envelope.version, now))
            if reply.HasField("turn"):
                self.turns.append(reply.turn)
            if reply.HasField("end"):
                self.end = reply.end
            self.changed.set()

    async def reach(self, version: int) -> None:
        """Wait until the stream has sent ``version`` (and its turn)."""
        async with asyncio.timeout(20):
            while not (self.version >= version and self.turns and self.turns[-1].version >= version):
                self.changed.clear()
                await self.changed.wait()

    async def close(self) -> None:
        self.call.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def _ended(games: Games, game_id: str) -> bool:
    cached = games.repository.cached(game_id)
    return cached is not None and cached.state.phase.value == "ended"


def _expected(version: int, opening: int) -> int:
    return max(opening, version - DELAY)


def _policy(delay: int = DELAY, closed: bool = False) -> spectators_pb2.SpectatorPolicy:
    return spectators_pb2.SpectatorPolicy(delay_moves=delay, closed=closed)


def test_a_delayed_spectator_never_sees_a_move_before_its_delay(request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with engine("jetstream", request) as (stub, games):
            game_id = "delay-" + uuid.uuid4().hex[:8]
            opening = await _create(stub, game_id, _policy())
            assert opening >= 1
            spectator = Watcher(stub, games, game_id, SPECTATOR)
            together = Watcher(stub, games, game_id, SPECTATOR, batched=True)  # one message per change
            live = Watcher(stub, games, game_id, ANALYST)  # an analyst is not delayed
            spectator_md = auth(token(SPECTATOR, game_id))
            await spectator.reach(opening)
            rng, version, resumed, resumed_from = SeededRandom(5), opening, None, 0
            while True:
                moved = await _step(stub, game_id, rng)
                if moved is None:
                    break
                version = moved
                await live.reach(version)
                if _ended(games, game_id):  # the record is public once the game is over: the delay ends
                    break
                await spectator.reach(_expected(version, opening))
                await together.reach(_expected(version, opening))
                assert spectator.version == _expected(version, opening), "never ahead of the delay"
                assert together.version == spectator.version
                assert spectator.turns[-1].version == spectator.version, "the turn and view of the delayed version"
                view = await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=spectator_md)
                assert view.version == _expected(version, opening)
                legal = await stub.GetLegalActions(
                    engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=spectator_md
                )
                assert legal.version == view.version and not legal.actions
                if resumed is None and version > opening + 12:
                    # a spectator that lost its stream watches again from where it was, and from the live version
                    behind = Watcher(stub, games, game_id, SPECTATOR, from_version=spectator.version - 2)
                    await behind.reach(spectator.version)
                    assert [e.version for e in behind.envelopes] == [spectator.version - 1, spectator.version]
                    resumed, resumed_from = Watcher(stub, games, game_id, SPECTATOR, from_version=version), version
                    await behind.close()
                if resumed is not None:
                    assert all(e.version <= _expected(version, opening) for e in resumed.envelopes)
            for arrived, at in [*spectator.arrivals, *together.arrivals]:
                if at < version:  # before the game ended: at least the delay behind
                    assert arrived <= _expected(at, opening), (arrived, at)
            async with asyncio.timeout(20):
                await spectator.task
                await together.task
            # batched, the same events in fewer messages: the creation's together, the rest together at the end
            assert [e.SerializeToString() for e in together.envelopes] == [
                e.SerializeToString() for e in spectator.envelopes
            ]
            assert together.messages < spectator.messages - DELAY
            assert spectator.end is not None and spectator.end.reason == engine_pb2.WATCH_END_REASON_GAME_ENDED
            assert [e.version for e in spectator.envelopes] == list(range(1, version + 1)), "every event, once"
            assert resumed is not None
            async with asyncio.timeout(20):
                await resumed.task
            assert resumed.envelopes[0].version == resumed_from + 1, "resumed after its from_version"
            # what a delayed spectator is sent is what a live spectator is sent: hidden information unchanged
            public = Watcher(stub, games, game_id, SPECTATOR)  # the game has ended: no delay any more
            async with asyncio.timeout(20):
                await public.task
            assert [e.SerializeToString() for e in public.envelopes] == [
                e.SerializeToString() for e in spectator.envelopes
            ]
            first = spectator.envelopes[0]
            assert first.spectators.delay_moves == DELAY, "the policy is stored on the game's first event"
            await live.close()

    asyncio.run(body())
