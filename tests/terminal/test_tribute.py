"""The terminal client in a 砸六家 match's second deal (pexpect, real in-process engine): the first deal is
played by bots; then the client takes the seat that cuts (搬牌, a typed count) and takes back a returned card,
or the first winner's seat, which picks tribute (进贡) and returns a card (还贡); bots play the rest."""

from __future__ import annotations

import io
import random
import re

import pexpect
import pytest

from paiju.platform.tokens import Role
from paiju.terminal.client.render import PROMPT
from paiju.v1 import engine_pb2, zlj_pb2

from .driver import EngineThread, auth, only_acts_and_watches, screen, spawn_client, token, zlj_bots

pytestmark = pytest.mark.e2e  # the terminal client as a process on a pseudo-terminal

HINTS = {
    "cut": "Cut the deck (搬牌)",
    "pick": "Pick your tribute cards (进贡)",
    "return": "Return cards of rank 5..Q (还贡)",
    "take back": "Take back returned cards",
}


@pytest.mark.parametrize(
    ("seat_of", "expected"), [("cutter", {"cut", "take back"}), ("first winner", {"pick", "return"})]
)
def test_the_second_deal_cut_and_tribute_at_the_terminal(seat_of: str, expected: set[str]) -> None:
    with EngineThread(seed=2) as engine:  # seeds whose second deal has a tribute with a return to take back
        engine.create("two", deals=2)
        cutting = zlj_pb2.ZLJ_PHASE_CUT
        engine.call(lambda: zlj_bots(engine.stub, "two", set(range(6)), seed=1, until=lambda v: v.phase == cutting))
        public = engine.view("two", token(Role.SPECTATOR, "two")).zlj
        assert public.phase == cutting, public
        seat = public.turn
        if seat_of == "first winner":
            cut = engine_pb2.ActRequest(game_id="two", command_id="cut", zlj=zlj_pb2.ZljCommand())
            cut.zlj.cut.seat, cut.zlj.cut.count = seat, 54
            engine.call(lambda: engine.stub.Act(cut, metadata=auth(token(Role.PLAYER, "two", seat))))
            public = engine.view("two", token(Role.SPECTATOR, "two")).zlj
            assert public.phase == zlj_pb2.ZLJ_PHASE_PICK, public
            seat = public.turn
        mine = token(Role.PLAYER, "two", seat)
        before = engine.calls(mine)  # the bots above may have played this seat with the same token
        child = spawn_client("play", "--engine", engine.address, "--game", "two", "--token", mine)
        log = io.StringIO()
        child.logfile_read = log
        engine.spawn(zlj_bots(engine.stub, "two", set(range(6)) - {seat}, seed=2))
        rng = random.Random(seat)
        seen: set[str] = set()
        try:
            while child.expect_exact([PROMPT, "The match is over"]) == 0:
                shown = screen(child).split("== 砸六家")[-1]
                step = next((name for name, hint in HINTS.items() if hint in shown), None)
                if step is not None:
                    seen.add(step)
                if step == "cut":
                    child.sendline("0")
                    child.expect_exact("Type how many cards to cut: a number from 1 to 107.")
                    child.expect_exact(PROMPT)
                    child.sendline("54")
                    continue
                options = int(re.findall(r"Your options \((\d+)\):", shown)[-1])
                child.sendline(str(rng.randint(1, options)))
            child.expect(pexpect.EOF, timeout=10)
        finally:
            child.close()
        output = log.getvalue()
        assert child.exit_code() == 0, output[-3000:]
        assert seen == expected, output[-3000:]
        only_acts_and_watches(engine.calls(mine) - before)
        if "cut" in expected:
            assert f"Deal 2: seat {seat} ({'AB'[seat % 2]}, you) cut 54 cards" in output
