"""Two lobby replicas over one database and one NATS: a player's presence survives the replica they were
connected to. Ann and Bob watch their table through lobby one, which dies; Ann comes back through lobby two and
keeps her seat, Bob does not and a bot covers his seat once his mark has expired and the grace time has passed."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc

from paiju.lobby.attendance import KeyValueAttendance, cover_departures
from paiju.lobby.bootstrap import build as build_lobby
from paiju.platform.serving import build_server
from paiju.v1 import lobby_pb2, lobby_pb2_grpc

from ..support.credentials import LOBBY, TRUST
from ..support.waiting import wait_until
from .stack import Stack, stack
from .test_lobby import seat_everyone

PRESENCE = 1.0


def test_presence_survives_the_lobby_replica_it_was_connected_to(nats_url: str, database_dsn: str) -> None:
    marks: list[KeyValueAttendance] = []

    async def shared(lobby_store: Any) -> KeyValueAttendance:
        attendance = await KeyValueAttendance.open(
            lobby_store.client, lobby_store.stream, f"lobby-{len(marks) + 1}", presence=PRESENCE
        )
        marks.append(attendance)
        return attendance

    async def body(s: Stack) -> None:
        engine = s.engine
        second = await build_lobby(
            s.pool,
            s.lobby_store,
            s.games_store,
            s.tournaments_store,
            lambda: engine,
            signer=LOBBY,
            trust=TRUST,
            grace_seconds=s.grace,
            attendance=await shared(s.lobby_store),
        )
        server = build_server(second.service.policy)
        lobby_pb2_grpc.add_LobbyServiceServicer_to_server(second.service, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        lobby_two: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
        stopping = asyncio.Event()
        one, two = marks
        background = [
            asyncio.create_task(one.keep(stopping)),
            asyncio.create_task(two.keep(stopping)),
            asyncio.create_task(cover_departures(two, second.service.presence.departed)),
        ]
        try:
            _, owner = await s.player("Owner")
            ann_id, ann = await s.player("Ann")
            _, bob = await s.player("Bob")
            table_id = await s.table(owner)
            await seat_everyone(s, table_id, owner, [owner, ann, bob], bots=3)
            await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)
            seats = {}
            for name, who in (("ann", ann), ("bob", bob)):
                joined = await s.lobby.JoinGame(lobby_pb2.JoinGameRequest(table_id=table_id), metadata=who)
                seats[name] = joined.seat
            watches = [
                s.lobby.WatchTable(lobby_pb2.WatchTableRequest(table_id=table_id), metadata=m) for m in (ann, bob)
            ]
            for watch in watches:
                await watch.read()
            assert await two.here(table_id, ann_id), "lobby two sees Ann watching through lobby one"

            # lobby one dies: its streams break, nothing renews its marks, it covers nobody
            one.hand_over()
            background[0].cancel()
            for watch in watches:
                watch.cancel()
            await wait_until(lambda: not one._present, "lobby one to drop the watches that broke")
            await s.lobby_service.presence.close()  # its covers waiting for the grace time die with it
            back = lobby_two.WatchTable(lobby_pb2.WatchTableRequest(table_id=table_id), metadata=ann)  # Ann reconnects
            await back.read()

            async def covered() -> dict[str, bool]:
                t = (await lobby_two.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=owner)).table
                return {name: bool(t.seats[seat].covered) for name, seat in seats.items()}

            async def bob_covered() -> bool:
                return (await covered())["bob"]

            await wait_until(bob_covered, "lobby two to cover Bob's seat")
            assert await covered() == {"ann": False, "bob": True}, "Bob is covered, Ann, back elsewhere, is not"
            await asyncio.sleep(PRESENCE + s.grace + 0.5)
            assert (await covered())["ann"] is False
            back.cancel()
        finally:
            stopping.set()
            for task in background:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            await channel.close()
            await server.stop(None)
            await second.service.close()

    async def main() -> None:
        async with stack(nats_url, database_dsn, attendance=shared) as s:
            await body(s)

    asyncio.run(main())
