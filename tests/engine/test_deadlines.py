"""The deadline index of the turn timers (`paiju.engine.deadlines.Deadlines`) and the schedule of the games a
replica owns (`paiju.engine.deadlines.Schedule`)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from paiju.engine.deadlines import Deadlines, Schedule
from paiju.engine.dealing import FairDealing
from paiju.engine.games import Game, Games
from paiju.engine.seeds import server_seeds
from paiju.platform.store import MemoryEventStore
from paiju.rules.zlj import Options, StartMatch


def test_expired_games_come_out_earliest_first_and_once() -> None:
    deadlines = Deadlines()
    deadlines.set("b", 20.0)
    deadlines.set("a", 10.0)
    deadlines.set("c", 30.0)
    assert deadlines.expired(5.0) == []
    assert deadlines.expired(25.0) == ["a", "b"]
    assert deadlines.expired(25.0) == [], "taken out of the index"
    assert len(deadlines) == 1


def test_a_moved_deadline_replaces_the_old_one() -> None:
    deadlines = Deadlines()
    deadlines.set("a", 10.0)
    deadlines.set("a", 50.0)  # the game moved: a new turn
    assert deadlines.expired(20.0) == [], "the old deadline is stale"
    deadlines.set("b", 5.0)
    deadlines.set("b", None)  # the game ended
    assert deadlines.expired(60.0) == ["a"]


def test_a_game_set_again_after_expiring_expires_again() -> None:
    deadlines = Deadlines()
    deadlines.set("a", 10.0)
    assert deadlines.expired(10.0) == ["a"]
    deadlines.set("a", 10.0)  # the scan could not act: the same deadline again
    assert deadlines.expired(11.0) == ["a"]


def test_the_heap_stays_bounded_by_the_games() -> None:
    deadlines = Deadlines()
    for i in range(10_000):
        deadlines.set("a", float(i))  # one game moving 10,000 times
    assert len(deadlines._heap) <= 2 * len(deadlines) + 64
    assert deadlines.expired(1e9) == ["a"]


def test_a_state_inside_a_command_whose_deadline_the_rules_cannot_tell_is_read_again_at_the_next_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The feed delivers a command's events one by one; between two of them a rules core may not know who waits (an
    invariant of whole commands): the game's deadline is then left to the next scan, which reads it as stored."""
    import asyncio

    from paiju.engine import deadlines as deadlines_module
    from paiju.engine.games import Games
    from paiju.platform.store import MemoryEventStore
    from paiju.rules.zlj import Options, StartMatch

    async def main() -> None:
        games = Games(MemoryEventStore())
        await games.follow()

        def undecidable(game: object) -> float | None:
            raise AssertionError("a state between two events of one command")

        monkeypatch.setattr(deadlines_module, "due_of", undecidable)
        await games.create("g", "zlj", StartMatch(1, Options(deals=1, turn_seconds=30)), "start", "engine")
        assert "g" in await games.due(0.0), "not indexed: the next scan reads it"
        monkeypatch.undo()
        await games.load("g")
        games.reschedule("g")
        assert games.deadlines.expired(1e12) == ["g"], "read again, its deadline is known"

    asyncio.run(main())


# -- the schedule: the deadlines of the games a replica owns, as its timers read them ----------------------------

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


async def _created(game_id: str, turn_seconds: int = 30, *, dealing: FairDealing | None = None) -> Game:
    """A 砸六家 game as the engine holds it, created at `T0` (its first turn runs ``turn_seconds``)."""
    games = Games(MemoryEventStore(), clock=lambda: T0, dealing=dealing)
    start = StartMatch(1, Options(deals=1, turn_seconds=turn_seconds), fair=dealing is not None)
    return await games.create(game_id, "zlj", start, "start", "engine")


def _ours(game_id: str) -> bool:
    return not game_id.startswith("theirs")


def test_a_schedule_sets_an_owned_games_deadline_from_the_game_and_a_scan_takes_it_once() -> None:
    async def main() -> None:
        schedule = Schedule(_ours, FairDealing())
        schedule.moved(await _created("ours"))
        schedule.moved(await _created("theirs"))
        schedule.moved(await _created("untimed", turn_seconds=0))
        assert len(schedule) == 1, "another replica's game, and a game no timer waits for, have no deadline here"
        start = T0.timestamp()
        assert schedule.due(start + 29.9) == []
        assert schedule.due(start + 30) == ["ours"]
        assert schedule.due(start + 60) == [] and len(schedule) == 0, "taken out by the scan"

    asyncio.run(main())


