"""Playing in a browser, as a person does, against the stack `make run` starts: in a real headless Chromium a guest
signs in, opens a 砸六家 table with five bots and plays a whole match by clicking — the tribute and its return
included when a deal calls for them — and another by keyboard alone; a 拖拉机 deal is played with its concealed bids
and follows that show what they owe; a reload in the middle of a deal takes the game up where it stands. Every turn
the page received holds exactly its own seat's hand at that version (read from the game's whole log by an analyst)
and nobody else's.

The session: the cookie is HttpOnly, Secure, SameSite=Strict and sealed (the token inside is never in a page's
answer, a URL or a log); a changed cookie is refused; a cross-site request that would change something is refused
before anything is called; every new endpoint answers hostile input with a reason, never a server error.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from hypothesis import given
from hypothesis import strategies as st

from paiju.rules.cards import format_card
from paiju.tools.analyst.log import decode
from paiju.tools.analyst.timeline import timeline
from paiju.tools.web.config import session_key
from paiju.tools.web.session import COOKIE, SEAT_COOKIE, Sealer
from paiju.v1 import engine_pb2, engine_pb2_grpc

from ..engine.harness import refusal_of
from ..support.profiles import profile
from .browser import Page, browser
from .test_web_view import LETTER_CARD, _ended_log, paiju_stack, shot

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("web")]


@pytest.fixture(scope="module")
def stack() -> Iterator[dict[str, Any]]:
    """`paiju stack` (what `make run` starts) in a folder of its own, on free ports, bots thinking 0.1 s, and this
    machine's address allowed more calls than a person makes (the tests below send hundreds of hostile requests and
    sign many guests in)."""
    with paiju_stack(
        "paiju-play-",
        PAIJU_WEB_RATE_LIMITS="api:address=1000/second; live:address=100/open",
        # the lobby counts each browser by its own address, and every browser here is at this machine's one address:
        # the tests sign in many guests
        PAIJU_RATE_LIMITS="Guest:address=1000/minute; Register:address=100/minute; Login:address=100/minute",
    ) as found:
        yield found


MATCH_SECONDS = 600
"""A whole match with bots thinking 0.1 s: the guard against a hang, not a measure."""


def post(url: str, body: Any = None, *, origin: str | None = None, cookie: str = "", headers: Any = None) -> Any:
    """POST JSON (``body``; bytes as they are) to ``url``: (status, JSON answer, the Set-Cookie header)."""
    data = body if isinstance(body, bytes) else json.dumps(body if body is not None else {}).encode()
    found = {"Content-Type": "application/json", **(headers or {})}
    if origin is not None:
        found["Origin"] = origin
    if cookie:
        found["Cookie"] = f"{COOKIE}={cookie}"
    request = urllib.request.Request(url, data=data, method="POST", headers=found)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read()), answer.headers.get("Set-Cookie", "")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}"), e.headers.get("Set-Cookie", "")


def get(url: str, cookie: str = "") -> Any:
    request = urllib.request.Request(url, headers={"Cookie": f"{COOKIE}={cookie}"} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def origin(stack: dict[str, Any]) -> str:
    return str(stack["web"]).rstrip("/")


def guest_cookie(stack: dict[str, Any]) -> str:
    status, body, header = post(stack["web"] + "api/session/guest", origin=origin(stack))
    assert status == 200 and body["signed_in"], body
    return str(header).split(";")[0].split("=", 1)[1]


def sealer(stack: dict[str, Any]) -> Sealer:
    return Sealer(session_key((Path(stack["folder"]) / ".data" / "keys" / "web-session").read_text()))


# --- the page -----------------------------------------------------------------------------------------------------

MY_TURN = (  # the result; or the player's turn: a newer one, or the same after a move that was refused
    "document.querySelector('[data-testid=result]') ? 'ended' : "
    "((+document.querySelector('[data-testid=status]')?.getAttribute('data-version') > {after} || "
    "/^(?!.*trying again)/.test(document.querySelector('[data-testid=error]')?.textContent ?? 'trying again')) && "
    "document.querySelector('[data-testid=options] button:not([disabled]), "
    "[data-testid=suggestions] button:not([disabled])')) "
    "? document.querySelector('[data-testid=status]').getAttribute('data-version') : null"
)
CLICK = """(() => {
  const chip = document.querySelector('[data-testid=suggestions] button:not([disabled])');
  if (chip) { chip.click(); document.querySelector('[data-testid=play]').click(); return 'cards'; }
  const button = document.querySelector('[data-testid=options] button:not([disabled])');
  if (!button) return 'nothing';
  button.click();
  return button.getAttribute('data-action') || button.textContent;
})()"""
"""A move by clicks: the first legal choice of cards and the play button, or the first option; 'nothing' when the
page shows no control to play with any more (a newer turn came between the wait and the click)."""


async def sign_in_and_open(page: Page, stack: dict[str, Any], game: str, deals: int | None = None) -> str:
    """Sign in as a guest on the page and open a table of ``game`` with bots; the table's id."""
    await page.goto(stack["web"] + "play#/")
    await page.wait_for("!!document.querySelector('[data-testid=guest]')", 30, "the sign-in")
    await page.evaluate("document.querySelector('[data-testid=guest]').click()")
    await page.wait_for(f"!!document.querySelector('[data-testid=new-{game}]')", 30, "the lobby")
    if deals is not None:
        await page.evaluate(f"document.querySelector('[data-testid=deals]').value = {deals}")
    await page.evaluate(f"document.querySelector('[data-testid=new-{game}]').click()")
    await page.wait_for("location.hash.startsWith('#/table/')", 30, "the table")
    return str(await page.evaluate("location.hash.slice('#/table/'.length)"))


def turns_told(traffic: list[str]) -> list[str]:
    """What each turn the page was told says, in short (version, the seats to act, whose, the hand's size, the
    board's phase): a failure's explanation."""
    told = []
    for text in traffic:
        if '"to_act"' in text:
            turn = json.loads(text)
            told.append(
                f"v{turn['version']} to_act={turn['to_act']} mine={turn['mine']} hand={len(turn['hand'])} "
                f"dealt={turn['board'].get('dealt')} seat={turn['my_seat']}"
            )
        elif text.startswith("{"):
            told.append(text[:120])
    return told


