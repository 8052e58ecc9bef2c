"""`make bench`, contract codec part: a seat's view, events and legal actions through the compiled codec, beside the
reflective codec it replaced, measured in one run.

States, events and commands come from seeded playouts of whole games of both games, dealt from seeds and fairly
(tests/contract/playouts.py: random legal seats, timeouts, a referee, the engine's fair-dealing steps), sampled across
every phase. Per game, the median in microseconds over every sampled item and ``--repeat`` repetitions of:

- ``view_encode``: the rules core's ``view(state, seat)`` (each seat and the spectator), the codec's encode and
  ``SerializeToString`` — what the engine does for a view; ``view_decode``: ``FromString`` and decode into the seat
  view dataclass — what a client does with it;
- ``event_encode`` / ``event_decode``: an event as a seat receives it (``redact``), through the game's event codec;
- ``actions_encode`` / ``actions_decode``: a waiting seat's legal actions (listed before the clock starts: that cost is
  the rules core's), each encoded into a ``GameCommand`` of a ``GetLegalActionsResponse`` as the engine lists them, and
  read back as a client reads them.

The compiled codec remembers the items of lists of frozen dataclasses from call to call (a deal's tricks, a match's
deal results: `paiju.contract.codec`), as it does in an engine and a client, whose views repeat them move after move;
``view_encode_cold`` and ``view_decode_cold`` are the same views with that memory emptied before each call (the
first view a client decodes, an engine whose memory has turned over).

Targets (a view built and encoded, and parsed and decoded): 砸六家 ≤ 50 µs, 拖拉机 ≤ 150 µs; PASS/FAIL is printed
against them, and the exit status is 1 when the views with memory miss them. The ratio is the reflective codec's
median over the compiled one's, on the same items in the same run (the two alternate item by item, so drift of the
shared machine falls on both). The reflective codec is tests/contract/reference_codec.py, loaded from there by path:
the oracle the tests hold the compiled codec to is the one measured here, with no second copy to drift from it.
Prints one JSON line per game, then a Markdown table.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import operator
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from google.protobuf.message import Message

from paiju.contract import codec as codec_module
from paiju.contract.games import GAMES, GameCodecs
from paiju.rules.registry import GameRules
from paiju.v1 import engine_pb2

HERE = Path(__file__).parent
TESTS = HERE.parent / "tests" / "contract"
TARGETS_US = {"zlj": 50.0, "tractor": 150.0}
"""A seat's view built and encoded (and parsed and decoded), median microseconds."""


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"paiju_bench_{name}", TESTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


reference: Any = _load("reference_codec")
playouts: Any = _load("playouts")


class Codecs:
    """One game's view codec, event codec and command codec: the compiled ones or the reflective ones."""

    def __init__(self, codec: Any, events: Any, commands: Any) -> None:
        self.codec = codec
        self.events = events
        self.commands = commands


def _reflective(contract: GameCodecs) -> Codecs:
    """The reflective codecs built as the game's compiled ones are (the same module, prefix, wrappers and unions)."""
    codec = reference.Codec(contract.codec._module, contract.codec._prefix, contract.codec._card_list)

    def oneof(compiled: Any) -> Any:
        union = functools.reduce(operator.or_, compiled._classes.values())
        return reference.OneofCodec(codec, compiled._wrapper, union, compiled._oneof)

    return Codecs(codec, oneof(contract.events), oneof(contract.commands))


def _compiled(contract: GameCodecs) -> Codecs:
    return Codecs(contract.codec, contract.events, contract.commands)


class Sample:
    """What one game's playouts give the benchmark: (state, seat) views, redacted events, legal action lists."""

    def __init__(self, rules: GameRules, games: int, every: int, seed: int) -> None:
        self.views: list[tuple[Any, int | None]] = []
        self.events: list[Any] = []
        self.actions: list[tuple[Any, ...]] = []
        n = 0
        for game in range(games):
            for step in playouts.playout(rules, seed + game, fair_dealing=bool(game % 2)):
                n += 1
                if n % every:
                    continue
                seats: list[int | None] = [None, *range(rules.seats)]
                self.views += [(step.state, seat) for seat in seats]
                self.events += [rules.redact(event, seats[n % len(seats)]) for event in step.events]
                for seat in rules.waiting(step.state)[:1]:
                    self.actions.append(tuple(rules.legal_actions(step.state, seat)))


Timed = Callable[[], object]


def _time(work: Timed, repeat: int, into: list[float], before: Callable[[], None] | None = None) -> None:
    clock = time.perf_counter_ns
    for _ in range(repeat):
        if before is not None:
            before()
        started = clock()
        work()
        into.append((clock() - started) / 1000)


def _view_encode(codecs: Codecs, rules: GameRules, state: Any, seat: int | None) -> Timed:
    return lambda: codecs.codec.encode(rules.view(state, seat)).SerializeToString()


def _view_decode(codecs: Codecs, message_class: type[Message], wire: bytes, view_type: type) -> Timed:
    return lambda: codecs.codec.decode(message_class.FromString(wire), view_type)


def _event_encode(codecs: Codecs, event: Any) -> Timed:
    return lambda: codecs.events.encode(event).SerializeToString()


def _event_decode(codecs: Codecs, wrapper: type[Message], wire: bytes) -> Timed:
    return lambda: codecs.events.decode(wrapper.FromString(wire))


