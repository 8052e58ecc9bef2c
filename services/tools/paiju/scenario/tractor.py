"""拖拉机 scenarios: build the start position, apply the steps, report the result (`docs/cores.md`, "Scenarios")."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from paiju.rules import registry
from paiju.rules.cards import Cards, Suit, format_cards, parse_card, parse_cards
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import game
from paiju.rules.tractor.model import (
    DECKS,
    SEATS,
    Command,
    Cut,
    MakeBid,
    Options,
    Pass,
    Phase,
    Play,
    State,
    team_of,
)
from paiju.rules.tractor.model import (
    Counter as CounterBid,
)
from paiju.scenario.runner import ScenarioError, play_steps

PHASE_NAMES = {
    Phase.NEW: "ended",
    Phase.FLIP: "ended",
    Phase.CUT: "ended",
    Phase.BID: "bid",
    Phase.COUNTER: "counter",
    Phase.PLAY: "play",
    Phase.ENDED: "ended",
}
SUITS = {"S": Suit.SPADES, "H": Suit.HEARTS, "C": Suit.CLUBS, "D": Suit.DIAMONDS}
LEVEL_NAMES = ["3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"]


def _seat(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEATS:
        raise ScenarioError(f"{what} must be a seat 0..3, not {value!r}")
    return value


def _suit(value: Any, what: str) -> Suit:
    if value not in SUITS:
        raise ScenarioError(f"{what} must be one of S H C D, not {value!r}")
    return SUITS[value]


def _level(value: Any) -> int:
    text = "10" if value in ("T", "10") else str(value).upper()
    if text not in LEVEL_NAMES:
        raise ScenarioError(f"start.level must be a rank 3..A, not {value!r}")
    return LEVEL_NAMES.index(text)


def options_from(rules: dict[str, Any]) -> Options:
    known = {"round_minutes", "turn_seconds"}
    if set(rules) - known:
        raise ScenarioError(f"unknown 拖拉机 rule option(s) {sorted(set(rules) - known)}; known: {sorted(known)}")
    return Options(round_minutes=int(rules.get("round_minutes", 0)), turn_seconds=int(rules.get("turn_seconds", 0)))


def start_state(doc: dict[str, Any]) -> State:
    start = doc.get("start", {})
    raw = start.get("hands")
    if not isinstance(raw, dict):
        raise ScenarioError("start.hands must be an object of seat -> cards")
    hands: list[Cards] = [() for _ in range(SEATS)]
    for key, text in raw.items():
        if key not in {"0", "1", "2", "3"}:
            raise ScenarioError(f"start.hands: {key!r} is not a seat 0..3")
        hands[int(key)] = parse_cards(text, DECKS)
    everything = Counter(c for h in hands for c in h)
    if any(n > DECKS for n in everything.values()):
        raise ScenarioError("start.hands hold more copies of a card than six decks have")
    level = _level(start.get("level", "3"))
    options = options_from(doc.get("rules", {}))
    phase = start.get("phase", "play")
    dealer = _seat(start["dealer"], "start.dealer") if "dealer" in start else None
    levels = [0, 0]
    if dealer is not None:
        levels[team_of(dealer)] = level
    base = State(
        options=options,
        deal=1,
        levels=(levels[0], levels[1]),
        dealer=dealer,
        hands=tuple(hands),
        dealt=tuple(sorted(everything.elements())),
    )
    if phase == "play":
        if dealer is None:
            raise ScenarioError("a play start needs start.dealer")
        leader = _seat(start.get("leader", dealer), "start.leader")
        return replace(
            base,
            phase=Phase.PLAY,
            first_deal=False,
            trump=_suit(start.get("trump"), "start.trump"),
            turn=leader,
            leader=leader,
            attackers_points=int(start.get("points", 0)),
        )
    if phase == "bid":
        first_deal = bool(start.get("first_deal", False))
        flipped = parse_card(start["flipped"]) if first_deal else None
        if first_deal and "flipped" not in start:
            raise ScenarioError("a first-deal bid start needs start.flipped")
        drawer = start.get("first_drawer", dealer if dealer is not None else 0)
        if not first_deal and dealer is None:
            raise ScenarioError("a later-deal bid start needs start.dealer")
        return replace(
            base,
            phase=Phase.BID,
            first_deal=first_deal,
            flipped=flipped,
            first_drawer=_seat(drawer, "start.first_drawer"),
            dealer=None if first_deal else dealer,
        )
    raise ScenarioError(f'start.phase must be "play" or "bid" for tractor, not {phase!r}')


def command_for(step: dict[str, Any], index: int, seed: int) -> Command:
    seat = _seat(step.get("seat"), f"steps[{index}].seat")
    if "play" in step:
        return Play(seat, parse_cards(step["play"]))
    if step.get("pass") is True:
        return Pass(seat)
    for key, kind in (("bid", MakeBid), ("counter", CounterBid)):
        if key in step:
            body = step[key]
            if not isinstance(body, dict):
                raise ScenarioError(f'steps[{index}].{key} must be {{"suit": ..., "cards": ...}}')
            return kind(seat, _suit(body.get("suit"), f"steps[{index}].{key}.suit"), parse_cards(body.get("cards", "")))
    if "cut" in step:
        return Cut(seat, int(step["cut"]), SeededRandom(seed).fork(1000 + index).next64())
    raise ScenarioError(f"steps[{index}] has no tractor action: use play, pass, bid, counter or cut")


def result_of(state: State, steps: list[dict[str, Any]]) -> dict[str, Any]:
    trumps = game.trumps(state) if state.trump is not None else None
    order = trumps.order_key if trumps is not None else None
    final = state.counter or state.bid
    settlement = state.settlement
    return {
        "steps": steps,
        "hands": {str(s): format_cards(state.hands[s], order) for s in range(SEATS)},
        "phase": PHASE_NAMES[state.phase],
        "next": state.turn,
        registry.TRACTOR.name: {  # the game's own part of the result
            "tricks": [
                {"leader": t.leader, "winner": t.winner, "cards": len(t.plays[0]), "points": t.points}
                for t in state.tricks
            ],
            "attackers_points": settlement.attackers_points if settlement else state.attackers_points,
            "trump": state.trump.name[0] if state.trump is not None else None,
            "dealer": state.dealer,
            "bid": {"seat": final.seat, "suit": final.suit.name[0], "count": final.count} if final else None,
            "settlement": (
                {
                    "attackers_points": settlement.attackers_points,
                    "winner": settlement.winner,
                    "levels_up": settlement.levels_up,
                    "next_dealer": settlement.next_dealer,
                }
                if settlement
                else None
            ),
        },
    }


def run(doc: dict[str, Any]) -> dict[str, Any]:
    state, outcomes = play_steps(doc, start_state(doc), command_for, game.decide, game.replay)
    return result_of(state, outcomes)
