"""Rate limits at the door: how often a client address, an account or a name may call a method, and how many
streams it may hold open (the `limits` library's sliding windows, in this process's memory).

A service declares its limits as text, one rule per method and key, e.g.::

    Guest:address=10/minute; Login:address=30/minute; Login:name=10/minute; Act:account=20/second;
    Watch:account=16/open; Watch:address=5000/open

- ``address``: the client's IP address (several connections from one machine share it);
- ``account``: the authenticated caller (the token's subject: one person, one bot seat, one service);
- ``name``: the name a Login asks for, so that one account's password cannot be guessed fast from many places;
- ``N/period``: at most N calls per sliding period (second, minute, hour, day; "10 per minute" also reads);
- ``N/open``: at most N streams of the method open at once.

``PAIJU_RATE_LIMITS`` adds rules to (or replaces rules of) the service's defaults; ``PAIJU_RATE_LIMITS=off`` turns
every limit off (for benchmarks that load one engine from one machine). A call over a limit is refused with
RESOURCE_EXHAUSTED / RATE_LIMITED, a `google.rpc.RetryInfo` saying when to try again and a
`google.rpc.QuotaFailure` naming the limit. Each replica counts the calls it serves: behind a load balancer that
spreads a client over N replicas the limit is up to N times as high (the guide says how to size it).
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.rpc import error_details_pb2
from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import SlidingWindowCounterRateLimiter

from paiju.platform.errors import Reason, Refused, retry_after

KEYS = ("address", "account", "name")
ENVIRONMENT_VARIABLE = "PAIJU_RATE_LIMITS"


class LimitsError(ValueError):
    """A rule that cannot be read (the message says which and why)."""


@dataclass(frozen=True)
class Rule:
    """One limit: ``method`` by ``key``, a rate (``per``: N/period) or a number of open streams (``open``)."""

    method: str
    key: str
    text: str
    per: RateLimitItem | None = None
    open: int = 0


def parse_rules(text: str) -> dict[tuple[str, str], Rule]:
    """The rules a text declares (``method:key=limit`` separated by ``;`` or newlines)."""
    rules: dict[tuple[str, str], Rule] = {}
    for part in (p.strip() for p in text.replace("\n", ";").split(";")):
        if not part:
            continue
        target, _, limit = part.partition("=")
        method, _, key = target.strip().partition(":")
        method, key, limit = method.strip(), key.strip(), limit.strip()
        if not method or key not in KEYS or not limit:
            raise LimitsError(f"not a rate limit rule (Method:{'|'.join(KEYS)}=N/period or N/open): {part!r}")
        if limit.endswith("/open"):
            count = limit.removesuffix("/open").strip()
            if not count.isdigit():
                raise LimitsError(f"not a number of open streams: {part!r}")
            rules[(method, key)] = Rule(method, key, limit, open=int(count))
            continue
        try:
            rules[(method, key)] = Rule(method, key, limit, per=parse(limit))
        except ValueError as e:
            raise LimitsError(f"not a rate ({e}): {part!r}") from None
    return rules


def address_of(peer: str) -> str:
    """The client's IP address from gRPC's peer string (``ipv4:1.2.3.4:5678``, ``ipv6:[::1]:5678``)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        return rest.rpartition("]")[0].lstrip("[") or rest
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    return peer or "unknown"


class RateLimits:
    """A service's limits (see the module's doc); the edge's `Limits`."""

    def __init__(
        self, defaults: str, override: str | None = None, name_of: Callable[[str, Any], str | None] | None = None
    ) -> None:
        self._name_of = name_of or _login_name
        if override is not None and override.strip().lower() == "off":
            self._rules: dict[tuple[str, str], Rule] = {}
        else:
            self._rules = {**parse_rules(defaults), **parse_rules(override or "")}
        self._limiter = SlidingWindowCounterRateLimiter(MemoryStorage())
        self._open: Counter[tuple[str, str, str]] = Counter()

    @classmethod
    def from_env(
        cls, defaults: str, env: Mapping[str, str], name_of: Callable[[str, Any], str | None] | None = None
    ) -> RateLimits:
        return cls(defaults, env.get(ENVIRONMENT_VARIABLE), name_of)

    @property
    def rules(self) -> list[Rule]:
        return list(self._rules.values())

    def _keys(self, method: str, address: str, account: str | None, name: str | None) -> list[tuple[Rule, str]]:
        values = {"address": address_of(address), "account": account, "name": name}
        found = []
        for key in KEYS:
            rule = self._rules.get((method, key))
            value = values[key]
            if rule is not None and value:
                found.append((rule, value))
        return found

    def check(self, method: str, address: str, account: str | None, request: Any = None) -> None:
        """Count one call; `Refused` (RATE_LIMITED) when it is one too many for any of its limits."""
        name = self._name_of(method, request) if request is not None else None
        for rule, value in self._keys(method, address, account, name):
            if rule.per is None:
                continue
            if not self._limiter.hit(rule.per, method, rule.key, value):
                reset = self._limiter.get_window_stats(rule.per, method, rule.key, value).reset_time
                raise _refusal(rule, value, max(0.0, reset - time.time()))

    @contextlib.asynccontextmanager
    async def stream(self, method: str, address: str, account: str | None) -> AsyncIterator[None]:
        """Hold one of the open streams the limits allow for the call's address and account while it runs."""
        held: list[tuple[str, str, str]] = []
        try:
            for rule, value in self._keys(method, address, account, None):
                if not rule.open:
                    continue
                slot = (method, rule.key, value)
                if self._open[slot] >= rule.open:
                    raise _refusal(rule, value, 1.0)
                self._open[slot] += 1
                held.append(slot)
            yield
        finally:
            for slot in held:
                self._open[slot] -= 1
                if not self._open[slot]:
                    del self._open[slot]


def _login_name(method: str, request: Any) -> str | None:
    """The name a call's ``name`` rules count: a Login's name as asked (a service with a canonical form of names
    passes its own ``name_of``, so that ``Alice`` and ``ALICE`` count as one)."""
    if method != "Login":
        return None
    return str(getattr(request, "name", "")) or None


def _refusal(rule: Rule, value: str, wait: float) -> Refused:
    subject = f"{rule.key}:{value}"
    quota = error_details_pb2.QuotaFailure()
    quota.violations.add(subject=subject, description=f"{rule.method}: at most {rule.text} per {rule.key}")
    what = "open streams" if rule.open else "calls"
    return Refused(
        Reason.RATE_LIMITED,
        f"too many {rule.method} {what} from this {rule.key} (at most {rule.text}): try again in "
        f"{max(1, round(wait))} s",
        {"method": rule.method, "key": rule.key, "limit": rule.text},
        (retry_after(wait), quota),
    )
