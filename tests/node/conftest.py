"""The TypeScript client of `clients/node` for the tests of this folder: built by `make node` (its pinned packages
from package-lock.json, its code of the contract generated from `protos/` with the local protoc-gen-es, the whole
package type-checked and compiled by the pinned tsc), once per session under a lock for xdist's workers. A type
error anywhere in the package fails the build, and every test here with it.

Without `node` the tests are skipped, except under CI (`CI` set), where they fail.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "node"
DIST = CLIENT / "dist"


@pytest.fixture(scope="session")
def node() -> Iterator[str]:
    """The `node` executable, with the client built (`make node`: a no-op when nothing changed)."""
    executable = shutil.which("node")
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed, and CI is set: the TypeScript client must be tested")
        pytest.skip("node is not installed (set CI to make this a failure)")
    if shutil.which("npm") is None:
        pytest.fail("npm is not installed: the TypeScript client's packages cannot be installed")
    with open(CLIENT / "package.json", "rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            built = subprocess.run(
                ["make", "--no-print-directory", "node"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if built.returncode != 0:
        pytest.fail(f"make node failed (exit {built.returncode}):\n{built.stdout[-4000:]}\n{built.stderr[-4000:]}")
    yield executable