def test_a_game_moved_while_not_held_or_not_read_yet_is_due_at_the_next_scan_once() -> None:
    async def main() -> None:
        schedule = Schedule(_ours, FairDealing())
        schedule.moved(await _created("expired"))
        schedule.lost("moved-elsewhere")
        schedule.lost("theirs-moved")
        schedule.unread(["live-2", "live-1", "theirs-live"])
        assert schedule.due(T0.timestamp() + 30) == ["expired", "live-1", "live-2", "moved-elsewhere"], (
            "the expired first, then the unknown ones this replica owns"
        )
        assert schedule.due(T0.timestamp() + 30) == []
        schedule.lost("known-again")
        schedule.moved(await _created("known-again"))
        assert schedule.due(T0.timestamp()) == [], "held again: its deadline is known"

    asyncio.run(main())


def test_a_rescheduled_game_has_its_deadline_again_or_is_read_at_the_next_scan() -> None:
    async def main() -> None:
        schedule = Schedule(_ours, FairDealing())
        game = await _created("g")
        schedule.moved(game)
        assert schedule.due(T0.timestamp() + 31) == ["g"]
        schedule.reschedule("g", game)  # the scan could not act: the same deadline again
        assert schedule.expired(T0.timestamp() + 31) == ["g"]
        schedule.reschedule("g", None)  # not in memory any more
        assert schedule.due(0.0) == ["g"]
        schedule.reschedule("theirs", game)
        assert len(schedule) == 0 and schedule.due(1e12) == []

    asyncio.run(main())


def test_a_game_rescheduled_inside_a_command_is_read_at_the_next_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan sets each game's deadline again from the game as held; held between two events of one command (the
    feed's), the rules may not tell it: the game is read at the next scan, and the scan goes on with the others
    (before, the scan raised there, and the games after it lost their deadlines until they moved again)."""
    from paiju.engine import deadlines as deadlines_module

    async def main() -> None:
        schedule = Schedule(_ours, FairDealing())
        game = await _created("g")

        def undecidable(game: object, dealing: object) -> float | None:
            raise AssertionError("a state between two events of one command")

        monkeypatch.setattr(deadlines_module, "due_of", undecidable)
        schedule.reschedule("g", game)
        assert schedule.due(0.0) == ["g"], "read at the next scan"
        monkeypatch.undo()
        schedule.reschedule("g", game)
        assert schedule.expired(T0.timestamp() + 31) == ["g"], "told this time"

    asyncio.run(main())


def test_a_schedule_keeps_only_the_games_still_owned_when_the_share_changes() -> None:
    async def main() -> None:
        owned = {"a", "b", "c", "d"}
        schedule = Schedule(owned.__contains__, FairDealing())
        for game_id in ("a", "b"):
            schedule.moved(await _created(game_id))
        schedule.lost("c")
        schedule.lost("d")
        owned -= {"b", "d"}  # a partition lost
        schedule.keep()
        assert len(schedule) == 1
        assert schedule.due(T0.timestamp() + 30) == ["a", "c"]

    asyncio.run(main())


def test_a_fair_deal_waiting_for_contributions_is_due_when_the_window_closes() -> None:
    async def main() -> None:
        dealing = FairDealing(lambda game_id, number: server_seeds([b"schedule-tests-secret"], game_id, number), 2.5)
        schedule = Schedule(_ours, dealing)
        schedule.moved(await _created("fair", turn_seconds=0, dealing=dealing))
        assert schedule.due(T0.timestamp() + 2.4) == []
        assert schedule.due(T0.timestamp() + 2.5) == ["fair"], "the engine deals with whatever contributions came"

    asyncio.run(main())


def test_a_game_whose_deadline_the_rules_cannot_tell_is_left_to_the_next_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    from paiju.engine import deadlines as deadlines_module

    async def main() -> None:
        schedule = Schedule(_ours, FairDealing())
        game = await _created("g")
        schedule.moved(game)

        def undecidable(game: object, window: float = 0.0) -> float | None:
            raise AssertionError("a state between two events of one command")

        monkeypatch.setattr(deadlines_module, "due_of", undecidable)
        schedule.moved(game)
        assert len(schedule) == 0 and schedule.due(1e12) == ["g"], "its old deadline dropped, read at the next scan"

    asyncio.run(main())
