"""The tests' credentials: one Ed25519 key per token issuer, made once per test process, the trust of their public
keys (what every service under test verifies with), and tokens minted by the issuer that may vouch for the role —
one helper for every test, as production mints them."""

from __future__ import annotations

from pathlib import Path

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from paiju.platform.tokens import (
    KEYS_VARIABLE,
    SIGNING_KEY_ID_VARIABLE,
    SIGNING_KEY_VARIABLE,
    Identity,
    Issuer,
    Role,
    Signer,
    Trust,
)

SIGNERS = {issuer: Signer(Ed25519PrivateKey.generate(), f"{issuer.value}.1") for issuer in Issuer}
TRUST = Trust.of(SIGNERS.values())
LOBBY = SIGNERS[Issuer.LOBBY]
BOTS = SIGNERS[Issuer.BOTS]
ADMIN = SIGNERS[Issuer.ADMIN]
WEB = SIGNERS[Issuer.WEB]
ISSUER_OF = {
    Role.PLAYER: Issuer.LOBBY,
    Role.SPECTATOR: Issuer.LOBBY,
    Role.SERVICE: Issuer.LOBBY,
    Role.BOT_RUNNER: Issuer.BOTS,
    Role.ADMIN: Issuer.ADMIN,
    Role.REFEREE: Issuer.ADMIN,
    Role.ANALYST: Issuer.ADMIN,
    Role.WEB: Issuer.WEB,
}


def mint_token(identity: Identity) -> str:
    """A token for ``identity``, signed by the issuer of its role."""
    return SIGNERS[ISSUER_OF[identity.role]].mint(identity)


def forged_claims(claims: dict[str, object], issuer: Issuer = Issuer.LOBBY) -> str:
    """A token no issuer makes — ``claims`` as given (a seat of -1, a subject that is not an id) — signed with the
    issuer's trusted key, as a stolen key or a bug in an issuer could make one."""
    return jwt.encode(claims, SIGNERS[issuer]._key, algorithm="EdDSA", headers={"kid": SIGNERS[issuer].key_id})


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def process_env(folder: Path, issuer: Issuer | None = None) -> dict[str, str]:
    """The environment of a process under test: the JWKS of the tests' keys, and ``issuer``'s private key when it
    signs (written into ``folder``)."""
    folder.mkdir(parents=True, exist_ok=True)
    jwks = folder / "keys.json"
    jwks.write_text(TRUST.jwks())
    env = {KEYS_VARIABLE: str(jwks)}
    if issuer is not None:
        key = folder / f"{issuer.value}.pem"
        key.touch(mode=0o600)
        key.write_bytes(SIGNERS[issuer].private_pem())
        env.update({SIGNING_KEY_VARIABLE: str(key), SIGNING_KEY_ID_VARIABLE: SIGNERS[issuer].key_id})
    return env
