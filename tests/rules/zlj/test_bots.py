"""The 砸六家 bots: legal, deterministic, and the heuristic one plays sensibly (rules §3-§6, §10-§11)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from paiju.rules.cards import Cards, parse_cards
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import (
    Cut,
    Event,
    Options,
    Pass,
    Phase,
    PickTribute,
    Play,
    ReturnTribute,
    StartMatch,
    State,
    TakeBack,
    decide,
    legal_actions,
    replay,
)
from paiju.rules.zlj.bots import Bot, HeuristicBot, RandomBot, one_combination
from paiju.rules.zlj.combos import LEVEL_OF, classify, level_counts
from paiju.rules.zlj.model import SEATS, CardsPlayed, FourTake, Team, WentOut
from paiju.rules.zlj.outcome import match_score
from paiju.scenario.zlj import start_state

from ...support.profiles import examples

BotFactory = Callable[[int], Bot]


def play_match(seed: int, bots: Sequence[Bot], deals: int = 6) -> tuple[tuple[Event, ...], State]:
    """A whole match between ``bots`` (one per seat); every choice must be listed and accepted."""
    state = replay(decide(State(), StartMatch(seed, Options(deals=deals))))
    cut_seeds = SeededRandom(seed).fork(99)
    log: list[Event] = []
    while state.phase is not Phase.ENDED:
        seat = state.turn
        assert seat is not None
        action = bots[seat].choose(state, seat)
        assert action in legal_actions(state, seat), f"{action} is not a legal action of seat {seat}"
        if isinstance(action, Cut):
            action = replace(action, seed=cut_seeds.next64())  # the caller supplies the shuffle (§9)
        events = decide(state, action)  # raises if the rules reject the action
        log.extend(events)
        state = replay(events, state)
    return tuple(log), state


def table(seed: int, even: BotFactory, odd: BotFactory) -> list[Bot]:
    """Team A's seats (0, 2, 4) get ``even`` bots, team B's ``odd`` ones, each with its own seed."""
    return [(even if s % 2 == 0 else odd)(seed * SEATS + s) for s in range(SEATS)]


# --- (a) legality over whole matches --------------------------------------------------------------


@pytest.mark.parametrize(
    ("even", "odd"),
    [(RandomBot, RandomBot), (HeuristicBot, HeuristicBot), (HeuristicBot, RandomBot)],
    ids=["random", "heuristic", "mixed"],
)
@pytest.mark.parametrize("seed", range(examples(6)))  # all of them unless PAIJU_EXAMPLES scales down
def test_bots_only_make_legal_moves(seed: int, even: BotFactory, odd: BotFactory) -> None:
    events, state = play_match(1000 + seed, table(seed, even, odd))
    assert len(state.results) == 6
    assert any(isinstance(e, CardsPlayed) for e in events)


# --- (b) determinism --------------------------------------------------------------------------------


@pytest.mark.parametrize("factory", [RandomBot, HeuristicBot], ids=["random", "heuristic"])
def test_same_seeds_give_the_same_match(factory: BotFactory) -> None:
    first, _ = play_match(77, table(5, factory, factory))
    again, _ = play_match(77, table(5, factory, factory))
    assert first == again


def test_random_bot_seed_matters() -> None:
    a, _ = play_match(77, table(5, RandomBot, RandomBot), deals=1)
    b, _ = play_match(77, table(6, RandomBot, RandomBot), deals=1)
    assert a != b


# --- (c) the heuristic team beats a random team -----------------------------------------------------


def test_heuristic_team_beats_random_team() -> None:
    """10 matches of 6 deals (each deal seed twice, the heuristic bots on team A, then on team B).

    Measured with these seeds: heuristic 2048 points, random -166, the heuristic team winning 59 of the
    60 deals (the maximum is 2160 points, a catch-3 every deal). Over 40 other batches of 10 matches the
    gap was 2094..2304 points and the heuristic team won at least 57 deals of 60.
    """
    heuristic = random = won = 0
    for i in range(10):
        side = Team.A if i % 2 == 0 else Team.B
        even, odd = (HeuristicBot, RandomBot) if side is Team.A else (RandomBot, HeuristicBot)
        _, state = play_match(i // 2, table(i, even, odd))
        team_points = (
            sum(r.team_points[0] for r in state.results),
            sum(r.team_points[1] for r in state.results),
        )
        individual = tuple(sum(r.individual[s] for r in state.results) for s in range(SEATS))
        for s in range(SEATS):
            score = match_score(s, team_points, individual)
            if s in side.seats:
                heuristic += score
            else:
                random += score
        won += sum(r.winners is side for r in state.results)
    assert heuristic - random >= 1500, (heuristic, random)
    assert won >= 50, won


# --- (d) targeted positions -------------------------------------------------------------------------

FILLER = (
    "5D 6D 7D 8D 9D TD JD QD KD AD 2D 3D 5C 6C 7C",
    "8C 9C TC JC QC KC AC 2C 3C 5D 6D 7D 8D 9D TD",
    "JD QD KD AD 2D 3D 5C 6C 7C 8C 9C TC JC QC KC",
)
"""15 cards each for seats that only need to hold some; together with hands of spades and hearts
they never hold more than the two copies of a card that two decks have."""


def position(
    hands: dict[int, str],
    turn: int,
    current: tuple[int, str] | None = None,
    passed: frozenset[int] = frozenset(),
) -> State:
    """A play position like a scenario's start (scenario/zlj.py), optionally with a current play."""
    cards: list[Cards] = [() for _ in range(SEATS)]
    for seat, text in hands.items():
        cards[seat] = parse_cards(text, 2)
    on_table: Cards = parse_cards(current[1]) if current is not None else ()
    dealt = tuple(sorted([*(c for h in cards for c in h), *on_table]))
    assert all(dealt.count(c) <= 2 for c in dealt), "more copies than two decks hold"
    state = State(options=Options(), phase=Phase.PLAY, deal=1, hands=tuple(cards), turn=turn, dealt=dealt)
    if current is None:
        return replace(state, leader=turn)
    by = current[0]
    return replace(
        state,
        leader=by,
        current=classify(on_table),
        current_cards=on_table,
        current_by=by,
        passed=passed,
        table=on_table,
    )


