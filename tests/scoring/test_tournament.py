"""The tournament aggregate (`paiju.scoring.tournament`): creation, registration (an organiser's at once, a
player's by proposal and every member's consent), pairing, results, forfeits, appeals, sheet confirmations and
standings (`tractor.md` §10-§11; the seed text's 第三章 申诉 and 第四章 记分及名次计算;
D-TR-9, D-TR-10, D-TR-11; paiju's S-1 and S-2 in `paiju.scoring.victory`).

Every command goes through `decide` and every event it emits through the wire (`TOURNAMENT_EVENTS`, encoded to
bytes and decoded back, equal) and `evolve`; the scenarios replay their events from `Tournament()` to the same
state. VP, pairings and standings below were worked out by hand from the rules and written down as numbers.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import TypeVar, get_args

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from paiju.platform.edge import CODES
from paiju.platform.errors import Reason, Refused
from paiju.scoring.contract import TOURNAMENT_EVENTS
from paiju.scoring.tournament import (
    APPEAL_WINDOW_MS,
    AppealFiled,
    AppealResolved,
    Command,
    ConfirmSheet,
    ConfirmTeam,
    Created,
    CreateTournament,
    DeclineTeam,
    DrawMade,
    EndTournament,
    Event,
    FileAppeal,
    Finished,
    ForfeitRecorded,
    PairRound,
    Proposal,
    ProposeTeam,
    RecordForfeit,
    RecordResult,
    RegisterTeam,
    ResolveAppeal,
    ResultCorrected,
    ResultRecorded,
    RoundEnded,
    RoundPaired,
    RoundTable,
    SheetConfirmed,
    Status,
    TeamMemberConfirmed,
    TeamProposalWithdrawn,
    TeamProposed,
    TeamRegistered,
    Tournament,
    TournamentError,
    current_standings,
    decide,
    evolve,
)
from paiju.v1 import tournament_events_pb2

from ..support.profiles import examples

T = "cup"
ORGANISER = "organiser-1"
REFEREE = "referee-1"
NOW = 1_767_258_000_000
"""2026-01-01 09:00 UTC in Unix milliseconds: the scenarios' clock starts here."""
MINUTE = 60_000
HOUR = 60 * MINUTE
E = TypeVar("E")
KINDS = {"invalid", "precondition", "permission", "not_found", "already_exists"}


# --- a tournament driven command by command -----------------------------------------------------------------


def through_the_wire(event: Event) -> Event:
    """``event`` encoded to bytes as a `TournamentEvent` and decoded back."""
    wire = TOURNAMENT_EVENTS.encode(event).SerializeToString()
    message = tournament_events_pb2.TournamentEvent()
    message.ParseFromString(wire)
    decoded: Event = TOURNAMENT_EVENTS.decode(message)
    return decoded


def replay(events: Sequence[Event]) -> Tournament:
    state = Tournament()
    for event in events:
        state = evolve(state, event)
    return state


class Play:
    """A tournament and every event it has emitted; each event checked through the wire before it is applied."""

    def __init__(self) -> None:
        self.state = Tournament()
        self.events: list[Event] = []

    def do(self, command: Command) -> list[Event]:
        events = decide(self.state, command)
        for event in events:
            assert through_the_wire(event) == event
            self.state = evolve(self.state, event)
        self.events.extend(events)
        return events

    def refused(self, command: Command, kind: str, *fragments: str, reason: Reason | None = None) -> TournamentError:
        """``command`` is refused with ``kind`` (and ``reason``, when given) and a message naming every fragment;
        no event, no change."""
        before = self.state
        with pytest.raises(TournamentError) as info:
            decide(self.state, command)
        error = info.value
        assert kind_of(error) == kind, error.message
        assert reason is None or error.reason is reason, (error.reason, error.message)
        assert error.message == str(error)
        for fragment in fragments:
            assert fragment in error.message, (fragment, error.message)
        assert self.state is before
        return error

    def attempt(self, command: Command) -> list[Event]:
        """``command`` applied when accepted; a refusal must be a `TournamentError` of a known kind."""
        try:
            return self.do(command)
        except TournamentError as error:
            assert kind_of(error) in KINDS, error.reason
            assert error.message
            return []

    def table(self, round_number: int, team_id: str) -> RoundTable:
        return next(t for t in self.state.round(round_number).tables if team_id in (t.high, t.low))


def status_of(play: Play) -> Status:
    """The tournament's status as it stands now."""
    return play.state.status


def create(
    *,
    game: str = "tractor",
    rounds: int = 3,
    round_minutes: int | None = None,
    deals: int | None = None,
    seed: int = 7,
    name: str = "Spring Cup",
    tournament_id: str = T,
) -> CreateTournament:
    minutes = (90 if game == "tractor" else 0) if round_minutes is None else round_minutes
    deal_count = (0 if game == "tractor" else 8) if deals is None else deals
    return CreateTournament(tournament_id, name, game, rounds, minutes, deal_count, seed, ORGANISER, NOW)


def players_of(team_id: str, game: str = "tractor") -> tuple[str, ...]:
    return tuple(f"{team_id}-p{i}" for i in range(1, (2 if game == "tractor" else 3) + 1))


def names_of(team_id: str, game: str = "tractor") -> tuple[str, ...]:
    return tuple(f"{team_id.title()} Player {i}" for i in range(1, (2 if game == "tractor" else 3) + 1))


def register(team_id: str, game: str = "tractor", name: str | None = None) -> RegisterTeam:
    return RegisterTeam(
        team_id, name or f"Team {team_id}", players_of(team_id, game), names_of(team_id, game), ORGANISER, NOW
    )


def entered(team_ids: Sequence[str], game: str = "tractor", rounds: int = 3, seed: int = 7) -> Play:
    play = Play()
    play.do(create(game=game, rounds=rounds, seed=seed))
    for team_id in team_ids:
        play.do(register(team_id, game))
    return play


def levels(difference: int) -> tuple[int, int]:
    """Final levels of a table's high and low team that differ by ``difference``."""
    return (difference, 0) if difference >= 0 else (0, -difference)


def result(play: Play, round_number: int, team_id: str, difference: int, now: int = NOW) -> list[Event]:
    """The table of ``team_id`` ends with ``difference`` from its high team's side."""
    table = play.table(round_number, team_id)
    return play.do(RecordResult(table.table_id, f"{table.table_id}-m1", levels(difference), now))


def finish_round(play: Play, now: int, difference: int = 0) -> list[Event]:
    """Every table of the last paired round without a result ends with ``difference``."""
    events: list[Event] = []
    for table in play.state.played[-1].tables:
        if table.result is None:
            events += play.do(RecordResult(table.table_id, f"{table.table_id}-m1", levels(difference), now))
    return events


def of_type(events: Sequence[Event], kind: type[E]) -> list[E]:
    return [event for event in events if isinstance(event, kind)]


def summary(play: Play) -> list[tuple[int, str, Decimal, int, tuple[Decimal, ...]]]:
    return [(s.rank, s.team.team_id, s.vp, s.rounds_won, s.by_round) for s in current_standings(play.state)]


def ranking(play: Play) -> tuple[str, tuple[Decimal, ...]]:
    """The teams' ids in standing order, joined, and their VP."""
    rows = current_standings(play.state)
    return "".join(s.team.team_id for s in rows), tuple(s.vp for s in rows)


def vp(*values: int | str) -> tuple[Decimal, ...]:
    return tuple(Decimal(v) for v in values)


# --- creation -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("game", "rounds", "minutes", "deals"),
    [("tractor", 1, 0, 0), ("tractor", 15, 600, 0), ("tractor", 5, 90, 0), ("zlj", 1, 0, 1), ("zlj", 7, 0, 60)],
)
def test_created_with_valid_options_registers_teams_next(game: str, rounds: int, minutes: int, deals: int) -> None:
    """D-TR-9: a 拖拉机 round is untimed (0) or timed up to 600 minutes and has no deal count; a 砸六家 match has
    1..60 deals and no round time; a tournament has 1..15 rounds."""
    play = Play()
    command = CreateTournament(T, "  Spring Cup  ", game, rounds, minutes, deals, 42, ORGANISER, NOW)
    assert play.do(command) == [Created(T, "Spring Cup", game, rounds, minutes, deals, 42, ORGANISER, NOW)]
    state = play.state
    assert (state.tournament_id, state.name, state.game, state.rounds) == (T, "Spring Cup", game, rounds)
    assert (state.round_minutes, state.deals, state.seed, state.organiser) == (minutes, deals, 42, ORGANISER)
    assert (state.created_at, state.status, state.teams, state.played) == (NOW, Status.REGISTERING, (), ())


@pytest.mark.parametrize(
    ("command", "fragments"),
    [
        (create(game="bridge"), ("zlj or tractor", "'bridge'")),
        (create(game=""), ("zlj or tractor",)),
        (create(rounds=0), ("1 to 15 rounds", "not 0")),
        (create(rounds=-2), ("1 to 15 rounds", "not -2")),
        (create(rounds=16), ("1 to 15 rounds", "not 16")),
        (create(round_minutes=-1), ("0 (untimed) to 600 minutes",)),
        (create(round_minutes=601), ("0 (untimed) to 600 minutes",)),
        (create(game="zlj", deals=0), ("1 to 60 deals",)),
        (create(game="zlj", deals=61), ("1 to 60 deals",)),
        (create(game="zlj", round_minutes=90), ("only 拖拉机 rounds are timed", "D-TR-9")),
        (create(game="tractor", deals=8), ("not to a number of deals", "D-TR-9")),
        (create(name=""), ("tournament name is empty",)),
        (create(name="   \t "), ("tournament name is empty",)),
        (create(name="x" * 81), ("tournament name is longer than 80 characters",)),
    ],
)
def test_creation_refusals_are_invalid_and_say_why(command: CreateTournament, fragments: tuple[str, ...]) -> None:
    """D-TR-9 and the option ranges: a bad option is refused as invalid, with a reason naming it."""
    Play().refused(command, "invalid", *fragments)


def test_a_name_of_80_characters_is_accepted_81_refused() -> None:
    assert Play().do(create(name="名" * 80))[0] == Created(T, "名" * 80, "tractor", 3, 90, 0, 7, ORGANISER, NOW)
    Play().refused(create(name="名" * 81), "invalid", "longer than 80")


