"""``paiju ratings``: its requests, and its answers from a real RatingsService (tests/ratings/test_service.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict

from paiju.platform.tokens import Role
from paiju.tools import ratings_cli
from paiju.v1 import lobby_events_pb2

from ..support.tokens import token
from .test_rater import world
from .test_service import _league, served


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="paiju")
    ratings_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["ratings", *argv])


def test_the_command_lines_requests() -> None:
    method, request = ratings_cli.request_of(parse("leaderboard", "zlj", "--mode", "ranked", "--settled"))
    assert method == "GetRatingLeaderboard"
    assert (request.game, request.mode, request.settled_only) == ("zlj", lobby_events_pb2.MATCH_MODE_RANKED, True)
    method, request = ratings_cli.request_of(parse("h2h", "a0", "a1", "tractor"))
    assert method == "GetHeadToHead" and (request.player_id, request.other_id, request.game) == ("a0", "a1", "tractor")
    method, request = ratings_cli.request_of(parse("history", "a0", "zlj", "--before", "9"))
    assert method == "GetRatingHistory" and request.before == 9
    with pytest.raises(SystemExit):
        parse("leaderboard", "chess")


def test_the_answers_of_a_real_service(nats_url: str, database_dsn: str, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(token(role=Role.PLAYER, subject="reader") + "\n")

    async def body() -> None:
        async with world(nats_url, database_dsn) as w, served(w) as stub:
            await _league(w)
            address = stub.address
            common = ["--scoring", address, "--token-file", str(token_file)]
            board_args = parse("leaderboard", "zlj", "--limit", "12", *common)
            method, answer = await ratings_cli.call(board_args)
            text = ratings_cli.render(method, answer).splitlines()
            assert len(text) == 12 and text[0].split()[:2] == ["1.", "a0"]
            assert sum("(provisional)" in line for line in text) == 6
            method, answer = await ratings_cli.call(parse("h2h", "a0", "a1", "zlj", *common))
            assert ratings_cli.render(method, answer).splitlines()[0] == (
                "against each other: 21 (15 won, 6 lost, 0 drawn)"
            )
            assert json.loads(json.dumps(MessageToDict(answer)))["against"] == 21

    asyncio.run(body())
