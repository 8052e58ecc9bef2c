"""The turn timer at the terminal: with a timer on, the prompt shows the time left to move (``[8 s left] your
move> ``, refreshed each time it is shown) and the player is told as it runs low; when it runs out, the narration
says the engine moved for the player and the prompt is withdrawn, never shown again as "(still your move)".

The turn's deadline comes with it on the Watch stream (``Turn.deadline``, by the engine's clock): the client counts
the time it leaves from the time the game's last event was recorded (``Envelope.recorded_at``, when the engine
starts a turn's timer, `paiju.engine.timers`) or, if earlier, the time it arrived here."""

from __future__ import annotations

import asyncio
import io
import re
import time

import pexpect
import pytest

from paiju.platform.tokens import Role
from paiju.rules.registry import GAMES
from paiju.rules.tractor import model as tm
from paiju.rules.zlj import model as zm
from paiju.terminal.client import render
from paiju.terminal.client.console import Console
from paiju.terminal.client.engine import EngineClient, Legal, Snapshot, Turn
from paiju.terminal.client.narrate import TractorNarration, ZljNarration, timed_out_seat
from paiju.terminal.client.render import PROMPT, PROMPT_AGAIN
from paiju.terminal.client.session import Session

from .driver import EngineThread, only_acts_and_watches, spawn_client, token, zlj_bots


def test_the_prompt_shows_the_time_left_and_warns_as_it_runs_low() -> None:
    assert render.turn_deadline(1010.0, 1000.0, 1000.4) == 1010.0
    assert render.turn_deadline(1013.0, 1003.0, 1000.4) == 1010.4, "a clock behind the engine's shows no extra time"
    assert render.turn_deadline(None, 1000.0, 1000.0) is None
    assert render.turn_deadline(1010.0, None, 1000.0) == 1010.0
    assert (
        render.countdown(None) == ""
        and render.countdown(11.2) == "[12 s left] "
        and render.countdown(-1) == "[0 s left] "
    )
    told: set[int] = set()
    assert render.countdown_warning(11.0, 12, told) is None
    assert render.countdown_warning(9.8, 12, told) == "  10 s left to move, then the engine moves for you."
    assert render.countdown_warning(9.5, 12, told) is None, "once"
    assert render.countdown_warning(4.9, 12, told) == "  5 s left to move, then the engine moves for you."
    assert render.countdown_warning(11.5, 12, told) is None and not told, "another seat moved: the timer started again"
    assert render.countdown_warning(9.9, 12, told) is not None
    assert render.countdown_warning(9.0, 10, set()) is None, "a 10 s timer shows 10 s on its prompt: no warning at 10"


def test_the_prompt_is_shown_again_with_the_time_left_then() -> None:
    out = io.StringIO()
    console = Console(out=out, fd=0)
    left = iter([12.0, 7.0])
    console.prompt(PROMPT, again=PROMPT_AGAIN, status=lambda: render.countdown(next(left)))
    console.line("  seat 2 (A) has bid or passed (concealed)")
    assert (
        out.getvalue() == f"[12 s left] {PROMPT}\n  seat 2 (A) has bid or passed (concealed)\n[7 s left] {PROMPT_AGAIN}"
    )


def test_a_timeout_is_told_as_the_engine_moving_for_the_player() -> None:
    seats = render.Seats(me=0)
    assert ZljNarration(seats).narrate(zm.TurnTimedOut(0)) == ["  Your time ran out: the engine moved for you (§13):"]
    assert ZljNarration(seats).narrate(zm.TurnTimedOut(3)) == [
        "  seat 3 (B)'s turn timer ran out: the engine moves for it (§13):"
    ]
    assert TractorNarration(seats).narrate(tm.TurnTimedOut(0)) == [
        "  Your time ran out: the engine moved for you (§11):"
    ]
    concealed = tm.BidEntered(0, None, timed_out=True)
    assert TractorNarration(seats).narrate(concealed) == [
        "  Your time ran out: the engine passed for you (kept concealed, D-TR-6.2)"
    ]
    assert timed_out_seat(concealed) == 0 and timed_out_seat(zm.TurnTimedOut(4)) == 4
    assert timed_out_seat(tm.BidEntered(0, None)) is None


@pytest.mark.e2e  # the terminal client as a process on a pseudo-terminal
def test_a_timed_turn_counts_down_then_the_engine_moves_for_the_player() -> None:
    with EngineThread(seed=11) as engine:
        engine.create("timed", turn_seconds=7)
        engine.run_timers()
        engine.spawn(zlj_bots(engine.stub, "timed", {1, 2, 3, 4, 5}, seed=5))
        mine = token(Role.PLAYER, "timed", 0)
        before = engine.calls(mine)
        child = spawn_client("play", "--engine", engine.address, "--game", "timed", "--token", mine, timeout=30)
        log = io.StringIO()
        child.logfile_read = log
        try:
            child.expect(r"\[(\d) s left\] your move> ")
            assert isinstance(child.match, re.Match) and 0 < int(child.match.group(1)) <= 7
            # nothing typed: told at 5 s, then the timer runs out and the engine moves for the player
            child.expect_exact("5 s left to move, then the engine moves for you.")
            child.expect(r"\[\d s left\] \(still your move\)> ")
            child.expect_exact("Your time ran out: the engine moved for you (§13):")
            found = child.expect_exact([PROMPT, "The match is over"], timeout=60)
            after = child.before if isinstance(child.before, str) else ""
            assert "(still your move)" not in after, after
            if found == 0:
                child.sendline("q")
                child.expect_exact("Bye.")
            child.expect(pexpect.EOF, timeout=10)
        finally:
            child.close()
        output = log.getvalue()
        assert child.exit_code() == 0, output[-3000:]
        only_acts_and_watches(engine.calls(mine) - before)  # the time left came with the turns


def test_a_delayed_spectators_session_holds_no_deadline() -> None:
    """A turn a spectator of a delayed table receives is the game's of ``n`` moves ago (D-SPEC-2): its deadline has
    passed, so the session holds none, where a live watch holds the turn's."""
    rules = GAMES["zlj"]
    state = rules.new_state()
    events = rules.decide(state, rules.start(5, rules.options(deals=1, turn_seconds=30), 1000))
    for event in events:
        state = rules.evolve(state, event)
    snap = Snapshot(len(events), "zlj", rules.view(state, None))
    turn = Turn(snap, (), Legal(snap.version, []), deadline=time.time() + 30, contribution=None)

    async def held(delay_moves: int) -> float | None:
        engine = EngineClient("127.0.0.1:9", "token", "game")  # never called: the turn is handed in as the feed would
        session = Session(engine, Console(out=io.StringIO(), fd=0), render.Seats(), delay_moves=delay_moves)
        try:
            session.feed.turned(turn)  # as the Watch stream hands it in
            return session.time_left()
        finally:
            await engine.close()

    live = asyncio.run(held(0))
    assert live is not None and 25 < live <= 30
    assert asyncio.run(held(4)) is None
