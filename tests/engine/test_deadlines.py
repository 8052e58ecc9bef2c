"""The deadline index of the turn timers (`paiju.engine.deadlines.Deadlines`)."""

from __future__ import annotations

import pytest

from paiju.engine.deadlines import Deadlines


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
