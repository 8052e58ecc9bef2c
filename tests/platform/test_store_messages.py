"""The stored forms of events in a stream's messages (`paiju.platform.store.messages`), without a server: every form
decodes to the events it holds, a message of several events round-trips byte for byte, and a message that is not
one of this store's — hostile headers, a cut or corrupted body — is refused with `StoreError`, never misread and never
another exception. And `whole`: a batch never ends inside a message."""

from __future__ import annotations

import random

import pytest

from paiju.platform.store.base import Recorded, StoreError, whole
from paiju.platform.store.messages import COMMAND, EVENTS, FIRST_VERSION, VERSION, decode, pack, unpack, versions

SIZES = [0, 1, 127, 128, 300, 16_383, 16_384, 2_097_152]
"""Event lengths on each side of a varint's byte boundaries."""


def test_a_message_of_several_events_round_trips_byte_for_byte() -> None:
    events = [bytes([n % 251]) * size for n, size in enumerate(SIZES)]
    body = pack(events)
    assert unpack(body, len(events)) == events
    headers = {COMMAND: "c7", EVENTS: str(len(events)), FIRST_VERSION: "12"}
    decoded = decode("g1", 99, headers, body)
    assert [(r.aggregate, r.version, r.sequence, r.command_id, r.data) for r in decoded] == [
        ("g1", 12 + i, 99, "c7", e) for i, e in enumerate(events)
    ]
    assert versions(99, headers) == (12, 12 + len(events) - 1)


def test_pack_is_protobufs_repeated_bytes() -> None:
    """Field 1, length-delimited: what any protobuf library reads as ``repeated bytes events = 1``."""
    assert pack([b"ab", b""]) == b"\x0a\x02ab\x0a\x00"
    assert pack([b"x" * 300])[:3] == b"\x0a\xac\x02"


def test_a_single_event_and_a_message_of_an_atomic_batch_read_as_they_always_did() -> None:
    trace = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "a=b"}
    single = decode("g1", 5, {VERSION: "3", COMMAND: "c", **trace}, b"event")
    assert single == [Recorded("g1", 3, 5, "c", b"event")]
    assert single[0].trace == (("traceparent", trace["traceparent"]), ("tracestate", "a=b"))
    batch = {VERSION: "4", COMMAND: "c", "Nats-Batch-Id": "x", "Nats-Batch-Sequence": "2", "Nats-Batch-Commit": "1"}
    assert decode("g1", 6, batch, b"e2") == [Recorded("g1", 4, 6, "c", b"e2")]
    several = decode("g1", 7, {EVENTS: "2", FIRST_VERSION: "5", COMMAND: "c", **trace}, pack([b"a", b"b"]))
    assert all(r.trace == single[0].trace for r in several), "the trace of the append, on every event"


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        (None, b"x"),
        ({}, b"x"),
        ({COMMAND: "c"}, b"x"),
        ({VERSION: "1"}, b"x"),
        ({VERSION: "one", COMMAND: "c"}, b"x"),
        ({EVENTS: "2", COMMAND: "c"}, pack([b"a", b"b"])),
        ({EVENTS: "two", FIRST_VERSION: "1", COMMAND: "c"}, pack([b"a", b"b"])),
        ({EVENTS: "2", FIRST_VERSION: "x", COMMAND: "c"}, pack([b"a", b"b"])),
        ({EVENTS: "0", FIRST_VERSION: "1", COMMAND: "c"}, b""),
        ({EVENTS: "2", FIRST_VERSION: "0", COMMAND: "c"}, pack([b"a", b"b"])),
        ({EVENTS: "3", FIRST_VERSION: "1", COMMAND: "c"}, pack([b"a", b"b"])),
        ({EVENTS: "1", FIRST_VERSION: "1", COMMAND: "c"}, pack([b"a", b"b"])),
        ({EVENTS: "2", FIRST_VERSION: "1", COMMAND: "c"}, b"\x0a\x05ab"),
        ({EVENTS: "2", FIRST_VERSION: "1", COMMAND: "c"}, b"\x12\x01a\x0a\x01b"),
        ({EVENTS: "2", FIRST_VERSION: "1", COMMAND: "c"}, b"\x0a\xff\xff\xff\xff\xff\xff\x01a"),
        ({EVENTS: "2", FIRST_VERSION: "1", COMMAND: "c"}, b"\x0a"),
        ({EVENTS: "2", FIRST_VERSION: "1", COMMAND: "c"}, b"\x0a\x80"),
    ],
)
def test_a_message_that_is_not_this_stores_is_refused(headers: dict[str, str] | None, body: bytes) -> None:
    with pytest.raises(StoreError):
        decode("g1", 1, headers, body)


def test_random_bodies_decode_or_are_refused_never_anything_else() -> None:
    rng = random.Random(20261205)
    for _ in range(3000):
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
        if rng.random() < 0.5:
            body = b"\x0a" + body
        count = rng.randrange(1, 5)
        try:
            decoded = decode("g1", 1, {EVENTS: str(count), FIRST_VERSION: "1", COMMAND: "c"}, body)
        except StoreError:
            continue
        assert len(decoded) == count and pack([r.data for r in decoded]) == body


def test_a_batch_takes_whole_messages() -> None:
    def at(*sequences: int) -> list[Recorded]:
        return [Recorded("g", i + 1, s, "c", b"") for i, s in enumerate(sequences)]

    events = at(1, 2, 2, 2, 3, 4, 4)
    assert [whole(events, n) for n in range(1, 9)] == [1, 4, 4, 4, 5, 7, 7, 7]
    assert whole([], 3) == 0
