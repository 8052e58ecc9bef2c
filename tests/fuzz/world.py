"""The live state the fuzzer probes, made through the services' own API before the fuzz starts:

- the two tables of bots `tests.fuzz.stack` opened, playing (their games and who holds each seat);
- four registered players (alice, bob, carol, dave) with lobby sessions;
- alice's 拖拉机 table where alice and bob sit with two bots, its match started with a 5-second turn timer (the engine
  plays the people's turns when they do not), alice's 砸六家 table, open, nobody seated, and her 砸六家 table of six
  bots, not started (alice may start it);
- two engine games of the fuzzer's own, one of each game, whose seats only the fuzzer's tokens hold;
- a 拖拉机 tournament an admin created, with a team the admin registered (alice, bob) and a team carol proposed
  (carol, dave) waiting for dave's consent;
- a 砸六家 party carol leads, with an invite to dave open (docs/rules/matchmaking.md);
- a 拖拉机 league of two teams of guests whose round 1 is paired (the lobby opens its table) and over (a team
  forfeited);
- the ids the tables' next matches' games will have (a game created under one of them is in the table's way).

The tokens (`tests.fuzz.tokens`): a player's for every seat of every one of those games, a spectator's of each game,
each role's (analyst, referee, service, admin), lobby sessions, invalid ones (none, forged, expired, garbage), and
odd ones the deployment did sign (subjects no id may be, seats the game does not have).
"""

from __future__ import annotations

from typing import Any

import grpc

from paiju.v1 import engine_pb2, engine_pb2_grpc, lobby_pb2, lobby_pb2_grpc, scoring_pb2, scoring_pb2_grpc, tractor_pb2

from .generate import Known, Token
from .stack import Stack
from .tokens import Credentials, mint_token

PASSWORD = "violet-harbour-kettle-42"
PEOPLE = ("alice", "bob", "carol", "dave")
ADMIN = "fz-admin"
REFEREE = "fz-referee"


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def role_tokens(credentials: Credentials) -> list[Token]:
    """A token of each role bound to no game, and the invalid ones."""
    tokens = [
        Token(f"role:{role}", f"Bearer {mint_token(credentials, subject, role)}")
        for role, subject in (
            ("analyst", "fz-analyst"),
            ("referee", REFEREE),
            ("service", "fz-service"),
            ("admin", ADMIN),
            ("spectator", "fz-spectator"),
        )
    ]
    # signed as the deployment signs, with odd claims: subjects no id may be, and (below) seats no game has
    tokens += [
        Token("odd:subject", f"Bearer {mint_token(credentials, subject, role)}")
        for subject, role in (
            ("a.b", "player"),
            ("*", "player"),
            (">", "admin"),
            ("", "player"),
            ("x" * 300, "player"),
            ("fz space", "referee"),
            ("fz\u202eevil", "service"),
        )
    ]
    good = mint_token(credentials, ADMIN, "admin")
    payload, _, signature = good.partition(".")
    tokens += [
        Token("invalid:none", None),
        Token("invalid:forged", f"Bearer {mint_token(credentials, ADMIN, 'admin', forged=True)}"),
        Token("invalid:expired", f"Bearer {mint_token(credentials, ADMIN, 'admin', lifetime=-60)}"),
        Token("invalid:expired-session", f"Bearer {mint_token(credentials, 'fz-expired', 'player', lifetime=-1)}"),
        Token("invalid:garbage", "Bearer garbage"),
        Token("invalid:garbage", "Bearer "),
        Token("invalid:garbage", "Bearer"),
        Token("invalid:garbage", "Basic dXNlcjpwYXNzd29yZA=="),
        Token("invalid:garbage", f"bearer {good}"),
        Token("invalid:garbage", f"Bearer  {good}"),
        Token("invalid:garbage", f"Bearer {good}.x"),
        Token("invalid:garbage", f"Bearer {payload[:-2]}xx.{signature}"),
        Token("invalid:garbage", f"Bearer {payload}."),
        Token("invalid:garbage", f"Bearer .{signature}"),
        Token("invalid:garbage", "Bearer a.b"),
        Token("invalid:garbage", "Bearer " + "A" * 3000 + "." + "B" * 43),
        Token("invalid:garbage", "Bearer e30.e30"),
        Token("invalid:garbage", "Bearer \"';--"),
        Token("invalid:garbage", "Bearer ~!@#$%^&*()_+{}|:<>?"),
    ]
    return tokens


