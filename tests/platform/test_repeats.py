"""The warnings of loops whose dependency is away (`paiju.platform.retry.report`, `Repeats`): each loop fails a step
every few seconds while NATS or PostgreSQL is away, and each failure was a line (a lobby: 170 lines in two and a half
minutes). A warning's repeats are held back and counted: the first at once, then about a line a minute carrying how
many were held back. A fault of ours is logged with its traceback every time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import structlog

from paiju.platform import edge
from paiju.platform import repeats as repeating
from paiju.platform.errors import Reason, Refused
from paiju.platform.repeats import Repeats
from paiju.platform.retry import report, until_done

pytestmark = pytest.mark.unit


def test_a_warning_repeated_every_five_seconds_for_ten_minutes_is_a_line_a_minute() -> None:
    clock = [0.0]
    repeats = Repeats(every=60.0, now=lambda: clock[0])
    log = structlog.get_logger("test")
    with structlog.testing.capture_logs() as logs:
        for attempt in range(120):  # a consumer's backoff at its most: a failure every 5 s for 10 minutes
            repeats.warn(log, "a stream consumer's batch failed", error=f"timeout {attempt}", consumer="ratings")
            clock[0] += 5.0
    assert len(logs) == 10, [e.get("repeated") for e in logs]
    assert "repeated" not in logs[0] and logs[0]["error"] == "timeout 0"
    assert [e["repeated"] for e in logs[1:]] == [11] * 9  # the 11 held back in each minute, then the line itself
    assert all(e["log_level"] == "warning" and e["consumer"] == "ratings" for e in logs)


def test_warnings_of_different_loops_are_each_told_and_a_warning_after_a_quiet_minute_at_once() -> None:
    clock = [0.0]
    repeats = Repeats(every=60.0, now=lambda: clock[0])
    log = structlog.get_logger("test")
    with structlog.testing.capture_logs() as logs:
        repeats.warn(log, "a stream consumer's batch failed", error="x", consumer="ratings")
        repeats.warn(log, "a stream consumer's batch failed", error="x", consumer="standings")
        repeats.warn(log, "the presence heartbeat could not be written", error="x")
        repeats.warn(log, "a stream consumer's batch failed", error="y", consumer="ratings")  # held back
        clock[0] += 61.0
        repeats.warn(log, "a stream consumer's batch failed", error="z", consumer="standings")  # a new outage
    assert [(e["event"], e.get("consumer"), e.get("repeated")) for e in logs] == [
        ("a stream consumer's batch failed", "ratings", None),
        ("a stream consumer's batch failed", "standings", None),
        ("the presence heartbeat could not be written", None, None),
        ("a stream consumer's batch failed", "standings", None),
    ]


def test_the_warnings_counted_at_once_are_bounded() -> None:
    repeats = Repeats(every=60.0, kept=8, now=lambda: 0.0)
    log = structlog.get_logger("test")
    with structlog.testing.capture_logs() as logs:
        for game in range(100):  # facts that name a game: one warning each
            repeats.warn(log, "a turn timer failed", error="x", game=f"g{game}")
        repeats.warn(log, "a turn timer failed", error="x", game="g0")  # forgotten: logged as new
        repeats.warn(log, "a turn timer failed", error="x", game="g99")  # still counted: held back
    assert len(logs) == 101
    assert len(repeats._said) == 8


def test_report_holds_back_a_dependency_away_but_logs_every_fault_of_ours_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(repeating, "REPEATS", Repeats(every=60.0, now=lambda: 0.0))
    log = structlog.get_logger("test")
    with structlog.testing.capture_logs() as logs:
        for _ in range(5):
            report(log, "matches could not be formed", ConnectionRefusedError(111, "refused"))
        for _ in range(3):
            report(log, "matches could not be formed", KeyError("a bug"))
    assert [e["log_level"] for e in logs] == ["warning", "error", "error", "error"]
    assert all(isinstance(e["exc_info"], KeyError) for e in logs[1:])


def test_until_done_says_it_waits_for_a_dependency_once_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repeating, "REPEATS", Repeats(every=60.0, now=lambda: 0.0))
    tries = [0]

    async def step() -> None:
        tries[0] += 1
        if tries[0] < 20:
            raise Refused(Reason.DEPENDENCY_UNAVAILABLE, "the store is away")

    with structlog.testing.capture_logs() as logs:
        asyncio.run(
            asyncio.wait_for(
                until_done(step, structlog.get_logger("test"), every=0.0, waiting="waiting for the store", failed="x"),
                timeout=5,
            )
        )
    assert tries[0] == 20
    assert [(e["event"], e["error"]) for e in logs] == [("waiting for the store", "the store is away")]


class Aborted(Exception):
    pass


class Context:
    """What `edge._answer` needs of a call's context: its abort."""

    async def abort(self, code: object, details: str, trailing_metadata: object = ()) -> None:
        raise Aborted(details)


