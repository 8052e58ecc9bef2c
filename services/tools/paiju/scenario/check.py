"""Compare a scenario's expectations with its result (`docs/cores.md`, "Scenarios")."""

from __future__ import annotations

from typing import Any

from paiju.rules.cards import CardSyntaxError, parse_cards


def _as_cards(value: str) -> list[int] | None:
    try:
        return sorted(parse_cards(value))
    except CardSyntaxError:
        return None


def _diff(expected: Any, actual: Any, path: str, out: list[str]) -> None:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            out.append(f"{path}: expected an object, got {actual!r}")
            return
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}: missing from the result")
            else:
                _diff(value, actual[key], f"{path}.{key}", out)
        return
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            out.append(f"{path}: expected {expected!r}, got {actual!r}")
            return
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _diff(e, a, f"{path}[{i}]", out)
        return
    if isinstance(expected, str) and isinstance(actual, str) and expected != actual:
        e_cards, a_cards = _as_cards(expected), _as_cards(actual)
        if e_cards is not None and e_cards == a_cards:
            return
    if expected != actual or type(expected) is not type(actual):
        out.append(f"{path}: expected {expected!r}, got {actual!r}")


def check(scenario: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """Every mismatch between the scenario's ``expect`` fields and the result (empty: it passes)."""
    problems: list[str] = []
    for i, step in enumerate(scenario.get("steps", [])):
        want = step.get("expect")
        if want is None:
            continue
        ok = result["steps"][i]["ok"]
        if want not in ("ok", "rejected"):
            problems.append(f'steps[{i}].expect must be "ok" or "rejected", not {want!r}')
        elif ok != (want == "ok"):
            reason = result["steps"][i].get("reason")
            problems.append(f"steps[{i}]: expected {want}, got {'ok' if ok else 'rejected'} ({reason})")
    if "expect" in scenario:
        _diff(scenario["expect"], result, "result", problems)
    return problems
