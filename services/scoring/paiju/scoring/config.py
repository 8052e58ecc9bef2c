"""Scoring's settings, from the environment: each declared once, here or in the module of what it configures
(`paiju.platform.settings`; the table of docs/operations.md, "Configure", is generated from them)."""

from __future__ import annotations

from dataclasses import dataclass

from paiju.platform import settings as s
from paiju.platform.settings import Setting

SHARDS = 4
"""The games projection's shards by default (four partitions each of the sixteen)."""
METRICS_PORT = s.metrics_port("PAIJU_SCORING_METRICS_PORT", 9466)
BATCH = Setting("PAIJU_SCORING_BATCH", 500, "events a projection applies per transaction at most (0: 500)")
LINGER_MS = Setting(
    "PAIJU_SCORING_LINGER_MS",
    250,
    "how long a running projection gathers events after the first of a batch that adds rows (a result, a deal, a "
    "shuffle, a game's start), in milliseconds: fewer, fuller transactions under load, read models that much later "
    "(the play between results waits for the next result, at most 2 s)",
)
SHARDS_SETTING = Setting(
    "PAIJU_SCORING_SHARDS",
    SHARDS,
    "shards of the games projection, each a share of the games' partitions with its own checkpoint (`games.0`…): "
    "replicas apply different shards at once; `paiju scoring rebuild --processes N` rebuilds them in N processes",
)


@dataclass(frozen=True)
class ReadModels(s.Settings):
    """What scoring's read models are built from: the streams, the database and how the projections apply them —
    all that ``paiju scoring rebuild`` reads."""

    nats_url: str = s.NATS_URL.field()
    nats_seed: str = s.NATS_SEED.field()
    nats_ca: str = s.NATS_CA.field()
    database_url: str = s.DATABASE_URL.but(
        help="scoring's PostgreSQL database (its read models), a URL with its password"
    ).field()
    stream: str = s.TOURNAMENTS_STREAM.but(help="the tournaments' stream, which scoring writes").field()
    prefix: str = s.TOURNAMENTS_PREFIX.field()
    games_stream: str = s.GAMES_STREAM.but(help="the games' stream, projected into the read models").field()
    games_prefix: str = s.GAMES_PREFIX.field()
    lobby_stream: str = s.LOBBY_STREAM.but(help="the lobby's stream, read for tournament match results").field()
    lobby_prefix: str = s.LOBBY_PREFIX.field()
    replicas: int = s.STREAM_REPLICAS.but(help="replicas of a stream scoring creates").field()
    store_command_form: str = s.STORE_COMMAND_FORM.field()
    batch: int = BATCH.field()
    linger_ms: int = LINGER_MS.field()
    shards: int = SHARDS_SETTING.field()
    log_level: str = s.LOG_LEVEL.field()
    event_loop: str = s.EVENT_LOOP.field()


@dataclass(frozen=True)
class Settings(ReadModels):
    """Scoring's settings as a server (``paiju scoring --help`` lists them): its read models' and its own."""

    address: str = s.SCORING_ADDRESS.but(help=s.LISTEN).field()
    metrics_port: int = METRICS_PORT.field()
    metrics_host: str = s.METRICS_HOST.field()
    rate_limits: str = s.RATE_LIMITS.field()
    trusted_keys: str = s.TRUSTED_KEYS.field()
    otel_service_name: str = s.OTEL_SERVICE_NAME.but(default="paiju-scoring").field()
    otel_traces_exporter: str = s.OTEL_TRACES_EXPORTER.field()
    otel_exporter_otlp_endpoint: str = s.OTEL_EXPORTER_OTLP_ENDPOINT.field()
    otel_traces_sampler: str = s.OTEL_TRACES_SAMPLER.field()
    otel_traces_sampler_arg: float = s.OTEL_TRACES_SAMPLER_ARG.field()
    otel_bsp_schedule_delay: int = s.OTEL_BSP_SCHEDULE_DELAY.field()
    otel_sdk_disabled: bool = s.OTEL_SDK_DISABLED.field()
