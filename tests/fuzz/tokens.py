"""The fuzzer's tokens: every token it sends is minted by `mint_token`, and every process learns how to check them
from `Credentials.env`. The token scheme is the deployment's business (today an HMAC over a payload with the
secret ``PAIJU_TOKEN_SECRET``); when it changes, this module changes and nothing else of the fuzzer does."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

from paiju.engine.auth import SECRET_VARIABLE, Identity, Role, mint

ROLES = ("player", "spectator", "analyst", "referee", "service", "admin")
"""The roles a token may carry (`mint_token`'s ``role``)."""


@dataclass(frozen=True)
class Credentials:
    """What the deployment under test trusts: the secret its tokens are signed with."""

    secret: bytes = field(default_factory=lambda: secrets.token_urlsafe(48).encode())

    def env(self, process: str) -> dict[str, str]:
        """The environment ``process`` (engine, lobby, scoring, bots) needs to issue and check tokens (today the same
        secret for every one)."""
        del process
        return {SECRET_VARIABLE: self.secret.decode()}


def mint_token(
    credentials: Credentials,
    subject: str,
    role: str,
    *,
    game: str | None = None,
    seat: int | None = None,
    lifetime: int = 3600,
    forged: bool = False,
) -> str:
    """A bearer token for ``subject`` in ``role`` (one of `ROLES`), bound to ``game`` and ``seat`` when given, valid
    for ``lifetime`` seconds from now (negative: expired that long ago). ``forged``: signed with a key the deployment
    does not trust."""
    identity = Identity(subject, Role(role), game, seat, int(time.time()) + lifetime)
    key = secrets.token_bytes(48) if forged else credentials.secret
    return mint(identity, key)