async def play_to_the_end(page: Page, act: Any, most_moves: int = 2000, until: str = "") -> Counter[str]:
    """Play every turn of the player's with ``act`` until the page shows the result (or, with ``until``, a script,
    until it is true at one of the player's turns: the match goes on); the moves made, by kind."""
    made: Counter[str] = Counter()
    after = -1
    for _ in range(most_moves):
        found = await page.wait_for(MY_TURN.format(after=after), MATCH_SECONDS, "the player's turn or the result")
        if found == "ended" or (until and await page.evaluate(until)):
            return made
        done = str(await act(page))
        assert not page.errors, page.errors  # a script that failed leaves the turn unplayed: said at once
        if done == "nothing":
            continue  # the turn moved on before the click: waited for again (the same one, if it is still shown)
        after = int(found)
        made[done] += 1
    raise AssertionError(f"no result after {most_moves} moves: {made}")


async def by_click(page: Page) -> str:
    return str(await page.evaluate(CLICK))


async def key(page: Page, name: str, code: str, text: str = "") -> None:
    for kind in ("keyDown", "keyUp"):
        params: dict[str, Any] = {"type": kind, "key": name, "code": code}
        if text and kind == "keyDown":
            params["text"] = text
        await page.send("Input.dispatchKeyEvent", **params)


async def by_keyboard(page: Page) -> str:
    """A move by keys alone: the cards of the first legal choice chosen with the arrows and the space bar, then
    Enter; otherwise `p` to pass, or the option's number."""
    wanted = await page.evaluate(
        "(() => { const chip = document.querySelector('[data-testid=suggestions] button:not([disabled])');"
        " return chip ? [...chip.querySelectorAll('.card')].map(c => c.getAttribute('data-card')) : null })()"
    )
    if wanted:
        hand = await page.evaluate(
            "[...document.querySelectorAll('[data-testid=hand] .card')].map(c => c.getAttribute('data-card'))"
        )
        by_rank = await page.evaluate("document.querySelector('h1').textContent.includes('Za Liu Jia')")

        def rank(c: str) -> str:  # 砸六家's choices are by rank: suits never matter (§1)
            return c if not by_rank or c in ("SJ", "BJ") else c[:-1]

        left = [rank(c) for c in wanted]
        picks = []
        for i, c in enumerate(hand):
            if rank(c) in left:
                left.remove(rank(c))
                picks.append(i)
        await page.evaluate("document.querySelector('[data-testid=hand] .card[tabindex=\"0\"]').focus()")
        for index in picks:
            at = int(await page.evaluate("+document.activeElement.getAttribute('data-index')"))
            for _ in range((index - at) % len(hand)):
                await key(page, "ArrowRight", "ArrowRight")
            await key(page, " ", "Space", " ")
        await key(page, "Enter", "Enter", "\r")
        return "cards"
    if await page.evaluate("!!document.querySelector('[data-testid=pass]:not([disabled])')"):
        await key(page, "p", "KeyP", "p")
        return "pass"
    await page.evaluate("document.activeElement.blur()")
    await key(page, "1", "Digit1", "1")
    return "option"


async def turns_hold_only_the_players_hand(stack: dict[str, Any], page: Page) -> int:
    """Every turn the page received shows its own seat's hand as the game's log has it at that version, and no
    seat of its board carries a hand; the turns checked."""
    await page.settle()
    turns = [json.loads(t) for t in page.traffic if t.startswith("{") and '"to_act"' in t]
    assert turns, "the page received turns"
    checked = 0
    for game_id in {t["game_id"] for t in turns}:
        states = {m.version: m.state for m in timeline(decode(await _ended_log(stack, game_id)))}
        for turn in (t for t in turns if t["game_id"] == game_id):
            assert all("hand" not in seat for seat in turn["board"]["seats"]), "no seat's hand on the board"
            expected = states[turn["version"]].hands[turn["my_seat"]] if turn["board"]["dealt"] else ()
            assert Counter(c["card"] for c in turn["hand"]) == Counter(format_card(c) for c in expected), (
                f"the hand at version {turn['version']}"
            )
            checked += 1
    return checked


