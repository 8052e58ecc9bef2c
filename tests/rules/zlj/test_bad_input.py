"""Bad commands: each is rejected with the right `RuleError` subclass, a reason a person understands,
and no change to the state (``decide`` is pure).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import cast

import pytest

from paiju.rules.cards import Cards, parse_cards
from paiju.rules.errors import IllegalAction, NotYourTurn, RuleError
from paiju.rules.zlj import (
    Cut,
    EndMatch,
    Options,
    Pass,
    Phase,
    PickTribute,
    Play,
    ReturnTribute,
    StartMatch,
    State,
    TakeBack,
    Timeout,
    decide,
    replay,
)
from paiju.rules.zlj.dealing import TRIBUTE_STREAM, stream
from paiju.rules.zlj.outcome import deal_result
from paiju.rules.zlj.tribute import start_tribute

TIMER = Options(turn_seconds=30)
DEFAULTS = Options()


def C(text: str) -> Cards:
    return parse_cards(text)


def position(hands: dict[int, str], leader: int, out: Sequence[int] = (), options: Options = DEFAULTS) -> State:
    hs = tuple(C(hands.get(s, "")) for s in range(6))
    return State(
        options=options,
        phase=Phase.PLAY,
        deal=1,
        hands=hs,
        turn=leader,
        leader=leader,
        out=tuple(out),
        dealt=tuple(sorted(c for h in hs for c in h)),
    )


HANDS = {0: "5S 6S 7S 9S KD", 1: "9H 9H TH", 2: "9D TD", 3: "9C TC", 4: "8C TS", 5: "8D JD"}


def lead_position(options: Options = DEFAULTS) -> State:
    return position(HANDS, leader=0, options=options)


def answer_position(options: Options = DEFAULTS) -> State:
    """Seat 0 has led 5S; seat 1 is to answer."""
    state = lead_position(options)
    return replay(decide(state, Play(0, C("5S"))), state)


def tribute_position(options: Options = DEFAULTS) -> State:
    """Catch-2 by A (order 0 2 1 4): losers 1, 3, 5 have given 2 cards each; seat 0 picks first."""
    result = deal_result(1, (0, 2, 1, 4))
    hs = tuple(C(t) for t in ["5H 6H 7H 4S", "BJ 3S 9C", "9S TS JS 4H", "AS AH 9D", "6S 7S 4D", "KS KH 8C"])
    state = State(
        options=options,
        phase=Phase.CUT,
        deal=2,
        hands=hs,
        dealt=tuple(sorted(c for h in hs for c in h)),
        previous=result,
        results=(result,),
    )
    return replay(start_tribute(result, hs, options, stream(0, TRIBUTE_STREAM)), state)


def rejected(state: State, command: object, error: type[RuleError], *words: str) -> RuleError:
    """Assert ``command`` is rejected with ``error`` (exactly that class), the reason names ``words``,
    and the state is unchanged."""
    before = copy.deepcopy(state)
    with pytest.raises(RuleError) as info:
        decide(state, command)  # type: ignore[arg-type]
    err = info.value
    assert type(err) is error, f"expected {error.__name__}, got {type(err).__name__}: {err.reason}"
    for word in words:
        assert word.lower() in err.reason.lower(), f"{word!r} not in {err.reason!r}"
    assert state == before, "decide must not change the state"
    return err


# --- malformed commands --------------------------------------------------------------------------------


@pytest.mark.parametrize("cards", [(54,), (-1,), (0, 200), (1000,)])
def test_cards_outside_0_to_53_are_malformed(cards: tuple[int, ...]) -> None:
    err = rejected(lead_position(), Play(0, cast(Cards, cards)), RuleError, "card", "0..53")
    assert err.kind == "malformed"


@pytest.mark.parametrize("cards", [[12], "5S", None, 12, ("5S",), (1.5,)])
def test_cards_not_a_tuple_of_ids_are_malformed(cards: object) -> None:
    err = rejected(lead_position(), Play(0, cards), RuleError, "tuple")  # type: ignore[arg-type]
    assert err.kind == "malformed"


def test_malformed_cards_in_tribute_commands() -> None:
    state = tribute_position()
    err = rejected(state, PickTribute(0, [1, 2]), RuleError, "tuple")  # type: ignore[arg-type]
    assert err.kind == "malformed"


@pytest.mark.parametrize("seat", [6, -1, 99])
def test_no_such_seat_is_malformed(seat: int) -> None:
    err = rejected(lead_position(), Play(seat, C("5S")), RuleError, "seat", "0..5")
    assert err.kind == "malformed"


def test_unknown_command_is_malformed() -> None:
    err = rejected(lead_position(), "play 5S", RuleError, "unknown")
    assert err.kind == "malformed"


@pytest.mark.parametrize(
    "options",
    [Options(deals=-1), Options(turn_seconds=-5)],
)
def test_bad_options_are_malformed(options: Options) -> None:
    err = rejected(State(), StartMatch(1, options), RuleError, "0")
    assert err.kind == "malformed"


# --- cards not held ------------------------------------------------------------------------------------


def test_playing_cards_not_held() -> None:
    err = rejected(lead_position(), Play(0, C("AS")), IllegalAction, "does not hold", "AS")
    assert err.kind == "rule"


def test_playing_more_copies_than_held() -> None:
    rejected(lead_position(), Play(0, C("5S 5S")), IllegalAction, "does not hold", "5S")


def test_returning_cards_not_held() -> None:
    state = tribute_position()
    for seat, cards in [(0, "BJ 3S"), (2, "AS AH"), (4, "KS KH")]:
        state = replay(decide(state, PickTribute(seat, C(cards))), state)
    assert state.phase is Phase.RETURN and state.turn == 0
    rejected(state, ReturnTribute(0, C("8H 9H")), IllegalAction, "does not hold")


# --- wrong seat ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seat", [1, 2, 5])
def test_play_out_of_turn(seat: int) -> None:
    err = rejected(lead_position(), Play(seat, C(HANDS[seat].split()[0])), NotYourTurn, "not seat", "turn", "seat 0")
    assert err.kind == "seat"


def test_pass_out_of_turn() -> None:
    rejected(answer_position(), Pass(3), NotYourTurn, "turn", "seat 1")


def test_pick_out_of_turn() -> None:
    rejected(tribute_position(), PickTribute(2, C("BJ 3S")), NotYourTurn, "turn")


def test_cut_by_the_wrong_seat() -> None:
    result = deal_result(1, (3, 0, 1, 4, 5))
    state = State(phase=Phase.CUT, deal=1, turn=4, previous=result, results=(result,))
    rejected(state, Cut(3, 10, 1), NotYourTurn, "turn", "seat 4")


# --- wrong phase ---------------------------------------------------------------------------------------


def test_tribute_commands_during_play() -> None:
    state = lead_position()
    rejected(state, PickTribute(0, C("KD")), IllegalAction, "phase", "play")
    rejected(state, ReturnTribute(0, C("9S")), IllegalAction, "phase")
    rejected(state, TakeBack(0, C("9S")), IllegalAction, "phase")
    rejected(state, Cut(0, 10, 1), IllegalAction, "phase")


def test_play_during_tribute() -> None:
    state = tribute_position()
    assert state.phase is Phase.PICK
    rejected(state, Play(0, C("5H")), IllegalAction, "phase", "tribute")
    rejected(state, Pass(0), IllegalAction, "phase")


def test_play_before_the_match_starts() -> None:
    rejected(State(), Play(0, C("5S")), IllegalAction, "phase")


def test_commands_after_the_match_ended() -> None:
    state = State(phase=Phase.ENDED, deal=6, options=TIMER)
    rejected(state, Play(0, C("5S")), IllegalAction, "phase", "ended")
    rejected(state, Cut(1, 10, 1), IllegalAction, "phase", "ended")
    rejected(state, EndMatch(), IllegalAction, "between deals")
    rejected(state, Timeout(0, 1), NotYourTurn, "turn")


def test_end_match_during_play() -> None:
    rejected(lead_position(Options(deals=0)), EndMatch(), IllegalAction, "between deals")


# --- rule violations -----------------------------------------------------------------------------------


def test_passing_when_leading() -> None:
    err = rejected(lead_position(), Pass(0), IllegalAction, "leader", "pass")
    assert err.kind == "rule"


def test_not_a_combination() -> None:
    rejected(lead_position(), Play(0, C("5S 6S")), IllegalAction, "straight", "3")


def test_empty_play() -> None:
    rejected(lead_position(), Play(0, ()), IllegalAction, "at least one card")


def test_play_that_does_not_beat() -> None:
    state = answer_position()
    rejected(state, Play(1, C("9H 9H")), IllegalAction, "pair", "single")


def test_starting_a_match_twice() -> None:
    state = replay(decide(State(), StartMatch(1)))
    err = rejected(state, StartMatch(2), IllegalAction, "already started")
    assert err.kind == "rule"


def test_pick_wrong_count_or_card() -> None:
    state = tribute_position()
    rejected(state, PickTribute(0, C("BJ")), IllegalAction, "2")
    rejected(state, PickTribute(0, C("BJ 2S")), IllegalAction, "2S", "not among")


def test_cut_count_out_of_range() -> None:
    result = deal_result(1, (3, 0, 1, 4, 5))
    state = State(phase=Phase.CUT, deal=1, turn=4, previous=result, results=(result,))
    rejected(state, Cut(4, 0, 1), IllegalAction, "1..107")
    rejected(state, Cut(4, 108, 1), IllegalAction, "1..107")


# --- timeouts ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seat", [0, 2, 5])
def test_timeout_for_a_seat_not_on_turn(seat: int) -> None:
    err = rejected(answer_position(TIMER), Timeout(seat, 1), NotYourTurn, f"seat {seat}", "turn")
    assert err.kind == "seat"


def test_timeout_before_the_match_starts() -> None:
    rejected(State(options=TIMER), Timeout(0, 1), NotYourTurn, "turn")


def test_timeout_without_a_turn_timer() -> None:
    rejected(answer_position(), Timeout(1, 1), IllegalAction, "timer")


# --- nothing changes on any rejection --------------------------------------------------------------------


def test_rejections_leave_a_real_match_unchanged() -> None:
    state = replay(decide(State(), StartMatch(3)))
    turn = state.turn
    assert turn is not None
    other = (turn + 1) % 6
    before = copy.deepcopy(state)
    for command in [
        Pass(turn),
        Play(other, state.hands[other][:1]),
        Play(turn, cast(Cards, (54,))),
        Timeout(turn, 1),
        StartMatch(3),
        EndMatch(),
        PickTribute(turn, state.hands[turn][:1]),
    ]:
        with pytest.raises(RuleError):
            decide(state, command)  # type: ignore[arg-type]
        assert state == before
