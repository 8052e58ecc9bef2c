"""Run one scenario document and produce the result object of `conformance.md`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paiju.rules.cards import CardSyntaxError


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
    try:
        if game == "zlj":
            from paiju.scenario import zlj

            return zlj.run(doc)
        if game == "tractor":
            from paiju.scenario import tractor

            return tractor.run(doc)
    except CardSyntaxError as e:
        raise ScenarioError(f"start: {e.reason}") from None
    raise ScenarioError(f'\'game\' must be "zlj" or "tractor", not {game!r}')
