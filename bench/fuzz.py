"""The full fuzz of every Paiju service (see tests/fuzz): the stack as processes with NATS and PostgreSQL, bots
playing, then N seeded requests (100,000 by default) 16 at a time; prints the counts by status code and by reason as
one JSON line, and the failures by kind on stderr (exit status 1 when there is any).

    .venv/bin/python bench/fuzz.py --seed 7 --requests 100000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.run import CONCURRENCY, fuzz


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    args = parser.parse_args()
    outcome = fuzz(args.seed, args.requests, concurrency=args.concurrency, progress=True)
    print(outcome.line(), flush=True)
    failures = outcome.failures()
    if failures:
        print(f"{len(failures)} failures, by kind:\n{outcome.grouped(3)}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
