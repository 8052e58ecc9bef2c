"""Helpers shared by the gRPC tests of `EngineService`: tokens, an in-process engine over a chosen store,
and small call wrappers. Import with ``from .harness import ...`` (sibling module under importlib mode)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, cast

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from paiju.contract.games import TRACTOR, TRACTOR_COMMANDS, TRACTOR_EVENTS, ZLJ, ZLJ_COMMANDS, ZLJ_EVENTS
from paiju.engine.bootstrap import build
from paiju.engine.games import Game, Games
from paiju.platform.limits import RateLimits
from paiju.platform.partitions import PARTITIONS
from paiju.platform.serving import build_server
from paiju.platform.store import MemoryEventStore
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.tokens import Role
from paiju.rules.fair import Contribute
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import view as tractor_view
from paiju.rules.tractor.model import Counter as TractorCounter
from paiju.rules.tractor.model import Cut as TractorCut
from paiju.rules.tractor.model import MakeBid as TractorMakeBid
from paiju.rules.tractor.model import Pass as TractorPass
from paiju.rules.tractor.model import Phase as TractorPhase
from paiju.rules.tractor.model import Play as TractorPlay
from paiju.rules.tractor.model import Redeal as TractorRedeal
from paiju.rules.zlj.model import SEATS as ZLJ_SEATS
from paiju.rules.zlj.model import Cut as ZljCut
from paiju.rules.zlj.view import SeatView as ZljSeatView
from paiju.sdk.fairness import Pledges
from paiju.v1 import engine_pb2, engine_pb2_grpc, zlj_pb2

from ..support.credentials import TRUST, bearer
from ..support.tokens import token as shared_token

NOW = 2_000_000_000


def token(role: Role, game: str | None = None, seat: int | None = None, expires: int = NOW + 3600) -> str:
    """The engine tests' token for ``seat`` (its subject ``<role>-<seat>``), minted by the shared helper on the
    engine's fixed clock (``NOW``), expiring at ``expires``."""
    return shared_token(
        role=role, subject=f"{role.value}-{seat}", game=game, seat=seat, now=NOW, lifetime=expires - NOW
    )


def auth(tok: str) -> tuple[tuple[str, str], ...]:
    return bearer(tok)


