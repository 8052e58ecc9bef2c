"""The web view as its users meet it: `paiju stack` (what `make run` starts) prints the page's URL; in a real headless
Chromium the tables page lists the bot tables, a table's live page follows the bots' game as it is played (drawn from
the public view the web view's one Watch stream per table brings with each turn: no GetView per move), an ended
game's replay shows at a chosen version exactly the hands its log holds there, and nothing hidden reaches a page —
not in its DOM, not in any response or server-sent event it received. A rated casual match shows on the
leaderboard (its players provisional), on each player's page (rating, rated matches, the rating over time, the
head-to-head) and beside the table's result, each figure as scoring's RatingsService gives it; a table says what it
is doing. The gateway refuses hostile ids and parameters with a reason (never a server error) and throttles a flood.

Screenshots of the pages are taken at desktop and phone widths; with ``PAIJU_SCREENSHOTS=DIR`` they are kept there
(the documents' come from ``PAIJU_SCREENSHOTS=docs/images``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paiju.platform.tokens import Identity, Role, load_signer
from paiju.rules.cards import format_card
from paiju.tools.analyst.log import decode
from paiju.tools.analyst.timeline import timeline
from paiju.tools.web.boards import board
from paiju.tools.web.gateway import ID
from paiju.v1 import (
    engine_pb2,
    engine_pb2_grpc,
    lobby_events_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
    ratings_pb2,
    ratings_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
    spectators_pb2,
    zlj_pb2,
)

from ..support.profiles import profile
from ..support.waiting import wait_until, wait_until_blocking
from .browser import Page, browser

pytestmark = [
    pytest.mark.e2e,  # the whole stack as processes, and a browser
    pytest.mark.xdist_group("web"),  # one stack for the module: its tests run in one worker (make test: loadgroup)
]

SCREENSHOTS = os.environ.get("PAIJU_SCREENSHOTS")
LETTER_CARD = re.compile(r"(?<![\w-])(?:10|[2-9TJQKA])[SHCD](?![\w-])|(?<![\w-])[SB]J(?![\w-])")
"""A card in the notation's letters (``QS``, ``10D``, ``SJ``): the page draws every card it shows with its suit."""
HIDDEN_KEYS = ("hand", "server_seed", "seed", "my_bid", "tribute_pool")
"""Keys that would carry hidden information: no live page may receive any of them."""


@pytest.fixture(scope="module")
def stack() -> Iterator[dict[str, Any]]:
    """`paiju stack` in a folder of its own, on free ports, bots thinking 0.1 s; what its banner printed."""
    # every page of the crowd test comes from this machine: its address may hold more live tables than the default
    # a player who stops watching the table is covered at once (the rated match's players leave it to the bots)
    with paiju_stack(
        "paiju-web-", PAIJU_WEB_RATE_LIMITS="live:address=100/open", PAIJU_PRESENCE_GRACE_SECONDS="1"
    ) as found:
        yield found


