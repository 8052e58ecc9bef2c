"""The game loop of the terminal client: a seat playing (`play_game`) or a spectator watching (`watch_game`).

The Watch stream narrates every event as it happens (the other seats' moves, and the player's own) and brings,
after each change, the turn it leads to with the player's view: when the player's seat may act, the turn lists its
legal options, and the table, the hand in the game's order and the options are shown and a prompt ending in ``> ``
waits for an option number, typed cards or a client command. A refusal is explained in the engine's words and the
player tries again. Nothing is asked of the engine but the moves themselves (`Act`): the table, the options, what a
拖拉机 follow owes, the turn's deadline and the fair deal's request for random bytes all come with the turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import Any

import grpc

from paiju.sdk.fairness import ContributionAltered, Pledges
from paiju.terminal.client import render
from paiju.terminal.client.console import Console
from paiju.terminal.client.engine import EngineClient, GameFeed, Refused, Snapshot, Turn
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
    """One client's game: its engine calls, the narrated Watch stream and its turns, and the console."""

    def __init__(self, engine: EngineClient, console: Console, seats: render.Seats, *, delay_moves: int = 0) -> None:
        """``delay_moves``: how many moves behind the game this client's Watch stream is (a spectator of a delayed
        table, docs/rules/spectators.md, D-SPEC-2; 0: live)."""
        self.engine = engine
        self.console = console
        self.seats = seats
        self.delay_moves = delay_moves
        self._presentation: Presentation | None = None
        self.feed = GameFeed(engine, self._receive, self._turned, console.line)
        self._narration: Narration | None = None
        self._backlog: list[engine_pb2.Envelope] = []
        """The envelopes received before the first turn (the game's history: narrated once the game is known)."""
        self._feed_task: asyncio.Task[None] | None = None
        self._waiting_for: object = None
        self._contributing: set[asyncio.Task[bool]] = set()
        self._contributed: set[int] = set()
        """The committed shuffles this seat added its random bytes to."""
        self._pledged: set[tuple[str, int]] = set()
        """The fair-dealing steps (commit or reveal, shuffle) this seat took (protocol version 2)."""
        self.pledges = Pledges()
        """This seat's commitments and reveals, checked against every event received (`paiju.sdk.fairness`)."""
        self._last_event: tuple[float, float] | None = None
        """When the game's last event was recorded (its envelope's time) and when it arrived here."""
        self._deadline: float | None = None
        """When the latest turn runs out, in this machine's time (`render.turn_deadline`)."""

    # --- the feed ---------------------------------------------------------------------------------------

    async def start(self) -> Turn:
        """Follow the game's Watch stream from the start: what happened before now is shown as a short recap once
        the first turn says which game it is and where it stands, then every event as it comes. The first turn."""
        self._feed_task = asyncio.create_task(self.feed.run(0))
        turn = await self.feed.turn_at(0)
        if turn is None:
            code = self.feed.failure_code or grpc.StatusCode.UNAVAILABLE
            raise Refused(code, self.feed.failure or "The game's stream ended before it said anything.")
        return turn

    async def stop(self) -> None:
        for task in list(self._contributing):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._feed_task is not None:
            self._feed_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._feed_task

    def _contribute(self, turn: Turn) -> None:
        """The player's seat adds its random bytes to the committed shuffle its turn says waits for them, once per
        shuffle, in the background (docs/fairness.md); by protocol version 2 it commits to them, then reveals them."""
        seat = turn.snap.view.seat
        if turn.pledge is not None and seat is not None and turn.pledge[:2] not in self._pledged:
            self._pledged.add(turn.pledge[:2])
            pledging = asyncio.get_running_loop().create_task(self.engine.pledge(self.pledges, seat, turn.pledge))
            self._contributing.add(pledging)
            pledging.add_done_callback(self._contributing.discard)
        shuffle = turn.contribution
        if shuffle is None or seat is None or shuffle in self._contributed:
            return
        self._contributed.add(shuffle)
        task = asyncio.get_running_loop().create_task(self.engine.contribute(seat))
        self._contributing.add(task)
        task.add_done_callback(self._contributing.discard)

    def _receive(self, envelope: engine_pb2.Envelope) -> None:
        now = time.time()
        at = envelope.recorded_at
        self._last_event = (at.seconds + at.nanos / 1e9 if at.seconds else now, now)
        if self._narration is None:  # the history, told once the first turn says the game
            self._backlog.append(envelope)
            return
        event = self._narration.game.event(envelope)
        if event is not None:
            try:
                self.pledges.check(self.engine.game_id, event)
            except ContributionAltered as e:
                self.console.line(f"Fair dealing: {e} (docs/fairness.md).")
        if self.seats.me is not None and timed_out_seat(event) == self.seats.me:
            self.console.end_prompt()  # the engine moved for the player: the question is no longer asked
        self.console.lines(self._narration.lines(envelope))

    def _turned(self, turn: Turn) -> None:
        if self._narration is None:
            self._begin(turn)
        if self.delay_moves:  # a delayed turn's deadline passed before it was sent: nothing runs out here
            self._deadline = None
        else:
            recorded, received = self._last_event if self._last_event is not None else (None, time.time())
            self._deadline = render.turn_deadline(turn.deadline, recorded, received)
        self._contribute(turn)

    def _begin(self, turn: Turn) -> None:
        """The first turn: the game and the caller's seat are known; the history received so far is told, its
        latest lines."""
        self._presentation = PRESENTATIONS[turn.snap.game]
        self.seats.me = turn.snap.view.seat
        narration = self._narration = self._presentation.narration(self.seats)
        history: deque[str] = deque(maxlen=HISTORY_LINES)
        for envelope in self._backlog:
            history.extend(narration.lines(envelope))
        self._backlog.clear()
        if history:
            self.console.line("What happened so far (the latest events):")
            self.console.lines(list(history))

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

    def time_left(self) -> float | None:
        """Seconds left before the running turn runs out (the latest turn's deadline; ``None``: nothing runs out)."""
        return None if self._deadline is None else self._deadline - time.time()

    async def _count_down(self, snap: Snapshot) -> None:
        """While the prompt waits, tell the player as the turn timer runs low (the prompt shows the time left each
        time it is shown)."""
        seconds = int(getattr(snap.view.options, "turn_seconds", 0) or 0)
        told: set[int] = set()
        while True:
            await asyncio.sleep(TICK)
            left = self.time_left()
            if left is None or not self.console.prompting:
                continue
            warning = render.countdown_warning(left, seconds, told)
            if warning is not None:
                self.console.line(warning)

    # --- waiting ----------------------------------------------------------------------------------------

    async def _line_or_move(self, version: int) -> str:
        """``line`` when the player typed a line, ``moved`` when a turn after ``version`` came, ``finished`` when
        the Watch stream ended."""
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
        return "moved" if self.feed.turn_version > version else "finished"

    def _latest(self) -> Snapshot:
        """The table as the latest turn shows it."""
        assert self.feed.turn is not None, "start the session first"
        return self.feed.turn.snap

    def _client_command(self, line: str | None) -> bool:
        """Handle a line typed while not asked to act; False when the player quits."""
        if line is None:
            return False
        command = render.client_command(line)
        if command is not None and command.name == "quit":
            return False
        if command is not None and command.name == "help":
            self.show_help()
        elif command is not None and command.name == "table":
            self.console.lines(self.table_lines(self._latest()))
        elif command is not None and command.name == "more":
            self.console.line(f"You have no options now. {self.waiting_text(self._latest())}")
        elif command is None:
            self.console.line(f"It is not your move. {self.waiting_text(self._latest())}")
        return True

    # --- playing ----------------------------------------------------------------------------------------

    async def play(self) -> int:
        """Play the seat until the match ends (0) or the player quits (0); 1 when the engine is lost."""
        turn: Turn | None = await self.start()
        while True:
            if turn is None:  # the stream ended before the game's end
                self.console.line(self.feed.failure or "The engine closed the game's stream.")
                return 1
            if turn.snap.ended:
                await self.feed.wait_beyond(turn.version, timeout=2)  # the stream closes after the last event
                self.console.line("The match is over. Thanks for playing!")
                return 0
            if not turn.legal.actions:
                if await self._wait_for_others(turn) == QUIT:
                    return 0
                turn = self.feed.turn if self.feed.turn_version > turn.version else None
                continue
            self._waiting_for = None
            result = await self._take_turn(turn)
            if result == QUIT:
                return 0
            turn = await self.feed.turn_at(result)

    async def _wait_for_others(self, turn: Turn) -> int:
        """Until a newer turn comes (its version) or the player quits (`QUIT`)."""
        key = turn.snap.view.phase  # once after the player's move, and when the phase changes
        if key != self._waiting_for:
            self._waiting_for = key
            self.console.line(self.waiting_text(turn.snap))
        while True:
            got = await self._line_or_move(turn.version)
            if got != "line":
                return self.feed.turn_version
            if not self._client_command(self.console.take()):
                return QUIT

    async def _take_turn(self, turn: Turn) -> int:
        """Ask for a move until one is accepted; the version of the next turn to play from (or `QUIT`). With a turn
        timer, the prompt shows the time left and the player is told as it runs low."""
        options = self.options(turn.snap, turn.legal.actions)
        self.show_turn(turn.snap, options, turn.legal.follow)
        ticking = asyncio.ensure_future(self._count_down(turn.snap)) if self.time_left() is not None else None
        try:
            return await self._ask(turn, options)
        finally:
            if ticking is not None:
                ticking.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticking

    async def _ask(self, turn: Turn, options: list[render.Option]) -> int:
        snap = turn.snap
        actions, follow = turn.legal.actions, turn.legal.follow
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
            return render.countdown(self.time_left())

        while True:
            if not self.console.prompting:
                self.console.prompt(render.PROMPT, again=render.PROMPT_AGAIN, status=status)
            got = await self._line_or_move(seen)
            if got == "finished":
                return seen + 1
            if got == "moved":
                # others moved (concealed bids, a turn timer): ask again only if the choice changed
                latest = self.feed.turn
                assert latest is not None
                seen = latest.version
                if render.same_options(self.options(snap, latest.legal.actions), options) and latest.legal.actions:
                    snap = latest.snap
                    expected = None if concealed else seen
                    continue
                self.console.end_prompt()
                return seen
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
                    return seen + 1  # the game moved past the turn: the next one comes on the stream
                if e.code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.NOT_FOUND):
                    raise

    # --- watching ---------------------------------------------------------------------------------------

    async def watch(self) -> int:
        """Narrate the game until the match ends (0) or the spectator quits (0); 1 when the engine is lost."""
        turn = await self.start()
        self.console.lines(["", *self.table_lines(turn.snap), ""])
        if turn.snap.view.seat is not None:
            self.console.line(f"(You hold {self.seats.label(turn.snap.view.seat)}: this is that seat's view.)")
        if self.delay_moves:
            self.console.line(render.delayed_words(self.delay_moves))
        self.console.line("Watching; type t for the table, q to stop.")
        while True:
            got = await self._line_or_move(self.feed.turn_version)
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
                self.console.lines(self.table_lines(self._latest()))
            elif command is not None and command.name == "help":
                self.console.line("t shows the table, q stops watching.")
