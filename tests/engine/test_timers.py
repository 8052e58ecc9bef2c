"""Turn timers: expired turns are played by the default action, once, by whichever engine replica sees them."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import nats.errors
import pytest
import structlog

from paiju.engine import bootstrap
from paiju.engine.games import Games
from paiju.engine.timers import expire_turns
from paiju.platform.store import MemoryEventStore, Recorded
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import Options, StartMatch

from ..support.waiting import wait_until

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_an_expired_turn_is_played_by_the_engine_and_recorded() -> None:
    async def main() -> None:
        clock = [T0]
        games = Games(MemoryEventStore(), clock=lambda: clock[0])
        game = await games.create("z1", "zlj", StartMatch(3, Options(deals=1, turn_seconds=10)), "start", "engine")
        leader = game.state.turn
        assert await expire_turns(games, T0 + timedelta(seconds=9)) == [], "the turn is still running"
        clock[0] = T0 + timedelta(seconds=10)
        assert await expire_turns(games, clock[0]) == [("z1", leader)]
        after = await games.load("z1")
        assert after.version > game.version
        assert (await games.history("z1")).envelopes[game.version].command_id == f"timeout:z1:{game.version}:{leader}"
        assert (await games.history("z1")).envelopes[game.version].zlj.WhichOneof("event") == "turn_timed_out"
        assert after.state.turn != leader, "the lowest single was played for the leader"
        # the next turn started when the timeout was recorded: nothing expires at once
        assert await expire_turns(games, clock[0]) == []

    asyncio.run(main())


def test_two_replicas_expiring_the_same_turn_store_it_once() -> None:
    async def main() -> None:
        store = MemoryEventStore()
        later = T0 + timedelta(seconds=6)
        clock = [T0]
        first = Games(store, clock=lambda: clock[0])
        game = await first.create("z2", "zlj", StartMatch(4, Options(deals=1, turn_seconds=5)), "start", "engine")
        clock[0] = later  # the timeout is recorded at `later`: the next turn starts then
        second = Games(store, clock=lambda: later)
        await second.load("z2")  # both replicas have seen the expired turn
        done = await asyncio.gather(expire_turns(first, later), expire_turns(second, later))
        assert sorted(len(d) for d in done) == [0, 1]
        timeouts = [e for e in (await first.history("z2")).envelopes if e.command_id.startswith("timeout:")]
        assert {r.command_id for r in timeouts} == {f"timeout:z2:{game.version}:{game.state.turn}"}

    asyncio.run(main())


def test_untimed_games_and_concealed_bids() -> None:
    async def main() -> None:
        games = Games(MemoryEventStore(), clock=lambda: T0)
        await games.create("z3", "zlj", StartMatch(5, Options(deals=1)), "start", "engine")
        start = tractor_model.StartGame(6, tractor_model.Options(turn_seconds=10))
        await games.create("t1", "tractor", start, "start", "engine")
        done = await expire_turns(games, T0 + timedelta(hours=1))
        assert ("z3", 0) not in done and all(g == "t1" for g, _ in done), "an untimed game never times out"
        assert sorted(seat for _, seat in done) == [0, 1, 2, 3], "every seat still to bid passes"
        tractor = await games.load("t1")
        assert tractor.state.phase is not tractor_model.Phase.BID

    asyncio.run(main())


def test_a_void_first_tractor_deal_is_dealt_again_by_the_engine() -> None:
    """D-TR-6.6: nobody bid, the first deal is void; it waits for no seat, so the engine deals again."""

    async def main() -> None:
        games = Games(MemoryEventStore(), clock=lambda: T0)
        game = await games.create("t9", "tractor", tractor_model.StartGame(5, tractor_model.Options(), at=0), "s", "e")
        for seat in range(4):
            game, _ = await games.act("t9", tractor_model.Pass(seat), f"pass{seat}", f"seat{seat}")
        assert game.state.phase is tractor_model.Phase.FLIP, "nobody bid: the deal is void"
        assert await expire_turns(games, T0, lambda g, v: 1000 + v) == []
        again = await games.load("t9")
        assert again.state.phase is tractor_model.Phase.BID and again.version > game.version
        assert (await games.history("t9")).envelopes[game.version].command_id == f"redeal:t9:{game.version}"
        await expire_turns(games, T0, lambda g, v: 1000 + v)
        assert (await games.load("t9")).version == again.version, "dealt again once"

    asyncio.run(main())


def test_a_following_engine_times_only_games_not_seen_ended() -> None:
    """The timer scan looks at the games the feed has shown and that have not ended, not at every stream subject."""

    async def main() -> None:
        store = MemoryEventStore()
        older = Games(store)
        await older.create("z0", "zlj", StartMatch(1, Options(deals=1)), "start", "engine")
        games = Games(store, clock=lambda: T0)
        await games.follow()
        assert await games.due(T0.timestamp()) == ["z0"], "games stored before the engine started are looked at"
        await older.create("z1", "zlj", StartMatch(2, Options(deals=1)), "start", "engine")
        await asyncio.sleep(0)
        assert await games.due(T0.timestamp()) == ["z1"], "games stored by another replica arrive with the feed"

    asyncio.run(main())


def test_a_timed_tractor_round_is_told_the_time_and_announces_its_last_two_deals() -> None:
    """D-TR-9: with 25 minutes left the engine's clock makes the game announce two more deals, once."""

    async def main() -> None:
        games = Games(MemoryEventStore(), clock=lambda: T0)
        start = int(T0.timestamp())
        options = tractor_model.Options(round_minutes=60)
        await games.create("t8", "tractor", tractor_model.StartGame(5, options, at=start), "s", "e")
        before = (await games.load("t8")).version
        await expire_turns(games, T0 + timedelta(minutes=34))
        assert (await games.load("t8")).version == before, "more than 25 minutes left: nothing to announce"
        await expire_turns(games, T0 + timedelta(minutes=35))
        announced = await games.load("t8")
        assert announced.version == before + 1 and announced.state.clock.announced
        await expire_turns(games, T0 + timedelta(minutes=40))
        assert (await games.load("t8")).version == announced.version, "announced once"

    asyncio.run(main())


