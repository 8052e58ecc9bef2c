"""`make bench`: 砸六家 self-play speed beside RLCard's Dou Dizhu, measured in one run on one machine.

For 砸六家: complete deals of seeded self-play by six random-legal bots (`RandomBot`), through the
core's public API (`legal_actions`, `decide`, `evolve`), matches of six deals with tribute; and the
median cost of one `legal_actions` call over positions sampled from those games.
For RLCard: its bare Dou Dizhu game loop with random legal actions (bench/rlcard_doudizhu.py, run in
its own virtual environment). The runs alternate (ours, theirs, ours, ...) so that drift in the
machine's speed falls on both sides; medians and their ratio are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import Cut, Options, Phase, StartMatch, State, decide, evolve, legal_actions
from paiju.rules.zlj.bots import RandomBot

HERE = Path(__file__).parent
DEALS_PER_MATCH = 6


def self_play(matches: int, seed: int) -> tuple[int, int]:
    """Play ``matches`` complete matches; returns (deals, actions)."""
    seeds = SeededRandom(seed)
    deals = actions = 0
    for _ in range(matches):
        bots = [RandomBot(seeds.next64()) for _ in range(6)]
        state = State()
        for event in decide(state, StartMatch(seeds.next64(), Options(deals=DEALS_PER_MATCH))):
            state = evolve(state, event)
        while state.phase is not Phase.ENDED:
            seat = state.turn
            assert seat is not None
            action = bots[seat].choose(state, seat)
            if isinstance(action, Cut):
                action = Cut(seat, action.count, seeds.next64())
            for event in decide(state, action):
                state = evolve(state, event)
            actions += 1
        deals += len(state.results)
    return deals, actions


def sample_positions(count: int, seed: int) -> list[tuple[State, int]]:
    """Positions where a seat must play, taken along seeded random games."""
    positions: list[tuple[State, int]] = []
    seeds = SeededRandom(seed)
    while len(positions) < count:
        bots = [RandomBot(seeds.next64()) for _ in range(6)]
        state = State()
        for event in decide(state, StartMatch(seeds.next64(), Options(deals=1))):
            state = evolve(state, event)
        while state.phase is not Phase.ENDED and len(positions) < count:
            seat = state.turn
            assert seat is not None
            if state.phase is Phase.PLAY:
                positions.append((state, seat))
            for event in decide(state, bots[seat].choose(state, seat)):
                state = evolve(state, event)
    return positions


def legal_actions_cost(positions: list[tuple[State, int]], repeat: int = 7) -> float:
    """Median over positions of the fastest of ``repeat`` timed calls, in microseconds."""
    costs = []
    clock = time.perf_counter_ns
    for state, seat in positions:
        best = None
        for _ in range(repeat):
            t0 = clock()
            legal_actions(state, seat)
            dt = clock() - t0
            best = dt if best is None or dt < best else best
        assert best is not None
        costs.append(best / 1000)
    return statistics.median(costs)


def rlcard_run(python: str, games: int, seed: int) -> dict[str, object]:
    out = subprocess.run(
        [python, str(HERE / "rlcard_doudizhu.py"), "--games", str(games), "--runs", "1", "--seed", str(seed)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rlcard-python", help="python of the RLCard benchmark environment (omit to skip RLCard)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--matches", type=int, default=100, help="matches of 6 deals per run")
    parser.add_argument("--rlcard-games", type=int, default=1000, help="Dou Dizhu games per run")
    parser.add_argument("--positions", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()

    self_play(3, args.seed)  # warm-up
    ours: list[float] = []
    steps_per_deal = 0.0
    theirs: list[float] = []
    theirs_info: dict[str, object] = {}
    for run in range(args.runs):
        t0 = time.perf_counter()
        deals, actions = self_play(args.matches, args.seed + run)
        ours.append(deals / (time.perf_counter() - t0))
        steps_per_deal = actions / deals
        if args.rlcard_python:
            theirs_info = rlcard_run(args.rlcard_python, args.rlcard_games, args.seed + run)
            runs = theirs_info["runs"]
            assert isinstance(runs, list)
            theirs.append(float(runs[0]))
    cost = legal_actions_cost(sample_positions(args.positions, args.seed))

    report: dict[str, object] = {
        "zlj_deals_per_second_runs": [round(x, 1) for x in ours],
        "zlj_deals_per_second_median": round(statistics.median(ours), 1),
        "zlj_actions_per_deal": round(steps_per_deal, 1),
        "zlj_legal_actions_median_us": round(cost, 2),
    }
    if theirs:
        median_theirs = statistics.median(theirs)
        report.update(
            {
                "rlcard_doudizhu_games_per_second_runs": [round(x, 1) for x in theirs],
                "rlcard_doudizhu_games_per_second_median": round(median_theirs, 1),
                "rlcard_version": theirs_info.get("rlcard_version"),
                "ratio_zlj_deals_to_rlcard_games": round(statistics.median(ours) / median_theirs, 2),
            }
        )
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"砸六家 self-play, random-legal bots ({args.matches} matches x {DEALS_PER_MATCH} deals per run)")
    print(f"  deals/s per run:      {report['zlj_deals_per_second_runs']}")
    print(f"  median deals/s:       {report['zlj_deals_per_second_median']}")
    print(f"  actions per deal:     {report['zlj_actions_per_deal']}")
    print(f"  legal_actions median: {report['zlj_legal_actions_median_us']} us ({args.positions} positions)")
    if theirs:
        print(
            f"RLCard {report['rlcard_version']} Dou Dizhu, bare game loop, random actions "
            f"({args.rlcard_games} games/run)"
        )
        print(f"  games/s per run:      {report['rlcard_doudizhu_games_per_second_runs']}")
        print(f"  median games/s:       {report['rlcard_doudizhu_games_per_second_median']}")
        print(f"Ratio (our deals/s : RLCard games/s): {report['ratio_zlj_deals_to_rlcard_games']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
