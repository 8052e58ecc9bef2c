"""The lobby's table aggregate (`paiju.lobby.table`): every command's events, every refusal, a whole table's
life, and a property test over random command sequences. Pure: no store, no clock, no network."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paiju.lobby.table import (
    DELAYED_MOVES,
    QUEUE_OWNER,
    SEATS,
    TOURNAMENT_TURN_SECONDS,
    AddBot,
    BotSeated,
    CoverSeat,
    FinishMatch,
    LeaseSeat,
    LeaveSeat,
    LobbyError,
    MatchFinished,
    MatchStarted,
    Mode,
    OpenTable,
    ReadyChanged,
    RemovePlayer,
    Result,
    ReturnToSeat,
    Seat,
    SeatCovered,
    SeatLeased,
    SeatLeft,
    SeatReturned,
    SeatsSwapped,
    SeatTaken,
    SetReady,
    Spectators,
    StartMatch,
    Status,
    Substitute,
    Substituted,
    SwapSeats,
    Table,
    TableOpened,
    TakeSeat,
    bot_id,
    bot_taking_over,
    cover_id,
    decide,
    engine_seats,
    evolve,
    expirable,
    game_id_of,
    match_options,
    new_bot_id,
    replay,
)
from paiju.platform.edge import CODES
from paiju.platform.errors import Reason, Refused
from paiju.platform.repository import legacy_repr
from paiju.rules.tractor import model as tractor_model
from paiju.rules.zlj import model as zlj_model

from ..support.profiles import examples

T = "t1"
OWNER = "owner"
ANN, BO, CY = "p-ann", "p-bo", "p-cy"
NAMES = {OWNER: "Olga", ANN: "Ann", BO: "Bo", CY: "Cy", "p-dee": "Dee"}
KINDS = {"invalid", "precondition", "permission", "not_found"}
"""The kinds a command at an open table may be refused with (``already_exists`` is only `OpenTable`'s)."""
ZLJ_RESULT = Result(team_points=(3, -3), individual_points=(2, -1, 1, 0, -1, -1))


# --- helpers --------------------------------------------------------------------------------------------


def act(table: Table, command: Any) -> tuple[Table, list[Any]]:
    """``table`` after ``command``, and the command's events."""
    events = decide(table, command)
    for event in events:
        table = evolve(table, event)
    return table, events


def run(commands: Iterable[Any], table: Table | None = None) -> Table:
    table = Table() if table is None else table
    for command in commands:
        table, _ = act(table, command)
    return table


def refused(table: Table, command: Any, kind: str, *fragments: str) -> LobbyError:
    """``command`` is refused at ``table`` with ``kind`` and a reason naming every fragment; nothing changes."""
    before = copy.deepcopy(table)
    with pytest.raises(LobbyError) as info:
        decide(table, command)
    error = info.value
    assert kind_of(error) == kind, error.message
    assert error.message == str(error)
    assert error.message, "a refusal says why"
    for fragment in fragments:
        assert fragment in error.message, (fragment, error.message)
    assert table == before
    return error


def opened(game: str = "zlj", **options: Any) -> Table:
    return run([OpenTable(T, "Friday table", game, OWNER, **options)])


def take(player: str, seat: int | None = None) -> TakeSeat:
    return TakeSeat(player, NAMES.get(player, player), seat)


def full(game: str = "zlj", ready: bool = True) -> Table:
    """Ann, Bo and Cy in seats 0..2, bots 0, 1, ... in the other seats; everyone ready when ``ready``."""
    table = run([take(ANN, 0), take(BO, 1), take(CY, 2)], opened(game))
    table = run([AddBot(OWNER) for _ in range(SEATS[game] - 3)], table)
    if ready:
        table = run([SetReady(p, True) for p in (ANN, BO, CY)], table)
    return table


def playing(game: str = "zlj") -> Table:
    return run([StartMatch(OWNER)], full(game))


def bot(number: int, runner: str = "", lease_until: int = 0) -> Seat:
    """The seat of the table's bot ``number`` (``bot-t1-<number>``, shown as "Bot <number>")."""
    return Seat(bot_id(T, number), f"Bot {number}", bot=True, ready=True, runner=runner, lease_until=lease_until)


def started(events: list[Any]) -> MatchStarted:
    assert len(events) == 1
    event = events[0]
    assert isinstance(event, MatchStarted)
    return event


# --- helpers of the module ------------------------------------------------------------------------------


def test_bot_cover_and_game_ids() -> None:
    assert bot_id("t9", 0) == "bot-t9-0"  # the table's bot number 0, whatever its seat
    assert bot_id("t9", 5) == "bot-t9-5"
    assert bot_id("a-b", 12) == "bot-a-b-12"
    assert cover_id("t9", 0) == "cover-t9-0"  # the bot covering seat 0's absent player
    assert cover_id("t9", 5) == "cover-t9-5"
    assert game_id_of("t9", 1) == "t9-m1"
    assert game_id_of("t9", 12) == "t9-m12"
    assert SEATS == {"zlj": 6, "tractor": 4}


def test_new_bot_id_is_the_lowest_number_no_seat_uses() -> None:
    assert new_bot_id(opened()) == "bot-t1-0"
    assert new_bot_id(run([take(ANN, 0), take(BO, 1)], opened())) == "bot-t1-0"  # numbers are not seats
    table = run([AddBot(OWNER, 4), AddBot(OWNER, 0), AddBot(OWNER, 2)], opened())
    assert [s.player_id for s in table.seats] == ["bot-t1-1", "", "bot-t1-2", "", "bot-t1-0", ""]
    assert new_bot_id(table) == "bot-t1-3"
    table = run([RemovePlayer(OWNER, 0)], table)  # bot 1 goes: its number is free again
    assert new_bot_id(table) == "bot-t1-1"
    assert new_bot_id(run([AddBot(OWNER) for _ in range(5)], opened())) == "bot-t1-5"
    assert new_bot_id(run([AddBot(OWNER) for _ in range(3)], opened("tractor"))) == "bot-t1-3"


def test_new_bot_id_after_a_swap_is_fresh() -> None:
    """Regression: ids were ``bot-<table>-<seat>``, so a bot swapped out of a seat and a bot later seated
    there had the same id. Now a new bot gets the lowest number no seat uses, wherever the others sit."""
    table = run([AddBot(OWNER, 0), SwapSeats(OWNER, 0, 3)], opened())
    assert table.seats[3] == bot(0)
    assert new_bot_id(table) == "bot-t1-1"
    table, events = act(table, AddBot(OWNER, 0))
    assert events == [BotSeated(0, "bot-t1-1")]
    assert (table.seats[0], table.seats[3]) == (bot(1), bot(0))
    table, events = act(run([SwapSeats(OWNER, 3, 5)], table), AddBot(OWNER, 3))
    assert events == [BotSeated(3, "bot-t1-2")]
    assert [s.player_id for s in table.seats] == ["bot-t1-1", "", "", "bot-t1-2", "", "bot-t1-0"]


def test_bot_taking_over_is_always_a_new_bot() -> None:
    """Whether or not the seat is covered: a cover id is only the engine's name for a covered seat, never
    the id of a seated bot."""
    table = playing()  # bots 0, 1, 2 in seats 3, 4, 5
    assert bot_taking_over(table, 1) == "bot-t1-3"
    assert bot_taking_over(table, 0) == "bot-t1-3"
    covered = run([CoverSeat(1)], table)
    assert bot_taking_over(covered, 1) == new_bot_id(covered) == "bot-t1-3"
    assert bot_taking_over(covered, 1) != cover_id(T, 1)
    assert bot_taking_over(covered, 0) == "bot-t1-3"
    returned = run([ReturnToSeat(BO)], covered)
    assert bot_taking_over(returned, 1) == "bot-t1-3"
    gone = run([LeaveSeat(ANN)], table)  # bot 3 took seat 0 over
    assert bot_taking_over(gone, 2) == "bot-t1-4"


def test_seat_free_and_played_by_bot() -> None:
    assert Seat().free
    assert not Seat("p", "P").free
    assert not Seat("p", "P").played_by_bot
    assert Seat("p", "P", covered=True).played_by_bot
    assert bot(2).played_by_bot
    assert bot(2, "r1", 30).played_by_bot


def test_seat_of_finds_people_not_bots() -> None:
    table = full()
    assert table.seat_of(ANN) == 0
    assert table.seat_of(CY) == 2
    assert table.seat_of("p-nobody") is None
    assert table.seat_of(bot_id(T, 0)) is None
    assert table.seat_of(cover_id(T, 0)) is None


def test_tables_and_seats_are_frozen() -> None:
    table = full()
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.status = Status.PLAYING  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.seats[0].ready = False  # type: ignore[misc]
    assert isinstance(table.seats, tuple)


def test_lobby_error_carries_its_reason_and_message() -> None:
    error = LobbyError(Reason.SEAT_TAKEN, "seat 3 is taken", {"seat": 3})
    assert (error.reason, error.message, str(error), error.metadata) == (
        Reason.SEAT_TAKEN,
        "seat 3 is taken",
        "seat 3 is taken",
        {"seat": "3"},
    )


# --- OpenTable ------------------------------------------------------------------------------------------


def test_open_a_zlj_table() -> None:
    table, events = act(Table(), OpenTable(T, "Friday table", "zlj", OWNER))
    assert events == [TableOpened(T, "Friday table", "zlj", OWNER, False, None, None)]
    assert table == Table(T, "Friday table", "zlj", OWNER, seats=(Seat(),) * 6, status=Status.OPEN)


def test_open_a_tractor_table_with_options_and_the_tournament_preset() -> None:
    options = tractor_model.Options(round_minutes=90)
    table, events = act(Table(), OpenTable(T, "Final", "tractor", OWNER, tournament=True, tractor_options=options))
    delayed = Spectators(delay_moves=DELAYED_MOVES)  # a tournament table's spectators are delayed (D-SPEC-3)
    assert events == [TableOpened(T, "Final", "tractor", OWNER, True, None, options, spectators=delayed)]
    assert len(table.seats) == 4
    assert table.tournament
    assert table.tractor_options == options
    assert table.zlj_options is None
    assert (table.status, table.matches, table.game_id, table.last_result) == (Status.OPEN, 0, "", None)


def test_open_keeps_zlj_options() -> None:
    options = zlj_model.Options(deals=3, reverse_tribute=zlj_model.ReverseTribute.TEAM_TOTAL)
    table = run([OpenTable(T, "x1", "zlj", OWNER, zlj_options=options)])
    assert table.zlj_options == options


def test_open_trims_the_name() -> None:
    table, events = act(Table(), OpenTable(T, "  Friday \t", "zlj", OWNER))
    assert events[0].name == "Friday"
    assert table.name == "Friday"


@pytest.mark.parametrize("name", ["x", "x" * 60, "砸六家 桌"])
def test_open_accepts_names_of_1_to_60_characters(name: str) -> None:
    assert run([OpenTable(T, name, "zlj", OWNER)]).name == name


@pytest.mark.parametrize("name", ["", "   ", "\t\n", "x" * 61, " " + "x" * 61 + " "])
def test_open_refuses_an_empty_or_long_name(name: str) -> None:
    refused(Table(), OpenTable(T, name, "zlj", OWNER), "invalid", "1..60 characters")


@pytest.mark.parametrize(
    "name",
    [
        "Fri\nday",
        "Fri\tday",
        "Fri\rday",
        "Fri\x00day",
        "Fri\x7fday",
        "Fri\x85day",  # next line (C1)
        "Fri\u2028day",  # line separator
        "Fri\u2029day",  # paragraph separator
        "Fri\u200bday",  # zero-width space (format)
        "Fri\u202eday",  # right-to-left override (format)
        "\ufeffFriday",  # byte order mark (format): not trimmed
        "Fri\ue000day",  # private use
    ],
)
def test_open_refuses_control_characters_in_the_name(name: str) -> None:
    refused(Table(), OpenTable(T, name, "zlj", OWNER), "invalid", "no control characters")


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("\tFriday\n", "Friday"),  # control characters around the name are trimmed, not refused
        ("\u2028Friday\u3000", "Friday"),
        ("Friday  table", "Friday  table"),
        (" " * 5 + "x" * 60 + "\n" * 5, "x" * 60),
    ],
)
def test_open_checks_the_trimmed_name(name: str, kept: str) -> None:
    table, events = act(Table(), OpenTable(T, name, "zlj", OWNER))
    assert events[0].name == kept
    assert table.name == kept


