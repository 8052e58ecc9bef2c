"""PettingZoo AEC environments of both games over the rules cores: an episode is one deal, played seat by seat.

- **Agents** ``seat_0`` … ``seat_5`` (砸六家) or ``seat_0`` … ``seat_3`` (拖拉机); teams are the even and the odd seats.
  The agent to act is the seat whose turn runs (拖拉机's concealed bids, which run at once for several seats, are
  taken lowest seat first: each seat still sees only its own view).
- **Actions** ``Discrete(MAX_ACTIONS)``: an index into the seat's legal actions now (`GameRules.legal_actions`, one
  representative per choice of ranks in 砸六家), with the mask in the observation. The actions themselves are in
  ``info["legal_actions"]`` (rules-core commands), and each one's cards in ``observation["action_cards"]`` (a row of
  54 card-kind counts per index), so an agent can score an action by its content, not by its position.
- **Observations** (a dict, from the seat's own view only — `GameRules.view`, what a client of the API receives):
  ``observation``: the seat's hand, the cards on the table now, the cards of the deal's finished tricks (拖拉机;
  54 counts each), the seat, the seat to act, the phase (one-hot) and every seat's hand size; ``action_mask``;
  ``action_cards``. `encode` makes it from a view and the legal actions, so an agent trained here plays a real
  table's seat through the bot runner from the same observation (`paiju.envs.agent`).
- **Rewards** at the deal's end, zero before: 砸六家 the deal's team points of the seat's team plus its individual
  points (D-ZLJ-7, the match score); 拖拉机 1 + the levels the deal is worth for the winning side's seats (the
  attackers winning the deal take the deal even when it moves no level, §9), minus that for the others.

Randomness comes only from ``reset(seed=…)`` (the deal's shuffle, through the rules' seeded generator): the same seed
and actions give the same deal. Rules cores are pure; this module adds no rule of its own.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from paiju.rules.cards import CARD_KINDS
from paiju.rules.registry import TRACTOR, ZLJ, GameRules
from paiju.rules.rng import SeededRandom

MAX_ACTIONS = 1024
"""The size of the action space: more than any seat's legal actions (at most 323, a 拖拉机 cut; plays measured in
random and heuristic playouts stay below 200)."""


def _counts(cards: Sequence[int]) -> np.ndarray:
    counts = np.zeros(CARD_KINDS, dtype=np.int8)
    for card in cards:
        counts[card] += 1
    return counts


def _action_cards(action: Any) -> Sequence[int]:
    return tuple(getattr(action, "cards", ()) or ())


def _phases(rules: GameRules) -> list[Any]:
    """The game's phases, in their order (for a one-hot)."""
    phase: Any = type(rules.new_state().phase)
    return list(phase)


def observation_size(rules: GameRules) -> int:
    phases = len(_phases(rules))
    return 3 * CARD_KINDS + 2 * rules.seats + phases + rules.seats


def encode(rules: GameRules, view: Any, legal: Sequence[Any]) -> dict[str, np.ndarray]:
    """A seat's observation from its view (`GameRules.view`: what a client of the API receives, so a trained agent
    sees the same at a real table, `paiju.envs.agent`) and its legal actions."""
    mask = np.zeros(MAX_ACTIONS, dtype=np.int8)
    mask[: len(legal)] = 1
    cards = np.zeros((MAX_ACTIONS, CARD_KINDS), dtype=np.int8)
    for i, action in enumerate(legal):
        cards[i] = _counts(_action_cards(action))
    phases = _phases(rules)
    phase = np.zeros(len(phases), dtype=np.int16)
    phase[phases.index(view.phase)] = 1
    seat_hot = np.zeros(rules.seats, dtype=np.int16)
    if view.seat is not None:
        seat_hot[view.seat] = 1
    turn_hot = np.zeros(rules.seats, dtype=np.int16)
    if view.turn is not None:
        turn_hot[view.turn] = 1
    if rules is ZLJ:
        table: Sequence[int] = tuple(view.current_cards)
        played: Sequence[int] = ()  # 砸六家's view keeps no pile of finished rounds
    else:
        trick = view.trick
        table = tuple(c for play in trick.plays for c in play) if trick is not None else ()
        played = tuple(c for done in view.tricks for play in done.plays for c in play)
    vector = np.concatenate(
        [
            _counts(view.hand),
            _counts(table),
            _counts(played),
            seat_hot,
            turn_hot,
            phase,
            np.asarray(view.hand_sizes, dtype=np.int16),
        ]
    ).astype(np.int16)
    return {"observation": vector, "action_mask": mask, "action_cards": cards}


