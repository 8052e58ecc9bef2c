"""`ScoringService` over gRPC (grpc.aio): tournaments, standings, result sheets, match scores, statistics.

Tournaments are aggregates of the TOURNAMENTS stream (`paiju.scoring.tournament`, through the same
`Aggregates` as the lobby's tables): commands are decided on the current state and appended at the position
read, so two referees pairing the same round at once pair it once. Match scores, player statistics and
leaderboards come from the PostgreSQL read models (`paiju.scoring.readmodels`).

Who may do what (bearer tokens, `paiju.platform.tokens`, as for the lobby and the engine): admins
and referees create tournaments, register teams at once (for players who agreed with them, e.g. at the desk),
withdraw team proposals, pair rounds, record forfeits and resolve appeals; a player proposes a team they play
in (`RegisterTeam` with a player token: registered only once every other player named has consented with
`ConfirmTeam` under their own token), confirms or declines a proposal they are named in, files an appeal and
confirms a sheet for their own team; any valid token reads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import asyncpg
import grpc
import structlog
from google.protobuf.timestamp_pb2 import Timestamp

from paiju.platform.edge import Policy, caller
from paiju.platform.errors import Reason, Refused
from paiju.platform.limits import RateLimits
from paiju.platform.repository import Aggregates, CommandIdReused
from paiju.platform.tokens import Audience, Identity, Revocations, Role, Trust, Verifier
from paiju.scoring import tournament as tm
from paiju.scoring.games import GAMES
from paiju.scoring.reports import result_sheet
from paiju.scoring.sheets import SheetDeal, sheet_csv, sheet_html
from paiju.v1 import scoring_pb2, scoring_pb2_grpc

RATE_LIMITS = """
    RegisterTeam:account=10/minute; ConfirmTeam:account=30/minute; DeclineTeam:account=30/minute;
    FileAppeal:account=10/minute; ConfirmSheet:account=30/minute; GetTournament:account=120/minute;
    GetStandings:account=120/minute; GetResultSheet:account=60/minute; GetMatchScore:account=120/minute;
    GetPlayerStats:account=120/minute; GetLeaderboard:account=60/minute
"""
"""Scoring's rate limits (`paiju.platform.limits`), by account."""
ORGANISERS = (Role.ADMIN, Role.REFEREE)
ROLES = dict.fromkeys(
    ("CreateTournament", "PairRound", "EndTournament", "RecordForfeit", "ResolveAppeal"), (Role.REFEREE, Role.ADMIN)
)
"""The organisers' methods: the edge refuses any other caller (ROLE_REQUIRED)."""
log = structlog.get_logger("paiju.scoring")


def new_tournaments(store: Any) -> Aggregates[tm.Tournament]:
    from paiju.scoring.contract import TOURNAMENT_EVENTS
    from paiju.v1 import tournament_events_pb2

    return Aggregates(
        store, TOURNAMENT_EVENTS, tm.Tournament, tm.decide, tm.evolve, envelope=tournament_events_pb2.TournamentEnvelope
    )


