"""structlog JSON logs and Prometheus metrics of the engine (design.md, Principle 8)."""

from __future__ import annotations

import logging

import structlog
from prometheus_client import Counter, Gauge, Histogram

ACTS = Counter("paiju_engine_acts_total", "Commands applied", ["game"])
REJECTIONS = Counter("paiju_engine_rejections_total", "Commands refused, by status", ["status"])
LATENCY = Histogram(
    "paiju_engine_act_seconds",
    "Time to apply one command (load, decide, append)",
    buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0),
)
CONFLICTS = Counter("paiju_engine_conflicts_total", "Appends that lost to another writer and were decided again")
ACTIVE_GAMES = Gauge("paiju_engine_active_games", "Games this process has served since it started")


def configure_logging(level: str = "info") -> None:
    """JSON lines on stdout, with ISO timestamps and whatever is bound (game, seat, command)."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(ensure_ascii=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        cache_logger_on_first_use=True,
    )
