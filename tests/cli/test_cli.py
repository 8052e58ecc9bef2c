"""The `paiju` command line: the scenario runner's exit codes and the narrated bot matches of `make run`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from paiju.cli import main

FOUR_TAKE = Path(__file__).parent.parent / "scenarios" / "zlj" / "four-take-two-fours-take-three-bomb.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_scenario_prints_one_result_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "scenario", str(FOUR_TAKE))
    assert code == 0 and err == ""
    result = json.loads(out)
    assert result["zlj"]["taken"] == [{"by": 1, "from": 0, "cards": "QS QH QD"}]


def test_scenario_exits_0_when_steps_are_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {
        "id": "x",
        "game": "zlj",
        "start": {"hands": {"0": "4S", "1": "5S"}, "leader": 0},
        "steps": [{"seat": 1, "pass": True}],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "scenario", str(path))
    assert code == 0
    assert json.loads(out)["steps"][0]["ok"] is False


def test_scenario_check_exits_1_on_a_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(FOUR_TAKE.read_text())
    doc["expect"]["next"] = 5
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "scenario", "--check", str(path))
    assert code == 1 and "result.next: expected 5, got 3" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ('["a list"]', "a scenario is a JSON object"),
        ('{"game": "chess", "start": {}}', "'game' must be"),
        ('{"game": "zlj", "start": {"hands": {"0": "4S XX"}, "leader": 0}}', "'XX' is not a card"),
        ('{"game": "zlj", "start": {"hands": {"7": "4S"}, "leader": 0}}', "not a seat"),
        ('{"game": "zlj", "start": {"hands": {"0": "4S"}, "leader": 0}, "steps": [{"seat": 0}]}', "no zlj action"),
        ('{"game": "tractor", "start": {"hands": {"0": "4S"}}}', "needs start.dealer"),
    ],
)
def test_an_invalid_scenario_exits_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    code, out, err = run(capsys, "scenario", str(path))
    assert code == 2 and out == ""
    assert "invalid scenario" in err and message in err


def test_a_missing_scenario_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "scenario", "/nonexistent/scenario.json")
    assert code == 2 and "cannot read" in err


def test_make_run_shows_a_whole_zlj_match(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "match", "zlj", "--seed", "3")
    assert code == 0
    assert out.count("over:") == 6, "six deals, each with its outcome"
    for words in ("♠A", "FOUR-TAKE", "gives tribute", "picks", "returns", "takes back", "goes out", "Match over"):
        assert words in out, words


def test_make_run_shows_a_tractor_deal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "match", "tractor", "--seed", "5")
    assert code == 0
    for words in ("flips", "(concealed)", "Winning bid", "Trump:", "trick to", "Deal settled"):
        assert words in out, words


def test_keys_make_a_key_and_the_jwks_that_trusts_its_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An operator's rotation: a new key, a JWKS of the old and the new, tokens of both verified; `token` signs."""
    from paiju.platform.tokens import Identity, Role, Trust, Verifier, load_signer

    old, new = tmp_path / "admin.pem", tmp_path / "admin-2.pem"
    assert run(capsys, "keys", "new", str(old))[0] == 0
    assert run(capsys, "keys", "new", str(new))[0] == 0
    assert old.stat().st_mode & 0o777 == 0o600
    code, _, err = run(capsys, "keys", "new", str(old))
    assert code == 2 and "exists" in err  # never replaced
    code, out, err = run(capsys, "keys", "jwks", f"admin.1={old}", f"admin.2={new}")
    assert code == 0 and err == ""
    trust = Trust.from_jwks(out)
    assert sorted(trust.keys) == ["admin.1", "admin.2"]
    verifier = Verifier(trust, now=lambda: 1_000)
    for path, key_id in ((old, "admin.1"), (new, "admin.2")):
        token = load_signer(path, key_id).mint(Identity("ops", Role.REFEREE, expires=2_000, issued=1_000))
        assert verifier.verify(token).role is Role.REFEREE
    code, out, _ = run(capsys, "token", "ops", "--role", "analyst", "--key", str(new), "--key-id", "admin.2")
    assert code == 0
    assert Verifier(trust, now=lambda: int(time.time())).verify(out.strip()).role is Role.ANALYST


@pytest.mark.parametrize(
    ("argument", "says"),
    [
        ("admin.1", "KEY_ID=FILE"),
        ("root.1={key}", "issuer"),
        ("admin.1={missing}", "No such file"),
        ("admin.1={junk}", "PEM"),
    ],
)
def test_keys_jwks_refuses_what_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argument: str, says: str
) -> None:
    key, junk = tmp_path / "k.pem", tmp_path / "junk.pem"
    assert run(capsys, "keys", "new", str(key))[0] == 0
    junk.write_text("not a key\n")
    code, out, err = run(capsys, "keys", "jwks", argument.format(key=key, missing=tmp_path / "none.pem", junk=junk))
    assert code == 2 and out == "" and says in err
