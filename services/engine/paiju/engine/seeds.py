"""The engine's shuffle seeds: drawn from a secret only the engine holds (``PAIJU_SEED_SECRET``), never sent."""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping, Sequence

SEED_SECRET_VARIABLE = "PAIJU_SEED_SECRET"
PREVIOUS_SECRET_VARIABLE = "PAIJU_PREVIOUS_SEED_SECRET"
MIN_SECRET_BYTES = 32


def seed_secret_from_env(env: Mapping[str, str] | None = None) -> bytes:
    """``PAIJU_SEED_SECRET`` (at least 32 bytes); `SystemExit` when it is missing or short."""
    value = (os.environ if env is None else env).get(SEED_SECRET_VARIABLE, "")
    if len(value.encode()) < MIN_SECRET_BYTES:
        raise SystemExit(f"{SEED_SECRET_VARIABLE} must hold a secret of at least {MIN_SECRET_BYTES} bytes")
    return value.encode()


def previous_seed_secret_from_env(env: Mapping[str, str] | None = None) -> bytes | None:
    """``PAIJU_PREVIOUS_SEED_SECRET``, the secret the engine used before the current one (``None``: none), so that
    shuffles committed under it are still dealt and revealed after a change of secret; `SystemExit` when short."""
    value = (os.environ if env is None else env).get(PREVIOUS_SECRET_VARIABLE, "")
    if not value:
        return None
    if len(value.encode()) < MIN_SECRET_BYTES:
        raise SystemExit(f"{PREVIOUS_SECRET_VARIABLE} must hold a secret of at least {MIN_SECRET_BYTES} bytes")
    return value.encode()


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
