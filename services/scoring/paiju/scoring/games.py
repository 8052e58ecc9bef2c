"""What scoring needs of each game beyond its rules and its codecs (`paiju.contract.games`): how its events fold
into the read models' rows, what length a tournament match of it may have and how long by default, and its result
sheet's title and difference heading. One `ScoringGame` per game, by the game's name (`GAMES`); the fold, the
tournament and the result sheets look a game up here instead of branching on its name. A third game is a third
module like `zlj` and `tractor` and its entry here, among the places docs/contributing.md, "Adding a game", lists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paiju.contract import games as contract
from paiju.contract.games import GameCodecs
from paiju.rules import registry
from paiju.rules.registry import GameRules
from paiju.scoring import tractor, zlj
from paiju.scoring.rating import Style
from paiju.scoring.rows import Row
from paiju.v1 import engine_pb2

if TYPE_CHECKING:
    from paiju.scoring.fold import GameFold


FAIR_RESULTS = frozenset({"seed_committed", "seed_revealed"})
"""A fair deal's events that add a shuffle row (`paiju.scoring.fold.GameFold.apply`), in every game's event oneof."""


@dataclass(frozen=True, slots=True)
class ScoringGame:
    """One game as scoring reads and ranks it."""

    contract: GameCodecs
    """Its rules, codecs and ``Game`` value."""
    fold: Callable[[GameFold, engine_pb2.Envelope, Any], list[Row]]
    """The rows one of its events adds to its game's (the fold moved past it)."""
    match_length: Callable[[int, int], str | None]
    """Why a tournament's match length (deals, round minutes) does not suit the game (``None``: it does)."""
    default_deals: int
    """A tournament match's deals when the organiser names none (0: not played to a number of deals)."""
    difference_heading: str
    """The printed heading of a result sheet's difference column (S-1)."""
    rating: Style
    """How its matches are rated (docs/rules/ratings.md)."""
    results: frozenset[str]
    """Its events that add rows or start a game's row, by their field in its event oneof, and a fair deal's seed
    events (`FAIR_RESULTS`): what a running projection applies soon (the rest waits for them or a few seconds)."""

    @property
    def rules(self) -> GameRules:
        return self.contract.rules

    @property
    def name(self) -> str:
        return self.rules.name

    @property
    def sheet_title(self) -> str:
        """The printed result sheet's title: the game's 比赛成绩单."""
        return f"{self.rules.title}比赛成绩单"


GAMES: dict[str, ScoringGame] = {
    game.name: game
    for game in (
        ScoringGame(
            contract=contract.GAMES[registry.ZLJ.name],
            fold=zlj.fold,
            match_length=zlj.match_length,
            default_deals=zlj.DEFAULT_DEALS,
            difference_heading=zlj.DIFFERENCE_HEADING,
            rating=zlj.RATING,
            results=zlj.RESULTS | FAIR_RESULTS,
        ),
        ScoringGame(
            contract=contract.GAMES[registry.TRACTOR.name],
            fold=tractor.fold,
            match_length=tractor.match_length,
            default_deals=tractor.DEFAULT_DEALS,
            difference_heading=tractor.DIFFERENCE_HEADING,
            rating=tractor.RATING,
            results=tractor.RESULTS | FAIR_RESULTS,
        ),
    )
}
"""Every game, by name, in the registry's order."""
assert list(GAMES) == list(registry.GAMES), "every game of the registry is scored"
for _game in GAMES.values():  # each name a result event's field of the game's event oneof
    _events = engine_pb2.Envelope.DESCRIPTOR.fields_by_name[_game.name].message_type
    assert _events is not None and _game.results <= {f.name for f in _events.oneofs_by_name["event"].fields}, (
        f"{_game.name}: results name no event field"
    )