@contextlib.contextmanager
def paiju_stack(prefix: str, **settings: str) -> Iterator[dict[str, Any]]:
    """`paiju stack` (what `make run` starts) in a folder of its own (named from ``prefix``), on free ports, bots
    thinking 0.1 s, with ``settings`` besides; yields what its banner printed, and stops it after."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755)  # PostgreSQL runs as its own user when root starts it
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DATABASE_URL")}
    env.update(PAIJU_STACK_PORTS="free", PAIJU_BOT_THINK_SECONDS="0.1", **settings)
    log = (folder / "stack.out").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "paiju.cli", "stack"], cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:

        def printed() -> str:
            return (folder / "stack.out").read_text()

        def banner() -> str | None:
            assert process.poll() is None, "paiju stack exited:\n" + printed()[-4000:]
            text = printed()
            return text if "Ctrl-C stops everything." in text else None

        text = wait_until_blocking(
            banner, "paiju stack to start", seconds=180, every=0.5, explain=lambda: printed()[-4000:]
        )
        yield {
            "web": _field(r"web view\s+(http://\S+)", text),
            "lobby": _field(r"lobby\s+(127\.0\.0\.1:\d+)", text),
            "engine": _field(r"engine\s+(127\.0\.0\.1:\d+)", text),
            "scoring": _field(r"scoring\s+(127\.0\.0\.1:\d+)", text),
            "tables": re.findall(r"table at (table-[0-9a-f]+)", text),
            "admin_key": folder / ".data" / "keys" / "admin.pem",
            "banner": text,
            "folder": folder,
        }
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _field(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    assert found, f"the banner has no {pattern!r}:\n{text}"
    return found.group(1)


def get(url: str, *, patient: bool = True) -> tuple[int, Any]:
    """GET ``url``: its status and JSON body. ``patient``: a 429 is waited out as its Retry-After says, as a client
    does (every test here comes from one address, and the flood test spends its budget)."""
    for _ in range(10):
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as e:
            status, body = e.code, json.loads(e.read() or b"{}")
            if status != 429 or not patient:
                return status, body
            time.sleep(float(e.headers.get("Retry-After", "1")))
    return status, body


def shot(name: str) -> Path:
    folder = Path(SCREENSHOTS) if SCREENSHOTS else Path(tempfile.gettempdir()) / "paiju-web-shots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def test_make_run_prints_the_web_views_url(stack: dict[str, Any]) -> None:
    assert f"Watch them in a browser at {stack['web']}" in stack["banner"]
    status, body = get(stack["web"] + "healthz")
    assert status == 200 and body["status"] == "serving"


def test_the_tables_page_lists_the_bot_tables_and_a_table_is_followed_live(stack: dict[str, Any]) -> None:
    async def body() -> None:
        async with browser() as page:
            await page.goto(stack["web"])
            listed = await page.wait_for(
                "[...document.querySelectorAll('[data-table]')].map(e => e.getAttribute('data-table'))",
                30,
                "the tables",
            )
            assert set(stack["tables"]) <= set(listed)
            await page.screenshot(shot("tables.png"), 1100, 520)
            zlj = stack["tables"][0]
            before = get(stack["web"] + "healthz")[1]
            await page.goto(f"{stack['web']}#/table/{zlj}")
            first = int(await page.wait_for(_version(), 30, "the live table"))
            later = int(await page.wait_for(f"({_version()} || 0) > {first + 5} && {_version()}", 60, "moves"))
            assert later > first + 5, "the page follows the game as the bots play"
            seats = await page.evaluate("document.querySelectorAll('.seat').length")
            assert seats == 6
            counts = await page.evaluate(
                "[...document.querySelectorAll('[data-testid=count]')].map(e => e.textContent)"
            )
            assert all(re.match(r"\d+ cards?", c) for c in counts), counts
            told = await page.evaluate("document.querySelectorAll('[data-testid=log] p').length")
            assert told > 0, "what happened is told"
            await page.wait_for("!!document.querySelector('[data-testid=log] .card')", 60, "a card told in the log")
            shown = await page.evaluate("document.querySelector('main').innerText")
            assert not LETTER_CARD.search(shown), f"a card in letters beside the drawn ones: {shown[:2000]}"
            await page.screenshot(shot("live.png"), 1100, 820)
            await page.screenshot(shot("live-phone.png"), 390, 844)
            width = await page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"the live page fits a phone's width (it is {width} px wide)"
            await _nothing_hidden(page)
            await _boards_are_what_a_spectator_sees(stack, page)
            tractor = stack["tables"][1]
            await page.goto(f"{stack['web']}#/table/{tractor}")
            await page.wait_for(f"{_version()} && document.querySelectorAll('.seat').length == 4", 30, "拖拉机")
            await asyncio.sleep(2)
            await _nothing_hidden(page)
            await _boards_are_what_a_spectator_sees(stack, page)
            assert not page.errors, page.errors
            # the boards came with the watches' turns: a view was asked once per game followed, not per move
            after = get(stack["web"] + "healthz")[1]
            views = after["upstream_calls"].get("GetView", 0) - before["upstream_calls"].get("GetView", 0)
            drawn = after["boards_drawn"] - before["boards_drawn"]
            assert drawn > 5 and views <= 4, f"{drawn} boards drawn with {views} GetView calls"

    asyncio.run(body())


def test_a_timed_tables_live_page_counts_the_turn_down(stack: dict[str, Any]) -> None:
    async def body() -> None:
        # watched live (a tournament table's spectators are delayed by default, and a delayed board has no countdown)
        live = spectators_pb2.SpectatorPolicy(delay_moves=0)
        table_id, _ = await _table_of_bots(stack["lobby"], preset=lobby_pb2.TABLE_PRESET_TOURNAMENT, spectators=live)
        async with browser() as page:
            await page.goto(f"{stack['web']}#/table/{table_id}")
            await page.wait_for(_version(), 60, "the timed table")
            left = await page.wait_for(
                "/^\\d+ s left$/.test(document.querySelector('[data-testid=timer]')?.textContent || '') && "
                "document.querySelector('[data-testid=timer]').textContent",
                60,
                "the turn timer counting down",
            )
            assert 0 <= int(left.split()[0]) <= 10, left
            await _nothing_hidden(page)

    asyncio.run(body())


def test_a_crowd_of_pages_on_one_table_costs_the_services_one_watch(stack: dict[str, Any]) -> None:
    crowd = 60
    table = stack["tables"][1]

    async def page(session: aiohttp.ClientSession, boards: list[int], stop: asyncio.Event) -> None:
        async with session.get(f"{stack['web']}api/tables/{table}/live") as answer:
            assert answer.status == 200
            async for line in answer.content:
                if line.startswith(b"event: board"):
                    boards.append(1)
                if stop.is_set():
                    return

    async def body() -> None:
        before = get(stack["web"] + "healthz")[1]["upstream_calls"]
        stop = asyncio.Event()
        boards: list[list[int]] = [[] for _ in range(crowd)]
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
            tasks = []
            for n in range(crowd):  # opened below the address's 20 API calls a second, as people arrive
                tasks.append(asyncio.create_task(page(session, boards[n], stop)))
                await asyncio.sleep(0.06)
            await wait_until(
                lambda: all(len(b) >= 3 for b in boards),
                "each page to receive the board and two moves",
                seconds=60,
                every=0.2,
                explain=lambda: f"pages with 3 boards: {sum(len(b) >= 3 for b in boards)} of {crowd}",
            )
            health = get(stack["web"] + "healthz")[1]
            stop.set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        assert health["pages"] >= crowd
        watches = health["upstream_calls"].get("Watch", 0) - before.get("Watch", 0)
        joins = health["upstream_calls"].get("JoinGame", 0) - before.get("JoinGame", 0)
        views = health["upstream_calls"].get("GetView", 0) - before.get("GetView", 0)
        assert watches <= 2 and joins <= 2, f"{crowd} pages made {watches} Watch and {joins} JoinGame calls"
        assert views <= 2, f"{crowd} pages made {views} GetView calls: the boards come with the watch's turns"

    asyncio.run(body())


def test_an_ended_games_replay_shows_the_hands_its_log_holds_at_the_chosen_version(stack: dict[str, Any]) -> None:
    async def body() -> None:
        table_id, game_id = await _one_deal_of_bots(stack["lobby"])
        envelopes = await _ended_log(stack, game_id)
        log = decode(envelopes)
        moments = {m.version: m for m in timeline(log)}
        async with browser() as page:
            await page.goto(stack["web"])
            await page.wait_for(
                f"!!document.querySelector('[data-table=\"{table_id}\"] [data-testid=replay]')", 30, "a replay link"
            )
            await page.goto(f"{stack['web']}#/replay/{game_id}?table={table_id}")
            await page.wait_for("!!document.querySelector('[data-testid=slider]')", 60, "the replay")
            for version in (1, len(envelopes) // 3, len(envelopes) // 2, len(envelopes)):
                await page.evaluate(f"paijuReplayTo({version})")
                shown = await page.evaluate(
                    "[...document.querySelectorAll('.seat')].map(s => "
                    "[...s.querySelectorAll('[data-testid=hand] .card')].map(c => c.getAttribute('data-card')))"
                )
                at = await page.evaluate("document.querySelector('[data-testid=at]').getAttribute('data-version')")
                assert int(at) == version
                hands = moments[version].state.hands
                assert [Counter(h) for h in shown] == [Counter(format_card(c) for c in hand) for hand in hands], (
                    f"the hands at version {version}"
                )
            over = await page.evaluate("document.querySelector('[data-testid=doing]').textContent")
            assert over.startswith("Match over: ") and ("wins by" in over or "a draw" in over), over
            await page.evaluate(f"paijuReplayTo({len(envelopes) // 2})")
            await page.screenshot(shot("replay.png"), 1100, 900)
            # a running game is not replayed (the engine does not even say to a guest that it exists)
            _, running = await _table_of_bots(stack["lobby"], deals=0)
            status, answer = get(f"{stack['web']}api/games/{running}/replay")
            assert status == 404 and answer["reason"] == "GAME_NOT_FOUND", answer
            assert "watched live" in answer["message"] and "steps" not in answer
            assert not page.errors, page.errors

    asyncio.run(body())


def test_a_tournaments_standings_and_result_sheet_are_shown(stack: dict[str, Any]) -> None:
    async def body() -> None:
        tournament = await _league_with_a_forfeit(stack)
        await wait_until(
            lambda: get(f"{stack['web']}api/tournaments/{tournament}")[1].get("sheets"),
            "scoring to project round 1's sheet",
            seconds=60,
            every=0.5,
        )
        async with browser() as page:
            await page.goto(f"{stack['web']}#/tournament/{tournament}")
            await page.wait_for("document.querySelectorAll('[data-testid=standings] tbody tr').length == 2", 30, "it")
            text = await page.evaluate("document.body.innerText")
            assert "Web League" in text and "League team 1" in text and "League team 2" in text
            sheet = await page.evaluate("document.querySelector('[data-testid=sheet]').innerText")
            assert "League team 1" in sheet and "League team 2" in sheet
            await page.screenshot(shot("tournament.png"), 1100, 700)
            assert not page.errors, page.errors

    asyncio.run(body())


def test_a_rated_match_shows_on_the_leaderboard_the_players_pages_and_beside_the_tables_result(
    stack: dict[str, Any],
) -> None:
    """Two guests start a casual 砸六家 match of one deal with four bots and leave it to the bots (their seats are
    covered; the match is still theirs, D-RATE-7). Once scoring has rated it, every figure the web view shows of it
    is scoring's: each player's rating before and after, on the table's result, on the leaderboard, on their page,
    in their head-to-head."""

    async def body() -> None:
        table_id, game_id, players = await _rated_match(stack["lobby"])

        def rated() -> dict[str, Any] | None:
            status, found = get(f"{stack['web']}api/tables/{table_id}/result")
            assert status == 200, found
            return found if found["rated"] else None

        result = await wait_until(rated, "scoring to rate the casual match", seconds=120, every=1)
        truth = await _histories(stack, [player_id for player_id, _ in players])
        assert result["game_id"] == game_id and result["mode"] == "casual"
        assert result["result"] and ("wins by" in result["result"] or "draw" in result["result"])
        rows = {row["player_id"]: row for row in result["ratings"]}
        assert set(rows) == {player_id for player_id, _ in players}, "each human player's change, no bot's"
        for player_id, name in players:
            match = next(m for m in truth[player_id].matches if m.game_id == game_id)
            row = rows[player_id]
            assert row["name"] == name and row["result"] == match.result
            assert row["after"]["conservative"] == match.conservative
            assert row["before"]["mu"] == match.before.mu and row["after"]["mu"] == match.after.mu
            assert row["change"] == match.conservative - (match.before.mu - 3 * match.before.sigma)

        status, board = get(f"{stack['web']}api/ratings/zlj?mode=casual&limit=100")
        assert status == 200 and board["mode"] == "casual", board
        listed = {row["player_id"]: row for row in board["rows"]}
        assert {player_id for player_id, _ in players} <= set(listed)
        assert [row["place"] for row in board["rows"]] == list(range(1, len(board["rows"]) + 1))
        estimates = [row["conservative"] for row in board["rows"]]
        assert estimates == sorted(estimates, reverse=True), "best first, by μ − 3σ"
        for player_id, _ in players:
            assert listed[player_id]["provisional"] and listed[player_id]["matches"] == 1

        (first, first_name), (second, _) = players
        status, page_data = get(f"{stack['web']}api/players/{first}?game=zlj&mode=casual")
        assert status == 200 and page_data["rating"]["matches"] == 1, page_data
        assert [m["game_id"] for m in page_data["matches"]] == [game_id]
        status, versus = get(f"{stack['web']}api/players/{first}/versus/{second}?game=zlj&mode=casual")
        assert status == 200, versus
        h2h = await _head_to_head(stack, first, second)
        for key in ("against", "wins", "losses", "draws", "together", "together_wins"):
            assert versus[key] == getattr(h2h, key), key
        assert versus["against"] + versus["together"] == 1

        async with browser() as page:
            await page.goto(f"{stack['web']}#/ratings?game=zlj&mode=casual")
            await page.wait_for(
                f"!!document.querySelector('[data-testid=leaderboard] [data-player=\"{first}\"]')", 30, "the board"
            )
            marked = await page.evaluate(
                f"!!document.querySelector('[data-player=\"{first}\"] [data-testid=provisional]')"
            )
            assert marked, "a provisional player is marked so"
            await page.screenshot(shot("leaderboard.png"), 1100, 600)
            await page.goto(f"{stack['web']}#/player/{first}?game=zlj&mode=casual")
            met = await page.wait_for(
                "[...document.querySelectorAll('[data-testid=versus-link]')].map(a => a.textContent)", 30, "met"
            )
            assert met == [players[1][1]], "the other person of the match, by name, one click from the head-to-head"
            await page.evaluate("document.querySelector('[data-testid=versus-link]').click()")
            shown = await page.wait_for(
                "document.querySelector('[data-testid=versus-counts]')?.textContent", 30, "the head-to-head"
            )
            against, together = (f"{n} match{'' if n == 1 else 'es'}" for n in (versus["against"], versus["together"]))
            assert f": {against}, {versus['wins']} won" in shown and f"As partners: {together}," in shown, shown
            text = await page.evaluate("document.querySelector('[data-testid=conservative]').textContent")
            assert text.startswith(f"{rows[first]['after']['conservative']:.1f}"), text
            assert first_name in await page.evaluate("document.querySelector('h1').textContent")
            row = await page.evaluate(
                f"document.querySelector('[data-testid=matches] [data-game=\"{game_id}\"]').innerText"
            )
            assert "and 4 bots" in row and "bot-" not in row, row
            points = await page.evaluate(
                "document.querySelector('[data-testid=sparkline] polyline').getAttribute('points').split(' ').length"
            )
            assert points == 2, "the rating before the first rated match, and after it"
            await page.screenshot(shot("player.png"), 1100, 700)
            await page.goto(f"{stack['web']}#/table/{table_id}")
            changes = await page.wait_for(
                "document.querySelectorAll('[data-testid=rating-changes] tbody tr').length", 30, "the ratings' changes"
            )
            assert changes == 2
            doing = await page.evaluate("document.querySelector('[data-testid=doing]').textContent")
            assert doing.startswith("Match over: ") and result["result"] in doing, doing
            assert "Waiting for 2 players to say they are ready" in doing, doing
            shown_result = await page.evaluate("document.querySelector('[data-testid=result]').textContent")
            assert shown_result == result["result"]
            assert not page.errors, page.errors

    asyncio.run(body())


def test_a_tables_page_says_what_each_table_is_doing(stack: dict[str, Any]) -> None:
    """The tables list and a live table say in words what the table is doing: waiting for players, playing deal N
    (each board's ``doing``, from its view), the match over."""

    async def body() -> None:
        async with grpc.aio.insecure_channel(stack["lobby"]) as channel:
            lobby: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
            session = await _guest(lobby)
            md = (("authorization", f"Bearer {session.token}"),)
            request = lobby_pb2.CreateTableRequest(name="half empty", game=engine_pb2.GAME_TRACTOR)
            empty = (await lobby.CreateTable(request, metadata=md)).table.table_id
            await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=empty), metadata=md)

        def listed() -> bool:  # (the list is read from the lobby at most every two seconds)
            status, found = get(stack["web"] + "api/tables")
            assert status == 200
            doing = next((t["doing"] for t in found["tables"] if t["table_id"] == empty), None)
            return doing == "Waiting for players: 1 of 4 seats taken"

        await wait_until(listed, "the new table listed, its one bot seated", every=0.5)
        async with browser() as page:
            await page.goto(f"{stack['web']}#/table/{empty}")
            said = await page.wait_for("document.querySelector('[data-testid=doing]')?.textContent", 30, "words")
            assert said == "Waiting for players: 1 of 4 seats taken"
            await page.goto(f"{stack['web']}#/table/{stack['tables'][0]}")
            said = await page.wait_for(
                f"{_version()} && document.querySelector('[data-testid=doing]').textContent", 30, "the live table"
            )
            assert re.fullmatch(r"(Playing|Dealing) deal \d+( of \d+)?|Tribute before the play of deal \d+.*", said), (
                said
            )
            await page.goto(stack["web"])
            in_list = await page.wait_for(
                f"document.querySelector('[data-table=\"{empty}\"] [data-testid=doing]')?.textContent", 30, "list"
            )
            assert in_list == "Waiting for players: 1 of 4 seats taken"
            assert not page.errors, page.errors

    asyncio.run(body())


