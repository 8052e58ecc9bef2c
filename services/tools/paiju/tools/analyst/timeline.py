"""A game's events placed in their deal and their round (砸六家) or trick (拖拉机), with who sat where and the
game's state after each: what both the replay and the export walk through.

Deals: a 砸六家 deal begins with its `HandsDealt` (the cut included) and closes with `DealEnded`; a 拖拉机 deal
begins with the first deal's flip (`CardFlipped`) or its `HandsDealt`, and closes with `DealSettled`. A void
拖拉机 deal is dealt again under the same number (D-TR-6.6), so it stays one deal. A turn timer running out
between deals (the cutter's) begins the next deal, whose cut the engine then makes. Events before the first
deal have deal 0.

Stages: a 砸六家 round (§4) opens with its first play or pass after `PlayStarted` or `RoundWon`; a 拖拉机
trick opens with its lead after `TrumpDeclared` or `TrickWon`. Events of a deal before its play have stage 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from paiju.engine.games import assigned
from paiju.rules.cards import Card
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.tools.analyst.log import GameLog
from paiju.v1 import engine_pb2

DEAL_STARTS = (zlj_model.HandsDealt, tractor_model.CardFlipped, tractor_model.HandsDealt)
DEAL_ENDS = (zlj_model.DealEnded, tractor_model.DealSettled)
STAGE_OPENERS = (zlj_model.PlayStarted, zlj_model.RoundWon, tractor_model.TrumpDeclared, tractor_model.TrickWon)
"""After these, the next play opens a new round or trick."""
TIMEOUTS = (zlj_model.TurnTimedOut, tractor_model.TurnTimedOut)
OPENERS = (
    zlj_model.CardsPlayed,
    zlj_model.FourTake,
    zlj_model.Passed,
    zlj_model.TurnTimedOut,
    tractor_model.CardsPlayed,
    tractor_model.TurnTimedOut,
)
"""The events that open a round or trick when one is due (a timed-out turn opens it with the engine's play)."""


@dataclass(frozen=True, slots=True)
class Moment:
    """One envelope in its place in the game."""

    envelope: engine_pb2.Envelope
    event: Any
    """The rules event as stored (``None`` for a seat assignment)."""
    shown: Any
    """The rules event as the analyst may see it (`GameLog.shown`)."""
    deal: int
    stage: int
    """The round (砸六家) or trick (拖拉机) of the deal, from 1; 0 before the deal's play."""
    players: tuple[str, ...]
    """The player in each seat after this envelope (``""`` for a seat nobody was assigned)."""
    state: Any
    """The game's full state after this envelope (show only what a spectator may see of a live game)."""
    opens_deal: bool
    opens_stage: bool
    closes_deal: bool

    @property
    def version(self) -> int:
        return int(self.envelope.version)


Action = tuple[int, str, Sequence[Card] | None, int, bool, str]
"""A seat's action at a moment: (seat, action, cards or ``None`` when hidden, number of cards, hidden, detail)."""


def visible(seat: int, action: str, cards: Sequence[Card], detail: str = "") -> Action:
    """An action whose cards are shown."""
    return (seat, action, cards, len(cards), False, detail)


def starting_players(log: GameLog) -> tuple[str, ...]:
    """Who sat where when the game was created: its seats are recorded by the creating command, after the
    first deal's events, and hold from the game's first event on."""
    players: tuple[str, ...] = ("",) * log.seats
    created = log.envelopes[0].command_id if log.envelopes else None
    for envelope in log.envelopes:
        if envelope.command_id != created:
            break
        if envelope.WhichOneof("payload") == "seats_assigned":
            players = assigned(players, envelope.seats_assigned, log.seats)
    return players


def timeline(log: GameLog) -> Iterator[Moment]:
    """Every envelope of ``log`` in order, placed in its deal and stage."""
    rules = log.rules
    state = rules.new_state()
    players = starting_players(log)
    deal = stage = 0
    deal_open = stage_due = False
    for envelope, event in zip(log.envelopes, log.events, strict=True):
        opens_deal = opens_stage = closes_deal = False
        if event is None:
            if envelope.WhichOneof("payload") == "seats_assigned":
                players = assigned(players, envelope.seats_assigned, log.seats)
        else:
            state = rules.evolve(state, event)
            if isinstance(event, TIMEOUTS) and not deal_open:
                deal, stage, deal_open, stage_due, opens_deal = deal + 1, 0, True, False, True
            elif isinstance(event, DEAL_STARTS):
                if isinstance(event, zlj_model.HandsDealt | tractor_model.HandsDealt):
                    number = event.deal
                else:  # the first deal's flip, or the flip of its redeal
                    number = deal if deal_open else deal + 1
                if not deal_open or number != deal:
                    deal, stage, deal_open, stage_due, opens_deal = number, 0, True, False, True
            elif isinstance(event, STAGE_OPENERS):
                stage_due = True
            elif isinstance(event, OPENERS) and stage_due:
                stage, stage_due, opens_stage = stage + 1, False, True
            if isinstance(event, DEAL_ENDS):
                deal_open, stage_due, closes_deal = False, False, True
        yield Moment(
            envelope, event, log.shown(event), deal, stage, players, state, opens_deal, opens_stage, closes_deal
        )
