"""The engine tokens of leased bot seats: a renewal hands back the token issued before for the same lease while it
serves (the engine verifies its signature once), a new one near its end, and never a token issued to another
runner, for another seat or another holder."""

from __future__ import annotations

import time
from typing import Any

from paiju.lobby.leases import LEASE_SECONDS, Leased, SeatTokens
from paiju.platform.tokens import Identity, Role, Verifier
from paiju.v1 import lobby_pb2

from ..engine.harness import auth as bearer
from ..support.credentials import LOBBY, TRUST, mint_token
from .stack import Stack
from .test_lobby import run, seat_everyone

T0 = 2_000_000_000


class Minted:
    """The lobby's signer, counting what it mints."""

    def __init__(self) -> None:
        self.identities: list[Identity] = []

    def __call__(self, identity: Identity) -> str:
        self.identities.append(identity)
        return LOBBY.mint(identity)


def held(seat: int = 0, *, expires: int, runner_new: bool = False, holder: str = "bot-1", game: str = "g1") -> Leased:
    return Leased("table-1", game, "zlj", seat, holder, expires, runner_new)


def test_a_token_is_reused_while_it_outlives_the_lease_with_a_third_of_its_life_left() -> None:
    minted = Minted()
    tokens = SeatTokens(minted)
    first = tokens.token("runner-a", held(expires=T0 + 30, runner_new=True), T0)
    identity = Verifier(TRUST, lambda: T0).verify(first)
    assert (identity.subject, identity.game, identity.seat) == ("bot-1", "g1", 0)
    assert (identity.issued, identity.expires) == (T0, T0 + 30 + LEASE_SECONDS), "the lease's end and its grace"
    # asked again, and after a renewal: the same token (its end is before a new one's, never after)
    assert tokens.token("runner-a", held(expires=T0 + 30), T0 + 8) == first
    assert tokens.token("runner-a", held(expires=T0 + 46), T0 + 16) == first
    assert tokens.token("runner-a", held(expires=T0 + 46), T0 + 24) == first
    assert len(minted.identities) == 1
    # a renewed lease that would outlast it: a new token, to the new lease's end and its grace
    fresh = tokens.token("runner-a", held(expires=T0 + 62), T0 + 32)
    assert fresh != first and Verifier(TRUST, lambda: T0 + 32).verify(fresh).expires == T0 + 62 + LEASE_SECONDS
    assert tokens.token("runner-a", held(expires=T0 + 62), T0 + 40) == fresh
    # a third of its life left or less (60 s issued at T0 + 32: up to T0 + 72): a new one
    assert tokens.token("runner-a", held(expires=T0 + 62), T0 + 72) != fresh
    assert len(minted.identities) == 3


def test_another_runner_holder_game_or_a_lease_taken_anew_gets_a_token_of_its_own() -> None:
    minted = Minted()
    tokens = SeatTokens(minted)
    a = tokens.token("runner-a", held(expires=T0 + 30, runner_new=True), T0)
    given = {a}
    # (a token is a function of its claims: the same ones in the same second would be the same string)
    for at, (runner, leased) in enumerate(
        (
            ("runner-b", held(expires=T0 + 30)),  # another runner: never runner-a's token
            ("runner-b", held(expires=T0 + 30, holder="cover-1")),  # the seat's holder changed
            ("runner-b", held(expires=T0 + 30, holder="cover-1", game="g2")),  # the table's next match
            ("runner-b", held(expires=T0 + 30, holder="cover-1", game="g2", runner_new=True)),  # leased anew
        ),
        start=T0 + 1,
    ):
        token = tokens.token(runner, leased, at)
        assert token not in given
        given.add(token)
        assert Verifier(TRUST, lambda: T0).verify(token).subject == leased.holder
    # another seat of the table: its own token, and the first seat's is kept for its runner
    other = tokens.token("runner-b", held(1, expires=T0 + 30, holder="cover-1", game="g2"), T0 + 5)
    assert other not in given
    assert tokens.token("runner-b", held(expires=T0 + 30, holder="cover-1", game="g2"), T0 + 6) in given
    assert len(minted.identities) == 6


def test_the_tokens_of_ended_leases_are_forgotten() -> None:
    tokens = SeatTokens(Minted())
    for seat in range(5):
        tokens.token("runner-a", held(seat, expires=T0 + 30, runner_new=True), T0)
    tokens.token("runner-a", held(expires=T0 + 200, runner_new=True), T0 + 100)  # the others ended at T0 + 60
    assert len(tokens._issued) == 1


def test_renewals_through_the_lobby_hand_back_a_seats_token_and_other_runners_get_their_own(
    nats_url: str, database_dsn: str
) -> None:
    """Two runners lease a table's six bot seats from the lobby (its clock driven by the test): a runner's
    renewals hand back the same tokens until a renewed lease would outlast them, the other runner's seats have
    tokens of their own, and once the first runner's leases ran out the other takes its seats with new tokens."""

    async def body(s: Stack) -> None:
        _, owner = await s.player("Owner")
        table_id = await s.table(owner, deals=1)
        await seat_everyone(s, table_id, owner, [], bots=6)
        await s.lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=owner)
        await s.listed(table_id, lambda t: t.status == lobby_pb2.TABLE_STATUS_PLAYING)
        t0 = int(time.time())
        clock = [t0]
        s.lobby_service._now = lambda: clock[0]  # the lobby's clock (leases, tokens); tokens are checked on it

        async def ask(runner: str, max_seats: int = 0) -> dict[int, Any]:
            who = bearer(mint_token(Identity(runner, Role.BOT_RUNNER, expires=t0 + 300, issued=t0)))
            request = lobby_pb2.LeaseBotSeatsRequest(runner_id=runner, max_seats=max_seats)
            return {seat.seat: seat for seat in (await s.lobby.LeaseBotSeats(request, metadata=who)).seats}

        def checked(seats: dict[int, Any]) -> dict[int, str]:
            for seat in seats.values():
                identity = Verifier(TRUST, lambda: clock[0]).verify(seat.token)
                assert (identity.game, identity.seat) == (seat.game_id, seat.seat)
                assert identity.expires <= seat.lease_expires_at + LEASE_SECONDS, "never past the lease and its grace"
                assert identity.expires >= seat.lease_expires_at, "valid while the lease runs"
            return {n: seat.token for n, seat in seats.items()}

        a = checked(await ask("runner-a", 3))
        assert len(a) == 3
        for step in (0, 8, 16):  # at 16 s the leases are renewed (less than half of their 30 s left)
            clock[0] = t0 + step
            again = await ask("runner-a", 3)
            assert checked(again) == a
        assert {seat.lease_expires_at for seat in again.values()} == {t0 + 16 + 30}, "renewed"
        b = checked(await ask("runner-b"))
        assert set(b) == set(range(6)) - set(a)
        assert not set(b.values()) & set(a.values())
        clock[0] = t0 + 32  # renewed again, to t0 + 62: past the first tokens' end (t0 + 60)
        later_seats = await ask("runner-a", 3)
        later = checked(later_seats)
        assert set(later) == set(a) and not set(later.values()) & set(a.values())
        assert {seat.lease_expires_at for seat in later_seats.values()} == {t0 + 62}
        clock[0] = t0 + 63  # runner-a is gone: its leases ran out, runner-b takes its seats with new tokens
        taken = checked(await ask("runner-b"))
        assert set(taken) == set(range(6))
        assert not {taken[n] for n in a} & (set(a.values()) | set(later.values()))

    run(nats_url, database_dsn, body)
