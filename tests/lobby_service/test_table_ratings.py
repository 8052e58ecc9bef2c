"""A table's last result carries scoring's rating changes (docs/rules/ratings.md, "Ratings as events"): the lobby
follows the `RatingUpdated` events on the TOURNAMENTS stream, and the table's `WatchTable` stream sends the table
again the moment its match's ratings arrive — told by the event, nothing asking. A table says its mode."""

from __future__ import annotations

import asyncio
from typing import Any

from paiju.lobby import matchmaking as mm
from paiju.platform.store.base import NEW
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, lobby_events_pb2, lobby_pb2, ratings_events_pb2, tournament_events_pb2, zlj_pb2

from ..support.waiting import wait_until
from .stack import Stack, play_leased_bots, stack

LEDGER = "ratings-v2-zlj-casual"


async def _open(s: Stack, owner: Any, mode: lobby_events_pb2.MatchMode.ValueType | None) -> str:
    request = lobby_pb2.CreateTableRequest(name="rated table", game=engine_pb2.GAME_ZLJ)
    request.zlj_options.CopyFrom(zlj_pb2.ZljOptions(deals=1))
    if mode is not None:
        request.mode = mode
    return str((await s.lobby.CreateTable(request, metadata=owner)).table.table_id)


def _rated(table_id: str, game_id: str, sequence: int, model: int = 2, mu: float = 27.0) -> bytes:
    updated = tournament_events_pb2.TournamentRatingUpdated(
        model=model,
        game="zlj",
        mode=lobby_events_pb2.MATCH_MODE_CASUAL,
        table_id=table_id,
        game_id=game_id,
        lobby_sequence=sequence,
        team_scores=[12, 5],
        winner_team=0,
        at=1_700_000_000_000,
    )
    before = ratings_events_pb2.Rating(mu=25.0, sigma=25 / 3)
    updated.seats.add(seat=0, player_id="account-ann", before=before, matches=1, weight=2.0).after.CopyFrom(
        ratings_events_pb2.Rating(mu=mu, sigma=8.0)
    )
    updated.seats.add(seat=1, player_id="account-bob", before=before, matches=20, weight=1.0).after.CopyFrom(
        ratings_events_pb2.Rating(mu=24.0, sigma=8.2)
    )
    bot = ratings_events_pb2.Rating(mu=25.0, sigma=25 / 6)
    updated.seats.add(seat=2, player_id=f"bot-{table_id}-2", bot=True, strategy="heuristic", before=bot, after=bot)
    envelope = tournament_events_pb2.TournamentEnvelope(aggregate=LEDGER, command_id=f"rate-{game_id}-{model}")
    envelope.event.rating_updated.CopyFrom(updated)
    return envelope.SerializeToString()


async def _append(s: Stack, data: bytes) -> None:
    stored = await s.tournaments_store.load(LEDGER)
    position = stored[-1].position if stored else NEW
    await s.tournaments_store.append(LEDGER, position, f"rate-{len(stored)}", [data])


def test_the_watch_sends_the_table_again_when_its_match_is_rated(nats_url: str, database_dsn: str) -> None:
    async def main() -> None:
        async with stack(nats_url, database_dsn) as s:
            _, owner = await s.player("Owner")
            table_id = await _open(s, owner, lobby_events_pb2.MATCH_MODE_CASUAL)
            unrated = await _open(s, owner, None)
            got = (await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=owner)).table
            assert got.mode == lobby_events_pb2.MATCH_MODE_CASUAL
            plain = (await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=unrated), metadata=owner)).table
            assert plain.mode == lobby_events_pb2.MATCH_MODE_UNSPECIFIED, "a table opened without a mode: not rated"
            for _ in range(6):
                await s.lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table_id), metadata=owner)
            started = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
            await s.game_exists(started.game_id)
            await play_leased_bots(s, started.game_id, SeededRandom(3))
            await s.listed(table_id, lambda t: t.status == lobby_pb2.TABLE_STATUS_FINISHED)

            stream = s.lobby.WatchTable(lobby_pb2.WatchTableRequest(table_id=table_id), metadata=owner)
            replies = aiter(stream)

            async def finished() -> lobby_pb2.Table:
                while True:
                    table: lobby_pb2.Table = (await asyncio.wait_for(anext(replies), 10)).table
                    if table.status == lobby_pb2.TABLE_STATUS_FINISHED:
                        return table

            over = await finished()
            assert over.last_result.game_id == started.game_id
            assert not over.last_result.HasField("ratings"), "not rated yet"
            # a rating of another table, and one of this table's earlier result, wake nothing here
            await _append(s, _rated("table-other", "table-other-m1", 5))
            await _append(s, _rated(table_id, f"{table_id}-m0", 1))
            await _append(s, _rated(table_id, started.game_id, 9))
            pushed = (await asyncio.wait_for(anext(replies), 10)).table
            if not pushed.last_result.HasField("ratings"):  # woken by the earlier result's: the table as it was
                assert pushed == over
                pushed = (await asyncio.wait_for(anext(replies), 10)).table
            assert pushed.version == over.version, "the same table, now with its ratings"
            ratings = pushed.last_result.ratings
            assert (ratings.model, ratings.mode, ratings.number) == (2, lobby_events_pb2.MATCH_MODE_CASUAL, 3)
            assert list(ratings.team_scores) == [12, 5] and ratings.winner_team == 0
            assert ratings.at == 1_700_000_000_000
            ann, bob, bot = ratings.seats
            assert (ann.seat, ann.player_id, ann.bot) == (0, "account-ann", False)
            assert ann.shown_before == 25.0 - 3 * (25 / 3) and ann.shown_after == 27.0 - 3 * 8.0
            assert (ann.before.mu, ann.after.mu, ann.after.sigma) == (25.0, 27.0, 8.0)
            assert ann.provisional and ann.matches == 1, "D-RATE-6: provisional until the 20th rated match"
            assert not bob.provisional and bob.matches == 20
            assert bot.bot and not bot.provisional and bot.shown_after == bot.shown_before
            got = (await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=owner)).table
            assert got.last_result.ratings == ratings, "GetTable has them too"
            # the same result rated by an older model after it changes nothing (and wakes nothing); a newer model's
            # replaces it
            await _append(s, _rated(table_id, started.game_id, 9, model=1, mu=40.0))
            await _append(s, _rated(table_id, started.game_id, 9, model=3, mu=30.0))
            newer = (await asyncio.wait_for(anext(replies), 10)).table.last_result.ratings
            assert newer.model == 3 and newer.seats[0].after.mu == 30.0
            stream.cancel()

            # a lobby started later replays the stream to the same ratings
            again = mm.Ratings()
            await again.consumer(s.tournaments_store).catch_up()
            replayed = again.of_match(table_id, started.game_id)
            assert replayed is not None and replayed.updated.model == 3 and replayed.number == 5
            assert again.of_match(table_id, f"{table_id}-m0") is None, "only the table's latest rated match"

            # the next match started: the last result is still the first match's, with its game and its ratings
            await wait_until(lambda: _ready(s, table_id, owner), "the bots ready again")
            nxt = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
            assert nxt.status == lobby_pb2.TABLE_STATUS_PLAYING and nxt.game_id != started.game_id
            playing = (await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=owner)).table
            for table in (nxt, playing):
                assert table.last_result.game_id == started.game_id, "the result names the game it is the result of"
            assert playing.last_result.ratings.model == 3, "GetTable shows the last result's ratings beside it"

    asyncio.run(main())


async def _ready(s: Stack, table_id: str, owner: Any) -> bool:
    table = (await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=owner)).table
    return all(seat.ready for seat in table.seats)
