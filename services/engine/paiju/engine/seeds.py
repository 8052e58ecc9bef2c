"""The engine's shuffle seeds: drawn from a secret only the engine holds (`SEED_SECRET`), never sent."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from paiju.platform.settings import Setting

MIN_SECRET_BYTES = 32


def secret_bytes(raw: str) -> bytes:
    """A seed secret's bytes: at least `MIN_SECRET_BYTES` of them (`ValueError` otherwise)."""
    value = raw.encode()
    if len(value) < MIN_SECRET_BYTES:
        raise ValueError(f"must hold a secret of at least {MIN_SECRET_BYTES} bytes")
    return value


SEED_SECRET = Setting(
    "PAIJU_SEED_SECRET",
    b"",
    f"the engine's secret (at least {MIN_SECRET_BYTES} bytes), from which the shuffle seeds and fair deals' server "
    "seeds are drawn; changing it changes nothing stored, but keep it secret: whoever holds it knows every unrevealed "
    "deal",
    parse=secret_bytes,
    secret=True,
    required=True,
)
PREVIOUS_SEED_SECRET: Setting[bytes | None] = Setting(
    "PAIJU_PREVIOUS_SEED_SECRET",
    None,
    "the seed secret before the current one, during a change of secret: shuffles committed under it are still "
    "dealt and revealed; a file that is not there (a Secret without the key `previous`) means none",
    parse=secret_bytes,
    secret=True,
    optional_file=True,
)
SEED_SECRET_VARIABLE = SEED_SECRET.variable
PREVIOUS_SECRET_VARIABLE = PREVIOUS_SEED_SECRET.variable


def server_seeds(secrets: Sequence[bytes], game_id: str, number: int) -> list[bytes]:
    """The candidate server seeds of a fair game's ``number``-th shuffle: one per secret, the current one first."""
    return [server_seed(secret, game_id, number) for secret in secrets]


def shuffle_seed(secret: bytes, game_id: str, version: int) -> int:
    """The engine's seed for a game at a version: an HMAC of the engine's secret, so every engine replica draws the
    same seed for the same position (a retry on another replica is the same command) while no client can predict a
    shuffle."""
    digest = hmac.new(secret, f"seed:{game_id}:{version}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def server_seed(secret: bytes, game_id: str, number: int) -> bytes:
    """The server seed of a fair game's ``number``-th shuffle (`paiju.rules.fair`): 32 bytes of an HMAC of the
    engine's secret, so every replica commits to, deals and reveals the same seed, and no client can know it before
    the engine reveals it."""
    return hmac.new(secret, f"server-seed:{game_id}:{number}".encode(), hashlib.sha256).digest()
