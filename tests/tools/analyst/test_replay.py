"""`paiju replay GAME [--at VERSION]` over a real nats-server, on games the real engine recorded: every play in
order, the deal results and the score; every hand as dealt only once a game has ended, and of a live game
nothing a spectator may not see (砸六家 §14, 拖拉机 §12, D-TR-6.2); exit 2 for what is not there."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import pytest

from paiju.cli import main
from paiju.rules.cards import Card, parse_card
from paiju.rules.tractor import model as tractor
from paiju.rules.zlj import model as zlj
from paiju.rules.zlj.game import evolve
from paiju.tools.analyst import GameLog

from .recorded import LIVE_TRACTOR, LIVE_ZLJ, LIVE_ZLJ_TRIBUTE, TRACTOR, ZLJ, Recorded, public_cards, recorded

pytestmark = pytest.mark.integration  # games recorded into a real JetStream stream (recorded.py)

CARD = re.compile(r"(?<![\w-])(?:[2-9TJQKA][SHCD]|SJ|BJ)(?![\w-])")
VERSION_LINE = re.compile(r"^\s*(\d+)  (.*)$")


@pytest.fixture
def games(request: pytest.FixtureRequest) -> Recorded:
    return recorded(request)


def replay(capsys: pytest.CaptureFixture[str], games: Recorded, *argv: str) -> tuple[int, str, str]:
    code = main(["replay", *argv, *games.args(), *games.lobby_args()])
    out, err = capsys.readouterr()
    return code, out, err


COMBO = re.compile(r"\(an? [^)]*\)")
"""A narrated combination (``(a single BJ)``): it names a card played, not another card."""


def cards_in(text: str) -> Counter[Card]:
    return Counter(parse_card(c) for c in CARD.findall(COMBO.sub("", text)))


def played_in(line: str) -> Counter[Card]:
    """The cards of a play line: ``seat 3 (B, p3): 4S 4C   FOUR-TAKE ...`` -> 4S 4C."""
    return cards_in(line.split("): ", 1)[1].split("   ", 1)[0])


def by_version(out: str) -> dict[int, list[str]]:
    """Each event's lines by its version (its first line starts with the version)."""
    told: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in out.splitlines():
        found = VERSION_LINE.match(line)
        if found:
            current = told.setdefault(int(found.group(1)), [])
            current.append(found.group(2).strip())
        elif current is not None and line.startswith(" " * 7) and not line.strip().startswith(("Round ", "Trick ")):
            current.append(line.strip())
        else:
            current = None
    return told


def seat_blocks(lines: Sequence[str]) -> list[str]:
    """Lines joined into one per seat (a line starting ``seat`` and the wrapped lines under it)."""
    blocks: list[str] = []
    for line in lines:
        if line.startswith("seat "):
            blocks.append(line)
        else:
            blocks[-1] += " " + line
    return blocks


PLAYED = zlj.CardsPlayed | tractor.CardsPlayed


def check_plays_in_order(log: GameLog, out: str) -> int:
    """Every play and pass is told after its version, by its seat, with its cards, in the log's order."""
    told = by_version(out)
    assert sorted(told) == list(told), "events are told in version order"
    plays = 0
    for version, event in enumerate(log.events, start=1):
        if isinstance(event, PLAYED | zlj.FourTake):
            cards = event.fours if isinstance(event, zlj.FourTake) else event.cards
            line = told[version][0]
            assert f"seat {event.seat} (" in line
            assert played_in(line) == Counter(cards), line
            plays += 1
        elif isinstance(event, zlj.Passed):
            assert told[version][0].endswith(": pass") and f"seat {event.seat} (" in told[version][0]
    return plays