@pytest.mark.parametrize("control", ["\x00", "\t", "\n", "\r", "\x1b", "\x1f", "\x7f", "\x85", "\x9b"])
def test_names_with_control_characters_are_refused(control: str) -> None:
    """A tournament's, a team's and a player's name shows on result sheets and screens: no control character
    (Unicode category Cc: U+0000..U+001F, U+007F DEL and U+0080..U+009F) inside it."""
    Play().refused(create(name=f"Spring{control}Cup"), "invalid", "tournament name", "control characters")
    play = entered([])
    bad_team = RegisterTeam("red", f"Red{control}Team", players_of("red"), names_of("red"), ORGANISER, NOW)
    play.refused(bad_team, "invalid", "team name", "control characters")
    bad_player = RegisterTeam("red", "Red", players_of("red"), ("Ann", f"B{control}o"), ORGANISER, NOW)
    play.refused(bad_player, "invalid", "player name", "control characters")


def test_creating_twice_is_already_exists() -> None:
    play = entered(["red", "blue"])
    play.refused(create(name="Another Cup", game="zlj"), "already_exists", T, "exists already")
    play.do(PairRound(ORGANISER, NOW))
    play.refused(create(), "already_exists", T)


@pytest.mark.parametrize(
    "command",
    [
        register("red"),
        ProposeTeam("red", "Red", players_of("red"), names_of("red"), "red-p1", NOW),
        ConfirmTeam("red", "red-p2", NOW),
        DeclineTeam("red", "red-p2", NOW),
        PairRound(ORGANISER, NOW),
        RecordResult("table-cup-r1-t1", "g", (3, 1), NOW),
        RecordForfeit(1, "red", REFEREE, NOW),
        FileAppeal(1, "red", "red-p1", "text", NOW),
        ResolveAppeal(1, True, "upheld", REFEREE, NOW),
        ConfirmSheet(1, "red", "red-p1", NOW),
    ],
)
def test_every_other_command_before_creation_is_not_found(command: Command) -> None:
    Play().refused(command, "not_found", "no such tournament")


# --- registration -------------------------------------------------------------------------------------------


def test_teams_register_with_two_players_for_tractor_and_three_for_zlj_in_order() -> None:
    """A 拖拉机 team is two players, a 砸六家 team three (tractor.md §1, zalioujia.md §1), kept in their order."""
    play = entered([])
    command = RegisterTeam("red", " Red Dragons ", ("p2", "p1"), (" Bo ", "Ann"), ORGANISER, NOW + 5)
    assert play.do(command) == [TeamRegistered("red", "Red Dragons", ("p2", "p1"), ("Bo", "Ann"), NOW + 5)]
    assert play.state.team("red").players == ("p2", "p1")
    assert play.state.team("red").player_names == ("Bo", "Ann")
    assert play.state.team("red").draw == 0

    zlj = entered([], game="zlj")
    zlj.do(RegisterTeam("six", "Six", ("a", "b", "c"), ("A", "B", "C"), ORGANISER, NOW))
    assert zlj.state.team("six").players == ("a", "b", "c")


@pytest.mark.parametrize(
    ("game", "players", "names", "fragment"),
    [
        ("tractor", ("a",), ("A",), "a tractor team has 2 players, not 1"),
        ("tractor", ("a", "b", "c"), ("A", "B", "C"), "a tractor team has 2 players, not 3"),
        ("tractor", ("a", "b"), ("A",), "a tractor team has 2 players"),
        ("zlj", ("a", "b"), ("A", "B"), "a zlj team has 3 players, not 2"),
        ("zlj", ("a", "b", "c", "d"), ("A", "B", "C", "D"), "a zlj team has 3 players, not 4"),
        ("tractor", ("a", "a"), ("A", "A"), "2 different players"),
        ("zlj", ("a", "", "c"), ("A", "B", "C"), "3 different players"),
        ("tractor", ("a", "b"), ("A", " "), "player name is empty"),
    ],
)
def test_team_size_and_players_are_checked(
    game: str, players: tuple[str, ...], names: tuple[str, ...], fragment: str
) -> None:
    play = entered([], game=game)
    play.refused(RegisterTeam("red", "Red", players, names, ORGANISER, NOW), "invalid", fragment)


def test_a_team_id_a_team_name_and_a_player_are_registered_once() -> None:
    play = entered(["red"])
    play.do(RegisterTeam("straße", "Straße", ("s1", "s2"), ("S1", "S2"), ORGANISER, NOW))
    again = RegisterTeam("red", "Other Name", ("x1", "x2"), ("X1", "X2"), ORGANISER, NOW)
    play.refused(again, "already_exists", "team red is registered already")
    for name in ("team red", "TEAM RED", "  Team Red  ", "STRASSE"):
        same_name = RegisterTeam("other", name, ("x1", "x2"), ("X1", "X2"), ORGANISER, NOW)
        play.refused(same_name, "already_exists", "is registered already")
    taken = RegisterTeam("blue", "Blue", ("blue-p1", "red-p2"), ("B", "R"), ORGANISER, NOW)
    play.refused(taken, "already_exists", "red-p2 already plays for team 'Team red'")
    assert [team.team_id for team in play.state.teams] == ["red", "straße"]


def test_registration_closes_when_round_one_is_paired() -> None:
    play = entered(["red", "blue"])
    play.do(PairRound(ORGANISER, NOW))
    play.refused(register("green"), "precondition", "registration closed when round 1 was paired")
    finish_round(play, NOW + HOUR)
    play.refused(register("green"), "precondition", "registration closed")


def test_a_tournament_takes_512_teams() -> None:
    play = entered([])
    for i in range(512):
        play.state = evolve(play.state, TeamRegistered(f"t{i}", f"T{i}", (f"a{i}", f"b{i}"), ("A", "B"), NOW))
    play.refused(register("late"), "precondition", "full (512 teams)")


# --- consent: a player's team is proposed, and registered once every player named has consented -------------


def proposals(play: Play) -> tuple[Proposal, ...]:
    """The proposals waiting now (read through a function, as `status_of`, so that a type checker does not carry
    one assertion over to the next)."""
    return play.state.proposals


def team_ids(play: Play) -> list[str]:
    """The registered teams now, in registration order."""
    return [team.team_id for team in play.state.teams]


def propose(
    team_id: str, by: str | None = None, game: str = "tractor", name: str | None = None, now: int = NOW
) -> ProposeTeam:
    """``team_id``'s players (`players_of`) proposed by ``by`` (default: its first player)."""
    players = players_of(team_id, game)
    return ProposeTeam(team_id, name or f"Team {team_id}", players, names_of(team_id, game), by or players[0], now)


def test_a_player_proposes_a_team_which_is_no_team_until_every_member_has_consented() -> None:
    """The finding: a player put another account into a team without its consent. Now a player's team is only
    proposed (with the proposer's consent); each other member consents with their own command; the last consent
    registers it with the same `TeamRegistered` an organiser's registration emits."""
    play = entered([], game="zlj")
    command = ProposeTeam("six", " Six ", ("a", "b", "c"), (" A ", "B", "C"), "b", NOW)
    assert play.do(command) == [TeamProposed("six", "Six", ("a", "b", "c"), ("A", "B", "C"), "b", NOW)]
    assert team_ids(play) == []
    assert proposals(play) == (Proposal("six", "Six", ("a", "b", "c"), ("A", "B", "C"), "b", NOW, ("b",)),)
    assert proposals(play)[0].waiting_for == ("a", "c")
    with pytest.raises(TournamentError) as info:
        play.state.team("six")  # not a team yet: anything done for it as a team waits for the consents
    error = info.value
    assert error.reason is Reason.CONSENT_PENDING
    assert error.metadata == {"team": "six", "waiting": "a,c"}

    assert play.do(ConfirmTeam("six", "c", NOW + 1)) == [TeamMemberConfirmed("six", "c", NOW + 1)]
    assert team_ids(play) == []
    assert proposals(play)[0].confirmed == ("b", "c")
    assert proposals(play)[0].waiting_for == ("a",)
    assert play.do(ConfirmTeam("six", "a", NOW + 2)) == [
        TeamMemberConfirmed("six", "a", NOW + 2),
        TeamRegistered("six", "Six", ("a", "b", "c"), ("A", "B", "C"), NOW + 2),
    ]
    assert proposals(play) == ()
    assert (play.state.team("six").players, play.state.team("six").player_names) == (("a", "b", "c"), ("A", "B", "C"))
    assert replay(play.events) == play.state


@pytest.mark.parametrize("proposer", ["a", "b", "c"])
def test_the_members_consent_in_any_order_and_the_last_consent_registers_the_team(proposer: str) -> None:
    players = ("a", "b", "c")
    others = [p for p in players if p != proposer]
    registered = set()
    for order in itertools.permutations(others):
        play = entered([], game="zlj")
        play.do(ProposeTeam("six", "Six", players, ("A", "B", "C"), proposer, NOW))
        first = play.do(ConfirmTeam("six", order[0], NOW + 1))
        assert first == [TeamMemberConfirmed("six", order[0], NOW + 1)]
        assert team_ids(play) == []
        last = play.do(ConfirmTeam("six", order[1], NOW + 2))
        assert of_type(last, TeamMemberConfirmed) == [TeamMemberConfirmed("six", order[1], NOW + 2)]
        registered.update(of_type(last, TeamRegistered))
        assert proposals(play) == ()
        assert team_ids(play) == ["six"]
    assert registered == {TeamRegistered("six", "Six", players, ("A", "B", "C"), NOW + 2)}


def test_a_tractor_team_needs_the_partners_consent_only() -> None:
    play = entered([])
    play.do(propose("red", by="red-p2"))
    assert proposals(play)[0].waiting_for == ("red-p1",)
    assert of_type(play.do(ConfirmTeam("red", "red-p1", NOW + 1)), TeamRegistered) == [
        TeamRegistered("red", "Team red", players_of("red"), names_of("red"), NOW + 1)
    ]


