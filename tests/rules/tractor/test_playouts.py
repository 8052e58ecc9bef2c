"""Seeded random playouts of whole 拖拉机 games, audited against docs/rules/tractor.md after every step.

Every seat is a `RandomBot`; a seeded table adds what bots never do: now and then a turn times out (games with
the turn timer), a referee penalises a seat (出错牌) or declares 劳改, every seat passes, and in timed games the
round clock ticks (D-TR-9). Every game is played to its end. The auditor below keeps its own account and
re-derives from the rules file — not from the engine's helpers — what must happen:

- every step: the 324 cards are exactly hands + current trick + won tricks (§12); the acting seat is one of
  ``waiting`` and ``waiting`` is what the rules say (all seats that have not bid; the other team's seats in the
  counter stage; the dealer's cut; the leader, then play order); other seats have no legal action;
- bidding (D-TR-6): each bid's count (level cards of the suit, the flipped card counting only as an L of the
  suit), the winner of the bids and of the counters (highest, ties from the first drawer), the dealer
  (first deal: the final bidder; later deals: the seat named by the last settlement), the trump and the level;
- tricks (§3, §5): for leads of identical cards (single, pair, triple, bomb) the winner is computed here from
  §3's order (trump over plain, then strength, the earlier of equals) among the plays of the same shape that
  are of the led suit, or all trump from a seat void in it; the points (5, 10, K) and what the attackers are
  credited (their tricks; the last trick × n, D-TR-7); ``attackers_points`` is their sum;
- referee (§11): penalties ±10 a card in the non-offending team's favour; 劳改 (declared now and then) waits for
  the non-offending team, whose choice settles the deal (+2 levels, or ±80 and §9's table); expired turns: an
  expired lead is the lowest single, an expired follow of a single the lowest card it may play; void deals
  (D-TR-6.6, forced now and then by every seat passing) are dealt again;
- settlement (§9): the attackers' score = credited trick points + penalties; the side and levels by §9's
  table, gains stopped at A and past A only for a dealer team at A that holds (D-TR-1), the next dealer by
  D-TR-8; levels never beyond past A; the game ends exactly when a team goes past A, or (timed games) after
  the two deals that follow the announcement, made once when the clock reaches R − 25 minutes (D-TR-9).

The games are split into chunks (pytest-xdist spreads them); each chunk plays whole games until it has at
least `DEALS_PER_CHUNK` settled deals and asserts that count: 6 chunks give at least 300 deals.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import chain

import pytest

from paiju.rules.cards import RANK_OF, SUIT_OF, Card, Cards, Rank, full_decks
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor.bots import RandomBot
from paiju.rules.tractor.game import decide, evolve, legal_actions, waiting
from paiju.rules.tractor.model import (
    Bid,
    BidEntered,
    BidsRevealed,
    CardFlipped,
    CardsPlayed,
    ClockTick,
    Command,
    CountersRevealed,
    Cut,
    DealSettled,
    DealVoided,
    DeclareLabourReform,
    Event,
    GameEnded,
    GameStarted,
    HandsDealt,
    LabourReformChosen,
    LabourReformDeclared,
    Options,
    Pass,
    Penalize,
    PenaltyRecorded,
    Phase,
    Play,
    Redeal,
    StartGame,
    State,
    Timeout,
    TrickWon,
    TrumpDeclared,
    TurnTimedOut,
    TwoMoreDeals,
)
from paiju.rules.tractor.settlement import LabourReform

from ...support.profiles import examples

CHUNKS = 6
DEALS_PER_CHUNK = 50
MAX_DEALS_PER_GAME = 150
ALL_CARDS = Counter(full_decks(6))
FULL = sorted(ALL_CARDS.elements())
assert len(FULL) == 324 and set(ALL_CARDS.values()) == {6} and len(ALL_CARDS) == 54

# §2: the level sequence, written out
LEVEL_RANKS = (
    Rank.THREE,
    Rank.FOUR,
    Rank.FIVE,
    Rank.SIX,
    Rank.SEVEN,
    Rank.EIGHT,
    Rank.NINE,
    Rank.TEN,
    Rank.JACK,
    Rank.QUEEN,
    Rank.KING,
    Rank.ACE,
)
ACE, PAST_A = 11, 12
NATURAL = {rank: place for place, rank in enumerate(LEVEL_RANKS, start=3)}  # 3 .. A = 3 .. 14
POINTS = {Rank.FIVE: 5, Rank.TEN: 10, Rank.KING: 10}
TRUMP = "trump"


def suit_class(c: Card, level: Rank, trump: int) -> object:
    """§3: jokers, level cards, 2s and the trump suit are trump; every other card is its natural suit."""
    rank, suit = RANK_OF[c], SUIT_OF[c]
    if suit is None or rank in (level, Rank.TWO) or suit == trump:
        return TRUMP
    return int(suit)


def strength(c: Card, level: Rank, trump: int) -> tuple[int, int]:
    """§3: (is trump, place) — BJ > SJ > L of T > other Ls > 2 of T > other 2s > T's A..3; plain A..3."""
    rank, suit = RANK_OF[c], SUIT_OF[c]
    if rank is Rank.BIG_JOKER:
        return 1, 100
    if rank is Rank.SMALL_JOKER:
        return 1, 99
    if rank == level:
        return 1, 98 if suit == trump else 97
    if rank is Rank.TWO:
        return 1, 96 if suit == trump else 95
    return (1, 50 + NATURAL[rank]) if suit == trump else (0, NATURAL[rank])


