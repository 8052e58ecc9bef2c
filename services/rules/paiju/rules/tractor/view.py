"""What one seat (or a spectator) may see of a 拖拉机 table: ``view`` and ``redact`` (rules §12).

A seat sees its own hand, hand sizes, every play, the flipped card and, after the reveal, the winning bid
or counter. Until the reveal no one learns whether another seat bid or passed — only that it has acted
(D-TR-6.2); losing bids are never shown. The deal seed is never shown to a player.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from paiju.rules.cards import Card, Cards, Suit
from paiju.rules.fair import Shuffle
from paiju.rules.tractor.model import (
    Bid,
    BidEntered,
    BidsRevealed,
    CountersRevealed,
    DealSettled,
    Event,
    HandsDealt,
    Options,
    Phase,
    State,
    Trick,
)


@dataclass(frozen=True, slots=True)
class SeatView:
    seat: int | None
    options: Options
    phase: Phase
    deal: int
    levels: tuple[int, int]
    dealer: int | None
    turn: int | None
    hand: Cards
    hand_sizes: tuple[int, ...]
    flipped: Card | None
    trump: Suit | None
    acted: tuple[int, ...]
    """Seats that have bid or passed in the current concealed stage (not which of the two)."""
    my_bid: Bid | None
    bid: Bid | None
    counter: Bid | None
    trick: Trick | None
    tricks: tuple[Trick, ...]
    attackers_points: int
    settlement: DealSettled | None
    shuffle: Shuffle | None = None
    """The committed shuffle of a fair game (public: its commitment and the contributions so far)."""


def view(state: State, seat: int | None) -> SeatView:
    mine = next((b for s, b in state.bids if s == seat), None)
    return SeatView(
        seat=seat,
        options=state.options,
        phase=state.phase,
        deal=state.deal,
        levels=state.levels,
        dealer=state.dealer,
        turn=state.turn,
        hand=state.hands[seat] if seat is not None else (),
        hand_sizes=tuple(len(h) for h in state.hands),
        flipped=state.flipped,
        trump=state.trump,
        acted=tuple(s for s, _ in state.bids),
        my_bid=mine,
        bid=state.bid,
        counter=state.counter,
        trick=state.trick,
        tricks=state.tricks,
        attackers_points=state.attackers_points,
        settlement=state.settlement,
        shuffle=state.shuffle,
    )


def redact(event: Event, seat: int | None) -> Event:
    """The event as ``seat`` may receive it (``None``: a spectator)."""
    if isinstance(event, HandsDealt):
        return replace(event, hands=tuple(h if s == seat else () for s, h in enumerate(event.hands)), seed=None)
    if isinstance(event, BidEntered):
        return event if event.seat == seat else BidEntered(event.seat, None, concealed=True)
    if isinstance(event, BidsRevealed):
        return BidsRevealed(event.winner, tuple(b for b in event.bids if b.seat == seat or b == event.winner))
    if isinstance(event, CountersRevealed):
        return CountersRevealed(event.winner, tuple(b for b in event.bids if b.seat == seat or b == event.winner))
    return event
