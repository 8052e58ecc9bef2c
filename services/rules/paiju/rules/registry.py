"""The games Paiju plays, each one `GameRules`: what the engine, the lobby and the tools need of a game, so that
nothing above the rules cores branches on a game's name. A third game is a third entry here, and in each of the
places docs/contributing.md, "Adding a game", lists.

Each entry is pure, like the cores: functions of state and command, no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from paiju.rules import fair
from paiju.rules.fair import ENGINE_COMMANDS, Step
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.settlement import announcement_at
from paiju.rules.tractor.view import redact as tractor_redact
from paiju.rules.tractor.view import view as tractor_seat_view
from paiju.rules.zlj import dealing as zlj_dealing
from paiju.rules.zlj import game as zlj_game
from paiju.rules.zlj import model as zlj_model
from paiju.rules.zlj.view import redact as zlj_redact
from paiju.rules.zlj.view import view as zlj_seat_view


@dataclass(frozen=True, slots=True)
class GameRules:
    """One game's rules core as the layers above use it."""

    name: str
    """The game's name in the contract and in stored events (``zlj``, ``tractor``)."""
    title: str
    """Its name for people (砸六家, 拖拉机)."""
    seats: int
    deck_size: int
    """The cards dealt in a deal (a cut moves 1 to one less than this)."""
    new_state: Callable[[], Any]
    decide: Callable[[Any, Any], Sequence[Any]]
    evolve: Callable[[Any, Any], Any]
    legal_actions: Callable[[Any, int], Sequence[Any]]
    """What ``seat`` may do now (empty when it is not its turn)."""
    waiting: Callable[[Any], tuple[int, ...]]
    """The seats whose turn is running (several while 拖拉机 bids are concealed; none before the first deal, at the
    end, or while the engine itself has to act)."""
    view: Callable[[Any, int | None], Any]
    """What ``seat`` (``None``: a spectator) sees of the state."""
    redact: Callable[[Any, int | None], Any]
    """An event as ``seat`` (``None``: a spectator) may see it."""
    between_deal_phases: frozenset[str]
    """The phases (by value) between deals or before the first, when seats may change hands."""
    timeout: Callable[[int, int], Any]
    """The command a timed-out ``seat``'s turn plays (its default action), with a shuffle seed."""
    options: type
    """The game's rule options (a frozen dataclass)."""
    start: Callable[..., Any]
    """The command that starts a game: (shuffle seed, options, the engine's time in seconds, ``fair=``: whether
    every deal comes from a committed shuffle, `paiju.rules.fair`; ``commit_reveal=``: by protocol version 2)."""
    system_commands: tuple[type, ...]
    """The commands only the engine issues (starts, timeouts, its own moves)."""
    referee_commands: tuple[type, ...]
    """The commands only a referee issues."""
    seeded_commands: tuple[type, ...]
    """The commands that carry a shuffle seed, which the engine supplies whoever sends them."""
    deal_again: Callable[[Any, int], Any | None]
    """The command with which the engine deals again at once, with a shuffle seed, when the state waits for no seat
    but for a new deal (拖拉机: a void first deal, D-TR-6.6); ``None``: the state waits for no new deal."""
    tell_time: Callable[[Any, int], Any | None]
    """The command that tells the game the engine's time in seconds while the game needs to know it (拖拉机's timed
    rounds announce their last two deals, D-TR-9); ``None``: the game keeps no time now."""
    fair_step: Callable[[Any], Step | None]
    """The engine's next step of a game dealt from committed shuffles (`paiju.rules.fair`): commit, deal or reveal;
    ``None``: nothing now."""
    contributors: Callable[[Any], tuple[int, ...]]
    """The seats that may add a contribution to a fair game's committed shuffle now (`paiju.rules.fair`): protocol
    version 1, each may send one `Contribute` before the shuffle is dealt (the cutter contributes with its cut);
    version 2, each seat that has not committed while commitments are taken, each that committed and has not
    revealed while reveals are (`paiju.rules.fair.owed` says which)."""
    time_due: Callable[[Any], int | None]
    """The engine time (seconds) from which `tell_time` changes the game (拖拉机: when a timed round's announcement is
    due); ``None``: telling the time changes nothing now. The engine's turn timers wake the game then."""

    @property
    def team_size(self) -> int:
        """The players of a team: every game has two teams, the even seats and the odd seats."""
        return self.seats // 2


def _zlj_waiting(state: zlj_model.State) -> tuple[int, ...]:
    if state.turn is None or state.phase in (zlj_model.Phase.NEW, zlj_model.Phase.ENDED):
        return ()
    if state.phase is zlj_model.Phase.CUT and state.commit_reveal:
        return ()  # the cutter commits to its cut in the fair-dealing windows (paiju.rules.fair, version 2)
    return (state.turn,)


