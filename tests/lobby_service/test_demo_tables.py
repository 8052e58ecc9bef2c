"""`make run`'s demo tables keep playing (`paiju.dev.stack.keep_playing`): an operator's table of bots starts its next
match when the lobby says the last one is over, on the table's watch, and is watched again after the lobby cuts it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from paiju.dev.stack import keep_playing, open_bot_tables
from paiju.v1 import lobby_pb2, zlj_pb2

from ..support.credentials import ADMIN, BOTS
from ..support.waiting import wait_until
from .stack import stack

pytestmark = pytest.mark.integration  # the lobby, the engine and a bot runner in the process


def test_a_demo_table_starts_its_next_match_when_one_ends(nats_url: str, database_dsn: str) -> None:
    async def main() -> None:
        from paiju.botrunner.leases import LobbySeatSource
        from paiju.botrunner.runner import BotRunner

        async with stack(nats_url, database_dsn) as s:
            stop = asyncio.Event()
            runner = BotRunner(
                LobbySeatSource(s.lobby, "runner-d", BOTS, max_seats=6),
                s.engine,
                runner_id="runner-d",
                think=0.0,
                renew_every=1.0,
                retry_every=0.2,
            )
            bots = asyncio.create_task(runner.run(stop))
            # one-deal matches, so that the first ends within the test
            one_deal = zlj_pb2.ZljOptions(deals=1)
            tables = await open_bot_tables(s.lobby_address, ADMIN, games=("zlj",), options={"zlj": one_deal})
            table_id = tables["zlj"]
            told: list[str] = []
            keeper = asyncio.create_task(keep_playing(s.lobby_address, ADMIN, [table_id], stop, tell=told.append))
            try:
                first = await s.game_exists(f"{table_id}-m1")
                assert first.state.phase.value != "ended"
                # the first match ends; the second starts by itself, and its game exists at the engine
                second = await wait_until(
                    lambda: s.games.refresh(f"{table_id}-m2"),
                    "the second match's game",
                    seconds=120,
                    ignoring=(Exception,),
                )
                assert (await s.games.refresh(f"{table_id}-m1")).state.phase.value == "ended"
                assert second.seats and len(second.seats) == 6
                table = (await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=_admin())).table
                assert table.matches >= 2 and table.last_result.game_id.startswith(f"{table_id}-m")
                assert f"{table_id}: match 2 started" in told
                # a third too: the keeper goes on watching after a start
                await wait_until(
                    lambda: s.games.refresh(f"{table_id}-m3"),
                    "the third match's game",
                    seconds=120,
                    ignoring=(Exception,),
                )
                # opened again, the stack finds its table rather than opening another
                again = await open_bot_tables(s.lobby_address, ADMIN, games=("zlj",), options={"zlj": one_deal})
                assert again == tables
            finally:
                stop.set()
                await asyncio.wait_for(keeper, timeout=10)
                await asyncio.gather(bots, return_exceptions=True)
            assert f"{table_id}: match 3 started" in told

    asyncio.run(main())


def _admin() -> tuple[tuple[str, str], ...]:
    from paiju.dev.stack import _operator_metadata

    return _operator_metadata(ADMIN)


async def _game(s: Any, game_id: str) -> Any:
    """The engine's game ``game_id`` once it exists (a one-deal match of bots lasts seconds)."""
    return await wait_until(lambda: s.games.refresh(game_id), f"the game {game_id}", seconds=120, ignoring=(Exception,))
