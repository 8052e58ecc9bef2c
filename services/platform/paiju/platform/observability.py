"""structlog JSON logs of every Paiju process (docs/architecture.md, Principle 8); the metrics are in
`paiju.engine.metrics` (the engine's) and `paiju.platform.callmetrics` (every gRPC server's)."""

from __future__ import annotations

import logging

import structlog


def configure_logging(level: str = "info") -> None:
    """JSON lines on stdout, with ISO timestamps and whatever is bound (game, seat, command)."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,  # an exception's traceback, as text in the line
            structlog.processors.JSONRenderer(ensure_ascii=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        cache_logger_on_first_use=True,
    )
