"""`Codec.wire`: a view written straight to its bytes is byte for byte what encoding it and serializing the message
makes — for every seat and the spectators at every version of fair 砸六家 and 拖拉机 games (hidden cards, shuffles,
four-takes, tricks and deal results among them) — and a value the writer does not take is encoded as before."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from paiju.contract.games import GAMES
from paiju.engine.dealing import FairDealing
from paiju.engine.games import Games
from paiju.engine.seeds import server_seeds
from paiju.platform.store import MemoryEventStore
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.tractor import model as tractor
from paiju.rules.zlj import bots as zlj_bots
from paiju.rules.zlj import model as zlj

SECRET = b"codec-wire-tests-server-seed-secret"
T0 = datetime(2026, 12, 6, tzinfo=UTC)


async def _views(name: str, seed: int) -> list[Any]:
    """Every seat's and the spectators' view at every version of a fair game between bots."""
    dealing = FairDealing(lambda game_id, number: server_seeds([SECRET], game_id, number), 0.0)
    games = Games(MemoryEventStore(), clock=lambda: T0, dealing=dealing)
    rng = SeededRandom(seed)
    rules = GAMES[name].rules
    seats = rules.seats
    if name == "zlj":
        start: Any = zlj.StartMatch(rng.next64(), zlj.Options(deals=2), fair=True)
        bots: list[Any] = [zlj_bots.HeuristicBot(rng.next64()) for _ in range(seats)]
    else:
        start = tractor.StartGame(rng.next64(), tractor.Options(), at=0, fair=True)
        bots = [tractor_bots.HeuristicBot(rng.next64()) for _ in range(seats)]
    game = await games.create("g", name, start, "start", "engine", seats=[f"p{s}" for s in range(seats)])
    views = []
    for n in range(4000):
        views += [rules.view(game.state, seat) for seat in (*range(seats), None)]
        state = game.state
        if state.phase.value == "ended" or (
            name == "tractor" and (state.deal > 2 or state.phase is tractor.Phase.FLIP)
        ):
            break
        seat = rules.waiting(state)[0]
        action = bots[seat].choose(state, seat)
        if isinstance(action, zlj.Cut | tractor.Cut):
            action = dataclasses.replace(action, seed=0, contribution=b"cut")
        game, _ = await games.act("g", action, f"c{n}", f"p{seat}")
    return views


@pytest.mark.parametrize("name", ["zlj", "tractor"])
def test_a_view_written_to_the_wire_is_its_serialized_message(name: str) -> None:
    codec = GAMES[name].codec
    views = asyncio.run(_views(name, seed=11))
    assert len(views) > 500
    for view in views:
        assert codec.wire(view) == codec.encode(view).SerializeToString()
    shown = {
        field for view in views for field in ("shuffle", "taken", "tricks", "previous") if getattr(view, field, None)
    }
    assert "shuffle" in shown and shown & {"taken", "tricks"}, "the games reached the fields worth checking"


def test_a_value_the_writer_does_not_take_is_encoded_as_before() -> None:
    codec = GAMES["zlj"].codec
    view = asyncio.run(_views("zlj", seed=12))[40]
    negative = dataclasses.replace(view, team_points=(-3, 5))  # a negative number: protobuf writes it
    assert codec.wire(negative) == codec.encode(negative).SerializeToString()
    odd = dataclasses.replace(view, hand=(99,))  # a card id the writer's table does not hold
    assert codec.wire(odd) == codec.encode(odd).SerializeToString()
    bad = dataclasses.replace(view, deal="one")  # a value the encoder refuses is refused as it refuses it
    with pytest.raises(Exception) as encoded:
        codec.encode(bad)
    with pytest.raises(encoded.type):
        codec.wire(bad)
