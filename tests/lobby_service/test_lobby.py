"""The lobby end to end on real NATS and PostgreSQL: accounts, tables, seats, bots, matches, reconnection."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

import grpc
import pytest

from paiju.engine.matches import handle
from paiju.platform.tokens import Identity, Role
from paiju.rules.rng import SeededRandom
from paiju.v1 import engine_pb2, lobby_pb2, zlj_pb2

from ..engine.harness import auth as bearer
from ..engine.harness import refusal_of, status_of
from ..support.credentials import BOTS, TRUST, mint_token
from ..support.waiting import wait_until
from .stack import PASSWORD, SEED_SECRET, Stack, play_leased_bots, service_token, stack

OK = grpc.StatusCode.OK


def run(nats_url: str, database_dsn: str, body: Callable[[Stack], Coroutine[Any, Any, None]], **kw: Any) -> None:
    async def main() -> None:
        async with stack(nats_url, database_dsn, **kw) as s:
            await body(s)

    asyncio.run(main())


async def seat_everyone(s: Stack, table_id: str, owner: Any, people: list[Any], bots: int) -> None:
    """``people`` (owner first) sit down and say ready; the owner adds ``bots`` bots."""
    for who in people:
        await s.lobby.TakeSeat(lobby_pb2.TakeSeatRequest(table_id=table_id), metadata=who)
        await s.lobby.Ready(lobby_pb2.ReadyRequest(table_id=table_id, ready=True), metadata=who)
    for _ in range(bots):
        await s.lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table_id), metadata=owner)


def test_a_match_of_bots_from_the_lobby_to_the_read_models_result(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        table_id = await s.table(owner, deals=1)
        await seat_everyone(s, table_id, owner, [], bots=6)
        started = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
        assert started.status == lobby_pb2.TABLE_STATUS_PLAYING and started.game_id == f"{table_id}-m1"
        game = await s.game_exists(started.game_id)
        assert game.seats == tuple(seat.player_id for seat in started.seats)
        await s.listed(table_id, lambda t: t.status == lobby_pb2.TABLE_STATUS_PLAYING)
        await play_leased_bots(s, started.game_id, SeededRandom(1))
        listed = await s.listed(table_id, lambda t: t.status == lobby_pb2.TABLE_STATUS_FINISHED)
        *_, final, revealed = (await s.games.history(started.game_id)).envelopes
        assert final.zlj.WhichOneof("event") == "match_ended"
        assert revealed.zlj.WhichOneof("event") == "seed_revealed", "the last deal's seed, once the match is over"
        assert listed.last_result.game_id == started.game_id
        assert list(listed.last_result.team_points) == list(final.zlj.match_ended.team_points)
        assert list(listed.last_result.individual_points) == list(final.zlj.match_ended.individual)
        # the next match is a new game, created once
        again = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
        assert again.game_id == f"{table_id}-m2"
        await s.game_exists(again.game_id)

    run(nats_url, database_dsn, body)


def test_two_players_racing_for_one_seat_exactly_one_sits(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        table_id = await s.table(owner)
        racers = [await s.player(f"Racer{i}") for i in range(4)]
        results = await asyncio.gather(
            *(
                status_of(s.lobby.TakeSeat(lobby_pb2.TakeSeatRequest(table_id=table_id, seat=3), metadata=md))
                for _, md in racers
            )
        )
        assert sorted(results, key=str) == sorted([OK] + [grpc.StatusCode.FAILED_PRECONDITION] * 3, key=str)
        table = (await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=owner)).table
        assert table.seats[3].player_id in {p for p, _ in racers}
        assert sum(1 for seat in table.seats if seat.player_id) == 1

    run(nats_url, database_dsn, body)


def test_a_full_table_a_leaver_mid_match_and_a_removed_players_token(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        owner_id, owner = await s.player("Owner")
        ann_id, ann = await s.player("Ann")
        bob_id, bob = await s.player("Bob")
        _, late = await s.player("Late")
        table_id = await s.table(owner)
        await seat_everyone(s, table_id, owner, [owner, ann, bob], bots=3)
        full = s.lobby.TakeSeat(lobby_pb2.TakeSeatRequest(table_id=table_id), metadata=late)
        assert await status_of(full) == grpc.StatusCode.FAILED_PRECONDITION
        table = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
        await s.game_exists(table.game_id)
        join = lobby_pb2.JoinGameRequest(table_id=table_id)
        ann_game = bearer((await s.lobby.JoinGame(join, metadata=ann)).token)
        bob_join = await s.lobby.JoinGame(join, metadata=bob)
        view = engine_pb2.GetViewRequest(game_id=table.game_id)
        assert (await s.engine.GetView(view, metadata=ann_game)).zlj.hand

        # Ann leaves mid-match: a bot takes her seat over, her token sees nothing any more
        left = (await s.lobby.LeaveSeat(lobby_pb2.LeaveSeatRequest(table_id=table_id), metadata=ann)).table
        ann_seat = next(i for i, seat in enumerate(table.seats) if seat.player_id == ann_id)
        assert left.seats[ann_seat].bot
        assert await status_of(s.engine.GetView(view, metadata=ann_game)) == grpc.StatusCode.PERMISSION_DENIED
        game = await s.games.refresh(table.game_id)
        assert game.seats[ann_seat] == left.seats[ann_seat].player_id

        # the owner removes Bob: his game token no longer acts
        bob_seat = bob_join.seat
        removed = s.lobby.RemovePlayer(lobby_pb2.RemovePlayerRequest(table_id=table_id, seat=bob_seat), metadata=owner)
        assert await status_of(removed) == OK
        legal = engine_pb2.GetLegalActionsRequest(game_id=table.game_id)
        assert await status_of(s.engine.GetLegalActions(legal, metadata=bearer(bob_join.token))) == (
            grpc.StatusCode.PERMISSION_DENIED
        )
        # only the owner removes, and only a seated player leaves
        not_owner = s.lobby.RemovePlayer(lobby_pb2.RemovePlayerRequest(table_id=table_id, seat=0), metadata=bob)
        assert await status_of(not_owner) == grpc.StatusCode.PERMISSION_DENIED
        again = s.lobby.LeaveSeat(lobby_pb2.LeaveSeatRequest(table_id=table_id), metadata=bob)
        assert await status_of(again) == grpc.StatusCode.FAILED_PRECONDITION
        assert owner_id and bob_id

    run(nats_url, database_dsn, body)


def test_swaps_wait_for_the_pause_between_deals_and_the_tribute_follows_the_seats(
    nats_url: str, database_dsn: str
) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        ann_id, ann = await s.player("Ann")
        table_id = await s.table(owner, deals=2)
        await seat_everyone(s, table_id, owner, [owner, ann], bots=4)
        table = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
        await s.game_exists(table.game_id)
        swap = lobby_pb2.SwapSeatsRequest(table_id=table_id, seat=0, other_seat=1)
        assert await status_of(s.lobby.SwapSeats(swap, metadata=owner)) == grpc.StatusCode.FAILED_PRECONDITION
        assert (await s.games.refresh(table.game_id)).seats == tuple(seat.player_id for seat in table.seats)

        # play the first deal (people's seats too, through their game tokens) to the pause before the cut
        rng = SeededRandom(7)
        people = {}
        for md in (owner, ann):
            joined = await s.lobby.JoinGame(lobby_pb2.JoinGameRequest(table_id=table_id), metadata=md)
            people[joined.seat] = bearer(joined.token)
        for _ in range(3000):
            game = await s.games.refresh(table.game_id)
            if game.state.phase.value == "cut":
                break
            seat = game.state.turn
            if seat in people:
                legal = await s.engine.GetLegalActions(
                    engine_pb2.GetLegalActionsRequest(game_id=table.game_id), metadata=people[seat]
                )
                choice = legal.actions[rng.below(len(legal.actions))]
                request = engine_pb2.ActRequest(game_id=table.game_id, command_id=uuid.uuid4().hex, zlj=choice.zlj)
                await s.engine.Act(request, metadata=people[seat])
            else:
                await play_leased_bots(s, table.game_id, rng, until_phase="cut")
        before = await s.games.refresh(table.game_id)
        assert before.state.phase.value == "cut"
        swapped = (await s.lobby.SwapSeats(swap, metadata=owner)).table
        after = await s.games.refresh(table.game_id)
        assert after.seats[0] == table.seats[1].player_id and after.seats[1] == table.seats[0].player_id
        assert swapped.seats[1].player_id == table.seats[0].player_id
        # the rules state (who owes tribute to whom) is untouched: it stays with the seats
        assert after.state == before.state
        assert ann_id in after.seats

    run(nats_url, database_dsn, body)


def test_a_redelivered_start_and_a_second_engine_replica_create_one_game(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        from paiju.engine.games import Games
        from paiju.engine.service import EngineService

        _, owner = await s.player("Owner")
        table_id = await s.table(owner)
        await seat_everyone(s, table_id, owner, [], bots=6)
        table = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
        first = await s.game_exists(table.game_id)
        # the same start event handled again, by this replica and by a second one over the same streams
        events = await s.lobby_store.load(table_id)
        second = EngineService(Games(s.games_store), TRUST, seed_secret=SEED_SECRET)
        for recorded in events:
            await handle(s.service.creation, recorded.data)
            await handle(second.creation, recorded.data)
        await asyncio.gather(
            *(handle(second.creation, r.data) for r in events), *(handle(s.service.creation, r.data) for r in events)
        )
        stored = await s.games_store.load(table.game_id)
        assert len(stored) == first.version
        creates = {r.command_id for r in stored if r.command_id.startswith("create:")}
        assert creates == {f"create:{table.game_id}"}

    run(nats_url, database_dsn, body)


def test_a_dropped_player_is_covered_by_a_bot_and_resumes_without_a_gap(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        ann_id, ann = await s.player("Ann")
        table_id = await s.table(owner)
        await seat_everyone(s, table_id, owner, [owner, ann], bots=4)
        table = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
        await s.game_exists(table.game_id)
        joined = await s.lobby.JoinGame(lobby_pb2.JoinGameRequest(table_id=table_id), metadata=ann)
        token = bearer(joined.token)
        presence = s.lobby.WatchTable(lobby_pb2.WatchTableRequest(table_id=table_id), metadata=ann)
        await presence.read()
        table_watch = s.lobby.WatchTable(lobby_pb2.WatchTableRequest(table_id=table_id), metadata=owner)
        watch = s.engine.Watch(engine_pb2.WatchRequest(game_id=table.game_id), metadata=token)
        seen = [(await watch.read()).envelope.version for _ in range(3)]
        watch.cancel()
        presence.cancel()  # Ann's connection drops

        async def covered() -> bool:
            t = (await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=owner)).table
            return bool(t.seats[joined.seat].covered)

        async def covered_on_the_watch() -> bool:
            """The next change of the table as the owner watches it: Ann's seat covered?"""
            return bool((await table_watch.read()).table.seats[joined.seat].covered)

        await wait_until(covered_on_the_watch, "a bot to cover Ann's seat after the grace time", every=0)
        table_watch.cancel()
        assert await covered()
        game = await s.games.refresh(table.game_id)
        assert game.seats[joined.seat] != ann_id
        view = engine_pb2.GetViewRequest(game_id=table.game_id)
        assert await status_of(s.engine.GetView(view, metadata=token)) == grpc.StatusCode.PERMISSION_DENIED

        # Ann is back: the seat is hers again and her watch resumes where it stopped
        back = s.lobby.WatchTable(lobby_pb2.WatchTableRequest(table_id=table_id), metadata=ann)
        await back.read()
        assert not await covered()
        assert (await s.games.refresh(table.game_id)).seats[joined.seat] == ann_id
        resumed = s.engine.Watch(engine_pb2.WatchRequest(game_id=table.game_id, from_version=seen[-1]), metadata=token)
        following = [(await resumed.read()).envelope.version for _ in range(3)]
        resumed.cancel()
        back.cancel()
        assert seen == [1, 2, 3] and following == [4, 5, 6]

    run(nats_url, database_dsn, body)


