"""The export of live games by the table's spectator policy (`paiju export --include-live`,
docs/rules/spectators.md), on games a real engine recorded in a real nats-server: a delayed table's live game is
exported as far as its spectators see it, a closed table's live game not at all (counted as left out), a public one
whole (public rows), and every ended game whole whatever its policy."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from paiju.rules.rng import SeededRandom
from paiju.tools.analyst.export import export_rows
from paiju.tools.analyst.log import from_game, spectated
from paiju.v1 import spectators_pb2

from .harness import served_engine
from .test_engine_delay import _create, _step

pytestmark = pytest.mark.integration


def test_live_games_are_exported_as_their_spectators_see_them(request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with served_engine(request) as (stub, games, _):
            rng = SeededRandom(2)
            ids = {
                "delayed": "ex-delayed-" + uuid.uuid4().hex[:6],
                "closed": "ex-closed-" + uuid.uuid4().hex[:6],
                "public": "ex-public-" + uuid.uuid4().hex[:6],
                "ended": "ex-ended-" + uuid.uuid4().hex[:6],
            }
            await _create(stub, ids["delayed"], spectators_pb2.SpectatorPolicy(delay_moves=5))
            await _create(stub, ids["closed"], spectators_pb2.SpectatorPolicy(closed=True))
            await _create(stub, ids["public"], None)
            await _create(stub, ids["ended"], spectators_pb2.SpectatorPolicy(closed=True))
            for game_id in (ids["delayed"], ids["closed"], ids["public"]):
                for _ in range(20):
                    assert await _step(stub, game_id, rng) is not None
            while await _step(stub, ids["ended"], rng) is not None:
                pass
            logs = {name: from_game(await games.history(game_id)) for name, game_id in ids.items()}
            delayed = spectated(logs["delayed"])
            assert delayed is not None and delayed.version == logs["delayed"].version - 5
            assert spectated(logs["closed"]) is None
            assert spectated(logs["public"]) is logs["public"]
            assert spectated(logs["ended"]) is logs["ended"], "an ended game's record is public"

            rows = export_rows(logs.values(), include_live=True)
            exported = {row["game_id"]: row["version"] for row in rows.events}
            assert max(v for g, v in exported.items() if g == ids["delayed"]) == logs["delayed"].version - 5
            versions = [r["version"] for r in rows.events if r["game_id"] == ids["delayed"]]
            assert versions == list(range(1, logs["delayed"].version - 5 + 1))
            assert not any(r["game_id"] == ids["closed"] for r in rows.events + rows.deals + rows.plays)
            assert rows.live_left_out == 1, "the closed table's live game is left out"
            assert [r["version"] for r in rows.events if r["game_id"] == ids["public"]][-1] == logs["public"].version
            assert [r["version"] for r in rows.events if r["game_id"] == ids["ended"]][-1] == logs["ended"].version
            played = [p for p in rows.plays if p["game_id"] == ids["delayed"]]
            last_seen = logs["delayed"].version - 5
            assert played and all(p["version"] <= last_seen for p in played), "no play past the delay"

    asyncio.run(body())
