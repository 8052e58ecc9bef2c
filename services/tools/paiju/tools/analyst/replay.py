"""A game told for a person from its log: deal by deal, round by round (砸六家) or trick by trick (拖拉机).

The lines of each event come from the terminal client's narration of the game (`paiju.terminal.zlj_narrator`
for 砸六家, `TractorNarration` for 拖拉机; each game's telling in `paiju.tools.analyst.games`), with the seats
labelled by their players; each event's
first line starts with its version, so that ``--at`` can be chosen from a replay. Every hand as dealt is
shown only for a game that has ended; of a live game only what a spectator may see is told (`GameLog.shown`).
Pure: the log in, lines out.
"""

from __future__ import annotations

from typing import Any

from paiju.terminal.client.narrate import seats_lines
from paiju.terminal.client.render import Seats, wrapped
from paiju.tools.analyst.games import GAMES
from paiju.tools.analyst.log import GameLog, recorded_at
from paiju.tools.analyst.people import Names, seat_names
from paiju.tools.analyst.timeline import Moment, starting_players, timeline
from paiju.v1 import engine_pb2

GUTTER = 7
"""Width of the version column."""
TIME_FORMAT = "%Y-%m-%d %H:%M:%S UTC"


def replay_lines(log: GameLog, at: int | None = None, names: Names | None = None) -> list[str]:
    """The game told up to version ``at`` (the whole game by default), then, with ``at``, the table at that
    version; seats are labelled by their players' ``names`` (the ids are listed once, in the heading). Raises
    `ValueError` for a version the game does not have."""
    if at is not None and not 1 <= at <= log.version:
        raise ValueError(f"game {log.game_id} has versions 1..{log.version}, not {at}")
    names = names or {}
    lines = _heading(log, at, names)
    teller = Teller(log, names)
    last: Moment | None = None
    for moment in timeline(log.upto(at if at is not None else log.version)):
        lines += teller.lines(moment)
        last = moment
    if at is not None and last is not None:
        lines += ["", f"=== The table at version {at} ==="]
        lines += table_lines(log, last, names)
    return lines


def _heading(log: GameLog, at: int | None, names: Names) -> list[str]:
    started = recorded_at(log.envelopes[0]).strftime(TIME_FORMAT)
    if log.ended:
        status = f"ended, {log.version} events; full information (every hand as dealt)"
    else:
        status = f"live, {log.version} events so far; public information only (as a spectator sees it)"
    players = starting_players(log)
    seats = Seats(names=seat_names(players, names))
    lines = [
        f"{log.title} ({log.game}) game {log.game_id}: {status}",
        f"Started {started}",
        "Players: " + ", ".join(seats.label(s) for s in range(log.seats)),
    ]
    if any(seats.names.get(s) != p for s, p in enumerate(players) if p):
        lines.append("Player ids: " + ", ".join(f"seat {s} {p}" for s, p in enumerate(players) if p))
    if at is not None:
        lines.append(f"Replayed up to version {at}")
    return lines


class Teller:
    """Tells one game's moments in order, keeping the players' names and the narration's context (拖拉机: the
    deal's trumps, the trick, the attackers' points)."""

    def __init__(self, log: GameLog, names: Names) -> None:
        self.log = log
        self.names = names
        self.game = GAMES[log.game]
        self.seats = Seats()
        self.narration = self.game.presentation.narration(self.seats)
        self.narration.whole_seeds = True  # seeds and commitments whole: what `paiju verify --details` checks

    def lines(self, moment: Moment) -> list[str]:
        self.seats.names = seat_names(moment.players, self.names)
        head: list[str] = []
        if moment.opens_deal:
            when = recorded_at(moment.envelope).strftime(TIME_FORMAT)
            head += ["", f"=== Deal {moment.deal} · {when} ==="]
        if moment.opens_stage:
            head.append(" " * GUTTER + f"{self.game.stage} {moment.stage}")
        told = self._event(moment)
        if not told:
            return head
        first, *rest = told
        return [*head, f"{moment.version:>{GUTTER - 2}}  {first}", *(" " * GUTTER + line for line in rest)]

    def _event(self, moment: Moment) -> list[str]:
        if moment.shown is None:
            return self._seats(moment.envelope)
        return self.game.tell(self.narration, moment)

    def _seats(self, envelope: engine_pb2.Envelope) -> list[str]:
        if envelope.WhichOneof("payload") != "seats_assigned":
            return []
        change = envelope.seats_assigned
        return [line.strip() for line in seats_lines(change, self.seats)]  # nothing for the start (the heading)


def table_lines(log: GameLog, moment: Moment, names: Names | None = None) -> list[str]:
    """The table after ``moment`` as a spectator sees it, and every hand when the game has ended."""
    seats = Seats(names=seat_names(moment.players, names or {}))
    state: Any = moment.state
    shown = GAMES[log.game].presentation
    view = log.rules.game.view(state, None)
    lines = shown.table(view, seats)
    hands = [(s, shown.cards(view, h)) for s, h in enumerate(state.hands)]
    if not log.ended:
        return [*lines, "(the game is live: its hands are not shown)"]
    lines.append("Hands:")
    for seat, cards in hands:
        lines += wrapped(f"  {seats.label(seat)} ({len(state.hands[seat])}): ", cards)
    return lines