@pytest.mark.parametrize(
    ("name", "password", "expected"),
    [
        ("Ann", "", ("INVALID_ARGUMENT", "INVALID_REQUEST")),
        ("Ann", "short", ("INVALID_ARGUMENT", "INVALID_REQUEST")),
        ("Ann", "password1", ("INVALID_ARGUMENT", "INVALID_REQUEST")),
        ("Ann", "p" * 129, ("INVALID_ARGUMENT", "INVALID_REQUEST")),
        ("Ann", "x" * 4_000_000, ("RESOURCE_EXHAUSTED", "")),
        ("Ann", "qwertyuiop", ("INVALID_ARGUMENT", "PASSWORD_WEAK")),
        ("Ann", "password123", ("INVALID_ARGUMENT", "PASSWORD_WEAK")),
        ("Ann", "P@ssw0rd123", ("INVALID_ARGUMENT", "PASSWORD_WEAK")),
        ("Ann", "admin123456", ("INVALID_ARGUMENT", "PASSWORD_WEAK")),
        ("Annabelle", "annabelle-is-me", ("INVALID_ARGUMENT", "PASSWORD_WEAK")),
        ("", PASSWORD, ("INVALID_ARGUMENT", "INVALID_REQUEST")),
        ("A" * 33, PASSWORD, ("INVALID_ARGUMENT", "INVALID_REQUEST")),
        ("Ann\u0000", PASSWORD, ("INVALID_ARGUMENT", "INVALID_REQUEST")),
        ("Ann\u200b", PASSWORD, ("INVALID_ARGUMENT", "INVALID_REQUEST")),
        ("guest-123", PASSWORD, ("INVALID_ARGUMENT", "NAME_INVALID")),
    ],
)
def test_weak_passwords_and_bad_names_are_refused(
    nats_url: str, database_dsn: str, name: str, password: str, expected: tuple[str, str]
) -> None:
    async def body(s: Stack) -> None:
        refused = await refusal_of(s.lobby.Register(lobby_pb2.RegisterRequest(name=name, password=password)))
        assert refused == (grpc.StatusCode[expected[0]], expected[1])
        assert await s.lobby_store.aggregates() == []

    run(nats_url, database_dsn, body)


