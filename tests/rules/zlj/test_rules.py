"""砸六家 rules, one test (or more) per section of docs/rules/zalioujia.md and per decision D-ZLJ-n.

Every expected value here is derived by hand from the rules (docs/rules/zalioujia.md) and the Chinese
source text they restate, never copied from engine output. Positions are
built either from `StartMatch` or directly as a `State` (like `paiju.scenario.zlj.start_state`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import pytest

from paiju.rules.cards import Cards, full_decks, parse_cards
from paiju.rules.errors import IllegalAction, NotYourTurn, RuleError
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import (
    Cut,
    EndMatch,
    Options,
    Outcome,
    Pass,
    Phase,
    PickTribute,
    Play,
    ReturnTribute,
    StartMatch,
    State,
    TakeBack,
    Team,
    Timeout,
    conserved,
    decide,
    default_action,
    legal_actions,
    redact,
    replay,
    view,
)
from paiju.rules.zlj.combos import LEVEL_OF, Kind, beats, classify, is_four_take
from paiju.rules.zlj.dealing import TRIBUTE_STREAM, shuffled_deck, stream
from paiju.rules.zlj.model import (
    CardsPlayed,
    DealEnded,
    Event,
    FourTake,
    HandsDealt,
    MatchEnded,
    MatchStarted,
    Passed,
    PlayStarted,
    Resist,
    ReturnTakenBack,
    ReverseTribute,
    RockPaperScissors,
    RoundWon,
    TributeGiven,
    TributeOrdered,
    TributePicked,
    TributeResisted,
    TributeReturned,
    TurnTimedOut,
    WentOut,
    next_seat,
    team_of,
)
from paiju.rules.zlj.outcome import deal_result, match_score, match_totals
from paiju.rules.zlj.tribute import start_tribute

SPADE_ACE = parse_cards("AS")[0]
TIMER = Options(turn_seconds=30)
DEFAULTS = Options()

# --- helpers -----------------------------------------------------------------------------------------


def C(text: str) -> Cards:
    return parse_cards(text)


def ranks(cards: Iterable[int]) -> list[int]:
    """Cards as 砸六家 levels (suits never matter, §1), sorted."""
    return sorted(LEVEL_OF[c] for c in cards)


def same(cards: Iterable[int], text: str) -> bool:
    """Same cards as ``text`` up to suits."""
    return ranks(cards) == ranks(C(text))


def hands_from(hands: dict[int, str]) -> tuple[Cards, ...]:
    return tuple(C(hands.get(s, "")) for s in range(6))


def position(hands: dict[int, str], leader: int, out: Sequence[int] = (), options: Options = DEFAULTS) -> State:
    """A play position (phase play, leader to lead), as a scenario's ``start`` builds it."""
    hs = hands_from(hands)
    return State(
        options=options,
        phase=Phase.PLAY,
        deal=1,
        hands=hs,
        turn=leader,
        leader=leader,
        out=tuple(out),
        dealt=tuple(sorted(c for h in hs for c in h)),
    )


def apply(state: State, *commands: object) -> tuple[State, list[Event]]:
    """Decide and apply each command in turn; return the final state and every event."""
    events: list[Event] = []
    for command in commands:
        new = decide(state, command)  # type: ignore[arg-type]
        events.extend(new)
        state = replay(new, state)
    return state, events


def P(seat: int, cards: str) -> Play:
    return Play(seat, C(cards))


def X(seat: int) -> Pass:
    return Pass(seat)


def tribute_position(
    order: tuple[int, ...], hands: dict[int, str], options: Options = DEFAULTS, seed: int = 0
) -> tuple[State, list[Event]]:
    """The start of a deal after a previous deal finished in ``order``, with these new hands (§10-§12)."""
    result = deal_result(1, order)
    hs = hands_from(hands)
    state = State(
        options=options,
        phase=Phase.CUT,
        deal=2,
        hands=hs,
        dealt=tuple(sorted(c for h in hs for c in h)),
        previous=result,
        results=(result,),
    )
    events = start_tribute(result, hs, options, stream(seed, TRIBUTE_STREAM))
    return replay(events, state), events


def of_type(events: Iterable[Event], kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, kind)]


def rps_winner(a: int, b: int) -> int | None:
    """Rock 0, paper 1, scissors 2: paper wraps rock, scissors cut paper, rock breaks scissors."""
    if a == b:
        return None
    wins = {(1, 0), (2, 1), (0, 2)}
    return a if (a, b) in wins else b


def check_two_player_rps(event: RockPaperScissors, seats: set[int]) -> int:
    """Check a recorded two-seat game (D-ZLJ-8) by hand and return its winner."""
    assert event.rounds, "at least one round is recorded"
    for i, rnd in enumerate(event.rounds):
        assert {s for s, _ in rnd} == seats, "each round records both throws"
        (s1, t1), (s2, t2) = rnd
        assert all(t in (0, 1, 2) for t in (t1, t2))
        win = rps_winner(t1, t2)
        if i < len(event.rounds) - 1:
            assert win is None, "only a tied round is repeated"
        else:
            assert win is not None, "the last round has a winner"
            winner = s1 if win == t1 else s2
    assert event.order[0] == winner
    assert set(event.order) == seats
    return winner


def start(seed: int, options: Options = DEFAULTS) -> tuple[State, tuple[Event, ...]]:
    events = decide(State(), StartMatch(seed, options))
    return replay(events), events


def spade_ace_holders(hands: Sequence[Cards]) -> list[int]:
    return [s for s in range(6) for c in hands[s] if c == SPADE_ACE]


def random_step(state: State, rng: SeededRandom) -> object:
    """A random legal command for the seat on turn (cuts with a random count and seed)."""
    seat = state.turn
    assert seat is not None
    if state.phase is Phase.CUT:
        return Cut(seat, 1 + rng.below(107), rng.next64())
    actions = legal_actions(state, seat)
    assert actions, f"seat {seat} on turn has no legal action in {state.phase}"
    return actions[rng.below(len(actions))]


def play_until(state: State, rng: SeededRandom, stop: Iterable[Phase], log: list[Event] | None = None) -> State:
    stops = set(stop)
    for _ in range(5000):
        if state.phase in stops:
            return state
        events = decide(state, random_step(state, rng))  # type: ignore[arg-type]
        if log is not None:
            log.extend(events)
        state = replay(events, state)
    raise AssertionError("the game did not reach the expected phase")


# === §1 Table, cards, teams ==========================================================================


def test_s1_teams_alternate() -> None:
    assert Team.A.seats == (0, 2, 4)
    assert Team.B.seats == (1, 3, 5)
    for s in range(6):
        assert team_of(s) is (Team.A if s in (0, 2, 4) else Team.B)
        assert team_of(s) is not team_of((s + 1) % 6), "adjacent seats are opponents"


def test_s1_next_seat_and_play_order() -> None:
    assert [next_seat(s) for s in range(6)] == [1, 2, 3, 4, 5, 0]
    state = position(dict.fromkeys(range(6), "5S 9S"), leader=5)
    state, _ = apply(state, P(5, "5S"))
    assert state.turn == 0, "play goes 5 -> 0"


def test_s1_two_decks_eighteen_cards_each() -> None:
    state, _ = start(1)
    assert [len(h) for h in state.hands] == [18] * 6
    assert sorted(c for h in state.hands for c in h) == sorted(full_decks(2))
    assert len(state.dealt) == 108


def test_s1_hand_is_a_multiset_and_suits_do_not_matter_in_play() -> None:
    # identical copies: the two KS of two decks are the same card and form a pair
    assert classify(C("KS KS")).kind is Kind.PAIR
    # suits never matter: a 5 of another suit does not beat a 5
    state = position({0: "5S 9S", 1: "5H 9H", 2: "6D 9D", 3: "9C", 4: "9C", 5: "8C"}, leader=0)
    state, _ = apply(state, P(0, "5S"))
    with pytest.raises(IllegalAction):
        decide(state, P(1, "5H"))
    state, _ = apply(state, P(1, "9H"))
    # any suit of the right rank is the same choice
    state, _ = apply(state, X(2), X(3), X(4), X(5), X(0))
    assert state.turn == 1


# === §2 Card order ===================================================================================

ORDER = ["4S", "5S", "6S", "7S", "8S", "9S", "TS", "JS", "QS", "KS", "AS", "2S", "3S", "SJ", "BJ"]


def test_s2_card_order() -> None:
    singles = [classify(C(name)) for name in ORDER]
    for i, low in enumerate(singles):
        for j, high in enumerate(singles):
            assert beats(high, low) is (j > i), f"{ORDER[j]} vs {ORDER[i]}"


def test_s2_card_order_in_play_two_and_three_are_high() -> None:
    state = position({0: "2S 9S", 1: "AS 3H 9H", 2: "9D", 3: "9C", 4: "9C", 5: "9D"}, leader=0)
    state, _ = apply(state, P(0, "2S"))
    with pytest.raises(IllegalAction):
        decide(state, P(1, "AS"))  # A is below 2
    state, _ = apply(state, P(1, "3H"))  # 3 is above 2
    assert state.current_by == 1


# === §3 Combinations ================================================================================


@pytest.mark.parametrize("card", ORDER)
def test_s3_single_any_card_jokers_included(card: str) -> None:
    combo = classify(C(card))
    assert combo.kind is Kind.SINGLE and combo.size == 1


@pytest.mark.parametrize("rank", ["4", "5", "T", "K", "A", "2", "3"])
def test_s3_pair_of_one_rank(rank: str) -> None:
    assert classify(C(f"{rank}S {rank}D")).kind is Kind.PAIR


