"""Dealing fairly (paiju.rules.fair) and verifying it (paiju.rules.verify), on the rules cores alone: whole fair games
played by seeded random seats, with the engine's steps taken as the engine takes them (`fair.settle`).

- Hypothesis: for random server seeds and contributions, `verify` accepts every honest log, and rejects a log with
  any single changed byte in a dealt hand, a revealed seed, a commitment or a contribution, naming the event;
- the protocol's order: commitment before contributions, the deal only from the committed seed, the reveal only
  after the deal, and refusals of what breaks it (a second contribution, the cutter's contribution apart from its
  cut, a wrong seed, a game not dealt fairly);
- a silent cutter is covered by the timer's default, which the commitment fixes;
- a void first 拖拉机 deal is revealed and dealt again from a new commitment;
- a game dealt from seeds verifies as "not committed"; the draws seed of the document's test vector.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paiju.rules import fair
from paiju.rules.cards import format_card
from paiju.rules.errors import IllegalAction, NotYourTurn, RuleError
from paiju.rules.fairness import commitment
from paiju.rules.registry import TRACTOR, ZLJ, GameRules
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import model as tm
from paiju.rules.verify import Verdict, verify
from paiju.rules.zlj import model as zm

from ..support.profiles import profile

pytestmark = pytest.mark.unit

Log = list[tuple[int, Any]]


class Table:
    """A fair game driven as the engine drives it: each command's events, then the engine's due steps."""

    def __init__(self, rules: GameRules, options: Any, seeds: Callable[[int], bytes]) -> None:
        self.rules = rules
        self.seeds = seeds
        self.state = rules.new_state()
        self.log: Log = []
        self.act(rules.start(0, options, 0, fair=True))

    def _apply(self, events: Any) -> None:
        for event in events:
            self.state = self.rules.evolve(self.state, event)
            self.log.append((len(self.log) + 1, event))

    def act(self, command: Any, *, window_over: bool = False) -> None:
        self._apply(self.rules.decide(self.state, command))
        self._apply(
            fair.settle(
                self.rules.decide,
                self.rules.evolve,
                self.rules.fair_step,
                self.state,
                lambda number, _: self.seeds(number),
                window_over=window_over,
            )
        )

    def window_closes(self) -> None:
        """The engine's contribution window passed: it deals with the contributions that came."""
        step = self.rules.fair_step(self.state)
        assert step is not None and step.kind == "deal" and step.waits
        self.act(fair.command(step, self.seeds(step.number)))


def play(
    rules: GameRules,
    options: Any,
    rng: SeededRandom,
    *,
    contribute: Callable[[int], bytes | None],
    deals: int,
    cut_bytes: bool = True,
    limit: int = 200_000,
) -> Table:
    """Play until ``deals`` deals are over and revealed (a 砸六家 match is then closed): each seat contributes
    ``contribute(seat)`` to a first deal (``None``: it stays silent, and the window closes), cutters cut a random
    count with random bytes (or none: ``cut_bytes``), every other turn a random legal action."""
    server = rng.next64()
    table = Table(rules, options, lambda n: hashlib.sha256(b"server %d %d" % (server, n)).digest())
    for _ in range(limit):
        state = table.state
        revealed = sum(1 for _, e in table.log if isinstance(e, fair.SeedRevealed))
        if state.phase.value == "ended" or (revealed >= deals and state.phase.value == "cut"):
            if rules is ZLJ and state.phase.value == "cut":
                table.act(zm.EndMatch())
            return table
        step = rules.fair_step(state)
        if step is not None and step.waits:
            for seat in range(rules.seats):
                if not state.shuffle.contributed(seat) and (given := contribute(seat)) is not None:
                    table.act(fair.Contribute(seat, given))
            if rules.fair_step(table.state) is not None:
                table.window_closes()
            continue
        seat = next(iter(rules.waiting(state)))
        actions = rules.legal_actions(state, seat)
        action = actions[rng.below(len(actions))]
        if isinstance(action, zm.Cut | tm.Cut):
            action = replace(action, contribution=rng.next64().to_bytes(8, "big") if cut_bytes else b"")
        table.act(action)
    raise AssertionError("the game did not end")


