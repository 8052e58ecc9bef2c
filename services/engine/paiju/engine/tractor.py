"""What the engine adds for 拖拉机 beyond its rules core and its codecs: a seat's legal actions list one
representative follow, so `GetLegalActions` and a seat's turn also say what any legal follow owes
(``tractor_follow``, §6)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from paiju.rules.cards import Card
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.follow import Requirement, suit_cards
from paiju.rules.tractor.order import TRUMP
from paiju.v1 import engine_pb2, tractor_pb2


def follow_message(owed: Requirement, suit_cards: Sequence[Card]) -> tractor_pb2.TractorFollowRequirement:
    """A follow's requirement as the contract's `TractorFollowRequirement` (``suit_cards``: the seat's cards of the
    led suit class)."""
    trumps = owed.suit_class == TRUMP
    message = tractor_pb2.TractorFollowRequirement(
        count=owed.count,
        trumps=trumps,
        suit_cards=cast(Any, sorted(int(c) + 1 for c in suit_cards)),
        must_include=cast(Any, [int(c) + 1 for c in owed.must_include]),
        exact=len(suit_cards) <= owed.count,
        free=owed.free,
        free_of_suit=owed.free_of_suit,
        pattern=owed.pattern,
    )
    if not trumps:
        message.suit = cast(Any, owed.suit_class + 1)
    return message


def add_follow(
    state: tractor_model.State, seat: int, response: engine_pb2.GetLegalActionsResponse | engine_pb2.Turn
) -> None:
    """Add to a seat's legal actions (a `GetLegalActions` answer or its `Turn`) what its follow owes, when it is the
    seat's turn to follow a trick's lead."""
    owed = tractor_game.follow_requirement(state, seat)
    if owed is not None:
        own = suit_cards(state.hands[seat], owed.suit_class, tractor_game.trumps(state))
        response.tractor_follow.CopyFrom(follow_message(owed, own))
