"""The rating changes the terminal client prints after a rated match (`paiju.terminal.client.ratings`), in words."""

from __future__ import annotations

from paiju.terminal.client.ratings import NOT_RATED, Change, change_lines, match_changes, may_be_rated, rating_report
from paiju.terminal.client.render import Seats
from paiju.v1 import lobby_events_pb2, lobby_pb2, ratings_events_pb2


def test_each_person_s_change_is_one_line_in_seat_order() -> None:
    seats = Seats(me=0, names={2: "Cy"})
    changes = [Change(2, 25.0, 25 / 3, 27.2881, 8.1799), Change(0, 25.0, 25 / 3, 23.7742, 8.2517)]
    assert change_lines(changes, seats, "casual") == [
        "Ratings (casual; shown as μ − 3σ, bots keep their fixed ratings):",
        "  seat 0 (A, you): 0.00 → -0.98 (-0.98; μ 23.77, σ 8.25)",
        "  seat 2 (A, Cy): 0.00 → 2.75 (+2.75; μ 27.29, σ 8.18)",
    ]


def test_a_table_of_bots_only_has_no_rating_to_show() -> None:
    table = lobby_pb2.Table(
        mode=lobby_events_pb2.MATCH_MODE_CASUAL,
        seats=[lobby_pb2.TableSeat(seat=s, player_id=f"bot-t-{s}", bot=True) for s in range(4)],
    )
    assert not may_be_rated(table), "a casual match without humans is not rated (D-RATE-7)"
    assert rating_report(table, "t-m1", seats=Seats()) == [NOT_RATED]


def _table(mode: lobby_events_pb2.MatchMode.ValueType, *bots: int) -> lobby_pb2.Table:
    seats = [
        lobby_pb2.TableSeat(seat=s, player_id=f"bot-t-{s}" if s in bots else f"p{s}", bot=s in bots) for s in range(4)
    ]
    return lobby_pb2.Table(mode=mode, seats=seats)


def test_only_a_table_opened_rated_waits_for_ratings() -> None:
    assert may_be_rated(_table(lobby_events_pb2.MATCH_MODE_CASUAL, 1, 3))
    assert may_be_rated(_table(lobby_events_pb2.MATCH_MODE_RANKED))
    assert not may_be_rated(_table(lobby_events_pb2.MATCH_MODE_RANKED, 1)), "ranked with a bot: not rated"
    assert not may_be_rated(_table(lobby_events_pb2.MATCH_MODE_UNSPECIFIED)), "opened without a mode (D-RATE-9)"


def test_the_changes_come_from_the_tables_last_result() -> None:
    table = _table(lobby_events_pb2.MATCH_MODE_CASUAL, 1)
    table.last_result.game_id = "t-m1"
    assert match_changes(table, "t-m1") is None, "not rated yet"
    ratings = table.last_result.ratings
    ratings.mode = lobby_events_pb2.MATCH_MODE_CASUAL
    first = ratings_events_pb2.Rating(mu=25.0, sigma=25 / 3)
    ratings.seats.add(seat=0, player_id="p0", before=first, after=ratings_events_pb2.Rating(mu=27.2881, sigma=8.1799))
    ratings.seats.add(seat=1, player_id="bot-t-1", bot=True, before=first, after=first)
    assert match_changes(table, "t-m0") is None, "another match's"
    assert rating_report(table, "t-m1", seats=Seats(me=0)) == [
        "Ratings (casual; shown as μ − 3σ, bots keep their fixed ratings):",
        "  seat 0 (A, you): 0.00 → 2.75 (+2.75; μ 27.29, σ 8.18)",
    ]