# -- the deadline index: a scan of a following engine reads the games whose deadline has passed, not every game ---


def reads(games: Games) -> list[str]:
    """Record every game the engine reads (``Games.load``) from now on."""
    read: list[str] = []
    load = games.load

    async def counted(game_id: str, min_version: int = 0) -> Any:
        read.append(game_id)
        return await load(game_id, min_version)

    games.load = counted  # type: ignore[method-assign]
    return read


def test_a_following_engine_scans_only_the_games_whose_deadline_passed() -> None:
    async def main() -> None:
        clock = [T0]
        games = Games(MemoryEventStore(), clock=lambda: clock[0])
        await games.follow()
        for n in range(30):  # untimed, or with turns far from their end: no deadline now
            options = Options(deals=1, turn_seconds=0 if n % 2 else 3600)
            await games.create(f"z{n}", "zlj", StartMatch(n, options), "start", "engine")
        hurried = await games.create("hurry", "zlj", StartMatch(99, Options(deals=1, turn_seconds=10)), "s", "e")
        await asyncio.sleep(0)
        read = reads(games)
        await expire_turns(games, T0 + timedelta(seconds=5))
        assert read == [], "no deadline has passed: the scan reads no game"
        done = await expire_turns(games, T0 + timedelta(seconds=11))
        assert done == [("hurry", hurried.state.turn)]
        assert set(read) == {"hurry"}, "the scan read the one game whose turn ran out, not the 30 others"
        assert len(games.deadlines) == 16, "15 games with a running timer and the hurried game's next turn"

    asyncio.run(main())


def test_a_following_engine_learns_the_deadlines_of_games_another_replica_moves() -> None:
    async def main() -> None:
        store = MemoryEventStore()
        other = Games(store, clock=lambda: T0)  # another replica, serving the game
        await other.create("old", "zlj", StartMatch(1, Options(deals=1, turn_seconds=10)), "start", "engine")
        games = Games(store, clock=lambda: T0)
        await games.follow()  # started after "old" was stored: its deadline is learnt at the first scan
        await other.create("new", "zlj", StartMatch(2, Options(deals=1, turn_seconds=20)), "start", "engine")
        await asyncio.sleep(0)
        assert await expire_turns(games, T0 + timedelta(seconds=5)) == []
        assert len(games.deadlines) == 2
        done = await expire_turns(games, T0 + timedelta(seconds=15))
        assert [g for g, _ in done] == ["old"]
        done = await expire_turns(games, T0 + timedelta(seconds=25))
        assert "new" in [g for g, _ in done]

    asyncio.run(main())


def test_a_timed_round_is_woken_when_its_announcement_is_due() -> None:
    """D-TR-9 through the index: the game's deadline is the announcement's time (no turn timer is running)."""

    async def main() -> None:
        games = Games(MemoryEventStore(), clock=lambda: T0)
        await games.follow()
        options = tractor_model.Options(round_minutes=60)
        await games.create("t8", "tractor", tractor_model.StartGame(5, options, at=int(T0.timestamp())), "s", "e")
        before = (await games.load("t8")).version
        read = reads(games)
        await expire_turns(games, T0 + timedelta(minutes=34))
        assert read == [] and (await games.load("t8")).version == before
        await expire_turns(games, T0 + timedelta(minutes=35))
        assert (await games.load("t8")).state.clock.announced

    asyncio.run(main())


