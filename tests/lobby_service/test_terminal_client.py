"""The terminal client end to end against the real lobby and engine: `play zlj` opens a table, seats five bots and
starts a one-deal 砸六家 match; a real bot runner leases and plays the bot seats while the person's seat is typed in
a pseudo-terminal (pexpect); the match ends and the lobby's read model lists the table as finished."""

from __future__ import annotations

import asyncio
import io
import re
import time

import pexpect

from paiju.platform.tokens import Identity, Role
from paiju.rules.cards import Card, format_card
from paiju.rules.zlj.combos import LEVEL_OF, SMALL_JOKER
from paiju.terminal.client.render import PROMPT
from paiju.v1 import engine_pb2, lobby_pb2

from ..engine.harness import auth as bearer
from ..support.credentials import BOTS, mint_token
from ..terminal.driver import ClientTerminal
from .stack import stack


def _not_a_combination(hand: tuple[Card, ...]) -> str | None:
    """Two cards of different ranks (no joker): never a 砸六家 combination (§3)."""
    low = min(hand, key=lambda c: LEVEL_OF[c])
    for c in hand:
        if LEVEL_OF[c] != LEVEL_OF[low] and LEVEL_OF[c] < SMALL_JOKER:
            return f"{format_card(low)} {format_card(c)}"
    return None


def test_the_terminal_client_plays_a_zlj_deal_against_the_real_lobby_engine_and_bot_runner(
    nats_url: str, database_dsn: str
) -> None:
    async def main() -> None:
        from paiju.botrunner.leases import LobbySeatSource
        from paiju.botrunner.runner import BotRunner

        async with stack(nats_url, database_dsn) as s:
            stop = asyncio.Event()
            runner = BotRunner(
                LobbySeatSource(s.lobby, "runner-t", BOTS, max_seats=6),
                s.engine,
                runner_id="runner-t",
                think=0.0,
                renew_every=1.0,
                retry_every=0.2,
            )
            bots = asyncio.create_task(runner.run(stop))
            child = ClientTerminal(
                ("play", "zlj", "--lobby", s.lobby_address, "--engine", s.engine_address, "--deals", "1"), timeout=30
            )
            log = io.StringIO()
            child.logfile_read = log
            prompts = 0
            illegal = typed = False
            table_id = ""
            try:
                await asyncio.to_thread(child.expect, r"Opened table (table-\S+?)\.", timeout=30)
                opened = child.match
                assert isinstance(opened, re.Match)
                table_id = opened.group(1)
                game_id = f"{table_id}-m1"
                await s.game_exists(game_id)
                while True:
                    found = await asyncio.to_thread(
                        lambda: child.expect_exact([PROMPT, "The match is over", pexpect.EOF], timeout=30)
                    )
                    if found != 0:
                        break
                    prompts += 1
                    state = (await s.games.refresh(game_id)).state
                    # two cards of different ranks are no combination, leading or following (§3): refused
                    playing = state.phase.value == "play" and state.turn == 0
                    if playing and not illegal and (pair := _not_a_combination(state.hands[0])) is not None:
                        child.sendline(pair)
                        await asyncio.to_thread(child.expect_exact, "Not allowed: ", timeout=30)
                        illegal = True
                    elif not typed and state.turn == 0:
                        game = await s.games.refresh(game_id)
                        mine = bearer(
                            mint_token(Identity(game.seats[0], Role.PLAYER, game_id, 0, int(time.time()) + 900))
                        )
                        legal = await s.engine.GetLegalActions(
                            engine_pb2.GetLegalActionsRequest(game_id=game_id, min_version=game.version), metadata=mine
                        )
                        plays = [a.zlj.play.cards for a in legal.actions if a.zlj.WhichOneof("command") == "play"]
                        if plays:
                            child.sendline(" ".join(format_card(Card(v - 1)) for v in plays[-1]))
                            typed = True
                        else:
                            child.sendline("1")
                    else:
                        child.sendline("1")
                await asyncio.to_thread(child.expect, pexpect.EOF, timeout=15)
                code = await asyncio.to_thread(child.process.wait, 15)
            finally:
                child.close()
                stop.set()
                await asyncio.gather(bots, return_exceptions=True)
            output = log.getvalue()
            assert code == 0, output[-3000:]
            assert prompts > 0 and illegal and typed, (prompts, illegal, typed, output[-3000:])
            assert "The match is over" in output and "Match over, " in output
            assert "seat 0 (A, you)" in output
            assert re.search(r"seat [1-5] \([AB][^)]*\): ", output)
            assert runner.starts, "the bot runner leased the bot seats"
            finished = await s.listed(table_id, lambda t: t.status == lobby_pb2.TABLE_STATUS_FINISHED)
            assert finished.last_result.game_id == game_id
            assert len(finished.last_result.team_points) > 0
            assert (await s.games.refresh(game_id)).state.phase.value == "ended"

    asyncio.run(main())