def test_a_guest_plays_a_whole_zlj_match_by_clicking_and_sees_the_result(stack: dict[str, Any]) -> None:
    async def body() -> None:
        async with browser() as page:
            before = get(stack["web"] + "healthz")[1]["upstream_calls"]
            await sign_in_and_open(page, stack, "zlj", deals=2)
            await page.wait_for("document.querySelectorAll('[data-testid=hand] .card').length > 0", 120, "the hand")
            await page.screenshot(shot("play-zlj-phone.png"), 390, 844)
            width = await page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"the table fits a phone's width (it is {width} px wide)"
            await page.screenshot(shot("play-zlj.png"), 1200, 900)
            made = await play_to_the_end(page, by_click)
            result = await page.evaluate("document.querySelector('[data-testid=result]').innerText")
            assert "Match over" in result and "won" in result, result
            assert made["cards"] > 0, made
            rated = await page.wait_for(
                "document.querySelector('[data-testid=ratings]')?.innerText", 120, "the player's rating change"
            )
            assert re.search(r"You: -?\d+\.\d → -?\d+\.\d \([+-]\d+\.\d\)", rated), rated
            await page.screenshot(shot("play-result.png"), 1200, 900)
            seats = await page.evaluate("[...document.querySelectorAll('[data-testid=seat]')].length")
            assert seats == 6
            log = await page.evaluate("[...document.querySelectorAll('[data-testid=log] p')].map(p => p.textContent)")
            assert any("(A, you)" in line for line in log), "what happened is told, the player's moves too"
            # one notation: the cards told in what happened, the facts and the result are drawn as the hand's are
            assert await page.evaluate("document.querySelectorAll('[data-testid=log] .card').length") > 0
            words = await page.evaluate(
                "[...document.querySelectorAll('[data-testid=log], [data-testid=facts], [data-testid=result]')]"
                ".map(n => { const c = n.cloneNode(true); c.querySelectorAll('.card').forEach(e => e.remove());"
                " return c.textContent; }).join(' | ')"
            )
            assert not LETTER_CARD.search(words), f"a card in letters beside the drawn ones: {words[:2000]}"
            assert await turns_hold_only_the_players_hand(stack, page) > 10
            assert not page.errors, page.errors
            # what the page cost the services: per move one Act; the seat's game token taken once by the stream and
            # once for the moves (kept sealed in the browser), again only when about to expire; for the game, one view
            after = get(stack["web"] + "healthz")[1]["upstream_calls"]
            cost = {k: after.get(k, 0) - before.get(k, 0) for k in after if k.startswith("player ")}
            assert cost["player Act"] >= sum(made.values()), cost  # the moves, and the page's parts of the shuffles
            assert cost["player JoinGame"] <= 4 < cost["player Act"], cost
            assert cost["player GetView"] <= 2 and cost["player Watch"] <= 3, cost
            # the seat's token is kept in a cookie no script reads, sent with moves only, sealed
            assert await page.evaluate("document.cookie") == ""
            cookies = (await page.send("Network.getCookies", urls=[stack["web"] + "api/play/act"]))["cookies"]
            kept = next(c for c in cookies if c["name"] == SEAT_COOKIE)
            assert kept["httpOnly"] and kept["secure"] and kept["sameSite"] == "Strict", kept
            assert kept["path"] == "/api/play/act", kept
            grant = sealer(stack).open_seat(kept["value"])
            assert grant is not None and grant.token not in kept["value"]
            await page.settle()
            assert all(grant.token not in text for text in page.traffic), "the token is never in a page's answer"
            print(f"\nplay cost: {cost['player Act']} Act, {cost['player JoinGame']} JoinGame")

    asyncio.run(body())


VERSION = "+document.querySelector('[data-testid=status]').getAttribute('data-version')"
FULL_HAND_TO_PLAY = (  # a turn to play cards early in the deal: the player surely has another before it ends
    "!!document.querySelector('[data-testid=suggestions] button:not([disabled])')"
    " && document.querySelectorAll('[data-testid=hand] .card').length >= 15"
)


def test_the_next_turn_told_before_the_last_moves_answer_can_be_played(stack: dict[str, Any]) -> None:
    """The stream may tell the player's next turn before the answer to their last move arrives (the bots are
    quick, the answer slow): that turn is played when clicked, not taken for the last move still on its way. The
    browser holds the first answer until the second move is sent."""

    async def body() -> None:
        async with browser() as page:
            await sign_in_and_open(page, stack, "zlj", deals=1)
            await page.wait_for("document.querySelectorAll('[data-testid=hand] .card').length > 0", 120, "the hand")
            await play_to_the_end(page, by_click, until=FULL_HAND_TO_PLAY)
            first = int(await page.evaluate(VERSION))
            await page.send("Fetch.enable", patterns=[{"urlPattern": "*/api/play/act", "requestStage": "Response"}])
            assert await by_click(page) == "cards"
            held = await asyncio.wait_for(page.paused.get(), 60)  # the engine took the move; its answer is held
            found = await page.wait_for(MY_TURN.format(after=first), 120, "the next turn while the answer is held")
            assert found != "ended", "the deal ended before the player's next turn"
            second = int(found)
            while await by_click(page) == "nothing":  # the turn moved on before the click: the next one
                found = await page.wait_for(MY_TURN.format(after=second), 120, "the next turn while the answer is held")
                assert found != "ended", "the deal ended before the player's next turn"
                second = int(found)
            try:
                sent = await asyncio.wait_for(page.paused.get(), 60)
            except TimeoutError:
                raise AssertionError(
                    f"the move at version {second} was never sent while the answer at {first} was on its way"
                ) from None
            for request in (held, sent):
                await page.send("Fetch.continueRequest", requestId=request["requestId"])
            await page.send("Fetch.disable")
            found = await page.wait_for(MY_TURN.format(after=second), MATCH_SECONDS, "a turn after the second move")
            assert found == "ended" or int(found) > second
            error = await page.evaluate("document.querySelector('[data-testid=error]')?.textContent ?? ''")
            assert not error, f"the late answer to the earlier move is not shown as the new turn's: {error}"
            made = await play_to_the_end(page, by_click)
            assert "Match over" in await page.evaluate("document.querySelector('[data-testid=result]').innerText")
            assert not page.errors, (page.errors, made)

    asyncio.run(body())


def test_a_deal_is_played_by_keyboard_alone_and_a_reload_takes_the_game_up(stack: dict[str, Any]) -> None:
    async def body() -> None:
        async with browser() as page:
            table = await sign_in_and_open(page, stack, "zlj", deals=1)
            await page.wait_for("document.querySelectorAll('[data-testid=hand] .card').length > 0", 120, "the hand")
            before = int(await page.wait_for(MY_TURN.format(after=-1), MATCH_SECONDS, "the player's turn"))
            held = await page.evaluate("document.querySelectorAll('[data-testid=hand] .card').length")
            seen = len(page.traffic)
            await page.goto(stack["web"] + "play#/")  # away, and back: the page takes the game up where it stands
            # the lobby drawn before going back (a change of the address's fragment is taken up after `goto`
            # returns: the turn looked for next must be the table drawn anew, not the one being left)
            await page.wait_for("!!document.querySelector('[data-testid=new-zlj]')", 30, "the lobby")
            await page.goto(f"{stack['web']}play#/table/{table}")
            again = int(await page.wait_for(MY_TURN.format(after=-1), 60, "the turn again after a reload"))
            assert again >= before
            if again == before:
                shown = await page.evaluate("document.querySelectorAll('[data-testid=hand] .card').length")
                assert shown == held, turns_told(page.traffic[seen:])
            made = await play_to_the_end(page, by_keyboard)
            assert made["cards"] > 0, made
            assert "Match over" in await page.evaluate("document.querySelector('[data-testid=result]').innerText")
            assert not page.errors, page.errors

    asyncio.run(body())


