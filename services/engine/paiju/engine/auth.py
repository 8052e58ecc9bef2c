"""Signed bearer tokens: who a client is, in which role, at which seat of which game (design.md, API).

A token is ``<payload>.<signature>``: the payload is URL-safe base64 of compact JSON
(``sub`` player id, ``role``, optional ``game`` and ``seat``, ``exp`` expiry in Unix seconds), the signature
URL-safe base64 of HMAC-SHA256 over the payload with the secret from the environment
(``PAIJU_TOKEN_SECRET``). The lobby issues them; until it exists `paiju token` mints them for development.
A token acts only for its own seat; a spectator token sees public information only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from paiju.platform.errors import Reason, Refused

SECRET_VARIABLE = "PAIJU_TOKEN_SECRET"
MIN_SECRET_BYTES = 32


class Role(StrEnum):
    PLAYER = "player"  # acts for one seat of one game
    SPECTATOR = "spectator"  # public information only
    ANALYST = "analyst"  # full replays of any game
    REFEREE = "referee"  # referee commands (tractor §11)
    SERVICE = "service"  # service to service: creates games, system commands
    ADMIN = "admin"


class TokenError(Refused):
    """A missing, malformed, forged or expired token (UNAUTHENTICATED, with the reason why)."""

    def __init__(self, message: str, reason: Reason = Reason.TOKEN_INVALID) -> None:
        super().__init__(reason, message)


@dataclass(frozen=True, slots=True)
class Identity:
    subject: str
    role: Role
    game: str | None = None
    seat: int | None = None
    expires: int = 0


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def secret_from_env() -> bytes:
    value = os.environ.get(SECRET_VARIABLE, "")
    if len(value.encode()) < MIN_SECRET_BYTES:
        raise TokenError(f"{SECRET_VARIABLE} must hold a secret of at least {MIN_SECRET_BYTES} bytes")
    return value.encode()


def mint(identity: Identity, secret: bytes) -> str:
    """A signed token for ``identity``."""
    body: dict[str, object] = {"sub": identity.subject, "role": identity.role.value, "exp": identity.expires}
    if identity.game is not None:
        body["game"] = identity.game
    if identity.seat is not None:
        body["seat"] = identity.seat
    payload = _b64(json.dumps(body, separators=(",", ":"), sort_keys=True).encode())
    signature = _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest())
    return f"{payload}.{signature}"


def verify(token: str, secret: bytes, now: int) -> Identity:
    """The identity a token carries, or `TokenError` (forged, malformed or expired at ``now``)."""
    payload, _, signature = token.partition(".")
    if not payload or not signature:
        raise TokenError("a token is <payload>.<signature>")
    expected = _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(expected, signature):
        raise TokenError("the token's signature does not match: it was not issued by this deployment")
    try:
        body = json.loads(_unb64(payload))
        identity = Identity(
            subject=str(body["sub"]),
            role=Role(body["role"]),
            game=body.get("game"),
            seat=body.get("seat"),
            expires=int(body["exp"]),
        )
    except (ValueError, KeyError, TypeError):
        raise TokenError("the token's payload is malformed") from None
    if identity.expires <= now:
        raise TokenError("the token has expired: get a new one", Reason.TOKEN_EXPIRED)
    return identity


def shuffle_seed(secret: bytes, game_id: str, version: int) -> int:
    """The engine's seed for a game at a version: HMAC of the deployment secret, so every engine replica
    draws the same seed for the same position (a retry on another replica is the same command) while no
    client can predict a shuffle."""
    digest = hmac.new(secret, f"seed:{game_id}:{version}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class Verifier:
    """Who a call's ``authorization: Bearer <token>`` metadata says the caller is (every gRPC service's first
    step). Tokens whose signature was checked are remembered; their expiry is checked on every call."""

    REMEMBERED = 10_000

    def __init__(self, secret: bytes, now: Callable[[], int]) -> None:
        self._secret = secret
        self._now = now
        self._verified: dict[str, Identity] = {}

    def identify(self, metadata: Iterable[tuple[str, Any]] | None) -> Identity:
        """The caller's identity, or `TokenError` with the reason (no token, forged, malformed, expired)."""
        header = str(dict(metadata or ()).get("authorization", ""))
        if not header.startswith("Bearer "):
            raise TokenError("send 'authorization: Bearer <token>'", Reason.TOKEN_MISSING)
        token = header.removeprefix("Bearer ")
        now = self._now()
        identity = self._verified.get(token)
        if identity is not None and identity.expires > now:
            return identity
        identity = verify(token, self._secret, now)
        if len(self._verified) >= self.REMEMBERED:
            self._verified.clear()
        self._verified[token] = identity
        return identity
