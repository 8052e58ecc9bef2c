"""`paiju export` over a real nats-server, on games the real engine recorded: one deal row per deal and one play
row per seat action with the values of the events (砸六家 §7-§8 results, 拖拉机 §8-§9 settlements, a void deal
dealt again under its number, D-TR-6.6); CSV and JSON Lines hold the same rows; selection by game, by lobby
table and by the time a deal began; live games only on request and then only what a spectator may see."""

from __future__ import annotations

import asyncio
import csv
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pexpect
import pyarrow.parquet as pq
import pytest

from paiju.cli import main
from paiju.rules.cards import Card, parse_cards
from paiju.rules.tractor import model as tractor
from paiju.rules.tractor.settlement import level_name
from paiju.rules.zlj import model as zlj
from paiju.tools.analyst import GameLog, Source, export_games, game_rows, read_rows
from paiju.tools.analyst.export import DEAL_COLUMNS, PLAY_COLUMNS
from paiju.tools.analyst.log import recorded_at
from paiju.tools.analyst.people import name_of

from .recorded import (
    EARLY,
    EARLY_START,
    LATE,
    LIVE_TRACTOR,
    LIVE_ZLJ,
    LIVE_ZLJ_TRIBUTE,
    NAMES,
    TRACTOR,
    ZLJ,
    Recorded,
    public_cards,
    recorded,
)

pytestmark = pytest.mark.integration  # games recorded into a real JetStream stream (recorded.py)

Row = dict[str, Any]


@pytest.fixture
def games(request: pytest.FixtureRequest) -> Recorded:
    return recorded(request)


def export(games: Recorded, out: Path, *argv: str, fmt: str = "jsonl") -> tuple[list[Row], list[Row]]:
    code = main(["export", *argv, "--format", fmt, "--out", str(out), *games.args(), *games.lobby_args()])
    assert code == 0
    return read_rows(out / f"deals.{fmt}"), read_rows(out / f"plays.{fmt}")


def time_of(log: GameLog, version: int) -> str:
    return recorded_at(log.envelopes[version - 1]).isoformat()


def expected_plays(log: GameLog) -> list[tuple[int, int, str, Counter[Card]]]:
    """(version, seat, action, cards) of every seat action of an ended game, from its events."""
    found: list[tuple[int, int, str, Counter[Card]]] = []
    zlj_tribute = {
        zlj.TributeGiven: "tribute",
        zlj.TributePicked: "pick",
        zlj.TributeReturned: "return",
        zlj.ReturnTakenBack: "take_back",
    }
    countering = False
    for version, e in enumerate(log.events, start=1):
        if isinstance(e, tractor.HandsDealt | tractor.BidsRevealed):
            countering = isinstance(e, tractor.BidsRevealed)
        if isinstance(e, zlj.HandsDealt) and e.cutter is not None:
            found.append((version, e.cutter, "cut", Counter()))
        elif isinstance(e, tractor.HandsDealt) and e.cut is not None:
            found.append((version, e.first_drawer, "cut", Counter()))
        elif isinstance(e, zlj.TributeGiven | zlj.TributePicked | zlj.TributeReturned | zlj.ReturnTakenBack):
            assert e.cards is not None
            found.append((version, e.seat, zlj_tribute[type(e)], Counter(e.cards)))
        elif isinstance(e, zlj.TributeResisted):
            found.append((version, e.seat, "resist", Counter(e.cards)))
        elif isinstance(e, zlj.CardsPlayed | tractor.CardsPlayed):
            found.append((version, e.seat, "play", Counter(e.cards)))
        elif isinstance(e, zlj.FourTake):
            found.append((version, e.seat, "four_take", Counter(e.fours)))
        elif isinstance(e, zlj.Passed):
            found.append((version, e.seat, "pass", Counter()))
        elif isinstance(e, tractor.CardFlipped):
            found.append((version, e.flipper, "flip", Counter([e.card])))
        elif isinstance(e, tractor.BidEntered):
            action = "pass" if e.bid is None else "counter" if countering else "bid"
            found.append((version, e.seat, action, Counter(e.bid.cards if e.bid else ())))
        elif isinstance(e, zlj.TurnTimedOut | tractor.TurnTimedOut):
            found.append((version, e.seat, "timeout", Counter()))
    return found


