"""Debian's chromium, which the result-sheet and web-view tests render pages in (`make chromium` installs it)."""

from __future__ import annotations

import shutil

import pytest


def chromium_binary() -> str:
    """The chromium on PATH; a missing one fails the test (it is installed by `make test` and .ci/run)."""
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail(
            "Debian's chromium is not on PATH: install it with `apt-get update && apt-get install -y chromium` "
            "(`make chromium`; .ci/run installs it on CI)",
            pytrace=False,
        )
    return binary
