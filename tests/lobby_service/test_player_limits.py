"""Limits that protect the players: wrong passwords lock out only the address that sent them, and a refused
attempt costs no password check."""

from __future__ import annotations

from typing import Any, cast

import grpc
import pytest

from paiju.lobby import accounts
from paiju.lobby.expiry import TableExpiry
from paiju.lobby.table import LobbyError
from paiju.platform.errors import Reason, Refused
from paiju.platform.limits import LimitsError, LoginFailures, parse_failures
from paiju.platform.tokens import Identity, Revocations, Role
from paiju.v1 import engine_pb2, lobby_pb2
from paiju.v1.engine_pb2 import GAME_ZLJ

from ..engine.harness import refusal_of
from ..support.credentials import bearer
from ..support.tokens import token_metadata
from ..support.waiting import wait_until
from .stack import PASSWORD, Stack
from .test_lobby import run

OK = (grpc.StatusCode.OK, "")
WRONG = (grpc.StatusCode.UNAUTHENTICATED, "WRONG_CREDENTIALS")
LIMITED = (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")


def login(lobby: Any, name: str, password: str) -> Any:
    return refusal_of(lobby.Login(lobby_pb2.LoginRequest(name=name, password=password)))


def test_wrong_passwords_lock_out_only_the_address_that_sent_them(
    nats_url: str, database_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    matches = accounts.login_matches

    def counting(account: Any, password: str) -> bool:
        checked.append(password)
        return matches(account, password)

    monkeypatch.setattr(accounts, "login_matches", counting)

    async def body(s: Stack) -> None:
        await s.player("Ann")
        # the name however written: one account, one count
        for n, name in enumerate(["ann", "ANN", "Ann", "ａｎｎ", "aNn"]):
            assert await login(s.lobby, name, f"guess-{n}") == WRONG
        assert len(checked) == 5
        # the sixth attempt from here is refused, the right password too, and no password is checked for it
        assert await login(s.lobby, "Ann", "guess-6") == LIMITED
        assert await login(s.lobby, "Ann", PASSWORD) == LIMITED
        assert len(checked) == 5, "a refused attempt runs no password check"
        # the owner, elsewhere, signs in at once
        assert await login(s.lobby_v6, "Ann", PASSWORD) == OK
        # and another name from the first address is not locked by Ann's count
        await s.player("Bo")
        assert await login(s.lobby, "Bo", PASSWORD) == OK

    run(nats_url, database_dsn, body, login_failures="name_address=5/15 minutes; address=50/hour")


def test_an_address_spraying_many_names_is_refused_and_others_are_not(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        await s.player("Cy")
        answers = [await login(s.lobby, f"name{n}", "not-the-password") for n in range(6)]
        assert answers == [WRONG] * 4 + [LIMITED] * 2
        assert await login(s.lobby, "Cy", PASSWORD) == LIMITED
        assert await login(s.lobby_v6, "Cy", PASSWORD) == OK

    run(nats_url, database_dsn, body, login_failures="name_address=10/15 minutes; address=4/hour")


def test_a_right_password_forgets_the_failures_of_its_address() -> None:
    now = [1000.0]
    failures = LoginFailures("name_address=3/15 minutes; address=100/hour", clock=lambda: now[0])
    peer = "ipv4:10.0.0.1:4000"
    for _ in range(2):
        failures.attempt("account-a", peer)
    failures.attempt("account-a", peer)
    failures.succeeded("account-a", peer)
    for _ in range(3):
        failures.attempt("account-a", peer)
    with pytest.raises(Exception, match="too many wrong passwords for this name from this address"):
        failures.attempt("account-a", peer)
    failures.attempt("account-a", "ipv4:10.0.0.2:4000")  # another address is not refused
    now[0] += 15 * 60 * 2
    failures.attempt("account-a", peer)  # the window passed


def test_failure_limits_read_exactly() -> None:
    assert set(parse_failures("name_address=10/15 minutes; address=50 per hour")) == {"name_address", "address"}
    for bad in ("name=10/minute", "address=", "address=lots"):
        with pytest.raises(LimitsError):
            parse_failures(bad)
    LoginFailures("off").attempt("account-a", "ipv4:1.2.3.4:5")


RESERVED = [
    "Bot 3",
    "Bot０",
    "B0T",
    "bots",
    "admin",
    "Аdmin",
    "ADMINISTRATOR",
    "referee",
    "Referee 7",
    "r3feree",
    "moderator",
    "m0derator",
    "paiju",
    "paiju-referee",
    "Paiju_Team",
    "ρaiju fan",
    "staff",
    "support",
]
FREE = ["Ann", "Bob", "bottle", "robot", "Modest", "Adminah", "Refereed Games", "Max"]


def test_names_that_read_as_a_bot_the_staff_or_the_house_are_reserved() -> None:
    for name in RESERVED:
        assert accounts.reserved_reading(name) is not None, name
        with pytest.raises(LobbyError) as refused:
            accounts.check_name(name)
        assert refused.value.reason.value == "NAME_RESERVED", name
    for name in FREE:
        assert accounts.reserved_reading(name) is None, name
        assert accounts.check_name(name) == name


def test_registering_a_reserved_name_is_refused_with_its_reason(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        for name in ("Bot 3", "Bot０", "admin", "paiju-referee", "Moderator"):
            answer = await refusal_of(s.lobby.Register(lobby_pb2.RegisterRequest(name=name, password=PASSWORD)))
            assert answer == (grpc.StatusCode.INVALID_ARGUMENT, "NAME_RESERVED"), name
        accounts_stored = [a for a in await s.lobby_store.aggregates() if a.startswith(("account-", "name-"))]
        assert accounts_stored == [], "nothing stored for a refused name"

    run(nats_url, database_dsn, body)


def test_after_logout_the_engine_refuses_the_game_tokens_of_the_revoked_session(
    nats_url: str, database_dsn: str
) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        table_id = await s.table(owner, deals=1)
        await s.lobby.TakeSeat(lobby_pb2.TakeSeatRequest(table_id=table_id), metadata=owner)
        await s.lobby.Ready(lobby_pb2.ReadyRequest(table_id=table_id, ready=True), metadata=owner)
        for _ in range(5):
            await s.lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table_id), metadata=owner)
        await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)
        joined = await s.lobby.JoinGame(lobby_pb2.JoinGameRequest(table_id=table_id), metadata=owner)
        game_token = bearer(joined.token)
        view = engine_pb2.GetViewRequest(game_id=joined.game_id)
        assert (await s.engine.GetView(view, metadata=game_token)).zlj.hand, "the seat's token is accepted"
        await s.lobby.Logout(lobby_pb2.LogoutRequest(), metadata=owner)

        async def refused_now() -> bool:
            return await refusal_of(s.engine.GetView(view, metadata=game_token)) == (
                grpc.StatusCode.UNAUTHENTICATED,
                "TOKEN_REVOKED",
            )

        await wait_until(refused_now, "the engine to refuse the revoked session's game token")
        legal = engine_pb2.GetLegalActionsRequest(game_id=joined.game_id)
        assert await refusal_of(s.engine.GetLegalActions(legal, metadata=game_token)) == (
            grpc.StatusCode.UNAUTHENTICATED,
            "TOKEN_REVOKED",
        )
        # signed in again, the player gets a game token the engine takes
        again = await s.lobby.Login(lobby_pb2.LoginRequest(name="Owner", password=PASSWORD))
        fresh = await s.lobby.JoinGame(
            lobby_pb2.JoinGameRequest(table_id=table_id), metadata=bearer(again.session.token)
        )
        assert (await s.engine.GetView(view, metadata=bearer(fresh.token))).zlj.hand

    run(nats_url, database_dsn, body)


def test_an_engine_started_after_the_logout_refuses_the_old_game_token_too(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        player_id, owner = await s.player("Owner")
        await s.lobby.Logout(lobby_pb2.LogoutRequest(), metadata=owner)
        # a fresh index (a restarted engine) reads the account's revocations from the stream
        fresh = Revocations(s.lobby_store)
        old_game_token = Identity(player_id, Role.PLAYER, "some-game", 0, 2**31, 1, issuer="lobby")
        with pytest.raises(Refused) as info:
            await fresh.check(old_game_token)
        assert info.value.reason is Reason.TOKEN_REVOKED
        assert await fresh.generation(player_id) == 1
        current = Identity(player_id, Role.PLAYER, "some-game", 0, 2**31, 1, issuer="lobby", generation=1)
        assert await fresh.check(current) is current

    run(nats_url, database_dsn, body)


ADMIN_TOKEN = token_metadata(role=Role.ADMIN, subject="ops")


async def open_table(s: Stack, who: Any, name: str = "t") -> Any:
    return await refusal_of(s.lobby.CreateTable(lobby_pb2.CreateTableRequest(name=name, game=GAME_ZLJ), metadata=who))


def test_a_player_may_have_three_open_tables_and_operators_are_not_counted(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        _, flooder = await s.player("Flooder")
        answers = [await open_table(s, flooder, f"t{n}") for n in range(6)]
        assert answers == [OK] * 3 + [(grpc.StatusCode.RESOURCE_EXHAUSTED, "TABLE_LIMIT")] * 3
        tables = [a for a in await s.lobby_store.aggregates() if a.startswith("table-")]
        assert len(tables) == 3, "nothing stored for a refused table"
        # a guest is a player account too
        guest = bearer((await s.lobby.Guest(lobby_pb2.GuestRequest())).session.token)
        assert [await open_table(s, guest) for _ in range(4)] == [OK] * 3 + [
            (grpc.StatusCode.RESOURCE_EXHAUSTED, "TABLE_LIMIT")
        ]
        # an operator's tables (the demo tables) are not counted
        assert [await open_table(s, ADMIN_TOKEN, f"demo {n}") for n in range(5)] == [OK] * 5
        # the limit is the account's: another player opens a table meanwhile
        _, other = await s.player("Other")
        assert await open_table(s, other) == OK

    run(nats_url, database_dsn, body)


def test_an_idle_table_expires_and_a_seated_or_operators_table_does_not(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        empty = await s.table(owner)
        seated = await s.table(owner)
        await s.lobby.TakeSeat(lobby_pb2.TakeSeatRequest(table_id=seated), metadata=owner)
        demo = (
            await s.lobby.CreateTable(lobby_pb2.CreateTableRequest(name="demo", game=GAME_ZLJ), metadata=ADMIN_TOKEN)
        ).table.table_id

        async def status(table_id: str) -> int:
            got = await s.lobby.GetTable(lobby_pb2.GetTableRequest(table_id=table_id), metadata=owner)
            return int(got.table.status)

        await wait_until(
            lambda: _equal(status(empty), lobby_pb2.TABLE_STATUS_EXPIRED), "the empty table to expire", seconds=20
        )
        assert await status(seated) == lobby_pb2.TABLE_STATUS_OPEN, "a person sits there"
        assert await status(demo) == lobby_pb2.TABLE_STATUS_OPEN, "an operator's table does not expire"
        # an expired table takes no more commands, leaves the listing and no longer counts against its owner
        assert await refusal_of(s.lobby.TakeSeat(lobby_pb2.TakeSeatRequest(table_id=empty), metadata=owner)) == (
            grpc.StatusCode.NOT_FOUND,
            "TABLE_NOT_FOUND",
        )

        async def expired_listed() -> list[str]:
            expired = await s.lobby.ListTables(
                lobby_pb2.ListTablesRequest(status=lobby_pb2.TABLE_STATUS_EXPIRED), metadata=owner
            )
            return [t.table_id for t in expired.tables]

        assert await wait_until(expired_listed, "the read model to list the expired table", seconds=20) == [empty]
        listed = await s.lobby.ListTables(lobby_pb2.ListTablesRequest(), metadata=owner)
        assert empty not in {t.table_id for t in listed.tables} and seated in {t.table_id for t in listed.tables}
        # the seated player leaves: the table is idle from then on, and expires
        await s.lobby.LeaveSeat(lobby_pb2.LeaveSeatRequest(table_id=seated), metadata=owner)
        await wait_until(
            lambda: _equal(status(seated), lobby_pb2.TABLE_STATUS_EXPIRED), "the left table to expire", seconds=20
        )

    run(nats_url, database_dsn, body, idle_table_seconds=1.5)


async def _equal(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


def test_the_tables_list_shows_tables_in_play_first_and_pages(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        # the tables in play are the older ones, then a flood of empty tables is opened after them: newest first
        # would list the flood first and push the tables in play off the page
        playing = []
        for n in range(2):
            table_id = (
                await s.lobby.CreateTable(
                    lobby_pb2.CreateTableRequest(name=f"bots {n}", game=GAME_ZLJ), metadata=ADMIN_TOKEN
                )
            ).table.table_id
            for _ in range(6):
                await s.lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table_id), metadata=ADMIN_TOKEN)
            await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=ADMIN_TOKEN)
            playing.append(table_id)
        for table_id in playing:
            await s.listed(table_id, lambda t: t.status == lobby_pb2.TABLE_STATUS_PLAYING)
        opened = []
        for n in range(5):
            opened.append(
                (
                    await s.lobby.CreateTable(
                        lobby_pb2.CreateTableRequest(name=f"open {n}", game=GAME_ZLJ), metadata=ADMIN_TOKEN
                    )
                ).table.table_id
            )
        await s.listed(opened[-1], lambda t: True)
        seen: list[str] = []
        token = ""
        for _ in range(10):
            page = await s.lobby.ListTables(
                lobby_pb2.ListTablesRequest(page_size=2, page_token=token), metadata=ADMIN_TOKEN
            )
            assert len(page.tables) <= 2
            seen += [t.table_id for t in page.tables]
            token = page.next_page_token
            if not token:
                break
        assert seen[:2] == playing[::-1], "the tables in play first, newest first"
        assert seen[2:] == opened[::-1] and len(set(seen)) == len(seen) == 7, "every table once"
        whole = await s.lobby.ListTables(lobby_pb2.ListTablesRequest(limit=200), metadata=ADMIN_TOKEN)
        assert [t.table_id for t in whole.tables] == seen and not whole.next_page_token
        for bad in ("x", "p1.3.1", "p1.1.99999999999999999999", "p1.1.-1", "p2.1.5", "p1.1.5\x00", "é" * 50):
            answer = await refusal_of(
                s.lobby.ListTables(lobby_pb2.ListTablesRequest(page_token=bad), metadata=ADMIN_TOKEN)
            )
            assert answer == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST"), bad
        too_long = lobby_pb2.ListTablesRequest(page_token="p" * 101)
        assert await refusal_of(s.lobby.ListTables(too_long, metadata=ADMIN_TOKEN)) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_REQUEST",
        )
        for size in (-1, 201):
            request = lobby_pb2.ListTablesRequest(page_size=size)
            assert (await refusal_of(s.lobby.ListTables(request, metadata=ADMIN_TOKEN)))[0] == (
                grpc.StatusCode.INVALID_ARGUMENT
            )

    run(nats_url, database_dsn, body)


def test_existing_accounts_with_reserved_names_are_listed_for_operators(nats_url: str, database_dsn: str) -> None:
    async def body(s: Stack) -> None:
        # accounts registered before such names were reserved: stored as the lobby stored them then
        for name in ("Admin", "Bot 7", "Alice"):
            await s.lobby_service._register(name, accounts.hash_password(PASSWORD), guest=False)
        await s.listing.catch_up()
        listed = await s.lobby.ListReservedNames(lobby_pb2.ListReservedNamesRequest(), metadata=ADMIN_TOKEN)
        assert [(n.name, n.reads_as) for n in listed.names] == [("Admin", "admin"), ("Bot 7", "bot")]
        # they keep their names: they sign in as before
        assert await login(s.lobby, "Admin", PASSWORD) == OK
        _, player = await s.player("Carol")
        refused = await refusal_of(s.lobby.ListReservedNames(lobby_pb2.ListReservedNamesRequest(), metadata=player))
        assert refused == (grpc.StatusCode.PERMISSION_DENIED, "ROLE_REQUIRED")

    run(nats_url, database_dsn, body)


def test_a_busy_table_holds_one_deadline_however_many_events_it_has() -> None:
    expiry = TableExpiry(cast(Any, None), 1800, clock=lambda: 1000.0)
    for n in range(1000):  # a table of bots: a lease renewed every few seconds
        expiry.schedule("table-busy", 1000.0 + n)
    expiry.schedule("table-quiet", 500.0)
    assert expiry.pending() == 2 and len(expiry._heap) == 2
