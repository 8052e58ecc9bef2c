"""The 砸六家 core: ``decide``, ``evolve`` and ``legal_actions`` (docs/architecture.md, "Deterministic rules cores").

``decide(state, command)`` validates a command against the rules and returns the events it causes,
or raises a `RuleError` naming the rule broken; it never changes the state. ``evolve(state, event)``
applies one event and trusts it. ``legal_actions(state, seat)`` lists what a seat may do now; in
砸六家 suits never matter in play or tribute (§1), so it lists one representative per choice of
ranks, and ``decide`` accepts any cards with the same ranks (`same_choice`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from functools import lru_cache
from itertools import combinations_with_replacement

from paiju.rules import fair
from paiju.rules.cards import Card, Cards, add_cards, format_cards, missing_cards, remove_cards
from paiju.rules.errors import IllegalAction, NotYourTurn, RuleError
from paiju.rules.zlj.combos import (
    FOUR,
    LEVEL_OF,
    LEVELS,
    Combo,
    Kind,
    Shape,
    all_plays,
    answers,
    beat_failure,
    beats,
    classify,
    is_four_take,
    order,
)
from paiju.rules.zlj.dealing import (
    DECK_SIZE,
    FIRST_DRAWER_STREAM,
    LEAD_STREAM,
    TIMEOUT_STREAM,
    TRIBUTE_STREAM,
    cut_deck,
    deal_hands,
    rock_paper_scissors,
    shuffled_deck,
    stream,
)
from paiju.rules.zlj.model import (
    DECKS,
    SEATS,
    CardsPlayed,
    Command,
    Cut,
    DealEnded,
    EndMatch,
    Event,
    FourTake,
    FourTakeRecord,
    HandsDealt,
    MatchEnded,
    MatchStarted,
    Pass,
    Passed,
    Phase,
    PickTribute,
    Play,
    PlayStarted,
    ReturnTakenBack,
    ReturnTribute,
    RockPaperScissors,
    RoundWon,
    SeatAction,
    StartMatch,
    State,
    TakeBack,
    Team,
    Timeout,
    Transfer,
    Tribute,
    TributeGiven,
    TributeOrdered,
    TributePicked,
    TributeResisted,
    TributeReturned,
    TurnTimedOut,
    WentOut,
    evolved,
    next_seat,
    team_of,
)
from paiju.rules.zlj.outcome import deal_result, match_totals, team_out
from paiju.rules.zlj.tribute import RETURN_HIGH, RETURN_LOW, returnable, start_tribute

ACE_OF_SPADES = Card(48)
"""♠A: its holders decide the first lead of a match (§9)."""
PHASE_RULE = {Phase.CUT: "§9", Phase.PICK: "§10", Phase.RETURN: "§11", Phase.TAKE_BACK: "§11", Phase.PLAY: "§6"}
"""The section that says when, and by whom in turn, the commands of each phase are given."""


# --- helpers ----------------------------------------------------------------------------------------


def fingerprint(state: State) -> str:
    """A short description of the state for error messages (docs/architecture.md, Principle 3)."""
    return f"deal {state.deal}, {state.phase.value}, turn {state.turn}"


def next_holder(hands: Sequence[Cards], seat: int) -> int | None:
    """The next seat after ``seat`` (in play order) still holding cards."""
    for i in range(1, SEATS + 1):
        s = (seat + i) % SEATS
        if hands[s]:
            return s
    return None


def cards_text(cards: Iterable[Card]) -> str:
    return format_cards(cards, order)


def same_choice(a: Iterable[Card], b: Iterable[Card]) -> bool:
    """Two card choices that differ only in suits are the same choice in 砸六家 (§1)."""
    return sorted(LEVEL_OF[c] for c in a) == sorted(LEVEL_OF[c] for c in b)


def _require_seat(state: State, seat: int) -> None:
    if not 0 <= seat < SEATS:
        raise RuleError(f"there is no seat {seat}: seats are 0..5", fingerprint=fingerprint(state), rule="§1")


def _require_turn(state: State, seat: int, phase: Phase, what: str) -> None:
    _require_seat(state, seat)
    if state.phase is not phase:
        raise IllegalAction(
            f"cannot {what} now: the game is in the {state.phase.value} phase",
            fingerprint=fingerprint(state),
            rule=PHASE_RULE[phase],
        )
    if state.turn != seat:
        raise NotYourTurn(
            f"it is not seat {seat}'s turn to {what}: seat {state.turn} is to act",
            fingerprint=fingerprint(state),
            rule=PHASE_RULE[phase],
        )


def _require_held(state: State, seat: int, cards: Cards, rule: str) -> None:
    """``cards`` are in the seat's hand (a multiset, §1); ``rule`` is the rule of the command that uses them."""
    if remove_cards(state.hands[seat], cards) is not None:
        return
    missing = missing_cards(state.hands[seat], cards)
    if missing:
        raise IllegalAction(
            f"seat {seat} does not hold {cards_text(missing)}", fingerprint=fingerprint(state), rule=rule
        )


