"""The project's Markdown documents as the tests of tests/docs read them: which documents there are, their fenced
blocks (with the `<!-- not run: … -->` marker before a block, docs/contributing.md, "Documents"), their headings as
GitHub anchors them, their links and their code spans. Plain text reading, no Markdown library: the documents keep to
the few constructs read here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
README = REPOSITORY / "README.md"
DOCS = REPOSITORY / "docs"
API = DOCS / "api.md"
"""Generated from the protos (`make docs`): its facts are corrected at their source, the protos' comments."""

MARKER = re.compile(r"^\s*<!--\s*not run:\s*(?P<kind>[a-z-]+)(?:\s*\((?P<why>[^)]*)\))?\s*-->\s*$")
"""What stands just before a block that the snippet tests do not run, and why: ``<!-- not run: cluster -->``."""
KINDS = ("interactive", "long-running", "cluster")
"""The kinds of blocks that are not run: each is still checked to parse."""
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
LINK = re.compile(r"!?\[(?P<text>(?:[^\[\]]|\[[^\]]*\])*)\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+)(?P<code>.+?)\1")


def documents() -> list[Path]:
    """The documents whose links must resolve: the README, docs/ (the rules too), the services' and the clients'
    READMEs."""
    found = [README, *sorted(DOCS.rglob("*.md"))]
    found += sorted(p for p in (REPOSITORY / "services").glob("*/README.md"))
    found += [REPOSITORY / "services" / "README.md", REPOSITORY / "clients" / "node" / "README.md"]
    return [p for p in found if p.is_file()]


def readers_documents() -> list[Path]:
    """The documents written by hand for the project's readers: the README and docs/*.md, not the generated api.md
    nor the rules (which state the games, not the code). Their facts are checked and their snippets run."""
    return [README, *sorted(p for p in DOCS.glob("*.md") if p != API)]


def name(path: Path) -> str:
    """A document's path from the repository's root (a document elsewhere, by its whole path)."""
    return path.relative_to(REPOSITORY).as_posix() if path.is_relative_to(REPOSITORY) else str(path)


@dataclass(frozen=True)
class Block:
    """A fenced block: its document, the line of its opening fence (1-based), its info string's first word, its
    text (the fence's indentation removed), and the marker before it (``None``: run it)."""

    document: Path
    line: int
    language: str
    text: str
    marker: str | None = None
    why: str = ""

    @property
    def where(self) -> str:
        return f"{name(self.document)}:{self.line}"


@cache
def lines_of(path: Path) -> tuple[str, ...]:
    return tuple(path.read_text(encoding="utf-8").splitlines())


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a document, in order."""
    lines = lines_of(path)
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening.group("indent"), opening.group("fence")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[j]):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        marker = why = None
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0 and (m := MARKER.match(lines[k])):
            marker, why = m.group("kind"), m.group("why") or ""
        language = (opening.group("info").strip().split() or [""])[0]
        found.append(Block(path, i + 1, language, "\n".join(body) + "\n", marker, why or ""))
        i = j + 1
    return found


def prose_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a document outside its fenced blocks."""
    inside: str | None = None
    for number, line in enumerate(lines_of(path), 1):
        fence = FENCE.match(line)
        if inside is None and fence:
            inside = fence.group("fence")[0]
            continue
        if inside is not None:
            if re.match(rf"^\s*{re.escape(inside)}{{3,}}\s*$", line):
                inside = None
            continue
        yield number, line


def plain(text: str) -> str:
    """A heading's text as it is shown: links become their text, code spans and emphasis lose their marks."""
    text = LINK.sub(lambda m: m.group("text"), text)
    text = CODE_SPAN.sub(lambda m: m.group("code"), text)
    return re.sub(r"(\*\*|__|\*|~~)", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, every character but letters, digits, ``_``, ``-`` and spaces
    dropped, spaces made ``-`` (``P1 — Pure core`` -> ``p1--pure-core``; CJK letters stay)."""
    return re.sub(r"[^\w\- ]", "", plain(heading).strip().lower()).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a document's headings give (a repeated heading's anchors numbered ``-1``, ``-2``, as GitHub
    does), and the ids of its explicit ``<a id="…">`` / ``<a name="…">``."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose_lines(path):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return frozenset(found)


def links(path: Path) -> Iterator[tuple[int, str]]:
    """(line, target) of each inline link and image of a document, outside fenced blocks and code spans."""
    for number, line in prose_lines(path):
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            yield number, match.group("target")


def dangling(path: Path, target: str) -> str | None:
    """What is wrong with a relative link ``target`` of the document ``path`` (``None``: it resolves). Links out of
    the repository (a scheme, ``//``) are not followed."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("//"):
        return None
    file, _, anchor = target.partition("#")
    destination = (path.parent / file).resolve() if file else path
    if not destination.exists():
        return f"{target}: no such file"
    try:
        destination.relative_to(REPOSITORY)
    except ValueError:
        return f"{target}: outside the repository"
    if anchor:
        if destination.is_dir() or destination.suffix != ".md":
            return f"{target}: an anchor in something that is not a Markdown document"
        if anchor not in anchors(destination):
            return f"{target}: {name(destination)} has no heading with the anchor #{anchor}"
    return None


def code_spans(text: str) -> list[str]:
    """The code spans of a text (a line, a paragraph)."""
    return [m.group("code").strip() for m in CODE_SPAN.finditer(text)]


def paragraphs(path: Path) -> Iterator[tuple[int, str]]:
    """(first line, text) of each paragraph of a document — lines between blank lines, fenced blocks included as
    paragraphs of their own."""
    start, current = 0, list[str]()
    for number, line in enumerate(lines_of(path), 1):
        if line.strip():
            if not current:
                start = number
            current.append(line)
        elif current:
            yield start, "\n".join(current)
            current = []
    if current:
        yield start, "\n".join(current)


def section(path: Path, heading: str) -> str:
    """The text of a document from the heading ``heading`` (its text, without the ``#``s) to the next heading of the
    same or a higher level (headings in fenced blocks are not headings)."""
    lines = lines_of(path)
    prose = {number - 1 for number, _ in prose_lines(path)}
    for i, line in enumerate(lines):
        match = re.match(r"^(#{1,6})\s+(.*?)\s*$", line) if i in prose else None
        if match and match.group(2) == heading:
            level = len(match.group(1))
            end = i + 1
            while end < len(lines):
                other = re.match(r"^(#{1,6})\s", lines[end]) if end in prose else None
                if other and len(other.group(1)) <= level:
                    break
                end += 1
            return "\n".join(lines[i:end])
    raise AssertionError(f"{name(path)} has no heading {heading!r}")
