"""docs/contributing.md, "Adding a game", lists every place a game plugs in: each Python module whose code (not its
docstrings) names a game — imports a game's core, uses a name holding ``zlj`` or ``tractor``, or writes a game's
name as a string — is named there by its path under ``services/<layer>/paiju/`` (a game's own module may be written
with ``<game>``: ``scoring/<game>.py``), and so is each registry of the games, which asserts that it holds every game of
``paiju.rules.registry``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .markdown import DOCS, REPOSITORY, section

SERVICES = REPOSITORY / "services"
GAMES = ("zlj", "tractor")
GAME_WORD = re.compile(r"zlj|tractor", re.IGNORECASE)


def _listed() -> str:
    return section(DOCS / "contributing.md", "Adding a game")


def _names_a_game(source: str) -> bool:
    """Whether a module's code names a game: an import of a game's module, a name or attribute holding a game's name,
    or a game's name as a string (docstrings and comments do not count)."""
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.alias):
            names += [node.name, node.asname or ""]
        elif isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
        elif isinstance(node, ast.Constant) and node.value in GAMES:
            return True
        if any(GAME_WORD.search(n) for n in names):
            return True
    return False


def _place(path: Path) -> str:
    """A module's path under ``services/<layer>/paiju/`` (``engine/tractor.py``)."""
    return "/".join(path.relative_to(SERVICES).parts[2:])


def _listed_as(place: str, listed: str) -> bool:
    """Whether ``listed`` names a module: by its path, or with its game written ``<game>`` (``scoring/<game>.py``)."""
    general = re.sub(r"(?<![a-z])(zlj|tractor)(?![a-z])", "<game>", place)
    return f"`{place}`" in listed or f"`{general}`" in listed


def _places() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(SERVICES.glob("*/paiju/**/*.py")):
        relative = path.relative_to(SERVICES).as_posix()
        if relative.startswith("contract/paiju/v1/") or re.match(r"rules/paiju/rules/(zlj|tractor)/", relative):
            continue  # generated; a game's own core (listed as its folder)
        if _names_a_game(path.read_text(encoding="utf-8")):
            found.setdefault(_place(path), path)
    return found


def test_every_module_that_names_a_game_is_listed() -> None:
    places = _places()
    assert {"rules/registry.py", "contract/games.py", "engine/games.py", "scoring/zlj.py"} <= set(places)
    listed = _listed()
    missing = sorted(place for place in places if not _listed_as(place, listed))
    assert missing == [], "docs/contributing.md, Adding a game, does not list these modules that name a game"


def test_every_registry_of_the_games_is_listed() -> None:
    registries = [
        path
        for path in SERVICES.glob("*/paiju/**/*.py")
        if re.search(r"== list\((?:registry\.)?GAMES\)", path.read_text(encoding="utf-8"))
    ]
    assert len(registries) >= 7, "each layer's registry of games asserts it holds every game"
    missing = sorted(_place(path) for path in registries if not _listed_as(_place(path), _listed()))
    assert missing == []


def test_a_module_naming_a_game_in_its_code_is_found() -> None:
    assert _names_a_game("from paiju.rules.zlj import model\n")
    assert _names_a_game("BOTS = {'tractor': 1}\n")
    assert _names_a_game("x = registry.TRACTOR.name\n")
    assert not _names_a_game('"""Both games, 砸六家 (zlj) and 拖拉机 (tractor)."""\nx = 1\n')
    assert _place(SERVICES / "scoring" / "paiju" / "scoring" / "zlj.py") == "scoring/zlj.py"
    assert _listed_as("scoring/zlj.py", "`scoring/<game>.py`")
    assert _listed_as("terminal/tractor_match.py", "`terminal/<game>_match.py`")
    assert not _listed_as("lobby/games.py", "`lobby/table.py`")
