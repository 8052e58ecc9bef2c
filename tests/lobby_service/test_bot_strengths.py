"""A table's choice of bot strength (docs/bots.md, "Strengths"): `AddBot` names one of the strengths the rules cores
offer, the table shows it, the lease hands it to the bot runner, which plays the seat with that bot; a name outside
the contract's list is refused with a stable reason and changes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from paiju.botrunner.runner import STRENGTHS, bot_for
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.zlj import bots as zlj_bots
from paiju.v1 import engine_pb2, lobby_pb2

from ..engine.harness import refusal_of
from ..support.waiting import wait_until
from .stack import Stack, service_token, stack


def test_a_table_chooses_each_bots_strength_and_the_lease_carries_it(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        table_id = await s.table(owner, game=engine_pb2.GAME_TRACTOR)
        chosen = {0: "basic", 1: "heuristic", 2: None, 3: "basic"}
        for seat, strength in chosen.items():
            request = lobby_pb2.AddBotRequest(table_id=table_id, seat=seat)
            if strength is not None:
                request.strength = strength
            await s.lobby.AddBot(request, metadata=owner)
        stored = await s.lobby_store.load(table_id)
        for name in ("expert", "", "BASIC", "basic\x00", "x" * 5000):
            refused = lobby_pb2.AddBotRequest(table_id=table_id, strength=name)
            assert await refusal_of(s.lobby.AddBot(refused, metadata=owner)) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "INVALID_REQUEST",
            ), name
        assert await s.lobby_store.load(table_id) == stored, "a refused strength changes nothing"
        table = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
        assert [seat.strength for seat in table.seats] == ["basic", "heuristic", "", "basic"]
        lease = lobby_pb2.LeaseBotSeatsRequest(runner_id="test-runner", wait_seconds=5)

        async def all_four() -> Any:
            seats = (await s.lobby.LeaseBotSeats(lease, metadata=service_token())).seats
            return seats if len(seats) == 4 else None

        seats = await wait_until(all_four, "the runner leases the four bot seats")
        assert {seat.seat: seat.strength for seat in seats} == {0: "basic", 1: "heuristic", 2: "", 3: "basic"}

    async def main() -> None:
        async with stack(nats_url, database_dsn) as s:
            await body(s)

    asyncio.run(main())


@pytest.mark.parametrize("game", ["zlj", "tractor"])
def test_the_runner_plays_the_strength_the_table_chose(game: str) -> None:
    module = zlj_bots if game == "zlj" else tractor_bots
    assert set(STRENGTHS[game]) == {"basic", "heuristic"}
    assert isinstance(bot_for(game, "basic")(1), module.BasicBot)
    assert isinstance(bot_for(game, "heuristic")(1), module.HeuristicBot)
    assert isinstance(bot_for(game, "")(1), module.HeuristicBot), "no choice: the heuristic bot"


def test_the_contract_lists_exactly_the_rules_cores_strengths() -> None:
    field = lobby_pb2.AddBotRequest.DESCRIPTOR.fields_by_name["strength"]
    from buf.validate import validate_pb2

    rules = field.GetOptions().Extensions[validate_pb2.field]
    assert list(rules.string.__getattribute__("in")) == list(zlj_bots.STRENGTHS) == list(tractor_bots.STRENGTHS)
