"""A second verifier, in JavaScript, written from docs/fairness.md alone (`clients/node/src/verify.ts`): it holds the
document's two test vectors, verifies every deal of real games — one dealt by protocol version 1, a 砸六家 and a 拖拉机
game by version 2 — from a `paiju export` of them, naming each deal's contributors, and rejects a tampered export,
as `paiju verify FILE` does."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest

from paiju.cli import main

from ..tools.analyst.test_verify import V2_GAMES, recorded

pytestmark = pytest.mark.e2e  # a verifier in another language (Node.js), as a process of its own

ROOT = Path(__file__).resolve().parents[2]
VERIFY = ROOT / "clients" / "node" / "dist" / "src" / "verify.js"


def run_verifier(node: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([node, str(VERIFY), *argv], capture_output=True, text=True, timeout=120, check=False)


def test_the_javascript_verifier_holds_both_test_vectors(node: str) -> None:
    done = run_verifier(node, "--vectors")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "both test vectors hold"


def test_the_javascript_verifier_checks_real_games_from_an_export_and_a_tampered_one_fails(
    node: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stream = recorded(request)
    games = ["--game", "fair", *(a for g in V2_GAMES for a in ("--game", g))]
    assert main(["export", *games, "--out", str(tmp_path), *stream.args()]) == 0
    capsys.readouterr()
    events = tmp_path / "events.jsonl"
    done = run_verifier(node, str(events))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "fair: 2 deal(s) verified (protocol 1)" in lines
    assert "v2-zlj: 2 deal(s) verified (protocol 2)" in lines
    tractor = next(line for line in lines if line.startswith("v2-tractor: "))
    assert "verified (protocol 2)" in tractor and "server seed alone" not in tractor
    assert "  deal 1: contributors 0 1 2 3 4 5" in lines, "every seat's contribution counted in the first deal"
    assert main(["verify", str(events)]) == 0, "paiju verify agrees"

    rows = [json.loads(line) for line in events.read_text().splitlines()]
    dealt = [r for r in rows if r["game_id"] == "v2-zlj" and r["kind"] == "hands_dealt"][1]
    envelope = json.loads(dealt["envelope"])
    hands = envelope["zlj"]["hands_dealt"]["hands"]
    # swap two cards that differ between two hands (two decks: the first cards may be the same card)
    k = next(k for k, (a, b) in enumerate(zip(hands[0]["cards"], hands[1]["cards"], strict=False)) if a != b)
    hands[0]["cards"][k], hands[1]["cards"][k] = hands[1]["cards"][k], hands[0]["cards"][k]
    dealt["envelope"] = json.dumps(envelope)
    reveal = next(r for r in rows if r["game_id"] == "fair" and r["kind"] == "seed_revealed")
    envelope = json.loads(reveal["envelope"])
    seed = base64.b64decode(envelope["zlj"]["seed_revealed"]["server_seed"])
    envelope["zlj"]["seed_revealed"]["server_seed"] = base64.b64encode(bytes([seed[0] ^ 1]) + seed[1:]).decode()
    reveal["envelope"] = json.dumps(envelope)
    events.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    done = run_verifier(node, str(events))
    assert done.returncode == 1, done.stdout
    failed = {line.split(":")[0] for line in done.stdout.splitlines() if "FAILED" in line}
    assert failed == {"fair", "v2-zlj"}, done.stdout
    assert main(["verify", str(events)]) == 1, "paiju verify agrees"
