"""Covers of absent players (`paiju.lobby.presence`): a seated player who stops watching during a match is covered
by a bot after the grace time, and a cover that fails is tried again, never dropped in silence. The table lives in
the real repository over the in-memory event store (the one that passes the store's contract suite); the engine's
side of a cover is a function the test writes."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import pytest
import structlog

from paiju.lobby import presence as presence_module
from paiju.lobby import table as tb
from paiju.lobby.presence import Presence
from paiju.lobby.service import new_tables
from paiju.platform.errors import Reason, Refused
from paiju.platform.repository import Aggregates
from paiju.platform.store.memory import MemoryEventStore
from paiju.v1 import engine_pb2

from ..support.waiting import wait_until

T = "t1"
OWNER = "owner"
ANN = "p-ann"


async def playing(tables: Aggregates[tb.Table]) -> None:
    """Ann in seat 0 and five bots, the match started."""
    commands: list[Any] = [tb.OpenTable(T, "Friday table", "zlj", OWNER), tb.TakeSeat(ANN, "Ann", 0)]
    commands += [tb.AddBot(OWNER) for _ in range(5)]
    commands += [tb.SetReady(ANN, True), tb.StartMatch(OWNER)]
    for number, command in enumerate(commands):
        await tables.act(T, command, f"setup-{number}", OWNER)


async def covered(tables: Aggregates[tb.Table]) -> bool:
    return bool((await tables.refresh(T)).state.seats[0].covered)


def cover_after(failures: list[BaseException]) -> tuple[list[tuple[Any, ...]], Any]:
    """The engine's side of a cover, failing with each of ``failures`` in turn before it succeeds; and its calls."""
    calls: list[tuple[Any, ...]] = []

    async def engine_seats(table: tb.Table, seats: dict[int, str], change: int, command_id: str) -> None:
        calls.append((dict(seats), change, command_id))
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]

    return calls, engine_seats


@pytest.mark.parametrize(
    "failure",
    [
        RuntimeError("an answer nobody foresaw"),
        Refused(Reason.DEPENDENCY_UNAVAILABLE, "the engine is out of reach"),
        ConnectionResetError("the engine's connection was reset"),
    ],
    ids=["unforeseen", "refused-unavailable", "connection"],
)
def test_a_cover_that_fails_is_tried_again_until_the_seat_is_covered(
    failure: BaseException, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(presence_module, "COVER_RETRY_SECONDS", 0.01)

    async def scenario() -> None:
        tables = new_tables(MemoryEventStore())
        await playing(tables)
        calls, engine_seats = cover_after([failure, failure])
        presence = Presence(tables, engine_seats, grace_seconds=0)
        with structlog.testing.capture_logs() as logs:
            async with presence.watching(T, ANN):
                pass  # Ann watched, and left
            await wait_until(lambda: covered(tables), "the seat covered after the failed tries", every=0.01)
        await presence.close()
        assert len(calls) == 3
        assert {call[2] for call in calls} == {calls[0][2]}, "each try is the same command (one command id)"
        assert calls[-1][:2] == ({0: tb.cover_id(T, 0)}, engine_pb2.SEAT_CHANGE_COVER)
        told = [
            entry
            for entry in logs
            if entry["event"] in ("a cover failed; it is tried again", "cover waits for a dependency")
        ]
        if isinstance(failure, RuntimeError):  # a fault of ours: each failure, with its traceback
            assert len(told) == 2, logs
            assert all(entry["log_level"] == "error" and entry.get("exc_info") for entry in told)
        else:  # a dependency away: the first failure, its repeat within the minute held back
            assert len(told) == 1, logs

    asyncio.run(scenario())


def test_a_refused_cover_is_not_tried_again_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(presence_module, "COVER_RETRY_SECONDS", 0.01)

    async def scenario() -> None:
        tables = new_tables(MemoryEventStore())
        await playing(tables)
        calls, engine_seats = cover_after([Refused(Reason.GAME_NOT_FOUND, "no such game")])
        presence = Presence(tables, engine_seats, grace_seconds=0)
        with structlog.testing.capture_logs() as logs:
            async with presence.watching(T, ANN):
                pass
            await wait_until(lambda: _said(logs, "could not cover a seat"), "the refusal logged", every=0.01)
            await asyncio.sleep(0.2)  # room for the retries that must not come (one every 0.01 s)
        await presence.close()
        assert len(calls) == 1
        assert not await covered(tables)

    asyncio.run(scenario())


def test_a_player_back_within_the_grace_time_is_not_covered() -> None:
    async def scenario() -> None:
        tables = new_tables(MemoryEventStore())
        await playing(tables)
        calls, engine_seats = cover_after([])
        presence = Presence(tables, engine_seats, grace_seconds=0.5)
        async with presence.watching(T, ANN):
            pass
        async with presence.watching(T, ANN):  # back before the grace time ends, and still watching after it
            await asyncio.sleep(1.0)  # past the grace time
            assert calls == []
            assert not await covered(tables)
        await wait_until(lambda: covered(tables), "the seat covered once Ann left again", every=0.01)
        await presence.close()

    asyncio.run(scenario())


async def _said(logs: list[MutableMapping[str, Any]], event: str) -> bool:
    return any(entry["event"] == event for entry in logs)
