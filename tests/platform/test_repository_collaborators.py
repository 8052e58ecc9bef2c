"""What a kind gives the repository (`paiju.platform.repository`): how it folds its aggregates (`Fold`: `CoreFold`),
how it encodes them (`Envelopes`: `EventEnvelopes`), who listens (`Listener`: `Moves`) and which aggregates the feed
carries here — each on its own, and one act calling them in the order the module states."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from paiju.engine.games import Games
from paiju.lobby import table as tb
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.platform.partitions import partition_of
from paiju.platform.repository import (
    MOVES_KEPT,
    SCHEMA_VERSION,
    Aggregates,
    CoreFold,
    EventEnvelopes,
    Loaded,
    Moves,
    Repository,
    StaleVersion,
    Stamp,
)
from paiju.platform.store import MemoryEventStore, Position, Recorded
from paiju.platform.store.base import NEW
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.v1 import lobby_events_pb2

from ..support.waiting import wait_until

ENVELOPE = lobby_events_pb2.LobbyEnvelope
OPENED = tb.TableOpened("table-1", "t", "zlj", "owner", False, None, None)
SEATED = [tb.SeatTaken(seat, f"p{seat}", f"P{seat}") for seat in range(3)]
WHEN = Timestamp(seconds=1_800_000_000, nanos=5_000)


def fold() -> CoreFold[tb.Table]:
    return CoreFold(ENVELOPE, LOBBY_EVENTS, tb.Table, tb.evolve)


def envelopes() -> EventEnvelopes[tb.Table]:
    return EventEnvelopes(ENVELOPE, LOBBY_EVENTS)


def stored_as(envelopes: Sequence[Any], command_id: str, after: Position = NEW) -> list[Recorded]:
    """``envelopes`` as the store records them after ``after``."""
    return [
        Recorded(e.aggregate, after.version + i, after.sequence + i, command_id, e.SerializeToString())
        for i, e in enumerate(envelopes, start=1)
    ]


def test_no_kind_overrides_a_method_of_the_repository() -> None:
    """What varies between kinds is passed in: `Aggregates` only adds to `Repository` (acting with its core, waiting
    for moves), and the engine's `Games` holds a repository instead of being one."""
    methods = {name for name, value in vars(Repository).items() if callable(value) and name != "__init__"}
    methods |= {name for name, value in vars(Repository).items() if isinstance(value, property)}
    assert methods and not methods & set(vars(Aggregates))
    assert not issubclass(Games, Repository) and isinstance(Games(MemoryEventStore()).repository, Repository)


# -- the fold and the envelopes of the lobby's and scoring's kinds --------------------------------------------------


def test_event_envelopes_carry_the_commands_stamp_and_number_the_versions_on() -> None:
    table = fold().absent("table-1")
    written = envelopes().encode(table, [OPENED, *SEATED], Stamp("open", "owner", b"digest", WHEN))
    assert [e.version for e in written] == [1, 2, 3, 4]
    for envelope in written:
        assert (envelope.aggregate, envelope.command_id, envelope.actor) == ("table-1", "open", "owner")
        assert envelope.recorded_at == WHEN and envelope.command_digest == b"digest"
        assert envelope.schema_version == SCHEMA_VERSION
    assert [LOBBY_EVENTS.decode(e.event) for e in written] == [OPENED, *SEATED]
    later = fold().extend("table-1", None, stored_as(written[:1], "open"))
    assert [e.version for e in envelopes().encode(later, SEATED, Stamp("sit", "p0", b"d", WHEN))] == [2, 3, 4]


def test_a_fold_of_stored_envelopes_is_the_fold_of_the_act_that_stored_them() -> None:
    """What a replica reads from the store (``extend``) is what the replica that acted holds (``appended``), so a
    read never tells which replica acted."""
    empty = fold().absent("table-1")
    written = envelopes().encode(empty, [OPENED, *SEATED], Stamp("open", "owner", b"digest", WHEN))
    recorded = stored_as(written, "open")
    read = fold().extend("table-1", None, recorded)
    acted, answer = fold().appended(fold().absent("table-1"), [OPENED, *SEATED], written, recorded)
    assert answer == [OPENED, *SEATED], "the lobby's act is answered with its events"
    assert (read.state, read.position, read.latest) == (acted.state, acted.position, acted.latest)
    assert read.commands == acted.commands == {"open": (0, b"digest")}
    assert read.last(tb.SeatTaken) == SEATED[-1] and read.version == 4


