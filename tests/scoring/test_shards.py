"""The games projection in shards (paiju.scoring.bootstrap.games_shards) on a real NATS and PostgreSQL: shards
applied side by side end with the tables of one projection, a rebuild equals the incremental run, and an older
scoring's one projection hands its checkpoint to the shards and is fenced off (nothing applied twice)."""

from __future__ import annotations

import asyncio
import types
import uuid
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


async def record(games: Games, first: int, count: int) -> None:
    for n in range(first, first + count):
        if n % 3 == 2:
            await record_tractor(games, f"t-{n}", TRACTOR_PLAYERS, seed=n)
        else:
            await record_zlj(games, f"z-{n}", ZLJ_PLAYERS, seed=n, deals=1)


async def empty(pool: asyncpg.Pool[Any], shards: list[Projector]) -> None:
    for shard in shards:
        await shard.reset()


def test_shards_side_by_side_equal_one_projection_and_a_rebuild(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        stream = "G" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"g.{stream.lower()}", partitions=8)
        pool = await connect(database_dsn)
        await migrate_scoring(pool)
        games = Games(store)
        whole = Projector(pool, store.client, GamesProjection(stream, store.prefix), batch=50)
        projections = games_shards(types.SimpleNamespace(games_store=store), shards=4)  # type: ignore[arg-type]
        reading = store.sibling()
        shards = [Projector(pool, store.client, p, batch=50, store=reading) for p in projections]
        try:
            assert [s.name for s in shards] == ["games.0", "games.1", "games.2", "games.3"]
            assert sorted(p for s in projections for p in s.partitions or ()) == list(range(8))
            await record(games, 0, 9)
            await whole.catch_up()
            one = await snapshot(pool)
            assert len(one["scoring_matches"]) == 9
            await whole.reset()

            # the shards at once, while more games are stored, then caught up
            recording = asyncio.create_task(record(games, 9, 3))
            await asyncio.gather(*(s.catch_up() for s in shards), recording)
            await asyncio.gather(*(s.catch_up() for s in shards))
            incremental = await snapshot(pool)
            assert len(incremental["scoring_matches"]) == 12
            await empty(pool, shards)
            await asyncio.gather(*(s.catch_up() for s in shards))
            assert await snapshot(pool) == incremental, "a rebuild of the shards equals their incremental run"
            await whole.reset()
            await whole.catch_up()
            assert await snapshot(pool) == incremental, "and both equal one projection of the whole stream"
        finally:
            for projector in (whole, *shards):
                await projector.close()
            await pool.close()
            await store.close()

    asyncio.run(body())


def test_an_older_scorings_projection_hands_over_to_the_shards_and_is_fenced_off(
    nats_url: str, database_dsn: str
) -> None:
    async def body() -> None:
        stream = "G" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"g.{stream.lower()}", partitions=8)
        pool = await connect(database_dsn)
        await migrate_scoring(pool)
        games = Games(store)
        older = Projector(pool, store.client, GamesProjection(stream, store.prefix), batch=50)  # named "games"
        projections = games_shards(types.SimpleNamespace(games_store=store), shards=4)  # type: ignore[arg-type]
        shards = [Projector(pool, store.client, p, batch=50, store=store.sibling()) for p in projections]
        try:
            await record(games, 0, 4)
            await older.catch_up()
            handed = await older.checkpoint()
            await record(games, 4, 3)
            assert await shard_out(pool, "games", [s.name for s in shards]) == handed
            assert await shard_out(pool, "games", [s.name for s in shards]) == 0, "once"
            assert [await s.checkpoint() for s in shards] == [handed] * 4
            assert await older.catch_up() == 0, "the older projection is fenced: it reads nothing more"
            assert await older.checkpoint() == FENCED
            await asyncio.gather(*(s.catch_up() for s in shards))
            handed_over = await snapshot(pool)
            assert len(handed_over["scoring_matches"]) == 7, "each game applied once"
            await pool.execute(f"DELETE FROM {CHECKPOINTS}")
            whole = Projector(pool, store.client, GamesProjection(stream, store.prefix, name="whole"))
            await whole.reset()
            await whole.catch_up()
            assert await snapshot(pool) == handed_over
            await whole.close()
        finally:
            for projector in (older, *shards):
                await projector.close()
            await pool.close()
            await store.close()

    asyncio.run(body())
