"""Signed bearer tokens: minted, verified; forged, tampered, malformed and expired ones refused."""

from __future__ import annotations

import time

import pytest

from paiju.cli import main
from paiju.engine.auth import Identity, Role, TokenError, mint, verify

SECRET = b"s" * 32
NOW = 1_800_000_000


def test_a_token_carries_its_identity() -> None:
    identity = Identity("alice", Role.PLAYER, game="g1", seat=3, expires=NOW + 60)
    assert verify(mint(identity, SECRET), SECRET, NOW) == identity
    spectator = Identity("bob", Role.SPECTATOR, expires=NOW + 60)
    assert verify(mint(spectator, SECRET), SECRET, NOW) == spectator


@pytest.mark.parametrize(
    ("token", "words"),
    [
        ("", "payload"),
        ("nodot", "payload"),
        (mint(Identity("a", Role.PLAYER, expires=NOW + 60), b"x" * 32), "signature"),
        (mint(Identity("a", Role.PLAYER, expires=NOW), SECRET), "expired"),
    ],
)
def test_bad_tokens_are_refused(token: str, words: str) -> None:
    with pytest.raises(TokenError, match=words):
        verify(token, SECRET, NOW)


def test_a_tampered_payload_breaks_the_signature() -> None:
    token = mint(Identity("a", Role.PLAYER, game="g", seat=1, expires=NOW + 60), SECRET)
    payload, _, signature = token.partition(".")
    forged = mint(Identity("a", Role.ADMIN, expires=NOW + 60), SECRET).partition(".")[0]
    with pytest.raises(TokenError, match="signature"):
        verify(f"{forged}.{signature}", SECRET, NOW)
    assert verify(f"{payload}.{signature}", SECRET, NOW).role is Role.PLAYER


def test_paiju_token_mints_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PAIJU_TOKEN_SECRET", "k" * 40)
    assert main(["token", "carol", "--game", "g7", "--seat", "2"]) == 0
    token = capsys.readouterr().out.strip()
    identity = verify(token, b"k" * 40, int(time.time()))
    assert (identity.subject, identity.role, identity.game, identity.seat) == ("carol", Role.PLAYER, "g7", 2)
    monkeypatch.setenv("PAIJU_TOKEN_SECRET", "short")
    assert main(["token", "carol"]) == 2
    assert "at least 32 bytes" in capsys.readouterr().err
