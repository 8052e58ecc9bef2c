"""Lines for the events a client receives from the engine's Watch stream (redacted for its seat, or public),
one `Narration` per game (the terminal client's registry, `paiju.terminal.client.games`, names each game's).

砸六家 events reuse `paiju.terminal.zlj_narrator`, with the seats relabelled for the viewer (``you``, the
players' names). 拖拉机 events are told here: the narration needs no game state, it keeps the little it needs
(the deal's trumps, the trick in progress, the attackers' points) from the events themselves, so the same
narration tells a seat's events, a spectator's (also of a game between bots, `paiju.terminal.tractor_match`) and an
analyst's replay (`paiju.tools.analyst.replay`).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, ClassVar

from paiju.rules.cards import format_cards
from paiju.rules.errors import IllegalAction
from paiju.rules.fair import (
    CommitsClosed,
    ContributionCommitted,
    ContributionRevealed,
    RevealsClosed,
    SeedCommitted,
    SeedContributed,
    SeedRevealed,
)
from paiju.rules.tractor import model as tm
from paiju.rules.tractor.combos import classify
from paiju.rules.tractor.order import LEVEL_RANKS, Trumps
from paiju.rules.tractor.settlement import PAST_A, TAKE_DEAL, level_name
from paiju.rules.zlj import model as zm
from paiju.sdk import games
from paiju.sdk.games import GameContract
from paiju.terminal import zlj_narrator
from paiju.terminal.client.render import (
    SUIT_WORDS,
    Seats,
    card_count,
    settlement_words,
    tractor_combo_words,
)
from paiju.v1 import engine_pb2

SEAT = re.compile(r"seat (\d+) \(([AB])\)")
CHANGES = {
    engine_pb2.SEAT_CHANGE_START: "sit down",
    engine_pb2.SEAT_CHANGE_SWAP: "swap seats",
    engine_pb2.SEAT_CHANGE_SUBSTITUTE: "a substitute sits down",
    engine_pb2.SEAT_CHANGE_COVER: "a bot covers the seat",
    engine_pb2.SEAT_CHANGE_RETURN: "the player is back",
}


def relabel(line: str, seats: Seats) -> str:
    """``seat 3 (B)`` -> the viewer's label for seat 3 (``seat 3 (B, you)``, ``seat 3 (B, alice)``)."""
    return SEAT.sub(lambda m: seats.label(int(m.group(1))), line)


def seats_lines(message: engine_pb2.SeatsAssigned, seats: Seats) -> list[str]:
    what = CHANGES.get(message.change, "seats change")
    if message.change == engine_pb2.SEAT_CHANGE_START:
        return []
    named = ", ".join(seats.label(a.seat) for a in message.seats)
    return [f"  ({named}: {what})"]


class Narration:
    """Tells one game's envelopes to a viewer: the seat changes, and the game's events (`narrate`)."""

    game: ClassVar[GameContract]

    whole_seeds = False
    """Write seeds and commitments out whole (`paiju replay`), not shortened."""

    def __init__(self, seats: Seats) -> None:
        self.seats = seats

    def lines(self, envelope: engine_pb2.Envelope) -> list[str]:
        if envelope.WhichOneof("payload") == "seats_assigned":
            return seats_lines(envelope.seats_assigned, self.seats)
        event = self.game.event(envelope)
        return [] if event is None else self.narrate(event)

    def narrate(self, event: Any) -> list[str]:
        """Lines for one of the game's events (possibly none)."""
        raise NotImplementedError


def timed_out_seat(event: Any) -> int | None:
    """The seat whose turn timer ran out with this event (the engine moves for it), else ``None``: a timeout of
    either game, or a concealed 拖拉机 bid the timer entered (D-TR-6.2)."""
    if isinstance(event, zm.TurnTimedOut | tm.TurnTimedOut):
        return event.seat
    if isinstance(event, tm.BidEntered) and event.timed_out:
        return event.seat
    return None


def timed_out(seat: int, seats: Seats, rule: str) -> str:
    """A seat's turn timer ran out: the events that follow are the move the engine made for it (``rule``)."""
    if seat == seats.me:
        return f"  Your time ran out: the engine moved for you ({rule}):"
    return f"  {seats.label(seat)}'s turn timer ran out: the engine moves for it ({rule}):"