@asynccontextmanager
async def engine(
    kind: str,
    request: pytest.FixtureRequest,
    seed: int = 99,
    limits: str | None = None,
    *,
    fair: bool = False,
    protocol: int = 1,
    first_deal_seconds: float = 3600.0,
    now: Callable[[], int] = lambda: NOW,
) -> AsyncIterator[tuple[Any, Games]]:
    """An `EngineService` on a free local port over the ``kind`` store ("memory" or "jetstream"), its clock
    fixed at `NOW`, its shuffle seeds drawn from ``seed`` and no rate limits but ``limits`` (rule text); ``fair``:
    new games are dealt from committed shuffles (`paiju.rules.fair`; a deal without a cut is dealt once every seat
    contributed: no contribution window elapses in a test; ``protocol``: the version new fair games are dealt by, 1
    unless a test says, ``first_deal_seconds``: how long a version-2 game's first shuffle waits for a watcher; ``now``:
    the engine's clock, `NOW` unless a test moves it). Yields
    (async stub, `Games`)."""
    if kind == "memory":
        store: Any = MemoryEventStore()
    else:
        stream = "S" + uuid.uuid4().hex[:12].upper()
        store = await JetStreamEventStore.connect(  # partitioned, as the engine creates its stream
            request.getfixturevalue("nats_url"), stream=stream, prefix=f"s.{stream.lower()}", partitions=PARTITIONS
        )
    seeds = SeededRandom(seed)
    games, service = await build(  # as production builds it: the games follow the store's feed
        store,
        TRUST,
        now=now,
        seeds=lambda game_id, version: seeds.next64(),
        limits=RateLimits(limits) if limits is not None else None,
        seed_secret=FAIR_SECRET,
        contribution_seconds=3600.0 if fair else None,
        fair_protocol=protocol,
        first_deal_seconds=first_deal_seconds,
    )
    server = build_server(service.policy)
    service.add_to(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub: Any = engine_pb2_grpc.EngineServiceStub(channel)  # the async channel makes every call awaitable
        stub.channel = channel  # for tests that read a stream's messages as the bytes sent
        yield stub, games
    finally:
        await channel.close()
        await server.stop(None)
        await store.close()


def player_id(seat: int) -> str:
    """The player id that `token` gives a player token for ``seat``."""
    return f"{Role.PLAYER.value}-{seat}"


def seated(request: engine_pb2.CreateGameRequest, seats: int) -> engine_pb2.CreateGameRequest:
    """``request`` with every seat assigned to the player whose `token` the tests mint for it."""
    for seat in range(seats):
        request.seats.add(seat=seat, player_id=player_id(seat))
    return request


def game_events(envelopes: Any, game: str) -> list[Any]:
    """The game events of some envelopes, decoded (engine events such as seat assignments left out)."""
    codec = ZLJ_EVENTS if game == "zlj" else TRACTOR_EVENTS
    return [codec.decode(getattr(e, game)) for e in envelopes if e.WhichOneof("payload") == game]


def run(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(body())


async def status_of(call: Awaitable[Any]) -> grpc.StatusCode:
    try:
        await call
    except grpc.aio.AioRpcError as e:
        return e.code()
    return grpc.StatusCode.OK


def reason_of(error: grpc.aio.AioRpcError) -> str:
    """The `google.rpc.ErrorInfo` reason a refusal carries (``""`` when it carries none)."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for detail in status_pb2.Status.FromString(value).details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return str(info.reason)
    return ""


async def refusal_of(call: Awaitable[Any]) -> tuple[grpc.StatusCode, str]:
    """The status code and ErrorInfo reason a call ends with (``(OK, "")`` when it succeeds)."""
    try:
        await call
    except grpc.aio.AioRpcError as e:
        return e.code(), reason_of(e)
    return grpc.StatusCode.OK, ""


# --- bots playing over the API ------------------------------------------------------------------------

Observer = Callable[[str, int | None, Any], None]
"""Called with (source, seat or None for the spectator, message) for every response a client received."""


def _ignore(source: str, seat: int | None, message: Any) -> None:
    return None


def tractor_movers(view: tractor_view.SeatView) -> list[int]:
    """The seats that may act now, from the public view (several while bids are concealed)."""
    if view.phase in (TractorPhase.PLAY, TractorPhase.CUT):
        return [] if view.turn is None else [view.turn]
    if view.phase is TractorPhase.BID:
        return [s for s in range(4) if s not in view.acted]
    if view.phase is TractorPhase.COUNTER:
        assert view.bid is not None
        return [s for s in range(4) if s % 2 != view.bid.seat % 2 and s not in view.acted]
    return []


def choose_tractor(actions: list[Any], rng: SeededRandom, *, pass_bids: bool) -> Any:
    """A seeded bot over `legal_actions`: bids with the fewest level cards (so a counter stays possible),
    counters whenever it can, mostly leads its largest combinations, otherwise a random action;
    ``pass_bids`` passes in bidding."""
    if isinstance(actions[0], TractorPass):
        offers = [a for a in actions if isinstance(a, TractorMakeBid | TractorCounter)]
        if pass_bids or not offers:
            return actions[0]
        fewest = min(len(a.cards) for a in offers)
        smallest = [a for a in offers if len(a.cards) == fewest]
        return smallest[rng.below(len(smallest))]
    if isinstance(actions[0], TractorPlay) and rng.below(4):
        # mostly lead the largest combinations: a deal of 81 cards a seat takes fewer tricks
        largest = max(len(a.cards) for a in actions)
        actions = [a for a in actions if len(a.cards) == largest]
    return actions[rng.below(len(actions))]


FAIR_SECRET = b"engine-tests-server-seeds-secret!"
"""The secret a fair test engine derives its server seeds from."""


async def contribute_all(
    stub: Any, game_id: str, game: str, shuffle: Any, *, observe: Observer, contributions: Callable[[int], bytes]
) -> None:
    """Every seat that has not yet contributed to the committed ``shuffle`` adds ``contributions(seat)`` with its own
    player token (the last one makes the engine deal)."""
    for seat in range(6 if game == "zlj" else 4):
        if shuffle.contributed(seat):
            continue
        command = (ZLJ_COMMANDS if game == "zlj" else TRACTOR_COMMANDS).encode(Contribute(seat, contributions(seat)))
        request = engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex)
        getattr(request, game).CopyFrom(command)
        acted = await stub.Act(request, metadata=auth(token(Role.PLAYER, game_id, seat)))
        observe("act", seat, acted)


PLEDGES = Pledges()
"""The seats' commitments and reveals in the games the harness plays (protocol version 2)."""


async def pledge_all(stub: Any, game_id: str, game: str, shuffle: Any, *, observe: Observer) -> None:
    """Every seat takes the step of protocol version 2 it owes on the committed ``shuffle`` with its own player
    token, as Paiju's clients do (`paiju.sdk.fairness.Pledges`): its commitment while commitments are taken (the
    cutter's with its cut), its reveal once they have closed. The last of each closes the window at once."""
    commands = ZLJ_COMMANDS if game == "zlj" else TRACTOR_COMMANDS
    max_cut = (108 if game == "zlj" else 324) - 1
    for seat in range(6 if game == "zlj" else 4):
        if not shuffle.commits_closed and shuffle.pledged(seat) is None:
            cut = max_cut if seat == shuffle.cutter else 0
            command: Any = PLEDGES.commit(f"{game_id}/{seat}", seat, shuffle.number, shuffle.deal, cut)
        elif shuffle.commits_closed and shuffle.pledged(seat) is not None and shuffle.revealed(seat) is None:
            command = PLEDGES.reveal(f"{game_id}/{seat}", shuffle.number)
            if command is None:
                continue
        else:
            continue
        request = engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex)
        getattr(request, game).CopyFrom(commands.encode(command))
        acted = await stub.Act(request, metadata=auth(token(Role.PLAYER, game_id, seat)))
        observe("act", seat, acted)


async def watch_once(stub: Any, game_id: str, seat: int = 0) -> None:
    """A seat's client starts watching the game and reads its first message (a version-2 game's first shuffle is
    committed then), then stops."""
    stream = stub.Watch(engine_pb2.WatchRequest(game_id=game_id), metadata=auth(token(Role.PLAYER, game_id, seat)))
    try:
        await asyncio.wait_for(stream.read(), 10)
    finally:
        stream.cancel()


def _pledging(shuffle: Any) -> bool:
    """A version-2 shuffle that still takes commitments or reveals."""
    return shuffle is not None and shuffle.commit_reveal and not shuffle.dealt and not shuffle.reveals_closed


def _contribution(rng: SeededRandom) -> Callable[[int], bytes]:
    return lambda seat: rng.next64().to_bytes(8, "big") + bytes([seat])


async def play_tractor(
    stub: Any,
    game_id: str,
    rng: SeededRandom,
    *,
    void_deals: int = 0,
    observe: Observer = _ignore,
    before_act: Callable[[int, Any], Awaitable[None]] | None = None,
    limit: int = 5000,
) -> int:
    """Play a 拖拉机 game to its end with one bot per seat, each with its own player token (GetView,
    GetLegalActions, Act); a spectator token decides whose move it is and a service token redeals a void
    first deal. The first ``void_deals`` biddings are all passes. Returns the number of acts."""
    players = [auth(token(Role.PLAYER, game_id, s)) for s in range(4)]
    spectator = auth(token(Role.SPECTATOR, game_id))
    service = auth(token(Role.SERVICE))
    acts = 0
    voided = 0
    for _ in range(limit):
        public = await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=spectator)
        observe("view", None, public)
        view = TRACTOR.decode(public.tractor, tractor_view.SeatView)
        if view.phase is TractorPhase.ENDED:
            return acts
        if view.phase is TractorPhase.FLIP and view.shuffle is None and view.deal == 0:  # version 2: not watched
            await watch_once(stub, game_id)
            continue
        if _pledging(view.shuffle):  # protocol version 2: commit, then reveal
            await pledge_all(stub, game_id, "tractor", view.shuffle, observe=observe)
            continue
        if view.phase is TractorPhase.FLIP and view.shuffle is not None:  # a fair game: the seats contribute
            await contribute_all(
                stub, game_id, "tractor", view.shuffle, observe=observe, contributions=_contribution(rng)
            )
            continue
        if view.phase is TractorPhase.FLIP:
            command = cast(Any, TRACTOR_COMMANDS.encode(TractorRedeal(0)))  # the engine draws the seed
            acted = await stub.Act(
                engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, tractor=command),
                metadata=service,
            )
            observe("act", None, acted)
            continue
        movers = tractor_movers(view)
        assert movers, f"nobody may act in {view}"
        seat = movers[rng.below(len(movers))]
        mine = await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=players[seat])
        observe("view", seat, mine)
        legal = await stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=players[seat])
        observe("legal", seat, legal)
        actions = [TRACTOR_COMMANDS.decode(a.tractor) for a in legal.actions]
        assert actions, f"seat {seat} may act but has no legal action"
        if before_act is not None:
            await before_act(seat, legal)
        bidding = view.phase is TractorPhase.BID
        choice = choose_tractor(actions, rng, pass_bids=bidding and voided < void_deals)
        acted = await stub.Act(
            engine_pb2.ActRequest(
                game_id=game_id,
                command_id=uuid.uuid4().hex,
                expected_version=legal.version,
                tractor=cast(Any, TRACTOR_COMMANDS.encode(choice)),
            ),
            metadata=players[seat],
        )
        observe("act", seat, acted)
        acts += 1
        if any(e.tractor.WhichOneof("event") == "deal_voided" for e in acted.events):
            voided += 1
    raise AssertionError(f"game {game_id} did not end in {limit} steps")