def test_a_scan_that_fails_on_one_game_goes_on_and_keeps_every_deadline() -> None:
    async def main() -> None:
        clock = [T0]
        games = Games(MemoryEventStore(), clock=lambda: clock[0])
        await games.follow()
        for name in ("a", "b"):
            await games.create(name, "zlj", StartMatch(3, Options(deals=1, turn_seconds=10)), "start", "engine")
        await asyncio.sleep(0)
        load = games.load
        failures = ["a"]

        async def flaky(game_id: str, min_version: int = 0) -> Any:
            if game_id in failures:
                failures.remove(game_id)
                raise TimeoutError("NATS did not answer")
            return await load(game_id, min_version)

        games.load = flaky  # type: ignore[method-assign]
        clock[0] = T0 + timedelta(seconds=12)  # the timeouts are recorded then: the next turns end 10 s later
        done = await expire_turns(games, clock[0])
        assert [g for g, _ in done] == ["b"], "the scan went on past the game it could not read"
        clock[0] = T0 + timedelta(seconds=13)
        done = await expire_turns(games, clock[0])
        assert [g for g, _ in done] == ["a"], "the game it could not read is looked at again"

    asyncio.run(main())


def test_a_game_the_feed_skipped_events_of_is_looked_at_again() -> None:
    async def main() -> None:
        store = MemoryEventStore()
        games = Games(store, clock=lambda: T0)
        await games.follow()
        await games.create("g", "zlj", StartMatch(3, Options(deals=1, turn_seconds=10)), "start", "engine")
        await asyncio.sleep(0)
        assert await games.due(T0.timestamp()) == []
        game = await games.load("g")
        skipped = game.recent[-1]
        late = Recorded("g", game.version + 2, 10_000, "elsewhere", skipped.SerializeToString())
        games.repository._observe(
            late
        )  # the feed delivers an event two versions ahead: the game is dropped from memory
        assert await games.due(T0.timestamp()) == ["g"], "its deadline may have moved: the next scan reads it"

    asyncio.run(main())


def test_nats_away_stops_the_scan_at_the_first_game_and_keeps_every_deadline() -> None:
    """NATS away fails every game of a scan at once: the scan stops at the first (one failure, not one per game and
    per second for the whole outage), raises, and the games it did not get to are due again at the next scan."""

    async def main() -> None:
        clock = [T0]
        games = Games(MemoryEventStore(), clock=lambda: clock[0])
        await games.follow()
        for name in ("a", "b", "c"):
            await games.create(name, "zlj", StartMatch(3, Options(deals=1, turn_seconds=10)), "start", "engine")
        await asyncio.sleep(0)
        load = games.load
        away = [True]
        read: list[str] = []

        async def disconnected(game_id: str, min_version: int = 0) -> Any:
            read.append(game_id)
            if away[0]:
                raise nats.errors.OutboundBufferLimitError
            return await load(game_id, min_version)

        games.load = disconnected  # type: ignore[method-assign]
        clock[0] = T0 + timedelta(seconds=12)
        with pytest.raises(nats.errors.OutboundBufferLimitError):
            await expire_turns(games, clock[0])
        assert len(read) == 1, f"the scan went on while NATS was away: it read {read}"
        away[0] = False
        done = await expire_turns(games, clock[0])
        assert sorted(g for g, _ in done) == ["a", "b", "c"], "every deadline that was due is kept"

    asyncio.run(main())


def test_a_failing_scan_is_tried_again_after_a_growing_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run_timers` waits longer after each failed scan in a row (then every ``every`` seconds again)."""
    every = 0.1
    scans: list[float] = []

    async def failing(*args: Any) -> list[tuple[str, int]]:
        scans.append(time.monotonic())
        raise nats.errors.OutboundBufferLimitError

    monkeypatch.setattr(bootstrap, "expire_turns", failing)

    async def main() -> None:
        stopping = asyncio.Event()
        with structlog.testing.capture_logs() as logs:
            timers = asyncio.create_task(bootstrap.run_timers(Games(MemoryEventStore()), b"s" * 32, every, stopping))
            await wait_until(lambda: len(scans) >= 4, "four scans", every=0.01)
            stopping.set()
            await asyncio.wait_for(timers, 5)
        # the waits between the scans: every, twice, four times (a lower bound, whatever the machine)
        assert scans[3] - scans[2] >= 4 * every * 0.99, [round(b - a, 3) for a, b in itertools.pairwise(scans)]
        failed = [e for e in logs if e["event"] == "turn timer scan failed"]
        assert failed and all(e["log_level"] == "warning" for e in failed), failed

    asyncio.run(main())