def random_contributions(rng: SeededRandom) -> Callable[[int], bytes | None]:
    return lambda seat: rng.next64().to_bytes(8, "big")[: 1 + rng.below(8)] if rng.below(4) else None


ZLJ_OPTIONS = zm.Options(deals=0)


def zlj_game(seed: int, deals: int = 2) -> Table:
    rng = SeededRandom(seed)
    return play(ZLJ, ZLJ_OPTIONS, rng, contribute=random_contributions(rng), deals=deals)


def only(verdict: Verdict) -> Verdict:
    assert verdict.failure is None, verdict.failure
    return verdict


# --- honest logs verify --------------------------------------------------------------------------------------


@profile(12)
@given(st.integers(0, 2**32))
def test_honest_zlj_logs_verify_deal_by_deal(seed: int) -> None:
    table = zlj_game(seed)
    verdict = only(verify(ZLJ, table.log))
    assert verdict.committed and verdict.verified == 2
    assert [s.status for s in verdict.shuffles] == ["verified", "verified", "committed"]  # the third never dealt
    # the order of the protocol: every commitment before its contributions, its deal and its reveal
    for shuffle in verdict.shuffles[:2]:
        at = {type(e).__name__: v for v, e in table.log if getattr(e, "number", None) == shuffle.number}
        dealt = next(v for v, e in table.log if isinstance(e, zm.HandsDealt) and e.deal == shuffle.deal)
        assert at["SeedCommitted"] < dealt < at["SeedRevealed"]
        assert all(
            at["SeedCommitted"] < v < dealt
            for v, e in table.log
            if isinstance(e, fair.SeedContributed) and e.number == shuffle.number
        )


def test_honest_tractor_logs_verify_deal_by_deal() -> None:
    rng = SeededRandom(3)
    table = play(TRACTOR, tm.Options(), rng, contribute=random_contributions(rng), deals=2)
    verdict = only(verify(TRACTOR, table.log))
    assert verdict.verified >= 2
    flips = [e for _, e in table.log if isinstance(e, tm.CardFlipped)]
    assert flips, "the first deal's flip comes from the draws seed and is checked"


# --- any changed byte fails --------------------------------------------------------------------------------------


def _flip(data: bytes, at: int) -> bytes:
    at %= len(data)
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def tampered(log: Log, index: int, event: Any) -> Log:
    return [*log[:index], (log[index][0], event), *log[index + 1 :]]


def _indexes(log: Log, kind: type) -> list[int]:
    return [i for i, (_, e) in enumerate(log) if isinstance(e, kind)]


HONEST = {seed: zlj_game(seed).log for seed in (11, 12)}


@profile(40)
@given(st.sampled_from(sorted(HONEST)), st.integers(0, 10_000), st.integers(0, 10_000))
def test_a_changed_card_in_a_dealt_hand_fails_at_that_deal(seed: int, which: int, where: int) -> None:
    log = HONEST[seed]
    index = _indexes(log, zm.HandsDealt)[which % 2]
    dealt = log[index][1]
    seat = where % 6
    hand = list(dealt.hands[seat])
    hand[where % len(hand)] = (hand[where % len(hand)] + 1 + where % 53) % 54  # another card (one byte changed)
    hands = tuple(tuple(sorted(hand)) if s == seat else h for s, h in enumerate(dealt.hands))
    verdict = verify(ZLJ, tampered(log, index, replace(dealt, hands=hands)))
    assert verdict.failure is not None and verdict.failure.index == index
    assert "HandsDealt differs" in verdict.failure.reason


@profile(40)
@given(st.sampled_from(sorted(HONEST)), st.integers(0, 1), st.integers(0, 31))
def test_a_changed_byte_of_a_revealed_seed_fails_at_the_reveal(seed: int, which: int, byte: int) -> None:
    log = HONEST[seed]
    index = _indexes(log, fair.SeedRevealed)[which]
    revealed = log[index][1]
    verdict = verify(ZLJ, tampered(log, index, replace(revealed, server_seed=_flip(revealed.server_seed, byte))))
    assert verdict.failure is not None and verdict.failure.index == index
    assert "does not match its commitment" in verdict.failure.reason