async def build(stack: Stack) -> Known:
    """Make the live state (see the module) and the tokens for it."""
    credentials = stack.credentials
    tokens = role_tokens(credentials)
    kinds: dict[str, str] = {}
    games: list[str] = []
    players: list[str] = []
    analyst = bearer(mint_token(credentials, "fz-setup", "analyst"))
    admin = bearer(mint_token(credentials, ADMIN, "admin"))
    service = bearer(mint_token(credentials, "fz-setup", "service"))
    async with (
        grpc.aio.insecure_channel(stack.addresses["lobby"]) as lobby_channel,
        grpc.aio.insecure_channel(stack.addresses["engine"]) as engine_channel,
        grpc.aio.insecure_channel(stack.addresses["scoring"]) as scoring_channel,
    ):
        lobby: Any = lobby_pb2_grpc.LobbyServiceStub(lobby_channel)
        engine: Any = engine_pb2_grpc.EngineServiceStub(engine_channel)
        scoring: Any = scoring_pb2_grpc.ScoringServiceStub(scoring_channel)

        def seat_tokens(game: str, holders: list[str]) -> None:
            for seat, holder in enumerate(holders):
                token = mint_token(credentials, holder, "player", game=game, seat=seat)
                tokens.append(Token(f"player:{kinds[game]}", f"Bearer {token}", game, seat))
            spectator = mint_token(credentials, "fz-spectator", "spectator", game=game)
            tokens.append(Token("spectator:game", f"Bearer {spectator}", game))
            seatless = mint_token(credentials, holders[0], "player", game=game)
            tokens.append(Token("player:no-seat", f"Bearer {seatless}", game))
            odd_seat: Any
            for odd_seat in (len(holders), 99, -1, 2**40, "0", True):
                odd = mint_token(credentials, holders[0], "player", game=game, seat=odd_seat)
                tokens.append(Token("odd:seat", f"Bearer {odd}", game))
            games.append(game)
            players.extend(holders)

        # the bots' tables
        for kind, table_id in stack.tables.items():
            table = (await lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=analyst)).table
            kinds[table.game_id] = kind
            seat_tokens(table.game_id, [seat.player_id for seat in table.seats])

        # people
        sessions: dict[str, Any] = {}
        for name in PEOPLE:
            register = lobby_pb2.RegisterRequest(name=f"fuzzer-{name}", password=PASSWORD)
            sessions[name] = (await lobby.Register(register, timeout=30)).session
            players.append(sessions[name].player_id)
        for name in ("alice", "bob"):  # sessions the lobby issued
            tokens.append(Token("session:lobby", f"Bearer {sessions[name].token}"))
        for name in ("carol", "dave"):  # sessions minted like the lobby's
            token = mint_token(credentials, sessions[name].player_id, "player", lifetime=15 * 60)
            tokens.append(Token("session:minted", f"Bearer {token}"))
        guest = (await lobby.Guest(lobby_pb2.GuestRequest())).session
        tokens.append(Token("session:guest", f"Bearer {guest.token}"))
        ghost = mint_token(credentials, "fz-ghost", "player")
        tokens.append(Token("session:no-account", f"Bearer {ghost}"))
        alice, bob = bearer(sessions["alice"].token), bearer(sessions["bob"].token)

        # alice's tables: a 拖拉机 match with alice, bob and two bots under a turn timer, and an empty 砸六家 table
        request = lobby_pb2.CreateTableRequest(
            name="Fuzz 拖拉机", game=engine_pb2.GAME_TRACTOR, tractor_options=tractor_pb2.TractorOptions(turn_seconds=5)
        )
        playing = (await lobby.CreateTable(request, metadata=alice)).table.table_id
        await lobby.TakeSeat(lobby_pb2.TakeSeatRequest(table_id=playing, seat=0), metadata=alice)
        await lobby.TakeSeat(lobby_pb2.TakeSeatRequest(table_id=playing, seat=1), metadata=bob)
        await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=playing), metadata=alice)
        await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=playing), metadata=alice)
        await lobby.Ready(lobby_pb2.ReadyRequest(table_id=playing, ready=True), metadata=alice)
        await lobby.Ready(lobby_pb2.ReadyRequest(table_id=playing, ready=True), metadata=bob)
        started = (await lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=playing), metadata=alice)).table
        kinds[started.game_id] = "tractor"
        seat_tokens(started.game_id, [seat.player_id for seat in started.seats])
        request = lobby_pb2.CreateTableRequest(name="Fuzz 砸六家", game=engine_pb2.GAME_ZLJ)
        empty = (await lobby.CreateTable(request, metadata=alice)).table.table_id
        request = lobby_pb2.CreateTableRequest(name="Fuzz bots, ready", game=engine_pb2.GAME_ZLJ)
        ready = (await lobby.CreateTable(request, metadata=alice)).table.table_id
        for _ in range(6):
            await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=ready), metadata=alice)

        # carol's party, its invite to dave open
        carol = bearer(mint_token(credentials, sessions["carol"].player_id, "player"))
        party = (await lobby.CreateParty(lobby_pb2.CreatePartyRequest(game=engine_pb2.GAME_ZLJ), metadata=carol)).party
        await lobby.InviteToParty(lobby_pb2.InviteToPartyRequest(player_name="fuzzer-dave"), metadata=carol)

        # the fuzzer's own games
        for kind, which, seats in (("zlj", engine_pb2.GAME_ZLJ, 6), ("tractor", engine_pb2.GAME_TRACTOR, 4)):
            game_id = f"fuzz-{kind}-game"
            holders = [f"fz-{kind}-{seat}" for seat in range(seats)]
            create = engine_pb2.CreateGameRequest(game_id=game_id, game=which)
            for seat, holder in enumerate(holders):
                create.seats.add(seat=seat, player_id=holder)
            await engine.CreateGame(create, metadata=service)
            kinds[game_id] = kind
            seat_tokens(game_id, holders)

        # a tournament, a registered team and a proposed one
        tournament = (
            await scoring.CreateTournament(
                scoring_pb2.CreateTournamentRequest(
                    command_id="fz-setup-tournament", name="Fuzz Cup", game="tractor", rounds=3
                ),
                metadata=admin,
            )
        ).tournament.tournament_id
        teams = []
        for proposer, members, command in (
            (admin, ("alice", "bob"), "fz-setup-team"),
            (bearer(mint_token(credentials, sessions["carol"].player_id, "player")), ("carol", "dave"), "fz-setup-p"),
        ):
            team = scoring_pb2.RegisterTeamRequest(
                command_id=command, tournament_id=tournament, name=f"Team {'+'.join(members)}"
            )
            for member in members:
                team.players.add(player_id=sessions[member].player_id, name=member)
            teams.append((await scoring.RegisterTeam(team, metadata=proposer)).team_id)

        # a league whose round 1 is paired and over (a team forfeited): its sheet, appeals and round 2 are next
        guests = [(await lobby.Guest(lobby_pb2.GuestRequest())).session for _ in range(4)]
        for guest in guests:
            tokens.append(Token("session:guest", f"Bearer {guest.token}"))
            players.append(guest.player_id)
        open_league = scoring_pb2.CreateTournamentRequest(
            command_id="fz-setup-league", name="Fuzz League", game="tractor", rounds=2
        )
        league = (await scoring.CreateTournament(open_league, metadata=admin)).tournament.tournament_id
        league_teams = []
        for n, pair in enumerate((guests[:2], guests[2:])):
            team = scoring_pb2.RegisterTeamRequest(
                command_id=f"fz-setup-league-{n}", tournament_id=league, name=f"League team {n + 1}"
            )
            for guest in pair:
                team.players.add(player_id=guest.player_id, name=guest.name)
            league_teams.append((await scoring.RegisterTeam(team, metadata=admin)).team_id)
        pair_round = scoring_pb2.PairRoundRequest(command_id="fz-setup-pair", tournament_id=league)
        league_table = (await scoring.PairRound(pair_round, metadata=admin)).round.tables[0].table_id
        forfeit = scoring_pb2.RecordForfeitRequest(
            command_id="fz-setup-forfeit", tournament_id=league, round=1, team_id=league_teams[1]
        )
        await scoring.RecordForfeit(forfeit, metadata=bearer(mint_token(credentials, REFEREE, "referee")))
        teams += league_teams
        games.append(f"{league_table}-m1")
        kinds[f"{league_table}-m1"] = "tractor"

        # everyone's seat tokens reach the engine; the bots play
        for game in games[:-1]:  # the league's table opens in its own time
            await engine.GetView(engine_pb2.GetViewRequest(game_id=game), metadata=analyst)
    tables = [*stack.tables.values(), playing, empty, ready, league_table]
    # the games the tables' next matches will have: created early by someone else, they are in the way
    later = [f"{table}-m{n}" for table in tables for n in (1, 2, 3) if f"{table}-m{n}" not in games]
    return Known(
        games=[*games, *later],
        tables=tables,
        tournaments=[tournament, league],
        teams=teams,
        players=sorted(set(players)),
        names=[f"fuzzer-{name}" for name in PEOPLE],
        password=PASSWORD,
        referee=REFEREE,
        tokens=tokens,
        kinds=kinds,
        parties=[party.party_id],
    )
