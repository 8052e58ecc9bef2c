"""拖拉机 levels, settling a deal, referee actions and match results (rules `tractor.md` §2, §9-§11).

Levels are indexes: 0 is "3", 11 is "A" and 12 (`PAST_A`) is past A, which wins the game (§2).
A deal settles (七 计分) from the attackers' final score: the attackers (抢庄方, the non-dealer team) take the
deal (上台) from 240 points, else the defenders (坐庄方, the dealer team) hold it (连庄) and go up 1-5 or more
levels (§9). D-TR-1 stops every gain at A; D-TR-7 counts the last trick (抠); D-TR-8 names the next dealer.
Referee actions (§11) are the points penalty (出错牌, ±10 a card) and 劳改 (labour reform). D-TR-9 ends a timed
round. (A match's victory points, §10, and a forfeit's, D-TR-11, are scoring's: `paiju.scoring.victory`.)

Everything here is pure: times come in as recorded integers, never from a clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from paiju.rules.cards import RANK_OF, Card, Rank
from paiju.rules.errors import RuleError
from paiju.rules.tractor.order import LEVEL_RANKS

SEATS = 4

# --- levels (§2) ------------------------------------------------------------------------------------------

ACE = 11
"""Level index of A, the last level played."""
PAST_A = 12
"""Level index past A: the team that reaches it wins the game (§2, D-TR-1)."""
START_LEVEL = 0
"""Both teams start at 3 (二 双方均从3打起)."""

LEVEL_NAMES = ("3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "past A")
"""``LEVEL_NAMES[i]`` names level index ``i``."""

_LEVEL_BY_NAME = {name.upper(): i for i, name in enumerate(LEVEL_NAMES)} | {"T": 7}


def level_name(level: int) -> str:
    """The name of a level index: ``"3"`` .. ``"10"``, ``"J"``, ``"Q"``, ``"K"``, ``"A"``, ``"past A"``."""
    _check_level(level, PAST_A)
    return LEVEL_NAMES[level]


def level_index(name: str) -> int:
    """The level index of a name (``"3"`` .. ``"A"``, ``"T"`` for 10, ``"past A"``; case-insensitive)."""
    found = _LEVEL_BY_NAME.get(name.strip().upper())
    if found is None:
        raise RuleError(f"'{name}' is not a level: write 3-10, J, Q, K, A or 'past A'", rule="§2")
    return found


def level_rank(level: int) -> Rank:
    """The rank played at a level index 0..11: the deal's level rank ``L`` (§2, §3)."""
    _check_level(level, ACE)
    return LEVEL_RANKS[level]


def _check_level(level: int, highest: int) -> None:
    if not 0 <= level <= highest:
        raise ValueError(f"a level index is 0..{highest}, not {level}")


# --- teams and sides (§1, §9) -------------------------------------------------------------------------------


class Team(StrEnum):
    """Seats 0, 2 are team A; seats 1, 3 team B: partners sit opposite (§1)."""

    A = "A"
    B = "B"

    @property
    def seats(self) -> tuple[int, int]:
        return (0, 2) if self is Team.A else (1, 3)

    @property
    def other(self) -> Team:
        return Team.B if self is Team.A else Team.A


def team_of(seat: int) -> Team:
    _check_seat(seat)
    return Team.A if seat % 2 == 0 else Team.B


def partner_of(seat: int) -> int:
    """The partner, sitting opposite (§1)."""
    _check_seat(seat)
    return (seat + 2) % SEATS


def next_seat(seat: int) -> int:
    """The next seat ``(s+1) % 4`` in play order (the source's counter-clockwise, §1)."""
    _check_seat(seat)
    return (seat + 1) % SEATS


def _check_seat(seat: int) -> None:
    if not 0 <= seat < SEATS:
        raise ValueError(f"a seat is 0..{SEATS - 1}, not {seat}")


