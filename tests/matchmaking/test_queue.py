"""The matchmaking queue's pure core (`paiju.lobby.queue`, docs/rules/matchmaking.md): tables formed within the
rating window and widened with the wait (D-MM-3), parties never split and seated as partners (D-MM-2), casual bots
after the player's wait and ranked humans only (D-MM-7), a non-confirmer dropped while the others keep their place
at the front (D-MM-8)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from paiju.lobby import queue as qu
from paiju.lobby.table import LobbyError, Mode
from paiju.platform.errors import Reason


def joined(queue: qu.Queue, entry_id: str, ratings: list[float], game: str = "tractor", **kw: object) -> qu.Queue:
    players = tuple(
        qu.QueuedPlayer(f"{entry_id}-p{i}", f"{entry_id}{i}", round(r * 100)) for i, r in enumerate(ratings)
    )
    command = qu.Enqueue(
        entry_id,
        game,
        kw.get("mode", Mode.CASUAL),  # type: ignore[arg-type]
        players,
        "party-x" if len(players) > 1 else "",
        int(kw.get("bot_wait", 0)),  # type: ignore[call-overload]
        int(kw.get("at", 0)),  # type: ignore[call-overload]
    )
    for event in qu.decide(queue, command):
        queue = qu.evolve(queue, event)
    return queue


def apply(queue: qu.Queue, command: object) -> qu.Queue:
    for event in qu.decide(queue, command):
        queue = qu.evolve(queue, event)
    return queue


def test_a_table_forms_within_the_window_and_the_window_widens_with_the_wait() -> None:
    queue = qu.Queue()
    for name, rating in (("a", 20.0), ("b", 20.5), ("c", 21.0), ("d", 28.0)):
        queue = joined(queue, name, [rating])
    # at first the window is 3 points: d (8 points away) is not taken, and three players fill no 拖拉机 table
    assert qu.form(queue, "tractor", Mode.CASUAL, now=0) == []
    # d is 7 points from c, the nearest: a window of 7 takes (7 - 3) / 0.2 = 20 seconds of waiting on both sides;
    # then c's table takes a, b (within c's window) and d
    assert qu.form(queue, "tractor", Mode.CASUAL, now=19) == []
    [proposal] = qu.form(queue, "tractor", Mode.CASUAL, now=20)
    assert sorted(proposal.entry_ids) == ["a", "b", "c", "d"]
    # four players close together form at once, the far one waits
    near = qu.Queue()
    for name, rating in (("a", 25.0), ("b", 26.0), ("c", 24.0), ("d", 27.5), ("far", 40.0)):
        near = joined(near, name, [rating])
    [proposal] = qu.form(near, "tractor", Mode.CASUAL, now=0)
    assert "far" not in proposal.entry_ids


def test_ranked_is_humans_only_and_casual_fills_with_bots_after_the_players_wait() -> None:
    queue = joined(qu.Queue(), "solo", [25.0], game="zlj", bot_wait=10)
    assert qu.form(queue, "zlj", Mode.CASUAL, now=9) == []
    [proposal] = qu.form(queue, "zlj", Mode.CASUAL, now=10)
    assert proposal.seats.count("") == 5 and proposal.seats[0] == "solo-p0"
    ranked = joined(qu.Queue(), "solo", [25.0], game="zlj", bot_wait=10, mode=Mode.RANKED)
    assert ranked.entries["solo"].bot_wait_seconds == 0, "a ranked entry keeps no bot wait"
    assert qu.form(ranked, "zlj", Mode.RANKED, now=10_000) == []
    never = joined(qu.Queue(), "solo", [25.0], game="zlj", bot_wait=0)
    assert qu.form(never, "zlj", Mode.CASUAL, now=10_000) == [], "a wait of 0: never bots"


def test_one_entry_per_account() -> None:
    queue = joined(qu.Queue(), "a", [25.0])
    again = qu.Enqueue("other", "zlj", Mode.RANKED, (qu.QueuedPlayer("a-p0", "a0", 2500),), "", 0, 0)
    with pytest.raises(LobbyError) as refused:
        qu.decide(queue, again)
    assert refused.value.reason is Reason.ALREADY_QUEUED


entries = st.lists(st.tuples(st.integers(1, 3), st.floats(0, 50), st.integers(0, 300)), min_size=1, max_size=14)


@settings(max_examples=200, deadline=None)
@given(entries, st.sampled_from(["zlj", "tractor"]), st.integers(0, 400))
def test_a_party_is_never_split_and_sits_as_partners(drawn: list[tuple[int, float, int]], game: str, now: int) -> None:
    size = 3 if game == "zlj" else 2
    queue = qu.Queue()
    for i, (n, rating, at) in enumerate(drawn):
        queue = joined(queue, f"e{i}", [rating] * min(n, size), game=game, at=min(at, now), bot_wait=30)
    taken: set[str] = set()
    for proposal in qu.form(queue, game, Mode.CASUAL, now):
        assert not taken & set(proposal.entry_ids), "an entry is offered one match"
        taken |= set(proposal.entry_ids)
        seat_of = {player: seat for seat, player in enumerate(proposal.seats) if player}
        for entry_id in proposal.entry_ids:
            seats = [seat_of[p.player_id] for p in queue.entries[entry_id].players]
            assert len({s % 2 for s in seats}) == 1, "an entry's players are partners: one team's seats"
        humans = [p for p in proposal.seats if p]
        assert len(humans) == len(set(humans))
        assert sorted(humans) == sorted(p.player_id for e in proposal.entry_ids for p in queue.entries[e].players)


def test_a_non_confirmer_is_dropped_and_the_others_keep_their_place_at_the_front() -> None:
    queue = qu.Queue()
    for name, at in (("a", 0), ("b", 1), ("c", 2), ("d", 3)):
        queue = joined(queue, name, [25.0], at=at)
    [proposal] = qu.form(queue, "tractor", Mode.CASUAL, now=5)
    queue = apply(queue, qu.Propose("offer-1", proposal.entry_ids, proposal.seats, confirm_by=25))
    for player in ("a-p0", "b-p0", "d-p0"):
        queue = apply(queue, qu.Confirm("offer-1", player))
    assert qu.decide(queue, qu.Lapse("offer-1", now=24)) == [], "not before the window ends"
    queue = joined(queue, "late", [25.0], at=10)
    queue = apply(queue, qu.Lapse("offer-1", now=25))
    assert "c" not in queue.entries and queue.outcome("c") == qu.Outcome(
        "c", qu.LeaveReason.NOT_CONFIRMED, "", "offer-1"
    )
    order = [e.entry_id for e in qu.waiting_order(list(queue.entries.values()))]
    assert order == ["a", "b", "d", "late"], "the confirmers first, ahead of who joined after them"
    assert all(queue.entries[e].front and not queue.entries[e].offer_id for e in ("a", "b", "d"))


def test_a_party_that_does_not_confirm_is_dropped_whole() -> None:
    queue = joined(qu.Queue(), "party", [25.0, 25.0], at=0)
    queue = joined(queue, "x", [25.0], at=1)
    queue = joined(queue, "y", [25.0], at=2)
    [proposal] = qu.form(queue, "tractor", Mode.CASUAL, now=3)
    queue = apply(queue, qu.Propose("o", proposal.entry_ids, proposal.seats, confirm_by=10))
    for player in ("party-p0", "x-p0", "y-p0"):
        queue = apply(queue, qu.Confirm("o", player))
    queue = apply(queue, qu.Lapse("o", now=10))
    assert set(queue.entries) == {"x", "y"} and "party-p0" not in queue.players


def test_an_offered_entry_cannot_be_offered_again() -> None:
    queue = qu.Queue()
    for name in "abcd":
        queue = joined(queue, name, [25.0])
    [proposal] = qu.form(queue, "tractor", Mode.CASUAL, now=0)
    queue = apply(queue, qu.Propose("o1", proposal.entry_ids, proposal.seats, 20))
    with pytest.raises(LobbyError):
        qu.decide(queue, qu.Propose("o2", proposal.entry_ids, proposal.seats, 20))
    assert qu.form(queue, "tractor", Mode.CASUAL, now=0) == []


def reference_form(queue: qu.Queue, game: str, mode: Mode, now: int) -> list[qu.Proposal]:
    """`paiju.lobby.queue.form` as D-MM-3 and D-MM-7 state it, the plain way: for each anchor, every waiting entry
    looked at."""
    free = qu.waiting_order([e for e in queue.entries.values() if e.game == game and e.mode is mode and not e.offer_id])
    taken: set[str] = set()
    proposals = []
    for anchor in free:
        if anchor.entry_id in taken:
            continue
        near = [
            e
            for e in free
            if e is not anchor
            and e.entry_id not in taken
            and abs(anchor.rating - e.rating) <= min(anchor.window(now), e.window(now))
        ]
        teams = qu._pack(game, [anchor, *near])
        if teams is None and mode is Mode.CASUAL:
            teams = qu._with_bots(game, anchor, near, now)
        if teams is None:
            continue
        chosen = [e for team in teams for e in team]
        taken.update(e.entry_id for e in chosen)
        proposals.append(qu.Proposal(tuple(e.entry_id for e in chosen), qu._seats(game, teams)))
    return proposals


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 3), st.floats(0, 60), st.integers(0, 400), st.sampled_from([0, 20])), max_size=90
    ),
    st.sampled_from(["zlj", "tractor"]),
    st.sampled_from([Mode.CASUAL, Mode.RANKED]),
    st.integers(0, 500),
)
# an entry exactly the window away, where the rating plus the window rounds below it (7.02 + 50 < 57.02)
@example([(1, 0.0, 0, 0)] * 4 + [(1, 7.015625, 0, 0), (1, 57.015625, 0, 0)], "zlj", Mode.CASUAL, 235)
def test_forming_finds_what_looking_at_every_entry_finds(
    drawn: list[tuple[int, float, int, int]], game: str, mode: Mode, now: int
) -> None:
    size = 3 if game == "zlj" else 2
    queue = qu.Queue()
    for i, (n, rating, at, bot_wait) in enumerate(drawn):
        queue = joined(
            queue, f"e{i}", [rating] * min(n, size), game=game, at=min(at, now), bot_wait=bot_wait, mode=mode
        )
    assert qu.form(queue, game, mode, now) == reference_form(queue, game, mode, now)


@pytest.mark.parametrize("spread", [2.0, 8.0, 40.0])
def test_forming_a_large_queue_finds_what_looking_at_every_entry_finds(spread: float) -> None:
    import random

    rng = random.Random(int(spread))
    for game in ("zlj", "tractor"):
        queue = qu.Queue()
        for i in range(400):  # windows holding far more than `SMALL_RANGE` entries, and far fewer
            size = rng.choice([1, 1, 1, 2, 3][: 5 if game == "zlj" else 4])
            queue = joined(
                queue,
                f"e{i}",
                [rng.gauss(25, spread)] * size,
                game=game,
                at=rng.randrange(60),
                bot_wait=rng.choice([0, 30]),
            )
        for now in (0, 30, 60, 300):
            assert qu.form(queue, game, Mode.CASUAL, now) == reference_form(queue, game, Mode.CASUAL, now)


def test_a_change_touches_only_the_players_whose_entry_or_offer_moved() -> None:
    from paiju.lobby.matchmaking import touched

    queue = qu.Queue()
    for name in "abcd":
        queue = joined(queue, name, [25.0])
    bigger = joined(queue, "party", [25.0, 25.0])
    assert touched(queue, bigger) == {"party-p0", "party-p1"}
    [proposal] = qu.form(queue, "tractor", Mode.CASUAL, now=0)
    offered = apply(queue, qu.Propose("o", proposal.entry_ids, proposal.seats, 20))
    assert touched(queue, offered) == {"a-p0", "b-p0", "c-p0", "d-p0"}
    confirmed = apply(offered, qu.Confirm("o", "a-p0"))
    assert touched(offered, confirmed) == {"a-p0", "b-p0", "c-p0", "d-p0"}, "everyone offered sees who confirmed"
    left = apply(joined(queue, "e", [30.0]), qu.Withdraw("e-p0"))
    assert touched(joined(queue, "e", [30.0]), left) == {"e-p0"}
