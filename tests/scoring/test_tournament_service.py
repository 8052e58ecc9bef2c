"""A whole 砸六家 Swiss tournament through the real services: scoring pairs, the lobby opens the tables, the
engine plays the games, scoring records the results; standings, result sheets, projections and bad input; a
player's team registered only with its players' consent."""

from __future__ import annotations

import asyncio
import csv
import tempfile
from collections.abc import Callable, Coroutine
from decimal import Decimal
from pathlib import Path
from typing import Any

import grpc
import pytest

from paiju.cli import main as paiju_main
from paiju.platform.tokens import Role
from paiju.rules.fairness import commitment
from paiju.rules.rng import SeededRandom
from paiju.scoring.sheets import read_sheet_csv
from paiju.v1 import engine_pb2, lobby_pb2, scoring_pb2, zlj_pb2

from ..engine.harness import reason_of, refusal_of, status_of
from ..support.tokens import token_metadata
from ..support.waiting import wait_until
from .stack import Scoring, scoring_stack

ADMIN = token_metadata(role=Role.ADMIN, subject="admin-1")


def run(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(body())


async def play_zlj_game(s: Scoring, game_id: str, players: list[str], rng: SeededRandom) -> None:
    """Each seat played by its own player's token, random legal actions, to the match's end."""
    await s.base.game_exists(game_id)
    # whose turn it is, from the public view as it stands (a tournament table's spectators see it delayed)
    spectator = token_metadata(role=Role.ANALYST, subject="watcher")
    tokens = [token_metadata(role=Role.PLAYER, subject=p, game=game_id, seat=seat) for seat, p in enumerate(players)]
    for _ in range(3000):
        view = await s.base.engine.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=spectator)
        if view.zlj.phase == zlj_pb2.ZLJ_PHASE_ENDED:
            return
        seat = view.zlj.turn
        legal = await s.base.engine.GetLegalActions(
            engine_pb2.GetLegalActionsRequest(game_id=game_id, min_version=view.version), metadata=tokens[seat]
        )
        choice = legal.actions[rng.below(len(legal.actions))]
        request = engine_pb2.ActRequest(game_id=game_id, command_id=f"{game_id}-{view.version}")
        request.zlj.CopyFrom(choice.zlj)
        await s.base.engine.Act(request, metadata=tokens[seat])
    raise AssertionError(f"{game_id} did not end")


async def tournament(s: Scoring, tournament_id: str) -> scoring_pb2.Tournament:
    response: scoring_pb2.GetTournamentResponse = await s.scoring.GetTournament(
        scoring_pb2.GetTournamentRequest(tournament_id=tournament_id), metadata=ADMIN
    )
    return response.tournament


async def round_ended(s: Scoring, tournament_id: str, number: int) -> scoring_pb2.Tournament:
    """The tournament once its round ``number`` has ended (scoring projects the results in the background)."""
    seen: list[scoring_pb2.Tournament] = []

    async def ended() -> scoring_pb2.Tournament | None:
        seen[:] = [await tournament(s, tournament_id)]
        t = seen[0]
        return t if len(t.played) >= number and t.played[number - 1].ended else None

    return await wait_until(
        ended, f"round {number} to end", every=0.1, explain=lambda: f"rounds played: {seen[0].played if seen else None}"
    )


