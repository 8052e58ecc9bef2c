"""What Watch streams send, made once and shared (`paiju.engine.watching`): every shared encoding is byte for byte
what the per-watcher redaction it replaces made, and a turn's bytes put together from its parts what serializing it
makes; a turn tells a seat exactly what `GetLegalActions` and `GetView`
would; a substitute's audience never holds an earlier holder's hand; and a game held in memory keeps its state and
its latest events, not its history."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime

import pytest

from paiju.engine import watching
from paiju.engine.dealing import FairDealing
from paiju.engine.games import GAME_BYTES, RECENT, Game, Games, assigned, seat_count
from paiju.engine.seeds import server_seeds
from paiju.engine.selfplay import record_zlj
from paiju.engine.watching import ENDED_KEPT, FULL, Encodings, action_bytes, audience, turn_bytes, turn_of
from paiju.platform.repository import Recent
from paiju.platform.store import MemoryEventStore
from paiju.rules import registry
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.tractor import model as tractor
from paiju.rules.zlj import bots as zlj_bots
from paiju.rules.zlj import model as zlj
from paiju.sdk.games import GAMES
from paiju.v1 import engine_pb2

SECRET = b"watching-tests-server-seed-secret!!"
T0 = datetime(2026, 12, 5, tzinfo=UTC)


def _reference_event(game: Game, envelope: engine_pb2.Envelope, seat: int | None, full: bool) -> bytes:
    """The per-watcher redaction the shared encodings replace, as the engine made it for every watcher before: a copy
    of the envelope without its digest, its rules event redacted for the seat and encoded again."""
    out = engine_pb2.Envelope()
    out.CopyFrom(envelope)
    out.ClearField("command_digest")
    if not full and envelope.WhichOneof("payload") == game.rules.name:
        event = game.rules.events.decode(getattr(envelope, game.rules.name))
        hidden = game.rules.game.redact(event, seat)
        getattr(out, game.rules.name).CopyFrom(game.rules.events.encode(hidden))
    return engine_pb2.WatchResponse(envelope=out).SerializeToString()


def _reference_held(envelopes: list[engine_pb2.Envelope], count: int, seat: int, player: str) -> list[bool]:
    """Whether ``player`` held ``seat`` at each version, as the engine computed it from a game's whole history."""
    seats: tuple[str, ...] = ()
    holders: list[tuple[str, ...]] = []
    for envelope in envelopes:
        if envelope.WhichOneof("payload") == "seats_assigned":
            seats = assigned(seats, envelope.seats_assigned, count)
        holders.append(seats)
    first = next((s for s in holders if s), ())
    return [0 <= seat < count and (not (s or first) or (s or first)[seat] == player) for s in holders]


def _legal_actions_answer(game: Game, seat: int) -> engine_pb2.GetLegalActionsResponse:
    """`GetLegalActions` as the engine answers it."""
    response = engine_pb2.GetLegalActionsResponse(version=game.version)
    for action in game.rules.game.legal_actions(game.state, seat):
        getattr(response.actions.add(), game.rules.name).CopyFrom(game.rules.commands.encode(action))
    game.rules.legal_extras(game.state, seat, response)
    return response


