"""Builds the engine's parts from its settings and runs the gRPC server until SIGTERM (docs/architecture.md,
Principle 4)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from paiju.engine import metrics
from paiju.engine.config import Settings
from paiju.engine.dealing import FairDealing
from paiju.engine.games import CACHED_GAME_BYTES, Games
from paiju.engine.live import KeyValueLiveGames, LiveGames
from paiju.engine.matches import match_starter
from paiju.engine.seeds import server_seeds, shuffle_seed
from paiju.engine.service import RATE_LIMITS, EngineService
from paiju.engine.timers import expire_turns
from paiju.platform import tracing
from paiju.platform.consumer import Consumer, KeyValueTracking, in_background
from paiju.platform.health import Dependencies
from paiju.platform.limits import RateLimits
from paiju.platform.nats import Access
from paiju.platform.observability import configure_logging
from paiju.platform.ownership import Ownership
from paiju.platform.retry import Backoff, report
from paiju.platform.serving import GRACE_SECONDS, serve_grpc, stop_on_signals
from paiju.platform.settings import batches
from paiju.platform.store import EventStore
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Revocations, Trust, trust_of
from paiju.v1 import engine_pb2

SERVICE_NAME = engine_pb2.DESCRIPTOR.services_by_name["EngineService"].full_name
CHECKPOINTS = "paiju-engine-checkpoints"
"""The key-value bucket of the engine's stream consumers' checkpoints (the engine has no database)."""
YOUNG_COLLECTION = 10_000
"""The net allocations of tracked objects after which the serving engine's garbage collector looks at its youngest
generation (Python's default: 700). Reference counting frees nearly everything a call makes the moment it is done
with; what the collector is for — cycles — is rare, and each look walks every object still alive in the generation
(the games, envelopes and encodings just made, again and again): looking less often costs less CPU, and a cycle
waits at most that many more allocations to be freed."""


def settle_collector() -> None:
    """Once the engine is serving: what start-up made (modules, codecs, compiled validation rules, connections) lives
    as long as the process, so it is collected now and left out of every later collection (`gc.freeze`); and the
    young generation is looked at every `YOUNG_COLLECTION` allocations."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION, *gc.get_threshold()[1:])


def owners_bucket(stream: str) -> str:
    """The key-value bucket of the leases on the partitions of the games of ``stream`` (`paiju.platform.ownership`)."""
    return f"paiju-owners-{stream}"


async def own_partitions(
    games: Games, client: Any, stream: str, stopping: asyncio.Event, *, replicas: int = 1, **lease: Any
) -> tuple[Ownership | None, asyncio.Task[None] | None]:
    """Take this replica's share of the partitions of the games, and keep it until ``stopping`` (then give it up). A
    stream without partitions has nothing to share: the replica owns every game, as one alone would."""
    if not games.store.partitions:
        await games.own(None)
        return None, None
    ownership = await Ownership.open(
        client, owners_bucket(stream), games.store.partitions, games.own, replicas=replicas, **lease
    )
    with contextlib.suppress(Exception):  # NATS away: the rounds keep trying
        await ownership.round()  # the first share at once, before the first act is served
    return ownership, asyncio.create_task(ownership.run(stopping))


async def run_timers(games: Games, secret: bytes, every: float, stopping: asyncio.Event) -> None:
    """Expire running turns every ``every`` seconds until the engine stops (see `paiju.engine.timers`). A scan that
    fails (NATS away) is logged and tried again after a backoff, from ``every`` doubling to 5 s (at least ``every``),
    and every ``every`` seconds again once one succeeds."""
    log = structlog.get_logger("paiju.engine.timers")
    backoff = Backoff(every, max(every, 5.0))
    while not stopping.is_set():
        try:
            await expire_turns(games, datetime.now(UTC), lambda g, v: shuffle_seed(secret, g, v))
        except Exception as e:  # a failing scan must not stop the timers; it is logged and retried
            report(log, "turn timer scan failed", e)
            await backoff.wait(stopping)
            continue
        backoff.succeeded()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), timeout=every)


