"""The web view as its users meet it: `paiju stack` (what `make run` starts) prints the page's URL; in a real headless
Chromium the tables page lists the bot tables, a table's live page follows the bots' game as it is played (drawn from
the public view the web view's one Watch stream per table brings with each turn: no GetView per move), an ended
game's replay shows at a chosen version exactly the hands its log holds there, and nothing hidden reaches a page —
not in its DOM, not in any response or server-sent event it received. The gateway refuses hostile ids with a
reason (never a server error) and throttles a flood.

Screenshots of the pages are taken at desktop and phone widths; with ``PAIJU_SCREENSHOTS=DIR`` they are kept there
(the documents' come from ``PAIJU_SCREENSHOTS=docs/images``).
"""

from __future__ import annotations

import asyncio
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
from collections.abc import Iterator
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
from paiju.v1 import (
    engine_pb2,
    engine_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
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
HIDDEN_KEYS = ("hand", "server_seed", "seed", "my_bid", "tribute_pool")
"""Keys that would carry hidden information: no live page may receive any of them."""


@pytest.fixture(scope="module")
def stack() -> Iterator[dict[str, Any]]:
    """`paiju stack` in a folder of its own, on free ports, bots thinking 0.1 s; what its banner printed."""
    folder = Path(tempfile.mkdtemp(prefix="paiju-web-"))
    folder.chmod(0o755)  # PostgreSQL runs as its own user when root starts it
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DATABASE_URL")}
    # every page of the crowd test comes from this machine: its address may hold more live tables than the default
    env.update(PAIJU_STACK_PORTS="free", PAIJU_BOT_THINK_SECONDS="0.1", PAIJU_WEB_RATE_LIMITS="live:address=100/open")
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
        found = {
            "web": _field(r"web view\s+(http://\S+)", text),
            "lobby": _field(r"lobby\s+(127\.0\.0\.1:\d+)", text),
            "engine": _field(r"engine\s+(127\.0\.0\.1:\d+)", text),
            "scoring": _field(r"scoring\s+(127\.0\.0\.1:\d+)", text),
            "tables": re.findall(r"table at (table-[0-9a-f]+)", text),
            "admin_key": folder / ".data" / "keys" / "admin.pem",
            "banner": text,
            "folder": folder,
        }
        yield found
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
    ],
)
def test_hostile_ids_are_refused_with_a_reason(stack: dict[str, Any], path: str) -> None:
    status, body = get(stack["web"] + path)
    assert status in (400, 404), (status, body)
    assert body.get("reason") in ("INVALID_REQUEST", "NOT_FOUND") and body.get("message"), body


@given(
    route=st.sampled_from(
        ["api/tables/{}/live", "api/games/{}/replay", "api/tournaments/{}", "api/games/g/replay?table={}"]
    ),
    value=st.text(min_size=1, max_size=300),
)
@profile(60)
def test_any_text_in_place_of_an_id_is_answered_with_a_reason_never_a_server_error(
    stack: dict[str, Any], route: str, value: str
) -> None:
    time.sleep(0.06)  # below the address's 20 calls a second: each text reaches the checks, not the limit
    status, body = get(stack["web"] + route.format(urllib.parse.quote(value, safe="")))
    assert status in (400, 404), (status, body, value)
    assert body.get("reason") and body.get("message"), body


def test_an_unknown_table_or_game_is_not_found(stack: dict[str, Any]) -> None:
    status, body = get(stack["web"] + "api/games/no-such-game/replay")
    assert status == 404 and body["reason"] == "GAME_NOT_FOUND", body
    status, body = get(stack["web"] + "api/tables/no-such-table/live")
    assert status == 404 and body["reason"].endswith("NOT_FOUND"), body


def test_a_flood_from_one_address_is_throttled(stack: dict[str, Any]) -> None:
    answers = Counter(get(stack["web"] + "api/tables", patient=False)[0] for _ in range(60))
    assert answers[429] > 0 and answers[200] > 0, answers


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
