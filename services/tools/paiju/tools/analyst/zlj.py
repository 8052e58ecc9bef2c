"""砸六家 in the analyst tools (its entry in `paiju.tools.analyst.games`): the hands its deals deal, its deal rows'
result columns (§7-§8), its seats' actions as play rows, and its events told in a replay (a round, §4, is a deal's
stage)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from paiju.rules.cards import Card, format_cards
from paiju.rules.zlj import model as zm
from paiju.rules.zlj.combos import order
from paiju.rules.zlj.outcome import match_totals
from paiju.terminal.client.narrate import Narration
from paiju.tools.analyst.timeline import Action, Moment, visible

STAGE = "Round"
TRIBUTE = {
    zm.TributeGiven: "tribute",
    zm.TributePicked: "pick",
    zm.TributeReturned: "return",
    zm.ReturnTakenBack: "take_back",
}


def card_order(state: zm.State) -> Callable[[Card], int]:
    """Cards in 砸六家 order (§2), at any state."""
    return order


def dealt(event: Any) -> Sequence[Sequence[Card]] | None:
    """The hands an event deals (``None``: it deals none)."""
    return event.hands if isinstance(event, zm.HandsDealt) else None


def deal_row(row: dict[str, Any], event: Any) -> None:
    """A deal row's leader and result (finishing order, caught seats, outcome, team and individual points)."""
    if isinstance(event, zm.PlayStarted):
        row["leader"] = event.leader
    elif isinstance(event, zm.DealEnded):
        result = event.result
        row.update(
            order=" ".join(str(s) for s in result.order),
            caught=" ".join(str(s) for s in result.caught),
            outcome=result.outcome.value,
            head_team=result.head_team.value,
            winners=result.winners.value if result.winners is not None else "",
            team_points_a=result.team_points[0],
            team_points_b=result.team_points[1],
        )
        for seat, points in enumerate(result.individual):
            row[f"individual_{seat}"] = points


def action(moment: Moment) -> Action | None:
    """The seat's action of a moment: cut, resist, tribute, pick, return, take_back, play, four_take, pass, timeout."""
    e = moment.shown
    if isinstance(e, zm.HandsDealt):
        return None if e.cutter is None else visible(e.cutter, "cut", (), f"cut {e.cut}")
    if isinstance(e, zm.TributeResisted):
        return visible(e.seat, "resist", e.cards)
    if isinstance(e, zm.TributeGiven | zm.TributePicked | zm.TributeReturned | zm.ReturnTakenBack):
        return (e.seat, TRIBUTE[type(e)], e.cards, e.count, e.cards is None, "")
    if isinstance(e, zm.CardsPlayed):
        return visible(e.seat, "play", e.cards, e.combo.describe())
    if isinstance(e, zm.FourTake):
        taken = format_cards(e.taken, order)
        return visible(e.seat, "four_take", e.fours, f"takes {taken} from seat {e.taken_from}")
    if isinstance(e, zm.Passed):
        return visible(e.seat, "pass", ())
    if isinstance(e, zm.TurnTimedOut):
        return visible(e.seat, "timeout", ())
    return None


def tell(narration: Narration, moment: Moment) -> list[str]:
    """An event told by the terminal's narration, and the score after each deal."""
    told = narration.narrate(moment.shown)
    if isinstance(moment.shown, zm.DealEnded):
        told.append(_score(moment.state))
    return told


def _score(state: zm.State) -> str:
    (a, b), individual = match_totals(state.results)
    scores = " ".join(f"{s}:{p:+d}" for s, p in enumerate(individual))
    return f"Score after deal {state.results[-1].deal}: team points A {a}, B {b}; individual {scores}"
