"""The text of a rule, by its id, from the project's rules files (docs/rules/*.md), for a player who asks why a move
was refused: the engine's refusal names the rule it applied (``RuleViolation.rule``: ``§6.2``, ``D-TR-5``, ``§10``;
docs/rules/README.md, "Rule ids"), and ``h`` at the prompt shows that rule's paragraph.

The rules files are found beside the package when it runs from the repository (or an environment inside it); an
installed client without them cites the rule's id and the file's name instead. Pure apart from reading the file.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from paiju.terminal.client.render import WIDTH

RULE_FILES = {"zlj": "zalioujia.md", "tractor": "tractor.md"}
"""Each game's rules file in docs/rules/."""
MOST_LINES = 24
"""A rule longer than this is cut, with where to read the rest."""


def rules_dir(start: Path | None = None) -> Path | None:
    """The ``docs/rules`` folder of the repository this package runs from, looking up from ``start`` (this file);
    ``None`` when there is none (an installed client)."""
    here = (start or Path(__file__)).resolve()
    for folder in here.parents:
        candidate = folder / "docs" / "rules"
        if candidate.is_dir():
            return candidate
    return None


CARD_TOKEN = re.compile(r"(?<![\w-])(?:10|[2-9TJQKA])[SHCD](?![\w-])|(?<![\w-])[SB]J(?![\w-])")
"""A card in the rules files' notation (``QS``, ``TD``, ``10D``, ``SJ``)."""
CARD_SPAN = re.compile(r"`([^`]*)`")
BETWEEN_CARDS = re.compile(r"[\s()=…,.+]*")


def _cards_unquoted(text: str) -> str:
    """``text`` with its quoted card examples (`` `5S 6S 7S` ``) unquoted and every ten written ``T``, so that the
    terminal shows them as it shows every other card (suit symbols where it can: ``5♠ 6♠ 7♠``, never ``5S 6♠``); a
    quoted span that is more than cards (`` `T x` ``, `` `CATCH3` ``) stays as it is."""

    def unquote(span: re.Match[str]) -> str:
        inside = span.group(1)
        if CARD_TOKEN.search(inside) is None or BETWEEN_CARDS.fullmatch(CARD_TOKEN.sub("", inside)) is None:
            return span.group(0)
        return CARD_TOKEN.sub(lambda card: card.group(0).replace("10", "T"), inside)

    return CARD_SPAN.sub(unquote, text)


def _plain(line: str) -> str:
    """A line of Markdown as plain text: no bold or italic markers, links by their text."""
    line = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", line)
    return line.replace("**", "").replace("*", "")


def _marker(rule: str) -> re.Pattern[str]:
    """Where a rule is defined: its ``## §n`` heading, or the bold marker that starts its item or paragraph
    (``**§6.1**``, ``**D-TR-1**``, ``**§7.2 / D-TR-6.2**``)."""
    rid = re.escape(rule)
    if re.fullmatch(r"§\d+", rule):
        return re.compile(rf"^## {rid}(?![\d.])")
    return re.compile(rf"\*\*(?:[^*]*?[ /])?{rid}(?![\d.])[^*]*\*\*")


def find_rule(text: str, rule: str) -> list[str] | None:
    """The lines of ``rule`` in a rules file's text: a section (``§n``) to its next section, an item or decision
    (``§n.m``, ``D-TR-n``) to the end of its item or paragraph (and the list it introduces, when it ends with a
    colon); ``None`` when the file does not define it."""
    lines = text.splitlines()
    marker = _marker(rule)
    start = next((i for i, line in enumerate(lines) if marker.search(line)), None)
    if start is None:
        return None
    first = lines[start]
    if first.startswith("## "):
        end = next((j for j in range(start + 1, len(lines)) if lines[j].startswith("## ")), len(lines))
        return lines[start:end]
    indent = len(first) - len(first.lstrip())
    item = first.lstrip().startswith("- ")
    block = [first]
    j = start + 1
    while j < len(lines):
        line = lines[j]
        stripped = line.lstrip()
        if not stripped or line.startswith("#"):
            if block[-1].rstrip().endswith(":") and not stripped and j + 1 < len(lines):
                j += 1  # the list the paragraph introduces
                while j < len(lines) and lines[j].strip():
                    block.append(lines[j])
                    j += 1
            break
        if item and stripped.startswith("- ") and len(line) - len(stripped) <= indent:
            break
        block.append(line)
        j += 1
    return block


def _logical(lines: list[str]) -> list[tuple[int, str]]:
    """The rule's lines joined into paragraphs, list items and table rows (the rules files break their lines at
    a fixed width), each with its indent, as plain text; ``(0, "")`` between paragraphs."""
    out: list[tuple[int, str]] = []
    joinable = False
    for raw in lines:
        line = _plain(raw).rstrip()
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if not stripped:
            if out and out[-1][1]:
                out.append((0, ""))
            joinable = False
            continue
        if stripped.startswith("## "):
            stripped = stripped[3:]
        starts = stripped.startswith("|") or re.match(r"(- |\d+\. |\([a-z]\) )", stripped) is not None
        if joinable and not starts:
            out[-1] = (out[-1][0], f"{out[-1][1]} {stripped}")
        else:
            out.append((indent, stripped))
        joinable = not stripped.startswith("|") and not raw.startswith("#")
    return out


def rule_lines(game: str, rule: str, folder: Path | None = None, most: int = MOST_LINES) -> list[str]:
    """The text of ``rule`` of ``game`` (``zlj``, ``tractor``) from its rules file in ``folder`` (default: the
    repository's docs/rules), wrapped for the terminal; with no rules file, the rule's id and where to read it."""
    name = RULE_FILES.get(game)
    where = f"docs/rules/{name}" if name else "docs/rules"
    folder = folder if folder is not None else rules_dir()
    if name is None or folder is None or not (folder / name).is_file():
        return [f"The engine cited rule {rule} of {where}; the rules files are not installed with this client."]
    try:
        text = (folder / name).read_text(encoding="utf-8")
    except OSError as e:
        return [f"The engine cited rule {rule} of {where}, which cannot be read here ({e.strerror})."]
    found = find_rule(text, rule)
    if found is None:
        return [f"The engine cited rule {rule}; {where} does not define it."]
    out = [f"Rule {rule} ({where}):"]
    for indent, said in _logical(found):
        text = _cards_unquoted(said)
        if not text:
            out.append("")
        elif text.startswith("|"):
            out.append("  " + text)  # a table row as it is
        else:
            hang = 2 if re.match(r"(- |\d+\. )", text) else 0
            out += textwrap.wrap(
                text,
                width=WIDTH,
                initial_indent=" " * (2 + indent),
                subsequent_indent=" " * (2 + indent + hang),
                break_on_hyphens=False,
            )
    while out and not out[-1]:
        out.pop()
    if len(out) > most:
        out = [*out[: most - 1], f"  … (the rest in {where})"]
    return out


__all__ = ["RULE_FILES", "find_rule", "rule_lines", "rules_dir"]
