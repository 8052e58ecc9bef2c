"""The rating model's decisions and the worked examples of docs/rules/ratings.md, number for number."""

from __future__ import annotations

import math

import pytest

from paiju.scoring import rater as rr
from paiju.scoring import rating as rt
from paiju.scoring.games import GAMES

ZLJ = GAMES["zlj"].rating
TRACTOR = GAMES["tractor"].rating
NEW = [rt.DEFAULT] * 6
ZLJ_RESULT = rt.Result((12, 5), (7, 1, 4, 3, 2, 0))


def rounded(beliefs: list[rt.Belief]) -> list[tuple[float, float, float]]:
    return [(round(b.mu, 4), round(b.sigma, 4), round(b.conservative, 4)) for b in beliefs]


def test_the_model_is_openskills_plackett_luce_with_its_defaults() -> None:  # D-RATE-1, D-RATE-5
    assert (rt.MU, rt.SIGMA, rt.BETA, rt.TAU) == (25.0, 25.0 / 3.0, 25.0 / 6.0, 25.0 / 300.0)
    assert rt.DEFAULT.conservative == 0.0
    assert rt.MODEL_VERSION == 2


def test_the_zlj_worked_example() -> None:  # D-RATE-2, D-RATE-3
    after = rt.rate(ZLJ, NEW, ZLJ_RESULT, [False] * 6)
    assert rounded(after) == [
        (28.2688, 8.1131, 3.9296),
        (23.7742, 8.2517, -0.9809),
        (27.2881, 8.1799, 2.7484),
        (24.1828, 8.2791, -0.6546),
        (26.6344, 8.2241, 1.9619),
        (23.3656, 8.2241, -1.3068),
    ]
    gains = [b.mu - rt.MU for b in after]
    assert gains[0] > gains[2] > gains[4] > 0  # the winner who finished first most often gains most
    assert 0 > gains[3] > gains[1] > gains[5]  # the loser who finished best loses least


def test_the_zlj_example_with_heuristic_bots_who_never_move() -> None:  # D-RATE-7, D-RATE-8
    bot = rt.BOT_RATINGS["heuristic"]
    assert (bot.mu, bot.sigma) == (25.0, 25.0 / 6.0)
    before = [rt.DEFAULT, rt.DEFAULT, rt.DEFAULT, bot, rt.DEFAULT, bot]
    fixed = [False, False, False, True, False, True]
    after = rt.rate(ZLJ, before, ZLJ_RESULT, fixed)
    assert [(round(b.mu, 4), round(b.sigma, 4)) for b in after] == [
        (28.7269, 8.0045),
        (23.6024, 8.2477),
        (27.6089, 8.1047),
        (25.0, 4.1667),
        (26.8635, 8.1708),
        (25.0, 4.1667),
    ]
    assert after[3] is bot and after[5] is bot


def test_the_zlj_example_with_basic_bots_who_never_move() -> None:  # D-RATE-8
    basic = rt.BOT_RATINGS["basic"]
    assert (round(basic.mu, 4), basic.sigma) == (8.3333, 25.0 / 6.0) and rt.bot_rating("basic") is basic
    before = [rt.DEFAULT, rt.DEFAULT, rt.DEFAULT, basic, rt.DEFAULT, basic]
    after = rt.rate(ZLJ, before, ZLJ_RESULT, [False, False, False, True, False, True])
    assert [(round(b.mu, 4), round(b.sigma, 4)) for b in after] == [
        (26.0676, 8.1738),
        (24.5997, 8.2916),
        (25.7473, 8.2221),
        (8.3333, 4.1667),
        (25.5338, 8.2542),
        (8.3333, 4.1667),
    ]
    # beating weaker bots is worth less than beating heuristic ones, and losing beside them costs less
    heuristic = rt.rate(
        ZLJ,
        [rt.DEFAULT if s not in (3, 5) else rt.BOT_RATINGS["heuristic"] for s in range(6)],
        ZLJ_RESULT,
        [s in (3, 5) for s in range(6)],
    )
    assert after[0].mu < heuristic[0].mu and after[1].mu > heuristic[1].mu


def test_a_bot_without_a_known_strength_is_rated_as_the_heuristic_bot() -> None:  # D-RATE-8
    for strength in ("", "heuristic", "a strength of a later release"):
        assert rt.bot_strength(strength) == "heuristic" and rt.bot_rating(strength) == rt.BOT_RATINGS["heuristic"]
    assert rt.bot_strength("basic") == "basic"