@pytest.mark.parametrize(
    "path",
    [
        "api/tables/%2E%2E/live",
        "api/tables/" + "x" * 5000 + "/live",
        "api/tables/a%00b/live",
        "api/tables/table.*/live",
        "api/games/%3E/replay",
        "api/games/ok/replay?table=%00",
        "api/tournaments/" + "%C3%A9" * 40,
        "api/ratings/chess",
        "api/ratings/zlj.*",
        "api/ratings/zlj?mode=%00",
        "api/ratings/zlj?mode=Casual",
        "api/ratings/zlj?limit=0",
        "api/ratings/zlj?limit=101",
        "api/ratings/zlj?limit=-1",
        "api/ratings/zlj?limit=" + "9" * 5000,
        "api/ratings/zlj?limit=%D9%A3",  # an Arabic-Indic digit: a digit to Python, not a number here
        "api/players/%2E%2E",
        "api/players/" + "x" * 5000,
        "api/players/a%00b",
        "api/players/p?game=%3E",
        "api/players/p?mode=",
        "api/players/p?before=1e9",
        "api/players/p?before=" + "1" * 30,
        "api/players/p/versus/p",
        "api/players/p/versus/*",
        "api/players/p/versus/" + "y" * 101,
        "api/players/p/versus/q?game=chess",
        "api/tables/table.%3E/result",
        "api/tables/" + "z" * 5000 + "/result",
    ],
)
def test_hostile_ids_are_refused_with_a_reason(stack: dict[str, Any], path: str) -> None:
    status, body = get(stack["web"] + path)
    assert status in (400, 404), (status, body)
    assert body.get("reason") in ("INVALID_REQUEST", "NOT_FOUND") and body.get("message"), body


