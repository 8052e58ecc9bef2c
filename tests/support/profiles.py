"""The suite's one Hypothesis profile: derandomized (the same examples on every run and machine), no example
database, no deadline (the machines are shared and noisy), and the slow-data health checks off.

``PAIJU_EXAMPLES`` scales every property's number of examples (a fraction, at least one example each): `make unit`
runs the inner loop at a tenth; `make test` runs them all."""

from __future__ import annotations

import math
import os

from hypothesis import HealthCheck, settings

SCALE = float(os.environ.get("PAIJU_EXAMPLES", "1") or "1")
"""The share of each property's examples this run tries."""


def examples(count: int) -> int:
    """``count`` examples, scaled by `SCALE` (at least one)."""
    return max(1, math.ceil(count * SCALE))


def profile(max_examples: int, *, scaled: bool = True) -> settings:
    """The settings of a property with ``max_examples`` examples (scaled, unless ``scaled`` is false: a search that
    must find its example needs them all)."""
    return settings(
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=examples(max_examples) if scaled else max_examples,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
        print_blob=False,
    )
