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

from paiju.rules.cards import Rank, Suit, parse_cards
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import game as tractor
from paiju.rules.tractor.bots import RandomBot as TractorRandomBot
from paiju.rules.tractor.combos import classify as tractor_classify
from paiju.rules.tractor.follow import _best as realisation_cache
from paiju.rules.tractor.follow import check_follow, make_follow
from paiju.rules.tractor.model import Cut as TractorCut
from paiju.rules.tractor.model import Phase as TractorPhase
from paiju.rules.tractor.model import Redeal, StartGame
from paiju.rules.tractor.model import State as TractorState
from paiju.rules.tractor.order import Trumps
from paiju.rules.zlj import Cut, Options, Phase, StartMatch, State, decide, evolve, legal_actions
from paiju.rules.zlj.bots import RandomBot
from paiju.rules.zlj.game import _by_level as hand_groups

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
    """Median over positions of the fastest of ``repeat`` cold calls (memo cleared), in microseconds."""
    costs = []
    clock = time.perf_counter_ns
    for state, seat in positions:
        best = None
        for _ in range(repeat):
            hand_groups.cache_clear()
            t0 = clock()
            legal_actions(state, seat)
            dt = clock() - t0
            best = dt if best is None or dt < best else best
        assert best is not None
        costs.append(best / 1000)
    return statistics.median(costs)


def tractor_self_play(deals: int, seed: int) -> tuple[list[float], list[tuple[object, object, object]]]:
    """Play ``deals`` seeded 拖拉机 deals with four random-legal bots.

    Returns the CPU time of each deal (seconds) and the follow positions met (lead, hand, trumps).
    """
    seeds = SeededRandom(seed)
    times: list[float] = []
    follows: list[tuple[object, object, object]] = []
    while len(times) < deals:
        bots = [TractorRandomBot(seeds.next64()) for _ in range(4)]
        state = tractor.replay(tractor.decide(TractorState(), StartGame(seeds.next64())))
        started = time.process_time()
        while state.phase is not TractorPhase.ENDED and len(times) < deals:
            if state.phase is TractorPhase.FLIP:
                command: object = Redeal(seeds.next64())
            else:
                seat = tractor.waiting(state)[0]
                command = bots[seat].choose(state, seat)
                if isinstance(command, TractorCut):
                    command = TractorCut(seat, command.count, seeds.next64())
                if state.phase is TractorPhase.PLAY and state.trick is not None and len(follows) < 2000:
                    follows.append((state.trick.lead, state.hands[seat], tractor.trumps(state)))
            events = tractor.decide(state, command)  # type: ignore[arg-type]
            state = tractor.replay(events, state)
            if any(type(e).__name__ == "DealSettled" for e in events):
                now = time.process_time()
                times.append(now - started)
                started = now
    return times, follows


def follow_costs(follows: list[tuple[object, object, object]]) -> dict[str, float]:
    """Median and worst cost, in ms, of generating a follow and of validating it (caches cleared)."""
    generate: list[float] = []
    validate: list[float] = []
    for lead, hand, trumps in follows:
        realisation_cache.cache_clear()
        t0 = time.perf_counter()
        play = make_follow(lead, hand, trumps)  # type: ignore[arg-type]
        t1 = time.perf_counter()
        realisation_cache.cache_clear()
        t2 = time.perf_counter()
        check_follow(lead, hand, play, trumps)  # type: ignore[arg-type]
        t3 = time.perf_counter()
        generate.append((t1 - t0) * 1000)
        validate.append((t3 - t2) * 1000)
    return {
        "generate_median_ms": statistics.median(generate),
        "generate_worst_ms": max(generate),
        "validate_median_ms": statistics.median(validate),
        "validate_worst_ms": max(validate),
    }


