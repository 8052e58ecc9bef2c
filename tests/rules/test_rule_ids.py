"""Every refusal of the rules cores names the rule it enforces (`RuleError.rule`), and every rule id the cores cite
exists in the rules files (shared/rules/zalioujia.md, shared/rules/tractor.md).

Three layers: the source of every module under paiju/rules is read with `ast`, so a new ``IllegalAction(...)`` or
``NotYourTurn(...)`` without a rule fails here; the ids are checked against the ids the rules files define (kept
below as data, and compared with the files when they are beside the repository); and real refusals are driven
through both cores' ``decide`` to check the id a client receives.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest

from paiju.rules import errors
from paiju.rules.cards import Cards, Suit, parse_cards
from paiju.rules.errors import IllegalAction, NotYourTurn, RuleError, cited_rule
from paiju.rules.tractor import game as tractor
from paiju.rules.tractor import model as tm
from paiju.rules.zlj import game as zlj
from paiju.rules.zlj import model as zm
from paiju.rules.zlj.dealing import TRIBUTE_STREAM, stream
from paiju.rules.zlj.outcome import deal_result
from paiju.rules.zlj.tribute import start_tribute

from ..support.rule_ids import RULES_FILES, TRACTOR_IDS, ZLJ_IDS, defined_ids

RULES_PACKAGE = Path(errors.__file__).resolve().parent
REPOSITORY = Path(__file__).resolve().parents[2]

REFUSALS = ("IllegalAction", "NotYourTurn")
ERRORS = (*REFUSALS, "RuleError")
RULE_ID = re.compile(errors.RULE_ID)


# --- the source -------------------------------------------------------------------------------------------


def modules() -> list[Path]:
    return sorted(RULES_PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    return path.relative_to(RULES_PACKAGE.parent.parent).as_posix()


def valid_ids(path: Path) -> frozenset[str]:
    """The ids a module may cite: its own game's, or either game's for the shared modules."""
    parts = path.relative_to(RULES_PACKAGE).parts
    if parts[0] == "zlj":
        return ZLJ_IDS
    if parts[0] == "tractor":
        return TRACTOR_IDS
    return ZLJ_IDS | TRACTOR_IDS


def error_calls(tree: ast.AST, names: tuple[str, ...]) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in names:
                yield node


def rule_keyword(call: ast.Call) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == "rule"), None)


def message_tail(call: ast.Call) -> str | None:
    """The literal text that ends the reason (an f-string's last literal part), or ``None`` if it is not literal."""
    reason = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "reason"), None)
    if isinstance(reason, ast.Constant) and isinstance(reason.value, str):
        return reason.value
    if isinstance(reason, ast.JoinedStr) and reason.values:
        last = reason.values[-1]
        if isinstance(last, ast.Constant) and isinstance(last.value, str):
            return last.value
    return None


def strings(node: ast.AST) -> Iterator[str]:
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            yield n.value


def where(path: Path, node: ast.expr | ast.Call) -> str:
    return f"{module_name(path)}:{node.lineno}"


def test_the_rules_package_is_where_the_test_looks() -> None:
    names = {p.relative_to(RULES_PACKAGE).as_posix() for p in modules()}
    assert {"errors.py", "zlj/game.py", "zlj/combos.py", "tractor/game.py", "tractor/follow.py"} <= names
    calls = [c for p in modules() for c in error_calls(ast.parse(p.read_text()), REFUSALS)]
    assert len(calls) > 40, "the ast walk finds the raise sites"


@pytest.mark.parametrize("path", modules(), ids=module_name)
def test_every_refusal_names_its_rule(path: Path) -> None:
    """(a) Each ``IllegalAction(...)`` / ``NotYourTurn(...)`` passes ``rule=`` or ends its reason with a citation."""
    unnamed = []
    for call in error_calls(ast.parse(path.read_text()), REFUSALS):
        rule = rule_keyword(call)
        if rule is not None:
            if isinstance(rule, ast.Constant):
                assert isinstance(rule.value, str) and RULE_ID.fullmatch(rule.value), (where(path, call), rule.value)
            continue
        tail = message_tail(call)
        if tail is None or not cited_rule(tail):
            unnamed.append(f"{where(path, call)}: {ast.unparse(call)[:100]}")
    assert not unnamed, "refusals without rule= or a closing citation like (§4):\n" + "\n".join(unnamed)


