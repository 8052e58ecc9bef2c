"""Whole games between the heuristic bots recorded through `Games` (into any event store): the games behind the
scoring tests and benchmarks, played by the same rules and stored as the engine stores any game."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from paiju.engine.games import Games
from paiju.rules import registry
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import Cut, Options, Phase, StartMatch
from paiju.rules.zlj.bots import HeuristicBot


async def record_zlj(games: Games, game_id: str, players: Sequence[str], seed: int, deals: int = 2) -> Any:
    """A 砸六家 match of ``deals`` deals; the final game."""
    seeds = SeededRandom(seed)
    bots = [HeuristicBot(seeds.next64()) for _ in range(registry.ZLJ.seats)]
    game = await games.create(
        game_id,
        registry.ZLJ.name,
        StartMatch(seeds.next64(), Options(deals=deals)),
        f"{game_id}-start",
        "lobby",
        seats=players,
    )
    n = 0
    while game.state.phase is not Phase.ENDED:
        seat = game.state.turn
        action = bots[seat].choose(game.state, seat)
        if isinstance(action, Cut):
            action = Cut(seat, action.count, seeds.next64())
        n += 1
        game, _ = await games.act(game_id, action, f"c{n}", players[seat])
    return game


async def record_tractor(games: Games, game_id: str, players: Sequence[str], seed: int) -> Any:
    """A timed 拖拉机 game (D-TR-9): the clock is told at once that 25 minutes are left, so the game ends after
    two more deals (or earlier, past A). The final game."""
    seeds = SeededRandom(seed)
    bots = [tractor_bots.HeuristicBot(seeds.next64()) for _ in range(registry.TRACTOR.seats)]
    start = tractor_model.StartGame(seeds.next64(), tractor_model.Options(round_minutes=30), at=0)
    game = await games.create(game_id, registry.TRACTOR.name, start, f"{game_id}-start", "lobby", seats=players)
    game, _ = await games.act(game_id, tractor_model.ClockTick(5 * 60 + 1), "clock", "engine")
    n = 0
    while game.state.phase is not tractor_model.Phase.ENDED:
        n += 1
        if game.state.phase is tractor_model.Phase.FLIP:
            game, _ = await games.act(game_id, tractor_model.Redeal(seeds.next64()), f"c{n}", "engine")
            continue
        seat = tractor_game.waiting(game.state)[0]
        action = bots[seat].choose(game.state, seat)
        if isinstance(action, tractor_model.Cut):
            action = tractor_model.Cut(seat, action.count, seeds.next64())
        game, _ = await games.act(game_id, action, f"c{n}", players[seat])
    return game