def test_s3_pair_needs_one_rank() -> None:
    with pytest.raises(IllegalAction):
        classify(C("5S 6S"))


@pytest.mark.parametrize("cards", ["SJ SJ", "BJ BJ"])
def test_s3_no_joker_pairs(cards: str) -> None:
    with pytest.raises(IllegalAction) as info:
        classify(C(cards))
    assert "pair" in info.value.reason or "joker" in info.value.reason


@pytest.mark.parametrize(
    ("cards", "length"),
    [("4S 5H 6D", 3), ("QS KS AS", 3), ("8S 9S TS JS QS", 5), ("4S 5S 6S 7S 8S 9S TS JS QS KS AS", 11)],
)
def test_s3_straight_ranks_4_to_a(cards: str, length: int) -> None:
    combo = classify(C(cards))
    assert combo.kind is Kind.STRAIGHT
    assert combo.size == length


@pytest.mark.parametrize("cards", ["KS AS 2S", "AS 2S 3S", "2S 3S 4S", "QS KS AS 2S", "JS QS KS AS 2S 3S"])
def test_s3_straight_never_holds_2_3(cards: str) -> None:
    with pytest.raises(IllegalAction):
        classify(C(cards))


@pytest.mark.parametrize("cards", ["4S 5S", "4S 5S 7S", "4S 6S 8S", "KS AS SJ", "QS KS AS BJ"])
def test_s3_straight_needs_three_consecutive_ranks_without_jokers(cards: str) -> None:
    with pytest.raises(IllegalAction):
        classify(C(cards))


@pytest.mark.parametrize(
    ("cards", "pairs"),
    [("4S 4H 5S 5H 6S 6H", 3), ("QS QH KS KH AS AH", 3), ("7S 7H 8S 8H 9S 9H TS TH", 4)],
)
def test_s3_pair_straight(cards: str, pairs: int) -> None:
    combo = classify(C(cards))
    assert combo.kind is Kind.PAIR_STRAIGHT
    assert combo.size == 2 * pairs


@pytest.mark.parametrize(
    "cards", ["4S 4H 5S 5H", "KS KH AS AH 2S 2H", "AS AH 2S 2H 3S 3H", "4S 4H 5S 5H 7S 7H", "4S 4H 5S 5H 6S"]
)
def test_s3_not_a_pair_straight(cards: str) -> None:
    with pytest.raises(IllegalAction):
        classify(C(cards))


