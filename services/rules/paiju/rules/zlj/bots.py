"""砸六家 bots: a uniformly random player (for benchmarks and tests) and two strengths a table may choose
(`STRENGTHS`): ``basic``, a beginner's plain habits, and ``heuristic``, a strategy a casual player finds reasonable.

Bots are pure: they read a `State`, never the clock or an unseeded random source, and pick one of
`legal_actions(state, seat)`. Their only randomness is a `SeededRandom` from the seed they are built
with, so the same seed and the same sequence of states give the same choices (docs/architecture.md, Principle 2).

A `Cut` is returned as `legal_actions` lists it: the caller supplies the shuffle ``seed`` of the cut
(the bot chooses only the count, §9).

`HeuristicBot` reads nothing but what its seat may see (rules §14): its own hand, the size of every hand
and the round on the table — the `Seen` of a seat, made from the full `State` (`HeuristicBot.choose`) or
from the seat's `SeatView` a client of the engine receives (`HeuristicBot.choose_view`, with the legal
actions the engine lists), so a bot playing through the public API decides exactly as it would in-process.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, Protocol

from paiju.rules.cards import Card, Cards
from paiju.rules.rng import SeededRandom
from paiju.rules.zlj.combos import (
    ACE,
    BIG_JOKER,
    LEVEL_OF,
    LEVELS,
    SMALL_JOKER,
    TWO,
    Combo,
    Kind,
    is_four_take,
    level_counts,
)
from paiju.rules.zlj.game import legal_actions
from paiju.rules.zlj.model import (
    SEATS,
    Pass,
    Phase,
    PickTribute,
    Play,
    ReturnTribute,
    SeatAction,
    State,
    TakeBack,
)
from paiju.rules.zlj.view import SeatView

Counts = tuple[int, ...]
"""How many cards of each level (0 = the 4 .. 14 = the big joker) a hand holds."""


class Bot(Protocol):
    """A player: given the state and its seat (whose turn it is), one of ``legal_actions(state, seat)``."""

    def choose(self, state: State, seat: int) -> SeatAction: ...


def _actions(state: State, seat: int) -> tuple[SeatAction, ...]:
    actions = legal_actions(state, seat)
    if not actions:
        raise ValueError(f"seat {seat} has nothing to do: {state.phase.value} phase, turn {state.turn}")
    return actions


@dataclass(frozen=True, slots=True)
class Seen:
    """What ``seat`` knows when it decides (rules §14): its own hand and public facts, of the other hands only
    their sizes. All `HeuristicBot` reads besides the legal actions; the same from a `State` and from the
    seat's `SeatView` of it."""

    seat: int
    phase: Phase
    hand: Cards
    hand_sizes: tuple[int, ...]
    current: Combo | None
    """The play to beat in the round (``None``: the seat leads)."""
    current_by: int | None

    @classmethod
    def of_state(cls, state: State, seat: int) -> Seen:
        return cls(
            seat,
            state.phase,
            state.hands[seat],
            tuple(len(h) for h in state.hands),
            state.current,
            state.current_by,
        )

    @classmethod
    def of_view(cls, view: SeatView) -> Seen:
        if view.seat is None:
            raise ValueError("a spectator's view has no seat to decide for")
        return cls(view.seat, view.phase, view.hand, view.hand_sizes, view.current, view.current_by)


def legal_choice(choice: SeatAction, legal: Sequence[SeatAction]) -> SeatAction:
    """``choice`` when it is one of ``legal`` (the engine's list), else the first listed action."""
    if not legal:
        raise ValueError("no legal action to choose from")
    return choice if choice in legal else legal[0]


class RandomBot:
    """Picks uniformly among the legal actions (one per choice of ranks). Used in the benchmark loop."""

    __slots__ = ("_rng",)

    def __init__(self, seed: int) -> None:
        self._rng = SeededRandom(seed)

    def choose(self, state: State, seat: int) -> SeatAction:
        actions = legal_actions(state, seat)
        if not actions:
            raise ValueError(f"seat {seat} has nothing to do: {state.phase.value} phase, turn {state.turn}")
        return actions[self._rng.below(len(actions))]


