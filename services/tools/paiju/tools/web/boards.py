"""A table as the web view draws it: a plain JSON-ready dictionary (a *board*) made from a rules core's
``SeatView`` for no seat (what a spectator may see) and, for an ended game only, every hand.

Pure: a view, the seats' names and what else is known go in, a dictionary comes out. Its words are the
terminal client's (`paiju.terminal.client.render`, `paiju.terminal.zlj_narrator`), so both clients say the same.
The page draws any board the same way (seats round the table, their card counts and notes, the cards in the
middle, a list of facts), so it never branches on the game's rules; cards travel in the card notation of
``docs/rules/README.md`` (``QS``, ``10D``, ``SJ``) and the page draws their suits.

Nothing hidden is put in a board by this module: a live board is made from the spectator's view the engine
answered (it carries no hand), and hands are added only by `with_hands`, which the replay of an ended game calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from paiju.rules.cards import Card, format_card
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.settlement import PAST_A, level_name
from paiju.rules.tractor.view import SeatView as TractorView
from paiju.rules.zlj import model as zlj_model
from paiju.rules.zlj.view import SeatView as ZljView
from paiju.terminal.client.render import (
    SUIT_WORDS,
    TRACTOR_BEFORE_DEAL,
    TRACTOR_PHASES,
    ZLJ_BEFORE_DEAL,
    ZLJ_PHASES,
    attackers_progress,
    level_count,
)
from paiju.terminal.zlj_narrator import OUTCOME_WORDS, PLACE_NAMES, match_winner_words

Board = dict[str, Any]
NOT_DEALT = "not dealt yet"
Names = Mapping[int, str]


def cards(hand: Sequence[Card]) -> list[str]:
    """Cards in the notation, in the order given."""
    return [format_card(c) for c in hand]


def name_of(names: Names, seat: int) -> str:
    return names.get(seat) or f"seat {seat}"


def zlj_board(view: ZljView, names: Names) -> Board:
    """A 砸六家 board: six seats (teams A 0·2·4 and B 1·3·5, §1), the play to beat, tribute, the match's points."""
    seats = []
    dealt = view.phase not in ZLJ_BEFORE_DEAL
    for s, size in enumerate(view.hand_sizes):
        notes = []
        if not dealt:  # the view still holds the finished deal's hands: they are not this deal's
            seats.append(_seat(s, names, zlj_model.team_of(s).value, 0, turn=view.turn, notes=[NOT_DEALT]))
            continue
        if s in view.out:
            notes.append(PLACE_NAMES.get(view.out.index(s) + 1, "out"))
        if s == view.current_by:
            notes.append("made the play to beat")
        if s in view.passed:
            notes.append("passed")
        seats.append(_seat(s, names, zlj_model.team_of(s).value, size, turn=view.turn, notes=notes))
    center: dict[str, Any] | None = None
    if view.phase is zlj_model.Phase.PLAY:
        if view.current is not None and view.current_by is not None:
            center = {
                "label": f"To beat: {view.current.describe()} by {name_of(names, view.current_by)}",
                "plays": [{"seat": view.current_by, "cards": cards(view.current_cards)}],
            }
        elif view.turn is not None:
            center = {"label": f"A new round: {name_of(names, view.turn)} leads", "plays": []}
    deals = f" of {view.options.deals}" if view.options.deals else ""
    facts: list[list[str]] = [
        ["Deal", f"{view.deal}{deals}"],
        ["Now", ZLJ_PHASES.get(view.phase, view.phase.value)],
        ["Team points", f"A {view.team_points[0]} · B {view.team_points[1]}"],
    ]
    for take in view.taken:
        facts.append(
            [
                "Four-take",
                f"{name_of(names, take.by)} took {' '.join(cards(take.cards))} from {name_of(names, take.taken_from)}",
            ]
        )
    if view.shown_jokers is not None:
        seat, jokers = view.shown_jokers
        facts.append(["Tribute resisted (抗贡)", f"{name_of(names, seat)} showed {' '.join(cards(jokers))}"])
    for t in view.tribute:
        facts.append(["Tribute", f"{name_of(names, t.receiver)} took {len(t.cards)} from {name_of(names, t.giver)}"])
    if view.phase is zlj_model.Phase.ENDED:  # who won the match, first: the last deal's winners may be the others
        facts.insert(0, ["Match over", match_winner_words(view.team_points)])
    doing = zlj_doing(view, deals)
    if view.previous is not None:
        p = view.previous
        won = f"team {p.winners.value} won" if p.winners is not None else "no team won"
        facts.append(
            [
                "Last deal",
                f"{OUTCOME_WORDS.get(p.outcome.value, p.outcome.value)}; {won}; "
                f"points A {p.team_points[0]:+d} · B {p.team_points[1]:+d}",
            ]
        )
    return _board(
        "zlj",
        "砸六家",
        doing=doing,
        dealt=dealt,
        ended=view.phase is zlj_model.Phase.ENDED,
        turn=view.turn,
        seats=seats,
        center=center,
        facts=facts,
    )