def points(cards: Cards) -> int:
    return sum(POINTS.get(RANK_OF[c], 0) for c in cards)


def table(score: int) -> tuple[str, int]:
    """§9's table."""
    if score >= 240:
        return "attackers", (score - 240) // 60
    for low, gain in ((180, 1), (120, 2), (60, 3), (1, 4)):
        if score >= low:
            return "defenders", gain
    return "defenders", 5 + (-score) // 60


def conserved(state: State) -> bool:
    """Hands + current trick + won tricks are exactly the dealt 324 cards, 6 copies of each of 54 (§12)."""
    tricks = (*state.tricks, state.trick) if state.trick is not None else state.tricks
    everything = sorted(chain(*state.hands, *(play for trick in tricks for play in trick.plays)))
    return everything == FULL and list(state.dealt) == FULL


@dataclass
class Stats:
    deals: int = 0
    games: int = 0
    past_a: int = 0
    timed_ends: int = 0
    tricks: int = 0
    rederived: Counter[int] = field(default_factory=Counter)
    """Tricks whose winner was re-derived here, by the lead's card count (1 single, 2 pair, ...)."""
    counters: int = 0
    voids: int = 0
    timeouts: int = 0
    penalties: int = 0
    taken: int = 0
    held: int = 0
    reforms: int = 0
    lowest: int = 0
    """Expired leads and single follows checked to play the lowest card."""


