"""The engine deals fairly by protocol version 2 (paiju.rules.fair; docs/fairness.md, "Version 2"): a game's first
shuffle is committed when a seat's client watches the game (or the first-deal time after its start at the latest);
the commitments' and the reveals' windows close when every seat has acted or their time runs out, through the
deadline index (no polling); a withheld or mismatching reveal is recorded and the deal still deals; the turn pushed
on the Watch stream tells each seat which step it owes."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from paiju.contract.games import ZLJ_COMMANDS
from paiju.engine.dealing import FairDealing
from paiju.engine.games import Games
from paiju.engine.seeds import server_seeds
from paiju.engine.timers import expire_turns
from paiju.platform.store import MemoryEventStore
from paiju.platform.tokens import Role
from paiju.rules import fair
from paiju.rules.fairness import contribution_commitment
from paiju.rules.registry import ZLJ
from paiju.rules.verify import VERIFIED, verify
from paiju.rules.zlj import Options, StartMatch
from paiju.v1 import engine_pb2, zlj_pb2

from .harness import NOW, auth, engine, run, seated, token

pytestmark = pytest.mark.integration
T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SECRET = b"fair-dealing-engine-tests-secret"


def fair_games(clock: list[datetime], *, window: float = 2.0, first: float = 10.0) -> Games:
    dealing = FairDealing(
        lambda game_id, number: server_seeds((SECRET,), game_id, number), window, first_deal_seconds=first
    )
    return Games(MemoryEventStore(), clock=lambda: clock[0], dealing=dealing)


class Seat:
    """A seat's client as protocol 2 asks: its own salt and contribution, committed first, revealed after."""

    def __init__(self, seat: int) -> None:
        self.seat = seat
        self.salt = secrets.token_bytes(32)
        self.contribution = secrets.token_bytes(16)

    def commit(self, number: int, cut: int = 0) -> fair.CommitContribution:
        digest = contribution_commitment(number, self.seat, self.salt, cut, self.contribution)
        return fair.CommitContribution(self.seat, digest)

    def reveal(self, cut: int = 0) -> fair.RevealContribution:
        return fair.RevealContribution(self.seat, self.salt, self.contribution, cut)


async def log_of(games: Games, game_id: str) -> list[tuple[int, Any]]:
    history = await games.history(game_id)
    return [(e.version, ev) for e, ev in zip(history.envelopes, history.events, strict=True)]


def test_the_first_shuffle_waits_for_a_watcher_or_the_first_deal_time_and_the_windows_close_by_deadline() -> None:
    async def main() -> None:
        clock = [T0]
        games = fair_games(clock)
        start = StartMatch(0, Options(deals=1), fair=True, commit_reveal=True)
        game = await games.create("v2", "zlj", start, "start", "engine")
        assert [e.zlj.WhichOneof("event") for e in game.recent] == ["match_started"], "no commitment yet"
        assert games.deadlines.index._due["v2"] == T0.timestamp() + 10, "the first-deal time, in the deadline index"
        assert await expire_turns(games, T0 + timedelta(seconds=9)) == []
        assert (await games.load("v2")).state.shuffle is None
        clock[0] = T0 + timedelta(seconds=10)
        await expire_turns(games, clock[0])
        state = (await games.load("v2")).state
        assert state.shuffle is not None and state.shuffle.number == 1, "committed at the latest after the first time"
        seats = [Seat(s) for s in range(6)]
        for s in range(5):  # seat 5 stays silent
            await games.act("v2", seats[s].commit(1), f"commit{s}", "player")
        assert (await games.load("v2")).state.shuffle.commits_closed is False
        clock[0] += timedelta(seconds=2)
        await expire_turns(games, clock[0])
        assert (await games.load("v2")).state.shuffle.commits_closed, "the commitments' window ran out"
        for s in (0, 1, 2):
            await games.act("v2", seats[s].reveal(), f"reveal{s}", "player")
        await games.act("v2", fair.RevealContribution(4, seats[4].salt, b"other bytes"), "reveal4", "player")
        assert (await games.load("v2")).state.phase.value == "shuffle", "seat 3 may still reveal"
        clock[0] += timedelta(seconds=2)
        await expire_turns(games, clock[0])
        after = await games.load("v2")
        assert after.state.phase.value == "play", "the deal still deals"
        log = await log_of(games, "v2")
        closed = next(e for _, e in log if isinstance(e, fair.RevealsClosed))
        assert closed == fair.RevealsClosed(1, (0, 1, 2), (3,), (4,))
        verdict = verify(ZLJ, log)
        assert verdict.ok and verdict.shuffles[0].version == 2
        assert verdict.shuffles[0].contributors == (0, 1, 2) and verdict.shuffles[0].status == "not revealed yet"

    asyncio.run(main())


