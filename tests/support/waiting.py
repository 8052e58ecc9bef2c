"""Waiting in the tests: the one helper that asks a condition again and again until it holds, and fails saying what
was awaited and what was last seen (`wait_until` in a coroutine, `wait_until_blocking` in a test without an event
loop: the same loop, the same message).

A test waits for what the system does in the background: a projection catching up, a runner letting go of a seat, a
process answering on its port. The bound on the wait is a guard against a hang, not a measure of speed: it is
generous (`SECONDS` unless the thing awaited takes longer, a whole match say), and what a test asserts is what
happened, never how many seconds it took (speed is measured by the benchmarks under bench/). Where the system tells
on a stream what the test waits for, the test waits on the stream instead.

tests/test_hygiene.py holds the suite to this: no polling loop outside this module, no assertion on a clock.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")

SECONDS = 30.0
"""How long a wait may last by default: long enough for a loaded, shared machine."""
EVERY = 0.05
"""How long to pause between two checks by default."""
SHOWN = 2000
"""At most this many characters of the last value seen, in the message of a wait that ran out."""


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN]} ... ({len(text) - SHOWN} more characters)"


def _timed_out(
    what: str, seconds: float, last: object, error: BaseException | None, explained: object
) -> AssertionError:
    message = f"timed out after {seconds:g} s waiting for {what}"
    if error is not None:
        message += f"; the last check raised {_shown(repr(error))}"
    elif last is not None and last is not False:
        message += f"; the last check gave {_shown(repr(last))}"
    if explained is not None:
        message += f"\n{_shown(str(explained))}"
    return AssertionError(message)


@overload
async def wait_until(
    check: Callable[[], Awaitable[T | None]],
    what: str,
    *,
    seconds: float = ...,
    every: float = ...,
    ignoring: tuple[type[BaseException], ...] = ...,
    explain: Callable[[], object] | None = ...,
) -> T: ...
@overload
async def wait_until(
    check: Callable[[], T | None],
    what: str,
    *,
    seconds: float = ...,
    every: float = ...,
    ignoring: tuple[type[BaseException], ...] = ...,
    explain: Callable[[], object] | None = ...,
) -> T: ...
async def wait_until(
    check: Callable[[], Any],
    what: str,
    *,
    seconds: float = SECONDS,
    every: float = EVERY,
    ignoring: tuple[type[BaseException], ...] = (),
    explain: Callable[[], object] | None = None,
) -> Any:
    """The first truthy answer of ``check`` (a function or a coroutine function), asked every ``every`` seconds;
    `AssertionError` naming ``what`` if none comes within ``seconds`` (a check still running then is cut short).

    ``ignoring``: exceptions that mean "not yet" (a server still starting, a table not opened yet); any other
    propagates at once. ``explain``: called (or awaited) when the wait runs out, its answer added to the message
    (what the page shows, the rows the read model has)."""
    last: object = None
    error: BaseException | None = None
    try:
        async with asyncio.timeout(seconds) as bound:
            while True:
                try:
                    answer = check()
                    if inspect.isawaitable(answer):
                        answer = await answer
                except ignoring as e:
                    if isinstance(e, asyncio.CancelledError):
                        raise
                    error = e
                else:
                    if answer:
                        return answer
                    last, error = answer, None
                await asyncio.sleep(every)
    except TimeoutError:
        if not bound.expired():
            raise  # the check's own, not the wait's end
    explained = None
    if explain is not None:
        explained = explain()
        if inspect.isawaitable(explained):
            explained = await explained
    raise _timed_out(what, seconds, last, error, explained)


def wait_until_blocking(
    check: Callable[[], T | None],
    what: str,
    *,
    seconds: float = SECONDS,
    every: float = EVERY,
    ignoring: tuple[type[BaseException], ...] = (),
    explain: Callable[[], object] | None = None,
) -> T:
    """`wait_until` for a test that has no event loop running (it drives processes or threads): ``check`` is a
    plain function, the pauses are `time.sleep`, and a check that hangs is not cut short."""
    deadline = time.monotonic() + seconds
    last: object = None
    error: BaseException | None = None
    while True:
        try:
            answer = check()
        except ignoring as e:
            error = e
        else:
            if answer:
                return answer
            last, error = answer, None
        if time.monotonic() >= deadline:
            raise _timed_out(what, seconds, last, error, None if explain is None else explain())
        time.sleep(every)


__all__ = ["EVERY", "SECONDS", "wait_until", "wait_until_blocking"]
