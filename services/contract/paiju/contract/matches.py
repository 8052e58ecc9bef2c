"""Lobby match starts as engine requests: the `CreateGame` request of a `LobbyMatchStarted` event, the same for
every engine replica and every delivery (the engine's match starter and the lobby's `StartMatch` both send it,
so whichever comes second changes nothing)."""

from __future__ import annotations

from paiju.v1 import engine_pb2, lobby_events_pb2

GAMES = {"zlj": engine_pb2.GAME_ZLJ, "tractor": engine_pb2.GAME_TRACTOR}
"""The contract's game of each game name (the names of `paiju.rules.registry`)."""
GAME_NAMES = {value: name for name, value in GAMES.items()}
"""The game name of each of the contract's games."""


def create_request(started: lobby_events_pb2.LobbyMatchStarted) -> engine_pb2.CreateGameRequest:
    """The CreateGame request of a lobby match start (the same for every replica and every delivery)."""
    request = engine_pb2.CreateGameRequest(
        game_id=started.game_id, game=GAMES.get(started.game, engine_pb2.GAME_UNSPECIFIED)
    )
    if started.HasField("zlj_options"):
        request.zlj_options.CopyFrom(started.zlj_options)
    if started.HasField("tractor_options"):
        request.tractor_options.CopyFrom(started.tractor_options)
    for seat, player in enumerate(started.players):
        request.seats.add(seat=seat, player_id=player)
    return request
