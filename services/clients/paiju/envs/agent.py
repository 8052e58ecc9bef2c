"""Agents trained on the environments, at real tables: `PolicyBot` turns a policy of the environment (observation ->
action index) into a bot the bot runner plays seats with (`paiju bots --agent MODULE:FACTORY`); `ComposingPolicyBot`
does it for a policy of `tractor_v2`, composing its play a card at a time as it did in training.

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
from paiju.envs.compose import Composer
from paiju.envs.tractor_v2 import ACTIONS, END, PASS, bid_index
from paiju.envs.tractor_v2 import encode as encode_v2
from paiju.rules.cards import CARD_KINDS, Card
from paiju.rules.registry import rules_of
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tractor_model

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


class ComposingPolicyBot:
    """A bot that plays a 拖拉机 seat with a policy trained on `tractor_v2`: from the seat's view it lists the bids as
    the environment does, or composes its play a card at a time, asking the policy at each step with the same
    observation and mask as the environment's (`paiju.envs.tractor_v2.encode`)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def choose_view(self, view: Any, legal: Sequence[Any]) -> Any:
        seen = tractor_bots.Seen.of_view(view)
        deal_trumps = seen.trumps() if view.trump is not None else None
        played = np.zeros(CARD_KINDS, dtype=np.int16)
        for trick in view.tricks:
            for play in trick.plays:
                np.add.at(played, np.asarray(play, dtype=np.intp), 1)

        def ask(mask: np.ndarray, composer: Composer | None) -> int:
            observation = encode_v2(
                view.seat,
                phase=view.phase,
                turn=view.turn,
                hand=view.hand,
                hand_sizes=view.hand_sizes,
                trick=view.trick,
                played=played,
                deal_trumps=deal_trumps,
                composer=composer,
            )
            index = int(self.policy({"observation": observation, "action_mask": mask}))
            if not 0 <= index < ACTIONS or not mask[index]:
                raise ValueError(f"the policy chose action {index}, which the mask does not allow")
            return index

        if not seen.playing:
            level_card = int(tractor_game.level_rank(seen.public())) * 4
            listed: dict[int, Any] = {}
            for action in legal:
                if isinstance(action, tractor_model.Pass):
                    listed[PASS] = action
                elif isinstance(action, tractor_model.MakeBid | tractor_model.Counter):
                    listed[bid_index(action, level_card + int(action.suit))] = action
            mask = np.zeros(ACTIONS, dtype=np.int8)
            mask[list(listed)] = 1
            return listed[ask(mask, None)]
        assert deal_trumps is not None
        composer = Composer(view.hand, view.trick.lead if view.trick is not None else None, deal_trumps)
        while True:
            nexts, ends = composer.options()
            if composer.lead is None and composer.cards and not nexts and ends:
                break  # nothing extends the lead: the environment plays it as it is
            mask = np.zeros(ACTIONS, dtype=np.int8)
            mask[nexts] = 1
            if ends:
                mask[END] = 1
            index = ask(mask, composer)
            if index == END:
                break
            composer.add(Card(index))
            if composer.complete():
                break
        return tractor_model.Play(view.seat, tuple(composer.cards))
