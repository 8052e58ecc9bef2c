"""砸六家 scenarios: build the start position, apply the steps, report the result (`docs/cores.md`, "Scenarios")."""

from __future__ import annotations

from collections import Counter
from typing import Any

from paiju.rules import registry
from paiju.rules.cards import Cards, format_cards, parse_cards
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj import game
from paiju.rules.zlj.combos import order
from paiju.rules.zlj.model import (
    DECKS,
    SEATS,
    Command,
    Cut,
    Options,
    Pass,
    Phase,
    PickTribute,
    Play,
    Resist,
    ReturnTribute,
    ReverseTribute,
    State,
    TakeBack,
    Transfer,
)
from paiju.rules.zlj.outcome import deal_result
from paiju.rules.zlj.tribute import start_tribute
from paiju.scenario.runner import ScenarioError, play_steps

PHASE_NAMES = {
    Phase.PLAY: "play",
    Phase.PICK: "tribute",
    Phase.RETURN: "return",
    Phase.TAKE_BACK: "return",
    Phase.CUT: "ended",
    Phase.ENDED: "ended",
    Phase.NEW: "ended",
}
"""Phases as scenario results name them; between deals the deal is ``ended``."""


def options_from(rules: dict[str, Any]) -> Options:
    known = {"deals", "reverse_tribute", "resist", "turn_seconds"}
    unknown = set(rules) - known
    if unknown:
        raise ScenarioError(f"unknown 砸六家 rule option(s) {sorted(unknown)}; known: {sorted(known)}")
    try:
        return Options(
            deals=int(rules.get("deals", 6)),
            reverse_tribute=ReverseTribute(rules.get("reverse_tribute", "per_player")),
            resist=Resist(rules.get("resist", "big_and_small")),
            turn_seconds=int(rules.get("turn_seconds", 0)),
        )
    except (TypeError, ValueError) as e:
        raise ScenarioError(f"bad rule option: {e}") from None


def _seat(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEATS:
        raise ScenarioError(f"{what} must be a seat 0..5, not {value!r}")
    return value


def start_state(doc: dict[str, Any]) -> State:
    """The position a scenario starts from."""
    start = doc.get("start", {})
    options = options_from(doc.get("rules", {}))
    raw_hands = start.get("hands")
    if not isinstance(raw_hands, dict):
        raise ScenarioError("start.hands must be an object of seat -> cards")
    hands: list[Cards] = [() for _ in range(SEATS)]
    for key, text in raw_hands.items():
        if key not in {str(s) for s in range(SEATS)}:
            raise ScenarioError(f"start.hands: {key!r} is not a seat 0..5")
        hands[int(key)] = parse_cards(text, DECKS)
    everything = Counter(c for h in hands for c in h)
    for c, n in everything.items():
        if n > DECKS:
            raise ScenarioError(f"start.hands hold {n} copies of {format_cards([c])}; two decks hold only {DECKS}")
    dealt = tuple(sorted(everything.elements()))
    phase = start.get("phase", "play")
    if phase == "play":
        out = tuple(_seat(s, "start.out") for s in start.get("out", []))
        for s in out:
            if hands[s]:
                raise ScenarioError(f"seat {s} is out but start.hands gives it cards")
        leader = _seat(start.get("leader"), "start.leader")
        if not hands[leader]:
            raise ScenarioError(f"the leader, seat {leader}, holds no cards")
        return State(
            options=options,
            phase=Phase.PLAY,
            deal=1,
            hands=tuple(hands),
            turn=leader,
            leader=leader,
            out=out,
            dealt=dealt,
        )
    if phase == "tribute":
        previous = start.get("previous")
        if not isinstance(previous, dict):
            raise ScenarioError("a tribute start needs start.previous: {order, caught}")
        finishing = tuple(_seat(s, "start.previous.order") for s in previous.get("order", []))
        caught = sorted(_seat(s, "start.previous.caught") for s in previous.get("caught", []))
        if sorted((*finishing, *caught)) != list(range(SEATS)):
            raise ScenarioError("start.previous: order and caught must name every seat exactly once")
        try:
            result = deal_result(1, finishing)
        except (KeyError, ValueError):
            raise ScenarioError("start.previous.order does not end a deal (no team all out)") from None
        if list(result.caught) != caught:
            raise ScenarioError(
                f"start.previous: the deal ends with order {list(finishing)}, so caught is {list(result.caught)}"
            )
        state = State(
            options=options,
            phase=Phase.CUT,
            deal=2,
            hands=tuple(hands),
            dealt=dealt,
            previous=result,
            results=(result,),
        )
        rng = SeededRandom(int(doc.get("seed", 0))).fork(4)
        return game.replay(start_tribute(result, state.hands, options, rng), state)
    raise ScenarioError(f'start.phase must be "play" or "tribute" for zlj, not {phase!r}')


def command_for(step: dict[str, Any], index: int, seed: int) -> Command:
    """The command a step stands for; card syntax errors surface as rejections when applied."""
    seat = _seat(step.get("seat"), f"steps[{index}].seat")
    if "play" in step:
        return Play(seat, parse_cards(step["play"]))
    if step.get("pass") is True:
        return Pass(seat)
    if "pick" in step:
        return PickTribute(seat, parse_cards(step["pick"]))
    if "return" in step:
        return ReturnTribute(seat, parse_cards(step["return"]))
    if "take_back" in step:
        return TakeBack(seat, parse_cards(step["take_back"]))
    if "cut" in step:
        count = step["cut"]
        if isinstance(count, bool) or not isinstance(count, int):
            raise ScenarioError(f"steps[{index}].cut must be a number of cards")
        return Cut(seat, count, SeededRandom(seed).fork(1000 + index).next64())
    raise ScenarioError(f"steps[{index}] has no zlj action: use play, pass, pick, return, take_back or cut")


def _transfers(transfers: tuple[Transfer, ...]) -> list[dict[str, Any]]:
    return [{"from": t.giver, "to": t.receiver, "cards": format_cards(t.cards, order)} for t in transfers]


def result_of(state: State, steps: list[dict[str, Any]]) -> dict[str, Any]:
    last = state.results[-1] if state.results and state.phase in (Phase.CUT, Phase.ENDED) else None
    tribute = state.tribute
    return {
        "steps": steps,
        "hands": {str(s): format_cards(state.hands[s], order) for s in range(SEATS)},
        "phase": PHASE_NAMES[state.phase],
        "next": state.turn,
        registry.ZLJ.name: {  # the game's own part of the result
            "out": list(state.out),
            "outcome": last.outcome.value if last else None,
            "winners": last.winners.value if last and last.winners else None,
            "team_points": {"A": last.team_points[0], "B": last.team_points[1]} if last else None,
            "individual": {str(s): last.individual[s] for s in range(SEATS)} if last else None,
            "taken": [{"by": t.by, "from": t.taken_from, "cards": format_cards(t.cards, order)} for t in state.taken],
            "tribute": _transfers(tribute.picks) if tribute else [],
            "returned": _transfers(tribute.returns) if tribute else [],
            "leader": state.leader,
        },
    }


def run(doc: dict[str, Any]) -> dict[str, Any]:
    state, outcomes = play_steps(doc, start_state(doc), command_for, game.decide, game.replay)
    return result_of(state, outcomes)
