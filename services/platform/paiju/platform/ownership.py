"""Partition ownership: the replicas of one service share the partitions of a stream out among themselves, each
partition owned by one live replica at a time, through leases in a NATS key-value bucket (docs/architecture.md,
"Ownership of games").

The bucket's entries expire `LEASE_SECONDS` after they were last written (the bucket's TTL). Every `RENEW_SECONDS`
each replica writes its member key (``m.<replica>``), reads the bucket once, and then, with compare-and-set writes:

- renews the partitions it holds (``p.<n>`` holding its name); one another replica took meanwhile is lost to it;
- releases those beyond its fair share — of N members alive, at most the ceiling of an even split, and only the
  floor while some member holds fewer than the floor — so a replica that joins gets its share as the others give
  theirs up;
- claims free partitions (no entry: never held, released, or expired with a dead owner) up to that share.

So a partition whose owner dies is free at most `LEASE_SECONDS` after its last renewal and claimed by the next round
of a live replica; a replica that stops gracefully releases its partitions at once. A replica that cannot reach NATS
for longer than a lease owns nothing from then on (another may hold its partitions). Two owners of one partition can
meet only for a moment (a paused process waking up); whatever they both write is decided by optimistic concurrency
on the games themselves, as it always was.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import uuid
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from paiju.platform.nats import key_value, once_led
from paiju.platform.partitions import fair_share
from paiju.platform.retry import report

log = structlog.get_logger("paiju.ownership")
LEASE_SECONDS = 15.0
"""How long a partition stays with a replica that stopped renewing it (the longest a dead owner's games' timers
wait, besides a round). Longer than a NATS leader election (up to about 10 s in the cluster rehearsal), so that
losing a NATS node, which stalls every renewal for as long, does not take every partition from its owner."""
RENEW_SECONDS = 5.0
"""How often each replica renews, releases and claims (three renewals per lease: one lost write costs nothing)."""


def member_name() -> str:
    """A name for this replica that no other process shares: the host (a Kubernetes pod's name), the process and a
    random suffix, as key-value key characters."""
    raw = f"{os.environ.get('HOSTNAME') or socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    return re.sub(r"[^A-Za-z0-9_-]", "-", raw)[:100]


class Ownership:
    """This replica's share of ``partitions`` partitions, kept in the key-value bucket ``kv``; ``on_change`` is
    awaited with the partitions owned each time they change."""

    def __init__(
        self,
        kv: Any,
        partitions: int,
        member: str,
        on_change: Callable[[frozenset[int]], Awaitable[None]],
        *,
        lease: float = LEASE_SECONDS,
        renew: float = RENEW_SECONDS,
    ) -> None:
        self._kv = kv
        self._partitions = partitions
        self.member = member
        self._on_change = on_change
        self._lease = lease
        self._renew = renew
        self._owned: frozenset[int] = frozenset()
        self._told: frozenset[int] = frozenset()
        """The partitions ``on_change`` last took without raising."""
        self._renewed_at: float | None = None
        self.members = 0
        """How many replicas were alive at the last round."""

    @classmethod
    async def open(
        cls,
        client: Any,
        bucket: str,
        partitions: int,
        on_change: Callable[[frozenset[int]], Awaitable[None]],
        *,
        member: str | None = None,
        replicas: int = 1,
        lease: float = LEASE_SECONDS,
        renew: float = RENEW_SECONDS,
    ) -> Ownership:
        """The bucket ``bucket`` (created when missing, its TTL the lease), for the replica ``member``."""
        from nats.js.api import KeyValueConfig

        config = KeyValueConfig(bucket=bucket, history=1, ttl=lease, replicas=replicas)
        kv = await once_led(lambda: key_value(client, config))
        return cls(kv, partitions, member or member_name(), on_change, lease=lease, renew=renew)

    @property
    def owned(self) -> frozenset[int]:
        return self._owned

    async def run(self, stopping: asyncio.Event) -> None:
        """Take part in the rounds until ``stopping`` is set, then release what this replica owns."""
        loop = asyncio.get_running_loop()
        while not stopping.is_set():
            try:
                await self.round()
            except Exception as e:  # NATS away: keep trying; past a lease without a renewal, own nothing
                report(log, "a round of the partition leases failed", e, member=self.member)
                if self._renewed_at is None or loop.time() - self._renewed_at > self._lease:
                    try:
                        await self._set(frozenset())
                    except Exception as e:  # told again next round; the rounds go on
                        report(log, "giving up the partitions failed", e, member=self.member)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=self._renew)
        await self.release()

    async def round(self) -> frozenset[int]:
        """One round: announce this replica, renew, release beyond the fair share, claim free partitions."""
        from nats.js.errors import KeyWrongLastSequenceError

        me = self.member.encode()
        await self._kv.put(f"m.{self.member}", b"")
        entries = await self._entries()
        members = {key[2:] for key in entries if key.startswith("m.")} | {self.member}
        self.members = len(members)
        held: dict[int, int] = {}
        free: list[int] = []
        counts = dict.fromkeys(members, 0)
        for p in range(self._partitions):
            entry = entries.get(f"p.{p}")
            if entry is None:
                free.append(p)
                continue
            owner = entry.value.decode(errors="replace")
            counts[owner] = counts.get(owner, 0) + 1
            if entry.value == me:
                held[p] = entry.revision
        floor = self._partitions // self.members
        starving = any(counts[m] < floor for m in members)
        share = floor if starving else fair_share(self._partitions, self.members)
        for p, revision in sorted(held.items()):
            try:
                held[p] = await self._kv.update(f"p.{p}", me, last=revision)
            except KeyWrongLastSequenceError:
                del held[p]  # taken by another replica after it expired: no longer ours
        for p in sorted(held, reverse=True)[: max(0, len(held) - share)]:
            with contextlib.suppress(KeyWrongLastSequenceError):
                await self._kv.delete(f"p.{p}", last=held[p])
            del held[p]
        # claim free partitions, each replica starting at its own place among them (fewer collisions)
        start = zlib.crc32(me) % len(free) if free else 0
        for p in free[start:] + free[:start]:
            if len(held) >= share:
                break
            try:
                held[p] = await self._kv.create(f"p.{p}", me)
            except KeyWrongLastSequenceError:
                continue  # another replica claimed it first
        self._renewed_at = asyncio.get_running_loop().time()
        await self._set(frozenset(held))
        return self._owned

    async def release(self) -> None:
        """Give up every partition and leave (a graceful stop: the others claim them at their next round)."""
        from nats.js.errors import KeyWrongLastSequenceError

        owned, self._owned = self._owned, frozenset()
        with contextlib.suppress(Exception):  # NATS away: the leases expire by themselves
            for p in sorted(owned):
                entry = await self._kv.get(f"p.{p}")
                if entry.value == self.member.encode():
                    with contextlib.suppress(KeyWrongLastSequenceError):
                        await self._kv.delete(f"p.{p}", last=entry.revision)
            await self._kv.delete(f"m.{self.member}")

    async def _entries(self) -> dict[str, Any]:
        """Every live entry of the bucket, read at once (one ordered consumer over its last values)."""
        watcher = await self._kv.watchall(ignore_deletes=True)
        entries: dict[str, Any] = {}
        try:
            while True:
                entry = await watcher.updates(timeout=5.0)
                if entry is None:
                    return entries
                entries[entry.key] = entry
        finally:
            await watcher.stop()

    async def _set(self, owned: frozenset[int]) -> None:
        """Record the partitions held (released at the end, whatever ``on_change`` did) and tell ``on_change`` of a
        change. A change counts as told only once ``on_change`` returned: one that raised (NATS away half-way
        through the replica's new share) is told again at the next round, even though the leases held are the
        same by then."""
        if owned != self._owned:
            log.info("partitions owned", member=self.member, owned=sorted(owned), members=self.members)
            self._owned = owned
        if owned != self._told:
            await self._on_change(owned)
            self._told = owned
