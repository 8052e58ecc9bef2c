"""The game loop of the terminal client: a seat playing (`play_game`) or a spectator watching (`watch_game`).

The Watch stream narrates every event as it happens (the other seats' moves, and the player's own); when the
player is to act, the table, the hand in the game's order and the legal options are shown and a prompt ending
in ``> `` waits for an option number, typed cards or a client command. A refusal is explained in the engine's
words and the player tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import Any

import grpc

from paiju.rules.fair import SeedCommitted
from paiju.terminal.client import render
from paiju.terminal.client.console import Console
from paiju.terminal.client.engine import EngineClient, GameFeed, Legal, Refused, Snapshot
from paiju.terminal.client.games import PRESENTATIONS, Presentation
from paiju.terminal.client.narrate import Narration, timed_out_seat
from paiju.terminal.client.rules_text import rule_lines
from paiju.terminal.client.style import SUIT_LEGEND
from paiju.v1 import engine_pb2

HISTORY_LINES = 12
"""How many lines of what happened before the client joined are shown."""
INSTRUCTIONS = "Type a number or cards (e.g. `3S 3H`, `10D`); p = pass, t = table, h = help, q = quit."
QUIT = -1
TICK = 0.25
"""Seconds between two looks at a running turn timer."""


class Session:
    """One client's game: its engine calls, the narrated Watch stream and the console."""

    def __init__(self, engine: EngineClient, console: Console, seats: render.Seats) -> None:
        self.engine = engine
        self.console = console
        self.seats = seats
        self._presentation: Presentation | None = None
        self.feed = GameFeed(engine, self._receive, console.line)
        engine.notice = console.line
        self._narration: Narration | None = None
        self._history: deque[str] = deque(maxlen=HISTORY_LINES)
        self._catch_up_to: int | None = None
        self._feed_task: asyncio.Task[None] | None = None
        self._waiting_for: object = None
        self._contributing: asyncio.Task[bool] | None = None
        self._last_event: tuple[float, float] | None = None
        """When the game's last event was recorded (its envelope's time) and when it arrived here."""

    # --- the feed ---------------------------------------------------------------------------------------

    async def start(self) -> Snapshot:
        """Find the game, then follow its Watch stream from the start: what happened before now is shown as
        a short recap, then every event as it comes."""
        snap = await self.engine.view_when_ready()
        self._presentation = PRESENTATIONS[snap.game]
        self.seats.me = snap.view.seat
        self._narration = self._presentation.narration(self.seats)
        self._catch_up_to = snap.version
        self._feed_task = asyncio.create_task(self.feed.run(0))
        if not await self.feed.wait_for(snap.version, timeout=10):
            self._flush_history()
        self._contribute()  # a shuffle committed before the client came may wait for this seat's contribution
        return snap

    async def stop(self) -> None:
        if self._contributing is not None:
            self._contributing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._contributing
        if self._feed_task is not None:
            self._feed_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._feed_task

    def _contribute(self) -> None:
        """A player's seat adds its random bytes to a committed shuffle, in the background (docs/fairness.md)."""
        if self.seats.me is None or (self._contributing is not None and not self._contributing.done()):
            return
        self._contributing = asyncio.get_running_loop().create_task(self.engine.contribute())

    def _receive(self, envelope: engine_pb2.Envelope) -> None:
        assert self._narration is not None
        now = time.time()
        at = envelope.recorded_at
        self._last_event = (at.seconds + at.nanos / 1e9 if at.seconds else now, now)
        event = self._narration.game.event(envelope)
        if self._catch_up_to is None and isinstance(event, SeedCommitted):
            self._contribute()
        if self._catch_up_to is None and self.seats.me is not None and timed_out_seat(event) == self.seats.me:
            self.console.end_prompt()  # the engine moved for the player: the question is no longer asked
        lines = self._narration.lines(envelope)
        if self._catch_up_to is not None:
            self._history.extend(lines)
            if envelope.version >= self._catch_up_to:
                self._flush_history()
            return
        self.console.lines(lines)

    def _flush_history(self) -> None:
        if self._catch_up_to is None:
            return
        self._catch_up_to = None
        if self._history:
            self.console.line("What happened so far (the latest events):")
            self.console.lines(list(self._history))
        self._history.clear()

    # --- screens ----------------------------------------------------------------------------------------

    @property
    def presentation(self) -> Presentation:
        """How the game is shown (known once `start` has read its view)."""
        assert self._presentation is not None, "start the session first"
        return self._presentation

    def table_lines(self, snap: Snapshot) -> list[str]:
        view = snap.view
        lines = self.presentation.table(view, self.seats)
        if view.seat is not None:
            lines += self.presentation.hand(view)
        return lines

    def options(self, snap: Snapshot, actions: list[Any]) -> list[render.Option]:
        return self.presentation.options(snap.view, actions)

    def show_turn(self, snap: Snapshot, options: list[render.Option], follow: render.FollowOwed | None = None) -> None:
        lines = ["", *self.table_lines(snap)]
        if follow is not None:
            lines += render.tractor_follow_lines(snap.view, follow)
        else:
            lines += render.wrapped("", self.presentation.prompt_hint(snap.view))
        if options:
            lines += render.option_lines(options)
        lines.append(INSTRUCTIONS)
        self.console.lines(lines)

    def show_help(self) -> None:
        self.console.line(render.HELP)
        if self.console.style.symbols:
            self.console.line(SUIT_LEGEND)

    def show_page(self, options: list[render.Option], page: int) -> int:
        """Show page ``page`` of a long list of options (the first again after the last); the page shown."""
        pages = render.option_pages(options)
        if len(pages) == 1:
            self.console.line("All your options are on the list above (t shows it again).")
            return 0
        page %= len(pages)
        self.console.lines(pages[page])
        return page

    def waiting_text(self, snap: Snapshot) -> str:
        view = snap.view
        waiting = self.presentation.waiting(view)
        if waiting is not None:
            return waiting
        if view.turn is None:
            return "Waiting for the table..."
        return f"Waiting for {self.seats.label(view.turn)}..."

    # --- the turn timer -----------------------------------------------------------------------------------

    def time_left(self, snap: Snapshot) -> float | None:
        """Seconds left before the turn timer moves for the player (``None``: the table has no timer)."""
        seconds = int(getattr(snap.view.options, "turn_seconds", 0) or 0)
        if self._last_event is None:
            return None
        deadline = render.turn_deadline(*self._last_event, seconds)
        return None if deadline is None else deadline - time.time()

    async def _count_down(self, snap: Snapshot) -> None:
        """While the prompt waits, tell the player as the turn timer runs low (the prompt shows the time left each
        time it is shown)."""
        seconds = int(getattr(snap.view.options, "turn_seconds", 0) or 0)
        told: set[int] = set()
        while True:
            await asyncio.sleep(TICK)
            left = self.time_left(snap)
            if left is None or not self.console.prompting:
                continue
            warning = render.countdown_warning(left, seconds, told)
            if warning is not None:
                self.console.line(warning)

    # --- waiting ----------------------------------------------------------------------------------------

    async def _line_or_move(self, version: int) -> str:
        """``line`` when the player typed a line, ``moved`` when the game moved past ``version``, ``finished``
        when the Watch stream ended."""
        line = self.console.next_line()
        moved = asyncio.ensure_future(self.feed.wait_beyond(version))
        try:
            await asyncio.wait({line, moved}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not moved.done():
                moved.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await moved
        if line.done():
            return "line"
        return "moved" if self.feed.version > version else "finished"

    def _client_command(self, line: str | None, snap: Snapshot) -> bool:
        """Handle a line typed while not asked to act; False when the player quits."""
        if line is None:
            return False
        command = render.client_command(line)
        if command is not None and command.name == "quit":
            return False
        if command is not None and command.name == "help":
            self.show_help()
        elif command is not None and command.name == "table":
            self.console.lines(self.table_lines(snap))
        elif command is not None and command.name == "more":
            self.console.line(f"You have no options now. {self.waiting_text(snap)}")
        elif command is None:
            self.console.line(f"It is not your move. {self.waiting_text(snap)}")
        return True

    # --- playing ----------------------------------------------------------------------------------------

    async def play(self) -> int:
        """Play the seat until the match ends (0) or the player quits (0); 1 when the engine is lost."""
        snap = await self.start()
        known = snap.version
        while True:
            await self.feed.wait_for(known, timeout=3)
            snap = await self.engine.view(min_version=known)
            await self.feed.wait_for(snap.version, timeout=3)
            known = snap.version
            if snap.ended:
                await self.feed.wait_beyond(snap.version, timeout=2)  # the stream closes after the last event
                self.console.line("The match is over. Thanks for playing!")
                return 0
            legal = await self.engine.legal(min_version=snap.version)
            if legal.version != snap.version:
                known = legal.version
                continue
            if not legal.actions:
                result = await self._wait_for_others(snap)
                if result == QUIT:
                    return 0
                if self.feed.finished and self.feed.failure is not None:
                    self.console.line(self.feed.failure)
                    return 1
                known = max(known, self.feed.version)
                continue
            self._waiting_for = None
            result = await self._take_turn(snap, legal)
            if result == QUIT:
                return 0
            known = max(known, result)

    async def _wait_for_others(self, snap: Snapshot) -> int:
        key = snap.view.phase  # once after the player's move, and when the phase changes
        if key != self._waiting_for:
            self._waiting_for = key
            self.console.line(self.waiting_text(snap))
        while True:
            got = await self._line_or_move(snap.version)
            if got != "line":
                return self.feed.version
            if not self._client_command(self.console.take(), snap):
                return QUIT

    async def _take_turn(self, snap: Snapshot, legal: Legal) -> int:
        """Ask for a move until one is accepted; the version after it (or `QUIT`). With a turn timer, the prompt
        shows the time left and the player is told as it runs low."""
        options = self.options(snap, legal.actions)
        self.show_turn(snap, options, legal.follow)
        ticking = asyncio.ensure_future(self._count_down(snap)) if self.time_left(snap) is not None else None
        try:
            return await self._ask(snap, legal, options)
        finally:
            if ticking is not None:
                ticking.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticking

    async def _ask(self, snap: Snapshot, legal: Legal, options: list[render.Option]) -> int:
        actions, follow = legal.actions, legal.follow
        phase = snap.view.phase
        seat = snap.view.seat
        assert seat is not None
        concealed = phase in self.presentation.concealed
        expected: int | None = None if concealed else snap.version
        seen = snap.version
        page = 0
        chosen: tuple[Any, ...] = ()  # the cards of a 拖拉机 follow being composed
        rule = ""  # the rule the engine cited for the last refused move: h shows its text

        def status() -> str:
            return render.countdown(self.time_left(snap))

        while True:
            if not self.console.prompting:
                self.console.prompt(render.PROMPT, again=render.PROMPT_AGAIN, status=status)
            got = await self._line_or_move(seen)
            if got == "finished":
                return self.feed.version
            if got == "moved":
                # others moved (concealed bids, a turn timer): ask again only if the choice changed
                seen = self.feed.version
                again = await self.engine.legal(min_version=seen)
                if render.same_options(self.options(snap, again.actions), options) and again.actions:
                    expected = None if concealed else again.version
                    continue
                self.console.end_prompt()
                return max(again.version, seen)
            line = self.console.take()
            if line is None:
                self.console.line("")  # end of input: the prompt's line ends here
                return QUIT
            intent = render.interpret(line, seat, options, actions, phase)
            if isinstance(intent, render.Command):
                if intent.name == "quit":
                    return QUIT
                if intent.name == "help":
                    if rule:
                        self.console.lines(rule_lines(self.presentation.name, rule))
                        self.console.line("")
                    self.show_help()
                elif intent.name == "table":
                    self.show_turn(snap, options, follow)
                    page = 0
                elif intent.name == "clear" and follow is not None:
                    chosen = ()
                    self.console.line(f"Start again: type the {render.card_count(follow.count)} you play.")
                elif intent.name == "more":
                    page = self.show_page(options, page + 1)
                continue
            if isinstance(intent, render.Problem):
                self.console.line(intent.message)
                continue
            command = intent.command
            if follow is not None and not line.strip().isdigit() and hasattr(command, "cards"):
                composed = render.compose(chosen, command.cards, follow, snap.view.hand)
                if isinstance(composed, render.Problem | render.Composed):
                    if isinstance(composed, render.Composed):
                        chosen = composed.cards
                    self.console.line(composed.message)
                    continue
                chosen = ()
                command = type(command)(seat, composed)
            try:  # a composed follow is checked by the engine as it is played: a refused one changes nothing
                return await self.engine.act(command, expected)
            except Refused as e:
                message = render.plain_reason(e.message) if follow is not None else e.message
                rule = e.rule or rule
                self.console.line(f"{message} (h shows rule {e.rule})" if e.rule else message)
                if e.code == grpc.StatusCode.ABORTED:
                    return self.feed.version
                if e.code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.NOT_FOUND):
                    raise

    # --- watching ---------------------------------------------------------------------------------------

    async def watch(self) -> int:
        """Narrate the game until the match ends (0) or the spectator quits (0); 1 when the engine is lost."""
        snap = await self.start()
        self.console.lines(["", *self.table_lines(snap), ""])
        if snap.view.seat is not None:
            self.console.line(f"(You hold {self.seats.label(snap.view.seat)}: this is that seat's view.)")
        self.console.line("Watching; type t for the table, q to stop.")
        while True:
            got = await self._line_or_move(self.feed.version)
            if got == "finished":
                if self.feed.failure is not None:
                    self.console.line(self.feed.failure)
                    return 1
                self.console.line("The match is over.")
                return 0
            if got == "moved":
                continue
            line = self.console.take()
            command = render.client_command(line or "q")
            if command is not None and command.name == "quit":
                return 0
            if command is not None and command.name == "table":
                snap = await self.engine.view(min_version=self.feed.version)
                self.console.lines(self.table_lines(snap))
            elif command is not None and command.name == "help":
                self.console.line("t shows the table, q stops watching.")