def _require_cards(cards: object) -> Cards:
    if not isinstance(cards, tuple) or not all(isinstance(c, int) and 0 <= c < 54 for c in cards):
        raise RuleError(f"cards must be a tuple of card ids 0..53, got {cards!r}")
    return cards


# --- decide -----------------------------------------------------------------------------------------


def decide(state: State, command: Command) -> tuple[Event, ...]:
    """The events ``command`` causes in ``state``, or a `RuleError` (nothing changes)."""
    if isinstance(command, Play):
        return tuple(_decide_play(state, command))
    if isinstance(command, Pass):
        return tuple(_decide_pass(state, command))
    if isinstance(command, PickTribute):
        return tuple(_decide_pick(state, command))
    if isinstance(command, ReturnTribute):
        return tuple(_decide_return(state, command))
    if isinstance(command, TakeBack):
        return tuple(_decide_take_back(state, command))
    if isinstance(command, Cut):
        return tuple(_decide_cut(state, command))
    if isinstance(command, StartMatch):
        return tuple(_decide_start(state, command))
    if isinstance(command, Timeout):
        return tuple(_decide_timeout(state, command))
    if isinstance(command, EndMatch):
        return tuple(_decide_end_match(state))
    if isinstance(command, fair.Contribute):
        cutter = state.turn if state.phase is Phase.CUT else None
        return tuple(fair.decide_contribute(state, command, seats=SEATS, cutter=cutter, rule="§9"))
    if isinstance(command, fair.CommitSeed):
        return tuple(fair.decide_commit(state, command, awaiting=_awaiting_deal(state), deal=state.deal + 1, rule="§9"))
    if isinstance(command, fair.DealShuffle):
        return tuple(_decide_deal_shuffle(state, command))
    if isinstance(command, fair.RevealSeed):
        return tuple(fair.decide_reveal(state, command, over=_deal_over(state), rule="§9"))
    v2 = fair.decide_v2(state, command, seats=SEATS, deck_size=DECK_SIZE, rule="§9")
    if v2 is not None:
        return tuple(v2)
    raise RuleError(f"unknown command {command!r}")


# --- dealing fairly (paiju.rules.fair) ---------------------------------------------------------------------------


def _awaiting_deal(state: State) -> bool:
    return state.phase in (Phase.SHUFFLE, Phase.CUT)


def _deal_over(state: State) -> bool:
    return state.phase in (Phase.CUT, Phase.ENDED)


def fair_step(state: State) -> fair.Step | None:
    """The engine's next step of a fair match (`paiju.rules.fair.step`): the first deal waits for every seat's
    contribution (or the engine's window); a later one is dealt once the cutter has cut."""
    return fair.step(
        state, awaiting=_awaiting_deal(state), over=_deal_over(state), cut_deal=state.phase is Phase.CUT, seats=SEATS
    )


