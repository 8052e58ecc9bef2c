"""The web view follows a player's queue entry again when the lobby ends the FindMatch stream (it is shutting down),
after a pause (`DRAINING_PAUSE_SECONDS`): a lobby that still answers while it drains ends each new stream at once,
and the web view must not call it in a loop meanwhile. The lobby is a stub object: each FindMatch stream it opens
answers ``end`` at once, the fourth answers ``found``; the page's side is a real HTTP request to the play route,
read as the server-sent events a browser reads."""

from __future__ import annotations

import asyncio
import itertools
import json
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from paiju.platform.limits import RateLimits
from paiju.tools.web.config import LIMITS
from paiju.tools.web.gateway import DRAINING_PAUSE_SECONDS, Gateway
from paiju.tools.web.play import Play

from ..support.draining_lobby import DrainingLobby

pytestmark = pytest.mark.unit


def test_the_queue_is_followed_again_after_a_pause_when_a_draining_lobby_ends_it() -> None:
    async def main() -> None:
        lobby = DrainingLobby(ends=3, table_id="t-found")
        upstream = SimpleNamespace(lobby=lobby, calls={})
        gateway = Gateway(upstream=upstream, limits=RateLimits(LIMITS))  # type: ignore[arg-type]
        play = Play(gateway, b"k" * 32, secure=False)
        browser: Any = SimpleNamespace(player_id="account-a", token="t", address="", metadata=())
        play.sessions.required = lambda request: browser  # type: ignore[method-assign]
        app = web.Application()
        app.router.add_get("/api/play/queue", play.queue)
        async with (
            TestClient(TestServer(app)) as client,
            client.get("/api/play/queue", params={"game": "zlj", "mode": "casual"}) as response,
        ):
            assert response.status == 200 and response.headers["Content-Type"] == "text/event-stream"
            body = await asyncio.wait_for(response.text(), 30)
        events = [line.removeprefix("event: ") for line in body.splitlines() if line.startswith("event: ")]
        assert events == ["found"], body
        data = [json.loads(line.removeprefix("data: ")) for line in body.splitlines() if line.startswith("data: ")]
        assert data == [{"table_id": "t-found", "seat": 2}]
        assert len(lobby.opened) == 4, "followed again after each end, until the entry was seated"
        assert upstream.calls == {"player FindMatch": 4}, "each one counted"
        gaps = [b - a for a, b in itertools.pairwise(lobby.opened)]
        assert min(gaps) >= DRAINING_PAUSE_SECONDS * 0.9, f"a new stream at once after an end: {gaps}"

    asyncio.run(main())
