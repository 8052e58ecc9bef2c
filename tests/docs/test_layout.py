"""The layout of docs/contributing.md matches the tree: every path it lists exists, and every package folder of every
layer (``services/<layer>/paiju/<package>/`` and its sub-packages one level down) is listed or lies under a listed
folder whose line names it."""

from __future__ import annotations

import re
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]


def layout() -> list[tuple[str, str]]:
    """Each line of the layout's code block as (path as written, the whole line)."""
    text = (REPOSITORY / "docs" / "contributing.md").read_text()
    section = text.split("## Layout", 1)[1]
    block = section.split("```", 2)[1]
    lines = []
    for line in block.splitlines():
        match = re.match(r"^(\S+)\s", line + " ")
        if match:
            lines.append((match.group(1), line))
    return lines


def listed_paths() -> list[str]:
    return [path.rstrip(",") for path, _ in layout()]


def test_every_path_the_layout_lists_exists() -> None:
    generated = {"services/contract/paiju/v1/"}  # made by `make protos`, listed as generated
    missing = [p for p in listed_paths() if p not in generated and not (REPOSITORY / p).exists()]
    assert missing == [], f"docs/contributing.md's layout lists paths that are not in the tree: {missing}"


def test_every_package_of_every_layer_is_in_the_layout() -> None:
    text = "\n".join(line for _, line in layout())
    listed = set(listed_paths())
    unlisted = []
    for package in sorted((REPOSITORY / "services").glob("*/paiju/*")):
        if not package.is_dir() or package.name in {"__pycache__", "v1"}:
            continue
        relative = f"{package.relative_to(REPOSITORY)}/"
        if relative in listed:
            continue
        # a package listed by its parent's line ("services/tools/paiju/tools/  analyst/ ...") counts
        parent = f"{package.parent.relative_to(REPOSITORY)}/"
        if not any(p.startswith(parent) for p in listed) or package.name not in text:
            unlisted.append(relative)
    assert unlisted == [], f"packages missing from docs/contributing.md's layout: {unlisted}"