class Side(StrEnum):
    """A team's part in one deal: the defenders (坐庄方) are the dealer's team, the attackers (抢庄方) the other."""

    ATTACKERS = "attackers"
    DEFENDERS = "defenders"


def side_of(seat: int, dealer: int) -> Side:
    """The side of ``seat`` in a deal dealt by ``dealer``."""
    return Side.DEFENDERS if team_of(seat) is team_of(dealer) else Side.ATTACKERS


def team_on_side(side: Side, dealer: int) -> Team:
    dealer_team = team_of(dealer)
    return dealer_team if side is Side.DEFENDERS else dealer_team.other


# --- points (§1, §9) ----------------------------------------------------------------------------------------

POINT_VALUES = {Rank.FIVE: 5, Rank.TEN: 10, Rank.KING: 10}
"""Card points: 5 is worth 5, 10 and K 10 each (§1); 600 in six decks."""

TAKE_DEAL = 240
"""The attackers take the deal (上台) from this score (七.1)."""
BAND = 60
"""Each 60 points above 240 is one more level for the attackers; each 60 below 0 one more for the defenders (七)."""


def card_points(cards: Iterable[Card]) -> int:
    """The points of some cards: 5 -> 5, 10 -> 10, K -> 10, everything else 0 (§1)."""
    return sum(POINT_VALUES.get(RANK_OF[c], 0) for c in cards)


def last_trick_score(points: int, cards_per_player: int, attackers_won: bool) -> int:
    """What the last trick (抠) adds to the attackers' score (D-TR-7, 七.3).

    ``points`` are the card points in the last trick, ``cards_per_player`` the number of cards each player
    put into it. Attackers who win it score ``points × cards_per_player`` instead of ``points``; when the
    defenders win it the attackers get nothing from it.
    """
    if points < 0 or cards_per_player < 1:
        raise ValueError(f"a last trick has points >= 0 and at least 1 card a player, not {points}, {cards_per_player}")
    return points * cards_per_player if attackers_won else 0


def levels_gained(attackers_score: int) -> tuple[Side, int]:
    """The side that wins a deal and the levels it goes up, from the attackers' final score (§9, 七.1-2).

    | score | result |
    |---|---|
    | ≥ 240 | attackers take the deal (上台), up ``floor((s − 240) / 60)`` (0 at 240-299) |
    | 180-239 | defenders +1 (连庄) |
    | 120-179 | defenders +2 |
    | 60-119 | defenders +3 |
    | 1-59 | defenders +4 |
    | 0 | defenders +5 (大光) |
    | < 0 | defenders +5 + ``floor(−s / 60)`` (每负60分 … 升一级) |

    These are the levels of the table; D-TR-1 (stop at A) is applied by `settle`.
    """
    s = attackers_score
    if s >= TAKE_DEAL:
        return Side.ATTACKERS, (s - TAKE_DEAL) // BAND
    if s > 0:
        # 180-239 -> 1, 120-179 -> 2, 60-119 -> 3, 1-59 -> 4
        return Side.DEFENDERS, 4 - s // BAND
    return Side.DEFENDERS, 5 + (-s) // BAND


# --- settling a deal (§9, D-TR-1, D-TR-8) -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Settlement:
    """The result of one deal.

    ``levels_up`` is the gain the rules give the winning side (§9's table, or 2 for a 劳改 level choice);
    ``levels`` are both teams' new levels (A, B) after D-TR-1, so a gain cut at A shows only there.
    """

    dealer: int
    attackers_points: int
    winner: Side
    levels_up: int
    levels: tuple[int, int]
    next_dealer: int
    game_winner: Team | None

    @property
    def winning_team(self) -> Team:
        return team_on_side(self.winner, self.dealer)


