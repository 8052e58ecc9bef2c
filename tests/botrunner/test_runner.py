"""The bot runner against an in-process engine: it plays whole games through the public gRPC API, never makes
two moves for one decision (two runners on the same seats), lets go of a seat handed back to a person, and
resumes its watches after the engine restarts."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections import defaultdict
from typing import Any

import grpc
import pytest
from google.rpc import status_pb2
from structlog.testing import capture_logs

from paiju.botrunner.cli import load_agent
from paiju.botrunner.leases import SeatLease, StaticSeatSource
from paiju.botrunner.runner import BotRunner, SeatPlayer
from paiju.envs.agent import PolicyBot
from paiju.platform.tokens import Role
from paiju.rules.verify import verify
from paiju.sdk.games import GAMES
from paiju.v1 import engine_pb2, zlj_pb2

from ..support.tokens import token_metadata
from ..support.waiting import wait_until
from .harness import (
    NOW,
    SERVICE,
    Engine,
    bot_player,
    create_tractor,
    create_zlj,
    decisions,
    engine,
    lease,
    leases,
    redeal_void_deals,
    run,
)

pytestmark = pytest.mark.integration  # an engine and bot runners playing whole games in the process


def acts_by_player(runners: list[BotRunner], game_id: str) -> dict[str, int]:
    """Moves the engine applied for each bot player of ``game_id``, summed over ``runners``."""
    acts: dict[str, int] = defaultdict(int)
    for runner in runners:
        for (game, seat), stats in runner.stats.items():
            if game == game_id:
                acts[bot_player(game_id, seat)] += stats.acts
    return dict(acts)


def total(runners: list[BotRunner], field: str) -> int:
    return sum(getattr(s, field) for r in runners for s in r.stats.values())


async def play_out(e: Engine, runners: list[BotRunner], game_ids: list[str], timeout: float) -> None:
    """Run ``runners`` until every game of ``game_ids`` has ended and each runner has seen it; then stop them."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(r.run(stop)) for r in runners]
    try:

        async def over() -> bool:
            return all([await e.ended(g) for g in game_ids])

        await wait_until(over, f"the end of {game_ids}", seconds=timeout)
        await wait_until(lambda: not any(r.playing for r in runners), "the runners to see the ends")
    finally:
        stop.set()
        await asyncio.gather(*tasks)


def test_one_runner_plays_a_zlj_match_and_a_tractor_game_to_their_ends() -> None:
    """All six seats of a one-deal 砸六家 match (reverse tribute per player, resisting with both jokers) and the
    four seats of a timed 拖拉机 round that ends after two deals (D-TR-9), at once: every move through
    the turns of its Watch stream and Act with the seat's own token, decided by the heuristic bots from the view
    the turn carries."""

    async def body() -> None:
        async with engine() as e:
            await create_zlj(e, "z1", deals=1)
            await create_tractor(e, "t1", timed=True)
            redeals = asyncio.create_task(redeal_void_deals(e, "t1"))
            source = StaticSeatSource([*leases("z1", "zlj", range(6)), *leases("t1", "tractor", range(4))])
            stub, channel = e.runner_stub()
            runner = BotRunner(source, stub, runner_id="r1", think=0)
            await play_out(e, [runner], ["z1", "t1"], timeout=240)
            await redeals
            await channel.close()
            assert runner.done == {("z1", s): "ended" for s in range(6)} | {("t1", s): "ended" for s in range(4)}
            for game_id, seats in (("z1", 6), ("t1", 4)):
                made = decisions(await e.log(game_id))
                acts = acts_by_player([runner], game_id)
                assert acts == {bot_player(game_id, s): made[bot_player(game_id, s)] for s in range(seats)}
                assert all(n > 0 for n in acts.values())
            tractor = await e.state("t1")
            assert tractor.settlement is not None and tractor.deal >= 2
            assert total([runner], "fallbacks") == 0 and total([runner], "refused") == 0

    run(body)