# --- hand evaluation --------------------------------------------------------------------------------
#
# A hand is valued by splitting it into combinations (§3) the way a player plans it, and adding up what
# each part costs: roughly one turn per combination a player must get rid of. Weak parts (low singles and
# pairs, straights) cost about 100; strong ones that win rounds back cost less (a 2 50, the big joker 10);
# bombs and joker bombs cost less than nothing, since they win a round and let a weak part be led.
# The plan of least total cost is the hand's cost; a play is judged by the cost of the hand it leaves.

_SINGLE_COST = (100, 98, 96, 94, 92, 90, 88, 86, 84, 82, 70, 50, 35, 20, 10)
_PAIR_COST = (100, 98, 96, 94, 92, 90, 88, 86, 84, 82, 65, 45, 30)


def _straight_cost(ranks: int, top: int) -> int:
    return 100 - 2 * ranks - top


def _pair_straight_cost(ranks: int, top: int) -> int:
    return 100 - 3 * ranks - top // 2


def _bomb_cost(size: int, level: int) -> int:
    return -(30 + 15 * (size - 3) + level)


def _joker_bomb_cost(size: int) -> int:
    return -(100 + 10 * (size - 2))


@lru_cache(maxsize=1 << 17)
def hand_cost(counts: Counts) -> int:
    """The least total cost of a plan for this hand (lower is better; 0 for an empty hand).

    Explores, for the lowest level held, every part that can contain it — single, pair, the whole bomb
    (a triple or more, §3), and every straight and pair-straight starting there (4..A only) — and the
    rest recursively. Jokers make one joker bomb when both kinds are held (D-ZLJ-1), else singles.
    """
    level = 0
    while level < LEVELS and counts[level] == 0:
        level += 1
    if level == LEVELS:
        return 0
    if level >= SMALL_JOKER:
        small, big = counts[SMALL_JOKER], counts[BIG_JOKER]
        if small and big:
            return _joker_bomb_cost(small + big)
        return small * _SINGLE_COST[SMALL_JOKER] + big * _SINGLE_COST[BIG_JOKER]
    n = counts[level]
    rest = list(counts)
    rest[level] = n - 1
    best = _SINGLE_COST[level] + hand_cost(tuple(rest))
    if n >= 2:
        rest[level] = n - 2
        best = min(best, _PAIR_COST[level] + hand_cost(tuple(rest)))
    if n >= 3:
        rest[level] = 0
        best = min(best, _bomb_cost(n, level) + hand_cost(tuple(rest)))
    rest[level] = n
    for unit in (1, 2):
        if n < unit:
            break
        run = list(counts)
        end = level
        while end <= ACE and run[end] >= unit:
            run[end] -= unit
            ranks = end - level + 1
            if ranks >= 3:
                part = _straight_cost(ranks, end) if unit == 1 else _pair_straight_cost(ranks, end)
                best = min(best, part + hand_cost(tuple(run)))
            end += 1
    return best


def _without(counts: Sequence[int], cards: Iterable[Card]) -> Counts:
    rest = list(counts)
    for c in cards:
        rest[LEVEL_OF[c]] -= 1
    return tuple(rest)


def one_combination(counts: Sequence[int]) -> bool:
    """Whether a hand with these level counts is a single legal combination (§3), so one play empties it."""
    held = [(level, n) for level, n in enumerate(counts) if n]
    if not held:
        return False
    if len(held) == 1:
        level, n = held[0]
        return n == 1 or level < SMALL_JOKER
    if held[0][0] >= SMALL_JOKER:
        return len(held) == 2 and sum(n for _, n in held) <= 4  # joker bomb (D-ZLJ-1)
    per_rank = {n for _, n in held}
    low, high = held[0][0], held[-1][0]
    return len(per_rank) == 1 and per_rank <= {1, 2} and high <= ACE and high - low + 1 == len(held) and len(held) >= 3


def _combo_of(counts: Sequence[int]) -> Combo:
    """The combination of a play given as level counts (plays from `legal_actions` are always legal)."""
    held = [(level, n) for level, n in enumerate(counts) if n]
    size = sum(n for _, n in held)
    top = held[-1][0]
    if held[0][0] >= SMALL_JOKER and size > 1:
        return Combo(Kind.JOKER_BOMB, size, BIG_JOKER)
    if len(held) == 1:
        kind = Kind.SINGLE if size == 1 else Kind.PAIR if size == 2 else Kind.BOMB
        return Combo(kind, size, top)
    return Combo(Kind.STRAIGHT if held[0][1] == 1 else Kind.PAIR_STRAIGHT, size, top)


