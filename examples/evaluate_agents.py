"""Evaluate an agent in Paiju's PettingZoo environments: the rules cores' heuristic bot against uniformly random
moves (a random masked-in action at every step), over N deals of each game, with a 95 % confidence interval
(docs/bots.md, "Measuring an agent"). Replace `heuristic` with your own agent to measure it the same way.

Each deal is played twice from the same seed, the heuristic bot in the even seats and then in the odd ones, so the
luck of the cards falls on both sides; a deal's score is the heuristic seats' mean reward minus the random seats',
averaged over its two plays. Prints, per game, the number of deals, the mean score and its 95 % interval.

    .venv/bin/python examples/evaluate_agents.py [DEALS]
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from paiju.envs import CardGameEnv, tractor_v2, zlj_env
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.zlj import bots as zlj_bots

Agent = Callable[[CardGameEnv, str, dict[str, Any]], int]
"""(environment, agent name, observation) -> an action index the observation's mask allows."""


def random_agent(seed: int) -> Agent:
    rng = SeededRandom(seed)

    def choose(env: CardGameEnv, agent: str, observation: dict[str, Any]) -> int:
        allowed = np.flatnonzero(observation["action_mask"])
        return int(allowed[rng.below(len(allowed))])

    return choose


def heuristic(seed: int) -> Agent:
    """The heuristic bot of each seat, deciding from the seat's view (as it plays at real tables): in 砸六家 the index
    of its choice among the listed actions; in 拖拉机 (`tractor_v2`) its bid or its play, a card at a time."""
    made: dict[str, Any] = {}
    queued: dict[str, list[int]] = {}

    def choose(env: CardGameEnv, agent: str, observation: dict[str, Any]) -> int:
        seat = int(agent.removeprefix("seat_"))
        game = zlj_bots if env.rules.name == "zlj" else tractor_bots
        bot = made.setdefault(agent, game.HeuristicBot(seed * 8 + seat))
        view = env.rules.view(env.state, seat)
        if env.rules.name == "zlj":
            legal = list(env.infos[agent]["legal_actions"])
            return legal.index(bot.choose_view(view, legal))
        if not queued.get(agent):
            queued[agent] = env.expressed(bot.choose(env.state, seat))
        return queued[agent].pop(0)

    return choose


def play(env: CardGameEnv, seed: int, agents: tuple[Agent, Agent]) -> tuple[float, float]:
    """One deal: ``agents[0]`` in the even seats, ``agents[1]`` in the odd ones; each side's mean reward."""
    totals = [0.0, 0.0]
    env.reset(seed=seed)
    for agent in env.agent_iter():
        observation, reward, termination, truncation, _ = env.last()
        side = int(agent.removeprefix("seat_")) % 2
        totals[side] += reward
        env.step(None if termination or truncation else agents[side](env, agent, observation))
    seats = env.rules.seats // 2
    return totals[0] / seats, totals[1] / seats


def interval(scores: list[float]) -> tuple[float, float, float]:
    """The mean and its 95 % confidence interval (normal approximation)."""
    mean = statistics.fmean(scores)
    half = 1.96 * statistics.stdev(scores) / math.sqrt(len(scores)) if len(scores) > 1 else math.inf
    return mean, mean - half, mean + half


def evaluate(env: CardGameEnv, deals: int, seed: int = 0) -> list[float]:
    """Each deal's score: the heuristic seats' mean reward minus the random seats', over its two plays."""
    scores = []
    for deal in range(deals):
        smart, rand = heuristic(seed + deal), random_agent(seed + deal)
        even = play(env, seed + deal, (smart, rand))
        odd = play(env, seed + deal, (rand, smart))
        scores.append(((even[0] - even[1]) + (odd[1] - odd[0])) / 2)
    return scores


def main(argv: list[str]) -> int:
    deals = int(argv[0]) if argv else 20
    for make in (zlj_env, tractor_v2):
        env = make()
        mean, low, high = interval(evaluate(env, deals))
        print(
            f"{env.rules.title}: heuristic minus random {mean:+.2f} a deal over {deals} deals "
            f"(95 % interval {low:+.2f} … {high:+.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