def _actions_encode(codecs: Codecs, member: str, actions: tuple[Any, ...]) -> Timed:
    return lambda: _listed(codecs.commands, member, actions).SerializeToString()


def _actions_decode(codecs: Codecs, member: str, wire: bytes) -> Timed:
    def read() -> list[Any]:
        listed = engine_pb2.GetLegalActionsResponse.FromString(wire)
        return [codecs.commands.decode(getattr(action, member)) for action in listed.actions]

    return read


def _measure(
    rules: GameRules, contract: GameCodecs, sample: Sample, repeat: int, ref_repeat: int
) -> dict[str, dict[str, float]]:
    """Median microseconds of each workload, compiled and reflective, alternating item by item; and the compiled
    codec's view with its memory of list items emptied before each call (``cold``)."""
    sides = {"compiled": _compiled(contract), "reflective": _reflective(contract)}
    times: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    view_type = type(rules.view(rules.new_state(), None))
    message_class = contract.codec.message_class(view_type)
    member = contract.name
    forget = codec_module._COMPILED.forget

    def run(side: str, key: str, work: Timed, before: Callable[[], None] | None = None) -> None:
        _time(work, repeat if side == "compiled" else ref_repeat, times[side].setdefault(key, []), before)

    for state, seat in sample.views:
        wire = contract.codec.encode(rules.view(state, seat)).SerializeToString()
        for side, codecs in sides.items():
            run(side, "view_encode", _view_encode(codecs, rules, state, seat))
            run(side, "view_decode", _view_decode(codecs, message_class, wire, view_type))
        compiled = sides["compiled"]
        run("compiled", "view_encode_cold", _view_encode(compiled, rules, state, seat), forget)
        run("compiled", "view_decode_cold", _view_decode(compiled, message_class, wire, view_type), forget)
    for event in sample.events:
        wrapper = type(contract.events.encode(event))
        wire = contract.events.encode(event).SerializeToString()
        for side, codecs in sides.items():
            run(side, "event_encode", _event_encode(codecs, event))
            run(side, "event_decode", _event_decode(codecs, wrapper, wire))
    for actions in sample.actions:
        wire = _listed(contract.commands, member, actions).SerializeToString()
        for side, codecs in sides.items():
            run(side, "actions_encode", _actions_encode(codecs, member, actions))
            run(side, "actions_decode", _actions_decode(codecs, member, wire))
    return {side: {key: statistics.median(values) for key, values in found.items()} for side, found in times.items()}


def _listed(commands: Any, member: str, actions: tuple[Any, ...]) -> Message:
    """The legal actions as the engine lists them: each command the game's member of a ``GameCommand``."""
    response = engine_pb2.GetLegalActionsResponse()
    for action in actions:
        getattr(response.actions.add(), member).CopyFrom(commands.encode(action))
    return response


WORKLOADS = ("view_encode", "view_decode", "event_encode", "event_decode", "actions_encode", "actions_decode")
COLD = {"view_encode_cold": "view_encode", "view_decode_cold": "view_decode"}
"""The compiled codec's view with its memory emptied, and the reflective workload it compares with (which has none)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=4, help="playouts per game (every other one dealt fairly)")
    parser.add_argument("--every", type=int, default=8, help="sample every n-th step of a playout")
    parser.add_argument("--repeat", type=int, default=15, help="repetitions of each item, compiled codec")
    parser.add_argument("--reference-repeat", type=int, default=3, help="repetitions of each item, reflective codec")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    rows = []
    for name, contract in GAMES.items():
        rules = contract.rules
        sample = Sample(rules, args.games, args.every, args.seed)
        medians = _measure(rules, contract, sample, args.repeat, args.reference_repeat)
        ours, theirs = medians["compiled"], medians["reflective"]
        theirs.update({cold: theirs[warm] for cold, warm in COLD.items()})
        target = TARGETS_US[name]
        keys = [*WORKLOADS, *COLD]
        row: dict[str, Any] = {
            "game": name,
            "views": len(sample.views),
            "events": len(sample.events),
            "action_lists": len(sample.actions),
            **{f"{key}_us": round(ours[key], 2) for key in keys},
            **{f"{key}_reference_us": round(theirs[key], 2) for key in WORKLOADS},
            **{f"{key}_ratio": round(theirs[key] / ours[key], 1) for key in keys},
            "view_target_us": target,
            **{f"{key}_pass": ours[key] <= target for key in ("view_encode", "view_decode", *COLD)},
        }
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False))
    print()
    print("| game | workload | compiled µs | reflective µs | ratio | target µs | |")
    print("|---|---|---:|---:|---:|---:|---|")
    for row in rows:
        for key in (*WORKLOADS, *COLD):
            goal = str(row["view_target_us"]) if key.startswith("view") else ""
            verdict = ("PASS" if row[f"{key}_pass"] else "FAIL") if goal else ""
            compared = row[f"{COLD.get(key, key)}_reference_us"]
            print(
                f"| {row['game']} | {key} | {row[f'{key}_us']} | {compared} | "
                f"{row[f'{key}_ratio']}x | {goal} | {verdict} |"
            )
    return 0 if all(row["view_encode_pass"] and row["view_decode_pass"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
