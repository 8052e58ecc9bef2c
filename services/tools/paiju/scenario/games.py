"""The games a scenario may name (its ``game``): one runner per game of the registry (`paiju.rules.registry`), by the
game's name. Each gives its result's own part under the game's name; `paiju.scenario.runner` sets the other games'
parts to ``null``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paiju.rules import registry
from paiju.scenario import tractor, zlj

SCENARIOS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    registry.ZLJ.name: zlj.run,
    registry.TRACTOR.name: tractor.run,
}
"""Every game's scenario runner, by name, in the registry's order."""
assert list(SCENARIOS) == list(registry.GAMES), "every game of the registry runs scenarios"