def _decide_deal_shuffle(state: State, command: fair.DealShuffle) -> list[Event]:
    """A fair match's deal from its committed shuffle: the first one as §9 deals it (the first drawer and
    rock-paper-scissors drawn from the shuffle's draws seed), a later one after the cut the cutter recorded."""
    if not _awaiting_deal(state):
        raise IllegalAction("the match waits for no deal now", fingerprint=fingerprint(state), rule="§9")
    cards, seed = fair.dealt(state, command, DECKS, "§9")
    if state.phase is Phase.SHUFFLE:
        return _first_deal(cards, seed)
    cut = fair.deal_cut(state, DECK_SIZE)
    if cut is None:
        raise IllegalAction("the cutter has not cut yet", fingerprint=fingerprint(state), rule="§9")
    return _cut_deal(state, cards, seed, *cut)


def _decide_start(state: State, command: StartMatch) -> list[Event]:
    if state.phase is not Phase.NEW:
        raise IllegalAction("the match has already started", fingerprint=fingerprint(state), rule="§9")
    options = command.options
    if options.deals < 0:
        raise RuleError(f"deals must be 0 (open-ended) or more, got {options.deals}", rule="§13")
    if options.turn_seconds < 0:
        raise RuleError(f"turn_seconds must be 0 (no timer) or more, got {options.turn_seconds}", rule="§13")
    if command.fair:
        return [MatchStarted(options, fair=True, commit_reveal=command.commit_reveal)]
    return [MatchStarted(options), *_first_deal(shuffled_deck(command.seed), command.seed)]


def _first_deal(cards: list[Card], seed: int) -> list[Event]:
    """§9: the first drawer is drawn from the deal seed; the ♠A holders' rock-paper-scissors too (D-ZLJ-8)."""
    first_drawer = stream(seed, FIRST_DRAWER_STREAM).below(SEATS)
    hands = deal_hands(cards, first_drawer)
    events: list[Event] = [HandsDealt(1, first_drawer, hands, seed)]
    holders = tuple(s for s in range(SEATS) if ACE_OF_SPADES in hands[s])
    if len(holders) == 1:
        events.append(PlayStarted(holders[0], "holds both ♠A and leads (§9)"))
    else:
        rounds, ranked = rock_paper_scissors(holders, stream(seed, LEAD_STREAM))
        events.append(RockPaperScissors("♠A lead", rounds, ranked))
        events.append(PlayStarted(ranked[0], "won rock-paper-scissors between the ♠A holders (§9)"))
    return events


def _decide_cut(state: State, command: Cut) -> list[Event]:
    _require_turn(state, command.seat, Phase.CUT, "cut")
    if not 1 <= command.count <= DECK_SIZE - 1:
        raise IllegalAction(f"a cut moves 1..{DECK_SIZE - 1} cards, not {command.count} (§9)")
    if state.fair:  # the cut is the cutter's contribution; the engine deals the committed shuffle after it
        return [fair.cut_contribution(state, command.seat, command.count, command.contribution, "§9")]
    return _cut_deal(state, shuffled_deck(command.seed), command.seed, command.count, command.seat)


def _cut_deal(state: State, cards: list[Card], seed: int, count: int, cutter: int) -> list[Event]:
    """§9: the shuffled deck cut by ``count``, dealt from the previous 大贡; then the tribute (§10)."""
    previous = state.previous
    assert previous is not None
    big = previous.big_tribute
    hands = deal_hands(cut_deck(cards, count), big)
    events: list[Event] = [HandsDealt(state.deal + 1, big, hands, seed, count, cutter)]
    events.extend(start_tribute(previous, hands, state.options, stream(seed, TRIBUTE_STREAM)))
    return events


