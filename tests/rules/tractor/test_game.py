"""拖拉机 game flow through ``decide``/``evolve``: one test (or more) per rule of docs/rules/tractor.md and per D-TR-n.

Every expected value is derived by hand from docs/rules/tractor.md (and the source text it cites), never
copied from engine output. Positions are either reached from `StartGame` with commands, or built as a
`State` with chosen hands (``bidding_first_deal``, ``bidding_later_deal``, ``playing``) — ``decide`` is a pure
function of the state, so a built position tests the same code a live table runs.

Card notation: rank then suit (``3S``, ``10H``), ``SJ``/``BJ``. Levels are indexes: 0 = "3" … 11 = "A",
12 = past A. Seats 0, 2 are team A (0), seats 1, 3 team B (1).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace

import pytest

from paiju.rules.cards import RANK_OF, Card, Cards, Rank, Suit, full_decks, parse_cards
from paiju.rules.errors import IllegalAction, NotYourTurn, RuleError
from paiju.rules.tractor import game as game_module
from paiju.rules.tractor.bots import RandomBot
from paiju.rules.tractor.follow import check_follow
from paiju.rules.tractor.game import decide, legal_actions, replay, trumps, waiting
from paiju.rules.tractor.model import (
    Bid,
    BidEntered,
    BidsRevealed,
    CardFlipped,
    CardsPlayed,
    ChooseLabourReform,
    ClockTick,
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
from paiju.rules.tractor.model import (
    Counter as CounterBid,
)
from paiju.rules.tractor.settlement import LabourReform
from paiju.rules.tractor.view import redact, view

S, H, C, D = Suit.SPADES, Suit.HEARTS, Suit.CLUBS, Suit.DIAMONDS
ALL_CARDS: Cards = tuple(sorted(full_decks(6)))
UNTIMED = Options()

# §8: the flipped card's count, A = 1, J = 11, Q = 12, K = 13, the others their number (written out by hand)
FLIP_VALUE = {
    Rank.ACE: 1,
    Rank.TWO: 2,
    Rank.THREE: 3,
    Rank.FOUR: 4,
    Rank.FIVE: 5,
    Rank.SIX: 6,
    Rank.SEVEN: 7,
    Rank.EIGHT: 8,
    Rank.NINE: 9,
    Rank.TEN: 10,
    Rank.JACK: 11,
    Rank.QUEEN: 12,
    Rank.KING: 13,
}


# --- helpers ----------------------------------------------------------------------------------------


def cards(text: str) -> Cards:
    return parse_cards(text)


def one(text: str) -> Card:
    (c,) = parse_cards(text)
    return c


def act(state: State, command: object) -> tuple[State, tuple[Event, ...]]:
    events = decide(state, command)  # type: ignore[arg-type]
    return replay(events, state), events


def rejected(state: State, command: object, error: type[RuleError] = RuleError, fragment: str = "") -> RuleError:
    """``command`` raises ``error`` with a reason (containing ``fragment``) and leaves ``state`` as it was."""
    before = copy.deepcopy(state)
    with pytest.raises(error) as info:
        decide(state, command)  # type: ignore[arg-type]
    assert isinstance(info.value, RuleError)
    assert info.value.reason.strip(), "a rejection says why"
    assert fragment.lower() in info.value.reason.lower(), info.value.reason
    assert state == before
    return info.value


def of_type(events: Iterable[Event], kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, kind)]


def build_hands(fixed: dict[int, str], limited: Iterable[str] = ()) -> tuple[Cards, ...]:
    """81 cards a seat, all 324 dealt: each seat holds its ``fixed`` cards; the spare copies of the ``limited``
    cards go to seats without a ``fixed`` list while they have room, so a fixed seat holds exactly what it names."""
    pool = Counter(ALL_CARDS)
    hands: dict[int, list[Card]] = {s: list(cards(fixed.get(s, ""))) for s in range(4)}
    for h in hands.values():
        pool.subtract(h)
    assert all(n >= 0 for n in pool.values())
    limit = {one(x) for x in limited}
    for c in sorted(pool.elements(), key=lambda c: (c not in limit, c)):
        room = [s for s in range(4) if len(hands[s]) < 81]
        preferred = [s for s in room if s not in fixed] if c in limit else room
        seat = min(preferred or room, key=lambda s: (len(hands[s]), s))
        hands[seat].append(c)
    result = tuple(tuple(sorted(hands[s])) for s in range(4))
    assert sorted(c for h in result for c in h) == list(ALL_CARDS)
    return result


def started(seed: int = 1, options: Options = UNTIMED, at: int = 0) -> State:
    return replay(decide(State(), StartGame(seed, options, at)))


def bidding_first_deal(fixed: dict[int, str], flipped: str = "7H", first_drawer: int = 0) -> State:
    """A first deal in the bidding phase (level 3): seats hold ``fixed``; while there is room, the other copies of
    the level cards (3s) and of ``flipped`` go to seats not named in ``fixed``."""
    limited = [f"3{s}" for s in "SHCD"] + [flipped]
    s = started()
    hands = build_hands(fixed, limited)
    return replace(s, hands=hands, flipped=one(flipped), first_drawer=first_drawer)


def bidding_later_deal(fixed: dict[int, str], dealer: int = 1, levels: tuple[int, int] = (2, 4)) -> State:
    """A later deal in the bidding phase: ``dealer`` cut and drew first; levels (A, B)."""
    return replace(
        State(),
        phase=Phase.BID,
        deal=3,
        levels=levels,
        dealer=dealer,
        first_deal=False,
        first_drawer=dealer,
        hands=build_hands(fixed),
        dealt=ALL_CARDS,
    )


def playing(
    hands: tuple[str, str, str, str],
    *,
    dealer: int = 0,
    trump: Suit = S,
    levels: tuple[int, int] = (0, 0),
    options: Options = UNTIMED,
    attackers_points: int = 0,
) -> State:
    """A deal in play with the given (equal-sized) hands; ``dealer`` leads. Trump ``trump``, L = dealer team's level."""
    hs = tuple(cards(h) for h in hands)
    return replace(
        State(),
        options=options,
        phase=Phase.PLAY,
        deal=2,
        levels=levels,
        dealer=dealer,
        first_deal=False,
        first_drawer=dealer,
        hands=hs,
        turn=dealer,
        leader=dealer,
        trump=trump,
        dealt=tuple(sorted(c for h in hs for c in h)),
        attackers_points=attackers_points,
    )


def through_bidding(state: State, seed: int = 1000) -> State:
    """Reach the play: the first seat able to bid makes its first listed bid, everyone else passes;
    a void deal is dealt again (first deal: ``Redeal``; later deal: the dealer cuts again)."""
    while state.phase is not Phase.PLAY:
        if state.phase is Phase.FLIP:
            state, _ = act(state, Redeal(seed))
        elif state.phase is Phase.CUT:
            assert state.turn is not None
            state, _ = act(state, Cut(state.turn, 17, seed))
        else:
            seat = waiting(state)[0]
            bids = [a for a in legal_actions(state, seat) if isinstance(a, MakeBid)]
            somebody_bid = any(b is not None for _, b in state.bids)
            state, _ = act(state, bids[0] if bids and not somebody_bid else Pass(seat))
        seed += 1
    return state


