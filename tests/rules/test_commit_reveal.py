"""Fair dealing by protocol version 2 (paiju.rules.fair; docs/fairness.md, "Version 2: commit, then reveal"), on
the rules cores alone: whole games whose seats commit to their contributions (the cutter to its cut too) before any
is revealed, with the engine's steps taken as the engine takes them.

- honest logs verify deal by deal, and name the protocol version and the seats that contributed;
- the order: every commitment (the cutter's included) before the commitments close, every reveal after;
  the verifier rejects a log that moves a reveal before the close or a commitment after it;
- a withheld reveal and a mismatching one are recorded, count as no contribution (a withholding cutter's cut is
  the one the server's commitment names), and the deal still deals;
- a deal without any contribution is "verified, server seed alone";
- version-1 commands are refused in a version-2 game (a contribution without commitment, a cut outside the
  windows), and malformed reveals change nothing.
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
from paiju.rules.errors import IllegalAction, NotYourTurn
from paiju.rules.fairness import contribution_commitment
from paiju.rules.registry import TRACTOR, ZLJ, GameRules
from paiju.rules.rng import SeededRandom
from paiju.rules.tractor import model as tm
from paiju.rules.verify import ALONE, VERIFIED, verify
from paiju.rules.zlj import model as zm

from ..support.profiles import profile

pytestmark = pytest.mark.unit

Log = list[tuple[int, Any]]
Behaviour = Callable[[int, int], str]
"""What a seat does with shuffle ``number``: ``honest``, ``silent`` (commits nothing), ``withhold`` (commits, never
reveals) or ``mismatch`` (reveals other bytes than it committed to)."""


def honest(number: int, seat: int) -> str:
    return "honest"


class Table:
    """A version-2 fair game driven as the engine drives it: each command's events, then the engine's due steps; a
    waiting step is taken once every seat that would act has acted (its window passed)."""

    def __init__(self, rules: GameRules, options: Any, behaviour: Behaviour = honest, seed: int = 1) -> None:
        self.rules = rules
        self.behaviour = behaviour
        self.rng = SeededRandom(seed)
        self.state = rules.new_state()
        self.log: Log = []
        self.kept: dict[tuple[int, int], tuple[bytes, bytes, int]] = {}
        self.act(rules.start(0, options, 0, fair=True, commit_reveal=True))

    def seed_of(self, number: int) -> bytes:
        return hashlib.sha256(b"server seed %d" % number).digest()

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
                lambda number, _: self.seed_of(number),
                window_over=window_over,
            )
        )

    def _bytes(self, n: int) -> bytes:
        return b"".join(self.rng.next64().to_bytes(8, "big") for _ in range((n + 7) // 8))[:n]

    def seats_act(self) -> None:
        """Every seat takes the fair-dealing step it owes now, as its behaviour says."""
        shuffle = self.state.shuffle
        for seat in range(self.rules.seats):
            owed = fair.owed(self.state, seat)
            what = self.behaviour(shuffle.number, seat)
            if owed == "commit" and what != "silent":
                salt, contribution = self._bytes(32), self._bytes(16)
                cut = 1 + self.rng.below(deck_size(self.rules) - 1) if seat == shuffle.cutter else 0
                self.kept[(shuffle.number, seat)] = (salt, contribution, cut)
                digest = contribution_commitment(shuffle.number, seat, salt, cut, contribution)
                self.act(fair.CommitContribution(seat, digest))
            elif owed == "reveal" and what != "withhold":
                salt, contribution, cut = self.kept[(shuffle.number, seat)]
                if what == "mismatch":
                    contribution = bytes(b ^ 1 for b in contribution)
                self.act(fair.RevealContribution(seat, salt, contribution, cut))

    def window_closes(self) -> None:
        step = self.rules.fair_step(self.state)
        assert step is not None and step.waits
        self.act(fair.command(step, self.seed_of(step.number)))


def deck_size(rules: GameRules) -> int:
    return 108 if rules is ZLJ else 324


def play(table: Table, deals: int, limit: int = 200_000, *, close: bool = True) -> Table:
    """Play until ``deals`` deals are over and revealed (a 砸六家 match is then closed, with ``close``)."""
    rules = table.rules
    for _ in range(limit):
        state = table.state
        revealed = sum(1 for _, e in table.log if isinstance(e, fair.SeedRevealed))
        if state.phase.value == "ended" or (revealed >= deals and state.phase.value == "cut"):
            if rules is ZLJ and state.phase.value == "cut" and close:
                table.act(zm.EndMatch())
            return table
        step = rules.fair_step(state)
        if step is not None and step.waits:
            if state.shuffle is not None:
                table.seats_act()
            if rules.fair_step(table.state) == step:  # some seats did not act: the window runs out
                table.window_closes()
            continue
        waiting = rules.waiting(state)
        assert waiting, f"nobody to act and no engine step in {state.phase}"
        seat = waiting[0]
        actions = rules.legal_actions(state, seat)
        table.act(actions[table.rng.below(len(actions))])
    raise AssertionError("the game did not end")


def events(table: Table, kind: type) -> list[tuple[int, Any]]:
    return [(i, e) for i, (_, e) in enumerate(table.log) if isinstance(e, kind)]


# --- honest logs --------------------------------------------------------------------------------------------------


@profile(6)
@given(st.integers(0, 2**32))
def test_honest_version_2_logs_verify_with_every_seat_contributing(seed: int) -> None:
    table = play(Table(ZLJ, zm.Options(deals=0), seed=seed), deals=2)
    verdict = verify(ZLJ, table.log)
    assert verdict.failure is None, verdict.failure
    dealt = [s for s in verdict.shuffles if s.status != "committed"]
    assert [s.status for s in dealt] == [VERIFIED, VERIFIED]
    assert all(s.version == 2 and s.contributors == tuple(range(6)) for s in dealt)


def test_honest_tractor_version_2_logs_verify() -> None:
    table = play(Table(TRACTOR, tm.Options(), seed=5), deals=2)
    verdict = verify(TRACTOR, table.log)
    assert verdict.failure is None, verdict.failure
    assert verdict.verified >= 2 and verdict.alone == 0


def test_every_commitment_the_cutters_included_precedes_every_reveal() -> None:
    table = play(Table(ZLJ, zm.Options(deals=0)), deals=2)
    for (closed_at, closed), (hands_at, _) in zip(
        events(table, fair.CommitsClosed), events(table, zm.HandsDealt), strict=False
    ):
        pledges = [i for i, e in events(table, fair.ContributionCommitted) if e.number == closed.number]
        reveals = [i for i, e in events(table, fair.ContributionRevealed) if e.number == closed.number]
        assert len(pledges) == 6 and len(reveals) == 6
        assert max(pledges) < closed_at < min(reveals) and max(reveals) < hands_at
    cut_reveal = next(e for _, e in events(table, fair.ContributionRevealed) if e.cut is not None)
    dealt = next(e for _, e in events(table, zm.HandsDealt) if e.deal == 2)
    assert (dealt.cut, dealt.cutter) == (cut_reveal.cut, cut_reveal.seat), "the deal takes the revealed cut"


def test_the_verifier_rejects_a_reveal_before_the_commitments_close_and_a_commitment_after() -> None:
    table = play(Table(ZLJ, zm.Options(deals=0)), deals=2)
    log = table.log
    closed_at = events(table, fair.CommitsClosed)[1][0]  # the second shuffle's: it has a cutter
    cutter_reveal = next(i for i, e in events(table, fair.ContributionRevealed) if e.cut is not None)
    early = [*log[:closed_at], log[cutter_reveal], *log[closed_at:cutter_reveal], *log[cutter_reveal + 1 :]]
    failure = verify(ZLJ, early).failure
    assert failure is not None and "while its commitments are still taken" in failure.reason
    last_pledge = max(i for i, e in events(table, fair.ContributionCommitted) if e.number == 2)
    late = [*log[:last_pledge], *log[last_pledge + 1 : closed_at + 1], log[last_pledge], *log[closed_at + 1 :]]
    failure = verify(ZLJ, late).failure
    assert failure is not None and failure.index == closed_at - 1, failure


def test_a_recorded_match_that_does_not_match_fails_and_so_does_a_changed_contribution() -> None:
    table = play(Table(ZLJ, zm.Options(deals=0)), deals=1)
    at, reveal = events(table, fair.ContributionRevealed)[2]
    forged = list(table.log)
    forged[at] = (forged[at][0], replace(reveal, contribution=b"forged"))
    failure = verify(ZLJ, forged).failure
    assert failure is not None and failure.index == at and "wrongly" in failure.reason
    dealt_at = events(table, zm.HandsDealt)[0][0]
    both = list(forged)
    both[at] = (both[at][0], replace(reveal, contribution=b"forged", matches=False))
    closed_at, closed = events(table, fair.RevealsClosed)[0]
    failure = verify(ZLJ, both).failure
    assert failure is not None and failure.index in (closed_at, dealt_at), failure
    assert closed.contributors == tuple(range(6))


# --- withheld and mismatching reveals -----------------------------------------------------------------------------


def test_a_withheld_and_a_mismatching_reveal_are_recorded_count_as_nothing_and_the_deal_deals() -> None:
    behaviour = {1: "withhold", 4: "mismatch"}
    table = play(Table(ZLJ, zm.Options(deals=0), lambda n, seat: behaviour.get(seat, "honest")), deals=2)
    closes = [e for _, e in events(table, fair.RevealsClosed)]
    assert closes[0] == fair.RevealsClosed(1, (0, 2, 3, 5), (1,), (4,))
    mismatch = next(e for _, e in events(table, fair.ContributionRevealed) if e.seat == 4)
    assert not mismatch.matches
    verdict = verify(ZLJ, table.log)
    assert verdict.failure is None, verdict.failure
    assert verdict.shuffles[0].contributors == (0, 2, 3, 5) and verdict.shuffles[0].withheld == (1, 4)
    assert len(events(table, zm.HandsDealt)) >= 2, "each deal still dealt"


def test_a_withholding_cutter_cuts_what_the_server_commitment_names() -> None:
    table = Table(ZLJ, zm.Options(deals=0))
    play(table, deals=1, close=False)
    cutter = table.state.turn
    table.behaviour = lambda n, seat: "withhold" if seat == cutter else "honest"
    play(table, deals=2)
    dealt = next(e for _, e in events(table, zm.HandsDealt) if e.deal == 2)
    committed = next(e for _, e in events(table, fair.SeedCommitted) if e.number == 2)
    assert dealt.cutter == cutter
    assert dealt.cut == 1 + int.from_bytes(committed.commitment[:4], "big") % 107
    assert verify(ZLJ, table.log).failure is None


def test_a_deal_without_any_contribution_is_verified_on_the_server_seed_alone() -> None:
    table = play(Table(ZLJ, zm.Options(deals=0), lambda n, seat: "silent" if n == 1 else "honest"), deals=2)
    assert events(table, fair.CommitsClosed)[0][1] == fair.CommitsClosed(1, ())
    assert events(table, fair.RevealsClosed)[0][1] == fair.RevealsClosed(1, (), (), ())
    verdict = verify(ZLJ, table.log)
    assert verdict.failure is None
    assert [s.status for s in verdict.shuffles[:2]] == [ALONE, VERIFIED]
    assert verdict.alone == 1 and verdict.verified == 2


# --- refusals -----------------------------------------------------------------------------------------------------


def fresh() -> Table:
    table = Table(ZLJ, zm.Options(deals=0))
    table.window_closes()  # the first commitment: a seat's client watched, or the first-deal time passed
    return table


def test_the_first_commitment_waits_for_a_watcher_and_version_1_commands_are_refused() -> None:
    table = Table(ZLJ, zm.Options(deals=0))
    step = ZLJ.fair_step(table.state)
    assert step == fair.Step("commit", 1, waits=True, window="first")
    table.window_closes()
    assert isinstance(table.log[-1][1], fair.SeedCommitted)
    with pytest.raises(IllegalAction):
        ZLJ.decide(table.state, fair.Contribute(0, b"x"))
    assert fair.owed(table.state, 0) == "commit" and ZLJ.contributors(table.state) == tuple(range(6))


def test_malformed_or_untimely_commitments_and_reveals_change_nothing() -> None:
    table = fresh()
    state = table.state
    with pytest.raises(IllegalAction):
        ZLJ.decide(state, fair.CommitContribution(0, b"short"))
    with pytest.raises(IllegalAction):
        ZLJ.decide(state, fair.CommitContribution(6, bytes(32)))
    with pytest.raises(NotYourTurn):
        ZLJ.decide(state, fair.RevealContribution(0, bytes(32), b"x"))
    table.act(fair.CommitContribution(0, contribution_commitment(1, 0, bytes(32), 0, b"x")))
    with pytest.raises(IllegalAction):
        ZLJ.decide(table.state, fair.CommitContribution(0, bytes(32)))
    table.window_closes()
    assert isinstance(table.log[-1][1], fair.CommitsClosed)
    with pytest.raises(NotYourTurn):
        ZLJ.decide(table.state, fair.CommitContribution(1, bytes(32)))
    with pytest.raises(IllegalAction):
        ZLJ.decide(table.state, fair.RevealContribution(1, bytes(32), b"x"))  # committed nothing
    with pytest.raises(IllegalAction):
        ZLJ.decide(table.state, fair.RevealContribution(0, bytes(31), b"x"))
    with pytest.raises(IllegalAction):
        ZLJ.decide(table.state, fair.RevealContribution(0, bytes(32), b"x", cut=5))  # seat 0 does not cut
    table.act(fair.RevealContribution(0, bytes(32), b"x"))
    assert any(isinstance(e, zm.HandsDealt) for _, e in table.log), "the only committed seat revealed: dealt"
    assert verify(ZLJ, table.log).shuffles[0].contributors == (0,)


def test_a_version_2_cutter_commits_instead_of_cutting() -> None:
    state = play(Table(ZLJ, zm.Options(deals=0)), deals=1, close=False).state
    assert state.phase is zm.Phase.CUT and state.shuffle is not None and state.shuffle.cutter == state.turn
    assert ZLJ.legal_actions(state, state.turn) == () and ZLJ.waiting(state) == ()
    with pytest.raises(IllegalAction):
        ZLJ.decide(state, zm.Cut(state.turn, 5, 0))
    step = ZLJ.fair_step(state)
    assert step is not None and step.kind == "close_commits" and step.window == "cut"


def test_a_live_version_2_log_as_a_client_receives_it_names_its_version_and_contributors() -> None:
    table = play(Table(ZLJ, zm.Options(deals=0)), deals=1, close=False)
    redacted = [(v, ZLJ.redact(e, 0)) for v, e in table.log]
    verdict = verify(ZLJ, redacted)
    assert verdict.failure is None and verdict.hidden == 1
    first = verdict.shuffles[0]
    assert first.version == 2 and first.contributors == tuple(range(6)) and first.status == "hands hidden"


def test_a_shuffle_committed_and_not_yet_dealt_is_named_by_its_games_version() -> None:
    """The next shuffle is committed as soon as a deal is over: until its seats commit, it is still a version-2
    shuffle, in the whole log as in a client's (a game ended there names protocol 2 alone, never "1 and 2")."""
    table = play(Table(ZLJ, zm.Options(deals=0)), deals=1, close=False)
    assert isinstance(table.log[-1][1], fair.SeedCommitted) and table.log[-1][1].number == 2, "shuffle 2 waits"
    for log in (table.log, [(v, ZLJ.redact(e, 0)) for v, e in table.log]):
        verdict = verify(ZLJ, log)
        assert verdict.failure is None
        assert [(s.number, s.version) for s in verdict.shuffles] == [(1, 2), (2, 2)]
    table.act(zm.EndMatch())
    assert [s.version for s in verify(ZLJ, table.log).shuffles] == [2, 2]