@pytest.mark.parametrize("path", modules(), ids=module_name)
def test_every_cited_id_exists_in_the_rules_files(path: Path) -> None:
    """(b) Every id in a ``rule=`` keyword, a closing citation, or anywhere in the module's strings is defined."""
    tree = ast.parse(path.read_text())
    known = valid_ids(path)
    cited: dict[str, str] = {}
    for call in error_calls(tree, ERRORS):
        rule = rule_keyword(call)
        for text in strings(rule) if rule is not None else ():
            cited[text] = where(path, call)
        tail = message_tail(call)
        if tail is not None and cited_rule(tail):
            cited[cited_rule(tail)] = where(path, call)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for found in RULE_ID.findall(node.value):
                cited.setdefault(found, f"{module_name(path)}:{node.lineno}")
    unknown = {i: at for i, at in cited.items() if i not in known}
    assert not unknown, f"ids the rules files do not define: {unknown}"


@pytest.mark.parametrize(("name", "ids"), [("zalioujia.md", ZLJ_IDS), ("tractor.md", TRACTOR_IDS)])
def test_the_id_lists_match_the_rules_files(name: str, ids: frozenset[str]) -> None:
    """(b) The lists above are the files' ids: checked when shared/rules/ sits beside the repository (as in CI)."""
    if not RULES_FILES.is_dir():
        pytest.skip(f"{RULES_FILES} is not beside the repository")
    defined = defined_ids((RULES_FILES / name).read_text(encoding="utf-8"))
    assert defined == ids, f"{name}: missing from the list {defined - ids}, not in the file {ids - defined}"


def test_defined_ids_reads_headings_items_and_decisions() -> None:
    text = "## 3. X\n1. one\n- **D-TR-4**: inline\n## 7. Y\n**D-TR-6** — opens\n1. a\n2. b\n### Sub\n"
    assert defined_ids(text) == {"§3", "§3.1", "D-TR-4", "§7", "D-TR-6", "§7.1", "§7.2", "D-TR-6.1", "D-TR-6.2"}


# --- RuleError.rule ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "rule"),
    [
        ("it does not beat the current play (§4)", "§4"),
        ("a bomb beats a bomb by more cards first (D-ZLJ-2)", "D-ZLJ-2"),
        ("play all of them (D-TR-6.2)  ", "D-TR-6.2"),
        ("follow it (§6.1)", "§6.1"),
        ("two citations (§4; D-ZLJ-2)", "§4"),
        ("two citations (D-ZLJ-2, §4)", "D-ZLJ-2"),
        ("in the middle (§4): not at the end", ""),
        ("with words (§3: ranks 4..A only)", ""),
        ("a source article (第八条)", ""),
        ("nothing cited", ""),
    ],
)
def test_the_rule_defaults_to_the_closing_citation(reason: str, rule: str) -> None:
    for error in (RuleError(reason), IllegalAction(reason), NotYourTurn(reason, fingerprint="deal 1")):
        assert error.rule == rule
        assert error.reason == reason


def test_an_explicit_rule_wins_and_nothing_else_changes() -> None:
    error = IllegalAction("cannot cut now (§9)", fingerprint="deal 2, cut, turn 3", rule="§8")
    assert (error.rule, error.reason, error.kind) == ("§8", "cannot cut now (§9)", "rule")
    assert str(error) == "cannot cut now (§9) [deal 2, cut, turn 3]"
    assert (RuleError("x").kind, IllegalAction("x").kind, NotYourTurn("x").kind) == ("malformed", "rule", "seat")
    assert str(NotYourTurn("x", rule="§1")) == "x"


# --- real refusals: 砸六家 -------------------------------------------------------------------------------------


def C(text: str) -> Cards:
    return parse_cards(text)


def refused(decide: Callable[..., object], state: object, command: object, error: type[RuleError]) -> RuleError:
    """``command`` is refused with exactly ``error``."""
    with pytest.raises(RuleError) as info:
        decide(state, command)
    assert type(info.value) is error, f"{type(info.value).__name__}: {info.value.reason}"
    return info.value


ZLJ_HANDS = ["5S 6S 7S 9S KD SJ KS AS 2S", "9H 9H TH", "9D TD", "9C TC", "4C 4S 4H", "8D JD"]


def zlj_position(leader: int = 0, hands: list[str] = ZLJ_HANDS) -> zm.State:
    hs = tuple(C(h) for h in hands)
    return zm.State(
        phase=zm.Phase.PLAY, deal=1, hands=hs, turn=leader, leader=leader, dealt=tuple(sorted(c for h in hs for c in h))
    )