def settle_by_reform(state: State, offending_team: int, choice: LabourReform = LabourReform.LEVELS) -> State:
    """End the deal in play at once by 劳改 against ``offending_team``; the other team makes ``choice``."""
    state, _ = act(state, DeclareLabourReform("ref", offending_team))
    state, _ = act(state, ChooseLabourReform(1 - offending_team, choice))
    return state


def at_cut(seed: int = 1, options: Options = UNTIMED) -> State:
    """A game after its first deal (settled by 劳改 against the attackers): the next dealer is to cut."""
    s = through_bidding(started(seed, options))
    assert s.dealer is not None
    s = settle_by_reform(s, offending_team=1 - s.dealer % 2)
    assert s.phase is Phase.CUT
    return s


def bid(seat: int, suit: Suit, text: str) -> MakeBid:
    return MakeBid(seat, suit, cards(text))


def counter(seat: int, suit: Suit, text: str) -> CounterBid:
    return CounterBid(seat, suit, cards(text))


def run(state: State, *commands: object) -> tuple[State, tuple[Event, ...]]:
    events: list[Event] = []
    for command in commands:
        state, evs = act(state, command)
        events.extend(evs)
    return state, tuple(events)


# --- §8 dealing ---------------------------------------------------------------------------------------


def test_first_deal_flip_is_seeded_and_counting_from_the_flipper_gives_the_first_drawer() -> None:
    """§8: a seeded seat flips a seeded non-joker card; first drawer = (flipper + value − 1) % 4."""
    flippers, drawers, ranks = set(), set(), set()
    for seed in range(120):
        events = decide(State(), StartGame(seed))
        assert events == decide(State(), StartGame(seed)), "same seed, same flip and deal"
        started_, flip, dealt = events
        assert isinstance(started_, GameStarted)
        assert isinstance(flip, CardFlipped)
        assert isinstance(dealt, HandsDealt)
        rank = RANK_OF[flip.card]
        assert rank not in (Rank.SMALL_JOKER, Rank.BIG_JOKER), "never a joker"
        assert 0 <= flip.flipper < 4
        expected = (flip.flipper + FLIP_VALUE[rank] - 1) % 4
        assert flip.first_drawer == expected
        assert dealt.first_drawer == expected
        if rank is Rank.FIVE:
            assert expected == flip.flipper, "a flipped 5 gives the flipper"
        state = replay(events)
        assert state.flipped == flip.card
        assert state.first_drawer == expected
        assert state.phase is Phase.BID and state.first_deal and state.levels == (0, 0)
        flippers.add(flip.flipper)
        drawers.add(expected)
        ranks.add(rank)
    assert flippers == {0, 1, 2, 3}
    assert drawers == {0, 1, 2, 3}
    assert {Rank.ACE, Rank.FIVE, Rank.JACK, Rank.QUEEN, Rank.KING} <= ranks


def test_first_deal_gives_81_cards_each_drawn_one_at_a_time_from_the_first_drawer() -> None:
    """§1, §8: 324 cards, 81 a seat, no kitty; the i-th card of the shuffled deck goes to first drawer + i."""
    for seed in (3, 4, 5):
        _, flip, dealt = decide(State(), StartGame(seed))
        assert isinstance(flip, CardFlipped) and isinstance(dealt, HandsDealt)
        deck = game_module._shuffled(seed)  # the engine's seeded shuffle: only the drawing order is tested
        assert flip.card in deck
        for j in range(4):
            assert dealt.hands[(flip.first_drawer + j) % 4] == tuple(sorted(deck[j::4]))
        assert [len(h) for h in dealt.hands] == [81] * 4
        assert sorted(c for h in dealt.hands for c in h) == list(ALL_CARDS)
        assert waiting(replay(decide(State(), StartGame(seed)))) == (0, 1, 2, 3)


def test_first_deal_level_is_3() -> None:
    """§8: the level of a first deal is 3: bids show 3s, and the trump is declared at level index 0."""
    s = bidding_first_deal({0: "7H 3D 3D 4D 4D"})
    rejected(s, bid(0, D, "7H 4D"), IllegalAction)
    s, events = run(s, bid(0, D, "7H 3D 3D"), Pass(1), Pass(2), Pass(3), Pass(1), Pass(3))
    (declared,) = of_type(events, TrumpDeclared)
    assert declared == TrumpDeclared(D, 0, 0)
    assert trumps(s).level is Rank.THREE


def test_later_deal_only_the_dealer_cuts_1_to_323_cards() -> None:
    """§8: later deals, the dealer may cut; a cut moves 1..323 of the 324 cards."""
    s = at_cut()
    dealer = s.turn
    assert dealer is not None and waiting(s) == (dealer,)
    for other in range(4):
        if other != dealer:
            rejected(s, Cut(other, 10, 5), NotYourTurn)
            assert legal_actions(s, other) == ()
    for bad in (0, 324, -3):
        rejected(s, Cut(dealer, bad, 5), IllegalAction, "cut")
    for count in (1, 323):
        after, events = act(s, Cut(dealer, count, 5))
        (dealt,) = events
        assert isinstance(dealt, HandsDealt)
        assert dealt.cut == count and dealt.first_drawer == dealer and dealt.deal == s.deal + 1
        assert [len(h) for h in dealt.hands] == [81] * 4
        assert after.phase is Phase.BID and after.dealer == dealer and not after.first_deal
    assert {a.count for a in legal_actions(s, dealer) if isinstance(a, Cut)} == set(range(1, 324))


def test_later_deal_the_dealer_draws_first_from_the_cut_deck() -> None:
    """§8: the cut moves the top ``count`` cards to the bottom; the dealer draws first, one card at a time."""
    s = at_cut()
    dealer = s.turn
    assert dealer is not None
    deck = game_module._shuffled(99)  # the engine's seeded shuffle: the cut and the drawing order are tested
    for count in (1, 2, 161, 323):
        (dealt,) = decide(s, Cut(dealer, count, 99))
        assert isinstance(dealt, HandsDealt)
        cut = deck[count:] + deck[:count]
        for j in range(4):
            assert dealt.hands[(dealer + j) % 4] == tuple(sorted(cut[j::4]))
    a, b = decide(s, Cut(dealer, 5, 99)), decide(s, Cut(dealer, 6, 99))
    assert isinstance(a[0], HandsDealt) and isinstance(b[0], HandsDealt)
    assert a[0].hands != b[0].hands, "the count of the cut matters"


def test_later_deal_the_dealer_leads_after_bidding() -> None:
    """§8, D-TR-6.5: in a later deal a bid by the other team chooses the trump; the fixed dealer leads."""
    s = bidding_later_deal({2: "7C 7C"}, dealer=1, levels=(2, 4))
    s, events = run(s, bid(2, C, "7C 7C"), Pass(0), Pass(1), Pass(3), Pass(1), Pass(3))
    assert of_type(events, TrumpDeclared) == [TrumpDeclared(C, 1, 4)]
    assert s.phase is Phase.PLAY and s.turn == 1 and waiting(s) == (1,)
    assert s.dealer == 1
    rejected(s, Play(2, cards("7C")), NotYourTurn)
    assert all(isinstance(a, Play) for a in legal_actions(s, 1)) and legal_actions(s, 1)


# --- D-TR-6 bidding -----------------------------------------------------------------------------------