class CardGameEnv(AECEnv):  # type: ignore[misc]
    """One deal of a Paiju game as a PettingZoo AEC environment (see the module)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "name": "paiju_v0", "is_parallelizable": False}

    def __init__(self, rules: GameRules, options: Any = None, render_mode: str | None = None) -> None:
        super().__init__()
        self.rules = rules
        self.game_options = options if options is not None else rules.options()
        self.render_mode = render_mode
        self.possible_agents = [f"seat_{s}" for s in range(rules.seats)]
        size = observation_size(rules)
        self._observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0, 255, (size,), dtype=np.int16),
                "action_mask": spaces.Box(0, 1, (MAX_ACTIONS,), dtype=np.int8),
                "action_cards": spaces.Box(0, 12, (MAX_ACTIONS, CARD_KINDS), dtype=np.int8),
            }
        )
        self._action_space = spaces.Discrete(MAX_ACTIONS)
        self.state: Any = None
        self._legal: dict[int, tuple[Any, ...]] = {}

    # -- PettingZoo's interface -----------------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._rng = SeededRandom(seed if seed is not None else 0)
        self.state = self.rules.new_state()
        self._apply(self.rules.decide(self.state, self.rules.start(self._rng.next64(), self.game_options, 0)))
        self._settle_engine_steps()
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in self.agents}
        self._deal = self.state.deal
        self._select()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = int(agent.removeprefix("seat_"))
        return encode(self.rules, self.rules.view(self.state, seat), self._legal.get(seat, ()))

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        seat = int(agent.removeprefix("seat_"))
        legal = self._legal[seat]
        if action is None or not 0 <= int(action) < len(legal):
            raise ValueError(f"{agent}: action {action} is not one of its {len(legal)} legal actions (see the mask)")
        self._cumulative_rewards[agent] = 0.0
        chosen = legal[int(action)]
        self._apply(self.rules.decide(self.state, chosen))
        self._settle_engine_steps()
        self._clear_rewards()
        if self._deal_over():
            self._score()
            for a in self.agents:
                self.terminations[a] = True
        else:
            self._select()
        self._accumulate_rewards()

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.state is None:
            return None
        view = self.rules.view(self.state, None)
        return f"{self.rules.title} deal {view.deal}, {view.phase.value}, turn {view.turn}, hands {view.hand_sizes}"

    def close(self) -> None:
        pass

    # -- the game ---------------------------------------------------------------------------------------------

    def _apply(self, events: Sequence[Any]) -> None:
        for event in events:
            self.state = self.rules.evolve(self.state, event)

    def _settle_engine_steps(self) -> None:
        """What the engine does by itself between seats' moves: deal a void first 拖拉机 deal again."""
        for _ in range(16):
            again = self.rules.deal_again(self.state, self._rng.next64())
            if again is None:
                return
            self._apply(self.rules.decide(self.state, again))

    def _select(self) -> None:
        waiting = sorted(self.rules.waiting(self.state))
        self._legal = {seat: tuple(self.rules.legal_actions(self.state, seat)) for seat in waiting}
        seat = next(s for s in waiting if self._legal[s])
        if len(self._legal[seat]) > MAX_ACTIONS:
            raise RuntimeError(f"{len(self._legal[seat])} legal actions exceed the action space ({MAX_ACTIONS})")
        self.agent_selection = f"seat_{seat}"
        for agent in self.agents:
            self.infos[agent] = {"legal_actions": self._legal.get(int(agent.removeprefix("seat_")), ())}

    def _deal_over(self) -> bool:
        state = self.state
        if state.phase.value == "ended":
            return True
        if self.rules is ZLJ:
            return len(state.results) > 0
        return state.settlement is not None and (state.deal > self._deal or state.phase.value == "cut")

    def _score(self) -> None:
        if self.rules is ZLJ:
            result = self.state.results[-1]
            for seat in range(self.rules.seats):
                self.rewards[f"seat_{seat}"] = float(result.team_points[seat % 2] + result.individual[seat])
            return
        settled = self.state.settlement
        defending = self.state.dealer % 2  # the dealer's team defends (§9)
        winning = defending if settled.winner == "defenders" else 1 - defending
        worth = 1 + settled.levels_up  # winning the deal, and each level it is worth
        for seat in range(self.rules.seats):
            self.rewards[f"seat_{seat}"] = float(worth if seat % 2 == winning else -worth)


class ZljEnv(CardGameEnv):
    """One 砸六家 deal (the first of a match: no tribute) per episode."""

    metadata: ClassVar[dict[str, Any]] = {**CardGameEnv.metadata, "name": "paiju_zlj_v0"}

    def __init__(self, options: Any = None, render_mode: str | None = None) -> None:
        super().__init__(ZLJ, options, render_mode)


class TractorEnv(CardGameEnv):
    """One 拖拉机 deal (the first of a game, bidding included; a void deal is dealt again) per episode."""

    metadata: ClassVar[dict[str, Any]] = {**CardGameEnv.metadata, "name": "paiju_tractor_v0"}

    def __init__(self, options: Any = None, render_mode: str | None = None) -> None:
        super().__init__(TRACTOR, options, render_mode)


def zlj_env(options: Any = None, render_mode: str | None = None) -> CardGameEnv:
    """One 砸六家 deal (the first of a match: no tribute) per episode."""
    return ZljEnv(options, render_mode)


def tractor_env(options: Any = None, render_mode: str | None = None) -> CardGameEnv:
    """One 拖拉机 deal (the first of a game, bidding included; a void deal is dealt again) per episode.

    Deprecated: it offers one representative follow, so most follows cannot be expressed; `paiju.envs.tractor_v2`
    expresses every legal play. It stays for one more release."""
    warnings.warn(
        "tractor_env (paiju_tractor_v0) offers one representative follow and is deprecated: use "
        "paiju.envs.tractor_v2, which expresses every legal play",
        DeprecationWarning,
        stacklevel=2,
    )
    return TractorEnv(options, render_mode)