ANSWERED: dict[str, Callable[[str], bool]] = {
    "api/ratings/{}": lambda v: v in ("zlj", "tractor"),
    "api/ratings/zlj?mode={}": lambda v: v in ("casual", "ranked"),
    "api/ratings/tractor?limit={}": lambda v: v.isascii() and v.isdigit() and len(v) <= 3 and 1 <= int(v) <= 100,
    "api/players/p/versus/{}": lambda v: bool(ID.match(v)) and v != "p",
}
"""The routes some texts are answered on (a game, a mode, a number, an id): what is answered must be one of them."""


@given(
    route=st.sampled_from(
        [
            "api/tables/{}/live",
            "api/games/{}/replay",
            "api/tournaments/{}",
            "api/games/g/replay?table={}",
            "api/players/{}",
            "api/players/p?before={}",
            "api/tables/{}/result",
            *ANSWERED,
        ]
    ),
    value=st.text(min_size=1, max_size=300),
)
@profile(60)
def test_any_text_in_place_of_an_id_is_answered_with_a_reason_never_a_server_error(
    stack: dict[str, Any], route: str, value: str
) -> None:
    time.sleep(0.06)  # below the address's 20 calls a second: each text reaches the checks, not the limit
    status, body = get(stack["web"] + route.format(urllib.parse.quote(value, safe="")))
    if status == 200:
        assert route in ANSWERED and ANSWERED[route](value), (route, value, body)
        return
    assert status in (400, 404), (status, body, value)
    assert body.get("reason") and body.get("message"), body


