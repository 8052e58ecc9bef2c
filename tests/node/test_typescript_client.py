"""The TypeScript client of `clients/node` on its own: its unit tests (`node --test`: the reasons' status codes read
from the contract's descriptor, refusals read from a real `grpc-status-details-bin` trailer, the retrying
interceptor, the watch-and-act loop against an engine served in memory), the type checker refusing a wrong field
of a request, and the example bot of docs/typescript.md (`examples/zlj_bot.ts`) playing a whole 砸六家 match of two
deals — tribute and the cutter's cut included — through the real lobby and engine from its Watch streams alone.

`conftest.py` builds the client first (`make node`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ..lobby_service.stack import stack

pytestmark = pytest.mark.e2e  # the TypeScript client built and run by node, as processes of its own

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "node"
DIST = CLIENT / "dist"
BOT_SECONDS = 240.0


def test_the_typescript_clients_own_tests_pass(node: str) -> None:
    tests = sorted(str(path) for path in (DIST / "test").glob("*.test.js"))
    assert tests, "no compiled tests under clients/node/dist/test"
    run = subprocess.run([node, "--test", *tests], cwd=CLIENT, capture_output=True, text=True, timeout=300, check=False)
    print(run.stdout[-3000:])
    assert run.returncode == 0, f"node --test failed:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    counts = dict(re.findall(r"^# (pass|fail) (\d+)$", run.stdout, re.MULTILINE))
    assert counts.get("fail") == "0" and int(counts.get("pass", "0")) >= 7, counts


def test_the_type_checker_refuses_a_field_the_contract_does_not_have(node: str, tmp_path: Path) -> None:
    """A request with a misspelt field, and a 砸六家 command given a 拖拉机 one's field, do not compile; the same
    code spelt right does, and so does every TypeScript example of docs/typescript.md: what `make node` (tsc over
    the whole package) gives every TypeScript author."""
    right = """
import { Game, Paiju, bearer } from "paiju-client";
const paiju = new Paiju({ lobby: "127.0.0.1:1", engine: "127.0.0.1:1" });
const pass = { command: { case: "pass", value: { seat: 1 } } } as const;
export const act = () =>
  paiju.engine.act(
    { gameId: "g", commandId: "c", expectedVersion: 3n, command: { case: "zlj", value: pass } },
    bearer("t"),
  );
export const table = () =>
  paiju.lobby.createTable({ name: "t", game: Game.ZLJ, options: { case: "zljOptions", value: { deals: 1 } } });
"""
    misspelt = right.replace("expectedVersion: 3n", "expectedVersoin: 3n")
    other_game = right.replace('case: "pass"', 'case: "makeBid"')  # a 拖拉机 bid in a 砸六家 command
    for name, text in (("right.ts", right), ("misspelt.ts", misspelt), ("other_game.ts", other_game)):
        (tmp_path / name).write_text(text)
    guide = (ROOT / "docs" / "typescript.md").read_text()
    examples = re.findall(r"^```ts\n(.*?)^```$", guide, re.DOTALL | re.MULTILINE)
    assert len(examples) >= 2, "docs/typescript.md shows a bot and a refusal in TypeScript"
    for i, example in enumerate(examples):
        (tmp_path / f"guide_{i}.ts").write_text(example)
    (tmp_path / "package.json").write_text(json.dumps({"type": "module", "private": True}))
    (tmp_path / "tsconfig.json").write_text(
        json.dumps(
            {
                "extends": str(CLIENT / "tsconfig.json"),
                "compilerOptions": {"noEmit": True, "rootDir": str(tmp_path)},
                "include": [str(tmp_path / "*.ts")],
            }
        )
    )
    # the package resolves by its name from a folder that has it under node_modules, as an author's project would
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "paiju-client").symlink_to(CLIENT)
    for name in ("@bufbuild", "@connectrpc", "@types"):
        (tmp_path / "node_modules" / name).symlink_to(CLIENT / "node_modules" / name)
    tsc = CLIENT / "node_modules" / ".bin" / "tsc"
    run = subprocess.run([str(tsc), "-p", str(tmp_path)], capture_output=True, text=True, timeout=300, check=False)
    errors = [line for line in run.stdout.splitlines() if ": error TS" in line]
    print("\n".join(errors))
    assert run.returncode != 0
    by_file: dict[str, list[str]] = {}
    for line in errors:
        by_file.setdefault(Path(line.split("(", 1)[0]).name, []).append(line)
    assert set(by_file) == {"misspelt.ts", "other_game.ts"}, run.stdout[-4000:]
    assert any("expectedVersoin" in line for line in by_file["misspelt.ts"]), by_file
    assert any('"makeBid"' in line for line in by_file["other_game.ts"]), by_file


async def run_bot(node: str, lobby: str, engine: str, deals: int) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        node,
        str(DIST / "examples" / "zlj_bot.js"),
        lobby,
        engine,
        "--deals",
        str(deals),
        cwd=str(CLIENT),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=BOT_SECONDS)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        out, err = await process.communicate()
        raise AssertionError(f"zlj_bot did not finish: {err.decode()[-4000:]}") from None
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def test_the_typescript_example_bot_plays_a_whole_zlj_match(node: str, nats_url: str, database_dsn: str) -> None:
    async def main() -> dict[str, Any]:
        # the first deal waits for every seat's random bytes: the loop must send them for the match to begin
        async with stack(nats_url, database_dsn, contribution_seconds=600) as s:
            started = time.monotonic()
            code, out, err = await run_bot(node, s.lobby_address, s.engine_address, deals=2)
            print(f"zlj_bot: exit {code} in {time.monotonic() - started:.1f} s")
            assert code == 0, f"zlj_bot failed (exit {code}):\n{err[-4000:]}\n{out[-2000:]}"
            result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
            return result

    result = asyncio.run(main())
    print(json.dumps(result))
    assert result["ok"] is True
    assert result["ends"] == ["game_ended"] * 6, "every seat's stream ended with the game"
    assert all(acts > 0 for acts in result["acts"]), result["acts"]
    assert result["contributions"] >= 6, "every seat added its bytes to the first deal's shuffle"
    assert len(result["team_points"]) == 2 and len(result["individual_points"]) == 6
