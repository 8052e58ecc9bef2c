"""Limits that protect the players: wrong passwords lock out only the address that sent them, and a refused
attempt costs no password check."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from paiju.lobby import accounts
from paiju.lobby.table import LobbyError
from paiju.platform.errors import Reason, Refused
from paiju.platform.limits import LimitsError, LoginFailures, parse_failures
from paiju.platform.tokens import Identity, Revocations, Role
from paiju.v1 import engine_pb2, lobby_pb2

from ..engine.harness import refusal_of
from ..support.credentials import bearer
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
