"""The terminal client rides out a lost engine connection: the engine's server stops mid-deal and comes back
on the same port; the client's calls are retried (an act with its command id, so it applies once) and its
Watch stream resumes from the last version it received: every event is narrated exactly once."""

from __future__ import annotations

import functools
import io
import random
import re
from typing import Any

import pexpect
import pytest

from paiju.contract.games import ZLJ_EVENTS
from paiju.platform.tokens import Role
from paiju.rules.zlj.model import CardsPlayed, FourTake, Passed
from paiju.terminal.client.render import PROMPT
from paiju.v1 import engine_pb2

from ..support.waiting import wait_until_blocking
from .driver import EngineThread, auth, only_acts_and_watches, player_id, screen, spawn_client, token, zlj_bots

pytestmark = pytest.mark.e2e  # the terminal client as a process on a pseudo-terminal


def test_the_client_resumes_after_the_engine_comes_back() -> None:
    with EngineThread(seed=31) as engine:
        engine.create("again")
        mine = token(Role.PLAYER, "again", 0)
        before = engine.calls(mine)
        child = spawn_client("play", "--engine", engine.address, "--game", "again", "--token", mine, timeout=60)
        log = io.StringIO()
        child.logfile_read = log
        rng = random.Random(8)
        prompts = 0
        bounced = False
        try:
            child.expect_exact("What happened so far")
            engine.spawn(zlj_bots(engine.stub, "again", {1, 2, 3, 4, 5}, seed=6, pause=0.02))
            while True:
                found = child.expect_exact([PROMPT, "The match is over"])
                if found == 1:
                    break
                prompts += 1
                counts = re.findall(r"Your options \((\d+)\):", screen(child))
                assert counts, log.getvalue()[-2000:]
                options = int(counts[-1])
                child.sendline(str(rng.randint(1, options)))
                if prompts == 2 and not bounced:
                    engine.restart(down_seconds=1.5)
                    bounced = True
            child.expect(pexpect.EOF, timeout=10)
        finally:
            child.close()
        output = log.getvalue().replace("\r", "")
        assert child.exit_code() == 0, output[-3000:]
        assert bounced and prompts > 2
        assert f"The engine at {engine.address} is not answering; trying again every 5 s at most" in output
        assert "The engine is answering again; carrying on from where the game was." in output

        async def replay() -> list[engine_pb2.Envelope]:
            request = engine_pb2.ReplayRequest(game_id="again")
            return [r.envelope async for r in engine.stub.Replay(request, metadata=auth(token(Role.ANALYST)))]

        events = [ZLJ_EVENTS.decode(e.zlj) for e in engine.call(replay) if e.WhichOneof("payload") == "zlj"]
        moves = sum(isinstance(e, CardsPlayed | FourTake | Passed) for e in events)
        move = r"^  seat \d \([AB][^)]*\): (pass$|.*   \(|.*   FOUR-TAKE)"  # a play, a four-take or a pass
        narrated = re.findall(move, output, flags=re.MULTILINE)
        assert len(narrated) == moves, "every move narrated once, none lost or repeated over the reconnection"
        assert output.count("Deal 1 over: ") == 1 and output.count("Match over, ") == 1
        only_acts_and_watches(engine.calls(mine) - before)  # after the reconnection too: the stream said it all


def stalled(engine: EngineThread, bots: Any, game_id: str) -> str:
    """What a stalled match's failure says: whether the seats' bots still play (or how they stopped), and where the
    game stands."""
    state = "playing" if not bots.done() else f"stopped: {bots.exception()!r}" if bots.exception() else "returned"

    async def view() -> Any:
        return await engine.stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=auth(token(Role.ANALYST)))

    try:
        found = engine.call(view)
        where = f"version {found.version}, phase {found.zlj.phase}, turn {found.zlj.turn}"
    except Exception as e:  # the failure's explanation must not fail
        where = f"the view could not be read: {e!r}"
    return f"{state}; the game at {where}"