class Checked:
    """Checks every new version of a game as it is played: each audience's shared encoding against the reference,
    each seat's and the spectators' turn against the calls it replaces."""

    def __init__(self, games: Games, game_id: str, players: list[str]) -> None:
        self.games, self.game_id, self.players = games, game_id, players
        self.encodings = Encodings(lambda: 0.0)
        self.seen = 0
        self.turns_with_actions = 0
        self.hidden = 0
        self.log: list[engine_pb2.Envelope] = []

    async def check(self, game: Game) -> None:
        history = (await self.games.history(self.game_id)).envelopes
        self.log = list(history)
        count = seat_count(game.rules)
        for version in range(max(self.seen + 1, game.first_recent), game.version + 1):
            envelope = game.envelope(version)
            assert envelope is not None and envelope == history[version - 1]
            for who in (FULL, None, *range(count)):
                shared = self.encodings.event(game, version, who)
                assert shared == _reference_event(game, envelope, None if who == FULL else who, who == FULL)
                assert self.encodings.event(game, version, who) is shared, "made once, then shared"
                if who not in (FULL, None) and shared != self.encodings.event(game, version, None):
                    self.hidden += 1
            for seat in range(count):
                for player in {*self.players, "someone-else"}:
                    expected = _reference_held(self.log[: game.version], count, seat, player)[version - 1]
                    assert game.held_at(seat, player, version) == expected
                    assert audience(game, version, seat, player, False) == (seat if expected else None)
        self.seen = game.version
        for seat in (None, *range(count)):
            turn = turn_of(game, seat, views=False, contribution_seconds=0.0)
            # put together from its parts, each legal action's encoding reused: the bytes of the message serialized
            assert turn_bytes(game, seat, views=False, contribution_seconds=0.0) == (
                engine_pb2.WatchResponse(turn=turn).SerializeToString()
            )
            waiting = {*game.rules.game.waiting(game.state), *game.rules.game.contributors(game.state)}
            assert list(turn.seats) == sorted(waiting) and turn.version == game.version
            if seat is not None and seat in waiting:
                legal = _legal_actions_answer(game, seat)
                assert list(turn.actions) == list(legal.actions)
                assert turn.tractor_follow == legal.tractor_follow
                view = game.rules.codec.encode(game.rules.game.view(game.state, seat))
                assert getattr(turn, game.rules.name).SerializeToString() == view.SerializeToString()
                self.turns_with_actions += bool(turn.actions)
            else:
                assert not turn.actions and turn.WhichOneof("view") is None and not turn.HasField("fair_step")
            viewing = turn_of(game, seat, views=True, contribution_seconds=0.0)
            assert turn_bytes(game, seat, views=True, contribution_seconds=0.0) == (
                engine_pb2.WatchResponse(turn=viewing).SerializeToString()
            )
            expected_view = game.rules.codec.encode(game.rules.game.view(game.state, seat))
            assert getattr(viewing, game.rules.name) == expected_view
        # a change's message as a live watch sends it: the newest event for the watcher's audience, then its turn
        for who in (FULL, None, 0, 1):
            for watcher in (None, 0, 1):
                for views in (False, True):
                    joined = self.encodings.change(game, who, watcher, views=views)
                    event = self.encodings.event(game, game.version, who)
                    assert joined == event + self.encodings.turn(game, watcher, views=views)
                    if who in (FULL, None):  # the audiences many watch with: joined once, then shared
                        assert self.encodings.change(game, who, watcher, views=views) is joined


def _fair_games() -> Games:
    dealing = FairDealing(lambda game_id, number: server_seeds([SECRET], game_id, number), 0.0)
    return Games(MemoryEventStore(), clock=lambda: T0, dealing=dealing)


def test_a_zlj_match_with_a_swap_and_a_substitute_shares_exact_encodings() -> None:
    async def main() -> None:
        games = _fair_games()
        players = [f"p{s}" for s in range(zlj.SEATS)]
        rng = SeededRandom(21)
        start = zlj.StartMatch(rng.next64(), zlj.Options(deals=2), fair=True)
        game = await games.create("z", "zlj", start, "start", "engine", seats=players)
        checked = Checked(games, "z", [*players, "p9"])
        await checked.check(game)
        bots = [zlj_bots.HeuristicBot(rng.next64()) for _ in range(zlj.SEATS)]
        changed = False
        for n in range(5000):
            if game.state.phase is zlj.Phase.ENDED:
                break
            if game.state.phase is zlj.Phase.CUT and not changed:
                changed = True
                await games.assign_seats("z", {0: "p1", 1: "p0"}, engine_pb2.SEAT_CHANGE_SWAP, "swap", "lobby")
                game, _ = await games.assign_seats("z", {3: "p9"}, engine_pb2.SEAT_CHANGE_SUBSTITUTE, "sub", "lobby")
                await checked.check(game)
            seat = game.state.turn
            action = bots[seat].choose(game.state, seat)
            if isinstance(action, zlj.Cut):
                action = zlj.Cut(seat, action.count, 0, b"cut")
            game, _ = await games.act("z", action, f"c{n}", f"p{seat}")
            await checked.check(game)
        assert game.state.phase is zlj.Phase.ENDED and changed
        assert checked.turns_with_actions > 100 and checked.hidden > 0
        # the substitute in seat 3 (p9) shares seat 3's encodings only from the change on: the hands dealt before are
        # not its audience's
        substitution = next(e.version for e in checked.log if e.command_id == "sub")
        for envelope in checked.log:
            if envelope.zlj.WhichOneof("event") == "hands_dealt":
                expected = 3 if envelope.version > substitution else None
                assert audience(game, envelope.version, 3, "p9", False) == expected

    asyncio.run(main())


