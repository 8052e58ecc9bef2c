"""A browser's own sign-in to the lobby, held by the browser: the lobby's session (its token, player, name, expiry)
sealed with AES-GCM under the web view's session key (``PAIJU_WEB_SESSION_KEY_FILE``) into one cookie that is
``HttpOnly`` (no script reads it), ``Secure`` (sent over HTTPS only; browsers count ``http://localhost`` and
``http://127.0.0.1`` as secure, so `make run`'s page works over plain HTTP on this machine) and ``SameSite=Strict``
(never sent with a request another site starts). The gateway keeps no session of its own: any replica holding the
key opens any browser's cookie, so web replicas scale without sharing anything.

Every request that changes something (``POST``) must come from the page itself: its ``Sec-Fetch-Site`` must be
``same-origin`` when the browser sends one, and its ``Origin`` must name this server (`same_origin`); a cross-site
form or script is refused (403, ``CROSS_SITE``) before anything is called. No token is put in a URL, in a page's
answer or in a log: the page learns who it is signed in as (`GET /api/me`), never its token.

Every lobby call made for a browser — its sign-in, and every call with its session — carries the browser's address
(`paiju.platform.edge.CLIENT_ADDRESS`: the connection's, or the one a trusted proxy names in ``X-Forwarded-For``),
vouched for by the web view's own token (role web, `Voucher`), so that the lobby's per-address limits (10 ``Guest``
a minute and so on) count each browser and not the web view that all of them share. Without the web view's key the
address is not sent, and the lobby counts the web view's.

Routes (`add_routes`):

- ``GET /api/me``: who the browser is signed in as (``signed_in`` false without a valid cookie);
- ``POST /api/session/guest``, ``/register`` (``{"name", "password"}``), ``/login`` (the same): sign in with the
  lobby's ``Guest``, ``Register`` or ``Login`` and set the cookie;
- ``POST /api/session/renew``: a fresh session (the lobby's ``RenewSession``) before the one held expires;
- ``POST /api/session/logout``: the lobby's ``Logout`` (every session of the account is revoked) and the cookie
  cleared.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import grpc
from aiohttp import web
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from paiju.platform.edge import CLIENT_ADDRESS, FORWARDER
from paiju.platform.tokens import SERVICE_TOKEN_SECONDS, Audience, Identity, Issuer, Role, Signer
from paiju.v1 import lobby_pb2

COOKIE = "paiju_session"
"""The cookie that holds a browser's sealed session."""
KEY_BYTES = 32
"""AES-256-GCM."""
NONCE_BYTES = 12
AAD = b"paiju-web-session.1"
"""Bound to every sealed cookie: a value sealed for anything else does not open as a session."""
MAX_COOKIE_CHARS = 4000
"""A cookie longer than this is not even decoded (a browser keeps 4096 bytes a cookie at most)."""
MAX_BODY_BYTES = 4096
"""A sign-in's JSON body (a name and a password) is at most this long."""
CALL_SECONDS = 10.0
RENEW_BEFORE_SECONDS = 120
"""The page renews its session this long before it expires (`GET /api/me` says when)."""


def new_key_text() -> str:
    """A fresh session key, as its file holds it (URL-safe base64 of 32 random bytes)."""
    return base64.urlsafe_b64encode(os.urandom(KEY_BYTES)).decode().rstrip("=")


@dataclass(frozen=True, slots=True)
class BrowserSession:
    """A browser's sign-in as its cookie holds it."""

    token: str
    player_id: str
    name: str
    expires_at: int
    address: str = field(default="", compare=False)
    """The browser's address in the request being answered (never sealed: each request has its own)."""

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)

    def public(self) -> dict[str, Any]:
        """What the page may know of it (never the token)."""
        return {
            "signed_in": True,
            "player_id": self.player_id,
            "name": self.name,
            "expires_at": self.expires_at,
            "renew_at": self.expires_at - RENEW_BEFORE_SECONDS,
        }


