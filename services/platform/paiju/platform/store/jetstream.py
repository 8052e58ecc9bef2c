"""The event store on NATS JetStream: one file-backed stream per domain, one subject per aggregate.

An append publishes the events of one command as one message (`paiju.platform.store.messages`: one event as it
always was, several in the form of a message of several), with ``Nats-Expected-Last-Subject-Sequence``, checked
by the server, and a ``Nats-Msg-Id`` of ``<aggregate>:<command id>:1`` (the duplicate window spans the whole
stream, and a command id is unique only within its aggregate). One publish, one acknowledgement: a crash can never
leave half a command in the log, and of two writers that expected the same position exactly one wins. Streams
written earlier hold commands of several events as atomic batches (JetStream's atomic batch publish: a message per
event with ``Nats-Batch-Id``, ``Nats-Batch-Sequence`` and ``Nats-Batch-Commit``); they read as they always did, in
any mix with the newer form, since every read goes through `paiju.platform.store.messages.decode`. ``batches=True``
writes that older form still (the tests' streams of every form; a stream read by services too old to read a
message of several: the services' ``PAIJU_STORE_COMMAND_FORM=batch``, `paiju.platform.settings.STORE_COMMAND_FORM`,
for the first roll of an upgrade).

A partitioned stream (the games) keeps each aggregate on ``<prefix>.<partition>.<aggregate>``
(`paiju.platform.partitions`), so that a replica's feed carries only the partitions it owns (`own`); the number of
partitions is kept in the stream's metadata. Aggregates stored before the stream was partitioned stay on
``<prefix>.<aggregate>`` and are read and appended to there; every feed carries them, whatever it owns (they are
few, and end).

An append JetStream refuses for lack of space (its store at ``max_file_store``, or a full disk) raises `StoreFull`,
and the store counts as `full` — ``paiju_store_full{stream}`` is 1 — until an append succeeds: the service's health
says so (`paiju.platform.health.Dependencies.add_store`), and lets callers in again `FULL_RETRY_SECONDS` after the
last refusal, so that the next appends find out whether there is room again.

A retry of a command that was in fact stored is answered "wrong last sequence" (10071) or "duplicate
message id" (10201): when the aggregate's last message carries the same command id, the append succeeded
and its stored events are returned (docs/architecture.md, "Optimistic concurrency and exact retries").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, RawStreamMsg, StorageType, StreamConfig
from nats.js.errors import NotFoundError
from prometheus_client import Counter, Gauge

from paiju.platform import tracing
from paiju.platform.nats import DISCONNECTED, LEADERLESS, Access, close, connect
from paiju.platform.partitions import partition_of
from paiju.platform.retry import Backoff, report
from paiju.platform.store.base import (
    NEW,
    Arrivals,
    ConcurrencyConflict,
    Position,
    Recorded,
    StoreError,
    StoreUnavailable,
    check_aggregate,
    check_batch,
    rouses,
    whole,
)
from paiju.platform.store.messages import COMMAND, EVENTS, FIRST_VERSION, VERSION, decode, pack, versions
from paiju.platform.tracing import Trace

log = structlog.get_logger("paiju.store")
BUSY_RETRIES = 200
WRITES_KEPT = 10_000
"""How many aggregates a store remembers its last append to (read your own writes on a replicated stream, whose
direct gets any replica answers, caught up or not: a read right after a write is what needs it)."""
WRONG_LAST_SEQUENCE = 10071
DUPLICATE_IN_BATCH = 10201
DUPLICATE_IN_PROCESS = 10158
"""The same message id is being stored right now for another writer (two replicas creating one game at once)."""
CONSUME_PENDING = 1_000_000
CONSUME_PENDING_BYTES = 1 << 30
"""Messages (and bytes) a reading subscription may hold undelivered to its callback (a whole stream read at
full speed)."""
FEED_HEARTBEAT_SECONDS = 1.0
"""The feed's idle heartbeat: after two missed ones (an outage, a restarted server) nats-py recreates the feed's
ordered consumer from the last sequence it delivered, so a feed is back within seconds of NATS."""
STALL_SECONDS = 0.25
"""A reading consumer that delivers nothing for this long is replaced by a new one reading on."""
BOUNDED_ACK_WAIT_SECONDS = 3600.0
"""A window's consumer is deleted long before this: its messages, never acknowledged, are never sent twice."""
SUBSCRIPTION_HEARTBEAT_SECONDS = 1.0
"""The idle heartbeat of a subscription's waiting pull request (`JetStreamSubscription`): what an idle
subscription costs."""
SUBSCRIPTION_SILENCE_SECONDS = 3.0
"""A subscription that has heard nothing for this long (no event, no heartbeat: a restarted server, a consumer
lost) makes a new consumer reading on from the last event it received."""
INACTIVE_SECONDS = 30.0
"""The server removes a reading consumer left behind (its reader gone) after this long."""
PULL_WAIT_SECONDS = 20.0
"""How long a subscription's waiting pull request (for the first event stored) lasts; the next take that waits
makes another. Shorter than `INACTIVE_SECONDS`, which the consumer of a reader that waits never reaches."""
PULL_BYTES = 4 << 20
"""The most bytes a subscription's burst brings (`JetStreamSubscription`; with its number of messages, what bounds
the events it holds). More than a message holds (the server's ``max_payload``, 1 MiB by default); a message larger
still comes alone."""
FETCH_SECONDS = 0.25
"""How often a take with a timeout fetches the events stored while it waits (`JetStreamSubscription`): the longest
an event that wakes a take with ``wake`` (a match's end, among every game event) waits to be fetched, or the last
event that fills a take, and what the others cost — a wake-up of the reader per burst. A quarter of a second: a
match's result reaches the lobby as the players look up from the last trick, and a reader of 120 game events a
second wakes 4 times a second, not 120. (A take whose timeout is shorter, a consumer's linger, fetches once, at
its end.)"""
INSUFFICIENT_RESOURCES = 10023
"""JetStream's refusal of a write for lack of space (its store's limit reached, or the disk full)."""
STORE_FAILED = 10077
"""JetStream could not store a message (a write error of its disk)."""
FULL_RETRY_SECONDS = 5.0
"""A store refused for lack of space counts as full this long after the last refusal unless an append succeeds
first; then its service takes calls again, and their appends tell whether there is room."""
FULL = Gauge(
    "paiju_store_full",
    "Whether the last append to a stream was refused for lack of space (1) and none has succeeded since (0: it has)",
    ["stream"],
)
FULL_REFUSALS = Counter(
    "paiju_store_full_refusals", "Appends to a stream refused for lack of space (JetStream's store full)", ["stream"]
)
PARTITIONS_KEY = "paiju-partitions"
"""The stream metadata entry that holds the number of partitions of a partitioned stream."""
SINCE_KEY = "paiju-partitioned-after"
"""The stream metadata entry with the last sequence stored before the stream had partitions (0: it always had)."""


