"""A tournament as an event-sourced aggregate: teams, Swiss rounds, results, forfeits, appeals, confirmations.

Pure like the rules cores: `decide(tournament, command) -> events` validates and may refuse with a
`TournamentError` that says why; `evolve(tournament, event) -> tournament` trusts. Time comes in with each
command (``now``, Unix milliseconds, the service's clock); nothing here reads a clock.

拖拉机 §10 (第四章) and the paiju decisions in `paiju.scoring.victory` (S-1: 砸六家 tournaments use the same
victory-point scale on the team-points difference; S-2: VP are exact decimals):
- Teams register (two players for 拖拉机, three for 砸六家) until round 1 is paired. A player's team needs every
  member's consent: a player *proposes* it (`ProposeTeam` → `TeamProposed`, the proposer's consent), each
  other member confirms it with their own token (`ConfirmTeam` → `TeamMemberConfirmed`), and the last consent
  registers it (`TeamRegistered`, as an organiser's registration). Until then the proposal is no team — not
  drawn, not paired, not counted against the 512 teams — but its id and its name are taken, and so are the
  players who have consented to it (the proposer, and each member once they confirm): a player is in one team,
  or consents to one proposal, at a time. Being *named* in a proposal takes nothing from a player who has not
  consented: they may propose or confirm another team, or be registered by an organiser — and when a team is
  registered, every other proposal naming one of its players is withdrawn (`TeamProposalWithdrawn`), so nobody
  can hold another player's place without their consent. Any member (the proposer too, and a member who had
  confirmed) may decline (`DeclineTeam` → `TeamProposalWithdrawn`): the whole proposal is withdrawn; an
  organiser may withdraw a proposal the same way. Proposals still waiting when round 1 is paired lapse (not
  registered, no event: `RoundPaired` closes registration). An organiser's `RegisterTeam` registers a team at
  once, for players who agreed offline.
- Round 1 pairs by a seeded draw (the draw numbers 签号 are fixed then); later rounds are Swiss, paired only after
  the previous round has ended (`paiju.scoring.swiss`). An odd team out gets a bye worth 20 VP (D-TR-10).
- Each pairing is a table opened through the lobby (the `RoundPaired` event names the lobby table ids); the
  match's result is recorded from the table's end: the level difference (砸六家: team-points difference) gives
  the VP (§10). A referee may record a forfeit instead (D-TR-11).
- A round ends when every table has its result; the tournament finishes when its last round ends.
- Appeals (第三章): filed by a player of a team of that round within 30 minutes of the round's end, resolved by a
  referee; an upheld appeal may correct the table's difference, which recomputes its VP.
- Each team confirms the round's result sheet (成绩单) once, by one of its players.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from enum import StrEnum

from paiju.platform.errors import Reason, Refused
from paiju.platform.text import has_control
from paiju.scoring import standings as st
from paiju.scoring import swiss
from paiju.scoring.games import GAMES
from paiju.scoring.victory import BYE_VP, FORFEIT_LOSER_VP, forfeit_vp, victory_points

APPEAL_WINDOW_MS = 30 * 60 * 1000
"""Appeals are filed within 30 minutes of the round's end (第三章 二)."""
MAX_ROUNDS = 15
MAX_TEAMS = 512
MAX_PROPOSALS = MAX_TEAMS
"""Team proposals waiting for consent at once (a bound on the aggregate; they do not count as teams)."""


class TournamentError(Refused):
    """A refused command: the contract's ``reason`` (errors.proto), a ``message`` for people and, where there
    are any, the facts of the case (``metadata``)."""

    def __init__(self, reason: Reason, message: str, metadata: Mapping[str, object] | None = None) -> None:
        super().__init__(reason, message, metadata)


class Status(StrEnum):
    NEW = "new"  # no tournament yet
    REGISTERING = "registering"
    PLAYING = "playing"
    FINISHED = "finished"


# --- state ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TeamEntry:
    team_id: str
    name: str
    players: tuple[str, ...]
    player_names: tuple[str, ...]
    draw: int = 0


@dataclass(frozen=True, slots=True)
class Proposal:
    """A team a player proposed, waiting for its members' consent; ``confirmed``: the players who consented,
    in the order they did (the proposer first)."""

    team_id: str
    name: str
    players: tuple[str, ...]
    player_names: tuple[str, ...]
    proposed_by: str
    proposed_at: int
    confirmed: tuple[str, ...] = ()

    @property
    def waiting_for(self) -> tuple[str, ...]:
        """The players whose consent is still awaited, in the team's order."""
        return tuple(p for p in self.players if p not in self.confirmed)


@dataclass(frozen=True, slots=True)
class TableResult:
    """A table's outcome: the difference from the high team's side and both teams' VP, or a forfeit."""

    difference: int
    high_vp: Decimal
    low_vp: Decimal
    game_id: str = ""
    forfeited_by: str = ""


@dataclass(frozen=True, slots=True)
class RoundTable:
    table: int
    high: str
    low: str
    table_id: str
    result: TableResult | None = None


