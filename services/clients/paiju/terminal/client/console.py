"""Line-based terminal input and output for asyncio: plain text, no curses, works in a pseudo-terminal.

Input lines are read from the standard input's file descriptor by the event loop (or by a helper thread
when the descriptor cannot be polled, e.g. a regular file), so the game can wait for "the player typed a
line" and "the table moved" at the same time. End of input (Ctrl-D) reads as ``None``.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import TextIO

from paiju.terminal.client.style import Style


class Console:
    """The player's terminal: `line` prints, `prompt` asks, `read` waits for the next typed line. Cards in printed
    lines take the terminal's `Style` (suit symbols, colour)."""

    def __init__(self, out: TextIO | None = None, fd: int | None = None, style: Style | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.style = style if style is not None else Style.of(self.out)
        self.fd = fd if fd is not None else sys.stdin.fileno()
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""
        self._reader_added = False
        self._pending: asyncio.Task[str | None] | None = None
        self._prompt: str | None = None
        self._again: str | None = None
        self._status: Callable[[], str] = lambda: ""
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- input ------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start reading the input (call inside the running event loop)."""
        self._loop = asyncio.get_running_loop()
        try:
            self._loop.add_reader(self.fd, self._readable)
            self._reader_added = True
        except (PermissionError, OSError, NotImplementedError, ValueError):
            threading.Thread(target=self._read_in_thread, name="console-input", daemon=True).start()

    def close(self) -> None:
        if self._reader_added and self._loop is not None:
            self._loop.remove_reader(self.fd)
            self._reader_added = False
        if self._pending is not None and not self._pending.done():
            self._pending.cancel()

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 4096)
        except OSError:
            data = b""
        self._feed(data)

    def _read_in_thread(self) -> None:
        loop = self._loop
        assert loop is not None
        while True:
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                data = b""
            with contextlib.suppress(RuntimeError):  # the loop is closed: the client is gone
                loop.call_soon_threadsafe(self._feed, data)
            if not data:
                return

    def _feed(self, data: bytes) -> None:
        if not data:
            if self._reader_added and self._loop is not None:
                self._loop.remove_reader(self.fd)
                self._reader_added = False
            if self._partial:
                self._lines.put_nowait(self._partial)
                self._partial = ""
            self._lines.put_nowait(None)
            return
        self._partial += self._decoder.decode(data)
        while "\n" in self._partial:
            line, self._partial = self._partial.split("\n", 1)
            self._lines.put_nowait(line.rstrip("\r"))

    def next_line(self) -> asyncio.Task[str | None]:
        """The task that delivers the next typed line: the same task until it is done, so racing it against
        other waits loses no line."""
        if self._pending is None or self._pending.done():
            self._pending = asyncio.ensure_future(self._lines.get())
        return self._pending

    async def read(self) -> str | None:
        line = await self.next_line()
        self._pending = None
        self._prompt = None
        return line

    def take(self) -> str | None:
        """The result of a finished `next_line` task (and forget it)."""
        assert self._pending is not None and self._pending.done()
        line = self._pending.result()
        self._pending = None
        self._prompt = None
        return line

    # --- output -----------------------------------------------------------------------------------------

    def line(self, text: str = "") -> None:
        """Print a line; a prompt on screen is shown again below it (as its ``again`` form)."""
        if self._prompt is not None:
            self.out.write("\n")
        self.out.write(self.style.apply(text) + "\n")
        if self._prompt is not None:
            self.out.write(self._status() + (self._again or self._prompt))
        self.out.flush()

    def lines(self, texts: list[str]) -> None:
        for text in texts:
            self.line(text)

    def end_prompt(self) -> None:
        """The question on screen is withdrawn (the table moved on): end its line."""
        if self._prompt is not None:
            self.out.write("\n")
            self.out.flush()
            self._prompt = None

    @property
    def prompting(self) -> bool:
        """A prompt is on screen, waiting for a line."""
        return self._prompt is not None

    def prompt(self, text: str, again: str | None = None, status: Callable[[], str] | None = None) -> None:
        """Ask for a line: the prompt stays at the end of the output until a line is read. When lines are
        printed meanwhile, it is shown again below them as ``again`` (default: the same), so that a reader
        (a person or a test) can tell a new question from the same one repeated. ``status`` is put before the
        prompt each time it is shown (the time left to move: ``[12 s left] your move> ``)."""
        self._status = status or (lambda: "")
        self.out.write(self._status() + text)
        self.out.flush()
        self._prompt = text
        self._again = again
