"""Every lobby event survives the contract (`paiju.lobby.contract.LOBBY_EVENTS`): encoded, serialised,
parsed and decoded it equals the original, options left out and 拖拉机 draws included."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paiju.contract.codec import CodecError
from paiju.lobby import parties, queue, table
from paiju.lobby.accounts import AccountRegistered, NameClaimed, SessionsRevoked, hash_password, name_skeleton
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.lobby.table import (
    AddBot,
    CoverSeat,
    FinishMatch,
    LeaseSeat,
    LeaveSeat,
    OpenTable,
    RemovePlayer,
    Result,
    ReturnToSeat,
    SetReady,
    StartMatch,
    Substitute,
    SwapSeats,
    TakeSeat,
    decide,
    evolve,
)
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model
from paiju.v1 import lobby_events_pb2

from ..support.profiles import examples

ZLJ_OPTIONS = zlj_model.Options(
    deals=3, reverse_tribute=zlj_model.ReverseTribute.TEAM_TOTAL, resist=zlj_model.Resist.TWO_BIG, turn_seconds=10
)
TRACTOR_OPTIONS = tractor_model.Options(round_minutes=90, turn_seconds=10)
EVENT_CLASSES = {
    *typing.get_args(table.Event),
    AccountRegistered,
    NameClaimed,
    SessionsRevoked,
    *typing.get_args(parties.Event),
    *typing.get_args(queue.Event),
}
QUEUED = (queue.QueuedPlayer("account-a", "Ann", 2500), queue.QueuedPlayer("account-b", "张三", -120))


def encoded(event: Any) -> lobby_events_pb2.LobbyEvent:
    message = LOBBY_EVENTS.encode(event)
    assert isinstance(message, lobby_events_pb2.LobbyEvent)
    return message


def through_the_wire(event: Any) -> Any:
    message = encoded(event)
    parsed = lobby_events_pb2.LobbyEvent.FromString(message.SerializeToString())
    return LOBBY_EVENTS.decode(parsed)


EVENTS: list[Any] = [
    table.TableOpened("t1", "Friday table", "zlj", "p-owner", False, None, None),
    table.TableOpened("t1", "Friday table", "zlj", "p-owner", True, ZLJ_OPTIONS, None),
    table.TableOpened("t2", "决赛 第一桌", "tractor", "p-owner", True, None, TRACTOR_OPTIONS),
    table.TableOpened("t2", "决赛\u3000第一桌", "tractor", "p-owner", True, None, TRACTOR_OPTIONS),
    table.TableOpened("t4", "Friday\u00a0table", "zlj", "p-owner", False, None, None),
    # `decide` refuses the other game's options now, but a table opened before may have both: still carried
    table.TableOpened("t3", "both", "tractor", "p-owner", False, zlj_model.Options(), tractor_model.Options()),
    table.TableOpened("", "", "", "", False, None, None),
    table.SeatTaken(0, "p-ann", "Ann"),
    table.SeatTaken(5, "p-zhang", "张三"),
    table.SeatLeft(1, "p-bo", removed=False, bot=False),
    table.SeatLeft(2, "p-cy", removed=True, bot=True),
    table.SeatLeft(3, "bot-t1-0", removed=True, bot=False),
    # recorded before a bot taking a covered seat over got a fresh id: it kept the cover id
    table.SeatLeft(4, "cover-t1-4", removed=True, bot=False),
    table.BotSeated(3, "bot-t1-0"),
    table.BotSeated(0, "bot-t1-12"),
    table.BotSeated(2, "bot-决赛-1"),
    table.SeatsSwapped(0, 5),
    table.SeatsSwapped(3, 1),
    table.Substituted(4, "p-dee", "Dee"),
    table.ReadyChanged(0, True),
    table.ReadyChanged(0, False),
    table.MatchStarted("t1-m1", 1, ("p-ann", "p-bo", "p-cy", "bot-t1-0", "bot-t1-1", "bot-t1-2"), "zlj", None, None),
    table.MatchStarted(  # recorded before a bot taking a covered seat over got a fresh id
        "t1-m3", 3, ("bot-t1-3", "cover-t1-1", "p-cy", "bot-t1-0", "bot-t1-1", "bot-t1-2"), "zlj", None, None
    ),
    table.MatchStarted("t1-m2", 2, ("a", "b", "c", "d", "e", "f"), "zlj", ZLJ_OPTIONS, None),
    table.MatchStarted("t2-m1", 1, ("a", "b", "c", "d"), "tractor", None, TRACTOR_OPTIONS),
    table.MatchStarted("t2-m9", 9, ("a", "b", "c", "d"), "tractor", None, tractor_model.Options()),
    table.SeatCovered(2),
    table.SeatReturned(2),
    table.SeatLeased(3, "runner-a", 1_700_000_030),
    table.SeatLeased(0, "", 0),
    table.SeatLeased(1, "r", 2**62),
    table.MatchFinished("t1-m1", Result(team_points=(3, -3), individual_points=(2, -1, 1, 0, -1, -1))),
    table.MatchFinished("t2-m1", Result(winner_team=0, levels=(12, 7))),
    table.MatchFinished("t2-m1", Result(winner_team=1, levels=(3, 12))),
    table.MatchFinished("t2-m2", Result(winner_team=None, levels=(9, 9))),  # equal levels: no winner
    table.MatchFinished("t1-m2", Result()),
    AccountRegistered("p-0123456789abcdef", "Ann", "scrypt$16384$8$1$00ff$abcd", guest=False),
    AccountRegistered("p-guest", "guest-a1b2c3", "", guest=True),
    AccountRegistered("p-zh", "张三", "", guest=False),
    NameClaimed("alice", "account-0123456789abcdef0123456789abcdef", "\u0410lice"),
    NameClaimed(name_skeleton("张三"), "account-zh", "张三"),
    NameClaimed("", "", ""),
    SessionsRevoked("account-0123456789abcdef0123456789abcdef", 3),
    table.TableExpired(1800),
    table.TableExpired(0),
    parties.PartyFormed("party-0123456789abcdef", "zlj", "account-a", "Ann"),
    parties.PartyInvited("account-b", "张三"),
    parties.PartyJoined("account-b", "张三"),
    parties.PartyLeft("account-b"),
    parties.PartyLeft("account-b", invite_only=True),
    parties.PartyLeft("account-a", disbanded=True),
    parties.MembershipChanged("party-0123456789abcdef", ()),
    parties.MembershipChanged("", ("party-1", "party-2")),
    queue.QueueJoined("entry-1", table.Mode.CASUAL, QUEUED, "party-1", 30, 1_700_000_000, False, "zlj"),
    queue.QueueJoined("entry-2", table.Mode.RANKED, QUEUED[:1], "", 0, 0, True, "tractor"),
    queue.QueueLeft(("entry-1", "entry-2"), queue.LeaveReason.NOT_CONFIRMED, "offer-1"),
    queue.QueueLeft(("entry-1",), queue.LeaveReason.WITHDRAWN),
    queue.QueueLeft((), queue.LeaveReason.GONE),
    queue.QueueLeft(("entry-3",), queue.LeaveReason.SEATED),
    queue.MatchOffered("offer-1", table.Mode.CASUAL, ("entry-1",), ("account-a", "", "account-b", "", "", ""), 20),
    queue.MatchConfirmed("offer-1", "account-a"),
    queue.MatchSeated("offer-1", "table-0123456789ab"),
    queue.QueueSealed("queue-3", 3),
    queue.QueueCarried(
        3,
        "queue-2",
        (
            queue.QueueEntry("entry-1", "zlj", table.Mode.CASUAL, QUEUED, "party-1", 30, 1_700_000_000, True, ""),
            queue.QueueEntry("entry-2", "tractor", table.Mode.RANKED, QUEUED[:1], "", 0, 5, False, "offer-1"),
        ),
        (queue.QueueOffer("offer-1", "tractor", table.Mode.RANKED, ("entry-2",), ("a", "", "b", ""), 9, ("a",)),),
        (
            queue.QueueOutcome("entry-0", queue.LeaveReason.SEATED, "table-0123456789ab", "offer-0"),
            queue.QueueOutcome("entry-9", queue.LeaveReason.GONE, "", ""),
        ),
        (queue.QueueCommand("queue:offer:offer-1", bytes(range(32))),),
    ),
    queue.QueueGenerationBegun(3),
]


def test_every_event_class_is_exercised() -> None:
    assert {type(event) for event in EVENTS} == EVENT_CLASSES
    kinds = set(lobby_events_pb2.LobbyEvent.DESCRIPTOR.oneofs_by_name["event"].fields)
    assert len(kinds) == len(EVENT_CLASSES)


@pytest.mark.parametrize("event", EVENTS, ids=lambda event: type(event).__name__)
def test_event_round_trips(event: Any) -> None:
    assert through_the_wire(event) == event


def test_left_out_options_stay_none() -> None:
    decoded = through_the_wire(table.TableOpened("t1", "Friday", "zlj", "p-owner", False, None, None))
    assert decoded.zlj_options is None
    assert decoded.tractor_options is None
    defaults = through_the_wire(table.TableOpened("t1", "Friday", "zlj", "p-owner", False, zlj_model.Options(), None))
    assert defaults.zlj_options == zlj_model.Options()  # present with its defaults, not left out


def test_a_draw_stays_a_draw() -> None:
    draw = through_the_wire(table.MatchFinished("t2-m1", Result(winner_team=None, levels=(4, 4))))
    assert draw.result.winner_team is None
    team_a = through_the_wire(table.MatchFinished("t2-m1", Result(winner_team=0, levels=(12, 4))))
    assert team_a.result.winner_team == 0  # team 0 is not "unset"


def test_the_wire_names_the_event() -> None:
    message = encoded(table.SeatCovered(4))
    assert message.WhichOneof("event") == "seat_covered"
    assert message.seat_covered.seat == 4
    message = encoded(table.MatchFinished("g", Result(winner_team=None)))
    assert not message.match_finished.result.HasField("winner_team")
    message = encoded(AccountRegistered("p", "Ann", "h", guest=False))
    assert message.WhichOneof("event") == "account_registered"
    message = encoded(NameClaimed("alice", "account-1", "Alice"))
    assert message.WhichOneof("event") == "name_claimed"
    assert (message.name_claimed.skeleton, message.name_claimed.player_id, message.name_claimed.name) == (
        "alice",
        "account-1",
        "Alice",
    )


def test_the_oneof_numbers_stay() -> None:
    """Stored events are read by their field numbers: the name claim, the revocation, the parties, the queue and its
    generations took new ones, nothing was renumbered."""
    fields = lobby_events_pb2.LobbyEvent.DESCRIPTOR.oneofs_by_name["event"].fields
    numbers = {field.name: field.number for field in fields}
    assert numbers["account_registered"] == 13
    assert numbers["name_claimed"] == 14
    assert numbers["sessions_revoked"] == 15
    assert numbers["table_expired"] == 16
    assert numbers["party_formed"] == 17
    assert numbers["match_seated"] == 26
    assert numbers["queue_sealed"] == 27
    assert numbers["queue_generation_begun"] == 29
    assert sorted(numbers.values()) == list(range(1, 30))


def test_an_empty_wrapper_is_refused() -> None:
    with pytest.raises(CodecError):
        LOBBY_EVENTS.decode(lobby_events_pb2.LobbyEvent())


def test_a_real_hash_round_trips() -> None:
    event = AccountRegistered("p-1", "Ann", hash_password("correct horse battery"), guest=False)
    assert through_the_wire(event) == event


def test_every_event_of_a_table_round_trips() -> None:
    """The events `decide` makes along a table's life, through two matches of each game, with a covered
    player leaving and a substitute leaving (each time a new bot plays on; the covered seat's keeps the
    lease)."""
    for game, seats in (("zlj", 6), ("tractor", 4)):
        state = table.Table()
        script: list[Any] = [
            OpenTable("t1", "Table", game, "owner", tournament=game == "tractor"),
            TakeSeat("ann", "Ann"),
            TakeSeat("bo", "Bo"),
            SwapSeats("owner", 0, 1),
            *(AddBot("owner") for _ in range(seats - 2)),
            RemovePlayer("owner", seats - 1),
            AddBot("owner", seats - 1),
            SetReady("ann", True),
            SetReady("bo", True),
            StartMatch("owner"),
            CoverSeat(0),
            LeaseSeat("r1", 0, now=5, until=35),
            ReturnToSeat("bo"),
            Substitute("owner", 1, "cy", "Cy"),
            LeaveSeat("cy"),
            FinishMatch("t1-m1", Result(winner_team=None, levels=(5, 5))),
            SetReady("bo", True),
            StartMatch("owner"),
            CoverSeat(0),
            LeaseSeat("r2", 0, now=50, until=80),
            LeaveSeat("bo"),
            FinishMatch("t1-m2", Result(team_points=(1, -1), individual_points=(1,) * seats)),
        ]
        kinds = set()
        for command in script:
            for event in decide(state, command):
                kinds.add(type(event).__name__)
                assert through_the_wire(event) == event
                state = evolve(state, event)
        # a player's table left empty expires
        idle = table.Table()
        for command in (OpenTable("t2", "Empty", game, "account-x"), table.ExpireTable(1800)):
            for event in decide(idle, command):
                kinds.add(type(event).__name__)
                assert through_the_wire(event) == event
                idle = evolve(idle, event)
        assert idle.status is table.Status.EXPIRED
        assert state.matches == 2
        assert len(kinds) == len(
            typing.get_args(table.Event)
        )  # every table event (not the accounts', parties', queue's)
        bots = [f"bot-t1-{n}" for n in range(seats - 2)]  # seated after the swap; the last removed and re-added
        # bot seats-2 took Cy's seat over in the first match, bot seats-1 Bo's covered seat in the second
        assert [s.player_id for s in state.seats] == [f"bot-t1-{seats - 1}", f"bot-t1-{seats - 2}", *bots]
        assert not any(s.player_id.startswith("cover-") for s in state.seats)


# --- random events --------------------------------------------------------------------------------------

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=20)
int32 = st.integers(-(2**31), 2**31 - 1)
int32s = st.lists(int32, max_size=6).map(tuple)
zlj_options = st.builds(
    zlj_model.Options,
    deals=st.integers(0, 2**31 - 1),
    reverse_tribute=st.sampled_from(zlj_model.ReverseTribute),
    resist=st.sampled_from(zlj_model.Resist),
    turn_seconds=st.integers(0, 2**31 - 1),
)
tractor_options = st.builds(
    tractor_model.Options, round_minutes=st.integers(0, 2**31 - 1), turn_seconds=st.integers(0, 2**31 - 1)
)
results = st.builds(Result, team_points=int32s, individual_points=int32s, winner_team=st.none() | int32, levels=int32s)
events = st.one_of(
    st.builds(
        table.TableOpened,
        text,
        text,
        st.sampled_from(["zlj", "tractor"]),
        text,
        st.booleans(),
        st.none() | zlj_options,
        st.none() | tractor_options,
    ),
    st.builds(table.SeatTaken, int32, text, text),
    st.builds(table.SeatLeft, int32, text, st.booleans(), st.booleans()),
    st.builds(table.BotSeated, int32, text),
    st.builds(table.SeatsSwapped, int32, int32),
    st.builds(table.Substituted, int32, text, text),
    st.builds(table.ReadyChanged, int32, st.booleans()),
    st.builds(
        table.MatchStarted,
        text,
        int32,
        st.lists(text, max_size=6).map(tuple),
        st.sampled_from(["zlj", "tractor"]),
        st.none() | zlj_options,
        st.none() | tractor_options,
    ),
    st.builds(table.SeatCovered, int32),
    st.builds(table.SeatReturned, int32),
    st.builds(table.SeatLeased, int32, text, st.integers(-(2**63), 2**63 - 1)),
    st.builds(table.MatchFinished, text, results),
    st.builds(AccountRegistered, text, text, text, st.booleans()),
    st.builds(NameClaimed, text, text, text),
)


@settings(max_examples=examples(300), deadline=None)
@given(events)
def test_random_events_round_trip(event: Any) -> None:
    assert through_the_wire(event) == event


def test_a_tables_mode_is_the_contracts_match_mode_on_the_wire() -> None:
    started = table.MatchStarted("t1-m1", 1, ("a", "b"), "zlj", None, None, mode=table.Mode.CASUAL)
    assert encoded(started).match_started.mode == lobby_events_pb2.MATCH_MODE_CASUAL
    opened = table.TableOpened("t1", "T", "zlj", "o", False, None, None, mode=table.Mode.RANKED)
    assert encoded(opened).table_opened.mode == lobby_events_pb2.MATCH_MODE_RANKED
    assert through_the_wire(opened) == opened
    unrated = table.TableOpened("t1", "T", "zlj", "o", False, None, None)
    assert not encoded(unrated).table_opened.HasField("mode")
    assert through_the_wire(unrated).mode is None