def _decide_pick(state: State, command: PickTribute) -> list[Event]:
    _require_turn(state, command.seat, Phase.PICK, "pick tribute")
    cards = _require_cards(command.cards)
    tribute = state.tribute
    assert tribute is not None
    quota = dict(tribute.winners)[command.seat]
    if len(cards) != quota:
        raise IllegalAction(f"seat {command.seat} picks {quota} tribute card(s), not {len(cards)} (§10)")
    pool = tribute.pool_cards()
    if missing_cards(pool, cards):
        raise IllegalAction(
            f"the tribute cards are {cards_text(pool)}; {cards_text(missing_cards(pool, cards))} is not among them",
            rule="§10",
        )
    return _then_play(state, [TributePicked(command.seat, cards, len(cards), _winners_team(tribute))])


def _return_owed(state: State, seat: int) -> int:
    tribute = state.tribute
    assert tribute is not None
    return min(tribute.received(seat), len(returnable(state.hands[seat])))


def _decide_return(state: State, command: ReturnTribute) -> list[Event]:
    _require_turn(state, command.seat, Phase.RETURN, "return tribute")
    cards = _require_cards(command.cards)
    owed = _return_owed(state, command.seat)
    bad = [c for c in cards if not RETURN_LOW <= LEVEL_OF[c] <= RETURN_HIGH]
    if bad:
        raise IllegalAction(f"returned cards must be 5..Q (第八条): {cards_text(bad)} is not", rule="§11")
    if len(cards) != owed:
        received = state.tribute.received(command.seat) if state.tribute else 0
        raise IllegalAction(
            f"seat {command.seat} returns {owed} card(s) (received {received}, D-ZLJ-11), not {len(cards)}",
            rule="D-ZLJ-11",
        )
    _require_held(state, command.seat, cards, "§11")
    tribute = state.tribute
    assert tribute is not None
    return _then_play(state, [TributeReturned(command.seat, cards, len(cards), _losers_team(tribute))])


def _decide_take_back(state: State, command: TakeBack) -> list[Event]:
    _require_turn(state, command.seat, Phase.TAKE_BACK, "take back returned cards")
    cards = _require_cards(command.cards)
    tribute = state.tribute
    assert tribute is not None
    owed = _take_back_owed(tribute, command.seat)
    if len(cards) != owed:
        raise IllegalAction(f"seat {command.seat} takes back {owed} card(s), not {len(cards)} (§11)")
    pool = tribute.pool_cards()
    if missing_cards(pool, cards):
        raise IllegalAction(
            f"the returned cards are {cards_text(pool)}; {cards_text(missing_cards(pool, cards))} is not among them",
            rule="§11",
        )
    return _then_play(state, [ReturnTakenBack(command.seat, cards, len(cards), _losers_team(tribute))])


def _then_play(state: State, events: list[Event]) -> list[Event]:
    """Append the start of play when these tribute events finish the tribute."""
    after = state
    for e in events:
        after = evolve(after, e)
    if after.turn is None and after.tribute is not None:
        events.append(PlayStarted(after.tribute.leader, "gave the largest tribute card and leads (§12)"))
    return events


def _decide_play(state: State, command: Play) -> list[Event]:
    seat = command.seat
    _require_turn(state, seat, Phase.PLAY, "play")
    cards = _require_cards(command.cards)
    _require_held(state, seat, cards, "§1")
    current = state.current
    events: list[Event]
    if is_four_take(cards, current):
        assert current is not None and state.current_by is not None
        combo = Combo(Kind.PAIR if len(cards) == 2 else Kind.BOMB, len(cards), FOUR)
        events = [FourTake(seat, cards, combo, state.current_cards, state.current_by)]
    else:
        try:
            combo = classify(cards)
        except IllegalAction as e:
            raise IllegalAction(
                f"{cards_text(cards)}: {e.reason}", fingerprint=fingerprint(state), rule=e.rule
            ) from None
        if current is not None and not beats(combo, current):
            failure = beat_failure(combo, current) or IllegalAction("it does not beat the current play (§4)")
            why, rule = failure.reason, failure.rule
            only_fours = combo.top == FOUR and combo.kind in (Kind.SINGLE, Kind.PAIR, Kind.BOMB)
            if only_fours and current.kind is Kind.BOMB and current.top != FOUR:
                why += f"; a four-take of this bomb needs exactly {current.size - 1} fours (§5)"
                rule = "§5"
            elif only_fours and current.kind is Kind.BOMB:
                why += "; a bomb of 4s cannot be taken by fours (§5)"
                rule = "§5"
            raise IllegalAction(why, fingerprint=fingerprint(state), rule=rule)
        events = [CardsPlayed(seat, cards, combo)]
        if len(cards) == len(state.hands[seat]):
            events.extend(_went_out(state, seat))
    return events