class Sealer:
    """Seals sessions into cookie values and opens them (AES-256-GCM, a random nonce each, `AAD` bound): a value
    changed by one bit, sealed under another key or expired opens as nothing."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"the session key must be {KEY_BYTES} bytes")
        self._aead = AESGCM(key)

    def seal(self, session: BrowserSession) -> str:
        return self._seal({"t": session.token, "p": session.player_id, "n": session.name, "e": session.expires_at}, AAD)

    def _seal(self, fields: dict[str, Any], aad: bytes) -> str:
        nonce = os.urandom(NONCE_BYTES)
        plain = json.dumps(fields, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(nonce + self._aead.encrypt(nonce, plain, aad)).decode().rstrip("=")

    def _open(self, value: str, aad: bytes) -> Any:
        if not value or len(value) > MAX_COOKIE_CHARS or not value.isascii():
            return None
        try:
            raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        except (ValueError, binascii.Error):
            return None
        if len(raw) <= NONCE_BYTES:
            return None
        try:
            return json.loads(self._aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], aad))
        except (InvalidTag, ValueError):
            return None

    def seal_seat(self, grant: SeatGrant) -> str:
        g = grant
        fields = {"t": g.token, "p": g.player_id, "b": g.table_id, "g": g.game_id, "k": g.game, "s": g.seat}
        return self._seal({**fields, "e": g.expires_at}, SEAT_AAD)

    def open_seat(self, value: str, now: float | None = None) -> SeatGrant | None:
        """The seat sealed in ``value``; ``None`` when it is not one of ours, was changed, or has expired."""
        found = self._open(value, SEAT_AAD)
        try:
            f = found
            grant = SeatGrant(str(f["t"]), str(f["p"]), str(f["b"]), str(f["g"]), int(f["k"]), int(f["s"]), int(f["e"]))
        except (ValueError, KeyError, TypeError):
            return None
        if grant.expires_at <= (time.time() if now is None else now):
            return None
        return grant

    def open(self, value: str, now: float | None = None) -> BrowserSession | None:
        """The session sealed in ``value``; ``None`` when it is not one of ours, was changed, or has expired."""
        found = self._open(value, AAD)
        try:
            session = BrowserSession(str(found["t"]), str(found["p"]), str(found["n"]), int(found["e"]))
        except (ValueError, KeyError, TypeError):
            return None
        if session.expires_at <= (time.time() if now is None else now):
            return None
        return session


SEAT_COOKIE = "paiju_seat"
"""The cookie that holds the game token of the seat a browser last played from, sealed (`SeatGrant`)."""
SEAT_AAD = b"paiju-web-seat.1"
"""Bound to every sealed seat: a session does not open as a seat, nor a seat as a session."""
SEAT_PATH = "/api/play/act"
"""The seat's cookie goes with a move only."""


@dataclass(frozen=True, slots=True)
class SeatGrant:
    """The game token the lobby's ``JoinGame`` gave a player for their seat at a table's game, kept by their
    browser sealed in an ``HttpOnly`` cookie so that a move needs no ``JoinGame`` of its own: bound to the player
    and the table, and good until the token expires."""

    token: str
    player_id: str
    table_id: str
    game_id: str
    game: int
    seat: int
    expires_at: int

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)


VOUCHER_SUBJECT = "web"
RENEW_VOUCHER_SECONDS = 60
"""The web view's token is minted afresh this long before it expires."""


class Voucher:
    """The web view's own token (role web, issuer web, for the lobby), with which it vouches for the address of the
    browser a lobby call is made for (`metadata`): minted with the web view's key, and again a minute before its
    5 minutes are up. Without a key it vouches for nobody (`metadata` is empty), and the lobby counts every browser's
    calls against the web view's own address."""

    def __init__(self, signer: Signer | None, now: Callable[[], float] = time.time) -> None:
        if signer is not None and signer.issuer is not Issuer.WEB:
            raise ValueError(f"the web view signs with a web key (web.<version>), not {signer.key_id}")
        self._signer = signer
        self._now = now
        self._header = ""
        self._expires = 0

    def metadata(self, address: str) -> tuple[tuple[str, str], ...]:
        """The metadata that tells the lobby a call is made for the browser at ``address`` (none without a key or an
        address)."""
        if self._signer is None or not address:
            return ()
        now = int(self._now())
        if self._expires - RENEW_VOUCHER_SECONDS <= now:
            expires = now + SERVICE_TOKEN_SECONDS
            identity = Identity(
                VOUCHER_SUBJECT, Role.WEB, expires=expires, issued=now, audience=(Audience.LOBBY.value,)
            )
            self._header, self._expires = f"Bearer {self._signer.mint(identity)}", expires
        return ((FORWARDER, self._header), (CLIENT_ADDRESS, address))


