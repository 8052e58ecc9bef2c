"""Plain-language lines for 砸六家 events, for people watching a table or reading a replay."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from paiju.rules.cards import Cards, format_cards
from paiju.rules.zlj.combos import LEVEL_NAMES, Combo, Kind, order
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
JOKER_WORDS = {"SJ": "the small joker", "BJ": "the big joker"}
NO_TEAM_POINTS = {
    "DRAW": "a draw scores no team points (D-ZLJ-6)",
    "REVERSE": "the winners of a 反逮 score no team points for it (D-ZLJ-6); it decides the next deal's tribute (§10)",
}
"""Why a deal's winners, or nobody, scored no team points, in the words of the rules (§8)."""


def seat_name(seat: int) -> str:
    return f"seat {seat} ({team_of(seat).value})"


def seat_list(seats: Iterable[int], last: str = "and") -> str:
    """``seat 1 (B), seat 3 (B) and seat 5 (B)``: seats in words (the terminal client labels each with its
    player); ``nobody`` for none."""
    names = [seat_name(s) for s in seats]
    return listed(names, last) if names else "nobody"


def listed(words: Sequence[str], last: str = "and") -> str:
    """``a, b and c``: words in a list as a sentence says them."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {last} {words[-1]}"


def combo_words(combo: Combo) -> str:
    """A combination in words: ``a pair of 7``, ``a 5-card straight to 9``; a single joker by its name."""
    if combo.kind is Kind.SINGLE and LEVEL_NAMES[combo.top] in JOKER_WORDS:
        return JOKER_WORDS[LEVEL_NAMES[combo.top]]
    return combo.describe()


def team_points_why(outcome: str) -> str:
    """Why nobody scored team points in a deal with this outcome (``""`` when its winners scored)."""
    why = NO_TEAM_POINTS.get(outcome)
    return f": {why}" if why else ""


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
        rounds = "; ".join(", ".join(f"{seat_name(s)} {THROW_NAMES[t]}" for s, t in r) for r in event.rounds)
        return [f"Rock-paper-scissors for {event.purpose}: {rounds}; order: {seat_list(event.order, 'then')}"]
    if isinstance(event, TributeResisted):
        return [f"{seat_name(event.seat)} shows {cards(event.cards)}: tribute resisted (抗贡)"]
    if isinstance(event, TributeGiven):
        return [f"{seat_name(event.seat)} gives tribute {cards(event.cards, event.count)}"]
    if isinstance(event, TributeOrdered):
        picks = ", ".join(f"{seat_name(s)} picks {n}" for s, n in event.winners)
        return [f"Tribute: {picks}; they take back in the order {seat_list((s for s, _ in event.losers), 'then')}"]
    if isinstance(event, TributePicked):
        return [f"{seat_name(event.seat)} picks {cards(event.cards, event.count)}"]
    if isinstance(event, TributeReturned):
        return [f"{seat_name(event.seat)} returns {cards(event.cards, event.count)}"]
    if isinstance(event, ReturnTakenBack):
        return [f"{seat_name(event.seat)} takes back {cards(event.cards, event.count)}"]
    if isinstance(event, PlayStarted):
        return [f"{seat_name(event.leader)} leads: {event.reason}"]
    if isinstance(event, CardsPlayed):
        return [f"  {seat_name(event.seat)}: {cards(event.cards)}   ({combo_words(event.combo)})"]
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
        winners = f"team {r.winners.value} wins" if r.winners else "no winner"
        return [
            f"Deal {r.deal} over: {OUTCOME_WORDS[r.outcome.value]} ({winners}); finishing order "
            f"{seat_list(r.order, 'then')}; caught {seat_list(r.caught)}",
            f"  team points A {r.team_points[0]:+d}, B {r.team_points[1]:+d}{team_points_why(r.outcome.value)}; "
            "individual points " + ", ".join(f"{seat_name(s)} {p:+d}" for s, p in enumerate(r.individual)),
        ]
    if isinstance(event, MatchEnded):
        lines = [
            f"Match over, {match_winner_words(event.team_points)}. Team points: A {event.team_points[0]}, B "
            f"{event.team_points[1]}"
        ]
        for s in range(len(event.individual)):
            lines.append(
                f"  {seat_name(s)}: individual {event.individual[s]:+d}, "
                f"match score {match_score(s, event.team_points, event.individual):+d}"
            )
        return lines
    if isinstance(event, TurnTimedOut):
        return [f"  {seat_name(event.seat)}'s turn timer ran out: the engine plays for it"]
    return []


def match_winner_words(team_points: tuple[int, ...] | list[int]) -> str:
    """Who won a 砸六家 match and by how much: the team with more team points (§8), or a draw."""
    a, b = team_points[0], team_points[1]
    if a == b:
        return "a draw"
    winner, margin = ("A", a - b) if a > b else ("B", b - a)
    return f"team {winner} wins by {margin} team point{'' if margin == 1 else 's'}"