async def start_matches(
    lobby: JetStreamEventStore,
    revocations: Revocations,
    starter: Callable[[], Awaitable[Consumer]],
    stopping: asyncio.Event,
    *,
    stream: str,
) -> None:
    """Once the lobby's stream is there: hear its revocations, and start the matches it records (``starter`` makes
    the match starter, `paiju.engine.matches`), until ``stopping``. A step that fails (NATS away) is tried again
    after a backoff (0.2 s doubling to 5 s), the steps done before it not done again: nothing else would start the
    matches, and the task's end would tell nobody."""
    log = structlog.get_logger("paiju.engine")
    backoff = Backoff()
    consumer: Consumer | None = None
    while True:
        try:
            waiting = asyncio.create_task(lobby.wait_for_stream())
            stopped = asyncio.create_task(stopping.wait())
            await asyncio.wait([waiting, stopped], return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if not waiting.done():  # stopped before the lobby's stream was there: no match to start
                waiting.cancel()
                return
            waiting.result()
            if not revocations.following:
                await revocations.follow()
            if consumer is None:
                consumer = await starter()
            await consumer.adopt(lobby.client, stream, "engine-match-starter")  # the work queue before it
            break
        except Exception as e:
            report(log, "the match starter could not start; trying again", e)
            await backoff.wait(stopping)
            if stopping.is_set():
                return
    await in_background(consumer, stopping)


async def build(
    store: EventStore,
    trust: Trust,
    *,
    live: LiveGames | None = None,
    owned: frozenset[int] | None = None,
    contribution_seconds: float | None = None,
    previous_secret: bytes | None = None,
    fair_new_games: bool = True,
    fair_protocol: int = 2,
    first_deal_seconds: float = 0.0,
    cache_bytes: int = CACHED_GAME_BYTES,
    **service: Any,
) -> tuple[Games, EngineService]:
    """The engine's games and service over ``store``, wired as every engine runs them — the games follow the
    store's feed, so appends by any replica keep this one's cache current and wake its watchers. ``service``: the
    `EngineService`'s keyword arguments (seed secret or seeds, clock, rate limits). ``live``: the set of live
    games read at start (`paiju.engine.live`; without it, every game of the store). ``owned``: the partitions this
    replica owns at first (``None``: every game; `serve` starts with none and takes its share, `own_partitions`).
    ``contribution_seconds``: new games are dealt from committed shuffles (`paiju.rules.fair`), each window waiting
    that long for the seats (``None``: from seeds, as the tests that do not look at fairness keep it);
    ``previous_secret``: the seed secret before the current one, whose committed shuffles are still dealt and
    revealed; ``fair_new_games``: new games start fair (else from seeds, while the fair games already started go on
    fairly); ``fair_protocol``: the protocol version new fair games are dealt by (2: commit, then reveal);
    ``first_deal_seconds``: how long a version-2 game's first shuffle waits for a seat's client to watch;
    ``cache_bytes``: the games held in memory, by their estimated bytes. The tests build it here too."""
    dealing = None
    if contribution_seconds is not None:
        secret = service.get("seed_secret")
        if secret is None:
            raise ValueError("dealing fairly needs the engine's seed secret")
        secrets = [secret] if previous_secret is None else [secret, previous_secret]
        dealing = FairDealing(
            lambda game_id, number: server_seeds(secrets, game_id, number),
            contribution_seconds,
            new_games=fair_new_games,
            protocol=fair_protocol,
            first_deal_seconds=first_deal_seconds,
        )
    games = Games(store, live=live, cache_bytes=cache_bytes, dealing=dealing)
    await games.own(owned)
    await games.follow()
    return games, EngineService(games, trust, **service)


async def serve(settings: Settings, stop: asyncio.Event | None = None, ready: asyncio.Event | None = None) -> None:
    """Run the engine until ``stop`` is set or the process gets SIGTERM / SIGINT; then drain and close."""
    configure_logging(settings.log_level)
    metrics.register()
    log = structlog.get_logger("paiju.engine")
    tracing.install(tracing.Config.of(settings))  # off unless an OTLP exporter is configured
    settings.report(log)
    secret = settings.seed_secret
    trust = trust_of(settings.trusted_keys)
    access = Access("engine", settings.nats_seed, settings.nats_ca)
    store = await JetStreamEventStore.connect(
        settings.nats_url,
        access=access,
        stream=settings.stream,
        prefix=settings.prefix,
        replicas=settings.replicas,
        partitions=settings.partitions,
        batches=batches(settings.store_command_form),  # the form services of an older release read, while they run
    )
    # the lobby's stream, whose match starts the engine turns into games: made by the lobby, which may start later;
    # the engine serves meanwhile (its games need no lobby), and starts matches once the stream is there
    lobby = await JetStreamEventStore.connect(
        settings.nats_url,
        stream=settings.lobby_stream,
        prefix=settings.lobby_prefix,
        access=access,
        create=False,
        wait=False,
    )
    live = await KeyValueLiveGames.open(store.client, store, settings.stream, replicas=settings.replicas)
    revocations = Revocations(lobby)  # the lobby's revoked sessions: their game tokens are refused (followed below)
    games, service = await build(
        store,
        trust,
        live=live,
        owned=frozenset() if store.partitions else None,  # its share comes from the leases, below
        seed_secret=secret,
        limits=RateLimits(RATE_LIMITS, settings.rate_limits),
        contribution_seconds=settings.contribution_seconds,  # fair games already started go on fairly either way
        fair_new_games=settings.fair_dealing,
        fair_protocol=settings.fair_protocol,
        first_deal_seconds=settings.first_deal_seconds,
        previous_secret=settings.previous_seed_secret,
        cache_bytes=settings.cache_mib << 20,
        revocations=revocations,
    )
    dependencies = Dependencies()
    dependencies.add_nats(f"nats:{settings.stream}", store.client)
    dependencies.add_nats(f"nats:{settings.lobby_stream}", lobby.client)
    dependencies.add_store(f"room:{settings.stream}", store)  # its appends: refused while JetStream is full
    serving = await serve_grpc(
        settings.address,
        SERVICE_NAME,
        service.add_to,
        settings.metrics_port,
        service.policy,
        dependencies=dependencies,
        metrics_host=settings.metrics_host,
    )
    log.info(
        "engine started", address=settings.address, port=serving.port, nats=settings.nats_url, stream=settings.stream
    )
    settle_collector()
    stopping = stop_on_signals(stop)
    _, owning = await own_partitions(games, store.client, settings.stream, stopping, replicas=settings.replicas)
    timers = asyncio.create_task(run_timers(games, secret, settings.timer_seconds, stopping))

    async def starter() -> Consumer:
        checkpoints = await KeyValueTracking.open(
            lobby.client, CHECKPOINTS, scope=settings.lobby_stream, replicas=settings.replicas
        )
        return match_starter(lobby, checkpoints, service.creation)

    matches = asyncio.create_task(
        start_matches(lobby, revocations, starter, stopping, stream=settings.lobby_stream), name="engine:matches"
    )
    if ready is not None:
        ready.set()
    await stopping.wait()
    await timers
    await matches
    if owning is not None:
        await owning  # the partitions given up: the other replicas take them at their next round
    log.info("engine stopping: no new calls, draining the ones in flight", grace_seconds=GRACE_SECONDS)
    service.drain()  # open watch streams end with a WatchEnd saying so: their clients watch elsewhere
    await serving.drain(GRACE_SECONDS)
    await lobby.close()
    await store.close()
    log.info("engine stopped")
    tracing.shutdown()  # the spans not exported yet, exported