def test_a_tractor_game_shares_exact_encodings_and_concealed_bids_stay_concealed() -> None:
    async def main() -> None:
        games = _fair_games()
        players = [f"p{s}" for s in range(tractor.SEATS)]
        rng = SeededRandom(5)
        start = tractor.StartGame(rng.next64(), tractor.Options(), at=0, fair=True)
        game = await games.create("t", "tractor", start, "start", "engine", seats=players)
        checked = Checked(games, "t", players)
        await checked.check(game)
        bots = [tractor_bots.HeuristicBot(rng.next64()) for _ in range(tractor.SEATS)]
        bids_seen = 0
        for n in range(3000):
            state = game.state
            if state.phase is tractor.Phase.ENDED or state.deal > 1:
                break
            if state.phase is tractor.Phase.FLIP:
                break
            seat = registry.TRACTOR.waiting(state)[0]
            action = bots[seat].choose(state, seat)
            if isinstance(action, tractor.Cut):
                action = tractor.Cut(seat, action.count, 0, b"cut")
            game, _ = await games.act("t", action, f"c{n}", f"p{seat}")
            await checked.check(game)
            if game.state.phase in (tractor.Phase.BID, tractor.Phase.COUNTER) and game.state.bids:
                bids_seen += 1
                for other in range(tractor.SEATS):
                    turn = turn_of(game, other, views=True, contribution_seconds=0.0)
                    view = GAMES["tractor"].view(turn)
                    mine = [b for s, b in game.state.bids if s == other]
                    assert view.my_bid == (mine[0] if mine else None), "a seat sees its own entry only"
                    spectator = GAMES["tractor"].view(turn_of(game, None, views=True, contribution_seconds=0.0))
                    assert spectator.my_bid is None and spectator.hand == ()
        assert bids_seen > 0 and checked.turns_with_actions > 50

    asyncio.run(main())


def test_a_game_holds_its_state_and_latest_events_not_its_history() -> None:
    """However long a game runs, the engine holds the same: its state, its last `RECENT` envelopes and one entry per
    command id; an append copies nothing older."""

    async def main() -> None:
        games = Games(MemoryEventStore(), clock=lambda: T0)
        rng = SeededRandom(2)
        game = await games.create("long", "zlj", zlj.StartMatch(rng.next64(), zlj.Options(deals=0)), "s", "engine")
        bots = [zlj_bots.HeuristicBot(rng.next64()) for _ in range(zlj.SEATS)]
        weights: list[tuple[int, int, int]] = []
        for n in range(1500):
            seat = game.state.turn
            action = bots[seat].choose(game.state, seat)
            if isinstance(action, zlj.Cut):
                action = zlj.Cut(seat, action.count, rng.next64())
            game, _ = await games.act("long", action, f"c{n}", f"p{seat}")
            assert len(game.recent) == min(game.version, RECENT) == len(game.recent_events)
            weights.append((game.version, game.commands.nbytes, game.weight))
        assert game.state.results, "several deals were played"
        # what it holds beside its commands does not grow: only the index of command ids does
        beside = [w - commands for _, commands, w in weights[RECENT:]]
        assert max(beside) - GAME_BYTES < 4 * 1024 * RECENT, "the recent envelopes are bounded"
        assert max(beside) < 2 * min(beside), "no growth with the game's length"
        # the index of command ids grows by a few machine words a command, not a dict entry and a string
        assert game.commands.nbytes <= 48 * len(game.commands) + 150 * 128
        # the history is all in the store, read when asked for
        history = await games.history("long")
        assert [e.version for e in history.envelopes] == list(range(1, game.version + 1))
        assert history.game.state == game.state

    asyncio.run(main())


def test_the_cache_of_games_is_bounded_in_bytes() -> None:
    async def main() -> None:
        games = Games(MemoryEventStore(), clock=lambda: T0, cache_bytes=10 * GAME_BYTES)
        for n in range(40):
            await games.create(f"g{n}", "zlj", zlj.StartMatch(n, zlj.Options()), "s", "engine")
        held = [g for g in (f"g{n}" for n in range(40)) if g in games.repository._cache]
        assert 1 <= len(held) < 10 and games.repository._cache.weight <= 10 * GAME_BYTES
        assert held[-1] == "g39", "the most recent stay"
        assert (await games.load("g0")).version > 0, "a game dropped from memory is read again"

    asyncio.run(main())


