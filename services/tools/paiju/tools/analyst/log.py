"""One game's log as an analyst reads it: its envelopes, their rules events, and what may be shown of them.

Hidden information (every hand, the deal seeds, concealed 拖拉机 bids, 砸六家 tribute cards) is shown only
for a game that has ended. While a game is live, every event is shown as the engine shows it to a
spectator: redacted by the rules cores' ``redact`` for no seat (砸六家 §14, 拖拉机 §12 and D-TR-6.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from paiju.engine.games import RULES, History, Rules, seat_count
from paiju.engine.spectating import policy_of, seen_version
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.v1 import engine_pb2

ENDS = (zlj_model.MatchEnded, tractor_model.GameEnded)
"""The events that end a game: from them on, its hidden information may be shown."""


@dataclass(frozen=True, slots=True)
class GameLog:
    """A game's stored envelopes and each one's rules event as stored (``None`` for the engine's own events,
    the seat assignments)."""

    game_id: str
    rules: Rules
    envelopes: tuple[engine_pb2.Envelope, ...]
    events: tuple[Any, ...]
    ended: bool
    """Whether the game as stored is over (then its hands, seeds and concealed bids may be shown)."""

    @property
    def game(self) -> str:
        """The game's name (`paiju.rules.registry`)."""
        return self.rules.name

    @property
    def title(self) -> str:
        """The game's name for people (砸六家, 拖拉机)."""
        return self.rules.game.title

    @property
    def seats(self) -> int:
        return seat_count(self.rules)

    @property
    def version(self) -> int:
        return len(self.envelopes)

    def shown(self, event: Any) -> Any:
        """``event`` as an analyst may see it: as stored for an ended game, else as a spectator sees it."""
        if event is None or self.ended:
            return event
        return self.rules.game.redact(event, None)

    def upto(self, version: int) -> GameLog:
        """The log up to ``version`` (the game's end, and so what is shown, is still judged on the whole log)."""
        return GameLog(self.game_id, self.rules, self.envelopes[:version], self.events[:version], self.ended)


def spectated(log: GameLog) -> GameLog | None:
    """A game's log as its table's spectator policy lets a spectator see it (docs/rules/spectators.md): the whole log
    of an ended game or a public table; ``None`` for a live game of a table that admits no spectators (D-SPEC-1); a
    delayed table's live game up to the version its spectators see (D-SPEC-2)."""
    if log.ended or not log.envelopes:
        return log
    policy = policy_of(log.envelopes[0], log.envelopes)
    if policy.closed:
        return None
    seen = seen_version(log.version, False, policy)
    return log if seen == log.version else log.upto(seen)


def from_game(history: History) -> GameLog:
    """The log of a game the engine's `Games` read from the store (its events are decoded already)."""
    game = history.game
    return GameLog(game.game_id, game.rules, history.envelopes, history.events, _ended(history.events))


def decode(envelopes: Sequence[engine_pb2.Envelope]) -> GameLog:
    """The log of one game's envelopes, in version order (pure: for envelopes read anywhere)."""
    if not envelopes:
        raise ValueError("a game log needs at least one envelope")
    rules = next((RULES[w] for e in envelopes if (w := e.WhichOneof("payload")) in RULES), None)
    if rules is None:
        raise ValueError(f"game {envelopes[0].game_id} has no 砸六家 or 拖拉机 event")
    events = [
        rules.events.decode(getattr(e, rules.name)) if e.WhichOneof("payload") == rules.name else None
        for e in envelopes
    ]
    return GameLog(envelopes[0].game_id, rules, tuple(envelopes), tuple(events), _ended(events))


def _ended(events: Sequence[Any]) -> bool:
    return any(isinstance(e, ENDS) for e in events)


def recorded_at(envelope: engine_pb2.Envelope) -> datetime:
    """When the engine recorded an envelope (UTC)."""
    return envelope.recorded_at.ToDatetime(tzinfo=UTC)
