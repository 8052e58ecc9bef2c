"""The in-memory event store: a fake for fast unit tests, held to the same contract as JetStream."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from paiju.platform.store.base import NEW, ConcurrencyConflict, Position, Recorded, check_aggregate, check_batch


class MemoryEventStore:
    """All aggregates in one process's memory, with stream sequences shared across aggregates like a stream."""

    def __init__(self) -> None:
        self._logs: dict[str, list[Recorded]] = {}
        self._sequence = 0
        self._followers: list[Callable[[Recorded], None]] = []

    async def load(self, aggregate: str, after: Position = NEW) -> list[Recorded]:
        check_aggregate(aggregate)
        return [r for r in self._logs.get(aggregate, ()) if r.version > after.version]

    async def append(
        self, aggregate: str, expected: Position, command_id: str, events: Sequence[bytes]
    ) -> list[Recorded]:
        check_batch(aggregate, command_id, events)
        log = self._logs.setdefault(aggregate, [])
        current = log[-1].position if log else Position()
        if current != expected:
            if log and log[-1].command_id == command_id:
                return [r for r in log if r.command_id == command_id]
            raise ConcurrencyConflict(
                f"{aggregate} is at version {current.version}, not {expected.version}: another writer appended"
            )
        stored = []
        for i, data in enumerate(events, start=1):
            self._sequence += 1
            stored.append(Recorded(aggregate, expected.version + i, self._sequence, command_id, bytes(data)))
        log.extend(stored)
        loop = asyncio.get_running_loop()
        for follower in self._followers:
            for recorded in stored:
                loop.call_soon(follower, recorded)
        return stored

    async def aggregates(self) -> list[str]:
        return sorted(self._logs)

    async def read_all(self, after_sequence: int = 0, limit: int | None = None) -> list[Recorded]:
        last = after_sequence + limit if limit is not None else self._sequence
        every = [r for log in self._logs.values() for r in log if after_sequence < r.sequence <= last]
        return sorted(every, key=lambda r: r.sequence)

    async def follow(self, on_event: Callable[[Recorded], None]) -> None:
        self._followers.append(on_event)

    async def close(self) -> None:
        self._followers.clear()
