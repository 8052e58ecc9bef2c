"""``h`` after a refused move shows the rule the engine cited (``RuleViolation.rule``), read from the project's
docs/rules/*.md by its id: a section, an item of a section, a decision or an item of one; an installed client
without the rules files cites the id and the file instead."""

from __future__ import annotations

import re
from pathlib import Path

import grpc

from paiju.terminal.client.engine import Refused
from paiju.terminal.client.rules_text import RULE_FILES, find_rule, rule_lines, rules_dir
from paiju.terminal.client.session import INSTRUCTIONS
from paiju.terminal.client.style import QUOTED, Style


def text(game: str, rule: str) -> str:
    return " ".join(" ".join(rule_lines(game, rule)).split())


def test_the_rules_files_are_found_from_the_package() -> None:
    folder = rules_dir()
    assert folder is not None and (folder / "tractor.md").is_file() and (folder / "zalioujia.md").is_file()


def test_a_decision_item_is_shown_by_its_id() -> None:
    lines = rule_lines("tractor", "D-TR-6.2")
    assert lines[0] == "Rule D-TR-6.2 (docs/rules/tractor.md):"
    said = text("tractor", "D-TR-6.2")
    assert "§7.2 / D-TR-6.2 — nothing is shown early. Until all four seats have bid or passed" in said
    assert "that too stays concealed." in said and "§7.3" not in said, "the item alone"
    assert all(len(line) <= 100 for line in lines) and "**" not in said


def test_a_section_item_and_a_decision_of_each_game() -> None:
    assert "§6.2 — long in the suit. If `|H| > n`, all `n` cards must be of `C`" in text("tractor", "§6.2")
    assert "§6.1" not in text("tractor", "§6.2")
    assert "D-ZLJ-2 — bomb against bomb: card count first, then rank." in text("zlj", "D-ZLJ-2")
    assert text("zlj", "§4.3").startswith("Rule §4.3 (docs/rules/zalioujia.md): - §4.3 — a bigger bomb.")
    # an item and its decision are the same rule
    assert "nothing is shown early" in text("tractor", "§7.2")
    # section numbers are per game
    assert "Tribute 进贡" in text("zlj", "§10") and "Matches and tournaments" in text("tractor", "§10")


def test_a_whole_section_is_cut_to_fit_with_where_to_read_the_rest() -> None:
    lines = rule_lines("zlj", "§3")
    assert lines[1] == "  §3 Combinations"
    assert "  A play must be exactly one of these combinations. Anything else is refused (§3)." in lines
    assert len(lines) <= 24 and lines[-1] == "  … (the rest in docs/rules/zalioujia.md)"


def test_a_decision_that_introduces_a_list_shows_the_list() -> None:
    said = text("tractor", "D-TR-5")
    assert said.startswith("Rule D-TR-5 (docs/rules/tractor.md): D-TR-5 — one rule for every tractor lead.")
    assert "- A structure is a tractor or special tractor" in said


def test_an_installed_client_without_the_rules_cites_the_id_and_the_file(tmp_path: Path) -> None:
    assert rules_dir(tmp_path / "site-packages" / "paiju" / "terminal" / "client" / "rules_text.py") is None
    assert rule_lines("tractor", "D-TR-5", folder=tmp_path) == [
        "The engine cited rule D-TR-5 of docs/rules/tractor.md; the rules files are not installed with this client."
    ]
    (tmp_path / "zalioujia.md").write_text("# nothing here\n", encoding="utf-8")
    assert rule_lines("zlj", "§3", folder=tmp_path) == [
        "The engine cited rule §3; docs/rules/zalioujia.md does not define it."
    ]
    assert find_rule("**D-TR-6** — one.\n**D-TR-6.1** — two.\n", "D-TR-6.1") == ["**D-TR-6.1** — two."]


def test_a_refusal_keeps_the_rule_it_cites() -> None:
    refused = Refused(grpc.StatusCode.FAILED_PRECONDITION, "Not allowed: x (§3)", "§3")
    assert refused.rule == "§3"


def _rule_ids(text: str) -> set[str]:
    marked = re.findall(r"\*\*(?:[^*]*?[ /])?(§\d+(?:\.\d+)*|D-[A-Z]+-\d+(?:\.\d+)*)", text)
    return set(marked) | set(re.findall(r"^## (§\d+)", text, flags=re.MULTILINE))


def test_every_rule_shows_its_cards_in_one_notation_the_terminals() -> None:
    folder = rules_dir()
    assert folder is not None
    symbols = Style(symbols=True)
    letter_card = re.compile(r"(?<![\w`-])(?:10|[2-9TJQKA])[SHCD](?![\w-])")
    shown_cards = 0
    for game, name in RULE_FILES.items():
        ids = _rule_ids((folder / name).read_text(encoding="utf-8"))
        assert len(ids) > 20
        for rule in sorted(ids):
            for line in rule_lines(game, rule, most=10_000):
                on_screen = symbols.apply(line)
                outside = "".join(QUOTED.split(on_screen)[::2])  # what is not between backticks
                assert not letter_card.search(outside), f"{rule}: {on_screen}"
                assert not re.search(r"10[♠♥♣♦]|[♠♥♣♦][2-9TJQKA]", on_screen), f"{rule}: {on_screen}"
                for quoted in QUOTED.findall(on_screen):
                    assert not re.fullmatch(r"`[\s2-9TJQKASHCD♠♥♣♦…=()+,.]*`", quoted) or not letter_card.search(
                        quoted
                    ), f"{rule}: a quoted card example stays letters: {on_screen}"
                shown_cards += len(re.findall(r"[2-9TJQKA][♠♥♣♦]", on_screen))
    assert shown_cards > 100
    # the same rule in plain letters on a terminal without UTF-8, never half and half
    plain = " ".join(Style().apply(line) for line in rule_lines("zlj", "§4.1"))
    assert "5S 6S 7S" in plain.replace("`", "") and "♠" not in plain
    assert "5♠ 6♠ 7♠" in " ".join(symbols.apply(line) for line in rule_lines("zlj", "§4.1"))


def test_what_to_type_stays_letters() -> None:
    assert Style(symbols=True).apply(INSTRUCTIONS).count("`3S 3H`") == 1
