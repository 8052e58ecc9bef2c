"""How cards look on the player's terminal: suit symbols (``Q♠``, ``10♦`` stays ``T♦``) where the output is UTF-8,
hearts and diamonds (and the big joker) in red where it is a terminal that takes colour, plain letters otherwise.

Colour follows https://no-color.org: none when ``NO_COLOR`` is set to anything but the empty string, none when the
output is not a terminal (a pipe, a file, a test reading a pipe) or the terminal says it is ``dumb``. Cards are
found in the finished lines (hands, options, narration, the engine's reasons) by their notation; text between
backticks is left as it is, since it shows what to type (`3S 3H`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

SYMBOLS = {"S": "♠", "H": "♥", "C": "♣", "D": "♦"}
RED = {"H", "D"}
RED_ON, OFF = "\x1b[31m", "\x1b[0m"
CARD = re.compile(r"(?<![\w`-])(?:([2-9TJQKA])([SHCD])|(SJ|BJ))(?![\w-])")
"""A card in the notation of docs/rules/README.md, standing alone."""
QUOTED = re.compile(r"(`[^`]*`)")
SUIT_LEGEND = "Suits are shown ♠ ♥ ♣ ♦ and typed S H C D."


@dataclass(frozen=True)
class Style:
    """Whether cards are shown with suit ``symbols`` and in ``colour``."""

    symbols: bool = False
    colour: bool = False

    @classmethod
    def of(cls, stream: TextIO, environ: Mapping[str, str] | None = None) -> Style:
        """The style a stream takes: symbols when it writes UTF-8, colour when it is a terminal and neither
        ``NO_COLOR`` (set and not empty) nor ``TERM=dumb`` says no."""
        env = os.environ if environ is None else environ
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        try:
            terminal = stream.isatty()
        except (AttributeError, ValueError, OSError):
            terminal = False
        colour = terminal and not env.get("NO_COLOR") and env.get("TERM") != "dumb"
        return cls(symbols=encoding in ("utf8", "utf8sig"), colour=colour)

    @property
    def plain(self) -> bool:
        return not (self.symbols or self.colour)

    def card(self, match: re.Match[str]) -> str:
        rank, suit, joker = match.group(1), match.group(2), match.group(3)
        if joker is not None:
            return f"{RED_ON}{joker}{OFF}" if self.colour and joker == "BJ" else joker
        shown = f"{rank}{SYMBOLS[suit] if self.symbols else suit}"
        return f"{RED_ON}{shown}{OFF}" if self.colour and suit in RED else shown

    def apply(self, text: str) -> str:
        """``text`` with its cards styled (text between backticks as it is)."""
        if self.plain:
            return text
        return "".join(part if part.startswith("`") else CARD.sub(self.card, part) for part in QUOTED.split(text))


__all__ = ["SUIT_LEGEND", "Style"]
