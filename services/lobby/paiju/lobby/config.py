"""The lobby's settings, from the environment: each declared once, here or in the module of what it configures
(`paiju.platform.settings`; the table of docs/operations.md, "Configure", is generated from them)."""

from __future__ import annotations

from dataclasses import dataclass

from paiju.lobby.generations import GENERATION_EVENTS, RETRIES_KEPT
from paiju.platform import settings as s
from paiju.platform.limits import LOGIN_FAILURES, failures_text
from paiju.platform.settings import Setting

METRICS_PORT = s.metrics_port("PAIJU_LOBBY_METRICS_PORT", 9465)
GRACE_SECONDS = Setting(
    "PAIJU_PRESENCE_GRACE_SECONDS",
    30.0,
    "how long a seated player may be away during a match before a bot covers, in seconds",
)

LOGIN_FAILURE_LIMITS = Setting(
    "PAIJU_LOGIN_FAILURES",
    LOGIN_FAILURES,
    "how many wrong passwords a client address may send for one name (`name_address=N/period`) and for all names "
    "(`address=N/period`) before its Logins are refused unchecked, or `off` (see *Limits that protect the players*)",
    parse=failures_text,
)
TABLES_PER_PLAYER = Setting(
    "PAIJU_TABLES_PER_PLAYER",
    3,
    "how many open tables (not finished) one player account may have opened at once; operators, services and bot "
    "runners are not limited",
)
IDLE_TABLE_MINUTES = Setting(
    "PAIJU_IDLE_TABLE_MINUTES",
    30.0,
    "how long a table with no person seated and no match in play stays open before it expires, in minutes (0: "
    "never); tables an operator opened do not expire; a table the queue opened expires this long after its match",
)


@dataclass(frozen=True)
class Settings(s.Settings):
    """The lobby's settings (``paiju lobby --help`` lists them)."""

    address: str = s.LOBBY_ADDRESS.but(help=s.LISTEN).field()
    nats_url: str = s.NATS_URL.field()
    nats_seed: str = s.NATS_SEED.field()
    nats_ca: str = s.NATS_CA.field()
    database_url: str = s.DATABASE_URL.but(
        help="the lobby's PostgreSQL database (its read models `lobby_tables` and `lobby_accounts`), a URL with its "
        "password"
    ).field()
    engine_address: str = s.ENGINE_ADDRESS.but(help="the engine, for seat changes during matches").field()
    stream: str = s.LOBBY_STREAM.field()
    prefix: str = s.LOBBY_PREFIX.field()
    games_stream: str = s.GAMES_STREAM.but(help="the games' stream, read for match results").field()
    games_prefix: str = s.GAMES_PREFIX.field()
    tournaments_stream: str = s.TOURNAMENTS_STREAM.but(
        help="scoring's stream of tournaments, read for the tables of paired rounds"
    ).field()
    tournaments_prefix: str = s.TOURNAMENTS_PREFIX.field()
    replicas: int = s.STREAM_REPLICAS.but(help="replicas of a stream the lobby creates").field()
    store_command_form: str = s.STORE_COMMAND_FORM.field()
    grace_seconds: float = GRACE_SECONDS.field()
    metrics_port: int = METRICS_PORT.field()
    metrics_host: str = s.METRICS_HOST.field()
    log_level: str = s.LOG_LEVEL.field()
    event_loop: str = s.EVENT_LOOP.field()
    rate_limits: str = s.RATE_LIMITS.field()
    login_failures: str = LOGIN_FAILURE_LIMITS.field()
    tables_per_player: int = TABLES_PER_PLAYER.field()
    idle_table_minutes: float = IDLE_TABLE_MINUTES.field()
    queue_generation_events: int = GENERATION_EVENTS.field()
    queue_retries_kept: int = RETRIES_KEPT.field()
    signing_key: str = s.SIGNING_KEY.but(
        help="the lobby's private key (PEM file): signs sessions and game tokens"
    ).field()
    signing_key_id: str = s.SIGNING_KEY_ID.but(help="its key id, `lobby.<version>`").field()
    trusted_keys: str = s.TRUSTED_KEYS.field()
    otel_service_name: str = s.OTEL_SERVICE_NAME.but(default="paiju-lobby").field()
    otel_traces_exporter: str = s.OTEL_TRACES_EXPORTER.field()
    otel_exporter_otlp_endpoint: str = s.OTEL_EXPORTER_OTLP_ENDPOINT.field()
    otel_traces_sampler: str = s.OTEL_TRACES_SAMPLER.field()
    otel_traces_sampler_arg: float = s.OTEL_TRACES_SAMPLER_ARG.field()
    otel_bsp_schedule_delay: int = s.OTEL_BSP_SCHEDULE_DELAY.field()
    otel_sdk_disabled: bool = s.OTEL_SDK_DISABLED.field()
