"""How events are stored in a stream's messages, and the one function that reads them back (`decode`).

Every reader of a stream written through `paiju.platform.store.jetstream` — the store's own reads, its feed and
subscriptions, and any tool that reads raw messages — turns a message into events with `decode`, so that every
stored form reads the same everywhere. Three forms are stored, in any mix within one stream:

- **one event, one message**: the headers ``Paiju-Version`` (the event's version in its aggregate) and
  ``Paiju-Command-Id``; the body is the event. A command of one event is stored so, and so were the events of
  every command before the form below.
- **a command's events, one message each, as an atomic batch** (written before the form below): each message is
  of the first form, with JetStream's batch headers (``Nats-Batch-Id``, ``Nats-Batch-Sequence``,
  ``Nats-Batch-Commit``) beside them, which mean nothing to a reader.
- **a command's events in one message**: the headers ``Paiju-Events`` (how many events, at least 2),
  ``Paiju-First-Version`` (the version of the first; the others follow it by one) and ``Paiju-Command-Id``, and no
  ``Paiju-Version``, so that a reader that knows only the first form refuses the message instead of misreading
  it. The body is the events in order, each as a field 1 of length-delimited bytes in protobuf's wire format — the
  encoding of ``message Events { repeated bytes events = 1; }``: the byte 0x0A, the event's length as a varint, the
  event. Each event is exactly the bytes it would have been stored as alone.

An event's identity is the same in every form: its aggregate (the subject's last token), its version, its command
id, its bytes, and the trace context of the append that stored it (``traceparent``/``tracestate``, on the message).
Events stored in one message share its stream sequence: a stream sequence names a message, and a version an event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from paiju.platform.store.base import Recorded, StoreError
from paiju.platform.tracing import TRACEPARENT, TRACESTATE, Trace

VERSION = "Paiju-Version"
"""The version of the one event a message holds (its first form)."""
COMMAND = "Paiju-Command-Id"
"""The command that stored the message's events (every form)."""
EVENTS = "Paiju-Events"
"""How many events a message of several holds."""
FIRST_VERSION = "Paiju-First-Version"
"""The version of the first event of a message of several."""
TAG = 0x0A
"""Field 1, wire type 2 (length-delimited): what precedes each event of a message of several."""


def pack(events: Sequence[bytes]) -> bytes:
    """The body of one message holding ``events`` in order (see the module)."""
    out = bytearray()
    for data in events:
        out.append(TAG)
        size = len(data)
        while size >= 0x80:
            out.append((size & 0x7F) | 0x80)
            size >>= 7
        out.append(size)
        out += data
    return bytes(out)


def unpack(body: bytes, count: int) -> list[bytes]:
    """The ``count`` events of a message's body (`StoreError` when it does not hold exactly that many)."""
    parts: list[bytes] = []
    end = len(body)
    at = 0
    while at < end:
        if body[at] != TAG:
            raise StoreError(f"byte {at} of a message of several events is not an event's start")
        at += 1
        size = shift = 0
        while True:
            if at >= end or shift > 28:
                raise StoreError("an event's length in a message of several events is cut off")
            byte = body[at]
            at += 1
            size |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        if at + size > end:
            raise StoreError("an event in a message of several events is cut off")
        parts.append(body[at : at + size])
        at += size
    if len(parts) != count:
        raise StoreError(f"a message of {count} events holds {len(parts)}")
    return parts


def versions(sequence: int, headers: Mapping[str, str] | None) -> tuple[int, int]:
    """The versions of the first and last events of a stored message, from its headers alone (`StoreError`: not a
    message of this store)."""
    if headers:
        count = headers.get(EVENTS)
        if count is not None and FIRST_VERSION in headers:
            try:
                first, many = int(headers[FIRST_VERSION]), int(count)
            except ValueError:
                raise StoreError(f"message {sequence} names its events unreadably") from None
            return first, first + many - 1
        version = headers.get(VERSION)
        if version is not None:
            try:
                one = int(version)
            except ValueError:
                raise StoreError(f"message {sequence} names its version unreadably") from None
            return one, one
    raise StoreError(f"message {sequence} is not a Paiju event (its headers are missing)")


def decode(aggregate: str, sequence: int, headers: Mapping[str, str] | None, data: bytes | None) -> list[Recorded]:
    """Every event the message at stream ``sequence`` of ``aggregate`` holds, in order, whatever its form (see the
    module); `StoreError` when it is not a message of this store."""
    if not headers or COMMAND not in headers:
        raise StoreError(f"message {sequence} of {aggregate} is not a Paiju event (its headers are missing)")
    command = headers[COMMAND]
    parent = headers.get(TRACEPARENT)
    trace: Trace = ()
    if parent is not None:  # stored by a traced append (events stored without it are read exactly as before)
        state = headers.get(TRACESTATE)
        trace = ((TRACEPARENT, parent), (TRACESTATE, state)) if state else ((TRACEPARENT, parent),)
    body = bytes(data or b"")
    if EVENTS not in headers:
        if VERSION not in headers:
            raise StoreError(f"message {sequence} of {aggregate} is not a Paiju event (its headers are missing)")
        return [Recorded(aggregate, versions(sequence, headers)[0], sequence, command, body, trace)]
    first, last = versions(sequence, headers)
    if first < 1 or last < first:
        raise StoreError(f"message {sequence} of {aggregate} names no events")
    return [
        Recorded(aggregate, first + i, sequence, command, event, trace)
        for i, event in enumerate(unpack(body, last - first + 1))
    ]
