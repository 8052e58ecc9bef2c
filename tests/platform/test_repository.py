"""What every repository shares (`paiju.platform.repository`): the bounded cache, the command digest, and reads
that never go back in time."""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import example, given
from hypothesis import strategies as st

from paiju.lobby import table as tb
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.platform.repository import (
    Aggregates,
    CommandIdReused,
    CoreFold,
    Recent,
    digest_of,
    legacy_digest_of,
    seconds_of,
    timestamp_of,
)
from paiju.platform.store import EventStore, MemoryEventStore, Position, Recorded
from paiju.v1 import lobby_events_pb2


def test_recent_keeps_the_most_recently_stored_entries_only() -> None:
    recent: Recent[str, int] = Recent(2)
    recent["a"] = 1
    recent["b"] = 2
    recent["a"] = 3  # stored again: now the most recent
    recent["c"] = 4
    assert sorted(recent) == ["a", "c"] and recent.get("a") == 3 and recent.get("b") is None
    del recent["a"]
    assert len(recent) == 1 and "c" in recent
    recent.clear()
    assert len(recent) == 0


def test_recent_with_a_weight_keeps_within_its_budget_and_always_the_latest() -> None:
    recent: Recent[str, int] = Recent(100, weigh=lambda size: size, budget=10)
    for key, size in (("a", 4), ("b", 4), ("c", 4)):
        recent[key] = size
    assert sorted(recent) == ["b", "c"] and recent.weight == 8
    recent["b"] = 1  # smaller now: its weight is counted anew
    assert recent.weight == 5
    recent["huge"] = 50  # over the budget alone: the others go, the latest stays
    assert list(recent) == ["huge"] and recent.weight == 50
    del recent["huge"]
    assert recent.weight == 0


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Before:
    seat: int
    colour: Colour
    cards: tuple[int, ...] = ()


def test_a_digest_does_not_change_when_a_field_with_a_default_is_added() -> None:
    @dataclass(frozen=True)
    class Before:  # the same command, a release later, with a new optional field
        seat: int
        colour: Colour
        cards: tuple[int, ...] = ()
        note: str = ""
        extra: tuple[int, ...] = field(default_factory=tuple)

    old = globals()["Before"](3, Colour.RED, (1, 2))
    assert digest_of(Before(3, Colour.RED, (1, 2))) == digest_of(old)
    assert legacy_digest_of(Before(3, Colour.RED, (1, 2))) != legacy_digest_of(old)  # what repr did
    assert digest_of(Before(3, Colour.RED, (1, 2), note="x")) != digest_of(old)


def test_a_digest_tells_commands_apart() -> None:
    base = digest_of(Before(3, Colour.RED, (1, 2)))
    assert len({base, digest_of(Before(4, Colour.RED, (1, 2))), digest_of(Before(3, Colour.BLUE, (1, 2)))}) == 3
    assert digest_of(Before(3, Colour.RED, (2, 1))) != base
    with pytest.raises(TypeError):
        digest_of(Before(3, Colour.RED, (object(),)))  # type: ignore[arg-type]


# -- reads never go back: the feed and an act's own answer may arrive in either order ---------------------------


class EarlyFeed(MemoryEventStore):
    """A store whose feed has delivered the first event of an append before the writer resumes (as the JetStream
    feed can: the append is acknowledged while the feed already carries its first events), and, with
    ``then``, another writer's append right after it."""

    def __init__(self) -> None:
        super().__init__()
        self.then: tuple[str, list[bytes]] | None = None
        self.early: list[Callable[[Recorded], None]] = []

    async def follow(self, on_event: Callable[[Recorded], None]) -> None:
        self.early.append(on_event)

    async def append(
        self, aggregate: str, expected: Position, command_id: str, events: Sequence[bytes]
    ) -> list[Recorded]:
        stored = await super().append(aggregate, expected, command_id, events)
        delivered = stored[:1]
        if self.then is not None:
            other_id, other = self.then
            self.then = None
            delivered = stored + await super().append(aggregate, stored[-1].position, other_id, other)
        for on_event in self.early:
            for recorded in delivered:
                on_event(recorded)
        rest = [r for r in stored if r not in delivered]
        loop = asyncio.get_running_loop()
        for on_event in self.early:
            for recorded in rest:
                loop.call_soon(on_event, recorded)
        return stored