def test_start_match_answers_once_the_game_exists_and_join_game_needs_a_session(
    nats_url: str, database_dsn: str
) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        table_id = await s.table(owner)
        await seat_everyone(s, table_id, owner, [owner], bots=5)
        table = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
        # no waiting, no polling: the game is there when StartMatch answers
        assert (await s.games.refresh(table.game_id)).version > 0
        joined = await s.lobby.JoinGame(lobby_pb2.JoinGameRequest(table_id=table_id), metadata=owner)
        view = await s.engine.GetView(engine_pb2.GetViewRequest(game_id=table.game_id), metadata=bearer(joined.token))
        assert view.zlj.hand
        # a game token is not traded for a fresh one: it is for the engine, and JoinGame takes a lobby session only
        again = s.lobby.JoinGame(lobby_pb2.JoinGameRequest(table_id=table_id), metadata=bearer(joined.token))
        assert await refusal_of(again) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_INVALID")

    run(nats_url, database_dsn, body)


def test_sessions_are_short_renewed_and_revoked(nats_url: str, database_dsn: str) -> None:
    """A session lasts 15 minutes and is renewed with RenewSession; Logout revokes every session of the account at
    once (TOKEN_REVOKED: not renewed, no JoinGame); an operator revokes another account's sessions."""

    async def body(s: Stack) -> None:
        Code = grpc.StatusCode
        clock, registered_at = s.lobby_service._now, int(time.time())
        s.lobby_service._now = lambda: registered_at  # the lobby's clock, held while Ann registers
        first = (await s.lobby.Register(lobby_pb2.RegisterRequest(name="Ann", password=PASSWORD))).session
        s.lobby_service._now = clock
        assert first.expires_at == registered_at + 15 * 60
        ann = bearer(first.token)
        renewed = (await s.lobby.RenewSession(lobby_pb2.RenewSessionRequest(), metadata=ann)).session
        assert renewed.player_id == first.player_id and renewed.expires_at >= first.expires_at
        # a game token is not a session: it neither renews a session nor joins a game
        table_id = await s.table(ann)
        other = (await s.lobby.Login(lobby_pb2.LoginRequest(name="Ann", password=PASSWORD))).session
        await s.lobby.Logout(lobby_pb2.LogoutRequest(), metadata=bearer(renewed.token))
        for token in (first.token, renewed.token, other.token):
            md = bearer(token)
            assert await refusal_of(s.lobby.RenewSession(lobby_pb2.RenewSessionRequest(), metadata=md)) == (
                Code.UNAUTHENTICATED,
                "TOKEN_REVOKED",
            )
            assert await refusal_of(s.lobby.JoinGame(lobby_pb2.JoinGameRequest(table_id=table_id), metadata=md)) == (
                Code.UNAUTHENTICATED,
                "TOKEN_REVOKED",
            )
            # a revoked session reads no table either
            assert await refusal_of(s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=md)) == (
                Code.UNAUTHENTICATED,
                "TOKEN_REVOKED",
            )
            assert (await refusal_of(s.lobby.ListTables(lobby_pb2.ListTablesRequest(), metadata=md)))[1] == (
                "TOKEN_REVOKED"
            )
        # tables are read by a session or an operator: not by a game token, a bot runner or a service
        soon = int(time.time()) + 60
        for identity in (
            Identity("viewer", Role.SPECTATOR, game="some-game", expires=soon),
            Identity(first.player_id, Role.PLAYER, game="some-game", seat=0, expires=soon),
            Identity("a-runner", Role.BOT_RUNNER, expires=soon),
            Identity("engine", Role.SERVICE, expires=soon),
        ):
            md = bearer(mint_token(identity))
            watch = s.lobby.WatchTable(lobby_pb2.WatchTableRequest(table_id=table_id), metadata=md)
            for call in (
                s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=md),
                s.lobby.ListTables(lobby_pb2.ListTablesRequest(), metadata=md),
                watch.read(),
            ):
                assert (await refusal_of(call))[1] == "SESSION_REQUIRED", identity
        analyst = bearer(mint_token(Identity("analyst-1", Role.ANALYST, expires=soon)))
        assert (await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=analyst)).table.table_id
        # signing in again gives a session that works
        again = (await s.lobby.Login(lobby_pb2.LoginRequest(name="Ann", password=PASSWORD))).session
        again = (await s.lobby.RenewSession(lobby_pb2.RenewSessionRequest(), metadata=bearer(again.token))).session
        assert await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=bearer(again.token))
        # an operator revokes it; a player may not revoke anyone's
        bo, bo_md = await s.player("Bo")
        revoke = lobby_pb2.RevokeSessionsRequest(player_id=again.player_id)
        assert await refusal_of(s.lobby.RevokeSessions(revoke, metadata=bo_md)) == (
            Code.PERMISSION_DENIED,
            "ROLE_REQUIRED",
        )
        operator = bearer(mint_token(Identity("ops", Role.ADMIN, expires=int(time.time()) + 60)))
        await s.lobby.RevokeSessions(revoke, metadata=operator)
        assert await refusal_of(
            s.lobby.RenewSession(lobby_pb2.RenewSessionRequest(), metadata=bearer(again.token))
        ) == (Code.UNAUTHENTICATED, "TOKEN_REVOKED")
        nobody = lobby_pb2.RevokeSessionsRequest(player_id="account-nobody")
        assert await refusal_of(s.lobby.RevokeSessions(nobody, metadata=operator)) == (
            Code.NOT_FOUND,
            "PLAYER_NOT_FOUND",
        )
        assert bo

    run(nats_url, database_dsn, body)


