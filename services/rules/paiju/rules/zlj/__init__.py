"""砸六家 (Za Liu Jia): six players, two decks, tribute and the four-take.

The normative rules are `docs/rules/zalioujia.md`; decisions cite their ids (``D-ZLJ-n``).
"""

from paiju.rules.zlj.game import conserved, decide, default_action, evolve, legal_actions, replay, same_choice
from paiju.rules.zlj.model import (
    Command,
    Cut,
    EndMatch,
    Event,
    Options,
    Outcome,
    Pass,
    Phase,
    PickTribute,
    Play,
    ReturnTribute,
    StartMatch,
    State,
    TakeBack,
    Team,
    Timeout,
)
from paiju.rules.zlj.view import SeatView, redact, view

__all__ = [
    "Command",
    "Cut",
    "EndMatch",
    "Event",
    "Options",
    "Outcome",
    "Pass",
    "Phase",
    "PickTribute",
    "Play",
    "ReturnTribute",
    "SeatView",
    "StartMatch",
    "State",
    "TakeBack",
    "Team",
    "Timeout",
    "conserved",
    "decide",
    "default_action",
    "evolve",
    "legal_actions",
    "redact",
    "replay",
    "same_choice",
    "view",
]