def _strength(combo: Combo) -> tuple[int, int, int]:
    """How hard a play is to beat: joker bombs, then bombs (more cards, then rank, D-ZLJ-2), then the rest."""
    if combo.kind is Kind.JOKER_BOMB:
        return (2, combo.size, combo.top)
    if combo.kind is Kind.BOMB:
        return (1, combo.size, combo.top)
    return (0, combo.size, combo.top)


def _is_control(combo: Combo) -> bool:
    """A lead that others can hardly beat: any bomb (only a bigger bomb beats it, §4) or the big joker."""
    return combo.is_bomb or (combo.kind is Kind.SINGLE and combo.top == BIG_JOKER)


def _levels_desc(cards: Iterable[Card]) -> tuple[int, ...]:
    return tuple(sorted((LEVEL_OF[c] for c in cards), reverse=True))


# --- the heuristic bot ------------------------------------------------------------------------------


class HeuristicBot:
    """A plain, readable strategy (rule sections in brackets).

    * Leading (§6): go out if the whole hand is one combination; if a control (bomb, joker bomb, big
      joker) leaves one combination, lead it to come back and finish. Otherwise lead the part whose loss
      improves the hand most (`hand_cost`), a little extra per card: low straights, pair-straights,
      low pairs and singles go first; 2s, 3s, jokers and bombs are kept. With an opponent on one card,
      no low single is led.
    * Following (§4): go out when a play empties the hand. Pass on a partner's play (teams alternate,
      §1) while the partner still holds cards. Take an opponent's bomb with fours whenever possible (§5).
      Otherwise play the answer of the same kind that leaves the best hand, if it breaks nothing bigger
      than a pair; 2s, 3s and jokers only when the opponent is close to going out, the hand is short or
      the play is already an A or higher. Bombs (§3-§4) only when it matters: the opponent who made the
      play is close to going out (``bomb_danger`` cards; 10 measured better than 5 or 14 in self-play),
      or the bot can go out after the bomb; then the smallest bomb that beats, before a joker bomb.
    * Tribute (§10-§11): pick the highest cards; return the 5..Q cards whose loss hurts the hand least
      (loose low singles before pairs and straights); take back the highest returned cards.
    * Cut (§9): any count, from the seeded random source.
    """

    __slots__ = ("_rng",)

    card_bonus: ClassVar[int] = 4
    """When leading, each card shed is worth a little: a straight goes before a lone low single."""
    danger: ClassVar[int] = 10
    """An opponent with this many cards or fewer is close to going out: bombs and high cards come out."""
    bomb_danger: ClassVar[int] = 10
    """Bombs come out only against an opponent with this many cards or fewer (or to go out after)."""
    short_hand: ClassVar[int] = 8
    """With this many cards or fewer the bot spends its 2s, 3s and jokers freely."""
    slack: ClassVar[int] = 0
    """How much worse (in `hand_cost`) an answer may leave the hand: 0 breaks nothing bigger than a pair."""
    high: ClassVar[int] = TWO
    """Cards from the 2 up (2, 3, jokers) are kept for later unless something is at stake."""

    def __init__(self, seed: int) -> None:
        self._rng = SeededRandom(seed)

    def choose(self, state: State, seat: int) -> SeatAction:
        return self.decide(Seen.of_state(state, seat), _actions(state, seat))

    def choose_view(self, view: SeatView, legal: Sequence[SeatAction]) -> SeatAction:
        """The choice of ``view.seat`` from what it sees and ``legal``, its legal actions at the same version
        (the engine's GetLegalActions: plays listed once per choice of ranks, as `legal_actions` lists them).

        Always one of ``legal``: should the strategy pick anything else, the first listed action instead.
        """
        if not legal:
            raise ValueError(f"seat {view.seat} has nothing to do: {view.phase.value} phase, turn {view.turn}")
        return legal_choice(self.decide(Seen.of_view(view), legal), legal)

    def decide(self, seen: Seen, actions: Sequence[SeatAction]) -> SeatAction:
        """One of ``actions`` (the seat's legal actions, not empty), from what the seat has ``seen``."""
        phase = seen.phase
        seat = seen.seat
        if phase is Phase.PLAY:
            plays = [a for a in actions if isinstance(a, Play)]
            if seen.current is None:
                return self._lead(seen, plays)
            return self._follow(seen, plays)
        if phase is Phase.CUT:
            return actions[self._rng.below(len(actions))]
        if phase is Phase.RETURN:
            return self._return(seen, actions)
        # picking tribute and taking back returned cards: the highest cards (§10-§11)
        picks = [a for a in actions if isinstance(a, PickTribute | TakeBack)]
        if not picks:
            raise ValueError(f"seat {seat} has no tribute to pick or take back in the {phase.value} phase")
        return max(picks, key=lambda a: _levels_desc(a.cards))

    # -- tribute ---------------------------------------------------------------------------------

    def _return(self, seen: Seen, actions: Sequence[SeatAction]) -> SeatAction:
        """Return the cards 5..Q (第八条) whose loss leaves the best hand; the lowest on ties."""
        counts = level_counts(seen.hand)
        returns = [a for a in actions if isinstance(a, ReturnTribute)]
        return min(
            returns,
            key=lambda a: (hand_cost(_without(counts, a.cards)), sorted(LEVEL_OF[c] for c in a.cards)),
        )

    # -- leading ---------------------------------------------------------------------------------

    def _lead(self, seen: Seen, plays: Sequence[Play]) -> Play:
        hand = seen.hand
        counts = level_counts(hand)
        for play in plays:
            if len(play.cards) == len(hand):
                return play  # the whole hand is one combination: go out (§6)
        scored: list[tuple[Play, Combo, Counts]] = []
        finishers: list[tuple[Play, Combo]] = []
        for play in plays:
            rest = _without(counts, play.cards)
            combo = _combo_of(level_counts(play.cards))
            scored.append((play, combo, rest))
            if _is_control(combo) and one_combination(rest):
                finishers.append((play, combo))
        if finishers:
            # lead the strongest control, win the round, then lead the rest and go out
            return max(finishers, key=lambda pc: _strength(pc[1]))[0]
        if _opponent_on_one(seen):
            multi = [s for s in scored if s[1].kind is not Kind.SINGLE and not s[1].is_bomb]
            if multi:
                scored = multi
            else:
                singles = [s for s in scored if s[1].kind is Kind.SINGLE]
                if singles:
                    return max(singles, key=lambda s: s[1].top)[0]
        base = hand_cost(tuple(counts))

        def gain(item: tuple[Play, Combo, Counts]) -> tuple[int, int, int]:
            play, combo, rest = item
            return (base - hand_cost(rest) + self.card_bonus * len(play.cards), -combo.top, len(play.cards))

        return max(scored, key=gain)[0]

    # -- following -------------------------------------------------------------------------------

    def _follow(self, seen: Seen, plays: Sequence[Play]) -> SeatAction:
        current = seen.current
        maker = seen.current_by
        assert current is not None and maker is not None
        seat = seen.seat
        hand = seen.hand
        if not plays:
            return Pass(seat)
        for play in plays:
            if len(play.cards) == len(hand) and not is_four_take(play.cards, current):
                return play  # going out beats keeping anything (§6); a four-take never empties a hand
        left = seen.hand_sizes[maker]
        if maker % 2 == seat % 2 and left:
            return Pass(seat)  # the partner holds the round: let it (teams alternate, §1)
        # (a maker who went out wins nothing by the round: if all pass, 接风 gives the lead to the
        # seat after it (§6), an opponent of the maker — so such a play is answered like an opponent's)
        for play in plays:
            if is_four_take(play.cards, current):
                return play  # 4取炸弹: the bomb's cards come to this hand (§5)
        counts = level_counts(hand)
        base = hand_cost(tuple(counts))
        danger = 0 < left <= self.danger
        normal: list[tuple[int, int, Play]] = []
        bombs: list[tuple[int, tuple[int, int, int], Play, Counts]] = []
        for play in plays:
            rest = _without(counts, play.cards)
            combo = _combo_of(level_counts(play.cards))
            delta = hand_cost(rest) - base
            if combo.is_bomb:
                bombs.append((delta, _strength(combo), play, rest))
            else:
                normal.append((delta, combo.top, play))
        short_hand = len(hand) <= self.short_hand
        high_play = current.top >= ACE
        acceptable = [
            (delta, top, play)
            for delta, top, play in normal
            if (delta <= self.slack or danger) and (top < self.high or danger or short_hand or high_play)
        ]
        answer = min(acceptable, key=lambda x: (x[0], x[1])) if acceptable else None
        finishing = [b for b in bombs if one_combination(b[3])]
        if (0 < left <= self.bomb_danger or finishing) and bombs:
            # the cheapest bomb: least damage to the hand, then the weakest that beats (D-ZLJ-2)
            bomb = min(finishing or bombs, key=lambda b: (b[1][0], b[0], b[1]))
            if answer is None or bomb[0] < answer[0]:
                return bomb[2]
        if answer is not None:
            return answer[2]
        return Pass(seat)


