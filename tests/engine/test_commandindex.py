"""The index of a game's command ids: exact for the newest, compact for the rest, and never a wrong answer when two
ids hash alike — a retry is answered as the first time however long ago its command was stored."""

from __future__ import annotations

import asyncio

import pytest

from paiju.engine import commandindex
from paiju.engine.commandindex import EXACT, CommandIndex
from paiju.engine.games import Games
from paiju.platform.store.memory import MemoryEventStore
from paiju.rules import registry, zlj
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import bots as zlj_bots


def test_every_command_is_found_where_it_stored_its_first_event() -> None:
    index = CommandIndex()
    for n in range(5000):
        index.setdefault(f"command-{n}", 2 * n)
        index.setdefault(f"command-{n}", 2 * n + 1)  # its second event: the first index stays
    assert len(index) == 5000
    for n in range(5000):
        assert 2 * n in index.candidates(f"command-{n}")
    assert index.candidates("command-5000") == ()
    assert index.candidates("") == ()
    assert index.nbytes <= 48 * 5000 + 150 * 2 * EXACT, "compact: machine words, not a dict of strings"


def test_ids_that_hash_alike_are_all_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commandindex, "_key", lambda command_id: 42 if command_id.startswith("same") else 7)
    index = CommandIndex()
    for n in range(3 * EXACT):
        index.setdefault(f"same-{n}", n)
    # the older ones are in the compact table under one hash: each id's own index is among its candidates
    assert set(index.candidates("same-0")) >= {0}
    assert 0 in index.candidates("same-5") and 5 in index.candidates("same-5")
    assert index.candidates(f"same-{3 * EXACT - 1}") == (3 * EXACT - 1,), "the newest are exact"
    assert len(index) == 3 * EXACT


def test_a_retry_long_after_is_answered_as_the_first_time_even_when_ids_hash_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # command ids hash alike in tens (c10..c19, c20..c29...): the answer still comes from the command's own envelopes
    monkeypatch.setattr(commandindex, "_key", lambda command_id: hash(command_id[:-1]) & 0xFFFF or 1)

    async def main() -> None:
        games = Games(MemoryEventStore())
        players = [f"p{i}" for i in range(registry.ZLJ.seats)]
        rng = SeededRandom(11)
        bots = [zlj_bots.HeuristicBot(rng.next64()) for _ in range(registry.ZLJ.seats)]
        game = await games.create(
            "long",
            registry.ZLJ.name,
            zlj.StartMatch(rng.next64(), zlj.Options(deals=0)),
            "start",
            "lobby",
            seats=players,
        )
        answers = {}
        for n in range(400):
            seat = game.state.turn
            action = bots[seat].choose(game.state, seat)
            if isinstance(action, zlj.Cut):
                action = zlj.Cut(seat, action.count, rng.next64())
            game, events = await games.act("long", action, f"c{n}", players[seat])
            answers[n] = (action, players[seat], [e.SerializeToString() for e in events])
        for n in (0, 1, 57, 200, 399):
            action, player, stored = answers[n]
            same, again = await games.act("long", action, f"c{n}", player)
            assert [e.SerializeToString() for e in again] == stored, f"the retry of c{n} is answered as the first time"
            assert same.version == game.version, "and stores nothing"
        # an id never stored, whose hash ten stored ids share, is a new command
        seat = game.state.turn
        action = bots[seat].choose(game.state, seat)
        if isinstance(action, zlj.Cut):
            action = zlj.Cut(seat, action.count, rng.next64())
        after, events = await games.act("long", action, "c4x", players[seat])
        assert events and after.version == game.version + len(events)

    asyncio.run(main())
