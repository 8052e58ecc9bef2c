"""What a runner decides from is what the engine sends: a seat's view and legal actions, encoded to the gRPC
contract and decoded by the runner's codec, carry everything the heuristic bots read, so the bot's choice over
the API is the choice it makes on the full state in-process (both games, every phase)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from paiju.botrunner.runner import GAMES
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tractor_model
from paiju.rules.tractor.view import view as tractor_view
from paiju.rules.zlj import bots as zlj_bots
from paiju.rules.zlj import game as zlj_game
from paiju.rules.zlj import model as zlj_model
from paiju.rules.zlj.view import view as zlj_view


def zlj_decisions(seed: int) -> Iterator[tuple[Any, int]]:
    state = zlj_game.replay(zlj_game.decide(zlj_model.State(), zlj_model.StartMatch(seed, zlj_model.Options(deals=2))))
    bots = [zlj_bots.HeuristicBot(s) for s in range(6)]
    seeds = SeededRandom(seed)
    while state.phase is not zlj_model.Phase.ENDED:
        seat = state.turn
        assert seat is not None
        yield state, seat
        action = bots[seat].choose(state, seat)
        if isinstance(action, zlj_model.Cut):
            action = replace(action, seed=seeds.next64())
        state = zlj_game.replay(zlj_game.decide(state, action), state)


def tractor_decisions(seed: int) -> Iterator[tuple[Any, int]]:
    phase = tractor_model.Phase
    state = tractor_game.replay(tractor_game.decide(tractor_model.State(), tractor_model.StartGame(seed)))
    bots = [tractor_bots.HeuristicBot(s) for s in range(4)]
    seeds = SeededRandom(seed)
    deals = 0
    while deals < 2:
        if state.phase is phase.FLIP:
            commands: list[Any] = [tractor_model.Redeal(seeds.next64())]
        else:
            waiting = tractor_game.waiting(state)
            commands = []
            for seat in waiting if state.phase in (phase.BID, phase.COUNTER) else waiting[:1]:
                yield state, seat
                action = bots[seat].choose(state, seat)
                commands.append(
                    replace(action, seed=seeds.next64()) if isinstance(action, tractor_model.Cut) else action
                )
        for command in commands:
            events = tractor_game.decide(state, command)
            deals += sum(isinstance(e, tractor_model.DealSettled) for e in events)
            state = tractor_game.replay(events, state)


CASES: dict[str, tuple[Any, Any, Any, Any]] = {
    "zlj": (zlj_decisions, zlj_view, zlj_game.legal_actions, zlj_bots),
    "tractor": (tractor_decisions, tractor_view, tractor_game.legal_actions, tractor_bots),
}


@pytest.mark.parametrize("kind", ["zlj", "tractor"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_decoded_view_and_legal_actions_give_the_in_process_choice(kind: str, seed: int) -> None:
    decisions, view, legal_actions, bots = CASES[kind]
    client = GAMES[kind]
    twin_state = [bots.HeuristicBot(10 + s) for s in range(6)]
    twin_wire = [bots.HeuristicBot(10 + s) for s in range(6)]
    checked = 0
    for i, (state, seat) in enumerate(decisions(seed)):
        if kind == "tractor" and i % 4:
            continue
        sent = client.codec.encode(view(state, seat))
        received = client.codec.decode(sent, client.view_type)
        assert bots.Seen.of_view(received) == bots.Seen.of_state(state, seat)
        legal = legal_actions(state, seat)
        listed = [client.commands.decode(client.commands.encode(a)) for a in legal]
        assert listed == list(legal)
        assert twin_wire[seat].choose_view(received, listed) == twin_state[seat].choose(state, seat)
        checked += 1
    assert checked > 50
