"""The NATS user's seed is a secret read from its file only: never from the environment itself, not even for a
release (it never had a plain variable)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from paiju.lobby.config import Settings
from paiju.platform import settings as s
from paiju.terminal.client.app import _password


def test_the_nats_seed_is_read_from_its_file_and_never_from_the_environment(tmp_path: Path) -> None:
    seed = tmp_path / "lobby.nk"
    seed.write_text("SUAEXAMPLE\n")
    database = tmp_path / "database-url"
    database.write_text("postgresql://paiju@localhost/paiju")
    base = {
        "DATABASE_URL_FILE": str(database),
        "PAIJU_TRUSTED_KEYS": "keys.json",
        "PAIJU_SIGNING_KEY_FILE": "k.pem",
        "PAIJU_SIGNING_KEY_ID": "lobby.1",
    }
    assert Settings.from_env({**base, "NATS_NKEY_SEED": "SUAINENV"}).nats_seed == ""
    read = Settings.from_env({**base, "NATS_NKEY_SEED_FILE": str(seed)})
    assert read.nats_seed == "SUAEXAMPLE"
    assert "SUAEXAMPLE" not in repr(read)
    assert s.NATS_SEED.variable == "NATS_NKEY_SEED_FILE"


def test_the_terminal_client_reads_the_password_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "password"
    secret.write_text("correct horse battery staple\n")
    monkeypatch.delenv("PAIJU_PASSWORD", raising=False)
    monkeypatch.setenv("PAIJU_PASSWORD_FILE", str(secret))
    assert _password(argparse.Namespace(name="ada", password=None)) == "correct horse battery staple"
    monkeypatch.setenv("PAIJU_PASSWORD_FILE", str(tmp_path / "missing"))
    with pytest.raises(SystemExit, match="PAIJU_PASSWORD_FILE"):
        _password(argparse.Namespace(name="ada", password=None))
