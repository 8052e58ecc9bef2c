"""The GAMES projection on a real NATS and PostgreSQL: rows equal the events, exactly once, rebuild = incremental."""

from __future__ import annotations

import asyncio
import typing
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from decimal import Decimal
from typing import Any

import asyncpg
import pytest

from paiju.contract.games import TRACTOR_EVENTS, ZLJ_EVENTS
from paiju.engine.games import Games
from paiju.platform.postgres.pool import connect
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.scoring.projector import Projector
from paiju.scoring.readmodels import GamesProjection, migrate_scoring
from paiju.scoring.victory import victory_points
from paiju.v1 import engine_pb2

from .recorded import open_games, record_tractor, record_zlj

ZLJ_PLAYERS = [f"z{i}" for i in range(6)]
TRACTOR_PLAYERS = [f"t{i}" for i in range(4)]
SNAPSHOT = {
    "scoring_deals": "SELECT * FROM scoring_deals ORDER BY game_id, deal",
    "scoring_ledger": "SELECT * FROM scoring_ledger ORDER BY game_id, kind, deal, who",
    "scoring_matches": "SELECT * FROM scoring_matches ORDER BY game_id",
    "scoring_player_stats": "SELECT * FROM scoring_player_stats ORDER BY player_id, game",
    "scoring_games": "SELECT game_id, game, ended, fold FROM scoring_games ORDER BY game_id",
}


@asynccontextmanager
async def scoring(
    nats_url: str, database_dsn: str, batch: int = 0
) -> AsyncIterator[tuple[Games, Projector, asyncpg.Pool[Any]]]:
    store, stream, prefix = await open_games(nats_url)
    pool = await connect(database_dsn)
    await migrate_scoring(pool)
    projector = Projector(pool, store.client, GamesProjection(stream, prefix), batch=batch)
    try:
        yield Games(store), projector, pool
    finally:
        await projector.close()
        await pool.close()
        await store.close()