def test_a_spectator_says_in_words_that_the_engine_went_away_and_resumes_when_it_is_back() -> None:
    with EngineThread(seed=35) as engine:
        engine.create("gone")
        spectator = token(Role.SPECTATOR, "gone")
        child = spawn_client("watch", "--engine", engine.address, "--game", "gone", "--token", spectator, timeout=60)
        log = io.StringIO()
        child.logfile_read = log
        try:
            child.expect_exact("Watching; type t for the table, q to stop.")
            bots = engine.spawn(zlj_bots(engine.stub, "gone", set(range(6)), seed=9, pause=0.05))
            child.expect(r"seat \d \([AB][^)]*\): ")  # a move narrated: the game is under way
            # the engine goes away for longer than one pause between tries (0.3 s, doubled: several tries)
            engine.restart(down_seconds=3.0)
            child.expect_exact("The engine is answering again; carrying on from where the game was.")
            # the rest of the match move by move: a stall (no move within the timeout) fails, a busy machine does not
            try:
                while child.expect([r"seat \d \([AB][^)]*\): ", re.escape("The match is over.")]) == 0:
                    pass
            except pexpect.TIMEOUT:
                raise AssertionError(f"no move for 60 s; the seats' bots: {stalled(engine, bots, 'gone')}") from None
            child.expect(pexpect.EOF, timeout=10)
        finally:
            child.close()
        output = log.getvalue().replace("\r", "")
        assert child.exit_code() == 0, output[-3000:]
        assert output.count(f"The engine at {engine.address} is not answering; trying again") == 1, output[-3000:]
        assert "StatusCode" not in output and "failed to connect" not in output.lower(), "in words, not gRPC's"

        async def replay() -> list[engine_pb2.Envelope]:
            request = engine_pb2.ReplayRequest(game_id="gone")
            return [r.envelope async for r in engine.stub.Replay(request, metadata=auth(token(Role.ANALYST)))]

        events = [ZLJ_EVENTS.decode(e.zlj) for e in engine.call(replay) if e.WhichOneof("payload") == "zlj"]
        moves = sum(isinstance(e, CardsPlayed | FourTake | Passed) for e in events)
        move = r"^  seat \d \([AB][^)]*\): (pass$|.*   \(|.*   FOUR-TAKE)"
        assert len(re.findall(move, output, flags=re.MULTILINE)) == moves, "resumed from the last version: each once"


def _assign(engine: EngineThread, game_id: str, player: str, change: Any, command_id: str) -> None:
    request = engine_pb2.AssignSeatsRequest(game_id=game_id, command_id=command_id, change=change)
    request.seats.add(seat=0, player_id=player)
    engine.call(lambda: engine.stub.AssignSeats(request, metadata=auth(token(Role.SERVICE))))


def test_the_client_waits_while_a_bot_covers_its_seat_and_plays_on_once_it_is_back() -> None:
    with EngineThread(seed=33) as engine:
        engine.create("cover")
        mine = token(Role.PLAYER, "cover", 0)
        spectator = token(Role.SPECTATOR, "cover")
        before = engine.calls(mine)
        child = spawn_client("play", "--engine", engine.address, "--game", "cover", "--token", mine, timeout=60)
        log = io.StringIO()
        child.logfile_read = log
        rng = random.Random(4)
        prompts = 0
        try:
            child.expect_exact("What happened so far")
            engine.spawn(zlj_bots(engine.stub, "cover", {1, 2, 3, 4, 5}, seed=2, pause=0.02))
            while True:
                found = child.expect_exact([PROMPT, "The match is over"])
                if found == 1:
                    break
                prompts += 1
                options = int(re.findall(r"Your options \((\d+)\):", screen(child))[-1])
                version = engine.view("cover", spectator).version
                child.sendline(str(rng.randint(1, options)))
                if prompts == 2:
                    moved = functools.partial(engine.call, functools.partial(_moved_past, engine, spectator, version))
                    wait_until_blocking(moved, f"the game to move past version {version}")
                    _assign(engine, "cover", "bot-cover", engine_pb2.SEAT_CHANGE_COVER, "cover-1")
                    child.expect_exact("A bot is playing your seat for now")
                    _assign(engine, "cover", player_id(0), engine_pb2.SEAT_CHANGE_RETURN, "return-1")
                    child.expect_exact("You have your seat back.")
            child.expect(pexpect.EOF, timeout=10)
        finally:
            child.close()
        output = log.getvalue()
        assert child.exit_code() == 0, output[-3000:]
        assert prompts > 2 and "a bot covers the seat" in output and "the player is back" in output
        only_acts_and_watches(engine.calls(mine) - before)


async def _moved_past(engine: EngineThread, spectator: str, version: int) -> bool:
    reply = await engine.stub.GetView(engine_pb2.GetViewRequest(game_id="cover"), metadata=auth(spectator))
    return bool(reply.version > version)
