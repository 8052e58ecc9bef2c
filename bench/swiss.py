"""`make bench`, Swiss pairing part: how long `paiju.scoring.swiss.next_round` takes to pair a round of a large
event (积分编排, §10, D-TR-10), 64 teams and 63 (one bye a round), nine rounds.

Each event is entered with a seeded draw, round 1 paired by `first_round`, and every table's level difference drawn
from a seeded generator; rounds 2 to 9 are then paired from the results so far, as the scoring service does after
each round. The whole event is played ``--repeat`` times (the same event each time: the same draw, results and
pairings); per event, the median and the slowest of each round's median, in milliseconds. Target: every round
pairs in under `TARGET_MS` (a tournament director waits for the next round's tables); PASS/FAIL is printed against
it and the exit status is 1 when a round misses it. tests/scoring/test_swiss.py holds the same events to the rules
(no rematch, no second bye), without a clock. Prints one JSON line per event, then a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time

from paiju.scoring.standings import ResultKind, RoundResult, Team
from paiju.scoring.swiss import RoundPairing, first_round, next_round, seeded_draw
from paiju.scoring.victory import BYE_VP, victory_points

TEAMS = (64, 63)
ROUNDS = 9
TARGET_MS = 500.0
"""Pairing one round, median milliseconds: the slowest round must stay under it."""


def _played(pairing: RoundPairing, rng: random.Random) -> list[RoundResult]:
    """The rows of a round whose tables end with random level differences (the bye's row too)."""
    rows: list[RoundResult] = []
    for table in pairing.tables:
        high_vp, low_vp = victory_points(rng.randint(-14, 14))
        rows.append(RoundResult(pairing.round, table.high, table.low, high_vp, ResultKind.PLAYED))
        rows.append(RoundResult(pairing.round, table.low, table.high, low_vp, ResultKind.PLAYED))
    if pairing.bye is not None:
        rows.append(RoundResult(pairing.round, pairing.bye, None, BYE_VP, ResultKind.BYE))
    return rows


def event(teams: int) -> list[float]:
    """One event of ``teams`` teams: the seconds each of rounds 2 to `ROUNDS` took to pair."""
    ids = [f"team{i:02}" for i in range(teams)]
    draw = seeded_draw(ids, 2024)
    entered = [Team(team_id=team_id, name=team_id.title(), draw=draw[team_id]) for team_id in ids]
    rng = random.Random(teams)
    results = _played(first_round(entered), rng)
    took = []
    for number in range(2, ROUNDS + 1):
        started = time.perf_counter()
        pairing = next_round(number, entered, results)
        took.append(time.perf_counter() - started)
        results += _played(pairing, rng)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="how many times each event is played (default 5)")
    args = parser.parse_args()
    rows = []
    for teams in TEAMS:
        runs = [event(teams) for _ in range(args.repeat)]
        per_round = [statistics.median(run[r] for run in runs) * 1000 for r in range(ROUNDS - 1)]
        row = {
            "bench": "swiss",
            "teams": teams,
            "rounds": ROUNDS,
            "repeat": args.repeat,
            "round_median_ms": round(statistics.median(per_round), 2),
            "slowest_round_ms": round(max(per_round), 2),
            "target_ms": TARGET_MS,
            "pass": max(per_round) < TARGET_MS,
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    print()
    print("| teams | rounds paired | median round (ms) | slowest round (ms) | target (ms) | |")
    print("|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(
            f"| {row['teams']} | {ROUNDS - 1} | {row['round_median_ms']:.1f} | {row['slowest_round_ms']:.1f} "
            f"| {TARGET_MS:.0f} | {'PASS' if row['pass'] else 'FAIL'} |"
        )
    return 0 if all(row["pass"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
