"""Creating a game (a use case of the engine, not of its gRPC servicer): from a `CreateGameRequest` — the
servicer's `CreateGame`, and the match starter's lobby `MatchStarted` — to the game's first events. Idempotent by
request: the same request again answers with the game it created; another request for the same id is GAME_EXISTS."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, cast

from paiju.contract.codec import CodecError
from paiju.contract.matches import GAME_NAMES
from paiju.engine.games import RULES, CommandIdReused, Game, Games
from paiju.platform.errors import Reason, Refused
from paiju.rules.errors import RuleError
from paiju.v1 import engine_pb2

KINDS = " or ".join(engine_pb2.Game.Name(rules.contract.kind) for rules in RULES.values())
"""The contract's games a request may name (``GAME_ZLJ or GAME_TRACTOR``)."""


class GameCreation:
    """Creates games over ``games``, their shuffle seeds drawn by ``seeds`` (the game and its version), ``now`` the
    engine's clock in seconds (拖拉机's timed rounds start from it)."""

    def __init__(self, games: Games, seeds: Callable[[str, int], int], now: Callable[[], int]) -> None:
        self._games = games
        self._seeds = seeds
        self._now = now

    async def create(self, request: engine_pb2.CreateGameRequest, actor: str) -> Game:
        """Create the game a request describes (for CreateGame and for the lobby's match starts): idempotent
        by request; `Refused` otherwise (INVALID_OPTIONS, INVALID_REQUEST, GAME_EXISTS)."""
        try:
            kind = GAME_NAMES.get(request.game)
            if kind is None:
                raise Refused(Reason.INVALID_REQUEST, f"game must be {KINDS}", {"field": "game"})
            rules = RULES[kind]
            field, message = rules.contract.options_field, cast(Any, request)
            options = (
                rules.codec.decode(getattr(request, field), rules.game.options)
                if message.HasField(field)
                else rules.game.options()
            )
            start = rules.game.start(
                self._seeds(request.game_id, 0), options, self._now(), **self._games.dealing.start_options()
            )
            seats = self._seating(request, rules.game.seats)
            digest = hashlib.sha256(request.SerializeToString(deterministic=True)).digest()
            game = await self._games.create(
                request.game_id,
                kind,
                start,
                f"create:{request.game_id}",
                actor,
                seats=seats,
                digest=digest,
                spectators=request.spectators if request.HasField("spectators") else None,
            )
        except CodecError as e:
            raise Refused(Reason.INVALID_OPTIONS, str(e)) from None
        except RuleError as e:
            raise Refused(Reason.INVALID_OPTIONS, e.reason, {"rule": e.rule}) from None
        except CommandIdReused:
            raise Refused(
                Reason.GAME_EXISTS, f"game {request.game_id} exists already", {"game": request.game_id}
            ) from None
        return game

    @staticmethod
    def _seating(request: engine_pb2.CreateGameRequest, count: int) -> tuple[str, ...]:
        """The player of each seat (``()``: no seat assignments), or `Refused` when the seats are wrong."""
        if not request.seats:
            return ()
        players: dict[int, str] = {}
        for assignment in request.seats:
            if not 0 <= assignment.seat < count or assignment.seat in players:
                break
            players[assignment.seat] = assignment.player_id
        if len(players) != count or len(request.seats) != count:
            raise Refused(
                Reason.INVALID_REQUEST, f"seats name each seat 0..{count - 1} once with a player id", {"field": "seats"}
            )
        return tuple(players[s] for s in range(count))
