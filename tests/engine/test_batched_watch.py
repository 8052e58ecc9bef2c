"""One message per change (`WatchRequest.batched`): a watch that asks for it gets every event it has to deliver at once
— the events one command stored, a backlog — in one message's `envelopes`, the turn after the last, and those bytes
are exactly the per-event stream's under another field's tag: the same shared encodings, so every redaction the
per-event stream keeps (a seat's own hand only, a substitute never shown the earlier holder's hand, concealed bids,
the spectators' audience) holds for it byte for byte. A watch without the flag gets the stream as before: one event
a message, in `envelope`. A long backlog is split at the bounds of a message (`MESSAGE_EVENTS`, `MESSAGE_BYTES`)."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry

from paiju.engine import watching
from paiju.engine.games import RECENT, Game, Games
from paiju.engine.metrics import WATCH_MESSAGES
from paiju.engine.watching import MESSAGE_EVENTS, Change
from paiju.platform.tokens import Identity, Role
from paiju.rules import registry
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.tractor import model as tractor
from paiju.rules.zlj import bots as zlj_bots
from paiju.rules.zlj import model as zlj
from paiju.sdk import GameWatch
from paiju.v1 import engine_pb2, tractor_pb2, zlj_pb2

from ..support.credentials import mint_token
from .harness import NOW, auth, bot_move, create_zlj, engine, player_id, run, seated, token

pytestmark = pytest.mark.integration  # games through a gRPC engine in the process

ENVELOPE, ENTRY = b"\x0a", b"\x22"
"""The tags of `WatchResponse.envelope` (field 1) and of `WatchResponse.envelopes` (field 4), both length-delimited."""
WATCH = "/paiju.v1.EngineService/Watch"


def _as_entries(per_event: list[bytes]) -> bytes:
    """The per-event stream's messages of one change joined, each event's tag made that of an `envelopes` entry: what
    the batched stream must send for the same change (the turn's bytes stay at the end of the last)."""
    assert all(m[:1] == ENVELOPE for m in per_event), "each per-event message starts with its envelope"
    return b"".join(ENTRY + m[1:] for m in per_event)


class RawWatch:
    """A Watch stream read as the bytes the engine sends (no deserializer), and each message parsed."""

    def __init__(self, stub: Any, game_id: str, md: Any, *, batched: bool, from_version: int = 0) -> None:
        call = stub.channel.unary_stream(
            WATCH, request_serializer=engine_pb2.WatchRequest.SerializeToString, response_deserializer=None
        )
        request = engine_pb2.WatchRequest(game_id=game_id, from_version=from_version, batched=batched)
        self.stream = call(request, metadata=md)
        self.batched = batched

    async def read(self) -> tuple[bytes, engine_pb2.WatchResponse]:
        data = await asyncio.wait_for(self.stream.read(), 10)
        assert isinstance(data, bytes), data
        reply = engine_pb2.WatchResponse.FromString(data)
        if self.batched:
            assert not reply.HasField("envelope"), "a batched stream sends its events in `envelopes` only"
        else:
            assert not reply.envelopes, "a stream that did not ask for batches gets one event a message, as before"
        return data, reply

    async def until_turn(self, version: int) -> list[tuple[bytes, engine_pb2.WatchResponse]]:
        """The messages up to the one with the turn at ``version``."""
        got = [await self.read()]
        while not got[-1][1].HasField("turn") or got[-1][1].turn.version < version:
            got.append(await self.read())
        assert got[-1][1].turn.version == version
        return got

    def cancel(self) -> None:
        self.stream.cancel()


class Pair:
    """The same watcher twice, as one message per event and as one message per change, compared change by change."""

    def __init__(self, stub: Any, game_id: str, md: Any, name: str) -> None:
        self.name = name
        self.single = RawWatch(stub, game_id, md, batched=False)
        self.batched = RawWatch(stub, game_id, md, batched=True)
        self.envelopes: list[engine_pb2.Envelope] = []
        self.lost = False

    async def change(self, version: int) -> None:
        """Both streams up to the turn at ``version``: the batched one in one message (or as few as the bounds allow),
        the bytes of the per-event ones under the entries' tag."""
        if self.lost:
            return
        try:
            single = await self.single.until_turn(version)
        except grpc.aio.AioRpcError as e:
            assert e.code() == grpc.StatusCode.PERMISSION_DENIED, e  # SEAT_LOST: the seat changed hands
            with pytest.raises(grpc.aio.AioRpcError) as lost:
                await self.batched.until_turn(version)
            assert lost.value.code() == grpc.StatusCode.PERMISSION_DENIED, "both forms end alike"
            self.lost = True
            return
        batched = await self.batched.until_turn(version)
        events = [reply.envelope for _, reply in single if reply.HasField("envelope")]
        if len(events) <= MESSAGE_EVENTS:
            assert len(batched) == 1, f"{self.name}: the change came in {len(batched)} messages"
        assert b"".join(data for data, _ in batched) == _as_entries([data for data, _ in single]), self.name
        assert [e for _, reply in batched for e in reply.envelopes] == events
        self.envelopes += events

    def cancel(self) -> None:
        self.single.cancel()
        self.batched.cancel()


def _hands_shown(envelopes: list[engine_pb2.Envelope], game: str) -> dict[int, list[int]]:
    """The version of each dealt hands event -> the seats whose cards it shows."""
    shown = {}
    for e in envelopes:
        if e.WhichOneof("payload") == game and getattr(e, game).WhichOneof("event") == "hands_dealt":
            hands = getattr(e, game).hands_dealt.hands
            shown[e.version] = [s for s, h in enumerate(hands) if h.cards]
    return shown


def test_each_change_of_a_zlj_match_comes_as_one_message_equal_to_the_per_event_stream(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """Every audience at once — a seat, a seat whose player is substituted between deals, the spectators, full
    information — watched both ways from version 0 through a whole deal, a substitution and the next deal: each change
    is one batched message, byte for byte the per-event messages under the entries' tag; a command of several events
    included. A substitute watching from 0 afterwards gets the backlog in few messages, never the earlier holder's
    hand."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "batched-zlj"
            await create_zlj(stub, game_id, zlj_pb2.ZljOptions(deals=2, resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL))
            game = await games.load(game_id)
            pairs = [
                Pair(stub, game_id, auth(token(Role.PLAYER, game_id, 0)), "seat 0"),
                Pair(stub, game_id, auth(token(Role.PLAYER, game_id, 3)), "seat 3, substituted"),
                Pair(stub, game_id, auth(token(Role.SPECTATOR, game_id)), "a spectator"),
                Pair(stub, game_id, auth(token(Role.ANALYST)), "an analyst"),
            ]
            for pair in pairs:  # the creation's events: one change
                await pair.change(game.version)
            rng = SeededRandom(13)
            bots = [zlj_bots.RandomBot(rng.next64()) for _ in range(zlj.SEATS)]
            several = substituted = 0
            for n in range(3000):
                if game.state.phase is zlj.Phase.ENDED or (substituted and game.state.phase is zlj.Phase.PLAY):
                    break
                if game.state.phase is zlj.Phase.CUT and not substituted:
                    game, _ = await games.assign_seats(
                        game_id, {3: "p9"}, engine_pb2.SEAT_CHANGE_SUBSTITUTE, "sub", "lobby"
                    )
                    substituted = game.version
                else:
                    game, stored = await bot_move(games, game, bots, rng, n)
                    several += len(stored) > 1
                for pair in pairs:
                    await pair.change(game.version)
            assert substituted and several, "a substitution and commands of several events were watched"
            seat0, seat3, spectator, analyst = pairs
            assert seat3.lost and not seat0.lost, "the substituted player's streams ended with the seat"
            dealt = _hands_shown(seat0.envelopes, "zlj")
            assert len(dealt) == 2 and all(seats == [0] for seats in dealt.values()), "seat 0's own hand only"
            assert all(seats == [] for seats in _hands_shown(spectator.envelopes, "zlj").values())
            assert all(len(seats) == zlj.SEATS for seats in _hands_shown(analyst.envelopes, "zlj").values())
            for pair in pairs:
                pair.cancel()

            # the substitute watches from version 0: the earlier holder's hand is not its audience's
            newcomer = auth(mint_token(Identity("p9", Role.PLAYER, game_id, 3, NOW + 900)))
            single = RawWatch(stub, game_id, newcomer, batched=False)
            together = RawWatch(stub, game_id, newcomer, batched=True)
            per_event = await single.until_turn(game.version)
            messages = await together.until_turn(game.version)
            single.cancel()
            together.cancel()
            assert len(messages) == -(-game.version // MESSAGE_EVENTS) < len(per_event)
            assert b"".join(data for data, _ in messages) == _as_entries([data for data, _ in per_event])
            received = [e for _, reply in messages for e in reply.envelopes]
            assert [e.version for e in received] == list(range(1, game.version + 1))
            shown = _hands_shown(received, "zlj")
            assert [v for v, seats in shown.items() if seats and v < substituted] == [], "an earlier holder's hand"
            assert [seats for v, seats in shown.items() if v > substituted] == [[3]], "its own hand, once it sits"

    run(body)


def test_a_tractor_deal_keeps_concealed_bids_concealed_in_one_message_per_change(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """Each seat and a spectator watch a 拖拉机 deal through its concealed bidding both ways: byte for byte the same
    events, so another seat's concealed bid is as hidden in a batched message as in the per-event stream."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "batched-tractor"
            create = engine_pb2.CreateGameRequest(
                game_id=game_id, game=engine_pb2.GAME_TRACTOR, tractor_options=tractor_pb2.TractorOptions()
            )
            await stub.CreateGame(seated(create, tractor.SEATS), metadata=auth(token(Role.SERVICE)))
            game = await games.load(game_id)
            pairs = [
                Pair(stub, game_id, auth(token(Role.PLAYER, game_id, s)), f"seat {s}") for s in range(tractor.SEATS)
            ]
            pairs.append(Pair(stub, game_id, auth(token(Role.SPECTATOR, game_id)), "a spectator"))
            for pair in pairs:
                await pair.change(game.version)
            rng = SeededRandom(17)
            bots = [tractor_bots.HeuristicBot(rng.next64()) for _ in range(tractor.SEATS)]
            bids = 0
            for n in range(400):
                state = game.state
                if not registry.TRACTOR.waiting(state) or state.phase is tractor.Phase.PLAY:
                    break
                game, _ = await bot_move(games, game, bots, rng, n)
                bids += bool(game.state.phase in (tractor.Phase.BID, tractor.Phase.COUNTER) and game.state.bids)
                for pair in pairs:
                    await pair.change(game.version)
            assert bids, "concealed bids were watched"
            concealed = 0
            for pair in pairs:
                pair.cancel()
                for e in pair.envelopes:
                    entered = e.tractor.bid_entered if e.tractor.WhichOneof("event") == "bid_entered" else None
                    if entered is not None and pair.name != f"seat {entered.seat}":
                        assert entered.concealed and not entered.HasField("bid"), f"{pair.name} sees a bid"
                        concealed += 1
            assert concealed

    run(body)


async def _long_game(games: Games, game_id: str, events: int) -> Game:
    """A 砸六家 match of three deals played by bots until it holds ``events`` events (longer than the game's memory)."""
    rng = SeededRandom(23)
    bots = [zlj_bots.RandomBot(rng.next64()) for _ in range(zlj.SEATS)]
    start = zlj.StartMatch(rng.next64(), zlj.Options(deals=3))
    game = await games.create(game_id, "zlj", start, "start", "engine", seats=[player_id(s) for s in range(zlj.SEATS)])
    n = 0
    while game.version < events and game.state.phase is not zlj.Phase.ENDED:
        game, _ = await bot_move(games, game, bots, rng, n)
        n += 1
    assert game.version >= events and game.first_recent > 1
    return game


def _checked_split(messages: list[tuple[bytes, engine_pb2.WatchResponse]], start: int, version: int) -> list[int]:
    """The events of each message of a batched backlog after ``start``: in order with no gap, the turn on the last
    message alone; the counts."""
    versions = [e.version for _, reply in messages for e in reply.envelopes]
    assert versions == list(range(start + 1, version + 1))
    assert [reply.HasField("turn") for _, reply in messages] == [False] * (len(messages) - 1) + [True]
    return [len(reply.envelopes) for _, reply in messages]


def test_a_backlog_longer_than_a_message_is_split_at_its_bounds(
    store_kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch from version 0 of a long game gets its backlog (read from the store) in full messages of
    `MESSAGE_EVENTS` events, then the rest with the turn; with smaller bounds (events, then bytes) the same backlog,
    and one from the game's memory, come in more messages — each byte for byte the per-event stream's events."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "batched-long"
            game = await _long_game(games, game_id, MESSAGE_EVENTS + 40)
            md = auth(token(Role.PLAYER, game_id, 2))

            async def both(start: int) -> tuple[list[tuple[bytes, Any]], list[tuple[bytes, Any]]]:
                single = RawWatch(stub, game_id, md, batched=False, from_version=start)
                together = RawWatch(stub, game_id, md, batched=True, from_version=start)
                per_event, messages = await single.until_turn(game.version), await together.until_turn(game.version)
                single.cancel()
                together.cancel()
                assert b"".join(data for data, _ in messages) == _as_entries([data for data, _ in per_event])
                return per_event, messages

            _, messages = await both(0)
            counts = _checked_split(messages, 0, game.version)
            assert counts == [MESSAGE_EVENTS, game.version - MESSAGE_EVENTS]

            monkeypatch.setattr(watching, "MESSAGE_EVENTS", 5)
            for start in (0, game.version - RECENT + 1):  # from the store, from the game's memory
                _, messages = await both(start)
                counts = _checked_split(messages, start, game.version)
                assert max(counts) == 5 and len(counts) == -(-(game.version - start) // 5)

            monkeypatch.setattr(watching, "MESSAGE_EVENTS", 1 << 20)
            monkeypatch.setattr(watching, "MESSAGE_BYTES", 2000)
            _, messages = await both(0)
            counts = _checked_split(messages, 0, game.version)
            # an entry is as long as the per-event message of its event (the tags are one byte each)
            sizes = [
                sum(len(engine_pb2.WatchResponse(envelope=e).SerializeToString()) for e in reply.envelopes)
                for _, reply in messages
            ]
            assert len(counts) > 2 and all(size <= 2000 for size, count in zip(sizes, counts, strict=True) if count > 1)
            assert all(size + 400 > 2000 for size in sizes[:-1]), "a message is full before the next starts"

    run(body)


def _watch_messages() -> float:
    registry = CollectorRegistry()
    registry.register(WATCH_MESSAGES)
    return registry.get_sample_value("paiju_engine_watch_messages_total") or 0.0


def test_a_batched_watch_resumed_inside_a_command_of_several_events_gets_the_rest_of_it_in_one_message(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """Resumed at a version inside a command's events (from the game's memory), the first message holds exactly the
    events after it, in order, and the turn: what a client reconnecting mid-change needs, once."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "batched-resume"
            await stub.CreateGame(
                seated(engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_ZLJ), zlj.SEATS),
                metadata=auth(token(Role.SERVICE)),
            )
            game = await games.load(game_id)
            assert game.version >= 3, "the creation stores several events"
            md = auth(token(Role.PLAYER, game_id, 1))
            sent = _watch_messages()
            for start in range(game.version + 1):
                watch = RawWatch(stub, game_id, md, batched=True, from_version=start)
                _, reply = await watch.read()
                watch.cancel()
                assert [e.version for e in reply.envelopes] == list(range(start + 1, game.version + 1)), start
                assert reply.turn.version == game.version and not reply.HasField("end")
            # the engine counts what it sent: one message a watch (paiju_engine_watch_messages_total)
            assert _watch_messages() - sent == game.version + 1

    run(body)


async def _followed(stub: Any, game_id: str, md: Any, *, batched: bool) -> list[tuple[str, int]]:
    """What `GameWatch` hands over of a game up to its first turn, in order: ("event", version), ("turn", version)."""
    got: list[tuple[str, int]] = []
    done = asyncio.Event()

    async def received(envelope: engine_pb2.Envelope) -> None:
        got.append(("event", envelope.version))

    async def on_turn(turn: engine_pb2.Turn) -> None:
        got.append(("turn", turn.version))
        done.set()

    follow = GameWatch(stub, game_id, received, metadata=lambda: md, on_turn=on_turn, batched=batched)
    task = asyncio.create_task(follow.run())
    try:
        await asyncio.wait_for(done.wait(), 10)
    finally:
        task.cancel()
    return got


def test_a_watch_that_does_not_ask_gets_one_event_a_message_and_the_sdk_reads_both_forms(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """The per-event stream is unchanged for a client that does not know the flag (its request has no field 4); and
    `GameWatch` hands every envelope over once, in order, then the turn, whichever form it asked for."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "batched-sdk"
            await stub.CreateGame(
                seated(engine_pb2.CreateGameRequest(game_id=game_id, game=engine_pb2.GAME_ZLJ), zlj.SEATS),
                metadata=auth(token(Role.SERVICE)),
            )
            game = await games.load(game_id)
            md = auth(token(Role.PLAYER, game_id, 0))
            old = RawWatch(stub, game_id, md, batched=False)
            replies = await old.until_turn(game.version)
            old.cancel()
            assert len(replies) == game.version and all(r.HasField("envelope") for _, r in replies)

            for form in (True, False):
                got = await _followed(stub, game_id, md, batched=form)
                assert got == [*(("event", v) for v in range(1, game.version + 1)), ("turn", game.version)], form

    run(body)


def batched(events: list[bytes], turn: bytes = b"") -> list[bytes]:
    """The messages a batched watch sends to deliver ``events`` at once, ``turn`` after the last, as the engine's
    Watch makes them with `Change`."""
    change = Change()
    out = []
    for event in events:
        full = change.add(event)
        if full is not None:
            out.append(full)
    if change.count or turn:
        out.append(change.message(turn))
    return out


def test_change_joins_shared_encodings_as_entries_within_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Change` and `batched`: each event's bytes as an entry of `envelopes` (its first byte changed, nothing encoded
    again), the turn after the last; a message full at `MESSAGE_EVENTS` or `MESSAGE_BYTES` starts another; an event
    larger than the bound goes alone; anything but a message of one envelope is refused."""

    def event(version: int, actor: str = "a") -> bytes:
        envelope = engine_pb2.Envelope(game_id="g", version=version, actor=actor)
        return engine_pb2.WatchResponse(envelope=envelope).SerializeToString()

    events = [*(event(v) for v in range(1, 7)), event(7, "a" * 100)]
    turn = engine_pb2.WatchResponse(turn=engine_pb2.Turn(version=7, seats=[2])).SerializeToString()
    [one] = batched(events, turn)
    parsed = engine_pb2.WatchResponse.FromString(one)
    assert [e.version for e in parsed.envelopes] == list(range(1, 8)) and parsed.turn.version == 7
    assert not parsed.HasField("envelope")
    assert one == b"".join(ENTRY + e[1:] for e in events) + turn
    assert batched([], turn) == [turn] and batched([]) == []

    def split(messages: list[bytes]) -> list[int]:
        return [len(engine_pb2.WatchResponse.FromString(m).envelopes) for m in messages]

    monkeypatch.setattr(watching, "MESSAGE_EVENTS", 3)
    assert split(batched(events, turn)) == [3, 3, 1]
    monkeypatch.setattr(watching, "MESSAGE_EVENTS", 100)
    monkeypatch.setattr(watching, "MESSAGE_BYTES", 2 * len(events[0]) + 1)
    assert split(batched(events)) == [2, 2, 2, 1], "two small events a message; a large one goes alone"
    change = Change()
    with pytest.raises(ValueError):
        change.add(turn)
    assert change.count == 0 and change.message() == b""