def test_two_runners_on_the_same_seats_never_move_twice_for_one_decision() -> None:
    """Two runners lease overlapping seats (all of a two-deal 砸六家 match with its tribute; one runner also
    the 拖拉机 game's seats, the other half of them) and race for every decision. Each acts with the version it
    decided at, so the engine takes one move per decision and refuses the other as stale (ABORTED): the
    moves each bot player made, summed over both runners, are exactly its decisions in the game's log."""

    async def body() -> None:
        async with engine() as e:
            await create_zlj(e, "z2", deals=2)
            await create_tractor(e, "t2", timed=True)
            redeals = asyncio.create_task(redeal_void_deals(e, "t2"))
            first = StaticSeatSource([*leases("z2", "zlj", range(6)), *leases("t2", "tractor", range(4))])
            second = StaticSeatSource([*leases("z2", "zlj", range(6)), *leases("t2", "tractor", range(2))])
            stubs = [e.runner_stub(), e.runner_stub()]
            runners = [
                BotRunner(first, stubs[0][0], runner_id="a", think=0.002),
                BotRunner(second, stubs[1][0], runner_id="b", think=0.002),
            ]
            await play_out(e, runners, ["z2", "t2"], timeout=240)
            await redeals
            for _, channel in stubs:
                await channel.close()
            for game_id, seats in (("z2", 6), ("t2", 4)):
                made = decisions(await e.log(game_id))
                acts = acts_by_player(runners, game_id)
                assert acts == {bot_player(game_id, s): made[bot_player(game_id, s)] for s in range(seats)}
            # both runners are told of each turn at once and race for it: the loser is refused as stale
            assert total(runners, "aborted") > 0, "the runners raced for decisions"
            assert total(runners, "refused") == 0 and total(runners, "fallbacks") == 0
            zlj = await e.state("z2")
            assert len(zlj.results) == 2

    run(body)


def test_a_runner_lets_go_of_a_seat_handed_back_to_its_player() -> None:
    """A bot covers seat 3 for its absent player (SEAT_CHANGE_COVER); mid-deal the player takes the seat back
    (SEAT_CHANGE_RETURN): the engine refuses the bot's token, the runner drops the seat (and does not take it
    up again while its source keeps returning the same lease), and no move of the bot follows the return."""

    async def body() -> None:
        async with engine() as e:
            game_id = "z3"
            request = engine_pb2.CreateGameRequest(
                game_id=game_id, game=engine_pb2.GAME_ZLJ, zlj_options=zlj_pb2.ZljOptions(deals=1)
            )
            for seat in range(6):
                request.seats.add(seat=seat, player_id="person-3" if seat == 3 else bot_player(game_id, seat))
            await e.stub.CreateGame(request, metadata=SERVICE)
            cover = engine_pb2.AssignSeatsRequest(
                game_id=game_id, command_id="cover-3", change=engine_pb2.SEAT_CHANGE_COVER
            )
            cover.seats.add(seat=3, player_id=bot_player(game_id, 3))
            await e.stub.AssignSeats(cover, metadata=SERVICE)
            source = StaticSeatSource(leases(game_id, "zlj", range(6)))
            stub, channel = e.runner_stub()
            runner = BotRunner(source, stub, runner_id="r3", think=0.01, renew_every=0.1)
            stop = asyncio.Event()
            task = asyncio.create_task(runner.run(stop))

            async def moved(n: int) -> bool:
                return decisions(await e.log(game_id))[bot_player(game_id, 3)] >= n

            await wait_until(lambda: moved(3), "three moves of the covering bot")
            back = engine_pb2.AssignSeatsRequest(
                game_id=game_id, command_id="return-3", change=engine_pb2.SEAT_CHANGE_RETURN
            )
            back.seats.add(seat=3, player_id="person-3")
            returned_at = (await e.stub.AssignSeats(back, metadata=SERVICE)).version
            await wait_until(lambda: runner.done.get((game_id, 3)) == "lost", "the runner to drop seat 3")
            # the player plays seat 3 from now on (the first listed action), the bots the others
            person = token_metadata(role=Role.PLAYER, subject="person-3", game=game_id, seat=3, now=NOW)
            person_moves = 0
            while not await e.ended(game_id):
                legal = await e.stub.GetLegalActions(
                    engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=person
                )
                if legal.actions:
                    await e.stub.Act(
                        engine_pb2.ActRequest(
                            game_id=game_id,
                            command_id=uuid.uuid4().hex,
                            expected_version=legal.version,
                            zlj=legal.actions[0].zlj,
                        ),
                        metadata=person,
                    )
                    person_moves += 1
                await asyncio.sleep(0.01)
            await wait_until(lambda: not runner.playing, "the runner to see the end")
            assert source.calls > 3 and runner.starts[(game_id, 3)] == 1, "asked again, seat 3 not taken up again"
            stop.set()
            await task
            await channel.close()
            log = await e.log(game_id)
            assert not [x for x in log if x.actor == bot_player(game_id, 3) and x.version > returned_at]
            assert person_moves > 0 and decisions(log)["person-3"] == person_moves
            assert runner.stats[(game_id, 3)].acts == decisions(log)[bot_player(game_id, 3)]
            assert runner.done == {(game_id, s): "lost" if s == 3 else "ended" for s in range(6)}

    run(body)


