"""Which event loop Paiju's processes run their asyncio code on: uvloop's, unless the operator chose asyncio's.

uvloop (0.23) runs asyncio's API on libuv: the same coroutines, tasks, timers, sockets and subprocesses, with the
loop itself in compiled code. Under `bench/load.py` (30 tables of bots, two interleaved pairs of runs) it cost the
engine 6 to 8 % less CPU per move, the lobby about 10 %, scoring about 15 % and the bot runner about 7 %. Every
serving ``paiju`` command (``engine``, ``lobby``, ``scoring`` and its ``rebuild``, ``bots``, ``web``) therefore
runs on it, unless its operator set ``PAIJU_EVENT_LOOP=asyncio`` (`paiju.platform.settings.EVENT_LOOP`): the
setting is read with the process's other settings, before its loop exists, and a value other than ``uvloop`` or
``asyncio`` stops the process with a message naming the variable.

Code that runs on both loops relies on asyncio's API, not on its classes or its clock's grain: uvloop's transports
are not instances of asyncio's transport classes (a TCP connection's has every method of `asyncio.Transport`), and
its ``loop.time()`` counts whole milliseconds, updated as the loop turns, not at each call (the deadlines and
retry budgets Paiju reads it for are tenths of seconds and more).

`run` is those commands' one asyncio entry: ``asyncio.run`` on the chosen loop. `policy` gives the same choice to a
process whose own code calls ``asyncio.run`` (the test suite's, so that its in-process services run the loop
production runs), and `chosen` reads the setting for a process that reads no other (a benchmark's bare-library
parts, which measure on the loop of the services they are compared with). The terminal client and the one-shot
tools (``play``, ``watch``, ``replay``, ``export``, ``ratings``, ...) stay on asyncio's loop: they spend their time
waiting on a person or a service, not running the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from paiju.platform.settings import EVENT_LOOP, Settings

T = TypeVar("T")
UVLOOP = "uvloop"
"""libuv's loop (`uvloop.Loop`): the default."""
ASYNCIO = "asyncio"
"""Python's own loop (on Unix, asyncio's selector loop)."""
LOOPS = (UVLOOP, ASYNCIO)
VARIABLE = EVENT_LOOP.name


def loop_factory(loop: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new event loop of the kind named ``loop`` (`LOOPS`); `ValueError` for any other name."""
    if loop == UVLOOP:
        import uvloop

        return uvloop.new_event_loop
    if loop == ASYNCIO:
        return asyncio.SelectorEventLoop  # what asyncio's default policy makes on Unix, whatever policy is set
    raise ValueError(f"{VARIABLE}: no event loop {loop!r}: must be one of {', '.join(LOOPS)}")


def run(main: Coroutine[Any, Any, T], loop: str = UVLOOP) -> T:
    """Run ``main`` to its end on a new event loop of the kind ``loop`` and close the loop: ``asyncio.run``, which
    it is (`asyncio.Runner`: the same cancellation of what is left, the same Ctrl-C), with the loop chosen."""
    try:
        factory = loop_factory(loop)  # refused before anything starts
    except ValueError:
        main.close()  # never started
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


@dataclass(frozen=True)
class Choice(Settings):
    """The setting alone, for a process that reads no other settings of Paiju's (the test suite, a benchmark's part)."""

    event_loop: str = EVENT_LOOP.field()


def chosen(environ: Mapping[str, str] | None = None) -> str:
    """The loop ``environ`` (this process's environment by default) chooses, read as every process's settings read
    it: `paiju.platform.settings.SettingsError` names a value that is not a loop."""
    return str(Choice.from_env(environ).event_loop)


def policy(loop: str) -> asyncio.AbstractEventLoopPolicy:
    """asyncio's default policy, but making loops of the kind ``loop``: for a process whose own code calls
    ``asyncio.run`` or ``asyncio.new_event_loop`` (set it with ``asyncio.set_event_loop_policy`` before any loop is
    made). Everything else about the policy (the loop of each thread, subprocesses' child watcher) is asyncio's."""
    factory = loop_factory(loop)

    class Policy(asyncio.DefaultEventLoopPolicy):
        def new_event_loop(self) -> asyncio.AbstractEventLoop:
            return factory()

    return Policy()


__all__ = ["ASYNCIO", "LOOPS", "UVLOOP", "VARIABLE", "Choice", "chosen", "loop_factory", "policy", "run"]
