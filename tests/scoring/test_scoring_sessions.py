"""Scoring takes a player's writes from a lobby session only: not from a game token (it is for the engine), and not
from a session the lobby has revoked (Logout), whose refusal reaches scoring from the lobby's stream."""

from __future__ import annotations

import asyncio

import grpc

from paiju.platform.tokens import Role
from paiju.v1 import lobby_pb2, scoring_pb2

from ..engine.harness import refusal_of
from ..support.credentials import bearer
from ..support.tokens import token_metadata
from ..support.waiting import wait_until
from .stack import scoring_stack

ADMIN = token_metadata(role=Role.ADMIN, subject="organiser")


def test_scoring_refuses_revoked_sessions_and_game_tokens_for_player_writes(nats_url: str, database_dsn: str) -> None:
    async def body() -> None:
        async with scoring_stack(nats_url, database_dsn) as s:
            tid = (
                await s.scoring.CreateTournament(
                    scoring_pb2.CreateTournamentRequest(command_id="c", name="Cup", game="tractor", rounds=1, seed=3),
                    metadata=ADMIN,
                )
            ).tournament.tournament_id
            ann, ann_session = await s.base.player("ann")
            bo, _ = await s.base.player("bo")

            def team(command_id: str) -> scoring_pb2.RegisterTeamRequest:
                request = scoring_pb2.RegisterTeamRequest(command_id=command_id, tournament_id=tid, name=command_id)
                request.players.add(player_id=ann, name="ann")
                request.players.add(player_id=bo, name="bo")
                return request

            # a game token of ann's (as the lobby mints it, with no audience named) is no session
            game_token = token_metadata(role=Role.PLAYER, subject=ann, game="some-game", seat=0)
            assert await refusal_of(s.scoring.RegisterTeam(team("t1"), metadata=game_token)) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "SESSION_REQUIRED",
            )
            appeal = scoring_pb2.FileAppealRequest(command_id="a", tournament_id=tid, round=1, team_id="x", text="t")
            assert await refusal_of(s.scoring.FileAppeal(appeal, metadata=game_token)) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "SESSION_REQUIRED",
            )
            # ann's session is taken, until she signs out
            proposed = await s.scoring.RegisterTeam(team("t2"), metadata=ann_session)
            await s.base.lobby.Logout(lobby_pb2.LogoutRequest(), metadata=ann_session)

            async def revoked() -> bool:
                answer = await refusal_of(s.scoring.RegisterTeam(team("t3"), metadata=ann_session))
                return answer == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")

            await wait_until(revoked, "scoring to refuse the revoked session")
            read = scoring_pb2.GetTournamentRequest(tournament_id=tid)
            assert await refusal_of(s.scoring.GetTournament(read, metadata=ann_session)) == (
                grpc.StatusCode.UNAUTHENTICATED,
                "TOKEN_REVOKED",
            )
            decline = scoring_pb2.DeclineTeamRequest(command_id="d", tournament_id=tid, team_id=proposed.team_id)
            assert await refusal_of(s.scoring.DeclineTeam(decline, metadata=ann_session)) == (
                grpc.StatusCode.UNAUTHENTICATED,
                "TOKEN_REVOKED",
            )
            again = await s.base.lobby.Login(lobby_pb2.LoginRequest(name="ann", password="correct horse battery"))
            declined = await s.scoring.DeclineTeam(decline, metadata=bearer(again.session.token))
            assert declined.tournament.proposals == []

    asyncio.run(body())