def test_bids_are_concealed_until_all_four_have_acted() -> None:
    """D-TR-6.2: no bid is shown until all four have bid or passed; others learn only that a seat acted."""
    s = bidding_first_deal({0: "7H 3S 3S", 1: "7H 3H"})
    after_bid, bid_events = act(s, bid(0, S, "7H 3S 3S"))
    after_pass, pass_events = act(s, Pass(0))
    assert len(bid_events) == 1 and len(pass_events) == 1, "nothing is revealed before all have acted"
    for seat in (1, 2, 3, None):
        assert redact(bid_events[0], seat) == BidEntered(0, None, concealed=True)
        assert redact(bid_events[0], seat) == redact(pass_events[0], seat)
        assert view(after_bid, seat) == view(after_pass, seat)
        assert view(after_bid, seat).acted == (0,)
        assert view(after_bid, seat).bid is None and view(after_bid, seat).my_bid is None
    own = view(after_bid, 0).my_bid
    assert own is not None and own.cards == cards("7H 3S 3S") and own.count == 2
    assert redact(bid_events[0], 0) == bid_events[0]

    s, events = run(after_bid, bid(1, H, "7H 3H"), Pass(2))
    assert not of_type(events, BidsRevealed)
    s, events = act(s, Pass(3))
    (revealed,) = of_type(events, BidsRevealed)
    winner = Bid(0, S, cards("7H 3S 3S"), 2)
    assert revealed.winner == winner
    # the winner's shown cards become public; a losing bid is shown to its own seat only
    assert redact(revealed, 2) == BidsRevealed(winner, (winner,))
    assert redact(revealed, None) == BidsRevealed(winner, (winner,))
    own_view = redact(revealed, 1)
    assert isinstance(own_view, BidsRevealed)
    assert set(own_view.bids) == {winner, Bid(1, H, cards("7H 3H"), 1)}
    assert view(s, 3).bid == winner


def test_first_deal_bid_must_show_a_copy_of_the_flipped_card() -> None:
    """D-TR-6.1, §7 (叫牌者均需带一张梅花5): a first-deal bid shows one copy of the flipped card."""
    s = bidding_first_deal({0: "7H 3S 3S"}, flipped="7H")
    rejected(s, bid(0, S, "3S 3S"), IllegalAction, "flipped")
    rejected(s, bid(0, S, "7H"), IllegalAction)  # c >= 1 level card besides the flipped card
    _, (entered,) = act(s, bid(0, S, "7H 3S 3S"))
    assert isinstance(entered, BidEntered) and entered.bid == Bid(0, S, cards("7H 3S 3S"), 2)
    # later deals have no flipped card
    later = bidding_later_deal({0: "7S"}, dealer=1, levels=(0, 4))
    _, (entered,) = act(later, bid(0, S, "7S"))
    assert isinstance(entered, BidEntered) and entered.bid == Bid(0, S, cards("7S"), 1)


def test_first_deal_flipped_card_counts_only_if_it_is_a_level_card_of_the_bid_suit() -> None:
    """D-TR-6.1: the flipped copy counts toward c only when it is itself an L of the bid suit."""
    s = bidding_first_deal({0: "3H 3H 3S"}, flipped="3H")
    expected = {
        (H, "3H"): 1,  # the flipped 3H is a level card of hearts
        (H, "3H 3H"): 2,
        (S, "3H 3S"): 1,  # 3H shown as the flipped copy, not counted in spades
    }
    for (suit, text), count in expected.items():
        _, (entered,) = act(s, bid(0, suit, text))
        assert isinstance(entered, BidEntered) and entered.bid is not None
        assert entered.bid.count == count, (suit, text)
    rejected(s, bid(0, S, "3S"), IllegalAction, "flipped")
    rejected(s, bid(0, S, "3H 3H 3S"), IllegalAction)  # a second 3H is not a level card of spades


def test_bid_shows_only_level_cards_of_its_suit_at_the_dealer_teams_level() -> None:
    """D-TR-6.1, §2: a bid shows c >= 1 cards of rank L (the dealer team's level) in the bid suit."""
    # dealer 1: team B at index 4 = "7"; team A at index 2 = "5"
    s = bidding_later_deal({0: "7S 7S 5S 7H 8S"}, dealer=1, levels=(2, 4))
    for suit, text in ((S, "5S"), (S, "7H"), (S, "7S 7H"), (S, "7S 8S"), (S, "")):
        rejected(s, bid(0, suit, text), IllegalAction)
    _, (entered,) = act(s, bid(0, S, "7S 7S"))
    assert isinstance(entered, BidEntered) and entered.bid == Bid(0, S, cards("7S 7S"), 2)


def test_the_highest_bid_wins() -> None:
    """D-TR-6.3: the highest c wins, whatever the seat order."""
    s = bidding_first_deal({0: "7H 3S", 1: "7H 3H 3H 3H", 2: "7H 3C 3C"}, first_drawer=0)
    s, events = run(s, bid(2, C, "7H 3C 3C"), bid(0, S, "7H 3S"), Pass(3), bid(1, H, "7H 3H 3H 3H"))
    (revealed,) = of_type(events, BidsRevealed)
    assert revealed.winner == Bid(1, H, cards("7H 3H 3H 3H"), 3)
    assert s.phase is Phase.COUNTER and s.bid == revealed.winner
    assert waiting(s) == (0, 2), "the other team may counter"


@pytest.mark.parametrize("first_drawer", [0, 1, 2, 3])
def test_equal_bids_go_to_the_earliest_seat_counting_from_the_first_drawer(first_drawer: int) -> None:
    """D-TR-6.3: equal c — the earliest seat counting from the first drawer."""
    fixed = {0: "7H 3S 3S", 1: "7H 3H 3H", 2: "7H 3C 3C", 3: "7H 3D 3D"}
    s = bidding_first_deal(fixed, first_drawer=first_drawer)
    suits = (S, H, C, D)
    # enter the bids in reverse seat order, so that the entry order cannot decide
    s, events = run(s, *(bid(seat, suits[seat], fixed[seat]) for seat in (3, 2, 1, 0)))
    (revealed,) = of_type(events, BidsRevealed)
    assert revealed.winner is not None and revealed.winner.seat == first_drawer


def test_equal_bids_tie_break_is_by_play_order_from_the_first_drawer_not_by_seat_number() -> None:
    """D-TR-6.3: with first drawer 2 the order is 2, 3, 0, 1 — seat 3 is ahead of seat 0."""
    s = bidding_first_deal({0: "7H 3S 3S", 3: "7H 3D 3D"}, first_drawer=2)
    _, events = run(s, bid(0, S, "7H 3S 3S"), bid(3, D, "7H 3D 3D"), Pass(1), Pass(2))
    (revealed,) = of_type(events, BidsRevealed)
    assert revealed.winner is not None and revealed.winner.seat == 3


def _after_bid_by_seat_0(extra: dict[int, str] | None = None, first_drawer: int = 0) -> State:
    """First deal: seat 0 (team A) bid 2 spades, everyone else passed; team B may counter."""
    fixed = {0: "7H 3S 3S 3C", 2: "7H 3C 3C 3C"} | (extra or {})
    s = bidding_first_deal(fixed, first_drawer=first_drawer)
    s, _ = run(s, bid(0, S, "7H 3S 3S"), Pass(1), Pass(2), Pass(3))
    assert s.phase is Phase.COUNTER
    return s


