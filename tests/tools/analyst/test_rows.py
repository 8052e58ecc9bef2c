"""The export's rows and the replay's lines as pure functions of decoded envelopes (no NATS): games played by
the rules' bots through the engine's `Games` over the in-memory store, with what bots never do: turn timers
running out (砸六家 §13, 拖拉机 §11 and D-TR-6.2 for a timed-out bid), a cutter's timer between deals, and a
referee's penalty (拖拉机 §11)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paiju.engine.games import Games, History
from paiju.platform.store import MemoryEventStore
from paiju.rules.cards import parse_cards
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tractor
from paiju.rules.zlj import bots as zlj_bots
from paiju.rules.zlj import model as zlj
from paiju.tools.analyst import GameLog, decode, game_rows, replay_lines
from paiju.tools.analyst.export import write_rows
from paiju.v1 import engine_pb2

TIMER = 30


async def _zlj_with_timeouts() -> History:
    """A two-deal match; the timer runs out on the third turn of the first deal and on the second deal's cut."""
    rng = SeededRandom(3)
    games = Games(MemoryEventStore())
    start = zlj.StartMatch(rng.next64(), zlj.Options(deals=2, turn_seconds=TIMER))
    game = await games.create("z", "zlj", start, "start", "engine", seats=[f"p{s}" for s in range(6)])
    bots = [zlj_bots.RandomBot(rng.next64()) for _ in range(6)]
    for n in range(10_000):
        state = game.state
        if state.phase is zlj.Phase.ENDED:
            return await games.history("z")
        assert state.turn is not None
        command: Any = bots[state.turn].choose(state, state.turn)
        if n == 2 or state.phase is zlj.Phase.CUT:
            command = zlj.Timeout(state.turn, rng.next64())
        elif isinstance(command, zlj.Cut):
            command = dataclasses.replace(command, seed=rng.next64())
        game, _ = await games.act("z", command, f"c{n}", "engine")
    raise AssertionError("the match did not end")


def test_zlj_timeouts_are_rows_and_a_cutter_s_timeout_begins_the_next_deal() -> None:
    game = asyncio.run(_zlj_with_timeouts())
    log = decode(game.envelopes)
    assert log.ended and log.events == game.events
    rows = game_rows(log)
    timeouts = [p for p in rows.plays if p["action"] == "timeout"]
    assert [(t["deal"], t["order"]) for t in timeouts] == [(1, 3), (2, 1)]
    first, cut = timeouts[0], timeouts[1]
    follows = {p["version"]: p for p in rows.plays}
    assert follows[first["version"] + 1]["action"] in ("play", "pass"), "the engine's default play follows"
    assert follows[cut["version"] + 1]["action"] == "cut" and follows[cut["version"] + 1]["order"] == 2
    assert [d["deal"] for d in rows.deals] == [1, 2] and all(d["complete"] for d in rows.deals)
    assert rows.deals[1]["started"] == cut["time"], "the timed-out cut begins deal 2"
    assert max(p["version"] for p in rows.plays if p["deal"] == 1) < cut["version"]
    for deal in (1, 2):
        orders = [p["order"] for p in rows.plays if p["deal"] == deal]
        assert orders == list(range(1, len(orders) + 1))
    told = "\n".join(replay_lines(log))
    assert "seat 2 (A, p2)'s turn timer ran out: the engine moves for it (§13):" in told


async def _tractor_with_referee() -> History:
    """A deal played until its fourth trick, with a bid's timer running out, a play's, and a penalty."""
    rng = SeededRandom(8)
    games = Games(MemoryEventStore())
    start = tractor.StartGame(rng.next64(), tractor.Options(turn_seconds=TIMER))
    game = await games.create("t", "tractor", start, "start", "engine", seats=[f"p{s}" for s in range(4)])
    bots = [tractor_bots.RandomBot(rng.next64()) for _ in range(4)]
    penalised = False
    for n in range(10_000):
        state = game.state
        if len(state.tricks) == 4:
            return await games.history("t")
        if state.phase is tractor.Phase.FLIP:
            command: Any = tractor.Redeal(rng.next64())
        else:
            seat = tractor_game.waiting(state)[0]
            command = bots[seat].choose(state, seat)
            bidding = state.phase is tractor.Phase.BID and not state.bids
            if bidding or (state.phase is tractor.Phase.PLAY and len(state.tricks) == 1 and state.trick is None):
                command = tractor.Timeout(seat, rng.next64())
            elif state.phase is tractor.Phase.PLAY and len(state.tricks) == 2 and not penalised:
                command, penalised = tractor.Penalize("referee-1", 1, 2), True
            elif isinstance(command, tractor.Cut):
                command = dataclasses.replace(command, seed=rng.next64())
        game, _ = await games.act("t", command, f"c{n}", "engine")
    raise AssertionError("the deal did not reach its fourth trick")


