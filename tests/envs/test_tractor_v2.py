"""`tractor_v2` (paiju.envs.tractor_v2): every legal 拖拉机 play is expressible a card at a time, and only legal plays.

- Exhaustively, over seeded follow positions built to be rich in pairs, triples, bombs, tractors and special
  tractors: the plays reachable through the masks are exactly the plays `check_follow` accepts (§6, D-TR-5).
- Over seeded whole deals: every masked-in sequence is a play the rules core accepts (the core decides every play);
  at every follow, the plays a strategy makes (the heuristic bot, the lowest follow, random free cards) and plays
  found by walking from them through `check_follow` alone are reachable; late in a deal, when a hand is small
  enough, every accepted follow is.
- PettingZoo's own api_test passes; the same seed and actions give the same deal; the deprecated ``tractor_env``
  says so.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test

from paiju.envs import tractor_env
from paiju.envs.agent import ComposingPolicyBot
from paiju.envs.compose import Composer
from paiju.envs.tractor_v2 import ACTIONS, END, tractor_v2
from paiju.rules.cards import Card, Cards, Suit
from paiju.rules.errors import IllegalAction
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots
from paiju.rules.tractor.combos import Combo, Kind, classify
from paiju.rules.tractor.follow import check_follow, make_follow
from paiju.rules.tractor.game import leads, trumps, trumps_for
from paiju.rules.tractor.model import Phase, Play
from paiju.rules.tractor.order import LEVEL_RANKS, TRUMP, Trumps

pytestmark = pytest.mark.unit


def reachable(composer_of: Composer) -> bool:
    """Whether the composer's cards so far were each masked in (re-composed from scratch)."""
    composer = Composer(composer_of.hand, composer_of.lead, composer_of.trumps)
    for card in composer_of.cards:
        nexts, _ = composer.options()
        if card not in nexts:
            return False
        composer.add(card)
    return True


def expressible(hand: Cards, lead: Combo | None, t: Trumps, play: Cards) -> bool:
    """Whether ``play`` is reachable through the masks: each card masked in, in ascending order, then complete."""
    composer = Composer(hand, lead, t)
    for card in sorted(play):
        nexts, _ = composer.options()
        if card not in nexts:
            return False
        composer.add(card)
    return composer.complete() if lead is not None else composer.options()[1]


def every_reachable(hand: Cards, lead: Combo, t: Trumps) -> set[Cards]:
    """Every follow the masks reach (a depth-first walk over them)."""
    found: set[Cards] = set()

    def walk(cards: list[Card]) -> None:
        composer = Composer(hand, lead, t)
        for card in cards:
            composer.add(card)
        if composer.complete():
            found.add(tuple(cards))
            return
        nexts, _ = composer.options()
        assert nexts, f"a dead end after {cards}: the mask promised a legal play"
        for card in nexts:
            walk([*cards, card])

    walk([])
    return found


def submultisets(cards: list[Card], n: int) -> Iterator[Cards]:
    items = sorted(Counter(cards).items())

    def rec(i: int, left: int, acc: tuple[Card, ...]) -> Iterator[Cards]:
        if left == 0:
            yield acc
            return
        if i == len(items):
            return
        c, k = items[i]
        for take in range(min(k, left), -1, -1):
            yield from rec(i + 1, left - take, acc + (c,) * take)

    yield from rec(0, n, ())


def accepted(hand: Cards, lead: Combo, t: Trumps, candidates: Iterator[Cards]) -> set[Cards]:
    legal = set()
    for play in candidates:
        try:
            check_follow(lead, hand, play, t)
        except IllegalAction:
            continue
        legal.add(tuple(sorted(play)))
    return legal


def positions(seed: int, count: int, structured: bool) -> Iterator[tuple[Cards, Combo, Trumps]]:
    """Seeded follow positions whose hands hold many copies of a few neighbouring cards of the led suit class."""
    rng = SeededRandom(seed)
    made = 0
    while made < count:
        t = trumps_for(LEVEL_RANKS[rng.below(12)], Suit(rng.below(4)))
        cls = rng.below(5)
        pool = sorted((Card(c) for c in range(54) if t.suit_class[c] == cls), key=lambda c: (t.chain[c] or (9, c), c))
        if not pool:
            continue
        start = rng.below(len(pool))
        lead_hand = tuple(sorted(c for c in pool[start : start + 5] for _ in range(1 + rng.below(6))))
        options = [cards for cards in leads(lead_hand, t) if len(cards) >= 2]
        if structured:
            options = [cards for cards in options if len(set(cards)) > 1 and len(cards) >= 4]
        if not options:
            continue
        lead = classify(options[rng.below(len(options))], t)
        start = rng.below(len(pool))
        own = [c for c in pool[start : start + 3 + rng.below(5)] for _ in range(1 + rng.below(6))]
        others = [Card(c) for c in range(54) if t.suit_class[c] != cls]
        hand = tuple(sorted(own + [others[rng.below(len(others))] for _ in range(rng.below(6))]))
        if len(own) <= lead.size or sum(1 for _ in submultisets(own, lead.size)) > 4000:
            continue
        made += 1
        yield hand, lead, t


