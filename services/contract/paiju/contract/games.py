"""Every game over the generated contract (`make protos` generates `paiju.v1`): one `GameCodecs` per game of the
rules registry (`paiju.rules.registry`), by the game's name (`GAMES`) — its codecs, its ``Game`` value and the field
of its options — so that the engine, the lobby, scoring and the clients look a game up here instead of pairing the
codecs with the rules themselves. A third game is a third entry here, among the places docs/contributing.md,
"Adding a game", lists.

The contract names every game-specific field after the game: the ``zlj`` / ``tractor`` member of a view's, a
command's or an envelope's oneof is the game's name, and its options are the ``<name>_options`` field of the
requests, tables and lobby events that carry options.
"""

from __future__ import annotations

from dataclasses import dataclass

from paiju.contract.codec import Codec, OneofCodec
from paiju.rules import registry
from paiju.rules.registry import GameRules
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.v1 import cards_pb2, engine_pb2, tractor_pb2, zlj_pb2

ZLJ = Codec(zlj_pb2, "Zlj", cards_pb2.CardList)
TRACTOR = Codec(tractor_pb2, "Tractor", cards_pb2.CardList)
ZLJ_EVENTS = OneofCodec(ZLJ, zlj_pb2.ZljEvent, zlj_model.Event, "event")
ZLJ_COMMANDS = OneofCodec(ZLJ, zlj_pb2.ZljCommand, zlj_model.Command, "command")
TRACTOR_EVENTS = OneofCodec(TRACTOR, tractor_pb2.TractorEvent, tractor_model.Event, "event")
TRACTOR_COMMANDS = OneofCodec(TRACTOR, tractor_pb2.TractorCommand, tractor_model.Command, "command")


@dataclass(frozen=True, slots=True)
class GameCodecs:
    """One game in the contract."""

    rules: GameRules
    codec: Codec
    """Its options, views and the messages of its commands and events."""
    events: OneofCodec
    """Its events, as the game's payload of an envelope."""
    commands: OneofCodec
    """Its commands, as the game's member of an `Act` request or of a listed legal action."""
    kind: engine_pb2.Game.ValueType
    """The contract's ``Game`` value of the game (``engine_pb2.Game``)."""
    options_field: str
    """The field that holds the game's options in every message carrying one game's options (``CreateGameRequest``,
    ``CreateTableRequest``, ``Table``, the lobby's ``TableOpened`` and ``MatchStarted``)."""

    @property
    def name(self) -> str:
        """The game's name: also the member of the oneofs of views, legal actions, commands and envelopes."""
        return self.rules.name


class WithCodecs:
    """For what holds a game's contract entry (``contract``): its codecs and name read through it."""

    __slots__ = ()
    contract: GameCodecs

    @property
    def codec(self) -> Codec:
        return self.contract.codec

    @property
    def events(self) -> OneofCodec:
        return self.contract.events

    @property
    def commands(self) -> OneofCodec:
        return self.contract.commands

    @property
    def name(self) -> str:
        """The game's name: also the member of the oneofs of views, legal actions, commands and envelopes."""
        return self.contract.name


GAMES: dict[str, GameCodecs] = {
    codecs.name: codecs
    for codecs in (
        GameCodecs(registry.ZLJ, ZLJ, ZLJ_EVENTS, ZLJ_COMMANDS, engine_pb2.GAME_ZLJ, "zlj_options"),
        GameCodecs(
            registry.TRACTOR, TRACTOR, TRACTOR_EVENTS, TRACTOR_COMMANDS, engine_pb2.GAME_TRACTOR, "tractor_options"
        ),
    )
}
"""Every game, by name, in the registry's order."""
assert list(GAMES) == list(registry.GAMES), "every game of the registry has its codecs"
BY_KIND: dict[engine_pb2.Game.ValueType, GameCodecs] = {codecs.kind: codecs for codecs in GAMES.values()}
"""Every game, by the contract's ``Game`` value."""
