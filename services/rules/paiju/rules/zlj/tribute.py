"""Tribute 进贡, resistance 抗贡, return 还贡 and who leads after them (rules §10-§12)."""

from __future__ import annotations

from paiju.rules.cards import Card, Cards
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj.combos import LEVEL_OF
from paiju.rules.zlj.dealing import rock_paper_scissors
from paiju.rules.zlj.model import (
    SEATS,
    DealResult,
    Event,
    Options,
    Outcome,
    PlayStarted,
    Resist,
    ReverseTribute,
    RockPaperScissors,
    Team,
    TributeGiven,
    TributeOrdered,
    TributeResisted,
    team_of,
)

TRIBUTE_FLOOR = 9
"""Tribute cards are K or higher (第七条): level 9 in the 砸六家 order."""
RETURN_LOW, RETURN_HIGH = 1, 8
"""Returned cards are 5..Q inclusive (第八条)."""

CATCH_COUNT = {Outcome.CATCH3: 3, Outcome.CATCH2: 2, Outcome.CATCH1: 1}


def _by_strength(cards: Cards) -> list[Card]:
    return sorted(cards, key=lambda c: (LEVEL_OF[c], c), reverse=True)


def forced_tribute(hand: Cards, count: int) -> Cards:
    """A loser's tribute: their ``count`` highest cards, only K or higher (§10, 第七条)."""
    return tuple(sorted(c for c in _by_strength(hand)[:count] if LEVEL_OF[c] >= TRIBUTE_FLOOR))


def resistance_cards(hand: Cards, resist: Resist) -> Cards | None:
    """The two jokers a loser shows to refuse tribute (D-ZLJ-10), or ``None``."""
    small = hand.count(Card(52))
    big = hand.count(Card(53))
    if resist is Resist.BIG_AND_SMALL and small and big:
        return (Card(52), Card(53))
    if resist is Resist.TWO_BIG and big >= 2:
        return (Card(53), Card(53))
    return None


def returnable(hand: Cards) -> Cards:
    """Cards a winner may return: ranks 5..Q (第八条)."""
    return tuple(c for c in hand if RETURN_LOW <= LEVEL_OF[c] <= RETURN_HIGH)


def sides(result: DealResult) -> tuple[Team, int] | None:
    """(winning team, cards per loser) of the tribute a deal result calls for; ``None`` after a draw.

    Catch-N: each loser gives N. 反逮: the head team loses and gives one card each (D-ZLJ-9).
    """
    if result.outcome is Outcome.DRAW or result.winners is None:
        return None
    if result.outcome is Outcome.REVERSE:
        return result.winners, 1
    return result.winners, CATCH_COUNT[result.outcome]


def pick_quotas(winners: tuple[int, ...], per_winner: int, pool: int) -> tuple[tuple[int, int], ...]:
    """Each winner picks ``per_winner`` cards; a shortfall falls on the lowest-placed winner first (第七条)."""
    quotas = [per_winner] * len(winners)
    short = per_winner * len(winners) - pool
    for i in range(len(winners) - 1, -1, -1):
        if short <= 0:
            break
        cut = min(short, quotas[i])
        quotas[i] -= cut
        short -= cut
    return tuple(zip(winners, quotas, strict=True))


def start_tribute(previous: DealResult, hands: tuple[Cards, ...], options: Options, rng: SeededRandom) -> list[Event]:
    """The events that open a deal after the previous one: resistance, forced tribute, order, or the lead."""
    big = previous.big_tribute
    plan = sides(previous)
    if plan is None:
        return [PlayStarted(big, "after a draw the previous 大贡 leads (§12)")]
    winners_team, per_loser = plan
    # losers in play order from the previous 大贡, the order in which a resisting hand is looked for
    losers = tuple(s for s in ((big + i) % SEATS for i in range(SEATS)) if team_of(s) is not winners_team)
    for seat in losers:
        shown = resistance_cards(hands[seat], options.resist)
        if shown is not None:
            return [
                TributeResisted(seat, shown),
                PlayStarted(big, "tribute was resisted: the previous 大贡 leads (§12)"),
            ]
    events: list[Event] = []
    gifts: dict[int, Cards] = {}
    if previous.outcome is Outcome.REVERSE and options.reverse_tribute is ReverseTribute.TEAM_TOTAL:
        # one card in all, from the loser holding the highest card (D-ZLJ-9); ties by rock-paper-scissors
        best = {s: forced_tribute(hands[s], 1) for s in losers}
        top = max((LEVEL_OF[c[0]] for c in best.values() if c), default=None)
        giver = None
        if top is not None:
            tied = tuple(s for s in losers if best[s] and LEVEL_OF[best[s][0]] == top)
            giver = tied[0]
            if len(tied) > 1:
                rounds, order = rock_paper_scissors(tied, rng)
                events.append(RockPaperScissors("team tribute giver", rounds, order))
                giver = order[0]
        for s in losers:
            gifts[s] = best[s] if s == giver else ()
    else:
        for s in losers:
            gifts[s] = forced_tribute(hands[s], per_loser)
    given = [TributeGiven(s, gifts[s], len(gifts[s]), winners_team) for s in losers]
    givers = [s for s in losers if gifts[s]]
    if not givers:
        events.extend(given)
        events.append(PlayStarted(big, "no loser had a card K or higher: the previous 大贡 leads (D-ZLJ-12)"))
        return events
    order_, rps = take_back_order(givers, gifts, rng)
    events.extend(rps)
    winners = tuple(s for s in previous.order if team_of(s) is winners_team)
    team_total = previous.outcome is Outcome.REVERSE and options.reverse_tribute is ReverseTribute.TEAM_TOTAL
    pool = sum(len(g) for g in gifts.values())
    events.append(
        TributeOrdered(
            winners=pick_quotas(winners, 1 if team_total else per_loser, pool),
            losers=tuple((s, len(gifts[s])) for s in order_),
            leader=order_[0],
        )
    )
    events.extend(given)
    return events


def take_back_order(
    givers: list[int], gifts: dict[int, Cards], rng: SeededRandom
) -> tuple[tuple[int, ...], list[Event]]:
    """Losers ordered by their highest tribute card, largest first; ties by rock-paper-scissors (§11-§12)."""

    def top(s: int) -> int:
        return max(LEVEL_OF[c] for c in gifts[s])

    levels = sorted({top(s) for s in givers}, reverse=True)
    order: list[int] = []
    events: list[Event] = []
    for level in levels:
        tied = tuple(s for s in givers if top(s) == level)
        if len(tied) > 1:
            rounds, ranked = rock_paper_scissors(tied, rng)
            events.append(RockPaperScissors("tribute order", rounds, ranked))
            order.extend(ranked)
        else:
            order.extend(tied)
    return tuple(order), events