def test_a_name_that_looks_like_an_existing_one_is_refused(nats_url: str, database_dsn: str) -> None:
    """UTS #39 confusables: a Cyrillic "Аlice" beside "alice" is refused, through the read model (every account,
    old ones included) and through the name claims (two such names registered at the same moment: one wins)."""

    async def body(s: Stack) -> None:
        await s.player("alice")
        await s.listing.catch_up()
        for look_alike in ("\u0410lice", "ALICE", "\u0430LICE"):
            refused = await refusal_of(s.lobby.Register(lobby_pb2.RegisterRequest(name=look_alike, password=PASSWORD)))
            assert refused[0] == grpc.StatusCode.ALREADY_EXISTS and refused[1] in ("NAME_CONFUSABLE", "NAME_TAKEN")
        racing = await asyncio.gather(
            *(
                refusal_of(s.lobby.Register(lobby_pb2.RegisterRequest(name=name, password=PASSWORD)))
                for name in ("paypal", "paypa1", "\u0440aypal")
            )
        )
        assert sorted(code.name for code, _ in racing) == ["ALREADY_EXISTS", "ALREADY_EXISTS", "OK"]
        assert {reason for _, reason in racing} == {"", "NAME_CONFUSABLE"}

    run(nats_url, database_dsn, body)