class JetStreamEventStore:
    """Aggregates as subjects ``<prefix>.<aggregate>`` of the stream ``stream``."""

    def __init__(
        self,
        client: Client,
        stream: str,
        prefix: str,
        *,
        timeout: float = 5.0,
        partitions: int = 0,
        batches: bool = False,
    ) -> None:
        self._nc = client
        self._batches = batches
        """Whether a command of several events is written as an atomic batch, a message per event (the older form),
        instead of one message."""
        self._partitions = partitions
        self._legacy: set[str] = set()
        self._written: dict[str, int] = {}
        """The last sequence this store appended to each aggregate lately: a read of it must see at least that."""
        """Aggregates of a partitioned stream stored before it was (on ``<prefix>.<aggregate>``), as met."""
        self._before = False
        """Whether the stream may hold aggregates stored before it had partitions."""
        self._owned: frozenset[int] | None = None
        """The partitions the feed carries (``None``: all)."""
        self._fed = 0
        """The stream sequence the feed delivered last (or started after)."""
        self._js = client.jetstream(timeout=timeout)
        self._stream = stream
        self._prefix = prefix
        self._timeout = timeout
        self._feed: Any = None
        """The one ordered consumer that delivers every appended event to this store's followers."""
        self._followers: list[Callable[[Recorded], None]] = []
        self._feed_lock = asyncio.Lock()
        self._full_at: float | None = None
        """When an append was last refused for lack of space (``None``: one has succeeded since)."""

    @classmethod
    async def connect(
        cls,
        url: str,
        stream: str = "GAMES",
        prefix: str = "paiju.game",
        *,
        replicas: int = 1,
        partitions: int = 0,
        access: Access | None = None,
        create: bool = True,
        wait: bool = True,
        batches: bool = False,
    ) -> JetStreamEventStore:
        """Connect and make sure the stream exists (created idempotently, file storage, no rollup or purge).
        ``partitions``: for a stream created now (or one stored before partitions), how many partitions its
        aggregates fall in (0: none); a partitioned stream keeps the number it was created with. ``access``: the
        process's NATS credentials. ``create=False``: a reader, which never creates or changes the stream (its
        owner does, and only its owner may): it waits for the stream to exist (`wait_for_stream`), unless ``wait`` is
        false (then its caller waits when it needs the stream). ``batches``: write a command of several events as
        an atomic batch, a message per event, as streams were written before (see the module)."""
        client = await connect(url, f"paiju-store-{stream.lower()}", access=access)
        store = cls(client, stream, prefix, batches=batches)
        if create:
            await store.ensure_stream(replicas, partitions)
        elif wait:
            await store.wait_for_stream()
        return store

    async def wait_for_stream(self, most_seconds: float = 5.0) -> None:
        """Wait until the stream exists (made by its owner, which may start later) and read how it is partitioned:
        asked again after 0.2 s, then twice as long each time up to ``most_seconds``. Meanwhile the process says so
        in its log and in ``paiju_dependency_up{dependency="stream:<name>"}`` (0 until the stream is there)."""
        from paiju.platform.health import UP

        wait = 0.2
        gauge = UP.labels(f"stream:{self._stream}")
        absent: tuple[type[Exception], ...] = (NotFoundError, *LEADERLESS)
        while True:
            try:
                await self.discover()
                gauge.set(1)
                return
            except absent:  # not there yet, or just made on a cluster and not led yet
                gauge.set(0)
                log.warning("waiting for the stream to be created by its owner", stream=self._stream, seconds=wait)
            except DISCONNECTED:  # NATS away: whether the stream is there is asked again once it is back
                gauge.set(0)
                log.warning("waiting for NATS to ask for the stream", stream=self._stream, seconds=wait)
            await asyncio.sleep(wait)
            wait = min(most_seconds, wait * 2)

    async def ensure_stream(self, replicas: int = 1, partitions: int = 0, most_seconds: float = 5.0) -> None:
        """Create the stream, or take the number of partitions of the existing one (a stream stored before
        partitions gains them when asked: its new aggregates are partitioned, its old ones stay where they are).
        While JetStream does not answer (a cluster starting, or electing the leader of a stream another process just
        created) it is asked again, after 0.2 s, then twice as long each time up to ``most_seconds``, as
        `wait_for_stream` waits: the process says so in its log and in ``paiju_dependency_up`` meanwhile, and does not
        give up (an owner that stopped here would leave its readers waiting for the stream)."""
        from paiju.platform.health import UP

        backoff = Backoff(0.2, most_seconds)
        gauge = UP.labels(f"stream:{self._stream}")
        while True:
            try:
                await self._ensure_stream(replicas, partitions)
                gauge.set(1)
                return
            except LEADERLESS as e:
                gauge.set(0)
                wait = backoff.failed()
                log.warning("JetStream did not answer: asking again", stream=self._stream, seconds=wait, error=repr(e))
            await asyncio.sleep(wait)

    async def _ensure_stream(self, replicas: int, partitions: int) -> None:
        subjects = [f"{self._prefix}.*", f"{self._prefix}.*.*"] if partitions else [f"{self._prefix}.*"]
        config = StreamConfig(
            name=self._stream,
            subjects=subjects,
            metadata={PARTITIONS_KEY: str(partitions), SINCE_KEY: "0"} if partitions else None,
            storage=StorageType.FILE,
            num_replicas=replicas,
            allow_atomic=True,
            allow_direct=True,
            allow_rollup_hdrs=False,
            deny_delete=True,
            deny_purge=True,
        )
        try:
            info = await self._js.stream_info(self._stream)
        except NotFoundError:
            await self._js.add_stream(config)
            self._partitions = partitions
            return
        metadata = self._described(info)
        if self._partitions or not partitions:
            return
        info.config.subjects = sorted({*(info.config.subjects or []), *subjects})
        since = str(info.state.last_seq)
        info.config.metadata = {**metadata, PARTITIONS_KEY: str(partitions), SINCE_KEY: since}
        await self._js.update_stream(info.config)
        self._partitions = partitions
        self._before = info.state.last_seq > 0

    def sibling(self) -> JetStreamEventStore:
        """Another store over the same stream and connection, partitioned alike, with a feed of its own (stopped
        without stopping this one's)."""
        other = JetStreamEventStore(self._nc, self._stream, self._prefix, timeout=self._timeout, batches=self._batches)
        other._partitions, other._before = self._partitions, self._before
        return other

    async def discover(self) -> None:
        """Read how the existing stream is partitioned (a reader that does not create it: `NotFoundError` when it
        does not exist)."""
        self._described(await self._js.stream_info(self._stream))

    def _described(self, info: Any) -> dict[str, str]:
        metadata: dict[str, str] = info.config.metadata or {}
        self._partitions = int(metadata.get(PARTITIONS_KEY, "0"))
        self._before = int(metadata.get(SINCE_KEY, "0")) > 0
        return metadata

    @property
    def stream(self) -> str:
        return self._stream

    @property
    def full(self) -> bool:
        """Whether appends to the stream are being refused for lack of space: since the last such refusal, unless
        an append succeeded since or `FULL_RETRY_SECONDS` passed without another refusal."""
        return self._full_at is not None and time.monotonic() - self._full_at < FULL_RETRY_SECONDS

    def _room(self, refused: bool) -> None:
        """Record whether an append was refused for lack of space (or went through)."""
        if refused:
            if self._full_at is None:
                log.error("JetStream refuses appends for lack of space", stream=self._stream)
            self._full_at = time.monotonic()
            FULL.labels(self._stream).set(1)
            FULL_REFUSALS.labels(self._stream).inc()
        elif self._full_at is not None:
            self._full_at = None
            FULL.labels(self._stream).set(0)
            log.info("JetStream takes appends again", stream=self._stream)

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def client(self) -> Client:
        """The NATS connection (for consumers beside the store, e.g. the engine's match starter)."""
        return self._nc

    @property
    def partitions(self) -> int:
        """How many partitions the stream's aggregates fall in (0: not partitioned)."""
        return self._partitions

    def partition(self, aggregate: str) -> int:
        """The partition of ``aggregate`` (0 in a stream without partitions)."""
        return partition_of(aggregate, self._partitions)

    def unpartitioned(self, aggregate: str) -> bool:
        """Whether ``aggregate`` was stored before the stream had partitions, as far as this store has met it: every
        feed carries its events, whatever partitions it owns."""
        return aggregate in self._legacy

    def subject(self, aggregate: str) -> str:
        """The subject of an aggregate (`StoreError` for an id that is not one: no dotted, wildcard or long subject
        ever reaches NATS)."""
        check_aggregate(aggregate)
        if not self._partitions or aggregate in self._legacy:
            return f"{self._prefix}.{aggregate}"
        return f"{self._prefix}.{self.partition(aggregate)}.{aggregate}"

    def _aggregate_of(self, subject: str) -> str:
        """The aggregate a stored message's subject names (one stored before partitions is remembered as such)."""
        tokens = subject[len(self._prefix) + 1 :].split(".")
        if len(tokens) == 1 and self._partitions:
            self._legacy.add(tokens[0])
        return tokens[-1]

    def _every(self, partitions: frozenset[int] | None) -> bool:
        """Whether ``partitions`` are the whole stream (``None``, or every partition of a partitioned stream): read
        with no filter, which the server matches no subject against, rather than a filter per partition."""
        return partitions is None or (bool(self._partitions) and partitions >= frozenset(range(self._partitions)))

    def _subjects(self, partitions: frozenset[int] | None, *, unpartitioned: bool = True) -> list[str]:
        """The subjects of the aggregates in ``partitions`` (``None``: the whole stream), with those of the
        aggregates stored before partitions when ``unpartitioned`` (a feed: every feed carries them) or, for a
        reader among several, when it reads partition 0 (exactly one of them reads each)."""
        if partitions is None or not self._partitions:
            return [f"{self._prefix}.*"] + ([f"{self._prefix}.*.*"] if self._partitions else [])
        subjects = [f"{self._prefix}.{p}.*" for p in sorted(partitions)]
        if self._before and (unpartitioned or 0 in partitions):
            return [f"{self._prefix}.*", *subjects]
        return subjects

    async def aggregates(self) -> list[str]:
        """Every aggregate of the stream. The server lists a stream's subjects a page at a time (100,000 per
        answer), so the pages are asked for one after another until the total is reached."""
        found: set[str] = set()
        while True:
            request = json.dumps({"subjects_filter": f"{self._prefix}.>", "offset": len(found)}).encode()
            reply = await self._nc.request(f"$JS.API.STREAM.INFO.{self._stream}", request, timeout=self._timeout)
            answer = json.loads(reply.data)
            if "error" in answer:
                raise StoreUnavailable(f"listing the aggregates of {self._stream}: {answer['error']}")
            page = (answer.get("state") or {}).get("subjects") or {}
            before = len(found)
            found.update(page)
            if len(found) >= int(answer.get("total") or 0) or len(found) == before:
                return sorted({self._aggregate_of(subject) for subject in found})

    async def close(self) -> None:
        await self.stop_following()
        await close(self._nc)

    async def stop_following(self) -> None:
        """End every feed `follow` started (the connection stays open: it may be shared)."""
        if self._feed is not None:
            with contextlib.suppress(Exception):  # a connection that is down has nothing left to unsubscribe
                await self._feed.unsubscribe()
        self._feed = None
        self._followers.clear()
        self._owned = None

    # --- reading ------------------------------------------------------------------------------------

    async def _last(self, aggregate: str, *, leader: bool = False) -> RawStreamMsg | None:
        """The aggregate's last message: by a direct get, which any replica of the stream may answer, or, with
        ``leader`` or when the answer is older than what this store appended (a replica not caught up yet), by the
        leader's get, which holds every acknowledged append (read your own writes)."""
        last = await self._last_at(aggregate, direct=not leader)
        written = self._written.get(aggregate, 0)
        if not leader and written and (last is None or (last.seq or 0) < written):
            last = await self._last_at(aggregate, direct=False)
        return last

    async def _last_at(self, aggregate: str, *, direct: bool) -> RawStreamMsg | None:
        try:
            return await self._js.get_last_msg(self._stream, self.subject(aggregate), direct=direct)
        except NotFoundError:
            pass
        if not self._before or aggregate in self._legacy:
            return None
        try:  # stored before the stream had partitions?
            last = await self._js.get_last_msg(self._stream, f"{self._prefix}.{aggregate}", direct=direct)
        except NotFoundError:
            return None
        self._legacy.add(aggregate)
        return last

    def _wrote(self, aggregate: str, sequence: int) -> None:
        """Remember the last sequence this store appended to ``aggregate`` (the most recent `WRITES_KEPT`)."""
        self._written[aggregate] = max(sequence, self._written.pop(aggregate, 0))
        while len(self._written) > WRITES_KEPT:
            del self._written[next(iter(self._written))]

    async def load(self, aggregate: str, after: Position = NEW) -> list[Recorded]:
        """(See `EventStore.load`.) The events after ``after``'s version: a position inside a message of several
        events (a reader that counted versions) reads the rest of that message first."""
        last = await self._last(aggregate)
        if last is None or last.seq is None or last.seq < after.sequence:
            return []
        first, final = versions(last.seq, last.headers)
        if final <= after.version:
            return []
        if first <= after.version + 1:  # what is new is all in the last message: no more to get
            return [r for r in decode(aggregate, last.seq, last.headers, last.data) if r.version > after.version]
        direct = last.seq > self._written.get(aggregate, 0)  # else a replica may not hold all of it yet
        if after.sequence:
            return await self._tail(aggregate, after, last.seq, direct=direct)
        return [r for r in await self._replay(aggregate, last.seq) if r.version > after.version]

    async def _replay(self, aggregate: str, last_sequence: int) -> list[Recorded]:
        """Every event of an aggregate up to ``last_sequence``."""
        return await self._consume(self.subject(aggregate), 0, last_sequence)

    async def read_all(
        self, after_sequence: int = 0, limit: int | None = None, *, partitions: frozenset[int] | None = None
    ) -> list[Recorded]:
        """(See `EventStore.read_all`.) ``partitions``: only the events of the aggregates in these partitions (a
        reader among several in parallel, each reading its partitions); with ``limit``, at most ``limit`` of them
        (the server filters: a reader of a few partitions does not scan the others' stretches window by window)."""
        if partitions is not None and not self._partitions:
            raise StoreError(f"{self._stream} is read by partition, but this store does not know its partitions")
        info = await self._js.stream_info(self._stream)
        if info.state.last_seq <= after_sequence or not info.state.messages or partitions == frozenset():
            return []
        subjects = None if self._every(partitions) else self._subjects(partitions, unpartitioned=False)
        if limit is None:
            return await self._consume(subjects, after_sequence, info.state.last_seq)
        if subjects is not None:
            read = await self._consume(subjects, after_sequence, info.state.last_seq, bounded=True, count=limit)
            read = [r for r in read if r.sequence <= info.state.last_seq]
            return read[: whole(read, limit)]
        # window after window of ``limit`` sequences, until one holds events (a purged stretch holds none); the
        # consumer may deliver past a window's end (the next event, when the end is no event): not kept
        after = max(after_sequence, info.state.first_seq - 1)
        while after < info.state.last_seq:
            last = min(info.state.last_seq, after + limit)
            found = [r for r in await self._consume(subjects, after, last, bounded=True) if r.sequence <= last]
            if found:
                return found
            after = last
        return []

    async def _consume(
        self,
        subject: str | list[str] | None,
        after_sequence: int,
        last_sequence: int,
        *,
        bounded: bool = False,
        count: int | None = None,
    ) -> list[Recorded]:
        """The events on ``subject`` (several subjects; ``None``: the whole stream) after ``after_sequence`` up to
        ``last_sequence``.

        An ephemeral push consumer (no acks, in memory) delivers them to a plain subscription, which checks
        that the consumer's own sequence runs without a gap; after a gap, or a stall, it reads on from the
        last event received with a new consumer. This is what nats-py's ordered consumer does, without its
        per-message metadata parsing, which cost a third of a replay's time.
        """
        stored: list[Recorded] = []
        position = after_sequence
        stalls = 0
        while position < last_sequence:
            received = await self._push(subject, position, last_sequence, stored, bounded=bounded, count=count)
            if received == position:
                stalls += 1
                if stalls * STALL_SECONDS > self._timeout:
                    raise StoreUnavailable(f"reading {subject} stalled after {len(stored)} events")
            else:
                stalls = 0
            position = received
        return stored

    async def _push(
        self,
        subject: str | list[str] | None,
        after_sequence: int,
        last_sequence: int,
        stored: list[Recorded],
        *,
        bounded: bool = False,
        count: int | None = None,
    ) -> int:
        """One consumer's run, appending to ``stored``; the stream sequence it reached.

        ``bounded``: the consumer sends at most the window's messages (as many unacknowledged messages as the window
        has sequences, never acknowledged): otherwise it would go on pushing the rest of the stream down the
        connection until its deletion reaches the server, and a reader of a long stream in small windows would pay
        for the whole stream at every window."""
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = loop.create_future()
        reached = after_sequence
        delivered = 0

        async def receive(msg: Msg) -> None:
            nonlocal reached, delivered
            if finished.done() or not msg.reply:
                return  # after the end, or a status message (a heartbeat has no reply subject)
            stream_sequence, consumer_sequence = delivery_sequences(msg.reply)
            if consumer_sequence != delivered + 1:
                finished.set_result(None)  # a gap: read on from ``reached`` with a new consumer
                return
            delivered = consumer_sequence
            reached = stream_sequence
            stored.extend(decode(self._aggregate_of(msg.subject), stream_sequence, msg.headers, msg.data))
            enough = count is not None and len(stored) >= count
            if stream_sequence >= last_sequence or delivery_pending(msg.reply) == 0 or enough:
                # the end, or the last one of the subjects read (a filter whose last event comes before the end)
                reached = max(reached, last_sequence)
                finished.set_result(None)

        inbox = self._nc.new_inbox()
        sub = await self._nc.subscribe(
            inbox, cb=receive, pending_msgs_limit=CONSUME_PENDING, pending_bytes_limit=CONSUME_PENDING_BYTES
        )
        start: dict[str, Any] = (
            {"deliver_policy": DeliverPolicy.BY_START_SEQUENCE, "opt_start_seq": after_sequence + 1}
            if after_sequence
            else {"deliver_policy": DeliverPolicy.ALL}
        )
        consumer = await self._js.add_consumer(
            self._stream,
            ConsumerConfig(
                deliver_subject=inbox,
                filter_subject=subject if isinstance(subject, str) else None,  # the whole stream: no filter
                filter_subjects=subject if isinstance(subject, list) else None,
                **(
                    {
                        "ack_policy": AckPolicy.EXPLICIT,
                        "max_ack_pending": last_sequence - after_sequence if count is None else count,
                        "ack_wait": BOUNDED_ACK_WAIT_SECONDS,  # never redelivered while the window is read
                    }
                    if bounded
                    else {"ack_policy": AckPolicy.NONE}
                ),
                mem_storage=True,
                num_replicas=1,
                inactive_threshold=INACTIVE_SECONDS,
                **start,
            ),
        )
        if not consumer.num_pending and not delivered:
            finished.set_result(None)  # nothing on these subjects from there on
            reached = last_sequence
        try:
            while not finished.done():
                before = reached
                try:
                    await asyncio.wait_for(asyncio.shield(finished), timeout=STALL_SECONDS)
                except TimeoutError:
                    if reached == before:
                        break  # nothing arrived for a while: a new consumer reads on
        finally:
            await sub.unsubscribe()
            # not waited for: a consumer the delete misses goes after its inactivity threshold
            await self._nc.publish(f"$JS.API.CONSUMER.DELETE.{self._stream}.{consumer.name}")
        return reached

    async def subscribe(
        self, after_sequence: int = 0, *, partitions: frozenset[int] | None = None
    ) -> JetStreamSubscription:
        """(See `EventStore.subscribe` and `JetStreamSubscription`.) ``partitions``: as `read_all` reads them."""
        if partitions is not None and not self._partitions:
            raise StoreError(f"{self._stream} is read by partition, but this store does not know its partitions")
        subjects = None if self._every(partitions) else self._subjects(partitions, unpartitioned=False)
        subscription = JetStreamSubscription(self, subjects, after_sequence)
        if subjects != []:
            await subscription.restart()
        return subscription

    async def follow(self, on_event: Callable[[Recorded], None]) -> None:
        """(See `EventStore.follow`.) Every follower of this store shares one feed: each event crosses the
        connection once, however many repositories and consumers of the process follow the stream."""
        async with self._feed_lock:
            if self._feed is None and self._owned != frozenset():
                self._fed = (await self._js.stream_info(self._stream)).state.last_seq
                await self._subscribe(self._owned)
            self._followers.append(on_event)

    async def own(self, partitions: frozenset[int] | None) -> None:
        """From now on the feed carries only the events of the aggregates in ``partitions`` (``None``: every
        event), filtered by the server: a replica that owns a share of the games reads only that share. The feed
        goes on from the last event it delivered, so no event of a partition kept is missed; a partition gained
        is delivered from there too (its owner reads its live aggregates from the store as well).

        The change counts only once the new feed is subscribed: when NATS fails it half-way (the old feed ended,
        the new one not made), this raises and the store still owns what it owned before, with no feed — so the
        same call made again (the next round of the leases) makes the feed, from the last event delivered, instead
        of finding nothing to change and leaving the replica deaf to its games for good."""
        async with self._feed_lock:
            wanted = bool(self._followers) and partitions != frozenset()
            if partitions == self._owned and (self._feed is not None or not wanted):
                return
            if self._feed is not None:
                with contextlib.suppress(Exception):
                    await self._feed.unsubscribe()
                self._feed = None
            if wanted:
                if self._owned == frozenset():  # none owned until now: the feed starts from here
                    self._fed = (await self._js.stream_info(self._stream)).state.last_seq
                await self._subscribe(partitions)
            self._owned = partitions

    async def _subscribe(self, owned: frozenset[int] | None) -> None:
        """The feed's ordered consumer, from the event after the last one delivered, on the partitions ``owned``."""

        async def receive(msg: Msg) -> None:
            try:
                # the stream sequence read straight from the ack subject: nats-py's `Msg.metadata` builds five
                # objects to say it, for every event of every game the replica owns
                sequence = self._fed = delivery_sequences(msg.reply)[0]
                stored = decode(self._aggregate_of(msg.subject), sequence, msg.headers, msg.data)
            except StoreError as e:  # not an event of this store: nothing to tell the followers
                report(log, "the feed passed over a message that is no event", e, stream=self._stream)
                return
            followers = list(self._followers)
            for recorded in stored:  # the events of one message, one after another with nothing between them
                if recorded.trace:
                    tracing.remember(recorded.aggregate, recorded.version, recorded.trace)
                for follower in followers:
                    try:
                        follower(recorded)
                    except Exception as e:  # one follower's failure is its own: the others still get the event
                        report(log, "a follower of the feed failed", e, stream=self._stream)

        # a replica that owns every partition (one alone) reads the whole stream: one filter the server matches at
        # once, not one per partition (or per layout of the subjects) to try against every event stored
        subjects = [f"{self._prefix}.>"] if self._every(owned) else self._subjects(owned)
        # an ordered consumer resumes by itself after a gap or a reconnect, from the last sequence it delivered
        self._feed = await self._js.subscribe(
            subjects[0],
            stream=self._stream,
            cb=receive,
            ordered_consumer=True,
            config=ConsumerConfig(filter_subjects=subjects if len(subjects) > 1 else None, opt_start_seq=self._fed + 1),
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            idle_heartbeat=FEED_HEARTBEAT_SECONDS,
        )

    async def notice(self, aggregate: str, on_append: Callable[[int], None]) -> Callable[[], Awaitable[None]]:
        """(See `EventStore.notice`.) A plain subscription to the aggregate's subject: every publish to it reaches
        the subscriber as it reaches the stream, filtered by the server (nothing crosses while nothing happens). It
        returns once the server holds the subscription (a flush: a round trip after it), so every append from then
        on is noticed — not only those that reach the server after its SUB does."""

        async def heard(msg: Msg) -> None:
            with contextlib.suppress(StoreError):  # not a Paiju event: nothing to tell
                on_append(versions(0, msg.headers)[1])  # the last event's version

        sub = await self._nc.subscribe(self.subject(aggregate), cb=heard)
        try:
            await self._nc.flush(timeout=5)
        except Exception:  # a connection that is down: the notices come once it is back (nats-py resubscribes)
            log.debug("notice subscription not confirmed", aggregate=aggregate)

        async def stop() -> None:
            with contextlib.suppress(Exception):  # a connection that is down has nothing left to unsubscribe
                await sub.unsubscribe()

        return stop

    async def _tail(
        self, aggregate: str, after: Position, last_sequence: int, *, direct: bool = True
    ) -> list[Recorded]:
        """The few events after a known position, by gets (no consumer to create and delete): direct ones, which
        any replica answers, or the leader's. A position inside a message of several events (the next message
        starts past the version after it) reads the rest of that message first."""
        stored: list[Recorded] = []
        sequence = after.sequence
        subject = self.subject(aggregate)
        while sequence < last_sequence:
            msg = await self._js.get_msg(self._stream, seq=sequence + 1, subject=subject, direct=direct, next=True)
            assert msg.seq is not None
            sequence = msg.seq
            found = decode(aggregate, sequence, msg.headers, msg.data)
            if not stored and found[0].version > after.version + 1:
                held = await self._js.get_msg(
                    self._stream, seq=after.sequence, subject=subject, direct=direct, next=True
                )
                assert held.seq is not None
                stored = [r for r in decode(aggregate, held.seq, held.headers, held.data) if r.version > after.version]
            stored.extend(found)
        return stored

    # --- appending ----------------------------------------------------------------------------------

    async def append(
        self, aggregate: str, expected: Position, command_id: str, events: Sequence[bytes]
    ) -> list[Recorded]:
        """(See `EventStore.append`.) When the process traces, in a producer span whose trace context every message
        of the append carries in its headers (``traceparent``; `messages.decode` also reads a ``tracestate`` stored with
        it): no part of the message id, so a retry is recognised whatever trace it comes in."""
        with tracing.appending(self._stream, aggregate) as trace:
            return await self._append(aggregate, expected, command_id, events, trace)

    async def _append(
        self, aggregate: str, expected: Position, command_id: str, events: Sequence[bytes], trace: Trace
    ) -> list[Recorded]:
        check_batch(aggregate, command_id, events)
        if expected.sequence == 0 and self._before and aggregate not in self._legacy:
            await self._last(aggregate)  # new, unless stored before the stream had partitions: it stays there
        for attempt in range(BUSY_RETRIES):
            reply = await self._publish(aggregate, expected, command_id, events, trace)
            error = reply.get("error")
            if error is None or not _busy(error):
                break
            # the server holds at most 50 open batches per stream (ADR-50), or is storing this very command for
            # another writer (the same message id in process): wait for it to commit, then the answer is known
            await asyncio.sleep(0.002 * (attempt + 1))
        if reply.get("duplicate"):
            if reply.get("seq"):
                self._wrote(aggregate, int(reply["seq"]))
            return [r for r in await self.load(aggregate) if r.command_id == command_id]
        error = reply.get("error")
        if error is None:
            self._room(False)
            last_sequence = int(reply["seq"])
            self._wrote(aggregate, last_sequence)
            # a batch is a message per event; otherwise the events share the one message's sequence
            batched = self._batched(events)
            first = last_sequence - len(events) + 1 if batched else last_sequence
            stored = [
                Recorded(
                    aggregate, expected.version + i, first + (i - 1 if batched else 0), command_id, bytes(data), trace
                )
                for i, data in enumerate(events, start=1)
            ]
            if trace:
                for recorded in stored:
                    tracing.remember(aggregate, recorded.version, trace)
            return stored
        if error.get("err_code") in (WRONG_LAST_SEQUENCE, DUPLICATE_IN_BATCH):
            last = await self._last(aggregate, leader=True)  # newer than expected: a replica may not have it yet
            if last is not None and last.seq is not None:
                self._wrote(aggregate, last.seq)
            if last is not None and last.headers is not None and last.headers.get(COMMAND) == command_id:
                return [r for r in await self.load(aggregate) if r.command_id == command_id]
            raise ConcurrencyConflict(
                f"{aggregate} has moved past version {expected.version}: another writer appended first"
            )
        if _no_room(error):
            self._room(True)
            raise StoreFull(f"JetStream has no room for the append to {aggregate}: {error.get('description', error)}")
        raise StoreUnavailable(f"JetStream refused the append to {aggregate}: {error.get('description', error)}")

    async def _publish(
        self, aggregate: str, expected: Position, command_id: str, events: Sequence[bytes], trace: Trace = ()
    ) -> dict[str, Any]:
        """Publish one command's events as one message (`paiju.platform.store.messages`), with the trace context
        ``trace`` (when traced); as an atomic batch if they would not fit in one message (the server's
        ``max_payload``, 1 MiB by default), or with ``batches``. The server's reply."""
        if self._batched(events):
            return await self._publish_batch(aggregate, expected, command_id, events, trace)
        headers = {
            "Nats-Msg-Id": f"{aggregate}:{command_id}:1",
            COMMAND: command_id,
            "Nats-Expected-Last-Subject-Sequence": str(expected.sequence),
        }
        if len(events) == 1:  # one event: the form every reader has always read
            headers[VERSION] = str(expected.version + 1)
            body = bytes(events[0])
        else:
            headers[EVENTS] = str(len(events))
            headers[FIRST_VERSION] = str(expected.version + 1)
            body = pack(events)
        if trace:
            headers.update(trace)
        msg = await self._nc.request(self.subject(aggregate), body, timeout=self._timeout, headers=headers)
        reply: dict[str, Any] = json.loads(msg.data) if msg.data else {}
        return reply

    def _batched(self, events: Sequence[bytes]) -> bool:
        """Whether a command's ``events`` are stored as an atomic batch, a message per event: with ``batches``, or
        when they would not fit in one message (a rare command, stored as streams were before)."""
        return len(events) > 1 and (self._batches or sum(map(len, events)) + 6 * len(events) > self._nc.max_payload)

    async def _publish_batch(
        self, aggregate: str, expected: Position, command_id: str, events: Sequence[bytes], trace: Trace = ()
    ) -> dict[str, Any]:
        """Publish one command's events as an atomic batch, a message per event (the form streams were written in
        before a command's events were one message: ``batches=True``). The server's reply."""
        subject = self.subject(aggregate)
        batch = uuid.uuid4().hex if len(events) > 1 else ""
        reply: dict[str, Any] = {}
        for i, data in enumerate(events, start=1):
            headers = {
                "Nats-Msg-Id": f"{aggregate}:{command_id}:{i}",
                VERSION: str(expected.version + i),
                COMMAND: command_id,
            }
            if len(events) > 1:
                headers["Nats-Batch-Id"] = batch
                headers["Nats-Batch-Sequence"] = str(i)
                if i == len(events):
                    headers["Nats-Batch-Commit"] = "1"
            if i == 1:
                headers["Nats-Expected-Last-Subject-Sequence"] = str(expected.sequence)
            if trace:
                headers.update(trace)
            msg = await self._nc.request(subject, bytes(data), timeout=self._timeout, headers=headers)
            if msg.data:
                reply = json.loads(msg.data)
                if "error" in reply:
                    break
        return reply