def test_only_a_player_named_in_a_proposal_confirms_it_and_once() -> None:
    play = entered(["blue"], game="zlj")
    play.do(propose("red", game="zlj"))
    play.refused(
        ConfirmTeam("red", "stranger", NOW), "permission", "stranger is not named", reason=Reason.NOT_TEAM_MEMBER
    )
    play.refused(
        ConfirmTeam("red", "blue-p1", NOW), "permission", "blue-p1 is not named", reason=Reason.NOT_TEAM_MEMBER
    )
    # the proposer consented by proposing
    waiting = play.refused(
        ConfirmTeam("red", "red-p1", NOW),
        "precondition",
        "consented to team 'Team red' already",
        "red-p2, red-p3",
        reason=Reason.CONSENT_PENDING,
    )
    assert waiting.metadata == {"team": "red", "waiting": "red-p2,red-p3"}
    play.do(ConfirmTeam("red", "red-p2", NOW))
    play.refused(
        ConfirmTeam("red", "red-p2", NOW), "precondition", "it waits for red-p3", reason=Reason.CONSENT_PENDING
    )
    play.refused(
        ConfirmTeam("nope", "red-p3", NOW), "not_found", "no team proposal 'nope'", reason=Reason.TEAM_NOT_FOUND
    )
    play.do(ConfirmTeam("red", "red-p3", NOW))
    # registered: confirming again, or confirming an organiser's team, is refused
    for member in players_of("red", "zlj"):
        play.refused(ConfirmTeam("red", member, NOW), "already_exists", "registered already", reason=Reason.TEAM_EXISTS)
    play.refused(ConfirmTeam("blue", "blue-p1", NOW), "already_exists", "registered already", reason=Reason.TEAM_EXISTS)
    play.refused(ConfirmTeam("blue", "red-p1", NOW), "permission", "does not play for", reason=Reason.NOT_TEAM_MEMBER)


def test_a_player_proposes_only_a_team_they_play_in() -> None:
    play = entered([])
    command = ProposeTeam("red", "Red", ("red-p1", "red-p2"), ("A", "B"), "mallory", NOW)
    play.refused(command, "permission", "mallory proposes only a team they play in", reason=Reason.NOT_TEAM_MEMBER)
    play.refused(
        ProposeTeam("red", "Red", ("red-p1",), ("A",), "red-p1", NOW), "invalid", "a tractor team has 2 players, not 1"
    )
    play.refused(ProposeTeam("red", "Red", ("red-p1", "red-p1"), ("A", "A"), "red-p1", NOW), "invalid", "different")
    play.refused(ProposeTeam("red", " ", ("red-p1", "red-p2"), ("A", "B"), "red-p1", NOW), "invalid", "name is empty")
    assert proposals(play) == ()


def test_a_proposal_reserves_its_id_its_name_and_its_consenting_players_against_teams_and_proposals() -> None:
    """A player is in one team, or consents to one proposal, at a time; a proposal's id and name are taken while
    it waits. Being named without consenting takes nothing from a player."""
    play = entered(["blue"])
    play.do(ProposeTeam("red", "Red Dragons", ("r1", "r2"), ("R1", "R2"), "r1", NOW))
    exists = Reason.TEAM_EXISTS
    # proposing with a player already in another team, or who consented to another proposal (its proposer)
    play.refused(
        ProposeTeam("x", "X", ("x1", "blue-p2"), ("X", "B"), "x1", NOW),
        "already_exists",
        "blue-p2 already plays for team 'Team blue'",
        reason=exists,
    )
    play.refused(
        ProposeTeam("x", "X", ("r1", "x2"), ("R", "X"), "r1", NOW),
        "already_exists",
        "r1 has consented to the proposed team 'Red Dragons' already",
        reason=exists,
    )
    play.refused(
        ProposeTeam("x", "X", ("x1", "r1"), ("X", "R"), "x1", NOW),
        "already_exists",
        "r1 has consented to the proposed team",
        reason=exists,
    )
    play.refused(
        ProposeTeam("x", "X", ("blue-p1", "x2"), ("B", "X"), "blue-p1", NOW),
        "already_exists",
        "blue-p1 already plays",
        reason=exists,
    )
    # its name and its id
    play.refused(
        ProposeTeam("x", "RED DRAGONS", ("x1", "x2"), ("X", "Y"), "x1", NOW),
        "already_exists",
        "a team named 'Red Dragons' is proposed already",
        reason=exists,
    )
    play.refused(
        ProposeTeam("red", "Other", ("x1", "x2"), ("X", "Y"), "x1", NOW),
        "already_exists",
        "team red is proposed already",
        reason=exists,
    )
    play.refused(
        ProposeTeam("x", "team BLUE", ("x1", "x2"), ("X", "Y"), "x1", NOW),
        "already_exists",
        "a team named 'Team blue' is registered already",
        reason=exists,
    )
    # an organiser's registration respects the reservation too
    play.refused(
        RegisterTeam("x", "X", ("x1", "r1"), ("X", "R"), ORGANISER, NOW),
        "already_exists",
        "r1 has consented to the proposed team",
        reason=exists,
    )
    play.refused(
        RegisterTeam("x", "red dragons", ("x1", "x2"), ("X", "Y"), ORGANISER, NOW),
        "already_exists",
        "proposed already",
        reason=exists,
    )
    assert [p.team_id for p in proposals(play)] == ["red"]
    assert team_ids(play) == ["blue"]


def test_naming_a_player_holds_nothing_the_player_registers_elsewhere_and_the_squatters_proposal_is_withdrawn() -> None:
    """A stranger who names a player in a proposal cannot keep that player out: the player proposes their own team,
    and when it is registered the stranger's proposal is withdrawn (`TeamProposalWithdrawn`)."""
    play = entered([])
    play.do(ProposeTeam("squat", "Squatters", ("s1", "victim"), ("S", "V"), "s1", NOW))
    play.do(ProposeTeam("own", "Own Team", ("victim", "mate"), ("V", "M"), "victim", NOW + 1))
    assert [p.team_id for p in proposals(play)] == ["squat", "own"]
    # the victim, having consented to their own proposal, cannot also consent to the squatter's
    play.refused(
        ConfirmTeam("squat", "victim", NOW + 2),
        "already_exists",
        "victim has consented to the proposed team 'Own Team' already",
        reason=Reason.TEAM_EXISTS,
    )
    assert play.do(ConfirmTeam("own", "mate", NOW + 3)) == [
        TeamMemberConfirmed("own", "mate", NOW + 3),
        TeamRegistered("own", "Own Team", ("victim", "mate"), ("V", "M"), NOW + 3),
        TeamProposalWithdrawn("squat", "mate", NOW + 3),
    ]
    assert proposals(play) == ()
    assert team_ids(play) == ["own"]
    assert replay(play.events) == play.state


def test_an_organiser_registering_a_named_player_withdraws_the_proposals_naming_them() -> None:
    play = entered([])
    play.do(ProposeTeam("squat", "Squatters", ("s1", "victim"), ("S", "V"), "s1", NOW))
    play.do(ProposeTeam("other", "Others", ("o1", "o2"), ("O", "P"), "o1", NOW))
    assert play.do(RegisterTeam("real", "Real", ("victim", "mate"), ("V", "M"), ORGANISER, NOW + 1)) == [
        TeamRegistered("real", "Real", ("victim", "mate"), ("V", "M"), NOW + 1),
        TeamProposalWithdrawn("squat", ORGANISER, NOW + 1),
    ]
    assert [p.team_id for p in proposals(play)] == ["other"]
    assert replay(play.events) == play.state


def test_a_member_declines_and_the_whole_proposal_is_withdrawn_freeing_its_players() -> None:
    """Declining withdraws the proposal (`TeamProposalWithdrawn`): nobody can hold another player's place until
    round 1 against their will, and every player named is free to be in another team at once."""
    play = entered([], game="zlj")
    play.do(propose("red", game="zlj"))
    play.do(ConfirmTeam("red", "red-p2", NOW + 1))
    assert play.do(DeclineTeam("red", "red-p3", NOW + 2)) == [TeamProposalWithdrawn("red", "red-p3", NOW + 2)]
    assert proposals(play) == ()
    assert team_ids(play) == []
    play.refused(ConfirmTeam("red", "red-p3", NOW), "not_found", "no team proposal 'red'", reason=Reason.TEAM_NOT_FOUND)
    play.refused(DeclineTeam("red", "red-p3", NOW), "not_found", "no team proposal 'red'", reason=Reason.TEAM_NOT_FOUND)
    # the name, the id and every player are free again
    again = ProposeTeam("red", "Team red", ("red-p2", "red-p1", "x"), ("B", "A", "X"), "red-p2", NOW + 3)
    play.do(again)
    assert proposals(play)[0].confirmed == ("red-p2",)  # the earlier consent does not carry over
    assert replay(play.events) == play.state


def test_a_member_who_had_consented_may_still_decline_and_the_proposer_may_withdraw() -> None:
    play = entered([], game="zlj")
    play.do(propose("red", game="zlj"))
    play.do(ConfirmTeam("red", "red-p2", NOW + 1))
    assert play.do(DeclineTeam("red", "red-p2", NOW + 2)) == [TeamProposalWithdrawn("red", "red-p2", NOW + 2)]
    play.do(propose("red", game="zlj", now=NOW + 3))
    assert play.do(DeclineTeam("red", "red-p1", NOW + 4)) == [TeamProposalWithdrawn("red", "red-p1", NOW + 4)]
    assert proposals(play) == ()


def test_only_a_member_declines_and_an_organiser_withdraws_any_proposal() -> None:
    play = entered(["blue"])
    play.do(propose("red"))
    play.refused(
        DeclineTeam("red", "stranger", NOW), "permission", "stranger is not named", reason=Reason.NOT_TEAM_MEMBER
    )
    play.refused(
        DeclineTeam("red", "blue-p1", NOW), "permission", "blue-p1 is not named", reason=Reason.NOT_TEAM_MEMBER
    )
    # a registered team is not declined: its players consented (or agreed with the organiser)
    play.refused(DeclineTeam("blue", "blue-p1", NOW), "already_exists", "registered already", reason=Reason.TEAM_EXISTS)
    play.refused(DeclineTeam("blue", "red-p1", NOW), "permission", "does not play for", reason=Reason.NOT_TEAM_MEMBER)
    play.refused(DeclineTeam("blue", REFEREE, NOW, organiser=True), "already_exists", "registered already")
    assert play.do(DeclineTeam("red", REFEREE, NOW + 1, organiser=True)) == [
        TeamProposalWithdrawn("red", REFEREE, NOW + 1)
    ]
    play.refused(
        DeclineTeam("red", REFEREE, NOW, organiser=True), "not_found", "no team proposal", reason=Reason.TEAM_NOT_FOUND
    )