def test_a_tractor_deal_with_concealed_bids_and_follows_that_show_what_they_owe(stack: dict[str, Any]) -> None:
    async def body() -> None:
        async with browser() as page:
            await sign_in_and_open(page, stack, "tractor")
            await page.wait_for("document.querySelectorAll('[data-testid=seat]').length == 4", 120, "the table")
            kinds: Counter[str] = Counter()
            owed: list[str] = []
            after = -1
            for _ in range(400):  # until a deal's tricks are under way and one follow has shown what it owes
                found = await page.wait_for(MY_TURN.format(after=after), MATCH_SECONDS, "the player's turn")
                assert found != "ended"
                after = int(found)
                follow = await page.evaluate("document.querySelector('[data-testid=follow]')?.innerText || ''")
                if follow:
                    owed.append(follow)
                kinds.update(
                    await page.evaluate(
                        "[...document.querySelectorAll('[data-action]')].map(b => b.getAttribute('data-action'))"
                    )
                )
                done = str(await by_click(page))
                if done == "nothing":  # the turn moved on before the click: waited for again
                    after -= 1
                    continue
                kinds[done] += 1
                if owed and kinds["cards"] >= 4:
                    break
            assert owed and "You must follow" in owed[0], owed[:1]
            assert kinds["pass"] or kinds["make_bid"], f"a bid or a pass in the concealed bidding: {kinds}"
            await page.screenshot(shot("play-tractor.png"), 1200, 900)
            assert await turns_hold_only_the_players_hand(stack, page) > 5
            assert not page.errors, page.errors

    asyncio.run(body())


DEAL_OVER = "[...document.querySelectorAll('[data-testid=facts] dt')].some(d => d.textContent === 'Last deal')"
"""The page tells how the last deal ended: the match's first deal is over."""


def test_a_guest_queues_for_casual_zlj_and_plays_a_whole_deal_by_clicking(stack: dict[str, Any]) -> None:
    """The test of the page as a newcomer meets it: signed in as a guest, the queue (not "Play with bots") for a
    casual 砸六家 match with a bot wait of one second, the match the queue offers confirmed by the page, and the
    first deal played to its end by clicking."""

    async def body() -> None:
        async with browser() as page:
            await page.goto(stack["web"] + "play#/")
            await page.wait_for("!!document.querySelector('[data-testid=guest]')", 30, "the sign-in")
            await page.evaluate("document.querySelector('[data-testid=guest]').click()")
            await page.wait_for("!!document.querySelector('[data-testid=find-game]')", 30, "the queue")
            name = await page.evaluate("document.querySelector('[data-testid=name]').textContent")
            await page.evaluate(
                "for (const [id, value] of [['queue-game', 'zlj'], ['queue-mode', 'casual'], ['bot-wait', '1']]) {"
                " const field = document.querySelector(`[data-testid=${id}]`); field.value = value;"
                " field.dispatchEvent(new Event('change')); }"
                "document.querySelector('[data-testid=find-game]').click()"
            )
            await page.wait_for("location.hash.startsWith('#/table/')", 120, "the table the queue found")
            table = await page.evaluate("location.hash.slice('#/table/'.length)")
            await page.settle()
            events = [json.loads(t) for t in page.traffic if t.startswith("{")]
            offer = next(e for e in events if "offer_id" in e and "seats" in e)
            assert any(s["me"] and s["name"] == name for s in offer["seats"]), offer
            assert any(s["bot"] for s in offer["seats"]), "casual: bots fill the seats after the player's wait"
            assert {"table_id": table, "seat": offer["seat"]} in events, "found by the queue"
            await page.wait_for("document.querySelectorAll('[data-testid=hand] .card').length > 0", 120, "the hand")
            assert "Za Liu Jia" in await page.evaluate("document.querySelector('h1').textContent")
            made = await play_to_the_end(page, by_click, until=DEAL_OVER)
            assert made["cards"] > 0, made
            facts = await page.evaluate("document.querySelector('[data-testid=facts]').innerText")
            assert re.search(r"Last deal\s+.*points A [+-]\d+ · B [+-]\d+", facts), facts
            assert not page.errors, page.errors
            print(f"\nqueued deal: {sum(made.values())} moves by clicking ({dict(made)})")

    asyncio.run(body())


def test_make_runs_banner_names_the_play_page(stack: dict[str, Any]) -> None:
    url = f"{stack['web']}play"
    assert f"play in a browser at {url} " in stack["banner"], stack["banner"]
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.status == 200 and b"/play/play.js" in answer.read()


# --- the session --------------------------------------------------------------------------------------------------


def test_the_sign_in_cookie_is_httponly_secure_strict_and_sealed(stack: dict[str, Any]) -> None:
    status, body, header = post(stack["web"] + "api/session/guest", origin=origin(stack))
    assert status == 200 and set(body) == {"signed_in", "player_id", "name", "expires_at", "renew_at"}, body
    parts = [p.strip() for p in header.split(";")]
    assert parts[0].startswith(f"{COOKIE}=")
    assert {"HttpOnly", "Secure", "SameSite=Strict", "Path=/"} <= set(parts), header
    value = parts[0].split("=", 1)[1]
    session = sealer(stack).open(value)
    assert session is not None and session.player_id == body["player_id"]
    assert session.token not in json.dumps(body) and session.token not in value, "the token travels sealed only"
    assert get(stack["web"] + "api/me", value) == (200, body)


