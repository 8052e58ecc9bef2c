"""The rater on a real NATS (JetStream) and PostgreSQL: which matches count, the ledgers' events, the order of the
LOBBY stream, exactly once, and a rebuild from the streams bit for bit (docs/rules/ratings.md)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest

from paiju.platform.consumer import Consumer
from paiju.platform.postgres.pool import connect
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.scoring import rater as rr
from paiju.scoring import rating as rt
from paiju.scoring.games import GAMES
from paiju.scoring.readmodels import migrate_scoring
from paiju.v1 import tournament_events_pb2

from .lobby import CASUAL, RANKED, Lobby, fresh_store

ZLJ_PLAYERS = [f"p{i}" for i in range(6)]
TRACTOR_PLAYERS = [f"t{i}" for i in range(4)]
ZLJ = GAMES["zlj"].rating
TRACTOR = GAMES["tractor"].rating
SNAPSHOT = {
    "scoring_ratings": "SELECT * FROM scoring_ratings ORDER BY model, game, mode, player_id",
    "scoring_rating_matches": "SELECT * FROM scoring_rating_matches ORDER BY model, game, mode, player_id, number",
    "scoring_rating_ledgers": "SELECT * FROM scoring_rating_ledgers ORDER BY ledger",
}


@dataclass
class World:
    lobby: Lobby
    ledgers: JetStreamEventStore
    pool: asyncpg.Pool[Any]
    consumer: Consumer

    async def rate(self) -> int:
        return await self.consumer.catch_up(timeout=30)

    async def events(self, game: str, mode: rt.Mode) -> list[tournament_events_pb2.TournamentRatingUpdated]:
        stored = await self.ledgers.load(rr.ledger_id(game, mode))
        return [tournament_events_pb2.TournamentEnvelope.FromString(r.data).event.rating_updated for r in stored]

    async def rating(self, player: str, game: str, mode: rt.Mode) -> Any:
        return await self.pool.fetchrow(
            "SELECT * FROM scoring_ratings WHERE model = $1 AND game = $2 AND mode = $3 AND player_id = $4",
            rt.MODEL_VERSION,
            game,
            mode.value,
            player,
        )


@asynccontextmanager
async def world(nats_url: str, database_dsn: str) -> AsyncIterator[World]:
    lobby_store = await fresh_store(nats_url, "LOBBY")
    ledgers = await fresh_store(nats_url, "TOURS")
    pool = await connect(database_dsn)
    await migrate_scoring(pool)
    try:
        yield World(Lobby(lobby_store), ledgers, pool, rr.rater(lobby_store, pool, ledgers))
    finally:
        await pool.close()
        await lobby_store.close()
        await ledgers.close()


async def snapshot(pool: asyncpg.Pool[Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Every ratings table, floats as their exact bits (`float.hex`)."""

    def exact(value: Any) -> Any:
        return value.hex() if isinstance(value, float) else value

    taken = {}
    for name, query in SNAPSHOT.items():
        taken[name] = [tuple(exact(v) for v in row.values()) for row in await pool.fetch(query)]
    return taken