def tractor_board(view: TractorView, names: Names) -> Board:
    """A 拖拉机 board: four seats (teams A 0·2 and B 1·3), levels, dealer and trump, the trick, the attackers'
    points. A concealed bid is never on it: the spectator's view says only who has acted (D-TR-6.2)."""
    seats = []
    dealt = view.phase not in TRACTOR_BEFORE_DEAL
    for s, held in enumerate(view.hand_sizes):
        notes = [] if dealt else [NOT_DEALT]
        size = held if dealt else 0  # (the finished deal's hands are not this deal's)
        if s == view.dealer:
            notes.append("dealer")
        if view.phase in (tractor_model.Phase.BID, tractor_model.Phase.COUNTER) and s in view.acted:
            notes.append("has acted")
        seats.append(_seat(s, names, "A" if s % 2 == 0 else "B", size, turn=view.turn, notes=notes))
    center: dict[str, Any] | None = None
    if view.trick is not None:
        t = view.trick
        center = {
            "label": f"Trick {len(view.tricks) + 1}: {t.lead.describe()} led by {name_of(names, t.leader)}",
            "plays": [
                {"seat": (t.leader + i) % len(view.hand_sizes), "cards": cards(p)} for i, p in enumerate(t.plays)
            ],
        }
    elif view.phase is tractor_model.Phase.PLAY and view.turn is not None:
        center = {"label": f"Trick {len(view.tricks) + 1}: {name_of(names, view.turn)} leads", "plays": []}
    facts: list[list[str]] = [
        ["Deal", str(view.deal)],
        ["Now", TRACTOR_PHASES.get(view.phase, view.phase.value)],
        ["Levels", f"A {level_name(view.levels[0])} · B {level_name(view.levels[1])}"],
        ["Trump", SUIT_WORDS[view.trump] if view.trump is not None else "not declared yet"],
    ]
    if view.dealer is not None and view.phase is tractor_model.Phase.PLAY:
        attackers = "B" if view.dealer % 2 == 0 else "A"
        facts.append(
            [
                "Attackers",
                f"team {attackers}, {len(view.tricks)} tricks: {attackers_progress(view.attackers_points)}",
            ]
        )
    if view.settlement is not None and view.phase is not tractor_model.Phase.PLAY:
        st = view.settlement
        facts.append(
            ["Last deal", f"attackers took {st.attackers_points} points; {st.winner}: up {level_count(st.levels_up)}"]
        )
    if view.phase is tractor_model.Phase.ENDED:  # who won the game, first
        facts.insert(0, ["Match over", tractor_winner_words(view.levels)])
    return _board(
        "tractor",
        "拖拉机",
        doing=tractor_doing(view),
        dealt=dealt,
        ended=view.phase is tractor_model.Phase.ENDED,
        turn=view.turn,
        seats=seats,
        center=center,
        facts=facts,
    )


BOARDS: dict[type, Callable[[Any, Names], Board]] = {ZljView: zlj_board, TractorView: tractor_board}
"""The board of each game's view type."""


def zlj_doing(view: ZljView, deals: str = "") -> str:
    """What a 砸六家 table is doing, in a few words: dealing, tribute, playing deal N, or the match over and who won."""
    phase = view.phase
    if phase is zlj_model.Phase.ENDED:
        return f"Match over: {match_winner_words(view.team_points)} (A {view.team_points[0]} · B {view.team_points[1]})"
    if phase is zlj_model.Phase.NEW:
        return "Starting the match"
    if phase in ZLJ_BEFORE_DEAL:
        return f"Dealing deal {view.deal + 1 if phase is zlj_model.Phase.CUT else max(1, view.deal)}{deals}"
    if phase in (zlj_model.Phase.PICK, zlj_model.Phase.RETURN, zlj_model.Phase.TAKE_BACK):
        return f"Tribute before the play of deal {view.deal}{deals}"
    return f"Playing deal {view.deal}{deals}"


