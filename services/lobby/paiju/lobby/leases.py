"""Bot seats leased to bot runners (a use case of the lobby, not of its gRPC servicer): every seat a bot plays at a
playing table is leased to one runner at a time for `LEASE_SECONDS`. A runner that asks again renews its leases
once half their time is gone, and takes over a seat whose lease ran out (its runner died); a seat another runner
holds is not handed out. Each lease is a `LeaseSeat` at the table, so two runners racing for a seat meet at the
table's append: one gets it, the other is told it is taken and skips it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from paiju.lobby import table as tb
from paiju.platform.repository import Aggregates

LEASE_SECONDS = 30


@dataclass(frozen=True, slots=True)
class Leased:
    """One bot seat a runner holds: the table, its game, the seat, who the engine knows in it, and until when."""

    table_id: str
    game_id: str
    game: str
    seat: int
    holder: str
    expires: int
    new: bool = False
    """The runner did not hold the seat before this call."""


class SeatLeases:
    """Hands the bot seats of the playing tables to bot runners."""

    def __init__(self, tables: Aggregates[tb.Table], playing_tables_with_bots: Callable[[], Awaitable[list[str]]]):
        self._tables = tables
        self._playing = playing_tables_with_bots

    async def lease(self, runner_id: str, now: int, max_seats: int = 0, also: Sequence[str] = ()) -> list[Leased]:
        """The bot seats ``runner_id`` holds after this call (at most ``max_seats``, 0: no limit), its leases
        renewed or taken as above. ``also``: tables to look at besides the playing ones the read model lists (a
        table whose match just started, before the read model has it)."""
        until = now + LEASE_SECONDS
        leased: list[Leased] = []
        for table_id in dict.fromkeys([*await self._playing(), *also]):
            loaded = await self._tables.load(table_id)  # kept current by the feed; a lease re-reads when it acts
            table = loaded.state
            if table.status is not tb.Status.PLAYING:
                continue
            holders = tb.engine_seats(table)
            for i, seat in enumerate(table.seats):
                if max_seats and len(leased) >= max_seats:
                    return leased
                if not seat.played_by_bot:
                    continue
                if seat.runner and seat.runner != runner_id and seat.lease_until > now:
                    continue
                expires = seat.lease_until
                new = seat.runner != runner_id or seat.lease_until <= now
                if seat.runner != runner_id or seat.lease_until - now < LEASE_SECONDS / 2:
                    command = tb.LeaseSeat(runner_id, i, now, until)
                    try:
                        await self._tables.act(table_id, command, f"lease:{i}:{runner_id}:{now}", runner_id)
                    except tb.LobbyError:
                        continue  # another runner leased it meanwhile
                    expires = until
                leased.append(Leased(table_id, table.game_id, table.game, i, holders[i], expires, new))
        return leased
