"""Who sits where: games created with their players, bots covering, returns, swaps between deals only."""

from __future__ import annotations

import typing
import uuid
from typing import Any

import grpc
import pytest

from paiju.engine.games import Games
from paiju.platform.tokens import Identity, Role
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import Cut, Phase
from paiju.rules.zlj.bots import RandomBot
from paiju.v1 import engine_pb2, zlj_pb2

from ..support.credentials import mint_token
from .harness import NOW, auth, engine, refusal_of, run, status_of, token

PLAYERS = [f"ann{s}" for s in range(6)]


def as_player(player: str, game: str, seat: int) -> tuple[tuple[str, str], ...]:
    return auth(mint_token(Identity(player, Role.PLAYER, game, seat, NOW + 900)))


def create_request(game_id: str, players: list[str], deals: int = 1) -> engine_pb2.CreateGameRequest:
    request = engine_pb2.CreateGameRequest(
        game_id=game_id,
        game=engine_pb2.GAME_ZLJ,
        zlj_options=zlj_pb2.ZljOptions(
            deals=deals,
            reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
            resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
        ),
    )
    for seat, player in enumerate(players):
        request.seats.add(seat=seat, player_id=player)
    return request


def change(game_id: str, seats: dict[int, str], why: int, command_id: str | None = None) -> Any:
    request = engine_pb2.AssignSeatsRequest(
        game_id=game_id, command_id=command_id or uuid.uuid4().hex, change=typing.cast(Any, why)
    )
    for seat, player in seats.items():
        request.seats.add(seat=seat, player_id=player)
    return request


async def play_to_the_next_deal(games: Games, game_id: str) -> None:
    """Random bots play the current deal to its end (the game then waits for the cut of the next one)."""
    rng = SeededRandom(4)
    bots = [RandomBot(rng.next64()) for _ in range(6)]
    game = await games.load(game_id)
    for n in range(3000):
        state = game.state
        if state.phase in (Phase.CUT, Phase.ENDED) and n:
            return
        action = bots[state.turn].choose(state, state.turn)
        if isinstance(action, Cut):
            action = Cut(state.turn, action.count, rng.next64())
        game, _ = await games.act(game_id, action, f"bot{n}", "bot")
    raise AssertionError("the deal did not end")


def test_a_token_acts_only_while_its_player_holds_the_seat(store_kind: str, request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            service = auth(token(Role.SERVICE))
            await stub.CreateGame(create_request("s1", PLAYERS), metadata=service)
            game = await games.load("s1")
            assert game.seats == tuple(PLAYERS)
            seat = game.state.turn
            legal = engine_pb2.GetLegalActionsRequest(game_id="s1")
            mine = as_player(PLAYERS[seat], "s1", seat)
            impostor = as_player("mallory", "s1", seat)
            assert (await stub.GetLegalActions(legal, metadata=mine)).actions
            assert await refusal_of(stub.GetLegalActions(legal, metadata=impostor)) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "SEAT_LOST",
            )

            # the player drops: a bot covers the seat, the player's token no longer sees or acts
            cover = change("s1", {seat: "bot-s1-0"}, engine_pb2.SEAT_CHANGE_COVER)
            covered = await stub.AssignSeats(cover, metadata=service)
            assert covered.version == game.version + 1
            view = engine_pb2.GetViewRequest(game_id="s1")
            assert await refusal_of(stub.GetView(view, metadata=mine)) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "SEAT_LOST",
            )
            bot = as_player("bot-s1-0", "s1", seat)
            choice = (await stub.GetLegalActions(legal, metadata=bot)).actions[0]
            act = engine_pb2.ActRequest(game_id="s1", command_id="by-bot", zlj=choice.zlj)
            assert await status_of(stub.Act(act, metadata=mine)) == grpc.StatusCode.PERMISSION_DENIED
            assert await status_of(stub.Act(act, metadata=bot)) == grpc.StatusCode.OK
            # a retried seat change is applied once
            assert (await stub.AssignSeats(cover, metadata=service)).version == covered.version

            # the player returns and takes the seat back; the bot's token is done
            back = change("s1", {seat: PLAYERS[seat]}, engine_pb2.SEAT_CHANGE_RETURN)
            await stub.AssignSeats(back, metadata=service)
            assert (await stub.GetView(view, metadata=mine)).zlj.hand
            assert await status_of(stub.GetView(view, metadata=bot)) == grpc.StatusCode.PERMISSION_DENIED

            # every seat change is an event of the game, public to every watcher
            kinds = [e.WhichOneof("payload") for e in (await games.history("s1")).envelopes]
            assert kinds.count("seats_assigned") == 3

    run(body)


