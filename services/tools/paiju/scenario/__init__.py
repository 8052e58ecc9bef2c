"""Rule scenarios (`docs/cores.md`, "Scenarios"): run a scenario file against a rules core and check its
expectations."""

from paiju.scenario.check import check
from paiju.scenario.runner import ScenarioError, load, run

__all__ = ["ScenarioError", "check", "load", "run"]
