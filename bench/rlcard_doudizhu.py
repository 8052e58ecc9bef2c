#!/usr/bin/env python3
"""RLCard Dou Dizhu bare game-loop benchmark (random actions).

Standalone: imports rlcard only (no project code). Run it with the benchmark
venv's interpreter, e.g.

    /work/main/.venv-bench/bin/python bench/rlcard_doudizhu.py --games 2000 --runs 5 --seed 0

What is measured: `rlcard.games.doudizhu.game.DoudizhuGame` driven directly --
no env, no feature extraction / observation encoding.  Each game is
`init_game()` (shuffle + deal + judger setup) followed by
`step(random legal action)` until `is_over()`.

Legal actions: DoudizhuGame has no `get_legal_actions()` method.  The game
computes the acting player's legal moves inside every `init_game()`/`step()`
(`get_state()` -> `player.available_actions(...)`) and returns them as
`state['actions']` (a list of action strings such as 'pass', '33', '3456789').
That is the cheapest correct source -- recomputing them would double the work
-- and it is exactly what `rlcard.envs.doudizhu.DoudizhuEnv` itself uses.

Determinism: dealing uses `game.np_random` (a numpy RandomState that
DoudizhuGame creates *unseeded* in `__init__`; `Env.seed()` replaces it the same
way we do here).  Action choice uses `random.Random(seed)`.  Note that for a
player who leads a trick, RLCard's legal-action list comes from a Python `set`
of strings, so its order depends on str hashing: unless PYTHONHASHSEED is
fixed, the same --seed would play different games in different processes.  The
script therefore re-executes itself with PYTHONHASHSEED=0 when the variable is
not set (an explicit value in the environment is respected).  Every run is
reseeded identically, so all runs time the same sequence of games.

Output: exactly one JSON object on stdout; nothing on stderr on success.
"""

import os
import sys

if "PYTHONHASHSEED" not in os.environ:
    # Must happen before anything hashes strings we depend on; re-exec so the
    # interpreter starts with a fixed hash seed (see module docstring).
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])

import argparse
import json
import platform
import random
import statistics
import time
import warnings

# With the pinned versions RLCard 1.2.0's import and Dou Dizhu game path emit
# no warnings (checked under `-W always -X dev`).  This filter only guards
# stderr against warnings raised from RLCard's own modules should that change
# (e.g. a newer numpy deprecating something the game code calls).
warnings.filterwarnings("ignore", module=r"rlcard(\..*)?")

import numpy as np  # noqa: E402
import rlcard  # noqa: E402
from rlcard.games.doudizhu.game import DoudizhuGame  # noqa: E402


def play_games(game, n_games, seed):
    """Play n_games random games on `game`; return total number of steps."""
    game.np_random = np.random.RandomState(seed)  # dealing / shuffling
    rng = random.Random(seed)  # action choice
    choice = rng.choice
    init_game = game.init_game
    step = game.step
    is_over = game.is_over
    steps = 0
    for _ in range(n_games):
        state, _player = init_game()
        while not is_over():
            state, _player = step(choice(state["actions"]))
            steps += 1
    return steps


def positive_int(text):
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=positive_int, default=2000, help="games per timed run (default 2000)")
    parser.add_argument("--runs", type=positive_int, default=5, help="number of timed runs (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed for dealing (numpy) and action choice (random)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed warm-up games before timing (default 20)")
    args = parser.parse_args(argv)

    game = DoudizhuGame()

    # Warm-up: imports/JSON tables are already loaded at import time; this
    # warms caches, the allocator and lazily-built state.  Different seed so it
    # does not pre-play the timed games.
    if args.warmup > 0:
        play_games(game, args.warmup, args.seed + 1_000_003)

    rates = []
    steps_per_run = None
    for _ in range(args.runs):
        t0 = time.perf_counter()
        steps = play_games(game, args.games, args.seed)
        elapsed = time.perf_counter() - t0
        rates.append(args.games / elapsed)
        steps_per_run = steps  # identical every run (same seed)

    result = {
        "engine": "rlcard-doudizhu",
        "rlcard_version": rlcard.__version__,
        "games_per_run": args.games,
        "runs": [round(r, 3) for r in rates],
        "median_games_per_second": round(statistics.median(rates), 3),
        # Extra context (not needed by consumers that only read the above).
        "seed": args.seed,
        "mean_steps_per_game": round(steps_per_run / args.games, 3),
        "python_hash_seed": os.environ.get("PYTHONHASHSEED"),
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
    }
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