def test_an_unknown_table_or_game_is_not_found(stack: dict[str, Any]) -> None:
    status, body = get(stack["web"] + "api/games/no-such-game/replay")
    assert status == 404 and body["reason"] == "GAME_NOT_FOUND", body
    status, body = get(stack["web"] + "api/tables/no-such-table/live")
    assert status == 404 and body["reason"].endswith("NOT_FOUND"), body
    status, body = get(stack["web"] + "api/tables/no-such-table/result")
    assert status == 404 and body["reason"] == "TABLE_NOT_FOUND", body
    status, body = get(stack["web"] + "api/players/nobody-rated?game=tractor&mode=ranked")
    assert status == 404 and body["reason"] == "PLAYER_NOT_FOUND" and body["message"], body


def test_a_flood_from_one_address_is_throttled(stack: dict[str, Any]) -> None:
    """The address is served (a client that waits out a 429 as its Retry-After says is let in: the tests before this
    one, from the same address, may have spent the window's budget), and a flood from it is refused in part."""
    status, body = get(stack["web"] + "api/tables")
    assert status == 200, body
    answers = Counter(get(stack["web"] + "api/tables", patient=False)[0] for _ in range(60))
    assert answers[429] > 0 and set(answers) <= {200, 429}, answers


# --- helpers ------------------------------------------------------------------------------------------------------