def test_refusals_a_flood_or_an_outage_repeats_are_a_line_a_minute_and_the_others_each_a_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A flood throttled call after call (RATE_LIMITED), calls refused while a dependency is away, or while the server
    drains, and the stale moves of play: a line a minute per method and reason. Any other refusal of the request
    itself is a line each."""
    clock = [0.0]
    monkeypatch.setattr(repeating, "REPEATS", Repeats(every=60.0, now=lambda: clock[0]))

    async def answer(method: str, error: BaseException) -> None:
        with pytest.raises(Aborted):
            await edge._answer(method, error, Context())  # type: ignore[arg-type]

    async def calls() -> None:
        for n in range(1000):  # a client flooding GetView, throttled
            await answer("GetView", Refused(Reason.RATE_LIMITED, f"slow down ({n})"))
        for version in range(3):
            await answer("Act", Refused(Reason.DEPENDENCY_UNAVAILABLE, "the store is away"))
            await answer("Act", ConnectionRefusedError(111, "refused"))  # a dependency failing mid-call
            await answer("Act", Refused(Reason.RULE_VIOLATION, "not a legal play"))
            await answer("Act", Refused(Reason.STALE_VERSION, f"the game is at version {version + 8}, not 7"))
        clock[0] += 61.0
        await answer("GetView", Refused(Reason.RATE_LIMITED, "slow down"))

    with structlog.testing.capture_logs() as logs:
        asyncio.run(calls())
    told = [(e["event"], e.get("method"), e.get("reason"), e.get("repeated")) for e in logs]
    assert told == [
        ("refused", "GetView", "RATE_LIMITED", None),
        ("refused", "Act", "DEPENDENCY_UNAVAILABLE", None),
        ("dependency failed", "Act", None, None),
        ("refused", "Act", "RULE_VIOLATION", None),
        ("refused", "Act", "STALE_VERSION", None),  # routine in play: several seats act at one version
        ("refused", "Act", "RULE_VIOLATION", None),
        ("refused", "Act", "RULE_VIOLATION", None),
        ("refused", "GetView", "RATE_LIMITED", 999),
    ], told


def test_repeats_held_back_when_none_follows_are_told_once_their_minute_is_over() -> None:
    """A flood that stops, an outage that ends: no next line would carry the count, so `flush` logs it (the last
    repeat, with ``repeated``) once the kind's minute is over, and not before."""
    clock = [0.0]
    repeats = Repeats(every=60.0, now=lambda: clock[0])
    log = structlog.get_logger("test")
    with structlog.testing.capture_logs() as logs:
        for n in range(1000):  # a flood within a second, then nothing
            repeats.warn(log, "refused", method="GetView", reason="RATE_LIMITED", message=f"slow down ({n})")
        clock[0] = 30.0
        repeats.flush()  # its minute is not over: nothing yet
        assert len(logs) == 1
        clock[0] = 60.0
        repeats.flush()
        repeats.flush()  # told once
        clock[0] = 200.0
        repeats.flush()
    assert [(e["message"], e.get("repeated")) for e in logs] == [("slow down (0)", None), ("slow down (999)", 999)]


def test_a_running_event_loop_tells_the_count_by_itself_and_arms_no_timer_while_nothing_is_held_back() -> None:
    repeats = Repeats(every=0.05)  # the real clock, a minute of 50 ms
    told: list[tuple[str, Any, dict[str, Any]]] = []

    def say(event: str, **facts: Any) -> None:  # a logger's method, and what is bound when it is called
        told.append((event, facts.get("repeated"), structlog.contextvars.get_contextvars()))

    async def outage() -> None:
        structlog.contextvars.bind_contextvars(game="g1")  # bound by the call that arms the timer: not its line's
        repeats.tell(say, "waiting for the store", error="away")
        assert repeats._timer is None, "nothing held back: no timer"
        for _ in range(4):
            repeats.tell(say, "waiting for the store", error="away")
        assert repeats._timer is not None
        await asyncio.sleep(0.2)  # the dependency came back: no more warnings
        assert repeats._timer is None, "nothing held back any more: no timer"

    asyncio.run(outage())
    assert told == [("waiting for the store", None, {"game": "g1"}), ("waiting for the store", 4, {})]

    async def ended_early() -> None:  # a loop that ends with a timer armed: the next loop arms its own
        repeats.tell(say, "a refusal", reason="RATE_LIMITED")
        repeats.tell(say, "a refusal", reason="RATE_LIMITED")

    async def later() -> None:
        await asyncio.sleep(0.1)
        repeats.tell(say, "a refusal", reason="DRAINING")
        repeats.tell(say, "a refusal", reason="DRAINING")
        await asyncio.sleep(0.2)

    told.clear()
    asyncio.run(ended_early())
    asyncio.run(later())
    assert [(event, repeated) for event, repeated, _ in told] == [
        ("a refusal", None),
        ("a refusal", None),
        ("a refusal", 1),  # RATE_LIMITED's or DRAINING's, told by the second loop's timer
        ("a refusal", 1),
    ]


def test_a_kind_forgotten_past_the_bound_tells_what_it_held_back() -> None:
    repeats = Repeats(every=60.0, kept=2, now=lambda: 0.0)
    log = structlog.get_logger("test")
    with structlog.testing.capture_logs() as logs:
        repeats.warn(log, "a turn timer failed", error="x", game="g1")
        repeats.warn(log, "a turn timer failed", error="x", game="g1")  # held back
        repeats.warn(log, "a turn timer failed", error="x", game="g2")
        repeats.warn(log, "a turn timer failed", error="x", game="g3")  # g1 forgotten: its repeat told
    assert [(e["game"], e.get("repeated")) for e in logs] == [("g1", None), ("g2", None), ("g3", None), ("g1", 1)]
