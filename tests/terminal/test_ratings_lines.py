"""The rating changes the terminal client prints after a rated match (`paiju.terminal.client.ratings`), in words."""

from __future__ import annotations

import asyncio

from paiju.terminal.client.ratings import Change, change_lines, match_changes
from paiju.terminal.client.render import Seats
from paiju.v1 import lobby_pb2


def test_each_person_s_change_is_one_line_in_seat_order() -> None:
    seats = Seats(me=0, names={2: "Cy"})
    changes = [Change(2, 25.0, 25 / 3, 27.2881, 8.1799), Change(0, 25.0, 25 / 3, 23.7742, 8.2517)]
    assert change_lines(changes, seats, "casual") == [
        "Ratings (casual; shown as μ − 3σ, bots keep their fixed ratings):",
        "  seat 0 (A, you): 0.00 → -0.98 (-0.98; μ 23.77, σ 8.25)",
        "  seat 2 (A, Cy): 0.00 → 2.75 (+2.75; μ 27.29, σ 8.18)",
    ]


def test_a_table_of_bots_only_has_no_rating_to_show() -> None:
    table = lobby_pb2.Table(seats=[lobby_pb2.TableSeat(seat=s, player_id=f"bot-t-{s}", bot=True) for s in range(4)])
    assert asyncio.run(match_changes("127.0.0.1:1", "token", table, "t-m1", "tractor", patience=0.1)) is None