class SignInOff(Exception):
    """The web view has no session key: nobody can sign in through it."""


def same_origin(request: web.Request) -> bool:
    """Whether a request that changes something comes from this server's own page: ``Sec-Fetch-Site`` (when the
    browser sends it) says ``same-origin``, and ``Origin`` is present and names this server's host."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site != "same-origin":
        return False
    origin = request.headers.get("Origin")
    if not origin or origin == "null":
        return False
    found = urlsplit(origin)
    return found.scheme in ("http", "https") and bool(found.netloc) and found.netloc.lower() == request.host.lower()


class Sessions:
    """The browsers' sessions of one gateway: sealing, the cookie, the checks, and the sign-in routes."""

    def __init__(
        self,
        key: bytes,
        upstream: Any,
        secure: bool = True,
        *,
        voucher: Voucher | None = None,
        address_of: Callable[[web.Request], str] | None = None,
    ) -> None:
        self.sealer = Sealer(key) if key else None
        self.upstream = upstream
        """The gateway's channels (`paiju.tools.web.upstream.Upstream`): its lobby stub, and its count of calls, to
        which the calls made with browsers' sessions are added as ``player <method>``."""
        self.secure = secure
        self.voucher = voucher if voucher is not None else Voucher(None)
        self._address_of = address_of or (lambda request: "")
        """The browser's address in a request (`paiju.tools.web.gateway.Gateway.browser_address`)."""

    def metadata(self, session: BrowserSession) -> tuple[tuple[str, str], ...]:
        """The metadata of a lobby call made with a browser's session: its token, and its address vouched for."""
        return session.metadata + self.voucher.metadata(session.address)

    def vouched(self, request: web.Request) -> tuple[tuple[str, str], ...]:
        """The metadata of a sign-in made for the browser of ``request``: its address vouched for."""
        return self.voucher.metadata(self._address_of(request))

    @property
    def lobby(self) -> Any:
        return self.upstream.lobby

    def current(self, request: web.Request) -> BrowserSession | None:
        """The browser's session, from its cookie (``None``: none, changed, sealed elsewhere, or expired)."""
        if self.sealer is None:
            return None
        found = self.sealer.open(request.cookies.get(COOKIE, ""))
        return replace(found, address=self._address_of(request)) if found is not None else None

    def set_cookie(self, response: web.StreamResponse, session: BrowserSession) -> None:
        if self.sealer is None:
            raise SignInOff()
        self._set(response, COOKIE, self.sealer.seal(session), session.expires_at, "/")

    def clear_cookie(self, response: web.StreamResponse) -> None:
        response.del_cookie(COOKIE, path="/", secure=self.secure, httponly=True, samesite="Strict")
        self.clear_seat(response)

    def seat(self, request: web.Request) -> SeatGrant | None:
        """The seat the browser last played from (its cookie), if still good."""
        if self.sealer is None:
            return None
        return self.sealer.open_seat(request.cookies.get(SEAT_COOKIE, ""))

    def set_seat(self, response: web.StreamResponse, grant: SeatGrant) -> None:
        if self.sealer is None:
            raise SignInOff()
        self._set(response, SEAT_COOKIE, self.sealer.seal_seat(grant), grant.expires_at, SEAT_PATH)

    def _set(self, response: web.StreamResponse, name: str, sealed: str, expires_at: int, path: str) -> None:
        """A sealed cookie: HttpOnly, Secure (unless the gateway is told otherwise), SameSite=Strict, kept until
        what it holds expires."""
        response.set_cookie(
            name,
            sealed,
            max_age=max(0, expires_at - int(time.time())),
            path=path,
            secure=self.secure,
            httponly=True,
            samesite="Strict",
        )

    def clear_seat(self, response: web.StreamResponse) -> None:
        response.del_cookie(SEAT_COOKIE, path=SEAT_PATH, secure=self.secure, httponly=True, samesite="Strict")

    def count(self, method: str) -> None:
        calls = self.upstream.calls
        calls[f"player {method}"] = calls.get(f"player {method}", 0) + 1

    async def me(self, request: web.Request) -> web.StreamResponse:
        session = self.current(request)
        if session is None:
            return web.json_response({"signed_in": False, "sign_in": self.sealer is not None})
        return web.json_response(session.public())

    async def _signed_in(self, method: str, call: Any, body: Any, request: web.Request) -> web.StreamResponse:
        if self.sealer is None:
            raise SignInOff()
        self.count(method)
        answer = await call(body, metadata=self.vouched(request), timeout=CALL_SECONDS)
        s = answer.session
        session = BrowserSession(s.token, s.player_id, s.name, int(s.expires_at))
        response = web.json_response(session.public())
        self.set_cookie(response, session)
        return response

    async def guest(self, request: web.Request) -> web.StreamResponse:
        return await self._signed_in("Guest", self.lobby.Guest, lobby_pb2.GuestRequest(), request)

    async def register(self, request: web.Request) -> web.StreamResponse:
        name, password = await _credentials(request)
        return await self._signed_in(
            "Register", self.lobby.Register, lobby_pb2.RegisterRequest(name=name, password=password), request
        )

    async def login(self, request: web.Request) -> web.StreamResponse:
        name, password = await _credentials(request)
        login = lobby_pb2.LoginRequest(name=name, password=password)
        return await self._signed_in("Login", self.lobby.Login, login, request)

    async def renew(self, request: web.Request) -> web.StreamResponse:
        session = self.required(request)
        self.count("RenewSession")
        answer = await self.lobby.RenewSession(
            lobby_pb2.RenewSessionRequest(), metadata=self.metadata(session), timeout=CALL_SECONDS
        )
        s = answer.session
        renewed = BrowserSession(s.token, s.player_id, s.name, int(s.expires_at))
        response = web.json_response(renewed.public())
        self.set_cookie(response, renewed)
        return response

    async def logout(self, request: web.Request) -> web.StreamResponse:
        session = self.current(request)
        if session is not None:
            self.count("Logout")
            try:
                await self.lobby.Logout(
                    lobby_pb2.LogoutRequest(), metadata=self.metadata(session), timeout=CALL_SECONDS
                )
            except grpc.aio.AioRpcError as e:  # a session already revoked or expired is signed out all the same
                if e.code() is not grpc.StatusCode.UNAUTHENTICATED:
                    raise
        response = web.json_response({"signed_in": False, "sign_in": self.sealer is not None})
        self.clear_cookie(response)
        return response

    def required(self, request: web.Request) -> BrowserSession:
        """The browser's session, or a 401 refusal (`NotSignedIn`)."""
        session = self.current(request)
        if session is None:
            raise NotSignedIn()
        return session