def _went_out(state: State, seat: int) -> list[Event]:
    """A player whose hand empties goes out with the next place; the deal may end (§6-§8)."""
    out = (*state.out, seat)
    events: list[Event] = [WentOut(seat, len(out))]
    if team_out(out) is not None:
        result = deal_result(state.deal, out)
        events.append(DealEnded(result))
        if state.options.deals and state.deal >= state.options.deals:
            team, individual = match_totals((*state.results, result))
            events.append(MatchEnded(team, individual))
    return events


def _decide_pass(state: State, command: Pass) -> list[Event]:
    seat = command.seat
    _require_turn(state, seat, Phase.PLAY, "pass")
    if state.current is None or state.current_by is None:
        raise IllegalAction("the leader of a round must play, not pass (§6)", fingerprint=fingerprint(state))
    passed = state.passed | {seat}
    maker = state.current_by
    hands = state.hands
    for s in range(SEATS):
        if s != maker and hands[s] and s not in passed:
            return [Passed(seat)]
    # every other player still holding cards passed since the current play: the round is won (D-ZLJ-4)
    leader = maker if hands[maker] else next_holder(hands, maker)  # 接风 (§6, D-ZLJ-5)
    assert leader is not None
    return [Passed(seat), RoundWon(maker, leader)]


def _decide_end_match(state: State) -> list[Event]:
    if state.phase is not Phase.CUT:
        raise IllegalAction("a match can be closed only between deals", fingerprint=fingerprint(state), rule="§9")
    team, individual = match_totals(state.results)
    return [MatchEnded(team, individual)]


def default_action(state: State, seat: int, seed: int) -> SeatAction:
    """The turn-timer default (§13): a pass when passing is allowed, else the lowest single.

    Outside play: a seeded cut; the highest remaining tribute cards when picking (§10); the lowest
    returnable cards when returning; the highest returned cards when taking back.
    """
    hand = state.hands[seat]
    if state.phase is Phase.PLAY:
        if state.current is not None:
            return Pass(seat)
        return Play(seat, (min(hand, key=lambda c: (LEVEL_OF[c], c)),))
    if state.phase is Phase.CUT:
        if state.fair:  # nothing the engine chooses after committing: the cut the commitment names
            return Cut(seat, fair.default_cut(state, DECK_SIZE), seed, fair.TIMED_OUT)
        return Cut(seat, 1 + stream(seed, TIMEOUT_STREAM).below(DECK_SIZE - 1), seed)
    tribute = state.tribute
    assert tribute is not None
    if state.phase is Phase.PICK:
        quota = dict(tribute.winners)[seat]
        return PickTribute(seat, _highest(tribute.pool_cards(), quota))
    if state.phase is Phase.RETURN:
        owed = _return_owed(state, seat)
        lowest = sorted(returnable(hand), key=lambda c: (LEVEL_OF[c], c))
        return ReturnTribute(seat, tuple(lowest[:owed]))
    return TakeBack(seat, _highest(tribute.pool_cards(), _take_back_owed(tribute, seat)))


def _highest(cards: Cards, n: int) -> Cards:
    return tuple(sorted(cards, key=lambda c: (LEVEL_OF[c], c), reverse=True)[:n])


