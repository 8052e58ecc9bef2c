"""Which command stored which events of a game: the index that lets a retry be answered exactly as the first time,
however long ago its command was stored (the contract's promise for `Act`).

It is the one part of a game in memory that grows with the game's length, so it is kept small: the newest command
ids exactly (`EXACT` of them, a dict), the older ones only as a 64-bit hash of their id beside the index of their
first event, in an open-addressed table of two machine arrays at most two thirds full (24 to 48 bytes a command,
against about 150 for a dict of strings). A hash can match a command id it was not made from; the caller confirms a
match against the envelopes it reads (an envelope names its command), so a collision costs a read, never a wrong
answer.
The hashes are Python's string hash: stable within a process, which is all an index rebuilt at each load needs.
"""

from __future__ import annotations

from array import array

EXACT = 64
"""The newest command ids kept exactly (a retry is nearly always of one of them)."""
_EMPTY = 0
_MASK = (1 << 64) - 1


def _key(command_id: str) -> int:
    """The command id's 64-bit key in the table (never `_EMPTY`)."""
    return (hash(command_id) & _MASK) or 1


class CommandIndex:
    """Command id -> the index (version - 1) of its first event; the first index recorded for an id stays. Shared by
    a game's successive snapshots (append-only): an entry at or past a snapshot's version belongs to a later one."""

    __slots__ = ("_exact", "_indexes", "_keys", "_mask", "_older")

    def __init__(self) -> None:
        self._exact: dict[str, int] = {}
        self._keys = array("Q", bytes(8 * 8))
        self._indexes = array("q", bytes(8 * 8))
        self._older = 0
        self._mask = 7

    def __len__(self) -> int:
        return len(self._exact) + self._older

    @property
    def nbytes(self) -> int:
        """An estimate of the bytes the index holds (for the game cache's bound)."""
        return 150 * len(self._exact) + 16 * (self._mask + 1)

    def setdefault(self, command_id: str, index: int) -> None:
        """Record that ``command_id`` stored its first event at ``index``, unless it is among the newest already (a
        command's events are stored together, and a command id is never stored again apart: a retry is answered)."""
        if command_id in self._exact:
            return
        self._exact[command_id] = index
        if len(self._exact) >= 2 * EXACT:
            for old in list(self._exact)[:EXACT]:
                self._put(_key(old), self._exact.pop(old))

    def candidates(self, command_id: str) -> tuple[int, ...]:
        """Where ``command_id`` may have stored its first event: its index when it is among the newest commands;
        else the index of every older command whose id hashes as it does — nearly always none or one, which the
        caller confirms against the envelopes stored there. Empty: the id stored nothing."""
        found = self._exact.get(command_id)
        if found is not None:
            return (found,)
        key, keys, mask = _key(command_id), self._keys, self._mask
        matches: tuple[int, ...] = ()
        i = key & mask
        while (k := keys[i]) != _EMPTY:
            if k == key:
                matches = (*matches, self._indexes[i])
            i = (i + 1) & mask
        return matches

    def _put(self, key: int, index: int) -> None:
        if 3 * (self._older + 1) > 2 * (self._mask + 1):  # at most two thirds full
            self._grow()
        keys, mask = self._keys, self._mask
        i = key & mask
        while keys[i] != _EMPTY:  # another command's, even one with the same hash: both are kept
            i = (i + 1) & mask
        keys[i] = key
        self._indexes[i] = index
        self._older += 1

    def _grow(self) -> None:
        entries = [(k, v) for k, v in zip(self._keys, self._indexes, strict=True) if k != _EMPTY]
        size = 2 * (self._mask + 1)
        self._keys = array("Q", bytes(8 * size))
        self._indexes = array("q", bytes(8 * size))
        self._mask = size - 1
        self._older = 0
        for k, v in entries:
            self._put(k, v)