def test_an_organiser_registers_a_team_at_once_beside_waiting_proposals() -> None:
    """Organisers register teams for players who agreed with them offline: no consent step."""
    play = entered([])
    play.do(propose("red"))
    assert play.do(register("blue")) == [TeamRegistered("blue", "Team blue", players_of("blue"), names_of("blue"), NOW)]
    assert team_ids(play) == ["blue"]
    assert [p.team_id for p in proposals(play)] == ["red"]


def test_waiting_proposals_are_not_drawn_and_lapse_when_round_one_is_paired() -> None:
    play = entered(["a"])
    play.do(propose("red"))
    play.do(propose("gold", by="gold-p2"))
    play.refused(PairRound(ORGANISER, NOW), "precondition", "at least 2 teams", "2 proposed team(s) wait for consent")
    play.do(ConfirmTeam("gold", "gold-p1", NOW + 1))
    events = play.do(PairRound(ORGANISER, NOW + 2))
    assert events[0] == DrawMade(("a", "gold"), of_type(events, DrawMade)[0].draws)
    (table,) = of_type(events, RoundPaired)[0].tables
    assert {table.high, table.low} == {"a", "gold"}
    assert not {"red-p1", "red-p2"} & set(table.players)
    assert proposals(play) == ()  # lapsed: never registered, no event
    assert team_ids(play) == ["a", "gold"]
    closed = Reason.REGISTRATION_CLOSED
    play.refused(ConfirmTeam("red", "red-p2", NOW), "precondition", "registration closed", "lapsed", reason=closed)
    play.refused(DeclineTeam("red", "red-p2", NOW), "precondition", "registration closed", reason=closed)
    play.refused(propose("green"), "precondition", "registration closed when round 1 was paired", reason=closed)
    assert replay(play.events) == play.state


def test_proposals_do_not_fill_the_512_teams_and_the_last_consent_waits_for_room() -> None:
    play = entered([])
    for i in range(511):
        play.state = evolve(play.state, TeamRegistered(f"t{i}", f"T{i}", (f"a{i}", f"b{i}"), ("A", "B"), NOW))
    for team_id in ("red", "gold", "jade"):
        play.do(propose(team_id))
    play.do(register("last"))  # the 512th team: the three proposals took no place
    assert len(play.state.teams) == 512
    play.refused(
        ConfirmTeam("red", "red-p2", NOW), "precondition", "full (512 teams)", reason=Reason.REGISTRATION_CLOSED
    )
    play.refused(propose("onyx"), "precondition", "full (512 teams)", reason=Reason.REGISTRATION_CLOSED)
    assert len(proposals(play)) == 3


def test_at_most_512_proposals_wait_at_once() -> None:
    play = entered([])
    for i in range(512):
        play.state = evolve(play.state, TeamProposed(f"t{i}", f"T{i}", (f"a{i}", f"b{i}"), ("A", "B"), f"a{i}", NOW))
    play.refused(propose("late"), "precondition", "512 team proposals wait", reason=Reason.REGISTRATION_CLOSED)
    play.do(DeclineTeam("t7", "b7", NOW))
    play.do(propose("late"))


# --- pairing ------------------------------------------------------------------------------------------------


def test_round_one_is_the_seeded_draw_recorded_on_the_teams() -> None:
    """§10 (第四章 一 1): round 1 by draw (抽签), 1 v 2, 3 v 4 ...; the draw numbers (签号) are the seed's shuffle of
    the sorted team ids. With seed 7 the shuffle of a..e is e, a, d, b, c; c, the highest number, has the bye."""
    play = entered(["c", "a", "e", "b", "d"], seed=7)
    order = sorted("abcde")
    random.Random(7).shuffle(order)
    assert order == ["e", "a", "d", "b", "c"]
    events = play.do(PairRound(ORGANISER, NOW + 10))
    assert events[0] == DrawMade(("c", "a", "e", "b", "d"), (5, 2, 1, 4, 3))
    assert {team.team_id: team.draw for team in play.state.teams} == {"e": 1, "a": 2, "d": 3, "b": 4, "c": 5}
    paired = events[1]
    assert isinstance(paired, RoundPaired)
    assert [(t.table, t.high, t.low, t.table_id) for t in paired.tables] == [
        (1, "e", "a", "table-cup-r1-t1"),
        (2, "d", "b", "table-cup-r1-t2"),
    ]
    assert (paired.round, paired.bye, paired.game, paired.round_minutes, paired.deals, paired.at) == (
        1,
        "c",
        "tractor",
        90,
        0,
        NOW + 10,
    )
    assert len(events) == 2
    assert status_of(play) is Status.PLAYING
    assert play.state.round(1).bye == "c"
    assert play.state.round(1).paired_at == NOW + 10


def test_the_same_seed_gives_the_same_draw_whatever_the_registration_order() -> None:
    def draws(order: Sequence[str], seed: int) -> dict[str, int]:
        play = entered(order, seed=seed)
        play.do(PairRound(ORGANISER, NOW))
        return {team.team_id: team.draw for team in play.state.teams}

    teams = ["red", "blue", "green", "gold", "jade", "onyx"]
    first = draws(teams, 2024)
    assert first == draws(list(reversed(teams)), 2024)
    assert sorted(first.values()) == [1, 2, 3, 4, 5, 6]
    assert any(draws(teams, seed) != first for seed in range(5)), "the seed decides the draw"


def test_paired_tables_seat_the_high_team_in_even_seats_and_the_low_team_in_odd_seats() -> None:
    """拖拉机 §1 / 砸六家 §1: partners sit opposite; the high team takes seats 0, 2 (, 4), the low team 1, 3 (, 5),
    each team's players in their registered order, their names alongside."""
    play = entered(["a", "b"], seed=1)
    table = of_type(play.do(PairRound(ORGANISER, NOW)), RoundPaired)[0].tables[0]
    high, low = play.state.team(table.high), play.state.team(table.low)
    assert table.players == (high.players[0], low.players[0], high.players[1], low.players[1])
    assert table.player_names == (high.player_names[0], low.player_names[0], high.player_names[1], low.player_names[1])

    zlj = Play()
    zlj.do(create(game="zlj", deals=12, rounds=2, seed=3, tournament_id="six"))
    zlj.do(RegisterTeam("x", "X", ("x3", "x1", "x2"), ("Xc", "Xa", "Xb"), ORGANISER, NOW))
    zlj.do(RegisterTeam("y", "Y", ("y1", "y2", "y3"), ("Ya", "Yb", "Yc"), ORGANISER, NOW))
    paired = of_type(zlj.do(PairRound(ORGANISER, NOW)), RoundPaired)[0]
    assert (paired.game, paired.round_minutes, paired.deals) == ("zlj", 0, 12)
    (table,) = paired.tables
    assert table.table_id == "table-six-r1-t1"
    expected = {
        ("x", "y"): (("x3", "y1", "x1", "y2", "x2", "y3"), ("Xc", "Ya", "Xa", "Yb", "Xb", "Yc")),
        ("y", "x"): (("y1", "x3", "y2", "x1", "y3", "x2"), ("Ya", "Xc", "Yb", "Xa", "Yc", "Xb")),
    }
    assert (table.players, table.player_names) == expected[(table.high, table.low)]


def test_a_round_is_paired_only_after_the_previous_one_ended_naming_the_tables_without_result() -> None:
    play = entered([f"t{i}" for i in range(8)], rounds=3)
    play.do(PairRound(ORGANISER, NOW))
    first = play.state.round(1)
    play.do(RecordResult(first.tables[1].table_id, "g2", (5, 3), NOW + HOUR))
    play.do(RecordResult(first.tables[3].table_id, "g4", (2, 3), NOW + HOUR))
    error = play.refused(PairRound(ORGANISER, NOW + HOUR), "precondition", "round 1 has not ended")
    assert re.findall(r"\d+", error.message.split(":", 1)[1]) == ["1", "3"]
    finish_round(play, NOW + HOUR)
    paired = of_type(play.do(PairRound(ORGANISER, NOW + 2 * HOUR)), RoundPaired)[0]
    assert paired.round == 2
    assert [t.table_id for t in paired.tables] == [f"table-cup-r2-t{i}" for i in (1, 2, 3, 4)]


def test_no_round_is_paired_past_the_last_one() -> None:
    play = entered(["a", "b", "c", "d"], rounds=2)
    play.do(PairRound(ORGANISER, NOW))
    finish_round(play, NOW + HOUR)
    play.do(PairRound(ORGANISER, NOW + HOUR))
    play.refused(PairRound(ORGANISER, NOW + HOUR), "precondition", "all 2 rounds have been paired")
    finish_round(play, NOW + 2 * HOUR)
    assert status_of(play) is Status.FINISHED
    play.refused(PairRound(ORGANISER, NOW + 3 * HOUR), "precondition", "the tournament is finished")


def test_pairing_needs_two_teams() -> None:
    play = entered([])
    play.refused(PairRound(ORGANISER, NOW), "precondition", "at least 2 teams")
    play.do(register("solo"))
    play.refused(PairRound(ORGANISER, NOW), "precondition", "at least 2 teams")


def test_a_round_no_pairing_can_keep_free_of_rematches_is_refused() -> None:
    """§10 (相遇过的队不再相遇): two teams cannot play a second round; the refusal says so."""
    play = entered(["a", "b"], rounds=2)
    play.do(PairRound(ORGANISER, NOW))
    finish_round(play, NOW + HOUR, difference=3)
    play.refused(PairRound(ORGANISER, NOW + HOUR), "precondition", "round 2 cannot be paired", "meeting again")


def test_six_teams_whose_unplayed_matches_form_two_triangles_cannot_pair_round_four() -> None:
    """§10 (相遇过的队不再相遇), worked by hand. Seed 0 draws e=1, c=2, b=3, a=4, f=5, d=6.

    Round 1: e v c, b v a, f v d, each +2 (17:13). Standing: e, b, f (17, by draw), c, a, d (13).
    Round 2: e v b, f v c, a v d (f has met d); −2, +2, −2. Standing: b 34, f 34 (both 2 won, level every
      round, draw 3 before 5), d 30 above e 30 (last round 17 against 13), c 26, a 26 (draw 2 before 4).
    Round 3: b v f, d v e, c v a. The matches left are a-e, a-f, e-f and b-c, b-d, c-d: two triangles, which
      no round can cover, so round 4 is refused and says why.
    """
    play = entered(["a", "b", "c", "d", "e", "f"], rounds=5, seed=0)
    pairings = []
    for number, differences in ((1, (2, 2, 2)), (2, (-2, 2, -2)), (3, (2, 2, 2))):
        paired = of_type(play.do(PairRound(ORGANISER, NOW + number * HOUR)), RoundPaired)[0]
        pairings.append([(t.high, t.low) for t in paired.tables])
        for table, difference in zip(paired.tables, differences, strict=True):
            play.do(RecordResult(table.table_id, "g", levels(difference), NOW + number * HOUR))
    assert {team.team_id: team.draw for team in play.state.teams} == {"e": 1, "c": 2, "b": 3, "a": 4, "f": 5, "d": 6}
    assert pairings == [
        [("e", "c"), ("b", "a"), ("f", "d")],
        [("e", "b"), ("f", "c"), ("a", "d")],
        [("b", "f"), ("d", "e"), ("c", "a")],
    ]
    play.refused(
        PairRound(ORGANISER, NOW + 4 * HOUR), "precondition", "round 4 cannot be paired", "avoids two teams meeting"
    )
    assert status_of(play) is Status.PLAYING
    assert len(play.state.played) == 3


