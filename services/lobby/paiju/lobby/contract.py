"""The lobby's events over the generated contract (`protos/paiju/v1/lobby_events.proto`)."""

from __future__ import annotations

from paiju.contract.codec import Codec, OneofCodec
from paiju.lobby import parties, queue, table
from paiju.lobby.accounts import AccountRegistered, NameClaimed, SessionsRevoked
from paiju.v1 import cards_pb2, lobby_events_pb2

LOBBY = Codec(lobby_events_pb2, "Lobby", cards_pb2.CardList)
LOBBY_EVENTS = OneofCodec(
    LOBBY,
    lobby_events_pb2.LobbyEvent,
    table.Event | AccountRegistered | NameClaimed | SessionsRevoked | parties.Event | queue.Event,
    "event",
)