WORST_CASES: dict[str, tuple[Rank, str, str]] = {
    "11-pair trump tractor vs 40 trumps of gapped pairs": (
        Rank.THREE,
        "4H 4H 5H 5H 6H 6H 7H 7H 8H 8H 9H 9H TH TH JH JH QH QH KH KH AH AH",
        "4H 4H 5H 5H 6H 6H 8H 8H 9H 9H TH TH QH QH KH KH AH AH 2S 2S 2C 2C 2D 2D 3S 3S 3C 3C 3D 3D "
        "SJ SJ BJ BJ 2H 2H 3H 3H 7H JH",
    ),
    "11-pair trump tractor vs 36 trumps of triples": (
        Rank.THREE,
        "4H 4H 5H 5H 6H 6H 7H 7H 8H 8H 9H 9H TH TH JH JH QH QH KH KH AH AH",
        " ".join(f"{r}H {r}H {r}H" for r in "4568TJKA") + " 2S 2S 2S 2C 2C 2C 3S 3S 3S 3D 3D 3D",
    ),
    "30-card special tractor of sixes vs 14 unlinkable trump kinds, 4-5 copies each": (
        Rank.EIGHT,
        " ".join(f"{r}H " * 6 for r in "34567").strip(),
        " ".join(
            f"{k} " * (5 if i % 2 else 4)
            for i, k in enumerate(["8S", "8H", "8C", "8D", "2S", "2C", "2D", "SJ", "3H", "5H", "7H", "TH", "QH", "AH"])
        ).strip(),
    ),
    "6-triple special tractor vs pairs and triples": (
        Rank.THREE,
        " ".join(f"{r}S {r}S {r}S" for r in "456789"),
        " ".join(f"{r}S {r}S" for r in "4567") + " " + " ".join(f"{r}S {r}S {r}S" for r in "9TJQKA") + " 8S",
    ),
}


def worst_cases() -> dict[str, float]:
    """Validation cost (ms, cold caches) of constructed hard follows: long leads against many pairs."""
    out: dict[str, float] = {}
    for name, (level, lead_text, hand_text) in WORST_CASES.items():
        trumps = Trumps(level, Suit.HEARTS)
        lead = tractor_classify(parse_cards(lead_text), trumps)
        hand = parse_cards(hand_text)
        play = make_follow(lead, hand, trumps)
        realisation_cache.cache_clear()
        t0 = time.perf_counter()
        check_follow(lead, hand, play, trumps)
        out[name] = round((time.perf_counter() - t0) * 1000, 3)
    return out


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
    parser.add_argument("--tractor-deals", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the JSON line only, not the figures in words")
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
    deal_times, follows = tractor_self_play(args.tractor_deals, args.seed)
    follow = follow_costs(follows)

    report: dict[str, object] = {
        "zlj_deals_per_second_runs": [round(x, 1) for x in ours],
        "zlj_deals_per_second_median": round(statistics.median(ours), 1),
        "zlj_actions_per_deal": round(steps_per_deal, 1),
        "zlj_legal_actions_median_us": round(cost, 2),
        "tractor_deals": len(deal_times),
        "tractor_deals_per_second": round(len(deal_times) / sum(deal_times), 1),
        "tractor_deal_cpu_median_ms": round(statistics.median(deal_times) * 1000, 1),
        "tractor_follows_timed": len(follows),
        **{f"tractor_follow_{k}": round(v, 3) for k, v in follow.items()},
        "tractor_worst_cases_validate_ms": worst_cases(),
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
    print(json.dumps(report))
    if args.json:
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
    print(f"拖拉机 self-play, random-legal bots ({report['tractor_deals']} deals, 81-card hands)")
    print(f"  deals/s (CPU):        {report['tractor_deals_per_second']}")
    print(f"  deal CPU median:      {report['tractor_deal_cpu_median_ms']} ms")
    print(
        f"  follow generation:    median {report['tractor_follow_generate_median_ms']} ms, "
        f"worst {report['tractor_follow_generate_worst_ms']} ms ({report['tractor_follows_timed']} follows)"
    )
    print(
        f"  follow validation:    median {report['tractor_follow_validate_median_ms']} ms, "
        f"worst {report['tractor_follow_validate_worst_ms']} ms"
    )
    for name, ms in worst_cases().items():
        print(f"  worst case, {name}: {ms} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