def raise_level(level: int, gain: int, holds_deal_as_dealer_team: bool) -> int:
    """A team's new level after gaining ``gain`` levels (D-TR-1).

    Gains stop at A: a level never skips A. A team already at A that holds the deal as dealer team goes
    past A (`PAST_A`) and wins the game; attackers never go past A by gaining, however many levels they win.
    """
    _check_level(level, ACE)
    if gain < 0:
        raise ValueError(f"a gain is never negative, not {gain}")
    if level == ACE and holds_deal_as_dealer_team and gain > 0:
        return PAST_A
    return min(level + gain, ACE)


def _settle(dealer: int, levels: tuple[int, int], attackers_points: int, winner: Side, gain: int) -> Settlement:
    for level in levels:
        _check_level(level, ACE)
    winning_team = team_on_side(winner, dealer)
    holds = winner is Side.DEFENDERS
    new = list(levels)
    index = 0 if winning_team is Team.A else 1
    new[index] = raise_level(levels[index], gain, holds_deal_as_dealer_team=holds)
    # D-TR-8: the defenders hold -> the dealer's partner deals; the attackers take -> the old dealer's next seat
    next_dealer = partner_of(dealer) if holds else next_seat(dealer)
    return Settlement(
        dealer=dealer,
        attackers_points=attackers_points,
        winner=winner,
        levels_up=gain,
        levels=(new[0], new[1]),
        next_dealer=next_dealer,
        game_winner=winning_team if new[index] == PAST_A else None,
    )


def settle(dealer: int, levels: tuple[int, int], attackers_points: int) -> Settlement:
    """Settle a deal (§9) dealt by ``dealer`` with team levels ``levels`` = (A, B), both 0..11.

    ``attackers_points`` is the attackers' final score: the points of their tricks, the last trick counted
    by D-TR-7 and penalty points (§11) added; it may be below 0. The winning side goes up by §9's table,
    capped by D-TR-1 (`raise_level`), and the next dealer follows D-TR-8.
    """
    _check_seat(dealer)
    winner, gain = levels_gained(attackers_points)
    return _settle(dealer, levels, attackers_points, winner, gain)


# --- referee actions (§11, 第二章) ---------------------------------------------------------------------------

PENALTY_PER_CARD = 10
"""出错牌按每张10分计扣或加分 (第二章 二): 10 points a card."""
LABOUR_REFORM_LEVELS = 2
"""劳改 level choice: the non-offending team goes up 2 levels (第二章 十二.1)."""
LABOUR_REFORM_POINTS = 80
"""劳改 points choice: 80 points on the attackers' score in the non-offending team's favour (十二.2)."""


def penalty_points(cards: int, in_favour_of_attackers: bool) -> int:
    """The points penalty for a wrong play (出错牌, §11): ±10 a card, added to the attackers' score.

    ``+10 × cards`` when the penalty favours the attackers (a defender erred), ``−10 × cards`` otherwise.
    """
    if cards < 1:
        raise RuleError(f"a points penalty is for 1 card or more, not {cards}", rule="§11")
    return PENALTY_PER_CARD * cards if in_favour_of_attackers else -PENALTY_PER_CARD * cards


def offence_penalty(offender: int, dealer: int, cards: int) -> int:
    """`penalty_points` for a wrong play of ``cards`` cards by seat ``offender``: it favours the other team."""
    return penalty_points(cards, in_favour_of_attackers=side_of(offender, dealer) is Side.DEFENDERS)


class LabourReform(StrEnum):
    """The non-offending team's choice after 劳改 ("labour reform", 第二章 九/十/十二, §11)."""

    LEVELS = "levels"
    """十二.1: +2 levels for the non-offending team, which wins the deal (在原打的级数基础上升2级)."""
    POINTS = "points"
    """十二.2: ±80 on the attackers' score in the non-offending team's favour, then §9 (增加或减少80分)."""


