"""The test suite's own hygiene, read from its source (AST, no test is run): no assertion on a clock, and no polling
loop but the one wait helper's (tests/support/waiting.py).

- A wall-clock assertion — an ``assert`` (or an ``if`` that raises `AssertionError` or calls `pytest.fail`) that
  compares one reading of a clock with another: a duration (``time.monotonic() - started < 8``, ``elapsed < 0.5``)
  or a reading against a deadline taken from an earlier one — fails on a loaded machine while the code is right,
  and says nothing when it is wrong but fast. A test asserts what happened, in what order, how many times; how
  fast is a benchmark's question (bench/). The clocks: `time.time`, `time.monotonic`, `time.perf_counter` and
  their ``_ns`` forms, `time.process_time`, an event loop's ``.time()``, `datetime.now`; a name holds the readings
  its value is arithmetic on (through ``+``, ``-``, `round`, `int` ...), and a name saying ``elapsed`` or
  ``duration`` is a duration. One reading against data is not a timing (a token's expiry against the time it was
  issued at), nor is a clock handed to the code under test (``now=lambda: ...``).
- A polling loop — a ``for`` or ``while`` whose body sleeps (``sleep(...)``, from `time` or `asyncio`) — is a wait
  helper written again: it is `tests.support.waiting.wait_until` (or ``wait_until_blocking``), with its failure
  message and its generous bound. The loops that sleep for another reason are listed in `NOT_WAITS` with it,
  the waits not yet moved onto the helper in `OWED`.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).parent
WAITING = TESTS / "support" / "waiting.py"
CLOCKS = frozenset({"time", "monotonic", "perf_counter", "time_ns", "monotonic_ns", "perf_counter_ns", "process_time"})
"""Functions of `time` that read a clock (``.time()`` is also an event loop's clock)."""
DATETIME_CLOCKS = frozenset({"now", "utcnow", "today"})
DURATION_WORDS = ("elapsed", "duration")
ARITHMETIC = frozenset({"round", "int", "float", "abs", "min", "max"})
"""Functions a clock reading goes through and stays a reading (not a constructor or a call it is handed to)."""

NOT_WAITS: dict[tuple[str, str], str] = {
    ("botrunner/harness.py", "redeal_void_deals"): "the table's part of a game, acting until it ends",
    (
        "botrunner/test_runner.py",
        "test_a_runner_lets_go_of_a_seat_handed_back_to_its_player.body",
    ): "the person back in seat 3, playing until the game ends",
    (
        "platform/test_consumer_contract.py",
        "test_events_that_wake_nobody_arriving_one_by_one_are_taken_together.scenario",
    ): "events appended one at a time, paced so that each arrives on its own",
    ("terminal/driver.py", "zlj_bots"): "bots playing over the engine API, each waiting for its turn",
    ("terminal/driver.py", "tractor_bots"): "bots playing over the engine API, each waiting for its turn",
    ("terminal/driver.py", "EngineThread.run_timers.scan"): "the engine's turn timers, scanning as a process does",
    ("cluster/test_rehearsal.py", "Watching._watch"): "a guest's stream held open until the rehearsal stops it",
    (
        "cluster/test_rehearsal.py",
        "test_the_cluster_survives_a_nats_node_an_engine_and_a_lobby_and_the_node_catches_up",
    ): "the guest keeps the seat throughout the presence and grace times (held, not awaited)",
    (
        "outage/test_outages.py",
        "test_nats_down_150_seconds_and_postgresql_down_60_seconds_with_bots_playing",
    ): "every service says NOT_SERVING throughout the outage (held, not awaited)",
    (
        "platform/test_consumer_contract.py",
        "test_replicas_running_at_once_share_the_stream_and_one_takes_over.scenario",
    ): "appends spread out while two replicas run",
    (
        "platform/test_store_contract.py",
        "test_jetstream_a_slow_subscriber_holds_a_bounded_queue_not_the_backlog.main",
    ): "a slow handler taking the backlog",
    ("web/test_web_view.py", "get"): "a client waiting out a 429 as its Retry-After says",
    (
        "web/test_web_view.py",
        "test_a_crowd_of_pages_on_one_table_costs_the_services_one_watch.body",
    ): "pages opened one after another, as people arrive",
}
"""Loops that sleep without waiting for a condition: (file under tests/, qualified name of the function) -> why."""
OWED: dict[tuple[str, str], str] = {}
"""Polling loops still to be moved onto the wait helper (as `NOT_WAITS`), each with what it waits for."""


MENTIONS = ("sleep", "time(", "monotonic", "perf_counter", "_ns(", "now(", "today(", *DURATION_WORDS)
"""What a module's text holds if either check can find anything in it (the others are not parsed)."""


@functools.cache
def _modules() -> tuple[tuple[str, ast.Module], ...]:
    """The modules under tests/ (but the wait helper's and this one) that mention a sleep, a clock or a duration,
    by their path there, parsed once."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text()
        if path not in (WAITING, Path(__file__)) and any(word in text for word in MENTIONS):
            found.append((path.relative_to(TESTS).as_posix(), ast.parse(text, str(path))))
    return tuple(found)


def _called(node: ast.Call) -> tuple[str, str]:
    """(what the function is taken from, its name): ``time.monotonic()`` -> ("time", "monotonic")."""
    function = node.func
    if isinstance(function, ast.Attribute):
        owner = function.value
        if isinstance(owner, ast.Name):
            return owner.id, function.attr
        if isinstance(owner, ast.Attribute):
            return owner.attr, function.attr
        return "", function.attr
    if isinstance(function, ast.Name):
        return "", function.id
    return "", ""


def _reads_a_clock(node: ast.Call) -> bool:
    owner, name = _called(node)
    if owner == "time" and name in CLOCKS:
        return True
    if name == "time" and not node.args and owner != "":  # loop.time(), asyncio.get_running_loop().time()
        return True
    return owner == "datetime" and name in DATETIME_CLOCKS


def _weight(node: ast.AST, readings: dict[str, int]) -> int:
    """How many clock readings the value of ``node`` is arithmetic on, at most two (a duration; a reading against
    a deadline taken from another), counting the names that hold some."""
    if isinstance(node, ast.Call):
        if _reads_a_clock(node):
            return 1
        if _called(node)[1] in ARITHMETIC:
            return min(2, sum(_weight(argument, readings) for argument in node.args))
        return 0
    if isinstance(node, ast.Name):
        return 2 if any(word in node.id for word in DURATION_WORDS) else readings.get(node.id, 0)
    if isinstance(node, ast.Attribute):
        return 2 if any(word in node.attr for word in DURATION_WORDS) else 0
    if isinstance(node, ast.BinOp):
        return min(2, _weight(node.left, readings) + _weight(node.right, readings))
    if isinstance(node, ast.UnaryOp):
        return _weight(node.operand, readings)
    return 0


def _readings(scope: ast.AST) -> dict[str, int]:
    """The names ``scope`` gives a value holding clock readings, and how many (to a fixed point: a name given
    another that holds some; the names of a tuple given a tuple, element by element)."""
    given: list[tuple[str, ast.AST]] = []
    for node in ast.walk(scope):
        pairs: list[tuple[ast.AST, ast.AST]] = []
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            pairs = [(node.target, node.value)]
        while pairs:
            target, value = pairs.pop()
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                pairs += zip(target.elts, value.elts, strict=False)
            elif isinstance(target, ast.Name):
                given.append((target.id, value))
    readings: dict[str, int] = {}
    while True:
        before = dict(readings)
        for name, value in given:
            if weight := _weight(value, readings):
                readings[name] = max(weight, readings.get(name, 0))
        if readings == before:
            return readings


def _timings(condition: ast.AST, readings: dict[str, int]) -> Iterator[str]:
    """The comparisons in ``condition`` of a clock reading with another, unparsed (not in the body of a lambda: a
    clock handed over is not a reading)."""
    if isinstance(condition, ast.Lambda):
        return
    sides = (condition.left, *condition.comparators) if isinstance(condition, ast.Compare) else ()
    if sum(_weight(side, readings) for side in sides) >= 2:
        yield ast.unparse(condition)
        return
    for child in ast.iter_child_nodes(condition):
        yield from _timings(child, readings)


def _fails(body: list[ast.stmt]) -> bool:
    """Whether ``body`` raises `AssertionError` or calls `pytest.fail`."""
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Raise) and node.exc is not None:
                raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(raised, ast.Name) and raised.id == "AssertionError":
                    return True
            if isinstance(node, ast.Call) and _called(node) == ("pytest", "fail"):
                return True
    return False


def wall_clock_assertions(module: ast.Module) -> list[str]:
    """Each assertion of ``module`` on the time that passed: "line: the comparison". The readings are followed
    through each function (and method) as a whole, and through the statements outside them."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    classes = [node for node in module.body if isinstance(node, ast.ClassDef)]
    scopes: list[ast.AST] = [node for node in module.body if isinstance(node, functions)]
    scopes += [node for c in classes for node in c.body if isinstance(node, functions)]
    rest = [node for node in module.body if not isinstance(node, (*functions, ast.ClassDef))]
    rest += [node for c in classes for node in c.body if not isinstance(node, functions)]
    scopes.append(ast.Module(body=rest, type_ignores=[]))
    found = set()
    for scope in scopes:
        readings = _readings(scope)
        for node in ast.walk(scope):
            if isinstance(node, ast.Assert):
                condition: ast.AST = node.test
            elif isinstance(node, ast.If) and _fails(node.body):
                condition = node.test
            else:
                continue
            for timing in _timings(condition, readings):
                found.add(f"{node.lineno}: {timing}")
    return sorted(found)


def polling_loops(module: ast.Module) -> list[tuple[str, int]]:
    """Each loop of ``module`` that sleeps: (qualified name of its function, or "" at the top; its line)."""
    found = []

    def visit(node: ast.AST, names: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, (*names, child.name))
            elif isinstance(child, (ast.For, ast.AsyncFor, ast.While)) and any(
                isinstance(n, ast.Call) and _called(n)[1] == "sleep" for n in ast.walk(child)
            ):
                found.append((".".join(names), child.lineno))  # a loop inside it is part of the same loop
            else:
                visit(child, names)

    visit(module, ())
    return found


def test_no_test_asserts_on_the_time_that_passed() -> None:
    found = {path: lines for path, module in _modules() if (lines := wall_clock_assertions(module))}
    assert not found, (
        f"assertions on a clock (assert what happened, its order or its count; time it in bench/): {found}"
    )


def test_every_polling_loop_is_the_one_wait_helper() -> None:
    loops = {(path, name): line for path, module in _modules() for name, line in polling_loops(module)}
    listed = NOT_WAITS | OWED
    waits = sorted(f"{path}:{line} ({name})" for (path, name), line in loops.items() if (path, name) not in listed)
    assert not waits, f"loops that sleep: wait with tests/support/waiting.py's wait_until instead: {waits}"
    gone = sorted(set(listed) - set(loops))
    assert not gone, f"NOT_WAITS or OWED lists loops that are gone: {gone}"


def test_the_checks_find_what_they_are_for() -> None:
    """Both checks on small samples: each finds what it is for and passes over what it is not."""
    timed = ast.parse(
        "import time\n"
        "def t(loop):\n"
        "    started = time.monotonic()\n"
        "    work()\n"
        "    elapsed = time.monotonic() - started\n"
        "    assert elapsed < 0.5\n"
        "    assert ready and time.perf_counter() - started <= 3.5\n"
        "    assert loop.time() - started < 8, 'too slow'\n"
        "    if time.monotonic() > started + 5:\n"
        "        raise AssertionError('late')\n"
        "    took = round(time.monotonic() - started, 1)\n"
        "    assert took < 2\n"
        "    deadline = time.monotonic() + 5\n"
        "    assert time.monotonic() < deadline\n"
        "    assert runner.stats.duration <= 1\n"
    )
    assert sorted(int(found.split(":")[0]) for found in wall_clock_assertions(timed)) == [6, 7, 8, 9, 12, 14, 15]
    untimed = ast.parse(
        "import time\n"
        "def t(runner, session, identity):\n"
        "    clock = [time.time()]\n"
        "    runner(now=lambda: clock[0])\n"
        "    assert runner.done == {'a': 'expired'}\n"
        "    assert Verifier(trust, now=lambda: int(time.time())).verify(token).role is Role.ANALYST\n"
        "    issued, was = int(time.time()), runner.clock\n"
        "    assert session.expires_at == issued + 15 * 60 and was is not None\n"
        "    assert 0 < session.expires_at - time.time() <= 900\n"
        "    token = mint(Identity('a', expires=int(time.time()) + 60))\n"
        "    assert identity.expires == verify(token).expires\n"
        "    deadline = time.monotonic() + 5\n"
        "    print(time.monotonic() - deadline)\n"
    )
    assert wall_clock_assertions(untimed) == []
    loops = ast.parse(
        "import asyncio, time\n"
        "from time import sleep\n"
        "async def until(check):\n"
        "    while not await check():\n"
        "        await asyncio.sleep(0.05)\n"
        "class C:\n"
        "    def start(self):\n"
        "        for _ in range(100):\n"
        "            if self.up():\n"
        "                break\n"
        "            sleep(0.1)\n"
        "def f(items):\n"
        "    for item in items:\n"
        "        handle(item)\n"
        "    time.sleep(1)\n"
    )
    assert polling_loops(loops) == [("until", 4), ("C.start", 8)]
