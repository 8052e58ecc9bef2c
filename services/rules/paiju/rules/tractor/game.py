"""The 拖拉机 core: ``decide``, ``evolve`` and ``legal_actions`` (docs/architecture.md, "Deterministic rules cores").

Following is checked exactly by `follow.check_follow`. Because the legal follows of an 81-card hand can
be astronomically many, ``legal_actions`` lists a follow as one representative play (`follow.make_follow`)
and `follow.requirement` describes what is owed; ``decide`` accepts every play the validator accepts.
"""

from __future__ import annotations

from collections import Counter as Multiset
from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache

from paiju.rules import deck, fair
from paiju.rules.cards import Card, Cards, Rank, Suit, format_cards, missing_cards, remove_cards
from paiju.rules.errors import IllegalAction, NotYourTurn, RuleError
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor.combos import Combo, classify, trick_winner
from paiju.rules.tractor.follow import Requirement, check_follow, make_follow, requirement
from paiju.rules.tractor.model import (
    DECKS,
    SEATS,
    Bid,
    BidEntered,
    BidsRevealed,
    CardFlipped,
    CardsPlayed,
    ChooseLabourReform,
    ClockTick,
    Command,
    Counter,
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
    MakeBid,
    Pass,
    Penalize,
    PenaltyRecorded,
    Phase,
    Play,
    Redeal,
    SeatAction,
    StartGame,
    State,
    Timeout,
    Trick,
    TrickWon,
    TrumpDeclared,
    TurnTimedOut,
    TwoMoreDeals,
    next_seat,
    team_of,
)
from paiju.rules.tractor.order import LEVEL_RANKS, Trumps
from paiju.rules.tractor.settlement import (
    LabourReform,
    Settlement,
    Team,
    card_points,
    labour_reform,
    last_trick_score,
    offence_penalty,
    settle,
)

DECK_SIZE = 54 * DECKS
SHUFFLE, FLIP, TIMEOUT = 1, 2, 3
FLIP_VALUES = {Rank.ACE: 1, Rank.JACK: 11, Rank.QUEEN: 12, Rank.KING: 13}


def fingerprint(state: State) -> str:
    return f"deal {state.deal}, {state.phase.value}, turn {state.turn}"


@lru_cache(maxsize=64)
def trumps_for(level: Rank, trump: Suit) -> Trumps:
    return Trumps(level, trump)


def level_rank(state: State) -> Rank:
    """The deal's level rank: the dealer team's level (§2); 3 in a first deal before the dealer is known."""
    if state.dealer is None:
        return Rank.THREE
    return LEVEL_RANKS[min(state.levels[team_of(state.dealer)], 11)]


def trumps(state: State) -> Trumps:
    assert state.trump is not None
    return trumps_for(level_rank(state), state.trump)


def _shuffled(seed: int) -> list[Card]:
    return deck.shuffled(DECKS, SeededRandom(seed).fork(SHUFFLE))