def test_a_counter_needs_strictly_more_level_cards() -> None:
    """D-TR-6.4 (多反少): a counter shows c' > c."""
    s = _after_bid_by_seat_0({1: "7H 3H 3H 3H"})
    rejected(s, counter(1, H, "7H 3H 3H"), IllegalAction, "more")
    rejected(s, counter(1, H, "7H 3H"), IllegalAction, "more")
    _, (entered,) = act(s, counter(1, H, "7H 3H 3H 3H"))
    assert isinstance(entered, BidEntered) and entered.bid == Bid(1, H, cards("7H 3H 3H 3H"), 3)


def test_the_bidding_team_cannot_counter() -> None:
    """D-TR-6.4: only the other team counters (对方反牌后，本方不得再反)."""
    s = _after_bid_by_seat_0({1: "7H 3H 3H 3H"})
    rejected(s, counter(2, C, "7H 3C 3C 3C"), NotYourTurn)
    rejected(s, counter(0, S, "7H 3S 3S 3C"), NotYourTurn)  # (3C is not a spade anyway)
    rejected(s, Pass(2), NotYourTurn)
    assert legal_actions(s, 0) == () and legal_actions(s, 2) == ()
    assert waiting(s) == (1, 3)


def test_counters_are_concealed_then_revealed_together_and_the_highest_wins() -> None:
    """D-TR-6.4: each of the other team submits one concealed counter; revealed together; highest wins."""
    s = _after_bid_by_seat_0({1: "7H 3H 3H 3H", 3: "7H 3D 3D 3D 3D"})
    s, (first,) = act(s, counter(1, H, "7H 3H 3H 3H"))
    for seat in (0, 2, 3, None):
        assert redact(first, seat) == BidEntered(1, None, concealed=True)
    assert view(s, 0).counter is None and view(s, 0).acted == (1,)
    rejected(s, counter(1, H, "7H 3H 3H 3H"), NotYourTurn)  # one counter each
    s, events = act(s, counter(3, D, "7H 3D 3D 3D 3D"))
    (revealed,) = of_type(events, CountersRevealed)
    assert revealed.winner == Bid(3, D, cards("7H 3D 3D 3D 3D"), 4)
    assert set(revealed.bids) == {Bid(1, H, cards("7H 3H 3H 3H"), 3), revealed.winner}
    assert redact(revealed, 0) == CountersRevealed(revealed.winner, (revealed.winner,))


@pytest.mark.parametrize(("first_drawer", "winner"), [(0, 1), (1, 1), (2, 3), (3, 3)])
def test_equal_counters_go_to_the_earliest_seat_from_the_first_drawer(first_drawer: int, winner: int) -> None:
    """D-TR-6.4: ties between counters as in D-TR-6.3."""
    s = _after_bid_by_seat_0({1: "7H 3H 3H 3H", 3: "7H 3D 3D 3D"}, first_drawer=first_drawer)
    _, events = run(s, counter(3, D, "7H 3D 3D 3D"), counter(1, H, "7H 3H 3H 3H"))
    (revealed,) = of_type(events, CountersRevealed)
    assert revealed.winner is not None and revealed.winner.seat == winner


def test_at_most_one_counter_stage() -> None:
    """D-TR-6.4: at most one counter — after the counters are revealed the deal is played."""
    s = _after_bid_by_seat_0({1: "7H 3H 3H 3H"})
    s, events = run(s, counter(1, H, "7H 3H 3H 3H"), Pass(3))
    assert of_type(events, TrumpDeclared) and s.phase is Phase.PLAY
    rejected(s, counter(2, C, "7H 3C 3C 3C"), IllegalAction)
    rejected(s, counter(0, S, "7H 3S 3S"), IllegalAction)
    rejected(s, bid(2, C, "7H 3C 3C 3C"), IllegalAction)
    rejected(s, Pass(0), IllegalAction)


def test_first_deal_the_final_bidder_becomes_dealer_and_leads() -> None:
    """D-TR-6.5 (反主反庄), §8: in a first deal the final bidder is the dealer and leads the first trick."""
    s = _after_bid_by_seat_0({1: "7H 3H 3H 3H", 3: "7H 3D 3D 3D 3D"})
    countered, events = run(s, counter(1, H, "7H 3H 3H 3H"), counter(3, D, "7H 3D 3D 3D 3D"))
    assert of_type(events, TrumpDeclared) == [TrumpDeclared(D, 3, 0)]
    assert countered.dealer == 3 and countered.turn == 3 and waiting(countered) == (3,)
    assert countered.counter == Bid(3, D, cards("7H 3D 3D 3D 3D"), 4)
    # no counter: the bidder deals
    kept, events = run(s, Pass(3), Pass(1))
    (revealed,) = of_type(events, CountersRevealed)
    assert revealed.winner is None
    assert of_type(events, TrumpDeclared) == [TrumpDeclared(S, 0, 0)]
    assert kept.dealer == 0 and kept.turn == 0 and kept.phase is Phase.PLAY


def test_later_deal_bids_and_counters_choose_only_the_trump() -> None:
    """D-TR-6.5: later deals — the dealer is fixed (§9); bids and counters only choose the trump suit."""
    # dealer 1 (team B at "7"); seat 0 of team A bids 1, seat 3 of team B counters 2: trump diamonds, dealer 1
    s = bidding_later_deal({0: "7S", 3: "7D 7D"}, dealer=1, levels=(2, 4))
    s, events = run(s, bid(0, S, "7S"), Pass(1), Pass(2), Pass(3), counter(3, D, "7D 7D"), Pass(1))
    assert of_type(events, TrumpDeclared) == [TrumpDeclared(D, 1, 4)]
    assert s.dealer == 1 and s.turn == 1
    # the dealer's own team bids, the other team counters: still dealer 1
    s = bidding_later_deal({3: "7C", 2: "7H 7H"}, dealer=1, levels=(2, 4))
    s, events = run(s, Pass(0), Pass(1), Pass(2), bid(3, C, "7C"), Pass(0), counter(2, H, "7H 7H"))
    assert of_type(events, TrumpDeclared) == [TrumpDeclared(H, 1, 4)]
    assert s.dealer == 1 and s.turn == 1


def test_no_bid_voids_a_first_deal_and_a_redeal_flips_again() -> None:
    """D-TR-6.6: nobody bids — the deal is void; a first deal is dealt again with a new seed and a new flip."""
    s = started(8)
    s, events = run(s, Pass(2), Pass(0), Pass(3), Pass(1))
    assert events[-2:] == (BidsRevealed(None, ()), DealVoided(1))
    assert s.phase is Phase.FLIP and waiting(s) == ()
    for command in (Pass(0), bid(0, S, "3S"), Cut(0, 5, 5), Play(0, s.hands[0][:1]), Timeout(0)):
        rejected(s, command, RuleError)
    old_hands = s.hands
    s, events = act(s, Redeal(12345))
    flip, dealt = events
    assert isinstance(flip, CardFlipped) and isinstance(dealt, HandsDealt)
    assert flip.first_drawer == (flip.flipper + FLIP_VALUE[RANK_OF[flip.card]] - 1) % 4
    assert dealt.first_drawer == flip.first_drawer and dealt.hands != old_hands
    assert s.phase is Phase.BID and s.first_deal and s.flipped == flip.card and s.levels == (0, 0)
    assert waiting(s) == (0, 1, 2, 3)
    rejected(s, Redeal(1), IllegalAction)