def test_encodings_of_many_games_stay_within_their_budget() -> None:
    async def main() -> None:
        games = Games(MemoryEventStore(), clock=lambda: T0)
        encodings = Encodings(lambda: 0.0, budget=20_000)
        for n in range(50):
            game = await games.create(f"e{n}", "zlj", zlj.StartMatch(n, zlj.Options()), "s", "engine")
            for version in range(game.first_recent, game.version + 1):
                for who in (FULL, None, 0):
                    encodings.event(game, version, who)
            encodings.turn(game, 0, views=True)
            assert encodings.bytes <= 20_000 or len(encodings._games) == 1
        assert encodings.made > 0 and encodings.bytes <= 20_000

    asyncio.run(main())


def test_the_encodings_of_games_over_go_once_more_games_have_ended_since() -> None:
    """An engine plays match after match: the encodings of a match long over are dropped (`ENDED_KEPT`), whatever
    room the budget has left, and those of games still playing stay."""

    async def main() -> None:
        games = Games(MemoryEventStore(), clock=lambda: T0)
        ended = await record_zlj(games, "over", [f"p{s}" for s in range(zlj.SEATS)], seed=4, deals=1)
        assert ended.state.phase is zlj.Phase.ENDED
        playing = await games.create("playing", "zlj", zlj.StartMatch(1, zlj.Options()), "s", "engine")
        encodings = Encodings(lambda: 0.0)
        encodings.turn(playing, None, views=False)
        for n in range(ENDED_KEPT + 10):  # as many matches over, each watched to its end
            over = dataclasses.replace(ended, game_id=f"over-{n}")
            encodings.event(over, over.version, FULL)
            encodings.turn(over, None, views=False)
        held = set(encodings._games)
        assert "playing" in held, "a game still playing keeps its encodings"
        assert held - {"playing"} == {f"over-{n}" for n in range(10, ENDED_KEPT + 10)}, "only the latest over stay"
        made = encodings.made
        encodings.turn(playing, None, views=False)
        assert encodings.made == made, "shared, not made again"

    asyncio.run(main())


def test_legal_actions_encodings_stay_bounded_and_the_newest_stay_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The actions of every game ever played keep coming: `action_bytes` keeps `ACTIONS_KEPT` of them, forgetting the
    oldest first (not everything at once), and hands out the same bytes for an action kept."""
    monkeypatch.setattr(watching, "_actions", Recent(16))

    async def main() -> None:
        game = await Games(MemoryEventStore(), clock=lambda: T0).create(
            "g", "zlj", zlj.StartMatch(1, zlj.Options()), "s", "e"
        )
        cuts = [zlj.Cut(0, n, 0) for n in range(1, 41)]
        first = [action_bytes(game, cut) for cut in cuts]
        assert len(watching._actions) <= 16
        newest = cuts[-12:]  # three quarters of the bound at least
        assert all(("zlj", cut) in watching._actions for cut in newest), "the newest are kept"
        assert ("zlj", cuts[0]) not in watching._actions, "the oldest are not"
        assert [action_bytes(game, cut) for cut in newest] == first[-12:]
        assert [action_bytes(game, cut) for cut in cuts] == first, "forgotten or kept, the same bytes"

    asyncio.run(main())


def test_a_turn_runs_out_turn_seconds_after_the_last_event_and_a_contribution_window_when_only_that_waits() -> None:
    async def main() -> None:
        games = Games(MemoryEventStore(), clock=lambda: T0)
        game = await games.create("timed", "zlj", zlj.StartMatch(3, zlj.Options(turn_seconds=20)), "s", "engine")
        turn = turn_of(game, None, views=False, contribution_seconds=0.0)
        assert turn.deadline.ToDatetime(tzinfo=UTC) == T0.replace(second=20)
        untimed = await games.create("untimed", "zlj", zlj.StartMatch(3, zlj.Options()), "s", "engine")
        assert not turn_of(untimed, None, views=False, contribution_seconds=0.0).HasField("deadline")
        dealing = FairDealing(lambda game_id, number: server_seeds([SECRET], game_id, number), 2.5)
        fair = Games(MemoryEventStore(), clock=lambda: T0, dealing=dealing)
        waiting = await fair.create("fair", "zlj", zlj.StartMatch(3, zlj.Options(), fair=True), "s", "engine")
        turn = turn_of(waiting, 0, views=False, contribution_seconds=2.5)
        assert list(turn.seats) == list(range(zlj.SEATS)) and turn.fair_step.shuffle == 1
        assert turn.deadline.ToDatetime(tzinfo=UTC) == T0.replace(second=2, microsecond=500_000)

    asyncio.run(main())