def test_a_changed_cookie_or_one_sealed_under_another_key_is_refused(stack: dict[str, Any]) -> None:
    value = guest_cookie(stack)
    flipped = value[:20] + ("A" if value[20] != "A" else "B") + value[21:]
    other = Sealer(b"\x01" * 32).seal(sealer(stack).open(value))  # type: ignore[arg-type]
    for bad in (flipped, other, value[:-4], "x" * 5000, "not-a-cookie"):
        assert get(stack["web"] + "api/me", bad)[1]["signed_in"] is False
        status, answer, _ = post(stack["web"] + "api/play/tables", {"game": "zlj"}, origin=origin(stack), cookie=bad)
        assert (status, answer["reason"]) == (401, "NOT_SIGNED_IN"), answer


def test_a_cross_site_request_is_refused_before_anything_is_called(stack: dict[str, Any]) -> None:
    value = guest_cookie(stack)
    before = get(stack["web"] + "healthz")[1]["upstream_calls"]
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {},
        {"Origin": origin(stack), "Sec-Fetch-Site": "cross-site"},
        {"Origin": origin(stack), "Sec-Fetch-Site": "same-site"},
        {"Origin": origin(stack).replace("127.0.0.1", "127.0.0.1.evil.example")},
    ):
        for path in (
            "api/session/guest",
            "api/play/tables",
            "api/session/logout",
            "api/play/act",
            "api/play/party",
            "api/play/party/invite",
            "api/play/party/accept",
            "api/play/party/leave",
            "api/play/queue/confirm",
            "api/play/queue/leave",
        ):
            status, answer, cookie = post(
                stack["web"] + path, {"game": "zlj", "bots": True}, cookie=value, headers=headers
            )
            assert (status, answer["reason"]) == (403, "CROSS_SITE"), (path, headers, answer)
            assert not cookie
    assert get(stack["web"] + "api/me", value)[1]["signed_in"], "the cross-site logout signed nobody out"
    after = get(stack["web"] + "healthz")[1]["upstream_calls"]
    assert after == before, "nothing was called for the refused requests"


def test_a_page_cannot_read_the_cookie_and_no_token_is_in_a_url_or_a_log(stack: dict[str, Any]) -> None:
    async def body() -> None:
        async with browser() as page:
            await sign_in_and_open(page, stack, "zlj", deals=1)
            await page.wait_for("document.querySelectorAll('[data-testid=hand] .card').length > 0", 120, "the hand")
            assert await page.evaluate("document.cookie") == "", "the cookie is HttpOnly"
            cookies = (await page.send("Network.getCookies"))["cookies"]
            found = next(c for c in cookies if c["name"] == COOKIE)
            assert found["httpOnly"] and found["secure"] and found["sameSite"] == "Strict"
            session = sealer(stack).open(found["value"])
            assert session is not None
            urls = await page.evaluate("[location.href, ...performance.getEntriesByType('resource').map(e => e.name)]")
            await page.settle()
            for text in [*urls, *page.traffic]:
                assert session.token not in text
            for log in (Path(stack["folder"]) / ".data" / "logs").glob("*.log"):
                assert session.token not in log.read_text(errors="replace"), f"the token is in {log.name}"

    asyncio.run(body())


def test_standing_up_ends_the_seat_token_the_browser_kept(stack: dict[str, Any]) -> None:
    """The game token a browser keeps for its moves (sealed in ``paiju_seat``) ends when its player stands up: a bot
    takes the seat over in the engine, which refuses the token from then on (``SEAT_LOST``), before it expires; the
    old cookie sent again with a move acts for nobody."""

    async def body() -> None:
        async with browser() as page:
            table = await sign_in_and_open(page, stack, "zlj", deals=1)
            await page.wait_for("document.querySelectorAll('[data-testid=hand] .card').length > 0", 120, "the hand")

            async def kept() -> dict[str, str] | None:
                sent = await page.send("Network.getCookies", urls=[stack["web"] + "api/play/act"])  # a move's
                found = {c["name"]: c["value"] for c in sent["cookies"]}
                return found if SEAT_COOKIE in found else None

            after = -1
            while (cookies := await kept()) is None:  # the player's first move (or the page's own, dealing fairly)
                found = await page.wait_for(MY_TURN.format(after=after), MATCH_SECONDS, "the player's turn")
                after = int(found)
                await by_click(page)
                await page.settle()  # the move's answer read: it sets the seat's cookie (else the next turn does)
            grant = sealer(stack).open_seat(cookies[SEAT_COOKIE])
            assert grant is not None and grant.table_id == table
            # the player's turn again: one of its moves is what the old cookie will try to make
            await page.wait_for(MY_TURN.format(after=after), MATCH_SECONDS, "the player's next turn")
            await page.settle()
            command = next(
                a["command"] for t in reversed(page.traffic) if '"to_act"' in t for a in json.loads(t)["actions"]
            )
            view = engine_pb2.GetViewRequest(game_id=grant.game_id)
            async with grpc.aio.insecure_channel(stack["engine"]) as channel:
                engine: Any = engine_pb2_grpc.EngineServiceStub(channel)
                assert await refusal_of(engine.GetView(view, metadata=grant.metadata)) == (grpc.StatusCode.OK, "")
                status, answer, _ = post(
                    f"{stack['web']}api/play/tables/{table}/leave", origin=origin(stack), cookie=cookies[COOKIE]
                )
                assert status == 200 and answer["table"]["my_seat"] is None, answer
                assert grant.expires_at > time.time() + 60, "long before the token would have expired"
                refused = await refusal_of(engine.GetView(view, metadata=grant.metadata))
                assert refused == (grpc.StatusCode.PERMISSION_DENIED, "SEAT_LOST"), refused
                move = json_format.ParseDict(command, engine_pb2.GameCommand())
                which = str(move.WhichOneof("command"))
                act = engine_pb2.ActRequest(game_id=grant.game_id, command_id="stood-up-1")
                getattr(act, which).CopyFrom(getattr(move, which))
                assert await refusal_of(engine.Act(act, metadata=grant.metadata)) == refused
            both = f"{COOKIE}={cookies[COOKIE]}; {SEAT_COOKIE}={cookies[SEAT_COOKIE]}"
            status, answer, _ = post(
                stack["web"] + "api/play/act",
                {"table_id": table, "version": None, "command": command},
                origin=origin(stack),
                headers={"Cookie": both},
            )
            assert (status, answer["reason"]) == (403, "NOT_SEATED"), answer

    asyncio.run(body())


