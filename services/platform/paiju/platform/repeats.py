"""Warnings that repeat, held back: a loop whose dependency is away for minutes fails a step every few seconds, a
bot runner asks an absent lobby every two, a flood of calls is throttled call after call; logged one by one, each
filled the log (a lobby logged 170 lines in two and a half minutes of NATS away). `Repeats` logs the first of a kind at
once, counts the repeats, and logs the kind again at most once a `REPEAT_SECONDS` with how many it held back — at its
next occurrence, or when its minute is over if none comes (the flood ended, the dependency came back): a count held
back is never lost."""

from __future__ import annotations

import asyncio
import contextvars
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


class _Kind:
    """What `Repeats` remembers of one kind of line: when it was last logged, the repeats held back since, and the
    last of them (how to say it, its event and facts: what a flush logs)."""

    __slots__ = ("event", "facts", "held", "said", "say")

    def __init__(self, said: float) -> None:
        self.said = said
        self.held = 0
        self.say: Callable[..., Any] | None = None
        self.event = ""
        self.facts: dict[str, Any] = {}


class Repeats:
    """Holds back the repeats of a line: its kind is its event and its facts (`VARYING` aside). The first of a kind is
    logged at once; the repeats within `REPEAT_SECONDS` of the last line of that kind are counted, not logged; the
    next one after that is logged with ``repeated`` (how many were held back) — about a line a minute per loop while
    an outage lasts — and a kind that comes again after a quiet minute is logged at once.

    Repeats held back when no other comes (a flood that stopped, a dependency back) are logged by `flush`: the last
    of them, with ``repeated``, once its minute is over. Inside a running event loop a timer calls it then, armed
    only while something is held back; elsewhere (a thread of its own) they are logged at the kind's next line."""

    def __init__(
        self, *, every: float = REPEAT_SECONDS, kept: int = REPEATS_KEPT, now: Callable[[], float] = time.monotonic
    ) -> None:
        self._every = every
        self._kept = kept
        self._now = now
        self._said: OrderedDict[tuple[Any, ...], _Kind] = OrderedDict()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def warn(self, log: Any, event: str, /, **facts: Any) -> None:
        """Log ``event`` as a warning unless it is a repeat to hold back."""
        self.tell(log.warning, event, **facts)

    def tell(self, say: Callable[..., Any], event: str, /, **facts: Any) -> None:
        """``say(event, **facts)`` (a logger's method: its level) unless it is a repeat to hold back."""
        key = (event, *sorted((k, repr(v)) for k, v in facts.items() if k not in VARYING))
        now = self._now()
        kind = self._said.get(key)
        if kind is not None and now - kind.said < self._every:
            kind.held += 1
            kind.say, kind.event, kind.facts = say, event, facts
            self._arm(kind.said + self._every - now)
            return
        if kind is not None and kind.held:
            facts["repeated"] = kind.held
        say(event, **facts)
        self._said[key] = _Kind(now)
        self._said.move_to_end(key)
        while len(self._said) > self._kept:  # the oldest kind forgotten: what it held back is told now
            _, forgotten = self._said.popitem(last=False)
            if forgotten.held and forgotten.say is not None:
                forgotten.say(forgotten.event, **forgotten.facts, repeated=forgotten.held)

    def flush(self) -> None:
        """Log, with ``repeated``, the last repeat of every kind whose minute is over and that holds repeats back."""
        self._timer = None
        now = self._now()
        due = [kind for kind in self._said.values() if kind.held and now - kind.said >= self._every]
        for kind in due:
            say, event, facts, held = kind.say, kind.event, kind.facts, kind.held
            kind.said, kind.held, kind.say, kind.facts = now, 0, None, {}
            if say is not None:
                say(event, **facts, repeated=held)
        waiting = [kind.said + self._every - now for kind in self._said.values() if kind.held]
        if waiting:
            self._arm(min(waiting))

    def _arm(self, delay: float) -> None:
        """A timer calling `flush` in ``delay`` seconds, unless one is armed on this event loop or none runs here (a
        timer left on a loop that has ended since, as a test's or a command's, is replaced)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._timer is not None and self._timer_loop is loop:
            return
        self._timer_loop = loop
        # in a context of its own: not the one of the call that armed it (a call's bound game or command)
        self._timer = loop.call_later(max(delay, 0.0), self.flush, context=contextvars.Context())


REPEATS = Repeats()
"""The process's one `Repeats`: every loop's warnings, and the refusals a crowd or an outage repeats, go through it."""
