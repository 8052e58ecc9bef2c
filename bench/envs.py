"""`make bench`: the bot-builder's kit's environments (paiju.envs) in steps and deals (episodes) per second, beside
RLCard's Dou Dizhu environment (steps and games per second), measured in one run on one machine.

Each side steps its environment with uniformly random legal actions, observation encoding included (ours: the seat's
observation dict with its action mask — and, for `zlj_env` and the deprecated `tractor_env`, the cards of every
legal action; RLCard's: its state encoding), for a fixed number of steps, whole episodes. A step of `tractor_v2` is
one card of a play being composed (or a bid), so it takes many more steps a deal than `tractor_env`: steps/s and
deals/s are both reported. The runs alternate (ours, theirs, ours, …) so that drift in the machine's speed falls on
both sides; medians of the runs and their ratios are printed, and the median of each run's ratio to the RLCard run
right after it, and steps per second of each process's own CPU time (on a busy machine, where the processes wait
for a core, the steadier figure), one JSON line per environment, and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from paiju.envs import tractor_env, tractor_v2, zlj_env
from paiju.rules.rng import SeededRandom

HERE = Path(__file__).parent


def ours(make: object, steps: int, seed: int) -> tuple[float, float, float]:
    """Steps per second, deals per second and steps per CPU second of one of our environments over ``steps`` steps
    (whole episodes, random legal actions: a uniformly random index among those the mask allows)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # tractor_env, measured while it stays
        env = make()  # type: ignore[operator]
    rng = SeededRandom(seed)
    done = 0
    episode = 0
    started = time.perf_counter()
    cpu_started = time.process_time()
    while done < steps:
        env.reset(seed=seed + episode)
        episode += 1
        for _agent in env.agent_iter(max_iter=50_000):
            observation, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            allowed = np.flatnonzero(observation["action_mask"])
            env.step(int(allowed[rng.below(len(allowed))]))
            done += 1
    seconds = time.perf_counter() - started
    return done / seconds, episode / seconds, done / (time.process_time() - cpu_started)


def theirs(python: str, steps: int, seed: int) -> dict[str, object]:
    out = subprocess.run(
        [python, str(HERE / "rlcard_env_steps.py"), "--steps", str(steps), "--seed", str(seed)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


OURS = {"zlj": zlj_env, "tractor_v2": tractor_v2, "tractor (v0, deprecated)": tractor_env}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rlcard-python", help="python of the RLCard benchmark environment (omit to skip RLCard)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5000)
    args = parser.parse_args()
    steps: dict[str, list[float]] = {name: [] for name in (*OURS, "rlcard_doudizhu")}
    cpu: dict[str, list[float]] = {name: [] for name in (*OURS, "rlcard_doudizhu")}
    paired: dict[str, list[float]] = {name: [] for name in OURS}
    """Each run's steps/s over the RLCard run right after it: the machine's drift falls on both."""
    deals: dict[str, list[float]] = {name: [] for name in (*OURS, "rlcard_doudizhu")}
    version = None
    for run in range(args.runs):
        for name, make in OURS.items():
            per_step, per_deal, per_cpu = ours(make, args.steps, run)
            steps[name].append(per_step)
            cpu[name].append(per_cpu)
            deals[name].append(per_deal)
            if args.rlcard_python:  # alternate: theirs after each of ours
                found = theirs(args.rlcard_python, args.steps, run)
                seconds = float(found["seconds"])  # type: ignore[arg-type]
                steps["rlcard_doudizhu"].append(float(found["steps_per_second"]))  # type: ignore[arg-type]
                deals["rlcard_doudizhu"].append(float(found["games"]) / seconds)  # type: ignore[arg-type]
                paired[name].append(per_step / steps["rlcard_doudizhu"][-1])
                cpu["rlcard_doudizhu"].append(float(found["steps_per_cpu_second"]))  # type: ignore[arg-type]
                version = found.get("rlcard_version")
    rlcard = statistics.median(steps["rlcard_doudizhu"]) if steps["rlcard_doudizhu"] else None
    rlcard_games = statistics.median(deals["rlcard_doudizhu"]) if deals["rlcard_doudizhu"] else None
    rows = []
    for name in OURS:
        median = statistics.median(steps[name])
        line = {
            "environment": f"paiju.envs {name}",
            "steps_per_second_median": round(median, 1),
            "deals_per_second_median": round(statistics.median(deals[name]), 2),
            "runs": [round(x, 1) for x in steps[name]],
            "rlcard_doudizhu_steps_per_second_median": round(rlcard, 1) if rlcard else None,
            "rlcard_doudizhu_games_per_second_median": round(rlcard_games, 2) if rlcard_games else None,
            "ratio_to_rlcard_doudizhu": round(median / rlcard, 2) if rlcard else None,
            "paired_ratios": [round(x, 2) for x in paired[name]],
            "paired_ratio_median": round(statistics.median(paired[name]), 2) if paired[name] else None,
            "steps_per_cpu_second_median": round(statistics.median(cpu[name]), 1),
            "cpu_ratio_to_rlcard_doudizhu": (
                round(statistics.median(cpu[name]) / statistics.median(cpu["rlcard_doudizhu"]), 2)
                if cpu["rlcard_doudizhu"]
                else None
            ),
            "rlcard_version": version,
        }
        rows.append(line)
        print(json.dumps(line, ensure_ascii=False))
    print()
    print(
        "| environment | steps/s | deals/s | steps/s ÷ RLCard Dou Dizhu's | median of the paired runs' ratios "
        "| steps per CPU second | its ratio |"
    )
    print("|---|---|---|---|---|---|---|")
    for line in rows:
        print(
            f"| {line['environment']} | {line['steps_per_second_median']} | {line['deals_per_second_median']} | "
            f"{line['ratio_to_rlcard_doudizhu']} | {line['paired_ratio_median']} | "
            f"{line['steps_per_cpu_second_median']} | {line['cpu_ratio_to_rlcard_doudizhu']} |"
        )
    if rlcard:
        rlcard_cpu = round(statistics.median(cpu["rlcard_doudizhu"]), 1)
        print(
            f"| RLCard {version} Dou Dizhu | {round(rlcard, 1)} | {round(rlcard_games or 0, 2)} (games) | 1 | 1 "
            f"| {rlcard_cpu} | 1 |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