@dataclass
class Auditor:
    """The rules, re-derived: follows the events of one game and checks each against its own account."""

    stats: Stats
    options: Options = field(default_factory=Options)
    started_at: int = 0
    levels: list[int] = field(default_factory=lambda: [0, 0])
    first_deal: bool = True
    flipped: Card | None = None
    first_drawer: int | None = None
    dealer: int | None = None
    next_dealer: int | None = None
    level: Rank = Rank.THREE
    trump: int | None = None
    entries: list[tuple[int, Bid | None]] = field(default_factory=list)
    bid: Bid | None = None
    countering: bool = False
    plays: list[tuple[int, Cards, bool]] = field(default_factory=list)
    """The current trick: (seat, cards, whether the seat was void in the led suit class)."""
    last_winner: int | None = None
    credited: int = 0
    penalties: int = 0
    announced: bool = False
    deals_after_announcement: int = 0
    ended: bool = False
    command: Command | None = None
    """The command whose events are being audited."""
    reform_by: int | None = None
    """The offending team once 劳改 is declared."""
    reform_choice: LabourReform | None = None

    # -- who may act ----------------------------------------------------------------------------------

    def expected_waiting(self, state: State) -> tuple[int, ...]:
        done = {s for s, _ in self.entries}
        if state.phase is Phase.BID:
            return tuple(s for s in range(4) if s not in done)
        if state.phase is Phase.COUNTER:
            assert self.bid is not None
            return tuple(s for s in range(4) if s % 2 != self.bid.seat % 2 and s not in done)
        if state.phase is Phase.CUT:
            return (self.dealer if self.next_dealer is None else self.next_dealer,)  # type: ignore[return-value]
        if state.phase is Phase.REFORM:
            return tuple(s for s in range(4) if s % 2 != self.reform_by)  # §11: the non-offending team chooses
        if state.phase is Phase.PLAY:
            if self.plays:
                return ((self.plays[0][0] + len(self.plays)) % 4,)
            return (self.last_winner if self.last_winner is not None else self.dealer,)  # type: ignore[return-value]
        return ()

    # -- bidding (D-TR-6) ----------------------------------------------------------------------------

    def count(self, bid: Bid) -> int:
        level_card = Card(self.level * 4 + bid.suit)
        rest = list(bid.cards)
        if self.first_deal:
            assert self.flipped in rest, "a first-deal bid shows the flipped card"
            if self.flipped != level_card:
                rest.remove(self.flipped)
        assert rest and all(c == level_card for c in rest), bid
        return len(rest)

    def best(self, bids: list[Bid]) -> Bid | None:
        assert self.first_drawer is not None
        fd = self.first_drawer
        return max(bids, key=lambda b: (b.count, -((b.seat - fd) % 4)), default=None)

    # -- events ----------------------------------------------------------------------------------------

    def on(self, event: Event, before: State, after: State) -> None:
        if isinstance(event, GameStarted):
            self.options, self.started_at = event.options, event.at
        elif isinstance(event, CardFlipped):
            assert RANK_OF[event.card] not in (Rank.SMALL_JOKER, Rank.BIG_JOKER)
            value = {Rank.ACE: 1, Rank.JACK: 11, Rank.QUEEN: 12, Rank.KING: 13}.get(
                RANK_OF[event.card], NATURAL.get(RANK_OF[event.card], 2)
            )
            assert event.first_drawer == (event.flipper + value - 1) % 4
            self.flipped = event.card
            self.first_drawer = event.first_drawer
        elif isinstance(event, HandsDealt):
            assert [len(h) for h in event.hands] == [81] * 4
            assert Counter(c for h in event.hands for c in h) == ALL_CARDS
            if self.first_deal:
                assert event.cut is None and event.first_drawer == self.first_drawer
                self.level = Rank.THREE
            else:
                # §8: the dealer named by the last settlement (or the same dealer after a void) cuts, draws first
                expected = self.next_dealer if self.next_dealer is not None else self.dealer
                assert event.cut is not None and 1 <= event.cut <= 323
                assert event.first_drawer == expected
                self.dealer, self.next_dealer = expected, None
                self.first_drawer = expected
                self.level = LEVEL_RANKS[self.levels[expected % 2]]
            self.entries, self.bid, self.countering = [], None, False
            self.plays, self.last_winner, self.credited, self.penalties = [], None, 0, 0
        elif isinstance(event, BidEntered):
            if event.bid is not None:
                assert event.bid.seat == event.seat
                assert event.bid.count == self.count(event.bid)
                if self.countering:
                    assert self.bid is not None and event.bid.count > self.bid.count, "多反少"
                    assert event.seat % 2 != self.bid.seat % 2
                    self.stats.counters += 1
            self.entries.append((event.seat, event.bid))
        elif isinstance(event, BidsRevealed):
            assert len(self.entries) == 4 and not self.countering
            bids = [b for _, b in self.entries if b is not None]
            assert sorted(event.bids, key=lambda b: b.seat) == sorted(bids, key=lambda b: b.seat)
            assert event.winner == self.best(bids)
            self.bid, self.entries, self.countering = event.winner, [], True
        elif isinstance(event, DealVoided):
            assert self.bid is None
            self.stats.voids += 1
            self.countering = False
        elif isinstance(event, CountersRevealed):
            assert len(self.entries) == 2
            bids = [b for _, b in self.entries if b is not None]
            assert event.winner == self.best(bids)
            final = event.winner or self.bid
            assert final is not None
            self.bid, self.entries, self.countering = final, [], False
        elif isinstance(event, TrumpDeclared):
            assert self.bid is not None
            if self.first_deal:
                self.dealer = self.bid.seat  # 反主反庄: the final bidder deals
            assert event.dealer == self.dealer and event.trump == self.bid.suit
            assert event.level == self.levels[event.dealer % 2]
            assert LEVEL_RANKS[event.level] == self.level
            self.trump = event.trump
        elif isinstance(event, CardsPlayed):
            hand = before.hands[event.seat]
            assert not Counter(event.cards) - Counter(hand), "cards held"
            if self.plays:
                led = self.cls(self.plays[0][1][0])
                void = all(self.cls(c) != led for c in hand)
                assert len(event.cards) == len(self.plays[0][1]), "every play has the lead's count"
            else:
                void = False
            self.plays.append((event.seat, event.cards, void))
        elif isinstance(event, TrickWon):
            self.trick_won(event, after)
        elif isinstance(event, PenaltyRecorded):
            assert self.dealer is not None and isinstance(self.command, Penalize)
            assert (event.referee, event.offender) == (self.command.referee, self.command.offender)
            cards = self.command.cards
            defender_erred = event.offender % 2 == self.dealer % 2
            assert event.points == (10 * cards if defender_erred else -10 * cards)
            self.penalties += event.points
            self.stats.penalties += 1
        elif isinstance(event, LabourReformDeclared):
            assert isinstance(self.command, DeclareLabourReform)
            assert (event.referee, event.offender) == (self.command.referee, self.command.offender)
            assert event.offending_team == event.offender % 2
            self.reform_by = event.offending_team
        elif isinstance(event, LabourReformChosen):
            assert self.reform_by is not None and event.seat % 2 != self.reform_by
            self.reform_choice = event.choice
        elif isinstance(event, DealSettled):
            self.settled(event)
        elif isinstance(event, TwoMoreDeals):
            assert self.options.round_minutes > 0 and not self.announced
            assert event.at - self.started_at >= (self.options.round_minutes - 25) * 60
            self.announced = True
        elif isinstance(event, GameEnded):
            self.game_ended(event)
        elif isinstance(event, TurnTimedOut):
            assert self.options.turn_seconds > 0
            self.stats.timeouts += 1

    def cls(self, c: Card) -> object:
        assert self.trump is not None
        return suit_class(c, self.level, self.trump)

    def trick_won(self, event: TrickWon, after: State) -> None:
        assert self.trump is not None and self.dealer is not None and len(self.plays) == 4
        lead_seat, lead, _ = self.plays[0]
        n = len(lead)
        every = [c for _, cards, _ in self.plays for c in cards]
        assert event.points == points(tuple(every))
        if len(set(lead)) == 1:
            # a lead of n identical cards: only n identical cards of the led suit, or of trump from a void seat,
            # contend (§5); the highest by §3 wins, the earlier of equals
            led = self.cls(lead[0])
            best_seat, best_key = lead_seat, strength(lead[0], self.level, self.trump)
            for seat, cards, void in self.plays[1:]:
                if len(set(cards)) != 1:
                    continue
                kind = self.cls(cards[0])
                if kind != led and not (kind == TRUMP and void):
                    continue
                key = strength(cards[0], self.level, self.trump)
                if key > best_key:
                    best_seat, best_key = seat, key
            assert event.winner == best_seat, (self.plays, event)
            self.stats.rederived[n] += 1
        else:
            # other leads: the winner played the lead or a play of its count, all of the led class or all trump
            (winner_cards,) = [cards for seat, cards, _ in self.plays if seat == event.winner]
            classes = {self.cls(c) for c in winner_cards}
            assert len(classes) == 1 and classes <= {self.cls(lead[0]), TRUMP}
        last = not any(after.hands)
        attackers = 1 - self.dealer % 2
        credited = 0
        if event.winner % 2 == attackers:
            credited = event.points * (n if last else 1)  # D-TR-7
        assert event.credited == credited
        self.credited += credited
        assert after.attackers_points == self.credited
        self.last_winner = event.winner
        self.plays = []
        self.stats.tricks += 1

    def settled(self, event: DealSettled) -> None:
        assert self.dealer is not None
        score = self.credited + self.penalties
        dealer_team = self.dealer % 2
        if self.reform_by is None:
            side, gain = table(score)  # §9
        else:
            # §11 (劳改): the deal ends at once; the non-offending team takes +2 levels (winning the deal), or
            # ±80 on the attackers' score in its favour and §9's table; no last-trick bonus
            assert self.reform_choice is not None
            innocent_side = "defenders" if self.reform_by != dealer_team else "attackers"
            if self.reform_choice is LabourReform.LEVELS:
                side, gain = innocent_side, 2
            else:
                score += 80 if innocent_side == "attackers" else -80
                side, gain = table(score)
            self.stats.reforms += 1
            self.reform_by = self.reform_choice = None
        assert event.attackers_points == score
        assert (event.winner, event.levels_up) == (side, gain)
        dealer_team = self.dealer % 2
        winner_team = dealer_team if side == "defenders" else 1 - dealer_team
        levels = list(self.levels)
        if levels[winner_team] == ACE and side == "defenders" and gain > 0:
            levels[winner_team] = PAST_A  # D-TR-1: a dealer team at A that holds goes past A
        else:
            levels[winner_team] = min(levels[winner_team] + gain, ACE)  # gains stop at A
        assert list(event.levels) == levels
        assert all(0 <= x <= PAST_A for x in levels)
        expected_next = (self.dealer + 2) % 4 if side == "defenders" else (self.dealer + 1) % 4  # D-TR-8
        assert event.next_dealer == expected_next
        self.levels = levels
        self.next_dealer = expected_next
        self.first_deal = False
        self.flipped = None
        self.stats.deals += 1
        if side == "defenders":
            self.stats.held += 1
        else:
            self.stats.taken += 1
        if self.announced:
            self.deals_after_announcement += 1

    def game_ended(self, event: GameEnded) -> None:
        past = [team for team in (0, 1) if self.levels[team] == PAST_A]
        if past:
            assert event.winner == past[0]
            self.stats.past_a += 1
        else:
            assert self.announced and self.deals_after_announcement == 2, "ended without a reason"
            a, b = self.levels
            assert event.winner == (None if a == b else (0 if a > b else 1))
            self.stats.timed_ends += 1
        assert tuple(self.levels) == event.levels
        self.ended = True

    def after_step(self, events: tuple[Event, ...]) -> None:
        """The game ends exactly when a team goes past A or the timed round is over (D-TR-9)."""
        should_end = PAST_A in self.levels or (self.announced and self.deals_after_announcement >= 2)
        if any(isinstance(e, DealSettled) for e in events):
            assert should_end == any(isinstance(e, GameEnded) for e in events)
        assert self.ended == should_end