@pytest.mark.parametrize("structured", [False, True], ids=["pairs-triples-bombs", "tractors"])
def test_the_masks_reach_exactly_the_follows_the_rules_accept(structured: bool) -> None:
    kinds: Counter[Kind] = Counter()
    for hand, lead, t in positions(11 if structured else 12, 250, structured):
        own = [c for c in hand if t.suit_class[c] == lead.suit_class]
        legal = accepted(hand, lead, t, submultisets(own, lead.size))
        assert legal, "a follow is always possible"
        assert every_reachable(hand, lead, t) == legal, (hand, lead, t)
        kinds[lead.kind] += 1
    wanted = {Kind.TRACTOR, Kind.SPECIAL_TRACTOR} if structured else {Kind.PAIR, Kind.TRIPLE, Kind.BOMB}
    assert wanted <= set(kinds), f"every kind of lead was tried: {kinds}"


def walked(hand: Cards, lead: Combo, t: Trumps, start: Cards, rng: SeededRandom, *, steps: int) -> Iterator[Cards]:
    """Follows found from ``start`` by swapping one card for another held one, kept when `check_follow` accepts."""
    play = list(start)
    for _ in range(steps):
        rest = Counter(hand)
        rest.subtract(play)
        spare = [c for c, k in rest.items() if k > 0]
        if not spare:
            return
        trial = list(play)
        trial[rng.below(len(trial))] = spare[rng.below(len(spare))]
        try:
            check_follow(lead, hand, tuple(sorted(trial)), t)
        except IllegalAction:
            continue
        play = trial
        yield tuple(sorted(play))


def test_over_whole_deals_every_masked_play_is_legal_and_every_strategys_play_is_expressible() -> None:
    """Random play through the masks (the rules core refuses any illegal play, so each deal finishing is the
    soundness check); at each follow, strategies' plays and plays walked from them are reachable."""
    env = tractor_v2()
    rng = SeededRandom(5)
    heuristic = {s: bots.HeuristicBot(s) for s in range(4)}
    follows = exhaustive = plays = 0
    for deal in range(6):
        env.reset(seed=100 + deal)
        for agent in env.agent_iter():
            observation, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            state = env.state
            seat = int(agent.removeprefix("seat_"))
            composer = env._composer
            if composer is not None and not composer.cards:
                t = trumps(state)
                hand = state.hands[seat]
                if state.trick is None:
                    assert all(expressible(hand, None, t, cards) for cards in leads(hand, t))
                else:
                    lead = state.trick.lead
                    follows += 1
                    order = list(hand)
                    rng.shuffle(order)
                    starts = [
                        heuristic[seat].choose(state, seat).cards,  # type: ignore[union-attr]
                        make_follow(lead, hand, t),
                        make_follow(lead, hand, t, order),
                    ]
                    for start in starts:
                        for play in (start, *walked(hand, lead, t, start, rng, steps=8)):
                            plays += 1
                            assert expressible(hand, lead, t, play), (hand, lead, play)
                    own = [c for c in hand if t.suit_class[c] == lead.suit_class]
                    pool = own if len(own) > lead.size else list(hand)
                    if len(pool) <= 14:
                        exhaustive += 1
                        legal = accepted(hand, lead, t, submultisets(pool, lead.size))
                        assert every_reachable(hand, lead, t) == legal
            mask = observation["action_mask"]
            assert mask.shape == (ACTIONS,) and mask.any()
            choices = np.flatnonzero(mask)
            env.step(int(choices[rng.below(len(choices))]))
        assert env.state.settlement is not None, "the deal was played to its settlement"
    assert follows > 1000 and exhaustive > 50 and plays > 5 * follows


def test_a_lead_ends_on_end_or_when_nothing_extends_it() -> None:
    env = tractor_v2()
    env.reset(seed=3)
    while env.state.phase is not Phase.PLAY:
        observation, *_ = env.last()
        env.step(int(np.flatnonzero(observation["action_mask"])[-1]))  # a bid when there is one
    seat = env.state.turn
    hand = env.state.hands[seat]
    t = trumps(env.state)
    pair = next(cards for cards in leads(hand, t) if len(cards) == 2 and t.suit_class[cards[0]] != TRUMP)
    observation, *_ = env.last()
    assert observation["action_mask"][pair[0]] and not observation["action_mask"][END]
    env.step(pair[0])
    observation, *_ = env.last()
    assert env.agent_selection == f"seat_{seat}", "the same seat composes on"
    assert observation["action_mask"][END], "a single card is a lead"
    assert observation["observation"][3 * 54 + pair[0]] == 1, "the composed card is observed"
    env.step(pair[1])
    if env.state.trick is None:  # the pair could grow (a triple, a tractor): END plays it
        observation, *_ = env.last()
        assert observation["action_mask"][END]
        env.step(END)
    assert env.state.trick is not None and env.state.trick.plays == (pair,)