def test_event_envelopes_answer_a_command_id_the_snapshot_holds_and_no_later_one() -> None:
    first = envelopes().encode(fold().absent("table-1"), [OPENED], Stamp("open", "owner", b"d-open", WHEN))
    opened = fold().extend("table-1", None, stored_as(first, "open"))
    second = envelopes().encode(opened, SEATED[:1], Stamp("sit", "p0", b"d-sit", WHEN))
    seated = fold().extend("table-1", opened, stored_as(second, "sit", opened.position))

    async def main() -> None:
        assert await envelopes().stored(seated, "open") == (b"d-open", [])
        assert await envelopes().stored(seated, "sit") == (b"d-sit", [])
        assert await envelopes().stored(seated, "never") is None
        assert await envelopes().stored(opened, "sit") is None, "an older snapshot does not hold a later command"

    asyncio.run(main())


# -- the moves a long poll waits for -----------------------------------------------------------------------------


def enveloped(aggregate: str, version: int, event: Any) -> Recorded:
    envelope = ENVELOPE(aggregate=aggregate, version=version, command_id=f"c{version}")
    envelope.event.CopyFrom(LOBBY_EVENTS.encode(event))  # type: ignore[arg-type]
    return Recorded(aggregate, version, version, f"c{version}", envelope.SerializeToString())


def test_moves_count_what_their_filter_names_and_name_each_aggregate_once() -> None:
    moves = Moves(ENVELOPE, lambda envelope: envelope.event.WhichOneof("event") == "bot_seated")
    moves.fed(enveloped("t1", 1, OPENED))
    assert moves.count == 0, "a table opened is no move"
    for version, table in enumerate(["t1", "t2", "t1"], start=2):
        moves.fed(enveloped(table, version, tb.BotSeated(1, f"bot-{table}")))
    assert moves.count == 3 and moves.since(0) == ["t1", "t2"] and moves.since(2) == ["t1"] and moves.since(3) == []
    for n in range(MOVES_KEPT + 10):
        moves.fed(enveloped(f"x{n}", 1, tb.BotSeated(0, "bot")))
    assert len(moves.since(0)) == MOVES_KEPT, "only the latest moves' aggregates are kept"
    nothing = Moves(ENVELOPE, None)
    nothing.fed(enveloped("t1", 2, tb.BotSeated(1, "bot")))
    assert nothing.count == 0


def test_a_wait_for_a_move_is_woken_by_the_next_one_and_misses_none_before_it() -> None:
    async def main() -> None:
        moves = Moves(ENVELOPE, lambda envelope: True)
        assert not await moves.after(0, 0.01)
        waiting = asyncio.create_task(moves.after(0, 30))
        await asyncio.sleep(0)
        moves.fed(enveloped("t1", 1, OPENED))
        assert await asyncio.wait_for(waiting, 5), "woken at once, long before its 30 s"
        moves.fed(enveloped("t1", 2, SEATED[0]))
        assert await moves.after(1, 0), "a move before the wait began is not missed"

    asyncio.run(main())


# -- one act, top to bottom -----------------------------------------------------------------------------------------


class JournalFold(CoreFold[tb.Table]):
    def __init__(self, journal: list[str]) -> None:
        super().__init__(ENVELOPE, LOBBY_EVENTS, tb.Table, tb.evolve)
        self.journal = journal

    def absent(self, aggregate: str) -> Loaded[tb.Table]:
        self.journal.append(f"fold.absent {aggregate}")
        return super().absent(aggregate)

    def extend(self, aggregate: str, snapshot: Loaded[tb.Table] | None, tail: Sequence[Recorded]) -> Loaded[tb.Table]:
        self.journal.append(f"fold.extend {aggregate} +{len(tail)}")
        return super().extend(aggregate, snapshot, tail)

    def appended(
        self, snapshot: Loaded[tb.Table], events: Sequence[Any], envelopes: Sequence[Any], recorded: Sequence[Recorded]
    ) -> tuple[Loaded[tb.Table], Sequence[Any]]:
        self.journal.append(f"fold.appended +{len(events)}")
        return super().appended(snapshot, events, envelopes, recorded)


