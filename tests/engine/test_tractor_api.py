"""拖拉机 end to end through gRPC: a whole game played by four bots, each with its own player token, through
the concealed bidding and counters (D-TR-6), a void first deal redealt (D-TR-6.6), the dealer's cut (§8),
every trick, two settled deals and the end of a timed round (D-TR-9); then an analyst's replay."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any, cast

import grpc
import pytest

from paiju.contract.games import TRACTOR, TRACTOR_COMMANDS
from paiju.platform.tokens import Role
from paiju.rules.cards import Suit
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model
from paiju.rules.tractor.view import SeatView
from paiju.v1 import engine_pb2, tractor_pb2

from .harness import (
    NOW,
    auth,
    engine,
    game_events,
    play_tractor,
    refusal_of,
    rule_violations,
    run,
    seated,
    status_of,
    token,
)

ROUND_MINUTES = 90
ANNOUNCED_AT = NOW + (ROUND_MINUTES - 25) * 60
"""D-TR-9: the "two more deals" announcement is due 25 minutes before the end of the round."""


async def create(stub: Any, game_id: str) -> int:
    created = await stub.CreateGame(
        seated(
            engine_pb2.CreateGameRequest(
                game_id=game_id,
                game=engine_pb2.GAME_TRACTOR,
                tractor_options=tractor_pb2.TractorOptions(round_minutes=ROUND_MINUTES),
            ),
            model.SEATS,
        ),
        metadata=auth(token(Role.SERVICE)),
    )
    return int(created.version)


async def act(stub: Any, game_id: str, command: Any, md: Any) -> Any:
    return await stub.Act(
        engine_pb2.ActRequest(
            game_id=game_id, command_id=uuid.uuid4().hex, tractor=cast(Any, TRACTOR_COMMANDS.encode(command))
        ),
        metadata=md,
    )


def test_a_timed_tractor_game_played_by_bots_over_the_api(store_kind: str, request: pytest.FixtureRequest) -> None:
    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "t1"
            assert await create(stub, game_id) == 4, "GameStarted, CardFlipped, HandsDealt, SeatsAssigned"
            service = auth(token(Role.SERVICE))
            early = await act(stub, game_id, model.ClockTick(ANNOUNCED_AT - 1), service)
            assert list(early.events) == [], "not yet due: nothing recorded"
            ticked = await act(stub, game_id, model.ClockTick(ANNOUNCED_AT), service)
            assert game_events(ticked.events, "tractor") == [model.TwoMoreDeals(ANNOUNCED_AT)]
            # a player may not tick the clock, redeal or referee
            player = auth(token(Role.PLAYER, game_id, 0))
            for command in (model.ClockTick(ANNOUNCED_AT), model.Redeal(0), model.Penalize("p", 1, 1)):
                assert await status_of(act(stub, game_id, command, player)) == grpc.StatusCode.PERMISSION_DENIED

            acted: dict[int | None, list[Any]] = {s: [] for s in (None, 0, 1, 2, 3)}
            views: list[tuple[int | None, Any]] = []
            live_checks = 0

            def observe(source: str, seat: int | None, message: Any) -> None:
                if source == "act":
                    acted[seat].append(message)
                elif source == "view":
                    views.append((seat, message))

            async def before_act(seat: int, legal: Any) -> None:
                # the seat's view agrees with the live state, and its legal actions are the core's
                nonlocal live_checks
                live = await games.load(game_id)
                mine = TRACTOR.decode(views[-1][1].tractor, SeatView)
                assert views[-1][0] == seat and views[-1][1].version == live.version == legal.version
                assert sorted(mine.hand) == sorted(live.state.hands[seat])
                assert mine.hand_sizes == tuple(len(h) for h in live.state.hands)
                assert mine.my_bid == next((b for s, b in live.state.bids if s == seat), None)
                listed = [TRACTOR_COMMANDS.decode(a.tractor) for a in legal.actions]
                assert listed == list(tractor_game.legal_actions(live.state, seat))
                live_checks += 1

            acts = await play_tractor(
                stub, game_id, SeededRandom(7), void_deals=1, observe=observe, before_act=before_act
            )
            live = await games.load(game_id)
            assert live.state.phase is model.Phase.ENDED
            stored_log = (await games.history(game_id)).envelopes
            assert live_checks == acts

            # every act answered with contiguous versions ending at the version it reports
            answers = [a for seat in acted for a in acted[seat]]
            for answer in answers:
                versions = [e.version for e in answer.events]
                assert versions == list(range(answer.version - len(versions) + 1, answer.version + 1))
            # a seat's own concealed bid or pass comes back to it whole
            stored = {e.version: e for e in stored_log}
            own_entries = 0
            for seat in range(4):
                for answer in acted[seat]:
                    for envelope in answer.events:
                        (event,) = game_events([envelope], "tractor")
                        if isinstance(event, model.BidEntered) and event.seat == seat:
                            assert envelope.tractor == stored[envelope.version].tractor and not event.concealed
                            own_entries += 1
            assert own_entries == 4 * 3 + 2 * 2, "three biddings of four seats, two counter stages of two"

            # the analyst's replay: the whole log, versions 1..n, replaying to the live state
            analyst = auth(token(Role.ANALYST))
            full = [r.envelope async for r in stub.Replay(engine_pb2.ReplayRequest(game_id=game_id), metadata=analyst)]
            assert [e.version for e in full] == list(range(1, live.version + 1))
            assert all(not e.command_digest for e in full), "command digests never leave the engine"
            stored_envelopes = [engine_pb2.Envelope() for _ in stored_log]
            for mine, theirs in zip(stored_envelopes, stored_log, strict=True):
                mine.CopyFrom(theirs)
                mine.ClearField("command_digest")
            assert full == stored_envelopes, "an analyst gets the stored envelopes unredacted"
            log = game_events(full, "tractor")
            assert [e.WhichOneof("payload") for e in full].count("seats_assigned") == 1
            assert tractor_game.replay(log) == live.state
            kinds = Counter(type(e).__name__ for e in log)
            assert kinds["GameStarted"] == 1 and kinds["TwoMoreDeals"] == 1
            assert kinds["DealVoided"] == 1 and kinds["CardFlipped"] == 2, "the void first deal was flipped again"
            assert kinds["HandsDealt"] == 3, "first deal, its redeal, the second deal"
            assert kinds["BidsRevealed"] == 3 and kinds["CountersRevealed"] == 2 and kinds["TrumpDeclared"] == 2
            assert kinds["DealSettled"] == 2 and kinds["GameEnded"] == 1 and isinstance(log[-1], model.GameEnded)
            assert sum(isinstance(e, model.CountersRevealed) and e.winner is not None for e in log) >= 1, (
                "the bots countered at least once (反)"
            )

            # each deal: every one of the 324 cards dealt is played once; the settlement follows the tricks
            deals = split_deals(log)
            assert len(deals) == 2
            for number, deal in enumerate(deals, start=1):
                dealt = next(e for e in deal if isinstance(e, model.HandsDealt))
                assert dealt.deal == number and all(len(h) == model.HAND_SIZE for h in dealt.hands)
                played = Counter(c for e in deal if isinstance(e, model.CardsPlayed) for c in e.cards)
                assert played == Counter(c for h in dealt.hands for c in h)
                settled = next(e for e in deal if isinstance(e, model.DealSettled))
                credited = sum(e.credited for e in deal if isinstance(e, model.TrickWon))
                assert settled.attackers_points == credited, "no penalties: the attackers score their tricks"
            second = next(e for e in deals[1] if isinstance(e, model.HandsDealt))
            first_settled = next(e for e in deals[0] if isinstance(e, model.DealSettled))
            assert second.cut is not None and second.first_drawer == first_settled.next_dealer, (
                "the new dealer cut and draws first (§8, D-TR-8)"
            )
            ended = log[-1]
            assert isinstance(ended, model.GameEnded) and ended.levels == live.state.levels
            a, b = ended.levels
            assert ended.winner == (None if a == b else (0 if a > b else 1))

            # after the end, the public view shows the settlement and the final levels
            final = await stub.GetView(
                engine_pb2.GetViewRequest(game_id=game_id), metadata=auth(token(Role.SPECTATOR, game_id))
            )
            final_view = TRACTOR.decode(final.tractor, SeatView)
            assert final_view.phase is model.Phase.ENDED and final_view.levels == ended.levels
            settlements = [e for e in log if isinstance(e, model.DealSettled)]
            assert final_view.settlement == settlements[-1]
            # nothing more can be played
            last = auth(token(Role.PLAYER, game_id, 0))
            assert await status_of(act(stub, game_id, model.Pass(0), last)) == grpc.StatusCode.FAILED_PRECONDITION

    run(body)


def split_deals(log: list[Any]) -> list[list[Any]]:
    """The events of each played deal: from the HandsDealt that was bid on to its DealSettled."""
    deals: list[list[Any]] = []
    current: list[Any] = []
    for event in log:
        if isinstance(event, model.HandsDealt):
            current = []
        current.append(event)
        if isinstance(event, model.DealSettled):
            deals.append(current)
    return deals


def test_only_the_seat_itself_sees_its_concealed_bid_until_the_reveal(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """D-TR-6.2 over the API: while bids are concealed, the acting seat's answer carries its bid, every
    other seat's view says only that it acted, and the reveal shows the winning bid to all."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "t2"
            await create(stub, game_id)
            players = [auth(token(Role.PLAYER, game_id, s)) for s in range(4)]
            spectator = auth(token(Role.SPECTATOR, game_id))
            state = (await games.load(game_id)).state
            bidders = [
                s for s in range(4) if any(isinstance(a, model.MakeBid) for a in tractor_game.legal_actions(state, s))
            ]
            assert bidders, "someone can bid in this deal"
            bidder = bidders[0]
            bid = next(a for a in tractor_game.legal_actions(state, bidder) if isinstance(a, model.MakeBid))
            answer = await act(stub, game_id, bid, players[bidder])
            (entered,) = game_events(answer.events, "tractor")
            count = tractor_game.bid_count(state, bid.suit, bid.cards)
            assert entered == model.BidEntered(bidder, model.Bid(bidder, bid.suit, tuple(sorted(bid.cards)), count))
            for seat in [*range(4), None]:
                md = spectator if seat is None else players[seat]
                got = TRACTOR.decode(
                    (await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=md)).tractor, SeatView
                )
                assert got.acted == (bidder,)
                assert got.my_bid == (entered.bid if seat == bidder else None)
                assert got.bid is None
            # the others pass: the reveal shows the winning bid, and the counter stage begins
            for seat in range(4):
                if seat != bidder:
                    await act(stub, game_id, model.Pass(seat), players[seat])
            live = await games.load(game_id)
            assert live.state.phase is model.Phase.COUNTER and live.state.bid == entered.bid
            for seat in range(4):
                got = TRACTOR.decode(
                    (await stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=players[seat])).tractor,
                    SeatView,
                )
                assert got.bid == entered.bid and got.acted == ()
            # only the other team counters (D-TR-6.4): the bidder's partner has nothing to enter
            partner = (bidder + 2) % 4
            assert await refusal_of(act(stub, game_id, model.Pass(partner), players[partner])) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "NOT_YOUR_TURN",
            )
            legal = await stub.GetLegalActions(
                engine_pb2.GetLegalActionsRequest(game_id=game_id), metadata=players[partner]
            )
            assert list(legal.actions) == []

    run(body)


