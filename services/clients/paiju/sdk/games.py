"""Each game as a client reads and plays it over the public contract: its rules, its ``Game`` value in the contract
and the codecs of its seat views, commands and events (the contract's entry of the game, `paiju.contract.games`),
and what a client reads of its views. The contract names every
game-specific field after the game (the ``zlj`` / ``tractor`` member of a view's, a command's or an envelope's
oneof), so one `GameContract` serves every game and a client never branches on a game's name: it looks the game
up here, by name (`GAMES`), by the contract's ``Game`` value (`of_kind`) or by the oneof an answer carries.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass
from typing import Any

from paiju.contract import games as contract
from paiju.contract.codec import remembered
from paiju.contract.games import GameCodecs, WithCodecs
from paiju.rules import fair, registry
from paiju.rules.registry import GameRules
from paiju.rules.tractor.view import SeatView as TractorSeatView
from paiju.rules.zlj.view import SeatView as ZljSeatView
from paiju.v1 import engine_pb2, tractor_pb2, zlj_pb2

ACTIONS_KEPT = 1 << 14
"""How many legal actions' decodings `GameContract.actions` keeps per game (the oldest forgotten first): enough for
the seats of a bot runner's tables, bounded for one that runs for days."""
CONTRIBUTION_BYTES = 16
"""The random bytes a client adds to a fair game's shuffle."""
FAIR_DEALING_EVENTS = frozenset(
    {"seed_committed", "contribution_committed", "commits_closed", "contribution_revealed", "reveals_closed"}
)
"""The events of a fair deal's steps that a seat checks what it sent against (`paiju.sdk.fairness.Pledges.check`),
by their field in every game's event oneof."""


@dataclass(frozen=True, slots=True)
class GameContract(WithCodecs):
    """One game over the contract."""

    contract: GameCodecs
    """Its rules and codecs (`paiju.contract.games`)."""
    view_type: type
    """The rules core's ``SeatView`` the contract's seat view decodes to."""
    ended_phase: int
    """The contract's value of the game's last phase (the game is over)."""
    _decoded: dict[bytes, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    """Legal actions decoded, by their bytes (`actions`)."""

    @property
    def rules(self) -> GameRules:
        return self.contract.rules

    @property
    def title(self) -> str:
        return self.rules.title

    @property
    def seats(self) -> int:
        return self.rules.seats

    @property
    def kind(self) -> int:
        """The contract's ``Game`` value of the game."""
        return self.contract.kind

    def view(self, response: engine_pb2.GetViewResponse | engine_pb2.Turn) -> Any:
        """The seat view a `GetView` answer or a `Turn` carries."""
        return self.codec.decode(getattr(response, self.name), self.view_type)

    def actions(self, response: engine_pb2.GetLegalActionsResponse | engine_pb2.Turn) -> list[Any]:
        """The legal actions a `GetLegalActions` answer or a `Turn` lists, as the rules core's commands. Each is
        decoded once for the same bytes while it is among the last `ACTIONS_KEPT` (a seat's legal actions are
        mostly the same from one turn to the next; a command is deeply frozen, so one object serves every turn)."""
        name, decode, kept = self.name, self.commands.decode, self._decoded
        return [remembered(kept, getattr(action, name), decode, ACTIONS_KEPT) for action in response.actions]

    def ended(self, response: engine_pb2.GetViewResponse) -> bool:
        """Whether the game of a `GetView` answer is over."""
        return bool(getattr(response, self.name).phase == self.ended_phase)

    def event(self, envelope: engine_pb2.Envelope) -> Any | None:
        """The rules event an envelope carries (``None`` for the engine's own events, the seat assignments)."""
        if envelope.WhichOneof("payload") != self.name:
            return None
        return self.events.decode(getattr(envelope, self.name))

    def fair_dealing_event(self, envelope: engine_pb2.Envelope) -> Any | None:
        """The rules event an envelope carries when it is a step of fair dealing a seat checks its pledges against
        (`FAIR_DEALING_EVENTS`), else ``None`` — the other events are not decoded (a seat that plays from its turns
        reads nothing else of them)."""
        if envelope.WhichOneof("payload") != self.name:
            return None
        payload = getattr(envelope, self.name)
        if payload.WhichOneof("event") not in FAIR_DEALING_EVENTS:
            return None
        return self.events.decode(payload)

    def contribution(self, view: Any, seat: int) -> fair.Contribute | None:
        """What ``seat`` adds now to a fair game's committed shuffle (`paiju.rules.fair`): 16 random bytes drawn on
        this machine, which the engine could not know when it committed; ``None`` when the seat has nothing to add
        (no shuffle open, contributed already, or it is the cutter, who contributes with its cut)."""
        shuffle = getattr(view, "shuffle", None)
        if shuffle is None or shuffle.dealt or shuffle.contributed(seat):
            return None
        if view.phase.value == "cut" and view.turn == seat:
            return None
        return fair.Contribute(seat, secrets.token_bytes(CONTRIBUTION_BYTES))

    @staticmethod
    def contribute(seat: int) -> fair.Contribute:
        """``seat``'s contribution to a committed shuffle (a turn's ``fair_step`` asks for it): 16 random bytes drawn
        on this machine, which the engine could not know when it committed."""
        return fair.Contribute(seat, secrets.token_bytes(CONTRIBUTION_BYTES))

    @staticmethod
    def with_contribution(action: Any) -> Any:
        """A cut carries 16 random bytes of this machine as the cutter's contribution (other actions as they are)."""
        if type(action).__name__ == "Cut" and not action.contribution:
            return dataclasses.replace(action, contribution=secrets.token_bytes(CONTRIBUTION_BYTES))
        return action

    def act(
        self, game_id: str, command_id: str, command: Any, expected_version: int | None = None
    ) -> engine_pb2.ActRequest:
        """The `Act` request of a command (with ``expected_version``: refused as stale once the game moved past it)."""
        request = engine_pb2.ActRequest(game_id=game_id, command_id=command_id)
        if expected_version is not None:
            request.expected_version = expected_version
        getattr(request, self.name).CopyFrom(self.commands.encode(command))
        return request


ZLJ = GameContract(contract.GAMES[registry.ZLJ.name], ZljSeatView, zlj_pb2.ZLJ_PHASE_ENDED)
TRACTOR = GameContract(contract.GAMES[registry.TRACTOR.name], TractorSeatView, tractor_pb2.TRACTOR_PHASE_ENDED)
GAMES: dict[str, GameContract] = {game.name: game for game in (ZLJ, TRACTOR)}
"""Every game, by name, in the registry's order."""
assert list(GAMES) == list(registry.GAMES), "every game of the registry is read over the contract"
_BY_KIND = {game.kind: game for game in GAMES.values()}


def of_kind(kind: int) -> GameContract | None:
    """The game of one of the contract's ``Game`` values (``None`` for a value this client does not know)."""
    return _BY_KIND.get(kind)


def of_view(response: engine_pb2.GetViewResponse) -> GameContract:
    """The game of a `GetView` answer (by the member of its oneof it carries)."""
    return GAMES[str(response.WhichOneof("view"))]


def of_command(command: engine_pb2.GameCommand | engine_pb2.ActRequest) -> GameContract:
    """The game of a listed legal action or of a command."""
    return GAMES[str(command.WhichOneof("command"))]
