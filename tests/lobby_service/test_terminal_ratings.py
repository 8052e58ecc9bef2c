"""After a rated match the terminal client shows each person's rating change: `paiju play zlj` opens a casual table
(rated, docs/rules/ratings.md), plays a one-deal match against five bots of a real bot runner, and once the lobby
says the match is over and scoring's rater has rated it from the lobby's stream, the client prints the person's
rating before and after, as `RatingsService` holds it."""

from __future__ import annotations

import asyncio
import io
import re
import time
from typing import Any

import grpc
import pexpect
import pytest

from paiju.platform.consumer import in_background
from paiju.platform.edge import Policy
from paiju.platform.serving import build_server
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Verifier
from paiju.scoring import rater as rr
from paiju.scoring.ratings_service import RatingsService
from paiju.scoring.readmodels import migrate_scoring
from paiju.terminal.client.render import PROMPT
from paiju.v1 import lobby_events_pb2, lobby_pb2, ratings_pb2, ratings_pb2_grpc

from ..support.credentials import BOTS, TRUST
from ..terminal.driver import ClientTerminal
from .stack import stack

pytestmark = pytest.mark.e2e  # the terminal client on a pseudo-terminal against the lobby, engine and scoring


def test_the_client_shows_each_persons_rating_change_after_a_rated_match(nats_url: str, database_dsn: str) -> None:
    async def main() -> None:
        from paiju.botrunner.leases import LobbySeatSource
        from paiju.botrunner.runner import BotRunner

        async with stack(nats_url, database_dsn) as s:
            stop = asyncio.Event()
            await migrate_scoring(s.pool)
            ledgers = await JetStreamEventStore.connect(nats_url, stream=f"R{int(time.time() * 1000)}", prefix="r.tour")
            rating = in_background(rr.rater(s.lobby_store, s.pool, ledgers), stop)
            server = build_server(Policy(authenticator=Verifier(TRUST, lambda: int(time.time()))))
            ratings_pb2_grpc.add_RatingsServiceServicer_to_server(RatingsService(s.pool), server)
            scoring = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
            await server.start()
            runner = BotRunner(
                LobbySeatSource(s.lobby, "runner-r", BOTS, max_seats=6),
                s.engine,
                runner_id="runner-r",
                think=0.0,
                renew_every=1.0,
                retry_every=0.2,
            )
            bots = asyncio.create_task(runner.run(stop))
            argv = ("play", "zlj", "--lobby", s.lobby_address, "--engine", s.engine_address, "--scoring", scoring)
            child = ClientTerminal((*argv, "--deals", "1"), timeout=30)
            log = io.StringIO()
            child.logfile_read = log
            try:
                await asyncio.to_thread(child.expect, r"Opened table (table-\S+?)\.", timeout=30)
                while True:
                    found = await asyncio.to_thread(
                        lambda: child.expect_exact([PROMPT, "The match is over", pexpect.EOF], timeout=30)
                    )
                    if found != 0:
                        break
                    child.sendline("1")
                await asyncio.to_thread(child.expect, pexpect.EOF, timeout=30)
                code = await asyncio.to_thread(child.process.wait, 15)
            finally:
                child.close()
                stop.set()
                await asyncio.gather(bots, rating, return_exceptions=True)
            output = log.getvalue().replace("\r", "")
            assert code == 0, output[-3000:]
            said = re.search(
                r"Ratings \(casual; shown as μ − 3σ, bots keep their fixed ratings\):\n"
                r"  seat 0 \(A, you\): (-?\d+\.\d\d) → (-?\d+\.\d\d) \(([+-]\d+\.\d\d); μ (\d+\.\d\d), σ (\d+\.\d\d)\)",
                output,
            )
            assert said is not None, output[-3000:]
            # the numbers scoring holds for the person's match
            player = re.search(r"Signed in as (\S+)\.", output)
            assert player is not None
            history = await _history(scoring, s, player.group(1))
            match = history.matches[0]
            assert said.group(1) == f"{match.before.mu - 3 * match.before.sigma:.2f}" == "0.00"
            assert said.group(2) == f"{match.after.mu - 3 * match.after.sigma:.2f}"
            assert said.group(4) == f"{match.after.mu:.2f}" and said.group(5) == f"{match.after.sigma:.2f}"
            await server.stop(None)
            await ledgers.close()

    asyncio.run(main())


async def _history(scoring: str, s: Any, name: str) -> Any:
    """The person's casual 砸六家 rated matches (read with a session of the lobby's)."""
    rows = await s.pool.fetch("SELECT player_id FROM scoring_ratings WHERE mode = $1", 2)
    players = [r["player_id"] for r in rows]
    assert len(players) == 1, f"one person rated (the bots never are): {players} ({name})"
    token = (await s.lobby.Guest(lobby_pb2.GuestRequest())).session.token
    async with grpc.aio.insecure_channel(scoring) as channel:
        stub: Any = ratings_pb2_grpc.RatingsServiceStub(channel)
        request = ratings_pb2.GetRatingHistoryRequest(
            player_id=players[0], game="zlj", mode=lobby_events_pb2.MATCH_MODE_CASUAL
        )
        return await stub.GetRatingHistory(request, metadata=(("authorization", f"Bearer {token}"),))