def events_as_commands(store: EventStore) -> Aggregates[tb.Table]:
    """Tables whose "command" is the list of events to store (so a test chooses how many one command stores)."""
    return Aggregates(store, LOBBY_EVENTS, tb.Table, lambda _, events: events, tb.evolve)


OPENED = tb.TableOpened("table-1", "t", "zlj", "owner", False, None, None)


def test_a_read_after_an_act_sees_every_event_the_act_stored() -> None:
    async def body() -> None:
        store = EarlyFeed()
        tables = events_as_commands(store)
        await tables.follow()
        await tables.act("table-1", [OPENED], "open", "owner")
        seated = [tb.SeatTaken(seat, f"p{seat}", f"P{seat}") for seat in range(3)]
        after, _ = await tables.act("table-1", seated, "sit", "owner")
        assert after.version == 4
        assert (await tables.load("table-1")).version == 4  # not the 1 the feed had delivered when the act resumed
        await asyncio.sleep(0)  # the rest of the feed arrives: nothing changes
        assert (await tables.load("table-1")).version == 4

    asyncio.run(body())


def test_an_aggregate_holds_its_latest_events_by_kind_and_its_command_ids_not_its_history() -> None:
    """A long-lived aggregate (a table whose seats are leased every few seconds for months) costs the same to append
    to and to hold on its last day as on its first: its snapshots share one index of command ids and keep the latest
    event of each kind; a retry of its first command is still answered as a retry, read again from the store too."""

    async def body() -> None:
        store = MemoryEventStore()
        tables = events_as_commands(store)
        first, _ = await tables.act("table-1", [OPENED], "open", "owner")
        loaded = first
        for n in range(300):
            loaded, _ = await tables.act("table-1", [tb.SeatTaken(n % 6, f"p{n}", f"P{n}")], f"sit-{n}", f"p{n}")
        assert loaded.commands is first.commands, "one index shared by every snapshot"
        assert set(loaded.latest) == {tb.TableOpened, tb.SeatTaken} and loaded.last(tb.TableOpened) == OPENED
        assert loaded.last(tb.SeatTaken) == tb.SeatTaken(299 % 6, "p299", "P299")
        assert loaded.last(tb.MatchStarted) is None
        assert first.digest("sit-0") is None, "a snapshot does not hold its later commands"
        again, stored = await tables.act("table-1", [OPENED], "open", "owner")
        assert stored == [] and again.version == loaded.version, "the first command's retry stores nothing"
        fresh = events_as_commands(store)  # another replica: reads the whole log once
        read = await fresh.load("table-1")
        assert read.state == loaded.state and read.digest("open") == loaded.digest("open")
        with pytest.raises(CommandIdReused):
            await fresh.act("table-1", [tb.SeatTaken(0, "x", "X")], "open", "owner")

    asyncio.run(body())


def test_the_feed_passes_over_the_events_of_this_process_s_own_appends() -> None:
    """An act remembers what it stored: the feed, which brings the same events back (often before the append's
    answer), does not decode and fold them a second time; another writer's events it still folds."""

    class Counted(CoreFold[tb.Table]):
        extended = 0

        def extend(self, aggregate: str, snapshot: Any, tail: Sequence[Recorded]) -> Any:
            Counted.extended += len(tail)
            return super().extend(aggregate, snapshot, tail)

    async def body() -> None:
        store = EarlyFeed()
        tables = events_as_commands(store)
        tables._fold = Counted(lobby_events_pb2.LobbyEnvelope, LOBBY_EVENTS, tb.Table, tb.evolve)  # counts its folds
        await tables.follow()
        await tables.act("table-1", [OPENED], "open", "owner")
        for n in range(5):
            await tables.act("table-1", [tb.SeatTaken(n, f"p{n}", f"P{n}")], f"sit-{n}", "owner")
        await asyncio.sleep(0)
        assert Counted.extended == 0, "its own events are not folded again from the feed"
        other = events_as_commands(store)  # another replica's append reaches this one by the feed alone
        await other.act("table-1", [tb.SeatTaken(5, "p5", "P5")], "sit-5", "other")
        await asyncio.sleep(0)
        assert Counted.extended == 1 and (await tables.load("table-1")).version == 7

    asyncio.run(body())