@dataclass(frozen=True, slots=True)
class Round:
    number: int
    paired_at: int
    tables: tuple[RoundTable, ...]
    bye: str = ""
    ended_at: int = 0
    confirmations: tuple[tuple[str, str, int], ...] = ()
    """(team id, player id, when) for each team that confirmed the sheet."""

    @property
    def ended(self) -> bool:
        return self.ended_at > 0


@dataclass(frozen=True, slots=True)
class Appeal:
    appeal: int
    round: int
    team_id: str
    by: str
    text: str
    filed_at: int
    resolved: bool = False
    upheld: bool = False
    decision: str = ""
    referee: str = ""


@dataclass(frozen=True, slots=True)
class Tournament:
    tournament_id: str = ""
    name: str = ""
    game: str = ""
    rounds: int = 0
    round_minutes: int = 0
    deals: int = 0
    seed: int = 0
    organiser: str = ""
    created_at: int = 0
    status: Status = Status.NEW
    teams: tuple[TeamEntry, ...] = ()
    played: tuple[Round, ...] = ()
    appeals: tuple[Appeal, ...] = ()
    proposals: tuple[Proposal, ...] = ()
    """Teams proposed by a player and waiting for their members' consent (none once round 1 is paired)."""

    def team(self, team_id: str) -> TeamEntry:
        for team in self.teams:
            if team.team_id == team_id:
                return team
        proposal = self.proposal_of(team_id)
        if proposal is not None:
            raise _consent_pending(proposal)
        raise TournamentError(Reason.TEAM_NOT_FOUND, f"there is no team {team_id!r} in this tournament")

    def proposal_of(self, team_id: str) -> Proposal | None:
        return next((p for p in self.proposals if p.team_id == team_id), None)

    def round(self, number: int) -> Round:
        if not 1 <= number <= len(self.played):
            raise TournamentError(Reason.ROUND_NOT_FOUND, f"round {number} has not been paired")
        return self.played[number - 1]


def _consent_pending(proposal: Proposal) -> TournamentError:
    waiting = proposal.waiting_for
    return TournamentError(
        Reason.CONSENT_PENDING,
        f"team {proposal.name!r} is proposed, not registered: it waits for the consent of {', '.join(waiting)}"
        " (each confirms with ConfirmTeam)",
        {"team": proposal.team_id, "waiting": ",".join(waiting)},
    )


def table_id_of(tournament_id: str, round_number: int, table: int) -> str:
    """The lobby table of a pairing: ``table-<tournament>-r<round>-t<table>`` (its first game ``...-m1``)."""
    return f"table-{tournament_id}-r{round_number}-t{table}"


def tournament_of_table(table_id: str) -> str | None:
    """The tournament of a lobby table made by `table_id_of`, else ``None`` (an ordinary table)."""
    if not table_id.startswith("table-tour"):
        return None
    parts = table_id.split("-")
    return parts[1] if len(parts) == 4 and parts[2].startswith("r") and parts[3].startswith("t") else None


def standing_teams(tournament: Tournament) -> list[st.Team]:
    return [st.Team(team.team_id, team.name, team.draw) for team in tournament.teams]


def round_results(tournament: Tournament) -> list[st.RoundResult]:
    """One row per team per round with a result (`paiju.scoring.standings`)."""
    rows: list[st.RoundResult] = []
    for rnd in tournament.played:
        if rnd.bye:
            rows.append(st.RoundResult(rnd.number, rnd.bye, None, BYE_VP, st.ResultKind.BYE))
        for table in rnd.tables:
            result = table.result
            if result is None:
                continue
            if result.forfeited_by:
                stays = table.low if result.forfeited_by == table.high else table.high
                rows.append(
                    st.RoundResult(
                        rnd.number,
                        stays,
                        result.forfeited_by,
                        result.high_vp if stays == table.high else result.low_vp,
                        st.ResultKind.FORFEIT_WON,
                    )
                )
                rows.append(
                    st.RoundResult(rnd.number, result.forfeited_by, stays, FORFEIT_LOSER_VP, st.ResultKind.FORFEIT_LOST)
                )
            else:
                rows.append(st.RoundResult(rnd.number, table.high, table.low, result.high_vp, st.ResultKind.PLAYED))
                rows.append(st.RoundResult(rnd.number, table.low, table.high, result.low_vp, st.ResultKind.PLAYED))
    return rows


def current_standings(tournament: Tournament) -> list[st.Standing]:
    return st.standings(standing_teams(tournament), round_results(tournament))


# --- commands ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateTournament:
    tournament_id: str
    name: str
    game: str
    rounds: int
    round_minutes: int
    deals: int
    seed: int
    by: str
    now: int


@dataclass(frozen=True, slots=True)
class RegisterTeam:
    """An organiser registers a team at once (its players agreed with the organiser, e.g. offline)."""

    team_id: str
    name: str
    players: tuple[str, ...]
    player_names: tuple[str, ...]
    by: str
    now: int


