"""Tournament results from the lobby: when a tournament table's match finishes (`MatchFinished` on the LOBBY
stream), its result is recorded in the tournament: the final levels (拖拉机) or team points (砸六家) of the
team in seats 0, 2 (, 4) and of the team in seats 1, 3 (, 5) give the difference and the VP (§10, S-1).
A reaction of the platform's stream consumer (`paiju.platform.consumer`), its checkpoint in scoring's database.
Recording is idempotent (a table's result is recorded once), so a batch read again changes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable

import structlog

from paiju.platform.consumer import Consumer, Reaction, Tracking
from paiju.platform.repository import Aggregates
from paiju.platform.store import EventStore, Recorded
from paiju.scoring import tournament as tm
from paiju.v1 import lobby_events_pb2

CONSUMER = "scoring-tournament-results"
log = structlog.get_logger("paiju.scoring.results")


def result_recorder(
    lobby: EventStore, tracking: Tracking, tournaments: Aggregates[tm.Tournament], now_ms: Callable[[], int]
) -> Consumer:
    """The consumer of the LOBBY stream that records every tournament table's result."""
    return Consumer(lobby, tracking, Reaction(CONSUMER, handler(tournaments, now_ms)), wake=finishes_a_match)


def finishes_a_match(recorded: Recorded) -> bool:
    return lobby_events_pb2.LobbyEnvelope.FromString(recorded.data).event.WhichOneof("event") == "match_finished"


def handler(tournaments: Aggregates[tm.Tournament], now_ms: Callable[[], int]) -> Callable[[bytes], Awaitable[None]]:
    async def handle(data: bytes) -> None:
        envelope = lobby_events_pb2.LobbyEnvelope.FromString(data)
        if envelope.event.WhichOneof("event") != "match_finished":
            return
        tournament_id = tm.tournament_of_table(envelope.aggregate)
        if tournament_id is None:
            return
        finished = envelope.event.match_finished
        result = finished.result
        scores = tuple(result.levels) if len(result.levels) == 2 else tuple(result.team_points)
        if len(scores) != 2:
            log.error("a tournament match finished without a result", table=envelope.aggregate)
            return
        command = tm.RecordResult(envelope.aggregate, finished.game_id, (scores[0], scores[1]), now_ms())
        # the same lobby event delivered again is the same request, whatever the time now
        digest = hashlib.sha256(f"{envelope.aggregate}:{envelope.version}".encode()).digest()
        await tournaments.act(tournament_id, command, f"result-{envelope.aggregate}", "scoring", digest=digest)
        log.info("tournament result recorded", tournament=tournament_id, table=envelope.aggregate)

    return handle