@pytest.mark.parametrize(
    "name",
    [
        "决赛\u3000第一桌",  # ideographic space
        "Friday\u00a0table",  # no-break space
        "Friday\u202ftable",  # narrow no-break space
        "Friday\u2009table",  # thin space
        "决赛\u3000\u3000第一桌\u00a0A",
    ],
)
def test_open_accepts_space_characters_inside_the_name(name: str) -> None:
    """Regression: every character of category Z but the ASCII space was refused, so a table named
    "决赛　第一桌" (with U+3000) or with a no-break space could not be opened. Spaces are kept as typed."""
    table, events = act(Table(), OpenTable(T, name, "zlj", OWNER))
    assert events[0].name == name
    assert table.name == name


def test_open_accepts_an_ideographic_space_but_not_a_line_separator() -> None:
    assert run([OpenTable(T, "决赛\u3000第一桌", "zlj", OWNER)]).name == "决赛\u3000第一桌"
    assert run([OpenTable(T, "Friday\u00a0table", "tractor", OWNER)]).name == "Friday\u00a0table"
    refused(Table(), OpenTable(T, "决赛\u2028第一桌", "zlj", OWNER), "invalid", "no control characters")
    refused(Table(), OpenTable(T, "Friday\u2028table", "zlj", OWNER), "invalid", "no control characters")


def test_open_refuses_the_other_games_options() -> None:
    zlj, tractor = zlj_model.Options(deals=3), tractor_model.Options(round_minutes=90)
    refused(Table(), OpenTable(T, "F", "zlj", OWNER, tractor_options=tractor), "invalid", "zlj options only")
    refused(Table(), OpenTable(T, "F", "tractor", OWNER, zlj_options=zlj), "invalid", "tractor options only")
    both = OpenTable(T, "F", "zlj", OWNER, zlj_options=zlj, tractor_options=tractor)
    refused(Table(), both, "invalid", "a zlj table takes zlj options only")
    both = OpenTable(T, "F", "tractor", OWNER, zlj_options=zlj, tractor_options=tractor)
    refused(Table(), both, "invalid", "a tractor table takes tractor options only")
    # default options of the other game are refused too: present is present
    refused(Table(), OpenTable(T, "F", "zlj", OWNER, tractor_options=tractor_model.Options()), "invalid", "zlj")
    assert run([OpenTable(T, "F", "zlj", OWNER, zlj_options=zlj)]).zlj_options == zlj
    assert run([OpenTable(T, "F", "tractor", OWNER, tractor_options=tractor)]).tractor_options == tractor


@pytest.mark.parametrize("game", ["poker", "", "ZLJ", "Tractor"])
def test_open_refuses_an_unknown_game(game: str) -> None:
    refused(Table(), OpenTable(T, "Friday", game, OWNER), "invalid", "zlj or tractor")


def test_open_refuses_an_existing_table() -> None:
    refused(opened(), OpenTable(T, "Again", "zlj", OWNER), "already_exists", T, "exists already")
    refused(playing(), OpenTable(T, "Again", "tractor", "p-other"), "already_exists", T)


@pytest.mark.parametrize("padded", ["x" * 60 + " ", " " + "x" * 60, "  " + "x" * 60 + "\t"])
def test_open_measures_the_name_it_keeps(padded: str) -> None:
    """Regression: the 60-character limit was checked on the untrimmed name, though the trimmed name is
    what is kept, so a 60-character name with a trailing space was refused."""
    table, events = act(Table(), OpenTable(T, padded, "zlj", OWNER))
    assert events[0].name == "x" * 60
    assert table.name == "x" * 60


@pytest.mark.parametrize(
    "command",
    [
        take(ANN),
        LeaveSeat(ANN),
        AddBot(OWNER),
        RemovePlayer(OWNER, 0),
        SwapSeats(OWNER, 0, 1),
        Substitute(OWNER, 0, ANN, "Ann"),
        SetReady(ANN, True),
        StartMatch(OWNER),
        CoverSeat(0),
        ReturnToSeat(ANN),
        LeaseSeat("r1", 0, now=0, until=10),
        FinishMatch("t1-m1", ZLJ_RESULT),
    ],
    ids=lambda command: type(command).__name__,
)
def test_every_command_but_open_needs_a_table(command: Any) -> None:
    refused(Table(), command, "not_found", "no such table")


def test_refuses_what_is_not_a_command() -> None:
    refused(opened(), "take a seat", "invalid", "not a lobby command", "str")
    refused(opened(), SeatTaken(0, ANN, "Ann"), "invalid", "SeatTaken")


def test_evolve_refuses_what_is_not_an_event() -> None:
    with pytest.raises(TypeError, match="TakeSeat"):
        evolve(opened(), take(ANN))


# --- TakeSeat -------------------------------------------------------------------------------------------


