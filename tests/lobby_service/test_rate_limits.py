"""Rate limits at the door: a flood of guests, a password guessed from many places, too many open streams — each
refused with RESOURCE_EXHAUSTED / RATE_LIMITED, a RetryInfo and a QuotaFailure, and nothing stored."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from paiju.lobby.service import RATE_LIMITS
from paiju.platform.limits import LimitsError, RateLimits, address_of, parse_rules
from paiju.v1 import lobby_pb2

from ..engine.harness import refusal_of
from .stack import PASSWORD, Stack
from .test_lobby import run


def details(error: grpc.aio.AioRpcError) -> list[Any]:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            found: list[Any] = []
            for detail in status_pb2.Status.FromString(value).details:
                for kind in (error_details_pb2.ErrorInfo, error_details_pb2.RetryInfo, error_details_pb2.QuotaFailure):
                    message = kind()
                    if detail.Unpack(message):
                        found.append(message)
            return found
    return []


def test_a_flood_of_guests_from_one_address_is_throttled(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        answers = await asyncio.gather(*(refusal_of(s.lobby.Guest(lobby_pb2.GuestRequest())) for _ in range(25)))
        assert answers.count((grpc.StatusCode.OK, "")) == 10
        assert answers.count((grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")) == 15
        accounts = [a for a in await s.lobby_store.aggregates() if a.startswith("account-")]
        assert len(accounts) == 10, "the refused calls stored nothing"
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await s.lobby.Guest(lobby_pb2.GuestRequest())
        info, retry, quota = details(refused.value)
        assert info.reason == "RATE_LIMITED" and info.metadata["method"] == "Guest"
        assert 0 < retry.retry_delay.ToTimedelta().total_seconds() <= 60
        assert quota.violations[0].subject == "address:127.0.0.1"

    run(nats_url, database_dsn, body, limits="Guest:address=10/minute")


def test_a_password_is_not_guessed_fast_and_the_owner_keeps_signing_in_elsewhere_later(
    nats_url: str, database_dsn: str
) -> None:
    async def body(s: Stack) -> None:
        await s.player("Ann")
        # the name however written: one account, one count
        names = ["ann", "ANN", "Ann", "aNn", "ａｎｎ", "anN", "ANN"]
        wrong = [
            await refusal_of(s.lobby.Login(lobby_pb2.LoginRequest(name=name, password=f"guess-{n}")))
            for n, name in enumerate(names)
        ]
        assert wrong.count((grpc.StatusCode.UNAUTHENTICATED, "WRONG_CREDENTIALS")) == 5
        assert wrong[5:] == [(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")] * 2
        # the limit is the name's: another account signs in meanwhile
        await s.player("Bo")
        ok = await refusal_of(s.lobby.Login(lobby_pb2.LoginRequest(name="Bo", password=PASSWORD)))
        assert ok == (grpc.StatusCode.OK, "")

    run(nats_url, database_dsn, body, limits="Login:name=5/minute")


def test_open_table_watches_are_limited_per_account(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        table_id = await s.table(owner)
        request = lobby_pb2.WatchTableRequest(table_id=table_id)
        first = s.lobby.WatchTable(request, metadata=owner)
        second = s.lobby.WatchTable(request, metadata=owner)
        assert (await first.read()).table.table_id == table_id
        assert (await second.read()).table.table_id == table_id
        third = s.lobby.WatchTable(request, metadata=owner)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await third.read()
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        first.cancel()
        await asyncio.sleep(0.2)
        again = s.lobby.WatchTable(request, metadata=owner)
        assert (await again.read()).table.table_id == table_id, "a closed stream frees its place"
        second.cancel()
        again.cancel()

    run(nats_url, database_dsn, body, limits="WatchTable:account=2/open")


def test_rules_are_read_exactly() -> None:
    rules = parse_rules("Guest:address=10/minute; Login:name = 5 per minute\nWatch:account=16/open")
    assert {(r.method, r.key, r.text, r.open) for r in rules.values()} == {
        ("Guest", "address", "10/minute", 0),
        ("Login", "name", "5 per minute", 0),
        ("Watch", "account", "16/open", 16),
    }
    for bad in ("Guest=10/minute", "Guest:ip=10/minute", "Guest:address=", "Guest:address=x/open", "Act:account=lots"):
        with pytest.raises(LimitsError):
            parse_rules(bad)
    assert len(parse_rules(RATE_LIMITS)) > 10, "the lobby's own defaults read"
    assert RateLimits(RATE_LIMITS, "off").rules == []
    assert {r.text for r in RateLimits("Guest:address=10/minute", "Guest:address=50/minute").rules} == {"50/minute"}
    assert address_of("ipv4:10.1.2.3:5555") == "10.1.2.3"
    assert address_of("ipv6:[::1]:5555") == "::1"