class JournalEnvelopes(EventEnvelopes[tb.Table]):
    def __init__(self, journal: list[str]) -> None:
        super().__init__(ENVELOPE, LOBBY_EVENTS)
        self.journal = journal

    def encode(self, snapshot: Loaded[tb.Table], events: Sequence[Any], stamp: Stamp) -> list[Any]:
        self.journal.append(f"envelopes.encode +{len(events)}")
        return super().encode(snapshot, events, stamp)

    async def stored(self, snapshot: Loaded[tb.Table], command_id: str) -> tuple[bytes, Sequence[Any]] | None:
        self.journal.append(f"envelopes.stored {command_id}")
        return await super().stored(snapshot, command_id)


class JournalListener:
    def __init__(self, journal: list[str]) -> None:
        self.journal = journal

    def fed(self, recorded: Recorded) -> None:
        self.journal.append(f"listener.fed {recorded.aggregate} v{recorded.version}")

    def remembered(self, snapshot: Loaded[tb.Table]) -> None:
        self.journal.append(f"listener.remembered {snapshot.aggregate} v{snapshot.version}")

    def forgotten(self, aggregate: str) -> None:
        self.journal.append(f"listener.forgotten {aggregate}")


def journaled(store: Any, journal: list[str], **kinds: Any) -> Repository[Loaded[tb.Table]]:
    return Repository(
        store,
        JournalFold(journal),
        JournalEnvelopes(journal),
        noun="the table",
        listener=JournalListener(journal),
        **kinds,
    )


def test_one_act_calls_the_kinds_collaborators_in_the_order_the_module_states() -> None:
    async def main() -> None:
        journal: list[str] = []
        store = MemoryEventStore()
        tables = journaled(store, journal)
        await tables.follow()

        def decide(events: list[Any]) -> Callable[[Loaded[tb.Table]], list[Any]]:
            def deciding(table: Loaded[tb.Table]) -> list[Any]:
                journal.append(f"decide at v{table.version}")
                return events

            return deciding

        await tables.execute("table-1", decide([OPENED]), "open", "owner", b"d-open")
        assert journal == [
            "fold.absent table-1",  # 1. nothing stored yet
            "envelopes.stored open",  # 2. not a retry
            "decide at v0",  # 3.
            "envelopes.encode +1",  # 4. then appended
            "fold.appended +1",  # 5.
            "listener.remembered table-1 v1",  # 6.
        ]
        journal.clear()
        await asyncio.sleep(0)
        assert journal == ["listener.fed table-1 v1"], "the feed brings its own event back: passed over, not folded"

        journal.clear()
        after, answer = await tables.execute("table-1", decide(SEATED), "sit", "p0", b"d-sit")
        assert after.version == 4 and answer == SEATED
        assert journal == [
            "envelopes.stored sit",  # 1. the cached table, current: nothing read
            "decide at v1",
            "envelopes.encode +3",
            "fold.appended +3",
            "listener.remembered table-1 v4",
        ]
        journal.clear()
        again, answer = await tables.execute("table-1", decide(SEATED), "sit", "p0", b"d-sit")
        assert (again.version, answer) == (4, []) and journal == ["envelopes.stored sit"], "a retry decides nothing"
        with pytest.raises(StaleVersion, match="the table is at version 4"):
            await tables.execute("table-1", decide([]), "late", "p1", b"d-late", expected_version=1)

    asyncio.run(main())


# -- the listener and what the feed carries, on a real nats-server --------------------------------------------------

Scenario = Callable[[JetStreamEventStore, JetStreamEventStore], Awaitable[None]]


