"""Cards with suit symbols (♠ ♥ ♣ ♦) where the terminal writes UTF-8, and hearts and diamonds in red where it is a
terminal that takes colour and NO_COLOR (https://no-color.org) is not set; plain letters otherwise. Text between
backticks shows what to type, and keeps the letters."""

from __future__ import annotations

import io
import re

import pexpect
import pytest

from paiju.platform.tokens import Role
from paiju.terminal.client.style import Style

from .driver import EngineThread, spawn_client, token

RED = "\x1b[31m"


class Terminal(io.TextIOWrapper):
    """An output stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def stream(encoding: str, terminal: bool) -> io.TextIOWrapper:
    return (Terminal if terminal else io.TextIOWrapper)(io.BytesIO(), encoding=encoding)


def test_symbols_need_utf8_and_colour_a_terminal_without_no_color() -> None:
    assert Style.of(stream("utf-8", terminal=True), {}) == Style(symbols=True, colour=True)
    assert Style.of(stream("UTF-8", terminal=False), {}) == Style(symbols=True, colour=False), "a pipe: no colour"
    assert Style.of(stream("utf-8", terminal=True), {"NO_COLOR": "1"}) == Style(symbols=True, colour=False)
    assert Style.of(stream("utf-8", terminal=True), {"NO_COLOR": ""}).colour, "an empty NO_COLOR does not count"
    assert not Style.of(stream("utf-8", terminal=True), {"TERM": "dumb"}).colour
    assert Style.of(stream("ascii", terminal=True), {"NO_COLOR": "x"}) == Style(symbols=False, colour=False)
    assert Style.of(stream("latin-1", terminal=False), {}).plain


def test_cards_are_styled_and_what_to_type_is_not() -> None:
    line = "Your hand (5): 4S 5H TD SJ BJ; type `3S 3H`; rule D-TR-6.2, TR2, seat 0 (A, you)"
    assert Style().apply(line) == line
    assert Style(symbols=True).apply(line) == (
        "Your hand (5): 4♠ 5♥ T♦ SJ BJ; type `3S 3H`; rule D-TR-6.2, TR2, seat 0 (A, you)"
    )
    coloured = Style(symbols=True, colour=True).apply("4S 5H TD BJ `5H`")
    assert coloured == f"4♠ {RED}5♥\x1b[0m {RED}T♦\x1b[0m {RED}BJ\x1b[0m `5H`"
    assert Style(colour=True).apply("KD 9C") == f"{RED}KD\x1b[0m 9C", "colour without symbols"


def _hand_line(env: dict[str, str]) -> str:
    """The hand the client shows on a pseudo-terminal (a TTY) with ``env``."""
    with EngineThread(seed=11) as engine:
        engine.create("styled")
        mine = token(Role.PLAYER, "styled", 0)
        child = spawn_client("play", "--engine", engine.address, "--game", "styled", "--token", mine, env=env)
        try:
            child.expect(r"your move> |Waiting for ")
            child.sendline("t")
            child.expect(r"Your hand \(18\): ([^\r\n]*)")
            assert isinstance(child.match, re.Match)
            hand = str(child.match.group(1))
            child.sendline("q")
            child.expect(pexpect.EOF, timeout=10)
        finally:
            child.close()
        return hand


@pytest.mark.e2e  # the terminal client as a process on a pseudo-terminal
def test_a_utf8_terminal_shows_symbols_in_colour_and_no_color_turns_colour_off() -> None:
    coloured = _hand_line({"PYTHONIOENCODING": "utf-8"})
    assert RED in coloured and re.search("[♥♦]", coloured) and not re.search(r"\d[SHCD]\b", coloured)
    plain = _hand_line({"PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"})
    assert "\x1b[" not in plain and re.search("[♠♥♣♦]", plain)
    letters = _hand_line({"PYTHONIOENCODING": "ascii:replace", "NO_COLOR": "1"})
    assert re.fullmatch(r"(?:(?:[2-9TJQKA][SHCD]|SJ|BJ) ?)+", letters.strip()), letters
