"""A 拖拉机 game between bots, narrated in the terminal (part of what `make run` shows)."""

from __future__ import annotations

from typing import TextIO

from paiju.rules.cards import format_cards
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import bots as tractor_bots
from paiju.rules.tractor.combos import Combo
from paiju.rules.tractor.game import decide, evolve, trumps, waiting
from paiju.rules.tractor.model import (
    BidEntered,
    BidsRevealed,
    CardFlipped,
    CardsPlayed,
    Command,
    CountersRevealed,
    Cut,
    DealSettled,
    DealVoided,
    Event,
    GameEnded,
    HandsDealt,
    Options,
    Phase,
    Redeal,
    StartGame,
    State,
    TrickWon,
    TrumpDeclared,
)
from paiju.rules.tractor.settlement import level_name

SUIT_NAMES = {0: "spades", 1: "hearts", 2: "clubs", 3: "diamonds"}


def _seat(s: int) -> str:
    return f"seat {s} ({'AB'[s % 2]})"


def narrate(event: Event, state: State) -> list[str]:
    """Plain-language lines for one event; ``state`` is the state after it (for the deal's card order)."""
    order = trumps(state).order_key if state.trump is not None else None
    if isinstance(event, CardFlipped):
        return [
            f"{_seat(event.flipper)} flips {format_cards([event.card])}: {_seat(event.first_drawer)} draws first (§8)"
        ]
    if isinstance(event, HandsDealt):
        how = f"the dealer cut {event.cut} cards; " if event.cut is not None else ""
        lines = [f"Deal {event.deal}: {how}dealing starts at {_seat(event.first_drawer)}"]
        lines += [f"  {_seat(s)}: {len(h)} cards" for s, h in enumerate(event.hands)]
        return lines
    if isinstance(event, BidEntered):
        return [f"  {_seat(event.seat)} has bid or passed (concealed)"]
    if isinstance(event, BidsRevealed | CountersRevealed):
        what = "bid" if isinstance(event, BidsRevealed) else "counter"
        if event.winner is None:
            return [f"No {what}."]
        w = event.winner
        return [f"Winning {what}: {_seat(w.seat)} shows {format_cards(w.cards)} ({w.count} level card(s))"]
    if isinstance(event, DealVoided):
        return ["Nobody bid: the deal is void and dealt again (D-TR-6)"]
    if isinstance(event, TrumpDeclared):
        return [
            f"Trump: {SUIT_NAMES[event.trump]}, level {level_name(event.level)}; {_seat(event.dealer)} deals and leads"
        ]
    if isinstance(event, CardsPlayed):
        trick = state.trick
        combo: Combo | None = trick.lead if trick is not None and len(trick.plays) == 1 else None
        label = f"   leads {combo.describe()}" if combo is not None else ""
        return [f"  {_seat(event.seat)}: {format_cards(event.cards, order)}{label}"]
    if isinstance(event, TrickWon):
        credit = f", attackers +{event.credited}" if event.credited else ""
        return [
            f"  -- trick to {_seat(event.winner)} ({event.points} points{credit}); attackers {state.attackers_points}"
        ]
    if isinstance(event, DealSettled):
        return [
            f"Deal settled: attackers {event.attackers_points} points, {event.winner} win, "
            f"+{event.levels_up} level(s); levels A {level_name(event.levels[0])}, B {level_name(event.levels[1])}; "
            f"next dealer {_seat(event.next_dealer)}"
        ]
    if isinstance(event, GameEnded):
        if event.winner is None:
            return ["Time is up: the game ends with the teams on equal levels."]
        return [f"Game over: team {'AB'[event.winner]} wins."]
    return []


def play_game(seed: int, deals: int, bot: str, out: TextIO) -> State:
    """Play up to ``deals`` deals (0: until a team goes past A) with four bots seeded from ``seed``."""
    seeds = SeededRandom(seed)
    make = (
        getattr(tractor_bots, "HeuristicBot", tractor_bots.RandomBot) if bot == "heuristic" else tractor_bots.RandomBot
    )
    players = [make(seeds.next64()) for _ in range(4)]
    state = State()
    command: Command = StartGame(seeds.next64(), Options())
    played = 0
    while True:
        for event in decide(state, command):
            state = evolve(state, event)
            for line in narrate(event, state):
                print(line, file=out)
            if isinstance(event, DealSettled):
                played += 1
        if state.phase is Phase.ENDED or (deals and played >= deals):
            return state
        if state.phase is Phase.FLIP:
            command = Redeal(seeds.next64())
            continue
        seat = waiting(state)[0]
        action = players[seat].choose(state, seat)
        command = Cut(seat, action.count, seeds.next64()) if isinstance(action, Cut) else action
