"""The browser's address reaches the lobby, believed from the web view's own identity alone: eleven browsers at eleven
addresses sign in as guests through one web view and the lobby's limit of 10 guests a minute per address refuses
none of them, while one address signing in eleven times is refused the eleventh; a caller that is not the web view
naming an address in the same metadata is counted by its own; and what the metadata holds is hostile input, refused
with a reason (from the web view) or ignored (from anyone else), never an internal error. Against a real lobby on
real NATS and PostgreSQL, and the web view's gateway on a socket."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import aiohttp
import grpc
import pytest
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from paiju.lobby.service import RATE_LIMITS
from paiju.platform.edge import CLIENT_ADDRESS, FORWARDER, forwarded_peer
from paiju.platform.errors import Reason, Refused
from paiju.platform.limits import RateLimits, address_of
from paiju.platform.tokens import Identity, Role, Signer
from paiju.tools.web.config import LIMITS
from paiju.tools.web.gateway import Gateway, trusted_proxies
from paiju.tools.web.session import Voucher
from paiju.tools.web.upstream import Upstream
from paiju.v1 import lobby_pb2

from ..lobby_service.stack import Stack, stack
from ..lobby_service.test_rate_limits import details
from ..support.credentials import WEB, mint_token

KEY = bytes(range(32))
GUESTS = "Guest:address=10/minute"
"""The lobby's own limit on guests (`paiju.lobby.service.RATE_LIMITS`), which these tests hold it to."""
assert GUESTS in RATE_LIMITS, "the lobby's default"


