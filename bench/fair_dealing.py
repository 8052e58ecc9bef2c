"""`make bench`, fair dealing part: what commit–reveal (protocol version 2, docs/fairness.md) adds to a deal beside
version 1, measured in one run on one machine.

A deal's fair-dealing part is driven through the engine's `Games` over an in-memory store (the engine's own path:
decide, the fair steps settled in the same append, evolve, the store's append), as six seats take it: version 1,
every seat contributes to a first deal (six `Contribute` acts; the last one deals); version 2, every seat commits
(six `CommitContribution` acts; the last one closes the commitments), then reveals (six `RevealContribution` acts;
the last one closes the reveals and deals). Both start from a fresh 砸六家 match, so each round measures one first
deal of each version, alternately (drift falls on both sides). Per deal: the median wall time of its acts, the
acts and the events stored. A cut deal costs version 1 one act (the cut) where version 2 takes twelve, so the
first deal is what both share. Prints one JSON line per version, then a Markdown table with the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import time
from typing import Any

from paiju.engine.dealing import FairDealing
from paiju.engine.games import Games
from paiju.engine.seeds import server_seeds
from paiju.platform.store import MemoryEventStore
from paiju.rules import fair
from paiju.rules.fairness import contribution_commitment
from paiju.rules.zlj import Options, StartMatch

SECRET = b"fair-dealing-bench-secret-32-bytes!!"


async def one_deal(version: int, game_id: str) -> tuple[float, int, int]:
    """The seconds the seats' acts of one first deal took, the acts and the events stored."""
    dealing = FairDealing(lambda g, n: server_seeds((SECRET,), g, n), 3600.0, first_deal_seconds=0.0)
    games = Games(MemoryEventStore(), dealing=dealing)
    start = StartMatch(0, Options(deals=1), fair=True, commit_reveal=version == 2)
    await games.create(game_id, "zlj", start, "start", "engine")
    commands: list[Any] = []
    if version == 1:
        commands = [fair.Contribute(seat, secrets.token_bytes(16)) for seat in range(6)]
    else:
        kept = [(secrets.token_bytes(32), secrets.token_bytes(16)) for _ in range(6)]
        commands = [
            fair.CommitContribution(seat, contribution_commitment(1, seat, salt, 0, data))
            for seat, (salt, data) in enumerate(kept)
        ]
        commands += [fair.RevealContribution(seat, salt, data) for seat, (salt, data) in enumerate(kept)]
    started = time.perf_counter()
    for n, command in enumerate(commands):
        await games.act(game_id, command, f"c{n}", "player")
    took = time.perf_counter() - started
    game = await games.load(game_id)
    assert game.state.phase.value == "play", "the deal was dealt"
    return took, len(commands), game.version - 1  # the start's event aside


async def run(rounds: int) -> dict[int, list[tuple[float, int, int]]]:
    results: dict[int, list[tuple[float, int, int]]] = {1: [], 2: []}
    for r in range(rounds):
        for version in (1, 2) if r % 2 == 0 else (2, 1):
            results[version].append(await one_deal(version, f"bench-{version}-{r}"))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41, help="deals of each version (default 41)")
    args = parser.parse_args()
    results = asyncio.run(run(args.rounds))
    medians = {}
    for version, rows in results.items():
        ms = statistics.median(t for t, _, _ in rows) * 1000
        acts, events = rows[0][1], rows[0][2]
        medians[version] = ms
        row = {"bench": "fair_dealing", "protocol": version, "deal_ms": round(ms, 3), "acts": acts, "events": events}
        print(json.dumps(row), flush=True)
    print()
    print("| protocol | seats' acts per first deal | events stored | median ms per deal | ratio to version 1 |")
    print("|---:|---:|---:|---:|---:|")
    for version, rows in results.items():
        ratio = medians[version] / medians[1]
        print(f"| {version} | {rows[0][1]} | {rows[0][2]} | {medians[version]:.2f} | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