def labour_reform(
    dealer: int,
    levels: tuple[int, int],
    attackers_points: int,
    offending_team: Team,
    choice: LabourReform,
) -> Settlement:
    """Settle a deal stopped by 劳改 (§11): the deal ends at once and the non-offending team chooses.

    ``attackers_points`` is the attackers' score when the deal stopped: the points of the tricks they had
    won and any penalty points. There is no last trick, so no last-trick bonus (D-TR-7 does not apply).

    - `LabourReform.LEVELS`: the non-offending team goes up 2 levels (D-TR-1 still stops them at A) and the
      deal counts as won by it. Reading of D-TR-8 for the next dealer: non-offending defenders hold the deal
      (the dealer's partner deals next, and a team at A goes past A); non-offending attackers take it (the
      old dealer's next seat deals).
    - `LabourReform.POINTS`: +80 to the attackers' score if they are the non-offending team, −80 if the
      defenders are, and the deal settles by §9 (`settle`) from that score.
    """
    _check_seat(dealer)
    innocent = offending_team.other
    innocent_side = Side.DEFENDERS if innocent is team_of(dealer) else Side.ATTACKERS
    if choice is LabourReform.LEVELS:
        return _settle(dealer, levels, attackers_points, innocent_side, LABOUR_REFORM_LEVELS)
    shift = LABOUR_REFORM_POINTS if innocent_side is Side.ATTACKERS else -LABOUR_REFORM_POINTS
    return settle(dealer, levels, attackers_points + shift)


# --- timed rounds (§10, D-TR-9) --------------------------------------------------------------------------------
# (victory points, byes and forfeits of §10 / D-TR-10 / D-TR-11 are scoring's: paiju.scoring.victory)

ANNOUNCE_BEFORE_END_MINUTES = 25
"""D-TR-9: 25 minutes before a timed round ends, the table is told to play 2 more deals (比赛结束前25分钟)."""
DEALS_AFTER_ANNOUNCEMENT = 2
"""宣布打2盘牌: the number of deals played after the announcement."""


def announcement_at(round_minutes: int, started_at: int) -> int | None:
    """The engine-recorded time (seconds) from which the "2 more deals" announcement is due (D-TR-9); ``None`` for
    an untimed round."""
    if round_minutes < 0:
        raise ValueError(f"round_minutes is 0 (untimed) or more, not {round_minutes}")
    if round_minutes == 0:
        return None
    return started_at + (round_minutes - ANNOUNCE_BEFORE_END_MINUTES) * 60


def announcement_due(round_minutes: int, started_at: int, now: int) -> bool:
    """Whether the "2 more deals" announcement is due (D-TR-9).

    ``started_at`` and ``now`` are engine-recorded times in seconds (from events, never a clock read).
    Untimed rounds (``round_minutes`` 0) never announce; a round of 25 minutes or less announces at once.
    """
    if round_minutes < 0:
        raise ValueError(f"round_minutes is 0 (untimed) or more, not {round_minutes}")
    if round_minutes == 0:
        return False
    return now - started_at >= (round_minutes - ANNOUNCE_BEFORE_END_MINUTES) * 60


@dataclass(frozen=True, slots=True)
class RoundClock:
    """Where a match stands against D-TR-9's end: announced yet, deals left, over.

    After the announcement the match ends when `DEALS_AFTER_ANNOUNCEMENT` deals have settled, counting a
    deal in progress when the announcement is made; it also ends whenever a team goes past A (§2).
    """

    announced: bool = False
    deals_left: int = DEALS_AFTER_ANNOUNCEMENT
    over: bool = False

    def tick(self, round_minutes: int, started_at: int, now: int) -> RoundClock:
        """The clock at recorded time ``now``: announces once when `announcement_due`."""
        if self.announced or self.over or not announcement_due(round_minutes, started_at, now):
            return self
        return replace(self, announced=True)

    def deal_settled(self, game_winner: Team | None) -> RoundClock:
        """The clock after a deal settles; ``game_winner`` is the deal's `Settlement.game_winner`."""
        if self.over:
            return self
        left = self.deals_left - 1 if self.announced else self.deals_left
        return replace(self, deals_left=left, over=game_winner is not None or left == 0)
