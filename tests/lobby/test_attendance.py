"""Attendance shared by lobby replicas in a NATS key-value bucket (paiju.lobby.attendance), on a real nats-server:
a player watching through one replica is present for every replica; when a replica's heartbeat expires every other
replica hears of its players; a replica handing over leaves its players to that; a replica that starts finds the
players of replicas that died while nobody listened."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import nats
import pytest

from paiju.lobby.attendance import KeyValueAttendance, LocalAttendance

from ..support.waiting import wait_until

pytestmark = pytest.mark.integration
PRESENCE = 1.0
"""A short heartbeat for the tests that wait for one to expire."""
LASTING = 60.0
"""A heartbeat no test outlives (for those that must not depend on how fast a loaded machine runs them)."""


async def two(nats_url: str, presence: float = PRESENCE) -> tuple[KeyValueAttendance, KeyValueAttendance]:
    client = await nats.connect(nats_url)
    stream = "L" + uuid.uuid4().hex[:8]
    return (
        await KeyValueAttendance.open(client, stream, "replica-a", presence=presence),
        await KeyValueAttendance.open(client, stream, "replica-b", presence=presence),
    )


@contextlib.asynccontextmanager
async def hearing(attendance: KeyValueAttendance) -> AsyncIterator[list[tuple[str, str]]]:
    heard: list[tuple[str, str]] = []

    async def listen() -> None:
        async for departure in attendance.departures():
            heard.append(departure)

    listening = asyncio.create_task(listen())
    await asyncio.sleep(0.3)  # the watcher has read what the bucket held
    try:
        yield heard
    finally:
        listening.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await listening


def test_a_player_watching_through_one_replica_is_present_for_every_replica(nats_url: str) -> None:
    async def main() -> None:
        a, b = await two(nats_url, presence=LASTING)  # replica a lives throughout, however slowly the test runs
        assert not await b.here("t1", "ann")
        await a.arrive("t1", "ann")
        await a.arrive("t1", "ann")  # a second stream of hers
        assert await b.here("t1", "ann") and await a.here("t1", "ann")
        assert not await b.here("t1", "bob") and not await b.here("t2", "ann")
        assert not await a.leave("t1", "ann"), "one stream still open"
        assert await b.here("t1", "ann")
        assert await a.leave("t1", "ann"), "her last stream here"
        assert not await b.here("t1", "ann"), "gone at once: her mark is taken away"

    asyncio.run(main())


def test_a_replica_that_renews_keeps_its_players_and_one_that_died_loses_them_to_a_departure(nats_url: str) -> None:
    async def main() -> None:
        a, b = await two(nats_url)
        stopping = asyncio.Event()
        keeping = asyncio.create_task(a.keep(stopping))
        async with hearing(b) as heard:
            await a.arrive("t1", "ann")
            await asyncio.sleep(PRESENCE * 2.5)
            assert await b.here("t1", "ann"), "renewed: present long past one lease"
            assert heard == []
            stopping.set()  # the replica dies: nothing renews its marks
            await keeping
            await wait_until(lambda: heard, "the server to expire the heartbeat and replica b to hear of it")
            assert heard == [("t1", "ann")], "every replica hears of the departure"
            assert not await b.here("t1", "ann")

    asyncio.run(main())


def test_a_replica_handing_over_leaves_its_marks_to_expire(nats_url: str) -> None:
    async def main() -> None:
        a, b = await two(nats_url, presence=3.0)
        stopping = asyncio.Event()
        keeping = asyncio.create_task(a.keep(stopping))
        async with hearing(b) as heard:
            await a.arrive("t1", "ann")
            await a.arrive("t1", "bob")
            assert await a.leave("t1", "bob")  # Bob left on purpose: handled by replica a, nobody else hears it
            a.hand_over()
            assert await a.leave("t1", "ann")
            assert await b.here("t1", "ann"), "until her mark expires"
            stopping.set()  # the replica stops, as the lobby does after handing over
            await keeping
            await wait_until(lambda: heard, "Ann's mark to expire and replica b to hear of it")
            await asyncio.sleep(0.2)
            assert heard == [("t1", "ann")]

    asyncio.run(main())


def test_local_attendance_counts_streams() -> None:
    async def main() -> None:
        local = LocalAttendance()
        await local.arrive("t", "p")
        await local.arrive("t", "p")
        assert not await local.leave("t", "p")
        assert await local.here("t", "p")
        assert await local.leave("t", "p")
        assert not await local.here("t", "p")

    asyncio.run(main())


def test_a_starting_replica_finds_the_players_of_a_replica_that_died_unheard(nats_url: str) -> None:
    async def main() -> None:
        a, b = await two(nats_url)
        await a.arrive("t1", "ann")
        await asyncio.sleep(PRESENCE * 3)  # a dies (the server drops an expired message within a second or so)
        assert not await b.here("t1", "ann"), "a mark counts only while its replica's heartbeat lives"
        async with hearing(b) as heard:
            await asyncio.sleep(0.2)
            assert heard == [("t1", "ann")]
        async with hearing(b) as again:
            await asyncio.sleep(0.2)
            assert again == [], "its mark was taken away"

    asyncio.run(main())
