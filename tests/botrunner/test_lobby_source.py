"""The runner's seats from the lobby (`LobbySeatSource` over `LobbyService.LeaseBotSeats`): asked with a service
token and the runner's id, renewed before the leases run out, seats the lobby stops returning let go of (and
taken up again when leased again), and every seat given up when the lobby cannot renew its lease."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from paiju.botrunner.leases import LobbySeatSource, SeatLease
from paiju.botrunner.runner import BotRunner
from paiju.platform.tokens import Role
from paiju.v1 import engine_pb2, lobby_pb2

from ..support.credentials import BOTS
from ..support.fake_lobby import FakeLobby, serve_lobby
from ..support.waiting import wait_until
from .harness import NOW, bot_player, create_zlj, decisions, engine, run

pytestmark = pytest.mark.integration  # a lobby, an engine and a runner in the process


def test_the_runner_plays_the_seats_the_lobby_leases_and_renews_them() -> None:
    async def body() -> None:
        async with engine() as e:
            game_id = "zl"
            await create_zlj(e, game_id, deals=1)
            lobby = FakeLobby(lease_seconds=2, engine_now=NOW)
            for seat in range(6):
                lobby.lease(game_id, "zlj", seat, bot_player(game_id, seat))
            # a seat of a game this runner does not know is left alone
            lobby.extra.append(
                lobby_pb2.BotSeat(
                    table_id="t-x", game_id="x", game=engine_pb2.GAME_UNSPECIFIED, seat=0, token="-", lease_expires_at=1
                )
            )
            server, address = await serve_lobby(lobby)
            source, lobby_channel = LobbySeatSource.connect(address, "runner-7", BOTS)
            stub, channel = e.runner_stub()
            runner = BotRunner(source, stub, runner_id="runner-7", think=0.01)
            stop = asyncio.Event()
            task = asyncio.create_task(runner.run(stop))
            seat5 = (game_id, 5)
            await wait_until(lambda: seat5 in runner.stats and runner.stats[seat5].acts >= 1, "seat 5 to move")
            lobby.release(game_id, 5)
            await wait_until(lambda: runner.done.get(seat5) == "released", "the runner to let go of seat 5")
            await asyncio.sleep(0.3)
            moves = decisions(await e.log(game_id))[bot_player(game_id, 5)]
            lobby.lease(game_id, "zlj", 5, bot_player(game_id, 5))
            await wait_until(lambda: e.ended(game_id), "the end of the match", seconds=60)
            await wait_until(lambda: not runner.playing, "the runner to see the end")
            stop.set()
            await task
            await channel.close()
            await lobby_channel.close()
            await server.stop(None)
            # seat 5 was taken up again (a released seat is forgotten, so its count of starts began anew)
            assert runner.seats_played == 7 and runner.done == {(game_id, s): "ended" for s in range(6)}
            assert decisions(await e.log(game_id))[bot_player(game_id, 5)] > moves, "seat 5 played again"
            assert ("x", 0) not in runner.starts
            assert len(lobby.lease_calls) >= 4, "a 2-second lease is renewed about every second"
            for runner_id, max_seats, who in lobby.lease_calls:
                assert (runner_id, max_seats, who.role, who.subject) == ("runner-7", 0, Role.BOT_RUNNER, "runner-7")

    run(body)


class CountedSource:
    """A seat source that counts the calls that failed (how often the runner tried to renew and could not)."""

    def __init__(self, source: LobbySeatSource) -> None:
        self.source = source
        self.wait_seconds = source.wait_seconds
        self.failed = 0

    async def __call__(self) -> Sequence[SeatLease]:
        try:
            return await self.source()
        except Exception:
            self.failed += 1
            raise


def test_seats_whose_lease_the_lobby_cannot_renew_are_given_up_when_it_expires() -> None:
    """The lobby goes away: the runner plays on while the leases run, however often it fails to renew them, and
    gives every seat up when they have expired. The runner reads the time from a clock the test holds still, then
    moves past the end of the leases: what is asserted is the order (kept before, given up after), not seconds."""

    async def body() -> None:
        async with engine() as e:
            game_id = "zx"
            await create_zlj(e, game_id, deals=1)
            lobby = FakeLobby(lease_seconds=2, engine_now=NOW)
            for seat in range(6):
                lobby.lease(game_id, "zlj", seat, bot_player(game_id, seat))
            server, address = await serve_lobby(lobby)
            connected, lobby_channel = LobbySeatSource.connect(address, "runner-8", BOTS, timeout=0.5)
            source = CountedSource(connected)
            stub, channel = e.runner_stub()
            clock = [time.time()]  # every lease the lobby gives ends after this (it runs 2 s from the call)
            runner = BotRunner(source, stub, runner_id="runner-8", think=0.05, retry_every=0.2, now=lambda: clock[0])
            stop = asyncio.Event()
            task = asyncio.create_task(runner.run(stop))
            await wait_until(lambda: len(runner.playing) == 6, "six seats played")
            await server.stop(None)  # the lobby goes away: no renewals
            await wait_until(lambda: source.failed >= 3, "three renewals the lobby did not answer")
            assert len(runner.playing) == 6 and not runner.done, "the seats are played while their leases run"
            clock[0] = time.time() + lobby.lease_seconds + 1  # past the end of every lease the lobby gave
            await wait_until(lambda: not runner.playing, "the leases to run out")
            assert runner.done == {(game_id, s): "expired" for s in range(6)}
            assert not await e.ended(game_id)
            stop.set()
            await task
            await channel.close()
            await lobby_channel.close()

    run(body)