def test_signing_out_clears_the_cookie_and_revokes_the_session(stack: dict[str, Any]) -> None:
    value = guest_cookie(stack)
    status, answer, header = post(stack["web"] + "api/session/logout", origin=origin(stack), cookie=value)
    assert status == 200 and answer["signed_in"] is False
    assert header.startswith(f'{COOKIE}=""') or "Max-Age=0" in header, header
    status, answer, _ = post(stack["web"] + "api/session/renew", origin=origin(stack), cookie=value)
    assert status == 401, answer


def test_register_and_log_in_through_the_lobby(stack: dict[str, Any]) -> None:
    name = f"webplayer{int(time.time() * 1000) % 10**9}"
    status, body, header = post(
        stack["web"] + "api/session/register", {"name": name, "password": "a long pass phrase 42"}, origin=origin(stack)
    )
    assert status == 200 and body["name"] == name and header, body
    status, body, header = post(
        stack["web"] + "api/session/login", {"name": name, "password": "a long pass phrase 42"}, origin=origin(stack)
    )
    assert status == 200 and body["name"] == name and header, body
    status, body, header = post(
        stack["web"] + "api/session/login", {"name": name, "password": "the wrong phrase 42"}, origin=origin(stack)
    )
    assert status == 401 and body["reason"] and not header, body


# --- hostile input ------------------------------------------------------------------------------------------------


def _cookie(stack: dict[str, Any]) -> str:
    """One guest's cookie for the module's hostile-input tests."""
    if "play_cookie" not in stack:
        stack["play_cookie"] = guest_cookie(stack)
    return str(stack["play_cookie"])


def _seated_table(stack: dict[str, Any]) -> str:
    """A table where that guest sits, its match of bots started: hostile commands reach the engine."""
    if "play_table" not in stack:
        status, answer, _ = post(
            stack["web"] + "api/play/tables", {"game": "zlj", "bots": True}, origin=origin(stack), cookie=_cookie(stack)
        )
        assert status == 200, answer
        stack["play_table"] = answer["table"]["table_id"]
    return str(stack["play_table"])


HOSTILE_BODIES = [
    b"",
    b"not json",
    b"[1, 2]",
    b'"text"',
    b"\xff\xfe",
    b'{"name": "a\\u0000b", "password": "p"}',
    json.dumps({"name": "x" * 5000, "password": "y"}).encode(),
    json.dumps({"game": "chess"}).encode(),
    json.dumps({"game": "zlj", "deals": -1}).encode(),
    json.dumps({"game": "zlj", "deals": True}).encode(),
    json.dumps({"game": "zlj", "bots": "yes"}).encode(),
    json.dumps({"seat": 99}).encode(),
    json.dumps({"name": ""}).encode(),
    json.dumps({"name": 5}).encode(),
    json.dumps({"name": "a\u0000b"}).encode(),
    json.dumps({"party_id": "party.*"}).encode(),
    json.dumps({"party_id": ["p"]}).encode(),
    json.dumps({"offer_id": ".."}).encode(),
    json.dumps({"offer_id": "x" * 5000}).encode(),
    json.dumps({"table_id": "..", "version": 1, "command": {}}).encode(),
    json.dumps({"table_id": "table.*", "version": 1, "command": {"zlj": {}}}).encode(),
    json.dumps({"table_id": "t", "version": -5, "command": {"zlj": {"pass": {"seat": 0}}}}).encode(),
    json.dumps(
        {"table_id": "t", "version": 1, "command": {"zlj": {"play": {"seat": 0, "cards": ["CARD_NOPE"]}}}}
    ).encode(),
    json.dumps({"table_id": "t", "version": 1, "command": {"nope": 1}}).encode(),
    json.dumps({"table_id": "t", "version": 1, "command": "pass"}).encode(),
    b'{"a":' * 2000 + b"1" + b"}" * 2000,
    b"x" * 40000,
]
NEW_POSTS = [
    "api/session/register",
    "api/session/login",
    "api/play/tables",
    "api/play/tables/no-such-table/sit",
    "api/play/tables/no-such-table/start",
    "api/play/tables/no-such-table/leave",
    "api/play/act",
    "api/play/party",
    "api/play/party/invite",
    "api/play/party/accept",
    "api/play/party/decline",
    "api/play/party/leave",
    "api/play/queue/confirm",
    "api/play/queue/leave",
]


@pytest.mark.parametrize("path", NEW_POSTS)
def test_hostile_bodies_are_refused_with_a_reason_never_a_server_error(stack: dict[str, Any], path: str) -> None:
    value = guest_cookie(stack)
    for raw in HOSTILE_BODIES:
        status, answer, _ = post(stack["web"] + path, raw, origin=origin(stack), cookie=value)
        assert 400 <= status < 500, (path, raw[:80], status, answer)
        assert answer.get("reason") and answer.get("message"), answer


@pytest.mark.parametrize(
    "path",
    [
        "api/play/tables/%2E%2E/live",
        "api/play/tables/" + "x" * 5000 + "/live",
        "api/play/tables/a%00b/sit",
        "api/play/tables/table.*/start",
        "api/play/tables/%3E/leave",
        "play/../../etc/passwd",
        "play/index.html",
    ],
)
def test_hostile_ids_on_the_play_routes_are_refused_with_a_reason(stack: dict[str, Any], path: str) -> None:
    value = guest_cookie(stack)
    method = post if not path.endswith(("/live", "passwd", ".html")) else None
    if method is None:
        status, answer = get(stack["web"] + path, value)
    else:
        status, answer, _ = post(stack["web"] + path, {}, origin=origin(stack), cookie=value)
    assert status in (400, 404), (status, answer)
    assert answer.get("reason") and answer.get("message"), answer