def test_no_bid_voids_a_later_deal_and_the_dealer_cuts_again() -> None:
    """D-TR-6.6: a void later deal is dealt again: back to the dealer's cut; dealer and levels unchanged."""
    s = at_cut()
    dealer, levels = s.turn, s.levels
    assert dealer is not None
    s, _ = act(s, Cut(dealer, 40, 77))
    number = s.deal
    s, events = run(s, Pass(0), Pass(1), Pass(2), Pass(3))
    assert isinstance(events[-1], DealVoided)
    assert s.phase is Phase.CUT and waiting(s) == (dealer,) and s.levels == levels
    rejected(s, Redeal(5), IllegalAction)
    s, (dealt,) = act(s, Cut(dealer, 41, 78))
    assert isinstance(dealt, HandsDealt) and dealt.first_drawer == dealer and s.dealer == dealer
    assert dealt.deal == number, "the void deal is dealt again under the same number"


# --- §4-§6 playing through decide ---------------------------------------------------------------------

FOLLOW_CASES = [
    # (hands, lead, follower's play, legal?) — trump spades, level 3, dealer/leader 0
    (("AH AH 4D 4D", "KH QH QH 4C", "9C 9C 8C 8C", "6D 6D 7D 7D"), "AH AH", "KH QH", False),  # breaks the pair
    (("AH AH 4D 4D", "KH QH QH 4C", "9C 9C 8C 8C", "6D 6D 7D 7D"), "AH AH", "QH QH", True),
    (("AH 4D 4D 5D", "KH 4C 5C 6C", "9C 9C 8C 8C", "6D 6D 7D 7D"), "AH", "4C", False),  # holds a heart
    (("AH 4D 4D 5D", "KH 4C 5C 6C", "9C 9C 8C 8C", "6D 6D 7D 7D"), "AH", "KH", True),
    (("AH AH 4D 5D", "KH 4C 5C 6C", "9C 9C 8C 8C", "6D 6D 7D 7D"), "AH AH", "4C 5C", False),  # all of a short suit
    (("AH AH 4D 5D", "KH 4C 5C 6C", "9C 9C 8C 8C", "6D 6D 7D 7D"), "AH AH", "KH 6C", True),
    (("AH AH 4D 5D", "4C 5C 6C 4S", "9C 9C 8C 8C", "6D 6D 7D 7D"), "AH AH", "4C 4S", True),  # void: anything
    (("5H 5H 6H 6H", "8H 8H 9H 9H 10H", "9C 9C 8C 8C 4C", "6D 6D 7D 7D 4D"), "5H 5H 6H 6H", "8H 8H 9H 10H", False),
    (("5H 5H 6H 6H", "8H 8H 9H 9H 10H", "9C 9C 8C 8C 4C", "6D 6D 7D 7D 4D"), "5H 5H 6H 6H", "8H 8H 9H 9H", True),
    (("AH AH 4D 4D", "KH QH QH 4C", "9C 9C 8C 8C", "6D 6D 7D 7D"), "AH AH", "QH", False),  # wrong count
]


@pytest.mark.parametrize(("hands", "lead", "play", "legal"), FOLLOW_CASES)
def test_decide_accepts_a_follow_exactly_when_check_follow_does(
    hands: tuple[str, str, str, str], lead: str, play: str, legal: bool
) -> None:
    """§5, §6: ``decide`` rejects what `check_follow` rejects, with its reason, leaving the state unchanged."""
    size = max(len(cards(h)) for h in hands)
    padded = tuple(h + " 4D" * (size - len(cards(h))) for h in hands)
    s, _ = act(playing(padded), Play(0, cards(lead)))  # type: ignore[arg-type]
    assert s.trick is not None
    try:
        check_follow(s.trick.lead, s.hands[1], cards(play), trumps(s))
        verdict = True
    except RuleError:
        verdict = False
    assert verdict is legal
    if legal:
        after, events = act(s, Play(1, cards(play)))
        assert events == (CardsPlayed(1, cards(play)),)
        assert after.turn == 2
    else:
        with pytest.raises(RuleError) as expected:
            check_follow(s.trick.lead, s.hands[1], cards(play), trumps(s))
        error = rejected(s, Play(1, cards(play)), IllegalAction)
        assert error.reason == expected.value.reason


def test_the_trick_winner_leads_the_next_trick_and_attackers_score_their_tricks() -> None:
    """§5, §9: the highest card of the led suit wins; the winner leads next; attackers score trick points."""
    # dealer 0 (team A defends), attackers seats 1, 3
    s = playing(("KH 4D 6C", "AH 4D 6C", "10H 4D 6C", "5H 4D 6C"))
    s, events = run(s, Play(0, cards("KH")), Play(1, cards("AH")), Play(2, cards("10H")), Play(3, cards("5H")))
    assert of_type(events, TrickWon) == [TrickWon(1, 25, 25)]
    assert s.turn == 1 and waiting(s) == (1,) and s.attackers_points == 25
    rejected(s, Play(0, cards("4D")), NotYourTurn)
    # equal cards: the one played first wins (三个花先出为大)
    s, events = run(s, Play(1, cards("6C")), Play(2, cards("6C")), Play(3, cards("6C")), Play(0, cards("6C")))
    assert of_type(events, TrickWon) == [TrickWon(1, 0, 0)]


def test_a_trick_won_by_the_defenders_credits_the_attackers_nothing() -> None:
    """§9: the attackers score only the tricks they win."""
    s = playing(("KH 4D", "5H 4D", "AH 4D", "10H 4D"))
    s, events = run(s, Play(0, cards("KH")), Play(1, cards("5H")), Play(2, cards("AH")), Play(3, cards("10H")))
    assert of_type(events, TrickWon) == [TrickWon(2, 25, 0)]
    assert s.attackers_points == 0 and s.turn == 2


def test_a_void_follower_trumps_and_equal_trumps_go_to_the_first_played() -> None:
    """§3, §5 (将吃): all-trump plays from void seats contend; off-suit level cards are equal, first wins."""
    # trump spades, level 3: 3C and 3D are equal trumps above 4S
    s = playing(("AH 4D", "4S 4D", "KH 4D", "3C 4D"))
    _, events = run(s, Play(0, cards("AH")), Play(1, cards("4S")), Play(2, cards("KH")), Play(3, cards("3C")))
    assert of_type(events, TrickWon) == [TrickWon(3, 10, 10)]
    s = playing(("3H 4D", "3C 4D", "4S 4D", "3D 4D"))
    _, events = run(s, Play(0, cards("3H")), Play(1, cards("3C")), Play(2, cards("4S")), Play(3, cards("3D")))
    assert of_type(events, TrickWon) == [TrickWon(0, 0, 0)]


def test_last_trick_won_by_the_attackers_counts_times_the_cards_per_player() -> None:
    """D-TR-7 (抠): attackers who win the last trick score its points × n (n = 2 here)."""
    s = playing(("KH KH", "AH AH", "10H 5H", "4H 4H"), attackers_points=130)
    s, events = run(s, Play(0, cards("KH KH")), Play(1, cards("AH AH")), Play(2, cards("10H 5H")))
    s, events = act(s, Play(3, cards("4H 4H")))
    won, settled = events[1], events[2]
    assert won == TrickWon(1, 35, 70)
    # 130 + 70 = 200: defenders +1 (连庄); the dealer's partner deals next (D-TR-8)
    assert settled == DealSettled(200, "defenders", 1, 2, (1, 0))
    assert s.phase is Phase.CUT and waiting(s) == (2,)