def test_an_ended_zlj_match_is_told_play_by_play_with_every_hand_and_the_result(
    games: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    log = games.logs[ZLJ]
    code, out, err = replay(capsys, games, ZLJ)
    assert code == 0 and err == ""
    assert out.startswith(f"砸六家 (zlj) game {ZLJ}: ended")
    assert check_plays_in_order(log, out) > 100
    told = by_version(out)
    for version, event in enumerate(log.events, start=1):
        if isinstance(event, zlj.HandsDealt):
            assert out.count(f"=== Deal {event.deal} ·") == 1
            hands = seat_blocks(told[version][1:])  # every hand as dealt, in 砸六家 order (§2)
            assert [cards_in(hand.split(": ", 1)[1]) for hand in hands] == [Counter(h) for h in event.hands]
        if isinstance(event, zlj.DealEnded):
            r = event.result
            assert told[version][0].startswith(f"Deal {r.deal} over:")
            finishing = told[version][0].split("finishing order ", 1)[1].split("; caught", 1)[0]
            assert [int(s) for s in re.findall(r"seat (\d) \(", finishing)] == list(r.order)
            assert f"team points A {r.team_points[0]:+d}, B {r.team_points[1]:+d}" in told[version][1]
            assert told[version][2].startswith(f"Score after deal {r.deal}: team points")
        if isinstance(event, zlj.TributeGiven | zlj.TributeReturned):
            assert event.cards is not None and cards_in(told[version][0]) == Counter(event.cards)
    ended = log.events[-1]
    assert isinstance(ended, zlj.MatchEnded)
    a, b = ended.team_points
    winner = "a draw" if a == b else f"team {'A' if a > b else 'B'} wins by {abs(a - b)} team point"
    assert f"Match over, {winner}" in out  # who won and by how much
    assert f". Team points: A {a}, B {b}" in out
    assert "Round 1" in out and "Round 2" in out
    # the seats' players, and the bot that covered a seat for a while
    # players by the names they registered under, bots as the lobby names them; the ids once, in the heading
    assert "seat 2 (A, Cy)" in out and "(seat 2 (A, Bot 2): a bot covers the seat)" in out
    assert (
        "seat 1 (B, 伯乐)" in out
        and "player-1" in out.splitlines()[3]
        and "player-1" not in "".join(out.splitlines()[4:])
    )
    assert "(seat 2 (A, Cy): the player is back)" in out


def test_an_ended_tractor_game_is_told_trick_by_trick_with_bids_hands_and_the_result(
    games: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    log = games.logs[TRACTOR]
    code, out, _ = replay(capsys, games, TRACTOR)
    assert code == 0 and out.startswith(f"拖拉机 (tractor) game {TRACTOR}: ended")
    assert check_plays_in_order(log, out) > 100
    told = by_version(out)
    deals = [e for e in log.events if isinstance(e, tractor.HandsDealt)]
    assert len(deals) == 3 and [d.deal for d in deals] == [1, 1, 2], "a void first deal, dealt again (D-TR-6.6)"
    assert out.count("=== Deal 1 ·") == 1 and out.count("=== Deal 2 ·") == 1
    for version, event in enumerate(log.events, start=1):
        if isinstance(event, tractor.HandsDealt):
            hands = seat_blocks(told[version][1:])  # every hand as dealt, 81 cards wrapped under its seat
            assert [cards_in(hand.split(": ", 1)[1]) for hand in hands] == [Counter(h) for h in event.hands]
        if isinstance(event, tractor.BidEntered) and event.bid is not None:  # concealed while live, shown now
            assert cards_in(told[version][0]) == Counter(event.bid.cards)
        if isinstance(event, tractor.TrickWon):
            line = told[version][0]
            assert line.startswith(f"-- trick to seat {event.winner} (") and f" ({event.points} points" in line
        if isinstance(event, tractor.DealSettled):
            assert told[version][0].startswith(f"Deal settled: attackers {event.attackers_points} points")
    assert "Nobody bid: the deal is void" in out
    assert "Trick 1" in out and "Two more deals" in out
    assert by_version(out)[log.version][0].startswith("Game over")


@pytest.mark.parametrize("game_id", [LIVE_ZLJ, LIVE_ZLJ_TRIBUTE, LIVE_TRACTOR])
def test_a_live_game_shows_no_card_that_was_not_shown_at_the_table(
    game_id: str, games: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked by multisets against the real hands: with several decks a card's name alone proves nothing."""
    log = games.logs[game_id]
    assert not log.ended
    code, out, _ = replay(capsys, games, game_id)
    assert code == 0 and f"game {game_id}: live" in out and "public information only" in out
    assert check_plays_in_order(log, out) >= 8
    assert not cards_in(out) - public_cards(log.events), "a card the table has not seen"
    dealing = max(v for v, e in enumerate(log.events) if isinstance(e, zlj.HandsDealt | tractor.HandsDealt))
    dealt = log.events[dealing]
    unseen = Counter(c for h in dealt.hands for c in h) - public_cards(log.events[dealing:])
    assert sum(unseen.values()) > 80, "the test is about a deal whose hands still hold cards no one has seen"
    if game_id == LIVE_ZLJ_TRIBUTE:
        assert not cards_in(out.split("=== Deal 2 ·")[1]), "nothing of the second deal has been shown yet"
        given = log.events[-1]
        assert isinstance(given, zlj.TributeGiven) and given.cards
        assert by_version(out)[log.version][0].endswith(
            f"gives tribute {given.count} hidden card" + "s" * (given.count > 1)
        )
    if game_id == LIVE_TRACTOR:
        assert "has bid or passed (concealed)" in out and " bids " not in out


def test_at_stops_after_the_version_and_shows_the_table_there(
    games: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    log = games.logs[ZLJ]
    at = next(v for v, e in enumerate(log.events, start=1) if isinstance(e, zlj.RoundWon)) + 3
    code, out, _ = replay(capsys, games, ZLJ, "--at", str(at))
    assert code == 0
    assert max(by_version(out)) == at, "nothing after the version"
    table = out.split(f"=== The table at version {at} ===")[1]
    assert "== 砸六家 · deal 1 of 2 · play ==" in table
    state = zlj.State()
    for event in log.events[:at]:
        state = evolve(state, event) if event is not None else state
    hands = seat_blocks([line.strip() for line in table.split("Hands:")[1].strip().splitlines()])
    assert [cards_in(hand.split(": ", 1)[1]) for hand in hands] == [Counter(h) for h in state.hands]


def test_at_in_a_live_game_shows_the_table_without_hands(games: Recorded, capsys: pytest.CaptureFixture[str]) -> None:
    log = games.logs[LIVE_TRACTOR]
    code, out, _ = replay(capsys, games, LIVE_TRACTOR, "--at", str(log.version - 2))
    assert code == 0 and max(by_version(out)) == log.version - 2
    table = out.split("=== The table at version")[1]
    assert "== 拖拉机 · deal 1 · play ==" in table and "Hands:" not in table and "hands are not shown" in table
    assert not set(cards_in(table)) - set(public_cards(log.events[: log.version - 2]))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["no-such-game"], "there is no game 'no-such-game'"),
        (["bad.id"], "'bad.id' is not a game id"),
        ([ZLJ, "--at", "0"], f"game {ZLJ} has versions 1.."),
    ],
)
def test_an_unknown_game_or_version_exits_2_with_a_message(
    argv: list[str], message: str, games: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = replay(capsys, games, *argv)
    assert code == 2 and out == ""
    assert err.startswith("paiju replay: ") and message in err


def test_an_unknown_stream_exits_2(games: Recorded, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", ZLJ, "--nats", games.url, "--stream", "NO_SUCH_STREAM", "--prefix", "x.y"])
    _, err = capsys.readouterr()
    assert code == 2 and "there is no stream NO_SUCH_STREAM" in err