def two_connections(nats_url: str, scenario: Scenario, partitions: int = 0) -> None:
    """A writer and a reader, each on its own connection to one stream (as two replicas are)."""

    async def main() -> None:
        stream = "R" + uuid.uuid4().hex[:12].upper()
        prefix = f"r.{stream.lower()}"
        writer = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix, partitions=partitions)
        reader = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=prefix, partitions=partitions)
        try:
            await scenario(writer, reader)
        finally:
            await reader.close()
            await writer.close()

    asyncio.run(main())


def lobby(store: Any) -> Aggregates[tb.Table]:
    return Aggregates(store, LOBBY_EVENTS, tb.Table, lambda _, events: events, tb.evolve)


@pytest.mark.integration
def test_the_listener_hears_another_writers_events_and_what_this_process_does_not_hold(nats_url: str) -> None:
    async def scenario(writer: JetStreamEventStore, reader: JetStreamEventStore) -> None:
        journal: list[str] = []
        tables = journaled(reader, journal)
        await tables.follow()
        other = lobby(writer)
        await other.act("held", [OPENED], "open", "owner")
        await wait_until(
            lambda: "listener.fed held v1" in journal, "the feed to bring held v1", explain=lambda: journal
        )
        await tables.load("held")
        journal.clear()
        await other.act("held", SEATED[:1], "sit", "p0")
        await wait_until(lambda: len(journal) == 3, "three journal lines", explain=lambda: journal)
        assert journal == ["listener.fed held v2", "fold.extend held +1", "listener.remembered held v2"]
        journal.clear()
        await other.act("elsewhere", [OPENED], "open", "owner")
        await wait_until(lambda: len(journal) == 2, "two journal lines", explain=lambda: journal)
        assert journal == ["listener.fed elsewhere v1", "listener.forgotten elsewhere"], "not held: not folded"

    two_connections(nats_url, scenario)


@pytest.mark.integration
def test_an_aggregate_the_feed_does_not_carry_here_is_read_through_the_store(nats_url: str) -> None:
    """``carries``: a reader whose feed carries one partition trusts its cache for that partition only; an aggregate
    of another partition it reads from the store and follows by the store's notices of its appends."""

    async def scenario(writer: JetStreamEventStore, reader: JetStreamEventStore) -> None:
        ours = next(g for g in (f"t{i}" for i in range(100)) if partition_of(g, 4) == 0)
        theirs = next(g for g in (f"t{i}" for i in range(100)) if partition_of(g, 4) == 1)
        await reader.own(frozenset({0}))
        journal: list[str] = []
        tables = journaled(reader, journal, carries=lambda aggregate: reader.partition(aggregate) == 0)
        await tables.follow()
        other = lobby(writer)
        for table in (ours, theirs):
            await other.act(table, [OPENED], "open", "owner")
        assert (await tables.load(theirs)).version == 1
        await wait_until(
            lambda: f"listener.fed {ours} v1" in journal, f"the feed to bring {ours} v1", explain=lambda: journal
        )
        assert (await tables.load(ours)).version == 1
        assert not any(theirs in line and "fed" in line for line in journal), "the feed carries partition 0 only"
        waiting = asyncio.create_task(tables.next_change(theirs, 1))
        await other.act(theirs, SEATED[:1], "sit", "p0")
        async with asyncio.timeout(10):
            assert (await waiting).version == 2, "woken by the store's notice, not by the feed"
        await other.act(theirs, SEATED[1:2], "sit-1", "p1")

        async def read_anew() -> bool:
            return bool((await tables.load(theirs)).version == 3)

        # the notice of the append makes the cache untrusted
        await wait_until(read_anew, f"{theirs} read from the store at version 3")
        await other.act(ours, SEATED[:1], "sit", "p0")
        await wait_until(
            lambda: f"listener.remembered {ours} v2" in journal, f"{ours} v2 remembered", explain=lambda: journal
        )
        assert (await tables.load(ours)).version == 2, "kept current by the feed"

    two_connections(nats_url, scenario, partitions=4)
