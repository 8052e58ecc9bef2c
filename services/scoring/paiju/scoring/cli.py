"""`paiju scoring`: run the scoring service, or rebuild its read models from the streams."""

from __future__ import annotations

import argparse
import json

from paiju.platform import event_loop
from paiju.platform.settings import describe
from paiju.scoring.config import ReadModels, Settings


def _scoring(args: argparse.Namespace) -> int:
    from paiju.scoring.bootstrap import rebuild, serve

    if args.action == "rebuild":
        models = ReadModels.from_env()
        figures = event_loop.run(rebuild(models, processes=args.processes), models.event_loop)
        print(json.dumps(figures, indent=2))
        return 0
    settings = Settings.from_env()
    event_loop.run(serve(settings), settings.event_loop)
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
    describe(p, Settings)
    p.set_defaults(func=_scoring)