def test_with_an_odd_team_count_the_bye_is_worth_20_vp_and_rotates() -> None:
    """D-TR-10: the odd team out gets a bye worth 20 VP; the bye goes to a team that has had none while one is
    left. Three teams, three rounds: each team has the bye once and meets both others."""
    play = entered(["a", "b", "c"], rounds=3, seed=11)
    byes: list[str] = []
    for number in (1, 2, 3):
        paired = of_type(play.do(PairRound(ORGANISER, NOW + number * HOUR)), RoundPaired)[0]
        assert len(paired.tables) == 1
        assert {paired.bye, paired.tables[0].high, paired.tables[0].low} == {"a", "b", "c"}
        byes.append(paired.bye)
        ended = finish_round(play, NOW + number * HOUR + 1, difference=2)
        assert of_type(ended, RoundEnded) == [RoundEnded(number, NOW + number * HOUR + 1)]
    assert sorted(byes) == ["a", "b", "c"]
    for standing in current_standings(play.state):
        assert standing.byes == 1
        assert standing.by_round[byes.index(standing.team.team_id)] == Decimal(20)
        assert sorted(standing.opponents) == sorted({"a", "b", "c"} - {standing.team.team_id})


# --- results ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("final_levels", "difference", "high_vp", "low_vp"),
    [
        ((5, 5), 0, "15", "15"),
        ((4, 3), 1, "16", "14"),
        ((9, 5), 4, "19", "11"),
        ((2, 9), -7, "8", "22"),
        ((12, 1), 11, "26", "4"),
        ((12, 0), 12, "27", "3"),
        ((0, 12), -12, "3", "27"),
        ((40, 10), 30, "27", "3"),
        ((1, 20), -19, "3", "27"),
    ],
)
def test_a_result_gives_vp_by_the_level_difference(
    final_levels: tuple[int, int], difference: int, high_vp: str, low_vp: str
) -> None:
    """§10 (第四章 二): difference d gives 15+d : 15−d, capped at 12 (27:3), from the high team's side; 砸六家 team
    points (S-1) can differ by more than 12 and are capped the same way."""
    play = entered(["a", "b", "c", "d"])
    play.do(PairRound(ORGANISER, NOW))
    table = play.state.round(1).tables[0]
    events = play.do(RecordResult(table.table_id, "game-1", final_levels, NOW + HOUR))
    assert events == [ResultRecorded(1, 1, "game-1", difference, high_vp, low_vp, NOW + HOUR)]
    recorded = play.state.round(1).tables[0].result
    assert recorded is not None
    assert (recorded.difference, recorded.high_vp, recorded.low_vp) == (difference, Decimal(high_vp), Decimal(low_vp))
    assert recorded.game_id == "game-1"
    assert not play.state.round(1).ended


def test_a_result_is_recorded_once() -> None:
    """The table's end is delivered at least once: a second delivery, even with other levels, changes nothing."""
    play = entered(["a", "b", "c", "d"])
    play.do(PairRound(ORGANISER, NOW))
    table = play.state.round(1).tables[0]
    play.do(RecordResult(table.table_id, "game-1", (6, 2), NOW + HOUR))
    state = play.state
    assert play.do(RecordResult(table.table_id, "game-1", (6, 2), NOW + HOUR)) == []
    assert play.do(RecordResult(table.table_id, "game-9", (0, 9), NOW + 2 * HOUR)) == []
    assert play.state == state


def test_the_last_result_of_a_round_ends_it_and_of_the_last_round_finishes_the_tournament() -> None:
    play = entered(["a", "b", "c", "d"], rounds=2)
    play.do(PairRound(ORGANISER, NOW))
    one, two = play.state.round(1).tables
    assert len(play.do(RecordResult(one.table_id, "g1", (3, 3), NOW + HOUR))) == 1
    assert play.do(RecordResult(two.table_id, "g2", (3, 4), NOW + HOUR + 5)) == [
        ResultRecorded(1, 2, "g2", -1, "14", "16", NOW + HOUR + 5),
        RoundEnded(1, NOW + HOUR + 5),
    ]
    assert play.state.round(1).ended_at == NOW + HOUR + 5
    assert status_of(play) is Status.PLAYING
    play.do(PairRound(ORGANISER, NOW + 2 * HOUR))
    one, two = play.state.round(2).tables
    play.do(RecordResult(two.table_id, "g4", (7, 0), NOW + 3 * HOUR))
    assert play.do(RecordResult(one.table_id, "g3", (0, 0), NOW + 3 * HOUR + 9)) == [
        ResultRecorded(2, 1, "g3", 0, "15", "15", NOW + 3 * HOUR + 9),
        RoundEnded(2, NOW + 3 * HOUR + 9),
        Finished(NOW + 3 * HOUR + 9),
    ]
    assert status_of(play) is Status.FINISHED
    assert replay(play.events) == play.state


def test_a_result_of_an_unknown_table_is_not_found() -> None:
    play = entered(["a", "b"])
    play.refused(RecordResult("table-cup-r1-t1", "g", (1, 0), NOW), "not_found", "table-cup-r1-t1")
    play.do(PairRound(ORGANISER, NOW))
    for table_id in ("table-cup-r1-t2", "table-cup-r2-t1", "table-other-r1-t1", ""):
        play.refused(RecordResult(table_id, "g", (1, 0), NOW), "not_found", "is not a table of this tournament")


# --- forfeits (D-TR-11) -------------------------------------------------------------------------------------


def test_a_forfeit_in_round_one_gives_the_staying_team_20_and_the_forfeiting_team_0() -> None:
    """D-TR-11: no earlier round, so the staying team gets 20 VP; the forfeiting team 0. A forfeit won counts as
    a round won; the teams have met."""
    play = entered(["a", "b", "c", "d"], rounds=2)
    play.do(PairRound(ORGANISER, NOW))
    table = play.state.round(1).tables[0]
    events = play.do(RecordForfeit(1, table.low, REFEREE, NOW + HOUR))
    assert events == [ForfeitRecorded(1, 1, table.low, table.high, "20", REFEREE, NOW + HOUR)]
    recorded = play.state.round(1).tables[0].result
    assert recorded is not None
    assert (recorded.high_vp, recorded.low_vp, recorded.forfeited_by) == (Decimal(20), Decimal(0), table.low)
    finish_round(play, NOW + HOUR)
    rows = {s.team.team_id: s for s in current_standings(play.state)}
    assert (rows[table.high].vp, rows[table.high].rounds_won) == (Decimal(20), 1)
    assert (rows[table.low].vp, rows[table.low].rounds_won) == (Decimal(0), 0)
    assert rows[table.high].opponents == (table.low,)
    assert rows[table.low].opponents == (table.high,)
    paired = of_type(play.do(PairRound(ORGANISER, NOW + 2 * HOUR)), RoundPaired)[0]
    assert {table.high, table.low} not in [{t.high, t.low} for t in paired.tables]


def _hero_scores(play: Play, hero: str, scores: Sequence[int], start: int = 1) -> None:
    """Rounds ``start``.. of ``play``: ``hero`` ends its table with VP ``scores[i]``; every other table 15:15."""
    for offset, score in enumerate(scores):
        number = start + offset
        play.do(PairRound(ORGANISER, NOW + number * HOUR))
        table = play.table(number, hero)
        difference = score - 15 if table.high == hero else 15 - score
        result(play, number, hero, difference, NOW + number * HOUR + 1)
        finish_round(play, NOW + number * HOUR + 1)


@pytest.mark.parametrize(
    ("scores", "stays_vp"),
    [
        ((27, 18), "22.5"),  # 45/2
        ((27, 27, 13), "22.3"),  # 67/3 = 22.33...
        ((27, 27, 14), "22.7"),  # 68/3 = 22.66...
        ((27, 27, 20, 15), "22.3"),  # 89/4 = 22.25, half up (S-2)
        ((3, 15), "20"),  # average 9: at least 20
        ((25, 15), "20"),  # average exactly 20
    ],
)
def test_the_staying_team_gets_the_larger_of_20_and_its_average_of_earlier_rounds(
    scores: tuple[int, ...], stays_vp: str
) -> None:
    """D-TR-11 (第二章: 20胜利分, or the average VP per earlier round, the larger), the average to one decimal
    half up (S-2)."""
    number = len(scores) + 1
    play = entered([f"t{i}" for i in range(8)], rounds=number)
    _hero_scores(play, "t0", scores)
    play.do(PairRound(ORGANISER, NOW + number * HOUR))
    table = play.table(number, "t0")
    gone = table.low if table.high == "t0" else table.high
    events = play.do(RecordForfeit(number, gone, REFEREE, NOW + number * HOUR + 7))
    assert events[0] == ForfeitRecorded(number, table.table, gone, "t0", stays_vp, REFEREE, NOW + number * HOUR + 7)
    rows = {s.team.team_id: s for s in current_standings(play.state)}
    assert rows["t0"].by_round[-1] == Decimal(stays_vp)
    assert rows["t0"].vp == sum(Decimal(s) for s in scores) + Decimal(stays_vp)
    assert rows[gone].by_round[-1] == Decimal(0)