def test_last_trick_won_by_the_defenders_gives_the_attackers_nothing() -> None:
    """D-TR-7: when the defenders win the last trick the attackers get nothing from it."""
    s = playing(("AH AH", "KH KH", "10H 5H", "4H 4H"), attackers_points=130)
    s, _ = run(s, Play(0, cards("AH AH")), Play(1, cards("KH KH")), Play(2, cards("10H 5H")))
    _, events = act(s, Play(3, cards("4H 4H")))
    assert events[1] == TrickWon(0, 35, 0)
    # 130: defenders +2
    assert events[2] == DealSettled(130, "defenders", 2, 2, (2, 0))


# --- §9 settlement --------------------------------------------------------------------------------------

POINTS = {Rank.FIVE: 5, Rank.TEN: 10, Rank.KING: 10}


def table(score: int) -> tuple[str, int]:
    """§9's table, written out."""
    if score >= 240:
        return "attackers", (score - 240) // 60
    for low, gain in ((180, 1), (120, 2), (60, 3), (1, 4)):
        if score >= low:
            return "defenders", gain
    return "defenders", 5 + (-score) // 60


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_a_played_deal_settles_by_the_table(seed: int) -> None:
    """§9, D-TR-7, D-TR-8, D-TR-1: a whole deal played by random bots settles by the table."""
    s = through_bidding(started(seed))
    assert s.dealer is not None
    dealer = s.dealer
    attackers = 1 - dealer % 2
    bots = [RandomBot(seed * 10 + i) for i in range(4)]
    score = 0
    settled: DealSettled | None = None
    while settled is None:
        seat = waiting(s)[0]
        assert s.trick is None or seat == (s.trick.leader + len(s.trick.plays)) % 4
        command = bots[seat].choose(s, seat)
        before = s
        s, events = act(s, command)
        for e in events:
            if isinstance(e, TrickWon):
                assert before.trick is not None
                plays = (*before.trick.plays, command.cards)  # type: ignore[union-attr]
                raw = sum(POINTS.get(RANK_OF[c], 0) for p in plays for c in p)
                assert e.points == raw
                last = not s.hands[0]
                n = len(plays[0])
                mine = raw * (n if last else 1) if e.winner % 2 == attackers else 0
                assert e.credited == mine
                score += mine
            if isinstance(e, DealSettled):
                settled = e
    assert sum(len(t.plays[0]) for t in s.tricks) == 81
    side, gain = table(score)
    assert settled.attackers_points == score and (settled.winner, settled.levels_up) == (side, gain)
    expected = [0, 0]
    expected[attackers if side == "attackers" else 1 - attackers] = min(gain, 11)
    assert settled.levels == tuple(expected)
    assert settled.next_dealer == ((dealer + 2) % 4 if side == "defenders" else (dealer + 1) % 4)


def test_the_dealer_team_at_a_holding_the_deal_goes_past_a_and_wins_the_game() -> None:
    """D-TR-1, §2: a team at A that holds the deal as dealer team goes past A and wins the game."""
    s = playing(("4H", "6H", "7H", "8H"), dealer=0, levels=(11, 5), attackers_points=100)
    s, events = run(s, Play(0, cards("4H")), Play(1, cards("6H")), Play(2, cards("7H")), Play(3, cards("8H")))
    assert events[-2:] == (DealSettled(100, "defenders", 3, 2, (12, 5)), GameEnded(0, (12, 5)))
    assert s.phase is Phase.ENDED and waiting(s) == ()
    for command in (Cut(2, 5, 5), Pass(1), ClockTick(10**6), Penalize("ref", 1, 1), StartGame(3)):
        rejected(s, command, RuleError)


def test_gains_stop_at_a() -> None:
    """D-TR-1: a level never skips A — attackers stop at A however many levels they win; so do defenders
    that were below A."""
    s = playing(("4H", "8H", "9H", "JH"), dealer=0, levels=(3, 10), attackers_points=450)
    s, events = run(s, Play(0, cards("4H")), Play(1, cards("8H")), Play(2, cards("9H")), Play(3, cards("JH")))
    assert events[-1] == DealSettled(450, "attackers", 3, 1, (3, 11))
    assert s.phase is Phase.CUT and waiting(s) == (1,)
    s = playing(("4H", "8H", "6H", "7H"), dealer=2, levels=(10, 0), attackers_points=0)
    s, events = run(s, Play(2, cards("6H")), Play(3, cards("7H")), Play(0, cards("4H")), Play(1, cards("8H")))
    assert events[-1] == DealSettled(0, "defenders", 5, 0, (11, 0))
    assert s.phase is Phase.CUT


# --- §11 referee actions ------------------------------------------------------------------------------


@pytest.mark.parametrize(("offender", "points"), [(0, 30), (2, 30), (1, -30), (3, -30)])
def test_penalize_counts_ten_a_card_in_the_non_offending_teams_favour(offender: int, points: int) -> None:
    """§11 (出错牌): ±10 a card on the attackers' score in the other team's favour, recorded with the referee."""
    s = playing(("4H 4D", "5H 4D", "6H 4D", "7H 4D"), dealer=0)
    after, events = act(s, Penalize("referee-7", offender, 3))
    assert events == (PenaltyRecorded("referee-7", offender, points),)
    assert after.penalty_points == points and after.attackers_points == 0


@pytest.mark.parametrize(
    ("offender", "cards_", "before", "score", "result"),
    [
        (2, 3, 220, 250, ("attackers", 0, 1, (0, 0))),  # a defender erred: +30 lifts 220 over 240
        (1, 7, 0, -70, ("defenders", 6, 2, (6, 0))),  # an attacker erred: 0 − 70 → +5 + 1
    ],
)
def test_penalties_count_in_the_settlement(
    offender: int, cards_: int, before: int, score: int, result: tuple[str, int, int, tuple[int, int]]
) -> None:
    """§9: penalty points are added to the attackers' score, which can go below 0."""
    s = playing(("4H", "6H", "7H", "8H"), dealer=0, attackers_points=before)
    s, _ = act(s, Penalize("ref", offender, cards_))
    _, events = run(s, Play(0, cards("4H")), Play(1, cards("6H")), Play(2, cards("7H")), Play(3, cards("8H")))
    winner, gain, next_dealer, levels = result
    assert events[-1] == DealSettled(score, winner, gain, next_dealer, levels)


def test_penalize_needs_a_referee_a_seat_a_card_and_a_deal_in_play() -> None:
    """§11: referee actions are recorded with the referee's identity, during play."""
    s = playing(("4H 4D", "5H 4D", "6H 4D", "7H 4D"))
    rejected(s, Penalize("", 1, 1), RuleError, "referee")
    rejected(s, Penalize("ref", 4, 1), RuleError, "seat")
    rejected(s, Penalize("ref", 1, 0), RuleError)
    rejected(started(), Penalize("ref", 1, 1), IllegalAction)
    rejected(started(), DeclareLabourReform("ref", 1), IllegalAction)