def flip_value(card: Card) -> int:
    """A flipped card's count: A = 1, J = 11, Q = 12, K = 13, others their number (§8)."""
    rank = Rank(card // 4)
    return FLIP_VALUES.get(rank, rank + 2)


def _first_deal(seed: int, deal_no: int, cards: list[Card] | None = None) -> list[Event]:
    """§8: a seeded seat flips a seeded non-joker card; counting from the flipper gives the first drawer. ``cards``:
    the shuffled deck (by default the one ``seed`` shuffles)."""
    rng = SeededRandom(seed).fork(FLIP)
    cards = _shuffled(seed) if cards is None else cards
    flipper = rng.below(SEATS)
    non_jokers = [c for c in cards if c < 52]
    card = non_jokers[rng.below(len(non_jokers))]
    first = (flipper + flip_value(card) - 1) % SEATS
    return [CardFlipped(flipper, card, first), HandsDealt(deal_no, first, deck.deal(cards, first, SEATS), seed)]


# --- decide -----------------------------------------------------------------------------------------


def decide(state: State, command: Command) -> tuple[Event, ...]:
    """The events ``command`` causes in ``state``, or a `RuleError` (nothing changes)."""
    if isinstance(command, Play):
        return tuple(_decide_play(state, command))
    if isinstance(command, MakeBid | Counter):
        return tuple(_decide_bid(state, command))
    if isinstance(command, Pass):
        return tuple(_decide_pass(state, command))
    if isinstance(command, Cut):
        return tuple(_decide_cut(state, command))
    if isinstance(command, StartGame):
        if state.phase is not Phase.NEW:
            raise IllegalAction("the game has already started", fingerprint=fingerprint(state), rule="§2")
        if command.options.round_minutes < 0 or command.options.turn_seconds < 0:
            raise RuleError("round_minutes and turn_seconds are 0 (off) or more")
        if command.fair:
            return (GameStarted(command.options, command.at, fair=True, commit_reveal=command.commit_reveal),)
        return (GameStarted(command.options, command.at), *_first_deal(command.seed, 1))
    if isinstance(command, Redeal):
        if state.phase is not Phase.FLIP:
            raise IllegalAction(
                "only a void first deal is dealt again", fingerprint=fingerprint(state), rule="D-TR-6.6"
            )
        if state.fair:
            raise IllegalAction(
                "a fair game deals again from a new committed shuffle, not from a seed",
                fingerprint=fingerprint(state),
                rule="D-TR-6.6",
            )
        return tuple(_first_deal(command.seed, state.deal))
    if isinstance(command, Timeout):
        return tuple(_decide_timeout(state, command))
    if isinstance(command, ClockTick):
        return tuple(_decide_clock(state, command))
    if isinstance(command, Penalize | DeclareLabourReform):
        return tuple(_decide_referee(state, command))
    if isinstance(command, ChooseLabourReform):
        return tuple(_decide_reform_choice(state, command))
    if isinstance(command, fair.Contribute):
        cutter = state.turn if state.phase is Phase.CUT else None
        return tuple(fair.decide_contribute(state, command, seats=SEATS, cutter=cutter, rule="§8"))
    if isinstance(command, fair.CommitSeed):
        deal = state.deal + 1 if state.phase is Phase.CUT or state.deal == 0 else state.deal
        return tuple(fair.decide_commit(state, command, awaiting=_awaiting_deal(state), deal=deal, rule="§8"))
    if isinstance(command, fair.DealShuffle):
        return tuple(_decide_deal_shuffle(state, command))
    if isinstance(command, fair.RevealSeed):
        return tuple(fair.decide_reveal(state, command, over=_deal_over(state), rule="§8"))
    v2 = fair.decide_v2(state, command, seats=SEATS, deck_size=DECK_SIZE, rule="§8")
    if v2 is not None:
        return tuple(v2)
    raise RuleError(f"unknown command {command!r}")


# --- dealing fairly (paiju.rules.fair) ---------------------------------------------------------------------------


def _awaiting_deal(state: State) -> bool:
    return state.phase in (Phase.FLIP, Phase.CUT)


def _deal_over(state: State) -> bool:
    return state.phase in (Phase.FLIP, Phase.CUT, Phase.ENDED)


def fair_step(state: State) -> fair.Step | None:
    """The engine's next step of a fair game (`paiju.rules.fair.step`): a first deal (or a void first deal dealt
    again) waits for every seat's contribution (or the engine's window); a later one is dealt once the dealer has
    cut."""
    return fair.step(
        state, awaiting=_awaiting_deal(state), over=_deal_over(state), cut_deal=state.phase is Phase.CUT, seats=SEATS
    )


def _decide_deal_shuffle(state: State, command: fair.DealShuffle) -> list[Event]:
    """A fair game's deal from its committed shuffle: a first deal with its flip (§8, drawn from the shuffle's draws
    seed), a later one after the dealer's recorded cut."""
    if not _awaiting_deal(state):
        raise IllegalAction("the game waits for no deal now", fingerprint=fingerprint(state), rule="§8")
    cards, seed = fair.dealt(state, command, DECKS, "§8")
    if state.phase is Phase.FLIP:
        return _first_deal(seed, state.deal or 1, cards)
    cut = fair.deal_cut(state, DECK_SIZE)
    if cut is None:
        raise IllegalAction("the dealer has not cut yet", fingerprint=fingerprint(state), rule="§8")
    count, dealer = cut
    return _cut_deal(state, deck.cut(cards, count), seed, count, dealer)


def _decide_clock(state: State, command: ClockTick) -> list[Event]:
    """D-TR-9: 25 minutes before the end of a timed round, announce two more deals (once)."""
    if state.options.round_minutes <= 0:
        raise IllegalAction("this game is untimed (round_minutes is 0): there is nothing to announce", rule="D-TR-9")
    if state.phase in (Phase.NEW, Phase.ENDED):
        raise IllegalAction("the game is not running", fingerprint=fingerprint(state), rule="D-TR-9")
    ticked = state.clock.tick(state.options.round_minutes, state.started_at, command.at)
    return [TwoMoreDeals(command.at)] if ticked.announced and not state.clock.announced else []


def _decide_referee(state: State, command: Penalize | DeclareLabourReform) -> list[Event]:
    """Referee actions of §11, recorded with the referee's identity."""
    _require_seat(state, command.offender)
    if not command.referee:
        raise RuleError("a referee action needs the referee's identity", rule="§11")
    if state.phase is not Phase.PLAY:
        raise IllegalAction(
            "referee penalties apply while a deal is being played", fingerprint=fingerprint(state), rule="§11"
        )
    assert state.dealer is not None
    if isinstance(command, Penalize):
        points = offence_penalty(command.offender, state.dealer, command.cards)
        return [PenaltyRecorded(command.referee, command.offender, points)]
    return [LabourReformDeclared(command.referee, command.offender, team_of(command.offender))]


def _decide_reform_choice(state: State, command: ChooseLabourReform) -> list[Event]:
    _require_seat(state, command.seat)
    if state.phase is not Phase.REFORM or state.reform_by is None:
        raise IllegalAction("there is no 劳改 to choose a remedy for", fingerprint=fingerprint(state), rule="§11")
    if team_of(command.seat) == state.reform_by:
        raise NotYourTurn("the non-offending team chooses the remedy for 劳改 (§11)", fingerprint=fingerprint(state))
    assert state.dealer is not None
    result = labour_reform(
        state.dealer,
        state.levels,
        state.attackers_points + state.penalty_points,
        Team.A if state.reform_by == 0 else Team.B,
        command.choice,
    )
    return [LabourReformChosen(command.seat, command.choice), *_settled(state, result)]


def _require_seat(state: State, seat: int) -> None:
    if not 0 <= seat < SEATS:
        raise RuleError(f"there is no seat {seat}: seats are 0..3", fingerprint=fingerprint(state), rule="§1")


def _require_cards(cards: object) -> Cards:
    if not isinstance(cards, tuple) or not all(isinstance(c, int) and 0 <= c < 54 for c in cards):
        raise RuleError(f"cards must be a tuple of card ids 0..53, got {cards!r}")
    return cards


def _require_held(state: State, seat: int, cards: Cards, rule: str) -> None:
    """``cards`` are card ids in the seat's hand; ``rule`` is the rule of the command that uses them."""
    _require_cards(cards)
    if remove_cards(state.hands[seat], cards) is None:
        missing = missing_cards(state.hands[seat], cards)
        raise IllegalAction(
            f"seat {seat} does not hold {format_cards(missing)}", fingerprint=fingerprint(state), rule=rule
        )


def _decide_cut(state: State, command: Cut) -> list[Event]:
    _require_seat(state, command.seat)
    if state.phase is not Phase.CUT:
        raise IllegalAction("cannot cut now", fingerprint=fingerprint(state), rule="§8")
    if command.seat != state.turn:
        raise NotYourTurn(f"the dealer, seat {state.turn}, cuts (§8)", fingerprint=fingerprint(state))
    if not 1 <= command.count <= DECK_SIZE - 1:
        raise IllegalAction(f"a cut moves 1..{DECK_SIZE - 1} cards, not {command.count}", rule="§8")
    if state.fair:  # the cut is the dealer's contribution; the engine deals the committed shuffle after it
        return [fair.cut_contribution(state, command.seat, command.count, command.contribution, "§8")]
    return _cut_deal(state, deck.cut(_shuffled(command.seed), command.count), command.seed, command.count, command.seat)


def _cut_deal(state: State, cards: list[Card], seed: int, count: int, dealer: int) -> list[Event]:
    """§8: later deals: the dealer draws first from the cut deck."""
    return [HandsDealt(state.deal + 1, dealer, deck.deal(cards, dealer, SEATS), seed, count)]


def bid_count(state: State, suit: Suit, cards: Cards) -> int:
    """How many level cards of ``suit`` a bid shows (D-TR-6.1), or `IllegalAction` if it is not a bid.

    In a first deal the bid must also show one copy of the flipped card, which counts only if it is
    itself a level card of the suit.
    """
    level = level_rank(state)
    level_card = Card(level * 4 + suit)
    rest = list(cards)
    if state.first_deal and state.flipped is not None:
        if state.flipped not in rest:
            raise IllegalAction(
                f"in the first deal a bid must show a copy of the flipped card {format_cards([state.flipped])} (§7)"
            )
        if state.flipped != level_card:
            rest.remove(state.flipped)
    if not rest or any(c != level_card for c in rest):
        raise IllegalAction(
            f"a bid in {suit.name.lower()} shows level cards {format_cards([level_card])} only (D-TR-6.1)"
        )
    return len(rest)


def _decide_bid(state: State, command: MakeBid | Counter) -> list[Event]:
    seat = command.seat
    _require_seat(state, seat)
    countering = isinstance(command, Counter)
    phase = Phase.COUNTER if countering else Phase.BID
    if state.phase is not phase:
        raise IllegalAction(
            f"cannot {'counter' if countering else 'bid'} now: the game is in the {state.phase.value} phase",
            fingerprint=fingerprint(state),
            rule="D-TR-6.4" if countering else "D-TR-6.1",
        )
    _require_may_bid(state, seat)
    _require_held(state, seat, command.cards, "D-TR-6.1")
    count = bid_count(state, command.suit, command.cards)
    if countering:
        assert state.bid is not None
        if count <= state.bid.count:
            raise IllegalAction(
                f"a counter needs more level cards than the bid's {state.bid.count}: {count} is not more (多反少)",
                rule="D-TR-6.4",
            )
    bid = Bid(seat, command.suit, tuple(sorted(command.cards)), count)
    return _after_entry(state, BidEntered(seat, bid))


def _require_may_bid(state: State, seat: int) -> None:
    if any(s == seat for s, _ in state.bids):
        raise NotYourTurn(
            f"seat {seat} has already bid or passed",
            fingerprint=fingerprint(state),
            rule="D-TR-6.4" if state.phase is Phase.COUNTER else "D-TR-6.1",
        )
    if state.phase is Phase.COUNTER:
        assert state.bid is not None
        if team_of(seat) == team_of(state.bid.seat):
            raise NotYourTurn(
                "only the other team may counter; the bidding team may not counter again (对方反牌后，本方不得再反)",
                fingerprint=fingerprint(state),
                rule="D-TR-6.4",
            )


def _decide_pass(state: State, command: Pass) -> list[Event]:
    _require_seat(state, command.seat)
    if state.phase not in (Phase.BID, Phase.COUNTER):
        raise IllegalAction(
            "passing is for bidding and countering only", fingerprint=fingerprint(state), rule="D-TR-6.1"
        )
    _require_may_bid(state, command.seat)
    return _after_entry(state, BidEntered(command.seat, None))


def _bidders(state: State) -> tuple[int, ...]:
    if state.phase is Phase.COUNTER:
        assert state.bid is not None
        return tuple(s for s in range(SEATS) if team_of(s) != team_of(state.bid.seat))
    return tuple(range(SEATS))


def _best(bids: list[Bid], first_drawer: int) -> Bid | None:
    """Highest count; equal counts: the earliest seat counting from the first drawer (D-TR-6.3)."""
    if not bids:
        return None
    return max(bids, key=lambda b: (b.count, -((b.seat - first_drawer) % SEATS)))


def _after_entry(state: State, entry: BidEntered) -> list[Event]:
    events: list[Event] = [entry]
    entries = [*state.bids, (entry.seat, entry.bid)]
    if len(entries) < len(_bidders(state)):
        return events
    bids = [b for _, b in entries if b is not None]
    assert state.first_drawer is not None
    winner = _best(bids, state.first_drawer)
    if state.phase is Phase.BID:
        events.append(BidsRevealed(winner, tuple(bids)))
        if winner is None:
            events.append(DealVoided(state.deal))
        return events
    events.append(CountersRevealed(winner, tuple(bids)))
    final = winner if winner is not None else state.bid
    assert final is not None
    dealer = final.seat if state.first_deal else state.dealer
    assert dealer is not None
    level = state.levels[team_of(dealer)]
    events.append(TrumpDeclared(final.suit, dealer, level))
    return events


def attackers(state: State) -> int:
    """The attacking team 抢庄方: the non-dealer team (§9)."""
    assert state.dealer is not None
    return 1 - team_of(state.dealer)


def _decide_play(state: State, command: Play) -> list[Event]:
    seat = command.seat
    _require_seat(state, seat)
    if state.phase is not Phase.PLAY:
        raise IllegalAction(f"cannot play now: the game is in the {state.phase.value} phase", rule="§5")
    if state.turn != seat:
        raise NotYourTurn(
            f"it is seat {state.turn}'s turn, not seat {seat}'s", fingerprint=fingerprint(state), rule="§1"
        )
    try:
        cards = tuple(sorted(command.cards))
    except TypeError:  # not an iterable of card ids: malformed, like any other bad card list
        _require_cards(command.cards)
        raise
    _require_held(state, seat, cards, "§1")
    t = trumps(state)
    trick = state.trick
    if trick is None:
        try:
            classify(cards, t)
        except IllegalAction as e:
            raise IllegalAction(e.reason, fingerprint=fingerprint(state), rule=e.rule) from None
        return [CardsPlayed(seat, cards)]
    check_follow(trick.lead, state.hands[seat], cards, t)
    events: list[Event] = [CardsPlayed(seat, cards)]
    if len(trick.plays) + 1 < SEATS:
        return events
    plays = (*trick.plays, cards)
    winner = (trick.leader + trick_winner(plays, t)) % SEATS
    raw = sum(card_points(p) for p in plays)
    last = len(state.hands[seat]) == len(cards)
    attacking = team_of(winner) == attackers(state)
    credited = last_trick_score(raw, len(cards), attacking) if last else (raw if attacking else 0)
    events.append(TrickWon(winner, raw, credited))
    if last:
        events.extend(_settle(state, state.attackers_points + credited))
    return events


def _settle(state: State, score: int) -> list[Event]:
    assert state.dealer is not None
    return _settled(
        state, settle(dealer=state.dealer, levels=state.levels, attackers_points=score + state.penalty_points)
    )


def _settled(state: State, result: Settlement) -> list[Event]:
    """The settlement events, and the end of the game past A or after a timed round's last deal (D-TR-9)."""
    events: list[Event] = [
        DealSettled(result.attackers_points, result.winner.value, result.levels_up, result.next_dealer, result.levels)
    ]
    if result.game_winner is not None:
        events.append(GameEnded(0 if result.game_winner is Team.A else 1, result.levels))
    elif state.clock.deal_settled(None).over:
        a, b = result.levels
        events.append(GameEnded(None if a == b else (0 if a > b else 1), result.levels))
    return events


def default_action(state: State, seat: int, seed: int) -> SeatAction:
    """The turn-timer default (§11): pass in bidding; the lowest legal follow, or the lowest single leading."""
    if state.phase in (Phase.BID, Phase.COUNTER):
        return Pass(seat)
    if state.phase is Phase.CUT:
        if state.fair:  # nothing the engine chooses after committing: the cut the commitment names
            return Cut(seat, fair.default_cut(state, DECK_SIZE), seed, fair.TIMED_OUT)
        return Cut(seat, 1 + SeededRandom(seed).fork(TIMEOUT).below(DECK_SIZE - 1), seed)
    t = trumps(state)
    hand = state.hands[seat]
    if state.trick is None:
        return Play(seat, (min(hand, key=lambda c: (t.strength[c] + (1000 if t.is_trump(c) else 0), c)),))
    return Play(seat, make_follow(state.trick.lead, hand, t))


def _decide_timeout(state: State, command: Timeout) -> list[Event]:
    _require_seat(state, command.seat)
    if state.options.turn_seconds <= 0:
        raise IllegalAction("this table has no turn timer (turn_seconds is 0), so no turn can time out (§11)")
    waiting = state.turn == command.seat or (
        state.phase in (Phase.BID, Phase.COUNTER)
        and command.seat in _bidders(state)
        and all(s != command.seat for s, _ in state.bids)
    )
    if not waiting:
        raise NotYourTurn(
            f"seat {command.seat} has no running turn to time out", fingerprint=fingerprint(state), rule="§11"
        )
    if state.phase in (Phase.BID, Phase.COUNTER):
        # a public timeout would tell the table that this seat passed: it is recorded inside the concealed entry
        return _after_entry(state, BidEntered(command.seat, None, timed_out=True))
    return [TurnTimedOut(command.seat), *decide(state, default_action(state, command.seat, command.seed))]


# --- evolve -----------------------------------------------------------------------------------------


def evolve(state: State, event: Event) -> State:
    """Apply one event. Events are facts: nothing is validated here."""
    if isinstance(event, CardsPlayed):
        return _evolve_play(state, event)
    if isinstance(event, TrickWon):
        assert state.trick is not None
        trick = replace(state.trick, winner=event.winner, points=event.points)
        return replace(
            state,
            trick=None,
            tricks=(*state.tricks, trick),
            attackers_points=state.attackers_points + event.credited,
            turn=event.winner,
        )
    if isinstance(event, BidEntered):
        return replace(state, bids=(*state.bids, (event.seat, event.bid)))
    if isinstance(event, BidsRevealed):
        return replace(state, phase=Phase.COUNTER, bid=event.winner, bids=(), turn=None)
    if isinstance(event, CountersRevealed):
        return replace(state, counter=event.winner, bids=())
    if isinstance(event, TrumpDeclared):
        return replace(
            state, phase=Phase.PLAY, trump=event.trump, dealer=event.dealer, turn=event.dealer, leader=event.dealer
        )
    if isinstance(event, DealVoided):
        # the deal is dealt again under the same number: a new flip (first deal) or the dealer's new cut
        return replace(
            state,
            phase=Phase.FLIP if state.first_deal else Phase.CUT,
            deal=state.deal if state.first_deal else state.deal - 1,
            bids=(),
            bid=None,
            turn=state.dealer,
        )
    if isinstance(event, CardFlipped):
        return replace(state, flipped=event.card, first_drawer=event.first_drawer)
    if isinstance(event, HandsDealt):
        return replace(
            state,
            shuffle=fair.on_deal(state),
            phase=Phase.BID,
            deal=event.deal,
            dealer=event.first_drawer if event.cut is not None else None,
            hands=event.hands,
            first_drawer=event.first_drawer,
            dealt=tuple(sorted(c for h in event.hands for c in h)),
            turn=None,
            trump=None,
            bids=(),
            bid=None,
            counter=None,
            trick=None,
            tricks=(),
            attackers_points=0,
            penalty_points=0,
        )
    if isinstance(event, DealSettled):
        return replace(
            state,
            phase=Phase.CUT,
            levels=event.levels,
            turn=event.next_dealer,
            first_deal=False,
            flipped=None,
            settlement=event,
            clock=state.clock.deal_settled(None),
            reform_by=None,
        )
    if isinstance(event, GameEnded):
        return replace(state, phase=Phase.ENDED, turn=None)
    if isinstance(event, GameStarted):
        if event.fair:
            return replace(
                state,
                options=event.options,
                started_at=event.at,
                fair=True,
                phase=Phase.FLIP,
                commit_reveal=event.commit_reveal,
            )
        return replace(state, options=event.options, started_at=event.at)
    if isinstance(event, TurnTimedOut | LabourReformChosen):
        return state
    if isinstance(event, TwoMoreDeals):
        return replace(state, clock=replace(state.clock, announced=True))
    if isinstance(event, PenaltyRecorded):
        return replace(state, penalty_points=state.penalty_points + event.points)
    if isinstance(event, LabourReformDeclared):
        return replace(state, phase=Phase.REFORM, reform_by=event.offending_team, turn=None)
    changes = fair.evolve_shuffle(state, event, cutter=state.turn if state.phase is Phase.CUT else None)
    if changes is not None:
        return replace(state, **changes)
    raise TypeError(f"unknown event {event!r}")


def _evolve_play(state: State, event: CardsPlayed) -> State:
    seat = event.seat
    rest = remove_cards(state.hands[seat], event.cards)
    assert rest is not None
    hands = (*state.hands[:seat], rest, *state.hands[seat + 1 :])
    trick = state.trick
    if trick is None:
        trick = Trick(seat, (event.cards,), classify(event.cards, trumps(state)))
    else:
        trick = replace(trick, plays=(*trick.plays, event.cards))
    return replace(state, hands=hands, trick=trick, turn=next_seat(seat))


def replay(events: Iterable[Event], state: State | None = None) -> State:
    s = state if state is not None else State()
    for e in events:
        s = evolve(s, e)
    return s


def waiting(state: State) -> tuple[int, ...]:
    """The seats that may act now (several at once while bids are concealed)."""
    if state.phase in (Phase.BID, Phase.COUNTER):
        return tuple(s for s in _bidders(state) if all(s != done for done, _ in state.bids))
    if state.phase is Phase.REFORM:
        return tuple(s for s in range(SEATS) if team_of(s) != state.reform_by)
    return () if state.turn is None else (state.turn,)


# --- legal actions ----------------------------------------------------------------------------------


def legal_actions(state: State, seat: int) -> tuple[SeatAction, ...]:
    """What ``seat`` may do now. A follow is listed as one representative legal play (see module doc)."""
    phase = state.phase
    if phase in (Phase.BID, Phase.COUNTER):
        if seat not in _bidders(state) or any(s == seat for s, _ in state.bids):
            return ()
        return (Pass(seat), *_possible_bids(state, seat))
    if phase is Phase.REFORM:
        if seat not in waiting(state):
            return ()
        return tuple(ChooseLabourReform(seat, choice) for choice in LabourReform)
    if state.turn != seat:
        return ()
    if phase is Phase.CUT:
        if state.commit_reveal:  # the dealer commits to its cut and reveals it (paiju.rules.fair, version 2)
            return ()
        return tuple(Cut(seat, n, 0) for n in range(1, DECK_SIZE))
    if phase is Phase.PLAY:
        t = trumps(state)
        hand = state.hands[seat]
        if state.trick is None:
            return tuple(Play(seat, cards) for cards in leads(hand, t))
        return (Play(seat, make_follow(state.trick.lead, hand, t)),)
    return ()


def follow_requirement(state: State, seat: int) -> Requirement | None:
    """What ``seat`` owes when it is its turn to follow the trick's lead (§6; `follow.requirement`), else ``None``."""
    if state.phase is not Phase.PLAY or state.turn != seat or state.trick is None:
        return None
    return requirement(state.trick.lead, state.hands[seat], trumps(state))


def _possible_bids(state: State, seat: int) -> list[SeatAction]:
    hand = state.hands[seat]
    level = level_rank(state)
    actions: list[SeatAction] = []
    for suit in Suit:
        level_card = Card(level * 4 + suit)
        held = hand.count(level_card)
        extra: tuple[Card, ...] = ()
        if state.first_deal and state.flipped is not None and state.flipped != level_card:
            if state.flipped not in hand:
                continue
            extra = (state.flipped,)
        for c in range(1, held + 1):
            cards = tuple(sorted((level_card,) * c + extra))
            try:
                count = bid_count(state, suit, cards)
            except IllegalAction:
                continue
            if state.phase is Phase.COUNTER and state.bid is not None and count <= state.bid.count:
                continue
            kind = Counter if state.phase is Phase.COUNTER else MakeBid
            actions.append(kind(seat, suit, cards))
    return actions


def leads(hand: Cards, t: Trumps) -> list[Cards]:
    """Every combination ``hand`` can lead (§4): one per distinct card set."""
    groups = Multiset(hand)
    found: list[Cards] = []
    for c, n in sorted(groups.items()):
        for size in range(1, n + 1):
            found.append((c,) * size)
    # runs of units >= 2 on consecutive places (tractors, special tractors, AA22)
    by_chain = sorted((place, c) for c in groups if (place := t.chain[c]) is not None)
    for i, (_, start) in enumerate(by_chain):
        run = [start]
        top_unit = groups[start]
        for _, c in by_chain[i + 1 :]:
            top_unit = min(top_unit, groups[c])
            if top_unit < 2 or not t.adjacent(run[-1], c):
                break  # a longer run has a single in it too: no unit of 2 or more
            run.append(c)
            for unit in range(2, top_unit + 1):
                cards = tuple(sorted(x for x in run for _ in range(unit)))
                try:
                    combo: Combo = classify(cards, t)
                except IllegalAction:
                    continue
                if combo.units == len(run):
                    found.append(cards)
    return found
