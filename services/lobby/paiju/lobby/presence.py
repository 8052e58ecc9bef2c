"""Presence at the tables (a use case of the lobby, not of its gRPC servicer): a seated player's open `WatchTable`
streams are their presence. When the last one closes during a match, a bot covers the seat after the grace time
(`SEAT_CHANGE_COVER` in the engine, `CoverSeat` at the table, under one command id); when the player watches again
or joins the game, the seat is handed back (`SEAT_CHANGE_RETURN`, `ReturnToSeat`). While NATS or the engine cannot
be reached, a cover is tried again every few seconds for as long as the player stays away.

Who watches which table is kept by `paiju.lobby.attendance`, shared by every lobby replica: a player who comes back
through another replica is present, and a player whose replica died is covered like anyone who left."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import structlog

from paiju.lobby import table as tb
from paiju.lobby.attendance import Attendance, LocalAttendance
from paiju.platform.edge import DEPENDENCY_GONE
from paiju.platform.errors import Refused
from paiju.platform.repository import Aggregates
from paiju.platform.retry import until_done
from paiju.v1 import engine_pb2

COVER_RETRY_SECONDS = 5.0
"""How long a cover waits before trying again (NATS or the engine out of reach, or an unforeseen failure)."""
EngineSeats = Callable[[tb.Table, dict[int, str], int, str], Awaitable[None]]
"""Tells the engine who sits where in the table's running match: (table, seats, change, command id)."""
log = structlog.get_logger("paiju.lobby.presence")


class Presence:
    """Who watches which table, and the covers of the players who left."""

    def __init__(
        self,
        tables: Aggregates[tb.Table],
        engine_seats: EngineSeats,
        grace_seconds: float,
        attendance: Attendance | None = None,
    ) -> None:
        self._tables = tables
        self._engine_seats = engine_seats
        self._grace = grace_seconds
        self.attendance: Attendance = attendance or LocalAttendance()
        self._pending: set[asyncio.Task[None]] = set()

    async def here(self, table_id: str, player: str) -> bool:
        """Whether ``player`` watches ``table_id`` now (through any lobby replica)."""
        return await self.attendance.here(table_id, player)

    def departed(self, table_id: str, player: str) -> None:
        """``player``'s watch of ``table_id`` ended with the replica that served it: cover the seat after the grace
        time unless they are back by then."""
        self._spawn(self._cover_later(table_id, player))

    @contextlib.asynccontextmanager
    async def watching(self, table_id: str, player: str) -> AsyncIterator[None]:
        """``player`` is at ``table_id`` while this lasts: their seat comes back if a bot covers it, and the seat is
        covered after the grace time once the player's last watch ends."""
        await self.attendance.arrive(table_id, player)
        try:
            with contextlib.suppress(Refused):  # the engine away: the seat comes back at the next watch
                await self.returned(table_id, player)
            yield
        finally:
            if await self.attendance.leave(table_id, player):
                self._spawn(self._cover_later(table_id, player))

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _cover_later(self, table_id: str, player: str) -> None:
        """After the grace time, a bot covers the seat of a player who is still away during a match. Only a refusal
        of the cover itself ends the attempt; anything else that stops it — a dependency away, or a failure nobody
        foresaw (logged with its traceback) — is tried again every `COVER_RETRY_SECONDS` for as long as the player
        stays away: a seat is never left uncovered in silence."""
        await asyncio.sleep(self._grace)

        async def cover() -> None:
            if not await self._still_here(table_id, player):
                await self._cover(table_id, player)

        def refused(e: Refused) -> None:
            log.warning("could not cover a seat", table=table_id, player=player, reason=e.reason.value)

        await until_done(
            cover,
            log,
            every=COVER_RETRY_SECONDS,
            waiting="cover waits for a dependency",
            failed="a cover failed; it is tried again",
            refused=refused,
            table=table_id,
            player=player,
        )

    async def _still_here(self, table_id: str, player: str) -> bool:
        try:
            return await self.here(table_id, player)
        except DEPENDENCY_GONE:
            return False  # NATS away: the cover is tried, and waits for NATS like any other

    async def _cover(self, table_id: str, player: str) -> None:
        loaded = await self._tables.refresh(table_id)
        table = loaded.state
        seat = table.seat_of(player)
        if table.status is not tb.Status.PLAYING or seat is None or table.seats[seat].covered:
            return
        command_id = f"cover:{table.game_id}:{seat}:{loaded.version}"
        await self._engine_seats(table, {seat: tb.cover_id(table_id, seat)}, engine_pb2.SEAT_CHANGE_COVER, command_id)
        await self._tables.act(table_id, tb.CoverSeat(seat), command_id, "lobby")
        log.info("a bot covers an absent player", table=table_id, seat=seat, player=player)
        if await self._still_here(table_id, player):  # back while the cover was being recorded: hand it back now
            with contextlib.suppress(Refused):
                await self.returned(table_id, player)

    async def returned(self, table_id: str, player: str) -> None:
        """A covered player is back: hand the seat back in the engine and at the table."""
        loaded = await self._tables.refresh(table_id)
        table = loaded.state
        seat = table.seat_of(player)
        if seat is None or not table.seats[seat].covered or table.status is not tb.Status.PLAYING:
            return
        command_id = f"return:{table.game_id}:{seat}:{loaded.version}"
        await self._engine_seats(table, {seat: player}, engine_pb2.SEAT_CHANGE_RETURN, command_id)
        await self._tables.act(table_id, tb.ReturnToSeat(player), command_id, player)
        log.info("the player is back", table=table_id, seat=seat, player=player)

    async def close(self) -> None:
        """Stop the covers waiting to happen."""
        for task in list(self._pending):
            task.cancel()
        for task in list(self._pending):
            with contextlib.suppress(asyncio.CancelledError):
                await task