def _decide_timeout(state: State, command: Timeout) -> list[Event]:
    _require_seat(state, command.seat)
    if state.options.turn_seconds <= 0:
        raise IllegalAction("this table has no turn timer (turn_seconds is 0), so no turn can time out (§13)")
    if state.turn != command.seat or state.phase in (Phase.NEW, Phase.ENDED):
        raise NotYourTurn(
            f"seat {command.seat} has no running turn to time out", fingerprint=fingerprint(state), rule="§13"
        )
    action = default_action(state, command.seat, command.seed)
    return [TurnTimedOut(command.seat), *decide(state, action)]


def _winners_team(tribute: Tribute) -> Team:
    return team_of(tribute.winners[0][0])


def _losers_team(tribute: Tribute) -> Team:
    return team_of(tribute.losers[0][0])


def _take_back_owed(tribute: Tribute, seat: int) -> int:
    gave = dict(tribute.losers)[seat]
    return min(gave, len(tribute.pool))


# --- evolve -----------------------------------------------------------------------------------------


def evolve(state: State, event: Event) -> State:
    """Apply one event. Events are facts: nothing is validated here."""
    if isinstance(event, CardsPlayed):
        seat = event.seat
        hands = _without(state.hands, seat, event.cards)
        return evolved(
            state,
            hands=hands,
            table=state.table + event.cards,
            current=event.combo,
            current_cards=event.cards,
            current_by=seat,
            passed=frozenset(),
            turn=next_holder(hands, seat),
        )
    if isinstance(event, Passed):
        return evolved(state, passed=state.passed | {event.seat}, turn=next_holder(state.hands, event.seat))
    if isinstance(event, RoundWon):
        return evolved(
            state,
            played=state.played + state.table,
            table=(),
            current=None,
            current_cards=(),
            current_by=None,
            passed=frozenset(),
            turn=event.leader,
        )
    if isinstance(event, FourTake):
        seat = event.seat
        taker = _without(state.hands, seat, event.fours)
        hands = (*taker[:seat], add_cards(taker[seat], event.taken), *taker[seat + 1 :])
        table = remove_cards(state.table, event.taken)
        assert table is not None
        return evolved(
            state,
            hands=hands,
            table=table + event.fours,
            current=event.combo,
            current_cards=event.fours,
            current_by=seat,
            passed=frozenset(),
            turn=next_holder(hands, seat),
            taken=(*state.taken, FourTakeRecord(seat, event.taken_from, event.taken)),
        )
    if isinstance(event, WentOut):
        return evolved(state, out=(*state.out, event.seat))
    if isinstance(event, DealEnded):
        result = event.result
        return evolved(
            state,
            phase=Phase.CUT,
            turn=next_seat(result.big_tribute),
            previous=result,
            results=(*state.results, result),
            played=state.played + state.table,
            table=(),
            current=None,
            current_cards=(),
            current_by=None,
            passed=frozenset(),
        )
    if isinstance(event, MatchEnded):
        return replace(state, phase=Phase.ENDED, turn=None)
    if isinstance(event, MatchStarted):
        if event.fair:
            return replace(
                state, options=event.options, fair=True, phase=Phase.SHUFFLE, commit_reveal=event.commit_reveal
            )
        return replace(state, options=event.options)
    if isinstance(event, HandsDealt):
        return replace(
            state,
            shuffle=fair.on_deal(state),
            deal=event.deal,
            hands=event.hands,
            dealt=tuple(sorted(c for h in event.hands for c in h)),
            turn=None,
            table=(),
            played=(),
            out=(),
            taken=(),
            tribute=None,
            leader=None,
            shown_jokers=None,
            current=None,
            current_cards=(),
            current_by=None,
            passed=frozenset(),
        )
    if isinstance(event, PlayStarted):
        return replace(state, phase=Phase.PLAY, turn=event.leader, leader=event.leader)
    if isinstance(event, RockPaperScissors | TurnTimedOut):
        return state
    if isinstance(event, TributeResisted):
        return replace(state, shown_jokers=(event.seat, event.cards))
    if isinstance(event, TributeOrdered):
        tribute = Tribute(winners=event.winners, losers=event.losers, leader=event.leader)
        return _advance_tribute(replace(state, phase=Phase.PICK, tribute=tribute))
    if isinstance(event, TributeGiven | TributeReturned):
        if not event.cards:
            return state
        return _move_to_pool(state, event.seat, event.cards, returning=isinstance(event, TributeReturned))
    if isinstance(event, TributePicked | ReturnTakenBack):
        assert event.cards is not None
        return _advance_tribute(
            _move_from_pool(state, event.seat, event.cards, picking=isinstance(event, TributePicked))
        )
    changes = fair.evolve_shuffle(state, event, cutter=state.turn if state.phase is Phase.CUT else None)
    if changes is not None:
        return replace(state, **changes)
    raise TypeError(f"unknown event {event!r}")


