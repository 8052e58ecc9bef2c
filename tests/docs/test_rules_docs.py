"""Every rule id the project cites can be looked up in its own rules, `docs/rules/`.

The code, the protos, the clients and the project's other documents cite rules by id: sections ``§6`` and their
numbered items ``§6.2``, decisions ``D-ZLJ-4`` / ``D-TR-6`` and their numbered items ``D-TR-6.2``, and paiju's own
scoring decisions ``S-1``, ``S-2``. This test reads those files (plain text, no imports of the project) and checks
that each cited id is *defined* in `docs/rules/`: it appears in a heading or in a bold span (``**D-ZLJ-4**``) of
the right file. A mere mention in running text ("see §6.2") defines nothing.

The right file: ``D-ZLJ-n`` lives in zalioujia.md, ``D-TR-n`` in tractor.md. A section id or an ``S-n`` belongs to
the game named just before it on the same line (``拖拉机 §10``, ``tractor.md §4``), else to the one game the line
names, else to the game of the citing file's path (``rules/zlj/``, ``tractor.proto``); when none of these decides
(a line naming both games, a shared module), the id must be defined in at least one of the two files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..support.rule_ids import TRACTOR_IDS, ZLJ_IDS

REPOSITORY = Path(__file__).resolve().parents[2]
RULES = REPOSITORY / "docs" / "rules"

ZLJ = "zalioujia.md"
TRACTOR = "tractor.md"
GAME_FILES = (ZLJ, TRACTOR)

RULE_ID = re.compile(
    r"D-(?:ZLJ|TR)-[0-9]+(?:\.[0-9]+)*(?![0-9])"  # decisions and their numbered items: D-ZLJ-4, D-TR-6.2
    r"|§ ?[0-9]+(?:\.[0-9]+)*(?![0-9])"  # sections and their numbered items: §6, §6.2 (also written "§ 6")
    r"|(?<![\w-])S-[0-9]+(?![\w-])"  # paiju's scoring decisions: S-1, S-2
)
"""A rule id as the project writes it."""

GAME_WORDS = {
    ZLJ: re.compile(r"(?<![a-z])(?<!d-)zlj(?![a-z])|zalioujia|za ?liu ?jia|砸六家", re.IGNORECASE),
    TRACTOR: re.compile(r"tractor|拖拉机", re.IGNORECASE),
}
"""Words that name a game, on a line or in a path (``rules/zlj/``, ``zlj_narrator``; not the ``ZLJ`` of an id)."""
NEAR = 20
"""A game word ends at most this many characters before a citation to be its prefix (``拖拉机 §10``)."""

SOURCES: tuple[tuple[str, str], ...] = (
    ("services", "**/*.py"),
    ("protos", "**/*.proto"),
    ("clients", "**/*.js"),
    ("protos", "**/*.md"),
    ("clients", "**/*.md"),
    ("docs", "*.md"),
    (".", "README.md"),
)
"""Where the project cites rules: (folder, glob). `docs/rules/` itself is not scanned: it is what is checked."""
SKIPPED_DIRS = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".git", ".mypy_cache", ".ruff_cache"})


@dataclass(frozen=True)
class Citation:
    """One rule id cited at ``where`` (``path:line``); ``game`` is the rules file it belongs to, or ``None``."""

    rule: str
    where: str
    game: str | None


# --- reading the citations ----------------------------------------------------------------------------------


def normalise(rule: str) -> str:
    """``§ 6`` is written ``§6`` in the rules."""
    return rule.replace("§ ", "§")


def source_files(root: Path = REPOSITORY) -> list[Path]:
    found: set[Path] = set()
    for folder, pattern in SOURCES:
        base = root / folder
        if not base.is_dir():
            continue
        for path in base.glob(pattern):
            parts = path.relative_to(root).parts
            if path.is_file() and not SKIPPED_DIRS.intersection(parts) and not path.is_relative_to(root / "docs/rules"):
                found.add(path)
    return sorted(found)


def game_of_path(path: str) -> str | None:
    games = [game for game, words in GAME_WORDS.items() if words.search(path)]
    return games[0] if len(games) == 1 else None


def game_at(line: str, start: int, path: str) -> str | None:
    """The game a citation at ``line[start:]`` belongs to (see the module docstring), or ``None``."""
    before: list[tuple[int, str]] = []
    named: set[str] = set()
    for game, words in GAME_WORDS.items():
        for hit in words.finditer(line):
            named.add(game)
            if hit.end() <= start:
                before.append((hit.end(), game))
    if before and start - max(before)[0] <= NEAR:
        return max(before)[1]
    if len(named) == 1:
        return named.pop()
    if named:
        return None
    return game_of_path(path)


def citations_in(text: str, path: str) -> Iterator[Citation]:
    """The rule ids cited in ``text`` (the contents of ``path``, relative to the repository)."""
    for number, line in enumerate(text.splitlines(), start=1):
        for hit in RULE_ID.finditer(line):
            rule = normalise(hit[0])
            if rule.startswith("D-ZLJ-"):
                game: str | None = ZLJ
            elif rule.startswith("D-TR-"):
                game = TRACTOR
            else:
                game = game_at(line, hit.start(), path)
            yield Citation(rule, f"{path}:{number}", game)


def project_citations(root: Path = REPOSITORY) -> list[Citation]:
    found: list[Citation] = []
    for path in source_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        found.extend(citations_in(text, path.relative_to(root).as_posix()))
    return found


# --- reading the rules --------------------------------------------------------------------------------------

HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*)$")
BOLD = re.compile(r"\*\*(.+?)\*\*")


def defined_ids(text: str) -> set[str]:
    """The ids a rules file defines: those in a heading line or in a bold span (``**D-ZLJ-4**``)."""
    ids: set[str] = set()
    for line in text.splitlines():
        anchors: list[str] = [m[1] for m in BOLD.finditer(line)]
        if heading := HEADING.match(line):
            anchors.append(heading[1])
        for anchor in anchors:
            ids.update(normalise(m[0]) for m in RULE_ID.finditer(anchor))
    return ids


def rules_ids(rules: Path = RULES) -> dict[str, set[str]]:
    """What each game's rules file defines (an empty set for a missing file)."""
    return {
        name: defined_ids((rules / name).read_text(encoding="utf-8")) if (rules / name).is_file() else set()
        for name in GAME_FILES
    }