def test_a_runner_resumes_its_watches_after_the_engine_restarts() -> None:
    """The engine's server stops mid-match (every Watch stream and call cut) and serves again: each seat's
    watch resumes from the last version it received — no event missed, none twice — and the match ends."""

    async def body() -> None:
        async with engine() as e:
            game_id = "z4"
            await create_zlj(e, game_id, deals=1)
            seen: dict[int, list[int]] = defaultdict(list)

            def observe(lease: SeatLease, envelope: engine_pb2.Envelope) -> None:
                seen[lease.seat].append(envelope.version)

            stub, channel = e.runner_stub()
            runner = BotRunner(
                StaticSeatSource(leases(game_id, "zlj", range(6))), stub, think=0.01, on_envelope=observe
            )
            stop = asyncio.Event()
            task = asyncio.create_task(runner.run(stop))

            async def at(version: int) -> bool:
                return len(await e.log(game_id)) >= version

            await wait_until(lambda: at(40), "the match under way")
            await e.restart()
            await wait_until(lambda: e.ended(game_id), "the end of the match", seconds=60)
            await wait_until(lambda: not runner.playing, "the runner to see the end")
            stop.set()
            await task
            await channel.close()
            last = len(await e.log(game_id))
            for seat in range(6):
                versions = seen[seat]
                assert versions == list(range(versions[0], last + 1)), f"seat {seat} missed or repeated events"
                assert runner.stats[(game_id, seat)].resumes >= 1
            assert runner.done == {(game_id, s): "ended" for s in range(6)}

    run(body)


def test_bots_play_fair_games_whose_every_deal_verifies() -> None:
    """Games dealt from committed shuffles (`paiju.rules.fair`), played whole by the bot runner through the API: each
    seat adds its own random bytes to a first deal as soon as it sees the commitment (the deal waits for all of them),
    a cutter's cut carries random bytes too, and afterwards every deal of both games verifies from the log alone."""

    async def body() -> None:
        async with engine(fair=True) as e:
            await create_zlj(e, "fz", deals=2)
            await create_tractor(e, "ft", timed=True)
            source = StaticSeatSource([*leases("fz", "zlj", range(6)), *leases("ft", "tractor", range(4))])
            stub, channel = e.runner_stub()
            runner = BotRunner(source, stub, runner_id="fair", think=0)
            await play_out(e, [runner], ["fz", "ft"], timeout=240)
            await channel.close()
            for game_id, game, seats in (("fz", "zlj", 6), ("ft", "tractor", 4)):
                loaded = await e.games.history(game_id)
                log = [(env.version, event) for env, event in zip(loaded.envelopes, loaded.events, strict=True)]
                verdict = verify(GAMES[game].rules, log)
                assert verdict.ok and verdict.committed, verdict.failure
                dealt = [s for s in verdict.shuffles if s.status == "verified"]
                assert len(dealt) >= 2, [(s.number, s.status) for s in verdict.shuffles]
                first = dealt[0]
                assert sorted(c.seat for c in first.contributions) == list(range(seats)), "every seat added bytes"
                assert all(len(c.contribution) == 16 for c in first.contributions)
                # a later deal is cut, and the cut carries the bot's bytes; a first deal (a void first deal dealt again
                # too, 拖拉机 D-TR-6.6) is a flip: no cut
                for shuffle in dealt:
                    cuts = [c for c in shuffle.contributions if c.cut is not None]
                    assert len(cuts) == (1 if shuffle.deal > 1 else 0), (shuffle.number, shuffle.deal, cuts)
                    assert all(len(c.contribution) == 16 for c in cuts), "the cut carries the bot's bytes"
                assert any(shuffle.deal > 1 for shuffle in dealt), "a later, cut deal was played"
            assert total([runner], "fallbacks") == 0 and total([runner], "refused") == 0

    run(body)