@profile(40)
@given(st.sampled_from(sorted(HONEST)), st.integers(0, 1), st.integers(0, 31))
def test_a_changed_byte_of_a_commitment_fails(seed: int, which: int, byte: int) -> None:
    log = HONEST[seed]
    index = _indexes(log, fair.SeedCommitted)[which]
    committed = log[index][1]
    verdict = verify(ZLJ, tampered(log, index, replace(committed, commitment=_flip(committed.commitment, byte))))
    assert verdict.failure is not None
    assert isinstance(verdict.failure.event, fair.SeedRevealed) and verdict.failure.event.number == committed.number


@profile(40)
@given(st.sampled_from(sorted(HONEST)), st.integers(0, 10_000), st.integers(0, 63))
def test_a_changed_byte_of_a_contribution_fails_at_the_deal_it_fed(seed: int, which: int, byte: int) -> None:
    log = HONEST[seed]
    indexes = _indexes(log, fair.SeedContributed)
    index = indexes[which % len(indexes)]
    given_ = log[index][1]
    changed = replace(given_, contribution=_flip(given_.contribution, byte))
    verdict = verify(ZLJ, tampered(log, index, changed))
    assert verdict.failure is not None
    dealt = next(i for i in _indexes(log, zm.HandsDealt) if i > index)
    assert verdict.failure.index == dealt and isinstance(verdict.failure.event, zm.HandsDealt)


def test_a_changed_draw_fails_too() -> None:
    """The first deal's rock-paper-scissors (or its leader) follow from the draws seed: a changed throw fails."""
    for log in HONEST.values():
        index = next((i for i in _indexes(log, zm.RockPaperScissors)), None)
        if index is None:
            index = _indexes(log, zm.PlayStarted)[0]
            event = log[index][1]
            changed = replace(event, leader=(event.leader + 1) % 6)
        else:
            event = log[index][1]
            changed = replace(event, order=tuple(reversed(event.order)))
        verdict = verify(ZLJ, tampered(log, index, changed))
        assert verdict.failure is not None and verdict.failure.index == index


# --- the protocol's rules ----------------------------------------------------------------------------------------


def fresh_zlj() -> Table:
    return Table(ZLJ, ZLJ_OPTIONS, lambda n: hashlib.sha256(b"seed %d" % n).digest())


def test_a_fair_match_commits_before_anyone_can_contribute_and_deals_only_from_the_committed_seed() -> None:
    table = fresh_zlj()
    assert [type(e).__name__ for _, e in table.log] == ["MatchStarted", "SeedCommitted"]
    assert table.state.phase is zm.Phase.SHUFFLE and table.rules.waiting(table.state) == ()
    assert table.log[1][1].commitment == commitment(table.seeds(1))
    table.act(fair.Contribute(2, b"two"))
    with pytest.raises(IllegalAction, match="contributed to this shuffle already"):
        ZLJ.decide(table.state, fair.Contribute(2, b"again"))
    for bad in (b"", b"x" * 65):
        with pytest.raises(IllegalAction, match="1 to 64 bytes"):
            ZLJ.decide(table.state, fair.Contribute(3, bad))
    with pytest.raises(RuleError, match="does not match the commitment"):
        ZLJ.decide(table.state, fair.DealShuffle(table.seeds(2)))
    with pytest.raises(IllegalAction, match="no dealt shuffle"):
        ZLJ.decide(table.state, fair.RevealSeed(table.seeds(1)))
    with pytest.raises(IllegalAction):
        ZLJ.decide(table.state, fair.CommitSeed(2, commitment(table.seeds(2))))
    for seat in (0, 1, 3, 4, 5):
        table.act(fair.Contribute(seat, b"seat %d" % seat))
    names = [type(e).__name__ for _, e in table.log]
    dealt = names.index("HandsDealt")
    assert names[2:dealt] == ["SeedContributed"] * 6, "the last contribution deals at once"
    with pytest.raises(NotYourTurn):
        ZLJ.decide(table.state, fair.Contribute(0, b"late"))


