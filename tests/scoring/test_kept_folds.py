"""The folds the GAMES projection keeps in memory between batches, on a real NATS and PostgreSQL: read from
``scoring_games`` only when they are not provably current (another replica moved the checkpoint, a batch failed),
and the tables always those of a projection that reads every fold from the database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import asyncpg
import pytest

from paiju.engine.games import Games
from paiju.platform.postgres.pool import connect
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.scoring import readmodels
from paiju.scoring.fold import DealRow
from paiju.scoring.projector import Projector
from paiju.scoring.readmodels import GamesProjection, migrate_scoring

from .recorded import open_games, record_tractor, record_zlj
from .test_readmodels import TRACTOR_PLAYERS, ZLJ_PLAYERS, snapshot

pytestmark = pytest.mark.integration
BATCH = 20
"""Events per batch: a game's events span many batches, as under load."""


class Uncached(GamesProjection):
    """The projection reading every fold from ``scoring_games`` at each batch, as before folds were kept."""

    def committed(self, sequence: int) -> None:
        self.forget()


@contextmanager
def fold_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The SELECTs of folds from ``scoring_games`` made while inside (their queries)."""
    made: list[str] = []
    real = asyncpg.connection.Connection.fetch

    async def fetch(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        if "FROM scoring_games" in query:
            made.append(query)
        return await real(self, query, *args, **kwargs)

    monkeypatch.setattr(asyncpg.connection.Connection, "fetch", fetch)
    yield made
    monkeypatch.setattr(asyncpg.connection.Connection, "fetch", real)


@asynccontextmanager
async def stream(nats_url: str, database_dsn: str) -> AsyncIterator[tuple[JetStreamEventStore, asyncpg.Pool[Any]]]:
    """A fresh stream with three games recorded, and the scoring database."""
    store, _, _ = await open_games(nats_url)
    pool = await connect(database_dsn)
    await migrate_scoring(pool)
    games = Games(store)
    try:
        await record_zlj(games, "z-1", ZLJ_PLAYERS, seed=31, deals=2)
        await record_tractor(games, "t-1", TRACTOR_PLAYERS, seed=32)
        await record_zlj(games, "z-2", ZLJ_PLAYERS, seed=33, deals=1)
        yield store, pool
    finally:
        await pool.close()
        await store.close()


def projector(
    store: JetStreamEventStore, pool: asyncpg.Pool[Any], kind: type[GamesProjection] = GamesProjection
) -> Projector:
    return Projector(pool, store.client, kind(store.stream, store.prefix), batch=BATCH, store=store.sibling())


async def uncached_tables(store: JetStreamEventStore, pool: asyncpg.Pool[Any], reset: Projector) -> dict[str, Any]:
    """The tables a projection reading every fold from the database builds from the whole stream."""
    await reset.reset()
    reference = projector(store, pool, Uncached)
    await reference.catch_up()
    await reference.close()
    return await snapshot(pool)


def test_consecutive_batches_read_no_fold_and_the_tables_equal_reading_every_fold(
    nats_url: str, database_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body() -> None:
        async with stream(nats_url, database_dsn) as (store, pool):
            kept = projector(store, pool)
            batches = 0
            with fold_reads(monkeypatch) as reads:
                while await kept.step():
                    batches += 1
            assert batches > 20
            # a game's fold is looked for once, in the batch of its first event: never read again
            assert len(reads) == 3
            tables = await snapshot(pool)
            assert len(tables["scoring_matches"]) == 3
            assert tables == await uncached_tables(store, pool, kept)
            await kept.close()

    asyncio.run(body())


def test_a_second_projection_moving_the_checkpoint_makes_the_first_read_the_folds_again(
    nats_url: str, database_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body() -> None:
        async with stream(nats_url, database_dsn) as (store, pool):
            first, second = projector(store, pool), projector(store, pool)  # two replicas of one projection
            with fold_reads(monkeypatch) as reads:
                steps = 0
                while True:  # turns: 1 2 1 1 2 1 1 2 ..., so that each also applies batches in a row
                    moved = await (second if steps % 3 == 1 else first).step()
                    if not moved:
                        moved = await first.step() + await second.step()
                        if not moved:
                            break
                    steps += 1
            assert steps > 20
            assert len(reads) > steps // 3  # after each batch of the other, the folds are read again
            assert len(reads) < steps  # and not after one's own
            tables = await snapshot(pool)
            assert len(tables["scoring_matches"]) == 3
            assert tables == await uncached_tables(store, pool, first)
            await first.close()
            await second.close()

    asyncio.run(body())


@pytest.mark.parametrize("when", ["halfway", "before-commit"])
def test_a_batch_whose_transaction_fails_leaves_no_fold_kept_and_its_retry_is_right(
    nats_url: str, database_dsn: str, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    async def body() -> None:
        async with stream(nats_url, database_dsn) as (store, pool):
            kept = projector(store, pool)
            failed: list[int] = []
            real_rows, real_apply = readmodels._write_rows, GamesProjection.apply

            async def rows_failing(connection: Any, rows: list[Any]) -> None:
                # the batch with the first deal's end fails, its folds moved past the deal and partly written
                if not failed and any(isinstance(r, DealRow) for r in rows):
                    failed.append(await kept.checkpoint())
                    raise RuntimeError("the database went away halfway through the batch")
                await real_rows(connection, rows)

            async def apply_failing(self: GamesProjection, tracked: Any, batch: Any) -> None:
                await real_apply(self, tracked, batch)  # every fold moved and written...
                if not failed and await tracked.connection.fetchval("SELECT count(*) FROM scoring_deals"):
                    failed.append(tracked.sequence)
                    raise RuntimeError("the projector dies before its commit")  # ...and rolled back

            if when == "halfway":
                monkeypatch.setattr(readmodels, "_write_rows", rows_failing)
            else:
                monkeypatch.setattr(GamesProjection, "apply", apply_failing)
            while True:
                try:
                    if not await kept.step():
                        break
                except RuntimeError:
                    assert await kept.checkpoint() == failed[0]  # nothing of the batch committed
            assert len(failed) == 1
            tables = await snapshot(pool)
            assert len(tables["scoring_deals"]) >= 4
            assert tables == await uncached_tables(store, pool, kept)
            await kept.close()

    asyncio.run(body())
