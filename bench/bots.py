"""The bot strengths a table may choose (`STRENGTHS` of paiju.rules.zlj.bots and paiju.rules.tractor.bots), the
stronger against the weaker, in both games, with a 95 % confidence interval.

Each deal (one episode of the environments, `zlj_env` and `tractor_v2`: a first deal of a match or game) is played
twice from the same seed: the stronger bot in the even seats and then in the odd ones, so the luck of the cards falls
on both sides. A deal's score is the stronger seats' mean reward minus the weaker seats', averaged over its two plays
(rewards as the environments give them: 砸六家 team plus individual points, 拖拉机 ±(1 + levels)). Bots are seeded
from the deal, so the same arguments give the same figures. Prints one JSON line per game and a Markdown table.

    .venv/bin/python bench/bots.py [--deals 100] [--stronger heuristic] [--weaker basic]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from typing import Any

from paiju.envs import CardGameEnv, tractor_v2, zlj_env
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.zlj import bots as zlj_bots

GAMES: dict[str, tuple[Any, Any]] = {"zlj": (zlj_env, zlj_bots), "tractor": (tractor_v2, tractor_bots)}


def play(env: CardGameEnv, module: Any, seed: int, strengths: tuple[str, str]) -> tuple[float, float]:
    """One deal: ``strengths[0]`` in the even seats, ``strengths[1]`` in the odd ones; each side's mean reward."""
    seats = env.rules.seats
    players = [module.STRENGTHS[strengths[s % 2]](seed * 16 + s) for s in range(seats)]
    totals = [0.0, 0.0]
    queued: list[int] = []
    env.reset(seed=seed)
    for agent in env.agent_iter():
        _, reward, termination, truncation, info = env.last()
        seat = int(agent.removeprefix("seat_"))
        totals[seat % 2] += reward
        if termination or truncation:
            env.step(None)
            continue
        if env.rules.name == "zlj":
            legal = list(info["legal_actions"])
            env.step(legal.index(players[seat].choose(env.state, seat)))
            continue
        if not queued:
            queued = env.expressed(players[seat].choose(env.state, seat))
        env.step(queued.pop(0))
    return totals[0] / (seats // 2), totals[1] / (seats // 2)


def measure(game: str, deals: int, stronger: str, weaker: str, seed: int) -> dict[str, Any]:
    make, module = GAMES[game]
    env = make()
    scores = []
    started = time.perf_counter()
    for deal in range(deals):
        a = play(env, module, seed + deal, (stronger, weaker))
        b = play(env, module, seed + deal, (weaker, stronger))
        scores.append(((a[0] - a[1]) + (b[1] - b[0])) / 2)
    mean = statistics.fmean(scores)
    half = 1.96 * statistics.stdev(scores) / math.sqrt(deals)
    wins = sum(1 for s in scores if s > 0)
    return {
        "bench": "bot strengths",
        "game": game,
        "stronger": stronger,
        "weaker": weaker,
        "deals": deals,
        "mean_score_per_deal": round(mean, 3),
        "ci95": [round(mean - half, 3), round(mean + half, 3)],
        "deals_won_by_stronger": wins,
        "excludes_zero": mean - half > 0 or mean + half < 0,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deals", type=int, default=100, help="deals per game, each played twice (default 100)")
    parser.add_argument("--stronger", default="heuristic")
    parser.add_argument("--weaker", default="basic")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--games", nargs="*", default=list(GAMES), choices=list(GAMES))
    args = parser.parse_args()
    if args.deals < 2:
        parser.error("--deals: at least 2 for an interval")
    lines = [measure(game, args.deals, args.stronger, args.weaker, args.seed) for game in args.games]
    for line in lines:
        print(json.dumps(line, ensure_ascii=False))
    print()
    print("| game | stronger − weaker, a deal | 95 % interval | deals (each played twice) | won by the stronger |")
    print("|---|---|---|---|---|")
    for line in lines:
        low, high = line["ci95"]
        print(
            f"| {line['game']} | {line['mean_score_per_deal']:+.2f} | {low:+.2f} … {high:+.2f} | {line['deals']} | "
            f"{line['deals_won_by_stronger']} |"
        )
    return 0 if all(line["excludes_zero"] for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
