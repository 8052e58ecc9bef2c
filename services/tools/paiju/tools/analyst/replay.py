"""A game told for a person from its log: deal by deal, round by round (砸六家) or trick by trick (拖拉机).

The lines of each event come from the project's narrators (`paiju.terminal.zlj_narrator` for 砸六家, the
terminal client's `TractorNarration` for 拖拉机), with the seats labelled by their players; each event's
first line starts with its version, so that ``--at`` can be chosen from a replay. Every hand as dealt is
shown only for a game that has ended; of a live game only what a spectator may see is told (`GameLog.shown`).
Pure: the log in, lines out.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.view import view as tractor_view
from paiju.rules.zlj import model as zlj_model
from paiju.rules.zlj.outcome import match_totals
from paiju.rules.zlj.view import view as zlj_view
from paiju.terminal import zlj_narrator
from paiju.terminal.client.narrate import TractorNarration, relabel, seats_lines
from paiju.terminal.client.render import Seats, tractor_cards, tractor_table, wrapped, zlj_cards, zlj_table
from paiju.tools.analyst.log import GAME_NAMES, GameLog, recorded_at
from paiju.tools.analyst.timeline import Moment, starting_players, timeline
from paiju.v1 import engine_pb2

GUTTER = 7
"""Width of the version column."""
TIME_FORMAT = "%Y-%m-%d %H:%M:%S UTC"


def replay_lines(log: GameLog, at: int | None = None) -> list[str]:
    """The game told up to version ``at`` (the whole game by default), then, with ``at``, the table at that
    version. Raises `ValueError` for a version the game does not have."""
    if at is not None and not 1 <= at <= log.version:
        raise ValueError(f"game {log.game_id} has versions 1..{log.version}, not {at}")
    lines = _heading(log, at)
    teller = _Teller(log)
    last: Moment | None = None
    for moment in timeline(log.upto(at if at is not None else log.version)):
        lines += teller.lines(moment)
        last = moment
    if at is not None and last is not None:
        lines += ["", f"=== The table at version {at} ==="]
        lines += table_lines(log, last)
    return lines


def _heading(log: GameLog, at: int | None) -> list[str]:
    started = recorded_at(log.envelopes[0]).strftime(TIME_FORMAT)
    if log.ended:
        status = f"ended, {log.version} events; full information (every hand as dealt)"
    else:
        status = f"live, {log.version} events so far; public information only (as a spectator sees it)"
    seats = Seats(names={s: p for s, p in enumerate(starting_players(log)) if p})
    lines = [
        f"{GAME_NAMES[log.game]} ({log.game}) game {log.game_id}: {status}",
        f"Started {started}",
        "Players: " + ", ".join(seats.label(s) for s in range(log.seats)),
    ]
    if at is not None:
        lines.append(f"Replayed up to version {at}")
    return lines


class _Teller:
    """Tells one game's moments in order, keeping the players' names and the 拖拉机 narration's deal context."""

    def __init__(self, log: GameLog) -> None:
        self.log = log
        self.seats = Seats()
        self.tractor = TractorNarration(self.seats)

    def lines(self, moment: Moment) -> list[str]:
        self.seats.names = {s: p for s, p in enumerate(moment.players) if p}
        head: list[str] = []
        if moment.opens_deal:
            when = recorded_at(moment.envelope).strftime(TIME_FORMAT)
            head += ["", f"=== Deal {moment.deal} · {when} ==="]
        if moment.opens_stage:
            head.append(" " * GUTTER + f"{'Round' if self.log.game == 'zlj' else 'Trick'} {moment.stage}")
        told = self._event(moment)
        if not told:
            return head
        first, *rest = told
        return [*head, f"{moment.version:>{GUTTER - 2}}  {first}", *(" " * GUTTER + line for line in rest)]

    def _event(self, moment: Moment) -> list[str]:
        shown = moment.shown
        if shown is None:
            return self._seats(moment.envelope)
        if self.log.game == "zlj":
            told = [relabel(line, self.seats) for line in zlj_narrator.narrate(shown)]
            if isinstance(shown, zlj_model.DealEnded):
                told.append(_zlj_score(moment.state))
            return told
        if isinstance(shown, tractor_model.HandsDealt):
            # told without the hands (the narration speaks to one seat), then every hand of an ended game
            told = self.tractor.narrate(replace(shown, hands=((),) * len(shown.hands)))
            view = tractor_view(moment.state, None)
            for seat, hand in enumerate(shown.hands):
                if hand:
                    told += wrapped(f"  {self.seats.label(seat)} ({len(hand)}): ", tractor_cards(view, hand))
            return told
        return self.tractor.narrate(shown)

    def _seats(self, envelope: engine_pb2.Envelope) -> list[str]:
        if envelope.WhichOneof("payload") != "seats_assigned":
            return []
        change = envelope.seats_assigned
        return [line.strip() for line in seats_lines(change, self.seats)]  # nothing for the start (the heading)


def _zlj_score(state: zlj_model.State) -> str:
    (a, b), individual = match_totals(state.results)
    scores = " ".join(f"{s}:{p:+d}" for s, p in enumerate(individual))
    return f"Score after deal {state.results[-1].deal}: team points A {a}, B {b}; individual {scores}"


def table_lines(log: GameLog, moment: Moment) -> list[str]:
    """The table after ``moment`` as a spectator sees it, and every hand when the game has ended."""
    seats = Seats(names={s: p for s, p in enumerate(moment.players) if p})
    state: Any = moment.state
    if log.game == "zlj":
        lines = zlj_table(zlj_view(state, None), seats)
        hands = [(s, zlj_cards(h)) for s, h in enumerate(state.hands)]
    else:
        view = tractor_view(state, None)
        lines = tractor_table(view, seats)
        hands = [(s, tractor_cards(view, h)) for s, h in enumerate(state.hands)]
    if not log.ended:
        return [*lines, "(the game is live: its hands are not shown)"]
    lines.append("Hands:")
    for seat, cards in hands:
        lines += wrapped(f"  {seats.label(seat)} ({len(state.hands[seat])}): ", cards)
    return lines