def _version() -> str:
    return "document.querySelector('[data-testid=status]')?.getAttribute('data-version')"


async def _nothing_hidden(page: Page) -> None:
    """No hand in the live page's DOM, and no key of hidden information in anything it received."""
    await page.settle()
    assert await page.evaluate("document.querySelectorAll('[data-testid=hand], .hand').length") == 0
    received = [t for t in page.traffic if t.startswith("{")]
    assert received, "the page received the live boards"
    for text in received:
        for key in HIDDEN_KEYS:
            assert f'"{key}"' not in text, f"a live page received {key!r}: {text[:300]}"


async def _table_of_bots(
    lobby_address: str,
    preset: Any = lobby_pb2.TABLE_PRESET_UNSPECIFIED,
    deals: int | None = None,
    spectators: Any = None,
) -> tuple[str, str]:
    """A 砸六家 table of six bots (``preset``; ``deals``: 0 plays on until stopped; ``spectators``: its spectator
    policy), started: (table, game)."""
    async with grpc.aio.insecure_channel(lobby_address) as channel:
        lobby: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
        session = (await lobby.Guest(lobby_pb2.GuestRequest())).session
        md = (("authorization", f"Bearer {session.token}"),)
        request = lobby_pb2.CreateTableRequest(name="bots", game=engine_pb2.GAME_ZLJ, preset=preset)
        if deals is not None:
            request.zlj_options.CopyFrom(zlj_pb2.ZljOptions(deals=deals))
        if spectators is not None:
            request.spectators.CopyFrom(spectators)
        table = (await lobby.CreateTable(request, metadata=md)).table
        for _ in range(6):
            await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table.table_id), metadata=md)
        started = await lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table.table_id), metadata=md)
        return str(table.table_id), str(started.table.game_id)


