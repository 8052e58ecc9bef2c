"""The README is a map of a few screens: at most 12,000 bytes, saying what Paiju is, the two commands, one picture,
and a link to each reader's document — every document of docs/ is reached from it."""

from __future__ import annotations

import re

from .markdown import DOCS, README, blocks, links, readers_documents

MAX_BYTES = 12_000


def test_the_readme_is_a_map_of_a_few_screens() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_BYTES, f"README.md is {size} bytes: move what is not a map into a reader's document"


def test_the_readme_says_what_paiju_is_and_gives_the_two_commands() -> None:
    text = README.read_text()
    assert text.startswith("# Paiju")
    assert "砸六家" in text and "拖拉机" in text
    commands = [
        line.split("#")[0].strip()
        for block in blocks(README)
        if block.language == "sh"
        for line in block.text.splitlines()
    ]
    assert {"make run", "make test"} <= set(commands)
    assert "make help" in text


def test_the_readme_has_one_picture() -> None:
    pictures = [target for _, target in links(README) if re.search(r"\.(png|jpe?g|gif|svg)$", target)]
    assert len(pictures) == 1, pictures


def test_the_readme_links_every_readers_document() -> None:
    linked = {target.split("#")[0] for _, target in links(README)}
    documents = [*sorted(DOCS.glob("*.md")), DOCS / "rules" / "README.md"]
    missing = [
        p.relative_to(README.parent).as_posix()
        for p in documents
        if p.relative_to(README.parent).as_posix() not in linked
    ]
    assert missing == []
    for reader in ("operations.md", "clients.md", "analysts.md", "bots.md", "contributing.md", "architecture.md"):
        assert f"docs/{reader}" in linked
    assert len(readers_documents()) >= 10
