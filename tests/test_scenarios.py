"""Every scenario file — the shared ones beside the project and our own under tests/scenarios — passes.

The runner only reports; `check` compares each file's expectations with the result (conformance.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from paiju.scenario import check, load, run

HERE = Path(__file__).parent
SHARED = HERE.parent.parent / "shared" / "scenarios"
GAMES = ("zlj", "tractor")
"""Games whose engines exist in this build."""


def _files() -> list[Path]:
    own = sorted((HERE / "scenarios").rglob("*.json"))
    shared = sorted(SHARED.glob("*.json")) if SHARED.is_dir() else []
    return [f for f in shared + own if load(f).get("game") in GAMES]


def test_shared_scenarios_are_present() -> None:
    assert SHARED.is_dir(), f"the shared scenarios are expected at {SHARED}"
    assert any(load(f).get("game") == "zlj" for f in SHARED.glob("*.json"))


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_scenario(path: Path) -> None:
    doc = load(path)
    result = run(doc)
    assert check(doc, result) == []
