"""The web view's boards (`paiju.tools.web.boards`): made from a spectator's view only, with no hand unless the
replay of an ended game adds them, and plain JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from paiju.rules.registry import GAMES, rules_of
from paiju.tools.web.boards import board, with_hands

pytestmark = pytest.mark.unit


def dealt(name: str, moves: int = 0) -> object:
    """A game of ``name`` started with seed 7 and played ``moves`` legal moves on (the first legal action each)."""
    rules = rules_of(name)
    state = rules.new_state()
    for event in rules.decide(state, rules.start(7, rules.options(), 0)):
        state = rules.evolve(state, event)
    for _ in range(moves):
        waiting = rules.waiting(state)
        if not waiting:  # a step of the system's (a concealed stage closing): as far as the seats can take it
            break
        seat = waiting[0]
        for event in rules.decide(state, rules.legal_actions(state, seat)[0]):
            state = rules.evolve(state, event)
    return state


@pytest.mark.parametrize("name", sorted(GAMES))
@pytest.mark.parametrize("moves", [0, 12])
def test_a_spectators_board_shows_card_counts_and_no_hand(name: str, moves: int) -> None:
    rules = rules_of(name)
    state: object = dealt(name, moves)
    drawn = board(rules.view(state, None), {0: "Ann"})
    text = json.dumps(drawn, ensure_ascii=False)
    assert "hand" not in text
    counts = [len(h) if drawn["dealt"] else 0 for h in state.hands]  # type: ignore[attr-defined]
    assert [seat["cards"] for seat in drawn["seats"]] == counts
    assert drawn["seats"][0]["name"] == "Ann" and drawn["seats"][1]["name"] == "seat 1"
    turn = rules.waiting(state)
    to_act = [seat["seat"] for seat in drawn["seats"] if seat["turn"]]
    assert to_act == ([drawn["turn"]] if drawn["turn"] is not None else [])
    assert drawn["turn"] is None or drawn["turn"] in turn


@pytest.mark.parametrize("name", sorted(GAMES))
def test_a_seats_view_is_never_made_a_board(name: str) -> None:
    rules = rules_of(name)
    state: object = dealt(name)
    with pytest.raises(ValueError, match="spectator"):
        board(rules.view(state, 0), {})


@pytest.mark.parametrize("name", sorted(GAMES))
def test_an_ended_games_replay_adds_every_hand_in_the_notation(name: str) -> None:
    rules = rules_of(name)
    state: object = dealt(name, 3)
    hands = state.hands  # type: ignore[attr-defined]
    drawn = with_hands(board(rules.view(state, None), {}), hands)
    for seat, hand in zip(drawn["seats"], hands, strict=True):
        assert len(seat["hand"]) == len(hand) == seat["cards"]
        assert all(isinstance(code, str) and 2 <= len(code) <= 3 for code in seat["hand"])


@pytest.mark.parametrize("name", sorted(GAMES))
def test_before_the_next_deal_no_seat_shows_the_finished_deals_cards(name: str) -> None:
    """Before a deal is dealt (the next deal's cut; a void first 拖拉机 deal waiting to be dealt again, D-TR-6.6) the
    state still holds the cards the last deal left: a board shows none of them (as the terminal does), and the
    replay's hands are empty until the deal."""
    rules = rules_of(name)
    state: Any = dealt(name)
    for _ in range(20_000):
        if state.phase.value in ("cut", "flip", "shuffle") and any(state.hands):
            break
        waiting = rules.waiting(state)
        command = rules.legal_actions(state, waiting[0])[0] if waiting else rules.deal_again(state, 7)
        assert command is not None, f"the game waits for nobody at {state.phase}"
        for event in rules.decide(state, command):
            state = rules.evolve(state, event)
    else:
        raise AssertionError("no deal ended")
    drawn = with_hands(board(rules.view(state, None), {}), state.hands)
    assert not drawn["dealt"]
    assert all(seat["cards"] == 0 and seat["hand"] == [] for seat in drawn["seats"])


def test_an_ended_zlj_match_says_who_won_it_first() -> None:
    from dataclasses import replace

    from paiju.rules.zlj import model as zm

    rules = rules_of("zlj")
    view: Any = rules.view(dealt("zlj"), None)
    ended = board(replace(view, phase=zm.Phase.ENDED, team_points=(2, 12)), {})
    assert ended["facts"][0] == ["Match over", "team B wins by 10 team points"]
    playing = board(replace(view, team_points=(2, 12)), {})
    assert all(fact[0] != "Match over" for fact in playing["facts"])


def test_a_tables_last_match_says_who_won_and_by_how_much() -> None:
    from paiju.tools.web.boards import RESULTS, result_words

    assert set(RESULTS) == set(GAMES)
    assert result_words("zlj", [12, 2], None, []) == "team A wins by 10 team points (A 12 · B 2)"
    assert result_words("zlj", [5, 5], None, []) == "a draw (A 5 · B 5)"
    assert result_words("tractor", [], 1, [3, 11]) == "team B won by 8 levels (levels A 6 · B A)"
    assert result_words("tractor", [], 0, [12, 11]) == "team A won by 1 level (levels A past A · B A)"
    assert result_words("tractor", [], None, [6, 6]) == "the levels were equal (A 9 · B 9)"
    assert result_words("tractor", [], 1, [3, 99]) == "" and result_words("tractor", [], 7, [3, 4]) == ""
    assert result_words("zlj", [], None, []) == "" and result_words("chess", [1, 0], 0, []) == ""


def test_an_ended_tractor_game_says_who_won_it_first_and_by_how_many_levels() -> None:
    from dataclasses import replace

    from paiju.rules.tractor import model as tm

    rules = rules_of("tractor")
    view: Any = rules.view(dealt("tractor"), None)
    ended = board(replace(view, phase=tm.Phase.ENDED, levels=(12, 6)), {})
    assert ended["facts"][0] == ["Match over", "team A wins by 6 levels (past A against 9)"]
    assert ended["doing"] == "Match over: team A wins by 6 levels (past A against 9)"
    level = board(replace(view, phase=tm.Phase.ENDED, levels=(4, 4)), {})
    assert level["facts"][0] == ["Match over", "the levels are equal (7)"]
    playing = board(replace(view, levels=(12, 6)), {})
    assert all(fact[0] != "Match over" for fact in playing["facts"])


@pytest.mark.parametrize("name", sorted(GAMES))
def test_a_board_says_what_the_table_is_doing_through_a_whole_match(name: str) -> None:
    """Each board's ``doing`` follows the match: a deal dealt, bid for or tributed, played (its number, of how
    many for 砸六家), and at the end the match over with who won; the deal numbers never go back."""
    import random
    import re

    rules = rules_of(name)
    state: Any = dealt(name)
    pick = random.Random(11)
    said: list[str] = []
    for _ in range(200_000):
        doing = board(rules.view(state, None), {})["doing"]
        if not said or said[-1] != doing:
            said.append(doing)
        waiting = rules.waiting(state)
        if not waiting:
            command = rules.deal_again(state, 7)
            if command is None:
                break
        else:
            actions = rules.legal_actions(state, waiting[0])
            command = pick.choice(actions) if name == "tractor" else actions[0]
        for event in rules.decide(state, command):
            state = rules.evolve(state, event)
    assert said[-1].startswith("Match over: ") and ("wins by" in said[-1] or "equal" in said[-1] or "draw" in said[-1])
    numbers = [int(found.group(1)) for found in (re.search(r"deal (\d+)", s) for s in said[:-1]) if found]
    assert numbers and numbers == sorted(numbers) and numbers[0] == 1, said
    assert any(s.startswith("Playing deal ") for s in said) and any(s.startswith("Dealing deal 2") for s in said)
    assert len(said) > 4, said