def test_bots_commit_then_reveal_and_every_deal_counts_every_seat() -> None:
    """Protocol version 2 played whole by the bot runner through the API: the first shuffle is committed when the
    bots' watches open, each seat commits to its own salt and bytes (the cutter to its cut too) before any reveal,
    reveals on the next turn, checks the log against what it sent (nothing altered), and every deal of both games
    verifies with every seat's contribution counted."""

    async def body() -> None:
        async with engine(fair=True, protocol=2) as e:
            await create_zlj(e, "cz", deals=2)
            await create_tractor(e, "ct", timed=True)
            source = StaticSeatSource([*leases("cz", "zlj", range(6)), *leases("ct", "tractor", range(4))])
            stub, channel = e.runner_stub()
            runner = BotRunner(source, stub, runner_id="commit", think=0)
            await play_out(e, [runner], ["cz", "ct"], timeout=240)
            await channel.close()
            for game_id, game, seats in (("cz", "zlj", 6), ("ct", "tractor", 4)):
                loaded = await e.games.history(game_id)
                log = [(env.version, event) for env, event in zip(loaded.envelopes, loaded.events, strict=True)]
                verdict = verify(GAMES[game].rules, log)
                assert verdict.ok and verdict.committed, verdict.failure
                dealt = [s for s in verdict.shuffles if s.status == "verified"]
                assert len(dealt) >= 2 and verdict.alone == 0, [(s.number, s.status) for s in verdict.shuffles]
                for shuffle in dealt:
                    assert shuffle.version == 2 and shuffle.contributors == tuple(range(seats))
                    assert all(len(r.contribution) == 16 and len(r.salt) == 32 for r in shuffle.reveals)
                # a later deal's cutter revealed the cut it committed to; a first deal is not cut (a flip), nor is a
                # void first deal dealt again (拖拉机 D-TR-6.6: no bid at all), which is the first deal still
                for shuffle in dealt:
                    cuts = [r for r in shuffle.reveals if r.cut is not None]
                    assert len(cuts) == (1 if shuffle.deal > 1 else 0), (shuffle.number, shuffle.deal, cuts)
                assert any(shuffle.deal > 1 for shuffle in dealt), "a later, cut deal was played"
            assert total([runner], "altered") == 0
            assert total([runner], "fallbacks") == 0 and total([runner], "refused") == 0

    run(body)


