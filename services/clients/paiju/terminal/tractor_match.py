"""A 拖拉机 game between bots, narrated in the terminal (part of what `make run` shows) as a spectator sees it: each
event redacted for no seat (`paiju.rules.registry`), told by the terminal client's narration
(`paiju.terminal.client.narrate.TractorNarration`)."""

from __future__ import annotations

from typing import TextIO

from paiju.rules.registry import TRACTOR
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.tractor.game import decide, evolve, waiting
from paiju.rules.tractor.model import Command, Cut, DealSettled, Options, Phase, Redeal, StartGame, State
from paiju.terminal.client.narrate import TractorNarration
from paiju.terminal.client.render import Seats


def play_game(seed: int, deals: int, bot: str, out: TextIO) -> State:
    """Play up to ``deals`` deals (0: until a team goes past A) with four bots seeded from ``seed``."""
    seeds = SeededRandom(seed)
    make = (
        getattr(tractor_bots, "HeuristicBot", tractor_bots.RandomBot) if bot == "heuristic" else tractor_bots.RandomBot
    )
    players = [make(seeds.next64()) for _ in range(TRACTOR.seats)]
    narration = TractorNarration(Seats())
    state = State()
    command: Command = StartGame(seeds.next64(), Options())
    played = 0
    while True:
        for event in decide(state, command):
            state = evolve(state, event)
            for line in narration.narrate(TRACTOR.redact(event, None)):
                print(line, file=out)
            if isinstance(event, DealSettled):
                played += 1
        if state.phase is Phase.ENDED or (deals and played >= deals):
            return state
        if state.phase is Phase.FLIP:
            command = Redeal(seeds.next64())
            continue
        seat = waiting(state)[0]
        action = players[seat].choose(state, seat)
        command = Cut(seat, action.count, seeds.next64()) if isinstance(action, Cut) else action