def zlj_after(state: zm.State, *commands: zm.Command) -> zm.State:
    for command in commands:
        state = zlj.replay(zlj.decide(state, command), state)
    return state


def zlj_refused(state: zm.State, command: object, error: type[RuleError] = IllegalAction) -> str:
    return refused(zlj.decide, state, command, error).rule


def test_zlj_playing_out_of_turn_cites_the_round_order() -> None:
    assert zlj_refused(zlj_position(), zm.Play(1, C("9H")), NotYourTurn) == "§6"
    assert zlj_refused(zlj_after(zlj_position(), zm.Play(0, C("5S"))), zm.Pass(3), NotYourTurn) == "§6"


def test_zlj_cards_not_held_cite_the_hand() -> None:
    assert zlj_refused(zlj_position(), zm.Play(0, C("5S 5S"))) == "§1"
    assert zlj_refused(zlj_position(), zm.Play(0, C("BJ"))) == "§1"


@pytest.mark.parametrize(
    ("play", "rule"),
    [
        ("5S 6S", "§3"),  # a straight of two ranks
        ("KS AS 2S", "§3"),  # 2 in a straight: "(§3: ranks 4..A only)"
        ("SJ 5S", "D-ZLJ-1"),  # a joker with a plain card
        ((), "§3"),  # no card at all
    ],
)
def test_zlj_a_lead_that_is_no_combination_cites_the_combinations(play: str | Cards, rule: str) -> None:
    cards = C(play) if isinstance(play, str) else play
    assert zlj_refused(zlj_position(), zm.Play(0, cards)) == rule


def test_zlj_answers_that_do_not_beat_cite_the_beating_rule() -> None:
    after_single = zlj_after(zlj_position(), zm.Play(0, C("5S")))
    assert zlj_refused(after_single, zm.Play(1, C("9H 9H"))) == "§4"  # a pair cannot answer a single
    # seat 3's bomb of four 9s: seat 4 holds three 4s; two of them are no four-take of a 4-card bomb (§5)
    hands = ["5S", "6S", "7S", "9C 9C 9H 9H", "4C 4S 4H 9D", "8D"]
    bombed = zlj_after(zlj_position(3, hands), zm.Play(3, C("9C 9C 9H 9H")))
    assert zlj_refused(bombed, zm.Play(4, C("4C 4S"))) == "§5"
    assert zlj_refused(bombed, zm.Play(4, C("9D"))) == "§4"
    # a bomb of three against a bomb of four: card count first (D-ZLJ-2), the id sits inside the reason
    hands = ["5S", "6S", "7S", "9C 9C 9H 9H", "KC KS KH 8D", "8D"]
    bombed = zlj_after(zlj_position(3, hands), zm.Play(3, C("9C 9C 9H 9H")))
    error = refused(zlj.decide, bombed, zm.Play(4, C("KC KS KH")), IllegalAction)
    assert error.rule == "D-ZLJ-2" and error.reason.startswith("a bomb beats a bomb by more cards first (D-ZLJ-2)")


def test_zlj_passing_when_leading_cites_the_rounds() -> None:
    assert zlj_refused(zlj_position(), zm.Pass(0)) == "§6"


def zlj_tribute_position() -> zm.State:
    """Catch-2 by A (order 0 2 1 4): losers 1, 3, 5 have given; seat 0 picks first."""
    result = deal_result(1, (0, 2, 1, 4))
    hs = tuple(C(t) for t in ["5H 6H 7H 4S", "BJ 3S 9C", "9S TS JS 4H", "AS AH 9D", "6S 7S 4D", "KS KH 8C"])
    state = zm.State(
        phase=zm.Phase.CUT,
        deal=2,
        hands=hs,
        dealt=tuple(sorted(c for h in hs for c in h)),
        previous=result,
        results=(result,),
    )
    return zlj.replay(start_tribute(result, hs, zm.Options(), stream(0, TRIBUTE_STREAM)), state)


def test_zlj_tribute_refusals_cite_the_tribute_sections() -> None:
    state = zlj_tribute_position()
    assert state.phase is zm.Phase.PICK and state.turn == 0
    assert zlj_refused(state, zm.PickTribute(2, C("BJ 3S")), NotYourTurn) == "§10"
    assert zlj_refused(state, zm.PickTribute(0, C("BJ 2S"))) == "§10"  # 2S is not in the pool
    assert zlj_refused(state, zm.Play(0, C("5H"))) == "§6"  # no play during tribute
    assert zlj_refused(zlj_position(), zm.PickTribute(0, C("KD"))) == "§10"  # no tribute during play
    assert zlj_refused(zlj_position(), zm.ReturnTribute(0, C("9S"))) == "§11"