def test_the_forfeit_average_counts_a_bye() -> None:
    """D-TR-11 with D-TR-10: the bye's 20 VP is a VP of an earlier round: bye 20, then 27, average 23.5."""
    play = entered(["a", "b", "c", "d", "e"], rounds=3, seed=7)
    play.do(PairRound(ORGANISER, NOW))
    assert play.state.round(1).bye == "c"
    finish_round(play, NOW + 1)
    _hero_scores(play, "c", [27], start=2)
    play.do(PairRound(ORGANISER, NOW + 3 * HOUR))
    table = play.table(3, "c")
    gone = table.low if table.high == "c" else table.high
    events = play.do(RecordForfeit(3, gone, REFEREE, NOW + 3 * HOUR))
    assert of_type(events, ForfeitRecorded)[0].stays_vp == "23.5"


def test_a_forfeit_is_refused_for_a_table_with_a_result_and_for_the_bye() -> None:
    play = entered(["a", "b", "c", "d", "e"], rounds=2, seed=7)
    play.do(PairRound(ORGANISER, NOW))
    result(play, 1, "e", 3, NOW + HOUR)
    play.refused(RecordForfeit(1, "a", REFEREE, NOW), "precondition", "table 1 of round 1 has its result already")
    play.do(RecordForfeit(1, "b", REFEREE, NOW))
    play.refused(RecordForfeit(1, "d", REFEREE, NOW), "precondition", "table 2 of round 1 has its result already")
    play.refused(RecordForfeit(1, "c", REFEREE, NOW), "precondition", "team c has the bye in round 1")
    play.refused(RecordForfeit(1, "zz", REFEREE, NOW), "not_found", "team zz has no table in round 1")
    play.refused(RecordForfeit(2, "a", REFEREE, NOW), "not_found", "round 2 has not been paired")
    play.refused(RecordForfeit(0, "a", REFEREE, NOW), "not_found", "round 0 has not been paired")


# --- appeals (第三章) ------------------------------------------------------------------------------------------


def _round_one_played() -> tuple[Play, RoundTable, int]:
    """Four teams, round 1 ended (table 1: +2, table 2: 0); the first table and the round's end."""
    play = entered(["a", "b", "c", "d"], rounds=2, seed=7)
    play.do(PairRound(ORGANISER, NOW))
    ended = NOW + 2 * HOUR
    first = play.state.round(1).tables[0]
    play.do(RecordResult(first.table_id, "g1", (6, 4), ended - MINUTE))
    finish_round(play, ended)
    assert play.state.round(1).ended_at == ended
    return play, play.state.round(1).tables[0], ended


def test_an_appeal_is_filed_by_a_player_of_the_team_after_the_round_within_30_minutes() -> None:
    """第三章 二: written, within 30 minutes of the round's end; exactly 30 minutes is still in time."""
    play = entered(["a", "b", "c", "d"], rounds=2, seed=7)
    play.do(PairRound(ORGANISER, NOW))
    table = play.state.round(1).tables[0]
    player = play.state.team(table.low).players[1]
    too_early = FileAppeal(1, table.low, player, "the referee misjudged", NOW + HOUR)
    play.refused(too_early, "precondition", "round 1 has not ended", "after the round")
    finish_round(play, NOW + HOUR)
    late = FileAppeal(1, table.low, player, "the referee misjudged", NOW + HOUR + APPEAL_WINDOW_MS + 1)
    play.refused(late, "precondition", "within 30 minutes", "ended 30 minutes ago")
    on_time = FileAppeal(1, table.low, player, "  the referee misjudged  ", NOW + HOUR + 30 * MINUTE)
    assert play.do(on_time) == [AppealFiled(1, 1, table.low, player, "the referee misjudged", NOW + HOUR + 30 * MINUTE)]
    high_player = play.state.team(table.high).players[0]
    assert play.do(FileAppeal(1, table.high, high_player, "so did we", NOW + HOUR))[0] == AppealFiled(
        2, 1, table.high, high_player, "so did we", NOW + HOUR
    )
    assert [(a.appeal, a.team_id, a.resolved) for a in play.state.appeals] == [
        (1, table.low, False),
        (2, table.high, False),
    ]


def test_only_a_player_of_the_team_appeals_for_it() -> None:
    play, table, ended = _round_one_played()
    other = play.state.team(table.high).players[0]
    play.refused(FileAppeal(1, table.low, other, "x", ended), "permission", f"{other} does not play for team")
    play.refused(FileAppeal(1, table.low, "spectator", "x", ended), "permission", "spectator does not play")
    play.refused(FileAppeal(1, "zz", "zz-p1", "x", ended), "not_found", "no team 'zz'")
    play.refused(FileAppeal(2, table.low, table.low + "-p1", "x", ended), "not_found", "round 2 has not been paired")
    play.refused(FileAppeal(1, table.low, table.low + "-p1", "  ", ended), "invalid", "appeal is empty")


def test_an_upheld_appeal_corrects_the_difference_its_vp_and_the_standings() -> None:
    """第三章 三: the referee decides; an upheld appeal may correct the table's difference (from its high team's
    side), and §10's VP follow: +2 (17:13) corrected to −3 (12:18) turns the round's winner around."""
    play, table, ended = _round_one_played()
    rows = {s.team.team_id: s for s in current_standings(play.state)}
    assert (rows[table.high].vp, rows[table.high].rounds_won) == (Decimal(17), 1)
    assert (rows[table.low].vp, rows[table.low].rounds_won) == (Decimal(13), 0)
    appellant = play.state.team(table.low).players[0]
    play.do(FileAppeal(1, table.low, appellant, "the last trick was miscounted", ended + MINUTE))
    events = play.do(ResolveAppeal(1, True, "recounted", REFEREE, ended + 20 * MINUTE, corrected_difference=-3))
    assert events == [
        AppealResolved(1, True, "recounted", REFEREE, ended + 20 * MINUTE),
        ResultCorrected(1, table.table, -3, "12", "18", 1),
    ]
    corrected = play.state.round(1).tables[0].result
    assert corrected is not None
    assert (corrected.difference, corrected.high_vp, corrected.low_vp, corrected.game_id) == (
        -3,
        Decimal(12),
        Decimal(18),
        "g1",
    )
    appeal = play.state.appeals[0]
    assert (appeal.resolved, appeal.upheld, appeal.decision, appeal.referee) == (True, True, "recounted", REFEREE)
    rows = {s.team.team_id: s for s in current_standings(play.state)}
    assert (rows[table.high].vp, rows[table.high].rounds_won) == (Decimal(12), 0)
    assert (rows[table.low].vp, rows[table.low].rounds_won) == (Decimal(18), 1)
    assert replay(play.events) == play.state


def test_an_appeal_is_resolved_once_by_its_number_and_only_an_upheld_one_corrects() -> None:
    play, table, ended = _round_one_played()
    play.do(FileAppeal(1, table.low, table.low + "-p1", "wrong", ended))
    play.do(FileAppeal(1, table.high, table.high + "-p2", "also wrong", ended))
    play.refused(ResolveAppeal(3, True, "x", REFEREE, ended), "not_found", "no appeal 3")
    play.refused(ResolveAppeal(0, True, "x", REFEREE, ended), "not_found", "no appeal 0")
    rejected_with_correction = ResolveAppeal(2, False, "no", REFEREE, ended, corrected_difference=5)
    play.refused(rejected_with_correction, "invalid", "only an upheld appeal corrects a result")
    play.refused(ResolveAppeal(2, False, " ", REFEREE, ended), "invalid", "decision is empty")
    before = play.state.round(1)
    assert play.do(ResolveAppeal(2, False, "the sheet stands", REFEREE, ended + 1)) == [
        AppealResolved(2, False, "the sheet stands", REFEREE, ended + 1)
    ]
    assert play.state.round(1) == before
    play.refused(ResolveAppeal(2, True, "changed my mind", REFEREE, ended), "precondition", "appeal 2 was resolved")
    assert play.do(ResolveAppeal(1, True, "warning given", REFEREE, ended + 2)) == [
        AppealResolved(1, True, "warning given", REFEREE, ended + 2)
    ]
    assert play.state.round(1) == before
    play.refused(ResolveAppeal(1, False, "again", REFEREE, ended), "precondition", "appeal 1 was resolved already")


def test_a_bye_or_a_forfeit_has_no_played_result_to_correct() -> None:
    play = entered(["a", "b", "c", "d", "e"], rounds=2, seed=7)
    play.do(PairRound(ORGANISER, NOW))
    result(play, 1, "e", 1, NOW)
    play.do(RecordForfeit(1, "b", REFEREE, NOW + HOUR))
    play.do(FileAppeal(1, "c", "c-p1", "we wanted to play", NOW + HOUR))
    play.do(FileAppeal(1, "b", "b-p1", "we were late by a minute", NOW + HOUR))
    for number in (1, 2):
        correction = ResolveAppeal(number, True, "x", REFEREE, NOW + HOUR, corrected_difference=2)
        play.refused(correction, "precondition", "no played table result in that round to correct")


# --- result sheet confirmations -----------------------------------------------------------------------------


def test_each_team_confirms_its_sheet_once_by_one_of_its_players() -> None:
    """§10: the result sheet (成绩单) carries both teams' confirmations (胜队签名, 负队签名)."""
    play = entered(["a", "b", "c", "d"], rounds=2, seed=7)
    play.do(PairRound(ORGANISER, NOW))
    table = play.state.round(1).tables[0]
    high, low = play.state.team(table.high), play.state.team(table.low)
    early = ConfirmSheet(1, table.high, high.players[0], NOW)
    play.refused(early, "precondition", f"table {table.table} of round 1 has no result to confirm yet")
    play.do(RecordResult(table.table_id, "g1", (4, 1), NOW + HOUR))
    play.refused(ConfirmSheet(1, table.high, low.players[0], NOW), "permission", "it confirms its own sheet")
    play.refused(ConfirmSheet(1, table.high, "stranger", NOW), "permission", "stranger does not play")
    assert play.do(ConfirmSheet(1, table.high, high.players[1], NOW + HOUR + 1)) == [
        SheetConfirmed(1, table.high, high.players[1], NOW + HOUR + 1)
    ]
    play.refused(ConfirmSheet(1, table.high, high.players[0], NOW), "precondition", "confirmed round 1 already")
    play.do(ConfirmSheet(1, table.low, low.players[0], NOW + HOUR + 2))
    play.refused(ConfirmSheet(1, table.low, low.players[1], NOW), "precondition", "confirmed round 1 already")
    assert play.state.round(1).confirmations == (
        (table.high, high.players[1], NOW + HOUR + 1),
        (table.low, low.players[0], NOW + HOUR + 2),
    )
    play.refused(ConfirmSheet(2, table.high, high.players[0], NOW), "not_found", "round 2 has not been paired")
    play.refused(ConfirmSheet(1, "zz", "zz-p1", NOW), "not_found", "no team 'zz'")


