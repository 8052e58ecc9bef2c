"""Plain-language lines for 砸六家 events, for people watching a table or reading a replay."""

from __future__ import annotations

from paiju.rules.cards import Cards, format_cards
from paiju.rules.zlj.combos import order
from paiju.rules.zlj.dealing import THROW_NAMES
from paiju.rules.zlj.model import (
    CardsPlayed,
    DealEnded,
    Event,
    FourTake,
    HandsDealt,
    MatchEnded,
    MatchStarted,
    Passed,
    PlayStarted,
    ReturnTakenBack,
    RockPaperScissors,
    RoundWon,
    TributeGiven,
    TributeOrdered,
    TributePicked,
    TributeResisted,
    TributeReturned,
    TurnTimedOut,
    WentOut,
    team_of,
)
from paiju.rules.zlj.outcome import match_score

PLACE_NAMES = {1: "1st out, 大贡", 2: "2nd out, 二贡", 3: "3rd out, 三贡", 4: "4th out", 5: "5th out"}
OUTCOME_WORDS = {
    "CATCH3": "逮三家 catch three",
    "CATCH2": "逮两家 catch two",
    "CATCH1": "逮一家 catch one",
    "DRAW": "平贡 draw",
    "REVERSE": "反逮 reverse catch",
}


def seat_name(seat: int) -> str:
    return f"seat {seat} ({team_of(seat).value})"


def cards(cs: Cards | None, count: int = 0) -> str:
    if cs is None:
        return f"{count} hidden card{'s' if count != 1 else ''}"
    return format_cards(cs, order) if cs else "nothing"


def narrate(event: Event) -> list[str]:
    """Lines describing one event (possibly none)."""
    if isinstance(event, MatchStarted):
        o = event.options
        deals = f"{o.deals} deals" if o.deals else "open-ended"
        return [f"Match starts: {deals}, reverse tribute {o.reverse_tribute.value}, resistance {o.resist.value}"]
    if isinstance(event, HandsDealt):
        moved = f"{event.cut} card{'s' if event.cut != 1 else ''}"
        how = f"{seat_name(event.cutter)} cut {moved}; " if event.cutter is not None else ""
        lines = [f"Deal {event.deal}: {how}dealing starts at {seat_name(event.first_drawer)}"]
        for s, hand in enumerate(event.hands):
            if hand:
                lines.append(f"  {seat_name(s)}: {cards(hand)}")
        return lines
    if isinstance(event, RockPaperScissors):
        rounds = "; ".join(", ".join(f"{s}:{THROW_NAMES[t]}" for s, t in r) for r in event.rounds)
        return [f"Rock-paper-scissors for {event.purpose}: {rounds} -> order {list(event.order)}"]
    if isinstance(event, TributeResisted):
        return [f"{seat_name(event.seat)} shows {cards(event.cards)}: tribute resisted (抗贡)"]
    if isinstance(event, TributeGiven):
        return [f"{seat_name(event.seat)} gives tribute {cards(event.cards, event.count)}"]
    if isinstance(event, TributeOrdered):
        picks = ", ".join(f"{s} picks {n}" for s, n in event.winners)
        return [f"Tribute: {picks}; take-back order {[s for s, _ in event.losers]}"]
    if isinstance(event, TributePicked):
        return [f"{seat_name(event.seat)} picks {cards(event.cards, event.count)}"]
    if isinstance(event, TributeReturned):
        return [f"{seat_name(event.seat)} returns {cards(event.cards, event.count)}"]
    if isinstance(event, ReturnTakenBack):
        return [f"{seat_name(event.seat)} takes back {cards(event.cards, event.count)}"]
    if isinstance(event, PlayStarted):
        return [f"{seat_name(event.leader)} leads: {event.reason}"]
    if isinstance(event, CardsPlayed):
        return [f"  {seat_name(event.seat)}: {cards(event.cards)}   ({event.combo.describe()})"]
    if isinstance(event, FourTake):
        return [
            f"  {seat_name(event.seat)}: {cards(event.fours)}   FOUR-TAKE 4取炸弹: takes {cards(event.taken)} "
            f"from {seat_name(event.taken_from)}"
        ]
    if isinstance(event, Passed):
        return [f"  {seat_name(event.seat)}: pass"]
    if isinstance(event, WentOut):
        return [f"  ** {seat_name(event.seat)} goes out: {PLACE_NAMES.get(event.place, str(event.place))}"]
    if isinstance(event, RoundWon):
        if event.leader == event.winner:
            return [f"  -- round to {seat_name(event.winner)}"]
        return [f"  -- round to {seat_name(event.winner)}, who is out: 接风 to {seat_name(event.leader)}"]
    if isinstance(event, DealEnded):
        r = event.result
        caught = ", ".join(str(s) for s in r.caught)
        winners = f"team {r.winners.value} wins" if r.winners else "no winner"
        return [
            f"Deal {r.deal} over: {OUTCOME_WORDS[r.outcome.value]} ({winners}); order {list(r.order)}, caught {caught}",
            f"  team points A {r.team_points[0]:+d}, B {r.team_points[1]:+d}; individual "
            + " ".join(f"{s}:{p:+d}" for s, p in enumerate(r.individual)),
        ]
    if isinstance(event, MatchEnded):
        lines = [f"Match over. Team points: A {event.team_points[0]}, B {event.team_points[1]}"]
        for s in range(len(event.individual)):
            lines.append(
                f"  {seat_name(s)}: individual {event.individual[s]:+d}, "
                f"match score {match_score(s, event.team_points, event.individual):+d}"
            )
        return lines
    if isinstance(event, TurnTimedOut):
        return [f"  {seat_name(event.seat)}'s turn timer ran out: the engine plays for it"]
    return []