def test_take_the_first_free_seat() -> None:
    table = run([AddBot(OWNER, 0), take(BO, 2)], opened())
    table, events = act(table, take(ANN))
    assert events == [SeatTaken(1, ANN, "Ann")]
    assert table.seats[1] == Seat(ANN, "Ann")
    assert table.seat_of(ANN) == 1


def test_take_a_chosen_seat() -> None:
    table, events = act(opened(), take(ANN, 4))
    assert events == [SeatTaken(4, ANN, "Ann")]
    assert table.seats[4] == Seat(ANN, "Ann", ready=False)
    assert all(s.free for i, s in enumerate(table.seats) if i != 4)


def test_take_a_seat_refusals() -> None:
    table = run([take(ANN, 1), AddBot(OWNER, 2)], opened())
    refused(table, take(ANN), "precondition", "you sit in seat 1 already")
    refused(table, take(ANN, 3), "precondition", "seat 1 already")
    refused(table, take(BO, 1), "precondition", "seat 1 is taken")
    refused(table, take(BO, 2), "precondition", "seat 2 is taken")
    refused(table, take(BO, 6), "invalid", "0..5", "6")
    refused(table, take(BO, -1), "invalid", "0..5", "-1")
    refused(opened("tractor"), take(BO, 4), "invalid", "tractor", "0..3", "4")
    refused(full(), take("p-dee"), "precondition", "the table is full")
    refused(playing(), take("p-dee"), "precondition", "a match is being played", "take a seat")


def test_take_a_seat_after_a_match() -> None:
    table = run([LeaveSeat(ANN), FinishMatch("t1-m1", ZLJ_RESULT)], playing())
    table, events = act(table, RemovePlayer(OWNER, 0))  # the bot that took Ann's seat over
    assert events == [SeatLeft(0, "bot-t1-3", removed=True, bot=False)]
    table, events = act(table, take("p-dee"))
    assert events == [SeatTaken(0, "p-dee", "Dee")]


# --- LeaveSeat ------------------------------------------------------------------------------------------


def test_leave_a_seat_before_a_match_frees_it() -> None:
    table = run([take(ANN, 3), SetReady(ANN, True)], opened())
    table, events = act(table, LeaveSeat(ANN))
    assert events == [SeatLeft(3, ANN, removed=False, bot=False)]
    assert table.seats[3] == Seat()
    assert table.seat_of(ANN) is None
    table, _ = act(table, take(ANN, 3))
    assert not table.seats[3].ready  # readiness does not outlive the seat


