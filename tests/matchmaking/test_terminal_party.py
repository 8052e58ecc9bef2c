"""Two people at terminals (`paiju play` on pseudo-terminals) queue as a party for casual 砸六家 against the real lobby
and engine: Annabel forms the party and invites Bobby, Bobby accepts, Annabel queues the party, both confirm the
offered match and sit as partners — one team's alternating seats — with four bots (docs/rules/matchmaking.md)."""

from __future__ import annotations

import asyncio
import io

from paiju.v1 import lobby_pb2

from ..lobby_service.stack import PASSWORD, stack
from ..terminal.driver import PLAIN_TERMINAL, ClientTerminal


def test_two_terminal_players_queue_as_a_party_and_sit_as_partners_with_bots(nats_url: str, database_dsn: str) -> None:
    async def main() -> None:
        async with stack(nats_url, database_dsn) as s:
            matchmaker = s.lobby_service.matchmaker
            stopping = asyncio.Event()
            await matchmaker.lease_changed(frozenset({0, 1}))
            forming = asyncio.create_task(matchmaker.run(stopping))
            bob_id, bob = await s.player("Bobby")
            env = {**PLAIN_TERMINAL, "PAIJU_PASSWORD": PASSWORD}
            where = ("--lobby", s.lobby_address, "--engine", s.engine_address)
            ann_terminal = ClientTerminal(
                (
                    "play",
                    "zlj",
                    *where,
                    "--name",
                    "Annabel",
                    "--register",
                    "--party",
                    "--invite",
                    "Bobby",
                    "--queue",
                    "--bot-wait",
                    "1",
                ),
                timeout=30,
                env=env,
            )
            bob_terminal: ClientTerminal | None = None
            logs = {"ann": io.StringIO(), "bob": io.StringIO()}
            ann_terminal.logfile_read = logs["ann"]
            try:
                await asyncio.to_thread(ann_terminal.expect_exact, "Press Enter to queue", timeout=30)
                bob_terminal = ClientTerminal(
                    ("play", "zlj", *where, "--name", "Bobby", "--accept"), timeout=30, env=env
                )
                bob_terminal.logfile_read = logs["bob"]
                await asyncio.to_thread(bob_terminal.expect_exact, "You joined", timeout=30)
                ann_terminal.sendline("")
                tables = []
                for terminal in (ann_terminal, bob_terminal):
                    await asyncio.to_thread(terminal.expect_exact, "Confirmed", timeout=30)
                    await asyncio.to_thread(terminal.expect, r"Seated at table (table-\S+?), seat", timeout=30)
                    tables.append(terminal.match.group(1))  # type: ignore[union-attr]
                    await asyncio.to_thread(terminal.expect_exact, "Playing seat", timeout=30)
                assert tables[0] == tables[1]
                table = (await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=tables[0]), metadata=bob)).table
                people = {seat.name: seat.seat for seat in table.seats if not seat.bot}
                assert set(people) == {"Annabel", "Bobby"}
                assert people["Annabel"] % 2 == people["Bobby"] % 2, "partners sit in one team's alternating seats"
                assert sum(seat.bot for seat in table.seats) == 4 and table.status == lobby_pb2.TABLE_STATUS_PLAYING
                assert bob_id in {seat.player_id for seat in table.seats}
            except Exception:
                print("Annabel's terminal:\n" + logs["ann"].getvalue())
                print("Bobby's terminal:\n" + logs["bob"].getvalue())
                raise
            finally:
                ann_terminal.close()
                if bob_terminal is not None:
                    bob_terminal.close()
                stopping.set()
                await forming

    asyncio.run(main())


def test_q_at_the_terminal_leaves_the_queue_at_once(nats_url: str, database_dsn: str) -> None:
    async def main() -> None:
        async with stack(nats_url, database_dsn) as s:
            player_id, _ = await s.player("Carolyn")
            env = {**PLAIN_TERMINAL, "PAIJU_PASSWORD": PASSWORD}
            where = ("--lobby", s.lobby_address, "--engine", s.engine_address)
            terminal = ClientTerminal(("play", "zlj", *where, "--name", "Carolyn", "--queue", "--ranked"), 30, env)
            try:
                await asyncio.to_thread(terminal.expect_exact, "In the queue: Carolyn", timeout=30)
                queue = s.lobby_service.matchmaker.queue
                assert (await queue.load("queue")).state.entry_of(player_id) is not None
                terminal.sendline("q")
                await asyncio.to_thread(terminal.expect_exact, "You left the queue.", timeout=30)
                assert (await queue.load("queue")).state.entry_of(player_id) is None, "not only after the grace"
            finally:
                terminal.close()

    asyncio.run(main())