def missing(citations: Iterable[Citation], defined: dict[str, set[str]]) -> list[str]:
    """The citations whose id is not defined where it belongs, as ``where: id (file)`` lines."""
    problems: list[str] = []
    for c in citations:
        if c.game is not None:
            if c.rule not in defined.get(c.game, set()):
                problems.append(f"{c.where}: {c.rule} is not defined in docs/rules/{c.game}")
        elif not any(c.rule in ids for ids in defined.values()):
            problems.append(f"{c.where}: {c.rule} is defined in neither docs/rules/{ZLJ} nor docs/rules/{TRACTOR}")
    return problems


# --- the checks ---------------------------------------------------------------------------------------------


def test_the_rules_files_exist() -> None:
    for name in (*GAME_FILES, "README.md"):
        assert (RULES / name).is_file(), f"docs/rules/{name} is missing"


def test_every_cited_rule_id_is_defined_in_docs_rules() -> None:
    citations = project_citations()
    problems = missing(citations, rules_ids())
    assert not problems, f"{len(problems)} cited rule id(s) cannot be looked up in docs/rules:\n" + "\n".join(problems)


def test_the_scan_finds_the_project_citations() -> None:
    """Guards against a scan that silently finds nothing (a moved folder, a broken glob)."""
    citations = project_citations()
    assert len(citations) > 300
    by_rule = {(c.rule, c.game) for c in citations}
    assert ("D-TR-6.1", TRACTOR) in by_rule  # protos/paiju/v1/tractor.proto
    assert ("§6.2", TRACTOR) in by_rule  # services/rules/paiju/rules/tractor/follow.py
    assert ("§13", ZLJ) in by_rule  # services/rules/paiju/rules/zlj/game.py
    assert ("S-2", None) in by_rule or ("S-2", ZLJ) in by_rule or ("S-2", TRACTOR) in by_rule  # scoring
    paths = {c.where.split(":")[0] for c in citations}
    assert any(p.endswith(".proto") for p in paths) and any(p.endswith(".py") for p in paths)
    assert not any("node_modules" in p or p.startswith("docs/rules/") for p in paths)