def check_plays(log: GameLog, plays: list[Row]) -> None:
    """Exactly one row per seat action, in version order, with its deal, stage, order, seat, player and cards."""
    rows = [p for p in plays if p["game_id"] == log.game_id]
    expected = expected_plays(log)
    assert [(p["version"], p["seat"], p["action"]) for p in rows] == [(v, s, a) for v, s, a, _ in expected]
    assert [Counter(parse_cards(p["cards"])) for p in rows] == [c for _, _, _, c in expected]
    deal = stage = 0
    order = 0
    for version, event in enumerate(log.events, start=1):
        row = next((p for p in rows if p["version"] == version), None)
        dealing = event.deal if isinstance(event, zlj.HandsDealt | tractor.HandsDealt) else None
        if isinstance(event, tractor.CardFlipped):
            dealing = 1  # only the first deal is flipped for (§8), the void one again
        if dealing is not None and dealing != deal:
            deal, stage, order = dealing, 0, 0
        if isinstance(event, zlj.PlayStarted | tractor.TrumpDeclared):
            stage = 1
        if row is not None:
            order += 1
            assert (row["deal"], row["stage"], row["order"]) == (deal, stage, order)
            assert row["player"] == f"player-{row['seat']}" and row["time"] == time_of(log, version)
            assert not row["hidden"] and row["game"] == log.game
        if isinstance(event, zlj.RoundWon | tractor.TrickWon):
            stage += 1


def check_zlj_deals(log: GameLog, deals: list[Row]) -> None:
    rows = [d for d in deals if d["game_id"] == log.game_id]
    dealt = {e.deal: v for v, e in enumerate(log.events, start=1) if isinstance(e, zlj.HandsDealt)}
    ended = [(v, e) for v, e in enumerate(log.events, start=1) if isinstance(e, zlj.DealEnded)]
    assert [d["deal"] for d in rows] == [e.result.deal for _, e in ended] == [1, 2]
    for row, (version, event) in zip(rows, ended, strict=True):
        r = event.result
        assert (row["started"], row["ended"]) == (time_of(log, dealt[r.deal]), time_of(log, version))
        assert row["complete"] and not row["public"]
        assert row["order"] == " ".join(map(str, r.order)) and row["caught"] == " ".join(map(str, r.caught))
        assert (row["outcome"], row["head_team"]) == (r.outcome.value, r.head_team.value)
        assert row["winners"] == (r.winners.value if r.winners else "")
        assert (row["team_points_a"], row["team_points_b"]) == r.team_points
        assert tuple(row[f"individual_{s}"] for s in range(6)) == r.individual
        assert [row[f"player_{s}"] for s in range(6)] == [f"player-{s}" for s in range(6)]
        hands = log.events[dealt[r.deal] - 1].hands
        assert [Counter(parse_cards(row[f"hand_{s}"])) for s in range(6)] == [Counter(h) for h in hands]
        assert row["dealer"] is None and row["trump"] == "" and row["attackers_points"] is None


def check_tractor_deals(log: GameLog, deals: list[Row]) -> None:
    rows = [d for d in deals if d["game_id"] == log.game_id]
    settled = [(v, e) for v, e in enumerate(log.events, start=1) if isinstance(e, tractor.DealSettled)]
    trumps = [e for e in log.events if isinstance(e, tractor.TrumpDeclared)]
    dealt = [(v, e) for v, e in enumerate(log.events, start=1) if isinstance(e, tractor.HandsDealt)]
    assert [d["deal"] for d in rows] == [1, 2] and len(settled) == len(trumps) == 2
    assert [d["redeals"] for d in rows] == [1, 0], "the void first deal is the same deal, dealt again (D-TR-6.6)"
    assert rows[0]["started"] == time_of(log, 2), "deal 1 begins with its flip"
    for row, (version, s), t in zip(rows, settled, trumps, strict=True):
        assert row["ended"] == time_of(log, version) and row["complete"]
        assert (row["dealer"], row["leader"], row["trump"], row["level"]) == (
            t.dealer,
            t.dealer,
            t.trump.letter,
            level_name(t.level),
        )
        assert (row["attackers_points"], row["winner"], row["levels_up"]) == (s.attackers_points, s.winner, s.levels_up)
        assert (row["level_a"], row["level_b"]) == (level_name(s.levels[0]), level_name(s.levels[1]))
        last = [e for v, e in dealt if e.deal == row["deal"]][-1]
        assert [Counter(parse_cards(row[f"hand_{p}"])) for p in range(4)] == [Counter(h) for h in last.hands]
        assert row["hand_4"] == row["player_5"] == "" and row["individual_0"] is None and row["outcome"] == ""


def test_export_writes_one_row_per_deal_and_per_play_with_the_events_values(games: Recorded, tmp_path: Path) -> None:
    deals, plays = export(games, tmp_path, "--game", TRACTOR, "--game", ZLJ, "--game", ZLJ)
    assert [(d["game_id"], d["deal"]) for d in deals] == [(TRACTOR, 1), (TRACTOR, 2), (ZLJ, 1), (ZLJ, 2)]
    check_zlj_deals(games.logs[ZLJ], deals)
    check_tractor_deals(games.logs[TRACTOR], deals)
    check_plays(games.logs[ZLJ], plays)
    check_plays(games.logs[TRACTOR], plays)
    assert {p["action"] for p in plays} >= {"play", "pass", "four_take", "tribute", "return", "cut", "flip", "bid"}
    assert [p["game_id"] for p in plays] == sorted(p["game_id"] for p in plays), "games in id order"
    # the rows are a pure function of the decoded envelopes
    pure = [game_rows(games.logs[g], NAMES) for g in (TRACTOR, ZLJ)]
    assert deals == [d for r in pure for d in r.deals] and plays == [p for r in pure for p in r.plays]