def _without(hands: tuple[Cards, ...], seat: int, cards: Cards) -> tuple[Cards, ...]:
    rest = remove_cards(hands[seat], cards)
    assert rest is not None, f"seat {seat} does not hold {cards_text(cards)}"
    return (*hands[:seat], rest, *hands[seat + 1 :])


def _move_to_pool(state: State, seat: int, cards: Cards, *, returning: bool) -> State:
    """Tribute (or returned) cards leave a hand for the pool, remembering where they came from."""
    tribute = state.tribute
    assert tribute is not None
    tribute = replace(tribute, pool=tribute.pool + tuple((c, seat) for c in cards))
    if not returning:
        return replace(state, hands=_without(state.hands, seat, cards), tribute=tribute)
    tribute = replace(tribute, done=(*tribute.done, seat))
    return _advance_tribute(replace(state, hands=_without(state.hands, seat, cards), tribute=tribute))


def _move_from_pool(state: State, seat: int, cards: Cards, *, picking: bool) -> State:
    tribute = state.tribute
    assert tribute is not None
    pool = list(tribute.pool)
    by_origin: dict[int, list[Card]] = {}
    for c in cards:
        i = next(i for i, (pc, _) in enumerate(pool) if pc == c)
        origin = pool.pop(i)[1]
        by_origin.setdefault(origin, []).append(c)
    transfers = tuple(Transfer(origin, seat, tuple(sorted(cs))) for origin, cs in by_origin.items())
    hands = list(state.hands)
    hands[seat] = add_cards(hands[seat], cards)
    if picking:
        tribute = replace(tribute, pool=tuple(pool), picks=tribute.picks + transfers, done=(*tribute.done, seat))
    else:
        tribute = replace(tribute, pool=tuple(pool), returns=tribute.returns + transfers, done=(*tribute.done, seat))
    return replace(state, hands=tuple(hands), tribute=tribute)


def _advance_tribute(state: State) -> State:
    """Find who acts next in tribute, moving on to return and take-back when a step is complete.

    Seats with nothing to do are skipped: a winner with no cards to pick, a winner who received nothing or
    holds no card 5..Q (D-ZLJ-11), a loser who gave nothing or finds the returned cards gone.
    """
    tribute = state.tribute
    assert tribute is not None
    phase = state.phase
    while True:
        if phase is Phase.PICK:
            for seat, quota in tribute.winners:
                if quota and seat not in tribute.done:
                    return replace(state, phase=phase, tribute=tribute, turn=seat)
            phase, tribute = Phase.RETURN, replace(tribute, done=())
            continue
        if phase is Phase.RETURN:
            for seat, _ in tribute.winners:
                if seat not in tribute.done and min(tribute.received(seat), len(returnable(state.hands[seat]))):
                    return replace(state, phase=phase, tribute=tribute, turn=seat)
            phase, tribute = Phase.TAKE_BACK, replace(tribute, done=())
            continue
        for seat, gave in tribute.losers:
            if seat not in tribute.done and min(gave, len(tribute.pool)):
                return replace(state, phase=phase, tribute=tribute, turn=seat)
        return replace(state, phase=phase, tribute=tribute, turn=None)


