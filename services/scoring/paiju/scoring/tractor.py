"""What scoring does with 拖拉机: the rows of its deals and games (dealer, trump, level rank, attackers' points and
levels, §9; the difference of a match is levels A − B, §10) and the length of a tournament match (the round's
time, D-TR-9)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.settlement import level_name
from paiju.scoring.rating import Style
from paiju.scoring.rows import DealRow, LedgerRow, MatchRow, Row, StatDelta, team, time_of
from paiju.scoring.victory import victory_points
from paiju.v1 import engine_pb2

if TYPE_CHECKING:
    from paiju.scoring.fold import GameFold

RESULTS = frozenset({"game_started", "deal_settled", "game_ended"})
"""The events `fold` turns into rows or that start a game's row, by their field in the event oneof: scoring applies
them soon after they are stored (`paiju.scoring.readmodels.GamesProjection.wakes`), the others within seconds."""
DEFAULT_DEALS = 0
"""A 拖拉机 match is not played to a number of deals."""
DIFFERENCE_HEADING = "级差"
RATING = Style(levels=True, margin=4.0)
"""How a match is rated (docs/rules/ratings.md): by final levels, with a level margin of 4 (D-RATE-2, D-RATE-4)."""
"""The printed heading of a result sheet's difference column: the level difference (§10)."""


def match_length(deals: int, round_minutes: int) -> str | None:
    """Why a tournament's match length does not suit 拖拉机 (``None``: it does)."""
    if deals:
        return "a 拖拉机 match is played to past A or to the round's time (D-TR-9), not to a number of deals"
    return None


def fold(state: GameFold, envelope: engine_pb2.Envelope, event: Any) -> list[Row]:
    """The rows a 拖拉机 event adds to its game's, the fold moved past it."""
    if isinstance(event, tractor_model.GameStarted):
        state.levels = [0, 0]
        return []
    if isinstance(event, tractor_model.HandsDealt):
        state.start_deal(envelope, event.deal)
        state.dealer, state.trump, state.level_rank = None, "", ""
        return []
    if isinstance(event, tractor_model.TrumpDeclared):
        state.dealer = event.dealer
        state.trump = event.trump.name if event.trump is not None else ""
        state.level_rank = level_name(event.level)
        return []
    if isinstance(event, tractor_model.DealSettled):
        return _deal(state, envelope, event)
    if isinstance(event, tractor_model.GameEnded):
        return _match(state, envelope, event)
    return []


def _deal(state: GameFold, envelope: engine_pb2.Envelope, event: tractor_model.DealSettled) -> list[Row]:
    state.deals_done += 1
    dealer_team = team(state.dealer or 0)
    winning_team = dealer_team if event.winner == "defenders" else 1 - dealer_team
    before = list(state.levels) if state.levels else [0, 0]
    state.levels = list(event.levels)
    rows: list[Row] = [
        DealRow(
            state.game_id,
            state.deal,
            state.game,
            tuple(state.players),
            datetime.fromisoformat(state.deal_started_at) if state.deal_started_at else None,
            time_of(envelope),
            dealer=state.dealer,
            trump=state.trump,
            level_rank=state.level_rank,
            attackers_points=event.attackers_points,
            winner=event.winner,
            levels_up=event.levels_up,
            levels=tuple(event.levels),
        )
    ]
    for side in (0, 1):
        gained = state.levels[side] - before[side]
        rows.append(LedgerRow(state.game_id, state.deal, "levels", side, "", gained, state.levels[side]))
    for seat, player in enumerate(state.players):
        if not player:
            continue
        side = team(seat)
        attacking = side != dealer_team
        won = side == winning_team
        gained = state.levels[side] - before[side]
        rows.append(
            StatDelta(
                player,
                state.game,
                deals=1,
                attacking_deals=int(attacking),
                attacking_deals_won=int(attacking and won),
                defending_deals=int(not attacking),
                defending_deals_won=int(not attacking and won),
                levels_gained=gained,
                score=gained,
            )
        )
    return rows


def _match(state: GameFold, envelope: engine_pb2.Envelope, event: tractor_model.GameEnded) -> list[Row]:
    state.ended = True
    levels = tuple(event.levels)
    difference = levels[0] - levels[1]
    rows: list[Row] = [
        MatchRow(
            state.game_id,
            state.game,
            tuple(state.players),
            time_of(envelope),
            state.deals_done,
            levels=levels,
            difference=difference,
            vp=victory_points(difference),
            winner_team=event.winner,
        )
    ]
    rows += state.match_stats(event.winner)
    return rows
