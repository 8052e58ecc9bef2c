"""The 拖拉机 bots: legal, deterministic, blind to other hands, and the heuristic one plays sensibly.

Rules: docs/rules/tractor.md (§5 trick winner, §6 following, §8 cut, D-TR-6 concealed bidding).
Positions are built with the scenario runner's `start_state`; the expected plays are reasoned from the rules
and the bot's documented heuristics, not copied from its output.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

import pytest

from paiju.rules.cards import Cards, Suit, parse_cards
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor.bots import HeuristicBot, RandomBot
from paiju.rules.tractor.game import decide, legal_actions, replay, waiting
from paiju.rules.tractor.model import (
    SEATS,
    Counter,
    Cut,
    DealSettled,
    Event,
    GameEnded,
    MakeBid,
    Pass,
    Phase,
    Play,
    Redeal,
    SeatAction,
    StartGame,
    State,
    TrickWon,
    TrumpDeclared,
    team_of,
)
from paiju.rules.tractor.settlement import card_points
from paiju.scenario.tractor import start_state

from ...support.profiles import examples


class Bot(Protocol):
    def choose(self, state: State, seat: int) -> SeatAction: ...


BotFactory = Callable[[int], Bot]
CONCEALED = (Phase.BID, Phase.COUNTER)


def play(seed: int, bots: Sequence[Bot], deals: int) -> tuple[list[Event], State]:
    """Play ``deals`` deals (or to the game's end); every action must be accepted by ``decide``.

    While bids are concealed every waiting seat chooses on the same state, as at a real table (D-TR-6.2).
    Non-play actions must be listed by ``legal_actions``; a `Cut` gets the caller's shuffle seed (§8).
    """
    seeds = SeededRandom(seed).fork(99)
    log: list[Event] = list(decide(State(), StartGame(seed)))
    state = replay(log)
    settled = 0
    while state.phase is not Phase.ENDED and settled < deals:
        if state.phase is Phase.FLIP:
            commands: list[Any] = [Redeal(seeds.next64())]
        else:
            seats = waiting(state) if state.phase in CONCEALED else waiting(state)[:1]
            assert seats, f"nobody may act in the {state.phase.value} phase"
            commands = []
            for seat in seats:
                action = bots[seat].choose(state, seat)
                if not isinstance(action, Play):
                    assert action in legal_actions(state, seat), f"{action} is not legal for seat {seat}"
                if isinstance(action, Cut):
                    action = replace(action, seed=seeds.next64())
                commands.append(action)
        for command in commands:
            events = decide(state, command)  # raises if the rules reject the action
            log.extend(events)
            state = replay(events, state)
            settled += sum(isinstance(e, DealSettled) for e in events)
    return log, state


def table(seed: int, team_a: BotFactory, team_b: BotFactory) -> list[Bot]:
    """Seats 0, 2 (team A) get ``team_a`` bots, seats 1, 3 ``team_b`` ones, each with its own seed."""
    return [(team_a if s % 2 == 0 else team_b)(seed * SEATS + s) for s in range(SEATS)]


# --- (a) legality -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("team_a", "team_b"),
    [(HeuristicBot, HeuristicBot), (HeuristicBot, RandomBot), (RandomBot, HeuristicBot)],
    ids=["heuristic", "heuristic-vs-random", "random-vs-heuristic"],
)
@pytest.mark.parametrize("seed", range(examples(4)))  # all of them unless PAIJU_EXAMPLES scales down
def test_bots_only_make_legal_moves(seed: int, team_a: BotFactory, team_b: BotFactory) -> None:
    """Three deals per table: a first deal (flip, bids, counters) and two later deals with a cut."""
    log, _ = play(500 + seed, table(seed, team_a, team_b), deals=3)
    assert sum(isinstance(e, DealSettled) for e in log) == 3
    assert sum(isinstance(e, TrickWon) for e in log) >= 3 * 20  # 81 cards a seat: many tricks per deal


def test_heuristic_bots_play_a_whole_game() -> None:
    log, state = play(4242, table(3, HeuristicBot, HeuristicBot), deals=200)
    assert state.phase is Phase.ENDED
    assert isinstance(log[-1], GameEnded)


# --- (b) determinism --------------------------------------------------------------------------------


@pytest.mark.parametrize("factory", [RandomBot, HeuristicBot], ids=["random", "heuristic"])
def test_same_seeds_give_the_same_events(factory: BotFactory) -> None:
    first, _ = play(77, table(5, factory, factory), deals=2)
    again, _ = play(77, table(5, factory, factory), deals=2)
    assert first == again


def test_heuristic_bot_reads_only_its_own_hand() -> None:
    """Redistributing the other seats' cards (same sizes) never changes the bot's choice (§12)."""
    _, start = play(9, table(1, RandomBot, RandomBot), deals=0)  # dealt, bidding not yet started
    states: list[State] = [start]
    log, _ = play(9, table(1, HeuristicBot, HeuristicBot), deals=1)
    state = State()
    for i, event in enumerate(log):
        state = replay([event], state)
        if state.phase in (Phase.PLAY, *CONCEALED) and i % 23 == 0:
            states.append(state)
    assert len(states) > 10
    mix = SeededRandom(3)
    for state in states:
        for seat in waiting(state)[:1]:
            others = [c for s in range(SEATS) if s != seat for c in state.hands[s]]
            mix.shuffle(others)
            hands: list[Cards] = []
            for s in range(SEATS):
                if s == seat:
                    hands.append(state.hands[s])
                else:
                    size = len(state.hands[s])
                    hands.append(tuple(sorted(others[:size])))
                    others = others[size:]
            shuffled = replace(state, hands=tuple(hands))
            assert HeuristicBot(seat).choose(state, seat) == HeuristicBot(seat).choose(shuffled, seat)


# --- (c) the heuristic team beats a random team -----------------------------------------------------


def first_deal(seed: int, heuristic_team: int) -> tuple[int, int, int]:
    """One first deal, heuristic bots on ``heuristic_team``: (its card points, the others', dealer team)."""
    bots = table(seed, *((HeuristicBot, RandomBot) if heuristic_team == 0 else (RandomBot, HeuristicBot)))
    log, _ = play(seed, bots, deals=1)
    won = [0, 0]
    for e in log:
        if isinstance(e, TrickWon):
            won[team_of(e.winner)] += e.points
    settled = [e for e in log if isinstance(e, DealSettled)]
    assert len(settled) == 1 and sum(won) == 600
    dealer = next(e.dealer for e in log if isinstance(e, TrumpDeclared))
    return won[heuristic_team], won[1 - heuristic_team], team_of(dealer)


def test_heuristic_team_beats_random_team() -> None:
    """8 deal seeds, each played twice: the heuristic bots on team A, then on team B.

    A deal is won by the heuristic team when it holds the deal as dealers (attackers below 240) or takes it
    as attackers (240 or more) (§9). Measured with these seeds: the heuristic team won 15 of the 16 deals
    and took 73.9% of the 600 card points of each deal. Over 40 other batches of 16 deals it won 13..16
    deals and took 73.4%..81.3% of the card points; attacking (about 30% of the deals: it wins most
    first-deal biddings, so it mostly defends) it averaged 410..516 points a deal, the random team 100..172.
    """
    heuristic = random = deals_won = 0
    for seed in range(8):
        for side in (0, 1):
            ours, theirs, dealer_team = first_deal(3000 + seed, side)
            heuristic += ours
            random += theirs
            attackers_points = ours if dealer_team != side else theirs
            deals_won += (attackers_points >= 240) == (dealer_team != side)
    assert deals_won >= 12, deals_won
    assert heuristic >= 0.65 * (heuristic + random), (heuristic, random)


def test_heuristic_bot_is_fast() -> None:
    """Mean decision time over a deal at a full table, with a wide margin (measured about 0.3 ms)."""
    bots = table(2, HeuristicBot, HeuristicBot)
    timed = [0.0, 0]

    class Timed:
        def __init__(self, bot: Bot) -> None:
            self.bot = bot

        def choose(self, state: State, seat: int) -> SeatAction:
            start = time.perf_counter()
            action = self.bot.choose(state, seat)
            timed[0] += time.perf_counter() - start
            timed[1] += 1
            return action

    play(11, [Timed(b) for b in bots], deals=1)
    assert timed[1] > 100
    assert timed[0] / timed[1] < 0.005


# --- (d) positions ----------------------------------------------------------------------------------


def position(
    hands: dict[int, str], plays: Sequence[tuple[int, str]] = (), *, leader: int = 0, trump: str = "S"
) -> State:
    """A play position at level 3 with seat 0 dealing, after ``plays`` of the current trick."""
    doc = {
        "start": {
            "hands": {str(s): text for s, text in hands.items()},
            "level": "3",
            "dealer": 0,
            "leader": leader,
            "trump": trump,
        }
    }
    state = start_state(doc)
    for seat, cards in plays:
        state = replay(decide(state, Play(seat, parse_cards(cards))), state)
    return state


def bot_play(state: State, seat: int) -> Cards:
    action = HeuristicBot(1).choose(state, seat)
    assert isinstance(action, Play)
    decide(state, action)  # legal
    return tuple(sorted(action.cards))


def cards(text: str) -> Cards:
    return tuple(sorted(parse_cards(text)))


def trick_winner_after(state: State, seat: int, played: Cards) -> int:
    won = [e for e in decide(state, Play(seat, played)) if isinstance(e, TrickWon)]
    assert len(won) == 1
    return won[0].winner


def test_feeds_points_to_a_partner_whose_single_cannot_be_beaten() -> None:
    # partner (seat 0) leads the A of hearts, the top plain card: seat 2 gives a 10 (§5, ties to the leader)
    state = position(
        {0: "AH 4D", 1: "4H 4D", 2: "TH 6H 7H 4C 9D", 3: "QH 4D"},
        [(0, "AH"), (1, "4H")],
    )
    assert bot_play(state, 2) == cards("TH")


def test_does_not_feed_a_partner_who_can_still_be_beaten() -> None:
    # partner's 9 of hearts can be beaten by seat 3: no points, the lowest heart
    state = position(
        {0: "9H 4D", 1: "4H 4D", 2: "TH 6H 7H 4C 9D", 3: "QH 4D"},
        [(0, "9H"), (1, "4H")],
    )
    assert bot_play(state, 2) == cards("6H")


def test_feeds_a_pair_of_kings_playing_last_behind_a_winning_partner() -> None:
    # seat 3 leads a pair, partner (seat 0) wins it with A A; seat 2 plays last: the K pair (20 points),
    # not the 5 pair the requirement would name first
    state = position(
        {0: "AH AH 4D", 1: "7H 8H 4D", 2: "KH KH 5H 5H 9H 9H 4C", 3: "6H 6H 4D"},
        [(3, "6H 6H"), (0, "AH AH"), (1, "7H 8H")],
        leader=3,
    )
    played = bot_play(state, 2)
    assert played == cards("KH KH")
    assert card_points(played) == 20


def test_trumps_a_trick_with_points_when_void() -> None:
    # spades are trump; seat 3 has no hearts, the trick holds 25 points: the cheapest trump wins it (将吃)
    state = position(
        {0: "KH 4D", 1: "TH 4D", 2: "5H 4D", 3: "4S 6S 2C 4C 9C 8D"},
        [(0, "KH"), (1, "TH"), (2, "5H")],
    )
    played = bot_play(state, 3)
    assert played == cards("4S")
    assert trick_winner_after(state, 3, played) == 3


def test_keeps_its_trumps_on_a_trick_without_points() -> None:
    state = position(
        {0: "9H 4D", 1: "7H 4D", 2: "6H 4D", 3: "4S 6S 2C 4C 9C 8D"},
        [(0, "9H"), (1, "7H"), (2, "6H")],
    )
    assert bot_play(state, 3) == cards("4C")  # the lowest non-point card, no trump


def test_wins_cheaply_playing_last() -> None:
    state = position(
        {0: "QH 4D", 1: "4H 4D", 2: "6H 4D", 3: "AH KH 4H 7C"},
        [(0, "QH"), (1, "4H"), (2, "6H")],
    )
    played = bot_play(state, 3)
    assert played == cards("KH")  # the lowest heart above Q, and its 10 points stay with the team
    assert trick_winner_after(state, 3, played) == 3


def test_gives_nothing_when_it_cannot_win() -> None:
    state = position(
        {0: "AH 4D", 1: "KH TH 5H 4H 8C", 2: "6H 4D", 3: "7H 4D"},
        [(0, "AH")],
    )
    assert bot_play(state, 1) == cards("4H")


def test_leads_an_unbeatable_tractor() -> None:
    state = position({0: "AC AC KC KC 5D TD 4H 9H", 1: "4D", 2: "4D", 3: "4D"})
    assert bot_play(state, 0) == cards("AC AC KC KC")


def test_does_not_lead_points_into_strength() -> None:
    state = position({0: "TD KD 5H 4C 9C", 1: "4D", 2: "4D", 3: "4D"})
    assert bot_play(state, 0) == cards("4C")


def bid_position(hands: dict[int, str], *, first_deal: bool = False, flipped: str | None = None) -> State:
    start: dict[str, Any] = {"hands": {str(s): t for s, t in hands.items()}, "level": "3", "phase": "bid"}
    if first_deal:
        start |= {"first_deal": True, "flipped": flipped, "first_drawer": 0}
    else:
        start["dealer"] = 0
    return start_state({"start": start})


LONG_HEARTS = "3H 3H 3H 4H 6H 7H 8H 9H TH JH QH KH AH 5C 7D"


def test_bids_on_several_level_cards_and_passes_on_one() -> None:
    state = bid_position({0: "3S 4C 5D 6H 7S", 1: LONG_HEARTS, 2: "3C 3C 4C 5C 6D", 3: "4D"})
    assert HeuristicBot(1).choose(state, 1) == MakeBid(1, Suit.HEARTS, cards("3H 3H 3H"))
    assert HeuristicBot(1).choose(state, 0) == Pass(0)  # one level card
    assert HeuristicBot(1).choose(state, 2) == Pass(2)  # two level cards of a short suit


def test_first_deal_bid_shows_the_flipped_card() -> None:
    state = bid_position({0: "4D", 1: LONG_HEARTS, 2: "4D", 3: "4D"}, first_deal=True, flipped="7D")
    assert HeuristicBot(1).choose(state, 1) == MakeBid(1, Suit.HEARTS, cards("3H 3H 3H 7D"))


def test_counters_only_with_clearly_more_level_cards() -> None:
    state = bid_position({0: "3S 4C", 1: LONG_HEARTS, 2: "4D", 3: "3D 3D 4C 5C"})
    for command in (MakeBid(0, Suit.SPADES, cards("3S")), Pass(1), Pass(2), Pass(3)):
        state = replay(decide(state, command), state)
    assert state.phase is Phase.COUNTER and waiting(state) == (1, 3)
    assert HeuristicBot(1).choose(state, 1) == Counter(1, Suit.HEARTS, cards("3H 3H 3H"))
    assert HeuristicBot(1).choose(state, 3) == Pass(3)  # 2 against 1 in a short suit


def test_cut_is_a_legal_count() -> None:
    _, state = play(21, table(4, HeuristicBot, HeuristicBot), deals=1)
    assert state.phase is Phase.CUT and state.turn is not None
    action = HeuristicBot(8).choose(state, state.turn)
    assert isinstance(action, Cut) and action in legal_actions(state, state.turn)
