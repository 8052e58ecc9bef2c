"""Bot seats a runner plays: `SeatLease` (the lobby's `BotSeat`) and the sources that lease them.

A source is any async callable answering with every seat leased to this runner now (renewed ones included),
as `LobbyService.LeaseBotSeats` does; the runner asks it again before the leases expire and drops the seats
it no longer returns. `LobbySeatSource` asks the lobby with a service token; `StaticSeatSource` hands out a
fixed list (tests, development).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from paiju.contract.matches import GAME_NAMES
from paiju.platform.channels import channel
from paiju.platform.tokens import SERVICE_TOKEN_SECONDS, Audience, Identity, Role, Signer
from paiju.v1 import lobby_pb2, lobby_pb2_grpc

log = structlog.get_logger("paiju.botrunner")


@dataclass(frozen=True, slots=True)
class SeatLease:
    """One bot seat leased to this runner (mirrors `paiju.v1.BotSeat`)."""

    table_id: str
    game_id: str
    game: str
    """The game's name (`paiju.rules.registry`)."""
    seat: int
    token: str
    """The engine token of the seat (a player token for this game and seat)."""
    expires_at: float
    """When the lease ends unless renewed (seconds since the epoch)."""
    strength: str = ""
    """The strength the table chose for the bot (`paiju.botrunner.runner.bot_for`; empty: the default)."""

    @property
    def key(self) -> tuple[str, int]:
        """The seat: (game id, seat)."""
        return (self.game_id, self.seat)

    @classmethod
    def from_proto(cls, seat: lobby_pb2.BotSeat) -> SeatLease:
        kind = GAME_NAMES.get(seat.game)
        if kind is None:
            raise ValueError(f"bot seat {seat.seat} of table {seat.table_id} has no game kind ({seat.game})")
        expires = float(seat.lease_expires_at)
        return cls(seat.table_id, seat.game_id, kind, seat.seat, seat.token, expires, seat.strength)


SeatSource = Callable[[], Awaitable[Sequence[SeatLease]]]
"""Every seat leased to the runner now; raises when it cannot tell (the runner keeps its leases till expiry)."""


class StaticSeatSource:
    """A fixed set of seats, each leased until ``expires_at`` (tests and development); `set` replaces it."""

    def __init__(self, leases: Iterable[SeatLease] = ()) -> None:
        self._leases = tuple(leases)
        self.calls = 0

    def set(self, leases: Iterable[SeatLease]) -> None:
        self._leases = tuple(leases)

    async def __call__(self) -> Sequence[SeatLease]:
        self.calls += 1
        return self._leases


LONG_POLL_SECONDS = 8
"""How long a runner's lease call may wait at the lobby for a new seat (below the lobby's limit of 10 s, so that the
next call still renews the leases in time)."""


class LobbySeatSource:
    """Asks `LobbyService.LeaseBotSeats` for this runner's seats, authenticated with a bot runner's token it signs
    itself with its own key (``PAIJU_SIGNING_KEY_FILE``, an issuer that vouches for that role only), whose subject is
    the runner id."""

    def __init__(
        self,
        stub: Any,
        runner_id: str,
        signer: Signer,
        *,
        max_seats: int = 0,
        timeout: float = 10.0,
        wait_seconds: int = LONG_POLL_SECONDS,
        now: Callable[[], float] = time.time,
    ) -> None:
        """``wait_seconds``: how long the lobby may hold an answer with nothing new for this runner (long polling:
        a new bot seat is taken the moment it appears; 0 answers at once)."""
        self._stub = stub
        self.wait_seconds = wait_seconds
        self._runner_id = runner_id
        self._signer = signer
        self._max_seats = max_seats
        self._timeout = timeout
        self._now = now
        self._token = ""
        self._token_expires = 0.0

    @classmethod
    def connect(cls, address: str, runner_id: str, signer: Signer, **kwargs: Any) -> tuple[LobbySeatSource, Any]:
        """A source over a new channel to the lobby at ``address``; returns (source, channel to close)."""
        lobby = channel(address)
        return cls(lobby_pb2_grpc.LobbyServiceStub(lobby), runner_id, signer, **kwargs), lobby

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        now = self._now()
        if self._token_expires - now < SERVICE_TOKEN_SECONDS / 2:
            self._token_expires = now + SERVICE_TOKEN_SECONDS
            identity = Identity(
                self._runner_id,
                Role.BOT_RUNNER,
                expires=int(self._token_expires),
                issued=int(now),
                audience=(Audience.LOBBY,),
            )
            self._token = self._signer.mint(identity)
        return (("authorization", f"Bearer {self._token}"),)

    async def __call__(self) -> Sequence[SeatLease]:
        request = lobby_pb2.LeaseBotSeatsRequest(
            runner_id=self._runner_id, max_seats=self._max_seats, wait_seconds=self.wait_seconds
        )
        response = await self._stub.LeaseBotSeats(
            request, metadata=self._metadata(), timeout=self._timeout + self.wait_seconds
        )
        leases = []
        for seat in response.seats:
            try:
                leases.append(SeatLease.from_proto(seat))
            except ValueError as e:  # a game this runner does not play: leave the seat to the lease's expiry
                log.warning("seat not played", reason=str(e))
        return leases


__all__ = ["LobbySeatSource", "SeatLease", "SeatSource", "StaticSeatSource"]