def test_a_zlj_swiss_tournament_from_pairing_to_standings_sheets_and_read_models(
    nats_url: str, database_dsn: str
) -> None:
    async def body() -> None:
        async with scoring_stack(nats_url, database_dsn) as s:
            created = await s.scoring.CreateTournament(
                scoring_pb2.CreateTournamentRequest(
                    command_id="create-1", name="周五砸六家", game="zlj", rounds=2, deals=1, seed=2026
                ),
                metadata=ADMIN,
            )
            tid = created.tournament.tournament_id
            # a retry of the creation is the same tournament, created once
            again = await s.scoring.CreateTournament(
                scoring_pb2.CreateTournamentRequest(
                    command_id="create-1", name="周五砸六家", game="zlj", rounds=2, deals=1, seed=2026
                ),
                metadata=ADMIN,
            )
            assert again.tournament.tournament_id == tid
            players: dict[str, list[str]] = {}
            for t in range(4):
                members = [(await s.base.player(f"p{t}{i}"))[0] for i in range(3)]
                request = scoring_pb2.RegisterTeamRequest(command_id=f"team-{t}", tournament_id=tid, name=f"队{t}")
                for member in members:
                    request.players.add(player_id=member, name=member)
                # a player registers their own team: proposed, and registered once the other two consented
                proposed = await s.scoring.RegisterTeam(
                    request, metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=members[0])
                )
                assert proposed.proposal.waiting_for == members[1:]
                for i, member in enumerate(members[1:], start=1):
                    confirmed = await s.scoring.ConfirmTeam(
                        scoring_pb2.ConfirmTeamRequest(
                            command_id=f"consent-{t}-{i}", tournament_id=tid, team_id=proposed.team_id
                        ),
                        metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=member),
                    )
                    assert confirmed.registered == (i == 2)
                players[proposed.team_id] = members

            rng = SeededRandom(9)
            met: set[frozenset[str]] = set()
            for number in (1, 2):
                paired = (
                    await s.scoring.PairRound(
                        scoring_pb2.PairRoundRequest(command_id=f"pair-{number}", tournament_id=tid), metadata=ADMIN
                    )
                ).round
                assert paired.round == number and len(paired.tables) == 2 and not paired.bye
                for table in paired.tables:
                    pair = frozenset((table.high, table.low))
                    assert pair not in met, "a rematch"
                    met.add(pair)
                    seats = [p for pair_ in zip(players[table.high], players[table.low], strict=True) for p in pair_]
                    if number == 1 and table.table == 1:
                        # pairing the next round before this one ended is refused, and changes nothing
                        before = await tournament(s, tid)
                        code = await status_of(
                            s.scoring.PairRound(
                                scoring_pb2.PairRoundRequest(command_id="too-early", tournament_id=tid), metadata=ADMIN
                            )
                        )
                        assert code == grpc.StatusCode.FAILED_PRECONDITION
                        assert await tournament(s, tid) == before
                    await play_zlj_game(s, f"{table.table_id}-m1", seats, rng)
                await round_ended(s, tid, number)

            final = await tournament(s, tid)
            assert final.status == "finished"
            # the standings follow the recorded VP; every table's VP sum to 30 (§10, S-1)
            standings = (
                await s.scoring.GetStandings(scoring_pb2.GetStandingsRequest(tournament_id=tid), metadata=ADMIN)
            ).standings
            totals: dict[str, Decimal] = dict.fromkeys(players, Decimal(0))
            for rnd in final.played:
                for table in rnd.tables:
                    assert Decimal(table.high_vp) + Decimal(table.low_vp) == 30
                    totals[table.high] += Decimal(table.high_vp)
                    totals[table.low] += Decimal(table.low_vp)
            assert {row.team_id: Decimal(row.vp) for row in standings} == totals
            assert [Decimal(row.vp) for row in standings] == sorted(totals.values(), reverse=True)
            assert [row.rank for row in standings] == [1, 2, 3, 4]

            # the result sheet as CSV reloads to the same lines the API gives, and the HTML names every team
            sheet = await s.scoring.GetResultSheet(
                scoring_pb2.GetResultSheetRequest(tournament_id=tid, round=1, format=scoring_pb2.SHEET_FORMAT_CSV),
                metadata=ADMIN,
            )
            reloaded = read_sheet_csv(sheet.content.decode())
            assert [(x.table, x.team_id, x.difference, str(x.vp)) for x in reloaded.lines] == [
                (x.table, x.team_id, x.difference, x.vp) for x in sheet.lines
            ]
            html = await s.scoring.GetResultSheet(
                scoring_pb2.GetResultSheetRequest(tournament_id=tid, round=2, format=scoring_pb2.SHEET_FORMAT_HTML),
                metadata=ADMIN,
            )
            assert html.content_type.startswith("text/html")
            assert all(f"队{t}" in html.content.decode() for t in range(4))

            # each game of the round is dealt fairly: once the games are projected, the sheet carries every deal's
            # commitment and revealed seed, so a referee checks a deal without database access (docs/fairness.md)
            await s.project()
            fair = await s.scoring.GetResultSheet(
                scoring_pb2.GetResultSheetRequest(tournament_id=tid, round=1, format=scoring_pb2.SHEET_FORMAT_HTML),
                metadata=ADMIN,
            )
            assert {(d.table, d.deal) for d in fair.deals} == {(t.table, 1) for t in final.played[0].tables}
            for deal in fair.deals:
                assert deal.HasField("server_seed") and commitment(deal.server_seed) == deal.commitment
                assert (
                    deal.commitment.hex() in fair.content.decode() and deal.server_seed.hex() in fair.content.decode()
                )
            assert "发牌验证" in fair.content.decode()
            # confirmations: one of the team's players, once; not for another team
            team_ids = list(players)
            first = team_ids[0]
            code = await status_of(
                s.scoring.ConfirmSheet(
                    scoring_pb2.ConfirmSheetRequest(command_id="c-x", tournament_id=tid, round=1, team_id=first),
                    metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=players[team_ids[1]][0]),
                )
            )
            assert code == grpc.StatusCode.PERMISSION_DENIED
            confirmed = await s.scoring.ConfirmSheet(
                scoring_pb2.ConfirmSheetRequest(command_id="c-1", tournament_id=tid, round=1, team_id=first),
                metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=players[first][1]),
            )
            assert first in confirmed.round.confirmed_teams

            # appeals: within 30 minutes of the round's end, resolved by a referee
            referee = token_metadata(role=Role.REFEREE, now=s.clock.ms // 1000, subject="referee-1")
            appeal = await s.scoring.FileAppeal(
                scoring_pb2.FileAppealRequest(
                    command_id="a-1", tournament_id=tid, round=2, team_id=first, text="the timer ran early"
                ),
                metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=players[first][0]),
            )
            resolved = await s.scoring.ResolveAppeal(
                scoring_pb2.ResolveAppealRequest(
                    command_id="r-1", tournament_id=tid, appeal=appeal.appeal.appeal, upheld=False, decision="no"
                ),
                metadata=referee,
            )
            assert resolved.appeal.resolved and not resolved.appeal.upheld
            s.clock.ms += 31 * 60 * 1000
            before = await tournament(s, tid)
            code = await status_of(
                s.scoring.FileAppeal(
                    scoring_pb2.FileAppealRequest(
                        command_id="a-2", tournament_id=tid, round=2, team_id=first, text="late"
                    ),
                    metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=players[first][0]),
                )
            )
            assert code == grpc.StatusCode.FAILED_PRECONDITION
            assert await tournament(s, tid) == before

            # the read models: the tournament's results, each match's score, players' statistics, the leaderboard
            await s.project()
            rows = await s.pool.fetch(
                "SELECT team_id, sum(vp) AS vp FROM scoring_tournament_results WHERE tournament_id = $1 "
                "GROUP BY team_id",
                tid,
            )
            assert {r["team_id"]: r["vp"] for r in rows} == totals
            # the analysts' export of the tournament: its four games, one deal each
            out = Path(tempfile.mkdtemp(prefix="paiju-export-"))
            args = [
                "export",
                "--tournament",
                tid,
                "--format",
                "csv",
                "--out",
                str(out),
                "--nats",
                nats_url,
                "--stream",
                s.base.games_store.stream,
                "--prefix",
                s.base.games_store.prefix,
                "--tournaments-stream",
                s.tournaments_store.stream,
                "--tournaments-prefix",
                s.tournaments_store.prefix,
            ]
            assert await asyncio.to_thread(paiju_main, args) == 0
            with (out / "deals.csv").open(newline="", encoding="utf-8") as f:
                deals = list(csv.DictReader(f))
            expected = {f"{t.table_id}-m1" for rnd in final.played for t in rnd.tables}
            assert sorted(d["game_id"] for d in deals) == sorted(expected)
            # rebuilding the tournament results from the stream gives the same rows
            query = "SELECT * FROM scoring_tournament_results ORDER BY tournament_id, round, team_id"
            built = [tuple(r) for r in await s.pool.fetch(query)]
            await s.projectors[1].reset()
            await s.projectors[1].catch_up()
            assert [tuple(r) for r in await s.pool.fetch(query)] == built
            game_id = f"{final.played[0].tables[0].table_id}-m1"
            score = await s.scoring.GetMatchScore(scoring_pb2.GetMatchScoreRequest(game_id=game_id), metadata=ADMIN)
            assert score.ended and len(score.deals) == 1
            assert [Decimal(v) for v in score.vp] == [
                Decimal(final.played[0].tables[0].high_vp),
                Decimal(final.played[0].tables[0].low_vp),
            ]
            someone = players[first][0]
            stats = await s.scoring.GetPlayerStats(
                scoring_pb2.GetPlayerStatsRequest(player_id=someone, game="zlj"), metadata=ADMIN
            )
            assert stats.deals == 2 and stats.matches == 2 and sum(stats.places) <= 2
            board = await s.scoring.GetLeaderboard(scoring_pb2.GetLeaderboardRequest(game="zlj"), metadata=ADMIN)
            assert len(board.rows) == 12 and [r.rank for r in board.rows] == list(range(1, 13))

    run(body)


