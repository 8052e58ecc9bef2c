"""``paiju ratings``: the players' ratings from scoring's `RatingsService` (docs/rules/ratings.md), in the terminal —
a leaderboard, one player's rating, their rated matches, two players' head-to-head.

It is a client of the public API like any other: it calls scoring with a bearer token read from a file
(``--token-file``), or, without one, as a guest of the lobby (``LobbyService.Guest``). ``--json`` prints the answer
as the contract's JSON instead of a table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.json_format import MessageToDict

from paiju.platform import settings as s
from paiju.platform.settings import add_options, describe
from paiju.rules import registry
from paiju.sdk.refusals import refusal_of
from paiju.v1 import lobby_events_pb2, lobby_pb2, lobby_pb2_grpc, ratings_pb2, ratings_pb2_grpc

MODES = {"ranked": lobby_events_pb2.MATCH_MODE_RANKED, "casual": lobby_events_pb2.MATCH_MODE_CASUAL}
GAMES = tuple(registry.GAMES)


@dataclass(frozen=True)
class Settings(s.Settings):
    """Where ``paiju ratings`` calls: options, else the environment, else defaults."""

    scoring: str = s.SCORING_ADDRESS.but(help="scoring (ratings)", option="--scoring", metavar="ADDRESS").field()
    lobby: str = s.LOBBY_ADDRESS.but(
        help="the lobby, to sign in as a guest without --token-file", option="--lobby", metavar="ADDRESS"
    ).field()


def add_parser(subparsers: Any) -> None:
    """Add the ``ratings`` command (and its own sub-commands) to an argparse sub-parser collection."""
    p = subparsers.add_parser(
        "ratings",
        help="players' ratings: a leaderboard, a player's rating and rated matches, a head-to-head (RatingsService)",
        description="Read the ratings scoring keeps (docs/rules/ratings.md): μ − 3σ, μ, σ, provisional players marked.",
    )
    commands = p.add_subparsers(dest="ratings_command", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--mode", choices=list(MODES), default="casual", help="the ratings' mode (default casual)")
        add_options(q, Settings)
        describe(q, Settings)
        q.add_argument("--token-file", type=Path, help="a file holding the bearer token to call scoring with")
        q.add_argument("--json", action="store_true", help="print the answer as JSON")
        q.set_defaults(func=run)

    q = commands.add_parser("leaderboard", help="the players by μ − 3σ, best first")
    q.add_argument("game", choices=GAMES)
    q.add_argument("--limit", type=int, default=20, help="rows (1..500, default 20)")
    q.add_argument("--settled", action="store_true", help="leave provisional players out")
    common(q)
    q = commands.add_parser("player", help="one player's rating")
    q.add_argument("player")
    q.add_argument("game", choices=GAMES)
    common(q)
    q = commands.add_parser("history", help="one player's rated matches, the latest first")
    q.add_argument("player")
    q.add_argument("game", choices=GAMES)
    q.add_argument("--limit", type=int, default=20, help="matches (1..500, default 20)")
    q.add_argument("--before", type=int, default=0, help="only matches numbered below this one (the next page)")
    common(q)
    q = commands.add_parser("h2h", help="two players' rated matches with each other")
    q.add_argument("player")
    q.add_argument("other")
    q.add_argument("game", choices=GAMES)
    q.add_argument("--limit", type=int, default=10, help="matches to list (default 10)")
    common(q)


def request_of(args: argparse.Namespace) -> tuple[str, Any]:
    """The method and request a command line asks for."""
    mode = MODES[args.mode]
    command = args.ratings_command
    if command == "leaderboard":
        return "GetRatingLeaderboard", ratings_pb2.GetRatingLeaderboardRequest(
            game=args.game, mode=mode, limit=args.limit, settled_only=args.settled
        )
    if command == "player":
        return "GetPlayerRating", ratings_pb2.GetPlayerRatingRequest(player_id=args.player, game=args.game, mode=mode)
    if command == "history":
        return "GetRatingHistory", ratings_pb2.GetRatingHistoryRequest(
            player_id=args.player, game=args.game, mode=mode, limit=args.limit, before=args.before
        )
    return "GetHeadToHead", ratings_pb2.GetHeadToHeadRequest(
        player_id=args.player, other_id=args.other, game=args.game, mode=mode, limit=args.limit
    )


def _rating(r: Any) -> str:
    mark = " (provisional)" if r.provisional else ""
    return (
        f"{r.conservative:8.2f}  μ {r.rating.mu:6.2f}  σ {r.rating.sigma:5.2f}  "
        f"{r.matches} matches, {r.wins} won, {r.draws} drawn{mark}"
    )


def _match(m: Any) -> str:
    scores = " : ".join(str(x) for x in m.team_scores)
    return (
        f"#{m.number:<5} {m.at.ToDatetime():%Y-%m-%d %H:%M}  {m.result:5}  {scores:>9}  "
        f"μ {m.before.mu:6.2f} → {m.after.mu:6.2f}  σ {m.after.sigma:5.2f}  μ−3σ {m.conservative:6.2f}  {m.game_id}"
    )


def render(method: str, answer: Any) -> str:
    """An answer as text for a terminal."""
    if method == "GetRatingLeaderboard":
        lines = [f"{r.place:>4}. {r.player_id:<24} {_rating(r)}" for r in answer.rows]
        return "\n".join(lines) if lines else "no rated player yet"
    if method == "GetPlayerRating":
        return f"{answer.rating.player_id}: {_rating(answer.rating)}"
    if method == "GetRatingHistory":
        return "\n".join(_match(m) for m in answer.matches) or "no rated match"
    lines = [
        f"against each other: {answer.against} ({answer.wins} won, {answer.losses} lost, {answer.draws} drawn)",
        f"as partners: {answer.together} ({answer.together_wins} won)",
    ]
    for label, r in (("", answer.player), ("", answer.other)):
        if r.player_id:
            lines.append(f"{label}{r.player_id}: {_rating(r)}")
    lines += [_match(m) for m in answer.matches]
    return "\n".join(lines)


async def _token(args: argparse.Namespace, settings: Settings) -> str:
    if args.token_file is not None:
        return str(args.token_file.read_text(encoding="utf-8").strip())
    async with grpc.aio.insecure_channel(settings.lobby) as channel:
        answer = await lobby_pb2_grpc.LobbyServiceStub(channel).Guest(lobby_pb2.GuestRequest(), timeout=10)
    return str(answer.session.token)


async def call(args: argparse.Namespace) -> tuple[str, Any]:
    method, request = request_of(args)
    settings = Settings.from_env(args=args)
    token = await _token(args, settings)
    async with grpc.aio.insecure_channel(settings.scoring) as channel:
        stub = ratings_pb2_grpc.RatingsServiceStub(channel)
        answer = await getattr(stub, method)(request, metadata=(("authorization", f"Bearer {token}"),), timeout=10)
    return method, answer


def run(args: argparse.Namespace) -> int:
    """``paiju ratings …``: 0 with the answer printed, 1 when refused (the refusal printed), 2 on a bad token file."""
    try:
        method, answer = asyncio.run(call(args))
    except OSError as e:
        print(f"paiju ratings: cannot read the token file: {e}", file=sys.stderr)
        return 2
    except grpc.aio.AioRpcError as e:
        refusal = refusal_of(e)
        print(f"paiju ratings: {refusal.reason}: {e.details()}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(MessageToDict(answer), ensure_ascii=False))
    else:
        print(render(method, answer))
    return 0
