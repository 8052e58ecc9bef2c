"""The web view within its bounds whatever its clients do: a replay served one deal at a time (a long match is never
drawn whole), caches bounded in bytes, a connection that sends half a request closed after the head timeout, and
past the connection cap a clear 503 — each against a real server on a socket."""

from __future__ import annotations

import asyncio
import itertools
import json
from types import SimpleNamespace
from typing import Any

from aiohttp import web

from paiju.engine.games import Games
from paiju.engine.selfplay import record_zlj
from paiju.platform.limits import RateLimits
from paiju.platform.store import MemoryEventStore
from paiju.tools.web.bounds import ByteCache, ConnectionGuard
from paiju.tools.web.config import LIMITS, Settings
from paiju.tools.web.gateway import Gateway
from paiju.v1 import ratings_events_pb2, ratings_pb2

from ..support.waiting import wait_until

DEALS = 6


async def long_match() -> list[Any]:
    """The envelopes of an ended 砸六家 match of `DEALS` deals, played by the heuristic bots."""
    games = Games(MemoryEventStore())
    players = ["bot-table-1-0", *(f"p{i}" for i in range(1, 6))]  # seat 0 played by one of the lobby's bots
    await record_zlj(games, "long-match", players, seed=5, deals=DEALS)
    return list((await games.history("long-match")).envelopes)


class Upstream:
    """The gateway's upstream for a replay: the game's log as the engine's Replay streams it."""

    def __init__(self, envelopes: list[Any]) -> None:
        self.envelopes = envelopes
        self.calls: dict[str, int] = {}

    async def metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    async def replay(self, game_id: str, metadata: Any) -> list[Any]:
        self.calls["Replay"] = self.calls.get("Replay", 0) + 1
        return list(self.envelopes)

    async def close(self) -> None:
        pass


async def served(app: web.Application, guard: ConnectionGuard | None = None) -> tuple[web.AppRunner, Any, int]:
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=15)
    await runner.setup()
    assert runner.server is not None
    factory = guard if guard is not None else runner.server
    if guard is not None:
        guard._factory = runner.server
    server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
    return runner, server, server.sockets[0].getsockname()[1]


