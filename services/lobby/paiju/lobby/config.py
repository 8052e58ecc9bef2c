"""The lobby's configuration, from the environment (one place that reads it)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    address: str = "127.0.0.1:50052"
    """Where the gRPC server listens (PAIJU_LOBBY_ADDRESS)."""
    nats_url: str = "nats://127.0.0.1:4222"
    """The NATS server or cluster (NATS_URL)."""
    database_url: str = ""
    """PostgreSQL for the read model (DATABASE_URL, required)."""
    engine_address: str = "127.0.0.1:50051"
    """The engine service, for seat changes during matches (PAIJU_ENGINE_ADDRESS)."""
    stream: str = "LOBBY"
    """The lobby's JetStream stream (PAIJU_LOBBY_STREAM); subjects <prefix>.<table or account>."""
    prefix: str = "paiju.lobby"
    """PAIJU_LOBBY_SUBJECT_PREFIX."""
    games_stream: str = "GAMES"
    """The engine's stream, read for match results (PAIJU_GAMES_STREAM)."""
    games_prefix: str = "paiju.game"
    """PAIJU_GAMES_SUBJECT_PREFIX."""
    tournaments_stream: str = "TOURNAMENTS"
    """Scoring's tournaments, read for the tables of paired rounds (PAIJU_TOURNAMENTS_STREAM)."""
    tournaments_prefix: str = "paiju.tournament"
    """PAIJU_TOURNAMENTS_SUBJECT_PREFIX."""
    replicas: int = 1
    """Stream replicas when the lobby creates its stream (PAIJU_STREAM_REPLICAS; 3 in a cluster)."""
    grace_seconds: float = 30.0
    """How long a seated player may be away during a match before a bot covers (PAIJU_PRESENCE_GRACE_SECONDS)."""
    metrics_port: int = 9465
    """Prometheus metrics port (PAIJU_LOBBY_METRICS_PORT; 0 = off)."""
    log_level: str = "info"
    """PAIJU_LOG_LEVEL."""

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        values = os.environ if env is None else env
        d = cls()
        return cls(
            address=values.get("PAIJU_LOBBY_ADDRESS", d.address),
            nats_url=values.get("NATS_URL", d.nats_url),
            database_url=values.get("DATABASE_URL", d.database_url),
            engine_address=values.get("PAIJU_ENGINE_ADDRESS", d.engine_address),
            stream=values.get("PAIJU_LOBBY_STREAM", d.stream),
            prefix=values.get("PAIJU_LOBBY_SUBJECT_PREFIX", d.prefix),
            games_stream=values.get("PAIJU_GAMES_STREAM", d.games_stream),
            games_prefix=values.get("PAIJU_GAMES_SUBJECT_PREFIX", d.games_prefix),
            tournaments_stream=values.get("PAIJU_TOURNAMENTS_STREAM", d.tournaments_stream),
            tournaments_prefix=values.get("PAIJU_TOURNAMENTS_SUBJECT_PREFIX", d.tournaments_prefix),
            replicas=int(values.get("PAIJU_STREAM_REPLICAS", d.replicas)),
            grace_seconds=float(values.get("PAIJU_PRESENCE_GRACE_SECONDS", d.grace_seconds)),
            metrics_port=int(values.get("PAIJU_LOBBY_METRICS_PORT", d.metrics_port)),
            log_level=values.get("PAIJU_LOG_LEVEL", d.log_level),
        )
