"""The terminal client at a 拖拉机 table (pexpect, real in-process engine, three bot seats over the API):
concealed bidding shows only the player's own bid, a follow says what it owes in words and is typed, composed a
few cards at a time or picked, a wrong follow is explained, and Ctrl-D leaves cleanly."""

from __future__ import annotations

import io
import re

import pexpect
import pytest

from paiju.platform.tokens import Role
from paiju.rules.cards import Card, format_card
from paiju.terminal.client.render import PROMPT
from paiju.v1 import tractor_pb2

from .driver import EngineThread, only_acts_and_watches, screen, shown, spawn_client, token, tractor_bots

pytestmark = pytest.mark.e2e  # the terminal client as a process on a pseudo-terminal


def _names(values: list[int]) -> list[str]:
    return [format_card(Card(v - 1)) for v in values]


def test_tractor_bidding_and_tricks_at_the_terminal() -> None:
    with EngineThread(seed=5) as engine:
        engine.create("tr1", "tractor")
        engine.spawn(tractor_bots(engine.stub, "tr1", {1, 2, 3}, seed=4))
        mine = token(Role.PLAYER, "tr1", 0)
        before = engine.calls(mine)
        child = spawn_client("play", "--engine", engine.address, "--game", "tr1", "--token", mine)
        log = io.StringIO()
        child.logfile_read = log
        bids = plays = 0
        illegal = typed = composed = False
        try:
            while plays < 15:
                child.expect_exact(PROMPT)
                counts = re.findall(r"Your options \((\d+)\):", screen(child))
                view = engine.view("tr1", mine).tractor
                if view.phase in (tractor_pb2.TRACTOR_PHASE_BID, tractor_pb2.TRACTOR_PHASE_COUNTER):
                    child.sendline("2" if counts and int(counts[-1]) > 1 else "1")
                    bids += 1
                    continue
                assert view.phase == tractor_pb2.TRACTOR_PHASE_PLAY, view
                following = view.HasField("trick")
                n = len(view.trick.plays[0].cards) if following else 0
                if following and not illegal and len(view.hand) > n:
                    child.sendline(" ".join(_names(list(view.hand[: n + 1]))))
                    child.expect_exact("Not allowed: the lead has")
                    illegal = True
                    continue
                if following and not composed and n >= 2:
                    (play,) = [a.tractor.play.cards for a in engine.legal("tr1", mine)]
                    names = _names(list(play))
                    child.sendline(names[0])  # one card, then the rest: checked by the engine, then played
                    child.expect_exact(f"Chosen so far: {shown(names[0])}. Type {n - 1} more")
                    child.expect_exact(PROMPT)  # asked for the rest
                    child.sendline(" ".join(names[1:]))
                    composed = True
                elif following and not typed:
                    (play,) = [a.tractor.play.cards for a in engine.legal("tr1", mine)]
                    child.sendline(" ".join(n.replace("T", "10").lower() for n in _names(list(play))))
                    typed = True
                else:
                    child.sendline("1")
                plays += 1
            child.expect_exact(PROMPT)
            child.sendeof()
            child.expect_exact("Bye.")
            child.expect(pexpect.EOF, timeout=10)
        finally:
            child.close()
        output = log.getvalue()
        assert child.exit_code() == 0, output[-3000:]
        assert bids >= 1 and illegal and typed and composed
        # concealed bidding: the others' entries are only "bid or passed" until the reveal
        assert "has bid or passed (concealed)" in output
        assert not re.search(r"seat [1-3] \([AB]\) (bids|passes)", output)
        assert "Trump: " in output and "-- trick to " in output
        owed = r"You must follow an? [a-z0-9 -]+ (of|in) (spades|hearts|clubs|diamonds|trumps) with \d+ card"
        assert re.search(owed, output), "a follow says what it owes in words"
        assert re.search(r"Your hand \(\d+\):\n\s+spades", output.replace("\r", ""))
        # the table, the options and what a follow owes came with the turns: the client asked only for its moves
        calls = engine.calls(mine) - before
        only_acts_and_watches(calls)
        assert calls["Act"] >= plays, calls