@dataclass(frozen=True, slots=True)
class ProposeTeam:
    """A player proposes a team they play in; it is registered once every other member confirms it."""

    team_id: str
    name: str
    players: tuple[str, ...]
    player_names: tuple[str, ...]
    by: str
    now: int


@dataclass(frozen=True, slots=True)
class ConfirmTeam:
    """A member named in a proposal consents to play in the team (the caller's own consent only)."""

    team_id: str
    by: str
    now: int


@dataclass(frozen=True, slots=True)
class DeclineTeam:
    """A member named in a proposal (the proposer too) declines it, or an organiser (``organiser``) withdraws
    it: the proposal is withdrawn."""

    team_id: str
    by: str
    now: int
    organiser: bool = False


@dataclass(frozen=True, slots=True)
class PairRound:
    by: str
    now: int


@dataclass(frozen=True, slots=True)
class EndTournament:
    """End the tournament after the round just played, before its planned last round (an organiser's call,
    e.g. when Swiss pairing has no round left without a rematch)."""

    by: str
    now: int


@dataclass(frozen=True, slots=True)
class RecordResult:
    """A table's match ended: ``levels`` are the final levels (拖拉机) or team points (砸六家) of the table's
    team in seats 0, 2(, 4) — the high team — and of the team in seats 1, 3(, 5)."""

    table_id: str
    game_id: str
    levels: tuple[int, int]
    now: int


@dataclass(frozen=True, slots=True)
class RecordForfeit:
    round: int
    team_id: str
    by: str
    now: int


@dataclass(frozen=True, slots=True)
class FileAppeal:
    round: int
    team_id: str
    by: str
    text: str
    now: int


@dataclass(frozen=True, slots=True)
class ResolveAppeal:
    appeal: int
    upheld: bool
    decision: str
    by: str
    now: int
    corrected_difference: int | None = None
    """When upheld: the table's difference from its high team's side, as the referee corrected it."""


@dataclass(frozen=True, slots=True)
class ConfirmSheet:
    round: int
    team_id: str
    by: str
    now: int


Command = (
    CreateTournament
    | RegisterTeam
    | ProposeTeam
    | ConfirmTeam
    | DeclineTeam
    | PairRound
    | EndTournament
    | RecordResult
    | RecordForfeit
    | FileAppeal
    | ResolveAppeal
    | ConfirmSheet
)


# --- events -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Created:
    tournament_id: str
    name: str
    game: str
    rounds: int
    round_minutes: int
    deals: int
    seed: int
    organiser: str
    at: int


@dataclass(frozen=True, slots=True)
class TeamRegistered:
    team_id: str
    name: str
    players: tuple[str, ...]
    player_names: tuple[str, ...]
    at: int


@dataclass(frozen=True, slots=True)
class TeamProposed:
    """A player (``by``, one of ``players``) proposed a team, with their own consent; the other members'
    are awaited."""

    team_id: str
    name: str
    players: tuple[str, ...]
    player_names: tuple[str, ...]
    by: str
    at: int


@dataclass(frozen=True, slots=True)
class TeamMemberConfirmed:
    """A member named in a proposal consented (the last consent is followed by `TeamRegistered`)."""

    team_id: str
    by: str
    at: int


@dataclass(frozen=True, slots=True)
class TeamProposalWithdrawn:
    """A proposal was withdrawn before it was registered: declined by a member named in it (the proposer
    withdrawing it, or a member declining), withdrawn by an organiser, or withdrawn because one of its players was
    registered in another team (``by``: who registered it)."""

    team_id: str
    by: str
    at: int


@dataclass(frozen=True, slots=True)
class DrawMade:
    """Round 1's seeded draw: the draw number (签号) of each team, in team order."""

    team_ids: tuple[str, ...]
    draws: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PairedTable:
    """A table of a paired round: its teams and who sits where (the high team in seats 0, 2 (, 4), the low
    team in seats 1, 3 (, 5), each team's players in their registered order)."""

    table: int
    high: str
    low: str
    table_id: str
    players: tuple[str, ...]
    player_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RoundPaired:
    """A round's tables, each a lobby table to open (the teams' players seated, the match started), and the
    bye (empty: none)."""

    round: int
    tables: tuple[PairedTable, ...]
    bye: str
    game: str
    round_minutes: int
    deals: int
    at: int


@dataclass(frozen=True, slots=True)
class ResultRecorded:
    round: int
    table: int
    game_id: str
    difference: int
    high_vp: str
    low_vp: str
    at: int


@dataclass(frozen=True, slots=True)
class ForfeitRecorded:
    round: int
    table: int
    forfeited_by: str
    stays: str
    stays_vp: str
    by: str
    at: int


@dataclass(frozen=True, slots=True)
class RoundEnded:
    round: int
    at: int


@dataclass(frozen=True, slots=True)
class Finished:
    at: int


