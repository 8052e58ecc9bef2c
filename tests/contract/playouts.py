"""Seeded playouts of whole games on the rules cores alone, as the engine drives them: every command (the seats',
the engine's and a referee's) with the events it decided and the state after them.

The codec tests compare codecs on everything a playout shows, and `bench/codec.py` takes its states from here
(it loads this file by path: keep it free of test-only imports). Seats play uniformly random legal actions from
`SeededRandom`; a turn sometimes times out instead (turn timers are on), a cut carries a seed and sometimes chosen
bytes; a 拖拉机 referee sometimes penalises or declares 劳改 (§11), and its timed round is told at once that two deals
are left (D-TR-9), so that a game ends. With ``fair`` every deal comes from a committed shuffle: the engine's
commitments, deals and reveals are commands here too (`paiju.rules.fair`), and seats contribute to first deals.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from paiju.rules import fair
from paiju.rules.fairness import contribution_commitment
from paiju.rules.registry import TRACTOR, ZLJ, GameRules
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import model as tm
from paiju.rules.zlj import model as zm

MAX_STEPS = 100_000
"""A safety valve: a playout that does not end within this many commands is a failure, not a hang."""


@dataclass(frozen=True, slots=True)
class Step:
    """One command, the events it decided, and the state after them."""

    command: Any
    events: tuple[Any, ...]
    state: Any


def playout(
    rules: GameRules, seed: int, *, fair_dealing: bool, deals: int = 2, commit_reveal: bool | None = None
) -> Iterator[Step]:
    """The steps of one seeded game of ``rules`` from its start command to its end. 砸六家: a match of ``deals``
    deals, open-ended when dealt fairly (then closed by `EndMatch` after ``deals`` deals); 拖拉机: a timed game,
    ended two deals after its start. A fair game deals by protocol version 2 with ``commit_reveal`` (by default:
    the odd seeds), its seats committing, revealing, withholding or revealing a mismatch at random."""
    commit_reveal = seed % 2 == 1 if commit_reveal is None else commit_reveal
    kept: dict[tuple[int, int], fair.RevealContribution] = {}
    rng = SeededRandom(seed)
    server = rng.next64()
    state = rules.new_state()
    if rules is ZLJ:
        options: Any = zm.Options(deals=0 if fair_dealing else deals, turn_seconds=30)
    else:
        options = tm.Options(round_minutes=30, turn_seconds=30)
    pending: list[Any] = [rules.start(rng.next64(), options, 0, fair=fair_dealing, commit_reveal=commit_reveal)]
    if rules is TRACTOR:
        pending.append(tm.ClockTick(5 * 60 + 1))
    for _ in range(MAX_STEPS):
        if pending:
            command = pending.pop(0)
        else:
            command = _next(rules, state, rng, server, deals, kept=kept)
            if command is None:
                return
        events = tuple(rules.decide(state, command))
        for event in events:
            state = rules.evolve(state, event)
        yield Step(command, events, state)
    raise AssertionError(f"the playout of seed {seed} did not end")


def _seed_of(server: int, number: int) -> bytes:
    return hashlib.sha256(b"server %d %d" % (server, number)).digest()


def _pledge(
    rules: GameRules, state: Any, rng: SeededRandom, kept: dict[tuple[int, int], fair.RevealContribution]
) -> Any | None:
    """A seat's step of protocol version 2 on the committed shuffle (``None``: no seat takes one now)."""
    shuffle = state.shuffle
    for seat in range(rules.seats):
        owed = fair.owed(state, seat)
        if owed == "commit" and rng.below(3):
            salt = b"".join(rng.next64().to_bytes(8, "big") for _ in range(4))
            contribution = rng.next64().to_bytes(8, "big")[: 1 + rng.below(8)]
            cut = 1 + rng.below(rules.deck_size - 1) if seat == shuffle.cutter else 0
            kept[(shuffle.number, seat)] = fair.RevealContribution(seat, salt, contribution, cut)
            return fair.CommitContribution(seat, contribution_commitment(shuffle.number, seat, salt, cut, contribution))
        if owed == "reveal" and rng.below(4):
            reveal = kept[(shuffle.number, seat)]
            return replace(reveal, contribution=b"x" + reveal.contribution) if rng.below(6) == 0 else reveal
    return None


def _next(
    rules: GameRules,
    state: Any,
    rng: SeededRandom,
    server: int,
    deals: int,
    *,
    kept: dict[tuple[int, int], fair.RevealContribution],
) -> Any | None:
    """The next command in ``state``: the engine's due step first, then a seat's (``None``: the game is over)."""
    if state.phase.value == "ended":
        return None
    over = rules is ZLJ and state.options.deals == 0 and len(state.results) >= deals and state.phase is zm.Phase.CUT
    if over and (state.shuffle is None or not state.shuffle.dealt):  # once the last deal's seed is revealed
        return zm.EndMatch()
    due = rules.fair_step(state)
    if due is not None:
        if not due.waits:
            return fair.command(due, _seed_of(server, due.number))
        if state.shuffle is not None and state.shuffle.commit_reveal:
            step = _pledge(rules, state, rng, kept)
            return step if step is not None else fair.command(due, _seed_of(server, due.number))
        if state.shuffle is None:  # a version-2 first shuffle waits for a watcher
            return fair.command(due, _seed_of(server, due.number))
        for seat in range(rules.seats):
            if not state.shuffle.contributed(seat) and rng.below(3):
                return fair.Contribute(seat, rng.next64().to_bytes(8, "big")[: 1 + rng.below(8)])
        return fair.command(due, _seed_of(server, due.number))  # the contribution window passed
    again = rules.deal_again(state, rng.next64())
    if again is not None:
        return again
    waiting = rules.waiting(state)
    if not waiting:
        return None
    seat = waiting[rng.below(len(waiting))]
    if rules is TRACTOR and state.phase is tm.Phase.PLAY and rng.below(60) == 0:
        offender = rng.below(rules.seats)
        if rng.below(4) == 0:
            return tm.DeclareLabourReform("referee", offender)
        return tm.Penalize("referee", offender, 1 + rng.below(3))
    if rng.below(25) == 0:
        return rules.timeout(seat, rng.next64())
    actions = rules.legal_actions(state, seat)
    action = actions[rng.below(len(actions))]
    if isinstance(action, zm.Cut | tm.Cut):
        contribution = rng.next64().to_bytes(8, "big") if rng.below(2) else b""
        action = replace(action, seed=rng.next64(), contribution=contribution)
    return action
