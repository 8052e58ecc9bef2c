"""The bot-builder's kit (paiju.envs): PettingZoo's own API test passes for both games' environments; an episode is
one deal, the same for the same seed and actions; a seat's observation holds its own hand only; rewards come at the
deal's end as documented; the example evaluates an agent; a policy trained on the environment plays through the bot
runner (`PolicyBot`, `--agent`)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test

from paiju.envs import MAX_ACTIONS, CardGameEnv, tractor_env, zlj_env
from paiju.envs.agent import PolicyBot
from paiju.rules.cards import CARD_KINDS
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import model as zm

pytestmark = pytest.mark.unit
MAKERS = {"zlj": zlj_env, "tractor": tractor_env}
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "evaluate_agents.py"


@pytest.mark.parametrize("game", MAKERS)
def test_pettingzoos_api_test_passes(game: str) -> None:
    api_test(MAKERS[game](), num_cycles=300, verbose_progress=False)


def play(env: CardGameEnv, seed: int, choose: Callable[[dict[str, Any]], int]) -> tuple[list[Any], dict[str, float]]:
    """One episode; each step's (agent, observation vector) and every agent's total reward."""
    env.reset(seed=seed)
    steps: list[Any] = []
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter(max_iter=20_000):
        observation, reward, termination, truncation, _ = env.last()
        totals[agent] += reward
        if termination or truncation:
            env.step(None)
            continue
        steps.append((agent, observation["observation"].tobytes()))
        env.step(choose(observation))
    assert not env.agents, "the episode ended"
    return steps, totals


def random_choice(seed: int) -> Callable[[dict[str, Any]], int]:
    rng = SeededRandom(seed)
    return lambda observation: rng.below(int(observation["action_mask"].sum()))


@pytest.mark.parametrize("game", MAKERS)
def test_an_episode_is_one_deal_the_same_for_the_same_seed_and_actions(game: str) -> None:
    first = play(MAKERS[game](), 5, random_choice(1))
    again = play(MAKERS[game](), 5, random_choice(1))
    assert first == again
    other = play(MAKERS[game](), 6, random_choice(1))
    assert other[0] != first[0], "another seed deals another deal"


def test_a_seat_observes_its_own_hand_and_the_mask_its_legal_actions() -> None:
    env = zlj_env()
    env.reset(seed=3)
    rng = SeededRandom(2)
    for agent in env.agent_iter(max_iter=400):
        observation, _, termination, truncation, info = env.last()
        if termination or truncation:
            env.step(None)
            continue
        seat = int(agent.removeprefix("seat_"))
        hand = np.zeros(CARD_KINDS, dtype=np.int16)
        for card in env.state.hands[seat]:
            hand[card] += 1
        assert (observation["observation"][:CARD_KINDS] == hand).all(), "its own hand, nobody else's"
        legal = info["legal_actions"]
        assert observation["action_mask"].tolist() == [1] * len(legal) + [0] * (MAX_ACTIONS - len(legal))
        for i, action in enumerate(legal):
            assert observation["action_cards"][i].sum() == len(getattr(action, "cards", ()))
        env.step(rng.below(len(legal)))


def test_rewards_come_at_the_deals_end_as_documented() -> None:
    env = zlj_env()
    _, totals = play(env, 9, random_choice(4))
    result = env.state.results[-1]
    assert totals == {f"seat_{s}": float(result.team_points[s % 2] + result.individual[s]) for s in range(6)}
    env = tractor_env()
    _, totals = play(env, 9, random_choice(4))
    settled = env.state.settlement
    assert settled is not None
    values = set(totals.values())
    assert values == {1.0 + settled.levels_up, -1.0 - settled.levels_up}, "the winning side's seats, then the others"
    assert totals["seat_0"] == totals["seat_2"] and totals["seat_1"] == totals["seat_3"]


def test_an_illegal_index_is_refused() -> None:
    env = zlj_env()
    env.reset(seed=1)
    observation, *_ = env.last()
    with pytest.raises(ValueError, match="not one of its"):
        env.step(int(observation["action_mask"].sum()))


def test_the_example_evaluates_an_agent(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("evaluate_agents", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    sys.modules["evaluate_agents"] = example
    spec.loader.exec_module(example)
    assert example.main(["3"]) == 0
    out = capsys.readouterr().out
    for title in ("砸六家", "拖拉机"):
        line = next(line for line in out.splitlines() if line.startswith(title))
        assert "over 3 deals (95 % interval" in line
        low = float(line.split("interval ")[1].split(" … ")[0])
        assert low > 0, f"the heuristic bot beats random moves: {line}"


def test_a_policy_bot_plays_from_the_seats_view_what_the_policy_chose() -> None:
    """`PolicyBot`: the runner gives it a seat's view and legal actions; it encodes them as the environment does and
    plays the action at the index the policy chose."""
    seen: list[dict[str, Any]] = []

    def last_legal(observation: dict[str, Any]) -> int:
        seen.append(observation)
        return int(observation["action_mask"].sum()) - 1

    env = zlj_env()
    env.reset(seed=4)
    seat = int(env.agent_selection.removeprefix("seat_"))
    legal = list(env.infos[env.agent_selection]["legal_actions"])
    bot = PolicyBot("zlj", last_legal)
    view = env.rules.view(env.state, seat)
    assert bot.choose_view(view, legal) == legal[-1]
    expected = env.observe(env.agent_selection)
    assert all((seen[0][k] == expected[k]).all() for k in expected), "the same observation as the environment's"
    assert isinstance(legal[-1], zm.Play | zm.Pass)
