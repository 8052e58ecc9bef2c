"""The contract from another language: the Node.js player program of `clients/node` (`src/play.ts`, on the package's
TypeScript client, its code generated from `protos/`) plays a whole 砸六家 deal and a whole first 拖拉机 deal
through the real lobby and engine (over NATS and PostgreSQL, `tests/lobby_service/stack.py`) from its Watch streams
alone — the turns they bring carry each seat's legal actions, view and fair-dealing step, so the client's
watch-and-act loop calls nothing but Watch and Act while playing (the program counts its calls by method; the
GetView calls it makes on purpose to check refusals are counted apart) — and checks the error model on the way:
each refusal with its `ErrorInfo` reason, the status code the contract's descriptor gives that reason, and its
details, and never UNKNOWN or INTERNAL.

The client runs as a subprocess while the stack serves on this test's event loop; `conftest.py` builds it first
(`make node`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from ..lobby_service.stack import stack

pytestmark = pytest.mark.e2e  # a client in another language (Node.js), as a process of its own

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "clients" / "node" / "dist"
"""The TypeScript client compiled (`make node`; the `node` fixture of conftest.py builds it)."""
PLAY_SECONDS = 240.0
"""The client's own limit for one game (it exits 1 past it); the test waits a little longer."""
REQUIRED = {
    "TOKEN_MISSING",
    "TOKEN_INVALID",
    "NOT_YOUR_TURN",
    "NOT_YOUR_SEAT",
    "STALE_VERSION",
    "INVALID_REQUEST",
    "GAME_NOT_FOUND",
    "RULE_VIOLATION",
}
"""The reasons the brief asks the client to provoke, each found with its code and details."""


async def run_client(node: str, lobby: str, engine: str, game: str) -> tuple[int, str, str]:
    """Run the player program (`dist/src/play.js`) for ``game``; its exit status, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        node,
        str(DIST / "src" / "play.js"),
        lobby,
        game,
        engine,
        "--timeout",
        str(int(PLAY_SECONDS)),
        cwd=str(ROOT),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=PLAY_SECONDS + 60)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        out, err = await process.communicate()
        raise AssertionError(f"play.js {game} did not finish: {err.decode()[-4000:]}") from None
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("game", ["zlj", "tractor"])
def test_the_node_client_plays_a_deal_and_finds_the_error_model(
    node: str, nats_url: str, database_dsn: str, game: str
) -> None:
    async def main() -> dict[str, Any]:
        # a first deal waits for every seat's contribution: the client's seats must send theirs for it to be dealt
        async with stack(nats_url, database_dsn, contribution_seconds=600) as s:
            started = time.monotonic()
            code, out, err = await run_client(node, s.lobby_address, s.engine_address, game)
            print(f"play.js {game}: exit {code} in {time.monotonic() - started:.1f} s")
            assert code == 0, f"play.js {game} failed (exit {code}):\n{err[-4000:]}\n{out[-2000:]}"
            lines = out.strip().splitlines()
            assert lines, f"play.js {game} printed nothing: {err[-2000:]}"
            result: dict[str, Any] = json.loads(lines[-1])
            return result

    result = asyncio.run(main())
    print(json.dumps(result))
    assert result["ok"] is True
    assert result["game"] == game
    assert result["acts"] > 0
    assert result["events"] >= result["acts"]
    missing = REQUIRED - set(result["checked"])
    assert not missing, f"not checked: {sorted(missing)}"
    assert result["rule_violated"], "a RuleViolation names its rule"
    assert result["contributions"] >= (6 if game == "zlj" else 4), "every seat added bytes to the first shuffle"
    # played from the stream: the turns said everything, nothing was asked for between moves
    calls, probes = result["calls"], result["probe_calls"]
    acts = calls.get("Act", 0)
    per_move = acts / result["acts"]
    print(f"play.js {game}: {result['turns']} turns; calls {calls} ({per_move:.2f} Act per move); probes {probes}")
    assert set(calls) <= {"Watch", "Act"}, f"the play asked for more than its streams and its moves: {calls}"
    assert calls["Watch"] >= (6 if game == "zlj" else 4) and result["turns"] >= result["acts"]
    assert probes.get("GetView", 0) > 0, "the refusal probes are counted apart from the play"
    if game == "tractor":
        follows = result["composed_follows"]
        assert follows["accepted"] > 0, f"no composed follow was accepted: {follows}"