def run(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(body())


async def one(pool: asyncpg.Pool[Any], query: str, *args: Any) -> asyncpg.Record:
    found: asyncpg.Record | None = await pool.fetchrow(query, *args)
    assert found is not None, query
    return found


async def snapshot(pool: asyncpg.Pool[Any]) -> dict[str, list[tuple[Any, ...]]]:
    return {name: [tuple(r) for r in await pool.fetch(query)] for name, query in SNAPSHOT.items()}


def decoded(game: Any) -> list[tuple[engine_pb2.Envelope, Any]]:
    out = []
    for envelope in game.envelopes:
        which = envelope.WhichOneof("payload")
        event = (
            ZLJ_EVENTS.decode(envelope.zlj)
            if which == "zlj"
            else TRACTOR_EVENTS.decode(envelope.tractor)
            if which == "tractor"
            else None
        )
        out.append((envelope, event))
    return out


def test_deals_ledgers_matches_and_statistics_follow_the_events(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with scoring(nats_url, database_dsn) as (games, projector, pool):
            await record_zlj(games, "z-1", ZLJ_PLAYERS, seed=7, deals=3)
            await record_tractor(games, "t-1", TRACTOR_PLAYERS, seed=8)
            zlj, tractor = await games.history("z-1"), await games.history("t-1")
            await projector.catch_up()

            # 砸六家: one deal row per DealEnded, the ledgers' running totals, the match's VP (S-1)
            results = [e.result for _, e in decoded(zlj) if isinstance(e, zlj_model.DealEnded)]
            assert len(results) == 3
            rows = await pool.fetch("SELECT * FROM scoring_deals WHERE game_id = 'z-1' ORDER BY deal")
            assert [r["deal"] for r in rows] == [1, 2, 3]
            for row, result in zip(rows, results, strict=True):
                assert list(row["finishing_order"]) == list(result.order)
                assert sorted(row["caught"]) == sorted(result.caught)
                assert row["outcome"] == result.outcome.name
                assert list(row["team_points"]) == list(result.team_points)
                assert list(row["individual_points"]) == list(result.individual)
                assert list(row["players"]) == ZLJ_PLAYERS
            team_totals = [sum(r.team_points[t] for r in results) for t in (0, 1)]
            ledger = await pool.fetch(
                "SELECT who, total FROM scoring_ledger WHERE game_id = 'z-1' AND kind = 'team' AND deal = 3"
            )
            assert sorted((r["who"], r["total"]) for r in ledger) == [(0, team_totals[0]), (1, team_totals[1])]
            individual = await pool.fetch(
                "SELECT who, total FROM scoring_ledger WHERE game_id = 'z-1' AND kind = 'individual' AND deal = 3 "
                "ORDER BY who"
            )
            assert [r["total"] for r in individual] == [sum(r.individual[s] for r in results) for s in range(6)]
            match = await one(pool, "SELECT * FROM scoring_matches WHERE game_id = 'z-1'")
            assert list(match["team_points"]) == team_totals
            assert match["difference"] == team_totals[0] - team_totals[1]
            assert (match["vp_a"], match["vp_b"]) == victory_points(team_totals[0] - team_totals[1])
            assert match["deals"] == 3

            # statistics per player: deals, places (大贡 = 1st out), caught, points
            for seat, player in enumerate(ZLJ_PLAYERS):
                stats = await one(
                    pool, "SELECT * FROM scoring_player_stats WHERE player_id = $1 AND game = 'zlj'", player
                )
                assert stats["deals"] == 3 and stats["matches"] == 1
                assert list(stats["places"]) == [
                    sum(1 for r in results if seat in r.order and r.order.index(seat) == p) for p in range(6)
                ]
                assert stats["caught"] == sum(1 for r in results if seat in r.caught)
                assert stats["individual_points"] == sum(r.individual[seat] for r in results)
                assert stats["team_points"] == sum(r.team_points[seat % 2] for r in results)

            # 拖拉机: the deal rows carry trump, dealer, attackers' points; levels over time; the match's VP (§10)
            settled = [e for _, e in decoded(tractor) if isinstance(e, tractor_model.DealSettled)]
            declared = [e for _, e in decoded(tractor) if isinstance(e, tractor_model.TrumpDeclared)]
            ended = next(e for _, e in decoded(tractor) if isinstance(e, tractor_model.GameEnded))
            rows = await pool.fetch("SELECT * FROM scoring_deals WHERE game_id = 't-1' ORDER BY deal")
            assert len(rows) == len(settled) >= 2
            for row, s, d in zip(rows, settled, declared[-len(settled) :], strict=True):
                assert row["attackers_points"] == s.attackers_points
                assert row["winner"] == s.winner and row["levels_up"] == s.levels_up
                assert list(row["levels"]) == list(s.levels)
                assert row["dealer"] == d.dealer
            levels = await pool.fetch(
                "SELECT deal, who, total FROM scoring_ledger WHERE game_id = 't-1' AND kind = 'levels' "
                "ORDER BY deal, who"
            )
            assert [r["total"] for r in levels] == [lv for s in settled for lv in s.levels]
            match = await one(pool, "SELECT * FROM scoring_matches WHERE game_id = 't-1'")
            assert list(match["levels"]) == list(ended.levels)
            assert (match["vp_a"], match["vp_b"]) == victory_points(ended.levels[0] - ended.levels[1])
            assert match["vp_a"] + match["vp_b"] == Decimal(30)
            deals = await pool.fetchval(
                "SELECT sum(attacking_deals + defending_deals) FROM scoring_player_stats WHERE game = 'tractor'"
            )
            assert deals == 4 * len(settled)

    run(body)


def test_a_second_replica_applies_nothing_the_first_applied(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with scoring(nats_url, database_dsn) as (games, projector, pool):
            await record_zlj(games, "z-1", ZLJ_PLAYERS, seed=3, deals=1)
            await projector.catch_up()
            before = await snapshot(pool)
            # another scoring replica's projector of the same projection, started after the first caught up
            projection = projector.projection
            client = typing.cast(Any, games.store).client
            other = Projector(pool, client, GamesProjection(projection.stream, projection.prefix))
            assert await other.catch_up() == 0
            assert await snapshot(pool) == before
            await record_zlj(games, "z-2", ZLJ_PLAYERS, seed=4, deals=1)
            await asyncio.gather(projector.catch_up(), other.catch_up())  # both at once: each batch applied once
            assert len((await snapshot(pool))["scoring_matches"]) == 2
            await other.close()

    run(body)


def test_a_batch_that_fails_halfway_leaves_nothing_and_the_retry_equals_a_clean_run(
    nats_url: str, database_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body() -> None:
        async with scoring(nats_url, database_dsn, batch=97) as (games, projector, pool):
            await record_zlj(games, "z-1", ZLJ_PLAYERS, seed=5, deals=2)
            await record_tractor(games, "t-1", TRACTOR_PLAYERS, seed=6)
            real = GamesProjection.apply
            calls = 0

            async def crashing(self: GamesProjection, connection: Any, batch: Any) -> None:
                nonlocal calls
                calls += 1
                await real(self, connection, batch)  # every write of the batch made...
                if calls == 3:
                    raise RuntimeError("the projector dies before its commit")  # ...and rolled back

            monkeypatch.setattr(GamesProjection, "apply", crashing)
            with pytest.raises(RuntimeError):
                await projector.catch_up()
            stopped_at = await projector.checkpoint()
            assert 0 < stopped_at < (await games._store.read_all())[-1].sequence
            monkeypatch.setattr(GamesProjection, "apply", real)
            # the batch is read again from the checkpoint; everything is applied once
            await projector.catch_up(timeout=60)
            incremental = await snapshot(pool)
            await projector.reset()
            await projector.catch_up()
            assert await snapshot(pool) == incremental

    run(body)


def test_rebuild_equals_the_tables_built_incrementally(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with scoring(nats_url, database_dsn) as (games, projector, pool):
            # games recorded while the projection runs in small batches, partly interleaved
            await record_zlj(games, "z-1", ZLJ_PLAYERS, seed=11, deals=2)
            await projector.step()
            await record_tractor(games, "t-1", TRACTOR_PLAYERS, seed=12)
            await projector.step()
            await record_zlj(games, "z-2", [*ZLJ_PLAYERS[3:], *ZLJ_PLAYERS[:3]], seed=13, deals=1)
            await projector.catch_up()
            incremental = await snapshot(pool)
            assert len(incremental["scoring_matches"]) == 3
            await projector.reset()
            assert (await snapshot(pool))["scoring_deals"] == []
            await projector.catch_up()
            assert await snapshot(pool) == incremental

    run(body)
