"""structlog JSON logs of every Paiju process (docs/architecture.md, Principle 8); the metrics are in
`paiju.engine.metrics` (the engine's) and `paiju.platform.callmetrics` (every gRPC server's).

The libraries' own warnings and errors (asyncpg's pool, grpcio, aiohttp, anything using the standard `logging`
module; their chatter below a warning stays out, as before) are written as the same JSON lines, on the same stream:
an operator's log reader never meets a line of another shape.
A library's warning caused by a dependency away (asyncpg restoring its pool while PostgreSQL is gone, every few
seconds) names its error in one line instead of a traceback, and its repeats are held back as Paiju's own loops'
are (`paiju.platform.repeats`): a line a minute while the outage lasts, with how many were held back."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

from paiju.platform import repeats

AWAY: tuple[type[BaseException], ...] = (OSError, TimeoutError)
"""Errors that mean a dependency is out of reach (refused, reset, unreachable, timed out)."""


def _away(error: object) -> bool:
    """Whether ``error`` says a dependency is out of reach."""
    return isinstance(error, AWAY) or type(error).__name__ in _AWAY_NAMES


def _away_in_one_line(logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A library's warning (or less) whose exception says a dependency is out of reach: the error, no traceback (and
    the count of its repeats held back before it, `_HeldBack`)."""
    info = event.get("exc_info")
    if info and method in ("warning", "info", "debug"):
        error = info[1] if isinstance(info, tuple) else info if isinstance(info, BaseException) else None
        if _away(error):
            del event["exc_info"]
            event["error"] = repr(error)
    record = event.get("_record")
    if getattr(record, "away_error", None):  # the count of repeats held back, told alone (`_HeldBack`)
        event["error"] = record.away_error  # type: ignore[union-attr]
    repeated = getattr(record, "repeated", None)
    if repeated:
        event["repeated"] = repeated
    return event


class _HeldBack(logging.Filter):
    """A library's warning about a dependency away held back when it repeats (`paiju.platform.repeats.REPEATS`: its
    kind is its logger, its message and its error's type): asyncpg restores its pool every few seconds while
    PostgreSQL is gone, and said so each time. Any other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if record.levelno > logging.WARNING or not _away(error):
            return True
        told: list[dict[str, Any]] = []
        filtering = [True]

        def say(_: str, **facts: Any) -> None:
            if filtering[0]:  # this record: it passes
                told.append(facts)
            else:  # its minute over, no repeat came (`Repeats.flush`): the count, in a line of its own
                extra = {"repeated": facts.get("repeated"), "away_error": repr(error)}
                logging.getLogger(record.name).log(record.levelno, record.getMessage(), extra=extra)

        repeats.REPEATS.tell(say, str(record.msg), logger=record.name, kind=type(error).__name__)
        filtering[0] = False
        if not told:
            return False
        if told[0].get("repeated"):
            record.repeated = told[0]["repeated"]
        return True


_AWAY_NAMES = frozenset({"CannotConnectNowError", "ConnectionDoesNotExistError", "ConnectionFailureError"})
"""asyncpg's exceptions for a server starting, stopping or gone (named, so that this module needs no asyncpg)."""


def configure_logging(level: str = "info") -> None:
    """JSON lines on stdout, with ISO timestamps and whatever is bound (game, seat, command); the standard
    library's records (the libraries') too, from warnings up."""
    threshold = logging.getLevelNamesMapping()[level.upper()]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,  # an exception's traceback, as text in the line
            structlog.processors.JSONRenderer(ensure_ascii=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.set_name("paiju-json")
    handler.addFilter(_HeldBack())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_logger_name,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                _away_in_one_line,
                structlog.processors.format_exc_info,
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.JSONRenderer(ensure_ascii=False),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if h.get_name() != "paiju-json"] + [handler]
    root.setLevel(max(threshold, logging.WARNING))
