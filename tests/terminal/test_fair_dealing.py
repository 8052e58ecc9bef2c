"""The terminal client's part in fair dealing by protocol version 2 (docs/fairness.md): a turn that says COMMIT or
REVEAL is read as the step the seat owes (with the cutter's range), the narration tells the windows' closes, a
withheld or mismatching reveal and a deal on the server seed alone, and `paiju replay` writes seeds out whole."""

from __future__ import annotations

import asyncio
import io
from typing import Any, cast

import pytest

from paiju.rules import fair
from paiju.rules.zlj import model as zm
from paiju.rules.zlj.game import evolve
from paiju.rules.zlj.view import view
from paiju.sdk.games import ZLJ
from paiju.terminal.client import render
from paiju.terminal.client.console import Console
from paiju.terminal.client.engine import EngineClient, read_turn
from paiju.terminal.client.narrate import ZljNarration, fairness_lines
from paiju.terminal.client.session import Session
from paiju.v1 import engine_pb2

pytestmark = pytest.mark.unit


def test_a_commit_or_reveal_step_is_read_from_the_turn() -> None:
    state = evolve(zm.State(), zm.MatchStarted(zm.Options(), fair=True, commit_reveal=True))
    turn = engine_pb2.Turn(version=3, seats=[2])
    turn.zlj.CopyFrom(cast(Any, ZLJ.codec.encode(view(state, 2))))
    turn.fair_step.kind = engine_pb2.FAIR_DEALING_STEP_KIND_COMMIT
    turn.fair_step.shuffle = 2
    turn.fair_step.max_cut = 107
    assert read_turn(ZLJ, turn).pledge == ("commit", 2, 107)
    turn.fair_step.kind = engine_pb2.FAIR_DEALING_STEP_KIND_REVEAL
    turn.fair_step.max_cut = 0
    assert read_turn(ZLJ, turn).pledge == ("reveal", 2, 0)
    turn.ClearField("fair_step")
    assert read_turn(ZLJ, turn).pledge is None


def test_the_narration_tells_the_windows_and_what_did_not_count() -> None:
    assert fairness_lines(fair.CommitsClosed(1, (0, 2))) == ["Shuffle 1: commitments closed (seat 0, seat 2 committed)"]
    assert fairness_lines(fair.RevealsClosed(1, (0,), (2,), (4,))) == [
        "Shuffle 1: contributions of seat 0; withheld by seat 2; not matching from seat 4"
    ]
    assert fairness_lines(fair.RevealsClosed(1, (), (), ())) == [
        "Shuffle 1: no contribution counts: the deal rests on the server seed alone"
    ]
    mismatch = fair.ContributionRevealed(1, 4, bytes(32), b"x", None, False)
    assert "does not match" in (fairness_lines(mismatch) or [""])[0]
    revealed = fair.SeedRevealed(1, 1, bytes(range(32)))
    assert bytes(range(32)).hex() in (fairness_lines(revealed, whole=True) or [""])[0]
    assert bytes(range(32)).hex() not in (fairness_lines(revealed) or [""])[0]


def test_a_part_the_log_shows_changed_is_told_in_one_line_naming_the_deal() -> None:
    """The seat's own commitment comes back as sent: nothing is said of it. It comes back changed (or its reveal is
    recorded as not matching): one line names the game, the deal and what changed."""

    async def main() -> None:
        engine = EngineClient("127.0.0.1:9", "token", "g-alt")  # nothing is sent: the log comes to `_receive`
        out = io.StringIO()
        seats = render.Seats(me=0)
        session = Session(engine, Console(out=out, fd=0), seats)
        session._narration = ZljNarration(seats)
        session.pledges.check("g-alt", fair.SeedCommitted(1, 1, bytes(32)))
        command = session.pledges.commit("g-alt", 0, 1)
        session.pledges.committed("g-alt", 1)

        def envelope(version: int, event: Any) -> engine_pb2.Envelope:
            sent = engine_pb2.Envelope(game_id="g-alt", version=version)
            sent.zlj.CopyFrom(cast(Any, ZLJ.events.encode(event)))
            return sent

        session._receive(envelope(3, fair.ContributionCommitted(1, 0, command.commitment)))
        assert "Fair dealing:" not in out.getvalue(), "as sent"
        changed = bytes([command.commitment[0] ^ 1]) + command.commitment[1:]
        session._receive(envelope(4, fair.ContributionCommitted(1, 0, changed)))
        told = [line for line in out.getvalue().splitlines() if line.startswith("Fair dealing:")]
        assert told == [
            f"Fair dealing: game g-alt, deal 1 (shuffle 1): seat 0's commitment is recorded as {changed.hex()}, "
            "not as sent (docs/fairness.md)."
        ]
        await engine.close()

    asyncio.run(main())