@contextlib.asynccontextmanager
async def web_view(s: Stack, signer: Signer | None = WEB) -> AsyncIterator[str]:
    """The web view's gateway in front of the stack's lobby, on a socket of 127.0.0.1, its own limits off; its
    address (``http://127.0.0.1:PORT/``)."""
    gateway = Gateway(
        Upstream(s.lobby_address, s.engine_address, s.engine_address),
        RateLimits(LIMITS, "off"),
        session_key=KEY,
        signer=signer,
    )
    runner = web.AppRunner(gateway.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        await runner.cleanup()


async def guest_from(url: str, address: str) -> tuple[int, dict[str, Any]]:
    """A browser at ``address`` (its socket bound there: any 127.x address is this machine's) signs in as a guest on
    the page: the answer's status and body."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    async with aiohttp.ClientSession(connector=connector) as client:
        headers = {"Origin": url.rstrip("/"), "Sec-Fetch-Site": "same-origin"}
        async with client.post(url + "api/session/guest", headers=headers, json={}) as answer:
            return answer.status, await answer.json()


def run(nats_url: str, database_dsn: str, body: Any, limits: str = GUESTS) -> None:
    async def main() -> None:
        async with stack(nats_url, database_dsn, limits=limits) as s:
            await body(s)

    asyncio.run(main())


def test_eleven_browsers_sign_in_through_one_web_view_and_one_address_is_refused_its_eleventh(
    nats_url: str, database_dsn: str
) -> None:
    async def body(s: Stack) -> None:
        async with web_view(s) as url:
            browsers = [f"127.0.0.{n}" for n in range(2, 13)]
            answers = [await guest_from(url, address) for address in browsers]
            assert [status for status, _ in answers] == [200] * 11, answers
            assert len({answer["player_id"] for _, answer in answers}) == 11
            # one browser's address signing in eleven times meets the lobby's limit, said as the lobby says it
            one = [await guest_from(url, "127.0.0.20") for _ in range(11)]
            assert [status for status, _ in one] == [200] * 10 + [429], one
            assert one[-1][1]["reason"] == "RATE_LIMITED" and "Guest" in one[-1][1]["message"], one[-1]
            # and the others are not held to its count
            assert (await guest_from(url, "127.0.0.2"))[0] == 200

    run(nats_url, database_dsn, body)


def test_without_its_key_the_web_view_names_no_address_and_its_browsers_share_its_count(
    nats_url: str, database_dsn: str
) -> None:
    async def body(s: Stack) -> None:
        async with web_view(s, signer=None) as url:
            answers = [await guest_from(url, f"127.0.0.{n}") for n in range(2, 13)]
            assert [status for status, _ in answers] == [200] * 10 + [429], answers

    run(nats_url, database_dsn, body)


def web_token(signer: Signer = WEB, role: Role = Role.WEB, seconds: int = 300, audience: str = "lobby") -> str:
    now = int(time.time())
    return signer.mint(Identity("web", role, expires=now + seconds, issued=now, audience=(audience,)))


async def guest(s: Stack, metadata: tuple[tuple[str, str], ...]) -> tuple[grpc.StatusCode, str, Any]:
    """A Guest call to the lobby with ``metadata``: its code, its reason and its error (or ``None``)."""
    try:
        await s.lobby.Guest(lobby_pb2.GuestRequest(), metadata=metadata)
    except grpc.aio.AioRpcError as e:
        infos = [d for d in details(e) if hasattr(d, "reason")]
        return e.code(), infos[0].reason if infos else "", e
    return grpc.StatusCode.OK, "", None


def test_an_address_named_by_anyone_but_the_web_view_is_ignored(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        now = int(time.time())
        session = (await s.lobby.Guest(lobby_pb2.GuestRequest())).session.token  # 1 of 127.0.0.1's 10
        stranger = Signer(Ed25519PrivateKey.generate(), "web.1")  # a web key the lobby does not trust
        forgeries = [
            (),  # the address alone
            ((FORWARDER, f"Bearer {session}"),),  # a player's session as the voucher
            ((FORWARDER, f"Bearer {mint_token(Identity('r', Role.BOT_RUNNER, expires=now + 60, issued=now))}"),),
            ((FORWARDER, f"Bearer {mint_token(Identity('ops', Role.ADMIN, expires=now + 60, issued=now))}"),),
            ((FORWARDER, f"Bearer {web_token(stranger)}"),),
            ((FORWARDER, "Bearer not-a-token"),),
            ((FORWARDER, web_token()),),  # no "Bearer "
            ((FORWARDER, f"Bearer {web_token(audience='engine')}"),),
            (("authorization", f"Bearer {web_token()}"),),  # the web view's token, but not as the voucher
        ]
        for n, forged in enumerate(forgeries):
            metadata = ((CLIENT_ADDRESS, f"198.51.100.{n + 1}"), *forged)
            assert (await guest(s, metadata))[:2] == (grpc.StatusCode.OK, ""), forged
        code, reason, error = await guest(s, ((CLIENT_ADDRESS, "198.51.100.99"),))
        assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
        quota = next(d for d in details(error) if hasattr(d, "violations"))
        assert quota.violations[0].subject == "address:127.0.0.1", "counted by its own address"
        # the same call vouched for by the web view counts the address it names
        vouched = ((CLIENT_ADDRESS, "198.51.100.99"), (FORWARDER, f"Bearer {web_token()}"))
        assert (await guest(s, vouched))[:2] == (grpc.StatusCode.OK, "")
        # an expired voucher is no voucher
        stale = ((CLIENT_ADDRESS, "198.51.100.98"), (FORWARDER, f"Bearer {web_token(seconds=-10)}"))
        assert (await guest(s, stale))[:2] == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")

    run(nats_url, database_dsn, body)


HOSTILE = [
    "",
    "garbage",
    "1.2.3.4, 5.6.7.8",
    "1.2.3.4:80",
    "[::1]:80",
    "fe80::1%eth0",
    "999.1.1.1",
    " 1.2.3.4",
    "x" * 5000,
    "1" * 46,
    "ipv4:1.2.3.4:5",
    "é",
    "1.2.3.4\x00",
    "\x00" * 100,
    "1.2.3.4\r\n5.6.7.8",
]
UNSENDABLE = 4
"""Of `HOSTILE`, the values gRPC's client will not send (a letter not ASCII, a NUL, a line break)."""


def test_hostile_addresses_are_refused_from_the_web_view_and_ignored_from_anyone_else(
    nats_url: str, database_dsn: str
) -> None:
    async def sent(s: Stack, metadata: tuple[tuple[str, str], ...]) -> tuple[grpc.StatusCode, str, Any] | None:
        """`guest`, or ``None`` when gRPC's client refuses to send the metadata (a NUL, a line break, a letter
        that is not ASCII is no metadata value): then nothing reached the lobby."""
        try:
            return await guest(s, metadata)
        except grpc.aio.AioRpcError:
            raise
        except Exception as e:  # the client's own refusal, before anything is sent
            assert "execute_batch" in str(e) or isinstance(e, ValueError), e
            return None

    async def body(s: Stack) -> None:
        voucher = (FORWARDER, f"Bearer {web_token()}")
        unsent = 0
        for value in HOSTILE:
            answer = await sent(s, ((CLIENT_ADDRESS, value), voucher))
            if answer is None:
                unsent += 1
                continue
            code, reason, error = answer
            assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST"), (value[:50], code)
            assert CLIENT_ADDRESS in error.details(), error.details()
        assert unsent <= UNSENDABLE, "the values gRPC sends all reached the lobby and were refused"
        # from a caller that is not the web view, the same values change nothing (within 127.0.0.1's 10 guests)
        for value in HOSTILE[:9]:
            answer = await sent(s, ((CLIENT_ADDRESS, value),))
            assert answer is None or answer[:2] == (grpc.StatusCode.OK, ""), (value[:50], answer)
        # an IPv4 address written as IPv6 is that IPv4 address
        mapped = ((CLIENT_ADDRESS, "::ffff:203.0.113.5"), voucher)
        plain = ((CLIENT_ADDRESS, "203.0.113.5"), voucher)
        answers = [await guest(s, mapped if n % 2 else plain) for n in range(11)]
        assert [a[1] for a in answers] == [""] * 10 + ["RATE_LIMITED"], answers

    run(nats_url, database_dsn, body, limits="Guest:address=10/minute")


@pytest.mark.unit
def test_what_the_lobby_takes_as_an_address() -> None:
    assert forwarded_peer("203.0.113.7") == "ipv4:203.0.113.7:0"
    assert forwarded_peer("::ffff:203.0.113.7") == "ipv4:203.0.113.7:0"
    assert forwarded_peer("2001:DB8::1") == "ipv6:[2001:db8::1]:0"
    assert address_of(forwarded_peer("2001:db8::1")) == "2001:db8::1"
    for value in ("1.2.3.4\x00", "\x00", "1.2.3.4\n", "fe80::1%eth0", "x" * 5000, None, b"1.2.3.4", 7):
        with pytest.raises(Refused) as refused:
            forwarded_peer(value)
        assert refused.value.reason is Reason.INVALID_REQUEST and refused.value.metadata["field"] == CLIENT_ADDRESS


@pytest.mark.unit
@given(st.text(max_size=60))
def test_any_text_is_one_address_or_refused_with_a_reason(value: str) -> None:
    try:
        found = forwarded_peer(value)
    except Refused as e:
        assert e.reason is Reason.INVALID_REQUEST
        return
    assert address_of(found) and ":" in found and found.startswith(("ipv4:", "ipv6:["))


@pytest.mark.unit
def test_the_browsers_address_is_its_sockets_unless_a_trusted_proxy_names_it() -> None:
    def request(remote: str, forwarded: str = "") -> Any:
        return SimpleNamespace(remote=remote, headers={"X-Forwarded-For": forwarded} if forwarded else {})

    async def body() -> None:  # the gateway's channels are made on a running loop
        limits = RateLimits(LIMITS, "off")
        upstream = Upstream("127.0.0.1:1", "127.0.0.1:1", "127.0.0.1:1")
        alone = Gateway(upstream, limits)
        assert alone.browser_address(request("203.0.113.7")) == "203.0.113.7"
        assert alone.browser_address(request("10.0.0.5", "198.51.100.1")) == "10.0.0.5", "no proxy trusted by default"
        assert alone.browser_address(request("fe80::1%eth0")) == "fe80::1"
        proxied = Gateway(upstream, limits, trusted_proxies("10.0.0.0/8"))
        assert proxied.browser_address(request("10.0.0.5", "198.51.100.1, 10.0.0.9")) == "198.51.100.1"
        assert proxied.browser_address(request("203.0.113.7", "198.51.100.1")) == "203.0.113.7", "not from a proxy"
        assert proxied.browser_address(request("10.0.0.5", "unknown")) == "10.0.0.5", "not an address: not it"
        await upstream.close()

    asyncio.run(body())


@pytest.mark.unit
def test_the_voucher_is_the_web_views_token_renewed_before_it_expires() -> None:
    clock = [1_900_000_000.0]
    voucher = Voucher(WEB, now=lambda: clock[0])
    first = dict(voucher.metadata("198.51.100.1"))
    assert first[CLIENT_ADDRESS] == "198.51.100.1" and first[FORWARDER].startswith("Bearer ")
    assert dict(voucher.metadata("198.51.100.2"))[FORWARDER] == first[FORWARDER], "one token for every browser"
    clock[0] += 250
    assert dict(voucher.metadata("198.51.100.1"))[FORWARDER] != first[FORWARDER], "minted afresh before it expires"
    assert voucher.metadata("") == () and Voucher(None).metadata("198.51.100.1") == ()
    with pytest.raises(ValueError):
        Voucher(Signer(Ed25519PrivateKey.generate(), "lobby.1"))  # the web view is given no other issuer's key
