"""The web view's gateway without a stack: which address a client has behind a trusted proxy, and which ids are
refused before any call."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from paiju.platform.limits import RateLimits
from paiju.tools.web.config import LIMITS
from paiju.tools.web.gateway import Gateway, Problem, checked_id, trusted_proxies

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
