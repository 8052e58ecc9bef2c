"""Refusals as the contract states them: each error a Paiju service answers carries a ``google.rpc.Status`` in its
trailers (`grpcio-status` reads it) with an ``ErrorInfo`` (domain ``paiju.v1``, a stable reason from
errors.proto), and for a move against the rules a ``paiju.v1.RuleViolation`` naming the rule; a refusal to try
again later carries a ``RetryInfo``."""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from paiju.platform.errors import DOMAIN
from paiju.v1 import engine_pb2

RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED})
"""Codes after which the same call may simply be tried again (the connection or a dependency, not the request):
CANCELLED is a stopping server's answer to calls in flight. A change retried keeps its command id, so it applies
once."""
SEAT_GONE = frozenset({grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED})
"""Codes with which the engine tells a seat's client its token no longer sees or acts for the seat: another player
holds it now (SEAT_LOST), or the token lapsed or was refused."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """What a service answered instead of a result."""

    code: grpc.StatusCode
    message: str
    reason: str = ""
    """The stable reason (errors.proto's ``ErrorReason`` name), empty when the answer carried none."""
    metadata: dict[str, str] = field(default_factory=dict)
    violation: engine_pb2.RuleViolation | None = None
    """For a move against the rules: the rule it broke."""
    retry_after: float | None = None
    """Seconds to wait before trying again, when the service said."""

    @property
    def retryable(self) -> bool:
        return self.code in RETRYABLE


def refusal_of(error: grpc.aio.AioRpcError) -> Refusal:
    """The refusal an RPC error carries (what the status details say; the bare code and text without them)."""
    code, message = error.code(), error.details() or ""
    try:
        status = rpc_status.from_call(error)
    except ValueError:  # details that do not match the call's status: only the bare status is trusted
        status = None
    if status is None:
        return Refusal(code, message)
    reason, metadata, violation, retry_after = "", {}, None, None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            if info.domain == DOMAIN:
                reason, metadata = info.reason, dict(info.metadata)
        elif detail.Is(engine_pb2.RuleViolation.DESCRIPTOR):
            violation = engine_pb2.RuleViolation()
            detail.Unpack(violation)
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            retry_after = retry.retry_delay.ToTimedelta().total_seconds()
    return Refusal(code, status.message or message, reason, metadata, violation, retry_after)


def backoff(failures: int, base: float = 0.1, most: float = 5.0) -> float:
    """Seconds to wait after ``failures`` failures in a row: ``base``, twice that, four times... up to ``most``."""
    return float(min(most, base * 2 ** max(0, failures - 1)))