def _seats_text(seats: tuple[int, ...]) -> str:
    return ", ".join(f"seat {s}" for s in seats) if seats else "none"


def fairness_lines(event: Any, *, whole: bool = False) -> list[str] | None:
    """Lines for the events of fair dealing (docs/fairness.md); ``None`` for any other event. ``whole``: seeds and
    commitments written out whole (`paiju replay`, to check by hand), else their first 16 hex digits."""

    def shown(data: bytes) -> str:
        return data.hex() if whole else data.hex()[:16] + "…"

    if isinstance(event, SeedCommitted):
        return [f"Deal {event.deal}'s shuffle is committed: {shown(event.commitment)} (checked after the deal)"]
    if isinstance(event, SeedContributed):
        return []  # a seat's random bytes say nothing to a player (the cut is told with the deal; `--details` of
        # paiju verify lists every contribution)
    if isinstance(event, ContributionCommitted):
        return [f"  seat {event.seat} committed to its contribution: {shown(event.commitment)}"] if whole else []
    if isinstance(event, CommitsClosed):
        return [f"Shuffle {event.number}: commitments closed ({_seats_text(event.committed)} committed)"]
    if isinstance(event, ContributionRevealed):
        if not event.matches:
            return [f"  seat {event.seat}'s reveal does not match its commitment: it counts as no contribution"]
        if whole:
            cut = f", cut {event.cut}" if event.cut is not None else ""
            return [f"  seat {event.seat} revealed {event.contribution.hex()} (salt {event.salt.hex()}{cut})"]
        return []
    if isinstance(event, RevealsClosed):
        if not event.contributors:
            return [f"Shuffle {event.number}: no contribution counts: the deal rests on the server seed alone"]
        line = f"Shuffle {event.number}: contributions of {_seats_text(event.contributors)}"
        if event.withheld:
            line += f"; withheld by {_seats_text(event.withheld)}"
        if event.mismatched:
            line += f"; not matching from {_seats_text(event.mismatched)}"
        return [line]
    if isinstance(event, SeedRevealed):
        return [f"Deal {event.deal}'s seed revealed: {shown(event.server_seed)} (paiju verify checks the deal)"]
    return None


class ZljNarration(Narration):
    """Tells 砸六家 envelopes."""

    game = games.ZLJ

    def narrate(self, event: Any) -> list[str]:
        fairness = fairness_lines(event, whole=self.whole_seeds)
        if fairness is not None:
            return fairness
        if isinstance(event, zm.TurnTimedOut):
            return [timed_out(event.seat, self.seats, "§13")]
        return [relabel(line, self.seats) for line in zlj_narrator.narrate(event)]


