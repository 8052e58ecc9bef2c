"""`make run`'s stack: NATS, PostgreSQL, engine, lobby, scoring and bot runner as processes, bots playing."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from paiju.dev.stack import run
from paiju.platform.tokens import Identity, Issuer, Role
from paiju.v1 import engine_pb2, engine_pb2_grpc, scoring_pb2, scoring_pb2_grpc

from ..support.waiting import wait_until_blocking

pytestmark = pytest.mark.e2e  # the whole stack as processes, as `make run` starts it


def test_the_stack_starts_everything_and_bots_play_both_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NATS_URL", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("DATABASE_URL_FILE", raising=False)
    # not pytest's tmp_path: run as root, PostgreSQL runs as its own user, which cannot enter that folder
    folder = Path(tempfile.mkdtemp(prefix="paiju-stack-"))
    folder.chmod(0o755)
    data = folder / ".data"
    progress: dict[str, int] = {}
    verified: list[str] = []

    def bots_play(started: dict[str, Any]) -> None:
        now = int(time.time())
        token = started["credentials"].signer(Issuer.ADMIN).mint(Identity("test", Role.ANALYST, expires=now + 600))
        analyst = (("authorization", f"Bearer {token}"),)

        async def versions() -> dict[str, int]:
            async with grpc.aio.insecure_channel(started["engine"]) as channel:
                engine: Any = engine_pb2_grpc.EngineServiceStub(channel)
                found = {}
                for kind, table in started["tables"].items():
                    try:
                        view = await engine.GetView(engine_pb2.GetViewRequest(game_id=f"{table}-m1"), metadata=analyst)
                    except grpc.aio.AioRpcError:
                        continue
                    found[kind] = view.version
            async with grpc.aio.insecure_channel(started["scoring"]) as channel:
                scoring: Any = scoring_pb2_grpc.ScoringServiceStub(channel)
                try:
                    score = await scoring.GetMatchScore(
                        scoring_pb2.GetMatchScoreRequest(game_id=f"{started['tables']['zlj']}-m1"), metadata=analyst
                    )
                    found["scored_seats"] = len(score.players)
                except grpc.aio.AioRpcError:
                    pass
                return found

        def verify() -> bool:
            """`paiju verify` on the stack's stream, as its banner says: every deal so far verifies (the command exits
            1 when one fails), and at least one 砸六家 deal has been revealed and checked."""
            done = subprocess.run(
                [sys.executable, "-m", "paiju.cli", "verify", "--nats", started["nats"]],
                env={**os.environ, **started["credentials"].env("analyst")},  # the analyst's read-only NATS user
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            verified[:] = done.stdout.splitlines()
            zlj = next(line for line in verified if line.startswith(f"{started['tables']['zlj']}-m1 "))
            return "0 deal(s) verified" not in zlj

        def played() -> bool:
            progress.update(asyncio.run(versions()))
            moved = progress.get("zlj", 0) > 40 and progress.get("tractor", 0) > 20 and progress.get("scored_seats")
            return bool(moved) and verify()

        wait_until_blocking(
            played,
            "the bots to play both tables, scoring to project them and a deal to verify",
            seconds=180,
            every=0.5,
            explain=lambda: f"progress: {progress}; paiju verify: {verified}",
        )

    out = io.StringIO()
    try:
        started = run(out, data=data, think=0.0, until=bots_play)
        for sub in ("nats", "postgres", "logs"):
            assert (data / sub).is_dir(), f"data stays under .data/{sub}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    text = out.getvalue()
    assert progress.get("zlj", 0) > 40 and progress.get("tractor", 0) > 20, f"bots did not play: {progress}"
    assert progress.get("scored_seats") == 6, f"scoring did not project the 砸六家 game: {progress}"
    assert any("deal(s) verified" in line and "(砸六家)" in line for line in verified), verified
    assert not any("FAILED" in line or "not committed" in line for line in verified), verified
    assert "paiju verify" in text
    here = f"--lobby {started['lobby']} --engine {started['engine']}"
    assert f"paiju watch {started['tables']['zlj']} {here}" in text and f"paiju play zlj {here}" in text
    assert text.rstrip().endswith("Stopped.")
