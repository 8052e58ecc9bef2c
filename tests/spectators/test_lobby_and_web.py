"""A table's spectator policy from the lobby to the engine and the web view, on real NATS and PostgreSQL: a table
chooses it when it is opened (ranked and tournament tables are delayed by default, D-SPEC-3; casual ones public), the
lobby's table and read model show it, its match's game keeps it; a closed table gives no spectator token (JoinGame:
SPECTATORS_NOT_ALLOWED) and its web page says so; a delayed table's web page — which watches as a spectator — never
draws a board, and never holds an event, before the delay."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import grpc
import pytest
from aiohttp import web

from paiju.lobby.table import DELAYED_MOVES
from paiju.platform.limits import RateLimits
from paiju.rules.rng import SeededRandom
from paiju.tools.web.config import LIMITS
from paiju.tools.web.gateway import Gateway
from paiju.tools.web.upstream import Upstream
from paiju.v1 import engine_pb2, lobby_events_pb2, lobby_pb2, spectators_pb2, zlj_pb2

from ..engine.harness import auth as bearer
from ..engine.harness import reason_of
from ..lobby_service.stack import Stack, service_token, stack
from ..support.waiting import wait_until

pytestmark = pytest.mark.integration

DELAY = 4


async def _table(s: Stack, owner: Any, policy: spectators_pb2.SpectatorPolicy | None, **fields: Any) -> lobby_pb2.Table:
    request = lobby_pb2.CreateTableRequest(name="watched", game=engine_pb2.GAME_ZLJ, **fields)
    request.zlj_options.CopyFrom(zlj_pb2.ZljOptions(deals=1, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL))
    if policy is not None:
        request.spectators.CopyFrom(policy)
    created: lobby_pb2.CreateTableResponse = await s.lobby.CreateTable(request, metadata=owner)
    return created.table


async def _started(s: Stack, owner: Any, table_id: str) -> str:
    for _ in range(6):
        await s.lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table_id), metadata=owner)
    started = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
    await s.game_exists(started.game_id)
    return str(started.game_id)


class Bots:
    """The bot seats of a game, leased from the lobby as a bot runner leases them, moved one act at a time."""

    def __init__(self, s: Stack, game_id: str) -> None:
        self.s, self.game_id, self.rng = s, game_id, SeededRandom(11)
        self.tokens: dict[int, Any] = {}

    async def lease(self) -> None:
        async def leased() -> dict[int, Any] | None:
            answer = await self.s.lobby.LeaseBotSeats(
                lobby_pb2.LeaseBotSeatsRequest(runner_id="test-runner"), metadata=service_token()
            )
            found = {x.seat: bearer(x.token) for x in answer.seats if x.game_id == self.game_id}
            return found if len(found) == 6 else None

        self.tokens = await wait_until(leased, f"the bot seats of {self.game_id} leased")

    async def step(self) -> int | None:
        """One act of the seat whose turn it is (the engine's own steps waited for); the version after it, or
        ``None`` once the game has ended."""
        games = self.s.games
        while True:
            game = await games.refresh(self.game_id)
            if game.state.phase.value == "ended":
                return None
            if game.state.turn is not None:
                break
            await games.next_change(self.game_id, game.version)
        md = self.tokens[game.state.turn]
        legal = await self.s.engine.GetLegalActions(
            engine_pb2.GetLegalActionsRequest(game_id=self.game_id, min_version=game.version), metadata=md
        )
        choice = legal.actions[self.rng.below(len(legal.actions))]
        acted = await self.s.engine.Act(
            engine_pb2.ActRequest(game_id=self.game_id, command_id=uuid.uuid4().hex, zlj=choice.zlj), metadata=md
        )
        return int(acted.version)


@contextlib.asynccontextmanager
async def _web(s: Stack) -> AsyncIterator[tuple[Gateway, str]]:
    """The web view's gateway over the stack, served on a free local port: (gateway, its base URL)."""
    gateway = Gateway(Upstream(s.lobby_address, s.engine_address, s.engine_address), RateLimits(LIMITS))
    runner = web.AppRunner(gateway.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield gateway, f"http://127.0.0.1:{port}"
    finally:
        for live in gateway.live.values():
            if live.task is not None:
                live.task.cancel()
        await runner.cleanup()
        await gateway.upstream.close()


async def _events(session: aiohttp.ClientSession, url: str, out: list[tuple[str, Any]], seen: asyncio.Event) -> None:
    """Read a server-sent-events stream into ``out`` as (event, data)."""
    async with session.get(url) as answer:
        event = ""
        async for raw in answer.content:
            line = raw.decode().rstrip("\n")
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                out.append((event, json.loads(line.split(":", 1)[1])))
                seen.set()


def test_a_tables_policy_is_chosen_shown_and_defaulted(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        owners = [(await s.player(f"Owner{n}"))[1] for n in range(3)]  # an account opens 3 tables at most
        owner = owners[0]
        closed = await _table(s, owner, spectators_pb2.SpectatorPolicy(closed=True))
        assert closed.spectators.closed
        ranked = await _table(s, owner, None, mode=lobby_events_pb2.MATCH_MODE_RANKED)
        assert ranked.spectators.delay_moves == DELAYED_MOVES and not ranked.spectators.closed
        tournament = await _table(s, owner, None, preset=lobby_pb2.TABLE_PRESET_TOURNAMENT)
        assert tournament.spectators.delay_moves == DELAYED_MOVES
        casual = await _table(s, owners[1], None, mode=lobby_events_pb2.MATCH_MODE_CASUAL)
        assert not casual.HasField("spectators"), "a casual table is public, as every table before policies"
        chosen = await _table(s, owners[1], spectators_pb2.SpectatorPolicy(), mode=lobby_events_pb2.MATCH_MODE_RANKED)
        assert chosen.spectators.delay_moves == 0, "a ranked table may choose to be watched live"
        listed = await s.listed(closed.table_id, lambda t: True)
        assert listed.spectators.closed, "the read model lists the policy"
        for delay in (-1, 17, 1 << 30):
            try:
                await _table(s, owners[2], spectators_pb2.SpectatorPolicy(delay_moves=delay))
            except grpc.aio.AioRpcError as e:
                assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
            else:
                raise AssertionError(f"a delay of {delay} moves was taken")

    async def main() -> None:
        async with stack(nats_url, database_dsn) as s:
            await body(s)

    asyncio.run(main())


def test_a_closed_table_gives_no_spectator_token_and_its_page_says_so(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        _, guest = await s.player("Guest")
        table = await _table(s, owner, spectators_pb2.SpectatorPolicy(closed=True))
        game_id = await _started(s, owner, table.table_id)
        first = (await s.games.history(game_id)).envelopes[0]
        assert first.spectators.closed, "the match's game keeps its table's policy"
        try:
            await s.lobby.JoinGame(lobby_pb2.JoinGameRequest(table_id=table.table_id), metadata=guest)
        except grpc.aio.AioRpcError as e:
            assert (e.code(), reason_of(e)) == (grpc.StatusCode.PERMISSION_DENIED, "SPECTATORS_NOT_ALLOWED")
        else:
            raise AssertionError("a closed table gave a spectator token")
        async with _web(s) as (_gateway, url), aiohttp.ClientSession() as session:
            out: list[tuple[str, Any]] = []
            seen = asyncio.Event()
            reader = asyncio.create_task(_events(session, f"{url}/api/tables/{table.table_id}/live", out, seen))
            async with asyncio.timeout(20):
                while not any(event == "gone" for event, _ in out):
                    seen.clear()
                    await seen.wait()
            reader.cancel()
            gone = next(data for event, data in out if event == "gone")
            assert "admits no spectators" in gone["message"]
            assert not any(event == "board" for event, _ in out)

    async def main() -> None:
        async with stack(nats_url, database_dsn) as s:
            await body(s)

    asyncio.run(main())


def test_a_delayed_tables_web_page_never_shows_a_move_before_its_delay(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        table = await _table(s, owner, spectators_pb2.SpectatorPolicy(delay_moves=DELAY))
        game_id = await _started(s, owner, table.table_id)
        bots = Bots(s, game_id)
        await bots.lease()
        async with _web(s) as (gateway, url), aiohttp.ClientSession() as session:
            out: list[tuple[str, Any]] = []
            seen = asyncio.Event()
            reader = asyncio.create_task(_events(session, f"{url}/api/tables/{table.table_id}/live", out, seen))
            opening = (await s.games.refresh(game_id)).version
            steps = 0
            while steps < 40:
                version = await bots.step()
                if version is None:
                    break
                steps += 1
                allowed = max(opening, version - DELAY)
                # the page's boards catch up with what a spectator may see now, and never go further
                async with asyncio.timeout(20):
                    while not any(e == "board" and d["version"] >= allowed for e, d in out):
                        seen.clear()
                        await seen.wait()
                for event, data in out:
                    if event == "board":
                        assert data["version"] <= allowed, (data["version"], version)
                        assert data["delay_moves"] == DELAY and data["deadline_ms"] is None
                live = gateway.live[table.table_id]
                assert live.last is not None and live.last["data"]["version"] <= allowed, "the gateway holds no more"
            reader.cancel()
            assert steps == 40

    async def main() -> None:
        async with stack(nats_url, database_dsn) as s:
            await body(s)

    asyncio.run(main())