def lowest_single_ok(state: State, seat: int, auditor: Auditor, cards: Cards) -> None:
    """§11: an expired lead plays the lowest single; an expired follow of a single plays the lowest card it may
    (of the led suit class while it holds one), lowest by §3's order — plain below trump, then by rank."""
    assert auditor.trump is not None
    hand = state.hands[seat]
    if state.trick is None:
        allowed = list(hand)
    elif len(state.trick.plays[0]) == 1:
        led = auditor.cls(state.trick.plays[0][0])
        allowed = [c for c in hand if auditor.cls(c) == led] or list(hand)
    else:
        return
    assert len(cards) == 1 and cards[0] in allowed
    key = strength(cards[0], auditor.level, auditor.trump)
    assert all(strength(c, auditor.level, auditor.trump) >= key for c in allowed), "the lowest card"
    auditor.stats.lowest += 1


def play_game(seed: int, options: Options, stats: Stats) -> None:
    rng = SeededRandom(seed)
    bots = [RandomBot(rng.next64()) for _ in range(4)]
    auditor = Auditor(stats)
    now = 50_000
    void_deal = False
    state = State()
    command: Command = StartGame(rng.next64(), options, at=now)
    while True:
        if state.phase is not Phase.NEW:
            assert conserved(state), "§12: the 324 cards are hands + trick + won tricks"
            acting = waiting(state)
            assert acting == auditor.expected_waiting(state), (state.phase, acting)
            for seat in range(4):
                if seat not in acting:
                    assert legal_actions(state, seat) == ()
            if state.phase is Phase.ENDED:
                break
            assert auditor.stats.deals < 10**6
            if state.phase is Phase.BID and not state.bids:
                void_deal = rng.below(12) == 0  # now and then every seat passes: a void deal (D-TR-6.6)
            command = next_command(state, rng, bots, now, void_deal)
            if isinstance(command, Play | Pass | Cut | Timeout):
                assert command.seat in acting, "only a waiting seat acts"
        events = decide(state, command)
        auditor.command = command
        before = state
        for event in events:
            after = evolve(state, event)
            auditor.on(event, state, after)
            state = after
        auditor.after_step(events)
        if isinstance(command, Timeout) and before.phase is Phase.PLAY:
            played = [e for e in events if isinstance(e, CardsPlayed)]
            lowest_single_ok(before, command.seat, auditor, played[0].cards)
        now += 5
        deals_this_game = state.deal
        assert deals_this_game <= MAX_DEALS_PER_GAME, "a game that never ends"
    stats.games += 1
    assert auditor.ended and state.phase is Phase.ENDED and waiting(state) == ()