async def get(port: int, path: str) -> tuple[int, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    raw = await reader.read()
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    if b"chunked" in head.lower():
        body = _unchunked(body)
    return status, json.loads(body) if body else None


def _unchunked(body: bytes) -> bytes:
    out = b""
    while body:
        size, _, rest = body.partition(b"\r\n")
        n = int(size, 16)
        if not n:
            break
        out, body = out + rest[:n], rest[n + 2 :]
    return out


def test_a_replay_is_served_one_deal_at_a_time() -> None:
    async def body() -> None:
        envelopes = await long_match()
        gateway = Gateway(Upstream(envelopes), RateLimits(LIMITS, "off"), cache_bytes=1 << 20)  # type: ignore[arg-type]
        runner, server, port = await served(gateway.app())
        try:
            status, first = await get(port, "/api/games/long-match/replay")
            assert status == 200, first
            index = first["deals"]
            assert [d["deal"] for d in index] == list(range(1, DEALS + 1))
            assert index[0]["first"] == 1 and index[-1]["last"] == first["last_version"] == len(envelopes)
            assert all(a["last"] + 1 == b["first"] for a, b in itertools.pairwise(index)), "no gaps"
            sizes = []
            for deal in index:
                status, answer = await get(port, f"/api/games/long-match/replay?deal={deal['deal']}")
                assert status == 200 and answer["deal"] == deal["deal"]
                versions = [step["version"] for step in answer["steps"]]
                assert versions == list(range(deal["first"], deal["last"] + 1)), "the deal's moves, and no others"
                assert {step["deal"] for step in answer["steps"]} == {deal["deal"]}
                marks = {tuple(seat["bot"] for seat in step["board"]["seats"]) for step in answer["steps"]}
                assert marks == {(True, False, False, False, False, False)}, "the bot's seat is marked, only it"
                sizes.append(len(json.dumps(answer)))
            # each answer holds one deal: a match of a thousand deals costs one deal's drawing per answer
            assert max(sizes) < 2.5 * sum(sizes) / DEALS
            for bad in ("0", "-1", "x", "1.5", "100001", "%EF%BC%91", "9" * 50):
                status, answer = await get(port, f"/api/games/long-match/replay?deal={bad}")
                assert (status, answer["reason"]) == (400, "INVALID_REQUEST"), bad
            status, answer = await get(port, f"/api/games/long-match/replay?deal={DEALS + 1}")
            assert (status, answer["reason"]) == (404, "DEAL_NOT_FOUND")
        finally:
            server.close()
            await runner.cleanup()

    asyncio.run(body())


def test_the_replay_cache_holds_no_more_bytes_than_it_may() -> None:
    async def body() -> None:
        envelopes = await long_match()
        upstream = Upstream(envelopes)
        whole = Gateway(upstream, RateLimits(LIMITS, "off"))  # type: ignore[arg-type]
        runner, server, port = await served(whole.app())
        try:
            for deal in range(1, DEALS + 1):
                assert (await get(port, f"/api/games/long-match/replay?deal={deal}"))[0] == 200
        finally:
            server.close()
            await runner.cleanup()
        limit = whole._replays.bytes // 3  # a third of the match's deals
        gateway = Gateway(upstream, RateLimits(LIMITS, "off"), cache_bytes=limit)  # type: ignore[arg-type]
        runner, server, port = await served(gateway.app())
        try:
            for _ in range(2):
                for deal in range(1, DEALS + 1):
                    assert (await get(port, f"/api/games/long-match/replay?deal={deal}"))[0] == 200
                    assert 0 < gateway._replays.bytes <= limit
            assert 0 < len(gateway._replays) < DEALS
            calls = upstream.calls["Replay"]
            assert (await get(port, f"/api/games/long-match/replay?deal={DEALS}"))[0] == 200
            assert upstream.calls["Replay"] == calls, "the latest deal is answered from the cache"
        finally:
            server.close()
            await runner.cleanup()

    asyncio.run(body())


def test_a_byte_cache_forgets_the_least_recently_used_past_its_bytes() -> None:
    cache: ByteCache[str] = ByteCache(100)
    cache.put("a", "A", 40)
    cache.put("b", "B", 40)
    assert cache.get("a") == "A"  # now the most recent
    cache.put("c", "C", 40)
    assert (cache.get("b"), cache.get("a"), cache.get("c")) == (None, "A", "C")
    assert cache.bytes <= 100
    cache.put("huge", "H", 1000)
    assert cache.get("huge") is None and cache.bytes <= 100
    cache.put("a", "A2", 10)
    assert cache.get("a") == "A2" and cache.bytes == 10 + 1 + 41


def test_half_sent_requests_are_closed_and_the_connections_are_capped() -> None:
    async def body() -> None:
        app = web.Application()

        async def hello(request: web.Request) -> web.Response:
            return web.json_response({"ok": True})

        app.router.add_get("/", hello)
        guard = ConnectionGuard(lambda: None, limit=20, head_seconds=0.5)
        runner, server, port = await served(app, guard)
        try:
            slow = []
            for _ in range(20):  # 20 clients send half a request head and wait
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n")
                slow.append((reader, writer))
            await wait_until(lambda: guard.open == 20, "the server to hold the 20 half-sent connections")
            # past the cap: a clear answer, and the connection closed
            status, answer = await get(port, "/")
            assert (status, answer["reason"]) == (503, "RATE_LIMITED") and guard.refused == 1
            for reader, _ in slow:  # each half-sent connection is closed by the server after the head timeout
                assert await asyncio.wait_for(reader.read(), 5) == b""
            assert guard.timed_out == 20  # closed by the head timeout, not by anything else
            await wait_until(lambda: guard.open == 0, "the server to let go of the closed connections")
            assert await get(port, "/") == (200, {"ok": True}), "a whole request is served"
            # a request sent whole but slowly within the timeout is served
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\n")
            await asyncio.sleep(0.1)
            writer.write(b"Host: x\r\n")
            await asyncio.sleep(0.1)
            writer.write(b"Connection: close\r\n\r\n")
            assert b'{"ok": true}' in await asyncio.wait_for(reader.read(), 5)
        finally:
            server.close()
            await runner.cleanup()

    asyncio.run(body())


def test_no_proxy_is_trusted_unless_configured() -> None:
    assert Settings.from_env(env={}).trusted_proxies == ""
    gateway = Gateway(SimpleNamespace(), RateLimits(LIMITS))  # type: ignore[arg-type]
    request = SimpleNamespace(remote="10.1.2.3", headers={"X-Forwarded-For": "203.0.113.9"})
    assert gateway.client(request) == "10.1.2.3"  # type: ignore[arg-type]


class Ratings:
    """The gateway's upstream for the ratings' pages: every player rated, with a history of `HISTORY` matches (what
    scoring's RatingsService answers, as its messages), each call counted."""

    HISTORY = 50

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def _count(self, method: str) -> None:
        self.calls[method] = self.calls.get(method, 0) + 1

    async def leaderboard(self, game: str, mode: int, limit: int) -> Any:
        self._count("GetRatingLeaderboard")
        await asyncio.sleep(0.05)  # an answer that takes a moment: the pages asking meanwhile wait for it
        rows = [_rating(f"p{n}", place=n + 1) for n in range(limit)]
        return ratings_pb2.GetRatingLeaderboardResponse(rows=rows, model=1)

    async def player_rating(self, player_id: str, game: str, mode: int) -> Any:
        self._count("GetPlayerRating")
        return ratings_pb2.GetPlayerRatingResponse(rating=_rating(player_id), model=1)

    async def rating_history(self, player_id: str, game: str, mode: int, limit: int, before: int = 0) -> Any:
        self._count("GetRatingHistory")
        matches = [
            ratings_pb2.RatedMatch(
                number=n,
                game_id=f"g{n}",
                table_id="t",
                team=n % 2,
                result="won",
                team_scores=[7, 3],
                before=ratings_events_pb2.Rating(mu=25, sigma=8),
                after=ratings_events_pb2.Rating(mu=26, sigma=7.5),
                conservative=3.5,
                others=["bot-t-1", "q", "bot-t-3", "r", "bot-t-5"],
            )
            for n in range(min(limit, self.HISTORY), 0, -1)
        ]
        return ratings_pb2.GetRatingHistoryResponse(matches=matches, model=1)

    async def close(self) -> None:
        pass


def _rating(player_id: str, place: int = 0) -> Any:
    return ratings_pb2.PlayerRating(
        player_id=player_id,
        rating=ratings_events_pb2.Rating(mu=25, sigma=8),
        conservative=1.0,
        matches=3,
        wins=2,
        provisional=True,
        place=place,
    )


def test_the_ratings_pages_ask_scoring_once_for_a_crowd_and_their_cache_holds_no_more_bytes_than_it_may() -> None:
    async def body() -> None:
        upstream = Ratings()
        gateway = Gateway(upstream, RateLimits(LIMITS, "off"), cache_bytes=1 << 19)  # type: ignore[arg-type]
        runner, server, port = await served(gateway.app())
        try:
            answers = await asyncio.gather(*(get(port, "/api/ratings/zlj?mode=casual") for _ in range(40)))
            assert {status for status, _ in answers} == {200}
            assert upstream.calls["GetRatingLeaderboard"] == 1, "forty pages at once, one call to scoring"
            rows = answers[0][1]["rows"]
            assert len(rows) == 50 and rows[0]["place"] == 1 and rows[0]["provisional"] is True
            for limit in (1, 7, 100):  # any length a page asks for is cut from the one leaderboard read
                status, answer = await get(port, f"/api/ratings/zlj?mode=casual&limit={limit}")
                assert status == 200 and [r["place"] for r in answer["rows"]] == list(range(1, limit + 1))
            assert upstream.calls["GetRatingLeaderboard"] == 1
            limit = gateway._ratings.max_bytes
            for n in range(120):  # players by the hundred: the cache keeps the latest within its bytes
                status, answer = await get(port, f"/api/players/player-{n}?game=tractor&mode=ranked")
                assert status == 200 and len(answer["matches"]) == Ratings.HISTORY
                assert answer["matches"][0]["others"][0] == {"player_id": "bot-t-1", "name": "a bot", "bot": True}
                assert 0 < gateway._ratings.bytes <= limit
            assert len(gateway._ratings) < 120, "the oldest answers were forgotten"
            calls = dict(upstream.calls)
            assert (await get(port, "/api/players/player-119?game=tractor&mode=ranked"))[0] == 200
            assert upstream.calls == calls, "the latest answer is served from the cache while it is fresh"
        finally:
            server.close()
            await runner.cleanup()

    asyncio.run(body())
