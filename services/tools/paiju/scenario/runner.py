"""Run one scenario document and produce the result object described in `docs/cores.md`, "Scenarios"."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from paiju.rules.cards import CardSyntaxError
from paiju.rules.errors import RuleError

S = TypeVar("S")
C = TypeVar("C")
E = TypeVar("E")


class ScenarioError(Exception):
    """The file is not a valid scenario (the command exits 2)."""


def load(path: str | Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioError(f"cannot read {path}: {e.strerror}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ScenarioError(f"{path} is not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(doc, dict):
        raise ScenarioError(f"{path}: a scenario is a JSON object")
    return doc


def play_steps(
    doc: dict[str, Any],
    state: S,
    command_for: Callable[[dict[str, Any], int, int], C],
    decide: Callable[[S, C], Sequence[E]],
    replay: Callable[[Sequence[E], S], S],
) -> tuple[S, list[dict[str, Any]]]:
    """Apply a scenario's steps in turn: a rejected step is reported with its reason and changes nothing."""
    seed = int(doc.get("seed", 0))
    outcomes: list[dict[str, Any]] = []
    for i, step in enumerate(doc.get("steps", [])):
        try:
            events = decide(state, command_for(step, i, seed))
        except (RuleError, CardSyntaxError) as e:
            outcomes.append({"ok": False, "reason": e.reason})
            continue
        state = replay(events, state)
        outcomes.append({"ok": True})
    return state, outcomes


def run(doc: dict[str, Any]) -> dict[str, Any]:
    """Run a scenario document; raises `ScenarioError` when it is not a valid scenario."""
    game = doc.get("game")
    steps = doc.get("steps", [])
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise ScenarioError("'steps' must be a list of objects")
    if not isinstance(doc.get("start", {}), dict):
        raise ScenarioError("'start' must be an object")
    if not isinstance(doc.get("rules", {}), dict):
        raise ScenarioError("'rules' must be an object of rule options")
    from paiju.scenario.games import SCENARIOS  # the games' runners use this module's play_steps

    scenario = SCENARIOS.get(game) if isinstance(game, str) else None
    if scenario is None:
        names = " or ".join(f'"{name}"' for name in SCENARIOS)
        raise ScenarioError(f"'game' must be {names}, not {game!r}")
    try:
        result = scenario(doc)
    except CardSyntaxError as e:
        raise ScenarioError(f"start: {e.reason}") from None
    # every game's part of the result, in the registry's order: the scenario's game's, the others null
    ordered = {key: value for key, value in result.items() if key not in SCENARIOS}
    return ordered | {name: result.get(name) for name in SCENARIOS}
