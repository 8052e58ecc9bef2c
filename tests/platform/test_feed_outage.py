"""A change of a replica's share that NATS cuts half-way, on a nats-server of the test's own, killed and started
again: the store's feed of the partitions owned is ended before the new one is made, and when making it fails the
same change made again (what the next round of the leases does) makes the feed, from the last event delivered — no
event of a partition kept is missed, and the partition gained is carried. (A store that counted the change before
the feed was made found nothing to change the second time: the replica stayed deaf to its games, for good.)"""

from __future__ import annotations

import asyncio
import functools
import uuid
from pathlib import Path

import pytest

from paiju.platform.edge import DEPENDENCY_GONE
from paiju.platform.partitions import partition_of
from paiju.platform.store import Position, Recorded
from paiju.platform.store.jetstream import JetStreamEventStore

from ..support.nats_server import RestartableNats
from ..support.waiting import wait_until

pytestmark = pytest.mark.integration  # a nats-server of the test's own, killed and started again
PARTITIONS = 8


def ids_in(partition: int, count: int) -> list[str]:
    return [g for g in (f"g{i}" for i in range(1000)) if partition_of(g, PARTITIONS) == partition][:count]


def hear(heard: list[str], recorded: Recorded) -> None:
    heard.append(recorded.aggregate)


def test_a_share_change_nats_cuts_half_way_is_made_whole_by_the_next_call(tmp_path: Path) -> None:
    with RestartableNats(tmp_path / "nats") as server:

        async def main() -> None:
            stream = "F" + uuid.uuid4().hex[:12].upper()
            prefix = f"f.{stream.lower()}"
            writer = await JetStreamEventStore.connect(server.url, stream=stream, prefix=prefix, partitions=PARTITIONS)
            reader = await JetStreamEventStore.connect(server.url, stream=stream, prefix=prefix)
            heard: list[str] = []
            kept, gained = ids_in(1, 3), ids_in(5, 1)
            try:
                await reader.own(frozenset({1}))
                await reader.follow(functools.partial(hear, heard))
                await writer.append(kept[0], Position(), "c1", [b"x"])
                await wait_until(lambda: heard == [kept[0]], "the owned game's event on the feed")

                server.kill()
                await wait_until(lambda: not reader._nc.is_connected, "the reader to notice NATS is gone", every=0.05)
                with pytest.raises(DEPENDENCY_GONE):
                    await reader.own(frozenset({1, 5}))  # the old feed ended, the new one cannot be made

                server.start()
                await wait_until(
                    lambda: writer._nc.is_connected and reader._nc.is_connected, "the stores back on NATS", every=0.05
                )
                # appended while the replica has no feed: the feed made later starts from before them
                await wait_until(
                    lambda: writer.append(kept[1], Position(), "c1", [b"x"]),
                    "an append once JetStream is back",
                    ignoring=DEPENDENCY_GONE,
                    every=0.1,
                )
                await writer.append(gained[0], Position(), "c1", [b"x"])

                await reader.own(frozenset({1, 5}))  # the same change, as the next round of the leases makes it
                await writer.append(kept[2], Position(), "c1", [b"x"])
                await wait_until(
                    lambda: len(heard) >= 4,
                    "the feed to carry the kept and the gained partition",
                    explain=lambda: heard,
                )
                await asyncio.sleep(0.2)
                assert heard == [kept[0], kept[1], gained[0], kept[2]], "every event once, in order, none missed"

                await reader.own(frozenset({1, 5}))  # nothing to change: the feed stays as it is
                after = (await writer.load(gained[0]))[-1].position
                await writer.append(gained[0], after, "c2", [b"y"])
                await wait_until(lambda: len(heard) >= 5, "the next event", explain=lambda: heard)
                await asyncio.sleep(0.2)
                assert heard[4:] == [gained[0]], "one feed, not two"
            finally:
                await reader.close()
                await writer.close()

        asyncio.run(main())