@dataclass(frozen=True, slots=True)
class AppealFiled:
    appeal: int
    round: int
    team_id: str
    by: str
    text: str
    at: int


@dataclass(frozen=True, slots=True)
class AppealResolved:
    appeal: int
    upheld: bool
    decision: str
    referee: str
    at: int


@dataclass(frozen=True, slots=True)
class ResultCorrected:
    """An upheld appeal changed a table's difference; its VP follow (§10)."""

    round: int
    table: int
    difference: int
    high_vp: str
    low_vp: str
    appeal: int


@dataclass(frozen=True, slots=True)
class SheetConfirmed:
    round: int
    team_id: str
    by: str
    at: int


@dataclass(frozen=True, slots=True)
class RatingUpdated:
    """An event of a rating ledger (`paiju.scoring.rater`), stored on the tournaments' stream: no tournament's, so
    a tournament read from a ledger's events is one never created (its contents are read by `paiju.scoring.rater`
    from the message, not here)."""


Event = (
    Created
    | TeamRegistered
    | DrawMade
    | RoundPaired
    | ResultRecorded
    | ForfeitRecorded
    | RoundEnded
    | Finished
    | AppealFiled
    | AppealResolved
    | ResultCorrected
    | SheetConfirmed
    | TeamProposed
    | TeamMemberConfirmed
    | TeamProposalWithdrawn
)
"""What a tournament's commands decide."""
Stored = Event | RatingUpdated
"""What the tournaments' stream holds: the tournaments' events and the rating ledgers'."""


# --- decide -----------------------------------------------------------------------------------------


def _invalid(message: str) -> TournamentError:
    return TournamentError(Reason.INVALID_REQUEST, message)


def _refuse(message: str, reason: Reason = Reason.TOURNAMENT_STATE) -> TournamentError:
    return TournamentError(reason, message)


def _text(value: str, what: str, limit: int = 80, *, lines: bool = False) -> str:
    """A name (one line) or a note (``lines``: newlines allowed), trimmed; refused when empty, too long, or
    holding characters that are not text."""
    value = value.strip()
    if not value:
        raise _invalid(f"the {what} is empty")
    if len(value) > limit:
        raise _invalid(f"the {what} is longer than {limit} characters")
    if has_control(value, "\n" if lines else ""):
        raise _invalid(f"the {what} contains control characters")
    return value


def decide(tournament: Tournament, command: Command) -> list[Event]:
    if isinstance(command, CreateTournament):
        return _create(tournament, command)
    if tournament.status is Status.NEW:
        raise TournamentError(Reason.TOURNAMENT_NOT_FOUND, "there is no such tournament")
    if isinstance(command, RegisterTeam):
        return _register(tournament, command)
    if isinstance(command, ProposeTeam):
        return _propose(tournament, command)
    if isinstance(command, ConfirmTeam):
        return _confirm_team(tournament, command)
    if isinstance(command, DeclineTeam):
        return _decline_team(tournament, command)
    if isinstance(command, PairRound):
        return _pair(tournament, command)
    if isinstance(command, EndTournament):
        return _end(tournament, command)
    if isinstance(command, RecordResult):
        return _result(tournament, command)
    if isinstance(command, RecordForfeit):
        return _forfeit(tournament, command)
    if isinstance(command, FileAppeal):
        return _appeal(tournament, command)
    if isinstance(command, ResolveAppeal):
        return _resolve(tournament, command)
    if isinstance(command, ConfirmSheet):
        return _confirm(tournament, command)
    raise _invalid(f"unknown command {type(command).__name__}")


def _create(tournament: Tournament, c: CreateTournament) -> list[Event]:
    if tournament.status is not Status.NEW:
        raise TournamentError(Reason.TOURNAMENT_EXISTS, f"tournament {tournament.tournament_id} exists already")
    if c.game not in GAMES:
        raise _invalid(f"the game must be {' or '.join(GAMES)}, not {c.game!r}")
    if not 1 <= c.rounds <= MAX_ROUNDS:
        raise _invalid(f"a tournament has 1 to {MAX_ROUNDS} rounds, not {c.rounds}")
    if c.round_minutes < 0 or c.round_minutes > 600:
        raise _invalid("the round length is 0 (untimed) to 600 minutes")
    unsuited = GAMES[c.game].match_length(c.deals, c.round_minutes)
    if unsuited is not None:
        raise _invalid(unsuited)
    name = _text(c.name, "tournament name")
    return [Created(c.tournament_id, name, c.game, c.rounds, c.round_minutes, c.deals, c.seed, c.by, c.now)]


def _open(tournament: Tournament) -> None:
    if tournament.status is not Status.REGISTERING:
        raise _refuse(
            "registration closed when round 1 was paired (team proposals still waiting then lapsed)",
            Reason.REGISTRATION_CLOSED,
        )


def _not_full(tournament: Tournament) -> None:
    if len(tournament.teams) >= MAX_TEAMS:
        raise _refuse(f"the tournament is full ({MAX_TEAMS} teams)", Reason.REGISTRATION_CLOSED)