def test_bad_input_is_refused_with_a_reason_and_changes_nothing(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        Code = grpc.StatusCode
        _, owner = await s.player("Owner")
        _, stranger = await s.player("Stranger")
        # a duplicate name, in another case
        duplicate = s.lobby.Register(lobby_pb2.RegisterRequest(name="OWNER", password=PASSWORD))
        assert (await refusal_of(duplicate))[0] == Code.ALREADY_EXISTS
        wrong = s.lobby.Login(lobby_pb2.LoginRequest(name="Owner", password="not the password"))
        assert await refusal_of(wrong) == (Code.UNAUTHENTICATED, "WRONG_CREDENTIALS")
        unknown = s.lobby.Login(lobby_pb2.LoginRequest(name="Nobody", password="not the password"))
        assert await refusal_of(unknown) == (Code.UNAUTHENTICATED, "WRONG_CREDENTIALS"), "names cannot be probed"
        assert (await s.lobby.Login(lobby_pb2.LoginRequest(name="owner", password=PASSWORD))).session.token
        # forged and missing tokens
        forged = bearer("eyJzdWIiOiJ4In0.forged")
        create = lobby_pb2.CreateTableRequest(name="x", game=engine_pb2.GAME_ZLJ)
        assert await refusal_of(s.lobby.CreateTable(create, metadata=forged)) == (Code.UNAUTHENTICATED, "TOKEN_INVALID")
        assert await refusal_of(s.lobby.CreateTable(create)) == (Code.UNAUTHENTICATED, "TOKEN_MISSING")
        # rule options the rules core refuses: no table is created whose match the engine would refuse
        negative = lobby_pb2.CreateTableRequest(name="x", game=engine_pb2.GAME_ZLJ)
        negative.zlj_options.CopyFrom(
            zlj_pb2.ZljOptions(
                deals=-3, reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER, resist=zlj_pb2.ZLJ_RESIST_TWO_BIG
            )
        )
        assert await refusal_of(s.lobby.CreateTable(negative, metadata=owner)) == (
            Code.INVALID_ARGUMENT,
            "INVALID_REQUEST",
        )
        # unknown tables, and ids that are not ids
        nowhere = lobby_pb2.TakeSeatRequest(table_id="table-00000000")
        assert await refusal_of(s.lobby.TakeSeat(nowhere, metadata=owner)) == (Code.NOT_FOUND, "TABLE_NOT_FOUND")
        for odd in ("../etc", "", "*", ">", "table.x", "table-" + "a" * 4100, "t\u0000x"):
            assert await refusal_of(s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=odd), metadata=owner)) == (
                Code.INVALID_ARGUMENT,
                "INVALID_REQUEST",
            ), odd
        # starting an unfilled table, or someone else's
        table_id = await s.table(owner)
        await seat_everyone(s, table_id, owner, [owner], bots=4)
        before = await s.lobby_store.load(table_id)
        start = lobby_pb2.StartMatchRequest(table_id=table_id)
        unfilled = s.lobby.StartMatch(start, metadata=owner)
        assert await refusal_of(unfilled) == (Code.FAILED_PRECONDITION, "TABLE_NOT_READY")
        assert await refusal_of(s.lobby.StartMatch(start, metadata=stranger)) == (
            Code.PERMISSION_DENIED,
            "NOT_TABLE_OWNER",
        )
        # acting at a table you are not seated at
        ready = lobby_pb2.ReadyRequest(table_id=table_id, ready=True)
        assert await refusal_of(s.lobby.Ready(ready, metadata=stranger)) == (Code.FAILED_PRECONDITION, "NOT_SEATED")
        bad_seat = lobby_pb2.TakeSeatRequest(table_id=table_id, seat=9)
        assert await refusal_of(s.lobby.TakeSeat(bad_seat, metadata=stranger)) == (
            Code.INVALID_ARGUMENT,
            "INVALID_REQUEST",
        )
        assert await s.lobby_store.load(table_id) == before, "nothing was stored"
        # a spectator's game token does not act, and sees no other game
        await s.lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table_id), metadata=owner)
        table = (await s.lobby.StartMatch(start, metadata=owner)).table
        game = await s.game_exists(table.game_id)
        watching = await s.lobby.JoinGame(lobby_pb2.JoinGameRequest(table_id=table_id), metadata=stranger)
        assert not watching.HasField("seat")
        legal = await s.engine.GetLegalActions(
            engine_pb2.GetLegalActionsRequest(game_id=table.game_id), metadata=bearer(watching.token)
        )
        assert not legal.actions
        seat = game.state.turn
        act = engine_pb2.ActRequest(game_id=table.game_id, command_id="x")
        getattr(act.zlj, "pass").seat = seat
        assert await refusal_of(s.engine.Act(act, metadata=bearer(watching.token))) == (
            Code.PERMISSION_DENIED,
            "ROLE_REQUIRED",
        )
        elsewhere = engine_pb2.GetViewRequest(game_id=table.game_id + "x")
        assert await refusal_of(s.engine.GetView(elsewhere, metadata=bearer(watching.token))) == (
            Code.NOT_FOUND,
            "GAME_NOT_FOUND",
        )
        # a game token is not a lobby session: it is for the engine only
        assert await refusal_of(s.lobby.CreateTable(create, metadata=bearer(watching.token))) == (
            Code.UNAUTHENTICATED,
            "TOKEN_INVALID",
        )
        # a player token is not a bot runner
        lease = lobby_pb2.LeaseBotSeatsRequest(runner_id="me")
        assert await refusal_of(s.lobby.LeaseBotSeats(lease, metadata=owner)) == (
            Code.PERMISSION_DENIED,
            "ROLE_REQUIRED",
        )
        # a bot runner leases under its own id only: it cannot renew (and play) another runner's seats
        other = lobby_pb2.LeaseBotSeatsRequest(runner_id="another-runner")
        assert await refusal_of(s.lobby.LeaseBotSeats(other, metadata=service_token())) == (
            Code.PERMISSION_DENIED,
            "NOT_YOUR_RUNNER_ID",
        )

    run(nats_url, database_dsn, body)


