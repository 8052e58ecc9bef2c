"""`make bench`, ratings part: how quickly a new player's rating settles (docs/rules/ratings.md, D-RATE-6), in a
simulation of players of known strengths rated by `paiju.scoring.rating` exactly as scoring rates them.

A population of `POPULATION` players, each with a true skill drawn from N(25, (25/3)²) by a seeded generator, plays
`WARM_UP` matches among itself first, so that it is rated as an established community is. Then `NEWCOMERS` new
players of known skills (spread evenly from the population's 5th to its 95th percentile) join and play `MATCHES`
rated matches each, seated at random with players of the population (who keep being rated too). A match is decided
by performances: every player performs at their skill plus N(0, β²) noise (β = 25/6, the model's own), as the
Weng–Lin model assumes —

- 砸六家: each deal's finishing order is the players' performances, best first, cut where a whole team is out, and
  the rules core scores it (`paiju.rules.zlj.outcome.deal_result`: team and individual points, §7-§8); a match is
  `DEALS` deals;
- 拖拉机: the team whose performance sum is higher ends at A (14), the other `round(gap / (β/2))` levels lower (at
  least one, at most twelve): the level margin follows the gap between the teams.

For each newcomer, its place after each match: the percentile of its μ among the population's μ, and of its
conservative estimate μ − 3σ among theirs (the scale of μ is the model's own and widens as a community is rated;
a place is what a leaderboard and a matchmaker read). Its final place is the mean of its last `TAIL`; it has
settled after the matches from which its place stays within `WITHIN` percentiles of the final one for good. Also
how far the final place by μ is from the place its true skill has in the population, and, over all newcomers, how
well their conservative estimates order them by true skill after 5, 10 and 20 matches (Spearman's ρ). The whole
simulation runs ``--repeat`` times with different seeds; medians over newcomers and runs. Then the 拖拉机 level
margin's effect on a population (`margin_spread`). Prints JSON lines, then Markdown tables (docs/rules/ratings.md,
docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import time
from collections.abc import Callable

from paiju.rules.zlj.outcome import deal_result, match_totals, team_out
from paiju.scoring import rating as rt
from paiju.scoring.games import GAMES

POPULATION = 60
WARM_UP = 1500
NEWCOMERS = 12
MATCHES = 60
TAIL = 10
WITHIN = 10.0
"""How close to its final place a settled rating stays: within this many percentiles of the population (the
scale of μ is the model's own, and it widens as the community is rated: a place is what a leaderboard and a
matchmaker read)."""
DEALS = 4
BETA = rt.BETA
CHECKPOINTS = (5, 10, 20)


def _zlj_result(skills: list[float], rng: random.Random) -> rt.Result:
    deals = []
    for deal in range(1, DEALS + 1):
        performance = [s + rng.gauss(0, BETA) for s in skills]
        full = sorted(range(6), key=lambda seat: -performance[seat])
        order: tuple[int, ...] = ()
        for seat in full:
            order = (*order, seat)
            if team_out(order) is not None:
                break
        deals.append(deal_result(deal, order))
    team, individual = match_totals(tuple(deals))
    return rt.Result(team, individual)


def _tractor_result(skills: list[float], rng: random.Random) -> rt.Result:
    a = sum(skills[s] + rng.gauss(0, BETA) for s in (0, 2))
    b = sum(skills[s] + rng.gauss(0, BETA) for s in (1, 3))
    loser = 14 - max(1, min(12, round(abs(a - b) / (BETA / 2))))
    return rt.Result((14, loser) if a >= b else (loser, 14))


SIMULATE: dict[str, tuple[int, Callable[[list[float], random.Random], rt.Result]]] = {
    "zlj": (6, _zlj_result),
    "tractor": (4, _tractor_result),
}


def _spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(values: list[float]) -> list[float]:
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0.0] * len(values)
        for rank, i in enumerate(order):
            out[i] = float(rank)
        return out

    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    d2 = sum((a - b) ** 2 for a, b in zip(rx, ry, strict=True))
    return 1 - 6 * d2 / (n * (n * n - 1))


def _settled(values: list[float], final: float) -> int:
    """The matches after which ``values`` (one per match, the first after match 1) stay within `WITHIN` of
    ``final`` for good."""
    last_out = max((i for i, v in enumerate(values) if abs(v - final) > WITHIN), default=-1)
    return last_out + 2  # values[i] is the rating after match i + 1


def simulate(game: str, seed: int) -> dict[str, list[float]]:
    seats, play = SIMULATE[game]
    rng = random.Random(seed)
    skills = {f"p{i}": rng.gauss(rt.MU, rt.SIGMA) for i in range(POPULATION)}
    ratings = dict.fromkeys(skills, rt.DEFAULT)
    people = sorted(skills)

    def match(players: list[str]) -> None:
        result = play([skills[p] for p in players], rng)
        after = rt.rate(GAMES[game].rating, [ratings[p] for p in players], result, [False] * seats)
        for p, b in zip(players, after, strict=True):
            ratings[p] = b

    for _ in range(WARM_UP):
        match(rng.sample(people, seats))
    spread = sorted(skills.values())
    low, high = spread[len(spread) // 20], spread[-len(spread) // 20 - 1]
    newcomers = [f"n{k}" for k in range(NEWCOMERS)]
    for k, n in enumerate(newcomers):
        skills[n] = low + (high - low) * k / (NEWCOMERS - 1)
        ratings[n] = rt.DEFAULT
    mus: dict[str, list[float]] = {n: [] for n in newcomers}
    conservative: dict[str, list[float]] = {n: [] for n in newcomers}

    def place(value: float, of: Callable[[rt.Belief], float]) -> float:
        """The percentile of ``value`` among the population's ratings."""
        return 100.0 * sum(of(ratings[p]) < value for p in people) / len(people)

    for _ in range(MATCHES):
        for n in newcomers:
            players = [n, *rng.sample(people, seats - 1)]
            rng.shuffle(players)
            match(players)
            mus[n].append(place(ratings[n].mu, lambda b: b.mu))
            conservative[n].append(place(ratings[n].conservative, lambda b: b.conservative))
    figures: dict[str, list[float]] = {"mu_settled": [], "conservative_settled": [], "final_error": []}
    for n in newcomers:
        final_mu = statistics.fmean(mus[n][-TAIL:])
        final_conservative = statistics.fmean(conservative[n][-TAIL:])
        figures["mu_settled"].append(_settled(mus[n], final_mu))
        figures["conservative_settled"].append(_settled(conservative[n], final_conservative))
        figures["final_error"].append(abs(final_mu - 100.0 * sum(skills[p] < skills[n] for p in people) / len(people)))
    truth = [skills[n] for n in newcomers]
    for at in CHECKPOINTS:
        figures[f"rho_{at}"] = [_spearman(truth, [conservative[n][at - 1] for n in newcomers])]
    return figures


