#!/usr/bin/env python3
"""RLCard Dou Dizhu *environment* steps per second (random legal actions), for bench/envs.py.

Standalone: imports rlcard only (no project code); run with the benchmark venv's interpreter. What is measured:
`rlcard.make("doudizhu")` — the environment an RL agent uses, observation encoding included — stepped with a
uniformly random legal action until each game is over. Prints one JSON line: steps, games, seconds, steps/s, and the
process's CPU seconds and steps per CPU second (steadier than the clock on a busy machine).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if "PYTHONHASHSEED" not in os.environ:  # RLCard orders some legal actions by str hashing
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])
    import rlcard

    env = rlcard.make("doudizhu", config={"seed": args.seed})
    rng = random.Random(args.seed)
    steps = games = 0
    started = time.perf_counter()
    cpu_started = time.process_time()
    while steps < args.steps:
        state, _ = env.reset()
        games += 1
        while not env.is_over():
            state, _ = env.step(rng.choice(list(state["legal_actions"].keys())))
            steps += 1
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    print(
        json.dumps(
            {
                "steps": steps,
                "games": games,
                "seconds": round(seconds, 3),
                "steps_per_second": steps / seconds,
                "cpu_seconds": round(cpu_seconds, 3),
                "steps_per_cpu_second": steps / cpu_seconds,
                "rlcard_version": getattr(rlcard, "__version__", "?"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