def test_csv_reloads_to_the_same_rows_as_json_lines(games: Recorded, tmp_path: Path) -> None:
    as_json = export(games, tmp_path / "jsonl", "--game", ZLJ, "--game", TRACTOR)
    as_csv = export(games, tmp_path / "csv", "--game", ZLJ, "--game", TRACTOR, fmt="csv")
    assert as_csv == as_json
    for name, rows in zip(("deals", "plays"), as_json, strict=True):
        with (tmp_path / "csv" / f"{name}.csv").open(newline="", encoding="utf-8") as f:
            plain = list(csv.DictReader(f))
        assert plain == [{k: "" if v is None else str(v) for k, v in row.items()} for row in rows]
    again = tmp_path / "again"
    export(games, again, "--game", TRACTOR, "--game", ZLJ, fmt="csv")
    assert (again / "plays.csv").read_bytes() == (tmp_path / "csv" / "plays.csv").read_bytes(), "deterministic"


def test_table_picks_the_games_its_matches_started(games: Recorded, tmp_path: Path) -> None:
    deals, plays = export(games, tmp_path, "--table", games.table)
    assert {d["game_id"] for d in deals} == {p["game_id"] for p in plays} == {ZLJ, TRACTOR}
    deals, _ = export(games, tmp_path, "--table", "table-99999999", "--game", LATE)
    assert {d["game_id"] for d in deals} == {EARLY, LATE}


def test_time_range_picks_deals_by_their_first_event(games: Recorded, tmp_path: Path) -> None:
    early = games.logs[EARLY]  # recorded from EARLY_START, one minute a version
    deals, _ = export(games, tmp_path, "--since", "2030-01-01T00:00:00Z")
    assert {d["game_id"] for d in deals} == {EARLY, LATE}
    deals, _ = export(games, tmp_path, "--since", "2030-01-01", "--until", "2030-01-02T00:00:00+00:00")
    assert {d["game_id"] for d in deals} == {EARLY}
    second = next(v for v, e in enumerate(early.events, start=1) if isinstance(e, zlj.HandsDealt) and e.deal == 2)
    started = EARLY_START.timestamp() + 60 * second
    deals, plays = export(games, tmp_path, "--game", EARLY, "--until", _iso(started - 30))
    assert [d["deal"] for d in deals] == [1]
    assert {p["deal"] for p in plays} == {1} and len(plays) == len(
        [p for p in game_rows(early).plays if p["deal"] == 1]
    )
    deals, plays = export(games, tmp_path, "--game", EARLY, "--since", _iso(EARLY_START.timestamp() + 60 * 2 + 30))
    assert [d["deal"] for d in deals] == [2] and {p["deal"] for p in plays} == {2}
    # deal 1 began before --since, even though most of its plays came after it
    assert any(p["time"] > _iso(EARLY_START.timestamp() + 150) for p in game_rows(early).plays if p["deal"] == 1)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def test_live_games_are_left_out_unless_asked_for_and_then_only_public(games: Recorded, tmp_path: Path) -> None:
    deals, _ = export(games, tmp_path)
    assert {d["game_id"] for d in deals} == {ZLJ, TRACTOR, EARLY, LATE}, "every ended game of the stream"
    deals, plays = export(games, tmp_path, "--include-live")
    live = {LIVE_ZLJ, LIVE_ZLJ_TRIBUTE, LIVE_TRACTOR}
    assert {d["game_id"] for d in deals} == {ZLJ, TRACTOR, EARLY, LATE} | live
    for game_id in live:
        log = games.logs[game_id]
        mine = [p for p in plays if p["game_id"] == game_id]
        assert all(d["public"] for d in deals if d["game_id"] == game_id)
        assert not any(d[f"hand_{s}"] for d in deals if d["game_id"] == game_id for s in range(6))
        shown = Counter(c for p in mine for c in parse_cards(p["cards"]))
        assert not shown - public_cards(log.events), "a card the table has not seen"
    given = [p for p in plays if p["game_id"] == LIVE_ZLJ_TRIBUTE][-1]
    assert (given["action"], given["hidden"], given["cards"]) == ("tribute", True, "") and given["count"] >= 1
    bids = [p for p in plays if p["game_id"] == LIVE_TRACTOR and p["stage"] == 0 and p["action"] != "flip"]
    assert bids and {p["action"] for p in bids} <= {"bid_or_pass", "counter_or_pass"}
    assert all(p["hidden"] and not p["cards"] for p in bids)