def test_two_bot_runners_share_a_table_of_bots_and_play_its_match_to_the_end(nats_url: str, database_dsn: str) -> None:
    """Real bot runners lease the seats from the lobby (never one seat twice) and play a 拖拉机 match out."""

    async def body(s: Stack) -> None:
        from paiju.botrunner.leases import LobbySeatSource
        from paiju.botrunner.runner import BotRunner
        from paiju.v1 import tractor_pb2

        _, owner = await s.player("Owner")
        create = lobby_pb2.CreateTableRequest(name="bots", game=engine_pb2.GAME_TRACTOR)
        create.tractor_options.CopyFrom(tractor_pb2.TractorOptions(round_minutes=1))  # a short timed round
        table_id = (await s.lobby.CreateTable(create, metadata=owner)).table.table_id
        await seat_everyone(s, table_id, owner, [], bots=4)
        table = (await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)).table
        await s.game_exists(table.game_id)
        await s.listed(table_id, lambda t: t.status == lobby_pb2.TABLE_STATUS_PLAYING)
        stop = asyncio.Event()
        runners = [
            BotRunner(
                LobbySeatSource(s.lobby, f"runner-{n}", BOTS, max_seats=2),
                s.engine,
                runner_id=f"runner-{n}",
                think=0.0,
                renew_every=1.0,
            )
            for n in range(2)
        ]
        tasks = [asyncio.create_task(runner.run(stop)) for runner in runners]
        try:
            # a one-minute round: the engine's timers announce the two last deals at once (D-TR-9)
            finished = await s.listed(table_id, lambda t: t.status == lobby_pb2.TABLE_STATUS_FINISHED, seconds=240)
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
        assert len(finished.last_result.levels) == 2
        game = await s.games.refresh(table.game_id)
        assert game.state.phase.value == "ended"
        leased = [set(r.starts) for r in runners]
        assert leased[0] and leased[1] and not leased[0] & leased[1], "each seat was played by one runner"

    run(nats_url, database_dsn, body)