def _timestamp(ms: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromMilliseconds(ms)
    return stamp


def _vp(value: Decimal) -> str:
    return str(value)


def round_message(rnd: tm.Round) -> scoring_pb2.TournamentRound:
    message = scoring_pb2.TournamentRound(
        round=rnd.number, bye=rnd.bye, ended=rnd.ended, paired_at=_timestamp(rnd.paired_at)
    )
    if rnd.ended:
        message.ended_at.CopyFrom(_timestamp(rnd.ended_at))
    message.confirmed_teams.extend(team_id for team_id, _, _ in rnd.confirmations)
    for table in rnd.tables:
        row = message.tables.add(table=table.table, table_id=table.table_id, high=table.high, low=table.low)
        if table.result is not None:
            row.has_result = True
            row.difference = table.result.difference
            row.high_vp = _vp(table.result.high_vp)
            row.low_vp = _vp(table.result.low_vp)
            row.forfeited_by = table.result.forfeited_by
            row.game_id = table.result.game_id
    return message


def appeal_message(appeal: tm.Appeal) -> scoring_pb2.TournamentAppeal:
    return scoring_pb2.TournamentAppeal(
        appeal=appeal.appeal,
        round=appeal.round,
        team_id=appeal.team_id,
        by=appeal.by,
        text=appeal.text,
        filed_at=_timestamp(appeal.filed_at),
        resolved=appeal.resolved,
        upheld=appeal.upheld,
        decision=appeal.decision,
        referee=appeal.referee,
    )


def proposal_message(p: tm.Proposal) -> scoring_pb2.TeamProposal:
    message = scoring_pb2.TeamProposal(
        team_id=p.team_id,
        name=p.name,
        proposed_by=p.proposed_by,
        proposed_at=_timestamp(p.proposed_at),
        confirmed=p.confirmed,
        waiting_for=p.waiting_for,
    )
    for player, name in zip(p.players, p.player_names, strict=True):
        message.players.add(player_id=player, name=name)
    return message


def tournament_message(t: tm.Tournament) -> scoring_pb2.Tournament:
    message = scoring_pb2.Tournament(
        tournament_id=t.tournament_id,
        name=t.name,
        game=t.game,
        rounds=t.rounds,
        round_minutes=t.round_minutes,
        deals=t.deals,
        status=t.status.value,
        seed=t.seed,
    )
    for team in t.teams:
        row = message.teams.add(team_id=team.team_id, name=team.name, draw=team.draw)
        for player, name in zip(team.players, team.player_names, strict=True):
            row.players.add(player_id=player, name=name)
    message.played.extend(round_message(r) for r in t.played)
    message.appeals.extend(appeal_message(a) for a in t.appeals)
    message.proposals.extend(proposal_message(p) for p in t.proposals)
    return message


class ScoringService(scoring_pb2_grpc.ScoringServiceServicer):
    def __init__(
        self,
        tournaments: Aggregates[tm.Tournament],
        pool: asyncpg.Pool[Any],
        trust: Trust,
        *,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        limits: RateLimits | None = None,
        revocations: Revocations | None = None,
    ) -> None:
        """``revocations``: the lobby's revoked sessions, refused here too (``None``: no lobby stream to read them
        from)."""
        self._tournaments = tournaments
        self._revocations = revocations
        self._pool = pool
        self._now_ms = now_ms
        self.verifier = Verifier(trust, lambda: now_ms() // 1000, Audience.SCORING)
        self.policy = Policy(authenticator=self.verifier, limits=limits, roles=ROLES)
        """What the gRPC edge does for this service (every method needs a token)."""

    # --- helpers ------------------------------------------------------------------------------------

    @staticmethod
    def _organiser() -> Identity:
        """The caller of an organiser's method (a referee or an admin: the edge's policy checked it)."""
        who: Identity = caller()
        return who

    async def _player(self) -> Identity:
        """The caller of a player's write: a lobby session, not a game token, not revoked."""
        who: Identity = caller()
        if who.role is not Role.PLAYER:
            raise Refused(Reason.ROLE_REQUIRED, "sign in as a player to do this", {"required": "player"})
        return await self._session(who)

    async def _reader(self) -> None:
        """A read is anyone's with a valid token, but not with a session the lobby has revoked (or a game token
        minted under one): TOKEN_REVOKED."""
        if self._revocations is not None:
            await self._revocations.check(caller())

    async def _session(self, who: Identity) -> Identity:
        """``who``, a player, if their token is a lobby session (a game token is for the engine: SESSION_REQUIRED)
        of a session the lobby has not revoked (TOKEN_REVOKED)."""
        if who.game is not None:
            raise Refused(
                Reason.SESSION_REQUIRED,
                "a game token plays one game: scoring takes your lobby session token (from Login)",
            )
        if self._revocations is not None:
            await self._revocations.check(who)
        return who

    async def _tournament(self, tournament_id: str) -> tm.Tournament:
        state = (await self._tournaments.load(tournament_id)).state
        if state.status is tm.Status.NEW:
            raise Refused(
                Reason.TOURNAMENT_NOT_FOUND, f"there is no tournament {tournament_id!r}", {"tournament": tournament_id}
            )
        return state

    async def _act(self, tournament_id: str, command: Any, who: Identity, request: Any) -> tm.Tournament:
        """Decide and append on an existing tournament (or create one); a retry (same command id, same request,
        same caller) is answered with the state."""
        if not isinstance(command, tm.CreateTournament):
            await self._tournament(tournament_id)
        digest = hashlib.sha256(
            type(request).__name__.encode() + who.subject.encode() + request.SerializeToString(deterministic=True)
        ).digest()
        try:
            loaded, _ = await self._tournaments.act(
                tournament_id, command, request.command_id, who.subject, digest=digest
            )
        except CommandIdReused as e:
            raise Refused(Reason.COMMAND_ID_REUSED, str(e)) from None
        return loaded.state

    # --- tournaments --------------------------------------------------------------------------------

    async def CreateTournament(
        self, request: scoring_pb2.CreateTournamentRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.CreateTournamentResponse:
        who = self._organiser()
        # the id follows from the caller and the command id, so a retry names the same tournament
        tournament_id = "tour" + _derived(who.subject, request.command_id)
        seed = request.seed if request.HasField("seed") else secrets.randbits(63)
        game = GAMES.get(request.game)  # a game scoring does not know: the tournament refuses it
        deals = request.deals or (game.default_deals if game is not None else 0)
        command = tm.CreateTournament(
            tournament_id,
            request.name,
            request.game,
            request.rounds,
            request.round_minutes,
            deals,
            seed,
            who.subject,
            self._now_ms(),
        )
        state = await self._act(tournament_id, command, who, request)
        return scoring_pb2.CreateTournamentResponse(tournament=tournament_message(state))

    async def RegisterTeam(
        self, request: scoring_pb2.RegisterTeamRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.RegisterTeamResponse:
        """An organiser registers the team at once; a player proposes a team they play in (the other players
        named consent with ConfirmTeam)."""
        who: Identity = caller()
        team_id = "team" + _derived(request.tournament_id, who.subject, request.command_id)
        players = tuple(p.player_id for p in request.players)
        names = tuple(p.name for p in request.players)
        command: tm.RegisterTeam | tm.ProposeTeam
        if who.role in ORGANISERS:
            command = tm.RegisterTeam(team_id, request.name, players, names, who.subject, self._now_ms())
        elif who.role is Role.PLAYER:
            await self._session(who)
            command = tm.ProposeTeam(team_id, request.name, players, names, who.subject, self._now_ms())
        else:
            raise Refused(
                Reason.ROLE_REQUIRED,
                "a player proposes a team they play in; a referee or an admin registers one",
                {"required": "player, referee or admin"},
            )
        state = await self._act(request.tournament_id, command, who, request)
        response = scoring_pb2.RegisterTeamResponse(team_id=team_id, tournament=tournament_message(state))
        proposal = state.proposal_of(team_id)
        if proposal is not None:
            response.proposal.CopyFrom(proposal_message(proposal))
        return response

    async def ConfirmTeam(
        self, request: scoring_pb2.ConfirmTeamRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.ConfirmTeamResponse:
        """A player consents to a proposed team they are named in (their own consent: their own token)."""
        who = await self._player()
        command = tm.ConfirmTeam(request.team_id, who.subject, self._now_ms())
        state = await self._act(request.tournament_id, command, who, request)
        registered = any(team.team_id == request.team_id for team in state.teams)
        return scoring_pb2.ConfirmTeamResponse(registered=registered, tournament=tournament_message(state))

    async def DeclineTeam(
        self, request: scoring_pb2.DeclineTeamRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.DeclineTeamResponse:
        """A player named in a proposal declines it (its proposer withdraws it), or an organiser withdraws it."""
        who: Identity = caller()
        if who.role not in (*ORGANISERS, Role.PLAYER):
            raise Refused(
                Reason.ROLE_REQUIRED,
                "a player named in the proposal declines it; a referee or an admin withdraws it",
                {"required": "player, referee or admin"},
            )
        if who.role is Role.PLAYER:
            await self._session(who)
        command = tm.DeclineTeam(request.team_id, who.subject, self._now_ms(), organiser=who.role in ORGANISERS)
        state = await self._act(request.tournament_id, command, who, request)
        return scoring_pb2.DeclineTeamResponse(tournament=tournament_message(state))

    async def PairRound(
        self, request: scoring_pb2.PairRoundRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.PairRoundResponse:
        who = self._organiser()
        state = await self._act(request.tournament_id, tm.PairRound(who.subject, self._now_ms()), who, request)
        return scoring_pb2.PairRoundResponse(round=round_message(state.played[-1]))

    async def EndTournament(
        self, request: scoring_pb2.EndTournamentRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.EndTournamentResponse:
        who = self._organiser()
        command = tm.EndTournament(who.subject, self._now_ms())
        state = await self._act(request.tournament_id, command, who, request)
        return scoring_pb2.EndTournamentResponse(tournament=tournament_message(state))

    async def RecordForfeit(
        self, request: scoring_pb2.RecordForfeitRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.RecordForfeitResponse:
        who = self._organiser()
        command = tm.RecordForfeit(request.round, request.team_id, who.subject, self._now_ms())
        state = await self._act(request.tournament_id, command, who, request)
        return scoring_pb2.RecordForfeitResponse(round=round_message(state.round(request.round)))

    async def FileAppeal(
        self, request: scoring_pb2.FileAppealRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.FileAppealResponse:
        who = await self._player()
        before = await self._tournament(request.tournament_id)
        command = tm.FileAppeal(request.round, request.team_id, who.subject, request.text, self._now_ms())
        state = await self._act(request.tournament_id, command, who, request)
        filed = state.appeals[len(before.appeals)] if len(state.appeals) > len(before.appeals) else None
        if filed is None:  # a retry: the appeal this caller filed for the team and round
            filed = next(
                a
                for a in reversed(state.appeals)
                if a.by == who.subject and a.team_id == request.team_id and a.round == request.round
            )
        return scoring_pb2.FileAppealResponse(appeal=appeal_message(filed))

    async def ResolveAppeal(
        self, request: scoring_pb2.ResolveAppealRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.ResolveAppealResponse:
        who = self._organiser()
        corrected = request.corrected_difference if request.HasField("corrected_difference") else None
        command = tm.ResolveAppeal(
            request.appeal, request.upheld, request.decision, who.subject, self._now_ms(), corrected
        )
        state = await self._act(request.tournament_id, command, who, request)
        return scoring_pb2.ResolveAppealResponse(appeal=appeal_message(state.appeals[request.appeal - 1]))

    async def ConfirmSheet(
        self, request: scoring_pb2.ConfirmSheetRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.ConfirmSheetResponse:
        who = await self._player()
        command = tm.ConfirmSheet(request.round, request.team_id, who.subject, self._now_ms())
        state = await self._act(request.tournament_id, command, who, request)
        return scoring_pb2.ConfirmSheetResponse(round=round_message(state.round(request.round)))

    async def GetTournament(
        self, request: scoring_pb2.GetTournamentRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.GetTournamentResponse:
        await self._reader()
        state = await self._tournament(request.tournament_id)
        return scoring_pb2.GetTournamentResponse(tournament=tournament_message(state))

    async def GetStandings(
        self, request: scoring_pb2.GetStandingsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.GetStandingsResponse:
        await self._reader()
        state = await self._tournament(request.tournament_id)
        response = scoring_pb2.GetStandingsResponse()
        if any(team.draw for team in state.teams):  # standings exist from the draw on
            for s in tm.current_standings(state):
                response.standings.add(
                    rank=s.rank,
                    team_id=s.team.team_id,
                    name=s.team.name,
                    draw=s.team.draw,
                    vp=_vp(s.vp),
                    rounds_won=s.rounds_won,
                    round_vp=[_vp(v) for v in s.by_round],
                )
        return response

    async def GetResultSheet(
        self, request: scoring_pb2.GetResultSheetRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.GetResultSheetResponse:
        await self._reader()
        state = await self._tournament(request.tournament_id)
        sheet = result_sheet(state, request.round)
        sheet = dataclasses.replace(sheet, deals=await self._sheet_deals(state, request.round))
        response = scoring_pb2.GetResultSheetResponse()
        for deal in sheet.deals:
            entry = response.deals.add(
                table=deal.table, game_id=deal.game_id, number=deal.number, deal=deal.deal, commitment=deal.commitment
            )
            if deal.server_seed is not None:
                entry.server_seed = deal.server_seed
        for line in sheet.lines:
            row = response.lines.add(
                table=line.table,
                draw=line.draw,
                team_id=line.team_id,
                team_name=line.team_name,
                difference=line.difference,
                vp=_vp(line.vp),
                remarks=line.remarks,
            )
            if line.confirmation is not None:
                row.confirmed_by = line.confirmation.player_id
                row.confirmed_at.FromDatetime(line.confirmation.at)
        if request.format == scoring_pb2.SHEET_FORMAT_CSV:
            response.content = sheet_csv(sheet).encode()
            response.content_type = "text/csv; charset=utf-8"
        elif request.format == scoring_pb2.SHEET_FORMAT_HTML:
            response.content = sheet_html(sheet).encode()
            response.content_type = "text/html; charset=utf-8"
        return response

    async def _sheet_deals(self, state: tm.Tournament, number: int) -> tuple[SheetDeal, ...]:
        """The deals of the round's games, with their commitments and revealed seeds, in table order."""
        games = {t.result.game_id: t.table for t in state.round(number).tables if t.result and t.result.game_id}
        if not games:
            return ()
        rows = await self._pool.fetch(
            "SELECT game_id, number, deal, commitment, server_seed FROM scoring_shuffles "
            "WHERE game_id = ANY($1::text[]) AND commitment IS NOT NULL ORDER BY game_id, number",
            list(games),
        )
        deals = [
            SheetDeal(games[r["game_id"]], r["game_id"], r["number"], r["deal"], r["commitment"], r["server_seed"])
            for r in rows
        ]
        return tuple(sorted(deals, key=lambda d: (d.table, d.number)))

    # --- read models --------------------------------------------------------------------------------

    async def GetMatchScore(
        self, request: scoring_pb2.GetMatchScoreRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.GetMatchScoreResponse:
        await self._reader()
        game = await self._pool.fetchrow(
            "SELECT game_id, game, ended, fold FROM scoring_games WHERE game_id = $1", request.game_id
        )
        if game is None:
            raise Refused(Reason.SCORE_NOT_FOUND, f"scoring has no game {request.game_id!r} (yet)")
        fold = json.loads(game["fold"])
        response = scoring_pb2.GetMatchScoreResponse(
            game_id=game["game_id"], game=game["game"], ended=game["ended"], players=fold["players"]
        )
        for deal in await self._pool.fetch(
            "SELECT * FROM scoring_deals WHERE game_id = $1 ORDER BY deal", request.game_id
        ):
            response.deals.add(
                deal=deal["deal"],
                players=deal["players"],
                order=deal["finishing_order"],
                caught=deal["caught"],
                outcome=deal["outcome"],
                team_points=deal["team_points"],
                individual_points=deal["individual_points"],
                dealer=deal["dealer"] or 0,
                trump=deal["trump"],
                attackers_points=deal["attackers_points"] or 0,
                winner=deal["winner"],
                levels_up=deal["levels_up"] or 0,
                levels=deal["levels"],
                level_rank=deal["level_rank"],
            )
        match = await self._pool.fetchrow("SELECT * FROM scoring_matches WHERE game_id = $1", request.game_id)
        if match is not None:
            response.team_points.extend(match["team_points"])
            response.individual_points.extend(match["individual_points"])
            response.levels.extend(match["levels"])
            response.difference = match["difference"]
            response.vp.extend([_vp(match["vp_a"]), _vp(match["vp_b"])])
        else:  # a running match: the totals so far
            response.team_points.extend(fold["team_totals"])
            response.individual_points.extend(fold["individual_totals"])
            response.levels.extend(fold["levels"])
        return response

    async def GetPlayerStats(
        self, request: scoring_pb2.GetPlayerStatsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.GetPlayerStatsResponse:
        await self._reader()
        row = await self._pool.fetchrow(
            "SELECT * FROM scoring_player_stats WHERE player_id = $1 AND game = $2", request.player_id, request.game
        )
        if row is None:
            raise Refused(Reason.SCORE_NOT_FOUND, f"{request.player_id!r} has not played {request.game} yet")
        return scoring_pb2.GetPlayerStatsResponse(
            player_id=row["player_id"],
            game=row["game"],
            deals=row["deals"],
            matches=row["matches"],
            matches_won=row["matches_won"],
            places=row["places"],
            big_tributes=row["places"][0],
            caught=row["caught"],
            individual_points=row["individual_points"],
            team_points=row["team_points"],
            attacking_deals=row["attacking_deals"],
            attacking_deals_won=row["attacking_deals_won"],
            defending_deals=row["defending_deals"],
            defending_deals_won=row["defending_deals_won"],
            levels_gained=row["levels_gained"],
        )

    async def GetLeaderboard(
        self, request: scoring_pb2.GetLeaderboardRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scoring_pb2.GetLeaderboardResponse:
        await self._reader()
        limit = request.limit or 50
        rows = await self._pool.fetch(
            """
            SELECT player_id, score, matches_won, matches, deals FROM scoring_player_stats WHERE game = $1
            ORDER BY score DESC, matches_won DESC, player_id LIMIT $2
            """,
            request.game,
            limit,
        )
        response = scoring_pb2.GetLeaderboardResponse()
        for rank, row in enumerate(rows, start=1):
            response.rows.add(
                rank=rank, **{k: row[k] for k in ("player_id", "score", "matches_won", "matches", "deals")}
            )
        return response


def _derived(*parts: str) -> str:
    """A short id that follows from its parts (a retried creation names the same thing)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)).hex[:12]