def test_leave_during_a_match_hands_the_seat_to_a_new_bot() -> None:
    """Bots 0, 1 and 2 sit in seats 3..5: the bot taking Bo's seat over is a new one, bot 3 (no lease)."""
    table, events = act(playing(), LeaveSeat(BO))
    assert events == [SeatLeft(1, BO, removed=False, bot=True)]
    assert table.seats[1] == bot(3) == Seat("bot-t1-3", "Bot 3", bot=True, ready=True)
    assert table.seat_of(BO) is None
    assert engine_seats(table) == (ANN, "bot-t1-3", CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")
    assert table.status is Status.PLAYING
    table, _ = act(table, LeaveSeat(ANN))
    assert table.seats[0] == bot(4)
    assert engine_seats(table) == ("bot-t1-4", "bot-t1-3", CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")


def test_leave_during_a_match_while_covered_hands_the_seat_to_a_new_bot_keeping_the_lease() -> None:
    """A new bot, bot 3, plays Bo's covered seat on; the runner that played the cover keeps its lease."""
    table = run([CoverSeat(1), LeaseSeat("r1", 1, now=10, until=40)], playing())
    assert engine_seats(table)[1] == "cover-t1-1"
    table, events = act(table, LeaveSeat(BO))
    assert events == [SeatLeft(1, BO, removed=False, bot=True)]
    assert table.seats[1] == bot(3, "r1", 40)
    assert table.seats[1] == Seat("bot-t1-3", "Bot 3", bot=True, ready=True, runner="r1", lease_until=40)
    assert table.seat_of(BO) is None
    assert engine_seats(table) == (ANN, "bot-t1-3", CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")
    assert cover_id(T, 1) not in engine_seats(table)  # the cover id ended with the cover
    # r1 renews; r2 waits for the lease to expire; the bot cannot be removed or covered
    assert decide(table, LeaseSeat("r1", 1, now=30, until=60)) == [SeatLeased(1, "r1", 60)]
    refused(table, LeaseSeat("r2", 1, now=39, until=60), "precondition", "seat 1 is leased to another runner")
    assert decide(table, LeaseSeat("r2", 1, now=40, until=70)) == [SeatLeased(1, "r2", 70)]
    refused(table, RemovePlayer(OWNER, 1), "precondition", "a bot plays this seat until the match ends")
    assert decide(table, CoverSeat(1)) == []
    assert decide(table, ReturnToSeat(BO)) == []
    # after the match it stays as one of the table's bots, its lease ended
    table = run([FinishMatch("t1-m1", ZLJ_RESULT)], table)
    assert table.seats[1] == bot(3)


def test_leave_during_a_match_a_covered_seat_and_an_uncovered_one() -> None:
    """Both seats get new bots, numbered in turn; only the one that was covered keeps a lease."""
    table = run([CoverSeat(0), LeaseSeat("r1", 0, now=0, until=50), LeaveSeat(ANN), LeaveSeat(BO)], playing())
    assert table.seats[:2] == (bot(3, "r1", 50), bot(4))
    assert engine_seats(table) == ("bot-t1-3", "bot-t1-4", CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")


def test_leave_while_covered_without_a_lease_seats_a_bot_without_one() -> None:
    table, _ = act(run([CoverSeat(2)], playing()), LeaveSeat(CY))
    assert table.seats[2] == bot(3)
    refused(table, RemovePlayer(OWNER, 2), "precondition", "a bot plays this seat")
    assert decide(table, LeaseSeat("r2", 2, now=0, until=30)) == [SeatLeased(2, "r2", 30)]


def test_a_lease_ended_by_a_return_does_not_come_back_when_the_player_leaves() -> None:
    """Cy is covered (r1 leases the seat), comes back (the lease ends), then leaves: the new bot has no lease."""
    table = run([CoverSeat(2), LeaseSeat("r1", 2, now=0, until=50), ReturnToSeat(CY), LeaveSeat(CY)], playing())
    assert table.seats[2] == bot(3)
    assert decide(table, LeaseSeat("r2", 2, now=10, until=40)) == [SeatLeased(2, "r2", 40)]


def test_leave_refusals() -> None:
    refused(opened(), LeaveSeat(ANN), "precondition", "not seated")
    refused(full(), LeaveSeat(bot_id(T, 0)), "precondition", "not seated")
    taken_over = run([CoverSeat(0), LeaveSeat(ANN)], playing())
    refused(taken_over, LeaveSeat(cover_id(T, 0)), "precondition", "not seated")
    refused(taken_over, LeaveSeat(bot_id(T, 3)), "precondition", "not seated")
    refused(playing(), LeaveSeat("p-dee"), "precondition", "not seated")


# --- AddBot ---------------------------------------------------------------------------------------------


def test_add_a_bot_to_the_first_free_seat() -> None:
    table, events = act(run([take(ANN, 0)], opened()), AddBot(OWNER))
    assert events == [BotSeated(1, "bot-t1-0")]
    assert table.seats[1] == Seat("bot-t1-0", "Bot 0", bot=True, ready=True)
    table, events = act(table, AddBot(OWNER))
    assert events == [BotSeated(2, "bot-t1-1")]
    assert table.seats[2] == Seat("bot-t1-1", "Bot 1", bot=True, ready=True)


def test_add_a_bot_to_a_chosen_seat() -> None:
    table, events = act(opened(), AddBot(OWNER, 5))
    assert events == [BotSeated(5, "bot-t1-0")]
    assert table.seats[5] == bot(0)
    table, events = act(table, AddBot(OWNER, 2))
    assert events == [BotSeated(2, "bot-t1-1")]
    assert table.seats[2] == bot(1)


def test_a_bot_is_named_after_its_id() -> None:
    """`BotSeated` carries the id; the name is "Bot <n>" of it, whatever the seat ("Bot for seat <n>" for a cover)."""
    assert evolve(opened(), BotSeated(4, "bot-t1-7")).seats[4] == Seat("bot-t1-7", "Bot 7", bot=True, ready=True)
    assert evolve(opened(), BotSeated(0, "bot-t1-12")).seats[0].name == "Bot 12"
    covering = Seat("cover-t1-3", "Bot for seat 3", bot=True, ready=True)
    assert evolve(opened(), BotSeated(0, "cover-t1-3")).seats[0] == covering


def test_a_removed_bots_number_is_reused() -> None:
    table, events = act(full(), RemovePlayer(OWNER, 3))
    assert events == [SeatLeft(3, "bot-t1-0", removed=True, bot=False)]
    table, events = act(table, AddBot(OWNER))
    assert events == [BotSeated(3, "bot-t1-0")]
    assert table.seats == full().seats


def test_add_a_bot_refusals() -> None:
    table = run([take(ANN, 0)], opened())
    refused(table, AddBot(ANN), "permission", "owner")
    refused(table, AddBot(ANN, 7), "permission", "owner")  # who asks is checked first
    refused(table, AddBot(OWNER, 0), "precondition", "seat 0 is taken")
    refused(table, AddBot(OWNER, 6), "invalid", "0..5", "6")
    refused(full(), AddBot(OWNER), "precondition", "full")
    refused(playing(), AddBot(OWNER), "precondition", "a match is being played", "add bots")


# --- RemovePlayer ---------------------------------------------------------------------------------------


def test_remove_a_person_before_a_match() -> None:
    table, events = act(full(), RemovePlayer(OWNER, 1))
    assert events == [SeatLeft(1, BO, removed=True, bot=False)]
    assert table.seats[1] == Seat()


def test_remove_a_bot_before_a_match() -> None:
    table, events = act(full(), RemovePlayer(OWNER, 4))
    assert events == [SeatLeft(4, bot_id(T, 1), removed=True, bot=False)]
    assert table.seats[4] == Seat()


def test_remove_a_person_during_a_match_seats_a_new_bot() -> None:
    table, events = act(playing(), RemovePlayer(OWNER, 2))
    assert events == [SeatLeft(2, CY, removed=True, bot=True)]
    assert table.seats[2] == bot(3)
    assert engine_seats(table)[2] == "bot-t1-3"


def test_remove_a_covered_person_during_a_match_seats_a_new_bot_keeping_the_lease() -> None:
    table = run([CoverSeat(2), LeaseSeat("r2", 2, now=5, until=35)], playing())
    table, events = act(table, RemovePlayer(OWNER, 2))
    assert events == [SeatLeft(2, CY, removed=True, bot=True)]
    assert table.seats[2] == bot(3, "r2", 35)
    assert engine_seats(table)[2] == "bot-t1-3"
    refused(table, LeaseSeat("r1", 2, now=34, until=60), "precondition", "seat 2 is leased to another runner")


def test_remove_refusals() -> None:
    table = run([take(ANN, 0)], opened())
    refused(table, RemovePlayer(ANN, 0), "permission", "owner")
    refused(table, RemovePlayer(OWNER, 3), "precondition", "seat 3 is free")
    refused(table, RemovePlayer(OWNER, 6), "invalid", "0..5")
    refused(table, RemovePlayer(OWNER, -1), "invalid", "-1")
    refused(playing(), RemovePlayer(OWNER, 4), "precondition", "a bot plays this seat until the match ends")


# --- SwapSeats ------------------------------------------------------------------------------------------


def test_swap_two_seats_moves_people_with_their_readiness() -> None:
    table = run([SetReady(BO, False)], full())
    table, events = act(table, SwapSeats(OWNER, 0, 1))
    assert events == [SeatsSwapped(0, 1)]
    assert table.seats[0] == Seat(BO, "Bo")
    assert table.seats[1] == Seat(ANN, "Ann", ready=True)


def test_swap_with_a_free_seat_moves_the_person() -> None:
    table, events = act(run([take(ANN, 0)], opened()), SwapSeats(OWNER, 0, 5))
    assert events == [SeatsSwapped(0, 5)]
    assert table.seats[0].free
    assert table.seat_of(ANN) == 5


def test_swap_during_a_match() -> None:
    """Between deals (the engine is asked first): the lobby records it whatever the status."""
    table, events = act(playing(), SwapSeats(OWNER, 2, 0))
    assert events == [SeatsSwapped(2, 0)]
    assert (table.seat_of(CY), table.seat_of(ANN)) == (0, 2)
    assert engine_seats(table)[:3] == (CY, BO, ANN)


def test_swap_refusals() -> None:
    refused(full(), SwapSeats(ANN, 0, 1), "permission", "owner")
    refused(full(), SwapSeats(OWNER, 2, 2), "invalid", "two different seats")
    refused(full(), SwapSeats(OWNER, 0, 6), "invalid", "0..5", "6")
    refused(full(), SwapSeats(OWNER, -1, 0), "invalid", "-1")


# --- Substitute -----------------------------------------------------------------------------------------


def test_substitute_a_person_before_a_match() -> None:
    """Before a match the substitute says ready like everyone (Bo was ready: Dee is not)."""
    table, events = act(full(), Substitute(OWNER, 1, "p-dee", "Dee"))
    assert events == [Substituted(1, "p-dee", "Dee")]
    assert table.seats[1] == Seat("p-dee", "Dee", ready=False)
    assert table.seat_of(BO) is None
    assert table.seat_of("p-dee") == 1
    refused(table, StartMatch(OWNER), "precondition", "not everyone is ready: Dee")
    table, events = act(table, SetReady("p-dee", True))
    assert events == [ReadyChanged(1, True)]
    assert started(decide(table, StartMatch(OWNER))).players == (ANN, "p-dee", CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")


def test_substitute_a_bot_before_a_match() -> None:
    table, events = act(full(), Substitute(OWNER, 4, "p-dee", "Dee"))
    assert events == [Substituted(4, "p-dee", "Dee")]
    assert table.seats[4] == Seat("p-dee", "Dee")
    refused(table, StartMatch(OWNER), "precondition", "not everyone is ready: Dee")


def test_substitute_between_matches_must_say_ready() -> None:
    table = run([FinishMatch("t1-m1", ZLJ_RESULT), SetReady(ANN, True), SetReady(CY, True)], playing())
    table, _ = act(table, Substitute(OWNER, 1, "p-dee", "Dee"))
    assert table.status is Status.FINISHED
    assert table.seats[1] == Seat("p-dee", "Dee", ready=False)
    refused(table, StartMatch(OWNER), "precondition", "not everyone is ready: Dee")
    table = run([SetReady("p-dee", True), StartMatch(OWNER)], table)
    assert (table.status, table.matches) == (Status.PLAYING, 2)


def test_substitute_a_bot_during_a_match() -> None:
    """During a match the substitute plays at once: ready (and may not say otherwise until it ends)."""
    table, events = act(playing(), Substitute(OWNER, 4, "p-dee", "Dee"))
    assert events == [Substituted(4, "p-dee", "Dee")]
    assert table.seats[4] == Seat("p-dee", "Dee", ready=True)
    assert engine_seats(table)[4] == "p-dee"
    refused(table, SetReady("p-dee", False), "precondition", "a match is being played")


def test_substitute_a_person_during_a_match() -> None:
    table, _ = act(playing(), Substitute(OWNER, 1, "p-dee", "Dee"))
    assert table.seats[1] == Seat("p-dee", "Dee", ready=True)
    assert engine_seats(table) == (ANN, "p-dee", CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")


def test_substitute_a_covered_seat_ends_the_cover_and_its_lease() -> None:
    table = run([CoverSeat(1), LeaseSeat("r1", 1, now=0, until=50)], playing())
    table, _ = act(table, Substitute(OWNER, 1, "p-dee", "Dee"))
    assert table.seats[1] == Seat("p-dee", "Dee", ready=True)
    assert engine_seats(table)[1] == "p-dee"


def test_substitute_refusals() -> None:
    table = run([take(ANN, 0), take(BO, 1)], opened())
    refused(table, Substitute(ANN, 1, "p-dee", "Dee"), "permission", "owner")
    refused(table, Substitute(OWNER, 3, "p-dee", "Dee"), "precondition", "seat 3 is free")
    refused(table, Substitute(OWNER, 0, BO, "Bo"), "precondition", "Bo sits at this table already")
    refused(table, Substitute(OWNER, 0, ANN, "Ann"), "precondition", "Ann sits at this table already")
    refused(table, Substitute(OWNER, 9, "p-dee", "Dee"), "invalid", "0..5", "9")


# --- SetReady -------------------------------------------------------------------------------------------


def test_say_ready_and_not_ready() -> None:
    table = run([take(ANN, 2)], opened())
    table, events = act(table, SetReady(ANN, True))
    assert events == [ReadyChanged(2, True)]
    assert table.seats[2].ready
    assert decide(table, SetReady(ANN, True)) == []  # no change, no event
    table, events = act(table, SetReady(ANN, False))
    assert events == [ReadyChanged(2, False)]
    assert not table.seats[2].ready
    assert decide(table, SetReady(ANN, False)) == []


def test_set_ready_refusals() -> None:
    refused(opened(), SetReady(ANN, True), "precondition", "not seated")
    refused(full(), SetReady(bot_id(T, 0), False), "precondition", "not seated")
    refused(playing(), SetReady(ANN, False), "precondition", "a match is being played", "say ready")


# --- StartMatch -----------------------------------------------------------------------------------------


def test_start_a_match() -> None:
    table, events = act(full(), StartMatch(OWNER))
    event = started(events)
    assert event.game_id == "t1-m1"
    assert event.match == 1
    assert event.players == (ANN, BO, CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")
    assert event == MatchStarted("t1-m1", 1, event.players, "zlj", zlj_model.Options(), None)
    assert (table.status, table.game_id, table.matches) == (Status.PLAYING, "t1-m1", 1)
    assert table.seats == full().seats


def test_start_a_tractor_match_with_the_tournament_preset() -> None:
    table = run([OpenTable(T, "Final", "tractor", OWNER, tournament=True)])
    table = run([take(ANN), AddBot(OWNER), take(BO), AddBot(OWNER), SetReady(ANN, True), SetReady(BO, True)], table)
    event = started(decide(table, StartMatch(OWNER)))
    assert event.players == (ANN, "bot-t1-0", BO, "bot-t1-1")
    assert event == MatchStarted(
        "t1-m1",
        1,
        event.players,
        "tractor",
        None,
        tractor_model.Options(turn_seconds=TOURNAMENT_TURN_SECONDS),
        spectators=Spectators(delay_moves=DELAYED_MOVES),
    )


def test_start_needs_no_person_at_all() -> None:
    table = run([AddBot(OWNER) for _ in range(4)], opened("tractor"))
    assert started(decide(table, StartMatch(OWNER))).players == tuple(bot_id(T, i) for i in range(4))


def test_start_refusals() -> None:
    refused(full(), StartMatch(ANN), "permission", "owner")
    refused(opened(), StartMatch(ANN), "permission", "owner")  # who asks is checked first
    half = run([take(ANN, 0), take(BO, 1), AddBot(OWNER, 2), AddBot(OWNER, 5)], opened())
    refused(half, StartMatch(OWNER), "precondition", "every seat must be filled", "free: 3, 4")
    refused(full(ready=False), StartMatch(OWNER), "precondition", "not everyone is ready: Ann, Bo, Cy")
    refused(run([SetReady(BO, False)], full()), StartMatch(OWNER), "precondition", "ready: Bo")
    refused(playing(), StartMatch(OWNER), "precondition", "a match is being played", "start the next one")


def test_a_person_that_left_is_not_waited_for() -> None:
    table = run([SetReady(BO, False), LeaveSeat(BO), AddBot(OWNER, 1)], full())
    assert started(decide(table, StartMatch(OWNER))).players[1] == bot_id(T, 3)


# --- CoverSeat and ReturnToSeat --------------------------------------------------------------------------


def test_cover_and_return() -> None:
    table, events = act(playing(), CoverSeat(2))
    assert events == [SeatCovered(2)]
    assert table.seats[2] == Seat(CY, "Cy", ready=True, covered=True)
    assert table.seat_of(CY) == 2
    assert engine_seats(table) == (ANN, BO, "cover-t1-2", "bot-t1-0", "bot-t1-1", "bot-t1-2")
    table, events = act(table, ReturnToSeat(CY))
    assert events == [SeatReturned(2)]
    assert table.seats[2] == Seat(CY, "Cy", ready=True)
    assert engine_seats(table)[2] == CY


def test_cover_does_nothing_when_there_is_nothing_to_cover() -> None:
    assert decide(full(), CoverSeat(0)) == []  # no match
    covered = run([CoverSeat(0)], playing())
    assert decide(covered, CoverSeat(0)) == []  # covered already
    assert decide(playing(), CoverSeat(4)) == []  # a bot's seat
    finished = run([FinishMatch("t1-m1", ZLJ_RESULT)], playing())
    assert decide(finished, CoverSeat(0)) == []
    assert decide(run([take(ANN)], opened()), CoverSeat(3)) == []  # no match, a free seat


def test_cover_refuses_a_seat_the_table_lacks() -> None:
    refused(playing(), CoverSeat(6), "invalid", "0..5", "6")
    refused(playing("tractor"), CoverSeat(-1), "invalid", "0..3", "-1")


def test_return_does_nothing_unless_covered() -> None:
    assert decide(playing(), ReturnToSeat(ANN)) == []
    assert decide(playing(), ReturnToSeat("p-dee")) == []
    assert decide(full(), ReturnToSeat(ANN)) == []
    assert decide(playing(), ReturnToSeat(bot_id(T, 0))) == []
    assert decide(run([CoverSeat(0)], playing()), ReturnToSeat(cover_id(T, 0))) == []
    table = run([CoverSeat(0), ReturnToSeat(ANN)], playing())
    assert decide(table, ReturnToSeat(ANN)) == []


def test_return_ends_the_lease_of_the_covering_bot() -> None:
    table = run([CoverSeat(0), LeaseSeat("r1", 0, now=0, until=100)], playing())
    assert (table.seats[0].runner, table.seats[0].lease_until) == ("r1", 100)
    table, _ = act(table, ReturnToSeat(ANN))
    assert (table.seats[0].runner, table.seats[0].lease_until, table.seats[0].covered) == ("", 0, False)
    refused(table, LeaseSeat("r1", 0, now=1, until=100), "precondition", "seat 0 has no bot to play")


# --- LeaseSeat ------------------------------------------------------------------------------------------


def test_lease_a_bot_seat() -> None:
    table, events = act(playing(), LeaseSeat("r1", 3, now=100, until=130))
    assert events == [SeatLeased(3, "r1", 130)]
    assert table.seats[3] == bot(0, "r1", 130)
    assert (table.seats[3].runner, table.seats[3].lease_until) == ("r1", 130)


def test_one_runner_per_seat_until_the_lease_expires() -> None:
    table = run([LeaseSeat("r1", 3, now=100, until=130)], playing())
    refused(table, LeaseSeat("r2", 3, now=100, until=160), "precondition", "seat 3 is leased to another runner")
    refused(table, LeaseSeat("r2", 3, now=129, until=160), "precondition", "another runner")
    # the same runner renews whenever it likes
    table, events = act(table, LeaseSeat("r1", 3, now=120, until=150))
    assert events == [SeatLeased(3, "r1", 150)]
    refused(table, LeaseSeat("r2", 3, now=149, until=180), "precondition", "another runner")
    # expired (``until`` is exclusive): another runner may take it
    table, events = act(table, LeaseSeat("r2", 3, now=150, until=180))
    assert events == [SeatLeased(3, "r2", 180)]
    refused(table, LeaseSeat("r1", 3, now=151, until=200), "precondition", "another runner")
    # leases are per seat
    assert decide(table, LeaseSeat("r1", 4, now=151, until=200)) == [SeatLeased(4, "r1", 200)]


def test_lease_a_covered_seat() -> None:
    table = run([CoverSeat(1)], playing())
    assert decide(table, LeaseSeat("r1", 1, now=0, until=30)) == [SeatLeased(1, "r1", 30)]


def test_lease_refusals() -> None:
    refused(playing(), LeaseSeat("r1", 0, now=0, until=30), "precondition", "seat 0 has no bot to play")
    refused(full(), LeaseSeat("r1", 3, now=0, until=30), "precondition", "seat 3 has no bot to play")
    finished = run([FinishMatch("t1-m1", ZLJ_RESULT)], playing())
    refused(finished, LeaseSeat("r1", 3, now=0, until=30), "precondition", "no bot to play")
    refused(playing(), LeaseSeat("r1", 6, now=0, until=30), "invalid", "0..5", "6")


# --- FinishMatch ----------------------------------------------------------------------------------------


def test_finish_a_match() -> None:
    table = run([CoverSeat(1), LeaseSeat("r1", 1, now=0, until=99), LeaseSeat("r2", 4, now=0, until=99)], playing())
    table, events = act(table, FinishMatch("t1-m1", ZLJ_RESULT))
    assert events == [MatchFinished("t1-m1", ZLJ_RESULT)]
    assert table.status is Status.FINISHED
    assert table.last_result == ZLJ_RESULT
    assert (table.game_id, table.matches) == ("t1-m1", 1)
    assert table.seats == (Seat(ANN, "Ann"), Seat(BO, "Bo"), Seat(CY, "Cy"), bot(0), bot(1), bot(2))


def test_finish_is_idempotent_and_ignores_other_games() -> None:
    assert decide(playing(), FinishMatch("t1-m2", ZLJ_RESULT)) == []
    assert decide(playing(), FinishMatch("t2-m1", ZLJ_RESULT)) == []
    finished = run([FinishMatch("t1-m1", ZLJ_RESULT)], playing())
    assert decide(finished, FinishMatch("t1-m1", Result())) == []  # a redelivered end
    assert decide(full(), FinishMatch("", ZLJ_RESULT)) == []


def test_a_tractor_draw_is_kept() -> None:
    draw = Result(winner_team=None, levels=(7, 7))
    table = run([FinishMatch("t1-m1", draw)], playing("tractor"))
    assert table.last_result == draw
    assert table.last_result.winner_team is None


def test_next_match_after_a_finish() -> None:
    table = run([FinishMatch("t1-m1", ZLJ_RESULT)], playing())
    refused(table, StartMatch(OWNER), "precondition", "not everyone is ready: Ann, Bo, Cy")
    table = run([SetReady(p, True) for p in (ANN, BO, CY)], table)
    table, events = act(table, StartMatch(OWNER))
    assert (started(events).game_id, started(events).match) == ("t1-m2", 2)
    assert (table.status, table.game_id, table.matches, table.last_result) == (
        Status.PLAYING,
        "t1-m2",
        2,
        ZLJ_RESULT,
    )
    assert decide(table, FinishMatch("t1-m1", Result())) == []  # the first match's end, redelivered


# --- engine_seats and match_options ---------------------------------------------------------------------


def test_engine_seats() -> None:
    assert engine_seats(Table()) == ()
    assert engine_seats(opened()) == ("",) * 6
    assert engine_seats(full()) == (ANN, BO, CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")
    covered = run([CoverSeat(0), CoverSeat(2)], playing())
    assert engine_seats(covered) == ("cover-t1-0", BO, "cover-t1-2", "bot-t1-0", "bot-t1-1", "bot-t1-2")
    # a cover goes with its player's seat: swapped, the covered player is covered under the new seat's id
    assert engine_seats(run([SwapSeats(OWNER, 0, 1)], covered))[:2] == (BO, "cover-t1-1")


def test_match_options_default() -> None:
    assert match_options(opened()) == zlj_model.Options()
    assert match_options(opened("tractor")) == tractor_model.Options()


def test_match_options_are_the_tables() -> None:
    zlj = zlj_model.Options(deals=2, resist=zlj_model.Resist.TWO_BIG, turn_seconds=25)
    assert match_options(opened(zlj_options=zlj)) == zlj
    tractor = tractor_model.Options(round_minutes=120, turn_seconds=30)
    assert match_options(opened("tractor", tractor_options=tractor)) == tractor


def test_match_options_of_the_tournament_preset() -> None:
    zlj = zlj_model.Options(deals=2, resist=zlj_model.Resist.TWO_BIG, turn_seconds=25)
    assert match_options(opened(tournament=True)) == zlj_model.Options(turn_seconds=10)
    assert match_options(opened(tournament=True, zlj_options=zlj)) == dataclasses.replace(zlj, turn_seconds=10)
    tractor = tractor_model.Options(round_minutes=120)
    assert match_options(opened("tractor", tournament=True)) == tractor_model.Options(turn_seconds=10)
    assert match_options(opened("tractor", tournament=True, tractor_options=tractor)) == tractor_model.Options(
        round_minutes=120, turn_seconds=TOURNAMENT_TURN_SECONDS
    )


# --- a whole table --------------------------------------------------------------------------------------


def test_a_zlj_table_through_two_matches() -> None:
    log: list[Any] = []

    def step(table: Table, command: Any) -> tuple[Table, list[Any]]:
        after, events = act(table, command)
        log.extend(events)
        return after, events

    table, _ = step(Table(), OpenTable(T, "Friday table", "zlj", OWNER))
    for player in (ANN, BO, CY):
        table, _ = step(table, take(player))
    for _ in range(3):
        table, _ = step(table, AddBot(OWNER))
    for player in (ANN, BO, CY):
        table, _ = step(table, SetReady(player, True))
    assert [s.player_id for s in table.seats] == [ANN, BO, CY, "bot-t1-0", "bot-t1-1", "bot-t1-2"]
    assert [s.name for s in table.seats] == ["Ann", "Bo", "Cy", "Bot 0", "Bot 1", "Bot 2"]
    assert all(s.ready for s in table.seats)

    table, events = step(table, StartMatch(OWNER))
    first = started(events)
    assert (first.game_id, first.match) == ("t1-m1", 1)
    assert first.players == (ANN, BO, CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")

    # Bo leaves mid-match: a new bot, bot 3, plays seat 1 for the rest of it
    table, events = step(table, LeaveSeat(BO))
    assert events == [SeatLeft(1, BO, removed=False, bot=True)]
    assert table.seats[1] == bot(3)
    refused(table, RemovePlayer(OWNER, 1), "precondition", "a bot plays this seat")

    # Cy drops out: covered, then back
    table, events = step(table, CoverSeat(2))
    assert events == [SeatCovered(2)]
    assert engine_seats(table) == (ANN, "bot-t1-3", "cover-t1-2", "bot-t1-0", "bot-t1-1", "bot-t1-2")

    # bot runners lease the bot seats, one runner per seat until the lease expires
    table, _ = step(table, LeaseSeat("runner-a", 1, now=1000, until=1030))
    table, _ = step(table, LeaseSeat("runner-a", 2, now=1000, until=1030))
    table, _ = step(table, LeaseSeat("runner-b", 3, now=1000, until=1030))
    refused(table, LeaseSeat("runner-b", 1, now=1010, until=1040), "precondition", "leased to another runner")
    refused(table, LeaseSeat("runner-a", 3, now=1029, until=1059), "precondition", "leased to another runner")
    refused(table, LeaseSeat("runner-a", 0, now=1010, until=1040), "precondition", "seat 0 has no bot to play")
    table, events = step(table, LeaseSeat("runner-a", 1, now=1020, until=1050))  # renewal
    assert events == [SeatLeased(1, "runner-a", 1050)]
    table, events = step(table, LeaseSeat("runner-a", 3, now=1030, until=1060))  # runner-b's lease expired
    assert events == [SeatLeased(3, "runner-a", 1060)]

    table, events = step(table, ReturnToSeat(CY))
    assert events == [SeatReturned(2)]
    assert engine_seats(table)[2] == CY
    refused(table, LeaseSeat("runner-a", 2, now=1031, until=1060), "precondition", "seat 2 has no bot to play")

    # the match ends
    result = Result(team_points=(2, -2), individual_points=(1, 0, 1, 0, 0, -2))
    table, events = step(table, FinishMatch("t1-m1", result))
    assert events == [MatchFinished("t1-m1", result)]
    assert table.status is Status.FINISHED
    assert (table.last_result, table.last_game_id) == (result, "t1-m1")
    assert [s.ready for s in table.seats] == [False, True, False, True, True, True]
    assert all(not s.covered and not s.runner and not s.lease_until for s in table.seats)
    assert decide(table, FinishMatch("t1-m1", result)) == []

    # the second match: the bot that took Bo's seat stays; the people say ready again
    refused(table, StartMatch(OWNER), "precondition", "not everyone is ready: Ann, Cy")
    table, _ = step(table, SetReady(ANN, True))
    table, _ = step(table, SetReady(CY, True))
    table, events = step(table, StartMatch(OWNER))
    second = started(events)
    assert (second.game_id, second.match) == ("t1-m2", 2)
    assert second.players == (ANN, "bot-t1-3", CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")
    assert (table.status, table.game_id, table.matches, table.last_result) == (Status.PLAYING, "t1-m2", 2, result)
    assert table.last_game_id == "t1-m1"  # the result shown during the second match is the first match's

    assert replay(log) == table


# --- regressions: the bugs that were -------------------------------------------------------------------


def _distinct_players(players: Iterable[str]) -> None:
    taken = [p for p in players if p]
    assert len(taken) == len(set(taken)), f"one player in two seats: {taken}"


def test_a_bot_moved_by_a_swap_is_not_seated_twice() -> None:
    """Regression: a bot's id was ``bot-<table>-<seat of when it was seated>``, but `SeatsSwapped` moves it
    to another seat; the seat it left got the same id again when a bot was later seated there, so one
    engine player held two seats and `MatchStarted.players` named it twice. Now each bot has a number."""
    table = run([AddBot(OWNER, 0), take(ANN, 3), SwapSeats(OWNER, 0, 3)], opened())
    table = run([LeaveSeat(ANN), AddBot(OWNER, 0), take(BO), take(CY), AddBot(OWNER), AddBot(OWNER)], table)
    table = run([SetReady(BO, True), SetReady(CY, True)], table)
    assert [s.player_id for s in table.seats] == ["bot-t1-1", BO, CY, "bot-t1-0", "bot-t1-2", "bot-t1-3"]
    assert [s.name for s in table.seats] == ["Bot 1", "Bo", "Cy", "Bot 0", "Bot 2", "Bot 3"]
    _distinct_players(s.player_id for s in table.seats)
    players = started(decide(table, StartMatch(OWNER))).players
    assert players == ("bot-t1-1", BO, CY, "bot-t1-0", "bot-t1-2", "bot-t1-3")
    _distinct_players(players)


def test_a_bot_moved_by_a_swap_and_one_taking_over_are_distinct() -> None:
    """Regression (same cause), during a match: the bot swapped into a person's seat and the bot taking over
    the seat that person then leaves were the same ``bot-t1-<seat>``."""
    table = run([SwapSeats(OWNER, 0, 3), LeaveSeat(ANN)], playing())  # bot 0 to seat 0, Ann to 3, Ann leaves
    assert table.seats[0] == bot(0)
    assert table.seats[3] == bot(3)
    assert engine_seats(table) == ("bot-t1-0", BO, CY, "bot-t1-3", "bot-t1-1", "bot-t1-2")
    _distinct_players(engine_seats(table))


def test_a_bot_moved_by_a_swap_and_a_cover_are_distinct_engine_players() -> None:
    """Regression (same cause): during a match the bot swapped from seat 3 to seat 0 and the bot covering
    seat 3's absent player were both ``bot-t1-3`` in `engine_seats`."""
    table = run([SwapSeats(OWNER, 0, 3), CoverSeat(3)], playing())
    assert table.seats[0] == bot(0)
    assert engine_seats(table) == ("bot-t1-0", BO, CY, "cover-t1-3", "bot-t1-1", "bot-t1-2")
    _distinct_players(engine_seats(table))


@pytest.mark.parametrize("goes", [LeaveSeat(ANN), RemovePlayer(OWNER, 0)], ids=["leaves", "removed"])
def test_a_covering_bots_lease_outlives_its_player_leaving(goes: Any) -> None:
    """Regression: runner r1 leases seat 0 while its bot covers Ann (until 100). When Ann left (or was
    removed) `SeatLeft` made a fresh bot seat with no lease, so runner r2 was granted the same seat at time
    20 while r1's lease ran: two runners played one bot. Now the new bot, bot 3, keeps r1's lease."""
    table = run([CoverSeat(0), LeaseSeat("r1", 0, now=10, until=100), goes], playing())
    assert engine_seats(table)[0] == "bot-t1-3"
    assert table.seats[0] == bot(3, "r1", 100)
    refused(table, LeaseSeat("r2", 0, now=20, until=120), "precondition", "seat 0 is leased to another runner")
    assert decide(table, LeaseSeat("r1", 0, now=20, until=120)) == [SeatLeased(0, "r1", 120)]


def _cover_taken_over_then_swapped_away() -> Table:
    """Ann drops out and leaves while covered: a new bot, bot 3, plays seat 0 on. The owner swaps it with Bo
    (between deals), and Bo drops out in seat 0."""
    table = run([CoverSeat(0), LeaveSeat(ANN), SwapSeats(OWNER, 0, 1), CoverSeat(0)], playing())
    assert table.seats[1] == bot(3)
    assert table.seats[0] == Seat(BO, "Bo", ready=True, covered=True)
    return table


def test_a_bot_that_took_a_covered_seat_over_and_a_new_cover_are_distinct_engine_players() -> None:
    """Regression: the bot that took Ann's covered seat over kept the id ``cover-t1-0`` wherever it was
    swapped; when the player then sitting in seat 0 was covered, `engine_seats` named ``cover-t1-0`` for
    both seats. Now a bot taking a seat over always gets a fresh number, and a cover id names a covered
    seat only."""
    table = _cover_taken_over_then_swapped_away()
    assert engine_seats(table) == ("cover-t1-0", "bot-t1-3", CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")
    _distinct_players(engine_seats(table))


def test_a_bot_that_took_a_covered_seat_over_is_not_seated_twice() -> None:
    """Regression (same cause): Bo then left while covered, and the bot taking his seat over was
    ``cover-t1-0`` again: two seats held one player, and the next match's `MatchStarted.players` named it
    twice. Now it is bot 4."""
    table = run([LeaveSeat(BO)], _cover_taken_over_then_swapped_away())
    assert (table.seats[0], table.seats[1]) == (bot(4), bot(3))
    assert engine_seats(table) == ("bot-t1-4", "bot-t1-3", CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")
    table = run([FinishMatch("t1-m1", ZLJ_RESULT), SetReady(CY, True)], table)
    _distinct_players(s.player_id for s in table.seats)
    players = started(decide(table, StartMatch(OWNER))).players
    assert players == ("bot-t1-4", "bot-t1-3", CY, "bot-t1-0", "bot-t1-1", "bot-t1-2")
    _distinct_players(players)


def test_a_lease_kept_by_a_bot_taking_over_and_a_new_covers_lease_are_apart() -> None:
    """The same with leases: r1 leased Ann's cover, keeps it for bot 3 wherever the swap puts it; Bo's cover
    in seat 0 is leased on its own, by r2, and the bot taking Bo's seat over keeps r2's lease."""
    table = run([CoverSeat(0), LeaseSeat("r1", 0, now=0, until=60), LeaveSeat(ANN), SwapSeats(OWNER, 0, 1)], playing())
    assert table.seats[1] == bot(3, "r1", 60)
    table = run([CoverSeat(0), LeaseSeat("r2", 0, now=10, until=70), LeaveSeat(BO)], table)
    assert (table.seats[0], table.seats[1]) == (bot(4, "r2", 70), bot(3, "r1", 60))
    _distinct_players(engine_seats(table))
    refused(table, LeaseSeat("r1", 0, now=20, until=80), "precondition", "seat 0 is leased to another runner")
    refused(table, LeaseSeat("r2", 1, now=20, until=80), "precondition", "seat 1 is leased to another runner")


# --- random tables --------------------------------------------------------------------------------------

PLAYERS = (OWNER, ANN, BO, CY, "p-dee")
RUNNERS = ("r1", "r2")

KICK_OFF = [*(AddBot(OWNER) for _ in range(6)), *(SetReady(p, True) for p in PLAYERS), StartMatch(OWNER)]
"""A burst that fills the free seats with bots, says ready for everyone seated and starts a match."""


@st.composite
def commands(draw: st.DrawFn) -> list[Any]:
    """One command (as a list of one, like `SIT_DOWN` and `KICK_OFF`), from the pool of players and runners,
    seats in and out of range, owner or not; the commands that move a table towards and through a match
    (sit, bot, ready, start, cover, lease, finish) come more often."""
    player = draw(st.sampled_from(PLAYERS))
    by = draw(st.sampled_from((OWNER, OWNER, OWNER, player)))
    seat = draw(st.integers(-1, 6))
    maybe_seat = draw(st.one_of(st.none(), st.integers(-1, 6)))
    now = draw(st.integers(0, 20))
    runner = draw(st.sampled_from(RUNNERS))
    game_id = draw(st.sampled_from(["t1-m1", "t1-m1", "t1-m2", "t1-m2", "t1-m3", "t2-m1"]))
    pool = [
        (TakeSeat(player, NAMES[player], maybe_seat), 2),
        (TakeSeat(player, NAMES[player]), 3),
        (LeaveSeat(player), 2),
        (AddBot(by, maybe_seat), 1),
        (AddBot(OWNER), 3),
        (RemovePlayer(by, seat), 1),
        (SwapSeats(by, seat, draw(st.integers(-1, 6))), 1),
        (Substitute(by, seat, player, NAMES[player]), 1),
        (SetReady(player, draw(st.booleans())), 1),
        (SetReady(player, True), 4),
        (StartMatch(by), 1),
        (StartMatch(OWNER), 4),
        (CoverSeat(seat), 2),
        (CoverSeat(draw(st.integers(0, 3))), 3),
        (ReturnToSeat(player), 3),
        (LeaseSeat(runner, seat, now, now + draw(st.integers(0, 10))), 4),
        (FinishMatch(game_id, ZLJ_RESULT), 3),
    ]
    return [draw(st.sampled_from([command for command, weight in pool for _ in range(weight)]))]


SIT_DOWN = [take(ANN), take(BO), take(CY)]
"""Three people sit down in the first free seats."""
scripts = st.one_of(*(commands() for _ in range(9)), st.just(SIT_DOWN), st.just(KICK_OFF))


def _check(before: Table, command: Any, events: list[Any], after: Table) -> None:
    assert len(events) <= 1
    for event in events:
        if isinstance(event, SeatTaken | BotSeated):
            assert before.seats[event.seat].free, "a seat taken twice"
        if isinstance(event, BotSeated):
            assert event.player_id == new_bot_id(before)
            assert event.player_id not in {s.player_id for s in before.seats}, "a bot id given twice"
            number = int(event.player_id.removeprefix(f"bot-{T}-"))
            assert after.seats[event.seat] == Seat(event.player_id, f"Bot {number}", bot=True, ready=True)
        if isinstance(event, SeatLeft):
            gone = before.seats[event.seat]
            assert event.player_id == gone.player_id
            assert event.bot == (before.status is Status.PLAYING)
            if event.bot:
                assert not gone.bot, "a bot replaced by a bot"
                player = new_bot_id(before)  # a new bot, covered or not: never a cover id
                assert player == bot_taking_over(before, event.seat)
                assert player not in {s.player_id for s in before.seats}, "a bot id given twice"
                name = f"Bot {player.removeprefix(f'bot-{T}-')}"
                lease = (gone.runner, gone.lease_until) if gone.covered else ("", 0)  # a cover's runner keeps it
                assert after.seats[event.seat] == Seat(player, name, True, True, False, *lease)
            else:
                assert after.seats[event.seat] == Seat()
        if isinstance(event, Substituted):
            assert not before.seats[event.seat].free
            assert before.seat_of(event.player_id) is None
            ready = before.status is Status.PLAYING  # a substitute before a match says ready like everyone
            assert after.seats[event.seat] == Seat(event.player_id, event.name, ready=ready)
        if isinstance(event, MatchStarted):
            assert before.status is not Status.PLAYING
            assert not any(s.free for s in before.seats), "a match started with a free seat"
            assert all(s.ready for s in before.seats if not s.bot), "a match started with someone unready"
            assert event.game_id == game_id_of(T, before.matches + 1)
            assert event.match == before.matches + 1
            assert event.players == tuple(s.player_id for s in before.seats)
            assert len(set(event.players)) == len(event.players), "one player in two seats of a match"
        if isinstance(event, MatchFinished):
            assert before.status is Status.PLAYING
            assert event.game_id == before.game_id
    people = [s.player_id for s in after.seats if not s.free and not s.bot]
    assert len(people) == len(set(people)), f"a person seated twice: {after.seats}"
    # every bot is numbered, and unique: a cover id is never a seated bot's
    numbered = [s.player_id for s in after.seats if s.bot]
    assert len(numbered) == len(set(numbered)), f"a bot seated twice: {after.seats}"
    assert all(s.player_id.startswith(f"bot-{T}-") for s in after.seats if s.bot)
    # the engine's players are distinct; a cover id names exactly the covered seats, by their index
    held = engine_seats(after)
    assert len([p for p in held if p]) == len({p for p in held if p}), f"one engine player in two seats: {held}"
    covers = {i for i, p in enumerate(held) if p.startswith("cover-")}
    assert covers == {i for i, s in enumerate(after.seats) if s.covered}
    assert all(held[i] == cover_id(T, i) for i in covers)
    assert len(after.seats) == SEATS[after.game]
    for seat in after.seats:
        if seat.free:
            assert seat == Seat(), "a free seat keeps something of its last player"
        if seat.bot:
            assert seat.ready and not seat.covered, "a bot not ready"
        if seat.covered or seat.runner:
            assert after.status is Status.PLAYING
        if seat.runner:
            assert seat.played_by_bot
    if after.status is not Status.PLAYING:
        assert not any(s.covered or s.runner or s.lease_until for s in after.seats)
    assert after.matches == (int(after.game_id.rsplit("-m", 1)[1]) if after.game_id else 0)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    game=st.sampled_from(["zlj", "tractor"]),
    tournament=st.booleans(),
    script=st.lists(scripts, min_size=10, max_size=60).map(lambda parts: [c for p in parts for c in p]),
)
def test_random_commands_keep_the_table_sound(game: str, tournament: bool, script: list[Any]) -> None:
    table, log = act(Table(), OpenTable(T, "Random", game, OWNER, tournament=tournament))
    for command in script:
        before = table  # frozen all the way down: decide and evolve cannot change it in place
        try:
            events = decide(table, command)
        except LobbyError as error:
            assert kind_of(error) in KINDS, error.reason
            assert error.message
            continue
        after = table
        for event in events:
            after = evolve(after, event)
        _check(before, command, events, after)
        log.extend(events)
        table = after
    assert replay(log) == table


def kind_of(error: Refused) -> str:
    """The class of a refusal by its status code (invalid, precondition, permission, not_found, already_exists)."""
    return {
        grpc.StatusCode.INVALID_ARGUMENT: "invalid",
        grpc.StatusCode.FAILED_PRECONDITION: "precondition",
        grpc.StatusCode.PERMISSION_DENIED: "permission",
        grpc.StatusCode.NOT_FOUND: "not_found",
        grpc.StatusCode.ALREADY_EXISTS: "already_exists",
    }[CODES[error.reason]]


# --- rating mode (docs/rules/ratings.md) ----------------------------------------------------------------


def test_a_tables_mode_is_carried_to_each_match_it_starts() -> None:
    table = run([OpenTable(T, "Friday table", "zlj", OWNER, mode=Mode.CASUAL)])
    assert table.mode is Mode.CASUAL
    table = run([take(ANN, 0), take(BO, 1), take(CY, 2), *(AddBot(OWNER) for _ in range(3))], table)
    table = run([SetReady(p, True) for p in (ANN, BO, CY)], table)
    assert started(act(table, StartMatch(OWNER))[1]).mode is Mode.CASUAL


def test_a_table_without_a_mode_and_a_tournament_table_start_unrated_matches() -> None:
    assert started(act(full(), StartMatch(OWNER))[1]).mode is None
    _, events = act(Table(), OpenTable(T, "Round 1", "zlj", OWNER, tournament=True, mode=Mode.RANKED))
    assert isinstance(events[0], TableOpened) and events[0].mode is None


def test_a_table_opened_without_a_mode_keeps_its_stored_digest() -> None:
    # an OpenTable stored before tables had modes (the digest of its repr then) is still the same command
    command = OpenTable(T, "Friday table", "zlj", OWNER)
    before = f"OpenTable(table_id={T!r}, name='Friday table', game='zlj', owner={OWNER!r}, tournament=False, "
    before += "zlj_options=None, tractor_options=None)"
    assert legacy_repr(command) == before


# --- expiry ---------------------------------------------------------------------------------------------


def _owned_by(owner: str) -> Table:
    """A table ``owner`` opened, with Ann, Bo and Cy seated and bots in the other seats, everyone ready."""
    table = run([OpenTable(T, "Friday table", "zlj", owner)])
    table = run([take(ANN, 0), take(BO, 1), take(CY, 2), *[AddBot(owner) for _ in range(3)]], table)
    return run([SetReady(p, True) for p in (ANN, BO, CY)], table)


def test_a_players_table_expires_only_with_nobody_seated_and_no_match_in_play() -> None:
    player = "account-olga"
    assert expirable(run([OpenTable(T, "Friday table", "zlj", player)]))
    table = _owned_by(player)
    assert not expirable(table), "people sit there"
    table = run([StartMatch(player)], table)
    table = run([FinishMatch(table.game_id, ZLJ_RESULT)], table)
    assert table.status is Status.FINISHED and not expirable(table), "people still sit there"
    table = run([LeaveSeat(p) for p in (ANN, BO, CY)], table)
    assert expirable(table), "only bots are left"


def test_an_operators_table_never_expires_and_the_queues_expires_once_its_match_is_over() -> None:
    operator = _owned_by(OWNER)
    operator = run([StartMatch(OWNER)], operator)
    assert not expirable(run([FinishMatch(operator.game_id, ZLJ_RESULT)], operator))
    queue = run([OpenTable(T, "Casual match", "zlj", QUEUE_OWNER)])
    assert expirable(queue), "opened and never seated (the queue's seating was cut short)"
    queue = _owned_by(QUEUE_OWNER)
    queue = run([StartMatch(QUEUE_OWNER)], queue)
    assert not expirable(queue), "a match in play"
    queue = run([FinishMatch(queue.game_id, ZLJ_RESULT)], queue)
    assert queue.seats[0].player_id == ANN and expirable(queue), "its players queue again; nobody starts another here"