@pytest.mark.parametrize(
    ("offender", "choice", "expected"),
    [
        # dealer 0 (team A at index 1 defends), team B at index 2 attacks with 170 points so far
        (1, LabourReform.LEVELS, DealSettled(170, "defenders", 2, 2, (3, 2))),  # A +2, holds
        (3, LabourReform.POINTS, DealSettled(90, "defenders", 3, 2, (4, 2))),  # 170 − 80 = 90: +3
        (2, LabourReform.LEVELS, DealSettled(170, "attackers", 2, 1, (1, 4))),  # B +2, takes the deal
        (0, LabourReform.POINTS, DealSettled(250, "attackers", 0, 1, (1, 2))),  # 170 + 80 = 250
    ],
)
def test_labour_reform_ends_the_deal_and_the_non_offending_team_chooses(
    offender: int, choice: LabourReform, expected: DealSettled
) -> None:
    """§11 (劳改): the deal ends at once; the non-offending team chooses +2 levels or ±80 points."""
    s = playing(("4H 4D", "5H 4D", "6H 4D", "7H 4D"), dealer=0, levels=(1, 2), attackers_points=170)
    s, events = act(s, DeclareLabourReform("referee-3", offender))
    assert events == (LabourReformDeclared("referee-3", offender, offender % 2),)
    assert s.phase is Phase.REFORM
    rejected(s, Play(0, cards("4H")), IllegalAction)
    rejected(s, Penalize("ref", 1, 1), IllegalAction)
    for seat in (offender % 2, offender % 2 + 2):
        rejected(s, ChooseLabourReform(seat, choice), NotYourTurn, "non-offending")
    chooser = 1 - offender % 2
    s, events = act(s, ChooseLabourReform(chooser, choice))
    assert events == (LabourReformChosen(chooser, choice), expected)
    assert s.phase is Phase.CUT and waiting(s) == (expected.next_dealer,)


def test_labour_reform_waits_for_the_non_offending_team() -> None:
    """§11: after 劳改 is declared the non-offending team may act (choose), and the offending team may not:
    ``waiting`` and ``legal_actions`` say so, like every other decision a seat makes (docs/architecture.md,
    "Deterministic rules cores")."""
    s = playing(("4H 4D", "5H 4D", "6H 4D", "7H 4D"), dealer=0)
    s, _ = act(s, DeclareLabourReform("ref", 1))
    assert legal_actions(s, 1) == () and legal_actions(s, 3) == ()
    assert set(waiting(s)) == {0, 2}
    for seat in (0, 2):
        assert set(legal_actions(s, seat)) == {
            ChooseLabourReform(seat, LabourReform.LEVELS),
            ChooseLabourReform(seat, LabourReform.POINTS),
        }


# --- §11 turn timer -------------------------------------------------------------------------------------

TIMED = Options(turn_seconds=10)


def test_a_timeout_needs_the_turn_timer() -> None:
    """§11: turn_seconds 0 (the default) is no timer: no turn can time out."""
    rejected(started(), Timeout(0), IllegalAction, "turn_seconds")
    rejected(playing(("4H", "5H", "6H", "7H")), Timeout(0), IllegalAction)


def test_an_expired_bidding_turn_passes() -> None:
    """§11, D-TR-6.2: an expired bidding turn is a pass; only a seat that has not acted can time out.

    The timeout is recorded inside the concealed entry: the other seats learn only that seat 2 acted.
    """
    s = started(options=TIMED)
    s, events = act(s, Timeout(2))
    assert events == (BidEntered(2, None, timed_out=True),)
    assert redact(events[0], 0) == BidEntered(2, None, concealed=True)
    rejected(s, Timeout(2), NotYourTurn)
    assert waiting(s) == (0, 1, 3)


def test_an_expired_lead_plays_the_lowest_single() -> None:
    """§11: an expired lead plays the lowest single (trump spades, level 3: plain 4H is the lowest card)."""
    s = playing(("AS 6D 5C 4H 3H SJ", "4D " * 6, "4D " * 6, "4D " * 6), options=TIMED)
    _, events = act(s, Timeout(0))
    assert events == (TurnTimedOut(0), CardsPlayed(0, cards("4H")))
    # only trumps: the 4 of the trump suit is the lowest trump (§3)
    s = playing(("AS 2H 3H 4S SJ 2S", "4D " * 6, "4D " * 6, "4D " * 6), options=TIMED)
    _, events = act(s, Timeout(0))
    assert events == (TurnTimedOut(0), CardsPlayed(0, cards("4S")))
    rejected(s, Timeout(1), NotYourTurn)


@pytest.mark.parametrize(
    ("follower", "expected"),
    [
        ("AH 9H 4H 3S 2C", "4H"),  # must follow hearts: the lowest heart
        ("AS 9C 4D 5S 2C", "4D"),  # void in hearts, trump spades: the lowest card is the plain 4D
        ("9D 4C 5S 3D 2C", "4C"),  # void: plain 4C is lower than plain 9D, whatever the suit
    ],
)
def test_an_expired_follow_plays_the_lowest_legal_follow(follower: str, expected: str) -> None:
    """§11: an expired follow plays the lowest legal follow (lowest by §3: plain below trump, then by rank)."""
    s = playing(("KH 6H 6H 6H 6H", follower, "8H 8H 8H 8H 8H", "7H 7H 7H 7H 7H"), options=TIMED)
    s, _ = act(s, Play(0, cards("KH")))
    _, events = act(s, Timeout(1))
    assert events == (TurnTimedOut(1), CardsPlayed(1, cards(expected)))


@pytest.mark.parametrize(
    ("follower", "expected"),
    [
        ("AH AH 4H 4H 9H", "4H 4H"),  # must follow the pair: the lowest pair
        ("AH 9H 4H 3S 2C", "4H 9H"),  # no pair of hearts: the two lowest hearts
        ("AH 3S 4C 9D 2C", "AH 4C"),  # one heart: it, and the lowest other card
        ("9D 4C 5S 3D 2C", "4C 9D"),  # void: the two lowest cards, plain before trump
    ],
)
def test_an_expired_pair_follow_plays_the_lowest_legal_follow(follower: str, expected: str) -> None:
    """§11, §6: the lowest legal follow of a pair lead (trump spades, level 3)."""
    s = playing(("KH KH 6H 6H 6H", follower, "8H 8H 8H 8H 8H", "7H 7H 7H 7H 7H"), options=TIMED)
    s, _ = act(s, Play(0, cards("KH KH")))
    _, events = act(s, Timeout(1))
    assert events == (TurnTimedOut(1), CardsPlayed(1, cards(expected)))


def test_an_expired_cut_is_a_seeded_cut_by_the_dealer() -> None:
    """§8, §11: an expired cut is the seeded default cut (1..323 cards) by the dealer."""
    s = at_cut(options=TIMED)
    dealer = s.turn
    assert dealer is not None
    counts = set()
    for seed in range(12):
        events = decide(s, Timeout(dealer, seed))
        assert events == decide(s, Timeout(dealer, seed)), "seeded"
        timed_out, dealt = events
        assert timed_out == TurnTimedOut(dealer)
        assert isinstance(dealt, HandsDealt) and dealt.first_drawer == dealer and dealt.seed == seed
        assert dealt.cut is not None and 1 <= dealt.cut <= 323
        counts.add(dealt.cut)
    assert len(counts) > 1
    rejected(s, Timeout((dealer + 1) % 4, 3), NotYourTurn)


# --- D-TR-9 timed rounds --------------------------------------------------------------------------------


