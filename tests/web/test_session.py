"""A browser's sealed sign-in without a stack: a sealed session opens only unchanged, under its own key and before it
expires; the key file's forms; which requests count as coming from the page itself; how much of a body is read."""

from __future__ import annotations

import asyncio
import base64
import json
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paiju.tools.web.config import session_key
from paiju.tools.web.session import (
    BadBody,
    BrowserSession,
    Sealer,
    SeatGrant,
    json_body,
    new_key_text,
    same_origin,
)

pytestmark = pytest.mark.unit

KEY = bytes(range(32))
SESSION = BrowserSession("header.payload.signature", "account-1", "alice", 2_000_000_000)


def test_a_sealed_session_opens_as_it_was() -> None:
    sealed = Sealer(KEY).seal(SESSION)
    assert Sealer(KEY).open(sealed, now=1_900_000_000) == SESSION
    assert SESSION.token not in sealed and "alice" not in sealed, "sealed, not merely encoded"
    assert Sealer(KEY).seal(SESSION) != sealed, "a fresh nonce each time"


def test_the_page_is_never_told_the_token() -> None:
    assert "header.payload.signature" not in json.dumps(SESSION.public())


@given(position=st.integers(min_value=0), bit=st.integers(min_value=0, max_value=7))
def test_a_session_changed_anywhere_does_not_open(position: int, bit: int) -> None:
    sealed = Sealer(KEY).seal(SESSION)
    raw = bytearray(base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4)))
    raw[position % len(raw)] ^= 1 << bit
    changed = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    assert Sealer(KEY).open(changed, now=1_900_000_000) is None


def test_a_session_sealed_under_another_key_or_expired_does_not_open() -> None:
    sealed = Sealer(KEY).seal(SESSION)
    assert Sealer(bytes(32)).open(sealed, now=1_900_000_000) is None
    assert Sealer(KEY).open(sealed, now=SESSION.expires_at) is None
    assert Sealer(KEY).open(sealed, now=SESSION.expires_at + 1) is None


SEAT = SeatGrant("game.token.signature", "account-1", "table-1", "game-1", 1, 3, 2_000_000_000)


def test_a_sealed_seat_opens_as_it_was_and_never_as_a_session() -> None:
    sealed = Sealer(KEY).seal_seat(SEAT)
    assert Sealer(KEY).open_seat(sealed, now=1_900_000_000) == SEAT
    assert SEAT.token not in sealed and "table-1" not in sealed, "sealed, not merely encoded"
    assert Sealer(KEY).open(sealed, now=1_900_000_000) is None, "a seat is no session"
    assert Sealer(KEY).open_seat(Sealer(KEY).seal(SESSION), now=1_900_000_000) is None, "a session is no seat"
    assert Sealer(bytes(32)).open_seat(sealed, now=1_900_000_000) is None
    assert Sealer(KEY).open_seat(sealed, now=SEAT.expires_at) is None


@given(position=st.integers(min_value=0), bit=st.integers(min_value=0, max_value=7))
def test_a_seat_changed_anywhere_does_not_open(position: int, bit: int) -> None:
    sealed = Sealer(KEY).seal_seat(SEAT)
    raw = bytearray(base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4)))
    raw[position % len(raw)] ^= 1 << bit
    changed = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    assert Sealer(KEY).open_seat(changed, now=1_900_000_000) is None


@pytest.mark.parametrize("value", ["", "a", "=" * 10, "é" * 40, "A" * 5000, "\x00" * 30, "not base64!", "AAAA"])
def test_what_is_not_a_sealed_seat_opens_as_nothing(value: str) -> None:
    assert Sealer(KEY).open_seat(value) is None


@pytest.mark.parametrize("value", ["", "a", "=" * 10, "é" * 40, "A" * 5000, "\x00" * 30, "not base64!", "AAAA"])
def test_what_is_not_a_sealed_session_opens_as_nothing(value: str) -> None:
    assert Sealer(KEY).open(value) is None


def test_the_key_file_holds_32_bytes_in_base64_or_hexadecimal() -> None:
    text = new_key_text()
    assert len(session_key(text)) == 32
    assert session_key(text + "\n") == session_key(text)
    assert session_key(KEY.hex()) == KEY
    assert session_key(base64.b64encode(KEY).decode()) == KEY, "openssl rand -base64 32 makes one too"
    assert session_key("") == b""
    for bad in (
        "short",
        base64.b64encode(bytes(16)).decode(),
        "zz" * 32,
        base64.b64encode(bytes(24)).decode(),
        "g" * 64,
    ):
        with pytest.raises(ValueError):
            session_key(bad)
    with pytest.raises(ValueError):
        Sealer(bytes(16))


def request(headers: dict[str, str], host: str = "play.example:8080") -> Any:
    return SimpleNamespace(headers=headers, host=host)


def test_only_the_pages_own_requests_count_as_same_origin() -> None:
    own = "https://play.example:8080"
    assert same_origin(request({"Origin": own}))
    assert same_origin(request({"Origin": own, "Sec-Fetch-Site": "same-origin"}))
    assert same_origin(request({"Origin": "http://PLAY.example:8080"}))
    for headers in (
        {},
        {"Origin": "null"},
        {"Origin": "https://evil.example"},
        {"Origin": "https://play.example"},
        {"Origin": "https://play.example:8080.evil.example"},
        {"Origin": "javascript:alert(1)"},
        {"Origin": own, "Sec-Fetch-Site": "cross-site"},
        {"Origin": own, "Sec-Fetch-Site": "same-site"},
        {"Origin": own, "Sec-Fetch-Site": "none"},
        {"Sec-Fetch-Site": "same-origin"},
    ):
        assert not same_origin(request(headers)), headers


class Body:
    """A request's body, read as aiohttp's stream is read."""

    def __init__(self, raw: bytes, declared: int | None = None) -> None:
        self.content_length = declared
        self.content = self
        self._raw = raw

    async def read(self, n: int) -> bytes:
        return self._raw[:n]


@pytest.mark.parametrize(
    ("raw", "declared"),
    [(b"x" * 5000, None), (b"{}", 10**9), (b"[]", None), (b"\xff", None), (b"{" * 3000, None), (b"1", None)],
)
def test_a_body_that_is_not_a_small_json_object_is_refused(raw: bytes, declared: int | None) -> None:
    with pytest.raises(BadBody):
        asyncio.run(json_body(Body(raw, declared)))  # type: ignore[arg-type]


def test_a_small_json_object_is_read() -> None:
    assert asyncio.run(json_body(Body(b'{"name": "alice"}'))) == {"name": "alice"}  # type: ignore[arg-type]
    assert asyncio.run(json_body(Body(b""))) == {}  # type: ignore[arg-type]