REASONS = {
    "register_someone_elses_team": "NOT_TEAM_MEMBER",
    "register_as_spectator": "ROLE_REQUIRED",
    "propose_with_a_registered_player": "TEAM_EXISTS",
    "confirm_as_stranger": "NOT_TEAM_MEMBER",
    "confirm_twice": "CONSENT_PENDING",
    "confirm_for_someone_as_admin": "ROLE_REQUIRED",
    "confirm_unknown_team": "TEAM_NOT_FOUND",
    "confirm_registered_team": "TEAM_EXISTS",
    "confirm_bad_team_id": "INVALID_REQUEST",
    "confirm_no_command_id": "INVALID_REQUEST",
    "decline_as_stranger": "NOT_TEAM_MEMBER",
    "decline_registered_team": "TEAM_EXISTS",
    "decline_bad_tournament_id": "INVALID_REQUEST",
}
"""The ErrorInfo reason of the refusals about teams and consent (errors.proto)."""


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("create_as_player", grpc.StatusCode.PERMISSION_DENIED),
        ("create_bad_game", grpc.StatusCode.INVALID_ARGUMENT),
        ("create_no_command_id", grpc.StatusCode.INVALID_ARGUMENT),
        ("register_twice", grpc.StatusCode.ALREADY_EXISTS),
        ("register_wrong_size", grpc.StatusCode.INVALID_ARGUMENT),
        ("register_someone_elses_team", grpc.StatusCode.PERMISSION_DENIED),
        ("register_as_spectator", grpc.StatusCode.PERMISSION_DENIED),
        ("propose_with_a_registered_player", grpc.StatusCode.ALREADY_EXISTS),
        ("confirm_as_stranger", grpc.StatusCode.PERMISSION_DENIED),
        ("confirm_twice", grpc.StatusCode.FAILED_PRECONDITION),
        ("confirm_for_someone_as_admin", grpc.StatusCode.PERMISSION_DENIED),
        ("confirm_unknown_team", grpc.StatusCode.NOT_FOUND),
        ("confirm_registered_team", grpc.StatusCode.ALREADY_EXISTS),
        ("confirm_bad_team_id", grpc.StatusCode.INVALID_ARGUMENT),
        ("confirm_no_command_id", grpc.StatusCode.INVALID_ARGUMENT),
        ("decline_as_stranger", grpc.StatusCode.PERMISSION_DENIED),
        ("decline_registered_team", grpc.StatusCode.ALREADY_EXISTS),
        ("decline_bad_tournament_id", grpc.StatusCode.INVALID_ARGUMENT),
        ("pair_one_team", grpc.StatusCode.FAILED_PRECONDITION),
        ("end_before_a_round", grpc.StatusCode.FAILED_PRECONDITION),
        ("end_as_player", grpc.StatusCode.PERMISSION_DENIED),
        ("unknown_tournament", grpc.StatusCode.NOT_FOUND),
        ("forged_token", grpc.StatusCode.UNAUTHENTICATED),
        ("sheet_of_unpaired_round", grpc.StatusCode.NOT_FOUND),
        ("stats_of_nobody", grpc.StatusCode.NOT_FOUND),
    ],
)
def test_bad_input_is_refused_with_a_reason_and_changes_nothing(
    nats_url: str, database_dsn: str, call: str, expected: grpc.StatusCode
) -> None:
    async def body() -> None:
        async with scoring_stack(nats_url, database_dsn) as s:
            tid = (
                await s.scoring.CreateTournament(
                    scoring_pb2.CreateTournamentRequest(command_id="c", name="Cup", game="tractor", rounds=3),
                    metadata=ADMIN,
                )
            ).tournament.tournament_id
            team = scoring_pb2.RegisterTeamRequest(command_id="t1", tournament_id=tid, name="Red")
            team.players.add(player_id="a", name="A")
            team.players.add(player_id="b", name="B")
            await s.scoring.RegisterTeam(team, metadata=ADMIN)
            # and a team proposed by player p with q, waiting for q's consent
            pending = scoring_pb2.RegisterTeamRequest(command_id="t-pq", tournament_id=tid, name="Pending")
            pending.players.add(player_id="p", name="P")
            pending.players.add(player_id="q", name="Q")
            proposal = (
                await s.scoring.RegisterTeam(
                    pending, metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="p")
                )
            ).proposal

            def confirm(team_id: str, who: Any, command_id: str = "ok-1", tournament_id: str = tid) -> Any:
                return s.scoring.ConfirmTeam(
                    scoring_pb2.ConfirmTeamRequest(command_id=command_id, tournament_id=tournament_id, team_id=team_id),
                    metadata=who,
                )

            def decline(team_id: str, who: Any, tournament_id: str = tid) -> Any:
                return s.scoring.DeclineTeam(
                    scoring_pb2.DeclineTeamRequest(command_id="no-1", tournament_id=tournament_id, team_id=team_id),
                    metadata=who,
                )

            red = (await tournament(s, tid)).teams[0].team_id
            before = await tournament(s, tid)
            calls = {
                "create_as_player": lambda: s.scoring.CreateTournament(
                    scoring_pb2.CreateTournamentRequest(command_id="x", name="n", game="zlj", rounds=1),
                    metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="p"),
                ),
                "create_bad_game": lambda: s.scoring.CreateTournament(
                    scoring_pb2.CreateTournamentRequest(command_id="x", name="n", game="chess", rounds=1),
                    metadata=ADMIN,
                ),
                "create_no_command_id": lambda: s.scoring.CreateTournament(
                    scoring_pb2.CreateTournamentRequest(name="n", game="zlj", rounds=1), metadata=ADMIN
                ),
                "register_twice": lambda: s.scoring.RegisterTeam(
                    scoring_pb2.RegisterTeamRequest(
                        command_id="t2", tournament_id=tid, name="red", players=team.players
                    ),
                    metadata=ADMIN,
                ),
                "register_wrong_size": lambda: s.scoring.RegisterTeam(
                    scoring_pb2.RegisterTeamRequest(
                        command_id="t3", tournament_id=tid, name="Blue", players=[team.players[0]]
                    ),
                    metadata=ADMIN,
                ),
                "register_someone_elses_team": lambda: s.scoring.RegisterTeam(
                    scoring_pb2.RegisterTeamRequest(
                        command_id="t4",
                        tournament_id=tid,
                        name="Green",
                        players=[scoring_pb2.TeamPlayer(player_id="c"), scoring_pb2.TeamPlayer(player_id="d")],
                    ),
                    metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="e"),
                ),
                "register_as_spectator": lambda: s.scoring.RegisterTeam(
                    scoring_pb2.RegisterTeamRequest(
                        command_id="t5",
                        tournament_id=tid,
                        name="Grey",
                        players=[scoring_pb2.TeamPlayer(player_id="w"), scoring_pb2.TeamPlayer(player_id="v")],
                    ),
                    metadata=token_metadata(role=Role.SPECTATOR, subject="w", game="some-game"),
                ),
                "propose_with_a_registered_player": lambda: s.scoring.RegisterTeam(
                    scoring_pb2.RegisterTeamRequest(
                        command_id="t6",
                        tournament_id=tid,
                        name="Blue",
                        players=[
                            scoring_pb2.TeamPlayer(player_id="c", name="C"),
                            scoring_pb2.TeamPlayer(player_id="a", name="A"),
                        ],
                    ),
                    metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="c"),
                ),
                "confirm_as_stranger": lambda: confirm(
                    proposal.team_id, token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="stranger")
                ),
                "confirm_twice": lambda: confirm(
                    proposal.team_id, token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="p")
                ),
                "confirm_for_someone_as_admin": lambda: confirm(proposal.team_id, ADMIN),
                "confirm_unknown_team": lambda: confirm(
                    "team000000000000", token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="q")
                ),
                "confirm_registered_team": lambda: confirm(
                    red, token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="a")
                ),
                "confirm_bad_team_id": lambda: confirm(
                    "team.*", token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="q")
                ),
                "confirm_no_command_id": lambda: confirm(
                    proposal.team_id,
                    token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="q"),
                    command_id="",
                ),
                "decline_as_stranger": lambda: decline(
                    proposal.team_id, token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="stranger")
                ),
                "decline_registered_team": lambda: decline(
                    red, token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="b")
                ),
                "decline_bad_tournament_id": lambda: decline(proposal.team_id, ADMIN, tournament_id="tour 1"),
                "pair_one_team": lambda: s.scoring.PairRound(
                    scoring_pb2.PairRoundRequest(command_id="p1", tournament_id=tid), metadata=ADMIN
                ),
                "end_before_a_round": lambda: s.scoring.EndTournament(
                    scoring_pb2.EndTournamentRequest(command_id="e1", tournament_id=tid), metadata=ADMIN
                ),
                "end_as_player": lambda: s.scoring.EndTournament(
                    scoring_pb2.EndTournamentRequest(command_id="e2", tournament_id=tid),
                    metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject="a"),
                ),
                "unknown_tournament": lambda: s.scoring.GetStandings(
                    scoring_pb2.GetStandingsRequest(tournament_id="tour000000000000"), metadata=ADMIN
                ),
                "forged_token": lambda: s.scoring.GetTournament(
                    scoring_pb2.GetTournamentRequest(tournament_id=tid), metadata=(("authorization", "Bearer x.y"),)
                ),
                "sheet_of_unpaired_round": lambda: s.scoring.GetResultSheet(
                    scoring_pb2.GetResultSheetRequest(tournament_id=tid, round=1), metadata=ADMIN
                ),
                "stats_of_nobody": lambda: s.scoring.GetPlayerStats(
                    scoring_pb2.GetPlayerStatsRequest(player_id="nobody", game="zlj"), metadata=ADMIN
                ),
            }
            try:
                await calls[call]()
            except grpc.aio.AioRpcError as e:
                assert e.code() == expected, e.details()
                assert reason_of(e) == REASONS.get(call, reason_of(e)), e.details()
                assert len(e.details() or "") > 10  # a reason a person understands
            else:
                raise AssertionError(f"{call} was accepted")
            assert await tournament(s, tid) == before

    run(body)


