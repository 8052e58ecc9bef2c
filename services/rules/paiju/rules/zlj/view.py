"""What one seat (or a spectator) may see of a 砸六家 table: ``view`` and ``redact`` (rules §14).

No client ever receives raw state or raw events. A seat sees its own hand, the size of every hand,
everything played, four-takes and shown jokers; tribute cards only on the side that receives them
(the winners see the tribute, the losers the returned cards) and the cards it gave itself. The deal
seed, which determines every hand, is never shown to a player.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from paiju.rules.cards import Cards
from paiju.rules.fair import Shuffle
from paiju.rules.zlj.combos import Combo
from paiju.rules.zlj.model import (
    SEATS,
    DealResult,
    Event,
    FourTakeRecord,
    HandsDealt,
    Options,
    Phase,
    ReturnTakenBack,
    State,
    Transfer,
    TributeGiven,
    TributePicked,
    TributeReturned,
)
from paiju.rules.zlj.outcome import match_totals


@dataclass(frozen=True, slots=True)
class SeatView:
    """The table as ``seat`` sees it (``seat`` is ``None`` for a spectator)."""

    seat: int | None
    options: Options
    phase: Phase
    deal: int
    turn: int | None
    hand: Cards
    hand_sizes: tuple[int, ...]
    current: Combo | None
    current_cards: Cards
    current_by: int | None
    passed: tuple[int, ...]
    out: tuple[int, ...]
    leader: int | None
    taken: tuple[FourTakeRecord, ...]
    shown_jokers: tuple[int, Cards] | None
    tribute_pool: Cards | None
    """The cards being picked from, to the side picking them; ``None`` to others."""
    tribute: tuple[Transfer, ...]
    returned: tuple[Transfer, ...]
    previous: DealResult | None
    results: tuple[DealResult, ...]
    team_points: tuple[int, int]
    individual: tuple[int, ...]
    shuffle: Shuffle | None = None
    """The committed shuffle of a fair game (public: its commitment and the contributions so far)."""


def _may_see(seat: int | None, owner: int, team_seats: tuple[int, ...]) -> bool:
    return seat is not None and (seat == owner or seat in team_seats)


def view(state: State, seat: int | None) -> SeatView:
    """The view of ``seat`` (``None``: a spectator, who sees public information only)."""
    tribute = state.tribute
    pool: Cards | None = None
    picks: tuple[Transfer, ...] = ()
    returns: tuple[Transfer, ...] = ()
    if tribute is not None and seat is not None:
        winners = tuple(s for s, _ in tribute.winners)
        losers = tuple(s for s in range(SEATS) if s not in winners)
        if (state.phase is Phase.PICK and seat in winners) or (state.phase is Phase.TAKE_BACK and seat in losers):
            pool = tribute.pool_cards()
        picks = tuple(t for t in tribute.picks if seat in winners or seat == t.giver)
        returns = tuple(t for t in tribute.returns if seat in losers or seat == t.giver)
    team_points, individual = match_totals(state.results)
    return SeatView(
        seat=seat,
        options=state.options,
        phase=state.phase,
        deal=state.deal,
        turn=state.turn,
        hand=state.hands[seat] if seat is not None else (),
        hand_sizes=tuple(len(h) for h in state.hands),
        current=state.current,
        current_cards=state.current_cards,
        current_by=state.current_by,
        passed=tuple(sorted(state.passed)),
        out=state.out,
        leader=state.leader,
        taken=state.taken,
        shown_jokers=state.shown_jokers,
        tribute_pool=pool,
        tribute=picks,
        returned=returns,
        previous=state.previous,
        results=state.results,
        team_points=team_points,
        individual=individual,
        shuffle=state.shuffle,
    )


def redact(event: Event, seat: int | None) -> Event:
    """The event as ``seat`` may receive it (``None``: a spectator)."""
    if isinstance(event, HandsDealt):
        hands = tuple(h if s == seat else () for s, h in enumerate(event.hands))
        return replace(event, hands=hands, seed=None, sizes=tuple(len(h) for h in event.hands))
    if isinstance(event, TributeGiven | TributePicked | TributeReturned | ReturnTakenBack):
        if _may_see(seat, event.seat, event.seen_by.seats):
            return event
        return replace(event, cards=None)
    return event


__all__ = ["SeatView", "redact", "view"]
