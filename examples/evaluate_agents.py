"""Evaluate a simple agent in Paiju's PettingZoo environments: the rules cores' heuristic bot in the even seats
against uniformly random legal moves in the odd seats, over N deals of each game; prints each team's mean reward
per deal (docs/bots.md, "Measuring an agent"). Replace `heuristic` with your own agent to measure it the same way.

    .venv/bin/python examples/evaluate_agents.py [DEALS]
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from typing import Any

from paiju.envs import CardGameEnv, tractor_env, zlj_env
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.zlj import bots as zlj_bots

Agent = Callable[[CardGameEnv, str, dict[str, Any], dict[str, Any]], int]


def random_agent(rng: random.Random) -> Agent:
    def choose(env: CardGameEnv, agent: str, observation: dict[str, Any], info: dict[str, Any]) -> int:
        return rng.randrange(int(observation["action_mask"].sum()))

    return choose


def listed(legal: list[Any], choice: Any) -> int:
    """The index of ``choice`` among the listed actions: the same action, or the same cards (a 拖拉机 follow the bot
    composed may differ in its order); the first listed when the bot's own follow is not among them."""
    if choice in legal:
        return legal.index(choice)
    for i, action in enumerate(legal):
        same = type(action) is type(choice) and sorted(getattr(action, "cards", ())) == sorted(choice.cards)
        if same and getattr(action, "suit", None) == getattr(choice, "suit", None):
            return i
    return 0


def heuristic(env: CardGameEnv) -> Agent:
    """The heuristic bot, deciding from the seat's view (as it plays at real tables) among the legal actions."""
    bots = {"zlj": zlj_bots.HeuristicBot, "tractor": tractor_bots.HeuristicBot}
    made: dict[str, Any] = {}

    def choose(env: CardGameEnv, agent: str, observation: dict[str, Any], info: dict[str, Any]) -> int:
        seat = int(agent.removeprefix("seat_"))
        bot = made.setdefault(agent, bots[env.rules.name](seat))
        legal = list(info["legal_actions"])
        return listed(legal, bot.choose_view(env.rules.view(env.state, seat), legal))

    return choose


def evaluate(env: CardGameEnv, deals: int, seed: int = 0) -> tuple[float, float]:
    """The mean reward per deal of the even seats (heuristic) and of the odd seats (random)."""
    totals = [0.0, 0.0]
    rng = random.Random(seed)
    agents = {0: heuristic(env), 1: random_agent(rng)}
    for deal in range(deals):
        env.reset(seed=seed + deal)
        for agent in env.agent_iter():
            observation, reward, termination, truncation, info = env.last()
            seat = int(agent.removeprefix("seat_"))
            totals[seat % 2] += reward
            env.step(None if termination or truncation else agents[seat % 2](env, agent, observation, info))
    seats = env.rules.seats // 2
    return totals[0] / deals / seats, totals[1] / deals / seats


def main(argv: list[str]) -> int:
    deals = int(argv[0]) if argv else 20
    for make in (zlj_env, tractor_env):
        env = make()
        heuristic_mean, random_mean = evaluate(env, deals)
        print(f"{env.rules.title}: heuristic seats {heuristic_mean:+.2f} a deal, random seats {random_mean:+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
