"""Analyst tools over the event streams: ``paiju replay`` (a game told for a person) and ``paiju export`` (deals
and plays as JSON Lines or CSV). Wire them into a command line with `add_parsers`; export an explicit list of
games (a tournament's) with `export_games`; build rows without NATS with `export_rows` over `decode`d logs."""

from paiju.tools.analyst.cli import Exported, add_parsers, export_games
from paiju.tools.analyst.export import DEAL_COLUMNS, PLAY_COLUMNS, Rows, export_rows, game_rows, read_rows, write_rows
from paiju.tools.analyst.log import GameLog, decode, from_game
from paiju.tools.analyst.replay import replay_lines
from paiju.tools.analyst.streams import AnalystError, Source

__all__ = [
    "DEAL_COLUMNS",
    "PLAY_COLUMNS",
    "AnalystError",
    "Exported",
    "GameLog",
    "Rows",
    "Source",
    "add_parsers",
    "decode",
    "export_games",
    "export_rows",
    "from_game",
    "game_rows",
    "read_rows",
    "replay_lines",
    "write_rows",
]