def test_a_rule_violation_carries_its_reason_and_rule_in_the_status_details(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """engine.proto: a FAILED_PRECONDITION carries a `RuleViolation` (the core's reason, and the rule's id when
    the error names one) in the google.rpc.Status details, the grpc-status-details-bin trailer."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "t3"
            await create(stub, game_id)
            state = (await games.load(game_id)).state
            level = tractor_game.level_rank(state)
            seat = next(s for s in range(4) if state.flipped in state.hands[s])
            wrong = next(c for c in state.hands[seat] if c // 4 != level and c < 52 and c != state.flipped)
            # a bid must show level cards (D-TR-6.1): the flipped card and a card that is not of the level rank
            command = model.MakeBid(seat, Suit.SPADES, tuple(sorted((state.flipped, wrong))))
            try:
                await act(stub, game_id, command, auth(token(Role.PLAYER, game_id, seat)))
            except grpc.aio.AioRpcError as e:
                assert e.code() == grpc.StatusCode.FAILED_PRECONDITION
                assert "D-TR-6.1" in (e.details() or "")
                violations = rule_violations(e)
                assert len(violations) == 1, f"no RuleViolation in the status details of {e.details()!r}"
                assert violations[0].reason and violations[0].rule == "D-TR-6.1"
            else:
                raise AssertionError("a bid of a card that is not of the level rank was accepted")

    run(body)
