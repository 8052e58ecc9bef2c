"""`make bench`: the bot-builder's kit's environments (paiju.envs) in steps per second, beside RLCard's Dou Dizhu
environment, measured in one run on one machine.

Each side steps its environment with uniformly random legal actions, observation encoding included (ours: the seat's
observation dict with its action mask and the cards of every legal action; RLCard's: its state encoding), for a fixed
number of steps. The runs alternate (ours, theirs, ours, …) so that drift in the machine's speed falls on both sides;
medians of the runs and their ratios are printed, one JSON line per environment.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from paiju.envs import tractor_env, zlj_env
from paiju.rules.rng import SeededRandom

HERE = Path(__file__).parent


def ours(make: object, steps: int, seed: int) -> float:
    """Steps per second of one of our environments over ``steps`` steps (whole episodes, random legal actions)."""
    env = make()  # type: ignore[operator]
    rng = SeededRandom(seed)
    done = 0
    episode = 0
    started = time.perf_counter()
    while done < steps:
        env.reset(seed=seed + episode)
        episode += 1
        for _agent in env.agent_iter(max_iter=50_000):
            observation, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            env.step(rng.below(int(observation["action_mask"].sum())))
            done += 1
    return done / (time.perf_counter() - started)


def theirs(python: str, steps: int, seed: int) -> dict[str, object]:
    out = subprocess.run(
        [python, str(HERE / "rlcard_env_steps.py"), "--steps", str(steps), "--seed", str(seed)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rlcard-python", help="python of the RLCard benchmark environment (omit to skip RLCard)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5000)
    args = parser.parse_args()
    measured: dict[str, list[float]] = {"zlj": [], "tractor": [], "rlcard_doudizhu": []}
    version = None
    for run in range(args.runs):
        measured["zlj"].append(ours(zlj_env, args.steps, run))
        if args.rlcard_python:
            found = theirs(args.rlcard_python, args.steps, run)
            measured["rlcard_doudizhu"].append(float(found["steps_per_second"]))  # type: ignore[arg-type]
            version = found.get("rlcard_version")
        measured["tractor"].append(ours(tractor_env, args.steps, run))
    rlcard = statistics.median(measured["rlcard_doudizhu"]) if measured["rlcard_doudizhu"] else None
    for name in ("zlj", "tractor"):
        median = statistics.median(measured[name])
        line = {
            "environment": f"paiju.envs {name}",
            "steps_per_second_median": round(median, 1),
            "runs": [round(x, 1) for x in measured[name]],
            "rlcard_doudizhu_steps_per_second_median": round(rlcard, 1) if rlcard else None,
            "ratio_to_rlcard_doudizhu": round(median / rlcard, 2) if rlcard else None,
            "rlcard_version": version,
        }
        print(json.dumps(line, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
