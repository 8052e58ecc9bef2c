"""The engine deals fairly (paiju.rules.fair): it commits in the append that makes a shuffle due, deals a first deal
when the contribution window closes with whatever came (a silent seat never blocks it), reveals each seed when the
deal is over, and the API takes the seats' contributions with the refusals a client can switch on."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import grpc
import pytest

from paiju.cli import main
from paiju.contract.games import ZLJ_COMMANDS
from paiju.engine.bootstrap import build
from paiju.engine.dealing import FairDealing
from paiju.engine.games import Games
from paiju.engine.seeds import server_seed, server_seeds
from paiju.engine.timers import expire_turns
from paiju.platform.serving import build_server
from paiju.platform.store import MemoryEventStore
from paiju.platform.tokens import Role
from paiju.rules import fair
from paiju.rules.fairness import commitment
from paiju.rules.registry import ZLJ
from paiju.rules.rng import SeededRandom
from paiju.rules.verify import verify
from paiju.rules.zlj import Options, StartMatch
from paiju.v1 import engine_pb2, engine_pb2_grpc, zlj_pb2

from ..support.credentials import TRUST
from .harness import FAIR_SECRET, NOW, auth, engine, error_texts, play_zlj, run, seated, token

pytestmark = pytest.mark.integration
T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SECRET = b"fair-dealing-engine-tests-secret"


def fair_games(
    clock: list[datetime], window: float, secrets: tuple[bytes, ...] = (SECRET,), store: MemoryEventStore | None = None
) -> Games:
    dealing = FairDealing(lambda game_id, number: server_seeds(secrets, game_id, number), window)
    return Games(store or MemoryEventStore(), clock=lambda: clock[0], dealing=dealing)


def test_the_engine_commits_at_creation_and_deals_a_silent_table_when_the_window_closes() -> None:
    async def main() -> None:
        clock = [T0]
        games = fair_games(clock, 2.0)
        game = await games.create("f1", "zlj", StartMatch(0, Options(deals=1), fair=True), "start", "engine")
        names = [e.zlj.WhichOneof("event") for e in game.recent]
        assert names == ["match_started", "seed_committed"], "committed in the creation's own append"
        assert game.recent[1].zlj.seed_committed.commitment == commitment(server_seed(SECRET, "f1", 1))
        clock[0] = T0 + timedelta(seconds=1)
        await games.act("f1", fair.Contribute(4, b"only seat 4"), "c4", "player")
        assert await expire_turns(games, T0 + timedelta(seconds=2.5)) == []
        assert (await games.load("f1")).state.phase.value == "shuffle", "the window runs from the last event"
        clock[0] = T0 + timedelta(seconds=3)
        await expire_turns(games, clock[0])
        dealt = await games.history("f1")
        assert dealt.game.state.phase.value == "play"
        assert dealt.envelopes[3].command_id == "fair:f1:3", "the engine's own step, once, by command id"
        verdict = verify(ZLJ, [(e.version, ev) for e, ev in zip(dealt.envelopes, dealt.events, strict=True)])
        assert verdict.ok and [len(s.contributions) for s in verdict.shuffles] == [1]
        assert verdict.shuffles[0].status == "not revealed yet"

    asyncio.run(main())


def test_without_a_window_the_first_deal_is_dealt_in_the_creations_append() -> None:
    async def main() -> None:
        games = fair_games([T0], 0.0)
        game = await games.create("f2", "zlj", StartMatch(0, Options(deals=1), fair=True), "start", "engine")
        names = [e.zlj.WhichOneof("event") for e in game.recent]
        assert names[:3] == ["match_started", "seed_committed", "hands_dealt"]
        assert game.state.phase.value == "play"

    asyncio.run(main())


def test_a_shuffle_committed_before_the_secret_changed_is_dealt_and_revealed_with_the_previous_one() -> None:
    async def main() -> None:
        store = MemoryEventStore()
        clock = [T0]
        before = fair_games(clock, 1.0, store=store)
        await before.create("f3", "zlj", StartMatch(0, Options(deals=1), fair=True), "start", "engine")
        rotated = b"the engine's new seed secret!!!!"
        clock[0] = T0 + timedelta(seconds=5)
        forgetful = fair_games(clock, 1.0, secrets=(rotated,), store=store)  # restarted without the old secret
        await expire_turns(forgetful, clock[0])
        assert (await forgetful.load("f3")).state.phase.value == "shuffle", "a seed that does not match: not dealt"
        after = fair_games(clock, 1.0, secrets=(rotated, SECRET), store=store)  # PAIJU_PREVIOUS_SEED_SECRET set
        await expire_turns(after, clock[0])
        dealt = await after.history("f3")
        assert dealt.game.state.phase.value == "play"
        verdict = verify(ZLJ, [(e.version, ev) for e, ev in zip(dealt.envelopes, dealt.events, strict=True)])
        assert verdict.ok

    asyncio.run(main())


def test_two_replicas_derive_the_same_seeds_so_a_retry_elsewhere_is_the_same_command() -> None:
    assert server_seed(SECRET, "g", 3) == server_seed(SECRET, "g", 3)
    assert len({server_seed(SECRET, "g", n) for n in range(1, 50)} | {server_seed(SECRET, "h", 1)}) == 50
    assert server_seed(SECRET, "g", 1) != server_seed(b"another engine's secret!!!!!!!!!", "g", 1)
    assert hashlib.sha256(SECRET).digest() not in {server_seed(SECRET, "g", n) for n in range(1, 5)}


def test_the_api_takes_each_seats_contribution_and_refuses_what_breaks_the_protocol(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request, fair=True) as (stub, _):
            game_id = "api-" + uuid.uuid4().hex[:6]
            create = engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_ZLJ)
            await stub.CreateGame(seated(create, 6), metadata=auth(token(Role.SERVICE)))

            def contribute(seat: int, data: bytes) -> engine_pb2.ActRequest:
                command = zlj_pb2.ZljCommand(contribute=zlj_pb2.ZljContribute(seat=seat, contribution=data))
                return engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, zlj=command)

            async def refused(call: engine_pb2.ActRequest, seat: int, code: grpc.StatusCode, text: str) -> None:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.Act(call, metadata=auth(token(Role.PLAYER, game_id, seat)))
                assert caught.value.code() == code, caught.value.details()
                assert any(text in t for t in error_texts(caught.value)), error_texts(caught.value)

            answer = await stub.Act(contribute(0, b"zero"), metadata=auth(token(Role.PLAYER, game_id, 0)))
            assert [e.zlj.WhichOneof("event") for e in answer.events] == ["seed_contributed"]
            await refused(contribute(0, b"again"), 0, grpc.StatusCode.FAILED_PRECONDITION, "contributed")
            await refused(contribute(2, b"for another"), 1, grpc.StatusCode.PERMISSION_DENIED, "seat")
            await refused(contribute(1, b"x" * 65), 1, grpc.StatusCode.INVALID_ARGUMENT, "contribution")
            await refused(contribute(1, b""), 1, grpc.StatusCode.INVALID_ARGUMENT, "contribution")
            seed = server_seed(FAIR_SECRET, game_id, 1)
            deal = cast(Any, ZLJ_COMMANDS.encode(fair.DealShuffle(seed)))
            await refused(
                engine_pb2.ActRequest(game_id=game_id, command_id="d", zlj=deal),
                1,
                grpc.StatusCode.PERMISSION_DENIED,
                "engine",
            )
            for seat in range(1, 6):
                answer = await stub.Act(
                    contribute(seat, b"s%d" % seat), metadata=auth(token(Role.PLAYER, game_id, seat))
                )
            kinds = [e.zlj.WhichOneof("event") for e in answer.events]
            assert kinds[:2] == ["seed_contributed", "hands_dealt"], "the last contribution deals in its own append"
            mine = answer.events[1].zlj.hands_dealt
            assert [bool(h.cards) for h in mine.hands] == [s == 5 for s in range(6)], "the answer is redacted"
            assert not mine.HasField("seed")

    run(body)


def test_anyone_verifies_an_ended_game_from_the_engines_public_replay(request: pytest.FixtureRequest) -> None:
    """`paiju verify GAME --engine ADDRESS --token T`: a spectator's token reads the ended game's Replay (whole, for
    everyone, once a game has ended) and verifies every deal without access to the stream."""

    async def body() -> None:
        store = MemoryEventStore()
        _, service = await build(
            store, TRUST, now=lambda: NOW, seed_secret=FAIR_SECRET, contribution_seconds=3600.0, fair_protocol=1
        )
        server = build_server(service.policy)
        service.add_to(server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
                create = engine_pb2.CreateGameRequest(
                    game_id="public", game=engine_pb2.GAME_ZLJ, zlj_options=zlj_pb2.ZljOptions(deals=2)
                )
                await stub.CreateGame(seated(create, 6), metadata=auth(token(Role.SERVICE)))
                await play_zlj(stub, "public", SeededRandom(2))
            watcher = token(Role.SPECTATOR, "public")
            argv = ["verify", "public", "--engine", f"127.0.0.1:{port}", "--token", watcher]
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = await asyncio.to_thread(main, argv)
            assert code == 0, out.getvalue()
            assert out.getvalue().splitlines()[0] == "public (砸六家): 2 deal(s) verified (protocol 1)"
            refused = await asyncio.to_thread(main, [*argv[:4], "--token", "not-a-token"])
            assert refused == 2
        finally:
            await server.stop(None)
            await store.close()

    run(body)


def test_with_fair_dealing_off_new_games_come_from_seeds_and_fair_ones_go_on_fairly() -> None:
    """PAIJU_FAIR_DEALING=off: the engine starts new games from seeds, and still takes the steps of the fair games
    started before (their deals and reveals need its server seeds)."""

    async def main() -> None:
        store = MemoryEventStore()
        clock = [T0]
        await fair_games(clock, 1.0, store=store).create(
            "before", "zlj", StartMatch(0, Options(deals=1), fair=True), "start", "engine"
        )
        dealing = FairDealing(lambda game_id, number: server_seeds((SECRET,), game_id, number), 1.0, new_games=False)
        off = Games(store, clock=lambda: clock[0], dealing=dealing)
        assert not off.dealing.fair and off.dealing.takes_steps
        clock[0] = T0 + timedelta(seconds=2)
        await expire_turns(off, clock[0])
        assert (await off.load("before")).state.phase.value == "play", "the fair game was dealt"

    asyncio.run(main())
