"""Lobby match starts as engine requests: the `CreateGame` request of a `LobbyMatchStarted` event, the same for
every engine replica and every delivery (the engine's match starter and the lobby's `StartMatch` both send it,
so whichever comes second changes nothing)."""

from __future__ import annotations

from typing import Any, cast

from paiju.contract import games
from paiju.v1 import engine_pb2, lobby_events_pb2

GAMES = {name: codecs.kind for name, codecs in games.GAMES.items()}
"""The contract's game of each game name (the names of `paiju.rules.registry`)."""
GAME_NAMES = {value: name for name, value in GAMES.items()}
"""The game name of each of the contract's games."""


def create_request(started: lobby_events_pb2.LobbyMatchStarted) -> engine_pb2.CreateGameRequest:
    """The CreateGame request of a lobby match start (the same for every replica and every delivery)."""
    request = engine_pb2.CreateGameRequest(
        game_id=started.game_id, game=GAMES.get(started.game, engine_pb2.GAME_UNSPECIFIED)
    )
    for codecs in games.GAMES.values():
        if cast(Any, started).HasField(codecs.options_field):
            getattr(request, codecs.options_field).CopyFrom(getattr(started, codecs.options_field))
    for seat, player in enumerate(started.players):
        request.seats.add(seat=seat, player_id=player)
    if started.HasField("spectators"):  # the table's spectator policy (unset in starts before it existed: public)
        request.spectators.CopyFrom(started.spectators)
    return request