def test_an_act_answered_after_the_feed_moved_further_does_not_take_the_cache_back() -> None:
    async def body() -> None:
        store = EarlyFeed()
        tables = events_as_commands(store)
        await tables.follow()
        await tables.act("table-1", [OPENED], "open", "owner")
        later = tb.SeatTaken(1, "p1", "P1")
        envelope = lobby_events_pb2.LobbyEnvelope(aggregate="table-1", version=3, command_id="other")
        envelope.event.CopyFrom(typing.cast(Any, LOBBY_EVENTS.encode(later)))
        store.then = ("other", [envelope.SerializeToString()])  # another writer appends right after this act
        after, _ = await tables.act("table-1", [tb.SeatTaken(0, "p0", "P0")], "sit", "p0")
        assert after.version == 2
        loaded = await tables.load("table-1")
        assert loaded.version == 3 and loaded.state.seats[1].player_id == "p1"

    asyncio.run(body())


def test_nothing_to_do_on_a_stale_cache_is_decided_again_on_the_store() -> None:
    """A replica whose feed is behind decides "nothing to do" on what it holds: it reads the store and decides
    again before answering so (another writer may have made it something to do)."""

    async def main() -> None:
        store = MemoryEventStore()

        def leave_if_seated(table: tb.Table, seat: int) -> list[Any]:
            player = table.seats[seat].player_id if table.seats else ""
            return [tb.SeatLeft(seat, player, False, False)] if player else []

        tables = Aggregates(store, LOBBY_EVENTS, tb.Table, leave_if_seated, tb.evolve)
        await tables.follow()
        opening = events_as_commands(store)
        await opening.act("table-1", [OPENED], "open", "owner")
        await tables.load("table-1")  # cached: nobody seated
        await opening.act("table-1", [tb.SeatTaken(0, "p0", "P0")], "sit", "p0")  # another writer; feed not yet in
        after, events = await tables.act("table-1", 0, "leave", "p0")
        assert [type(e) for e in events] == [tb.SeatLeft] and after.version == 3

    asyncio.run(main())


def test_a_waiter_hears_the_moves_its_filter_names_and_which_aggregates_moved() -> None:
    """`Aggregates.moved_after` (what a long-polling `LeaseBotSeats` waits on): woken by the feed for a move the
    filter names (a bot seated), not for others (a lease renewed); a move between reading `moves` and waiting is not
    missed; `moved_since` names the aggregates that moved."""

    async def main() -> None:
        store = MemoryEventStore()
        bots = frozenset({"bot_seated"})
        tables = Aggregates(
            store,
            LOBBY_EVENTS,
            tb.Table,
            lambda _, events: events,
            tb.evolve,
            moves=lambda envelope: envelope.event.WhichOneof("event") in bots,
        )
        await tables.follow()
        writer = events_as_commands(store)
        await writer.act("table-1", [OPENED], "open", "owner")
        moves = tables.moves
        assert not await tables.moved_after(moves, 0.05), "a table opened is no move"
        waiting = asyncio.create_task(tables.moved_after(moves, 30))
        await asyncio.sleep(0)
        await writer.act("table-1", [tb.SeatLeased(0, "r", 10)], "lease", "r")
        await asyncio.sleep(0.05)
        assert not waiting.done(), "a lease is no move: the waiter still waits"
        await writer.act("table-1", [tb.BotSeated(1, "bot-table-1-1")], "bot", "owner")
        assert await asyncio.wait_for(waiting, 5), "woken by the move, long before its 30 s"
        assert tables.moved_since(moves) == ["table-1"]
        before = tables.moves
        await writer.act("table-2", [replace(OPENED, table_id="table-2")], "open2", "owner")
        await writer.act("table-2", [tb.BotSeated(0, "bot-table-2-0")], "bot2", "owner")
        await asyncio.sleep(0.05)
        assert await tables.moved_after(before, 0), "a move before the wait began is not missed"
        assert tables.moved_since(before) == ["table-2"] and tables.moved_since(tables.moves) == []

    asyncio.run(main())


@given(
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
    st.booleans(),
)
@example(datetime(1969, 12, 31, 23, 59, 58, 999996), False)  # -2 s and 999,996,000 ns: a sum of floats misses by 1 ulp
def test_a_timestamp_made_by_arithmetic_is_what_protobuf_makes(when: datetime, aware: bool) -> None:
    moment = when.replace(tzinfo=UTC) if aware else when
    expected = Timestamp()
    expected.FromDatetime(moment)
    assert timestamp_of(moment) == expected
    assert seconds_of(expected) == expected.ToDatetime(tzinfo=UTC).timestamp()
