"""`paiju scoring`: run the scoring service, or rebuild its read models from the streams."""

from __future__ import annotations

import argparse
import asyncio
import json


def _scoring(args: argparse.Namespace) -> int:
    from paiju.scoring.bootstrap import rebuild, serve
    from paiju.scoring.config import Settings

    settings = Settings.from_env()
    if args.action == "rebuild":
        figures = asyncio.run(rebuild(settings, processes=args.processes))
        print(json.dumps(figures, indent=2))
        return 0
    asyncio.run(serve(settings))
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "scoring",
        help="run the scoring service (gRPC; configured by the environment), or `paiju scoring rebuild`",
        description="Without an action: serve ScoringService and keep the read models current. "
        "`rebuild`: empty the read models and replay the GAMES and TOURNAMENTS streams into them "
        "(safe beside a running scoring service: every batch is applied once).",
    )
    p.add_argument("action", nargs="?", choices=["serve", "rebuild"], default="serve")
    p.add_argument(
        "--processes",
        type=int,
        default=1,
        help="rebuild: apply the games projection's shards in this many processes at once (up to its shards)",
    )
    p.set_defaults(func=_scoring)
