"""Every line a Paiju process logs is one JSON object (`paiju.platform.observability.configure_logging`): its own
events and the libraries' warnings alike (asyncpg, grpcio, aiohttp log through the standard `logging` module, which
wrote plain text with multi-line tracebacks to stderr before); a library's warning about a dependency away names its
error in one line, while any other failure keeps its traceback."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from paiju.platform import repeats
from paiju.platform.observability import configure_logging

pytestmark = pytest.mark.unit


@pytest.fixture
def configured() -> Iterator[None]:
    """`configure_logging` for one test: structlog's configuration and the root logger put back after it."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        structlog.configure(**saved)
        root.handlers, root.level = handlers, level


def test_the_libraries_warnings_are_json_lines_and_a_dependency_away_is_no_traceback(
    configured: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("info")
    pool = logging.getLogger("asyncpg.pool")
    try:
        raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)")
    except OSError:
        pool.warning("Failed to restore the pool connection floor; retrying", exc_info=True)
    try:
        raise KeyError("a bug")
    except KeyError:
        logging.getLogger("grpc").error("Exception in callback", exc_info=True)
    logging.getLogger("aiohttp.access").info("GET /healthz 200")  # below a warning: left out, as before
    structlog.get_logger("paiju.test").info("ours", game="g1")
    configure_logging("info")  # twice (tests, a restart in process): still one line per record
    logging.getLogger("asyncpg.pool").warning("once")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["event"], e["level"]) for e in lines] == [
        ("Failed to restore the pool connection floor; retrying", "warning"),
        ("Exception in callback", "error"),
        ("ours", "info"),
        ("once", "warning"),
    ]
    away, fault = lines[0], lines[1]
    assert away["logger"] == "asyncpg.pool" and "exception" not in away
    assert away["error"].startswith("ConnectionRefusedError(111")
    assert "Traceback" in fault["exception"] and "KeyError: 'a bug'" in fault["exception"]
    assert lines[2]["game"] == "g1" and all("timestamp" in e for e in lines)


def test_a_librarys_warning_about_a_dependency_away_is_held_back_when_it_repeats(
    configured: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncpg restores its pool every few seconds while PostgreSQL is gone and warns each time: the first warning is
    logged, the repeats within a minute are held back, the next after it says how many were; a fault is every time."""
    clock = [0.0]
    monkeypatch.setattr(repeats, "REPEATS", repeats.Repeats(every=60.0, now=lambda: clock[0]))
    configure_logging("info")
    pool = logging.getLogger("asyncpg.pool")

    def away() -> None:
        try:
            raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)")
        except OSError:
            pool.warning("Failed to restore the pool connection floor; retrying", exc_info=True)

    for second in range(0, 120, 5):  # two minutes of PostgreSQL away, a try every 5 s
        clock[0] = float(second)
        away()
        if second == 30:
            try:
                raise KeyError("a bug")
            except KeyError:
                pool.warning("Failed to restore the pool connection floor; retrying", exc_info=True)
    pool.warning("a warning without an error")
    pool.warning("a warning without an error")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    restored = [e for e in lines if e["event"].startswith("Failed to restore") and "error" in e]
    assert [e.get("repeated") for e in restored] == [None, 11], restored  # at 0 s, then at 60 s: 5…55 held back
    assert all("exception" not in e for e in restored)
    faults = [e for e in lines if "exception" in e]
    assert len(faults) == 1 and "KeyError" in faults[0]["exception"]
    assert [e["event"] for e in lines].count("a warning without an error") == 2


def test_a_librarys_repeats_held_back_are_told_when_the_outage_ends(
    configured: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL comes back: asyncpg stops warning, and the count of its warnings held back is told in a line of its
    own once their minute is over (here a minute of 50 ms), with the error."""
    monkeypatch.setattr(repeats, "REPEATS", repeats.Repeats(every=0.05))
    configure_logging("info")
    pool = logging.getLogger("asyncpg.pool")

    async def outage() -> None:
        for _ in range(3):
            try:
                raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)")
            except OSError:
                pool.warning("Failed to restore the pool connection floor; retrying", exc_info=True)
        await asyncio.sleep(0.2)

    asyncio.run(outage())
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["event"], e.get("repeated"), e["error"][:22]) for e in lines] == [
        ("Failed to restore the pool connection floor; retrying", None, "ConnectionRefusedError"),
        ("Failed to restore the pool connection floor; retrying", 2, "ConnectionRefusedError"),
    ]
    assert all(e["logger"] == "asyncpg.pool" and e["level"] == "warning" for e in lines)
