"""The lobby follows scoring's rating ledgers (docs/rules/matchmaking.md, D-MM-3): a `RatingUpdated` on the
TOURNAMENTS stream moves the rating the queue matches a player by; the other events of the stream, and the bots'
seats, change nothing."""

from __future__ import annotations

import asyncio
import uuid

from paiju.lobby import matchmaking as mm
from paiju.lobby import queue as qu
from paiju.lobby import table as tb
from paiju.lobby.service import new_memberships, new_parties, new_queue, new_tables
from paiju.platform.store.base import NEW
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.v1 import lobby_events_pb2, ratings_events_pb2, tournament_events_pb2


def rating_event(
    mu: float, player: str, mode: lobby_events_pb2.MatchMode.ValueType = lobby_events_pb2.MATCH_MODE_CASUAL
) -> bytes:
    updated = tournament_events_pb2.TournamentRatingUpdated(model=1, game="zlj", mode=mode, table_id="table-1")
    updated.seats.add(seat=0, player_id=player, after=ratings_events_pb2.Rating(mu=mu, sigma=5.0))
    updated.seats.add(seat=1, player_id="bot-table-1-0", bot=True, after=ratings_events_pb2.Rating(mu=99.0, sigma=1))
    envelope = tournament_events_pb2.TournamentEnvelope(aggregate="ratings-v1-zlj-casual", version=1)
    envelope.event.rating_updated.CopyFrom(updated)
    return envelope.SerializeToString()


def test_the_queue_matches_by_the_ratings_scoring_appends(nats_url: str) -> None:
    async def main() -> None:
        suffix = uuid.uuid4().hex[:10]
        tournaments = await JetStreamEventStore.connect(nats_url, stream=f"T{suffix.upper()}", prefix=f"t{suffix}.t")
        lobby = await JetStreamEventStore.connect(nats_url, stream=f"L{suffix.upper()}", prefix=f"l{suffix}.l")
        try:
            ratings = mm.Ratings()
            follower = ratings.consumer(tournaments)
            await tournaments.append("ratings-v1-zlj-casual", NEW, "rate-1", [rating_event(31.5, "account-ann")])
            position = (await tournaments.load("ratings-v1-zlj-casual"))[-1].position
            await tournaments.append("ratings-v1-zlj-casual", position, "rate-2", [rating_event(33.25, "account-ann")])
            await follower.catch_up()
            assert ratings.of("zlj", tb.Mode.CASUAL, "account-ann") == 33.25, "the latest rating wins"
            assert ratings.of("zlj", tb.Mode.RANKED, "account-ann") == mm.DEFAULT_MU, "ranked is rated apart"
            assert ratings.of("zlj", tb.Mode.CASUAL, "bot-table-1-0") == mm.DEFAULT_MU, "bots are not followed"
            assert ratings.of("tractor", tb.Mode.CASUAL, "account-bob") == mm.DEFAULT_MU
            parties = mm.Parties(new_parties(lobby), new_memberships(lobby))
            maker = mm.Matchmaker(new_queue(lobby), new_tables(lobby), parties, ratings, lambda: 0)
            entry_id = await maker.enqueue("account-ann", "Ann", "zlj", tb.Mode.CASUAL, 0)
            entry = (await maker.queue.load(qu.QUEUE)).state.entries[entry_id]
            assert entry.players[0].rating == 3325 and entry.rating == 33.25
        finally:
            await tournaments.close()
            await lobby.close()

    asyncio.run(main())