def choose(state: State) -> tuple[Play | Pass, tuple[Event, ...]]:
    """The heuristic bot's action for the seat to act, and the events the rules give it."""
    seat = state.turn
    assert seat is not None
    action = HeuristicBot(1).choose(state, seat)
    assert isinstance(action, Play | Pass)
    return action, decide(state, action)


def levels(text_or_cards: str | Cards) -> list[int]:
    cards = parse_cards(text_or_cards) if isinstance(text_or_cards, str) else text_or_cards
    return sorted(LEVEL_OF[c] for c in cards)


@pytest.mark.parametrize("hand", ["5S 5H 6S 6H 7S 7H", "9S 9H 9S 9H", "4S 5S 6H 7H 8S 9S TS", "SJ BJ BJ"])
def test_leads_the_whole_hand_to_go_out(hand: str) -> None:
    """A hand that is one combination (§3) is played at once, though smaller parts are legal too."""
    state = position({0: hand, 1: FILLER[0], 2: FILLER[1], 3: FILLER[2]}, turn=0)
    action, events = choose(state)
    assert isinstance(action, Play)
    assert levels(action.cards) == levels(hand)
    assert WentOut(0, 1) in events


def test_follows_with_its_last_cards_to_go_out() -> None:
    state = position({1: FILLER[0], 2: "9S 9H", 3: FILLER[1]}, turn=2, current=(1, "7S 7H"))
    action, events = choose(state)
    assert isinstance(action, Play)
    assert WentOut(2, 1) in events


def test_leads_a_low_straight_and_keeps_high_cards() -> None:
    """Leading sheds low cards first, many at a time; the K, 2s and the joker wait (§6)."""
    state = position({0: "4S 5H 6S 7H 8S KH 2H 2S BJ", 1: FILLER[0], 2: FILLER[1]}, turn=0)
    action, _ = choose(state)
    assert isinstance(action, Play)
    assert levels(action.cards) == levels("4S 5S 6S 7S 8S")


def test_passes_on_a_partners_winning_play() -> None:
    """Seat 0, seat 2's partner (§1), holds the round with a K: seat 2 could beat it with its A but passes."""
    hands = {0: FILLER[0], 1: FILLER[1], 2: "AS 5H 6H 9S JS JH", 3: FILLER[2]}
    state = position(hands, turn=2, current=(0, "KS"), passed=frozenset({1}))
    action, events = choose(state)
    assert action == Pass(2)
    assert events
    # the same play by an opponent is beaten, with the cheapest single that does it
    state = position(hands, turn=2, current=(1, "KS"))
    action, _ = choose(state)
    assert isinstance(action, Play)
    assert levels(action.cards) == levels("AS")