@pytest.mark.parametrize(
    ("levels", "a", "b", "sigma"),
    [
        ((14, 13), 30.3264, 19.6736, 4.9642),
        ((14, 8), 30.3264, 19.6736, 4.9642),
        ((14, 5), 30.5351, 19.4649, 4.9476),
        ((14, 2), 30.8688, 19.1312, 4.9322),
        ((13, 14), 28.1721, 21.8279, 4.9642),
        ((9, 9), 29.2492, 20.7508, 4.9642),
    ],
)
def test_the_tractor_worked_examples(levels: tuple[int, int], a: float, b: float, sigma: float) -> None:  # D-RATE-4
    before = [rt.Belief(30.0, 5.0), rt.Belief(20.0, 5.0)] * 2
    after = rt.rate(TRACTOR, before, rt.Result(levels), [False] * 4)
    assert [(round(x.mu, 4), round(x.sigma, 4)) for x in after] == [(a, sigma), (b, sigma)] * 2


def test_between_equal_teams_the_margin_changes_nothing() -> None:  # D-RATE-4
    new = [rt.DEFAULT] * 4
    by_nine = rt.rate(TRACTOR, new, rt.Result((14, 5)), [False] * 4)
    by_one = rt.rate(TRACTOR, new, rt.Result((14, 13)), [False] * 4)
    assert by_nine == by_one
    assert [(round(x.mu, 4), round(x.sigma, 4)) for x in by_nine[:2]] == [(26.9643, 8.178), (23.0357, 8.178)]


def test_the_level_margin_is_never_below_a_plain_win() -> None:  # D-RATE-4
    threshold = TRACTOR.margin * (math.e - 1)
    assert [rt.margin_levels(d, TRACTOR.margin) for d in range(13)] == [
        float(min(d, TRACTOR.margin)) if d <= threshold else float(d) for d in range(13)
    ]
    for d in range(1, 13):
        factor = math.log1p(rt.margin_levels(d, TRACTOR.margin) / TRACTOR.margin)
        assert rt.margin_levels(d, TRACTOR.margin) <= TRACTOR.margin or factor >= 1
    before = [rt.Belief(30.0, 5.0), rt.Belief(20.0, 5.0)] * 2
    gains = [rt.rate(TRACTOR, before, rt.Result((14, 14 - d)), [False] * 4)[0].mu for d in range(1, 13)]
    assert gains == sorted(gains)  # a bigger win never moves less


def test_provisional_until_the_twentieth_rated_match() -> None:  # D-RATE-6
    assert [rt.provisional(n) for n in (0, 1, 19, 20, 21)] == [True, True, True, False, False]


def test_the_same_match_rates_to_the_same_doubles() -> None:  # D-RATE-10: a rebuild's premise
    first = rt.rate(ZLJ, NEW, ZLJ_RESULT, [False] * 6)
    assert [(b.mu.hex(), b.sigma.hex()) for b in first] == [
        (b.mu.hex(), b.sigma.hex()) for b in rt.rate(ZLJ, NEW, ZLJ_RESULT, [False] * 6)
    ]


def test_a_rating_event_is_the_same_bytes_however_often_it_is_made() -> None:
    match = rr.Match(
        "zlj", rt.Mode.CASUAL, "t1", "t1-m1", 42, 1_800_000_000_000, ("a", "b", "c", "d", "e", "f"), ZLJ_RESULT
    )
    once = rr.rating_event(match, NEW, [0] * 6).SerializeToString(deterministic=True)
    assert once == rr.rating_event(match, NEW, [0] * 6).SerializeToString(deterministic=True)


def test_ledger_names_are_not_tournament_ids() -> None:  # D-RATE-10
    assert rr.ledger_id("zlj", rt.Mode.CASUAL) == "ratings-v2-zlj-casual"
    assert rr.is_ledger("ratings-v2-tractor-ranked") and not rr.is_ledger("tour0123456789ab")


def test_a_match_with_an_odd_number_of_seats_is_refused() -> None:
    with pytest.raises(ValueError, match="two teams"):
        rt.rate(ZLJ, NEW[:5], ZLJ_RESULT, [False] * 5)


def test_a_ledgers_event_read_as_a_tournaments_is_no_tournament() -> None:
    """The ledgers share the TOURNAMENTS stream: read through the tournaments' codec, their events change nothing."""
    from paiju.scoring import tournament as tm
    from paiju.scoring.contract import TOURNAMENT_EVENTS
    from paiju.v1 import tournament_events_pb2

    match = rr.Match(
        "zlj", rt.Mode.CASUAL, "t1", "t1-m1", 42, 1_800_000_000_000, ("a", "b", "c", "d", "e", "f"), ZLJ_RESULT
    )
    envelope = tournament_events_pb2.TournamentEnvelope(aggregate=rr.ledger_id("zlj", rt.Mode.CASUAL), version=1)
    envelope.event.rating_updated.CopyFrom(rr.rating_event(match, NEW, [0] * 6))
    event = TOURNAMENT_EVENTS.decode(envelope.event)
    assert isinstance(event, tm.RatingUpdated)
    assert tm.evolve(tm.Tournament(), event) == tm.Tournament()
