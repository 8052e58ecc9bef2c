"""What the lobby needs of each game beyond its rules and its codecs (`paiju.contract.games`): the event that ends
a match and the result the lobby keeps of it, and the options of a tournament table. One `LobbyGame` per game, by
the game's name (`GAMES`); the lobby's service, its match results and its tournament tables look a game up here
instead of branching on its name. A third game is a third entry here, among the places docs/contributing.md,
"Adding a game", lists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from paiju.contract import games as contract
from paiju.contract.codec import snake
from paiju.contract.games import GameCodecs
from paiju.lobby import table as tb
from paiju.rules import registry
from paiju.rules.registry import GameRules
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.v1 import tournament_events_pb2


@dataclass(frozen=True, slots=True)
class LobbyGame:
    """One game as the lobby runs its tables."""

    contract: GameCodecs
    """Its rules, codecs, ``Game`` value and options field."""
    ended: type
    """The rules event that ends a match (its result)."""
    result: Callable[[Any], tb.Result]
    """The result a table keeps of a match's `ended` event."""
    tournament_options: Callable[[tournament_events_pb2.TournamentRoundPaired], Any]
    """The rule options of a paired tournament round's tables (the tournament's round length)."""

    @property
    def rules(self) -> GameRules:
        return self.contract.rules

    @property
    def name(self) -> str:
        return self.rules.name

    @property
    def end_event(self) -> str:
        """The member of the game's event oneof that ends a match."""
        return snake(self.ended.__name__)


def _zlj_result(ended: zlj_model.MatchEnded) -> tb.Result:
    return tb.Result(team_points=ended.team_points, individual_points=ended.individual)


def _tractor_result(ended: tractor_model.GameEnded) -> tb.Result:
    return tb.Result(winner_team=ended.winner, levels=ended.levels)


GAMES: dict[str, LobbyGame] = {
    game.name: game
    for game in (
        LobbyGame(
            contract=contract.GAMES[registry.ZLJ.name],
            ended=zlj_model.MatchEnded,
            result=_zlj_result,
            tournament_options=lambda paired: zlj_model.Options(deals=paired.deals),
        ),
        LobbyGame(
            contract=contract.GAMES[registry.TRACTOR.name],
            ended=tractor_model.GameEnded,
            result=_tractor_result,
            tournament_options=lambda paired: tractor_model.Options(round_minutes=paired.round_minutes),
        ),
    )
}
"""Every game, by name, in the registry's order."""
assert list(GAMES) == list(registry.GAMES), "every game of the registry has its tables in the lobby"
BY_OPTIONS_FIELD: dict[str, LobbyGame] = {game.contract.options_field: game for game in GAMES.values()}
"""Every game, by the field of its options in the contract's messages."""