def choose_zlj(actions: list[Any], rng: SeededRandom) -> Any:
    """A seeded bot over the listed actions: mostly a play of the most cards (a shorter deal), else any."""
    if rng.below(4):
        sizes = [len(a.zlj.play.cards) if a.zlj.WhichOneof("command") == "play" else 0 for a in actions]
        actions = [a for a, n in zip(actions, sizes, strict=True) if n == max(sizes)]
    return actions[rng.below(len(actions))]


async def play_zlj(
    stub: Any,
    game_id: str,
    rng: SeededRandom,
    *,
    observe: Observer = _ignore,
    before_act: Callable[[int, Any], Awaitable[None]] | None = None,
    limit: int = 5000,
) -> int:
    """Play a 砸六家 match to its end with seeded bots (`choose_zlj`), one player token per seat. Returns the
    number of acts."""
    players = [auth(token(Role.PLAYER, game_id, s)) for s in range(6)]
    spectator = auth(token(Role.SPECTATOR, game_id))
    for acts in range(limit):
        public = await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=spectator)
        observe("view", None, public)
        if public.zlj.phase == zlj_pb2.ZLJ_PHASE_ENDED:
            return acts
        shuffle = ZLJ.decode(public.zlj, ZljSeatView).shuffle
        if public.zlj.phase == zlj_pb2.ZLJ_PHASE_SHUFFLE and shuffle is None:  # version 2: nobody watched yet
            await watch_once(stub, game_id)
            continue
        if _pledging(shuffle):  # protocol version 2: commit, then reveal
            await pledge_all(stub, game_id, "zlj", shuffle, observe=observe)
            continue
        if public.zlj.phase == zlj_pb2.ZLJ_PHASE_SHUFFLE:  # a fair match's first deal: the seats contribute
            view = ZLJ.decode(public.zlj, ZljSeatView)
            await contribute_all(stub, game_id, "zlj", view.shuffle, observe=observe, contributions=_contribution(rng))
            continue
        assert public.zlj.HasField("turn"), f"nobody may act: {public}"
        seat = public.zlj.turn
        mine = await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=players[seat])
        observe("view", seat, mine)
        legal = await stub.GetLegalActions(engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=players[seat])
        observe("legal", seat, legal)
        assert legal.actions, f"seat {seat} is to act but has no legal action"
        if before_act is not None:
            await before_act(seat, legal)
        choice = choose_zlj(list(legal.actions), rng)
        acted = await stub.Act(
            engine_pb2.ActRequest(game_id=game_id, command_id=uuid.uuid4().hex, zlj=choice.zlj),
            metadata=players[seat],
        )
        observe("act", seat, acted)
    raise AssertionError(f"match {game_id} did not end in {limit} steps")


