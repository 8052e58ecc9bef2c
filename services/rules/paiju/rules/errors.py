"""Domain errors of the rules cores.

A `RuleError` says which rule a command broke, in words a player understands
("a straight needs the same length: 4 cards vs 3"). The service maps it to a gRPC status at the edge:
`kind` tells which (``malformed`` -> INVALID_ARGUMENT, ``rule`` -> FAILED_PRECONDITION,
``seat`` -> PERMISSION_DENIED).
"""

from __future__ import annotations

import re

RULE_ID = r"(?:§[0-9]+(?:\.[0-9]+)*|D-(?:ZLJ|TR)-[0-9]+(?:\.[0-9]+)*)"
"""A rule id of the rules files: a section ``§6`` or its numbered item ``§6.2``, a decision ``D-ZLJ-2``,
``D-TR-6`` or its numbered item ``D-TR-6.2``."""
CITATION = re.compile(rf"\(\s*({RULE_ID})(?:\s*[;,]\s*{RULE_ID})*\s*\)\s*$")
"""A reason's closing citation: rule ids in parentheses at its very end, ``(§4)`` or ``(§4; D-ZLJ-2)``."""


def cited_rule(reason: str) -> str:
    """The first rule id of the citation that ends ``reason``, or ``""`` when it ends with none."""
    cited = CITATION.search(reason)
    return cited.group(1) if cited else ""


class RuleError(Exception):
    """A command the rules reject; the state is unchanged.

    Attributes:
        reason: what is wrong, for a person (the message; ``str()`` adds the state fingerprint).
        fingerprint: a short description of the state, or ``""``.
        rule: the id of the rule the command broke, as the rules files write it (``"§6"``, ``"§6.2"``,
            ``"D-ZLJ-2"``, ``"D-TR-6.2"``), or ``""`` when the error names none (some malformed commands).
            Given as ``rule=``; otherwise the first id of the citation that ends ``reason``
            (``"... (§4)"``, ``"... (§4; D-ZLJ-2)"``).
        kind: how the service classifies it: ``malformed`` (the command cannot mean anything: a seat out of
            range, unknown card ids, an unknown command), ``rule`` (`IllegalAction`: a well-formed command
            the rules forbid now) or ``seat`` (`NotYourTurn`: a wrong seat or a command out of turn).
    """

    kind: str = "malformed"

    def __init__(self, reason: str, *, fingerprint: str = "", rule: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.fingerprint = fingerprint
        self.rule = rule or cited_rule(reason)

    def __str__(self) -> str:
        return f"{self.reason} [{self.fingerprint}]" if self.fingerprint else self.reason


class IllegalAction(RuleError):
    """A well-formed command that the rules of the game forbid now."""

    kind = "rule"


class NotYourTurn(RuleError):
    """A command from a seat that may not act now."""

    kind = "seat"