class ThrottlingEngine:
    """An engine stub that refuses each seat's first commitment and first reveal (or first command of each of
    ``kinds``) on its act stream as the engine's rate limits would (RESOURCE_EXHAUSTED in the answer, nothing stored);
    everything else goes to ``stub``."""

    def __init__(self, stub: Any, kinds: tuple[str, ...] = ("commit_contribution", "reveal_contribution")) -> None:
        self._stub = stub
        self._kinds = kinds
        self.throttled: set[tuple[str, int]] = set()
        """The steps refused: (the command's kind, the seat)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stub, name)

    def throttles(self, request: engine_pb2.ActRequest) -> bool:
        command = request.tractor
        kind = command.WhichOneof("command") if request.HasField("tractor") else None
        if kind in self._kinds:
            step = (kind, getattr(command, kind).seat)
            if step not in self.throttled:
                self.throttled.add(step)
                return True
        return False

    def ActStream(self, **kwargs: Any) -> ThrottledStream:
        return ThrottledStream(self._stub.ActStream(**kwargs), self)


class ThrottledStream:
    """An act stream whose requests `ThrottlingEngine.throttles` are answered with the engine's rate limits' refusal
    instead of being sent."""

    def __init__(self, call: Any, throttling: ThrottlingEngine) -> None:
        self._call = call
        self._throttling = throttling
        self._answer: engine_pb2.ActStreamResponse | None = None

    async def write(self, request: engine_pb2.ActStreamRequest) -> None:
        if self._throttling.throttles(request.act):
            refused = status_pb2.Status(
                code=grpc.StatusCode.RESOURCE_EXHAUSTED.value[0],
                message="too many Act calls from this account: try again in 1 s",
            )
            self._answer = engine_pb2.ActStreamResponse(command_id=request.act.command_id, refused=refused)
            return
        await self._call.write(request)

    async def read(self) -> Any:
        answer, self._answer = self._answer, None
        return answer if answer is not None else await self._call.read()

    def done(self) -> bool:
        return bool(self._call.done())

    def cancel(self) -> bool:
        return bool(self._call.cancel())


def test_a_throttled_commitment_or_reveal_is_taken_again_not_given_up() -> None:
    """A fair-dealing step the engine's rate limits refuse is tried again until taken: given up, a seat's part of the
    shuffle would be missing, and a cutter's commitment at a table without a turn timer would be waited for without
    end (the game stalled for good). Each seat's first commitment and first reveal is refused once here: every deal
    still counts every seat, and the game ends."""

    async def body() -> None:
        async with engine(fair=True, protocol=2) as e:
            await create_tractor(e, "tt", timed=True)
            stub, channel = e.runner_stub()
            throttling = ThrottlingEngine(stub)
            runner = BotRunner(StaticSeatSource(leases("tt", "tractor", range(4))), throttling, runner_id="t", think=0)
            await play_out(e, [runner], ["tt"], timeout=240)
            await channel.close()
            assert throttling.throttled == {
                (kind, seat) for kind in ("commit_contribution", "reveal_contribution") for seat in range(4)
            }
            loaded = await e.games.history("tt")
            log = [(env.version, event) for env, event in zip(loaded.envelopes, loaded.events, strict=True)]
            verdict = verify(GAMES["tractor"].rules, log)
            assert verdict.ok and verdict.committed, verdict.failure
            dealt = [s for s in verdict.shuffles if s.status == "verified"]
            assert dealt and all(s.contributors == tuple(range(4)) for s in dealt), [s.contributors for s in dealt]

    run(body)


def test_a_throttled_contribution_is_sent_again_not_given_up() -> None:
    """Protocol version 1: a seat's contribution the engine's rate limits refuse is sent again until taken: given up,
    the deal would lack that seat's randomness (here, with a window no test outlives, the first deal would wait for it
    for good). Each seat's first contribution is refused once: the first deal still counts every seat, and the game
    ends."""

    async def body() -> None:
        async with engine(fair=True, protocol=1) as e:
            await create_tractor(e, "tc", timed=True)
            stub, channel = e.runner_stub()
            throttling = ThrottlingEngine(stub, kinds=("contribute",))
            runner = BotRunner(StaticSeatSource(leases("tc", "tractor", range(4))), throttling, runner_id="t", think=0)
            await play_out(e, [runner], ["tc"], timeout=240)
            await channel.close()
            assert throttling.throttled == {("contribute", seat) for seat in range(4)}
            loaded = await e.games.history("tc")
            log = [(env.version, event) for env, event in zip(loaded.envelopes, loaded.events, strict=True)]
            verdict = verify(GAMES["tractor"].rules, log)
            assert verdict.ok and verdict.committed, verdict.failure
            # the first deal (not cut) waits for every seat; a later one is dealt at its cut, with whoever came
            first = [s for s in verdict.shuffles if s.status == "verified" and s.deal == 1]
            assert first and all(s.contributors == tuple(range(4)) for s in first), [s.contributors for s in first]

    run(body)


class AlteringEngine:
    """An engine stub whose Watch streams show one seat's commitment with one bit changed, as an engine (or whoever
    stored the log) that altered the seat's part would show it; every other call goes to ``stub``."""

    def __init__(self, stub: Any, seat: int) -> None:
        self._stub = stub
        self._seat = seat

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stub, name)

    def Watch(self, request: Any, **kwargs: Any) -> AlteredStream:
        return AlteredStream(self._stub.Watch(request, **kwargs), self._seat)


