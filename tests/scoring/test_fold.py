"""What scoring folds out of a game's events, against ledgers, statistics and VP worked out by hand.

One 砸六家 match of five deals, one of each outcome of §7 (head team A in each), then the match end; and a
拖拉机 game of three deals, attackers and defenders winning, then the end. Every figure below was computed by
hand from §7-§8 (D-ZLJ-6, D-ZLJ-7) and 拖拉机 §9-§10, not by the code under test.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, fields
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from paiju.contract.games import TRACTOR_EVENTS, ZLJ_EVENTS
from paiju.engine.games import Games
from paiju.platform.store import MemoryEventStore
from paiju.rules.cards import Suit
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.rules.zlj.outcome import deal_result
from paiju.scoring.fold import DealRow, GameFold, LedgerRow, MatchRow, StatDelta
from paiju.v1 import engine_pb2

from .recorded import record_tractor, record_zlj

ZLJ_PLAYERS = ["p0", "p1", "p2", "p3", "p4", "p5"]
# (finishing order, caught) for CATCH3, CATCH2, CATCH1, DRAW, REVERSE, head team A (seat 0 first out)
ORDERS = [
    ((0, 2, 4), (1, 3, 5)),  # A places 1 2 3: catch 3
    ((0, 2, 1, 4), (3, 5)),  # A places 1 2 4: catch 2
    ((0, 2, 1, 3, 4), (5,)),  # A places 1 2 5: catch 1
    ((0, 2, 1, 3, 5), (4,)),  # A places 1 2 6: draw
    ((0, 1, 3, 5), (2, 4)),  # A places 1 5 6: reverse
]
OUTCOMES = ["CATCH3", "CATCH2", "CATCH1", "DRAW", "REVERSE"]
TEAM_POINTS = [(10, 0), (5, 0), (2, 0), (0, 0), (0, 0)]  # D-ZLJ-6: no team points for a draw or 反逮
INDIVIDUAL = [  # 1st +3, 2nd +2, 3rd +1, 4th and 5th 0, caught −1 (§8)
    (3, -1, 2, -1, 1, -1),
    (3, 1, 2, -1, 0, -1),
    (3, 1, 2, 0, 0, -1),
    (3, 1, 2, 0, -1, 0),
    (3, 2, -1, 1, -1, 0),
]


def envelope(version: int, payload: Any, field: str) -> engine_pb2.Envelope:
    e = engine_pb2.Envelope(game_id="g", version=version)
    e.recorded_at.FromDatetime(datetime(2026, 11, 29, 20, 0, version % 60, tzinfo=UTC))
    getattr(e, field).CopyFrom(payload)
    return e


def seats(players: list[str]) -> engine_pb2.SeatsAssigned:
    m = engine_pb2.SeatsAssigned(change=engine_pb2.SEAT_CHANGE_START)
    for seat, player in enumerate(players):
        m.seats.add(seat=seat, player_id=player)
    return m


def zlj_match() -> list[engine_pb2.Envelope]:
    events: list[Any] = [zlj_model.MatchStarted(zlj_model.Options(deals=5))]
    for deal, (order, _) in enumerate(ORDERS, start=1):
        events.append(zlj_model.HandsDealt(deal, 0, tuple(() for _ in range(6)), None))
        events.append(zlj_model.DealEnded(deal_result(deal, order)))
    events.append(zlj_model.MatchEnded((17, 0), (15, 4, 7, -1, -1, -3)))
    out = [envelope(1, ZLJ_EVENTS.encode(events[0]), "zlj"), envelope(2, seats(ZLJ_PLAYERS), "seats_assigned")]
    out += [envelope(v, ZLJ_EVENTS.encode(e), "zlj") for v, e in enumerate(events[1:], start=3)]
    return out


def test_the_rules_agree_with_the_hand_made_deals() -> None:
    for (order, caught), outcome, team, individual in zip(ORDERS, OUTCOMES, TEAM_POINTS, INDIVIDUAL, strict=True):
        result = deal_result(1, order)
        assert (result.caught, result.outcome.name, result.team_points, result.individual) == (
            caught,
            outcome,
            team,
            individual,
        )


def test_zlj_ledgers_statistics_and_vp_for_every_outcome() -> None:
    fold = GameFold("g")
    rows = [row for e in zlj_match() for row in fold.apply(e)]
    deals = [r for r in rows if isinstance(r, DealRow)]
    assert [d.outcome for d in deals] == OUTCOMES
    assert all(d.players == tuple(ZLJ_PLAYERS) for d in deals)
    team = [(r.deal, r.who, r.points, r.total) for r in rows if isinstance(r, LedgerRow) and r.kind == "team"]
    assert team == [
        (1, 0, 10, 10), (1, 1, 0, 0),
        (2, 0, 5, 15), (2, 1, 0, 0),
        (3, 0, 2, 17), (3, 1, 0, 0),
        (4, 0, 0, 17), (4, 1, 0, 0),
        (5, 0, 0, 17), (5, 1, 0, 0),
    ]  # fmt: skip
    individual = {
        (r.deal, r.who): (r.points, r.total) for r in rows if isinstance(r, LedgerRow) and r.kind == "individual"
    }
    # running totals per seat after deal 5: 0: 3*5 = 15; 1: -1+1+1+1+2 = 4; 2: 2*4-1 = 7;
    # 3: -1-1+0+0+1 = -1; 4: 1+0+0-1-1 = -1; 5: -1-1-1+0+0 = -3
    assert [individual[(5, s)][1] for s in range(6)] == [15, 4, 7, -1, -1, -3]
    assert individual[(2, 1)] == (1, 0) and individual[(5, 1)] == (2, 4)
    [match] = [r for r in rows if isinstance(r, MatchRow)]
    assert (match.team_points, match.difference, match.vp, match.winner_team, match.deals) == (
        (17, 0),
        17,
        (Decimal(27), Decimal(3)),  # a difference of 17 is capped at 12: 27:3 (§10, S-1)
        0,
        5,
    )
    stats: dict[str, dict[str, int]] = {}
    places: dict[str, list[int]] = {p: [0] * 6 for p in ZLJ_PLAYERS}
    for r in rows:
        if isinstance(r, StatDelta):
            s = stats.setdefault(r.player_id, {})
            for name in ("deals", "matches", "matches_won", "caught", "individual_points", "team_points", "score"):
                s[name] = s.get(name, 0) + getattr(r, name)
            if r.place:
                places[r.player_id][r.place - 1] += 1
    assert stats["p0"] == {
        "deals": 5, "matches": 1, "matches_won": 1, "caught": 0, "individual_points": 15, "team_points": 17, "score": 32
    }  # fmt: skip
    assert stats["p1"] == {
        "deals": 5, "matches": 1, "matches_won": 0, "caught": 1, "individual_points": 4, "team_points": 0, "score": 4
    }  # fmt: skip
    assert stats["p4"]["caught"] == 2 and stats["p4"]["score"] == -1 + 17
    assert places["p0"] == [5, 0, 0, 0, 0, 0]  # five times 大贡
    assert places["p1"] == [0, 1, 3, 0, 0, 0]
    assert places["p4"] == [0, 0, 1, 1, 1, 0]  # 3rd, 4th, 5th, then caught twice
    assert places["p5"] == [0, 0, 0, 1, 1, 0]


def test_a_seat_change_between_deals_moves_the_statistics_to_the_new_player() -> None:
    fold = GameFold("g")
    envelopes = zlj_match()
    swap = engine_pb2.SeatsAssigned(change=engine_pb2.SEAT_CHANGE_SUBSTITUTE)
    swap.seats.add(seat=0, player_id="sub")
    rows: list[Any] = []
    for e in envelopes[:4]:  # start, seats, deal 1 dealt and ended
        rows += fold.apply(e)
    rows += fold.apply(envelope(99, swap, "seats_assigned"))
    for e in envelopes[4:]:
        rows += fold.apply(e)
    deltas = [r for r in rows if isinstance(r, StatDelta) and r.deals]
    assert sum(r.deals for r in deltas if r.player_id == "p0") == 1
    assert sum(r.deals for r in deltas if r.player_id == "sub") == 4
    # the ledger stays with the seat (D-ZLJ-7 is per seat; a substitute takes the seat's place in it)
    assert [r.total for r in rows if isinstance(r, LedgerRow) and r.kind == "individual" and r.who == 0][-1] == 15


def test_tractor_levels_over_time_statistics_and_vp() -> None:
    players = ["a0", "b1", "a2", "b3"]
    events: list[Any] = [tractor_model.GameStarted(tractor_model.Options(round_minutes=30))]
    # deal 1: seat 0 deals (team A defends); attackers score 90: defenders +3 -> A at 3 (index 0 + 3)
    # deal 2: seat 2 deals (A defends); attackers score 250: attackers take the deal, +0 levels
    # deal 3: seat 1 deals (B defends); attackers (A) score 0: defenders B +5 (大光)
    plan = [
        (0, 90, "defenders", 3, 2, (3, 0)),
        (2, 250, "attackers", 0, 1, (3, 0)),
        (1, 0, "defenders", 5, 3, (3, 5)),
    ]
    before: tuple[int, int] = (0, 0)
    for deal, (dealer, points, winner, up, next_dealer, levels) in enumerate(plan, start=1):
        events.append(tractor_model.HandsDealt(deal, dealer, tuple(() for _ in range(4)), None))
        events.append(tractor_model.TrumpDeclared(Suit(deal % 4), dealer, before[dealer % 2]))
        before = levels
        events.append(tractor_model.DealSettled(points, winner, up, next_dealer, levels))
    events.append(tractor_model.GameEnded(1, (3, 5)))
    envelopes = [
        envelope(1, TRACTOR_EVENTS.encode(events[0]), "tractor"),
        envelope(2, seats(players), "seats_assigned"),
    ]
    envelopes += [envelope(v, TRACTOR_EVENTS.encode(e), "tractor") for v, e in enumerate(events[1:], start=3)]
    fold = GameFold("t")
    rows = [row for e in envelopes for row in fold.apply(e)]
    deals = [r for r in rows if isinstance(r, DealRow)]
    assert [(d.deal, d.dealer, d.attackers_points, d.winner, d.levels_up, d.levels) for d in deals] == [
        (1, 0, 90, "defenders", 3, (3, 0)),
        (2, 2, 250, "attackers", 0, (3, 0)),
        (3, 1, 0, "defenders", 5, (3, 5)),
    ]
    assert [d.level_rank for d in deals] == ["3", "6", "3"]
    ledger = [(r.deal, r.who, r.points, r.total) for r in rows if isinstance(r, LedgerRow)]
    assert ledger == [(1, 0, 3, 3), (1, 1, 0, 0), (2, 0, 0, 3), (2, 1, 0, 0), (3, 0, 0, 3), (3, 1, 5, 5)]
    [match] = [r for r in rows if isinstance(r, MatchRow)]
    assert (match.levels, match.difference, match.vp, match.winner_team) == ((3, 5), -2, (Decimal(13), Decimal(17)), 1)
    totals: dict[str, dict[str, int]] = {}
    for r in rows:
        if isinstance(r, StatDelta):
            t = totals.setdefault(r.player_id, {})
            for name in (
                "deals", "attacking_deals", "attacking_deals_won", "defending_deals", "defending_deals_won",
                "levels_gained", "matches", "matches_won",
            ):  # fmt: skip
                t[name] = t.get(name, 0) + getattr(r, name)
    # team A (a0, a2) defended deals 1 and 2 (won deal 1), attacked deal 3 (lost); gained 3 levels; lost the game
    assert totals["a0"] == {
        "deals": 3, "attacking_deals": 1, "attacking_deals_won": 0, "defending_deals": 2, "defending_deals_won": 1,
        "levels_gained": 3, "matches": 1, "matches_won": 0,
    }  # fmt: skip
    # team B attacked deals 1 and 2 (won deal 2), defended deal 3 (won); gained 5 levels; won the game
    assert totals["b3"] == {
        "deals": 3, "attacking_deals": 2, "attacking_deals_won": 1, "defending_deals": 1, "defending_deals_won": 1,
        "levels_gained": 5, "matches": 1, "matches_won": 1,
    }  # fmt: skip


def test_the_fold_survives_being_stored_and_read_back() -> None:
    fold = GameFold("g")
    envelopes = zlj_match()
    for e in envelopes[:5]:
        fold.apply(e)
    again = GameFold.from_json(fold.to_json())
    assert again == fold
    assert [r for e in envelopes[5:] for r in again.apply(e)] == [r for e in envelopes[5:] for r in fold.apply(e)]


def test_the_folds_json_is_what_asdict_gave_and_folds_stored_before_still_load() -> None:
    async def played() -> list[engine_pb2.Envelope]:
        games = Games(MemoryEventStore())
        await record_zlj(games, "z", ["z0", "z1", "z2", "z3", "z4", "z5"], seed=21, deals=2)
        await record_tractor(games, "t", ["t0", "t1", "t2", "t3"], seed=22)
        return [*(await games.history("z")).envelopes, *(await games.history("t")).envelopes]

    folds = {"z": GameFold("z"), "t": GameFold("t")}
    states = 0
    for e in asyncio.run(played()):
        fold = folds[e.game_id]
        fold.apply(e)
        data = fold.to_json()
        assert list(data) == [f.name for f in fields(GameFold)]
        assert data == asdict(fold)
        assert json.dumps(data) == json.dumps(asdict(fold))  # the text written for the same fold is the same
        data["players"].append("x")  # a copy: writing it out changes nothing of the fold
        assert data != fold.to_json()
        states += 1
    assert states > 500 and all(f.ended for f in folds.values())
    assert folds["t"].dealer is not None and folds["t"].trump and folds["z"].individual_totals
    # a fold as an earlier version may have stored it (its keys in another order): still read
    stored = (
        '{"deal": 2, "game": "zlj", "trump": "", "ended": false, "dealer": null, "levels": [], "game_id": "z", '
        '"players": ["z0", "z1", "z2", "z3", "z4", "z5"], "deals_done": 1, "level_rank": "", "team_totals": [5, 0], '
        '"deal_started_at": "2026-11-29T20:00:05+00:00", "individual_totals": [3, 1, 2, -1, 0, -1]}'
    )
    fold = GameFold.from_json(json.loads(stored))
    players = ["z0", "z1", "z2", "z3", "z4", "z5"]
    assert fold == GameFold("z", "zlj", players, 2, "2026-11-29T20:00:05+00:00", 1, [5, 0], [3, 1, 2, -1, 0, -1])
    assert json.loads(json.dumps(fold.to_json())) == json.loads(stored)
