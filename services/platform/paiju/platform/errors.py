"""Refusals: what every Paiju service answers when it will not do what was asked (the contract's error model,
protos/paiju/v1/errors.proto).

A use case refuses by raising `Refused` with a `Reason` — the stable, machine-readable name a client switches
on —, a message a person understands, and the facts of the case as string metadata. The gRPC edge
(`paiju.platform.edge`) turns it into the status: the code that goes with the reason (`CODES`), the message,
and a `google.rpc.Status` in the trailers holding a `google.rpc.ErrorInfo` (domain ``paiju.v1``) and any
further details (a `BadRequest`, a `RuleViolation`, a `RetryInfo`). Nothing here depends on gRPC, so the
rules of who may do what can refuse without knowing how the answer travels.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from google.protobuf import duration_pb2
from google.rpc import error_details_pb2

DOMAIN = "paiju.v1"
"""`google.rpc.ErrorInfo.domain` of every Paiju refusal."""


class Reason(StrEnum):
    """The reasons of `ErrorReason` in errors.proto, by the same names (a test keeps the two equal)."""

    INVALID_REQUEST = "INVALID_REQUEST"
    MALFORMED_MESSAGE = "MALFORMED_MESSAGE"
    WRONG_GAME_KIND = "WRONG_GAME_KIND"
    MALFORMED_COMMAND = "MALFORMED_COMMAND"
    INVALID_OPTIONS = "INVALID_OPTIONS"
    TOKEN_MISSING = "TOKEN_MISSING"
    TOKEN_INVALID = "TOKEN_INVALID"
    TOKEN_EXPIRED = "TOKEN_EXPIRED"
    TOKEN_REVOKED = "TOKEN_REVOKED"
    WRONG_CREDENTIALS = "WRONG_CREDENTIALS"
    SESSION_REQUIRED = "SESSION_REQUIRED"
    ROLE_REQUIRED = "ROLE_REQUIRED"
    GAME_NOT_FOUND = "GAME_NOT_FOUND"
    GAME_EXISTS = "GAME_EXISTS"
    NOT_YOUR_TURN = "NOT_YOUR_TURN"
    NOT_YOUR_SEAT = "NOT_YOUR_SEAT"
    SEAT_LOST = "SEAT_LOST"
    RULE_VIOLATION = "RULE_VIOLATION"
    STALE_VERSION = "STALE_VERSION"
    COMMAND_ID_REUSED = "COMMAND_ID_REUSED"
    SEAT_CHANGE_REFUSED = "SEAT_CHANGE_REFUSED"
    VERSION_NOT_REACHED = "VERSION_NOT_REACHED"
    TABLE_NOT_FOUND = "TABLE_NOT_FOUND"
    TABLE_EXISTS = "TABLE_EXISTS"
    NOT_TABLE_OWNER = "NOT_TABLE_OWNER"
    SEAT_TAKEN = "SEAT_TAKEN"
    TABLE_FULL = "TABLE_FULL"
    ALREADY_SEATED = "ALREADY_SEATED"
    NOT_SEATED = "NOT_SEATED"
    MATCH_IN_PROGRESS = "MATCH_IN_PROGRESS"
    SEAT_EMPTY = "SEAT_EMPTY"
    SEAT_HELD_BY_BOT = "SEAT_HELD_BY_BOT"
    TABLE_NOT_READY = "TABLE_NOT_READY"
    NO_MATCH_YET = "NO_MATCH_YET"
    SEAT_LEASED = "SEAT_LEASED"
    PLAYER_NOT_FOUND = "PLAYER_NOT_FOUND"
    NAME_TAKEN = "NAME_TAKEN"
    NAME_CONFUSABLE = "NAME_CONFUSABLE"
    NAME_INVALID = "NAME_INVALID"
    PASSWORD_WEAK = "PASSWORD_WEAK"
    NOT_YOUR_RUNNER_ID = "NOT_YOUR_RUNNER_ID"
    NAME_RESERVED = "NAME_RESERVED"
    TABLE_LIMIT = "TABLE_LIMIT"
    PARTY_NOT_FOUND = "PARTY_NOT_FOUND"
    NOT_PARTY_LEADER = "NOT_PARTY_LEADER"
    PARTY_FULL = "PARTY_FULL"
    INVITE_LIMIT = "INVITE_LIMIT"
    ALREADY_IN_PARTY = "ALREADY_IN_PARTY"
    NOT_INVITED = "NOT_INVITED"
    ALREADY_QUEUED = "ALREADY_QUEUED"
    NOT_QUEUED = "NOT_QUEUED"
    TOURNAMENT_NOT_FOUND = "TOURNAMENT_NOT_FOUND"
    TOURNAMENT_EXISTS = "TOURNAMENT_EXISTS"
    TEAM_NOT_FOUND = "TEAM_NOT_FOUND"
    TEAM_EXISTS = "TEAM_EXISTS"
    REGISTRATION_CLOSED = "REGISTRATION_CLOSED"
    TOURNAMENT_STATE = "TOURNAMENT_STATE"
    ROUND_NOT_FOUND = "ROUND_NOT_FOUND"
    RESULT_STATE = "RESULT_STATE"
    NOT_TEAM_MEMBER = "NOT_TEAM_MEMBER"
    APPEAL_STATE = "APPEAL_STATE"
    CONSENT_PENDING = "CONSENT_PENDING"
    SCORE_NOT_FOUND = "SCORE_NOT_FOUND"
    RATE_LIMITED = "RATE_LIMITED"
    DEPENDENCY_UNAVAILABLE = "DEPENDENCY_UNAVAILABLE"
    DRAINING = "DRAINING"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    CONTENTION = "CONTENTION"


class Contention(Exception):
    """Another writer kept changing the aggregate while this one tried, past the retries allowed: the edge answers
    ABORTED / CONTENTION, and the caller tries again."""


class Unavailable(Exception):
    """A dependency (NATS, PostgreSQL, another service) cannot do what the call needs now: the edge answers
    UNAVAILABLE / DEPENDENCY_UNAVAILABLE, and the caller retries. The message names what is missing."""


class Refused(Exception):
    """A refusal: the stable ``reason``, a ``message`` for people, ``metadata`` (the facts, as strings) and
    ``details`` (further `google.rpc` or contract messages for the status, e.g. a `RuleViolation`)."""

    def __init__(
        self,
        reason: Reason,
        message: str,
        metadata: Mapping[str, object] | None = None,
        details: tuple[Any, ...] = (),
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.metadata = {key: str(value) for key, value in (metadata or {}).items()}
        self.details = details

    def __repr__(self) -> str:
        return f"Refused({self.reason.value}, {self.message!r})"


def retry_after(seconds: float) -> error_details_pb2.RetryInfo:
    """A `google.rpc.RetryInfo` detail: try again after ``seconds``."""
    delay = duration_pb2.Duration()
    delay.FromNanoseconds(max(0, int(seconds * 1e9)))
    return error_details_pb2.RetryInfo(retry_delay=delay)