@pytest.mark.parametrize("size", [3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("rank", ["4", "9", "A", "2", "3"])
def test_s3_bomb_three_to_eight_of_one_rank(size: int, rank: str) -> None:
    cards = " ".join(f"{rank}{s}" for s in "SHCDSHCD"[:size])
    combo = classify(C(cards))
    assert combo.kind is Kind.BOMB
    assert combo.size == size
    assert combo.is_bomb


def test_s3_a_triple_is_the_smallest_bomb_no_plain_triple() -> None:
    combo = classify(C("7S 7H 7D"))
    assert combo.kind is Kind.BOMB and combo.size == 3
    # a triple beats a pair of 3s: it is a bomb, not a triple
    assert beats(combo, classify(C("3S 3H")))


@pytest.mark.parametrize("cards", ["SJ BJ", "SJ SJ BJ", "SJ BJ BJ", "SJ SJ BJ BJ"])
def test_s3_joker_bomb(cards: str) -> None:
    combo = classify(C(cards))
    assert combo.kind is Kind.JOKER_BOMB
    assert combo.size == len(cards.split())


@pytest.mark.parametrize(
    "cards",
    [
        "5S 5H 5D 6S 6H",  # triple with pair
        "5S 5H 5D 6S 6H 6D",  # airplane
        "5S 5H 5D 6S",  # triple with single
        "5S 5H 5D 5C 6S 6H",  # four with two
        "SJ 3S",  # joker with a card
        "SJ BJ 3S",  # joker bomb with a card
        "BJ 3S 3H",
        "4S 5S 6S 6H",  # straight with an extra card
        "KS SJ",
    ],
)
def test_s3_nothing_else_is_a_combination(cards: str) -> None:
    with pytest.raises(IllegalAction):
        classify(C(cards))


def test_s3_non_combination_rejected_in_play() -> None:
    state = position({0: "5S 5H 5D 6S 6H 9S", 1: "9H", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    before = state
    with pytest.raises(IllegalAction) as info:
        decide(state, P(0, "5S 5H 5D 6S 6H"))
    assert "combination" in info.value.reason
    assert state == before


def test_s3_legal_leads_are_exactly_the_combinations() -> None:
    # hand 4 5 6 6 SJ BJ: singles 4, 5, 6, SJ, BJ; pair 66; straight 456; joker bomb SJ BJ (§3)
    state = position({0: "4S 5S 6S 6H SJ BJ", 1: "9H", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    got = sorted(tuple(ranks(a.cards)) for a in legal_actions(state, 0) if isinstance(a, Play))
    want = sorted(tuple(ranks(C(t))) for t in ["4S", "5S", "6S", "SJ", "BJ", "6S 6H", "4S 5S 6S", "SJ BJ"])
    assert got == want


# === §4 Beating the current play ====================================================================


@pytest.mark.parametrize(
    ("low", "high"),
    [
        ("9S", "TS"),
        ("5S 5H", "6S 6H"),
        ("4S 5S 6S", "5H 6H 7H"),
        ("4S 5S 6S 7S 8S", "TS JS QS KS AS"),
        ("4S 4H 5S 5H 6S 6H", "5D 5C 6D 6C 7D 7C"),
        ("AS", "2S"),
        ("2S 2H", "3S 3H"),
    ],
)
def test_s4_1_same_kind_and_length_higher_top(low: str, high: str) -> None:
    assert beats(classify(C(high)), classify(C(low)))
    assert not beats(classify(C(low)), classify(C(high)))


@pytest.mark.parametrize(("a", "b"), [("9S", "9H"), ("5S 5H", "5D 5C"), ("4S 5S 6S", "4H 5H 6H")])
def test_s4_1_equal_top_does_not_beat(a: str, b: str) -> None:
    assert not beats(classify(C(b)), classify(C(a)))


@pytest.mark.parametrize(
    ("current", "play"),
    [("4S 5S 6S", "5H 6H 7H 8H"), ("5S 6S 7S 8S", "4H 5H 6H"), ("4S 4H 5S 5H 6S 6H", "7S 7H 8S 8H 9S 9H TS TH")],
)
def test_s4_different_lengths_never_beat(current: str, play: str) -> None:
    assert not beats(classify(C(play)), classify(C(current)))


@pytest.mark.parametrize(("current", "play"), [("9S", "TS TH"), ("5S 5H", "AS"), ("4S 5S 6S", "4H 4D 5H 5D 6H 6D")])
def test_s4_1_different_kinds_do_not_beat(current: str, play: str) -> None:
    assert not beats(classify(C(play)), classify(C(current)))


def test_s4_1_in_play_length_mismatch_is_rejected_with_reason() -> None:
    state = position({0: "4S 5S 6S 9S", 1: "5H 6H 7H 8H 9H", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    state, _ = apply(state, P(0, "4S 5S 6S"))
    with pytest.raises(IllegalAction) as info:
        decide(state, P(1, "5H 6H 7H 8H"))
    assert "length" in info.value.reason or "same" in info.value.reason


@pytest.mark.parametrize("current", ["BJ", "3S 3H", "4S 5S 6S 7S 8S 9S TS JS QS KS AS", "AS AH KS KH QS QH"])
def test_s4_2_a_bomb_beats_any_non_bomb(current: str) -> None:
    assert beats(classify(C("4S 4H 4D")), classify(C(current)))


def test_s4_3_bomb_beats_bomb_by_count_then_rank() -> None:
    three_3s = classify(C("3S 3H 3D"))
    four_4s = classify(C("4S 4H 4D 4C"))
    three_5s = classify(C("5S 5H 5D"))
    assert beats(four_4s, three_3s)
    assert not beats(three_3s, four_4s)
    assert beats(three_3s, three_5s)
    assert not beats(three_5s, three_3s)
    assert not beats(three_5s, classify(C("5C 5D 5H")))


def test_s4_4_joker_bomb_beats_everything_and_is_never_beaten() -> None:
    joker = classify(C("SJ BJ"))
    for current in ["BJ", "3S 3H", "4S 5S 6S", "3S 3H 3D 3C 3S 3H 3D 3C"]:
        assert beats(joker, classify(C(current)))
    for play in ["3S 3H 3D 3C 3S 3H 3D 3C", "SJ SJ BJ BJ", "SJ BJ", "BJ"]:
        assert not beats(classify(C(play)), joker)


def test_s4_5_four_take_beats_a_bomb() -> None:
    bomb = classify(C("KS KH KD"))
    assert is_four_take(C("4S 4H"), bomb)
    assert not beats(classify(C("4S 4H")), bomb), "as a pair the fours do not beat; only as a four-take"


def test_s4_current_play_is_the_last_non_pass_play() -> None:
    state = position({0: "5S 9S", 1: "9H", 2: "7S 9D", 3: "6S 8S", 4: "8C", 5: "8D"}, leader=0)
    state, _ = apply(state, P(0, "5S"), X(1), P(2, "7S"))
    assert same(state.current_cards, "7S")
    with pytest.raises(IllegalAction):
        decide(state, P(3, "6S"))  # beats 5 but not the current 7
    state, _ = apply(state, P(3, "8S"))
    assert state.current_by == 3


# === D-ZLJ-1 / D-ZLJ-2 ==============================================================================


def test_d_zlj_1_joker_bomb_needs_both_jokers() -> None:
    for cards in ["SJ BJ", "SJ SJ BJ", "SJ BJ BJ", "SJ SJ BJ BJ"]:
        assert classify(C(cards)).kind is Kind.JOKER_BOMB
    for cards in ["SJ SJ", "BJ BJ"]:
        with pytest.raises(IllegalAction):
            classify(C(cards))
    # in play: two big jokers are no play at all
    state = position({0: "BJ BJ 9S", 1: "9H", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    with pytest.raises(IllegalAction):
        decide(state, P(0, "BJ BJ"))


def test_d_zlj_1_joker_bomb_cannot_be_beaten_or_taken() -> None:
    state = position(
        {0: "SJ BJ 9S", 1: "4S 4H 4D 4C 4S 4H 4D 4C", 2: "3S 3H 3D 3C 3S 3H 3D 3C", 3: "9C", 4: "8C", 5: "8D"},
        leader=0,
    )
    state, _ = apply(state, P(0, "SJ BJ"))
    for fours in ["4S 4H", "4S 4H 4D", "4S 4H 4D 4C 4S 4H 4D 4C"]:
        with pytest.raises(IllegalAction):
            decide(state, P(1, fours))
    state, _ = apply(state, X(1))
    with pytest.raises(IllegalAction):
        decide(state, P(2, "3S 3H 3D 3C 3S 3H 3D 3C"))


def test_d_zlj_2_bomb_count_before_rank() -> None:
    state = position(
        {0: "3S 3H 3D 9S", 1: "5S 5H 5D 5C 9H", 2: "6S 6H 6D 6C 9D", 3: "2S 2H 2D 9C", 4: "8C", 5: "8D"}, leader=0
    )
    state, _ = apply(state, P(0, "3S 3H 3D"))
    state, _ = apply(state, P(1, "5S 5H 5D 5C"))  # 4 cards of 5 beat 3 cards of 3: count first
    state, _ = apply(state, P(2, "6S 6H 6D 6C"))  # same count, higher rank
    assert state.current_by == 2
    with pytest.raises(IllegalAction) as info:
        decide(state, P(3, "2S 2H 2D"))  # 3 cards of 2 do not beat 4 cards of 6
    assert "more cards" in info.value.reason or "D-ZLJ-2" in info.value.reason


# === §5 Four-take 4取炸弹 ============================================================================

SUITS8 = "SHCDSHCD"


def _n(rank: str, n: int) -> str:
    return " ".join(f"{rank}{s}" for s in SUITS8[:n])


@pytest.mark.parametrize("m", [3, 4, 5, 6, 7, 8])
def test_s5_m_minus_one_fours_take_a_bomb_of_m(m: int) -> None:
    state = position({0: _n("Q", m) + " 9S", 1: _n("4", m - 1) + " 7D", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    state, _ = apply(state, P(0, _n("Q", m)))
    state, events = apply(state, P(1, _n("4", m - 1)))
    takes = of_type(events, FourTake)
    assert len(takes) == 1
    assert takes[0].seat == 1 and takes[0].taken_from == 0
    assert same(takes[0].taken, _n("Q", m))
    # the bomb's m cards move into the taker's hand
    assert same(state.hands[1], "7D " + _n("Q", m))
    # the fours are the current play; the next player is to beat them
    assert same(state.current_cards, _n("4", m - 1))
    assert state.current_by == 1
    assert state.turn == 2
    assert same(state.table, _n("4", m - 1))
    assert conserved(state)


def test_s5_two_fours_take_three_kings_as_in_the_original_example() -> None:
    # 第十二条: a plays three Ks, the next plays two 4s and takes the Ks; his next must beat the two 4s
    state = position({0: "KS KH KD 9S", 1: "4S 4H 7D", 2: "5S 5H 8D 9D", 3: "6S", 4: "6H", 5: "6D"}, leader=0)
    state, _ = apply(state, P(0, "KS KH KD"), P(1, "4S 4H"))
    assert state.current is not None and state.current.kind is Kind.PAIR
    with pytest.raises(IllegalAction):
        decide(state, P(2, "8D"))  # a single does not beat a pair of 4s
    state, _ = apply(state, P(2, "5S 5H"))
    assert state.current_by == 2


def test_s5_three_fours_become_a_bomb_the_next_must_beat() -> None:
    state = position({0: "KS KH KD KC 9S", 1: "4S 4H 4D 7D", 2: "9S 9H 5S 5H 5D", 3: "6S", 4: "6H", 5: "6D"}, leader=0)
    state, _ = apply(state, P(0, "KS KH KD KC"), P(1, "4S 4H 4D"))
    assert state.current is not None and state.current.kind is Kind.BOMB and state.current.size == 3
    with pytest.raises(IllegalAction):
        decide(state, P(2, "9S 9H"))  # a pair does not beat a bomb
    state, _ = apply(state, P(2, "5S 5H 5D"))  # same count, higher rank than 4
    assert state.current_by == 2


@pytest.mark.parametrize(("m", "fours"), [(3, 3), (4, 2), (5, 3), (4, 1)])
def test_s5_wrong_number_of_fours_is_no_take(m: int, fours: int) -> None:
    state = position({0: _n("Q", m) + " 9S", 1: _n("4", fours) + " 7D", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    state, _ = apply(state, P(0, _n("Q", m)))
    before = state
    with pytest.raises(IllegalAction):
        decide(state, P(1, _n("4", fours)))
    assert state == before


def test_s5_more_fours_than_needed_is_an_ordinary_bigger_bomb() -> None:
    # four 4s on three Ks: not a take (that needs two 4s) but a 4-card bomb, which beats by count (§4.3)
    state = position({0: "KS KH KD 9S", 1: "4S 4H 4D 4C 7D", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    state, _ = apply(state, P(0, "KS KH KD"))
    state, events = apply(state, P(1, "4S 4H 4D 4C"))
    assert not of_type(events, FourTake)
    assert of_type(events, CardsPlayed)
    assert same(state.hands[1], "7D")
    assert same(state.table, "KS KH KD 4S 4H 4D 4C")


def test_s5_joker_bomb_cannot_be_taken() -> None:
    state = position({0: "SJ BJ 9S", 1: "4S 4H 4D 7D", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    state, _ = apply(state, P(0, "SJ BJ"))
    for fours in ["4S", "4S 4H", "4S 4H 4D"]:
        with pytest.raises(IllegalAction):
            decide(state, P(1, fours))


def test_s5_bomb_of_fours_cannot_be_taken() -> None:
    # n-1 fours never take n fours
    state = position({0: "4S 4H 4D 9S", 1: "4C 4S 7D", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    state, _ = apply(state, P(0, "4S 4H 4D"))
    with pytest.raises(IllegalAction) as info:
        decide(state, P(1, "4C 4S"))
    assert "4s" in info.value.reason and "taken" in info.value.reason


def test_s5_four_take_listed_among_legal_actions() -> None:
    state = position({0: "KS KH KD 9S", 1: "4S 4H 7D", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    state, _ = apply(state, P(0, "KS KH KD"))
    plays = [a for a in legal_actions(state, 1) if isinstance(a, Play)]
    assert [ranks(a.cards) for a in plays] == [ranks(C("4S 4H"))]
    assert Pass(1) in legal_actions(state, 1)


def test_s5_fours_played_otherwise_are_ordinary() -> None:
    state = position({0: "4S 4H 4D 4C 4S 9S", 1: "5S 5H 9H", 2: "9D", 3: "3S 3H", 4: "8C", 5: "8D"}, leader=0)
    # a pair of 4s is the lowest pair
    state, _ = apply(state, P(0, "4S 4H"))
    assert state.current is not None and state.current.kind is Kind.PAIR
    state, _ = apply(state, P(1, "5S 5H"), X(2), P(3, "3S 3H"))
    assert state.current_by == 3
    # three 4s are the lowest bomb, still a bomb: it beats a pair of 3s
    state, events = apply(state, X(4), X(5), P(0, "4D 4C 4S"))
    assert not of_type(events, FourTake)
    assert state.current_by == 0


def test_s5_four_take_is_recorded_as_its_own_event() -> None:
    state = position({0: "KS KH KD 9S", 1: "4S 4H 7D", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    state, _ = apply(state, P(0, "KS KH KD"))
    _, events = apply(state, P(1, "4S 4H"))
    assert len(events) == 1 and isinstance(events[0], FourTake)
    take = events[0]
    assert (take.seat, take.taken_from) == (1, 0)
    assert same(take.fours, "4S 4H") and same(take.taken, "KS KH KD")
    after = replay(events, state)
    assert len(after.taken) == 1
    assert (after.taken[0].by, after.taken[0].taken_from) == (1, 0)
    assert same(after.taken[0].cards, "KS KH KD")


def test_d_zlj_3_bomb_maker_stays_out_after_four_take() -> None:
    state = position({0: "KS KH KD", 1: "4S 4H 9C", 2: "9D 8S", 3: "9C 8H", 4: "8C 7S", 5: "8D 7H"}, leader=0)
    state, events = apply(state, P(0, "KS KH KD"))
    assert WentOut(0, 1) in events
    state, events = apply(state, P(1, "4S 4H"))
    assert of_type(events, FourTake)
    assert same(state.hands[1], "9C KS KH KD")
    assert state.hands[0] == ()
    assert state.out == (0,), "seat 0 keeps its place; taking the bomb does not bring it back"
    state, events = apply(state, X(2), X(3), X(4), X(5))
    assert RoundWon(1, 1) in events, "seat 0 is out and never asked; the taker leads"
    assert state.turn == 1


def test_d_zlj_3_only_the_current_play_can_be_taken() -> None:
    state = position({0: "KS KH KD 9S", 1: "AS AH AD AC 9H", 2: "4S 4H 4D 9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    state, _ = apply(state, P(0, "KS KH KD"), P(1, "AS AH AD AC"))
    with pytest.raises(IllegalAction):
        decide(state, P(2, "4S 4H"))  # two 4s would take the Ks, but the Ks are no longer the current play
    state, events = apply(state, P(2, "4S 4H 4D"))
    take = of_type(events, FourTake)[0]
    assert take.taken_from == 1 and same(take.taken, "AS AH AD AC")
    assert same(state.hands[2], "9D AS AH AD AC")
    assert same(state.table, "KS KH KD 4S 4H 4D")


# === §6 Rounds, passing, going out, 接风 ============================================================


def test_s6_leader_plays_any_combination_and_cannot_pass() -> None:
    state = position({0: "5S 6S 7S 9S", 1: "9H", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    with pytest.raises(IllegalAction) as info:
        decide(state, X(0))
    assert "lead" in info.value.reason and "pass" in info.value.reason
    assert Pass(0) not in legal_actions(state, 0)
    state, _ = apply(state, P(0, "5S 6S 7S"))
    assert state.current is not None and state.current.kind is Kind.STRAIGHT


def test_s6_players_answer_in_seat_order_skipping_seats_out() -> None:
    state = position({0: "5S 9S", 2: "6S 9H", 3: "7S 9D", 4: "8S 9C", 5: "9S 8D"}, leader=0, out=(1,))
    state, _ = apply(state, P(0, "5S"))
    assert state.turn == 2, "seat 1 is out"
    with pytest.raises(NotYourTurn):
        decide(state, P(3, "7S"))
    state, _ = apply(state, X(2))
    assert state.turn == 3


def test_s6_round_ends_when_all_others_passed_and_the_maker_leads() -> None:
    state = position({0: "5S 9S", 1: "9H 8H", 2: "9D 8S", 3: "9C 7S", 4: "8C 7H", 5: "8D 7D"}, leader=0)
    state, events = apply(state, P(0, "5S"), P(1, "9H"), X(2), X(3), X(4), X(5))
    assert not of_type(events, RoundWon)
    state, events = apply(state, X(0))
    assert RoundWon(1, 1) in events
    assert state.turn == 1 and state.current is None and state.table == ()
    assert same(state.played, "5S 9H")


def test_d_zlj_4_pass_does_not_lock_out() -> None:
    state = position({0: "5S 6S", 1: "9H 8H", 2: "7S 6H", 3: "6D 5D", 4: "6C 5C", 5: "5H 4H"}, leader=0)
    state, events = apply(state, P(0, "5S"), X(1), P(2, "7S"), X(3), X(4), X(5), X(0))
    assert not of_type(events, RoundWon), "seat 1 has not passed since the 7 was played"
    assert state.turn == 1
    state, _ = apply(state, P(1, "9H"))  # seat 1 passed before, and may still play now
    assert state.current_by == 1
    state, events = apply(state, X(2), X(3), X(4), X(5), X(0))
    assert RoundWon(1, 1) in events


def test_s6_going_out_takes_the_next_place() -> None:
    state = position({0: "5S", 1: "6S 9H", 2: "7S", 3: "9D 9C", 4: "8C 8S", 5: "8D 7H"}, leader=0)
    state, events = apply(state, P(0, "5S"))
    assert WentOut(0, 1) in events
    state, events = apply(state, X(1), P(2, "7S"))
    assert WentOut(2, 2) in events
    assert state.out == (0, 2)
    assert state.turn == 3


def test_s6_jiefeng_next_seat_leads_after_the_last_card() -> None:
    state = position({0: "9S", 1: "5S 6S", 2: "5H 6H", 3: "5D 6D", 4: "5C 6C", 5: "4S 6S"}, leader=0)
    state, events = apply(state, P(0, "9S"), X(1), X(2), X(3), X(4), X(5))
    assert RoundWon(0, 1) in events, "接风: the lead goes to the next seat of the player who went out"
    assert state.turn == 1 and state.current is None


def test_d_zlj_5_jiefeng_skips_out_seats() -> None:
    state = position({0: "9S", 2: "5H 6H", 3: "5D 6D", 4: "5C 6C", 5: "4S 6S"}, leader=0, out=(1,))
    state, events = apply(state, P(0, "9S"), X(2), X(3), X(4), X(5))
    assert RoundWon(0, 2) in events, "seat 1 is out: the next seat still holding cards leads"
    assert state.turn == 2


def test_d_zlj_5_jiefeng_skips_several_out_seats() -> None:
    state = position({5: "9S", 3: "5D 6D", 2: "5H 6H 7H"}, leader=5, out=(0, 1, 4))
    # out so far: 0 (A), 1 (B), 4 (A); seat 5 going out makes B = 1, 5 out and 3 still in
    state, events = apply(state, P(5, "9S"), X(2), X(3))
    assert RoundWon(5, 2) in events, "seats 0 and 1 are out: 2 is the next seat holding cards"


def test_s6_deal_ends_when_a_whole_team_is_out_the_rest_are_caught() -> None:
    state = position({4: "9S", 1: "5S 6S", 3: "5D 6D", 5: "5C 6C"}, leader=4, out=(0, 2))
    state, events = apply(state, P(4, "9S"))
    ended = of_type(events, DealEnded)
    assert len(ended) == 1
    result = ended[0].result
    assert result.order == (0, 2, 4)
    assert set(result.caught) == {1, 3, 5}
    assert state.phase is Phase.CUT
    with pytest.raises(IllegalAction):
        decide(state, P(1, "5S"))


def test_s6_deal_goes_on_while_no_team_is_all_out() -> None:
    state = position({0: "9S", 1: "5S 6S", 2: "TD", 3: "5D 6D", 4: "6H 7C", 5: "5C 6C"}, leader=0)
    state, events = apply(state, P(0, "9S"), X(1), P(2, "TD"))
    assert not of_type(events, DealEnded)
    assert state.phase is Phase.PLAY


# === §7 Outcome of a deal ===========================================================================

# (finishing order, expected outcome, winners) for H = team A (seat 0 first), one per row of the table.
OUTCOME_ROWS = [
    ((0, 2, 4), Outcome.CATCH3, Team.A),  # H places 123
    ((0, 2, 1, 4), Outcome.CATCH2, Team.A),  # 124
    ((0, 1, 2, 4), Outcome.CATCH2, Team.A),  # 134
    ((0, 2, 1, 3, 4), Outcome.CATCH1, Team.A),  # 125
    ((0, 1, 2, 3, 4), Outcome.CATCH1, Team.A),  # 135
    ((0, 1, 3, 2, 4), Outcome.CATCH1, Team.A),  # 145
    ((0, 2, 1, 3, 5), Outcome.DRAW, None),  # 126 (opponents 345)
    ((0, 1, 2, 3, 5), Outcome.DRAW, None),  # 136 (opponents 245)
    ((0, 1, 3, 2, 5), Outcome.DRAW, None),  # 146 (opponents 235)
    ((0, 1, 3, 5), Outcome.REVERSE, Team.B),  # 156 (opponents 234): 反逮
]


def _mirror(order: tuple[int, ...]) -> tuple[int, ...]:
    """The same deal with the teams swapped (seat s -> s+3: team A <-> team B)."""
    return tuple((s + 3) % 6 for s in order)


@pytest.mark.parametrize(
    ("order", "outcome", "winners"), OUTCOME_ROWS, ids=[o.value + str(x) for x, o, _ in OUTCOME_ROWS]
)
def test_s7_outcome_table(order: tuple[int, ...], outcome: Outcome, winners: Team | None) -> None:
    result = deal_result(1, order)
    assert result.outcome is outcome
    assert result.winners is winners
    assert result.head_team is Team.A
    assert set(result.caught) == set(range(6)) - set(order)
    assert result.big_tribute == 0
    mirrored = deal_result(1, _mirror(order))
    assert mirrored.outcome is outcome
    assert mirrored.head_team is Team.B
    assert mirrored.winners is (None if winners is None else winners.other)


def test_s7_outcome_catch3() -> None:
    assert deal_result(1, (2, 0, 4)).outcome is Outcome.CATCH3


def test_s7_outcome_catch2() -> None:
    assert deal_result(1, (3, 1, 0, 5)).outcome is Outcome.CATCH2  # B places 1 2 4


def test_s7_outcome_catch1() -> None:
    assert deal_result(1, (5, 0, 1, 2, 3)).outcome is Outcome.CATCH1  # B places 1 3 5


def test_s7_outcome_draw() -> None:
    assert deal_result(1, (5, 0, 2, 1, 4)).outcome is Outcome.DRAW  # B places 1 4 + one caught


def test_s7_outcome_reverse() -> None:
    result = deal_result(1, (3, 0, 2, 4))  # B 1st, then all of A: two of B caught
    assert result.outcome is Outcome.REVERSE
    assert result.winners is Team.A


def test_s7_reverse_played_out() -> None:
    # 0 (A) goes out first, then 1, 3, 5 (B): 2 and 4 of the head team are caught -> 反逮, B wins
    state = position({0: "3S", 1: "5S", 2: "4H 4D 9S", 3: "3H", 4: "4C 4S 9H", 5: "3D"}, leader=0)
    state, _ = apply(state, P(0, "3S"), X(1), X(2), X(3), X(4), X(5))
    assert state.turn == 1
    state, _ = apply(state, P(1, "5S"), X(2), X(3), X(4), X(5))
    assert state.turn == 2  # 接风 from 1 to 2
    state, _ = apply(state, P(2, "4H"), P(3, "3H"), X(4), X(5), X(2))
    assert state.turn == 4  # 接风 from 3 to 4
    state, events = apply(state, P(4, "4C"), P(5, "3D"))
    result = of_type(events, DealEnded)[0].result
    assert result.order == (0, 1, 3, 5)
    assert result.outcome is Outcome.REVERSE
    assert result.winners is Team.B
    assert result.team_points == (0, 0)
    assert result.individual == (3, 2, -1, 1, -1, 0)


# === §8 Score of a deal =============================================================================


@pytest.mark.parametrize(("order", "points"), [((0, 2, 4), 10), ((0, 2, 1, 4), 5), ((0, 1, 3, 2, 4), 2)])
def test_s8_team_points(order: tuple[int, ...], points: int) -> None:
    assert deal_result(1, order).team_points == (points, 0)
    assert deal_result(1, _mirror(order)).team_points == (0, points)


def test_s8_individual_points() -> None:
    # 1st +3, 2nd +2, 3rd +1, 4th 0, 5th 0, caught -1
    assert deal_result(1, (0, 1, 2, 3, 4)).individual == (3, 2, 1, 0, 0, -1)
    assert deal_result(1, (0, 2, 4)).individual == (3, -1, 2, -1, 1, -1)
    assert deal_result(1, (0, 2, 1, 4)).individual == (3, 1, 2, -1, 0, -1)
    assert deal_result(1, (0, 1, 3, 5)).individual == (3, 2, -1, 1, -1, 0)


def test_d_zlj_6_draw_and_reverse_no_team_points() -> None:
    for order in [(0, 2, 1, 3, 5), (0, 1, 2, 3, 5), (0, 1, 3, 2, 5), (0, 1, 3, 5)]:
        assert deal_result(1, order).team_points == (0, 0)
        assert deal_result(1, _mirror(order)).team_points == (0, 0)
    # individual points still count
    assert deal_result(1, (0, 1, 3, 5)).individual[0] == 3


def test_d_zlj_7_match_score_is_individual_plus_team() -> None:
    first = deal_result(1, (0, 2, 4))  # CATCH3 for A: A +10; individual 3,-1,2,-1,1,-1
    second = deal_result(2, (1, 0, 3, 2, 5))  # B at places 1 3 5: CATCH1 for B: B +2; 2,3,0,1,-1,0
    team, individual = match_totals((first, second))
    assert team == (10, 2)
    assert individual == (5, 2, 2, 0, 0, -1)
    expected = {0: 15, 1: 4, 2: 12, 3: 2, 4: 10, 5: 1}
    for seat, score in expected.items():
        assert match_score(seat, team, individual) == score


def test_d_zlj_7_both_ledgers_kept_separately_in_the_view() -> None:
    first = deal_result(1, (0, 2, 4))
    state = State(phase=Phase.CUT, deal=1, turn=1, previous=first, results=(first,))
    seen = view(state, 3)
    assert seen.team_points == (10, 0)
    assert seen.individual == (3, -1, 2, -1, 1, -1)


# === §9 Deals in a match ============================================================================


def test_s9_start_match_deals_eighteen_each_from_a_random_first_drawer() -> None:
    drawers = set()
    for seed in range(40):
        state, events = start(seed)
        assert isinstance(events[0], MatchStarted)
        dealt = events[1]
        assert isinstance(dealt, HandsDealt)
        assert dealt.deal == 1
        assert dealt.cut is None and dealt.cutter is None, "no cut in the first deal"
        assert 0 <= dealt.first_drawer < 6
        drawers.add(dealt.first_drawer)
        # one card at a time from the first drawer, in play order, from the seeded shuffle
        deck = shuffled_deck(seed)
        for i in range(6):
            seat = (dealt.first_drawer + i) % 6
            assert Counter(dealt.hands[seat]) == Counter(deck[i::6])
        assert [len(h) for h in state.hands] == [18] * 6
    assert len(drawers) >= 4, "the first drawer is random, not fixed"


def test_s9_start_match_is_deterministic_from_its_seed() -> None:
    assert decide(State(), StartMatch(77)) == decide(State(), StartMatch(77))
    assert decide(State(), StartMatch(77)) != decide(State(), StartMatch(78))


def test_s9_one_seat_with_both_spade_aces_leads_directly() -> None:
    found = 0
    for seed in range(400):
        state, events = start(seed)
        holders = spade_ace_holders(state.hands)
        if len(set(holders)) != 1:
            continue
        found += 1
        assert not of_type(events, RockPaperScissors)
        lead = of_type(events, PlayStarted)
        assert len(lead) == 1 and lead[0].leader == holders[0]
        assert state.phase is Phase.PLAY and state.turn == holders[0] and state.leader == holders[0]
        if found >= 3:
            break
    assert found, "some seed gives one seat both ♠A"


def test_d_zlj_8_rock_paper_scissors_recorded() -> None:
    found = 0
    repeated = False
    for seed in range(200):
        state, events = start(seed)
        holders = spade_ace_holders(state.hands)
        if len(set(holders)) != 2:
            continue
        found += 1
        games = of_type(events, RockPaperScissors)
        assert len(games) == 1
        winner = check_two_player_rps(games[0], set(holders))
        repeated = repeated or len(games[0].rounds) > 1
        assert state.turn == winner and state.leader == winner
        assert decide(State(), StartMatch(seed)) == events, "played by the engine from the seed"
        if found >= 20 and repeated:
            break
    assert found >= 20
    assert repeated, "a tied round is replayed until there is a winner"


def _cut_state(order: tuple[int, ...], options: Options = DEFAULTS) -> State:
    result = deal_result(1, order)
    return State(
        options=options,
        phase=Phase.CUT,
        deal=1,
        turn=next_seat(result.big_tribute),
        previous=result,
        results=(result,),
    )


def test_s9_later_deal_cut_by_previous_big_tributes_next_seat() -> None:
    state = _cut_state((3, 0, 1, 4, 5))  # 大贡 is seat 3: seat 4 cuts
    assert state.turn == 4
    for seat in (0, 1, 2, 3, 5):
        with pytest.raises(NotYourTurn):
            decide(state, Cut(seat, 10, 1))
    events = decide(state, Cut(4, 10, 1))
    dealt = events[0]
    assert isinstance(dealt, HandsDealt)
    assert dealt.deal == 2 and dealt.cutter == 4 and dealt.cut == 10


@pytest.mark.parametrize("count", [0, -1, 108, 500])
def test_s9_cut_count_outside_1_to_107_rejected(count: int) -> None:
    state = _cut_state((3, 0, 1, 4, 5))
    with pytest.raises(IllegalAction) as info:
        decide(state, Cut(4, count, 1))
    assert "1..107" in info.value.reason


@pytest.mark.parametrize("count", [1, 50, 107])
def test_s9_dealing_starts_at_previous_big_tribute_after_the_cut(count: int) -> None:
    state = _cut_state((3, 0, 1, 4, 5))
    seed = 99
    dealt = decide(state, Cut(4, count, seed))[0]
    assert isinstance(dealt, HandsDealt)
    assert dealt.first_drawer == 3
    deck = shuffled_deck(seed)
    cut = deck[count:] + deck[:count]  # count cards moved from top to bottom
    for i in range(6):
        assert Counter(dealt.hands[(3 + i) % 6]) == Counter(cut[i::6])


def _play_match(seed: int, options: Options, deals_to_play: int | None = None) -> tuple[State, list[Event]]:
    state, events = start(seed, options)
    log = list(events)
    rng = SeededRandom(seed + 1000)
    played = 0
    while state.phase is not Phase.ENDED:
        state = play_until(state, rng, (Phase.CUT, Phase.ENDED), log)
        played += 1
        if deals_to_play is not None and played >= deals_to_play:
            return state, log
        if state.phase is Phase.CUT:
            cmd = random_step(state, rng)
            new = decide(state, cmd)  # type: ignore[arg-type]
            log.extend(new)
            state = replay(new, state)
    return state, log


def test_s9_deals_option_ends_the_match_after_n_deals() -> None:
    state, log = _play_match(3, Options(deals=2))
    ended = of_type(log, DealEnded)
    assert [e.result.deal for e in ended] == [1, 2]
    matches = of_type(log, MatchEnded)
    assert len(matches) == 1 and log[-1] == matches[0]
    results = tuple(e.result for e in ended)
    team = (sum(r.team_points[0] for r in results), sum(r.team_points[1] for r in results))
    individual = tuple(sum(r.individual[s] for r in results) for s in range(6))
    assert matches[0].team_points == team
    assert matches[0].individual == individual
    assert state.phase is Phase.ENDED and state.turn is None


def test_s9_default_is_six_deals() -> None:
    _, log = _play_match(4, Options())
    assert len(of_type(log, DealEnded)) == 6
    assert len(of_type(log, MatchEnded)) == 1


def test_s9_open_ended_match_runs_until_end_match() -> None:
    state, log = _play_match(5, Options(deals=0), deals_to_play=3)
    assert state.phase is Phase.CUT
    assert len(of_type(log, DealEnded)) == 3
    assert not of_type(log, MatchEnded)
    events = decide(state, EndMatch())
    assert len(events) == 1 and isinstance(events[0], MatchEnded)
    team, individual = match_totals(state.results)
    assert events[0].team_points == team and events[0].individual == individual
    assert replay(events, state).phase is Phase.ENDED


def test_s9_end_match_only_between_deals() -> None:
    state, _ = start(6, Options(deals=0))
    with pytest.raises(IllegalAction) as info:
        decide(state, EndMatch())
    assert "between deals" in info.value.reason


def test_s9_seat_relations_stay_with_seats() -> None:
    # the previous deal is remembered by seats: its 大贡 seat's next seat cuts, its 大贡 seat draws first,
    # its losing seats give tribute and its winning seats pick, whoever sits there now
    state, _ = _play_match(8, Options(deals=3), deals_to_play=1)
    assert state.phase is Phase.CUT
    previous = state.previous
    assert previous is not None
    assert state.turn == next_seat(previous.order[0])
    events = decide(state, Cut(state.turn, 30, 1234))
    dealt = events[0]
    assert isinstance(dealt, HandsDealt) and dealt.first_drawer == previous.order[0]
    ordered = of_type(events, TributeOrdered)
    if ordered:
        assert previous.winners is not None
        assert {s for s, _ in ordered[0].winners} == set(previous.winners.seats)
        assert {s for s, _ in ordered[0].losers} <= set(previous.winners.other.seats)


# === §10 Tribute ====================================================================================

WINNER_HANDS = {0: "5H 6H 7H 8S 4S", 2: "9S TS JS 4H", 4: "6S 7S 4D"}


def test_s10_forced_highest_cards_k_or_higher() -> None:
    # catch-3: each loser gives their 3 highest cards, only K or higher (第五、七条)
    hands = {**WINNER_HANDS, 1: "BJ 3S 2S KH 5C", 3: "AS AH KD QC 9D", 5: "KS QH JH 5D 8C"}
    state, events = tribute_position((0, 2, 4), hands)
    given = {e.seat: e.cards for e in of_type(events, TributeGiven)}
    assert same(given[1], "BJ 3S 2S")  # highest three, K left in hand
    assert same(given[3], "AS AH KD")
    assert same(given[5], "KS"), "Q and below are never tribute: a shortfall"
    assert same(state.hands[1], "KH 5C")
    assert same(state.hands[5], "QH JH 5D 8C")
    assert conserved(state)


@pytest.mark.parametrize(("order", "n"), [((0, 2, 4), 3), ((0, 2, 1, 4), 2), ((0, 1, 3, 2, 4), 1)])
def test_s10_each_loser_tributes_n_cards_for_catch_n(order: tuple[int, ...], n: int) -> None:
    hands = {**WINNER_HANDS, 1: "BJ 3S 2S KH", 3: "AS AH KD KC", 5: "KS 2H 3H 3D"}
    _, events = tribute_position(order, hands)
    given = of_type(events, TributeGiven)
    assert {e.seat for e in given} == {1, 3, 5}
    assert all(e.count == n and len(e.cards) == n for e in given)
    ordered = of_type(events, TributeOrdered)[0]
    assert [s for s, _ in ordered.winners] == [s for s in order if s % 2 == 0]
    assert all(q == n for _, q in ordered.winners)


def test_s10_loser_without_k_or_higher_gives_none() -> None:
    hands = {**WINNER_HANDS, 1: "BJ 3S", 3: "QS QH JD", 5: "2S 2H 5D"}
    state, events = tribute_position((0, 2, 1, 4), hands)  # catch-2
    given = {e.seat: e.cards for e in of_type(events, TributeGiven)}
    assert same(given[1], "BJ 3S")
    assert given[3] == ()
    assert same(given[5], "2S 2H")
    assert same(state.hands[3], "QS QH JD")


def test_s10_shortfall_borne_by_lowest_placed_winner_first() -> None:
    # catch-3 (A 1-2-3): pool of 7, not 9: the 3rd winner (seat 4) loses 2
    hands = {**WINNER_HANDS, 1: "BJ 3S 2S", 3: "AS AH KD", 5: "KS QH"}
    _, events = tribute_position((2, 4, 0), hands)
    ordered = of_type(events, TributeOrdered)[0]
    assert ordered.winners == ((2, 3), (4, 3), (0, 1))


def test_s10_shortfall_then_next_lowest_winner() -> None:
    # catch-2 (A places 1 3 4 -> order 0,1,2,4): pool of 3, not 6: the last winner gets 0, the one before 1
    hands = {**WINNER_HANDS, 1: "KS QH", 3: "AS KD", 5: "QS JH"}
    _, events = tribute_position((0, 1, 2, 4), hands)
    ordered = of_type(events, TributeOrdered)[0]
    assert ordered.winners == ((0, 2), (2, 1), (4, 0))


def test_s10_winners_pick_in_finishing_order() -> None:
    hands = {**WINNER_HANDS, 1: "BJ 3S", 3: "AS AH", 5: "KS KH"}
    state, _ = tribute_position((4, 1, 0, 2), hands)  # A places 1 3 4: catch-2, winners in order 4, 0, 2
    assert state.phase is Phase.PICK and state.turn == 4
    with pytest.raises(NotYourTurn):
        decide(state, PickTribute(0, C("AS AH")))
    state, _ = apply(state, PickTribute(4, C("KS AH")))
    assert state.turn == 0
    state, _ = apply(state, PickTribute(0, C("BJ KH")))
    assert state.turn == 2
    state, _ = apply(state, PickTribute(2, C("3S AS")))
    assert state.phase is Phase.RETURN
    assert same(state.hands[4], "6S 7S 4D KS AH")
    assert same(state.hands[0], "5H 6H 7H 8S 4S BJ KH")
    assert same(state.hands[2], "9S TS JS 4H 3S AS")


def test_s10_pick_only_from_the_pool_and_the_quota() -> None:
    hands = {**WINNER_HANDS, 1: "BJ", 3: "AS", 5: "KS"}
    state, _ = tribute_position((0, 2, 1, 3, 4), hands)  # catch-1
    assert state.turn == 0
    with pytest.raises(IllegalAction):
        decide(state, PickTribute(0, C("2S")))  # not in the pool
    with pytest.raises(IllegalAction):
        decide(state, PickTribute(0, C("BJ AS")))  # quota is 1
    state, _ = apply(state, PickTribute(0, C("AS")))  # free choice, not forced to the highest
    assert state.turn == 2


def test_s10_draw_no_tribute() -> None:
    hands = {0: "BJ 3S", 1: "AS KS", 2: "5S", 3: "6S", 4: "7S", 5: "2S 2H"}
    state, events = tribute_position((5, 0, 2, 1, 4), hands)  # B places 1 and 4, seat 3 caught: a draw
    assert deal_result(1, (5, 0, 2, 1, 4)).outcome is Outcome.DRAW
    assert not of_type(events, TributeGiven)
    assert state.phase is Phase.PLAY and state.turn == 5
    assert state.hands == hands_from(hands)


def test_d_zlj_9_reverse_tribute_per_player_and_team_total() -> None:
    # 反逮: A (head) loses; each of 0, 2, 4 gives 1 card (K or higher), B picks in finishing order 1, 3, 5
    hands = {0: "AS 9S", 2: "KD 5D", 4: "QS 6S", 1: "5H 6H", 3: "7H 8H", 5: "9H TH"}
    state, events = tribute_position((0, 1, 3, 5), hands)
    given = {e.seat: e.cards for e in of_type(events, TributeGiven)}
    assert same(given[0], "AS") and same(given[2], "KD") and given[4] == ()
    ordered = of_type(events, TributeOrdered)[0]
    assert ordered.winners == ((1, 1), (3, 1), (5, 0))
    assert [s for s, _ in ordered.losers] == [0, 2]
    assert ordered.leader == 0
    assert state.turn == 1

    team = Options(reverse_tribute=ReverseTribute.TEAM_TOTAL)
    state, events = tribute_position((0, 1, 3, 5), hands, team)
    given = {e.seat: e.cards for e in of_type(events, TributeGiven)}
    assert sum(len(c or ()) for c in given.values()) == 1, "one card in all"
    assert same(given[0], "AS"), "from the loser with the highest card"
    ordered = of_type(events, TributeOrdered)[0]
    assert ordered.winners == ((1, 1), (3, 0), (5, 0))
    assert ordered.losers == ((0, 1),)
    assert state.turn == 1


def test_d_zlj_9_team_total_giver_is_the_loser_with_the_highest_card() -> None:
    hands = {0: "KS 9S", 2: "BJ 5D", 4: "3S 6S", 1: "5H 6H", 3: "7H 8H", 5: "9H TH"}
    _, events = tribute_position((0, 1, 3, 5), hands, Options(reverse_tribute=ReverseTribute.TEAM_TOTAL))
    given = {e.seat: e.cards for e in of_type(events, TributeGiven)}
    assert same(given[2], "BJ")
    assert given[0] == () and given[4] == ()


def test_d_zlj_9_team_total_tie_gives_still_one_card_from_a_highest_holder() -> None:
    # 0 and 2 both hold an A as their highest card: still one card in all, from one of them
    hands = {0: "AS 9S", 2: "AH 5D", 4: "KS 6S", 1: "5H 6H", 3: "7H 8H", 5: "9H TH"}
    givers = set()
    for seed in range(20):
        _, events = tribute_position((0, 1, 3, 5), hands, Options(reverse_tribute=ReverseTribute.TEAM_TOTAL), seed)
        given = {e.seat: e.cards for e in of_type(events, TributeGiven) if e.cards}
        assert len(given) == 1
        (giver, cards), *_ = given.items()
        assert giver in (0, 2) and same(cards, "AS")
        givers.add(giver)
        ordered = of_type(events, TributeOrdered)[0]
        assert ordered.leader == giver
    assert givers == {0, 2}, "the tie is decided by the seed, not by seat number"


def test_d_zlj_10_resistance_after_reverse() -> None:
    # after 反逮 the head team are the losers: one of them holding SJ + BJ resists
    hands = {0: "AS 9S", 2: "SJ BJ 5D", 4: "KS 6S", 1: "5H 6H", 3: "7H 8H", 5: "9H TH"}
    state, events = tribute_position((0, 1, 3, 5), hands)
    resisted = of_type(events, TributeResisted)
    assert len(resisted) == 1 and resisted[0].seat == 2
    assert not of_type(events, TributeGiven)
    assert state.phase is Phase.PLAY and state.turn == 0, "the previous 大贡 leads"


def test_d_zlj_10_resistance_both_options() -> None:
    # big_and_small (default): a loser holding a BJ and a SJ cancels tribute and return; the jokers are shown
    hands = {**WINNER_HANDS, 1: "BJ 3S 2S", 3: "SJ BJ 5C", 5: "KS QH"}
    state, events = tribute_position((2, 4, 0), hands)  # catch-3
    resisted = of_type(events, TributeResisted)
    assert len(resisted) == 1 and resisted[0].seat == 3 and same(resisted[0].cards, "SJ BJ")
    assert not of_type(events, TributeGiven)
    assert state.phase is Phase.PLAY and state.turn == 2, "the previous 大贡 leads (§12)"
    assert state.hands == hands_from(hands)
    assert state.shown_jokers is not None and state.shown_jokers[0] == 3
    assert redact(resisted[0], 0) == resisted[0], "shown to all"

    # jokers split over two losers: no resistance
    split = {**WINNER_HANDS, 1: "BJ 3S 2S", 3: "SJ 5C", 5: "KS QH"}
    _, events = tribute_position((2, 4, 0), split)
    assert not of_type(events, TributeResisted) and of_type(events, TributeGiven)

    # two big jokers are not enough under big_and_small
    two_big = {**WINNER_HANDS, 1: "BJ BJ 2S", 3: "AS 5C", 5: "KS QH"}
    _, events = tribute_position((2, 4, 0), two_big)
    assert not of_type(events, TributeResisted)

    # a winner holding both jokers does not resist anything
    winner_jokers = {**WINNER_HANDS, 0: "SJ BJ 5H", 1: "AS", 3: "KS", 5: "2S"}
    _, events = tribute_position((2, 4, 0), winner_jokers)
    assert not of_type(events, TributeResisted)

    # option two_big: two BJ in one loser's hand resist; BJ + SJ do not
    opt = Options(resist=Resist.TWO_BIG)
    state, events = tribute_position((2, 4, 0), two_big, opt)
    resisted = of_type(events, TributeResisted)
    assert len(resisted) == 1 and resisted[0].seat == 1 and same(resisted[0].cards, "BJ BJ")
    assert state.phase is Phase.PLAY and state.turn == 2
    _, events = tribute_position((2, 4, 0), hands, opt)
    assert not of_type(events, TributeResisted)
    given = {e.seat: e.cards for e in of_type(events, TributeGiven)}
    assert same(given[3], "SJ BJ"), "under two_big the small and big joker are plain tribute"


# === §11 Return tribute =============================================================================


def _after_picks(order: tuple[int, ...], hands: dict[int, str], picks: list[tuple[int, str]], seed: int = 0) -> State:
    state, _ = tribute_position(order, hands, seed=seed)
    for seat, cards in picks:
        state, _ = apply(state, PickTribute(seat, C(cards)))
    return state


CATCH1_HANDS = {0: "5H 6H 7H 4S", 2: "9S QS 4H 3D", 4: "5S 7S 4D 2D", 1: "BJ 9C", 3: "AS 9D", 5: "KS 8C"}


@pytest.mark.parametrize("bad", ["4S", "3D", "2D", "KS", "AS", "BJ"])
def test_s11_return_only_5_to_q(bad: str) -> None:
    hands = {**CATCH1_HANDS, 0: f"5H 6H {bad}"}
    state = _after_picks((0, 2, 1, 3, 4), hands, [(0, "AS"), (2, "BJ"), (4, "KS")])
    assert state.phase is Phase.RETURN and state.turn == 0
    with pytest.raises(IllegalAction) as info:
        decide(state, ReturnTribute(0, C(bad)))
    assert "5..Q" in info.value.reason


@pytest.mark.parametrize("good", ["5H", "QD", "TC", "9S"])
def test_s11_return_5_and_q_inclusive(good: str) -> None:
    hands = {**CATCH1_HANDS, 0: f"{good} 4S"}
    state = _after_picks((0, 2, 1, 3, 4), hands, [(0, "AS"), (2, "BJ"), (4, "KS")])
    state, _ = apply(state, ReturnTribute(0, C(good)))
    assert state.turn == 2


def test_s11_return_as_many_as_received() -> None:
    hands = {**WINNER_HANDS, 1: "BJ 3S", 3: "AS AH", 5: "KS KH"}
    state = _after_picks((0, 2, 1, 4), hands, [(0, "BJ 3S"), (2, "AS AH"), (4, "KS KH")])
    assert state.phase is Phase.RETURN and state.turn == 0
    with pytest.raises(IllegalAction):
        decide(state, ReturnTribute(0, C("5H")))
    with pytest.raises(IllegalAction):
        decide(state, ReturnTribute(0, C("5H 6H 7H")))
    with pytest.raises(IllegalAction):
        decide(state, ReturnTribute(0, C("5H 9C")))  # 9C is not in seat 0's hand
    state, _ = apply(state, ReturnTribute(0, C("5H 7H")))  # chosen freely
    assert same(state.hands[0], "6H 8S 4S BJ 3S")


def test_s11_losers_take_back_in_order_of_highest_tribute_card() -> None:
    # tribute: 1 gave BJ, 3 gave A, 5 gave K -> take back 1, 3, 5
    state = _after_picks((0, 2, 1, 3, 4), CATCH1_HANDS, [(0, "KS"), (2, "BJ"), (4, "AS")])
    state, _ = apply(state, ReturnTribute(0, C("7H")), ReturnTribute(2, C("QS")), ReturnTribute(4, C("5S")))
    assert state.phase is Phase.TAKE_BACK
    assert state.turn == 1
    with pytest.raises(NotYourTurn):
        decide(state, TakeBack(3, C("QS")))
    with pytest.raises(IllegalAction):
        decide(state, TakeBack(1, C("QS 5S")))  # gave 1, takes back 1
    with pytest.raises(IllegalAction):
        decide(state, TakeBack(1, C("9S")))  # not among the returned cards
    state, _ = apply(state, TakeBack(1, C("5S")))
    assert state.turn == 3
    state, _ = apply(state, TakeBack(3, C("QS")))
    assert state.turn == 5
    state, events = apply(state, TakeBack(5, C("7H")))
    assert same(state.hands[1], "9C 5S")
    assert same(state.hands[3], "9D QS")
    assert same(state.hands[5], "8C 7H")
    assert state.phase is Phase.PLAY
    assert of_type(events, PlayStarted)[0].leader == 1
    assert conserved(state)


def test_s11_take_back_ties_broken_by_seeded_rps() -> None:
    # 1 and 3 both gave an A: rock-paper-scissors decides who takes back first (and leads, §12)
    hands = {0: "5H 4S", 2: "6H 4H", 4: "7H 4D", 1: "AS 9C", 3: "AH 9D", 5: "KS 8C"}
    leaders = set()
    for seed in range(30):
        _, events = tribute_position((0, 2, 1, 3, 4), hands, seed=seed)
        games = of_type(events, RockPaperScissors)
        assert len(games) == 1
        winner = check_two_player_rps(games[0], {1, 3})
        loser = 4 - winner  # the other of 1 and 3
        ordered = of_type(events, TributeOrdered)[0]
        assert [s for s, _ in ordered.losers] == [winner, loser, 5]
        assert ordered.leader == winner
        leaders.add(winner)
        assert tribute_position((0, 2, 1, 3, 4), hands, seed=seed)[1] == events, "seeded"
    assert leaders == {1, 3}


def test_d_zlj_11_return_shortfall() -> None:
    # seat 0 received 1 card and holds no card 5..Q: it returns nothing; the shortfall is not made up
    hands = {**CATCH1_HANDS, 0: "4S 4H KD 2C"}
    state = _after_picks((0, 2, 1, 3, 4), hands, [(0, "BJ"), (2, "AS"), (4, "KS")])
    assert state.phase is Phase.RETURN
    assert state.turn == 2, "seat 0 has nothing to return and is skipped"
    assert legal_actions(state, 0) == ()
    state, _ = apply(state, ReturnTribute(2, C("9S")), ReturnTribute(4, C("7S")))
    assert state.phase is Phase.TAKE_BACK
    assert state.tribute is not None and len(state.tribute.pool) == 2
    state, _ = apply(state, TakeBack(1, C("9S")), TakeBack(3, C("7S")))
    assert state.phase is Phase.PLAY, "seat 5 finds nothing left to take back"
    assert same(state.hands[5], "8C")
    assert same(state.hands[0], "4S 4H KD 2C BJ")
    assert conserved(state)


def test_d_zlj_11_partial_return() -> None:
    # seat 0 received 2 cards but holds one card in 5..Q: it returns that one
    hands = {**WINNER_HANDS, 0: "4S KD 8H", 1: "BJ 3S", 3: "AS AH", 5: "KS KH"}
    state = _after_picks((0, 2, 1, 4), hands, [(0, "BJ 3S"), (2, "AS AH"), (4, "KS KH")])
    assert state.turn == 0
    with pytest.raises(IllegalAction):
        decide(state, ReturnTribute(0, C("8H KD")))
    with pytest.raises(IllegalAction):
        decide(state, ReturnTribute(0, ()))
    state, _ = apply(state, ReturnTribute(0, C("8H")))
    assert state.turn == 2


# === §12 Who leads ==================================================================================


def test_s12_after_tribute_the_largest_tribute_card_leads() -> None:
    hands = {**CATCH1_HANDS, 1: "KS 9C", 3: "2S 9D", 5: "AS 8C"}  # 3 gave the 2, the largest
    state, events = tribute_position((0, 2, 1, 3, 4), hands)
    assert of_type(events, TributeOrdered)[0].leader == 3
    while state.phase is not Phase.PLAY:
        assert state.turn is not None
        state, _ = apply(state, legal_actions(state, state.turn)[0])
    assert state.turn == 3 and state.leader == 3


def test_s12_after_draw_previous_big_tribute_leads() -> None:
    # B places 1 and 3 and one of B caught, A all out: a draw
    state, events = tribute_position((3, 0, 5, 2, 4), {0: "BJ AS", 1: "SJ BJ KS", 3: "2S 3S"})
    assert deal_result(1, (3, 0, 5, 2, 4)).outcome is Outcome.DRAW
    assert not of_type(events, TributeGiven) and not of_type(events, TributeResisted)
    assert [e.leader for e in of_type(events, PlayStarted)] == [3]
    assert state.phase is Phase.PLAY and state.turn == 3


def test_s12_after_resistance_previous_big_tribute_leads() -> None:
    hands = {**WINNER_HANDS, 1: "SJ BJ", 3: "AS", 5: "KS"}
    state, _ = tribute_position((4, 2, 0), hands)
    assert state.phase is Phase.PLAY and state.turn == 4


def test_d_zlj_12_no_tribute_card_previous_big_leads() -> None:
    hands = {**WINNER_HANDS, 1: "QS JS", 3: "5S 6S", 5: "9S TS"}
    state, events = tribute_position((2, 4, 0), hands)  # catch-3, but nobody holds K or higher
    assert all(e.count == 0 for e in of_type(events, TributeGiven))
    assert not of_type(events, TributeOrdered)
    assert state.phase is Phase.PLAY and state.turn == 2
    assert state.hands == hands_from(hands)


# === §13 Options and the turn timer ==================================================================


def test_s13_option_defaults() -> None:
    options = Options()
    assert options.deals == 6
    assert options.reverse_tribute is ReverseTribute.PER_PLAYER
    assert options.resist is Resist.BIG_AND_SMALL
    assert options.turn_seconds == 0


def test_s13_no_timer_no_timeout() -> None:
    state = position({0: "5S 9S", 1: "9H", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0)
    with pytest.raises(RuleError):
        decide(state, Timeout(0, 1))


def test_s13_timeout_passes_when_passing_is_allowed() -> None:
    state = position({0: "5S 9S", 1: "4H 9H", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0, options=TIMER)
    state, _ = apply(state, P(0, "5S"))
    events = decide(state, Timeout(1, 7))
    assert events == (TurnTimedOut(1), Passed(1))


def test_s13_timeout_leads_the_lowest_single() -> None:
    # lowest by the 砸六家 order: 2 and 3 are high; 5 is the lowest here
    state = position({0: "2S 3D 5H BJ 9S", 1: "9H", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0, options=TIMER)
    events = decide(state, Timeout(0, 7))
    assert isinstance(events[0], TurnTimedOut) and events[0].seat == 0
    played = events[1]
    assert isinstance(played, CardsPlayed) and same(played.cards, "5H")
    assert default_action(state, 0, 7) == Play(0, played.cards)


def test_s13_timeout_with_a_last_card_goes_out() -> None:
    state = position({0: "3S", 1: "9H", 2: "9D", 3: "9C", 4: "8C", 5: "8D"}, leader=0, options=TIMER)
    events = decide(state, Timeout(0, 1))
    assert WentOut(0, 1) in events


def test_s13_timeout_pick_takes_the_highest() -> None:
    hands = {**WINNER_HANDS, 1: "BJ 3S KH", 3: "AS AH", 5: "KS 2D"}
    state, _ = tribute_position((0, 2, 1, 4), hands, TIMER)  # catch-2
    events = decide(state, Timeout(0, 1))
    assert isinstance(events[0], TurnTimedOut)
    picked = events[1]
    assert isinstance(picked, TributePicked)
    assert picked.seat == 0 and picked.cards is not None and same(picked.cards, "BJ 3S")


def test_s13_timeout_return_gives_the_lowest_returnable() -> None:
    hands = {**WINNER_HANDS, 0: "4S 4H 6D QS 9H KC", 1: "BJ 3S", 3: "AS AH", 5: "KS KH"}
    state, _ = tribute_position((0, 2, 1, 4), hands, TIMER)
    state, _ = apply(state, PickTribute(0, C("BJ 3S")), PickTribute(2, C("AS AH")), PickTribute(4, C("KS KH")))
    events = decide(state, Timeout(0, 1))
    returned = events[1]
    assert isinstance(returned, TributeReturned)
    assert returned.seat == 0 and returned.cards is not None and same(returned.cards, "6D 9H")


def test_s13_timeout_take_back_takes_the_highest() -> None:
    state, _ = tribute_position((0, 2, 1, 3, 4), CATCH1_HANDS, TIMER)
    state, _ = apply(
        state,
        PickTribute(0, C("KS")),
        PickTribute(2, C("BJ")),
        PickTribute(4, C("AS")),
        ReturnTribute(0, C("5H")),
        ReturnTribute(2, C("QS")),
        ReturnTribute(4, C("7S")),
    )
    assert state.turn == 1
    events = decide(state, Timeout(1, 1))
    taken = events[1]
    assert isinstance(taken, ReturnTakenBack)
    assert taken.seat == 1 and taken.cards is not None and same(taken.cards, "QS")


def test_s13_timeout_cut_is_seeded() -> None:
    state = _cut_state((3, 0, 1, 4, 5), TIMER)
    counts = set()
    for seed in range(20):
        events = decide(state, Timeout(4, seed))
        assert events[0] == TurnTimedOut(4)
        dealt = events[1]
        assert isinstance(dealt, HandsDealt)
        assert dealt.cutter == 4 and dealt.cut is not None and 1 <= dealt.cut <= 107
        assert decide(state, Timeout(4, seed)) == events
        counts.add(dealt.cut)
    assert len(counts) > 5, "the cut depends on the seed"


# === §14 Invariants =================================================================================


def _own_conservation(state: State) -> bool:
    pool = state.tribute.pool_cards() if state.tribute is not None else ()
    everything = [c for h in state.hands for c in h] + list(state.table) + list(state.played) + list(pool)
    return Counter(everything) == Counter(full_decks(2))


def test_s14_cards_conserved_and_replay_reaches_the_same_state() -> None:
    state, events = start(21, Options(deals=3))
    log = list(events)
    rng = SeededRandom(21)
    steps = 0
    while state.phase is not Phase.ENDED:
        command = random_step(state, rng)
        new = decide(state, command)  # type: ignore[arg-type]
        for e in new:
            state = replay((e,), state)
            log.append(e)
            if state.deal:  # from the first HandsDealt on, every state holds all 108 cards
                assert _own_conservation(state)
                assert conserved(state)
        steps += 1
        assert steps < 20000
    assert replay(log) == state
    assert replay(log) == replay(list(log))


def test_s14_same_commands_give_the_same_events() -> None:
    a = _play_match(12, Options(deals=2))[1]
    b = _play_match(12, Options(deals=2))[1]
    assert a == b


def test_s14_views_and_events_hide_other_hands() -> None:
    state, events = start(31)
    dealt = events[1]
    assert isinstance(dealt, HandsDealt)
    for seat in range(6):
        seen = view(state, seat)
        assert seen.hand == state.hands[seat]
        assert seen.hand_sizes == (18,) * 6
        mine = redact(dealt, seat)
        assert isinstance(mine, HandsDealt)
        assert mine.seed is None
        assert mine.hands[seat] == state.hands[seat]
        assert all(mine.hands[s] == () for s in range(6) if s != seat)
    spectator = redact(dealt, None)
    assert isinstance(spectator, HandsDealt) and all(h == () for h in spectator.hands)
    assert view(state, None).hand == ()


def test_s14_tribute_cards_seen_only_by_the_receiving_side() -> None:
    hands = {**WINNER_HANDS, 1: "BJ 3S", 3: "AS AH", 5: "KS KH"}
    _, events = tribute_position((0, 2, 1, 4), hands)
    gift = next(e for e in of_type(events, TributeGiven) if e.seat == 1)
    assert redact(gift, 1) == gift  # the giver
    for winner in (0, 2, 4):
        assert redact(gift, winner) == gift
    for other in (3, 5, None):
        hidden = redact(gift, other)
        assert isinstance(hidden, TributeGiven) and hidden.cards is None and hidden.count == 2