def test_a_casual_match_rates_its_players_as_the_model_does(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with world(nats_url, database_dsn) as w:
            await w.lobby.open("tz", "zlj", CASUAL)
            sequence = await w.lobby.play_zlj("tz", ZLJ_PLAYERS, (5, 2), (7, 1, 4, 3, 2, 0))
            await w.rate()
            expected = rt.rate(ZLJ, [rt.DEFAULT] * 6, rt.Result((5, 2), (7, 1, 4, 3, 2, 0)), [False] * 6)
            (event,) = await w.events("zlj", rt.Mode.CASUAL)
            assert event.model == rt.MODEL_VERSION and event.lobby_sequence == sequence
            assert event.game_id == "tz-m1" and list(event.team_scores) == [5, 2] and event.winner_team == 0
            for seat, after in enumerate(expected):
                stored = event.seats[seat]
                assert (stored.after.mu, stored.after.sigma) == (after.mu, after.sigma)  # bit for bit
                assert (stored.before.mu, stored.before.sigma) == (rt.MU, rt.SIGMA)
                row = await w.rating(ZLJ_PLAYERS[seat], "zlj", rt.Mode.CASUAL)
                assert (row["mu"], row["sigma"], row["matches"]) == (after.mu, after.sigma, 1)
                assert row["wins"] == int(seat % 2 == 0)
            assert await w.rating("p0", "zlj", rt.Mode.RANKED) is None  # the modes are rated apart

    asyncio.run(body())


def test_a_match_not_formed_as_ranked_or_casual_changes_no_rating(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with world(nats_url, database_dsn) as w:
            await w.lobby.open("old", "zlj", None)  # as every table opened before ratings existed
            await w.lobby.play_zlj("old", ZLJ_PLAYERS, (5, 2), (7, 1, 4, 3, 2, 0))
            await w.lobby.open("unspecified", "tractor", 0)
            await w.lobby.play_tractor("unspecified", TRACTOR_PLAYERS, (14, 3))
            await w.rate()
            assert await w.pool.fetchval("SELECT count(*) FROM scoring_ratings") == 0
            assert await w.ledgers.aggregates() == []
            # a match the queue formed as casual at a table without a mode is rated
            await w.lobby.play_tractor("unspecified", TRACTOR_PLAYERS, (14, 3), mode=CASUAL)
            await w.rate()
            assert len(await w.events("tractor", rt.Mode.CASUAL)) == 1
            assert (await w.rating("t0", "tractor", rt.Mode.CASUAL))["matches"] == 1

    asyncio.run(body())


def test_bots_count_at_their_fixed_rating_in_casual_matches_and_never_move(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with world(nats_url, database_dsn) as w:
            with_bots = ["h0", "bot-tb-1", "h2", "bot-tb-3", "h4", "bot-tb-5"]
            await w.lobby.open("tb", "zlj", CASUAL)
            for k in range(5):
                await w.lobby.play_zlj("tb", with_bots, (1, 4) if k % 2 else (4, 1), (3, 0, 2, 0, 1, 0))
            await w.lobby.open("rk", "zlj", RANKED)
            await w.lobby.play_zlj("rk", with_bots, (4, 1), (3, 0, 2, 0, 1, 0))  # ranked: humans only
            await w.rate()
            events = await w.events("zlj", rt.Mode.CASUAL)
            assert len(events) == 5
            fixed = rt.BOT_RATINGS[rt.DEFAULT_STRENGTH]  # seated with no strength known: the heuristic bot's
            for event in events:
                for seat in event.seats:
                    if seat.player_id.startswith("bot-"):
                        assert seat.bot and seat.strategy == "heuristic"
                        assert (seat.before.mu, seat.before.sigma) == (fixed.mu, fixed.sigma)
                        assert (seat.after.mu, seat.after.sigma) == (fixed.mu, fixed.sigma)
            assert await w.pool.fetchval("SELECT count(*) FROM scoring_ratings WHERE player_id LIKE 'bot-%'") == 0
            assert (await w.rating("h0", "zlj", rt.Mode.CASUAL))["matches"] == 5
            assert await w.ledgers.load(rr.ledger_id("zlj", rt.Mode.RANKED)) == []
            assert await w.rating("h0", "zlj", rt.Mode.RANKED) is None

    asyncio.run(body())


def test_each_bot_counts_at_the_fixed_rating_of_the_strength_its_table_seated_it_at(
    nats_url: str, database_dsn: str
) -> None:
    async def body() -> None:
        async with world(nats_url, database_dsn) as w:
            players = ["h0", "bot-ts-1", "h2", "bot-ts-3", "h4", "bot-ts-5"]
            await w.lobby.open("ts", "zlj", CASUAL)
            await w.lobby.seat_bot("ts", 1, "bot-ts-1", "basic")
            await w.lobby.seat_bot("ts", 3, "bot-ts-3", "heuristic")
            await w.lobby.seat_bot("ts", 5, "bot-ts-5", "")  # seated before strengths were chosen
            for k in range(3):
                await w.lobby.play_zlj("ts", players, (4, 1) if k % 2 else (1, 4), (3, 0, 2, 0, 1, 0))
            await w.rate()
            events = await w.events("zlj", rt.Mode.CASUAL)
            assert len(events) == 3
            expected = {1: ("basic", rt.BOT_RATINGS["basic"]), 3: ("heuristic", rt.BOT_RATINGS["heuristic"])}
            expected[5] = expected[3]
            assert rt.BOT_RATINGS["basic"].mu < rt.BOT_RATINGS["heuristic"].mu
            humans = [rt.DEFAULT] * 6
            for event in events:
                for seat, (strength, fixed) in expected.items():
                    stored = event.seats[seat]
                    assert stored.bot and stored.strategy == strength
                    assert (stored.before.mu, stored.before.sigma) == (fixed.mu, fixed.sigma)
                    assert (stored.after.mu, stored.after.sigma) == (fixed.mu, fixed.sigma), "never moved"
                # the humans moved as the model moves them against these bots, bit for bit
                before = [humans[s] if s % 2 == 0 else expected[s][1] for s in range(6)]
                result = rt.Result(tuple(event.team_scores), (3, 0, 2, 0, 1, 0))  # type: ignore[arg-type]
                after = rt.rate(ZLJ, before, result, [s % 2 == 1 for s in range(6)])
                for s in (0, 2, 4):
                    assert (event.seats[s].after.mu, event.seats[s].after.sigma) == (after[s].mu, after[s].sigma)
                    humans[s] = after[s]
            # a bot of a strength the model does not know counts as the heuristic bot
            assert rt.bot_rating("grandmaster") == rt.BOT_RATINGS["heuristic"] and rt.bot_strength("") == "heuristic"
            # a rebuild from the streams finds every stored event made again byte for byte (the strengths too)
            taken = await snapshot(w.pool)
            await w.consumer.reset()
            await rr.rater(w.lobby.store, w.pool, w.ledgers).catch_up(timeout=30)
            assert await snapshot(w.pool) == taken

    asyncio.run(body())


def test_results_of_many_tables_at_once_are_rated_in_the_lobby_streams_order(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with world(nats_url, database_dsn) as w:
            tables = [f"tt{k}" for k in range(12)]
            # the players overlap between tables, so the order changes the numbers
            seating = {t: [f"q{(k + i) % 7}" for i in range(4)] for k, t in enumerate(tables)}
            for table in tables:
                await w.lobby.open(table, "tractor", RANKED)
            for round_ in range(3):
                for table in tables:
                    await w.lobby.start(table, "tractor", seating[table])
                finishing = [
                    Lobby(w.lobby.store, {t: w.lobby.positions[t]}, {t: w.lobby.matches[t]}, w.lobby.ms + k)
                    for k, t in enumerate(tables)
                ]
                sequences = await asyncio.gather(
                    *(
                        f.finish_tractor(t, (14, 3 + round_) if k % 3 else (5, 14))
                        for k, (f, t) in enumerate(zip(finishing, tables, strict=True))
                    )
                )
                for f, t in zip(finishing, tables, strict=True):
                    w.lobby.positions[t] = f.positions[t]
                assert len(set(sequences)) == len(tables)
            await w.rate()
            events = await w.events("tractor", rt.Mode.RANKED)
            assert len(events) == 36
            assert [e.lobby_sequence for e in events] == sorted(e.lobby_sequence for e in events)
            # replaying the results in stream order through the model gives the stored numbers
            ratings: dict[str, rt.Belief] = {}
            for event in events:
                players = [s.player_id for s in event.seats]
                before = [ratings.get(p, rt.DEFAULT) for p in players]
                after = rt.rate(TRACTOR, before, rt.Result((event.team_scores[0], event.team_scores[1])), [False] * 4)
                for p, b, seat in zip(players, after, event.seats, strict=True):
                    assert (seat.after.mu, seat.after.sigma) == (b.mu, b.sigma)
                    ratings[p] = b

    asyncio.run(body())


async def _random_matches(w: World, seed: int, count: int) -> None:
    rng = random.Random(seed)
    people = [f"r{i}" for i in range(10)]
    await w.lobby.open("rz", "zlj", CASUAL)
    await w.lobby.open("rt", "tractor", RANKED)
    for _ in range(count):
        if rng.random() < 0.5:
            players = rng.sample(people, 6)
            points = [rng.choice((3, 2, 1, 0, 0, -1)) for _ in range(6)]
            teams = (rng.randint(0, 6), rng.randint(0, 6))
            await w.lobby.play_zlj("rz", players, teams, points)
        else:
            players = rng.sample(people, 4)
            await w.lobby.play_tractor("rt", players, (rng.randint(2, 14), rng.randint(2, 14)))


def test_a_rebuild_from_the_streams_gives_the_same_ratings_bit_for_bit(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with world(nats_url, database_dsn) as w:
            await _random_matches(w, seed=11, count=20)
            await w.rate()
            await _random_matches(w, seed=12, count=20)  # rated in a second run of the consumer
            await w.rate()
            before = await snapshot(w.pool)
            stored = {a: await w.ledgers.load(a) for a in await w.ledgers.aggregates()}
            assert sum(len(v) for v in stored.values()) == 40
            assert len(before["scoring_rating_matches"]) > 0
            await w.consumer.reset()
            assert await w.pool.fetchval("SELECT count(*) FROM scoring_ratings") == 0
            # a rebuild, by a fresh process's rater: every event is made again and found stored, byte for byte
            again = rr.rater(w.lobby.store, w.pool, w.ledgers)
            await again.catch_up(timeout=30)
            assert await snapshot(w.pool) == before
            assert {a: await w.ledgers.load(a) for a in await w.ledgers.aggregates()} == stored  # nothing appended

    asyncio.run(body())


def test_a_batch_that_fails_after_its_append_is_rated_once(
    nats_url: str, database_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body() -> None:
        async with world(nats_url, database_dsn) as w:
            await _random_matches(w, seed=5, count=12)
            project = rr.Rater._project
            calls: list[int] = []

            async def crash_once(self: rr.Rater, c: Any, number: int, event: Any) -> None:
                calls.append(number)
                if len(calls) == 7:  # after the 7th match's event was appended, before the commit
                    raise ConnectionError("the process died")
                await project(self, c, number, event)

            monkeypatch.setattr(rr.Rater, "_project", crash_once)
            with pytest.raises(ConnectionError):
                await w.rate()
            await w.rate()  # the batch again: the stored events adopted, the rest appended
            ledgers = await w.ledgers.aggregates()
            events = [r for a in ledgers for r in await w.ledgers.load(a)]
            assert len(events) == 12 and len(calls) == 7 + 12
            assert len({r.command_id for r in events}) == 12
            after_crash = await snapshot(w.pool)
        async with world(nats_url, database_dsn) as clean:  # the same matches, no crash
            monkeypatch.setattr(rr.Rater, "_project", project)
            await _random_matches(clean, seed=5, count=12)
            await clean.rate()
            assert await snapshot(clean.pool) == after_crash

    asyncio.run(body())


def test_a_ledger_that_disagrees_with_the_model_is_never_written_over(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with world(nats_url, database_dsn) as w:
            await w.lobby.open("tz", "zlj", CASUAL)
            await w.lobby.play_zlj("tz", ZLJ_PLAYERS, (5, 2), (7, 1, 4, 3, 2, 0))
            await w.rate()
            await w.consumer.reset()
            original = rt.DEFAULT
            try:
                rt.DEFAULT = rt.Belief(26.0, rt.SIGMA)  # another model under the same version: other numbers
                with pytest.raises(rr.LedgerMismatch):
                    await w.rate()
            finally:
                rt.DEFAULT = original
            assert len(await w.events("zlj", rt.Mode.CASUAL)) == 1
            assert await w.pool.fetchval("SELECT count(*) FROM scoring_ratings") == 0

    asyncio.run(body())
