"""The tools the Makefile installs before anything is locked are checked too: uv, at the Makefile's version, is
installed with the hashes of its files on PyPI (``pip install --require-hashes``), so a changed file is refused."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_uv_is_installed_at_the_makefiles_version_with_its_hashes() -> None:
    makefile = (ROOT / "Makefile").read_text()
    version = re.search(r"^UV_VERSION := (\S+)$", makefile, re.M)
    assert version is not None
    assert "pip install --quiet --require-hashes -r .ci/uv-requirements.txt" in makefile
    assert "uv==$(UV_VERSION)" not in makefile  # no install by name alone
    requirements = (ROOT / ".ci" / "uv-requirements.txt").read_text()
    pinned = re.findall(r"^(\S+)==(\S+)", requirements, re.M)
    assert pinned == [("uv", version.group(1))]
    hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})\b", requirements)
    assert len(hashes) >= 2 and len(set(hashes)) == len(hashes)  # a wheel per platform, and the source


def test_the_image_installs_uv_with_the_same_hashes() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY .ci/uv-requirements.txt /tmp/uv-requirements.txt" in dockerfile
    assert "pip install --require-hashes -r /tmp/uv-requirements.txt" in dockerfile
    assert not re.search(r"pip install \S*uv==", dockerfile)  # no install by name alone
    assert "!.ci/uv-requirements.txt" in (ROOT / ".dockerignore").read_text().splitlines()
