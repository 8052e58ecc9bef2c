"""Domain errors of the rules cores.

A `RuleError` says which rule a command broke, in words a player understands
("a straight needs the same length: 4 cards vs 3"). The service maps it to a gRPC status at the edge:
`kind` tells which (``malformed`` -> INVALID_ARGUMENT, ``rule`` -> FAILED_PRECONDITION,
``seat`` -> PERMISSION_DENIED).
"""

from __future__ import annotations


class RuleError(Exception):
    """A command the rules reject; the state is unchanged."""

    kind: str = "malformed"

    def __init__(self, reason: str, *, fingerprint: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.fingerprint = fingerprint

    def __str__(self) -> str:
        return f"{self.reason} [{self.fingerprint}]" if self.fingerprint else self.reason


class IllegalAction(RuleError):
    """A well-formed command that the rules of the game forbid now."""

    kind = "rule"


class NotYourTurn(RuleError):
    """A command from a seat that may not act now."""

    kind = "seat"
