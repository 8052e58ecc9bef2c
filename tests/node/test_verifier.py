"""A second verifier, in JavaScript, written from docs/fairness.md alone (`clients/node/src/verify.ts`): it holds the
document's two test vectors, verifies every deal of real games — one dealt by protocol version 1, a 砸六家 and a 拖拉机
game by version 2 — from a `paiju export` of them, naming each deal's contributors, and rejects a tampered export,
as `paiju verify FILE` does."""

from __future__ import annotations

import base64
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from paiju.cli import main
from paiju.contract.games import ZLJ_EVENTS
from paiju.rules import fair
from paiju.rules.fairness import shuffle_key_v2, shuffled_by_key
from paiju.rules.registry import ZLJ
from paiju.rules.zlj import model as zm
from paiju.tools.analyst import decode
from paiju.tools.analyst.export import event_rows
from paiju.v1 import engine_pb2

from ..rules.test_commit_reveal import Table, play
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


def exported(folder: Path, game_id: str, log: list[tuple[int, Any]]) -> Path:
    """The `events.jsonl` of `paiju export` for a 砸六家 game whose rules events are ``log``."""
    envelopes = []
    for version, event in log:
        envelope = engine_pb2.Envelope(game_id=game_id, version=version)
        envelope.zlj.CopyFrom(cast(Any, ZLJ_EVENTS.encode(event)))
        envelopes.append(envelope)
    folder.mkdir()
    path = folder / "events.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in event_rows(decode(envelopes))))
    return path


def test_a_withholding_cutter_and_a_mismatching_reveal_verify_and_a_cut_other_than_the_default_fails(
    node: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second deal whose cutter commits and withholds its reveal, and another seat reveals other bytes: both
    verifiers count neither and take the cut the server's commitment names; a log that records another cut, with the
    hands dealt by that cut, fails both."""
    table = Table(ZLJ, zm.Options(deals=0))
    play(table, deals=1, close=False)
    cutter = cast(int, table.state.turn)
    mismatching = (cutter + 2) % 6
    table.behaviour = lambda n, seat: {cutter: "withhold", mismatching: "mismatch"}.get(seat, "honest")
    play(table, deals=2)
    contributors = " ".join(str(s) for s in range(6) if s not in (cutter, mismatching))
    events = exported(tmp_path / "honest", "withheld-cut", table.log)
    done = run_verifier(node, str(events))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "withheld-cut: 2 deal(s) verified (protocol 2)" in lines
    assert f"  deal 2: contributors {contributors}" in lines
    assert main(["verify", str(events)]) == 0, "paiju verify agrees"
    assert "withheld-cut (砸六家): 2 deal(s) verified (protocol 2);" in capsys.readouterr().out

    # the engine records another cut than the default and deals the hands by it
    at, dealt = next((i, e) for i, (_, e) in enumerate(table.log) if isinstance(e, zm.HandsDealt) and e.deal == 2)
    assert dealt.cutter == cutter and dealt.cut is not None
    committed = next(e for _, e in table.log if isinstance(e, fair.SeedCommitted) and e.number == 2)
    assert dealt.cut == 1 + int.from_bytes(committed.commitment[:4], "big") % 107, "the default cut"
    revealed = next(e for _, e in table.log if isinstance(e, fair.SeedRevealed) and e.number == 2)
    counted = [
        (e.seat, e.contribution)
        for _, e in table.log
        if isinstance(e, fair.ContributionRevealed) and e.number == 2 and e.matches
    ]
    deck = shuffled_by_key(2, shuffle_key_v2(revealed.server_seed, counted))

    def hands_cut(cut: int) -> tuple[tuple[Any, ...], ...]:
        moved = deck[cut:] + deck[:cut]
        return tuple(tuple(sorted(moved[(s - dealt.first_drawer) % 6 :: 6])) for s in range(6))

    assert hands_cut(dealt.cut) == tuple(tuple(sorted(h)) for h in dealt.hands), "dealt as the document says"
    forged_cut = dealt.cut % 107 + 1
    hands = hands_cut(forged_cut)
    forged = list(table.log)
    forged[at] = (forged[at][0], replace(dealt, cut=forged_cut, hands=hands))
    events = exported(tmp_path / "forged", "withheld-cut", forged)
    done = run_verifier(node, str(events))
    assert done.returncode == 1, done.stdout
    assert "withheld-cut: FAILED at version" in done.stdout and "cut" in done.stdout, done.stdout
    assert main(["verify", str(events)]) == 1, "paiju verify agrees"
    assert "FAILED at version" in capsys.readouterr().out