def test_a_timed_round_announces_two_more_deals_once_25_minutes_before_the_end() -> None:
    """D-TR-9: with round_minutes R, at R − 25 minutes after the recorded start the table plays 2 more deals."""
    t0 = 5_000
    s = through_bidding(started(4, Options(round_minutes=90), at=t0))
    assert decide(s, ClockTick(t0 + 65 * 60 - 1)) == ()
    s, events = act(s, ClockTick(t0 + 65 * 60))
    assert events == (TwoMoreDeals(t0 + 65 * 60),)
    assert decide(s, ClockTick(t0 + 66 * 60)) == ()
    assert decide(s, ClockTick(t0 + 200 * 60)) == ()
    rejected(through_bidding(started(4)), ClockTick(10**7), IllegalAction, "untimed")
    rejected(State(), ClockTick(10), RuleError)


@pytest.mark.parametrize(
    ("second_offender", "winner", "levels"),
    [(1, 0, (4, 0)), (0, None, (2, 2))],
)
def test_a_timed_round_ends_after_two_more_settled_deals_and_levels_decide(
    second_offender: int, winner: int | None, levels: tuple[int, int]
) -> None:
    """D-TR-9: after the announcement the game ends when two more deals have settled; higher level wins."""
    t0 = 100
    s = through_bidding(started(6, Options(round_minutes=30), at=t0))
    s, (announced,) = act(s, ClockTick(t0 + 5 * 60))
    assert announced == TwoMoreDeals(t0 + 5 * 60)
    # deal 1: 劳改 against team B, team A takes +2 levels
    s, _ = act(s, DeclareLabourReform("ref", 1))
    s, events = act(s, ChooseLabourReform(0, LabourReform.LEVELS))
    assert not of_type(events, GameEnded) and s.phase is Phase.CUT and s.levels == (2, 0)
    # deal 2
    s = through_bidding(s)
    s, _ = act(s, DeclareLabourReform("ref", second_offender))
    s, events = act(s, ChooseLabourReform(1 - second_offender, LabourReform.LEVELS))
    assert isinstance(events[-1], GameEnded) and events[-1] == GameEnded(winner, levels)
    assert s.phase is Phase.ENDED


# --- bad input --------------------------------------------------------------------------------------------


def _lead_state() -> State:
    return playing(("AH KH 4H 4H 6H 6H 7H 8H", "AD AD 9H 9H 4C 5C 6C 7C", "9C 9C 8C 8C 4D 5D 6D 7D", "2D " * 8))


def _follow_state() -> State:
    s, _ = act(_lead_state(), Play(0, cards("4H 4H")))
    return s


def _bid_state() -> State:
    return bidding_first_deal({0: "7H 3S 3S", 1: "7H 3H"})


def _counter_state() -> State:
    return _after_bid_by_seat_0({1: "7H 3H 3H 3H"})


def _level_8_lead() -> State:
    # dealer 0, team A at index 5 = "8": 7799 is not a tractor (the level rank breaks the run)
    return playing(("7H 7H 9H 9H", "4D 4D 4D 4D", "5D 5D 5D 5D", "6D 6D 6D 6D"), levels=(5, 0))


BAD_INPUT: list[tuple[str, Callable[[], State], object, type[RuleError], str]] = [
    ("a throw", _lead_state, Play(0, cards("AH KH")), IllegalAction, "throw"),
    ("a throw across suits", _lead_state, Play(0, cards("AH 4C")), IllegalAction, ""),
    ("a broken tractor (gap)", _lead_state, Play(0, cards("4H 4H 6H 6H")), IllegalAction, "consecutive"),
    ("a broken tractor (level rank)", _level_8_lead, Play(0, cards("7H 7H 9H 9H")), IllegalAction, "consecutive"),
    ("a tractor with unequal units", _lead_state, Play(0, cards("6H 6H 7H")), IllegalAction, ""),
    ("an empty play", _lead_state, Play(0, ()), IllegalAction, "card"),
    ("a wrong count", _follow_state, Play(1, cards("9H 9H 4C")), IllegalAction, "play 2"),
    ("cards not held", _lead_state, Play(0, cards("BJ")), IllegalAction, "does not hold"),
    ("too many copies", _lead_state, Play(0, cards("AH AH")), IllegalAction, "does not hold"),
    ("not card ids", _lead_state, Play(0, (99,)), RuleError, "card"),  # type: ignore[arg-type]
    ("a seat that does not exist", _lead_state, Play(4, cards("AH")), RuleError, "seat"),
    ("a bid of cards not held", _bid_state, bid(0, S, "7H 3S 3S 3S"), IllegalAction, "does not hold"),
    ("a bid of another seat's cards", _bid_state, bid(0, H, "7H 3H"), IllegalAction, "does not hold"),
    ("a second bid", lambda: act(_bid_state(), Pass(0))[0], bid(0, S, "7H 3S"), NotYourTurn, "already"),
    ("a counter by the bidding team", _counter_state, counter(2, S, "7H 3S"), NotYourTurn, "other team"),
    ("a counter with too few cards", _counter_state, counter(1, H, "7H 3H"), IllegalAction, "more"),
    ("a play out of turn", _lead_state, Play(1, cards("AD")), NotYourTurn, "turn"),
    ("a follow out of turn", _follow_state, Play(2, cards("4D 5D")), NotYourTurn, "turn"),
    ("a play in bidding", _bid_state, Play(0, cards("3S")), IllegalAction, "bid"),
    ("a bid in play", _lead_state, bid(0, H, "AH"), IllegalAction, "play"),
    ("a counter in bidding", _bid_state, counter(0, S, "7H 3S"), IllegalAction, "counter"),
    ("a bid while countering", _counter_state, bid(1, H, "7H 3H 3H 3H"), IllegalAction, "bid"),
    ("a pass in play", _lead_state, Pass(0), IllegalAction, "pass"),
    ("a cut in bidding", _bid_state, Cut(0, 5, 5), IllegalAction, "cut"),
    ("a cut in play", _lead_state, Cut(0, 5, 5), IllegalAction, "cut"),
    ("a redeal in play", _lead_state, Redeal(5), IllegalAction, ""),
    ("a second start", _bid_state, StartGame(5), IllegalAction, "started"),
    ("a choice without 劳改", _lead_state, ChooseLabourReform(1, LabourReform.LEVELS), IllegalAction, "劳改"),
    ("a penalty in bidding", _bid_state, Penalize("ref", 1, 1), IllegalAction, ""),
    ("a play before the game", State, Play(0, cards("AH")), RuleError, ""),
    ("a bid before the game", State, bid(0, S, "3S"), RuleError, ""),
]


@pytest.mark.parametrize(
    ("make", "command", "error", "fragment"),
    [case[1:] for case in BAD_INPUT],
    ids=[case[0] for case in BAD_INPUT],
)
def test_bad_input_is_rejected_with_a_reason_and_changes_nothing(
    make: Callable[[], State], command: object, error: type[RuleError], fragment: str
) -> None:
    """§4 (八 不得甩牌), §6, D-TR-6, §11: each bad command raises a `RuleError` with a reason; the state is kept."""
    rejected(make(), command, error, fragment)


def test_level_rank_breaks_a_run_but_a_real_tractor_leads() -> None:
    """§4 (不能隔张): with L = 8, 7799 is not a tractor; 6677 is."""
    s = playing(("6H 6H 7H 7H", "4D 4D 4D 4D", "5D 5D 5D 5D", "6D 6D 6D 6D"), levels=(5, 0))
    _, events = act(s, Play(0, cards("6H 6H 7H 7H")))
    assert events == (CardsPlayed(0, cards("6H 6H 7H 7H")),)
