"""`paiju verify` over a real nats-server, on games a fair engine recorded (`paiju.rules.fair`): honest games verify
deal by deal, a forged copy fails at the forged event (exit 1), a game dealt from seeds is "not committed", a live
game's deal still being played is "not revealed yet", and ``--details`` prints what a person needs to check a deal by
hand; exit 2 for what is not there."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import pytest

from paiju.cli import main
from paiju.contract.games import ZLJ_EVENTS
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Role
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import Options, StartMatch
from paiju.rules.zlj import model as zlj
from paiju.tools.analyst import read_rows
from paiju.v1 import engine_pb2, zlj_pb2

from ...engine.harness import auth, engine, play_tractor, play_zlj, seated, token
from .recorded import copy

V2_GAMES = ("v2-zlj", "v2-tractor")

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Stream:
    url: str
    stream: str
    prefix: str
    forged_version: int

    def args(self) -> list[str]:
        return ["--nats", self.url, "--stream", self.stream, "--prefix", self.prefix]


_streams: dict[str, Stream] = {}


def recorded(request: pytest.FixtureRequest) -> Stream:
    url: str = request.getfixturevalue("nats_url")
    if url not in _streams:
        _streams[url] = asyncio.run(_record(url, request))
    return _streams[url]


async def _record(url: str, request: pytest.FixtureRequest) -> Stream:
    async with engine("jetstream", request, seed=3, fair=True) as (stub, games):
        options = zlj_pb2.ZljOptions(deals=2)
        create = engine_pb2.CreateGameRequest(game_id="fair", game=engine_pb2.GAME_ZLJ, zlj_options=options)
        await stub.CreateGame(seated(create, zlj.SEATS), metadata=auth(token(Role.SERVICE)))
        await play_zlj(stub, "fair", SeededRandom(6))
        store = cast(JetStreamEventStore, games.store)
        played = (await games.history("fair")).envelopes
        # a forged copy: one card of the second deal's hands changed (a byte of the stored event)
        dealt = [e for e in played if e.zlj.WhichOneof("event") == "hands_dealt"][1]
        hands = ZLJ_EVENTS.decode(dealt.zlj)
        first = list(hands.hands[0])
        first[0] = (first[0] + 1) % 54
        forged_event = replace(hands, hands=(tuple(sorted(first)), *hands.hands[1:]))
        forged = []
        for envelope in played:
            changed = engine_pb2.Envelope()
            changed.CopyFrom(envelope)
            if envelope.version == dealt.version:
                changed.zlj.CopyFrom(cast(Any, ZLJ_EVENTS.encode(forged_event)))
            forged.append(changed)
        await copy(store, forged, "forged")
        # the first deal and a little of the second: its seed is not revealed yet
        await copy(store, played[: dealt.version + 3], "live")
        # a game dealt from a seed, as every game was before fair dealing
        await games.create("seeded", "zlj", StartMatch(5, Options(deals=1)), "start", "engine")
        games.dealing.protocol = 2  # then games by protocol version 2: commit, then reveal
        create = engine_pb2.CreateGameRequest(game_id="v2-zlj", game=engine_pb2.GAME_ZLJ, zlj_options=options)
        await stub.CreateGame(seated(create, zlj.SEATS), metadata=auth(token(Role.SERVICE)))
        await play_zlj(stub, "v2-zlj", SeededRandom(7))
        create = engine_pb2.CreateGameRequest(game_id="v2-tractor", game=engine_pb2.GAME_TRACTOR)
        await stub.CreateGame(seated(create, 4), metadata=auth(token(Role.SERVICE)))
        await play_tractor(stub, "v2-tractor", SeededRandom(8))
        stream = await store.client.jetstream().find_stream_name_by_subject(store.subject("fair"))
        return Stream(url, stream, store.prefix, dealt.version)


def verify(capsys: pytest.CaptureFixture[str], stream: Stream, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()  # what recording the games printed
    code = main(["verify", *argv, *stream.args()])
    out, err = capsys.readouterr()
    return code, out, err


def line_of(out: str, game: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"{game} "))


def test_every_game_of_the_stream_is_checked_and_a_forged_one_fails_at_the_forged_event(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = recorded(request)
    code, out, _ = verify(capsys, stream)
    assert code == 1, out
    assert line_of(out, "fair") == "fair (砸六家): 2 deal(s) verified (protocol 1)"
    forged = line_of(out, "forged")
    assert forged.startswith(f"forged (砸六家): FAILED at version {stream.forged_version} (HandsDealt): ")
    assert "differs from dealing shuffle 2" in forged
    assert line_of(out, "seeded") == (
        "seeded (砸六家): not committed (dealt from seeds before fair dealing): nothing to verify"
    )
    assert line_of(out, "live") == "live (砸六家): 1 deal(s) verified (protocol 1); shuffle 2 (deal 2) not revealed yet"
    assert out.splitlines()[-1].endswith(" game(s) verified, 1 game(s) failed")


def test_details_let_a_person_check_a_deal_by_hand(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = recorded(request)
    code, out, _ = verify(capsys, stream, "--game", "fair", "--details")
    assert code == 0, out
    commitments = re.findall(r"commitment +([0-9a-f]{64})", out)
    seeds = re.findall(r"server seed +([0-9a-f]{64})", out)
    assert len(commitments) == len(seeds) == 2
    for committed, seed in zip(commitments, seeds, strict=True):
        assert hashlib.sha256(b"paiju-seed-commitment-v1" + bytes.fromhex(seed)).hexdigest() == committed
    assert len(re.findall(r"contribution seat \d", out)) >= 6, "every seat added bytes to the first deal"
    assert re.search(r"contribution seat \d, cut \d+: ", out), "the second deal's cutter contributed with its cut"


def test_an_unknown_game_exits_2(request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]) -> None:
    stream = recorded(request)
    code, out, err = verify(capsys, stream, "--game", "no-such-game")
    assert code == 2 and out == "" and "no-such-game" in err
    code, out, err = verify(capsys, stream, "--game", "bad.id")
    assert code == 2 and "not a game id" in err


def test_version_2_games_verify_and_name_their_protocol_and_contributors(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = recorded(request)
    code, out, _ = verify(capsys, stream, *V2_GAMES, "--details")
    assert code == 0, out
    assert line_of(out, "v2-zlj") == "v2-zlj (砸六家): 2 deal(s) verified (protocol 2)"
    assert line_of(out, "v2-tractor").startswith("v2-tractor (拖拉机): ")
    assert "(protocol 2)" in line_of(out, "v2-tractor")
    assert "contributors 0 1 2 3 4 5" in out, "every seat's client committed and revealed"
    assert re.search(r"reveal of seat \d, cut \d+: salt [0-9a-f]{64}, [0-9a-f]{32}\n", out), "the cutter's reveal"


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_an_export_carries_what_verification_needs_and_verifies_as_the_stream_does(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str
) -> None:
    stream = recorded(request)
    games = ["--game", "fair", *(a for g in V2_GAMES for a in ("--game", g))]
    assert main(["export", *games, "--format", fmt, "--out", str(tmp_path), *stream.args()]) == 0
    capsys.readouterr()
    for path in (tmp_path, tmp_path / f"events.{fmt}", tmp_path / f"deals.{fmt}"):
        code = main(["verify", str(path)])
        out, err = capsys.readouterr()
        assert code == 0, (out, err)
        assert line_of(out, "fair") == "fair (砸六家): 2 deal(s) verified (protocol 1)"
        assert line_of(out, "v2-zlj") == "v2-zlj (砸六家): 2 deal(s) verified (protocol 2)"
        assert out.splitlines()[-1].endswith("3 game(s) verified, 0 game(s) failed"), out
    deals = read_rows(tmp_path / f"deals.{fmt}")
    v2 = [d for d in deals if d["game_id"] == "v2-zlj"]
    assert [d["fair_protocol"] for d in v2] == [2, 2] and all(d["contributors"] == "0 1 2 3 4 5" for d in v2)
    assert all(len(d["server_seed"]) == 64 and len(d["commitment"]) == 64 for d in v2), "seeds whole"
    for d in v2:
        assert (
            hashlib.sha256(b"paiju-seed-commitment-v1" + bytes.fromhex(d["server_seed"])).hexdigest()
            == (d["commitment"])
        )


def test_a_tampered_export_fails_at_the_tampered_event(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stream = recorded(request)
    assert main(["export", "--game", "v2-zlj", "--out", str(tmp_path), *stream.args()]) == 0
    events = tmp_path / "events.jsonl"
    rows = [json.loads(line) for line in events.read_text().splitlines()]
    reveal = next(r for r in rows if r["kind"] == "contribution_revealed")
    envelope = json.loads(reveal["envelope"])
    salt = base64.b64decode(envelope["zlj"]["contribution_revealed"]["salt"])
    envelope["zlj"]["contribution_revealed"]["salt"] = base64.b64encode(bytes([salt[0] ^ 1]) + salt[1:]).decode()
    reveal["envelope"] = json.dumps(envelope)
    events.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    capsys.readouterr()
    assert main(["verify", str(events)]) == 1
    out, _ = capsys.readouterr()
    failed = line_of(out, "v2-zlj")
    assert failed.startswith(f"v2-zlj (砸六家): FAILED at version {reveal['version']} (ContributionRevealed)"), failed
