"""A stand-in `LobbyService` answering only `LeaseBotSeats`, as the lobby does: a bot runner's token required, every
seat leased to the runner now, each lease running ``lease_seconds`` from the call (so the runner must renew)."""

from __future__ import annotations

import time
from typing import Any

import grpc

from paiju.platform.errors import Refused
from paiju.platform.tokens import Identity, Role, Verifier
from paiju.v1 import engine_pb2, lobby_pb2

from ..support.credentials import TRUST
from ..support.tokens import token
from .harness import NOW

SERVICE = lobby_pb2.DESCRIPTOR.services_by_name["LobbyService"].full_name
GAMES = {"zlj": engine_pb2.GAME_ZLJ, "tractor": engine_pb2.GAME_TRACTOR}


class FakeLobby:
    def __init__(self, lease_seconds: float = 2.0) -> None:
        self.seats: dict[tuple[str, int], tuple[str, str]] = {}
        """(game id, seat) -> (game kind, bot player id)."""
        self.lease_seconds = lease_seconds
        self.calls: list[tuple[str, int, Identity]] = []
        self.extra: list[lobby_pb2.BotSeat] = []
        """Seats answered as they are (e.g. of a game no runner plays)."""

    def lease(self, game_id: str, kind: str, seat: int, player: str) -> None:
        self.seats[(game_id, seat)] = (kind, player)

    def release(self, game_id: str, seat: int) -> None:
        self.seats.pop((game_id, seat), None)

    async def LeaseBotSeats(
        self, request: lobby_pb2.LeaseBotSeatsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> lobby_pb2.LeaseBotSeatsResponse:
        header = dict(context.invocation_metadata() or ()).get("authorization", "")
        try:
            who = Verifier(TRUST, lambda: int(time.time())).verify(str(header).removeprefix("Bearer "))
        except Refused as e:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, e.message)
            raise AssertionError("unreachable") from None
        if who.role is not Role.BOT_RUNNER:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "bot runners use a bot runner's token")
        self.calls.append((request.runner_id, request.max_seats, who))
        response = lobby_pb2.LeaseBotSeatsResponse()
        until = int(time.time() + self.lease_seconds)
        for (game_id, seat), (kind, player) in sorted(self.seats.items()):
            if request.max_seats and len(response.seats) >= request.max_seats:
                break
            response.seats.add(
                table_id=f"table-{game_id}",
                game_id=game_id,
                game=GAMES[kind],
                seat=seat,
                token=token(role=Role.PLAYER, subject=player, game=game_id, seat=seat, now=NOW),
                lease_expires_at=until,
            )
        response.seats.extend(self.extra)
        return response


async def serve_lobby(lobby: FakeLobby) -> tuple[grpc.aio.Server, str]:
    """The fake on a local port; the lobby's other calls answer UNIMPLEMENTED."""
    server = grpc.aio.server()
    handler = grpc.unary_unary_rpc_method_handler(
        lobby.LeaseBotSeats,
        request_deserializer=lobby_pb2.LeaseBotSeatsRequest.FromString,
        response_serializer=lobby_pb2.LeaseBotSeatsResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"LeaseBotSeats": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"