# --- a worked tournament ------------------------------------------------------------------------------------


def test_a_worked_five_team_tournament_pairs_scores_and_ranks_as_worked_by_hand() -> None:
    """Five 拖拉机 teams, three rounds, seed 7 (draw e=1, a=2, d=3, b=4, c=5), worked by hand from §10, D-TR-10:

    Round 1 by draw: e v a, d v b, c bye. e v a 9:5 (d=4) 19:11; d v b 6:8 (d=−2) 13:17; c 20.
      Standing: c 20, e 19, b 17, d 13, a 11.
    Round 2: the bye goes to the lowest team without one, a. c meets e? Then b, d would meet again, so c v b, and
      e v d. c v b 7:7 15:15; e v d 3:8 (d=−5) 10:20; a 20.
      Standing: c 35, d 33, b 32, a 31, e 29.
    Round 3: the bye to e (lowest without one). c v d (c has met b), b v a. c v d 10:11 (d=−1) 14:16;
      b v a 4:3 (d=1) 16:14; e 20.
    Final: c, d and e have 49 VP; c won 1 round (its bye; the 15:15 draw is not a win), d and e 2; d and e tie
      on rounds won too, and the last round decides: e 20 (bye) above d 16. Then b 48, a 45.
    """
    play = entered(["a", "b", "c", "d", "e"], rounds=3, seed=7)

    def pair(number: int) -> tuple[list[tuple[str, str]], str]:
        paired = of_type(play.do(PairRound(ORGANISER, NOW + number * HOUR)), RoundPaired)[0]
        return [(t.high, t.low) for t in paired.tables], paired.bye

    def record(number: int, final: dict[str, tuple[int, int]]) -> list[Event]:
        events: list[Event] = []
        for table in play.state.round(number).tables:
            events += play.do(RecordResult(table.table_id, f"g{number}-{table.table}", final[table.high], NOW))
        return events

    assert pair(1) == ([("e", "a"), ("d", "b")], "c")
    record(1, {"e": (9, 5), "d": (6, 8)})
    assert ranking(play) == ("cebda", vp(20, 19, 17, 13, 11))
    assert pair(2) == ([("c", "b"), ("e", "d")], "a")
    record(2, {"c": (7, 7), "e": (3, 8)})
    assert ranking(play) == ("cdbae", vp(35, 33, 32, 31, 29))
    assert pair(3) == ([("c", "d"), ("b", "a")], "e")
    last = record(3, {"c": (10, 11), "b": (4, 3)})
    assert of_type(last, RoundEnded) == [RoundEnded(3, NOW)]
    assert of_type(last, Finished) == [Finished(NOW)]
    assert status_of(play) is Status.FINISHED
    assert summary(play) == [
        (1, "e", Decimal(49), 2, vp(19, 10, 20)),
        (2, "d", Decimal(49), 2, vp(13, 20, 16)),
        (3, "c", Decimal(49), 1, vp(20, 15, 14)),
        (4, "b", Decimal(48), 2, vp(17, 15, 16)),
        (5, "a", Decimal(45), 1, vp(11, 20, 14)),
    ]
    standings = {s.team.team_id: s for s in current_standings(play.state)}
    assert {team_id: s.byes for team_id, s in standings.items()} == {"a": 1, "b": 0, "c": 1, "d": 0, "e": 1}
    assert standings["c"].opponents == ("b", "d")
    assert standings["e"].opponents == ("a", "d")
    assert replay(play.events) == play.state


def test_teams_level_on_everything_are_ranked_by_the_draw() -> None:
    """§10 stops at the rounds' VP; paiju's last tie-break is the draw number, lower first."""
    play = entered(["x", "y"], rounds=1, seed=5)
    paired = of_type(play.do(PairRound(ORGANISER, NOW)), RoundPaired)[0]
    finish_round(play, NOW + HOUR, difference=0)
    draws = {team.team_id: team.draw for team in play.state.teams}
    assert sorted(draws.values()) == [1, 2]
    assert paired.tables[0].high == min(draws, key=draws.__getitem__)
    assert [(s.team.team_id, s.vp, s.rounds_won) for s in current_standings(play.state)] == [
        (min(draws, key=draws.__getitem__), Decimal(15), 0),
        (max(draws, key=draws.__getitem__), Decimal(15), 0),
    ]


# --- the wire and replays -----------------------------------------------------------------------------------


def test_a_tournament_with_every_event_round_trips_and_replays_to_the_same_state() -> None:
    """Every kind of event goes through `TOURNAMENT_EVENTS` and back equal; replaying the events gives the state
    the commands built, and a replay of a replay is the same (determinism)."""
    play = Play()
    play.do(create(game="zlj", rounds=2, deals=6, seed=99, name="砸六家 杯"))
    play.do(register("x", "zlj", name="队 x"))
    for team_id in ("y", "z", "w", "v"):  # proposed by a player
        play.do(propose(team_id, game="zlj", name=f"队 {team_id}"))
    for team_id in ("y", "z"):  # consented to by the others: registered
        for member in players_of(team_id, "zlj")[1:]:
            play.do(ConfirmTeam(team_id, member, NOW + 1))
    play.do(DeclineTeam("w", "w-p3", NOW + 2))  # declined: withdrawn
    play.do(ConfirmTeam("v", "v-p2", NOW + 3))  # still waiting for v-p3 at the draw: lapses
    play.do(PairRound(ORGANISER, NOW))
    assert [t.team_id for t in play.state.teams] == ["x", "y", "z"]
    assert play.state.proposals == ()
    (table,) = play.state.round(1).tables
    play.do(RecordResult(table.table_id, "g1", (31, 44), NOW + HOUR))
    play.do(FileAppeal(1, table.high, play.state.team(table.high).players[2], "team points miscounted", NOW + HOUR))
    play.do(ResolveAppeal(1, True, "corrected", REFEREE, NOW + HOUR + MINUTE, corrected_difference=-7))
    play.do(ConfirmSheet(1, table.low, play.state.team(table.low).players[1], NOW + HOUR + 2 * MINUTE))
    play.do(PairRound(ORGANISER, NOW + 2 * HOUR))
    (table,) = play.state.round(2).tables
    play.do(RecordForfeit(2, table.low, REFEREE, NOW + 3 * HOUR))
    assert status_of(play) is Status.FINISHED
    assert {type(event) for event in play.events} == set(get_args(Event))
    for event in play.events:
        assert through_the_wire(event) == event
    replayed = replay(play.events)
    assert replayed == play.state
    assert replay([through_the_wire(event) for event in play.events]) == replayed


# --- streams stored before the consent rule -----------------------------------------------------------------

OLD_STREAM = (
    (
        "0a0363757010011a026331220b6f7267616e697365722d312a060890efd8ca0630013a2001010101010101010101010101010101"
        "0101010101010101010101010101010152360a340a03637570120a537072696e67204375701a0774726163746f722001285a3807"
        "420b6f7267616e697365722d31488095a4c6b733"
    ),
    (
        "0a0363757010021a026332220b6f7267616e697365722d312a060890efd8ca0630013a2001010101010101010101010101010101"
        "01010101010101010101010101010101522c122a0a0372656412035265641a067265642d70311a067265642d70322203416e6e22"
        "02426f288195a4c6b733"
    ),
    (
        "0a0363757010031a0263332207626c75652d70312a060890efd8ca0630013a200101010101010101010101010101010101010101"
        "010101010101010101010101522f122d0a04626c75651204426c75651a07626c75652d70311a07626c75652d7032220243792202"
        "4469288295a4c6b733"
    ),
    (
        "0a0363757010041a0263342207676f6c642d70322a060890efd8ca0630013a200101010101010101010101010101010101010101"
        "0101010101010101010101015230122e0a04676f6c641204476f6c641a07676f6c642d70311a07676f6c642d7032220245642203"
        "466c6f288395a4c6b733"
    ),
    (
        "0a0363757010051a026335220b6f7267616e697365722d312a060890efd8ca0630013a2001010101010101010101010101010101"
        "0101010101010101010101010101010152181a160a037265640a04626c75650a04676f6c641203010203"
    ),
    (
        "0a0363757010061a026335220b6f7267616e697365722d312a060890efd8ca0630013a2001010101010101010101010101010101"
        "01010101010101010101010101010101526f226d08011251080112037265641a04626c7565220f7461626c652d6375702d72312d"
        "74312a067265642d70312a07626c75652d70312a067265642d70322a07626c75652d70323203416e6e320243793202426f320244"
        "691a04676f6c64220774726163746f72285a388a95a4c6b733"
    ),
    (
        "0a0363757010071a027231220773636f72696e672a060890efd8ca0630013a200101010101010101010101010101010101010101"
        "010101010101010101010101522b2a29080110011a127461626c652d6375702d72312d74312d6d3120022a023137320231333880"
        "f2ffc7b733"
    ),
    (
        "0a0363757010081a027231220773636f72696e672a060890efd8ca0630013a200101010101010101010101010101010101010101"
        "010101010101010101010101520b3a0908011080f2ffc7b733"
    ),
    (
        "0a0363757010091a027231220773636f72696e672a060890efd8ca0630013a200101010101010101010101010101010101010101"
        "010101010101010101010101520942070880f2ffc7b733"
    ),
    (
        "0a03637570100a1a02733122067265642d70312a060890efd8ca0630013a20010101010101010101010101010101010101010101"
        "010101010101010101010152186216080112037265641a067265642d70312081f2ffc7b733"
    ),
)
"""A TOURNAMENTS stream as the release before team consent stored it (`TournamentEnvelope` bytes, written by that
release's code): a 1-round 拖拉机 cup, seed 7; red registered by the organiser, blue and gold each by one of
their players (then a player's `RegisterTeam` registered at once); round 1 paired (red v blue, gold's bye),
red won 5:3, the round ended, the tournament finished, red confirmed the sheet."""


