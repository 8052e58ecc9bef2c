"""Which game events a running scoring projection applies soon (`GamesProjection.wakes`): every event that adds a row
or starts a game's row wakes it, so results, deals, shuffles and a game's players reach the read models within the
linger; the play between them does not, so a busy stream costs a transaction per result, not one per event."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from paiju.engine.dealing import FairDealing
from paiju.engine.games import Games
from paiju.engine.seeds import server_seeds
from paiju.engine.selfplay import record_tractor, record_zlj
from paiju.platform.store import MemoryEventStore, Recorded
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import bots as zlj_bots
from paiju.rules.zlj import model as zlj
from paiju.scoring.fold import GameFold, ShuffleRow
from paiju.scoring.readmodels import GamesProjection

SECRET = b"scoring-wakes-tests-server-seed!!!"
T0 = datetime(2026, 12, 6, tzinfo=UTC)


async def _fair_zlj(games: Games) -> None:
    """A fair 砸六家 match of one deal: its shuffles' commitments and seeds are stored as events."""
    players = [f"p{s}" for s in range(zlj.SEATS)]
    rng = SeededRandom(8)
    game = await games.create(
        "fair", "zlj", zlj.StartMatch(rng.next64(), zlj.Options(deals=1), fair=True), "s", "engine", seats=players
    )
    bots = [zlj_bots.HeuristicBot(rng.next64()) for _ in range(zlj.SEATS)]
    for n in range(5000):
        if game.state.phase is zlj.Phase.ENDED:
            return
        seat = game.state.turn
        action = bots[seat].choose(game.state, seat)
        if isinstance(action, zlj.Cut):
            action = zlj.Cut(seat, action.count, 0, b"cut")
        game, _ = await games.act("fair", action, f"c{n}", f"p{seat}")
    raise AssertionError("the fair match did not end")


def test_every_event_that_adds_a_row_wakes_the_projection_and_play_does_not() -> None:
    async def main() -> None:
        dealing = FairDealing(lambda game_id, number: server_seeds([SECRET], game_id, number), 0.0)
        games = Games(MemoryEventStore(), clock=lambda: T0, dealing=dealing)
        await record_zlj(games, "zlj", [f"z{s}" for s in range(6)], seed=3, deals=2)
        await record_tractor(games, "tractor", [f"t{s}" for s in range(4)], seed=4)
        await _fair_zlj(games)
        woken = slept = shuffles = 0
        for game_id in ("zlj", "tractor", "fair"):
            fold = GameFold(game_id)
            history = await games.history(game_id)
            for version, envelope in enumerate(history.envelopes, start=1):
                recorded = Recorded(game_id, version, version, envelope.command_id, envelope.SerializeToString())
                rows = fold.apply(envelope)
                starts = version == 1 or envelope.WhichOneof("payload") == "seats_assigned"
                wakes = GamesProjection.wakes(recorded)
                if rows or starts:
                    assert wakes, f"{game_id} v{version} adds {rows} but leaves the projection asleep"
                shuffles += sum(isinstance(row, ShuffleRow) for row in rows)
                woken += wakes
                slept += not wakes
            assert fold.ended, f"{game_id} did not end"
        assert shuffles > 0, "the fair match stored its shuffles"
        # the play between results does not wake it: most events wait for the next result
        assert slept > 4 * woken, (woken, slept)

    asyncio.run(main())
