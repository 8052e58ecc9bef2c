"""Games over in the engine's memory (`paiju.engine.games.Tending`, `ENDED_GAMES_KEPT`): only those that ended last
stay there, so the engine's memory levels off within minutes of play instead of growing until the cache's byte bound;
a game over that was dropped is read from the store, as it stood, when someone asks for it."""

from __future__ import annotations

import asyncio

from paiju.engine.games import Games
from paiju.engine.selfplay import record_zlj
from paiju.platform.store import MemoryEventStore
from paiju.rules.zlj import Options, StartMatch

from .test_timers import T0

PLAYERS = [f"p{i}" for i in range(6)]


def test_only_the_games_that_ended_last_stay_in_memory_and_the_others_are_read_again() -> None:
    async def main() -> None:
        store = MemoryEventStore()
        games = Games(store, clock=lambda: T0, ended_kept=2)
        await games.follow()
        ended = {}
        for n in range(4):
            ended[f"z{n}"] = await record_zlj(games, f"z{n}", PLAYERS, seed=n, deals=1)
        await games.create("running", "zlj", StartMatch(9, Options(deals=1, turn_seconds=30)), "start", "engine")
        assert set(games.repository.held()) == {"z2", "z3", "running"}, "the two that ended last, and the live one"

        again = await games.load("z0")  # dropped: read from the store as it stood
        assert again.version == ended["z0"].version
        assert again.state == ended["z0"].state
        assert set(games.repository.held()) == {"z3", "running", "z0"}, "read ended, it is among the last two"

    asyncio.run(main())


def test_by_default_the_engine_keeps_more_games_over_than_a_few() -> None:
    async def main() -> None:
        games = Games(MemoryEventStore(), clock=lambda: T0)
        await games.follow()
        for n in range(3):
            await record_zlj(games, f"z{n}", PLAYERS, seed=n, deals=1)
        assert set(games.repository.held()) == {"z0", "z1", "z2"}

    asyncio.run(main())