def _new_team(
    tournament: Tournament, team_id: str, name: str, players: tuple[str, ...], player_names: tuple[str, ...]
) -> tuple[str, tuple[str, ...]]:
    """The team's name and its players' names, trimmed, once the team is checked: its size, distinct players,
    an id and a name that no registered team and no waiting proposal has, and players in no registered team and
    consenting to no waiting proposal."""
    size = GAMES[tournament.game].rules.team_size
    if len(players) != size or len(player_names) != size:
        raise _invalid(f"a {tournament.game} team has {size} players, not {len(players)}")
    if len(set(players)) != size or any(not p for p in players):
        raise _invalid(f"a team's players must be {size} different players")
    name = _text(name, "team name")
    names = tuple(_text(n, "player name") for n in player_names)
    folded = name.casefold()
    for team in tournament.teams:
        if team.team_id == team_id:
            raise TournamentError(Reason.TEAM_EXISTS, f"team {team_id} is registered already")
        if team.name.casefold() == folded:
            raise TournamentError(Reason.TEAM_EXISTS, f"a team named {team.name!r} is registered already")
        taken = set(team.players) & set(players)
        if taken:
            raise TournamentError(
                Reason.TEAM_EXISTS, f"{', '.join(sorted(taken))} already plays for team {team.name!r}"
            )
    for proposal in tournament.proposals:
        if proposal.team_id == team_id:
            raise TournamentError(Reason.TEAM_EXISTS, f"team {team_id} is proposed already")
        if proposal.name.casefold() == folded:
            raise TournamentError(
                Reason.TEAM_EXISTS, f"a team named {proposal.name!r} is proposed already (waiting for consent)"
            )
        taken = set(proposal.confirmed) & set(players)
        if taken:
            raise TournamentError(
                Reason.TEAM_EXISTS,
                f"{', '.join(sorted(taken))} has consented to the proposed team {proposal.name!r} already"
                " (declining it frees them)",
            )
    return name, names


def _withdrawn_by_registration(
    tournament: Tournament, team_id: str, players: tuple[str, ...], by: str, now: int
) -> list[Event]:
    """The other waiting proposals naming a player of the team being registered: withdrawn, since that player now
    plays for this team."""
    members = set(players)
    return [
        TeamProposalWithdrawn(p.team_id, by, now)
        for p in tournament.proposals
        if p.team_id != team_id and members & set(p.players)
    ]


def _register(tournament: Tournament, c: RegisterTeam) -> list[Event]:
    _open(tournament)
    name, names = _new_team(tournament, c.team_id, c.name, c.players, c.player_names)
    _not_full(tournament)
    registered = TeamRegistered(c.team_id, name, tuple(c.players), names, c.now)
    return [registered, *_withdrawn_by_registration(tournament, c.team_id, tuple(c.players), c.by, c.now)]


def _propose(tournament: Tournament, c: ProposeTeam) -> list[Event]:
    _open(tournament)
    if c.by not in c.players:
        raise TournamentError(Reason.NOT_TEAM_MEMBER, f"{c.by} proposes only a team they play in")
    name, names = _new_team(tournament, c.team_id, c.name, c.players, c.player_names)
    _not_full(tournament)
    if len(tournament.proposals) >= MAX_PROPOSALS:
        raise _refuse(
            f"{MAX_PROPOSALS} team proposals wait for consent already: no more until some are confirmed or withdrawn",
            Reason.REGISTRATION_CLOSED,
        )
    return [TeamProposed(c.team_id, name, tuple(c.players), names, c.by, c.now)]


def _proposal(tournament: Tournament, team_id: str, by: str, *, organiser: bool = False) -> Proposal:
    """The waiting proposal ``team_id`` that ``by`` is named in (any, for an organiser)."""
    _open(tournament)
    for team in tournament.teams:
        if team.team_id == team_id:
            if not organiser and by not in team.players:
                raise TournamentError(Reason.NOT_TEAM_MEMBER, f"{by} does not play for team {team.name!r}")
            raise TournamentError(
                Reason.TEAM_EXISTS, f"team {team.name!r} is registered already: its members have all consented"
            )
    proposal = tournament.proposal_of(team_id)
    if proposal is None:
        raise TournamentError(Reason.TEAM_NOT_FOUND, f"there is no team proposal {team_id!r} in this tournament")
    if not organiser and by not in proposal.players:
        raise TournamentError(Reason.NOT_TEAM_MEMBER, f"{by} is not named in the proposed team {proposal.name!r}")
    return proposal