def _tractor_waiting(state: tractor_model.State) -> tuple[int, ...]:
    if state.phase in (tractor_model.Phase.NEW, tractor_model.Phase.ENDED, tractor_model.Phase.FLIP):
        return ()
    if state.phase is tractor_model.Phase.CUT and state.commit_reveal:
        return ()  # the dealer commits to its cut in the fair-dealing windows (paiju.rules.fair, version 2)
    return tractor_game.waiting(state)


def _tractor_deal_again(state: tractor_model.State, seed: int) -> tractor_model.Redeal | None:
    return tractor_model.Redeal(seed) if state.phase is tractor_model.Phase.FLIP and not state.fair else None


def _tractor_tell_time(state: tractor_model.State, at: int) -> tractor_model.ClockTick | None:
    return tractor_model.ClockTick(at) if state.options.round_minutes > 0 and not state.clock.announced else None


def _tractor_time_due(state: tractor_model.State) -> int | None:
    if state.clock.announced or state.clock.over:
        return None
    return announcement_at(state.options.round_minutes, state.started_at)


def _zlj_contributors(state: zlj_model.State) -> tuple[int, ...]:
    cutter = state.turn if state.phase is zlj_model.Phase.CUT else None
    return fair.contributors(state, seats=zlj_model.SEATS, cutter=cutter)


def _tractor_contributors(state: tractor_model.State) -> tuple[int, ...]:
    cutter = state.turn if state.phase is tractor_model.Phase.CUT else None
    return fair.contributors(state, seats=tractor_model.SEATS, cutter=cutter)


def _no_time(state: Any) -> None:
    """A game that keeps no time."""


def _never(state: Any, value: int) -> None:
    """A game in which the engine has nothing of its own to do."""


ZLJ = GameRules(
    name="zlj",
    title="砸六家",
    seats=zlj_model.SEATS,
    deck_size=zlj_dealing.DECK_SIZE,
    new_state=zlj_model.State,
    decide=zlj_game.decide,
    evolve=zlj_game.evolve,
    legal_actions=zlj_game.legal_actions,
    waiting=_zlj_waiting,
    view=zlj_seat_view,
    redact=zlj_redact,
    between_deal_phases=frozenset({"new", "shuffle", "cut"}),
    timeout=zlj_model.Timeout,
    options=zlj_model.Options,
    start=lambda seed, options, at, fair=False, commit_reveal=False: zlj_model.StartMatch(
        seed, options, fair, commit_reveal=fair and commit_reveal
    ),
    system_commands=(zlj_model.StartMatch, zlj_model.Timeout, zlj_model.EndMatch, *ENGINE_COMMANDS),
    referee_commands=(),
    seeded_commands=(zlj_model.Cut, zlj_model.Timeout),
    deal_again=_never,
    tell_time=_never,
    fair_step=zlj_game.fair_step,
    contributors=_zlj_contributors,
    time_due=_no_time,
)
TRACTOR = GameRules(
    name="tractor",
    title="拖拉机",
    seats=tractor_model.SEATS,
    deck_size=tractor_game.DECK_SIZE,
    new_state=tractor_model.State,
    decide=tractor_game.decide,
    evolve=tractor_game.evolve,
    legal_actions=tractor_game.legal_actions,
    waiting=_tractor_waiting,
    view=tractor_seat_view,
    redact=tractor_redact,
    between_deal_phases=frozenset({"new", "flip", "cut"}),
    timeout=tractor_model.Timeout,
    options=tractor_model.Options,
    start=lambda seed, options, at, fair=False, commit_reveal=False: tractor_model.StartGame(
        seed, options, at=at, fair=fair, commit_reveal=fair and commit_reveal
    ),
    system_commands=(
        tractor_model.StartGame,
        tractor_model.Redeal,
        tractor_model.Timeout,
        tractor_model.ClockTick,
        *ENGINE_COMMANDS,
    ),
    referee_commands=(tractor_model.Penalize, tractor_model.DeclareLabourReform),
    seeded_commands=(tractor_model.Cut, tractor_model.Timeout, tractor_model.Redeal),
    deal_again=_tractor_deal_again,
    tell_time=_tractor_tell_time,
    fair_step=tractor_game.fair_step,
    contributors=_tractor_contributors,
    time_due=_tractor_time_due,
)
GAMES: dict[str, GameRules] = {rules.name: rules for rules in (ZLJ, TRACTOR)}
"""Every game, by name."""


def rules_of(name: str) -> GameRules:
    """The rules of the game named ``name``; `KeyError` for a game Paiju does not play."""
    return GAMES[name]