class TractorNarration(Narration):
    """Tells 拖拉机 envelopes, following the deal's trumps, the trick in progress and the attackers' points."""

    game = games.TRACTOR

    def __init__(self, seats: Seats) -> None:
        super().__init__(seats)
        self.trumps: Trumps | None = None
        self.plays_in_trick = 0
        self.points = 0
        self.levels = (0, 0)
        """Both teams' levels before the deal being played (for D-TR-1: a gain stopped at A)."""
        self.dealer: int | None = None

    def _cards(self, cards: Any) -> str:
        return format_cards(cards, self.trumps.order_key if self.trumps is not None else None)

    def narrate(self, event: Any) -> list[str]:
        fairness = fairness_lines(event, whole=self.whole_seeds)
        if fairness is not None:
            return fairness
        label = self.seats.label
        if isinstance(event, tm.GameStarted):
            self.levels = (0, 0)
            return ["Game starts (拖拉机): both teams at level 3."]
        if isinstance(event, tm.CardFlipped):
            return [
                f"{label(event.flipper)} flips {format_cards([event.card])}: {label(event.first_drawer)} "
                "draws first (§8)"
            ]
        if isinstance(event, tm.HandsDealt):
            self.trumps, self.plays_in_trick, self.points = None, 0, 0
            how = f"the dealer cut {card_count(event.cut)}; " if event.cut is not None else ""
            lines = [f"Deal {event.deal}: {how}dealing starts at {label(event.first_drawer)}"]
            mine = [len(h) for h in event.hands if h]
            if mine:
                lines.append(f"  you receive {card_count(mine[0])}")
            return lines
        if isinstance(event, tm.BidEntered):
            return [self._bid_entered(event)]
        if isinstance(event, tm.BidsRevealed | tm.CountersRevealed):
            what = "bid" if isinstance(event, tm.BidsRevealed) else "counter"
            if event.winner is None:
                return [f"No {what}."]
            w = event.winner
            return [
                f"Winning {what}: {label(w.seat)} shows {format_cards(w.cards)} in {SUIT_WORDS[w.suit]} "
                f"({card_count(w.count, 'level card')})"
            ]
        if isinstance(event, tm.DealVoided):
            return ["Nobody bid: the deal is void and dealt again (D-TR-6)"]
        if isinstance(event, tm.TrumpDeclared):
            self.trumps = Trumps(LEVEL_RANKS[min(event.level, 11)], event.trump)
            self.dealer = event.dealer
            level = level_name(event.level)
            return [f"Trump: {SUIT_WORDS[event.trump]}, level {level}; {label(event.dealer)} deals and leads"]
        if isinstance(event, tm.CardsPlayed):
            return [self._played(event)]
        if isinstance(event, tm.TrickWon):
            self.plays_in_trick = 0
            self.points += event.credited
            credit = f", attackers +{event.credited}" if event.credited else ""
            return [
                f"  -- trick to {label(event.winner)} ({event.points} points{credit}); attackers {self.points} "
                f"of the {TAKE_DEAL} they need"
            ]
        if isinstance(event, tm.DealSettled):
            words = settlement_words(event.attackers_points, event.winner, event.levels_up, self._gained(event))
            self.levels = event.levels
            return [
                f"Deal settled: attackers {event.attackers_points} points: {words}. Levels now "
                f"A {level_name(event.levels[0])}, B {level_name(event.levels[1])}; next dealer "
                f"{label(event.next_dealer)}"
            ]
        if isinstance(event, tm.GameEnded):
            if event.winner is None:
                return ["Game over: time is up with the teams on equal levels."]
            return [
                f"Game over: {self.seats.team(event.winner, 4)} wins (levels A {level_name(event.levels[0])}, "
                f"B {level_name(event.levels[1])})."
            ]
        if isinstance(event, tm.TurnTimedOut):
            return [timed_out(event.seat, self.seats, "§11")]
        if isinstance(event, tm.TwoMoreDeals):
            return ["Two more deals (宣布打2盘牌): the timed round is ending."]
        if isinstance(event, tm.PenaltyRecorded):
            return [f"Referee: {label(event.offender)} penalised, {event.points:+d} on the attackers' score"]
        if isinstance(event, tm.LabourReformDeclared):
            return [f"Referee: 劳改 for {label(event.offender)}'s team: the deal ends now"]
        if isinstance(event, tm.LabourReformChosen):
            return [f"{label(event.seat)} chooses the remedy: {event.choice.value}"]
        return []

    def _gained(self, event: tm.DealSettled) -> int | None:
        """The levels the winners actually went up, when the levels before the deal are known."""
        changed = [i for i in (0, 1) if event.levels[i] != self.levels[i]]
        if not changed:
            return 0 if event.levels_up else None
        team = changed[0]
        if event.levels[team] == PAST_A:
            return None
        return event.levels[team] - self.levels[team]

    def _bid_entered(self, event: tm.BidEntered) -> str:
        label = self.seats.label
        if event.timed_out and event.seat == self.seats.me:
            return "  Your time ran out: the engine passed for you (kept concealed, D-TR-6.2)"
        timer = " (turn timer)" if event.timed_out else ""
        if event.concealed:
            return f"  {label(event.seat)} has bid or passed (concealed){timer}"
        if event.bid is None:
            return f"  {label(event.seat)} passes{timer}"
        b = event.bid
        return (
            f"  {label(event.seat)} bids {SUIT_WORDS[b.suit]} showing {format_cards(b.cards)} "
            f"({card_count(b.count, 'level card')}; concealed until the reveal)"
        )

    def _played(self, event: tm.CardsPlayed) -> str:
        line = f"  {self.seats.label(event.seat)}: {self._cards(event.cards)}"
        if self.plays_in_trick == 0 and self.trumps is not None:
            with contextlib.suppress(IllegalAction):
                line += f"   leads {tractor_combo_words(classify(event.cards, self.trumps), event.cards)}"
        self.plays_in_trick += 1
        return line
