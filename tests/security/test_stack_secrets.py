"""`make run` keeps its secrets in files: no process of the stack — nats-server, PostgreSQL, the engine, the lobby,
scoring, the bot runner, the web view — has a secret in its environment (``/proc/<pid>/environ``), neither a seed
secret, a private key, an NKey seed nor the database's password; and its NATS admits its users only, the analyst's
read-only credentials being enough for `paiju verify`."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nats
import nats.errors
import pytest

from paiju.dev.stack import run
from paiju.platform import settings as s

pytestmark = pytest.mark.e2e  # the whole stack as processes, as `make run` starts it

SECRET_VARIABLES = ("PAIJU_SEED_SECRET", "PAIJU_PREVIOUS_SEED_SECRET", "DATABASE_URL", s.NATS_SEED.name)
"""The secrets' own names (their files are named by ``<NAME>_FILE``): none may be set."""


def descendants(root: int) -> list[int]:
    """Every process started by ``root``, and by those, and so on."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def environment(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = [item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item]
    return {key: value for key, _, value in pairs}


def command(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def secrets_of(keys: Path) -> dict[str, str]:
    """Every secret `make run` made (file -> its text), and the database's password."""
    found = {}
    for path in keys.rglob("*"):
        if path.is_file() and path.name not in ("keys.json", "users.conf"):  # public keys, not secrets
            found[str(path)] = path.read_text().strip()
    password = urlsplit(found[str(keys / "database-url")]).password
    if password:
        found["the database's password"] = password
    return found


def test_no_process_of_make_run_has_a_secret_in_its_environment_and_nats_admits_its_users_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in ("NATS_URL", *SECRET_VARIABLES, *(f"{name}_FILE" for name in SECRET_VARIABLES)):
        monkeypatch.delenv(variable, raising=False)
    folder = Path(tempfile.mkdtemp(prefix="paiju-secrets-"))
    folder.chmod(0o755)  # PostgreSQL runs as its own user when the suite runs as root
    data = folder / ".data"
    seen: dict[str, dict[str, str]] = {}
    verified: list[str] = []

    def inspect(started: dict[str, Any]) -> None:
        for pid in descendants(os.getpid()):
            try:
                seen[f"{pid} {command(pid)}"] = environment(pid)
            except OSError:
                continue  # a process that ended meanwhile
        done = subprocess.run(
            [sys.executable, "-m", "paiju.cli", "verify", "--nats", started["nats"]],
            env={**os.environ, **started["credentials"].env("analyst")},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        verified[:] = [str(done.returncode), done.stdout, done.stderr]

        async def anonymous() -> None:
            with pytest.raises(nats.errors.Error, match="Authorization Violation"):
                await nats.connect(started["nats"], allow_reconnect=False, max_reconnect_attempts=0)

        asyncio.run(anonymous())

    try:
        run(io.StringIO(), data=data, think=0.5, until=inspect)
        secrets = secrets_of(data / "keys")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    names = " ".join(seen)
    for process in ("nats-server", "postgres", "paiju.cli engine", "paiju.cli lobby", "paiju.cli scoring"):
        assert process in names, f"{process} was not found among the stack's processes: {names}"
    assert "paiju.cli bots" in names and "paiju.cli web" in names, names
    assert len(secrets) >= 10, secrets.keys()  # the seed secret, the three private keys, five NKey seeds, the database
    for process, env in seen.items():
        for variable in SECRET_VARIABLES:
            assert variable not in env, f"{process} has {variable} in its environment"
        for value in env.values():
            for name, secret in secrets.items():
                assert secret not in value, f"{process} has {name} in its environment"
        if "paiju.cli bots" in process or "paiju.cli web" in process:
            assert s.NATS_SEED.variable not in env, f"{process} has NATS credentials: it needs no NATS"
    assert verified[0] == "0", verified
