"""What the analyst tools need of each game beyond its rules (`paiju.rules.registry`) and how the terminal shows
it (`paiju.terminal.client.games`): one `AnalystGame` per game, by the game's name. The replay and the export look
a game up here instead of branching on its name; a third game is a third module like `zlj` and `tractor` and its
entry here, among the places docs/contributing.md, "Adding a game", lists."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paiju.rules import registry
from paiju.rules.cards import Card
from paiju.rules.registry import GameRules
from paiju.terminal.client.games import PRESENTATIONS, Presentation
from paiju.terminal.client.narrate import Narration
from paiju.tools.analyst import tractor, zlj
from paiju.tools.analyst.timeline import Action, Moment


@dataclass(frozen=True, slots=True)
class AnalystGame:
    """One game as the analyst tools read it."""

    rules: GameRules
    presentation: Presentation
    """How the terminal shows the game: its narration, its table and its cards."""
    stage: str
    """What a deal's stage is called in a replay (a round, a trick)."""
    card_order: Callable[[Any], Callable[[Card], int]]
    """The sort key of cards shown at a state (as a spectator knows the deal)."""
    dealt: Callable[[Any], Sequence[Sequence[Card]] | None]
    """The hands an event deals (``None``: it deals none)."""
    deal_row: Callable[[dict[str, Any], Any], None]
    """Fills a deal's row from one of its events: the game's own columns."""
    deal_columns: Mapping[str, Any]
    """The game's own deal columns as a deal's row starts (the others are empty)."""
    action: Callable[[Moment], Action | None]
    """The seat's action of a moment, as a play row (``None``: no seat acted)."""
    tell: Callable[[Narration, Moment], list[str]]
    """A moment's event told in a replay, with the game's narration."""

    @property
    def name(self) -> str:
        return self.rules.name


GAMES: dict[str, AnalystGame] = {
    game.name: game
    for game in (
        AnalystGame(
            rules=registry.ZLJ,
            presentation=PRESENTATIONS[registry.ZLJ.name],
            stage=zlj.STAGE,
            card_order=zlj.card_order,
            dealt=zlj.dealt,
            deal_row=zlj.deal_row,
            deal_columns={},
            action=zlj.action,
            tell=zlj.tell,
        ),
        AnalystGame(
            rules=registry.TRACTOR,
            presentation=PRESENTATIONS[registry.TRACTOR.name],
            stage=tractor.STAGE,
            card_order=tractor.card_order,
            dealt=tractor.dealt,
            deal_row=tractor.deal_row,
            deal_columns=tractor.DEAL_COLUMNS,
            action=tractor.action,
            tell=tractor.tell,
        ),
    )
}
"""Every game, by name, in the registry's order."""
assert list(GAMES) == list(registry.GAMES), "every game of the registry is read by the analyst tools"
MAX_SEATS = max(rules.seats for rules in registry.GAMES.values())
"""The most seats of any game: the number of each per-seat column of the export."""