def test_a_game_dealt_from_seeds_takes_no_protocol_step_and_verifies_as_not_committed() -> None:
    state = ZLJ.new_state()
    log: Log = []
    for event in ZLJ.decide(state, ZLJ.start(7, ZLJ_OPTIONS, 0)):
        state = ZLJ.evolve(state, event)
        log.append((len(log) + 1, event))
    assert ZLJ.fair_step(state) is None
    with pytest.raises(IllegalAction, match="does not deal from committed seeds"):
        ZLJ.decide(state, fair.Contribute(0, b"x"))
    verdict = verify(ZLJ, log)
    assert not verdict.committed and verdict.ok and verdict.shuffles == ()


def test_the_cutter_contributes_with_its_cut_and_a_silent_cutter_with_what_the_commitment_names() -> None:
    rng = SeededRandom(5)
    table = play(ZLJ, zm.Options(deals=0, turn_seconds=20), rng, contribute=lambda seat: b"c%d" % seat, deals=1)
    state = table.state  # after EndMatch: reopen from the log before it
    log = table.log[:-1]
    state = ZLJ.new_state()
    for _, event in log:
        state = ZLJ.evolve(state, event)
    assert state.phase is zm.Phase.CUT and state.shuffle is not None and not state.shuffle.dealt
    cutter = state.turn
    with pytest.raises(IllegalAction, match="the cutter contributes with the cut"):
        ZLJ.decide(state, fair.Contribute(cutter, b"apart"))
    # the cutter's timer runs out: the engine's default contributes "timed out" and the cut the commitment names
    events = list(ZLJ.decide(state, zm.Timeout(cutter, seed=12345)))
    assert [type(e).__name__ for e in events] == ["TurnTimedOut", "SeedContributed"]
    contributed = events[1]
    number = state.shuffle.number
    expected_cut = 1 + int.from_bytes(state.shuffle.commitment[:4], "big") % 107
    assert (contributed.seat, contributed.contribution, contributed.cut) == (cutter, b"timed out", expected_cut)
    other = list(ZLJ.decide(state, zm.Timeout(cutter, seed=999)))
    assert other == events, "the engine's seed does not steer the default"
    for event in events:
        state = ZLJ.evolve(state, event)
    wrong = fair.settle(  # a deal needs the committed seed: another is refused, and the deal stays due
        ZLJ.decide, ZLJ.evolve, ZLJ.fair_step, state, lambda n, _: hashlib.sha256(b"x").digest(), window_over=True
    )
    assert wrong == [] and ZLJ.fair_step(state) == fair.Step("deal", state.shuffle.number)
    with pytest.raises(RuleError, match="does not match the commitment"):
        ZLJ.decide(state, fair.DealShuffle(hashlib.sha256(b"x").digest()))
    again = Table.__new__(Table)
    again.rules, again.seeds, again.state, again.log = ZLJ, table.seeds, state, [*log, *((0, e) for e in events)]
    again._apply(
        fair.settle(ZLJ.decide, ZLJ.evolve, ZLJ.fair_step, state, lambda n, _: table.seeds(n), window_over=False)
    )
    hands = next(e for _, e in again.log if isinstance(e, zm.HandsDealt) and e.deal == 2)
    assert (hands.cut, hands.cutter) == (expected_cut, cutter)
    assert state.shuffle.number == number


def test_a_cut_without_chosen_bytes_contributes_its_count() -> None:
    rng = SeededRandom(8)
    table = play(ZLJ, ZLJ_OPTIONS, rng, contribute=lambda seat: None, deals=2, cut_bytes=False)
    cuts = [e for _, e in table.log if isinstance(e, fair.SeedContributed) and e.cut is not None]
    assert cuts and all(c.contribution == str(c.cut).encode() for c in cuts)
    first = verify(ZLJ, table.log).shuffles[0]
    assert first.contributions == (), "nobody contributed to the first deal: the window dealt it"
    only(verify(ZLJ, table.log))