@given(
    route=st.sampled_from(["api/play/tables/{}/sit", "api/play/tables/{}/start", "api/play/tables/{}/leave"]),
    value=st.text(min_size=1, max_size=300),
)
@profile(40)
def test_any_text_in_place_of_a_table_is_answered_with_a_reason(stack: dict[str, Any], route: str, value: str) -> None:
    cookie = _cookie(stack)
    url = stack["web"] + route.format(urllib.parse.quote(value, safe=""))
    status, answer, _ = post(url, {}, origin=origin(stack), cookie=cookie)
    assert 400 <= status < 500, (status, answer, value)
    assert answer.get("reason") and answer.get("message"), answer


@given(
    command=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(
                st.sampled_from(["zlj", "tractor", "play", "pass", "seat", "cards", "x"]), children, max_size=4
            )
        ),
        max_leaves=12,
    )
)
@profile(40)
def test_any_command_is_answered_with_a_reason(stack: dict[str, Any], command: Any) -> None:
    cookie = _cookie(stack)
    body = {"table_id": _seated_table(stack), "version": 1, "command": command}
    status, answer, _ = post(stack["web"] + "api/play/act", body, origin=origin(stack), cookie=cookie)
    assert 400 <= status < 500, (status, answer, command)
    assert answer.get("reason") and answer.get("message"), answer


# --- parties and the queue ----------------------------------------------------------------------------------------


def queue_events(
    stack: dict[str, Any], cookie: str, query: str, confirm: bool = True, leave: bool = False
) -> list[tuple[str, Any]]:
    """Follow the queue as a browser's session does, without a page: the events of ``GET /api/play/queue`` until
    ``found`` or ``ended``, each offer confirmed (``POST /api/play/queue/confirm``); with ``leave``, leaving the
    queue (``POST /api/play/queue/leave``) once told the entry waits."""
    request = urllib.request.Request(
        f"{stack['web']}api/play/queue?{query}",
        headers={"Cookie": f"{COOKIE}={cookie}", "Sec-Fetch-Site": "same-origin"},
    )
    events: list[tuple[str, Any]] = []
    confirmed: set[str] = set()
    with urllib.request.urlopen(request, timeout=MATCH_SECONDS) as answer:
        assert answer.headers["Content-Type"].startswith("text/event-stream")
        event = ""
        for raw in answer:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                events.append((event, data))
                if event == "offer" and confirm and data["offer_id"] not in confirmed:
                    confirmed.add(data["offer_id"])
                    status, body, _ = post(
                        stack["web"] + "api/play/queue/confirm",
                        {"offer_id": data["offer_id"]},
                        origin=origin(stack),
                        cookie=cookie,
                    )
                    assert status == 200, body
                if event == "waiting" and leave:
                    leave = False
                    status, body, _ = post(
                        stack["web"] + "api/play/queue/leave", {}, origin=origin(stack), cookie=cookie
                    )
                    assert (status, body) == (200, {"queued": False}), body
                if event in ("found", "ended", "trouble"):
                    break
    return events


def test_a_player_waits_in_the_queue_and_leaves_it_and_an_invite_is_declined(stack: dict[str, Any]) -> None:
    alone = guest_cookie(stack)
    events = queue_events(stack, alone, "game=tractor&mode=ranked&bot_wait=0", leave=True)
    assert events[0][0] == "waiting" and events[0][1]["players"], events
    assert events[-1] == ("ended", {"message": "you (or your party's leader) left the queue"}), events
    leader, invited = guest_cookie(stack), guest_cookie(stack)
    name = get(stack["web"] + "api/me", invited)[1]["name"]
    post(stack["web"] + "api/play/party", {"game": "zlj"}, origin=origin(stack), cookie=leader)
    status, found, _ = post(stack["web"] + "api/play/party/invite", {"name": name}, origin=origin(stack), cookie=leader)
    assert status == 200 and [m["name"] for m in found["party"]["invited"]] == [name], found
    [invite] = get(stack["web"] + "api/play/party", invited)[1]["invites"]
    status, found, _ = post(
        stack["web"] + "api/play/party/decline", {"party_id": invite["party_id"]}, origin=origin(stack), cookie=invited
    )
    assert status == 200 and found == {"party": None, "invites": []}, found
    assert get(stack["web"] + "api/play/party", leader)[1]["party"]["invited"] == []


