"""``python -m paiju.botrunner`` as a process (what ``paiju bots`` runs): configured by its options and the
environment, it leases the lobby's bot seats, plays them through the engine, logs JSON lines, and stops
cleanly on SIGTERM or SIGINT (exit 0)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from paiju.platform.tokens import Issuer

from ..support.credentials import process_env
from ..support.fake_lobby import FakeLobby, serve_lobby
from ..support.waiting import wait_until
from .harness import NOW, bot_player, create_zlj, engine, run

pytestmark = pytest.mark.e2e  # the bot runner as a process


async def start(*args: str, env: dict[str, str]) -> tuple[Any, list[dict[str, Any]], asyncio.Task[None]]:
    """The runner process, the JSON records of its stdout as they come, and the task reading them."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "paiju.botrunner",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **env},
    )
    records: list[dict[str, Any]] = []

    async def read() -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            records.append(json.loads(line))

    return process, records, asyncio.create_task(read())


def test_the_process_plays_the_lobbys_seats_and_stops_on_sigterm() -> None:
    async def body() -> None:
        async with engine() as e:
            game_id = "zp"
            await create_zlj(e, game_id, deals=1)
            lobby = FakeLobby(lease_seconds=30, engine_now=NOW)
            for seat in range(6):
                lobby.lease(game_id, "zlj", seat, bot_player(game_id, seat))
            server, address = await serve_lobby(lobby)
            env = {
                **process_env(Path(tempfile.mkdtemp(prefix="paiju-bots-")), Issuer.BOTS),
                "PAIJU_LOBBY_ADDRESS": address,
                "PAIJU_BOT_THINK_SECONDS": "0",
            }
            process, records, reading = await start("--engine", e.address, "--runner-id", "proc-1", env=env)
            try:
                await wait_until(lambda: e.ended(game_id), "the end of the match", seconds=60)
                await wait_until(lambda: len([r for r in records if r.get("event") == "game over"]) == 6, "ends")
                process.send_signal(signal.SIGTERM)
                code = await asyncio.wait_for(process.wait(), 20)
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
                await server.stop(None)
            await reading
            assert code == 0
            events = [r.get("event") for r in records]
            assert events[0] == "bot runner starting" and events[-1] == "bot runner stopped"
            assert {(r["game"], r["seat"]) for r in records if r.get("event") == "game over"} == {
                (game_id, s) for s in range(6)
            }
            assert records[0]["runner"] == "proc-1" and records[0]["think"] == 0
            assert not [r for r in records if r["level"] == "error"]
            assert lobby.lease_calls and all(call[0] == "proc-1" for call in lobby.lease_calls)

    run(body)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_idle_runner_stops_on_a_signal(sig: signal.Signals) -> None:
    async def body() -> None:
        lobby = FakeLobby(engine_now=NOW)
        server, address = await serve_lobby(lobby)
        env = process_env(Path(tempfile.mkdtemp(prefix="paiju-bots-")), Issuer.BOTS)
        process, records, reading = await start("--lobby", address, "--renew", "0.2", env=env)
        try:
            await wait_until(lambda: len(lobby.lease_calls) >= 2, "the runner asking the lobby")
            process.send_signal(sig)
            code = await asyncio.wait_for(process.wait(), 20)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            await server.stop(None)
        await reading
        assert code == 0
        assert records[-1]["event"] == "bot runner stopped"

    run(body)


def test_without_its_signing_key_the_runner_refuses_to_start() -> None:
    async def body() -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAIJU_SIGNING_KEY")}
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "paiju.botrunner", stderr=asyncio.subprocess.PIPE, env=env
        )
        _, err = await process.communicate()
        assert process.returncode == 2
        assert b"PAIJU_SIGNING_KEY" in err

    run(body)