async def _one_deal_of_bots(lobby_address: str) -> tuple[str, str]:
    """A 砸六家 table of one deal, six bots, started; (table, game) once it has ended."""
    async with grpc.aio.insecure_channel(lobby_address) as channel:
        lobby: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
        session = (await lobby.Guest(lobby_pb2.GuestRequest())).session
        md = (("authorization", f"Bearer {session.token}"),)
        request = lobby_pb2.CreateTableRequest(name="one deal", game=engine_pb2.GAME_ZLJ)
        request.zlj_options.CopyFrom(zlj_pb2.ZljOptions(deals=1))
        table = (await lobby.CreateTable(request, metadata=md)).table
        for _ in range(6):
            await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table.table_id), metadata=md)
        game_id = (
            await lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table.table_id), metadata=md)
        ).table.game_id

        async def finished() -> bool:
            found = (await lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table.table_id), metadata=md)).table
            return bool(found.last_result.game_id == game_id)

        await wait_until(finished, f"the bots to finish {game_id}", seconds=180, every=1)
        return table.table_id, game_id


async def _rated_match(lobby_address: str) -> tuple[str, str, list[tuple[str, str]]]:
    """A casual 砸六家 table of one deal: two guests (seats 0 and 1, one on each team) and four bots, started by the
    first guest; the guests stop watching at once and bots cover their seats to the end. (table, game, the guests'
    ids and names) once the match has ended."""
    async with grpc.aio.insecure_channel(lobby_address) as channel:
        lobby: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
        sessions = [await _guest(lobby) for _ in range(2)]
        mds = [(("authorization", f"Bearer {session.token}"),) for session in sessions]
        request = lobby_pb2.CreateTableRequest(
            name="rated", game=engine_pb2.GAME_ZLJ, mode=lobby_events_pb2.MATCH_MODE_CASUAL
        )
        request.zlj_options.CopyFrom(zlj_pb2.ZljOptions(deals=1))
        table_id = (await lobby.CreateTable(request, metadata=mds[0])).table.table_id
        for seat, md in enumerate(mds):
            await lobby.TakeSeat(lobby_pb2.TakeSeatRequest(table_id=table_id, seat=seat), metadata=md)
        for _ in range(4):
            await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table_id), metadata=mds[0])
        watches = []
        for md in mds:
            await lobby.Ready(lobby_pb2.ReadyRequest(table_id=table_id, ready=True), metadata=md)
            watch = lobby.WatchTable(lobby_pb2.WatchTableRequest(table_id=table_id), metadata=md)
            await watch.read()  # present at the table
            watches.append(watch)
        started = await lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=mds[0])
        game_id = started.table.game_id
        for watch in watches:
            watch.cancel()  # gone: bots cover both seats after the grace time

        async def finished() -> bool:
            found = (await lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=mds[0])).table
            return bool(found.last_result.game_id == game_id)

        await wait_until(finished, f"the bots to finish {game_id}", seconds=240, every=1)
        return table_id, game_id, [(session.player_id, session.name) for session in sessions]


async def _guest(lobby: Any) -> lobby_pb2.Session:
    """A new guest's session (the lobby makes at most 10 a minute for one address, and every test of the module comes
    from this one: a refusal is waited out)."""
    answer = await wait_until(
        lambda: lobby.Guest(lobby_pb2.GuestRequest()), "a guest session", seconds=90, every=2, ignoring=(grpc.RpcError,)
    )
    session: lobby_pb2.Session = answer.session
    return session


