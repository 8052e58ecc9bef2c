"""The web view's gateway without a stack: which address a client has behind a trusted proxy, and which ids are
refused before any call."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from paiju.platform.limits import RateLimits
from paiju.tools.web.config import LIMITS
from paiju.tools.web.gateway import (
    MAX_ROWS,
    Gateway,
    Problem,
    _game_of,
    _mode_of,
    _whole,
    checked_id,
    doing_words,
    trusted_proxies,
)
from paiju.v1 import engine_pb2, lobby_pb2

pytestmark = pytest.mark.unit


def gateway(trusted: str = "") -> Gateway:
    return Gateway(upstream=SimpleNamespace(), limits=RateLimits(LIMITS), trusted=trusted_proxies(trusted))  # type: ignore[arg-type]


def request(remote: str, forwarded: str | None = None) -> Any:
    return SimpleNamespace(remote=remote, headers={"X-Forwarded-For": forwarded} if forwarded is not None else {})


def test_without_trusted_proxies_the_connection_is_the_client() -> None:
    assert gateway().client(request("10.1.2.3", "203.0.113.9")) == "10.1.2.3"


def test_from_a_trusted_proxy_the_nearest_untrusted_forwarded_address_is_the_client() -> None:
    g = gateway("10.0.0.0/8, fd00::/8")
    assert g.client(request("10.1.2.3", "203.0.113.9")) == "203.0.113.9"
    # a client cannot choose its address by sending X-Forwarded-For itself: the proxy appends the real one
    assert g.client(request("10.1.2.3", "198.51.100.1, 203.0.113.9")) == "203.0.113.9"
    assert g.client(request("10.1.2.3", "203.0.113.9, 10.9.9.9")) == "203.0.113.9"
    assert g.client(request("10.1.2.3")) == "10.1.2.3"
    assert g.client(request("10.1.2.3", "not an address, ,")) == "not an address"
    assert g.client(request("192.0.2.7", "203.0.113.9")) == "192.0.2.7", "not from a trusted proxy"


@pytest.mark.parametrize("bad", ["", ".", "..", "a.b", "*", ">", "a b", "a\x00b", "x" * 101, "é", "-a", "a/b"])
def test_what_is_not_an_id_is_refused_before_any_call(bad: str) -> None:
    with pytest.raises(Problem) as refused:
        checked_id(bad, "table")
    assert refused.value.status == 400 and refused.value.reason == "INVALID_REQUEST"


def test_an_id_passes() -> None:
    assert checked_id("table-0e238cbc", "table") == "table-0e238cbc"


@pytest.mark.parametrize("bad", ["", "0", "-1", "101", "1e2", " 5", "5 ", "٣", "²", "9" * 400, "0x10", "+5"])
def test_a_number_parameter_outside_its_range_is_refused(bad: str) -> None:
    with pytest.raises(Problem) as refused:
        _whole(bad, "limit", 1, MAX_ROWS)
    assert refused.value.status == 400 and refused.value.reason == "INVALID_REQUEST"


def test_a_number_parameter_within_its_range_passes() -> None:
    assert _whole("1", "limit", 1, MAX_ROWS) == 1 and _whole("100", "limit", 1, MAX_ROWS) == 100


@pytest.mark.parametrize("bad", ["", "ZLJ", "chess", "zlj ", "zlj\x00", "tractor.*"])
def test_a_game_the_ratings_do_not_know_is_refused(bad: str) -> None:
    with pytest.raises(Problem):
        _game_of(bad)


@pytest.mark.parametrize("bad", ["", "Casual", "tournament", "casual\x00", "*"])
def test_a_mode_that_is_neither_casual_nor_ranked_is_refused(bad: str) -> None:
    with pytest.raises(Problem):
        _mode_of(bad)


def _table(status: int, seats: list[tuple[str, bool, bool]], **fields: Any) -> lobby_pb2.Table:
    table = lobby_pb2.Table(table_id="t", name="T", game=engine_pb2.GAME_ZLJ, status=status, **fields)  # type: ignore[arg-type]
    for n, (player, bot, ready) in enumerate(seats):
        table.seats.add(seat=n, player_id=player, name=player, bot=bot, ready=ready)
    return table


def test_a_table_between_matches_says_what_it_waits_for() -> None:
    free = [("a", False, True), ("", False, False), *[(f"bot-{n}", True, True) for n in range(4)]]
    assert doing_words(_table(lobby_pb2.TABLE_STATUS_OPEN, free)) == "Waiting for players: 5 of 6 seats taken"
    unready = [("a", False, False), ("b", False, False), *[(f"bot-{n}", True, True) for n in range(4)]]
    over = lobby_pb2.MatchResult(game_id="g", team_points=[3, 9])
    finished = _table(lobby_pb2.TABLE_STATUS_FINISHED, unready, matches=1, last_result=over)
    assert doing_words(finished) == (
        "Match over: team B wins by 6 team points (A 3 · B 9). Waiting for 2 players to say they are ready"
    )
    bots = [(f"bot-{n}", True, True) for n in range(6)]
    assert doing_words(_table(lobby_pb2.TABLE_STATUS_FINISHED, bots, matches=1, last_result=over)) == (
        "Match over: team B wins by 6 team points (A 3 · B 9). Every seat is ready: waiting for the table's owner "
        "to start the next match"
    )
    assert doing_words(_table(lobby_pb2.TABLE_STATUS_PLAYING, bots, matches=3)) == "Playing match 3"
    playing = _table(lobby_pb2.TABLE_STATUS_PLAYING, bots, matches=3, game_id="g3")
    assert doing_words(playing, ended="g3") == "Match over: its result is being recorded"
    assert doing_words(_table(lobby_pb2.TABLE_STATUS_EXPIRED, bots)).startswith("The table has expired")
