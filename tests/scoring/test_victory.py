"""Victory points: the level difference scale (§10, 第四章 二), the bye (D-TR-10), the forfeit (D-TR-11), S-2."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paiju.scoring.victory import (
    BYE_VP,
    FORFEIT_LOSER_VP,
    MAX_DIFFERENCE,
    average_vp,
    forfeit_vp,
    round_vp,
    victory_points,
)

from ..support.profiles import examples

# The seed text's table (第四章 二: 级数 0 → 15：15 ... 12 → 27：3), both signs, and capping past 12.
SCALE = {
    -14: (3, 27),
    -13: (3, 27),
    -12: (3, 27),
    -11: (4, 26),
    -10: (5, 25),
    -9: (6, 24),
    -8: (7, 23),
    -7: (8, 22),
    -6: (9, 21),
    -5: (10, 20),
    -4: (11, 19),
    -3: (12, 18),
    -2: (13, 17),
    -1: (14, 16),
    0: (15, 15),
    1: (16, 14),
    2: (17, 13),
    3: (18, 12),
    4: (19, 11),
    5: (20, 10),
    6: (21, 9),
    7: (22, 8),
    8: (23, 7),
    9: (24, 6),
    10: (25, 5),
    11: (26, 4),
    12: (27, 3),
    13: (27, 3),
    14: (27, 3),
}


@pytest.mark.parametrize(("difference", "expected"), sorted(SCALE.items()))
def test_victory_points_follow_the_table(difference: int, expected: tuple[int, int]) -> None:
    first, second = victory_points(difference)
    assert (first, second) == (Decimal(expected[0]), Decimal(expected[1]))
    assert isinstance(first, Decimal)
    assert isinstance(second, Decimal)


def test_any_difference_is_capped() -> None:
    assert MAX_DIFFERENCE == 12
    assert victory_points(1000) == (Decimal(27), Decimal(3))
    assert victory_points(-1000) == (Decimal(3), Decimal(27))


def test_bye_and_forfeit_loser() -> None:
    assert (Decimal(20), Decimal(0)) == (BYE_VP, FORFEIT_LOSER_VP)


@pytest.mark.parametrize(
    ("earlier", "expected"),
    [
        # no earlier round: 20
        ([], "20"),
        # average 15 < 20: 20
        (["15", "15"], "20"),
        # average exactly 20: 20
        (["25", "15"], "20"),
        # 79 / 4 = 19.75 < 20: 20
        (["19", "20", "20", "20"], "20"),
        # 81 / 4 = 20.25, half up: 20.3 (half-even would give 20.2)
        (["21", "20", "20", "20"], "20.3"),
        # 52 / 2 = 26
        (["27", "25"], "26"),
        # 45 / 2 = 22.5
        (["27", "18"], "22.5"),
        # 89 / 4 = 22.25, half up: 22.3 (half-even would give 22.2)
        (["27", "18", "22", "22"], "22.3"),
        # 74 / 3 = 24.666...: 24.7
        (["27", "27", "20"], "24.7"),
        # 67 / 3 = 22.333...: 22.3
        (["22", "22", "23"], "22.3"),
        # a bye (20) and an earlier forfeit's 22.5 count as earlier rounds: 69.5 / 3 = 23.166...: 23.2
        (["20", "22.5", "27"], "23.2"),
        # 49.5 / 2 = 24.75, half up: 24.8
        (["22.5", "27"], "24.8"),
        # 211 / 8 = 26.375: 26.4
        (["26", "27", "27", "27", "26", "25", "27", "26"], "26.4"),
    ],
)
def test_forfeit_vp(earlier: list[str], expected: str) -> None:
    vp = forfeit_vp([Decimal(v) for v in earlier])
    assert isinstance(vp, Decimal)
    assert vp == Decimal(expected)
    assert str(vp.normalize()) == str(Decimal(expected).normalize())


def test_average_needs_rounds_and_finite_vp() -> None:
    with pytest.raises(ValueError, match="no rounds"):
        average_vp([])
    with pytest.raises(ValueError, match="finite"):
        average_vp([Decimal("NaN")])
    with pytest.raises(ValueError, match="finite"):
        forfeit_vp([Decimal(20), Decimal("Infinity")])


def test_round_vp_examples() -> None:
    assert round_vp(Fraction(45, 2)) == Decimal("22.5")
    assert round_vp(Fraction(169, 8)) == Decimal("21.1")  # 21.125
    assert round_vp(Fraction(89, 4)) == Decimal("22.3")  # 22.25
    assert round_vp(Fraction(-89, 4)) == Decimal("-22.3")  # half away from zero, like ROUND_HALF_UP
    assert round_vp(Fraction(0)) == Decimal(0)


@settings(derandomize=True, database=None, max_examples=examples(200), deadline=None)
@given(st.integers(-10_000, 10_000), st.integers(1, 400))
def test_round_vp_is_decimal_half_up(numerator: int, denominator: int) -> None:
    with localcontext() as exact:
        exact.prec = 60
        expected = (Decimal(numerator) / Decimal(denominator)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    assert round_vp(Fraction(numerator, denominator)) == expected
