"""Event stores: one aggregate (a game, a table) per subject, appended with optimistic concurrency.

`EventStore` is the interface; `MemoryEventStore` the in-memory fake and `JetStreamEventStore` the real one.
Both pass the same contract suite (tests/platform/test_store_contract.py).
"""

from paiju.platform.store.base import (
    Changes,
    ConcurrencyConflict,
    EventStore,
    Position,
    Recorded,
    StoreError,
    StoreUnavailable,
    Subscription,
)
from paiju.platform.store.memory import MemoryEventStore

__all__ = [
    "Changes",
    "ConcurrencyConflict",
    "EventStore",
    "MemoryEventStore",
    "Position",
    "Recorded",
    "StoreError",
    "StoreUnavailable",
    "Subscription",
]
