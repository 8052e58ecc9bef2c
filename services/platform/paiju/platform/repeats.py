"""Warnings that repeat, held back: a loop whose dependency is away for minutes fails a step every few seconds, a
bot runner asks an absent lobby every two, a flood of calls is throttled call after call; logged one by one, each
filled the log (a lobby logged 170 lines in two and a half minutes of NATS away). `Repeats` logs the first of a kind at
once, counts the repeats, and logs the kind again at most once a `REPEAT_SECONDS` with how many it held back."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

REPEAT_SECONDS = 60.0
"""A line that repeats (the same event and facts: a dependency still away, a flood still throttled) is logged again at
most this often, with the count of those held back meanwhile."""
REPEATS_KEPT = 512
"""Kinds of lines whose repeats are counted at once (the oldest are forgotten past it: logged at their next
occurrence, as new)."""
VARYING = frozenset({"error", "message"})
"""Facts that may differ between repeats of one kind (the error's text, a refusal's words): not part of its kind."""


class Repeats:
    """Holds back the repeats of a line: its kind is its event and its facts (`VARYING` aside). The first of a kind is
    logged at once; the repeats within `REPEAT_SECONDS` of the last line of that kind are counted, not logged; the
    next one after that is logged with ``repeated`` (how many were held back) — about a line a minute per loop while
    an outage lasts — and a kind that comes again after a quiet minute is logged at once."""

    def __init__(
        self, *, every: float = REPEAT_SECONDS, kept: int = REPEATS_KEPT, now: Callable[[], float] = time.monotonic
    ) -> None:
        self._every = every
        self._kept = kept
        self._now = now
        self._said: OrderedDict[tuple[Any, ...], list[float]] = OrderedDict()
        """Per kind: [when it was last logged, repeats held back since]."""

    def warn(self, log: Any, event: str, /, **facts: Any) -> None:
        """Log ``event`` as a warning unless it is a repeat to hold back."""
        self.tell(log.warning, event, **facts)

    def tell(self, say: Callable[..., Any], event: str, /, **facts: Any) -> None:
        """``say(event, **facts)`` (a logger's method: its level) unless it is a repeat to hold back."""
        key = (event, *sorted((k, repr(v)) for k, v in facts.items() if k not in VARYING))
        now = self._now()
        said = self._said.get(key)
        if said is not None and now - said[0] < self._every:
            said[1] += 1
            return
        if said is not None and said[1]:
            facts["repeated"] = int(said[1])
        say(event, **facts)
        self._said[key] = [now, 0.0]
        self._said.move_to_end(key)
        while len(self._said) > self._kept:
            self._said.popitem(last=False)


REPEATS = Repeats()
"""The process's one `Repeats`: every loop's warnings, and the refusals a crowd or an outage repeats, go through it."""