# --- error details ------------------------------------------------------------------------------------


STATUS = status_pb2.Status
STATUS_DETAILS_KEY = "grpc-status-details-bin"


def rule_violations(error: grpc.aio.AioRpcError) -> list[engine_pb2.RuleViolation]:
    """The `RuleViolation`s packed in an error's google.rpc.Status details (the grpc-status-details-bin trailer)."""
    found = []
    for key, value in error.trailing_metadata() or ():
        if key == STATUS_DETAILS_KEY:
            raw = value if isinstance(value, bytes) else str(value).encode("latin-1")
            for detail in STATUS.FromString(raw).details:
                if detail.type_url.endswith("/paiju.v1.RuleViolation"):
                    found.append(engine_pb2.RuleViolation.FromString(detail.value))
    return found


def error_texts(error: grpc.aio.AioRpcError) -> list[str]:
    """Everything readable a client gets with an error: the status message, text trailers, the status
    details' message and every packed detail (a `RuleViolation` as its fields, anything else as text)."""
    texts = [error.details() or ""]
    for key, value in error.trailing_metadata() or ():
        if key == STATUS_DETAILS_KEY:
            raw = value if isinstance(value, bytes) else str(value).encode("latin-1")
            status = STATUS.FromString(raw)
            texts.append(status.message)
            for detail in status.details:
                if detail.type_url.endswith("/paiju.v1.RuleViolation"):
                    violation = engine_pb2.RuleViolation.FromString(detail.value)
                    texts.extend((violation.reason, violation.rule))
                else:
                    texts.append(f"{detail.type_url} {detail.value!r}")
        elif not key.endswith("-bin"):
            texts.append(f"{key}: {value if isinstance(value, str) else value.decode(errors='replace')}")
    return texts


async def bot_move(games: Games, game: Game, bots: list[Any], rng: SeededRandom, n: int) -> Any:
    """One move of the seat the game waits for (a cut with a seed of the test's), as a bot plays it, with the command
    id ``m<n>``: (game, events)."""
    state = game.state
    seat = game.rules.game.waiting(state)[0]
    action = bots[seat].choose(state, seat)
    if isinstance(action, ZljCut | TractorCut):
        action = type(action)(seat, action.count, rng.next64())
    return await games.act(game.game_id, action, f"m{n}", player_id(seat))


async def create_zlj(stub: Any, game_id: str, options: zlj_pb2.ZljOptions) -> None:
    """A 砸六家 game created through the engine's API (as the lobby's service does), every seat assigned (`seated`)."""
    create = engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_ZLJ, zlj_options=options)
    await stub.CreateGame(seated(create, ZLJ_SEATS), metadata=auth(token(Role.SERVICE)))
