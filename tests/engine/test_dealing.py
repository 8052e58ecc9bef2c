"""The engine's part in dealing fairly (`paiju.engine.dealing.FairDealing`), on the rules cores alone: which games it
starts fair, the steps a command's events make due (taken in the same append), and the server seed each step takes —
the one of the commitment when the engine's secret has changed since (`paiju.rules.fair`)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import Any

from paiju.engine.dealing import FairDealing
from paiju.engine.seeds import server_seed, server_seeds
from paiju.rules import fair
from paiju.rules.fairness import commitment
from paiju.rules.registry import TRACTOR, ZLJ
from paiju.rules.zlj import Options, StartMatch

SECRET = b"dealing-tests-secret-of-32-bytes"
ROTATED = b"dealing-tests-rotated-secret-32b"


def dealing(*secrets: bytes, window: float = 2.0, new_games: bool = True) -> FairDealing:
    return FairDealing(lambda game_id, number: server_seeds(secrets, game_id, number), window, new_games=new_games)


def started(fair_start: bool = True) -> tuple[Any, list[Any]]:
    """A new 砸六家 match's state and the events of its start."""
    state = ZLJ.new_state()
    return state, list(ZLJ.decide(state, StartMatch(5, Options(deals=1), fair=fair_start)))


def evolved(state: Any, events: Sequence[Any]) -> Any:
    return reduce(ZLJ.evolve, events, state)


def names(events: Sequence[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_an_engine_without_server_seeds_deals_no_game_fairly_and_takes_no_step() -> None:
    none = FairDealing()
    assert not none.fair and not none.takes_steps and none.contribution_seconds == 0
    state, events = started()
    assert none.settled("g", ZLJ, state, events) == [], "a fair game's steps wait for an engine that has the seeds"


def test_new_games_start_fair_unless_told_otherwise_and_the_fair_ones_go_on_either_way() -> None:
    assert dealing(SECRET).fair and dealing(SECRET).takes_steps
    off = dealing(SECRET, new_games=False)
    assert not off.fair and off.takes_steps
    state, events = started()
    assert names(off.settled("g", ZLJ, state, events)) == ["SeedCommitted"]


def test_the_start_of_a_fair_game_commits_in_its_own_append_and_deals_at_once_without_a_window() -> None:
    state, events = started()
    waiting = dealing(SECRET, window=2.0).settled("g", ZLJ, state, events)
    assert names(waiting) == ["SeedCommitted"], "the first deal waits for the seats' contributions"
    assert waiting[0].commitment == commitment(server_seed(SECRET, "g", 1))
    at_once = dealing(SECRET, window=0.0).settled("g", ZLJ, state, events)
    assert names(at_once)[:2] == ["SeedCommitted", "HandsDealt"]
    assert evolved(evolved(state, events), at_once).phase.value == "play"


def test_a_game_dealt_from_seeds_takes_no_step() -> None:
    state, events = started(fair_start=False)
    assert dealing(SECRET, window=0.0).settled("g", ZLJ, state, events) == []
    moved = evolved(state, events)
    assert dealing(SECRET, window=0.0).settled("g", ZLJ, moved, []) == []


def test_a_step_takes_the_seed_of_its_commitment_after_the_secret_changed_and_a_commit_the_current_one() -> None:
    state, events = started()
    committed = evolved(evolved(state, events), dealing(SECRET).settled("g", ZLJ, state, events))
    step = ZLJ.fair_step(committed)
    assert step == fair.Step("deal", 1, waits=True)
    rotated = dealing(ROTATED, SECRET)  # restarted with a new secret and the previous one
    assert rotated.command("g", committed, step) == fair.DealShuffle(server_seed(SECRET, "g", 1))
    forgetful = dealing(ROTATED)  # without the previous secret: the current one's seed, which the rules refuse
    assert forgetful.command("g", committed, step) == fair.DealShuffle(server_seed(ROTATED, "g", 1))
    fresh = evolved(state, events)
    commit = ZLJ.fair_step(fresh)
    assert commit is not None and commit.kind == "commit"
    assert rotated.command("g", fresh, commit) == fair.CommitSeed(1, commitment(server_seed(ROTATED, "g", 1)))


def test_a_tractor_game_is_dealt_fairly_by_the_same_collaborator() -> None:
    state = TRACTOR.new_state()
    start = TRACTOR.start(9, TRACTOR.options(), 0, fair=True)
    events = list(TRACTOR.decide(state, start))
    settled = dealing(SECRET, window=0.0).settled("t", TRACTOR, state, events)
    assert names(settled)[0] == "SeedCommitted" and len(settled) > 1, "committed and dealt in the start's append"
