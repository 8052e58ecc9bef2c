"""Attendance (paiju.lobby.attendance) through a NATS outage, on a nats-server of the test's own, killed and started
again while the replicas live: a player who leaves while their mark cannot be deleted is not present for anyone
once NATS is back (the delete is made at the next heartbeat), and an arrival whose mark cannot be written is not
counted (its watch fails, and the client's next one is the only one). Either way, before, the player stayed present
for as long as the replica ran: their seat never covered by a bot, their queue entry never withdrawn."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from paiju.lobby.attendance import KeyValueAttendance
from paiju.platform import nats as paiju_nats
from paiju.platform.edge import DEPENDENCY_GONE

from ..support.nats_server import RestartableNats
from ..support.waiting import wait_until

pytestmark = pytest.mark.integration  # a nats-server of the test's own, killed and started again
PRESENCE = 12.0
"""Long enough that replica a's heartbeat outlives the outage (it beats every 4 s): its marks still count."""


async def replicas(server: RestartableNats) -> tuple[list[Any], KeyValueAttendance, KeyValueAttendance]:
    stream = "L" + uuid.uuid4().hex[:8]
    clients = [await paiju_nats.connect(server.url, f"attendance-{name}") for name in "ab"]
    a = await KeyValueAttendance.open(clients[0], stream, "replica-a", presence=PRESENCE)
    b = await KeyValueAttendance.open(clients[1], stream, "replica-b", presence=PRESENCE)
    return clients, a, b


async def outage(server: RestartableNats, clients: list[Any]) -> None:
    server.kill()
    await wait_until(lambda: not any(c.is_connected for c in clients), "the replicas to notice NATS is gone")


async def back(server: RestartableNats, clients: list[Any]) -> None:
    server.start()
    await wait_until(lambda: all(c.is_connected for c in clients), "the replicas back on NATS", every=0.05)


def test_a_player_who_left_while_nats_was_away_is_gone_for_everyone_once_it_is_back(tmp_path: Path) -> None:
    with RestartableNats(tmp_path / "nats") as server:

        async def main() -> None:
            clients, a, b = await replicas(server)
            stopping = asyncio.Event()
            keeping = asyncio.create_task(a.keep(stopping))
            try:
                await a.arrive("t1", "ann")
                assert await b.here("t1", "ann")
                await outage(server, clients)
                assert await a.leave("t1", "ann"), "her last stream here: counted out at once"
                await back(server, clients)
                assert not await a.here("t1", "ann"), "a mark of this replica's own whose delete is owed counts not"
                await wait_until(
                    lambda: _absent(b, "t1", "ann"), "the owed delete at the next heartbeat", ignoring=DEPENDENCY_GONE
                )
                await a.arrive("t1", "ann")  # she comes back: marked again, and nothing owed takes that away
                await asyncio.sleep(PRESENCE / 3 + 0.5)  # past a heartbeat
                assert await b.here("t1", "ann")
            finally:
                stopping.set()
                await keeping
                for client in clients:
                    await paiju_nats.close(client)

        asyncio.run(main())


async def _arrived(attendance: KeyValueAttendance, table_id: str, player: str) -> bool:
    await attendance.arrive(table_id, player)
    return True


async def _absent(attendance: KeyValueAttendance, table_id: str, player: str) -> bool:
    return not await attendance.here(table_id, player)


def test_an_arrival_whose_mark_cannot_be_written_is_not_counted(tmp_path: Path) -> None:
    with RestartableNats(tmp_path / "nats") as server:

        async def main() -> None:
            clients, a, b = await replicas(server)
            try:
                await outage(server, clients)
                with pytest.raises(DEPENDENCY_GONE):
                    await a.arrive("t1", "bob")  # the watch fails: its client opens it again
                await back(server, clients)
                await wait_until(lambda: _arrived(a, "t1", "bob"), "the watch opened again", ignoring=DEPENDENCY_GONE)
                assert await b.here("t1", "bob")
                assert await a.leave("t1", "bob"), "the only watch that opened was his last"
                assert not await b.here("t1", "bob"), "gone for everyone"
            finally:
                for client in clients:
                    await paiju_nats.close(client)

        asyncio.run(main())
