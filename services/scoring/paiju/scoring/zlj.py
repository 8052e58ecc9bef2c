"""What scoring does with 砸六家: the rows of its deals and matches (team and individual ledgers, D-ZLJ-7; the
difference of a match is team points A − B, paiju decision S-1) and the length of a tournament match (its deals)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from paiju.rules.zlj import model as zlj_model
from paiju.scoring.rating import Style
from paiju.scoring.rows import DealRow, LedgerRow, MatchRow, Row, StatDelta, time_of
from paiju.scoring.victory import victory_points
from paiju.v1 import engine_pb2

if TYPE_CHECKING:
    from paiju.scoring.fold import GameFold

DEFAULT_DEALS = 6
"""The deals of a tournament match when the organiser names none."""
DIFFERENCE_HEADING = "团体分差"
RATING = Style(individual_weights=True)
"""How a match is rated (docs/rules/ratings.md): by team points, each player's share weighed by their individual
points (D-RATE-2, D-RATE-3)."""
"""The printed heading of a result sheet's difference column: the team-points difference (S-1)."""
RESULTS = frozenset({"match_started", "deal_ended", "match_ended"})
"""The events `fold` turns into rows or that start a game's row, by their field in the event oneof: scoring applies
them soon after they are stored (`paiju.scoring.readmodels.GamesProjection.wakes`), the others within seconds."""
TEAM_INDEX = {zlj_model.Team.A: 0, zlj_model.Team.B: 1}
"""Team A (seats 0, 2, 4) is first in every pair of team figures, team B (1, 3, 5) second (§1)."""


def match_length(deals: int, round_minutes: int) -> str | None:
    """Why a tournament's match length does not suit 砸六家 (``None``: it does)."""
    if not 1 <= deals <= 60:
        return "a 砸六家 tournament match has 1 to 60 deals"
    if round_minutes:
        return "砸六家 rounds are as long as their deals; only 拖拉机 rounds are timed (D-TR-9)"
    return None


def fold(state: GameFold, envelope: engine_pb2.Envelope, event: Any) -> list[Row]:
    """The rows a 砸六家 event adds to its game's, the fold moved past it."""
    if isinstance(event, zlj_model.MatchStarted):
        state.team_totals = [0, 0]
        state.individual_totals = [0] * zlj_model.SEATS
        return []
    if isinstance(event, zlj_model.HandsDealt):
        state.start_deal(envelope, event.deal)
        return []
    if isinstance(event, zlj_model.DealEnded):
        return _deal(state, envelope, event.result)
    if isinstance(event, zlj_model.MatchEnded):
        return _match(state, envelope, event)
    return []


def _deal(state: GameFold, envelope: engine_pb2.Envelope, result: zlj_model.DealResult) -> list[Row]:
    ended_at = time_of(envelope)
    state.deals_done += 1
    rows: list[Row] = [
        DealRow(
            state.game_id,
            result.deal,
            state.game,
            tuple(state.players),
            datetime.fromisoformat(state.deal_started_at) if state.deal_started_at else None,
            ended_at,
            order=result.order,
            caught=tuple(sorted(result.caught)),
            outcome=result.outcome.name,
            team_points=result.team_points,
            individual_points=result.individual,
        )
    ]
    for team, points in enumerate(result.team_points):
        state.team_totals[team] += points
        rows.append(LedgerRow(state.game_id, result.deal, "team", team, "", points, state.team_totals[team]))
    places = {seat: place for place, seat in enumerate(result.order, start=1)}
    for seat, points in enumerate(result.individual):
        state.individual_totals[seat] += points
        player = state.player(seat)
        rows.append(
            LedgerRow(state.game_id, result.deal, "individual", seat, player, points, state.individual_totals[seat])
        )
        if player:
            team_points = result.team_points[TEAM_INDEX[zlj_model.team_of(seat)]]
            rows.append(
                StatDelta(
                    player,
                    state.game,
                    deals=1,
                    place=places.get(seat, 0),
                    caught=int(seat in result.caught),
                    individual_points=points,
                    team_points=team_points,
                    score=points + team_points,
                )
            )
    return rows


def _match(state: GameFold, envelope: engine_pb2.Envelope, event: zlj_model.MatchEnded) -> list[Row]:
    state.ended = True
    team_points = tuple(event.team_points)
    difference = team_points[0] - team_points[1]
    winner = None if difference == 0 else (0 if difference > 0 else 1)
    rows: list[Row] = [
        MatchRow(
            state.game_id,
            state.game,
            tuple(state.players),
            time_of(envelope),
            state.deals_done,
            team_points=team_points,
            individual_points=tuple(event.individual),
            difference=difference,
            vp=victory_points(difference),
            winner_team=winner,
        )
    ]
    rows += state.match_stats(winner)
    return rows
