"""Partitions of a stream's aggregates: which share of the games a replica owns (docs/architecture.md, "Ownership of
games").

An aggregate's partition is a pure function of its id — FNV-1a (32 bits) of the id's bytes, modulo the number of
partitions — the same function NATS's own subject mapping ``{{partition(n,1)}}`` applies to a subject token, so an
operator can map, filter or mirror partitions with the server's tools and land on the same games. The number of
partitions is fixed when the stream is created (it is kept in the stream's metadata): changing it would move games
to other subjects.
"""

from __future__ import annotations

import functools
import math

from paiju.platform.settings import Setting

FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193
PARTITIONS = 16
"""The default number of partitions of the games: several per replica for up to 16 replicas, few enough that each
owner's feed filter stays short."""


GAME_PARTITIONS = Setting(
    "PAIJU_GAME_PARTITIONS",
    PARTITIONS,
    "partitions of the games, set when the stream is created (0: none, every engine replica follows every game); "
    "the engine, the lobby and scoring all read it, as any of them may create the stream",
)
"""The number of partitions a service creates the games' stream with. Every service that may create the stream
declares it, so whichever comes up first creates it alike; a stream keeps the number it was created with."""


@functools.lru_cache(maxsize=1 << 16)
def partition_of(aggregate: str, partitions: int) -> int:
    """The partition (0..partitions-1) of ``aggregate``: FNV-1a 32 of its UTF-8 bytes, modulo ``partitions`` (0 when
    there are none). Remembered for the ids met last: a replica asks it of every game at every call and event."""
    if not partitions:
        return 0
    h = FNV_OFFSET
    for byte in aggregate.encode():
        h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFF
    return h % partitions


def fair_share(partitions: int, members: int) -> int:
    """How many partitions one of ``members`` replicas owns at most (the ceiling of an even split)."""
    return math.ceil(partitions / max(1, members))
