"""A client's own part in fair dealing by protocol version 2 (paiju.sdk.fairness): it draws its salt, contribution
and (the cutter) cut itself, commits to them and reveals them, and checks every event of the log against what it
sent: a changed commitment, a changed or "not matching" reveal, a dropped commitment or an uncounted contribution
raise `ContributionAltered` naming the game and the deal."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from paiju.rules import fair
from paiju.rules.fairness import contribution_commitment
from paiju.sdk.fairness import ContributionAltered, Pledges

pytestmark = pytest.mark.unit


def committed_and_revealed(cut: int = 0) -> tuple[Pledges, fair.CommitContribution, fair.RevealContribution]:
    pledges = Pledges()
    pledges.check("g", fair.SeedCommitted(3, 2, bytes(32)))
    commit = pledges.commit("g", 4, 3, max_cut=cut)
    assert pledges.commit("g", 4, 3, max_cut=cut) == commit, "asked again: the same commitment"
    pledges.committed("g", 3)
    reveal = pledges.reveal("g", 3)
    assert reveal is not None
    pledges.revealed("g", 3)
    return pledges, commit, reveal


def test_a_commitment_is_to_fresh_bytes_of_this_machine_and_the_reveal_matches_it() -> None:
    _, commit, reveal = committed_and_revealed(cut=107)
    assert len(reveal.salt) == 32 and len(reveal.contribution) == 16 and 1 <= reveal.cut <= 107
    digest = contribution_commitment(3, 4, reveal.salt, reveal.cut, reveal.contribution)
    assert commit == fair.CommitContribution(4, digest)
    _, _, other = committed_and_revealed()
    assert other.salt != reveal.salt and other.contribution != reveal.contribution and other.cut == 0


def honest_log(commit: fair.CommitContribution, reveal: fair.RevealContribution) -> list[Any]:
    return [
        fair.ContributionCommitted(3, 4, commit.commitment),
        fair.CommitsClosed(3, (1, 4)),
        fair.ContributionRevealed(3, 4, reveal.salt, reveal.contribution, None, True),
        fair.RevealsClosed(3, (1, 4), (), ()),
    ]


def test_an_honest_log_passes_and_each_change_raises_naming_the_deal() -> None:
    pledges, commit, reveal = committed_and_revealed()
    for event in honest_log(commit, reveal):
        pledges.check("g", event)
    changes: list[tuple[int, dict[str, Any], str]] = [
        (0, {"commitment": bytes(32)}, "commitment is recorded"),
        (1, {"committed": (1,)}, "is missing"),
        (2, {"contribution": b"other"}, "reveal is recorded changed"),
        (2, {"matches": False}, "reveal is recorded changed"),
        (3, {"contributors": (1,), "withheld": (4,)}, "is not counted"),
    ]
    for at, change, what in changes:
        pledges, commit, reveal = committed_and_revealed()
        honest = honest_log(commit, reveal)
        for event in honest[:at]:
            pledges.check("g", event)
        with pytest.raises(ContributionAltered) as caught:
            pledges.check("g", replace(honest[at], **change))
        assert what in caught.value.what and "deal 2" in str(caught.value) and "game g" in str(caught.value)


def test_other_seats_and_other_games_are_not_this_clients_business() -> None:
    pledges, _, _ = committed_and_revealed()
    pledges.check("g", fair.ContributionCommitted(3, 1, bytes(32)))
    pledges.check("h", fair.ContributionCommitted(3, 4, bytes(32)))
    pledges.forget("g")
    pledges.check("g", fair.ContributionCommitted(3, 4, bytes(32)))
