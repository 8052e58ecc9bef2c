"""Dependencies that come and go: which ones a service needs, whether each is reachable now, and what the service
says about it.

A service registers what it needs — its NATS connections, its PostgreSQL pool — in a `Dependencies`. A task
(`Dependencies.watch`) looks at each every second: a NATS connection by its state (the client reconnects by
itself, for ever: see `paiju.platform.nats`), PostgreSQL by a ``SELECT 1``. While one is unreachable:

- the gRPC health of the service's own name (``paiju.v1.EngineService``…) is NOT_SERVING, so a load balancer or
  Kubernetes' readiness probe takes the replica out of rotation; the server's overall health (``""``, the
  liveness probe's) stays SERVING, so nothing restarts a process that is only waiting;
- the edge answers every call UNAVAILABLE / DEPENDENCY_UNAVAILABLE at once (`missing` is its readiness hook);
- ``paiju_dependency_up{dependency}`` is 0.

When the dependency is back, the next look (within a second) makes the service SERVING again.

A stream the service appends to counts as a dependency too (`add_store`): while JetStream refuses its appends for
lack of space, the service is NOT_SERVING, so its callers are told UNAVAILABLE at once (retryable) instead of after
each append's refusal, and a probe takes it out of rotation; ``paiju_store_full{stream}`` says so meanwhile (see
`paiju.platform.store.jetstream`, and docs/operations.md, "A full log").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from grpc_health.v1 import health, health_pb2
from prometheus_client import Gauge

log = structlog.get_logger("paiju.health")

CHECK_SECONDS = 1.0
"""How often each dependency is looked at."""
PROBE_TIMEOUT_SECONDS = 2.0
"""How long a probe (PostgreSQL's ``SELECT 1``) may take before the dependency counts as unreachable."""

UP = Gauge("paiju_dependency_up", "Whether a dependency the service needs is reachable (1) or not (0)", ["dependency"])

Probe = Callable[[], Awaitable[bool]]


class Dependencies:
    """The dependencies one service needs, and whether each is reachable (as last looked at)."""

    def __init__(self) -> None:
        self._probes: dict[str, Probe] = {}
        self._down: set[str] = set()
        self._changed: list[Callable[[str, bool], None]] = []

    def add(self, name: str, probe: Probe) -> None:
        """Need ``name``, reachable when ``probe()`` answers True (a probe that raises or hangs means not)."""
        self._probes[name] = probe
        UP.labels(name).set(1)

    def add_nats(self, name: str, client: Any) -> None:
        """Need a NATS connection: reachable while the client is connected (it reconnects by itself)."""

        async def connected() -> bool:
            return bool(client.is_connected)

        self.add(name, connected)

    def add_postgres(self, name: str, pool: Any) -> None:
        """Need a PostgreSQL pool: reachable when ``SELECT 1`` answers (the pool reconnects by itself)."""

        async def answers() -> bool:
            return bool(await pool.fetchval("SELECT 1", timeout=PROBE_TIMEOUT_SECONDS) == 1)

        self.add(name, answers)

    def add_store(self, name: str, store: Any) -> None:
        """Need room in a stream the service appends to: reachable unless the store reports itself ``full``."""

        async def room() -> bool:
            return not store.full

        self.add(name, room)

    def on_change(self, callback: Callable[[str, bool], None]) -> None:
        """Call ``callback(dependency, up)`` each time a dependency goes away or comes back."""
        self._changed.append(callback)

    def missing(self) -> str | None:
        """A dependency that is unreachable now (``None``: all are reachable) — the edge's readiness hook."""
        return min(self._down) if self._down else None

    async def look(self) -> None:
        """Look at every dependency once and record what is reachable."""
        for name, probe in self._probes.items():
            try:
                up = await asyncio.wait_for(probe(), PROBE_TIMEOUT_SECONDS)
            except Exception:
                up = False
            was_up = name not in self._down
            if up == was_up:
                continue
            if up:
                self._down.discard(name)
                log.info("dependency reachable again", dependency=name)
            else:
                self._down.add(name)
                log.warning("dependency unreachable", dependency=name)
            UP.labels(name).set(1 if up else 0)
            for callback in self._changed:
                callback(name, up)

    async def watch(self, servicer: health.aio.HealthServicer, service: str, stop: asyncio.Event) -> None:
        """Until ``stop``: look every `CHECK_SECONDS` and keep ``service``'s gRPC health SERVING exactly while every
        dependency is reachable."""
        serving: bool | None = None
        while not stop.is_set():
            await self.look()
            now = self.missing() is None
            if now != serving:
                serving = now
                status = health_pb2.HealthCheckResponse.SERVING if now else health_pb2.HealthCheckResponse.NOT_SERVING
                await servicer.set(service, status)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), CHECK_SECONDS)
