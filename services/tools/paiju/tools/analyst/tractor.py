"""拖拉机 in the analyst tools (its entry in `paiju.tools.analyst.games`): the hands its deals deal, its deal rows'
columns (redeals, dealer, trump, level, attackers' points, the result and the levels after: §8-§9), its seats'
actions as play rows, and its events told in a replay (a trick is a deal's stage)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from paiju.rules.cards import Card
from paiju.rules.tractor import model as tm
from paiju.rules.tractor.settlement import level_name
from paiju.rules.tractor.view import view as spectator_view
from paiju.terminal.client.narrate import Narration
from paiju.terminal.client.render import SUIT_WORDS, tractor_cards, tractor_order, wrapped
from paiju.tools.analyst.timeline import Action, Moment, visible

STAGE = "Trick"
DEAL_COLUMNS = {"redeals": 0}
"""The game's own deal columns, as a deal's row starts."""


def card_order(state: tm.State) -> Callable[[Card], int]:
    """The deal's order once its trump is declared; before that plain suits, then the cards trump in every deal."""
    return tractor_order(spectator_view(state, None))


def dealt(event: Any) -> Sequence[Sequence[Card]] | None:
    """The hands an event deals (``None``: it deals none; a redealt deal's last dealing stands)."""
    return event.hands if isinstance(event, tm.HandsDealt) else None


def deal_row(row: dict[str, Any], event: Any) -> None:
    """A deal row's redeals, dealer, leader, trump, level and result."""
    if isinstance(event, tm.DealVoided):
        row["redeals"] += 1
    elif isinstance(event, tm.TrumpDeclared):
        row.update(dealer=event.dealer, leader=event.dealer, trump=event.trump.letter, level=level_name(event.level))
    elif isinstance(event, tm.DealSettled):
        row.update(
            attackers_points=event.attackers_points,
            winner=event.winner,
            levels_up=event.levels_up,
            level_a=level_name(event.levels[0]),
            level_b=level_name(event.levels[1]),
        )


def action(moment: Moment) -> Action | None:
    """The seat's action of a moment: flip, cut, bid, counter, pass, bid_or_pass / counter_or_pass (concealed),
    play, timeout, and the referee's penalty, labour_reform, then reform_choice."""
    e = moment.shown
    if isinstance(e, tm.CardFlipped):
        return visible(e.flipper, "flip", (e.card,), f"seat {e.first_drawer} draws first")
    if isinstance(e, tm.HandsDealt):
        return None if e.cut is None else visible(e.first_drawer, "cut", (), f"cut {e.cut}")
    if isinstance(e, tm.BidEntered):
        return _bid(e, "counter" if moment.state.phase is tm.Phase.COUNTER else "bid")
    if isinstance(e, tm.CardsPlayed):
        trick = moment.state.trick
        lead = f"leads {trick.lead.describe()}" if trick is not None and len(trick.plays) == 1 else ""
        return visible(e.seat, "play", e.cards, lead)
    if isinstance(e, tm.TurnTimedOut):
        return visible(e.seat, "timeout", ())
    if isinstance(e, tm.PenaltyRecorded):
        return visible(e.offender, "penalty", (), f"referee {e.referee}: {e.points:+d} to the attackers")
    if isinstance(e, tm.LabourReformDeclared):
        return visible(e.offender, "labour_reform", (), f"referee {e.referee}")
    if isinstance(e, tm.LabourReformChosen):
        return visible(e.seat, "reform_choice", (), e.choice.value)
    return None


def _bid(e: tm.BidEntered, stage: str) -> Action:
    timer = "turn timer" if e.timed_out else ""
    if e.concealed:
        return (e.seat, f"{stage}_or_pass", None, 0, True, timer)
    if e.bid is None:
        return visible(e.seat, "pass", (), ", ".join(w for w in (stage, timer) if w))
    detail = f"{SUIT_WORDS[e.bid.suit]}, {e.bid.count} level card{'s' if e.bid.count != 1 else ''}"
    return visible(e.seat, stage, e.bid.cards, detail)


def tell(narration: Narration, moment: Moment) -> list[str]:
    """An event told by the terminal's narration; a deal's hands (an ended game's) each on its own lines."""
    shown = moment.shown
    if not isinstance(shown, tm.HandsDealt):
        return narration.narrate(shown)
    # told without the hands (the narration speaks to one seat), then every hand of an ended game
    told = narration.narrate(replace(shown, hands=((),) * len(shown.hands)))
    view = spectator_view(moment.state, None)
    for seat, hand in enumerate(shown.hands):
        if hand:
            told += wrapped(f"  {narration.seats.label(seat)} ({len(hand)}): ", tractor_cards(view, hand))
    return told