def test_swaps_and_substitutes_only_between_deals(store_kind: str, request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            service = auth(token(Role.SERVICE))
            await stub.CreateGame(create_request("s2", PLAYERS, deals=2), metadata=service)
            swap = change("s2", {0: PLAYERS[1], 1: PLAYERS[0]}, engine_pb2.SEAT_CHANGE_SWAP)
            substitute = change("s2", {2: "sub"}, engine_pb2.SEAT_CHANGE_SUBSTITUTE)
            before = (await games.load("s2")).version
            assert await status_of(stub.AssignSeats(swap, metadata=service)) == grpc.StatusCode.FAILED_PRECONDITION
            assert (
                await status_of(stub.AssignSeats(substitute, metadata=service)) == grpc.StatusCode.FAILED_PRECONDITION
            )
            assert (await games.load("s2")).version == before, "nothing was stored"

            await play_to_the_next_deal(games, "s2")
            game = await games.load("s2")
            assert game.state.phase is Phase.CUT
            await stub.AssignSeats(swap, metadata=service)
            await stub.AssignSeats(substitute, metadata=service)
            after = await games.load("s2")
            assert after.seats[:3] == (PLAYERS[1], PLAYERS[0], "sub") and after.seats[3:] == tuple(PLAYERS[3:])
            # a "swap" that brings in someone new is not a swap
            bad = change("s2", {0: "stranger", 1: PLAYERS[1]}, engine_pb2.SEAT_CHANGE_SWAP)
            assert await status_of(stub.AssignSeats(bad, metadata=service)) == grpc.StatusCode.FAILED_PRECONDITION

    run(body)


def test_creating_a_game_is_idempotent_and_bad_seat_requests_are_refused(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            service = auth(token(Role.SERVICE))
            first = await stub.CreateGame(create_request("s3", PLAYERS), metadata=service)
            again = await stub.CreateGame(create_request("s3", PLAYERS), metadata=service)
            assert again.version == first.version
            other = create_request("s3", list(reversed(PLAYERS)))
            assert await status_of(stub.CreateGame(other, metadata=service)) == grpc.StatusCode.ALREADY_EXISTS
            stored = (await games.load("s3")).version
            assert stored == first.version

            short = create_request("s4", PLAYERS[:5])
            twice = create_request("s4", PLAYERS)
            twice.seats[1].seat = 0
            for bad in (short, twice):
                assert await status_of(stub.CreateGame(bad, metadata=service)) == grpc.StatusCode.INVALID_ARGUMENT
            assert await games.store.load("s4") == []

            player = as_player(PLAYERS[0], "s3", 0)
            cover = change("s3", {0: "bot"}, engine_pb2.SEAT_CHANGE_COVER)
            assert await refusal_of(stub.AssignSeats(cover, metadata=player)) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "ROLE_REQUIRED",
            )
            nowhere = change("nope", {0: "bot"}, engine_pb2.SEAT_CHANGE_COVER)
            assert await refusal_of(stub.AssignSeats(nowhere, metadata=service)) == (
                grpc.StatusCode.NOT_FOUND,
                "GAME_NOT_FOUND",
            )
            for bad_change in (
                change("s3", {6: "bot"}, engine_pb2.SEAT_CHANGE_COVER),
                change("s3", {0: ""}, engine_pb2.SEAT_CHANGE_COVER),
                change("s3", {0: "bot"}, engine_pb2.SEAT_CHANGE_UNSPECIFIED),
            ):
                # malformed by the contract: a seat no game has, no player, no reason
                assert await refusal_of(stub.AssignSeats(bad_change, metadata=service)) == (
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "INVALID_REQUEST",
                )
            # a seat a 砸六家 game has, but not a 拖拉机 game: refused by the game
            await stub.CreateGame(
                engine_pb2.CreateGameRequest(game_id="t3", game=engine_pb2.GAME_TRACTOR), metadata=service
            )
            assert await refusal_of(
                stub.AssignSeats(change("t3", {5: "bot"}, engine_pb2.SEAT_CHANGE_COVER), metadata=service)
            ) == (grpc.StatusCode.FAILED_PRECONDITION, "SEAT_CHANGE_REFUSED")
            reused = change("s3", {0: "bot"}, engine_pb2.SEAT_CHANGE_COVER, command_id="c1")
            await stub.AssignSeats(reused, metadata=service)
            again_other = change("s3", {1: "bot"}, engine_pb2.SEAT_CHANGE_COVER, command_id="c1")
            assert await status_of(stub.AssignSeats(again_other, metadata=service)) == grpc.StatusCode.ALREADY_EXISTS
            assert (await games.load("s3")).version == stored + 1

    run(body)