class AlteredStream:
    def __init__(self, call: Any, seat: int) -> None:
        self._call = call
        self._seat = seat

    def cancel(self) -> bool:
        return bool(self._call.cancel())

    def __aiter__(self) -> Any:
        return self._replies()

    async def _replies(self) -> Any:
        async for reply in self._call:
            # the events of a message, batched (`envelopes`) or not (`envelope`)
            for envelope in [*reply.envelopes, *([reply.envelope] if reply.HasField("envelope") else [])]:
                if envelope.zlj.HasField("contribution_committed"):
                    event = envelope.zlj.contribution_committed
                    if event.seat == self._seat:
                        event.commitment = bytes([event.commitment[0] ^ 1]) + event.commitment[1:]
            yield reply


def test_a_seats_part_altered_in_the_log_is_logged_as_an_error_and_counted() -> None:
    """Protocol version 2: the log a seat reads shows its commitment changed; that seat's player logs an error
    naming the game and the deal and counts it (`SeatStats.altered`, and the runner's `total_altered`, kept after
    the seat is forgotten); the other seats, whose parts are shown as sent, count nothing, and the game plays on."""

    async def body() -> None:
        async with engine(fair=True, protocol=2) as e:
            await create_zlj(e, "alt", deals=1)
            source = StaticSeatSource(leases("alt", "zlj", range(6)))
            stub, channel = e.runner_stub()
            runner = BotRunner(source, AlteringEngine(stub, seat=2), runner_id="altered", think=0)
            with capture_logs() as logs:
                await play_out(e, [runner], ["alt"], timeout=240)
            await channel.close()
            assert runner.stats[("alt", 2)].altered == 1, "the seat's commitment, once"
            assert all(runner.stats[("alt", s)].altered == 0 for s in range(6) if s != 2)
            errors = [r for r in logs if r["log_level"] == "error" and "fair dealing" in r["event"]]
            assert [(r["game"], r["seat"], r["deal"]) for r in errors] == [("alt", 2, 1)], errors
            assert "commitment" in errors[0]["what"]
            runner._forget(("alt", 2))
            assert runner.total_altered == 1, "counted after the seat is forgotten"

    run(body)


def test_a_policy_trained_on_the_environment_plays_real_seats_through_the_runner() -> None:
    """`paiju bots --agent MODULE:FACTORY`: the runner makes each seat's bot with the factory; a `PolicyBot` (what a
    policy trained on `paiju.envs` is wrapped in) plays a whole 砸六家 match over the API."""

    def first_listed(observation: dict[str, Any]) -> int:
        return 0

    def factory(game: str, seed: int) -> PolicyBot:
        return PolicyBot(game, first_listed)

    async def body() -> None:
        async with engine() as e:
            await create_zlj(e, "agent", deals=1)
            stub, channel = e.runner_stub()
            runner = BotRunner(StaticSeatSource(leases("agent", "zlj", range(6))), stub, think=0, agent=factory)
            await play_out(e, [runner], ["agent"], timeout=240)
            await channel.close()
            assert runner.done == {("agent", s): "ended" for s in range(6)}
            assert total([runner], "fallbacks") == 0 and total([runner], "refused") == 0

    run(body)
    assert load_agent("paiju.envs.agent:PolicyBot") is PolicyBot
    for wrong in ("paiju.envs.agent", "no.such.module:make", "paiju.envs.agent:nothing", "paiju.envs.aec:MAX_ACTIONS"):
        with pytest.raises(ValueError):
            load_agent(wrong)