def test_two_players_form_a_party_queue_for_casual_zlj_and_sit_as_partners_with_bots(stack: dict[str, Any]) -> None:
    """A player on the page forms a party and invites another (a browser's session used directly: its own cookie)
    by name; the other accepts; the leader queues for casual 砸六家 with a bot wait of one second; both confirm the
    offer (the page by itself); they sit at one table in one team's alternating seats, bots in the other four."""

    async def body() -> None:
        friend = guest_cookie(stack)
        friend_name = get(stack["web"] + "api/me", friend)[1]["name"]
        async with browser() as page:
            await page.goto(stack["web"] + "play#/")
            await page.wait_for("!!document.querySelector('[data-testid=guest]')", 30, "the sign-in")
            await page.evaluate("document.querySelector('[data-testid=guest]').click()")
            await page.wait_for("!!document.querySelector('[data-testid=new-party]')", 30, "the party panel")
            leader = await page.evaluate("document.querySelector('[data-testid=name]').textContent")
            await page.evaluate("document.querySelector('[data-testid=new-party]').click()")
            await page.wait_for("!!document.querySelector('[data-testid=invitee]')", 30, "the party formed")
            await page.evaluate(
                f"document.querySelector('[data-testid=invitee]').value = {json.dumps(friend_name)};"
                "document.querySelector('[data-testid=invite]').requestSubmit()"
            )
            await page.wait_for(
                "document.querySelector('[data-testid=party]').textContent"
                f".includes('invited: ' + {json.dumps(friend_name)})",
                30,
                "the invite shown",
            )
            status, found = get(stack["web"] + "api/play/party", friend)
            assert status == 200 and found["party"] is None, found
            [invite] = found["invites"]
            assert (invite["leader_name"], invite["game"]) == (leader, "zlj"), invite
            status, found, _ = post(
                stack["web"] + "api/play/party/accept",
                {"party_id": invite["party_id"]},
                origin=origin(stack),
                cookie=friend,
            )
            assert status == 200 and [m["name"] for m in found["party"]["members"]] == [leader, friend_name], found
            assert found["party"]["leader"] is False and found["invites"] == []
            await page.evaluate("document.querySelector('[data-testid=refresh-party]').click()")
            await page.wait_for(
                f"!document.querySelector('[data-testid=party]')?.textContent.includes('invited') && "
                f"document.querySelector('[data-testid=party]').textContent.includes({json.dumps(friend_name)})",
                30,
                "the friend in the party",
            )
            await page.screenshot(shot("play-party.png"), 1200, 900)
            shown = await page.evaluate("document.querySelector('[data-testid=matchmaking]').innerText")
            assert "null" not in shown and "undefined" not in shown, shown
            # the member follows the party's entry first; then the leader queues on the page
            following = asyncio.create_task(
                asyncio.to_thread(queue_events, stack, friend, "game=zlj&mode=casual&bot_wait=1")
            )
            await page.evaluate(
                "const wait = document.querySelector('[data-testid=bot-wait]'); wait.value = 1;"
                "wait.dispatchEvent(new Event('change')); document.querySelector('[data-testid=find-game]').click()"
            )
            await page.wait_for("location.hash.startsWith('#/table/')", 120, "the page at the table")
            table = await page.evaluate("location.hash.slice('#/table/'.length)")
            events = await asyncio.wait_for(following, 120)
            kinds = [kind for kind, _ in events]
            assert "offer" in kinds and kinds[-1] == "found", events
            offer = next(data for kind, data in events if kind == "offer")
            assert [s["bot"] for s in offer["seats"]].count(True) == 4, offer
            friend_seat = events[-1][1]["seat"]
            assert events[-1][1]["table_id"] == table
            leader_seat = next(i for i, s in enumerate(offer["seats"]) if s["name"] == leader)
            assert leader_seat % 2 == friend_seat % 2 and leader_seat != friend_seat, "partners: one team (D-MM-9)"
            await page.wait_for("document.querySelectorAll('[data-testid=hand] .card').length > 0", 120, "the hand")
            names = await page.evaluate("[...document.querySelectorAll('[data-testid=seat]')].map(s => s.textContent)")
            assert len(names) == 6 and any(friend_name in n for n in names), names
            assert not page.errors, page.errors

    asyncio.run(body())


@pytest.mark.parametrize(
    ("query", "headers"),
    [
        ("game=chess&mode=casual", {}),
        ("mode=casual", {}),
        ("game=zlj&mode=nope", {}),
        ("game=zlj&mode=casual&bot_wait=-1", {}),
        ("game=zlj&mode=casual&bot_wait=601", {}),
        ("game=zlj&mode=casual&bot_wait=99999999999999999999", {}),
        ("game=zlj&mode=casual&bot_wait=%00", {}),
        ("game=zlj&mode=casual&bot_wait=%D9%A3", {}),
        ("game=zlj&mode=ranked&bot_wait=5", {}),
        ("game=" + "x" * 5000, {}),
        ("game=zlj&mode=casual", {"Sec-Fetch-Site": "cross-site"}),
    ],
)
def test_hostile_queue_requests_are_refused_with_a_reason(stack: dict[str, Any], query: str, headers: Any) -> None:
    before = get(stack["web"] + "healthz")[1]["upstream_calls"].get("player FindMatch", 0)
    request = urllib.request.Request(
        f"{stack['web']}api/play/queue?{query}", headers={"Cookie": f"{COOKIE}={_cookie(stack)}", **headers}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    answer = json.loads(refused.value.read())
    assert refused.value.code in (400, 403), (refused.value.code, answer)
    assert answer.get("reason") and answer.get("message"), answer
    assert get(stack["web"] + "healthz")[1]["upstream_calls"].get("player FindMatch", 0) == before, "nobody queued"


def test_the_queue_refuses_a_member_queueing_alone_and_answers_nobody_signed_in(stack: dict[str, Any]) -> None:
    status, answer = get(stack["web"] + "api/play/queue?game=zlj&mode=casual")
    assert (status, answer["reason"]) == (401, "NOT_SIGNED_IN"), answer
    status, answer = get(stack["web"] + "api/play/party")
    assert (status, answer["reason"]) == (401, "NOT_SIGNED_IN"), answer
    # a party of a player not registered, and an invite to nobody: refused by the lobby with its reasons
    cookie = guest_cookie(stack)
    status, answer, _ = post(stack["web"] + "api/play/party", {"game": "tractor"}, origin=origin(stack), cookie=cookie)
    assert status == 200 and answer["party"]["leader"] and answer["party"]["game"] == "tractor", answer
    status, answer, _ = post(
        stack["web"] + "api/play/party/invite", {"name": "nobody-by-this-name"}, origin=origin(stack), cookie=cookie
    )
    assert 400 <= status < 500 and answer["reason"] == "PLAYER_NOT_FOUND", answer
    status, answer, _ = post(stack["web"] + "api/play/party/leave", {}, origin=origin(stack), cookie=cookie)
    assert status == 200 and answer["party"] is None, answer


@given(
    route=st.sampled_from(
        [
            ("api/play/party/invite", "name"),
            ("api/play/party/accept", "party_id"),
            ("api/play/party/decline", "party_id"),
            ("api/play/queue/confirm", "offer_id"),
        ]
    ),
    value=st.text(min_size=0, max_size=300),
)
@profile(40)
def test_any_text_as_a_name_or_an_id_of_the_queue_is_answered_with_a_reason(
    stack: dict[str, Any], route: tuple[str, str], value: str
) -> None:
    path, field = route
    status, answer, _ = post(stack["web"] + path, {field: value}, origin=origin(stack), cookie=_cookie(stack))
    assert 400 <= status < 500, (status, answer, value)
    assert answer.get("reason") and answer.get("message"), answer
