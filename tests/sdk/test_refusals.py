"""The client SDK reads refusals as the services write them (the error model: status, reason, rule, retry time)."""

from __future__ import annotations

import grpc

from paiju.platform.edge import unavailable
from paiju.platform.errors import Reason, Refused
from paiju.sdk import Refusal, backoff, refusal_of
from paiju.v1 import engine_pb2

from ..support.rpc import rpc_error


def test_a_rule_violation_names_its_reason_and_rule() -> None:
    violation = engine_pb2.RuleViolation(reason="it does not beat the current play", rule="§4")
    refusal = refusal_of(rpc_error(Refused(Reason.RULE_VIOLATION, "no", {"rule": "§4"}, (violation,))))
    assert refusal.code == grpc.StatusCode.FAILED_PRECONDITION and refusal.reason == "RULE_VIOLATION"
    assert refusal.violation == violation and refusal.metadata == {"rule": "§4"} and not refusal.retryable


def test_an_outage_is_retryable_after_the_time_it_names() -> None:
    refusal = refusal_of(rpc_error(unavailable("nats:GAMES")))
    assert refusal.retryable and refusal.reason == "DEPENDENCY_UNAVAILABLE" and refusal.retry_after == 1.0


def test_an_error_without_details_is_its_bare_status() -> None:
    error = grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(), "gone")
    assert refusal_of(error) == Refusal(grpc.StatusCode.UNAVAILABLE, "gone")


def test_backoff_doubles_up_to_its_most() -> None:
    assert [backoff(n) for n in (1, 2, 3)] == [0.1, 0.2, 0.4] and backoff(30) == 5.0