def test_takes_an_opponents_bomb_with_fours() -> None:
    """4取炸弹 (§5): three 4s take seat 1's four 7s into seat 2's hand."""
    hands = {0: FILLER[0], 1: FILLER[1], 2: "4S 4H 4S 9S TH", 3: FILLER[2]}
    state = position(hands, turn=2, current=(1, "7S 7H 7S 7H"))
    action, events = choose(state)
    assert isinstance(action, Play)
    assert levels(action.cards) == levels("4S 4S 4H")
    take = next(e for e in events if isinstance(e, FourTake))
    assert take.taken_from == 1
    assert levels(take.taken) == levels("7S 7H 7S 7H")
    # a partner's bomb is left alone
    state = position(hands, turn=2, current=(0, "7S 7H 7S 7H"), passed=frozenset({1}))
    action, _ = choose(state)
    assert action == Pass(2)


def test_keeps_its_bomb_against_a_low_single_from_a_full_hand() -> None:
    """Only the bomb beats seat 1's 5 (§4); seat 1 still holds 15 cards, so the bomb is kept.

    (After the bomb of 8s the hand would be 4 4 5 5, not one combination: the bot could not go out next.)
    """
    hands = {0: FILLER[0], 1: FILLER[1], 2: "4S 4H 5H 5H 8S 8H 8S", 3: FILLER[2]}
    state = position(hands, turn=2, current=(1, "5S"))
    action, _ = choose(state)
    assert action == Pass(2)
    # with a single that beats the 5, the single goes, not the bomb
    state = position({**hands, 2: "4S 4H 5H 5H 8S 8H 8S JS"}, turn=2, current=(1, "5S"))
    action, _ = choose(state)
    assert isinstance(action, Play)
    assert levels(action.cards) == levels("JS")
    # when seat 1 is about to go out, the bomb comes out
    state = position({**hands, 1: "9C TC"}, turn=2, current=(1, "5S"))
    action, events = choose(state)
    assert isinstance(action, Play)
    assert classify(action.cards).is_bomb
    assert events


def test_tribute_pick_return_and_take_back() -> None:
    """Catch-1 (§7): each loser gives one card (§10). Seat 0 picks the highest, returns its loose 5
    rather than a card of its pair or straight (§11); seat 1, who gave the big joker, takes back the best."""
    doc = {
        "rules": {},
        "start": {
            "phase": "tribute",
            "previous": {"order": [0, 1, 2, 3, 4], "caught": [5]},
            "hands": {
                "0": "5S 7S 7H 9S TS JS",
                "1": "BJ 5D 6D",
                "2": "6H 8H KH",
                "3": "2S 5C 6C",
                "4": "QH QS 7C",
                "5": "KS 7D 8D",
            },
        },
    }
    state = start_state(doc)
    bot = HeuristicBot(3)
    chosen: list[tuple[int, list[int]]] = []
    while state.phase in (Phase.PICK, Phase.RETURN, Phase.TAKE_BACK):
        seat = state.turn
        assert seat is not None
        action = bot.choose(state, seat)
        assert isinstance(action, PickTribute | ReturnTribute | TakeBack)
        chosen.append((seat, levels(action.cards)))
        state = replay(decide(state, action), state)
    assert state.phase is Phase.PLAY
    assert chosen == [
        (0, levels("BJ")),  # picks in finishing order, the highest first
        (2, levels("2S")),
        (4, levels("KS")),
        (0, levels("5S")),  # not a 7 of its pair, nor its 9 10 J straight
        (2, levels("6H")),  # its lowest loose card
        (4, levels("7C")),  # not a Q of its pair
        (1, levels("7C")),  # take-back by the size of the tribute: the big joker's giver first
        (3, levels("6H")),
        (5, levels("5S")),
    ]


def test_one_combination() -> None:
    for text in ["5S", "5S 5H", "2S 2H 2C", "4S 5S 6S", "4S 4H 5S 5H 6S 6H", "SJ BJ", "SJ SJ BJ BJ"]:
        assert one_combination(level_counts(parse_cards(text))), text
    for text in ["SJ SJ", "BJ BJ", "QS KS AS 2S", "4S 5S", "4S 4H 5S 5H", "5S 6S 6H 7S"]:
        assert not one_combination(level_counts(parse_cards(text))), text
