"""A whole 砸六家 match between bots, narrated in the terminal (what `make run` shows)."""

from __future__ import annotations

from typing import TextIO

from paiju.rules.registry import ZLJ
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import Command, Cut, Options, Phase, StartMatch, State, decide, evolve
from paiju.rules.zlj.bots import HeuristicBot, RandomBot
from paiju.rules.zlj.model import DealEnded
from paiju.rules.zlj.outcome import match_score, match_totals
from paiju.terminal.zlj_narrator import narrate, seat_name


def standings(state: State) -> str:
    """The running ledgers after a deal: team points and each seat's match score (D-ZLJ-7)."""
    team, individual = match_totals(state.results)
    scores = ", ".join(f"{seat_name(s)} {match_score(s, team, individual):+d}" for s in range(ZLJ.seats))
    return f"After {len(state.results)} deal(s): team points A {team[0]}, B {team[1]}; match scores {scores}\n"


def play_match(seed: int, deals: int, bot: str, out: TextIO) -> State:
    """Play a match of ``deals`` deals with a bot in every seat, seeded from ``seed``, printing every event."""
    seeds = SeededRandom(seed)
    make = HeuristicBot if bot == "heuristic" else RandomBot
    bots = [make(seeds.next64()) for _ in range(ZLJ.seats)]
    state = State()
    command: Command = StartMatch(seeds.next64(), Options(deals=deals))
    while True:
        for event in decide(state, command):
            state = evolve(state, event)
            for line in narrate(event):
                print(line, file=out)
            if isinstance(event, DealEnded) and state.phase is not Phase.ENDED:
                print(standings(state), file=out)
        if state.phase is Phase.ENDED:
            return state
        seat = state.turn
        assert seat is not None
        action = bots[seat].choose(state, seat)
        if isinstance(action, Cut):
            action = Cut(seat, action.count, seeds.next64())
        command = action
