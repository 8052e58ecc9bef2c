"""The engine's settings, from the environment (twelve-factor): each declared once, here or in the module of what it
configures (`paiju.platform.settings`; the table of docs/operations.md, "Configure", is generated from them)."""

from __future__ import annotations

from dataclasses import dataclass

from paiju.engine.seeds import PREVIOUS_SEED_SECRET, SEED_SECRET
from paiju.platform import settings as s
from paiju.platform.partitions import GAME_PARTITIONS
from paiju.platform.settings import Setting

METRICS_PORT = s.metrics_port("PAIJU_ENGINE_METRICS_PORT", 9464, deprecated=("PAIJU_METRICS_PORT",))
TIMER_SECONDS = Setting("PAIJU_TIMER_SECONDS", 1.0, "how often expired turns are looked for, in seconds")
GAME_CACHE_MIB = Setting(
    "PAIJU_GAME_CACHE_MIB",
    128,
    "the games a replica keeps in memory, bounded by their estimated size in MiB (state, the last 24 events and their "
    "encodings); a game pushed out is read back from the stream when next needed; of the games over, only the 256 "
    "that ended last are kept",
)
FAIR_DEALING = Setting(
    "PAIJU_FAIR_DEALING",
    True,
    "new games are dealt from committed shuffles anyone can verify (`paiju verify`; docs/fairness.md); `off` deals new "
    "games from seeds (fair games already started go on fairly)",
)
CONTRIBUTION_SECONDS = Setting(
    "PAIJU_CONTRIBUTION_SECONDS",
    2.0,
    "how long each window of fair dealing waits for the seats, in seconds after the last event (protocol 2: the "
    "commitments, then the reveals; protocol 1: a first deal's contributions); 0: not at all",
)


def fair_protocol(raw: str) -> int:
    """A fair-dealing protocol version: 1 or 2 (`ValueError` otherwise)."""
    if raw.strip() not in ("1", "2"):
        raise ValueError("must be 1 or 2")
    return int(raw)


FAIR_PROTOCOL = Setting(
    "PAIJU_FAIR_PROTOCOL",
    2,
    "the fair-dealing protocol new fair games are dealt by: 2 (every contribution, the cutter's included, committed "
    "before any is revealed) or 1 (contributions as they come; docs/fairness.md); games already started keep theirs",
    parse=fair_protocol,
)
FIRST_DEAL_SECONDS = Setting(
    "PAIJU_FIRST_DEAL_SECONDS",
    30.0,
    "protocol 2: a game's first shuffle is committed when the first seat's client watches the game, or this many "
    "seconds after the game started at the latest",
)


@dataclass(frozen=True)
class Settings(s.Settings):
    """The engine's settings (``paiju engine --help`` lists them)."""

    address: str = s.ENGINE_ADDRESS.but(help=s.LISTEN).field()
    nats_url: str = s.NATS_URL.field()
    nats_seed: str = s.NATS_SEED.field()
    nats_ca: str = s.NATS_CA.field()
    stream: str = s.GAMES_STREAM.field()
    prefix: str = s.GAMES_PREFIX.field()
    partitions: int = GAME_PARTITIONS.field()
    lobby_stream: str = s.LOBBY_STREAM.but(
        help="the lobby's stream, whose match starts the engine turns into games"
    ).field()
    lobby_prefix: str = s.LOBBY_PREFIX.field()
    replicas: int = s.STREAM_REPLICAS.but(help="replicas of a stream the engine creates").field()
    store_command_form: str = s.STORE_COMMAND_FORM.field()
    metrics_port: int = METRICS_PORT.field()
    metrics_host: str = s.METRICS_HOST.field()
    timer_seconds: float = TIMER_SECONDS.field()
    cache_mib: int = GAME_CACHE_MIB.field()
    fair_dealing: bool = FAIR_DEALING.field()
    contribution_seconds: float = CONTRIBUTION_SECONDS.field()
    fair_protocol: int = FAIR_PROTOCOL.field()
    first_deal_seconds: float = FIRST_DEAL_SECONDS.field()
    log_level: str = s.LOG_LEVEL.field()
    event_loop: str = s.EVENT_LOOP.field()
    rate_limits: str = s.RATE_LIMITS.field()
    seed_secret: bytes = SEED_SECRET.field()
    previous_seed_secret: bytes | None = PREVIOUS_SEED_SECRET.field()
    trusted_keys: str = s.TRUSTED_KEYS.field()
    otel_service_name: str = s.OTEL_SERVICE_NAME.but(default="paiju-engine").field()
    otel_traces_exporter: str = s.OTEL_TRACES_EXPORTER.field()
    otel_exporter_otlp_endpoint: str = s.OTEL_EXPORTER_OTLP_ENDPOINT.field()
    otel_traces_sampler: str = s.OTEL_TRACES_SAMPLER.field()
    otel_traces_sampler_arg: float = s.OTEL_TRACES_SAMPLER_ARG.field()
    otel_bsp_schedule_delay: int = s.OTEL_BSP_SCHEDULE_DELAY.field()
    otel_sdk_disabled: bool = s.OTEL_SDK_DISABLED.field()