def test_zlj_cut_by_the_wrong_seat_cites_the_cut() -> None:
    result = deal_result(1, (3, 0, 1, 4, 5))
    state = zm.State(phase=zm.Phase.CUT, deal=1, turn=4, previous=result, results=(result,))
    assert zlj_refused(state, zm.Cut(3, 10, 1), NotYourTurn) == "§9"
    assert zlj_refused(state, zm.Cut(4, 0, 1)) == "§9"


def test_zlj_malformed_commands_are_malformed() -> None:
    for command in [zm.Play(6, C("5S")), zm.Pass(-1), zm.Timeout(9, 1)]:
        error = refused(zlj.decide, zlj_position(), command, RuleError)
        assert (error.kind, error.rule) == ("malformed", "§1")
    timed = replace(zlj_position(), options=zm.Options(turn_seconds=30))
    assert refused(zlj.decide, timed, zm.Timeout(6, 1), RuleError).kind == "malformed"
    assert refused(zlj.decide, zlj_position(), "play 5S", RuleError).rule == ""
    assert refused(zlj.decide, zlj_position(), zm.Play(0, cast(Cards, (54,))), RuleError).kind == "malformed"


def test_zlj_timeouts_cite_the_turn_timer() -> None:
    timed = replace(zlj_position(), options=zm.Options(turn_seconds=30))
    assert zlj_refused(timed, zm.Timeout(2, 1), NotYourTurn) == "§13"
    assert zlj_refused(zlj_position(), zm.Timeout(0, 1)) == "§13"


# --- real refusals: 拖拉机 ----------------------------------------------------------------------------------


S, H = Suit.SPADES, Suit.HEARTS


def tractor_playing(hands: tuple[str, str, str, str], leader: int = 0) -> tm.State:
    """A deal in play, trump spades, level 3 (both teams at 3), ``leader`` is the dealer and leads."""
    hs = tuple(C(h) for h in hands)
    return replace(
        tm.State(),
        phase=tm.Phase.PLAY,
        deal=2,
        dealer=leader,
        first_deal=False,
        first_drawer=leader,
        hands=hs,
        turn=leader,
        leader=leader,
        trump=S,
        dealt=tuple(sorted(c for h in hs for c in h)),
    )


def tractor_refused(state: tm.State, command: object, error: type[RuleError] = IllegalAction) -> str:
    return refused(tractor.decide, state, command, error).rule


TR_HANDS = ("AH AH 4D 4D 5H 5H 6H 6H", "KH QH QH 4C 7H 7H 8H 9H", "9C 9C 8C 8C 6D 7D 8D 9D", "6D 6D 7D 7D 4D 5D 9C 4C")


def tractor_after(state: tm.State, *commands: tm.Command) -> tm.State:
    for command in commands:
        state = tractor.replay(tractor.decide(state, command), state)
    return state


def test_tractor_playing_out_of_turn_cites_the_play_order() -> None:
    assert tractor_refused(tractor_playing(TR_HANDS), tm.Play(1, C("KH")), NotYourTurn) == "§1"
    led = tractor_after(tractor_playing(TR_HANDS), tm.Play(0, C("AH AH")))
    assert tractor_refused(led, tm.Play(2, C("9C 9C")), NotYourTurn) == "§1"


def test_tractor_cards_not_held_cite_the_hand() -> None:
    assert tractor_refused(tractor_playing(TR_HANDS), tm.Play(0, C("BJ"))) == "§1"
    assert tractor_refused(tractor_playing(TR_HANDS), tm.Play(0, C("AH AH AH"))) == "§1"


@pytest.mark.parametrize(
    ("lead", "rule"),
    [
        ("AH 4D", "§4"),  # two suits: a throw
        ("AH 5H", "§4"),  # two singles: no combination
        ("4D 4D 5H 5H", "§4"),  # units of two suits
        ("", "§4"),  # no card
    ],
)
def test_tractor_a_lead_that_is_no_combination_cites_the_combinations(lead: str, rule: str) -> None:
    assert tractor_refused(tractor_playing(TR_HANDS), tm.Play(0, C(lead) if lead else ())) == rule