def test_a_runner_forgets_the_seats_of_ended_games_once_they_are_no_longer_leased() -> None:
    """A runner's memory follows the seats it plays now: once a game has ended and its seats are leased no more,
    nothing about them is kept but the count of the moves made."""

    async def body() -> None:
        async with engine() as e:
            await create_zlj(e, "zf", deals=1)
            source = StaticSeatSource(leases("zf", "zlj", range(6)))
            stub, channel = e.runner_stub()
            runner = BotRunner(source, stub, runner_id="forgetful", think=0)
            stop = asyncio.Event()
            task = asyncio.create_task(runner.run(stop))
            try:

                async def over() -> bool:
                    return await e.ended("zf")

                await wait_until(over, "the end of zf", seconds=120)
                await wait_until(lambda: not runner.playing, "the runner to see the end")
                by_player = decisions(await e.log("zf"))
                made = sum(by_player[bot_player("zf", s)] for s in range(6))
                assert len(runner.stats) == 6 and runner.total_acts == made
                source.set(())  # the lobby no longer leases the game's seats
                await wait_until(lambda: not runner.stats and not runner.done, "the seats forgotten")
                assert not runner.starts and runner.total_acts == made and runner.seats_played == 6
            finally:
                stop.set()
                await task
                await channel.close()

    run(body)


def test_a_lost_seat_is_taken_up_again_with_a_renewed_lease_only() -> None:
    """The lobby hands a seat's token back unchanged across lease renewals while it serves: a seat handed back to
    its player (the engine refuses the bot's token) is not taken up again while its lease comes back as it was, and
    is once the lease is renewed (its end moved on) — as it was with each new token."""

    async def body() -> None:
        async with engine() as e:
            game_id = "z4"
            request = engine_pb2.CreateGameRequest(
                game_id=game_id, game=engine_pb2.GAME_ZLJ, zlj_options=zlj_pb2.ZljOptions(deals=1)
            )
            for seat in range(6):
                request.seats.add(seat=seat, player_id="person-3" if seat == 3 else bot_player(game_id, seat))
            await e.stub.CreateGame(request, metadata=SERVICE)
            cover = engine_pb2.AssignSeatsRequest(
                game_id=game_id, command_id="cover-3", change=engine_pb2.SEAT_CHANGE_COVER
            )
            cover.seats.add(seat=3, player_id=bot_player(game_id, 3))
            await e.stub.AssignSeats(cover, metadata=SERVICE)
            covering = lease(game_id, "zlj", 3)
            source = StaticSeatSource([covering])
            stub, channel = e.runner_stub()
            runner = BotRunner(source, stub, runner_id="r4", think=0.01, renew_every=0.05)
            stop = asyncio.Event()
            task = asyncio.create_task(runner.run(stop))
            key = (game_id, 3)
            try:
                await wait_until(lambda: runner.starts[key] == 1, "the runner to take the seat")
                back = engine_pb2.AssignSeatsRequest(
                    game_id=game_id, command_id="return-3", change=engine_pb2.SEAT_CHANGE_RETURN
                )
                back.seats.add(seat=3, player_id="person-3")
                await e.stub.AssignSeats(back, metadata=SERVICE)
                await wait_until(lambda: runner.done.get(key) == "lost", "the runner to drop seat 3")
                calls = source.calls
                await wait_until(lambda: source.calls > calls + 3, "the runner to ask again")
                assert runner.starts[key] == 1, "the same token and lease: not taken up again"
                source.set([dataclasses.replace(covering, expires_at=covering.expires_at + 30)])
                await wait_until(lambda: runner.starts[key] >= 2, "the renewed lease taken up again")
            finally:
                stop.set()
                await task
                await channel.close()

    run(body)


def test_a_seats_deciding_task_is_woken_only_by_turns_it_may_act_in() -> None:
    """Every seat's watch brings every turn of the game (about five a move at a table of bots); only those naming the
    seat among the seats that may act wake its deciding task — the others it would look at and set aside."""

    async def body() -> None:
        lease = SeatLease("t", "g", "zlj", 2, "token", 0.0)
        player = SeatPlayer(lease, engine=None)
        await player._new_turn(engine_pb2.Turn(version=5, seats=[1]))
        assert not player._turned.is_set()
        assert player._turn is not None and player._turn.version == 5  # the latest turn is kept all the same
        await player._new_turn(engine_pb2.Turn(version=6, seats=[1, 2]))
        assert player._turned.is_set()

    asyncio.run(body())
