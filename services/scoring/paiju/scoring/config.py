"""The scoring service's configuration, from the environment (one place that reads it)."""

from __future__ import annotations

import os
from dataclasses import dataclass

SHARDS = 4
"""The games projection's shards by default (four partitions each of the sixteen)."""


@dataclass(frozen=True)
class Settings:
    address: str = "127.0.0.1:50053"
    """Where the gRPC server listens (PAIJU_SCORING_ADDRESS)."""
    nats_url: str = "nats://127.0.0.1:4222"
    """The NATS server or cluster (NATS_URL)."""
    database_url: str = ""
    """PostgreSQL for the read models (DATABASE_URL, required)."""
    stream: str = "TOURNAMENTS"
    """The tournaments' JetStream stream (PAIJU_TOURNAMENTS_STREAM); subjects <prefix>.<tournament id>."""
    prefix: str = "paiju.tournament"
    """PAIJU_TOURNAMENTS_SUBJECT_PREFIX."""
    games_stream: str = "GAMES"
    """The engine's stream (PAIJU_GAMES_STREAM)."""
    games_prefix: str = "paiju.game"
    """PAIJU_GAMES_SUBJECT_PREFIX."""
    lobby_stream: str = "LOBBY"
    """The lobby's stream, read for tournament match results (PAIJU_LOBBY_STREAM)."""
    lobby_prefix: str = "paiju.lobby"
    """PAIJU_LOBBY_SUBJECT_PREFIX."""
    replicas: int = 1
    """Stream replicas when scoring creates its stream (PAIJU_STREAM_REPLICAS; 3 in a cluster)."""
    shards: int = SHARDS
    """How many shards the games projection is applied in (PAIJU_SCORING_SHARDS; at most the partitions of the
    games): replicas apply different shards at once, and a rebuild reads them in parallel processes."""
    batch: int = 500
    """Events a projection applies per transaction at most (PAIJU_SCORING_BATCH)."""
    linger_ms: int = 250
    """How long a running projection gathers events after the first of a batch before applying them
    (PAIJU_SCORING_LINGER_MS): fuller and fewer transactions under load, at the cost of that much delay."""
    metrics_port: int = 9466
    """Prometheus metrics port (PAIJU_SCORING_METRICS_PORT; 0 = off)."""
    log_level: str = "info"
    """PAIJU_LOG_LEVEL."""

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        values = os.environ if env is None else env
        d = cls()
        return cls(
            address=values.get("PAIJU_SCORING_ADDRESS", d.address),
            nats_url=values.get("NATS_URL", d.nats_url),
            database_url=values.get("DATABASE_URL", d.database_url),
            stream=values.get("PAIJU_TOURNAMENTS_STREAM", d.stream),
            prefix=values.get("PAIJU_TOURNAMENTS_SUBJECT_PREFIX", d.prefix),
            games_stream=values.get("PAIJU_GAMES_STREAM", d.games_stream),
            games_prefix=values.get("PAIJU_GAMES_SUBJECT_PREFIX", d.games_prefix),
            lobby_stream=values.get("PAIJU_LOBBY_STREAM", d.lobby_stream),
            lobby_prefix=values.get("PAIJU_LOBBY_SUBJECT_PREFIX", d.lobby_prefix),
            replicas=int(values.get("PAIJU_STREAM_REPLICAS", d.replicas)),
            batch=int(values.get("PAIJU_SCORING_BATCH", d.batch)),
            linger_ms=int(values.get("PAIJU_SCORING_LINGER_MS", d.linger_ms)),
            shards=int(values.get("PAIJU_SCORING_SHARDS", d.shards)),
            metrics_port=int(values.get("PAIJU_SCORING_METRICS_PORT", d.metrics_port)),
            log_level=values.get("PAIJU_LOG_LEVEL", d.log_level),
        )