class JetStreamSubscription:
    """(See `paiju.platform.store.Subscription`.) One ephemeral *pull* consumer of the stream for as long as the
    subscription lives (no acknowledgements, in memory, one replica), filtered by the server to the subjects read,
    from the event after the position it started at; what it pulls comes back to a plain subscription of this
    connection, one reply subject per pull request.

    It is told that events exist, then fetches what is there in one go. A reader's loop wakes once per pull, not
    once per event, whatever the number of events a pull brings back: with events stored one by one at a steady
    rate, a delivered message per event would cost a wake-up of the reader's event loop each (most of what
    following a busy stream costs), a pulled burst of them one.

    - A take without a timeout, with nothing to return and nothing known to be left (the stream quiet), leaves one
      *waiting* pull request for a single event (`PULL_WAIT_SECONDS` long, made again when it expires, with an idle
      heartbeat every `SUBSCRIPTION_HEARTBEAT_SECONDS`): the first event stored is delivered at once, and ends the
      take. It is one event, never a waiting request of several, which the server would answer event by event as
      they are stored.
    - A take with a ``timeout`` gathers: while the consumer is known to have nothing left it waits until its time
      is over, then sends one ``no_wait`` pull for what it still wants and returns what that burst brought. While
      it waits longer than `FETCH_SECONDS` it fetches a burst every `FETCH_SECONDS`, so that an event that wakes
      it (``wake``: `Subscription.take`), or the last one it asked for, ends it within that interval, and the
      others cost a wake-up per burst.
    - The last message of a burst tells how many the consumer has left (`delivery_pending`): while some are, the
      next burst is fetched at once. A backlog is read at full speed, a batch per pull.

    Its events wait in a queue until taken; nothing comes that a take did not ask for, and a take asks for at most
    ``limit`` messages less what is queued (and `PULL_BYTES`), so a reader slower than the stream — a long backlog,
    a slow handler — holds at most a batch (``tests/platform/test_store_contract.py`` measures it). While the stream
    is quiet it costs the waiting request: its heartbeat, and a new request every `PULL_WAIT_SECONDS`.

    Every delivery carries the consumer's own sequence, and every heartbeat the last one the server sent: a gap
    (messages lost while the connection was down, or dropped by a full subscription), a pull answered by anything
    but events, a heartbeat, "no messages", "max bytes" or its expiry (the consumer deleted, a leadership change,
    no consumer at all after a server's restart), or a silence longer than `SUBSCRIPTION_SILENCE_SECONDS` while a
    pull is open makes a new consumer that reads on from the last event received, as nats-py's ordered consumer
    does — and, unlike it, a message dropped by this client is a gap too. The consumer is made again by `take`, not
    by a task of its own: while NATS is away `take` fails (the caller backs off and asks again), and nothing runs
    meanwhile."""

    def __init__(self, store: JetStreamEventStore, subjects: list[str] | None, after: int) -> None:
        self._store = store
        self._nc = store.client
        self._subjects = subjects
        """The subjects read (``None``: the whole stream; empty: none, so nothing ever arrives)."""
        self._position = after
        self._received = after
        """The stream sequence of the last event received (taken or queued)."""
        self._queue: deque[Recorded] = deque()
        self._arrivals = Arrivals()
        self._generation = 0
        self._delivered = 0
        """The consumer sequence of the last message of the current consumer."""
        self._pending = 0
        """How many messages the current consumer had left to deliver when last heard of (0: none known)."""
        self._oversized = False
        """The next message is larger than `PULL_BYTES`: the next burst is that message alone."""
        self._pull: _Pull | None = None
        """The pull request open (at most one at a time: each message answers the one open)."""
        self._next = ""
        """The subject pull requests are sent to (``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>``)."""
        self._inbox = ""
        self._sub: Any = None
        self._consumer: str | None = None
        self._heard = 0.0
        self._broken = False
        self._failure: StoreError | None = None
        self._interrupted = False
        self._closed = False
        self.consumers = 0
        """How many consumers it made (the first, then one after each gap or silence)."""
        self.pulls = 0
        """How many pull requests it sent (waiting ones and bursts)."""
        self.most_queued = 0
        """The longest its queue of events not taken yet has been."""
        self._judge: Callable[[Recorded], bool] | None = None
        self._judged = 0
        """How many of the queued events ``_judge`` found not waking (judged once each, not at every arrival)."""
        self._roused = False
        """Whether one of the queued events wakes ``_judge``'s take."""

    @property
    def position(self) -> int:
        return self._position

    @property
    def received(self) -> int:
        """The stream sequence of the last event fetched (taken, or held for a take: see `position`)."""
        return self._received

    async def take(
        self, limit: int, timeout: float | None = None, wake: Callable[[Recorded], bool] | None = None
    ) -> list[Recorded]:
        if limit < 1:
            raise ValueError("a take asks for at least one event")
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = None if timeout is None else start + timeout
        next_fetch = start + FETCH_SECONDS
        """When a take with a timeout fetches again while it waits."""
        fetched = False
        """Whether this take fetched once its time was over (its last burst)."""
        watching = self._subjects != []
        while not self._closed:
            if self._failure is not None:
                raise self._failure
            queue, pull = self._queue, self._pull
            if self._interrupted:
                if queue:
                    return self._taken(limit)
                break
            now = loop.time()
            over = deadline is not None and now >= deadline
            fetching = pull is not None and not pull.waiting
            if queue and (
                len(queue) >= limit
                or (wake is not None and self._rouses(wake))
                or (not fetching and wake is None and deadline is None)
            ):
                return self._taken(limit)
            if watching and (
                self._sub is None
                or self._broken
                or (pull is not None and now - self._heard > SUBSCRIPTION_SILENCE_SECONDS)
            ):
                await self.restart()
                continue
            if watching and pull is None:
                wanted = limit - len(queue)
                if self._pending > 0 or (over and not fetched) or (deadline is not None and now >= next_fetch):
                    fetched = over
                    next_fetch = now + FETCH_SECONDS
                    await self._fetch(wanted, waiting=False)
                    continue
                if deadline is None:
                    await self._fetch(1, waiting=True)  # told of the first event stored
                    continue
            if over and not fetching:
                # its last burst is in, or there is none to fetch: no consumer, or a waiting request open (the
                # server has nothing for it, or it would have answered that)
                return self._taken(limit) if queue else []
            left = None if deadline is None or over else deadline - now
            if deadline is not None and pull is None and not over:
                left = next_fetch - now if left is None else min(left, next_fetch - now)
            if pull is not None:
                silent = self._heard + SUBSCRIPTION_SILENCE_SECONDS - now + 0.01
                left = silent if left is None else min(left, silent)
            await self._arrivals.wait(left)
        self._interrupted = False
        return []

    def _taken(self, limit: int) -> list[Recorded]:
        """The first ``limit`` events queued and the rest of the message the last of them is in (`whole`)."""
        queue = self._queue
        taken = [queue.popleft() for _ in range(whole(queue, limit))]
        self._judged, self._roused = 0, False  # what is left is judged again by the next take
        self._interrupted = False
        self._position = taken[-1].sequence
        return taken

    def _rouses(self, wake: Callable[[Recorded], bool]) -> bool:
        """Whether an event queued is one ``wake`` accepts (`rouses`): each judged once, while it waits."""
        if not self._roused and self._judge is not wake:
            self._judge, self._judged = wake, 0
        queue = self._queue
        while not self._roused and self._judged < len(queue):
            self._roused = rouses(wake, (queue[self._judged],))
            self._judged += 1
        return self._roused

    def interrupt(self) -> None:
        self._interrupted = True
        self._arrivals.wake()

    async def close(self) -> None:
        self._closed = True
        self._arrivals.wake()
        await self._stop()
        self._queue.clear()
        self._judged, self._roused = 0, False

    async def restart(self) -> None:
        """Make a new consumer from the event after the last one received (the old one, if any, deleted)."""
        await self._stop()
        self._generation += 1
        self._delivered = 0
        inbox = self._nc.new_inbox()
        sub = await self._nc.subscribe(
            f"{inbox}.*",
            cb=self._receiver(self._generation),
            pending_msgs_limit=CONSUME_PENDING,
            pending_bytes_limit=CONSUME_PENDING_BYTES,
        )
        start: dict[str, Any] = (
            {"deliver_policy": DeliverPolicy.BY_START_SEQUENCE, "opt_start_seq": self._received + 1}
            if self._received
            else {"deliver_policy": DeliverPolicy.ALL}
        )
        subjects = self._subjects
        try:
            info = await self._store._js.add_consumer(
                self._store.stream,
                ConsumerConfig(
                    filter_subject=subjects[0] if subjects is not None and len(subjects) == 1 else None,
                    filter_subjects=subjects if subjects is not None and len(subjects) > 1 else None,
                    ack_policy=AckPolicy.NONE,
                    mem_storage=True,
                    num_replicas=1,
                    inactive_threshold=INACTIVE_SECONDS,
                    **start,
                ),
            )
        except BaseException:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
            raise
        self._sub, self._consumer, self._inbox = sub, info.name, inbox
        self._next = f"$JS.API.CONSUMER.MSG.NEXT.{self._store.stream}.{info.name}"
        self._pending = int(info.num_pending or 0)
        self._broken = False
        self._heard = asyncio.get_running_loop().time()
        self.consumers += 1

    async def _fetch(self, batch: int, *, waiting: bool) -> None:
        """Send a pull request: for ``batch`` messages of those there now (``no_wait``), or, ``waiting``, one that
        waits for them (`PULL_WAIT_SECONDS`, with a heartbeat)."""
        if self._oversized and not waiting:
            batch = 1  # a message larger than a burst may be: alone
        request: dict[str, Any] = (
            {
                "batch": batch,
                "expires": int(PULL_WAIT_SECONDS * 1e9),
                "idle_heartbeat": int(SUBSCRIPTION_HEARTBEAT_SECONDS * 1e9),
            }
            if waiting
            else {"batch": 1, "no_wait": True}
            if self._oversized
            else {"batch": batch, "no_wait": True, "max_bytes": PULL_BYTES}
        )
        self.pulls += 1
        pull = self._pull = _Pull(f"{self._inbox}.{self.pulls}", batch, waiting)
        self._heard = asyncio.get_running_loop().time()
        try:
            await self._nc.publish(self._next, json.dumps(request).encode(), reply=pull.reply)
        except BaseException:
            self._pull = None
            raise

    async def _stop(self) -> None:
        sub, consumer = self._sub, self._consumer
        self._sub = self._consumer = self._pull = None
        self._generation += 1  # whatever the old consumer still delivers is not heard
        if sub is not None:
            with contextlib.suppress(Exception):  # a connection that is down has nothing left to unsubscribe
                await sub.unsubscribe()
        if consumer is not None:  # not waited for: a consumer the delete misses goes after its inactivity
            with contextlib.suppress(Exception):
                await self._nc.publish(f"$JS.API.CONSUMER.DELETE.{self._store.stream}.{consumer}")

    def _receiver(self, generation: int) -> Callable[[Msg], Awaitable[None]]:
        loop = asyncio.get_running_loop()

        async def receive(msg: Msg) -> None:
            if generation != self._generation:
                return  # from a consumer replaced since
            self._heard = loop.time()
            pull = self._pull
            reply = msg.reply
            if reply and reply.startswith("$JS.ACK."):
                stream_sequence, consumer_sequence = delivery_sequences(reply)
                if consumer_sequence != self._delivered + 1 or pull is None:
                    self._break()  # a message lost (or one no request asked for): read on from the last received
                    return
                self._delivered = consumer_sequence
                self._pending = delivery_pending(reply)
                self._oversized = False
                try:
                    stored = decode(self._store._aggregate_of(msg.subject), stream_sequence, msg.headers, msg.data)
                except StoreError as e:
                    self._failure = e  # not an event of this store: every take says so
                    self._arrivals.wake()
                    return
                self._received = stream_sequence
                self._queue.extend(stored)  # a message's events together: a take never splits them
                self.most_queued = max(self.most_queued, len(self._queue))
                pull.got += 1
                if pull.got >= pull.batch:  # the burst is in: the take waiting wakes once for all of it
                    self._pull = None
                    self._arrivals.wake()
                return
            if pull is None or msg.subject != pull.reply:
                return  # the end of a request already over
            headers = msg.headers or {}
            status = headers.get("Status")
            if status == "100":  # an idle heartbeat of the waiting request
                if int(headers.get("Nats-Last-Consumer", self._delivered)) != self._delivered:
                    self._break()  # after messages this subscription did not get
                return
            self._pull = None
            if status == "404":
                self._pending = 0  # no messages (more): the burst is in
            elif status == "409" and "MaxBytes" in str(headers.get("Description", "")):
                self._oversized = not pull.got  # the burst is as large as it may be (or its first message larger)
            elif status != "408":  # (408: the waiting request expired; the next take makes another)
                self._break()  # the consumer is gone (409 Consumer Deleted, 503 no responders) or something else
            self._arrivals.wake()

        return receive

    def _break(self) -> None:
        self._broken = True
        self._arrivals.wake()


