"""Hidden information over the API: nothing a client receives shows another seat's cards, a seed, or (拖拉机)
a concealed bid before its reveal (tractor D-TR-6, §12; 砸六家 §14).

Bots play a whole game of each kind through the API while a sweep collects every message each seat, a
spectator and a player of another game receive: GetView, GetLegalActions, Act answers, Watch streams
started from version 0 while the game is live, Replays made while the game is live (in the middle of
concealed bidding and of tribute), and the text and details of error answers (acts for another seat,
cards not held, illegal plays, bad tokens). After the game every message is checked against the truth
rebuilt from the full log:

* structurally: a dealt hand, a concealed bid or a tribute transfer reaches only the seats the rules let
  see it, and a redacted envelope carries no command digest (a digest of a bid could be brute-forced);
* by cards, independently of the service's redaction code: every list of cards in any field of any
  message must fit within what the receiver may know at that version of the deal (its own dealt hand, the
  cards played, the flipped card, revealed bids, tribute it may see, tribute shown on resistance); with
  several decks a card value alone proves nothing, so the check is on multisets: another seat's hand
  never fits inside what a seat knows;
* no seed appears anywhere (not in any field, nor in any error text), and a fair deal's server seed
  (`paiju.rules.fair`) appears nowhere before the version that revealed it (as bytes or in hexadecimal).

The games are dealt fairly, as the engine deals them in production: the sweep sees the commitments, the seats'
contributions and the reveals.

Replay gives full information to a player only after the game ended; a spectator's Watch holds no hand.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import grpc
import pytest
from google.protobuf.message import Message

from paiju.contract.games import (
    TRACTOR,
    TRACTOR_COMMANDS,
    TRACTOR_EVENTS,
    ZLJ,
    ZLJ_COMMANDS,
    ZLJ_EVENTS,
)
from paiju.platform.tokens import Identity, Role
from paiju.rules import registry
from paiju.rules.cards import Card, Cards, Suit, parse_card
from paiju.rules.errors import RuleError
from paiju.rules.fair import SeedRevealed
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import game as tractor_game
from paiju.rules.tractor import model as tractor
from paiju.rules.tractor.view import SeatView as TractorSeatView
from paiju.rules.zlj import game as zlj_game
from paiju.rules.zlj import model as zlj
from paiju.rules.zlj.bots import RandomBot as ZljRandomBot
from paiju.rules.zlj.view import SeatView as ZljSeatView
from paiju.v1 import engine_pb2, tractor_pb2, zlj_pb2

from ..support.credentials import forged_claims, mint_token
from .harness import (
    NOW,
    auth,
    create_zlj,
    engine,
    error_texts,
    game_events,
    play_tractor,
    play_zlj,
    player_id,
    run,
    seated,
    status_of,
    token,
)

Receiver = int | None
"""A seat, or ``None`` for a client entitled to public information only (a spectator, another game's player)."""

SEATS = {"zlj": zlj.SEATS, "tractor": tractor.SEATS}
ENVELOPE_SOURCES = ("act", "watch", "replay")
CARD_TOKEN = re.compile(r"(?<![0-9A-Za-z])(?:(?:10|[2-9TJQKA])[SHCD]|SJ|BJ)(?![0-9A-Za-z])")


# --- the truth, from the full log -----------------------------------------------------------------------


class Truth:
    """The full log of a game replayed version by version: the true event and state at every version, and
    what each receiver may know at that version of the deal under the rules (not the service's redaction).

    A seat knows its own dealt hand; everyone knows the cards played, the flipped card, revealed winning
    bids and counters (D-TR-6.3), jokers shown on resisting tribute (D-ZLJ-10); the winners know the tribute
    given, the losers the cards returned (§10-§11). Knowledge is per deal: a deal of six decks plays every
    card, so what was public in an earlier deal says nothing about the hands of this one.
    """

    def __init__(self, game: str, envelopes: Sequence[engine_pb2.Envelope]) -> None:
        self.game = game
        self.seats = SEATS[game]
        self.receivers: tuple[Receiver, ...] = (*range(self.seats), None)
        codec = ZLJ_EVENTS if game == "zlj" else TRACTOR_EVENTS
        evolve: Any = zlj_game.evolve if game == "zlj" else tractor_game.evolve
        state: Any = zlj.State() if game == "zlj" else tractor.State()
        self.envelopes = {e.version: e for e in envelopes}
        self.payloads = {e.version: _payload(e) for e in envelopes}
        self.events: dict[int, Any] = {}
        self.before: dict[int, Any] = {}
        self.states: dict[int, Any] = {0: state}
        self.known: dict[int, dict[Receiver, Counter[int]]] = {0: {r: Counter() for r in self.receivers}}
        self.seeds: set[int] = set()
        self.server_seeds: dict[bytes, int] = {}
        """Each fair deal's server seed, and the version that revealed it (before which no client may see it)."""
        known = self.known[0]
        previous: Any = None
        for version in range(1, len(envelopes) + 1):
            envelope = self.envelopes[version]
            self.before[version] = state
            if envelope.WhichOneof("payload") != game:  # an engine event (who sits where): public, no cards
                self.events[version] = envelope
                self.states[version] = state
                self.known[version] = known
                continue
            event = codec.decode(getattr(envelope, game))
            self.events[version] = event
            if self._new_deal(previous, event):
                known = {r: Counter() for r in self.receivers}
            learned = self._learned(state, event)
            if learned:
                known = {r: known[r] + Counter(learned.get(r, ())) for r in self.receivers}
            if isinstance(event, zlj.HandsDealt | tractor.HandsDealt) and event.seed is not None:
                self.seeds.add(event.seed)
            if isinstance(event, SeedRevealed):
                self.server_seeds[event.server_seed] = version
            state = evolve(state, event)
            self.states[version] = state
            self.known[version] = known
            previous = event
        self.version = len(envelopes)

    def _new_deal(self, previous: Any, event: Any) -> bool:
        if isinstance(event, tractor.CardFlipped):
            return True
        if isinstance(event, tractor.HandsDealt):
            return not isinstance(previous, tractor.CardFlipped)
        return isinstance(event, zlj.HandsDealt)

    def _everyone(self, cards: Sequence[int]) -> dict[Receiver, Sequence[int]]:
        return dict.fromkeys(self.receivers, cards)

    def _learned(self, before: Any, event: Any) -> dict[Receiver, Sequence[int]]:
        """The cards each receiver legitimately learns from ``event`` (the rules' notion of public)."""
        if isinstance(event, zlj.HandsDealt | tractor.HandsDealt):
            return dict(enumerate(event.hands))
        if isinstance(event, tractor.CardFlipped):
            return self._everyone((event.card,))
        if isinstance(event, tractor.BidsRevealed | tractor.CountersRevealed):
            return self._everyone(event.winner.cards) if event.winner is not None else {}
        if isinstance(event, tractor.CardsPlayed | zlj.CardsPlayed):
            return self._everyone(event.cards)
        if isinstance(event, zlj.FourTake):
            return self._everyone((*event.fours, *event.taken))
        if isinstance(event, zlj.TributeResisted):
            return self._everyone(event.cards)
        if isinstance(event, zlj.TributeGiven | zlj.TributeReturned):
            assert event.cards is not None
            return dict.fromkeys(self.tribute_viewers(before, event), event.cards)
        return {}

    @staticmethod
    def tribute_side(before: zlj.State, event: Any) -> zlj.Team:
        """The side that may see a tribute transfer's cards (§10-§11, §14): the side that takes from the pool
        they go to (the winners for tribute given and picked, the losers for cards returned and taken back)."""
        assert before.previous is not None and before.previous.winners is not None
        winners = before.previous.winners
        return winners if isinstance(event, zlj.TributeGiven | zlj.TributePicked) else winners.other

    @staticmethod
    def tribute_viewers(before: zlj.State, event: Any) -> set[int]:
        """Who may see a tribute transfer's cards: the seat itself and `tribute_side`."""
        return {event.seat, *Truth.tribute_side(before, event).seats}

    def holder_of(self, version: int, cards: Counter[int], receiver: Receiver) -> str:
        """Which other seats hold cards of ``cards`` at ``version`` (for failure messages)."""
        hands = self.states[version].hands
        holders = [s for s in range(self.seats) if s != receiver and Counter(hands[s]) & cards]
        return f"held by seats {holders}" if holders else "not in another hand now"


# --- what was received ----------------------------------------------------------------------------------


@dataclass
class Received:
    receiver: Receiver
    source: str
    """view, legal, act, watch, replay or error."""
    version: int
    message: Message | None = None
    texts: tuple[str, ...] = ()
    sent: tuple[int, ...] = ()
    """Cards the receiver itself sent in the failed command (an error may name them back)."""
    level_cards: tuple[int, ...] = ()
    """Cards an error may name from the rules alone (the level cards of a 拖拉机 deal)."""


def _payload(envelope: engine_pb2.Envelope) -> tuple[str | None, bytes]:
    which = envelope.WhichOneof("payload")
    return which, getattr(envelope, which).SerializeToString(deterministic=True) if which else b""


def card_fields(message: Message, path: str = "") -> Iterator[tuple[str, list[int]]]:
    """Every card-carrying field of a message, recursively: (path, card ids) for each repeated or single
    `Card` field, whatever the message type."""
    for descriptor, value in message.ListFields():
        name = f"{path}{descriptor.name}"
        if descriptor.enum_type is not None and descriptor.enum_type.full_name == "paiju.v1.Card":
            values = list(value) if descriptor.is_repeated else [value]
            yield name, [v - 1 for v in values]
        elif descriptor.message_type is not None:
            if descriptor.is_repeated:
                for i, item in enumerate(value):
                    yield from card_fields(item, f"{name}[{i}].")
            else:
                yield from card_fields(value, f"{name}.")


def cards_named(text: str) -> list[int]:
    return [int(parse_card(token)) for token in CARD_TOKEN.findall(text)]


def excess(cards: Sequence[int], allowed: Counter[int]) -> Counter[int]:
    return Counter(cards) - allowed


class Checker:
    """Checks received messages against a `Truth`; returns readable problems (empty: nothing leaked)."""

    def __init__(self, truth: Truth) -> None:
        self.truth = truth
        self.game = truth.game
        self._done: set[tuple[Receiver, str, bytes]] = set()

    def check(self, received: Received) -> list[str]:
        if received.source == "error":
            return self._error(received)
        assert received.message is not None
        key = (received.receiver, received.source, received.message.SerializeToString(deterministic=True))
        if key in self._done:  # the same bytes to the same receiver (Watch and Replay repeat envelopes)
            return []
        self._done.add(key)
        where = f"{received.source} to {_who(received.receiver)} at version {received.version}"
        problems = [f"{where}: {p}" for p in self._seeds_in(key[2])]
        problems += [f"{where}: {p}" for p in self._server_seeds_in(received.version, key[2])]
        if received.source in ENVELOPE_SOURCES:
            problems += [f"{where}: {p}" for p in self._envelope(received)]
        elif received.source == "view":
            problems += [f"{where}: {p}" for p in self._view(received)]
        elif received.source == "turn":
            problems += [f"{where}: {p}" for p in self._turn(received)]
        elif received.source == "legal":
            problems += [f"{where}: {p}" for p in self._legal(received)]
        allowed = self.truth.known[received.version][received.receiver]
        for path, cards in card_fields(received.message):
            extra = excess(cards, allowed)
            if extra:
                held = self.truth.holder_of(received.version, extra, received.receiver)
                problems.append(f"{where}: {path} shows cards it may not know: {sorted(extra.elements())} ({held})")
        return problems

    def _seeds(self, text: str) -> list[str]:
        return [f"the seed {seed} appears" for seed in self.truth.seeds if str(seed) in text]

    def _seeds_in(self, serialized: bytes) -> list[str]:
        """A seed in any field of a message: as an integer field (varint or fixed 64 bits) or as text."""
        return [
            f"the seed {seed} appears"
            for seed in self.truth.seeds
            if _varint(seed) in serialized
            or seed.to_bytes(8, "little") in serialized
            or str(seed).encode() in serialized
        ]

    def _server_seeds_in(self, version: int, data: bytes) -> list[str]:
        """A fair deal's server seed before the version that revealed it: as bytes, or written in hexadecimal."""
        return [
            f"the server seed {seed.hex()[:16]}… appears before its reveal at version {revealed}"
            for seed, revealed in self.truth.server_seeds.items()
            if version < revealed
            and (seed in data or seed.hex().encode() in data.lower() or seed[:8].hex().encode() in data.lower())
        ]

    def _error(self, received: Received) -> list[str]:
        where = f"error to {_who(received.receiver)} at version {received.version}"
        problems = [f"{where}: {p}" for p in self._seeds(" ".join(received.texts))]
        problems += [
            f"{where}: {p}" for p in self._server_seeds_in(received.version, " ".join(received.texts).encode())
        ]
        allowed = self.truth.known[received.version][received.receiver] | Counter(received.sent)
        allowed |= Counter(dict.fromkeys(received.level_cards, 99))
        for text in received.texts:
            extra = excess(cards_named(text), allowed)
            if extra:
                held = self.truth.holder_of(received.version, extra, received.receiver)
                problems.append(f"{where}: {text!r} names cards it may not know: {sorted(extra.elements())} ({held})")
        return problems

    def _envelope(self, received: Received) -> list[str]:
        envelope = received.message
        assert isinstance(envelope, engine_pb2.Envelope)
        version, seat = envelope.version, received.receiver
        truth = self.truth
        if version != received.version or version not in truth.events:
            return [f"envelope version {version} is not in the log"]
        problems = []
        if _payload(envelope) != truth.payloads[version] and envelope.command_digest:
            problems.append("a redacted envelope carries the digest of the command that caused it")
        true = truth.events[version]
        if envelope.WhichOneof("payload") != self.game:
            if _payload(envelope) != truth.payloads[version]:
                problems.append(f"an engine event differs from the stored one: {envelope}")
            return problems
        codec = ZLJ_EVENTS if self.game == "zlj" else TRACTOR_EVENTS
        got = codec.decode(getattr(envelope, self.game))
        if type(got) is not type(true):
            return [*problems, f"{type(got).__name__} instead of {type(true).__name__}"]
        if isinstance(got, zlj.HandsDealt | tractor.HandsDealt):
            if got.seed is not None:
                problems.append("a dealt hand carries its seed")
            for s, hand in enumerate(got.hands):
                expected = true.hands[s] if s == seat else ()
                if tuple(hand) != tuple(expected):
                    problems.append(f"hands[{s}] has {len(hand)} cards, expected {len(expected)}")
        elif isinstance(got, tractor.BidEntered):
            if true.seat == seat:
                if got != true:
                    problems.append(f"a seat's own bid comes back as {got}, not {true}")
            elif got.bid is not None or not got.concealed or got.timed_out:
                problems.append(f"seat {true.seat}'s concealed entry is shown: {got} (D-TR-6.2)")
        elif isinstance(got, tractor.BidsRevealed | tractor.CountersRevealed):
            if got.winner != true.winner:
                problems.append(f"the winning bid is {got.winner}, not {true.winner}")
            shown = [b for b in got.bids if b != true.winner and b.seat != seat]
            if shown or not set(got.bids) <= set(true.bids):
                problems.append(f"losing bids of other seats are shown: {shown} (D-TR-6.3)")
        elif isinstance(got, zlj.TributeGiven | zlj.TributePicked | zlj.TributeReturned | zlj.ReturnTakenBack):
            viewers = Truth.tribute_viewers(truth.before[version], true)
            side = Truth.tribute_side(truth.before[version], true)
            if true.seen_by != side:
                problems.append(f"seen_by is {true.seen_by}, the rules say the side {side}")
            if got.cards is not None and seat not in viewers:
                problems.append(f"tribute cards of seat {true.seat} shown to a seat outside {sorted(viewers)}")
            if got.cards is not None and got.cards != true.cards:
                problems.append(f"tribute cards {got.cards} are not the true {true.cards}")
            if (got.seat, got.count, got.seen_by) != (true.seat, true.count, true.seen_by):
                problems.append(f"{got} differs from the truth beyond its cards")
        elif got != true:
            problems.append(f"{got} differs from the stored {true} (nothing in it is hidden)")
        return problems

    def _turn(self, received: Received) -> list[str]:
        """A turn: who may act is what the rules say at its version; a seat's legal actions, fair-dealing step and
        view only to that seat, and only when it may act (or asked for views: the even seats, the spectator)."""
        turn = received.message
        assert isinstance(turn, engine_pb2.Turn)
        seat, state = received.receiver, self.truth.states[turn.version]
        rules = registry.GAMES[self.game]
        contributors = rules.contributors(state)
        may = sorted({*rules.waiting(state), *contributors})
        problems = []
        if list(turn.seats) != may:
            problems.append(f"the turn names seats {list(turn.seats)}, the rules {may}")
        acts = seat is not None and seat in may
        codec = ZLJ_COMMANDS if self.game == "zlj" else TRACTOR_COMMANDS
        listed = [codec.decode(getattr(a, self.game)) for a in turn.actions]
        if not acts and (listed or turn.HasField("fair_step") or turn.HasField("tractor_follow")):
            problems.append("a turn the receiver may not act in carries actions or a step")
        if acts and seat is not None:
            if listed != list(rules.legal_actions(state, seat)):
                problems.append("the turn's actions are not the seat's legal actions")
            if turn.HasField("fair_step") != (seat in contributors):
                problems.append("the fair-dealing step is not the seat's")
        views = seat is None or seat % 2 == 0
        if turn.WhichOneof("view") is None:
            if acts or views:
                problems.append("no view in a turn that should carry one")
        else:
            if not (acts or views):
                problems.append("a view the receiver did not ask for")
            problems += self._view(received)
        return problems

    def _view(self, received: Received) -> list[str]:
        response = received.message
        assert isinstance(response, engine_pb2.GetViewResponse | engine_pb2.Turn)
        seat = received.receiver
        state = self.truth.states[received.version]
        if self.game == "zlj":
            view = ZLJ.decode(response.zlj, ZljSeatView)
        else:
            view = TRACTOR.decode(response.tractor, TractorSeatView)
        problems = []
        hand = state.hands[seat] if seat is not None else ()
        if view.seat != seat or sorted(view.hand) != sorted(hand):
            problems.append(f"the view of seat {view.seat} shows a hand of {len(view.hand)} cards")
        if view.hand_sizes != tuple(len(h) for h in state.hands):
            problems.append("hand sizes differ from the truth")
        if self.game == "tractor":
            mine = next((b for s, b in state.bids if s == seat), None)
            if view.my_bid != mine:
                problems.append(f"my_bid is {view.my_bid}, the seat's own entry is {mine}")
            if view.acted != tuple(s for s, _ in state.bids):
                problems.append("acted differs from the seats that entered")
            if (view.bid, view.counter) != (state.bid, state.counter):
                problems.append("the revealed bid or counter differs from the truth")
        return problems

    def _legal(self, received: Received) -> list[str]:
        response = received.message
        assert isinstance(response, engine_pb2.GetLegalActionsResponse)
        codec = ZLJ_COMMANDS if self.game == "zlj" else TRACTOR_COMMANDS
        seats = {codec.decode(getattr(a, self.game)).seat for a in response.actions}
        if seats - {received.receiver}:
            return [f"legal actions of seats {sorted(seats)}"]
        return []


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _who(receiver: Receiver) -> str:
    return "a public client" if receiver is None else f"seat {receiver}"


# --- the sweep: every message of a bot-played game --------------------------------------------------------


@dataclass
class Sweep:
    stub: Any
    games: Any
    game: str
    game_id: str
    received: list[Received] = field(default_factory=list)
    moments: set[tuple[str, Any, bool]] = field(default_factory=set)
    live_replays: list[tuple[Receiver, list[engine_pb2.Envelope]]] = field(default_factory=list)
    watches: list[Any] = field(default_factory=list)
    batched_watches: list[Any] = field(default_factory=list)
    codes: Counter[str] = field(default_factory=Counter)
    turn_versions: dict[Receiver, list[int]] = field(default_factory=dict)
    steps: int = 0

    def __post_init__(self) -> None:
        self.seats = SEATS[self.game]
        self.players = [auth(token(Role.PLAYER, self.game_id, s)) for s in range(self.seats)]
        self.spectator = auth(token(Role.SPECTATOR, self.game_id))
        self.stranger = auth(token(Role.PLAYER, "another-game", 0))
        """A player of another game: public information only."""
        self.rng = SeededRandom(5)

    def md(self, receiver: Receiver) -> Any:
        return self.spectator if receiver is None else self.players[receiver]

    def observe(self, source: str, seat: Receiver, message: Any) -> None:
        if source == "act":
            for envelope in message.events:
                self.received.append(Received(seat, "act", envelope.version, envelope))
        else:
            self.received.append(Received(seat, source, message.version, message))

    # -- Watch, from version 0 while the game is live --------------------------------------------------

    async def start_watches(self) -> None:
        """A Watch from version 0 for every seat and a spectator: the spectator and the even seats ask for their
        view in every turn, the odd seats get it only in the turns they may act in. Each watches a second time with
        one message per change (`WatchRequest.batched`): the same events and turns, checked against the first."""
        for receiver in (*range(self.seats), None):
            views = receiver is None or receiver % 2 == 0
            for batched in (False, True):
                stream = self.stub.Watch(
                    engine_pb2.WatchRequest(game_id=self.game_id, from_version=0, views=views, batched=batched),
                    metadata=self.md(receiver),
                )
                (self.batched_watches if batched else self.watches).append((receiver, stream))

    async def finish_watches(self) -> dict[Receiver, list[int]]:
        """Read every Watch to its end (the server ends it when the game ends); keep its events and turns."""
        versions: dict[Receiver, list[int]] = {}
        for receiver, stream in self.watches:
            replies = [r async for r in stream]
            # the last message says why the stream ends (the game is over), and carries no event
            assert replies[-1].HasField("end") and not replies[-1].HasField("envelope"), receiver
            assert replies[-1].end.reason == engine_pb2.WATCH_END_REASON_GAME_ENDED, receiver
            assert not any(r.HasField("end") for r in replies[:-1]), receiver
            got = [r.envelope for r in replies[:-1] if r.HasField("envelope")]
            versions[receiver] = [e.version for e in got]
            self.received.extend(Received(receiver, "watch", e.version, e) for e in got)
            turns = [r for r in replies[:-1] if r.HasField("turn")]
            for reply in turns:
                # a turn comes with the newest envelope of a change, at that envelope's version
                assert not reply.HasField("envelope") or reply.envelope.version == reply.turn.version, receiver
                self.received.append(Received(receiver, "turn", reply.turn.version, reply.turn))
            assert turns and turns[-1].turn.version == versions[receiver][-1], "the last change has its turn"
            self.turn_versions[receiver] = [r.turn.version for r in turns]
        for receiver, stream in self.batched_watches:
            # one message per change: every event and turn the per-event stream sent, byte for byte, in fewer messages
            replies = [r async for r in stream]
            assert replies[-1].end.reason == engine_pb2.WATCH_END_REASON_GAME_ENDED, receiver
            assert not any(r.HasField("envelope") for r in replies), "a batched stream sends `envelopes` only"
            got = [e for r in replies for e in r.envelopes]
            assert [e.version for e in got] == versions[receiver], receiver
            watched = [cast(Any, r.message) for r in self.received if r.source == "watch" and r.receiver == receiver]
            assert [e.SerializeToString() for e in got] == [e.SerializeToString() for e in watched], receiver
            # a change is what a stream has to send when it wakes, so the two streams' turns may fall at different
            # versions: at a version both sent, the same bytes; every turn is checked with the others below
            sent_turns = {
                r.version: cast(Any, r.message) for r in self.received if r.source == "turn" and r.receiver == receiver
            }
            turned = [r.turn for r in replies if r.HasField("turn")]
            both = [t for t in turned if t.version in sent_turns]
            assert len(both) > len(turned) // 2, receiver
            for turn in both:
                assert turn.SerializeToString() == sent_turns[turn.version].SerializeToString(), receiver
            unmatched = [t for t in turned if t.version not in sent_turns]
            self.received.extend(Received(receiver, "turn", t.version, t) for t in unmatched)
            for reply in replies:
                if reply.HasField("turn") and reply.envelopes:
                    assert reply.envelopes[-1].version == reply.turn.version, "the turn after the last event"
            assert len(replies) < len(got), f"{_who(receiver)}: fewer messages than events"
        return versions

    # -- at chosen moments: every seat's view, live replays, error probes ------------------------------

    async def before_act(self, mover: int, legal: Any) -> None:
        self.steps += 1
        game = await self.games.load(self.game_id)
        if self.steps % 50 == 0:
            await self.views_of_everyone()
        moment = self.moment(game.state)
        if moment is None or moment in self.moments:
            return
        self.moments.add(moment)
        await self.views_of_everyone()
        if moment[2]:
            await self.live_replays_now()
            await self.probe_errors(game, mover)
        assert (await self.games.load(self.game_id)).version == game.version, "a probe changed the game"

    def moment(self, state: Any) -> tuple[str, Any, bool] | None:
        """A moment worth a sweep of every seat's view: (stage, which one, deep). Deep moments (concealed
        bidding with entries made, tribute, the first following of a deal) also get live replays from
        every seat and error probes."""
        phase = state.phase.value
        if self.game == "tractor":
            if phase in ("bid", "counter"):
                return (phase, hash(state.dealt), True) if state.bids else None
            if phase == "cut":
                return (phase, state.deal, False)
            if state.trick is not None and len(state.tricks) in (0, 12):
                return (phase, (state.deal, len(state.tricks)), len(state.tricks) == 0)
            return None
        if phase in ("tribute", "return", "take_back"):
            return (phase, state.deal, True)
        if phase == "cut":
            return (phase, state.deal, False)
        if state.current is not None:
            return (phase, (state.deal, len(state.played) // 40), len(state.played) < 40)
        return None

    async def views_of_everyone(self) -> None:
        for receiver in (*range(self.seats), None):
            view = await self.stub.GetView(engine_pb2.GetViewRequest(game_id=self.game_id), metadata=self.md(receiver))
            self.observe("view", receiver, view)
            legal = await self.stub.GetLegalActions(
                engine_pb2.GetLegalActionsRequest(game_id=self.game_id), metadata=self.md(receiver)
            )
            self.observe("legal", receiver, legal)

    async def live_replays_now(self) -> None:
        request = engine_pb2.ReplayRequest(game_id=self.game_id)
        for receiver, md in [*((s, self.players[s]) for s in range(self.seats)), (None, self.spectator)]:
            got = [r.envelope async for r in self.stub.Replay(request, metadata=md)]
            self.live_replays.append((receiver, got))
            self.received.extend(Received(receiver, "replay", e.version, e) for e in got)
        # a player of another game may not replay a live game: it is refused like a game that does not exist
        await self.refused_stream(None, 0, self.stub.Replay(request, metadata=self.stranger))

    async def refused(
        self,
        receiver: Receiver,
        version: int,
        call: Any,
        *,
        sent: Sequence[int] = (),
        level_cards: Sequence[int] = (),
    ) -> None:
        """Make a call that must fail and keep what its error says."""
        try:
            result = await call
        except grpc.aio.AioRpcError as e:
            self.codes[e.code().name] += 1
            texts = tuple(error_texts(e))
            self.received.append(Received(receiver, "error", version, None, texts, tuple(sent), tuple(level_cards)))
            return
        raise AssertionError(f"a probe was accepted: {result}")

    async def refused_stream(self, receiver: Receiver, version: int, stream: Any) -> None:
        async def first() -> Any:
            async for item in stream:
                return item
            return None

        await self.refused(receiver, version, first())

    def act(self, md: Any, command: Any) -> Any:
        codec = ZLJ_COMMANDS if self.game == "zlj" else TRACTOR_COMMANDS
        request = engine_pb2.ActRequest(game_id=self.game_id, command_id=uuid.uuid4().hex)
        getattr(request, self.game).CopyFrom(codec.encode(command))
        return self.stub.Act(request, metadata=md)

    def rejected(self, state: Any, command: Any) -> bool:
        """Whether the rules reject ``command`` now (a probe must never change the game)."""
        decide: Any = zlj_game.decide if self.game == "zlj" else tractor_game.decide
        try:
            decide(state, command)
        except RuleError:
            return True
        return False

    async def probe_errors(self, game: Any, mover: int) -> None:
        state, version = game.state, game.version
        legal_of: Any = zlj_game.legal_actions if self.game == "zlj" else tractor_game.legal_actions
        level = self._level_cards(state)
        for seat in range(self.seats):
            me = self.players[seat]
            hand = state.hands[seat]
            # act for another seat: its own legal action, or a play of its cards
            other = (seat + 1) % self.seats
            theirs = [a for a in legal_of(state, other) if hasattr(a, "cards")] or [
                self._play(other, state.hands[other][:1])
            ]
            command = theirs[0]
            await self.refused(seat, version, self.act(me, command), sent=getattr(command, "cards", ()))
            # cards it does not hold (another seat does)
            missing = [c for h in state.hands for c in h if c not in hand]
            if missing:
                command = self._with_cards(state, seat, (missing[0],))
                if self.rejected(state, command):
                    await self.refused(seat, version, self.act(me, command), sent=command.cards, level_cards=level)
            # its own cards, against the rules (out of turn, not following, not beating, wrong count)
            for size in (1, 2, 3):
                if len(hand) < size:
                    break
                picks = list(hand)
                self.rng.shuffle(picks)
                command = self._with_cards(state, seat, tuple(picks[:size]))
                if self.rejected(state, command):
                    await self.refused(seat, version, self.act(me, command), sent=command.cards, level_cards=level)
            if self.game == "tractor" and any(s == seat for s, _ in state.bids):
                await self.refused(seat, version, self.act(me, tractor.Pass(seat)))
        # bad or foreign tokens
        request = engine_pb2.GetViewRequest(game_id=self.game_id)
        for md in (
            auth(token(Role.PLAYER, self.game_id, mover, expires=NOW - 1)),
            auth(token(Role.PLAYER, self.game_id, mover) + "x"),
            (),
        ):
            await self.refused(None, version, self.stub.GetView(request, metadata=md))
        await self.refused(None, version, self.stub.GetView(request, metadata=self.stranger))
        legal_request = engine_pb2.GetLegalActionsRequest(game_id=self.game_id)
        await self.refused(None, version, self.stub.GetLegalActions(legal_request, metadata=self.stranger))
        watch = engine_pb2.WatchRequest(game_id=self.game_id, from_version=0)
        await self.refused_stream(None, version, self.stub.Watch(watch, metadata=self.stranger))
        command = legal_of(state, mover)[0]
        await self.refused(None, version, self.act(self.spectator, command), sent=getattr(command, "cards", ()))
        await self.refused(None, version, self.act(self.stranger, command), sent=getattr(command, "cards", ()))

    def _play(self, seat: int, cards: Cards) -> Any:
        return zlj.Play(seat, cards) if self.game == "zlj" else tractor.Play(seat, cards)

    def _with_cards(self, state: Any, seat: int, cards: Cards) -> Any:
        """A command of the current phase for ``seat`` with ``cards``."""
        phase = state.phase.value
        if self.game == "tractor":
            if phase == "bid":
                return tractor.MakeBid(seat, Suit.SPADES, cards)
            if phase == "counter":
                return tractor.Counter(seat, Suit.HEARTS, cards)
            return tractor.Play(seat, cards)
        if phase == "tribute":
            return zlj.PickTribute(seat, cards)
        if phase == "return":
            return zlj.ReturnTribute(seat, cards)
        if phase == "take_back":
            return zlj.TakeBack(seat, cards)
        return zlj.Play(seat, cards)

    def _level_cards(self, state: Any) -> tuple[int, ...]:
        if self.game != "tractor":
            return ()
        rank = tractor_game.level_rank(state)
        return tuple(Card(rank * 4 + suit) for suit in Suit)


def check_all(truth: Truth, received: list[Received]) -> None:
    checker = Checker(truth)
    problems = [p for r in received for p in checker.check(r)]
    assert not problems, f"{len(problems)} leaks, the first:\n" + "\n".join(problems[:15])


async def replay_of(stub: Any, game_id: str, md: Any) -> list[engine_pb2.Envelope]:
    return [r.envelope async for r in stub.Replay(engine_pb2.ReplayRequest(game_id=game_id), metadata=md)]


async def check_after_the_end(sweep: Sweep, truth: Truth, watched: dict[Receiver, list[int]]) -> None:
    stub, game_id = sweep.stub, sweep.game_id
    every = list(range(1, truth.version + 1))
    for receiver, versions in watched.items():
        assert versions == every, f"the Watch of {_who(receiver)} missed or repeated versions"
        turns = sweep.turn_versions[receiver]
        assert turns == sorted(set(turns)) and len(turns) > len(every) // 3, f"{_who(receiver)}: turns in order"
    # a live replay was redacted: each seat got only its own hand, a spectator none
    assert sweep.live_replays, "replays were made while the game was live"
    for receiver, envelopes in sweep.live_replays:
        dealt = game_events(envelopes, sweep.game)
        hands = [e.hands for e in dealt if isinstance(e, zlj.HandsDealt | tractor.HandsDealt)]
        assert hands
        for dealt_hands in hands:
            assert [s for s, h in enumerate(dealt_hands) if h] == ([] if receiver is None else [receiver])
    # after the end a player's replay is the whole log, unredacted (but command digests never leave the engine)
    stored = [_without_digest(truth.envelopes[v]) for v in every]
    for seat in range(sweep.seats):
        after = await replay_of(stub, game_id, sweep.players[seat])
        assert after == stored, f"seat {seat}'s replay after the end is not the full log"
    # a spectator's Watch held no hand at all
    spectator_watch = [r for r in sweep.received if r.source == "watch" and r.receiver is None]
    assert len(spectator_watch) == truth.version
    for r in spectator_watch:
        assert isinstance(r.message, engine_pb2.Envelope)
        payload = getattr(r.message, sweep.game)
        if r.message.WhichOneof("payload") == sweep.game and payload.WhichOneof("event") == "hands_dealt":
            assert all(not h.cards for h in payload.hands_dealt.hands), "a spectator's Watch shows a hand"
            assert not payload.hands_dealt.HasField("seed")


def test_no_tractor_message_shows_another_hand_a_concealed_bid_or_a_seed(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request, fair=True) as (stub, games):
            game_id = "h-tractor"
            service = auth(token(Role.SERVICE))
            await stub.CreateGame(
                seated(
                    engine_pb2.CreateGameRequest(
                        game_id=game_id,
                        game=engine_pb2.GAME_TRACTOR,
                        tractor_options=tractor_pb2.TractorOptions(round_minutes=25),
                    ),
                    tractor.SEATS,
                ),
                metadata=service,
            )
            sweep = Sweep(stub, games, "tractor", game_id)
            await sweep.start_watches()
            tick = engine_pb2.ActRequest(
                game_id=game_id, command_id="tick", tractor=cast(Any, TRACTOR_COMMANDS.encode(tractor.ClockTick(NOW)))
            )
            sweep.observe("act", None, await stub.Act(tick, metadata=service))  # two deals: D-TR-9
            await play_tractor(
                stub, game_id, SeededRandom(11), void_deals=1, observe=sweep.observe, before_act=sweep.before_act
            )
            watched = await sweep.finish_watches()
            truth = Truth("tractor", (await games.history(game_id)).envelopes)
            check_all(truth, sweep.received)
            await check_after_the_end(sweep, truth, watched)

            # the sweep saw what it is about: other seats' concealed entries, reveals, errors of each kind
            concealed = [
                r
                for r in sweep.received
                if r.source in ENVELOPE_SOURCES
                and isinstance(truth.events[r.version], tractor.BidEntered)
                and truth.events[r.version].seat != r.receiver
                and truth.events[r.version].bid is not None
            ]
            assert {r.source for r in concealed} == {"watch", "replay"}, "an Act answers only the caller's events"
            assert {r.receiver for r in concealed} == {0, 1, 2, 3, None}
            assert {m[0] for m in sweep.moments if m[2]} == {"bid", "counter", "play"}
            assert {m[0] for m in sweep.moments} == {"bid", "counter", "cut", "play"}
            assert {"PERMISSION_DENIED", "FAILED_PRECONDITION", "UNAUTHENTICATED"} <= set(sweep.codes)
            assert any(isinstance(e, tractor.CountersRevealed) and e.winner for e in truth.events.values())

    run(body)


def test_no_zlj_message_shows_another_hand_hidden_tribute_or_a_seed(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        async with engine(store_kind, request, fair=True) as (stub, games):
            game_id = "h-zlj"
            await stub.CreateGame(
                seated(
                    engine_pb2.CreateGameRequest(
                        game_id=game_id,
                        game=engine_pb2.GAME_ZLJ,
                        zlj_options=zlj_pb2.ZljOptions(
                            deals=2,
                            reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
                            resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
                        ),
                    ),
                    zlj.SEATS,
                ),
                metadata=auth(token(Role.SERVICE)),
            )
            sweep = Sweep(stub, games, "zlj", game_id)
            await sweep.start_watches()
            await play_zlj(stub, game_id, SeededRandom(8), observe=sweep.observe, before_act=sweep.before_act)
            watched = await sweep.finish_watches()
            truth = Truth("zlj", (await games.history(game_id)).envelopes)
            check_all(truth, sweep.received)
            await check_after_the_end(sweep, truth, watched)

            # the sweep saw tribute cards hidden from some seats and shown to others
            tribute = [
                r
                for r in sweep.received
                if r.source in ENVELOPE_SOURCES
                and isinstance(truth.events[r.version], zlj.TributeGiven | zlj.TributeReturned)
                and truth.events[r.version].cards
            ]
            assert any(
                r.receiver not in Truth.tribute_viewers(truth.before[r.version], truth.events[r.version])
                for r in tribute
            )
            assert {m[0] for m in sweep.moments if m[2]} == {"tribute", "return", "take_back", "play"}
            assert {m[0] for m in sweep.moments} == {"tribute", "return", "take_back", "cut", "play"}
            assert {"PERMISSION_DENIED", "FAILED_PRECONDITION", "UNAUTHENTICATED"} <= set(sweep.codes)

    run(body)


@pytest.mark.parametrize("game", ["zlj", "tractor"])
def test_a_player_token_for_a_seat_the_table_does_not_have_sees_no_hand(
    game: str, store_kind: str, request: pytest.FixtureRequest
) -> None:
    """A token names a seat outside the table (a lobby mistake, or -1): it is refused and never shows a
    hand (a seat of -1 must not index the last seat's hand)."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            kind = engine_pb2.GAME_ZLJ if game == "zlj" else engine_pb2.GAME_TRACTOR
            await stub.CreateGame(
                engine_pb2.CreateGameRequest(game_id="g", game=kind), metadata=auth(token(Role.SERVICE))
            )
            hands = (await games.load("g")).state.hands
            for seat in (-1, SEATS[game], 99):
                claims = {"sub": f"player-{seat}", "role": "player", "iss": "lobby", "game": "g", "seat": seat}
                md = auth(forged_claims({**claims, "iat": NOW - 60, "exp": NOW + 600}))
                try:
                    view = await stub.GetView(engine_pb2.GetViewRequest(game_id="g"), metadata=md)
                except grpc.aio.AioRpcError as e:
                    assert e.code() in (
                        grpc.StatusCode.PERMISSION_DENIED,
                        grpc.StatusCode.INVALID_ARGUMENT,
                        grpc.StatusCode.UNAUTHENTICATED,
                    ), f"seat {seat}: {e.code().name} {e.details()}"
                    continue
                shown = [c - 1 for c in getattr(view, game).hand]
                leaked = [s for s, h in enumerate(hands) if shown and sorted(shown) == sorted(h)]
                raise AssertionError(
                    f"a token for seat {seat} got a view with a hand of {len(shown)} cards (seat {leaked}'s hand)"
                )

    run(body)


def test_an_open_watch_shows_a_seat_only_while_its_player_holds_it(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """A player token sees a seat only while its player holds it: a Watch opened before the player swapped
    seats between deals must not go on showing the old seat's next hand, now another player's."""

    async def body() -> None:
        async with engine(store_kind, request) as (stub, games):
            game_id = "w-swap"
            service = auth(token(Role.SERVICE))
            options = zlj_pb2.ZljOptions(
                deals=2,
                reverse_tribute=zlj_pb2.ZLJ_REVERSE_TRIBUTE_PER_PLAYER,
                resist=zlj_pb2.ZLJ_RESIST_BIG_AND_SMALL,
            )
            await create_zlj(stub, game_id, options)
            seat_zero = auth(token(Role.PLAYER, game_id, 0))  # player-0's token for seat 0
            stream = stub.Watch(engine_pb2.WatchRequest(game_id=game_id, from_version=0), metadata=seat_zero)
            first = await asyncio.wait_for(stream.read(), 10)
            assert first.envelope.version == 1

            # deal 1 is played out; player-0 and player-1 swap seats; the next deal is cut and dealt
            rng = SeededRandom(8)
            bots = [ZljRandomBot(rng.next64()) for _ in range(zlj.SEATS)]
            game = await games.load(game_id)
            for n in range(3000):
                state = game.state
                if state.phase is zlj.Phase.CUT:
                    break
                game, _ = await games.act(game_id, bots[state.turn].choose(state, state.turn), f"b{n}", "bot")
            swap = engine_pb2.AssignSeatsRequest(game_id=game_id, command_id="swap", change=engine_pb2.SEAT_CHANGE_SWAP)
            swap.seats.add(seat=0, player_id=player_id(1))
            swap.seats.add(seat=1, player_id=player_id(0))
            swapped = (await stub.AssignSeats(swap, metadata=service)).version
            assert (
                await status_of(stub.GetView(engine_pb2.GetViewRequest(game_id=game_id), metadata=seat_zero))
                == grpc.StatusCode.PERMISSION_DENIED
            ), "player-0's token for seat 0 no longer sees it"
            state = (await games.load(game_id)).state
            cut = zlj.Cut(state.turn, 10, rng.next64())
            dealt = (await games.act(game_id, cut, "cut", "bot"))[0].version

            # what the old stream delivers after the swap: at most public information
            after: list[engine_pb2.Envelope] = []
            try:
                while not after or after[-1].version < dealt:
                    message = await asyncio.wait_for(stream.read(), 10)
                    if message is grpc.aio.EOF:
                        break
                    if message.envelope.version > swapped:
                        after.append(message.envelope)
            except grpc.aio.AioRpcError as e:
                assert e.code() == grpc.StatusCode.PERMISSION_DENIED, e
            finally:
                stream.cancel()
            shown = [
                e.version
                for e in after
                if e.WhichOneof("payload") == "zlj"
                and e.zlj.WhichOneof("event") == "hands_dealt"
                and any(h.cards for h in e.zlj.hands_dealt.hands)
            ]
            assert not shown, (
                f"after the swap (version {swapped}) player-0's open Watch of seat 0 still shows seat 0's hand of "
                f"the next deal (version {shown[0]}), now player-1's"
            )

            # player-1, now in seat 0, sees seat 0's hand from the swap on, never player-0's hands before it
            newcomer = auth(mint_token(Identity(player_id(1), Role.PLAYER, game_id, 0, NOW + 900)))
            replayed = [
                r.envelope async for r in stub.Replay(engine_pb2.ReplayRequest(game_id=game_id), metadata=newcomer)
            ]
            watched: list[engine_pb2.Envelope] = []
            watch = stub.Watch(engine_pb2.WatchRequest(game_id=game_id, from_version=0), metadata=newcomer)
            while not watched or watched[-1].version < dealt:
                watched.append((await asyncio.wait_for(watch.read(), 10)).envelope)
            watch.cancel()
            for envelopes in (replayed, watched):
                dealt_hands = {
                    e.version: [list(h.cards) for h in e.zlj.hands_dealt.hands if h.cards]
                    for e in envelopes
                    if e.WhichOneof("payload") == "zlj" and e.zlj.WhichOneof("event") == "hands_dealt"
                }
                assert [v for v, hands in dealt_hands.items() if hands and v < swapped] == [], (
                    "an earlier holder's hand"
                )
                assert [v for v, hands in dealt_hands.items() if hands and v > swapped], (
                    "its own hand, once it holds it"
                )

    run(body)


def _without_digest(envelope: engine_pb2.Envelope) -> engine_pb2.Envelope:
    out = engine_pb2.Envelope()
    out.CopyFrom(envelope)
    out.ClearField("command_digest")
    return out