class BasicBot:
    """The weaker strength (``basic``): a beginner's plain habits, no planning (rule sections in brackets).

    * Leading (§6): the lowest combination it holds (its top level), the longest among equals; the whole hand when it
      is one combination.
    * Following (§4): pass on a partner's play (teams alternate, §1); against an opponent, the lowest answer that is
      not a bomb, a bomb only when nothing else answers; going out whenever a play empties the hand.
    * Tribute (§10-§11): the highest cards picked and taken back, the lowest cards returned; cut (§9): any count from
      its seeded random source.

    Deterministic given its seed; decides from what its seat sees (`Seen`), like `HeuristicBot`.
    """

    __slots__ = ("_rng",)

    def __init__(self, seed: int) -> None:
        self._rng = SeededRandom(seed)

    def choose(self, state: State, seat: int) -> SeatAction:
        return self.decide(Seen.of_state(state, seat), _actions(state, seat))

    def choose_view(self, view: SeatView, legal: Sequence[SeatAction]) -> SeatAction:
        """The choice of ``view.seat`` among ``legal`` (the engine's list); always one of them."""
        if not legal:
            raise ValueError(f"seat {view.seat} has nothing to do: {view.phase.value} phase, turn {view.turn}")
        return legal_choice(self.decide(Seen.of_view(view), legal), legal)

    def decide(self, seen: Seen, actions: Sequence[SeatAction]) -> SeatAction:
        if seen.phase is Phase.PLAY:
            plays = [a for a in actions if isinstance(a, Play)]
            for play in plays:
                if len(play.cards) == len(seen.hand) and (
                    seen.current is None or not is_four_take(play.cards, seen.current)
                ):
                    return play
            if seen.current is None:
                return min(plays, key=lambda p: (_combo_of(level_counts(p.cards)).top, -len(p.cards), p.cards))
            if (
                seen.current_by is not None
                and seen.current_by % 2 == seen.seat % 2
                and seen.hand_sizes[seen.current_by]
            ):
                return Pass(seen.seat)
            if not plays:
                return Pass(seen.seat)
            combos = [(_combo_of(level_counts(p.cards)), p) for p in plays if not is_four_take(p.cards, seen.current)]
            normal = [(c.top, p.cards, p) for c, p in combos if not c.is_bomb]
            if normal:
                return min(normal)[2]
            bombs = [(_strength(c), p.cards, p) for c, p in combos]
            return min(bombs)[2] if bombs else plays[0]
        if seen.phase is Phase.CUT:
            return actions[self._rng.below(len(actions))]
        if seen.phase is Phase.RETURN:
            returns = [a for a in actions if isinstance(a, ReturnTribute)]
            return min(returns, key=lambda a: sorted(LEVEL_OF[c] for c in a.cards))
        picks = [a for a in actions if isinstance(a, PickTribute | TakeBack)]
        if not picks:
            raise ValueError(f"seat {seen.seat} has no tribute to pick or take back in the {seen.phase.value} phase")
        return max(picks, key=lambda a: _levels_desc(a.cards))


STRENGTHS: dict[str, type[BasicBot] | type[HeuristicBot]] = {"basic": BasicBot, "heuristic": HeuristicBot}
"""The bot strengths a table may choose, weaker first (docs/bots.md, "Strengths"); bench/bots.py measures them."""


def _opponent_on_one(seen: Seen) -> bool:
    """Whether an opponent (the other team, §1) holds exactly one card."""
    return any(seen.hand_sizes[s] == 1 for s in range(SEATS) if s % 2 != seen.seat % 2)


__all__ = [
    "STRENGTHS",
    "BasicBot",
    "Bot",
    "Counts",
    "HeuristicBot",
    "RandomBot",
    "Seen",
    "hand_cost",
    "legal_choice",
    "one_combination",
]