def test_expressed_turns_a_bots_choice_into_actions() -> None:
    env = tractor_v2()
    env.reset(seed=8)
    bot = {s: bots.HeuristicBot(s) for s in range(4)}
    for agent in env.agent_iter():
        _, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            continue
        seat = int(agent.removeprefix("seat_"))
        for index in env.expressed(bot[seat].choose(env.state, seat)):
            env.step(index)
    assert env.state.settlement is not None


def test_pettingzoos_api_test_passes() -> None:
    api_test(tractor_v2(), num_cycles=400, verbose_progress=False)


def test_the_same_seed_and_actions_give_the_same_deal() -> None:
    def run(seed: int) -> list[bytes]:
        env = tractor_v2()
        env.reset(seed=seed)
        rng = SeededRandom(2)
        seen = []
        for _ in env.agent_iter(max_iter=600):
            observation, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            seen.append(observation["observation"].tobytes())
            choices = np.flatnonzero(observation["action_mask"])
            env.step(int(choices[rng.below(len(choices))]))
        return seen

    assert run(4) == run(4)
    assert run(4) != run(5)


def test_an_unmasked_action_is_refused() -> None:
    env = tractor_v2()
    env.reset(seed=1)
    observation, *_ = env.last()
    with pytest.raises(ValueError, match="not legal now"):
        env.step(int(np.flatnonzero(observation["action_mask"] == 0)[0]))


def test_the_old_environment_is_deprecated() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tractor_env()
    assert any(issubclass(w.category, DeprecationWarning) and "tractor_v2" in str(w.message) for w in caught)


def test_the_observation_is_what_the_seats_view_holds() -> None:
    env = tractor_v2()
    rng = SeededRandom(6)
    for deal in range(2):
        env.reset(seed=30 + deal)
        for agent in env.agent_iter():
            observation, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            seat = int(agent.removeprefix("seat_"))
            view = env.rules.view(env.state, seat)
            vector = observation["observation"]

            def counts(cards: Sequence[int]) -> list[int]:
                return [int(n) for n in np.bincount(np.asarray(cards, dtype=np.intp), minlength=54)]

            table = [c for play in view.trick.plays for c in play] if view.trick is not None else []
            played = [c for done in view.tricks for play in done.plays for c in play]
            assert vector[:54].tolist() == counts(list(view.hand)), "its own hand"
            assert vector[54:108].tolist() == counts(table)
            assert vector[108:162].tolist() == counts(played)
            composer = env._composer
            assert vector[162:216].tolist() == counts(composer.cards if composer is not None else [])
            assert vector[-1 - 4 : -1].tolist() == list(view.hand_sizes)
            choices = np.flatnonzero(observation["action_mask"])
            env.step(int(choices[rng.below(len(choices))]))


def test_a_composing_policy_bot_plays_from_the_seats_view_what_the_policy_composes() -> None:
    """`ComposingPolicyBot` at a real table: from the seat's view and legal actions it asks the policy with the same
    observations and masks as the environment, and plays what the same choices play in the environment."""
    env = tractor_v2()
    env.reset(seed=12)
    rng = SeededRandom(3)
    plays = 0
    while env.agents and not env.terminations[env.agent_selection]:
        seat = int(env.agent_selection.removeprefix("seat_"))
        hand = env.state.hands[seat]
        asked: list[tuple[dict[str, Any], int]] = []

        def policy(observation: dict[str, Any], asked: list[tuple[dict[str, Any], int]] = asked) -> int:
            allowed = np.flatnonzero(observation["action_mask"])
            asked.append((observation, int(allowed[rng.below(len(allowed))])))
            return asked[-1][1]

        chosen = ComposingPolicyBot(policy).choose_view(
            env.rules.view(env.state, seat), env.rules.legal_actions(env.state, seat)
        )
        for by_bot, index in asked:
            observation, *_ = env.last()
            assert (observation["observation"] == by_bot["observation"]).all()
            assert (observation["action_mask"] == by_bot["action_mask"]).all()
            env.step(index)
        if isinstance(chosen, Play):
            plays += 1
            left = Counter(hand)
            left.subtract(chosen.cards)
            assert sorted(left.elements()) == list(env.state.hands[seat]), "the environment played the same cards"
    assert plays > 200, "a whole deal"