class NotSignedIn(Exception):
    """A request that needs a sign-in came without a valid session cookie."""


class BadBody(Exception):
    """A request's JSON body could not be read; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


async def json_body(request: web.Request, most: int = MAX_BODY_BYTES) -> dict[str, Any]:
    """A request's body as a JSON object of at most ``most`` bytes (`BadBody` otherwise)."""
    if request.content_length is not None and request.content_length > most:
        raise BadBody(f"the request's body is longer than {most} bytes")
    raw = await request.content.read(most + 1)
    if len(raw) > most:
        raise BadBody(f"the request's body is longer than {most} bytes")
    try:
        found = json.loads(raw.decode("utf-8")) if raw else {}
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadBody("the request's body must be a JSON object (nested at most a few levels deep)") from None
    if not isinstance(found, dict):
        raise BadBody("the request's body must be a JSON object")
    return found


async def _credentials(request: web.Request) -> tuple[str, str]:
    found = await json_body(request)
    name, password = found.get("name"), found.get("password")
    if not isinstance(name, str) or not isinstance(password, str) or not name or not password:
        raise BadBody("a name and a password are needed, as text")
    if len(name) > 64 or len(password) > 128 or "\x00" in name or "\x00" in password:
        raise BadBody("the name is at most 64 characters and the password at most 128, without NUL")
    return name, password


def add_routes(app: web.Application, sessions: Sessions) -> None:
    """The sign-in routes."""
    app.router.add_get("/api/me", sessions.me)
    app.router.add_post("/api/session/guest", sessions.guest)
    app.router.add_post("/api/session/register", sessions.register)
    app.router.add_post("/api/session/login", sessions.login)
    app.router.add_post("/api/session/renew", sessions.renew)
    app.router.add_post("/api/session/logout", sessions.logout)
