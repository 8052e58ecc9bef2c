"""The games projection in shards (paiju.scoring.bootstrap.games_shards) on a real NATS and PostgreSQL: shards
applied side by side end with the tables of one projection, a rebuild equals the incremental run, and an older
scoring's one projection hands its checkpoint over to the shards and is fenced off (nothing applied twice)."""

from __future__ import annotations

import asyncio
import types
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg

from paiju.engine.games import Games
from paiju.platform.postgres.pool import connect
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.scoring.bootstrap import games_shards
from paiju.scoring.projector import CHECKPOINTS, FENCED, Projector, shard_out
from paiju.scoring.readmodels import GamesProjection, migrate_scoring

from .recorded import record_tractor, record_zlj
from .test_readmodels import TRACTOR_PLAYERS, ZLJ_PLAYERS, snapshot


@dataclass
class Rig:
    store: JetStreamEventStore
    pool: asyncpg.Pool[Any]
    games: Games
    whole: Projector
    """The projection of the whole stream, named ``games`` as an older scoring ran it."""
    shards: list[Projector]
    """Its four shards, over one reading store."""

    async def record(self, first: int, count: int) -> None:
        for n in range(first, first + count):
            if n % 3 == 2:
                await record_tractor(self.games, f"t-{n}", TRACTOR_PLAYERS, seed=n)
            else:
                await record_zlj(self.games, f"z-{n}", ZLJ_PLAYERS, seed=n, deals=1)

    async def catch_up_shards(self) -> None:
        await asyncio.gather(*(s.catch_up() for s in self.shards))


@asynccontextmanager
async def rig(nats_url: str, database_dsn: str) -> AsyncIterator[Rig]:
    stream = "G" + uuid.uuid4().hex[:12].upper()
    store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"g.{stream.lower()}", partitions=8)
    pool = await connect(database_dsn)
    await migrate_scoring(pool)
    whole = Projector(pool, store.client, GamesProjection(stream, store.prefix), batch=50)
    projections = games_shards(types.SimpleNamespace(games_store=store), shards=4)  # type: ignore[arg-type]
    reading = store.sibling()
    shards = [Projector(pool, store.client, p, batch=50, store=reading) for p in projections]
    try:
        yield Rig(store, pool, Games(store), whole, shards)
    finally:
        for projector in (whole, *shards):
            await projector.close()
        await pool.close()
        await store.close()


def test_shards_side_by_side_equal_one_projection_and_a_rebuild(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with rig(nats_url, database_dsn) as r:
            assert [s.name for s in r.shards] == ["games.0", "games.1", "games.2", "games.3"]
            partitions = [p for s in r.shards for p in getattr(s.projection, "partitions", None) or ()]
            assert sorted(partitions) == list(range(8))
            await r.record(0, 9)
            await r.whole.catch_up()
            one = await snapshot(r.pool)
            assert len(one["scoring_matches"]) == 9
            await r.whole.reset()

            # the shards at once, while more games are stored, then caught up
            await asyncio.gather(r.catch_up_shards(), r.record(9, 3))
            await r.catch_up_shards()
            incremental = await snapshot(r.pool)
            assert len(incremental["scoring_matches"]) == 12
            for shard in r.shards:
                await shard.reset()
            await r.catch_up_shards()
            assert await snapshot(r.pool) == incremental, "a rebuild of the shards equals their incremental run"
            await r.whole.reset()
            await r.whole.catch_up()
            assert await snapshot(r.pool) == incremental, "and both equal one projection of the whole stream"

    asyncio.run(body())


def test_an_older_scorings_projection_hands_over_to_the_shards_and_is_fenced_off(
    nats_url: str, database_dsn: str
) -> None:
    async def body() -> None:
        async with rig(nats_url, database_dsn) as r:
            older = r.whole  # named "games", as an older scoring ran its one projection
            await r.record(0, 4)
            await older.catch_up()
            handed = await older.checkpoint()
            await r.record(4, 3)
            names = [s.name for s in r.shards]
            assert await shard_out(r.pool, "games", names) == handed
            assert await shard_out(r.pool, "games", names) == 0, "once"
            assert [await s.checkpoint() for s in r.shards] == [handed] * 4
            assert await older.catch_up() == 0, "the older projection is fenced: it reads nothing more"
            assert await older.checkpoint() == FENCED
            await r.catch_up_shards()
            handed_over = await snapshot(r.pool)
            assert len(handed_over["scoring_matches"]) == 7, "each game applied once"
            await r.pool.execute(f"DELETE FROM {CHECKPOINTS}")
            again = Projector(r.pool, r.store.client, GamesProjection(r.store.stream, r.store.prefix, name="again"))
            await again.reset()
            await again.catch_up()
            assert await snapshot(r.pool) == handed_over
            await again.close()

    asyncio.run(body())