def test_tractor_timeouts_and_a_referee_penalty_are_rows_and_a_timed_out_bid_stays_concealed_while_live() -> None:
    game = asyncio.run(_tractor_with_referee())
    live = decode(game.envelopes)
    assert not live.ended
    plays = game_rows(live).plays
    actions = [p["action"] for p in plays]
    assert actions[0] == "flip" and "timeout" in actions
    penalty = next(p for p in plays if p["action"] == "penalty")
    assert penalty["seat"] == 1 and penalty["player"] == "p1" and penalty["detail"].startswith("referee referee-1: ")
    assert penalty["stage"] == 2, "between the second trick and the third"
    bids = [p for p in plays if p["stage"] == 0 and p["action"] != "flip"]
    assert bids and all(p["action"] in ("bid_or_pass", "counter_or_pass") for p in bids)
    assert all(p["hidden"] and p["cards"] == "" and p["detail"] == "" for p in bids), "concealed (D-TR-6.2)"
    assert [p["stage"] for p in plays if p["action"] == "play"][:4] == [1, 1, 1, 1]

    # the same log with its hidden information shown (as once the game has ended)
    shown = game_rows(dataclasses.replace(live, ended=True))
    timed_out = [p for p in shown.plays if p["detail"].endswith("turn timer")]
    assert timed_out and timed_out[0]["action"] == "pass" and timed_out[0]["detail"] == "bid, turn timer"
    events: dict[int, Any] = dict(enumerate(live.events, start=1))
    for play in shown.plays:
        event = events[play["version"]]
        if isinstance(event, tractor.BidEntered) and event.bid is not None:
            assert play["action"] in ("bid", "counter") and parse_cards(play["cards"]) == tuple(sorted(event.bid.cards))
    assert all(shown.deals[0][f"hand_{s}"] for s in range(4)) and not any(
        game_rows(live).deals[0][f"hand_{s}"] for s in range(6)
    )
    told = "\n".join(replay_lines(live))
    assert "Referee: seat 1 (B, p1) penalised" in told and "turn timer ran out" in told


def test_decoded_logs_equal_the_engine_s() -> None:
    game = asyncio.run(_tractor_with_referee())
    log: GameLog = decode(game.envelopes)
    assert (log.game_id, log.game, log.events, log.version) == ("t", "tractor", game.events, game.game.version)


async def _zlj_with_a_covered_seat() -> History:
    """A one-deal match whose seat 2 is covered by the lobby's bot (``cover-<table>-2``) from its fifth move on."""
    rng = SeededRandom(11)
    games = Games(MemoryEventStore())
    start = zlj.StartMatch(rng.next64(), zlj.Options(deals=1))
    game = await games.create("c", "zlj", start, "start", "engine", seats=[f"p{s}" for s in range(6)])
    bots = [zlj_bots.RandomBot(rng.next64()) for _ in range(6)]
    for n in range(10_000):
        state = game.state
        if state.phase is zlj.Phase.ENDED:
            return await games.history("c")
        if n == 5:
            await games.assign_seats("c", {2: COVER}, engine_pb2.SEAT_CHANGE_COVER, "cover", "lobby")
        assert state.turn is not None
        command: Any = bots[state.turn].choose(state, state.turn)
        if isinstance(command, zlj.Cut):
            command = dataclasses.replace(command, seed=rng.next64())
        game, _ = await games.act("c", command, f"c{n}", "engine")
    raise AssertionError("the match did not end")


COVER = "cover-table-0a1b2c3d-2"


def test_a_covered_seat_keeps_a_readable_name_in_the_export_and_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = decode(asyncio.run(_zlj_with_a_covered_seat()).envelopes)
    names = {f"p{s}": name for s, name in enumerate(("Ann", "Bo", "Cy", "Dee", "Ed", "Flo"))}
    rows = game_rows(log, names)
    covered = [p for p in rows.plays if p["player"] == COVER]
    assert covered and {p["name"] for p in covered} == {"Bot for seat 2"}
    assert all(p["name"] for p in rows.plays), "no play row without a name"
    assert all(d[f"name_{s}"] for d in rows.deals for s in range(6)), "no deal row without a name"
    told = "\n".join(replay_lines(log, names=names))
    assert "Bot for seat 2" in told and COVER not in told.split("\n", 4)[-1], "the id once, in the heading at most"
    # the analysts' guide's query (docs/analysts.md, Export) over the export: every row named
    write_rows(rows, tmp_path / "exports", "parquet")
    monkeypatch.chdir(tmp_path)
    plays = pq.read_table("exports/plays.parquet")
    four_takes = plays.filter(pc.equal(plays["action"], "four_take")).group_by("name").aggregate([("name", "count")])
    assert all(row["name"] for row in four_takes.to_pylist())
    by_name = plays.group_by("name").aggregate([("name", "count")]).to_pylist()
    assert "" not in {row["name"] for row in by_name} and "Bot for seat 2" in {row["name"] for row in by_name}