@dataclass(slots=True)
class _Pull:
    """A pull request open: its reply subject, how many messages it asked for and how many came."""

    reply: str
    batch: int
    waiting: bool
    """A request that waits for its messages (else ``no_wait``: those there now)."""
    got: int = 0


def delivery_sequences(reply: str) -> tuple[int, int]:
    """The stream and consumer sequences of a delivered JetStream message, from its ack subject: ``$JS.ACK.
    <stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>``, or the newer form with
    the domain and account hash after ``ACK`` (and possibly a token at the end)."""
    tokens = reply.split(".")
    if len(tokens) == 9:
        return int(tokens[5]), int(tokens[6])
    if len(tokens) >= 11:
        return int(tokens[7]), int(tokens[8])
    raise StoreError(f"not a JetStream delivery: {reply!r}")


def delivery_pending(reply: str) -> int:
    """How many messages the consumer had left to deliver after this one (the ack subject's last number)."""
    tokens = reply.split(".")
    return int(tokens[8] if len(tokens) == 9 else tokens[10])


class StoreFull(StoreUnavailable):
    """JetStream refused an append for lack of space: nothing was stored, and the caller may try again later."""


def _no_room(error: dict[str, Any]) -> bool:
    """Whether an append was refused for lack of space."""
    description = str(error.get("description", "")).lower()
    return (
        error.get("err_code") in (INSUFFICIENT_RESOURCES, STORE_FAILED)
        or "insufficient resources" in description
        or "no space" in description
    )


def _busy(error: dict[str, Any]) -> bool:
    """Whether an append was refused only for now: too many open batches, or the same command being stored by
    another writer at this moment (it is decided once that one commits)."""
    description = str(error.get("description", ""))
    return (
        "too many inflight" in description
        or error.get("err_code") == DUPLICATE_IN_PROCESS
        or "duplicate message id is in process" in description
    )