def _confirm_team(tournament: Tournament, c: ConfirmTeam) -> list[Event]:
    proposal = _proposal(tournament, c.team_id, c.by)
    if c.by in proposal.confirmed:
        raise TournamentError(
            Reason.CONSENT_PENDING,
            f"{c.by} has consented to team {proposal.name!r} already; it waits for {', '.join(proposal.waiting_for)}",
            {"team": proposal.team_id, "waiting": ",".join(proposal.waiting_for)},
        )
    elsewhere = next((p for p in tournament.proposals if c.by in p.confirmed), None)
    if elsewhere is not None:
        raise TournamentError(
            Reason.TEAM_EXISTS,
            f"{c.by} has consented to the proposed team {elsewhere.name!r} already (declining it frees them)",
            {"team": elsewhere.team_id},
        )
    events: list[Event] = [TeamMemberConfirmed(c.team_id, c.by, c.now)]
    if proposal.waiting_for == (c.by,):  # the last consent registers the team
        _not_full(tournament)
        events.append(TeamRegistered(proposal.team_id, proposal.name, proposal.players, proposal.player_names, c.now))
        events += _withdrawn_by_registration(tournament, proposal.team_id, proposal.players, c.by, c.now)
    return events


def _decline_team(tournament: Tournament, c: DeclineTeam) -> list[Event]:
    _proposal(tournament, c.team_id, c.by, organiser=c.organiser)
    return [TeamProposalWithdrawn(c.team_id, c.by, c.now)]


def _pair(tournament: Tournament, c: PairRound) -> list[Event]:
    if tournament.status is Status.FINISHED:
        raise _refuse("the tournament is finished: every round has been played")
    number = len(tournament.played) + 1
    if number > tournament.rounds:
        raise _refuse(f"all {tournament.rounds} rounds have been paired")
    if tournament.played and not tournament.played[-1].ended:
        missing = [t.table for t in tournament.played[-1].tables if t.result is None]
        raise _refuse(f"round {number - 1} has not ended: table(s) {', '.join(map(str, missing))} have no result yet")
    if len(tournament.teams) < 2:
        waiting = f" ({len(tournament.proposals)} proposed team(s) wait for consent)" if tournament.proposals else ""
        raise _refuse(f"a tournament needs at least 2 teams to pair a round{waiting}")
    events: list[Event] = []
    if number == 1:
        draws = swiss.seeded_draw([t.team_id for t in tournament.teams], tournament.seed)
        ids = tuple(t.team_id for t in tournament.teams)
        events.append(DrawMade(ids, tuple(draws[i] for i in ids)))
        teams = [st.Team(t.team_id, t.name, draws[t.team_id]) for t in tournament.teams]
        pairing = swiss.first_round(teams)
    else:
        try:
            pairing = swiss.next_round(number, standing_teams(tournament), round_results(tournament))
        except swiss.NoPairing as exc:
            raise _refuse(str(exc)) from None
    tables = tuple(
        PairedTable(
            p.table,
            p.high,
            p.low,
            table_id_of(tournament.tournament_id, number, p.table),
            *_seating(tournament.team(p.high), tournament.team(p.low)),
        )
        for p in pairing.tables
    )
    events.append(
        RoundPaired(
            number, tables, pairing.bye or "", tournament.game, tournament.round_minutes, tournament.deals, c.now
        )
    )
    if not tables:  # two teams can't be left with nothing but a bye; kept for safety
        events.append(RoundEnded(number, c.now))
    return events


def _end(tournament: Tournament, c: EndTournament) -> list[Event]:
    if tournament.status is Status.FINISHED:
        raise _refuse("the tournament is finished already")
    if not tournament.played:
        raise _refuse("no round has been played: there is nothing to end (pair round 1 first)")
    if not tournament.played[-1].ended:
        raise _refuse(f"round {len(tournament.played)} has not ended: end the tournament after it")
    return [Finished(c.now)]