@pytest.mark.parametrize(
    ("lead", "follow", "rule"),
    [
        ("AH AH", "QH", "§5"),  # the lead's card count
        ("AH AH", "KH 4C", "§6.2"),  # seat 1 holds more hearts than 2: both must be hearts
        ("AH AH", "KH QH", "§6.2"),  # holds the pair QH QH: the priority list says a pair first
        ("5H 5H 6H 6H", "7H 8H 9H QH", "D-TR-5"),  # holds 7H 7H (and QH QH): the tractor rule
    ],
)
def test_tractor_follows_that_break_the_follow_rules_cite_them(lead: str, follow: str, rule: str) -> None:
    led = tractor_after(tractor_playing(TR_HANDS), tm.Play(0, C(lead)))
    assert tractor_refused(led, tm.Play(1, C(follow))) == rule


def test_tractor_a_short_suit_must_all_be_played() -> None:
    hands = ("AH AH 4D 5D", "KH 4C 5C 6C", "9C 9C 8C 8C", "6D 6D 7D 7D")
    led = tractor_after(tractor_playing(hands), tm.Play(0, C("AH AH")))
    assert tractor_refused(led, tm.Play(1, C("4C 5C"))) == "§6.1"


def tractor_bidding(phase: tm.Phase = tm.Phase.BID, **changes: object) -> tm.State:
    """A later deal in bidding (dealer 1, level 3), seats holding a few 3s."""
    hs = tuple(C(h) for h in ("3S 3S 4D", "3H 3H 4C", "3C 5D 5D", "3D 3D 3D"))
    return replace(
        tm.State(),
        phase=phase,
        deal=3,
        dealer=1,
        first_deal=False,
        first_drawer=1,
        hands=hs,
        dealt=tuple(sorted(c for h in hs for c in h)),
        **changes,  # type: ignore[arg-type]
    )


def test_tractor_bids_at_the_wrong_time_cite_the_bidding_decision() -> None:
    playing = tractor_playing(TR_HANDS)
    assert tractor_refused(playing, tm.MakeBid(0, H, C("3H"))) == "D-TR-6.1"
    assert tractor_refused(playing, tm.Pass(0)) == "D-TR-6.1"
    assert tractor_refused(tractor_bidding(), tm.Counter(0, S, C("3S 3S"))) == "D-TR-6.4"
    again = tractor_bidding(bids=((0, None),))
    assert tractor_refused(again, tm.MakeBid(0, S, C("3S 3S")), NotYourTurn) == "D-TR-6.1"
    assert tractor_refused(again, tm.Pass(0), NotYourTurn) == "D-TR-6.1"
    assert tractor_refused(tractor_bidding(), tm.MakeBid(0, S, C("3H"))) == "D-TR-6.1"  # not held


def test_tractor_counters_cite_the_counter_rule() -> None:
    countering = tractor_bidding(tm.Phase.COUNTER, bid=tm.Bid(0, S, C("3S 3S"), 2))
    assert tractor_refused(countering, tm.Counter(2, Suit.CLUBS, C("3C")), NotYourTurn) == "D-TR-6.4"
    assert tractor_refused(countering, tm.Counter(1, H, C("3H 3H"))) == "D-TR-6.4"  # 2 is not more than 2
    assert tractor_refused(countering, tm.MakeBid(1, H, C("3H 3H"))) == "D-TR-6.1"
    done = replace(countering, bids=((3, None),))
    assert tractor_refused(done, tm.Counter(3, Suit.DIAMONDS, C("3D 3D 3D")), NotYourTurn) == "D-TR-6.4"


def test_tractor_cut_and_referee_refusals() -> None:
    playing = tractor_playing(TR_HANDS)
    assert tractor_refused(playing, tm.Cut(0, 10, 1)) == "§8"
    assert tractor_refused(tractor_bidding(), tm.Penalize("ref", 1, 1)) == "§11"
    assert tractor_refused(playing, tm.Redeal(1)) == "D-TR-6.6"


def test_tractor_malformed_commands_are_malformed() -> None:
    playing = tractor_playing(TR_HANDS)
    for command in [tm.Play(4, C("AH")), tm.Timeout(7), tm.Cut(-1, 10, 1)]:
        error = refused(tractor.decide, playing, command, RuleError)
        assert (error.kind, error.rule) == ("malformed", "§1")
    for cards in [None, 12, (1, "AH")]:
        assert refused(tractor.decide, playing, tm.Play(0, cards), RuleError).kind == "malformed"  # type: ignore[arg-type]
    assert refused(tractor.decide, playing, "play AH", RuleError).rule == ""
