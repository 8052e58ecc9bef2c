"""The ids the normative rules define (`§n`, `§n.m`, `D-ZLJ-n`, `D-TR-n`): written out here, and read from the
rules files themselves when `shared/rules/` sits beside the repository (as in CI), so that the tests of rule
citations (tests/rules) and of the project's own rules documents (tests/docs) check against one list."""

from __future__ import annotations

import re
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
RULES_FILES = REPOSITORY.parent / "shared" / "rules"

# The ids the rules files define, written out from them: each `## N.` heading is §N and its numbered items
# `1.`, `2.` … are §N.1, §N.2 …; each **D-…-n** is a decision, and a decision that opens a paragraph owns the
# numbered items after it (D-TR-6.1 … D-TR-6.6). `test_the_id_lists_match_the_rules_files` keeps these lists
# equal to the files when shared/rules/ sits beside the repository; update both together.
ZLJ_IDS = frozenset(
    [f"§{n}" for n in range(1, 15)] + ["§4.1", "§4.2", "§4.3", "§4.4", "§4.5"] + [f"D-ZLJ-{n}" for n in range(1, 13)]
)
"""shared/rules/zalioujia.md: §1-§14, the five cases of §4, D-ZLJ-1 … D-ZLJ-12."""
TRACTOR_IDS = frozenset(
    [f"§{n}" for n in range(1, 13)]
    + ["§6.1", "§6.2"]
    + [f"§7.{n}" for n in range(1, 7)]
    + [f"D-TR-{n}" for n in range(1, 12)]
    + [f"D-TR-6.{n}" for n in range(1, 7)]
)
"""shared/rules/tractor.md: §1-§12, §6.1-§6.2 (following), §7.1-§7.6 (= D-TR-6.1 … D-TR-6.6), D-TR-1 … D-TR-11."""


def defined_ids(text: str) -> set[str]:
    """The ids a rules file defines (see the comment above `ZLJ_IDS`)."""
    ids: set[str] = set()
    section: str | None = None
    decision: str | None = None
    for line in text.splitlines():
        if heading := re.match(r"## ([0-9]+)\.", line):
            section, decision = heading[1], None
            ids.add(f"§{section}")
            continue
        if opening := re.match(r"\*\*(D-(?:ZLJ|TR)-[0-9]+)\*\*", line):
            decision = opening[1]
        ids.update(re.findall(r"\*\*(D-(?:ZLJ|TR)-[0-9]+)\*\*", line))
        if section is not None and (item := re.match(r"([0-9]+)\. ", line)):
            ids.add(f"§{section}.{item[1]}")
            if decision is not None:
                ids.add(f"{decision}.{item[1]}")
    return ids
