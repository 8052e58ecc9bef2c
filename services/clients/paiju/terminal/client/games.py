"""How the terminal client shows each game to a person: one `Presentation` per game of the registry
(`paiju.rules.registry`), found by the game's name. The session, the lobby's screens and the analyst tools look a
game up here instead of branching on its name; a third game is a third entry (docs/contributing.md, "Adding a game").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from paiju.rules import registry
from paiju.rules.registry import GameRules
from paiju.rules.tractor import model as tractor_model
from paiju.terminal.client import render
from paiju.terminal.client.narrate import Narration, TractorNarration, ZljNarration
from paiju.terminal.client.render import Option, Seats
from paiju.v1 import zlj_pb2


@dataclass(frozen=True, slots=True)
class Presentation:
    """One game at the terminal."""

    rules: GameRules
    narration: Callable[[Seats], Narration]
    """The narration of the game's envelopes for a viewer."""
    table: Callable[[Any, Seats], list[str]]
    """The table as a seat view shows it."""
    hand: Callable[[Any], list[str]]
    """The viewer's hand."""
    cards: Callable[[Any, Sequence[Any]], str]
    """Cards in the game's order at a view (a hand, a play)."""
    options: Callable[[Any, Sequence[Any]], list[Option]]
    """The numbered options of the legal actions at a view."""
    prompt_hint: Callable[[Any], str]
    """What the player is asked to do now, in words."""
    waiting: Callable[[Any], str | None]
    """What a seat with nothing to do waits for when no one seat is to act (``None``: the seat to act)."""
    concealed: frozenset[Any]
    """The phases whose moves are concealed and made at once: sent without an expected version, since the
    other seats' moves change the game's version but not the player's choice."""
    table_options: Callable[[int | None], Message | None]
    """The lobby's options of a new table of the game (``<name>_options`` of `CreateTableRequest`) for the
    number of deals asked for (``None``: the rules' default), or ``None`` for the lobby's defaults."""

    @property
    def name(self) -> str:
        return self.rules.name

    @property
    def title(self) -> str:
        return self.rules.title


def _none(view: Any) -> None:
    return None


def _zlj_table_options(deals: int | None) -> Message | None:
    if deals is None:
        return None
    return zlj_pb2.ZljOptions(
        deals=deals, reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL
    )


def _lobby_defaults(deals: int | None) -> Message | None:
    return None


ZLJ = Presentation(
    rules=registry.ZLJ,
    narration=ZljNarration,
    table=render.zlj_table,
    hand=render.zlj_hand,
    cards=lambda view, cards: render.zlj_cards(cards),
    options=render.zlj_options,
    prompt_hint=render.zlj_prompt_hint,
    waiting=_none,
    concealed=frozenset(),
    table_options=_zlj_table_options,
)
TRACTOR = Presentation(
    rules=registry.TRACTOR,
    narration=TractorNarration,
    table=render.tractor_table,
    hand=render.tractor_hand,
    cards=render.tractor_cards,
    options=render.tractor_options,
    prompt_hint=render.tractor_prompt_hint,
    waiting=render.tractor_waiting,
    concealed=frozenset({tractor_model.Phase.BID, tractor_model.Phase.COUNTER}),
    table_options=_lobby_defaults,
)
PRESENTATIONS: dict[str, Presentation] = {game.name: game for game in (ZLJ, TRACTOR)}
"""Every game, by name, in the registry's order."""
assert list(PRESENTATIONS) == list(registry.GAMES), "every game of the registry is shown at the terminal"
