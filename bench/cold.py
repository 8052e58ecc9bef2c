"""`make bench`, warm and cold: what the same piece of a move's work costs done back to back, and done after its
process sat idle for a moment, as a stack's processes do between the moves of a run.

The floor of a move (`bench/floor.py`) measures its parts back to back, and a load run's stack (`bench/load.py`) does
the same work a move at a time, its processes idle between moves. On a virtual machine an idle moment is not free:
the CPU's caches, TLB and branch history are someone else's when the process wakes, and the first work after the
pause pays to bring them back. This benchmark shows how much, part by part, on this machine: each part of a move's
work, in this process, timed one operation at a time by this thread's CPU clock, with no pause, then with a pause of
``--pauses`` seconds (a sleep) before each operation. It prints each part's median µs and its ratio to no pause.

- ``python``: a fixed piece of pure Python (300 additions and multiplications): the interpreter alone.
- ``rules``: the mover's legal actions, then ``decide`` and ``evolve`` of its move, at positions of seeded 砸六家 and
  拖拉机 playouts of the heuristic bots (half each): the rules core's part of a move.
- ``validation``: an `Act` request's bytes decoded and checked by protovalidate, as the gRPC edge checks every
  `Act` (`paiju.platform.edge`): a native library's part.
- ``view_encode`` / ``view_parse``: a seat's view built by the rules core, encoded by the contract's codec and
  serialized (the engine, for a turn); then parsed and decoded back (the client).

    .venv/bin/python bench/cold.py [--samples 200] [--pauses 0.001 0.01]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mypy reads bench/ as a package; `python bench/cold.py` has bench/ itself on its path
    from bench.floor import playout_moves
else:  # the floor's seeded playouts: the same positions as its rules part
    from floor import playout_moves

PARTS = ("python", "rules", "validation", "view_encode", "view_parse")
POSITIONS = 60
"""Positions taken from each game's playout, every `EVERY`th move: the operations cycle through them."""
EVERY = 7


def _python() -> Callable[[], object]:
    def work() -> int:
        total = 0
        for i in range(300):
            total += i * i
        return total

    return work


def _positions() -> list[tuple[str, Any, int, Any]]:
    """(game, state before the move, mover, command) at positions of a 砸六家 and a 拖拉机 playout, interleaved."""
    found: dict[str, list[tuple[str, Any, int, Any]]] = {}
    for game in ("zlj", "tractor"):
        moves = itertools.islice(playout_moves(game, 20261207), POSITIONS * EVERY)
        found[game] = [
            (game, state, seat, command) for i, (state, seat, _, command, _, _) in enumerate(moves) if i % EVERY == 0
        ]
    return [item for pair in zip(found["zlj"], found["tractor"], strict=True) for item in pair]


def _rules(positions: list[tuple[str, Any, int, Any]]) -> Callable[[], object]:
    from paiju.rules.registry import GAMES

    at = itertools.cycle(positions)

    def move() -> object:
        game, state, seat, command = next(at)
        rules = GAMES[game]
        rules.legal_actions(state, seat)
        after = state
        for event in rules.decide(state, command):
            after = rules.evolve(after, event)
        return after

    return move


def _validation(positions: list[tuple[str, Any, int, Any]]) -> Callable[[], object]:
    from paiju.contract.games import GAMES as CODECS
    from paiju.platform.edge import shared_validator
    from paiju.v1 import engine_pb2

    requests = []
    for version, (game, _, _, command) in enumerate(positions):
        request = engine_pb2.ActRequest(game_id=f"g-{game}-1", command_id=uuid.uuid4().hex, expected_version=version)
        getattr(request, game).CopyFrom(CODECS[game].commands.encode(command))
        requests.append(request.SerializeToString())
    validator = shared_validator()  # the edge's own
    at = itertools.cycle(requests)
    parse = engine_pb2.ActRequest.FromString

    def check() -> object:
        violations = validator.collect_violations(parse(next(at)))
        assert not violations, violations
        return violations

    return check


def _views(positions: list[tuple[str, Any, int, Any]]) -> tuple[Callable[[], object], Callable[[], object]]:
    from paiju.contract.games import GAMES as CODECS
    from paiju.rules.registry import GAMES

    at = itertools.cycle(positions)

    def encode() -> bytes:
        game, state, seat, _ = next(at)
        return CODECS[game].codec.wire(GAMES[game].view(state, seat))

    encoded = []  # (game, the view's class, its message's class, its bytes)
    for game, state, seat, _ in positions:
        view = GAMES[game].view(state, seat)
        encoded.append((game, type(view), type(CODECS[game].codec.encode(view)), CODECS[game].codec.wire(view)))
    at_bytes = itertools.cycle(encoded)

    def parse() -> object:
        game, cls, message, data = next(at_bytes)
        return CODECS[game].codec.decode(message.FromString(data), cls)

    return encode, parse


def operations() -> dict[str, Callable[[], object]]:
    """Each part's one operation, ready to call (positions drawn, messages built, validator compiled)."""
    positions = _positions()
    encode, parse = _views(positions)
    found = {
        "python": _python(),
        "rules": _rules(positions),
        "validation": _validation(positions),
        "view_encode": encode,
        "view_parse": parse,
    }
    for operation in found.values():  # the first call of each: imports, compiled rules, caches filled
        for _ in range(20):
            operation()
    return found


def timed(operation: Callable[[], object], samples: int, pause: float) -> float:
    """The median CPU µs of ``operation``, each call timed alone by this thread's clock, after a sleep of ``pause``
    seconds (0: back to back)."""
    clock, sleep = time.thread_time_ns, time.sleep
    costs = []
    for _ in range(samples):
        if pause:
            sleep(pause)
        started = clock()
        operation()
        costs.append(clock() - started)
    return statistics.median(costs) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=200, help="operations timed per part and pause (200)")
    parser.add_argument(
        "--pauses", type=float, nargs="+", default=[0.001, 0.01], help="idle seconds before each operation (0.001 0.01)"
    )
    args = parser.parse_args()
    found = operations()
    pauses = [0.0, *args.pauses]
    rows = []
    for part in PARTS:
        us = {pause: timed(found[part], args.samples, pause) for pause in pauses}
        row = {
            "bench": "cold",
            "part": part,
            "warm_us": round(us[0.0], 1),
            "after_pause_us": {f"{pause * 1000:g} ms": round(us[pause], 1) for pause in args.pauses},
            "ratio": {f"{pause * 1000:g} ms": round(us[pause] / us[0.0], 2) for pause in args.pauses},
            "samples": args.samples,
        }
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
    print()
    print("CPU of one operation, median µs: back to back, and after each pause (× back to back)")
    heads = " | ".join(f"after {pause * 1000:g} ms" for pause in args.pauses)
    print(f"| part | back to back | {heads} |")
    print("|---|---:|" + "---:|" * len(args.pauses))
    for row in rows:
        cells = " | ".join(f"{row['after_pause_us'][key]} (× {row['ratio'][key]})" for key in row["after_pause_us"])
        print(f"| {row['part']} | {row['warm_us']} | {cells} |")


if __name__ == "__main__":
    main()
