"""No relative link or anchor of the project's documents dangles, and the code's citations of a document's section
name one that exists.

Links: every inline link and image of the README, docs/ (the rules and the generated api.md too) and the services'
and clients' READMEs whose target is in the repository must name a file or folder that exists, and its ``#anchor`` a
heading of that Markdown document as GitHub anchors it (`markdown.slug`). Citations: docstrings and comments cite a
document's section as ``docs/cores.md, "Scenarios"`` or by its anchor ``docs/architecture.md#p8--…``; the section
must exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .markdown import REPOSITORY, anchors, dangling, documents, links, name, plain, prose_lines, slug

CITED_SOURCES = ("services", "examples", "bench", "protos", "clients/node")
"""Where the code cites documents (tests/ cite them too, but are not this test's to correct)."""
QUOTED = re.compile(r"`?(?P<doc>(?:docs/)?[\w/.-]*[\w-]+\.md)`?,?\s+[\"“](?P<section>[^\"”\n]+)[\"”]")
"""``docs/cores.md, "Scenarios"`` (with or without code marks around the path)."""
GENERATED = REPOSITORY / "services" / "contract" / "paiju" / "v1"
ANCHORED = re.compile(r"(?P<doc>docs/[\w/.-]+\.md)#(?P<anchor>[\w-]+)")


@pytest.mark.parametrize("document", documents(), ids=name)
def test_every_relative_link_resolves(document: Path) -> None:
    broken = [
        f"{name(document)}:{line}: {problem}"
        for line, target in links(document)
        if (problem := dangling(document, target))
    ]
    assert broken == []


def test_a_dangling_link_and_a_missing_anchor_are_found(tmp_path: Path) -> None:
    folder = REPOSITORY / "docs"
    assert dangling(folder / "clients.md", "operations.md#capacity") is None
    assert dangling(folder / "clients.md", "#tokens") is None
    assert dangling(folder / "clients.md", "nowhere.md") == "nowhere.md: no such file"
    assert "no heading with the anchor #no-such-heading" in str(dangling(folder / "clients.md", "#no-such-heading"))
    assert dangling(folder / "clients.md", "https://example.org/x.md#y") is None


def test_anchors_are_githubs() -> None:
    assert slug("P1 — Pure core, thin shell") == "p1--pure-core-thin-shell"
    assert slug("bot runner (`paiju bots`)") == "bot-runner-paiju-bots"
    assert slug("The 砸六家 core") == "the-砸六家-core"
    assert slug("Against `make run`") == "against-make-run"
    assert slug("[Linked](x.md) **heading**") == "linked-heading"
    assert {"p8--structured-logs-and-metrics", "ownership-of-games"} <= anchors(REPOSITORY / "docs" / "architecture.md")


def _headings(document: Path) -> set[str]:
    found = set()
    for _, line in prose_lines(document):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if heading:
            found.add(plain(heading.group(1)).strip())
    return found


def _citations() -> list[tuple[str, str, str]]:
    """(where, document, section or #anchor) of every citation of a document's section in the code."""
    found = []
    for folder in CITED_SOURCES:
        for path in sorted((REPOSITORY / folder).rglob("*")):
            generated = path.is_relative_to(GENERATED)
            built = {"node_modules", "dist", "gen"} & set(path.parts)  # the TypeScript client's packages and output
            if path.suffix not in {".py", ".proto", ".ts"} or built or generated:
                continue
            text = path.read_text(encoding="utf-8")
            for match in QUOTED.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"{name(path)}:{line}", match.group("doc"), match.group("section")))
            for match in ANCHORED.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"{name(path)}:{line}", match.group("doc"), "#" + match.group("anchor")))
    return found


def test_the_code_cites_sections_that_exist() -> None:
    citations = _citations()
    assert len(citations) > 10, "the citations of the code are read"
    missing = []
    for where, document, cited in citations:
        path = REPOSITORY / document
        if not path.is_file():
            missing.append(f"{where}: {document} does not exist")
            continue
        if cited.startswith("#"):
            if cited[1:] not in anchors(path):
                missing.append(f"{where}: {document} has no anchor {cited}")
        elif cited not in _headings(path):
            missing.append(f"{where}: {document} has no section {cited!r}")
    assert missing == []