async def _ratings(stack: dict[str, Any]) -> tuple[Any, tuple[tuple[str, str], ...], grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(stack["lobby"]) as channel:
        session = await _guest(lobby_pb2_grpc.LobbyServiceStub(channel))
    scoring = grpc.aio.insecure_channel(stack["scoring"])
    return ratings_pb2_grpc.RatingsServiceStub(scoring), (("authorization", f"Bearer {session.token}"),), scoring


async def _histories(stack: dict[str, Any], players: list[str]) -> dict[str, ratings_pb2.GetRatingHistoryResponse]:
    """Each player's casual 砸六家 rated matches as scoring's RatingsService answers them (not through the web view)."""
    stub, md, channel = await _ratings(stack)
    async with channel:
        return {
            player: await stub.GetRatingHistory(
                ratings_pb2.GetRatingHistoryRequest(
                    player_id=player, game="zlj", mode=lobby_events_pb2.MATCH_MODE_CASUAL, limit=10
                ),
                metadata=md,
            )
            for player in players
        }


async def _head_to_head(stack: dict[str, Any], player: str, other: str) -> ratings_pb2.GetHeadToHeadResponse:
    stub, md, channel = await _ratings(stack)
    async with channel:
        answer: ratings_pb2.GetHeadToHeadResponse = await stub.GetHeadToHead(
            ratings_pb2.GetHeadToHeadRequest(
                player_id=player, other_id=other, game="zlj", mode=lobby_events_pb2.MATCH_MODE_CASUAL
            ),
            metadata=md,
        )
        return answer


async def _league_with_a_forfeit(stack: dict[str, Any]) -> str:
    """A two-round 拖拉机 league of two teams of guests whose round 1 ended by a forfeit (so it has a sheet)."""
    signer = load_signer(stack["admin_key"], "admin.1")
    admin = (
        ("authorization", f"Bearer {signer.mint(Identity('web-test', Role.ADMIN, expires=int(time.time()) + 600))}"),
    )
    async with (
        grpc.aio.insecure_channel(stack["lobby"]) as lobby_channel,
        grpc.aio.insecure_channel(stack["scoring"]) as scoring_channel,
    ):
        lobby: Any = lobby_pb2_grpc.LobbyServiceStub(lobby_channel)
        scoring: Any = scoring_pb2_grpc.ScoringServiceStub(scoring_channel)
        create = scoring_pb2.CreateTournamentRequest(
            command_id="web-league", name="Web League", game="tractor", rounds=2
        )
        league = (await scoring.CreateTournament(create, metadata=admin)).tournament.tournament_id
        teams = []
        for n in (1, 2):
            team = scoring_pb2.RegisterTeamRequest(
                command_id=f"web-team-{n}", tournament_id=league, name=f"League team {n}"
            )
            for _ in range(2):
                guest = (await lobby.Guest(lobby_pb2.GuestRequest())).session
                team.players.add(player_id=guest.player_id, name=guest.name)
            teams.append((await scoring.RegisterTeam(team, metadata=admin)).team_id)
        await scoring.PairRound(
            scoring_pb2.PairRoundRequest(command_id="web-pair", tournament_id=league), metadata=admin
        )
        forfeit = scoring_pb2.RecordForfeitRequest(
            command_id="web-forfeit", tournament_id=league, round=1, team_id=teams[1]
        )
        await scoring.RecordForfeit(forfeit, metadata=admin)
        return str(league)


async def _boards_are_what_a_spectator_sees(stack: dict[str, Any], page: Page) -> None:
    """Every board a live page received is, to the letter, the board of the public view of the game at its version
    (folded from the game's whole log, read by an analyst): nothing else reached the page."""
    boards = [json.loads(t) for t in page.traffic if t.startswith("{") and '"board"' in t]
    assert boards
    for game_id in {b["game_id"] for b in boards}:
        log = decode(await _ended_log(stack, game_id))
        states = {m.version: m.state for m in timeline(log)}
        for found in (b for b in boards if b["game_id"] == game_id):
            names = {seat["seat"]: seat["name"] for seat in found["board"]["seats"]}
            expected = board(log.rules.game.view(states[found["version"]], None), names)
            for seat in expected["seats"]:  # every seat of the stack's bot tables is a bot's, and marked so
                seat["bot"] = True
            assert found["board"] == json.loads(json.dumps(expected)), f"{game_id} at version {found['version']}"


async def _ended_log(stack: dict[str, Any], game_id: str) -> list[engine_pb2.Envelope]:
    """The game's whole log (every hand, even while it is played), read by an analyst straight from the engine, not
    through the web view."""
    signer = load_signer(stack["admin_key"], "admin.1")
    token = signer.mint(Identity("web-test", Role.ANALYST, expires=int(time.time()) + 600))
    async with grpc.aio.insecure_channel(stack["engine"]) as channel:
        engine: Any = engine_pb2_grpc.EngineServiceStub(channel)
        call = engine.Replay(
            engine_pb2.ReplayRequest(game_id=game_id), metadata=(("authorization", f"Bearer {token}"),)
        )
        return [answer.envelope async for answer in call]
