"""The engine's configuration, from the environment (twelve-factor): one place that reads it."""

from __future__ import annotations

import os
from dataclasses import dataclass

from paiju.platform.partitions import PARTITIONS, configured


@dataclass(frozen=True)
class Settings:
    address: str = "127.0.0.1:50051"
    """Where the gRPC server listens (PAIJU_ENGINE_ADDRESS)."""
    nats_url: str = "nats://127.0.0.1:4222"
    """The NATS server or cluster (NATS_URL)."""
    stream: str = "GAMES"
    """The JetStream stream of games (PAIJU_GAMES_STREAM); subjects paiju.game.<partition>.<game id>."""
    prefix: str = "paiju.game"
    """The subject prefix of games: one subject <prefix>.<partition>.<game id> each (PAIJU_GAMES_SUBJECT_PREFIX)."""
    replicas: int = 1
    """Stream replicas when the engine creates the stream (PAIJU_STREAM_REPLICAS; 3 in a cluster)."""
    metrics_port: int = 9464
    """Prometheus metrics on http://0.0.0.0:<port>/metrics (PAIJU_METRICS_PORT; 0 = off)."""
    log_level: str = "info"
    """PAIJU_LOG_LEVEL."""
    timer_seconds: float = 1.0
    """How often expired turns are looked for (PAIJU_TIMER_SECONDS)."""
    partitions: int = PARTITIONS
    """How many partitions the games fall in when the engine creates the GAMES stream (PAIJU_GAME_PARTITIONS; 0:
    none, every replica follows every game). A stream keeps the number it was created with."""
    fair_dealing: bool = True
    """New games are dealt from committed shuffles that anyone can verify afterwards (PAIJU_FAIR_DEALING, ``on`` or
    ``off``; docs/fairness.md). Games keep the way they were started with."""
    contribution_seconds: float = 2.0
    """How long a fair deal without a cut (a first deal) waits for the seats' contributions before the engine deals
    it with those that came (PAIJU_CONTRIBUTION_SECONDS; 0: at once, without them)."""
    cache_mib: int = 128
    """The games this replica holds in memory, at most this many MiB by their estimate (PAIJU_GAME_CACHE_MIB): the
    least recently moved beyond it are read from the store again when asked for."""
    lobby_stream: str = "LOBBY"
    """The lobby's JetStream stream, whose match starts the engine turns into games (PAIJU_LOBBY_STREAM)."""
    lobby_prefix: str = "paiju.lobby"
    """The lobby's subject prefix (PAIJU_LOBBY_SUBJECT_PREFIX)."""

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        values = os.environ if env is None else env
        d = cls()
        return cls(
            address=values.get("PAIJU_ENGINE_ADDRESS", d.address),
            nats_url=values.get("NATS_URL", d.nats_url),
            stream=values.get("PAIJU_GAMES_STREAM", d.stream),
            prefix=values.get("PAIJU_GAMES_SUBJECT_PREFIX", d.prefix),
            replicas=int(values.get("PAIJU_STREAM_REPLICAS", d.replicas)),
            metrics_port=int(values.get("PAIJU_METRICS_PORT", d.metrics_port)),
            log_level=values.get("PAIJU_LOG_LEVEL", d.log_level),
            timer_seconds=float(values.get("PAIJU_TIMER_SECONDS", d.timer_seconds)),
            partitions=configured(dict(values)),
            fair_dealing=_switch(values.get("PAIJU_FAIR_DEALING", "on"), "PAIJU_FAIR_DEALING"),
            contribution_seconds=float(values.get("PAIJU_CONTRIBUTION_SECONDS", d.contribution_seconds)),
            cache_mib=int(values.get("PAIJU_GAME_CACHE_MIB", d.cache_mib)),
            lobby_stream=values.get("PAIJU_LOBBY_STREAM", d.lobby_stream),
            lobby_prefix=values.get("PAIJU_LOBBY_SUBJECT_PREFIX", d.lobby_prefix),
        )


def _switch(value: str, name: str) -> bool:
    """``on`` / ``off`` (also true/false, 1/0, yes/no); `SystemExit` naming the variable otherwise."""
    word = value.strip().lower()
    if word in ("on", "true", "1", "yes"):
        return True
    if word in ("off", "false", "0", "no"):
        return False
    raise SystemExit(f"{name} must be on or off, not {value!r}")
