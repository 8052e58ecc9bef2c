"""Rate limits at the door: how often a client address, an account or a name may call a method, and how many
streams it may hold open (sliding window counters, counted as the `limits` library counts them, in this process's
memory).

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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from math import floor
from typing import Any

from google.rpc import error_details_pb2
from limits import RateLimitItem, parse

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


def rules_text(text: str) -> str:
    """The rules of a setting (`paiju.platform.settings.RATE_LIMITS`) as written, once they read (`LimitsError`, a
    `ValueError`, says which does not), or ``off``."""
    if text.strip().lower() != "off":
        parse_rules(text)
    return text


def address_of(peer: str) -> str:
    """The client's IP address from gRPC's peer string (``ipv4:1.2.3.4:5678``, ``ipv6:[::1]:5678``)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        return rest.rpartition("]")[0].lstrip("[") or rest
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    return peer or "unknown"


class RateLimits:
    """A service's limits (see the module's doc); the edge's `Limits`.

    Each rate is a sliding window counter, as the `limits` library's ``SlidingWindowCounterRateLimiter`` counts
    (the same arithmetic): the calls of the current fixed window of the rule's period, plus those of the previous
    window weighted by the share of it the sliding window still covers. Counted here in plain dictionaries on
    the event loop's thread — no lock, no timer thread: a key whose windows are both past is dropped by a sweep
    once a period (the library's memory storage started a thread every 10 ms to expire its keys)."""

    def __init__(
        self,
        defaults: str,
        override: str | None = None,
        name_of: Callable[[str, Any], str | None] | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._name_of = name_of or _login_name
        if override is not None and override.strip().lower() == "off":
            self._rules: dict[tuple[str, str], Rule] = {}
        else:
            self._rules = {**parse_rules(defaults), **parse_rules(override or "")}
        self._clock = clock
        self._rates: dict[str, tuple[tuple[Rule, str, _Windows], ...]] = {}
        self._streams: dict[str, tuple[Rule, ...]] = {}
        for (method, key), rule in self._rules.items():
            if rule.per is not None:
                windows = _Windows(rule.per.amount, float(rule.per.get_expiry()))
                self._rates[method] = (*self._rates.get(method, ()), (rule, key, windows))
            elif rule.open:
                self._streams[method] = (*self._streams.get(method, ()), rule)
        for method in self._rates:
            self._rates[method] = tuple(sorted(self._rates[method], key=lambda r: KEYS.index(r[1])))
        for method in self._streams:
            self._streams[method] = tuple(sorted(self._streams[method], key=lambda r: KEYS.index(r.key)))
        self._open: Counter[tuple[str, str, str]] = Counter()

    @property
    def rules(self) -> list[Rule]:
        return list(self._rules.values())

    def keys_for(self, method: str, *, open: bool = False) -> frozenset[str]:
        """What ``method``'s rates (``open``: its open streams) are counted by (none: not limited)."""
        if open:
            return frozenset(rule.key for rule in self._streams.get(method, ()))
        return frozenset(key for _, key, _ in self._rates.get(method, ()))

    def check(self, method: str, address: str, account: str | None, request: Any = None) -> None:
        """Count one call; `Refused` (RATE_LIMITED) when it is one too many for any of its limits (a call refused
        by one limit is not counted by the limits after it)."""
        rates = self._rates.get(method)
        if not rates:
            return
        now = self._clock()
        for rule, key, windows in rates:
            if key == "address":
                value: str | None = address_of(address)
            elif key == "account":
                value = account
            else:
                value = self._name_of(method, request) if request is not None else None
            if not value:
                continue
            wait = windows.hit(value, now)
            if wait is not None:
                raise _refusal(rule, value, wait)

    @contextlib.asynccontextmanager
    async def stream(self, method: str, address: str, account: str | None) -> AsyncIterator[None]:
        """Hold one of the open streams the limits allow for the call's address and account while it runs."""
        held = self.hold(method, address, account)
        try:
            yield
        finally:
            self.release(held)

    def hold(self, method: str, address: str, account: str | None) -> list[tuple[str, str, str]]:
        """Take one of the open streams the limits allow for the call's address and account (`Refused`,
        RATE_LIMITED, when there is none left); what was taken, to `release` when the stream ends."""
        held: list[tuple[str, str, str]] = []
        try:
            for rule in self._streams.get(method, ()):
                value = address_of(address) if rule.key == "address" else account if rule.key == "account" else None
                if not value:
                    continue
                slot = (method, rule.key, value)
                if self._open[slot] >= rule.open:
                    raise _refusal(rule, value, 1.0)
                self._open[slot] += 1
                held.append(slot)
        except BaseException:
            self.release(held)
            raise
        return held

    def release(self, held: list[tuple[str, str, str]]) -> None:
        """Give back the open streams `hold` took."""
        for slot in held:
            self._open[slot] -= 1
            if not self._open[slot]:
                del self._open[slot]


class _Windows:
    """The sliding window counters of one rate (``amount`` calls per ``period`` seconds), one per key value: the
    index of its current fixed window, the calls counted in the window before it and in it."""

    __slots__ = ("_amount", "_counts", "_period", "_sweep_at")

    def __init__(self, amount: int, period: float) -> None:
        self._amount = amount
        self._period = period
        self._counts: dict[str, list[int]] = {}
        self._sweep_at = 0.0

    def hit(self, value: str, now: float) -> float | None:
        """Count a call of ``value`` at ``now``: ``None`` when it is within the rate, otherwise the seconds until
        it would be (the call is then not counted)."""
        counts = self._window(value, now)
        wait = self._over(counts[1], counts[2], now)
        if wait is None:
            counts[2] += 1
        return wait

    def peek(self, value: str, now: float) -> float | None:
        """Whether ``value`` is at its rate at ``now`` (the seconds until it is not), counting nothing."""
        counts = self._counts.get(value)
        if counts is None:
            return None
        period = self._period
        index = int(now / period)
        if counts[0] == index:
            previous, current = counts[1], counts[2]
        elif counts[0] == index - 1:
            previous, current = counts[2], 0
        else:
            return None
        return self._over(previous, current, now)

    def count(self, value: str, now: float) -> None:
        """Count one for ``value`` at ``now``, whatever its rate."""
        self._window(value, now)[2] += 1

    def _window(self, value: str, now: float) -> list[int]:
        """``value``'s counts ``[window index, previous window's, current window's]``, rolled to ``now``'s window
        (and the counts of values idle for a whole period swept now and then)."""
        period = self._period
        index = int(now / period)
        if now >= self._sweep_at:
            self._sweep(index)
            self._sweep_at = now + period
        counts = self._counts.get(value)
        if counts is None:
            counts = self._counts[value] = [index, 0, 0]
        elif counts[0] != index:
            counts[1] = counts[2] if counts[0] == index - 1 else 0
            counts[2] = 0
            counts[0] = index
        return counts

    def _over(self, previous: int, current: int, now: float) -> float | None:
        """The seconds until one more call fits the rate, given the previous and current windows' counts; ``None``
        when it fits now. What the sliding window still covers of the previous window: the library's arithmetic, to
        the bit."""
        period = self._period
        previous_left = (1 - (((now - period) / period) % 1)) * period if previous else 0.0
        if floor(previous * previous_left / period + current) + 1 > self._amount:
            return _reset_in(previous, previous_left, current, (1 - ((now / period) % 1)) * period + period, period)
        return None

    def forget(self, value: str) -> None:
        """Drop ``value``'s counts."""
        self._counts.pop(value, None)

    def uncount(self, value: str) -> None:
        """Take back one count of ``value``'s current window (one `count` made a moment ago)."""
        counts = self._counts.get(value)
        if counts is not None and counts[2] > 0:
            counts[2] -= 1

    def _sweep(self, index: int) -> None:
        """Drop the counters whose windows are both past (they count nothing any more)."""
        stale = [value for value, counts in self._counts.items() if counts[0] < index - 1]
        for value in stale:
            del self._counts[value]


def _reset_in(previous: int, previous_left: float, current: int, current_left: float, period: float) -> float:
    """When a refused key may call again (the `limits` library's ``get_window_stats`` reset time): the previous
    window's next call to lose its weight, or the current window's end."""
    waits = []
    if previous:
        waits.append(previous_left % (period / previous))
    if current:
        waits.append(current_left % period)
    return max(0.0, min(waits)) if waits else 0.0


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


LOGIN_FAILURES = "name_address=10/15 minutes; address=50/hour"
"""The wrong passwords a Login may meet before more attempts are refused without being checked: per name and
client address (``name_address``), and per client address whatever the names (``address``)."""
FAILURE_KEYS = ("name_address", "address")


def parse_failures(text: str) -> dict[str, RateLimitItem]:
    """The failure limits a text declares (``name_address=N/period; address=N/period``), or `LimitsError`."""
    found: dict[str, RateLimitItem] = {}
    for part in (p.strip() for p in text.replace("\n", ";").split(";")):
        if not part:
            continue
        key, _, limit = (s.strip() for s in part.partition("="))
        if key not in FAILURE_KEYS or not limit:
            raise LimitsError(f"not a login failure limit ({'|'.join(FAILURE_KEYS)}=N/period): {part!r}")
        try:
            found[key] = parse(limit)
        except ValueError as e:
            raise LimitsError(f"not a rate ({e}): {part!r}") from None
    return found


def failures_text(text: str) -> str:
    """A login failures setting as written, once it reads (`LimitsError`, a `ValueError`, otherwise), or ``off``."""
    if text.strip().lower() != "off":
        parse_failures(text)
    return text


class LoginFailures:
    """Wrong passwords counted per (name, client address) and per client address, in sliding windows.

    A Login calls `attempt` *before* its password is checked: an address that has met its limit for that name, or
    its limit over all names, is refused (RESOURCE_EXHAUSTED / RATE_LIMITED, with a RetryInfo) and its password is
    not checked at all — so a refused attempt costs no password hashing and tells nothing. An attempt let through
    is counted as a failure at once (so a burst of attempts sent together cannot all pass before the first answer);
    a right password takes it back and forgets that address's failures for the name (`succeeded`). The limit of a
    name is its own per address: ten wrong passwords for ``ann`` from one place refuse that place only, and ``ann``
    signs in from anywhere else — nobody can lock a player out from afar. Counted in this process's memory, like
    the rate limits (each replica its own)."""

    def __init__(self, text: str = LOGIN_FAILURES, *, clock: Callable[[], float] = time.time) -> None:
        limits = {} if text.strip().lower() == "off" else parse_failures(text)
        self._clock = clock
        self._rules = tuple(
            (key, item, _Windows(item.amount, float(item.get_expiry())))
            for key, item in sorted(limits.items(), key=lambda kv: FAILURE_KEYS.index(kv[0]))
        )

    @staticmethod
    def _value(key: str, name: str, address: str) -> str:
        return f"{name}@{address}" if key == "name_address" else address

    def attempt(self, name: str, peer: str) -> None:
        """`Refused` (RATE_LIMITED) when ``peer``'s address may not try a password for ``name`` now; otherwise the
        attempt is counted as a failure until `succeeded` takes it back."""
        now = self._clock()
        address = address_of(peer)
        for key, item, windows in self._rules:
            wait = windows.peek(self._value(key, name, address), now)
            if wait is not None:
                subject = f"{key}:{address}"
                quota = error_details_pb2.QuotaFailure()
                quota.violations.add(subject=subject, description=f"Login: at most {item} wrong passwords per {key}")
                whose = "for this name from this address" if key == "name_address" else "from this address"
                raise Refused(
                    Reason.RATE_LIMITED,
                    f"too many wrong passwords {whose}: try again in {max(1, round(wait))} s",
                    {"method": "Login", "key": key, "limit": f"{item.amount} failures"},
                    (retry_after(wait), quota),
                )
        for key, _, windows in self._rules:
            windows.count(self._value(key, name, address), now)

    def succeeded(self, name: str, peer: str) -> None:
        """The password was right: forget ``peer``'s address's failures for ``name`` and take back the attempt."""
        address = address_of(peer)
        for key, _, windows in self._rules:
            if key == "name_address":
                windows.forget(self._value(key, name, address))
            else:
                windows.uncount(self._value(key, name, address))
