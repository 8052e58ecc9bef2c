"""The rate limits' counters: they decide every call — allowed, or refused with the same wait — exactly as the
`limits` library's sliding window counter did (the edge counted with it before), without its lock and timer
thread; open streams are held and freed; counters whose windows are past are forgotten."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest
from google.rpc import error_details_pb2
from limits.storage import MemoryStorage
from limits.strategies import SlidingWindowCounterRateLimiter

from paiju.platform.errors import Reason, Refused
from paiju.platform.limits import KEYS, RateLimits, address_of, parse_rules

RULES = "Act:account=5/second; Act:address=8/second; Login:address=4/minute; Login:name=3/minute; Watch:account=2/open"


class Library:
    """The edge's limits as they were counted with the library (`SlidingWindowCounterRateLimiter`, memory)."""

    def __init__(self, text: str) -> None:
        self._rules = parse_rules(text)
        self._limiter = SlidingWindowCounterRateLimiter(MemoryStorage())

    def check(self, method: str, address: str, account: str | None, name: str | None) -> tuple[str, float] | None:
        values = {"address": address_of(address), "account": account, "name": name}
        for key in KEYS:
            rule = self._rules.get((method, key))
            value = values[key]
            if rule is None or not value or rule.per is None:
                continue
            if not self._limiter.hit(rule.per, method, rule.key, value):
                reset = self._limiter.get_window_stats(rule.per, method, rule.key, value).reset_time
                return key, max(0.0, reset - time.time())
        return None


def outcome(limits: RateLimits, method: str, address: str, account: str | None, name: str | None) -> Any:
    request = type("Login", (), {"name": name})() if name else None
    try:
        limits.check(method, address, account, request)
    except Refused as refused:
        assert refused.reason is Reason.RATE_LIMITED
        retry = next(d for d in refused.details if isinstance(d, error_details_pb2.RetryInfo))
        return refused.metadata["key"], retry.retry_delay.ToNanoseconds() / 1e9
    return None


def test_calls_are_allowed_and_refused_as_the_library_counted_them(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_700_000_000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])  # the library reads time.time
    ours = RateLimits(RULES, clock=lambda: clock[0])
    theirs = Library(RULES)
    rng = random.Random(7)
    refused = 0
    for _ in range(6000):
        clock[0] += rng.choice((0.0, 0.0, 0.0, 0.0, 0.001, 0.01, 0.03, 0.05, 0.2, 0.7, 3.0, 61.0))
        method = rng.choice(("Act", "Act", "Act", "Login"))
        address = f"ipv4:10.0.0.{rng.randrange(3)}:{rng.randrange(1000, 2000)}"
        account = rng.choice(("ann", "bo", None)) if method == "Act" else None
        name = rng.choice(("ann", "bo", "cy")) if method == "Login" else None
        expected = theirs.check(method, address, account, name)
        found = outcome(ours, method, address, account, name)
        if expected is None:
            assert found is None
        else:
            refused += 1
            assert found is not None and found[0] == expected[0]
            assert found[1] == pytest.approx(expected[1], abs=1e-6)
    assert 150 < refused < 5000, "both allowed and refused calls were compared"


def test_open_streams_are_held_while_they_run() -> None:
    limits = RateLimits(RULES)

    async def body() -> None:
        async with limits.stream("Watch", "ipv4:10.0.0.1:5", "ann"), limits.stream("Watch", "ipv4:10.0.0.1:6", "ann"):
            with pytest.raises(Refused) as third:
                async with limits.stream("Watch", "ipv4:10.0.0.1:7", "ann"):
                    pass
            assert third.value.metadata == {"method": "Watch", "key": "account", "limit": "2/open"}
            async with limits.stream("Watch", "ipv4:10.0.0.1:7", "bo"):  # another account's own
                pass
        async with limits.stream("Watch", "ipv4:10.0.0.1:8", "ann"):  # freed when they ended
            pass

    asyncio.run(body())
    assert limits.keys_for("Watch", open=True) == {"account"} and limits.keys_for("Watch") == frozenset()
    assert limits.keys_for("Login") == {"address", "name"} and limits.keys_for("GetView") == frozenset()


def test_counters_whose_windows_are_past_are_forgotten() -> None:
    clock = [1_700_000_000.0]
    limits = RateLimits("Act:account=5/second", clock=lambda: clock[0])
    for n in range(1000):
        limits.check("Act", "", f"account-{n}")
    clock[0] += 2.5  # two windows later
    limits.check("Act", "", "account-new")
    windows = limits._rates["Act"][0][2]
    assert list(windows._counts) == ["account-new"]
