"""A new table's rule options over the API, for every game of the registry: its own game's options are kept and
shown in that game's field of the table; another game's options are refused (INVALID_OPTIONS), naming the game
they are for."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from paiju.contract.games import GAMES
from paiju.v1 import lobby_pb2

from ..engine.harness import reason_of
from .stack import Stack, stack


def test_a_table_takes_its_own_games_options_only(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        for name, codecs in GAMES.items():
            options = codecs.rules.options(turn_seconds=7)
            request = lobby_pb2.CreateTableRequest(name=f"{name} table", game=codecs.kind)
            encoded: Any = codecs.codec.encode(options)
            getattr(request, codecs.options_field).CopyFrom(encoded)
            table = (await s.lobby.CreateTable(request, metadata=owner)).table
            assert table.game == codecs.kind and table.WhichOneof("options") == codecs.options_field
            assert codecs.codec.decode(getattr(table, codecs.options_field), codecs.rules.options) == options
            for other in GAMES.values():
                if other is codecs:
                    continue
                wrong = lobby_pb2.CreateTableRequest(name="wrong", game=codecs.kind)
                foreign: Any = other.codec.encode(other.rules.options())
                getattr(wrong, other.options_field).CopyFrom(foreign)
                try:
                    await s.lobby.CreateTable(wrong, metadata=owner)
                except grpc.aio.AioRpcError as e:
                    assert (e.code(), reason_of(e)) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_OPTIONS")
                    assert e.details() == f"{other.options_field} are for a {other.rules.title} table"
                else:
                    raise AssertionError(f"a {name} table took {other.options_field}")

    async def main() -> None:
        async with stack(nats_url, database_dsn) as s:
            await body(s)

    asyncio.run(main())
