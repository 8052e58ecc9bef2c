"""`SeatLeases` against a lagging read model: a table whose match started before the read model lists it is found
through ``also`` once, and a runner's next call still finds its seats there (the read model can lag seconds under
load), until the table stops playing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from paiju.lobby.leases import LEASE_SECONDS, SeatLeases
from paiju.lobby.table import AddBot, OpenTable, StartMatch, Status, Table, decide, evolve

T = "t1"
OWNER = "owner"


@dataclass
class _Loaded:
    state: Table


class _Tables:
    """The lobby's tables in memory, moved by the table's own decide and evolve."""

    def __init__(self) -> None:
        self.tables: dict[str, Table] = {}

    async def load(self, table_id: str) -> _Loaded:
        return _Loaded(self.tables.get(table_id, Table()))

    async def act(self, table_id: str, command: Any, command_id: str, actor: str) -> None:
        table = self.tables.get(table_id, Table())
        for event in decide(table, command):
            table = evolve(table, event)
        self.tables[table_id] = table


def _run(tables: _Tables, *commands: Any) -> None:
    for command in commands:
        asyncio.run(tables.act(T, command, "", OWNER))


def test_a_runner_keeps_its_seats_while_the_read_model_has_not_listed_the_table() -> None:
    tables = _Tables()
    _run(tables, OpenTable(T, "Bots", "zlj", OWNER), *[AddBot(OWNER) for _ in range(6)], StartMatch(OWNER))
    assert tables.tables[T].status is Status.PLAYING
    listed: list[str] = []  # the read model has not caught up with the match's start

    async def playing() -> list[str]:
        return listed

    leases = SeatLeases(tables, playing)  # type: ignore[arg-type]
    first = asyncio.run(leases.lease("runner", 100, also=[T]))
    assert sorted(leased.seat for leased in first) == list(range(6)) and all(leased.new for leased in first)
    again = asyncio.run(leases.lease("runner", 101))
    assert sorted(leased.seat for leased in again) == list(range(6)), "the seats held are still the runner's"
    assert not any(leased.new for leased in again)
    later = asyncio.run(leases.lease("runner", 100 + LEASE_SECONDS + 1))
    assert later == [], "remembered for a lease's time only: by then the read model lists a playing table"


def test_a_table_no_longer_playing_is_forgotten() -> None:
    tables = _Tables()
    _run(tables, OpenTable(T, "Bots", "zlj", OWNER), *[AddBot(OWNER) for _ in range(6)], StartMatch(OWNER))

    async def playing() -> list[str]:
        return []

    leases = SeatLeases(tables, playing)  # type: ignore[arg-type]
    assert len(asyncio.run(leases.lease("runner", 100, also=[T]))) == 6
    tables.tables[T] = Table()  # the table as no longer playing
    assert asyncio.run(leases.lease("runner", 101)) == []
    tables.tables[T] = _played_again(tables)
    assert asyncio.run(leases.lease("runner", 102)) == [], "forgotten: found again only through the read model"


def _played_again(tables: _Tables) -> Table:
    fresh = _Tables()
    _run(fresh, OpenTable(T, "Bots", "zlj", OWNER), *[AddBot(OWNER) for _ in range(6)], StartMatch(OWNER))
    return fresh.tables[T]
