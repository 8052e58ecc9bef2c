"""Games between bots narrated in the terminal (``paiju match``, what `make run` shows): one `BotMatch` per game of
the registry (`paiju.rules.registry`), by the game's name. The play functions load with the first match played."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from paiju.rules import registry
from paiju.rules.registry import GameRules


@dataclass(frozen=True, slots=True)
class BotMatch:
    """How a game between bots is played and told."""

    rules: GameRules
    deals: int
    """The deals played unless told otherwise."""
    deals_help: str
    """What the number of deals means for the game (the command's help)."""
    play: Callable[[int, int, str, TextIO], Any]
    """Play: (seed, deals, bot kind, where to print); the final state."""


def _zlj(seed: int, deals: int, bot: str, out: TextIO) -> Any:
    from paiju.terminal.zlj_match import play_match

    return play_match(seed=seed, deals=deals, bot=bot, out=out)


def _tractor(seed: int, deals: int, bot: str, out: TextIO) -> Any:
    from paiju.terminal.tractor_match import play_game

    return play_game(seed=seed, deals=deals, bot=bot, out=out)


MATCHES: dict[str, BotMatch] = {
    match.rules.name: match
    for match in (
        BotMatch(registry.ZLJ, registry.ZLJ.options().deals, "the match's deals", _zlj),
        BotMatch(registry.TRACTOR, 1, "0 = until a team goes past A", _tractor),
    )
}
"""Every game, by name, in the registry's order."""
assert list(MATCHES) == list(registry.GAMES), "every game of the registry has its bot match"
