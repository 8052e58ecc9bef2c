"""The fuzzer's tokens: every token it sends is minted by `mint_token`, and every process learns how to check and make
them from `Credentials.env`. Tokens are the deployment's Ed25519-signed JWTs (`paiju.platform.tokens`): a key per
issuer, made in a folder of the fuzzer's own, each process given only its own (`paiju.dev.stack.Credentials`).

Besides the tokens an issuer would make, `mint_token` makes ones no issuer makes but a stolen key could: signed with
the trusted key of the role's issuer, with claims no issuer writes (a subject that is not an id, a seat that is not
a number, a role the key may not vouch for) — the services must refuse them as invalid, not fail."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from paiju.dev.stack import Credentials as DevCredentials
from paiju.platform.tokens import MAX_SECONDS, Issuer

ROLES = ("player", "spectator", "analyst", "referee", "service", "admin")
"""The roles a token may carry (`mint_token`'s ``role``)."""
ISSUER_OF = {
    "player": Issuer.LOBBY,
    "spectator": Issuer.LOBBY,
    "service": Issuer.LOBBY,
    "bot_runner": Issuer.BOTS,
    "analyst": Issuer.ADMIN,
    "referee": Issuer.ADMIN,
    "admin": Issuer.ADMIN,
}


MAX_SECONDS_OF = {role.value: seconds for role, seconds in MAX_SECONDS.items()}


def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="paiju-fuzz-keys-"))
    folder.chmod(0o755)
    return folder


@dataclass(frozen=True)
class Credentials:
    """The deployment's keys under test (a private key per issuer, the JWKS every service trusts, the seed secret)."""

    folder: Path = field(default_factory=_folder)

    @property
    def dev(self) -> DevCredentials:
        return DevCredentials(self.folder)

    def env(self, process: str) -> dict[str, str]:
        """The environment ``process`` (engine, lobby, scoring, bots) needs: the trusted keys, and its own key."""
        return self.dev.env(process)

    def key(self, issuer: Issuer) -> Ed25519PrivateKey:
        key = load_pem_private_key(self.dev.keys[issuer].read_bytes(), password=None)
        assert isinstance(key, Ed25519PrivateKey)
        return key


def mint_token(
    credentials: Credentials,
    subject: Any,
    role: str,
    *,
    game: str | None = None,
    seat: Any = None,
    lifetime: int = 3600,
    forged: bool = False,
) -> str:
    """A bearer token for ``subject`` in ``role`` (one of `ROLES`), bound to ``game`` and ``seat`` when given, valid
    for ``lifetime`` seconds from now (negative: expired that long ago), signed with the key of the role's issuer
    as the deployment trusts it — whatever the claims (an odd subject or seat is written as given). ``forged``:
    signed with a key the deployment does not trust, under the same key id."""
    issuer = ISSUER_OF[role]
    now = int(time.time())
    if role in MAX_SECONDS_OF:  # no longer than a token of its role may live (the services refuse longer ones)
        lifetime = min(lifetime, MAX_SECONDS_OF[role])
    claims: dict[str, Any] = {"sub": subject, "role": role, "iss": issuer.value, "iat": now, "exp": now + lifetime}
    if game is not None:
        claims["game"] = game
    if seat is not None:
        claims["seat"] = seat
    key = Ed25519PrivateKey.generate() if forged else credentials.key(issuer)
    return jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": f"{issuer.value}.1"})
