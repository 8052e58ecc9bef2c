"""Fair dealing as the engine takes part in it: its own steps of the commit–reveal protocol (`paiju.rules.fair`;
docs/architecture.md, "Fair dealing: commit, contribute, reveal"), with the server seeds drawn from its secret
(`paiju.engine.seeds`).

The rules cores hold the protocol and say which step is due; this is what only the engine has: the server seeds
(of its current secret, and of its previous one for a shuffle committed before the secret changed), how long a deal
without a cut waits for the seats' contributions, and whether new games start fair. `Games` asks it for the steps
that a command's events make due, taken in the same append (`FairDealing.settled`); the timers ask it for the
command of a step that waited (`FairDealing.command`) and how long it waits (`FairDealing.wait`); a seat's client
that starts watching a version-2 game opens its first shuffle (`opens_on_watch`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from paiju.rules.fair import Step, settle
from paiju.rules.fair import command as step_command
from paiju.rules.fairness import commitment
from paiju.rules.registry import GameRules
from paiju.v1 import engine_pb2


class FairDealing:
    """The engine's part in dealing fairly, or none (``server_seeds`` ``None``: every game is dealt from seeds and
    no fair step is taken; the games of an engine that does not deal fairly).

    ``server_seeds(game_id, number)``: the candidate server seeds of a game's ``number``-th shuffle, the one of the
    engine's secret first, then those of its previous secret (so a shuffle committed before the secret changed is
    still dealt and revealed). ``contribution_seconds``: how long a window waits for the seats (protocol version 1:
    a deal without a cut waits for contributions; version 2: the commitments, then the reveals; 0: not at all).
    ``new_games``: new games are started fair too (else from seeds; the fair games already started go on being dealt
    fairly either way). ``protocol``: the version new fair games are dealt by (2: commit, then reveal; 1: the
    contributions as they come). ``first_deal_seconds``: a version-2 game's first shuffle is committed when a seat's
    client watches the game, or this long after the game's last event (its start) at the latest."""

    def __init__(
        self,
        server_seeds: Callable[[str, int], Sequence[bytes]] | None = None,
        contribution_seconds: float = 0.0,
        *,
        new_games: bool = True,
        protocol: int = 2,
        first_deal_seconds: float = 0.0,
    ) -> None:
        if protocol not in (1, 2):
            raise ValueError(f"the fair-dealing protocol is version 1 or 2, not {protocol}")
        self._server_seeds = server_seeds
        self.contribution_seconds = contribution_seconds
        """How long a fair deal's window waits for the seats (0: it closes at once)."""
        self._new_games = new_games
        self.protocol = protocol
        """The protocol version new fair games are dealt by."""
        self.first_deal_seconds = first_deal_seconds
        """How long a version-2 game's first shuffle waits for a seat's client to watch before it is committed."""

    def wait(self, state: Any, step: Step) -> float | None:
        """How long after the game's last event ``step`` (which waits) is taken by the engine's timers; ``None``:
        not by time (a cutter that owes its commitment on a table without a turn timer)."""
        if step.window == "first":
            return self.first_deal_seconds
        if step.window == "cut":
            seconds = state.options.turn_seconds
            return float(seconds) if seconds > 0 else None
        return self.contribution_seconds

    def window_over(self, state: Any, step: Step) -> bool:
        """Whether a waiting ``step`` is taken at once (its window has no time to wait)."""
        seconds = self.wait(state, step)
        return seconds is not None and seconds <= 0

    def start_options(self) -> dict[str, bool]:
        """How a new game starts (`GameRules.start`'s keyword arguments): fair or not, by which protocol."""
        return {"fair": self.fair, "commit_reveal": self.fair and self.protocol == 2}

    @property
    def fair(self) -> bool:
        """Whether new games are dealt from committed shuffles."""
        return self._server_seeds is not None and self._new_games

    @property
    def takes_steps(self) -> bool:
        """Whether this engine takes fair games' steps (it has the server seeds)."""
        return self._server_seeds is not None

    def command(self, game_id: str, state: Any, step: Step) -> Any:
        """The engine's command for a fair game's due ``step`` in ``state`` (with that shuffle's server seed)."""
        shuffle = state.shuffle
        committed = shuffle.commitment if shuffle is not None and step.kind != "commit" else None
        return step_command(step, self._server_seed(game_id, step.number, committed))

    def settled(self, game_id: str, rules: GameRules, state: Any, events: Sequence[Any]) -> list[Any]:
        """The events of the fair-dealing steps that ``events`` (decided on ``state``) make due
        (`paiju.rules.fair.settle`), to store in the same append: none in a game not dealt fairly, or when this
        engine deals no game fairly. A deal that waits for contributions is left to the timers unless the window is
        0 (`window_over`)."""
        return self.settled_state(game_id, rules, state, events)[0]

    def settled_state(
        self, game_id: str, rules: GameRules, state: Any, events: Sequence[Any]
    ) -> tuple[list[Any], Any | None]:
        """`settled`, and the state after ``events`` and the steps' events when it was worked out on the way (``None``:
        not worked out, in a game not dealt fairly), so that the caller need not evolve the game a second time."""
        if self._server_seeds is None:
            return [], None
        if not getattr(state, "fair", False) and not any(getattr(e, "fair", False) for e in events):
            return [], None  # a game dealt from seeds (only its start can make it fair)
        for event in events:
            if not isinstance(event, engine_pb2.SeatsAssigned):
                state = rules.evolve(state, event)
        if not getattr(state, "fair", False):
            return [], state
        steps = settle(
            rules.decide,
            rules.evolve,
            rules.fair_step,
            state,
            lambda number, committed: self._server_seed(game_id, number, committed),
            window_over=self.window_over,
        )
        if not steps:
            return steps, state
        return steps, None  # the steps' events evolve the game further: the caller evolves them all itself

    def _server_seed(self, game_id: str, number: int, committed: bytes | None) -> bytes:
        """The seed of a game's ``number``-th shuffle: the one that matches ``committed`` (the recorded commitment)
        among the candidates, else the current secret's."""
        assert self._server_seeds is not None
        candidates = self._server_seeds(game_id, number)
        if committed is not None:
            for seed in candidates:
                if commitment(seed) == committed:
                    return seed
        return candidates[0]


def opens_on_watch(game_rules: GameRules, state: Any) -> Step | None:
    """The step a seat's client starting to watch the game takes at once: a version-2 game's first commitment,
    which waits for the first seat watching (so that the seats can commit to contributions), or for the engine's
    first-deal time at the latest; ``None``: none."""
    step = game_rules.fair_step(state)
    return step if step is not None and step.waits and step.window == "first" else None
