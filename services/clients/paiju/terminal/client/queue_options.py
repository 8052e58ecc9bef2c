"""The ``paiju play`` options of parties and the queue (docs/rules/matchmaking.md), apart from
`paiju.terminal.client.matchmaking` so that ``paiju`` reads its arguments without loading gRPC."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``paiju play`` options of parties and the queue."""
    p.add_argument("--party", action="store_true", help="form a party for the game (you lead it; see --invite)")
    p.add_argument(
        "--invite", action="append", default=[], metavar="NAME", help="invite this player to your party (repeatable)"
    )
    p.add_argument(
        "--accept",
        nargs="?",
        const="",
        metavar="PARTY",
        help="accept the invite to PARTY (alone: your first open invite) and queue with the party",
    )
    p.add_argument("--queue", action="store_true", help="find a match through the queue instead of opening a table")
    p.add_argument("--ranked", action="store_true", help="with --queue: a ranked match (humans only; default casual)")
    p.add_argument(
        "--bot-wait",
        type=int,
        default=30,
        metavar="SECONDS",
        help="with --queue, casual: after how long bots may fill the table (0: never; default 30)",
    )


def wanted(args: argparse.Namespace) -> bool:
    """Whether ``paiju play`` goes through the queue."""
    return bool(args.queue or args.party or args.accept is not None)
