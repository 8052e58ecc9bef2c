"""Long option lists at the terminal: a 砸六家 lead from a hand with a long straight has some sixty options; they are
grouped by kind (singles, pairs, straights of each length …) with short labels, so that the list fits in about 20
lines under the table and the hand, and paged (``m``) when it still does not; every option keeps its number."""

from __future__ import annotations

import re
from typing import Any

from paiju.rules.zlj import Options, Play, StartMatch, State, decide, replay
from paiju.rules.zlj import legal_actions as zlj_legal
from paiju.rules.zlj.combos import LEVEL_NAMES, Kind, classify
from paiju.rules.zlj.model import Phase
from paiju.rules.zlj.view import view as zlj_view
from paiju.terminal.client import render

LONG_STRAIGHT_SEED = 11
"""A match whose first leader holds 4 5 6 7 8 9 10 J Q K A: 64 ways to lead."""


def leading() -> tuple[list[render.Option], list[Any]]:
    state = replay(decide(State(), StartMatch(LONG_STRAIGHT_SEED, Options(deals=1))))
    seat = state.turn
    assert seat is not None
    actions = list(zlj_legal(state, seat))
    return render.zlj_options(zlj_view(state, seat), actions), actions


def numbers(lines: list[str]) -> set[int]:
    return {int(n) for n in re.findall(r"(?:^|\s)(\d+)\) ", "\n".join(lines[1:]))}


def test_a_long_lead_is_grouped_by_kind_and_fits_in_twenty_lines() -> None:
    options, _ = leading()
    assert len(options) > 47
    (page,) = render.option_pages(options)
    assert len(page) <= render.MAX_OPTION_LINES
    assert page[0] == f"Your options ({len(options)}): by kind; type a number, or the cards"
    text = "\n".join(page)
    assert "  singles: " in text and "  pairs: " in text and "  5-card straights: " in text
    assert "4-8" in text  # a straight by its ranks
    assert numbers(page) == set(range(1, len(options) + 1)), "every option is on the list by its number"


def test_options_are_numbered_by_kind_and_each_number_plays_its_option() -> None:
    options, actions = leading()
    kinds = [classify(o.command.cards).kind for o in options]
    order = [Kind.SINGLE, Kind.PAIR, Kind.STRAIGHT, Kind.PAIR_STRAIGHT, Kind.BOMB, Kind.JOKER_BOMB]
    assert kinds == sorted(kinds, key=order.index), "singles, then pairs, then straights …"
    page = render.option_pages(options)[0]
    straight = next(line for line in page if "5-card straights" in line)
    number, ranks = re.findall(r"(\d+)\) (\S+)", straight)[0]
    intent = render.interpret(number, 0, options, actions, Phase.PLAY)
    assert isinstance(intent, render.Act) and isinstance(intent.command, Play)
    combo = classify(intent.command.cards)
    assert (combo.kind, combo.size) == (Kind.STRAIGHT, 5) and ranks.endswith(LEVEL_NAMES[combo.top])


def test_a_list_still_too_long_is_paged_and_every_page_says_how_to_see_more() -> None:
    options, _ = leading()
    pages = render.option_pages(options, most=8)
    assert len(pages) > 2 and all(len(page) <= 8 for page in pages)
    assert pages[0][-1] == f"  (page 1 of {len(pages)}: type m for more)"
    assert pages[-1][-1].endswith("type m to see the first page again)")
    seen: set[int] = set()
    for page in pages:
        seen |= numbers(page[:-1])
    assert seen == set(range(1, len(options) + 1)), "every option is on some page"
    assert render.option_lines(options, page=len(pages)) == render.option_lines(options), "round and round"
    assert render.client_command("m") == render.Command("more")


def test_a_short_list_stays_one_option_a_line() -> None:
    options, _ = leading()
    few = options[:3]
    assert render.option_pages(few) == [["Your options (3):", *(f"{i:>3}) {o.label}" for i, o in enumerate(few, 1))]]
