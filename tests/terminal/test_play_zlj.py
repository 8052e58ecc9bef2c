"""The terminal client end to end: a person's seat of a whole 砸六家 deal, typed in a pseudo-terminal (pexpect)
against a real in-process EngineService, the five other seats played by bots over the API."""

from __future__ import annotations

import io
import random
import re

import pexpect
import pytest

from paiju.platform.tokens import Role
from paiju.rules.cards import Card, format_card
from paiju.rules.zlj.combos import LEVEL_OF, SMALL_JOKER
from paiju.terminal.client.render import PROMPT
from paiju.v1 import zlj_pb2

from .driver import EngineThread, only_acts_and_watches, screen, spawn_client, token, zlj_bots

pytestmark = pytest.mark.e2e  # the terminal client as a process on a pseudo-terminal


def _cards(values: list[int]) -> list[str]:
    return [format_card(Card(v - 1)) for v in values]


def _typed(names: list[str]) -> str:
    """Cards as a person might type them: lower case, ``10`` for the ten."""
    return " ".join(n.replace("T", "10").lower() for n in names)


def _not_a_combination(hand: list[int]) -> list[str] | None:
    """Two cards of different ranks (not two jokers): never a 砸六家 combination (§3)."""
    cards = [Card(v - 1) for v in hand]
    low = min(cards, key=lambda c: LEVEL_OF[c])
    for c in cards:
        if LEVEL_OF[c] != LEVEL_OF[low] and LEVEL_OF[c] < SMALL_JOKER:
            return [format_card(low), format_card(c)]
    return None


def test_a_whole_zlj_deal_played_at_the_terminal() -> None:
    with EngineThread(seed=11) as engine:
        engine.create("deal1")
        bots = engine.spawn(zlj_bots(engine.stub, "deal1", {1, 2, 3, 4, 5}, seed=5))
        mine = token(Role.PLAYER, "deal1", 0)
        before = engine.calls(mine)
        child = spawn_client("play", "--engine", engine.address, "--game", "deal1", "--token", mine)
        log = io.StringIO()
        child.logfile_read = log
        rng = random.Random(3)
        options = 0
        prompts = numbered = 0
        bad_syntax = illegal = typed = helped = False
        try:
            while True:
                found = child.expect_exact([PROMPT, "The match is over", pexpect.EOF], timeout=30)
                if found != 0:
                    break
                prompts += 1
                counts = re.findall(r"Your options \((\d+)\):", screen(child))
                if counts:
                    options = int(counts[-1])
                assert options > 0, child.before
                view = engine.view("deal1", mine).zlj
                leading = not view.HasField("current")
                if not helped:
                    child.sendline("h")
                    child.expect_exact("q           quit")
                    helped = True
                elif not bad_syntax:
                    child.sendline("XX 3s")
                    child.expect_exact("'XX' is not a card")
                    bad_syntax = True
                elif leading and not illegal and (pair := _not_a_combination(list(view.hand))) is not None:
                    child.sendline(" ".join(pair))
                    child.expect_exact("Not allowed: ")
                    child.expect_exact("(h shows rule §3)")
                    child.expect_exact(PROMPT)
                    child.sendline("h")  # the rule the engine cited, from docs/rules/zalioujia.md
                    child.expect_exact("Rule §3 (docs/rules/zalioujia.md):")
                    child.expect_exact("A play must be exactly one of these combinations.")
                    illegal = True
                elif not typed:
                    plays = [
                        a.zlj.play.cards for a in engine.legal("deal1", mine) if a.zlj.WhichOneof("command") == "play"
                    ]
                    if not plays:
                        child.sendline("p")
                        continue
                    child.sendline(_typed(_cards(list(plays[-1]))))
                    typed = True
                else:
                    child.sendline(str(rng.randint(1, options)))
                    numbered += 1
            child.expect(pexpect.EOF, timeout=10)
        finally:
            child.close()
        output = log.getvalue()
        assert child.exit_code() == 0, output[-3000:]
        assert bots.result(timeout=30) > 0
        public = engine.view("deal1", token(Role.SPECTATOR, "deal1")).zlj
        assert public.phase == zlj_pb2.ZLJ_PHASE_ENDED
        assert helped and bad_syntax and illegal and typed and numbered > 0, (prompts, output[-3000:])
        # the other seats' moves were shown as they happened, and the deal's end
        assert re.search(r"seat [1-5] \([AB]\): ", output)
        assert "Deal 1 over: " in output and "Match over, " in output
        assert "seat 0 (A, you)" in output
        # the table, the options and the turns came on the Watch stream: the client asked only for its moves
        calls = engine.calls(mine) - before
        only_acts_and_watches(calls)
        assert calls["Act"] >= numbered + 1, calls