def tractor_winner_words(levels: Sequence[int]) -> str:
    """Who won a 拖拉机 game and by how much: the team at the higher level (past A wins the game, §2), and by how
    many levels; equal levels (a match of a set number of deals) are a draw."""
    a, b = levels[0], levels[1]
    if a == b:
        return f"the levels are equal ({level_name(a)})"
    winner, high, low = ("A", a, b) if a > b else ("B", b, a)
    return f"team {winner} wins by {level_count(high - low)} ({level_name(high)} against {level_name(low)})"


def tractor_doing(view: TractorView) -> str:
    """What a 拖拉机 table is doing, in a few words: dealing, bidding, playing deal N, or the game over and who won."""
    phase = view.phase
    deal = max(1, view.deal)
    if phase is tractor_model.Phase.ENDED:
        return f"Match over: {tractor_winner_words(view.levels)}"
    if phase is tractor_model.Phase.NEW:
        return "Starting the match"
    if phase is tractor_model.Phase.FLIP:
        return f"Nobody bid in deal {deal}: dealing a new deal"
    if phase in TRACTOR_BEFORE_DEAL:  # (cutting for the next deal: the view still counts the finished one)
        return f"Dealing deal {view.deal + 1 if phase is tractor_model.Phase.CUT else deal}"
    if phase in (tractor_model.Phase.BID, tractor_model.Phase.COUNTER):
        return f"Bidding for trump in deal {deal}"
    if phase is tractor_model.Phase.REFORM:
        return f"Deal {deal}: the non-offending team chooses (劳改)"
    return f"Playing deal {deal}"


def _zlj_result(team_points: Sequence[int], winner_team: int | None, levels: Sequence[int]) -> str:
    if len(team_points) != 2:
        return ""
    return f"{match_winner_words(tuple(team_points))} (A {team_points[0]} · B {team_points[1]})"


def _tractor_result(team_points: Sequence[int], winner_team: int | None, levels: Sequence[int]) -> str:
    if len(levels) != 2 or not all(0 <= level <= PAST_A for level in levels) or winner_team not in (None, 0, 1):
        return ""
    if winner_team is None:
        return f"the levels were equal (A {level_name(levels[0])} · B {level_name(levels[1])})"
    margin = abs(levels[0] - levels[1])
    return (
        f"team {'AB'[winner_team]} won by {level_count(margin)} "
        f"(levels A {level_name(levels[0])} · B {level_name(levels[1])})"
    )


RESULTS: dict[str, Callable[[Sequence[int], int | None, Sequence[int]], str]] = {
    "zlj": _zlj_result,
    "tractor": _tractor_result,
}
"""Each game's words for a finished match's result, as the lobby's tables list gives it (team points; the winning
team and the levels): who won and by how much."""


def result_words(game: str, team_points: Sequence[int], winner_team: int | None, levels: Sequence[int]) -> str:
    """Who won a table's last match and by how much (``""`` for a game or a result without the words)."""
    words = RESULTS.get(game)
    return words(team_points, winner_team, levels) if words is not None else ""


def board(view: Any, names: Names) -> Board:
    """The board of a spectator's view (a ``SeatView`` of either game, for no seat)."""
    if view.seat is not None:
        raise ValueError("a board is made from a spectator's view only")
    return BOARDS[type(view)](view, names)


def with_hands(found: Board, hands: Sequence[Sequence[Card]]) -> Board:
    """``found`` with every seat's hand (an ended game's replay only: its whole record is public); none before a
    deal is dealt (the state still holds the finished deal's)."""
    for seat, hand in zip(found["seats"], hands, strict=True):
        seat["hand"] = cards(hand) if found["dealt"] else []
    return found


def _seat(s: int, names: Names, team: str, size: int, *, turn: int | None, notes: list[str]) -> dict[str, Any]:
    return {"seat": s, "name": name_of(names, s), "team": team, "cards": size, "turn": s == turn, "notes": notes}


def _board(
    game: str,
    title: str,
    *,
    doing: str,
    dealt: bool,
    ended: bool,
    turn: int | None,
    seats: list[dict[str, Any]],
    center: dict[str, Any] | None,
    facts: list[list[str]],
) -> Board:
    return {
        "game": game,
        "title": title,
        "doing": doing,
        "ended": ended,
        "dealt": dealt,
        "turn": turn,
        "seats": seats,
        "center": center,
        "facts": facts,
    }
