"""The Python runtime of a long-running Paiju process: how its cyclic garbage collector is set.

A service holds many long-lived objects (an engine's games: frozen dataclasses and tuples; a lobby's tables) and
allocates many short-lived ones per call. With CPython's defaults (a collection of the youngest generation every 700
allocations of container objects, of the middle one every 10 of those, of everything every 10 of those) the
collector walked the games in memory again and again: a fifth of the engine's CPU under load was `gc_collect_main`.
So, once a process has built what it keeps for its life, `settle` moves every object it holds then to the permanent
generation (`gc.freeze`: never scanned again) and collects far less often (`THRESHOLDS`). Memory is not left to the
collector: what is cached is bounded by the caches themselves, and reference counting frees nearly everything the
moment it is no longer used; the collector is only for cycles, which the youngest generation still gathers every
`THRESHOLDS[0]` allocations.
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 100)
"""The collector's thresholds: the youngest generation is collected every 50,000 container allocations (not 700),
the middle one every 20 of those, all of them every 100 of those (and then only when enough survived, as CPython
decides)."""


def settle() -> None:
    """Freeze what the process holds now and collect less often (see the module)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


__all__ = ["THRESHOLDS", "settle"]
