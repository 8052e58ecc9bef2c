"""Match starts from the lobby: the engine creates the game of every `MatchStarted` on the LOBBY stream.

Every engine replica pulls from one durable JetStream consumer (``engine-match-starter``), so each lobby
event goes to one replica at a time; a message is acknowledged only after its game exists, and is delivered
again when a replica dies before acknowledging. Creating a game is idempotent by request (the same game id,
options and seats answer with the existing game), so a redelivered start, or two replicas handling the same
start, create exactly one game.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from nats.aio.client import Client

from paiju.contract.matches import create_request
from paiju.engine.creation import GameCreation
from paiju.platform.errors import Refused
from paiju.platform.workqueue import in_background
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


async def run_in_background(
    client: Client, creation: GameCreation, stream: str, prefix: str, stop: asyncio.Event
) -> asyncio.Task[Any]:
    """Create the game of every match start on the lobby's stream until ``stop`` (a restarting task)."""

    async def created(data: bytes) -> None:
        game_id = await handle(creation, data)
        if game_id is not None:
            log.info("match game ready", game=game_id)

    return in_background(client, stream, f"{prefix}.*", CONSUMER, created, stop=stop)