def test_a_void_first_tractor_deal_is_revealed_and_dealt_again_from_a_new_commitment() -> None:
    table = Table(TRACTOR, tm.Options(), lambda n: hashlib.sha256(b"tractor %d" % n).digest())
    for seat in range(4):
        table.act(fair.Contribute(seat, b"t%d" % seat))
    assert table.state.phase is tm.Phase.BID
    while table.state.phase is tm.Phase.BID:  # every seat passes: the first deal is void (D-TR-6.6)
        table.act(tm.Pass(next(iter(TRACTOR.waiting(table.state)))))
    names = [type(e).__name__ for _, e in table.log]
    voided = names.index("DealVoided")
    assert names[voided + 1 : voided + 3] == ["SeedRevealed", "SeedCommitted"]
    assert table.state.phase is tm.Phase.FLIP and table.state.shuffle.number == 2 and table.state.shuffle.deal == 1
    for seat in range(4):
        table.act(fair.Contribute(seat, b"again %d" % seat))
    verdict = only(verify(TRACTOR, table.log))
    assert [(s.number, s.deal, s.status) for s in verdict.shuffles] == [(1, 1, "verified"), (2, 1, "not revealed yet")]


def test_the_draws_seed_of_the_documents_test_vector() -> None:
    seed = bytes(range(32))
    contributions = [bytes.fromhex("0a0b0c0d"), b"seat-3 cuts 42"]
    assert fair.draws_seed(seed, contributions) == 2062245181578769612
    assert 1 + int.from_bytes(commitment(seed)[:4], "big") % 107 == 65  # a silent 砸六家 cutter's cut
    assert 1 + int.from_bytes(commitment(seed)[:4], "big") % 323 == 267  # a silent 拖拉机 dealer's cut


def test_a_live_games_log_as_a_client_receives_it_checks_the_seeds_and_waits_for_the_hands() -> None:
    """A spectator's or a seat's log of a live game hides the hands: the revealed seeds are checked against their
    commitments, the deals are "hands hidden" (not failed), and a changed seed still fails."""
    for seat in (None, 0, 3):
        log = [(v, ZLJ.redact(e, seat)) for v, e in HONEST[11]]
        verdict = only(verify(ZLJ, log))
        assert [s.status for s in verdict.shuffles] == ["hands hidden", "hands hidden", "not revealed yet"]
        assert verdict.hidden == 2 and verdict.verified == 0
        index = _indexes(log, fair.SeedRevealed)[1]
        revealed = log[index][1]
        bad = verify(ZLJ, tampered(log, index, replace(revealed, server_seed=_flip(revealed.server_seed, 5))))
        assert bad.failure is not None and bad.failure.index == index


def test_the_draws_of_the_documents_test_vector() -> None:
    """docs/fairness.md, "Checking the draws": the first deal of each game from the test vector's seed and
    contributions, as the document states it."""
    seed = bytes(range(32))
    contributions = [bytes.fromhex("0a0b0c0d"), b"seat-3 cuts 42"]
    draws = fair.draws_seed(seed, contributions)
    assert SeededRandom(draws).next64() == 0x35853672C6446BCC
    zlj_state = replace(
        ZLJ.new_state(),
        fair=True,
        phase=zm.Phase.SHUFFLE,
        shuffle=fair.Shuffle(
            1,
            1,
            commitment(seed),
            tuple(fair.SeedContributed(1, s, c) for s, c in zip((0, 3), contributions, strict=True)),
        ),
    )
    dealt, rps, lead = ZLJ.decide(zlj_state, fair.DealShuffle(seed))
    assert dealt.first_drawer == 5 and dealt.seed == draws
    assert rps.rounds == (((0, 2), (4, 0)),) and lead.leader == 4  # scissors, rock: seat 4 leads
    tractor_state = replace(TRACTOR.new_state(), fair=True, phase=tm.Phase.FLIP, shuffle=replace(zlj_state.shuffle))
    flipped, _ = TRACTOR.decide(tractor_state, fair.DealShuffle(seed))
    assert (flipped.flipper, format_card(flipped.card), flipped.first_drawer) == (3, "QH", 2)
