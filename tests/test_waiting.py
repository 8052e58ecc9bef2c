"""The tests' one wait helper (tests/support/waiting.py): it answers with the first truthy answer of its check, and a
wait that runs out fails saying what was awaited and what was last seen; "not yet" exceptions are waited through,
any other ends the wait at once."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

import pytest

from .support.waiting import wait_until, wait_until_blocking


def test_the_first_truthy_answer_is_returned_from_a_function_or_a_coroutine() -> None:
    counted = itertools.count()
    assert wait_until_blocking(lambda: next(counted) >= 3 and "third", "the third ask", every=0) == "third"

    async def main() -> None:
        asked = itertools.count()

        async def rows() -> list[int] | None:
            n = next(asked)
            return list(range(n)) if n >= 2 else None

        assert await wait_until(rows, "two rows", every=0) == [0, 1]
        assert await wait_until(lambda: "at once", "a plain function") == "at once"

    asyncio.run(main())


def test_a_wait_that_runs_out_says_what_it_waited_for_and_what_it_last_saw() -> None:
    seated = ["ann"]
    with pytest.raises(
        AssertionError, match=r"^timed out after 0 s waiting for four players; the last check gave \[\]"
    ):
        wait_until_blocking(lambda: [p for p in seated if len(seated) == 4], "four players", seconds=0)

    async def main() -> None:
        async def listed() -> None:
            return None

        with pytest.raises(AssertionError, match=r"waiting for the table to be listed\nthe read model has 2 rows$"):
            await wait_until(
                listed, "the table to be listed", seconds=0.05, explain=lambda: "the read model has 2 rows"
            )

    asyncio.run(main())


def refused(times: int, then: str) -> Callable[[], str]:
    """A check that is refused a connection ``times`` times (a server still starting), then answers ``then``."""
    calls = itertools.count()

    def check() -> str:
        if next(calls) < times:
            raise ConnectionRefusedError("not listening yet")
        return then

    return check


def test_not_yet_is_waited_through_and_anything_else_ends_the_wait_at_once() -> None:
    assert wait_until_blocking(refused(2, "up"), "the port", every=0, ignoring=(OSError,)) == "up"
    with pytest.raises(AssertionError, match=r"for the port; the last check raised ConnectionRefusedError"):
        wait_until_blocking(refused(10**9, "up"), "the port", seconds=0, ignoring=(OSError,))
    with pytest.raises(ConnectionRefusedError):  # not said to be "not yet": the first one ends the wait
        wait_until_blocking(refused(1, "up"), "the port")

    async def main() -> None:
        assert await wait_until(refused(2, "up"), "the port", every=0, ignoring=(OSError,)) == "up"

        async def slow_call() -> bool:
            raise TimeoutError("the call's own deadline")

        with pytest.raises(TimeoutError, match="the call's own deadline"):  # not taken for the end of the wait
            await wait_until(slow_call, "an answer")

    asyncio.run(main())
