"""Every scenario file — the shared conformance ones and our own under tests/scenarios — passes.

The shared scenarios live beside the project (``../shared/scenarios``); a copy under tests/scenarios/shared
keeps a fresh clone self-contained, and where the shared folder is beside the clone (as in CI) the copy must
equal it. The runner only reports; `check` compares each file's expectations with the result (docs/cores.md,
"Scenarios").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from paiju.scenario import check, load, run

HERE = Path(__file__).parent
SHARED = HERE.parent.parent / "shared" / "scenarios"
COPY = HERE / "scenarios" / "shared"
GAMES = ("zlj", "tractor")
"""Games whose engines exist in this build."""


def _files() -> list[Path]:
    return [f for f in sorted((HERE / "scenarios").rglob("*.json")) if load(f).get("game") in GAMES]


def test_shared_scenarios_are_present() -> None:
    assert any(load(f).get("game") == "zlj" for f in COPY.glob("*.json"))
    assert any(load(f).get("game") == "tractor" for f in COPY.glob("*.json"))


def test_the_copy_of_the_shared_scenarios_is_the_shared_folder() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"no shared folder beside this clone ({SHARED}): the copy is what runs")
    shared = {f.name: f.read_bytes() for f in SHARED.glob("*.json")}
    copied = {f.name: f.read_bytes() for f in COPY.glob("*.json")}
    assert copied == shared, "tests/scenarios/shared differs from ../shared/scenarios: copy the shared files again"


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_scenario(path: Path) -> None:
    doc = load(path)
    result = run(doc)
    assert check(doc, result) == []