def next_command(state: State, rng: SeededRandom, bots: list[RandomBot], now: int, void_deal: bool) -> Command:
    options = state.options
    if state.phase is Phase.FLIP:
        return Redeal(rng.next64())
    if options.round_minutes and rng.below(25) == 0:
        return ClockTick(now)
    if state.phase is Phase.PLAY and rng.below(400) == 0:
        return Penalize("referee", rng.below(4), 1 + rng.below(4))
    if state.phase is Phase.PLAY and rng.below(3000) == 0:
        return DeclareLabourReform("referee", rng.below(4))
    seats = waiting(state)
    seat = seats[rng.below(len(seats))]
    if options.turn_seconds and rng.below(25) == 0:
        return Timeout(seat, rng.next64())
    if void_deal and state.phase is Phase.BID:
        return Pass(seat)
    command = bots[seat].choose(state, seat)
    if isinstance(command, Cut):
        return Cut(seat, command.count, rng.next64())
    return command


def game_options(game: int) -> Options:
    return (Options(), Options(turn_seconds=10), Options(round_minutes=150, turn_seconds=10))[game % 3]


@pytest.mark.parametrize("chunk", range(examples(CHUNKS)))  # all of them unless PAIJU_EXAMPLES scales down
def test_random_games_follow_the_rules(chunk: int) -> None:
    stats = Stats()
    game = 0
    while stats.deals < DEALS_PER_CHUNK or game < 3:  # at least one game of each kind of options
        play_game(0xC0FFEE + 1_000 * chunk + game, game_options(game), stats)
        game += 1
    assert stats.deals >= DEALS_PER_CHUNK
    assert stats.games >= 3 and stats.past_a >= 2, "the untimed games of each chunk ended past A"
    assert stats.timed_ends + stats.past_a == stats.games
    # the audit really ran: many tricks, singles and pairs re-derived, both sides won deals, bots countered
    assert stats.tricks >= 40 * stats.deals
    assert stats.rederived[1] > 100 and stats.rederived[2] > 10
    assert stats.held > 0 and stats.taken > 0
    assert stats.timeouts > 0 and stats.penalties > 0 and stats.counters > 0 and stats.voids > 0
    assert stats.lowest > 0 and stats.reforms > 0
