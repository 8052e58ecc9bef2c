"""Agents trained on the environments, at real tables: `PolicyBot` turns a policy of the environment (observation ->
action index) into a bot the bot runner plays seats with (`paiju bots --agent MODULE:FACTORY`).

A factory is called with the game's name (``zlj``, ``tractor``) and a seed, and returns an object with
``choose_view(view, legal)`` (the seat's view and its legal actions, as the runner reads them from the engine's API):

    # my_agent.py
    from paiju.envs.agent import PolicyBot

    def make(game: str, seed: int) -> PolicyBot:
        return PolicyBot(game, lambda observation: my_network.best(observation))

    $ PYTHONPATH=. paiju bots --agent my_agent:make     # my_agent.py in the current folder
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from paiju.envs.aec import encode
from paiju.rules.registry import rules_of

Policy = Callable[[dict[str, np.ndarray]], int]
"""An observation of the environment (`paiju.envs.aec.encode`) -> the index of a legal action."""


class PolicyBot:
    """A bot that plays a seat with a policy trained on the environment."""

    def __init__(self, game: str, policy: Policy) -> None:
        self.rules = rules_of(game)
        self.policy = policy

    def choose_view(self, view: Any, legal: Sequence[Any]) -> Any:
        index = int(self.policy(encode(self.rules, view, legal)))
        if not 0 <= index < len(legal):
            raise ValueError(f"the policy chose action {index} of {len(legal)}")
        return legal[index]