def replay(events: Iterable[Event], state: State | None = None) -> State:
    """The state after applying ``events`` in order (from a new table unless ``state`` is given)."""
    s = state if state is not None else State()
    for e in events:
        s = evolve(s, e)
    return s


# --- legal actions ----------------------------------------------------------------------------------


@lru_cache(maxsize=2048)
def _by_level(source: Cards) -> tuple[tuple[tuple[Card, ...], ...], tuple[int, ...]]:
    """Cards grouped by level, and the count per level (memoised: a hand is asked about at its turn and when its play
    is checked; 2,048 hands are those of about 340 tables at once, and about 2 MB)."""
    groups: list[list[Card]] = [[] for _ in range(LEVELS)]
    for c in source:
        groups[LEVEL_OF[c]].append(c)
    return tuple(tuple(g) for g in groups), tuple(len(g) for g in groups)


def _cards_for(shape: Shape, groups: tuple[tuple[Card, ...], ...]) -> Cards:
    """Concrete cards realising a level shape, from cards grouped by level (the lowest suits first).

    Shapes of several levels are runs of 4..A or joker bombs, whose levels follow card order, so
    the concatenation is already sorted.
    """
    if len(shape) == 1:
        level, n = shape[0]
        return groups[level][:n]
    chosen: Cards = ()
    for level, n in shape:
        chosen += groups[level][:n]
    return chosen


def _choices(source: Cards, k: int, allowed: Iterable[int] = range(LEVELS)) -> Iterator[Cards]:
    """Every choice of ``k`` cards from ``source`` up to suits, restricted to ``allowed`` levels."""
    groups, counts = _by_level(source)
    levels = [lv for lv in allowed if counts[lv]]
    for combo in combinations_with_replacement(levels, k):
        need: dict[int, int] = {}
        for lv in combo:
            need[lv] = need.get(lv, 0) + 1
        if all(counts[lv] >= n for lv, n in need.items()):
            yield tuple(sorted(c for lv, n in need.items() for c in groups[lv][:n]))


def legal_actions(state: State, seat: int) -> tuple[SeatAction, ...]:
    """Everything ``seat`` may do now, one representative per choice of ranks (suits never matter, §1)."""
    if state.turn != seat:
        return ()
    phase = state.phase
    if phase is Phase.PLAY:
        groups, counts = _by_level(state.hands[seat])
        current = state.current
        if current is None:
            return tuple(Play(seat, _cards_for(shape, groups)) for shape in all_plays(counts))
        return (Pass(seat), *[Play(seat, _cards_for(shape, groups)) for shape in answers(counts, current)])
    if phase is Phase.CUT:
        if state.commit_reveal:  # the cutter commits to its cut and reveals it (paiju.rules.fair, version 2)
            return ()
        return tuple(Cut(seat, n, 0) for n in range(1, DECK_SIZE))
    tribute = state.tribute
    if tribute is None:
        return ()
    if phase is Phase.PICK:
        quota = dict(tribute.winners)[seat]
        return tuple(PickTribute(seat, c) for c in _choices(tribute.pool_cards(), quota))
    if phase is Phase.RETURN:
        owed = _return_owed(state, seat)
        allowed = range(RETURN_LOW, RETURN_HIGH + 1)
        return tuple(ReturnTribute(seat, c) for c in _choices(state.hands[seat], owed, allowed))
    if phase is Phase.TAKE_BACK:
        owed = _take_back_owed(tribute, seat)
        return tuple(TakeBack(seat, c) for c in _choices(tribute.pool_cards(), owed))
    return ()


def conserved(state: State) -> bool:
    """§14: hands, the table, played piles and the tribute pool hold exactly the dealt cards."""
    pool = tribute_pool(state)
    everything = sorted(c for h in state.hands for c in h)
    everything.extend(state.table)
    everything.extend(state.played)
    everything.extend(pool)
    return sorted(everything) == list(state.dealt)


def tribute_pool(state: State) -> Cards:
    return state.tribute.pool_cards() if state.tribute is not None else ()