def test_a_made_up_id_is_reported_missing() -> None:
    """The check can fail: an id the rules do not define, or one defined only in the other game's file."""
    defined = rules_ids()
    text = "def f() -> None:\n    raise IllegalAction('no such rule (D-ZLJ-999)')\n"
    assert missing(citations_in(text, "services/x.py"), defined) == [
        "services/x.py:2: D-ZLJ-999 is not defined in docs/rules/zalioujia.md"
    ]
    # §13 and §14 are 砸六家 sections: 拖拉机 has §1-§12 only
    assert missing(citations_in("a 拖拉机 rule (§14)", "a.py"), defined) == [
        "a.py:1: §14 is not defined in docs/rules/tractor.md"
    ]
    assert missing(citations_in("see §13", "services/rules/paiju/rules/tractor/x.py"), defined) != []
    assert missing(citations_in("paiju decision S-99", "a.py"), defined) != []
    assert missing(citations_in("§14 / §12 and D-TR-6.6", "protos/cards.proto"), defined) == []


@pytest.mark.parametrize(
    ("line", "path", "games"),
    [
        ("拖拉机 §10; 砸六家 by the same scale, paiju decision S-1", "x.py", [TRACTOR, None]),
        ("拖拉机 §10; 砸六家 S-1", "x.py", [TRACTOR, ZLJ]),
        ("it does not beat the current play (§4; D-ZLJ-2)", "services/rules/paiju/rules/zlj/combos.py", [ZLJ, ZLJ]),
        ("a section ``§6`` or ``§6.2``, a decision ``D-ZLJ-2``", "paiju/rules/errors.py", [None, None, ZLJ]),
        ("`zlj`, `tractor`, `seats_assigned` — redacted for the receiving seat (rules §14 / §12)", "a.md", [None] * 2),
        ("follow it (§6.1)", "services/rules/paiju/rules/tractor/follow.py", [TRACTOR]),
        ("cut (§9)", "services/rules/paiju/rules/zlj/game.py", [ZLJ]),
        ("rules § 14 / §12", "protos/paiju/v1/cards.proto", [None, None]),
        ("(§10, S-1: team points for 砸六家)", "services/scoring/paiju/scoring/sheets.py", [ZLJ, ZLJ]),
    ],
)
def test_a_citation_belongs_to_the_game_named_just_before_it(line: str, path: str, games: list[str | None]) -> None:
    assert [c.game for c in citations_in(line, path)] == games


def test_only_headings_and_bold_spans_define_ids() -> None:
    text = (
        "# 砸六家\n## §6 Rounds\n### §6.2 Passing\n- **D-ZLJ-4** — a pass does not lock you out.\n"
        "See §7 and D-ZLJ-5 for more.\n**§4.1** Same kind.\n**S-1** and **D-TR-6.2 (§7.2)**\n"
    )
    assert defined_ids(text) == {"§6", "§6.2", "D-ZLJ-4", "§4.1", "S-1", "D-TR-6.2", "§7.2"}


# --- the ids of the shared rules ----------------------------------------------------------------------------

SHARED_IDS = {ZLJ: ZLJ_IDS, TRACTOR: TRACTOR_IDS}
"""The ids of the rules (`tests/support/rule_ids.py`, kept equal to `shared/rules/` by tests/rules)."""
PAIJU_IDS = {"S-1", "S-2"}
"""paiju's scoring decisions (`paiju.scoring.victory`, `paiju.scoring.sheets`), in both games' files."""


@pytest.mark.parametrize("name", GAME_FILES)
def test_every_id_of_the_shared_rules_has_its_own_anchor(name: str) -> None:
    absent = (SHARED_IDS[name] | PAIJU_IDS) - rules_ids()[name]
    assert not absent, f"docs/rules/{name} has no heading or bold line for {sorted(absent)}"