async def seated(s: Scoring, table_id: str, session: Any) -> tuple[str, ...]:
    """The players of a lobby table's seats once every seat is taken (the lobby opens tournament tables from
    the `RoundPaired` event, in the background)."""

    async def players() -> tuple[str, ...] | None:
        got = await s.base.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=session)
        seats = tuple(seat.player_id for seat in got.table.seats)
        return seats if seats and all(seats) else None

    # a table not opened yet is refused
    return await wait_until(players, f"table {table_id} to be seated", every=0.1, ignoring=(grpc.aio.AioRpcError,))


def test_a_player_cannot_put_another_into_a_team_without_their_consent(nats_url: str, database_dsn: str) -> None:
    """The finding: A registered a team naming B, and B was in it. Now A's team is a proposal until B confirms
    with B's own token; GetTournament shows it waiting; then it is a team like any other — drawn and seated at
    round 1 — while a proposal still waiting at the draw lapses, and a declined one frees its players."""

    async def body() -> None:
        async with scoring_stack(nats_url, database_dsn) as s:
            tid = (
                await s.scoring.CreateTournament(
                    scoring_pb2.CreateTournamentRequest(command_id="c", name="Cup", game="tractor", rounds=1, seed=3),
                    metadata=ADMIN,
                )
            ).tournament.tournament_id
            names = ("ann", "bo", "cy", "di", "ed", "flo", "gus")
            sessions = {name: await s.base.player(name) for name in names}
            ids = {name: player_id for name, (player_id, _) in sessions.items()}
            a, b, c, d, e, f, g = (ids[name] for name in names)

            def team(command_id: str, name: str, *members: str) -> scoring_pb2.RegisterTeamRequest:
                request = scoring_pb2.RegisterTeamRequest(command_id=command_id, tournament_id=tid, name=name)
                for member in members:
                    request.players.add(player_id=member, name=next(n for n, i in ids.items() if i == member))
                return request

            def confirm(command_id: str, team_id: str, who: str) -> Any:
                request = scoring_pb2.ConfirmTeamRequest(command_id=command_id, tournament_id=tid, team_id=team_id)
                return s.scoring.ConfirmTeam(
                    request, metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=who)
                )

            def decline(command_id: str, team_id: str, who: str) -> Any:
                request = scoring_pb2.DeclineTeamRequest(command_id=command_id, tournament_id=tid, team_id=team_id)
                return s.scoring.DeclineTeam(
                    request, metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=who)
                )

            # A names B: a proposal, not a team
            proposed = await s.scoring.RegisterTeam(
                team("ab", "Amber", a, b), metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=a)
            )
            ab = proposed.team_id
            assert proposed.tournament.teams == []
            assert (list(proposed.proposal.confirmed), list(proposed.proposal.waiting_for)) == ([a], [b])
            shown = (await tournament(s, tid)).proposals
            assert [(p.team_id, p.name, p.proposed_by) for p in shown] == [(ab, "Amber", a)]
            assert [(x.player_id, x.name) for x in shown[0].players] == [(a, "ann"), (b, "bo")]
            assert (list(shown[0].confirmed), list(shown[0].waiting_for)) == ([a], [b])
            assert shown[0].proposed_at.ToMilliseconds() == s.clock.ms
            # a retry answers the same proposal; nobody else confirms for B, A cannot confirm twice
            again = await s.scoring.RegisterTeam(
                team("ab", "Amber", a, b), metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=a)
            )
            assert (again.team_id, again.proposal) == (ab, proposed.proposal)
            stranger = await refusal_of(confirm("x1", ab, c))
            assert stranger == (grpc.StatusCode.PERMISSION_DENIED, "NOT_TEAM_MEMBER")
            assert await refusal_of(confirm("x2", ab, a)) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "CONSENT_PENDING",
            )
            on_behalf = s.scoring.ConfirmTeam(
                scoring_pb2.ConfirmTeamRequest(command_id="x3", tournament_id=tid, team_id=ab), metadata=ADMIN
            )
            assert await refusal_of(on_behalf) == (grpc.StatusCode.PERMISSION_DENIED, "ROLE_REQUIRED")
            # naming B holds nothing: C may name B too (only B's consent takes B), and C, having proposed, may not
            # consent to another team meanwhile
            cb = (
                await s.scoring.RegisterTeam(
                    team("cb", "Coral", c, b),
                    metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=c),
                )
            ).team_id
            assert [p.team_id for p in (await tournament(s, tid)).proposals] == [ab, cb]
            taken = s.scoring.RegisterTeam(
                team("ac", "Ash", a, c), metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=a)
            )
            assert await refusal_of(taken) == (grpc.StatusCode.ALREADY_EXISTS, "TEAM_EXISTS")
            assert (await tournament(s, tid)).teams == []

            # B consents to A's: the team is registered, C's proposal naming B is withdrawn, and the retry of B's
            # consent answers the same
            confirmed = await confirm("b-yes", ab, b)
            assert confirmed.registered
            assert [(t.team_id, [x.player_id for x in t.players]) for t in confirmed.tournament.teams] == [(ab, [a, b])]
            assert confirmed.tournament.proposals == []
            assert await refusal_of(confirm("b-cb", cb, b)) == (grpc.StatusCode.NOT_FOUND, "TEAM_NOT_FOUND")
            assert (await confirm("b-yes", ab, b)).registered

            # an organiser registers C and D at once (they agreed at the desk)
            desk = await s.scoring.RegisterTeam(team("cd", "Coral", c, d), metadata=ADMIN)
            assert not desk.HasField("proposal")
            # E names F and G... F declines: withdrawn, and F and G are free again
            efg = (
                await s.scoring.RegisterTeam(
                    team("ef", "Ember", e, f),
                    metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=e),
                )
            ).team_id
            declined = await decline("f-no", efg, f)
            assert declined.tournament.proposals == []
            assert await refusal_of(confirm("f-yes", efg, f)) == (
                grpc.StatusCode.NOT_FOUND,
                "TEAM_NOT_FOUND",
            )
            # ... and G names F: still waiting when round 1 is paired
            gf = (
                await s.scoring.RegisterTeam(
                    team("gf", "Glass", g, f),
                    metadata=token_metadata(role=Role.PLAYER, now=s.clock.ms // 1000, subject=g),
                )
            ).team_id
            assert [p.team_id for p in (await tournament(s, tid)).proposals] == [gf]

            paired = (
                await s.scoring.PairRound(
                    scoring_pb2.PairRoundRequest(command_id="pair-1", tournament_id=tid), metadata=ADMIN
                )
            ).round
            (table,) = paired.tables
            assert {table.high, table.low} == {ab, desk.team_id} and not paired.bye
            final = await tournament(s, tid)
            assert sorted(t.draw for t in final.teams) == [1, 2]
            assert [t.team_id for t in final.teams] == [ab, desk.team_id]
            assert final.proposals == []  # G's proposal lapsed: not registered, not drawn
            assert await refusal_of(confirm("f-late", gf, f)) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "REGISTRATION_CLOSED",
            )
            # the lobby seats A and B at the round's table, partners opposite (the team, as any team)
            seats = await seated(s, table.table_id, sessions["ann"][1])
            assert {seats[0::2], seats[1::2]} == {(a, b), (c, d)}

    run(body)
