"""The partitions of the games this engine replica owns (docs/architecture.md, "Ownership of games").

The replicas share the games out by partition through leases (`paiju.platform.ownership`, which says when this
replica's share changes). Owning a partition means following its events (the store's feed carries only the
partitions owned) and running its games' timers; any other game is still answered for, read through the store. This
is what `Games` asks of ownership: whether a game is this replica's, whether the feed keeps it current here, and
which partitions a change of share gained.
"""

from __future__ import annotations

from paiju.engine.metrics import PARTITIONS_OWNED
from paiju.platform.store import EventStore


class OwnedPartitions:
    """Which partitions of ``store`` this replica owns: ``None`` (at first) is every game, as a replica alone owns
    them."""

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self.partitions: frozenset[int] | None = None
        """The partitions owned (``None``: every game)."""

    def owns(self, game_id: str) -> bool:
        """Whether this replica owns ``game_id``'s partition (keeps it current from its feed, runs its timers)."""
        return self.partitions is None or self._store.partition(game_id) in self.partitions

    def carries(self, game_id: str) -> bool:
        """Whether the feed keeps ``game_id`` current here: a game this replica owns, or one stored before the stream
        had partitions (every feed carries those)."""
        return self.owns(game_id) or self._store.unpartitioned(game_id)

    def partition(self, game_id: str) -> int:
        """The partition of ``game_id``."""
        return self._store.partition(game_id)

    async def own(self, partitions: frozenset[int] | None) -> frozenset[int] | None:
        """From now on this replica owns ``partitions`` (``None``: every game), and the store's feed carries only
        them. The partitions gained (none when it owned every game before); ``None`` when nothing changed.

        The share changes only once the store's feed follows it: when the store raises (NATS away half-way), the
        replica still owns what it owned, and the same call made again is the whole change again, gained partitions
        included. A call that changes nothing still lets the store mend a feed an earlier failure left down."""
        before = self.partitions
        await self._store.own(partitions)
        if partitions == before:
            return None
        self.partitions = partitions
        PARTITIONS_OWNED.set(self._store.partitions if partitions is None else len(partitions))
        if before is None:
            return frozenset()
        every = frozenset(range(max(self._store.partitions, 1)))  # a store without partitions has its games in 0
        now = every if partitions is None else partitions
        return now - before
