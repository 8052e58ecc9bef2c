"""The documents' snippets run: every ``python`` and ``sh`` block of the README and docs/ (not the generated api.md)
that is not marked interactive, long-running or cluster (those are checked to parse, test_commands.py) is run, in its
document's order, against one stack started as `make run` starts it (`paiju stack`, on free ports, its bots at 0.3 s
a move).

The blocks run as a reader runs them (docs/contributing.md, "Documents"): from a copy of the checkout (its entries
linked, its own ``.data/`` the stack's), with `paiju` on the ``PATH``, ``NATS_URL`` and the services'
``PAIJU_*_ADDRESS`` set to the stack's, ``TABLE`` to its 砸六家 table of bots and ``GAME`` to that table's first
game. A ``sh`` block runs in ``bash -euo pipefail``; a ``python`` block in the project's Python."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..support.waiting import wait_until_blocking
from .markdown import REPOSITORY, Block, blocks, name, readers_documents

pytestmark = [
    pytest.mark.e2e,  # the stack as processes
    pytest.mark.xdist_group("docs-stack"),  # one stack for the module: its tests run in one worker (loadgroup)
]

RUN = ("sh", "python")
STARTED = "Ctrl-C stops everything."
"""The banner's last line: the stack is up and its tables play."""


def _run(block: Block) -> bool:
    return block.marker is None and block.language in RUN


DOCUMENTS = [document for document in readers_documents() if any(_run(block) for block in blocks(document))]


@dataclass(frozen=True)
class Stack:
    checkout: Path
    """Where the snippets run: the checkout's entries linked, and the stack's ``.data/``."""
    env: dict[str, str]
    """The snippets' environment."""
    banner: str


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _logs(checkout: Path) -> str:
    found = []
    for log in sorted((checkout / ".data" / "logs").glob("*.log")):
        found.append(f"--- {log.name}\n{_tail(log.read_text(errors='replace'), 10)}")
    return "\n".join(found)


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """`paiju stack` in a copy of the checkout, until the module's tests are done."""
    # not pytest's tmp_path: run as root, PostgreSQL runs as its own user, which cannot enter that folder
    checkout = Path(tempfile.mkdtemp(prefix="paiju-docs-"))
    checkout.chmod(0o755)
    for entry in REPOSITORY.iterdir():
        if entry.name not in {".data", ".git"}:
            (checkout / entry.name).symlink_to(entry)
    outer = {
        k: v for k, v in os.environ.items() if not k.startswith("PAIJU_") and k not in {"NATS_URL", "DATABASE_URL"}
    }
    output = checkout / "stack.out"
    with output.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "paiju.cli", "stack"],
            cwd=checkout,
            env={**outer, "PAIJU_STACK_PORTS": "free", "PAIJU_BOT_THINK_SECONDS": "0.3"},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_blocking(
            lambda: STARTED in output.read_text() or process.poll() is not None,
            "paiju stack's banner",
            seconds=180,
            explain=lambda: _logs(checkout),
        )
        banner = output.read_text()
        assert STARTED in banner, f"the stack did not start:\n{banner}\n{_logs(checkout)}"
        address = {
            service: re.search(rf"^  {service}\s+(\S+)", banner, re.MULTILINE).group(1)  # type: ignore[union-attr]
            for service in ("engine", "lobby", "scoring", "NATS")
        }
        table = re.findall(r"table at (table-[0-9a-f]+)", banner)[0]  # the 砸六家 table: the registry's first game
        env = {
            **outer,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{outer.get('PATH', '')}",
            "NATS_URL": address["NATS"],
            "NATS_NKEY_SEED_FILE": str(checkout / ".data" / "keys" / "nats" / "analyst.nk"),  # as the banner says
            "PAIJU_ENGINE_ADDRESS": address["engine"],
            "PAIJU_LOBBY_ADDRESS": address["lobby"],
            "PAIJU_SCORING_ADDRESS": address["scoring"],
            "TABLE": table,
            "GAME": f"{table}-m1",
        }
        yield Stack(checkout, env, banner)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        shutil.rmtree(checkout, ignore_errors=True)


@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_the_snippets_run(document: Path, stack: Stack) -> None:
    ran = 0
    for block in blocks(document):
        if not _run(block):
            continue
        if block.language == "python":
            command = [sys.executable, "-c", block.text]
        else:
            command = ["bash", "-euo", "pipefail", "-c", block.text]
        done = subprocess.run(
            command, cwd=stack.checkout, env=stack.env, capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0, (
            f"{block.where} failed (exit {done.returncode}):\n{block.text}\n"
            f"--- its output (end)\n{_tail(done.stdout)}\n--- its errors (end)\n{_tail(done.stderr)}\n"
            f"{_logs(stack.checkout)}"
        )
        ran += 1
    assert ran > 0


def test_the_banner_names_the_documented_admin_key(stack: Stack) -> None:
    """The key the documents tell operators to mint with under `make run` is the one the stack made."""
    assert ".data/keys/admin.pem --key-id admin.1" in stack.banner
    assert (stack.checkout / ".data" / "keys" / "admin.pem").is_file()
