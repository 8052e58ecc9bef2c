"""Bot seats leased to bot runners (a use case of the lobby, not of its gRPC servicer): every seat a bot plays at a
playing table is leased to one runner at a time for `LEASE_SECONDS`. A runner that asks again renews its leases
once half their time is gone, and takes over a seat whose lease ran out (its runner died); a seat another runner
holds is not handed out. Each lease is a `LeaseSeat` at the table, so two runners racing for a seat meet at the
table's append: one gets it, the other is told it is taken and skips it.

Each leased seat comes with an engine token for its holder (`SeatTokens`), valid until `LEASE_SECONDS` after the
lease it was issued with ends. A renewal hands back the token issued before for the same lease while it still
serves — the same runner, game, seat and holder, still valid when the renewed lease ends, more than a third of its
lifetime left — so the engine checks a seat's signature about every other renewal instead of at every lease call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from paiju.lobby import table as tb
from paiju.platform.repository import Aggregates
from paiju.platform.tokens import GAME_AUDIENCE, Identity, Role

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
    strength: str = ""
    """The strength the table chose for the bot (empty: the default)."""


class SeatLeases:
    """Hands the bot seats of the playing tables to bot runners."""

    def __init__(self, tables: Aggregates[tb.Table], playing_tables_with_bots: Callable[[], Awaitable[list[str]]]):
        self._tables = tables
        self._playing = playing_tables_with_bots
        self._started: dict[str, int] = {}
        """Tables found playing through ``also`` (their match started before the read model listed them), each
        until a lease's time after it was seen: a runner's next call still finds its seats there while the read
        model lags, instead of being told it holds nothing."""

    async def lease(self, runner_id: str, now: int, max_seats: int = 0, also: Sequence[str] = ()) -> list[Leased]:
        """The bot seats ``runner_id`` holds after this call (at most ``max_seats``, 0: no limit), its leases
        renewed or taken as above. ``also``: tables to look at besides the playing ones the read model lists (a
        table whose match just started, before the read model has it)."""
        until = now + LEASE_SECONDS
        leased: list[Leased] = []
        self._started = {table_id: seen for table_id, seen in self._started.items() if seen > now}
        for table_id in dict.fromkeys([*await self._playing(), *self._started, *also]):
            loaded = await self._tables.load(table_id)  # kept current by the feed; a lease re-reads when it acts
            table = loaded.state
            if table.status is not tb.Status.PLAYING:
                self._started.pop(table_id, None)
                continue
            if table_id in also:
                self._started[table_id] = until
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
                leased.append(Leased(table_id, table.game_id, table.game, i, holders[i], expires, new, seat.strength))
        return leased


@dataclass(frozen=True, slots=True)
class _Issued:
    """A seat token handed to a runner: for whom, and its lifetime."""

    runner: str
    game_id: str
    holder: str
    token: str
    issued: int
    expires: int


class SeatTokens:
    """The engine tokens of the leased bot seats: a player token of the seat's holder for its game and seat, valid
    until `LEASE_SECONDS` after the end of the lease it is issued with (a runner that stops renewing loses the seat's
    token soon after its lease).

    A seat's token is reused — the identical string, so the engine, which remembers the tokens it verified, checks its
    signature once — while the seat stays leased to the same runner for the same game and holder, the token is
    still valid when the lease handed with it ends, and more than a third of its lifetime is left; otherwise a new
    one is minted. A reused token never lasts longer than a new one would (it was issued for an earlier end of the
    same lease), a lease taken anew (a new runner, or the same after its lease ran out, or after the seat changed
    hands) gets a new token, and no runner is handed a token issued to another. Remembered in this process only: a
    restarted lobby, or another replica, mints new ones."""

    def __init__(self, mint: Callable[[Identity], str]) -> None:
        self._mint = mint
        self._issued: dict[tuple[str, int], _Issued] = {}
        self._sweep_at = 0

    def token(self, runner_id: str, leased: Leased, now: int) -> str:
        """The token to hand ``runner_id`` with ``leased`` at ``now``."""
        key = (leased.table_id, leased.seat)
        issued = self._issued.get(key)
        if (
            issued is not None
            and not leased.new
            and (issued.runner, issued.game_id, issued.holder) == (runner_id, leased.game_id, leased.holder)
            and issued.expires >= leased.expires
            and 3 * (issued.expires - now) > issued.expires - issued.issued
        ):
            return issued.token
        expires = leased.expires + LEASE_SECONDS
        identity = Identity(
            leased.holder, Role.PLAYER, leased.game_id, leased.seat, expires=expires, issued=now, audience=GAME_AUDIENCE
        )
        token = self._mint(identity)
        self._issued[key] = _Issued(runner_id, leased.game_id, leased.holder, token, now, expires)
        if now >= self._sweep_at:  # forget the tokens that ended (their tables' matches over, their runners gone)
            self._issued = {k: i for k, i in self._issued.items() if i.expires > now}
            self._sweep_at = now + LEASE_SECONDS
        return token