def test_when_every_seat_commits_and_reveals_the_deal_comes_at_once_and_verifies() -> None:
    async def main() -> None:
        clock = [T0]
        games = fair_games(clock, first=0.0)
        game = await games.create(
            "v2b", "zlj", StartMatch(0, Options(deals=1), fair=True, commit_reveal=True), "start", "engine"
        )
        assert [e.zlj.WhichOneof("event") for e in game.recent] == ["match_started", "seed_committed"]
        seats = [Seat(s) for s in range(6)]
        for s in range(6):
            await games.act("v2b", seats[s].commit(1), f"c{s}", "player")
        assert (await games.load("v2b")).state.shuffle.commits_closed, "every seat committed: closed at once"
        for s in range(6):
            await games.act("v2b", seats[s].reveal(), f"r{s}", "player")
        assert (await games.load("v2b")).state.phase.value == "play", "every seat revealed: dealt at once"
        verdict = verify(ZLJ, await log_of(games, "v2b"))
        assert verdict.ok and verdict.shuffles[0].contributors == tuple(range(6))

    asyncio.run(main())


def test_the_first_deal_counts_the_contributions_of_the_seats_whose_clients_watch(
    request: pytest.FixtureRequest,
) -> None:
    """Over the API: seats 0 and 2 watch; the first watch commits the first shuffle, the turn each receives says
    COMMIT, then REVEAL; the first deal counts exactly their contributions, and the game verifies once over."""

    async def body() -> None:
        async with engine("memory", request, fair=True, protocol=2) as (stub, games):
            game_id = "w-" + uuid.uuid4().hex[:6]
            create = engine_pb2.CreateGameRequest(
                game_id=game_id, game=engine_pb2.GAME_ZLJ, zlj_options=zlj_pb2.ZljOptions(deals=1)
            )
            await stub.CreateGame(seated(create, 6), metadata=auth(token(Role.SERVICE)))
            assert (await games.load(game_id)).state.shuffle is None, "nobody watches yet: no commitment"
            watching = {s: Seat(s) for s in (0, 2)}
            streams = {
                s: stub.Watch(
                    engine_pb2.WatchRequest(game_id=game_id), metadata=auth(token(Role.PLAYER, game_id, s))
                ).__aiter__()
                for s in watching
            }

            async def owed(seat: int, kind: int) -> engine_pb2.FairDealingStep:
                while True:
                    message = await asyncio.wait_for(streams[seat].__anext__(), 10)
                    if message.HasField("turn") and message.turn.fair_step.kind == kind:
                        found: engine_pb2.FairDealingStep = message.turn.fair_step
                        return found

            for seat, client in watching.items():
                step = await owed(seat, engine_pb2.FAIR_DEALING_STEP_KIND_COMMIT)
                assert step.shuffle == 1 and step.max_cut == 0
                command: Any = ZLJ_COMMANDS.encode(client.commit(step.shuffle))
                await stub.Act(
                    engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, zlj=command),
                    metadata=auth(token(Role.PLAYER, game_id, seat)),
                )
            late = datetime.fromtimestamp(NOW + 3601, UTC)
            await expire_turns(games, late)  # the commitments' window: the others never committed
            for seat, client in watching.items():
                await owed(seat, engine_pb2.FAIR_DEALING_STEP_KIND_REVEAL)
                command = cast(Any, ZLJ_COMMANDS.encode(client.reveal()))
                await stub.Act(
                    engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, zlj=command),
                    metadata=auth(token(Role.PLAYER, game_id, seat)),
                )
            assert (await games.load(game_id)).state.phase.value == "play", "both committed seats revealed: dealt"
            log = await log_of(games, game_id)
            verdict = verify(ZLJ, log)
            assert verdict.ok and verdict.shuffles[0].contributors == (0, 2)
            assert verdict.shuffles[0].status in ("not revealed yet", VERIFIED)

    run(body)