def test_an_export_in_two_processes_writes_the_files_of_one(games: Recorded, tmp_path: Path) -> None:
    """Every game, its partitions read and folded by two processes at once: the same rows, in the same order."""
    source = Source(games.url, games.stream, games.prefix)
    written = {}
    for processes in (1, 2):
        out = tmp_path / str(processes)
        done = asyncio.run(export_games(None, out, "jsonl", source=source, processes=processes, include_live=True))
        written[processes] = (done, [(out / name).read_bytes() for name in ("deals.jsonl", "plays.jsonl")])
    (one, one_files), (two, two_files) = written[1], written[2]
    assert (one.games, one.deals, one.plays) == (two.games, two.deals, two.plays) and one.games >= 2
    assert one_files == two_files


def test_export_games_takes_an_explicit_list_of_games(games: Recorded, tmp_path: Path) -> None:
    """The hook for a tournament's games."""
    source = Source(games.url, games.stream, games.prefix)
    done = asyncio.run(export_games([LATE, EARLY], tmp_path, "csv", source=source))
    assert (done.games, done.deals) == (2, 4)
    assert (
        done.plays
        == len(read_rows(tmp_path / "plays.csv"))
        == sum(len(game_rows(games.logs[g]).plays) for g in (EARLY, LATE))
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--game", "no-such-game"], "there is no game 'no-such-game'"),
        (["--table", "table-00000000"], "there is no table 'table-00000000'"),
    ],
)
def test_an_unknown_game_or_table_exits_2(
    argv: list[str], message: str, games: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["export", *argv, "--out", str(tmp_path), *games.args(), *games.lobby_args()])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("paiju export: ") and message in err
    assert not (tmp_path / "deals.jsonl").exists()


def test_players_are_named_as_the_lobby_showed_them_beside_their_ids(games: Recorded, tmp_path: Path) -> None:
    deals, plays = export(games, tmp_path, "--game", ZLJ)
    for row in deals:
        assert [(row[f"player_{s}"], row[f"name_{s}"]) for s in range(6)] == list(NAMES.items())
    named = {(p["player"], p["name"]) for p in plays}
    assert set(NAMES.items()) <= named, "each player's actions carry their name"
    assert name_of(NAMES, "bot-table-0a1b2c3d-2") == "Bot 2", "a bot is named as the lobby names bots"
    assert name_of(NAMES, "cover-table-0a1b2c3d-4") == "Bot for seat 4", "a bot covering an absent player too"
    # without the lobby's stream the ids are all there is: the names are empty, never made up
    code = main(["export", "--game", ZLJ, "--out", str(tmp_path / "bare"), *games.args(), "--lobby-stream", "NOPE"])
    assert code == 0
    assert {r["name_0"] for r in read_rows(tmp_path / "bare" / "deals.jsonl")} == {""}


def test_parquet_holds_the_rows_of_json_lines_with_the_documented_schema(games: Recorded, tmp_path: Path) -> None:
    as_json = export(games, tmp_path / "jsonl", "--game", ZLJ, "--game", TRACTOR)
    as_parquet = export(games, tmp_path / "parquet", "--game", ZLJ, "--game", TRACTOR, fmt="parquet")
    assert as_parquet == as_json
    for name, columns in (("deals", DEAL_COLUMNS), ("plays", PLAY_COLUMNS)):
        schema = pq.read_schema(tmp_path / "parquet" / f"{name}.parquet")
        assert [(f.name, str(f.type), f.nullable) for f in schema] == [
            (c.name, {int: "int64", bool: "bool", str: "string"}[c.kind], c.kind is int) for c in columns
        ]


def test_exporting_a_live_game_says_how_to_include_it(
    games: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = main(["export", "--game", LIVE_ZLJ, "--out", str(tmp_path), *games.args(), *games.lobby_args()])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("0 deals and 0 plays of 0 games")
    assert "1 game(s) still being played were left out: --include-live adds their public rows" in out


def test_a_progress_bar_shows_on_a_terminal_only(games: Recorded, tmp_path: Path) -> None:
    argv = ["-m", "paiju.cli", "export", "--game", ZLJ, *games.args(), *games.lobby_args()]
    piped = subprocess.run(
        [sys.executable, *argv, "--out", str(tmp_path / "piped")], capture_output=True, text=True, check=True
    )
    assert piped.stderr == "", "quiet when not on a terminal"
    child = pexpect.spawn(sys.executable, [*argv, "--out", str(tmp_path / "tty")], encoding="utf-8", timeout=120)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "folding games" in (child.before or ""), "a progress bar on a terminal"
