"""Who played: the names the players were shown by, for analysts' output (ids stay beside them). Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from paiju.lobby.table import bot_name

Names = Mapping[str, str]
"""Player id -> name (`paiju.tools.analyst.streams.player_names` reads them from the lobby's stream)."""


def name_of(names: Names, player_id: str) -> str:
    """A player's name as the lobby showed it, a bot's (a covering bot's too) from its id; ``""`` when unknown (or
    for an empty seat)."""
    if player_id in names:
        return names[player_id]
    return bot_name(player_id) if player_id.startswith(("bot-", "cover-")) else ""


def seat_names(players: Sequence[str], names: Names) -> dict[int, str]:
    """The label of each occupied seat for a person: the player's name, else its id."""
    return {seat: name_of(names, player) or player for seat, player in enumerate(players) if player}