def test_a_guest_whose_random_name_is_taken_gets_another(
    nats_url: str, database_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guest names are random: one that meets an existing name is drawn again, never answered NAME_TAKEN."""
    from paiju.lobby import accounts

    drawn = iter(["guest-0000aaaa", "guest-0000aaaa", "guest-0000AAAA", "guest-0000bbbb"])
    monkeypatch.setattr(accounts, "guest_name", lambda: next(drawn))

    async def body(s: Stack) -> None:
        first = (await s.lobby.Guest(lobby_pb2.GuestRequest())).session
        second = (await s.lobby.Guest(lobby_pb2.GuestRequest())).session
        assert first.name == "guest-0000aaaa" and second.name == "guest-0000bbbb"

    run(nats_url, database_dsn, body)


def test_a_long_polling_runner_gets_the_bot_seats_of_a_match_the_moment_it_starts(
    nats_url: str, database_dsn: str
) -> None:
    """`LeaseBotSeats` with ``wait_seconds``: with nothing new for the runner the lobby holds the answer, and answers
    with the match's bot seats as soon as the match starts (the runner takes them at once, not at its next poll)."""

    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        table_id = await s.table(owner, deals=1)
        await seat_everyone(s, table_id, owner, [], bots=6)
        ask = lobby_pb2.LeaseBotSeatsRequest(runner_id="test-runner", wait_seconds=10)
        # the lobby's wait starts when the call arrives, so it ends after this moment: an answer before it was
        # woken by the start, not by the end of the wait
        wait_over = asyncio.get_running_loop().time() + ask.wait_seconds
        waiting = asyncio.ensure_future(s.lobby.LeaseBotSeats(ask, metadata=service_token()))
        await asyncio.sleep(1.0)
        assert not waiting.done(), "nothing to play yet: the lobby holds the answer"
        await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)
        try:
            async with asyncio.timeout_at(wait_over):
                answer = await waiting
        except TimeoutError:
            raise AssertionError("the lobby answered when its wait ran out, not when the match started") from None
        assert sorted(seat.seat for seat in answer.seats) == list(range(6))
        assert {seat.game_id for seat in answer.seats} == {f"{table_id}-m1"}
        # held already: a second call waits again, and answers with the same seats when nothing moved
        again = await s.lobby.LeaseBotSeats(
            lobby_pb2.LeaseBotSeatsRequest(runner_id="test-runner", wait_seconds=1), metadata=service_token()
        )
        assert sorted(seat.seat for seat in again.seats) == list(range(6))

    run(nats_url, database_dsn, body)