def test_a_stream_stored_before_the_consent_rule_replays_as_it_did() -> None:
    """Stored events never change meaning: a `TeamRegistered` a player caused before the consent rule is a
    registered team, drawn and paired, with no proposal anywhere; every stored event decodes and re-encodes to
    the same bytes."""
    state = Tournament()
    for stored in OLD_STREAM:
        envelope = tournament_events_pb2.TournamentEnvelope.FromString(bytes.fromhex(stored))
        event = TOURNAMENT_EVENTS.decode(envelope.event)
        assert TOURNAMENT_EVENTS.encode(event).SerializeToString() == envelope.event.SerializeToString()
        state = evolve(state, event)
    assert (state.tournament_id, state.name, state.game, state.status) == (T, "Spring Cup", "tractor", Status.FINISHED)
    assert [(t.team_id, t.players, t.player_names, t.draw) for t in state.teams] == [
        ("red", ("red-p1", "red-p2"), ("Ann", "Bo"), 1),
        ("blue", ("blue-p1", "blue-p2"), ("Cy", "Di"), 2),
        ("gold", ("gold-p1", "gold-p2"), ("Ed", "Flo"), 3),
    ]
    assert state.proposals == ()
    (rnd,) = state.played
    assert (rnd.bye, rnd.ended_at, rnd.confirmations) == ("gold", NOW + HOUR, (("red", "red-p1", NOW + HOUR + 1),))
    assert [(t.high, t.low, t.result.difference if t.result else None) for t in rnd.tables] == [("red", "blue", 2)]
    assert [(s.team.team_id, s.vp) for s in current_standings(state)] == [
        ("gold", Decimal(20)),
        ("red", Decimal(17)),
        ("blue", Decimal(13)),
    ]
    # the same commands decided today give the same state, the players' registrations through their consents
    play = Play()
    play.do(create(rounds=1, seed=7))
    play.do(RegisterTeam("red", "Red", ("red-p1", "red-p2"), ("Ann", "Bo"), ORGANISER, NOW + 1))
    play.do(ProposeTeam("blue", "Blue", ("blue-p1", "blue-p2"), ("Cy", "Di"), "blue-p1", NOW + 2))
    play.do(ConfirmTeam("blue", "blue-p2", NOW + 2))
    play.do(ProposeTeam("gold", "Gold", ("gold-p1", "gold-p2"), ("Ed", "Flo"), "gold-p2", NOW + 3))
    play.do(ConfirmTeam("gold", "gold-p1", NOW + 3))
    play.do(PairRound(ORGANISER, NOW + 10))
    finish_round(play, NOW + HOUR, difference=2)
    play.do(ConfirmSheet(1, "red", "red-p1", NOW + HOUR + 1))
    assert play.state == state


# --- random tournaments -------------------------------------------------------------------------------------


def _pairable(teams: Sequence[str], met: set[frozenset[str]]) -> bool:
    """Whether ``teams`` (an even number) can all be paired with no two that have met (brute force)."""
    if not teams:
        return True
    first, rest = teams[0], teams[1:]
    return any(
        frozenset((first, other)) not in met and _pairable([t for t in rest if t != other], met) for other in rest
    )


def _some_round_exists(teams: Sequence[str], met: set[frozenset[str]]) -> bool:
    if len(teams) % 2 == 0:
        return _pairable(teams, met)
    return any(_pairable([t for t in teams if t != bye], met) for bye in teams)


def _stray(data: hst.DataObject, play: Play, ids: Sequence[str], now: int) -> Command:
    """A command drawn from everything a client or a referee might send at any moment, sensible or not."""
    state = play.state
    team = data.draw(hst.sampled_from([*ids, "nobody"]))
    own = list(state.team(team).players) if team in ids else []
    anyone = [p for t in state.teams for p in t.players] + ["stranger"]
    pick_own = data.draw(hst.booleans())
    player = data.draw(hst.sampled_from(own if own and pick_own else anyone))
    round_number = data.draw(hst.integers(-1, state.rounds + 1))
    later = now + data.draw(hst.integers(-MINUTE, 40 * MINUTE))
    choice = data.draw(hst.integers(0, 7))
    if choice == 0:
        text = data.draw(hst.sampled_from(["wrong call", "the sheet is wrong", "", "a\x00b"]))
        return FileAppeal(round_number, team, player, text, later)
    if choice == 1:
        difference = data.draw(hst.none() | hst.integers(-20, 20))
        return ResolveAppeal(
            data.draw(hst.integers(0, len(state.appeals) + 1)),
            data.draw(hst.booleans()),
            data.draw(hst.sampled_from(["decided", " "])),
            REFEREE,
            later,
            difference,
        )
    if choice == 2:
        return ConfirmSheet(round_number, team, player, later)
    if choice == 3:
        return RecordForfeit(round_number, team, REFEREE, later)
    if choice == 4:
        return RecordResult(f"table-{T}-r{round_number}-t{data.draw(hst.integers(0, 8))}", "g", (3, 2), later)
    if choice == 5:
        return register(data.draw(hst.sampled_from([*ids, "late"])))
    if choice == 6:
        kind = data.draw(hst.sampled_from([ConfirmTeam, DeclineTeam]))
        return propose("late", by=player) if data.draw(hst.booleans()) else kind(team, player, later)
    return create()


def _after_the_round(data: hst.DataObject, play: Play, number: int, team_id: str, now: int) -> None:
    """A player of ``team_id`` confirms the round's sheet or appeals (第三章), and a referee may resolve the
    appeal, upheld with a corrected difference or not."""
    player = data.draw(hst.sampled_from(play.state.team(team_id).players))
    if data.draw(hst.booleans()):
        play.attempt(ConfirmSheet(number, team_id, player, now + MINUTE))
        return
    filed = play.attempt(FileAppeal(number, team_id, player, "the result is wrong", now + 5 * MINUTE))
    resolve = data.draw(hst.booleans())
    if filed and resolve:
        upheld = data.draw(hst.booleans())
        correction = data.draw(hst.none() | hst.integers(-20, 20)) if upheld else None
        appeal = of_type(filed, AppealFiled)[0].appeal
        play.attempt(ResolveAppeal(appeal, upheld, "decided", REFEREE, now + 10 * MINUTE, correction))


@settings(
    derandomize=True,
    database=None,
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=hst.data())
def test_random_tournaments_never_rematch_seat_every_team_once_a_round_and_refuse_only_with_tournament_error(
    data: hst.DataObject,
) -> None:
    """§10 (相遇过的队不再相遇) and D-TR-10: whatever the results, forfeits and stray commands, no two teams meet
    twice, every team has exactly one table or the bye each round, a refused round has truly no pairing free of
    rematches, and every refusal is a `TournamentError`."""
    count = data.draw(hst.just(6) | hst.integers(2, 12), label="teams")  # six teams often run out of pairings
    rounds = data.draw(hst.just(min(count - 1, 5)) | hst.integers(1, min(count - 1, 5)), label="rounds")
    game = data.draw(hst.sampled_from(["tractor", "zlj"]), label="game")
    seed = data.draw(hst.integers(0, 2**32), label="seed")
    ids = [f"team-{i:02d}" for i in range(count)]
    play = entered(ids, game=game, rounds=rounds, seed=seed)
    met: set[frozenset[str]] = set()
    played_rounds = 0
    for number in range(1, rounds + 1):
        now = NOW + number * HOUR
        try:
            events = play.do(PairRound(ORGANISER, now))
        except TournamentError as refusal:
            assert kind_of(refusal) == "precondition", refusal.message
            assert number > 1
            assert not _some_round_exists(ids, met), refusal.reason
            break
        paired = of_type(events, RoundPaired)[0]
        assert paired.round == number
        seated = [team for t in paired.tables for team in (t.high, t.low)] + ([paired.bye] if paired.bye else [])
        assert sorted(seated) == ids
        assert bool(paired.bye) == (count % 2 == 1)
        assert [t.table for t in paired.tables] == list(range(1, count // 2 + 1))
        for table in paired.tables:
            pair = frozenset((table.high, table.low))
            assert pair not in met, f"round {number} pairs {table.high} and {table.low} again"
            met.add(pair)
        for table in data.draw(hst.permutations(paired.tables)):
            for _ in range(data.draw(hst.integers(0, 2))):
                play.attempt(_stray(data, play, ids, now))
            outcome = data.draw(hst.tuples(hst.integers(0, 40), hst.integers(0, 40)) | hst.sampled_from(["h", "l"]))
            if isinstance(outcome, tuple):
                play.attempt(RecordResult(table.table_id, f"{table.table_id}-m1", outcome, now))
            else:
                play.attempt(RecordForfeit(number, table.high if outcome == "h" else table.low, REFEREE, now))
        assert play.state.round(number).ended
        played_rounds = number
        for _ in range(data.draw(hst.integers(0, 3))):
            play.attempt(_stray(data, play, ids, now))
        for team_id in data.draw(hst.lists(hst.sampled_from(ids), max_size=3)):
            _after_the_round(data, play, number, team_id, now)
        ranked = current_standings(play.state)
        assert [s.rank for s in ranked] == list(range(1, count + 1))
    assert (status_of(play) is Status.FINISHED) == (played_rounds == rounds)
    assert replay(play.events) == play.state


# --- ending early -----------------------------------------------------------------------------------------------


def test_an_organiser_ends_a_tournament_early_only_between_rounds() -> None:
    play = entered(["a", "b", "c", "d"], rounds=5)
    play.refused(EndTournament(ORGANISER, NOW), "precondition", "no round has been played")
    play.do(PairRound(ORGANISER, NOW))
    play.refused(EndTournament(ORGANISER, NOW), "precondition", "round 1 has not ended")
    finish_round(play, NOW + HOUR, difference=2)
    assert play.do(EndTournament(ORGANISER, NOW + 2 * HOUR)) == [Finished(NOW + 2 * HOUR)]
    assert status_of(play) is Status.FINISHED
    play.refused(PairRound(ORGANISER, NOW + 3 * HOUR), "precondition", "finished")
    play.refused(EndTournament(ORGANISER, NOW + 3 * HOUR), "precondition", "finished already")
    # the standings stand as they were after round 1
    assert [s.vp for s in current_standings(play.state)] == [Decimal(17), Decimal(17), Decimal(13), Decimal(13)]


def kind_of(error: Refused) -> str:
    """The class of a refusal by its status code (invalid, precondition, permission, not_found, already_exists)."""
    return {
        grpc.StatusCode.INVALID_ARGUMENT: "invalid",
        grpc.StatusCode.FAILED_PRECONDITION: "precondition",
        grpc.StatusCode.PERMISSION_DENIED: "permission",
        grpc.StatusCode.NOT_FOUND: "not_found",
        grpc.StatusCode.ALREADY_EXISTS: "already_exists",
    }[CODES[error.reason]]