MARGINS = (0.0, 1.0, 3.0, 4.0, 6.0)
SPREAD_MATCHES = (1000, 4000)


def margin_spread(margin: float, seed: int) -> dict[str, float]:
    """D-RATE-4: a 拖拉机 population rated with the level margin ``margin`` (0: none): the spread of its μ (standard
    deviation) after `SPREAD_MATCHES`, and Spearman's ρ of μ and true skill at the end. openskill's margin moves an
    expected win by many levels more than a narrow one and an upset by many levels less; with a small margin that
    feeds on itself and μ spreads without bound."""
    style = dataclasses.replace(GAMES["tractor"].rating, margin=margin)
    rng = random.Random(seed)
    skills = {f"p{i}": rng.gauss(rt.MU, rt.SIGMA) for i in range(POPULATION)}
    ratings = dict.fromkeys(skills, rt.DEFAULT)
    people = sorted(skills)
    out: dict[str, float] = {"margin": margin}
    for k in range(1, SPREAD_MATCHES[-1] + 1):
        players = rng.sample(people, 4)
        result = _tractor_result([skills[p] for p in players], rng)
        for p, b in zip(players, rt.rate(style, [ratings[p] for p in players], result, [False] * 4), strict=True):
            ratings[p] = b
        if k in SPREAD_MATCHES:
            out[f"mu_sd_{k}"] = round(statistics.pstdev(ratings[p].mu for p in people), 1)
    out["rho"] = round(_spearman([skills[p] for p in people], [ratings[p].mu for p in people]), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="simulations per game, each with its own seed")
    args = parser.parse_args()
    rows = []
    for game in SIMULATE:
        started = time.perf_counter()
        merged: dict[str, list[float]] = {}
        for run in range(args.repeat):
            for key, values in simulate(game, seed=1000 + run).items():
                merged.setdefault(key, []).extend(values)
        row = {
            "bench": "ratings",
            "game": game,
            "runs": args.repeat,
            "newcomers": NEWCOMERS * args.repeat,
            "within": WITHIN,
            "mu_settled_median": statistics.median(merged["mu_settled"]),
            "mu_settled_p90": statistics.quantiles(merged["mu_settled"], n=10)[-1],
            "conservative_settled_median": statistics.median(merged["conservative_settled"]),
            "conservative_settled_p90": statistics.quantiles(merged["conservative_settled"], n=10)[-1],
            "final_error_median": round(statistics.median(merged["final_error"]), 2),
            **{f"rho_after_{at}": round(statistics.median(merged[f"rho_{at}"]), 2) for at in CHECKPOINTS},
            "seconds": round(time.perf_counter() - started, 1),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    print(
        "| game | newcomers | place by μ within 10 percentiles of its final one after (median, 90th pct) "
        "| place by μ − 3σ, the same | final place by μ − place by true skill, percentiles (median) "
        "| Spearman ρ of μ − 3σ and true skill after 5 / 10 / 20 matches |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['game']} | {r['newcomers']} | {r['mu_settled_median']:g}, {r['mu_settled_p90']:g} "
            f"| {r['conservative_settled_median']:g}, {r['conservative_settled_p90']:g} "
            f"| {r['final_error_median']} | {r['rho_after_5']} / {r['rho_after_10']} / {r['rho_after_20']} |"
        )
    spreads = [margin_spread(m, seed=1) for m in MARGINS]
    for spread in spreads:
        print(json.dumps({"bench": "ratings-margin", **spread}), flush=True)
    print()
    print(
        f"| 拖拉机 level margin | μ spread (sd) after {SPREAD_MATCHES[0]} matches | after {SPREAD_MATCHES[1]} "
        "| Spearman ρ of μ and true skill |"
    )
    print("|---:|---:|---:|---:|")
    for spread in spreads:
        print(
            f"| {spread['margin']:g} | {spread[f'mu_sd_{SPREAD_MATCHES[0]}']} | {spread[f'mu_sd_{SPREAD_MATCHES[1]}']} "
            f"| {spread['rho']} |"
        )


if __name__ == "__main__":
    main()
