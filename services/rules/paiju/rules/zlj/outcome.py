"""The outcome and score of a 砸六家 deal (rules §7-§8)."""

from __future__ import annotations

from paiju.rules.zlj.model import SEATS, DealResult, Outcome, Team, team_of

TEAM_POINTS = {Outcome.CATCH3: 10, Outcome.CATCH2: 5, Outcome.CATCH1: 2}
"""Team points for the winners (§8); D-ZLJ-6: a draw and 反逮 give none."""

PLACE_POINTS = (3, 2, 1, 0, 0)
"""Individual points by finishing place: 大贡 +3, 二贡 +2, 三贡 +1, 4th and 5th 0 (§8)."""
CAUGHT_POINTS = -1
"""Each caught player 被逮 scores -1 (§8)."""

_CATCH = {3: Outcome.CATCH3, 2: Outcome.CATCH2, 1: Outcome.CATCH1}


def team_out(order: tuple[int, ...]) -> Team | None:
    """The team whose three members are all out, if any: the deal ends at that moment (§6)."""
    for team in (Team.A, Team.B):
        if all(seat in order for seat in team.seats):
            return team
    return None


def deal_result(deal: int, order: tuple[int, ...]) -> DealResult:
    """Classify a finished deal (§7) and score it (§8).

    ``order`` is the finishing order, ending with the move that put a whole team out.
    H, the head team, is the team of the 大贡 (``order[0]``).
    """
    finished = team_out(order)
    if finished is None:
        raise ValueError(f"deal {deal} is not over: out so far {order}")
    caught = tuple(s for s in range(SEATS) if s not in order)
    head = team_of(order[0])
    winners: Team | None
    if finished is head:
        # H all out: the number of opponents still holding cards decides catch-3/2/1.
        outcome = _CATCH[len(caught)]
        winners = head
    elif len(caught) == 1:
        outcome, winners = Outcome.DRAW, None
    else:
        outcome, winners = Outcome.REVERSE, head.other
    team_points = [0, 0]
    if outcome in TEAM_POINTS and winners is not None:
        team_points[0 if winners is Team.A else 1] = TEAM_POINTS[outcome]
    individual = [0] * SEATS
    for place, seat in enumerate(order):
        individual[seat] = PLACE_POINTS[place]
    for seat in caught:
        individual[seat] = CAUGHT_POINTS
    return DealResult(
        deal=deal,
        order=order,
        caught=caught,
        outcome=outcome,
        head_team=head,
        winners=winners,
        team_points=(team_points[0], team_points[1]),
        individual=tuple(individual),
    )


def match_totals(results: tuple[DealResult, ...]) -> tuple[tuple[int, int], tuple[int, ...]]:
    """Team and individual ledgers over a match (D-ZLJ-7: kept separately)."""
    team = [0, 0]
    individual = [0] * SEATS
    for r in results:
        team[0] += r.team_points[0]
        team[1] += r.team_points[1]
        for seat in range(SEATS):
            individual[seat] += r.individual[seat]
    return (team[0], team[1]), tuple(individual)


def match_score(seat: int, team_points: tuple[int, int], individual: tuple[int, ...]) -> int:
    """D-ZLJ-7: a player's match score is their individual points plus their team's team points."""
    return individual[seat] + team_points[0 if team_of(seat) is Team.A else 1]
