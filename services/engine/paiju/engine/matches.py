"""Match starts from the lobby: the engine creates the game of every `MatchStarted` on the LOBBY stream.

A reaction of the platform's stream consumer (`paiju.platform.consumer`, ``engine-match-starter``), its
checkpoint in the engine's key-value bucket: it moves only after the games of a batch exist, so a start is
handled again when a replica dies first. Creating a game is idempotent by request (the same game id, options and
seats answer with the existing game), so a start handled again, or by two replicas at once, creates exactly one
game.
"""

from __future__ import annotations

import structlog

from paiju.contract.matches import create_request
from paiju.engine.creation import GameCreation
from paiju.platform.consumer import Consumer, Reaction, Tracking
from paiju.platform.errors import Refused
from paiju.platform.store import EventStore, Recorded
from paiju.v1 import lobby_events_pb2

CONSUMER = "engine-match-starter"
log = structlog.get_logger("paiju.engine.matches")


async def handle(creation: GameCreation, data: bytes) -> str | None:
    """Create the game of one lobby event if it starts a match; the game id, or ``None`` for other events."""
    envelope = lobby_events_pb2.LobbyEnvelope.FromString(data)
    if envelope.event.WhichOneof("event") != "match_started":
        return None
    request = create_request(envelope.event.match_started)
    try:
        await creation.create(request, envelope.actor or "lobby")
    except Refused as e:
        # a start the engine can never create (malformed, or the id taken by another game): say so and move on
        log.error("a match start cannot be created", game=request.game_id, reason=e.reason.value, message=e.message)
    return request.game_id


def match_starter(lobby: EventStore, tracking: Tracking, creation: GameCreation) -> Consumer:
    """The consumer that creates the game of every match start on the lobby's stream."""

    async def created(data: bytes) -> None:
        game_id = await handle(creation, data)
        if game_id is not None:
            log.info("match game ready", game=game_id)

    return Consumer(lobby, tracking, Reaction(CONSUMER, created), wake=starts_a_match)


def starts_a_match(recorded: Recorded) -> bool:
    return lobby_events_pb2.LobbyEnvelope.FromString(recorded.data).event.WhichOneof("event") == "match_started"
