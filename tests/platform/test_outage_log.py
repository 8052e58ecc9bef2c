"""What a NATS connection tells its log of an outage (`paiju.platform.nats.OutageLog`): nats-py reports a
disconnection and an error at every reconnection attempt, once a second; the log gets the outage's start and first
error, a line a minute while it lasts, and the reconnection with its length — an hour away is some 60 lines per
connection, not 7,200. Errors while connected are each logged."""

from __future__ import annotations

import pytest
import structlog

from paiju.platform.nats import OutageLog

pytestmark = pytest.mark.unit


def test_an_hour_away_is_a_line_a_minute_and_the_reconnection_says_how_long() -> None:
    clock = [100.0]
    outage = OutageLog(structlog.get_logger("test"), every=60.0, now=lambda: clock[0])
    with structlog.testing.capture_logs() as logs:
        for _ in range(3600):  # nats-py: a disconnection and a refused connection at each attempt, every second
            outage.disconnected()
            outage.error(ConnectionRefusedError(111, "Connection refused"))
            clock[0] += 1.0
        outage.reconnected()
    events = [(e["log_level"], e["event"]) for e in logs]
    assert events[:2] == [("warning", "nats disconnected; reconnecting"), ("info", "nats error")]
    still = [e for e in logs if e["event"] == "nats still away; reconnecting"]
    assert len(still) == 59, len(still)
    assert still[0]["away_seconds"] == 60 and "ConnectionRefusedError" in still[0]["error"]
    assert logs[-1]["event"] == "nats reconnected" and logs[-1]["away_seconds"] == 3600.0
    assert logs[-1]["attempts"] == 3600 and len(logs) == 62


def test_errors_while_connected_are_each_logged_and_a_second_outage_is_told_anew() -> None:
    clock = [0.0]
    outage = OutageLog(structlog.get_logger("test"), now=lambda: clock[0])
    with structlog.testing.capture_logs() as logs:
        outage.error(PermissionError("Permissions Violation for Publish to paiju.game.x"))
        outage.error(PermissionError("Permissions Violation for Publish to paiju.game.y"))
        outage.disconnected()
        clock[0] += 2.5
        outage.reconnected()
        outage.disconnected()
        outage.error(ConnectionRefusedError(111, "Connection refused"))
        outage.reconnected()
    assert [e["event"] for e in logs] == [
        "nats error",
        "nats error",
        "nats disconnected; reconnecting",
        "nats reconnected",
        "nats disconnected; reconnecting",
        "nats error",
        "nats reconnected",
    ]
    assert logs[3]["away_seconds"] == 2.5 and logs[3]["attempts"] == 0