def _seating(high: TeamEntry, low: TeamEntry) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Players and names in seat order: high, low, high, low... (teammates sit opposite, 砸六家 §1, 拖拉机 §1)."""
    players = tuple(p for pair in zip(high.players, low.players, strict=True) for p in pair)
    names = tuple(n for pair in zip(high.player_names, low.player_names, strict=True) for n in pair)
    return players, names


def _ended(tournament: Tournament, rnd: Round, now: int, tables: tuple[RoundTable, ...]) -> list[Event]:
    """`RoundEnded` (and `Finished` after the last round) when every table now has a result."""
    if rnd.ended or any(t.result is None for t in tables):
        return []
    events: list[Event] = [RoundEnded(rnd.number, now)]
    if rnd.number == tournament.rounds:
        events.append(Finished(now))
    return events


def _find_table(tournament: Tournament, table_id: str) -> tuple[Round, RoundTable]:
    for rnd in tournament.played:
        for table in rnd.tables:
            if table.table_id == table_id:
                return rnd, table
    raise TournamentError(Reason.ROUND_NOT_FOUND, f"table {table_id} is not a table of this tournament")


def _result(tournament: Tournament, c: RecordResult) -> list[Event]:
    rnd, table = _find_table(tournament, c.table_id)
    if table.result is not None:
        return []  # recorded already (the match end is delivered at least once)
    difference = c.levels[0] - c.levels[1]
    high_vp, low_vp = victory_points(difference)
    recorded = ResultRecorded(rnd.number, table.table, c.game_id, difference, str(high_vp), str(low_vp), c.now)
    done = replace(table, result=TableResult(difference, high_vp, low_vp, c.game_id))
    tables = tuple(done if t.table == table.table else t for t in rnd.tables)
    return [recorded, *_ended(tournament, rnd, c.now, tables)]


def _forfeit(tournament: Tournament, c: RecordForfeit) -> list[Event]:
    rnd = tournament.round(c.round)
    for table in rnd.tables:
        if c.team_id in (table.high, table.low):
            break
    else:
        if rnd.bye == c.team_id:
            raise _refuse(
                f"team {c.team_id} has the bye in round {c.round}: there is no match to forfeit", Reason.RESULT_STATE
            )
        raise TournamentError(Reason.ROUND_NOT_FOUND, f"team {c.team_id} has no table in round {c.round}")
    if table.result is not None:
        raise _refuse(f"table {table.table} of round {c.round} has its result already", Reason.RESULT_STATE)
    stays = table.low if c.team_id == table.high else table.high
    earlier = [r.vp for r in round_results(tournament) if r.team_id == stays and r.round < c.round]
    stays_vp = forfeit_vp(earlier)
    recorded = ForfeitRecorded(c.round, table.table, c.team_id, stays, str(stays_vp), c.by, c.now)
    high_vp, low_vp = (stays_vp, FORFEIT_LOSER_VP) if stays == table.high else (FORFEIT_LOSER_VP, stays_vp)
    done = replace(table, result=TableResult(0, high_vp, low_vp, forfeited_by=c.team_id))
    tables = tuple(done if t.table == table.table else t for t in rnd.tables)
    return [recorded, *_ended(tournament, rnd, c.now, tables)]


def _in_round(rnd: Round, team_id: str) -> bool:
    return rnd.bye == team_id or any(team_id in (t.high, t.low) for t in rnd.tables)


def _appeal(tournament: Tournament, c: FileAppeal) -> list[Event]:
    rnd = tournament.round(c.round)
    team = tournament.team(c.team_id)
    if c.by not in team.players:
        raise TournamentError(Reason.NOT_TEAM_MEMBER, f"{c.by} does not play for team {team.name!r}")
    if not _in_round(rnd, c.team_id):
        raise _refuse(f"team {team.name!r} did not play in round {c.round}", Reason.NOT_TEAM_MEMBER)
    if not rnd.ended:
        raise _refuse(
            f"round {c.round} has not ended: an appeal is filed after the round (第三章)", Reason.APPEAL_STATE
        )
    if c.now - rnd.ended_at > APPEAL_WINDOW_MS:
        minutes = (c.now - rnd.ended_at) // 60_000
        raise _refuse(
            f"round {c.round} ended {minutes} minutes ago: an appeal must be filed within 30 minutes (第三章 二)",
            Reason.APPEAL_STATE,
        )
    text = _text(c.text, "appeal", 2000, lines=True)
    return [AppealFiled(len(tournament.appeals) + 1, c.round, c.team_id, c.by, text, c.now)]


def _resolve(tournament: Tournament, c: ResolveAppeal) -> list[Event]:
    if not 1 <= c.appeal <= len(tournament.appeals):
        raise TournamentError(Reason.ROUND_NOT_FOUND, f"there is no appeal {c.appeal}")
    appeal = tournament.appeals[c.appeal - 1]
    if appeal.resolved:
        raise _refuse(f"appeal {c.appeal} was resolved already", Reason.APPEAL_STATE)
    decision = _text(c.decision, "decision", 2000, lines=True)
    events: list[Event] = [AppealResolved(c.appeal, c.upheld, decision, c.by, c.now)]
    if c.corrected_difference is not None:
        if not c.upheld:
            raise _invalid("only an upheld appeal corrects a result")
        rnd = tournament.round(appeal.round)
        table = next((t for t in rnd.tables if appeal.team_id in (t.high, t.low)), None)
        if table is None or table.result is None or table.result.forfeited_by:
            raise _refuse("the appeal's team has no played table result in that round to correct", Reason.RESULT_STATE)
        high_vp, low_vp = victory_points(c.corrected_difference)
        events.append(
            ResultCorrected(rnd.number, table.table, c.corrected_difference, str(high_vp), str(low_vp), c.appeal)
        )
    return events


def _confirm(tournament: Tournament, c: ConfirmSheet) -> list[Event]:
    rnd = tournament.round(c.round)
    team = tournament.team(c.team_id)
    if c.by not in team.players:
        raise TournamentError(
            Reason.NOT_TEAM_MEMBER, f"{c.by} does not play for team {team.name!r}: it confirms its own sheet"
        )
    if not _in_round(rnd, c.team_id):
        raise _refuse(f"team {team.name!r} did not play in round {c.round}", Reason.NOT_TEAM_MEMBER)
    table = next((t for t in rnd.tables if c.team_id in (t.high, t.low)), None)
    if table is not None and table.result is None:
        raise _refuse(f"table {table.table} of round {c.round} has no result to confirm yet", Reason.RESULT_STATE)
    if any(team_id == c.team_id for team_id, _, _ in rnd.confirmations):
        raise TournamentError(Reason.RESULT_STATE, f"team {team.name!r} confirmed round {c.round} already")
    return [SheetConfirmed(c.round, c.team_id, c.by, c.now)]


# --- evolve -----------------------------------------------------------------------------------------


def _with_round(tournament: Tournament, rnd: Round) -> Tournament:
    played = tuple(rnd if r.number == rnd.number else r for r in tournament.played)
    return replace(tournament, played=played)


def _with_table(tournament: Tournament, number: int, table_no: int, result: TableResult) -> Tournament:
    rnd = tournament.played[number - 1]
    tables = tuple(replace(t, result=result) if t.table == table_no else t for t in rnd.tables)
    return _with_round(tournament, replace(rnd, tables=tables))


def evolve(tournament: Tournament, event: Stored) -> Tournament:
    if isinstance(event, RatingUpdated):
        return tournament
    if isinstance(event, Created):
        return Tournament(
            event.tournament_id,
            event.name,
            event.game,
            event.rounds,
            event.round_minutes,
            event.deals,
            event.seed,
            event.organiser,
            event.at,
            Status.REGISTERING,
        )
    if isinstance(event, TeamRegistered):
        team = TeamEntry(event.team_id, event.name, event.players, event.player_names)
        proposals = tuple(p for p in tournament.proposals if p.team_id != event.team_id)
        return replace(tournament, teams=(*tournament.teams, team), proposals=proposals)
    if isinstance(event, TeamProposed):
        proposal = Proposal(
            event.team_id, event.name, event.players, event.player_names, event.by, event.at, (event.by,)
        )
        return replace(tournament, proposals=(*tournament.proposals, proposal))
    if isinstance(event, TeamMemberConfirmed):
        proposals = tuple(
            replace(p, confirmed=(*p.confirmed, event.by)) if p.team_id == event.team_id else p
            for p in tournament.proposals
        )
        return replace(tournament, proposals=proposals)
    if isinstance(event, TeamProposalWithdrawn):
        return replace(tournament, proposals=tuple(p for p in tournament.proposals if p.team_id != event.team_id))
    if isinstance(event, DrawMade):
        draws = dict(zip(event.team_ids, event.draws, strict=True))
        return replace(tournament, teams=tuple(replace(t, draw=draws[t.team_id]) for t in tournament.teams))
    if isinstance(event, RoundPaired):
        tables = tuple(RoundTable(t.table, t.high, t.low, t.table_id) for t in event.tables)
        rnd = Round(event.round, event.at, tables, event.bye)
        # round 1 closes registration: proposals still waiting lapse
        return replace(tournament, status=Status.PLAYING, played=(*tournament.played, rnd), proposals=())
    if isinstance(event, ResultRecorded):
        result = TableResult(event.difference, Decimal(event.high_vp), Decimal(event.low_vp), event.game_id)
        return _with_table(tournament, event.round, event.table, result)
    if isinstance(event, ForfeitRecorded):
        table = next(t for t in tournament.played[event.round - 1].tables if t.table == event.table)
        stays_vp = Decimal(event.stays_vp)
        high_vp, low_vp = (stays_vp, FORFEIT_LOSER_VP) if event.stays == table.high else (FORFEIT_LOSER_VP, stays_vp)
        return _with_table(
            tournament, event.round, event.table, TableResult(0, high_vp, low_vp, "", event.forfeited_by)
        )
    if isinstance(event, RoundEnded):
        return _with_round(tournament, replace(tournament.played[event.round - 1], ended_at=event.at))
    if isinstance(event, Finished):
        return replace(tournament, status=Status.FINISHED)
    if isinstance(event, AppealFiled):
        appeal = Appeal(event.appeal, event.round, event.team_id, event.by, event.text, event.at)
        return replace(tournament, appeals=(*tournament.appeals, appeal))
    if isinstance(event, AppealResolved):
        appeals = tuple(
            replace(a, resolved=True, upheld=event.upheld, decision=event.decision, referee=event.referee)
            if a.appeal == event.appeal
            else a
            for a in tournament.appeals
        )
        return replace(tournament, appeals=appeals)
    if isinstance(event, ResultCorrected):
        table = next(t for t in tournament.played[event.round - 1].tables if t.table == event.table)
        assert table.result is not None
        result = replace(
            table.result, difference=event.difference, high_vp=Decimal(event.high_vp), low_vp=Decimal(event.low_vp)
        )
        return _with_table(tournament, event.round, event.table, result)
    if isinstance(event, SheetConfirmed):
        rnd = tournament.played[event.round - 1]
        confirmations = (*rnd.confirmations, (event.team_id, event.by, event.at))
        return _with_round(tournament, replace(rnd, confirmations=confirmations))
    raise TypeError(f"not a tournament event: {event!r}")
