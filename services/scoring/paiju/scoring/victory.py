"""Victory points (胜利分) of a tournament round: the level difference scale, the bye and the forfeit.

A match between two teams ends with a difference ``d``; it becomes victory points (VP) ``15 + d : 15 − d``,
with ``|d|`` capped at 12, so 27 : 3 at most (`tractor.md` §10, source 第四章 二). In 拖拉机 ``d`` is the first
team's level index minus the second's, past A being index 12 (§2).

Paiju decisions where the rules are silent:

- **S-1**: the same scale serves 砸六家 tournaments, whose rules give no victory-point table: there ``d`` is the
  difference of the two teams' team points (团队分, the team ledger of D-ZLJ-7) in the match, capped the same way.
- **S-2**: VP are exact decimals (`decimal.Decimal`) everywhere. The only VP that is not a whole number is an
  average (the forfeit, D-TR-11); it is rounded to one decimal place, half up (22.25 → 22.3), so a result sheet,
  a standing and a replay of the tournament's events all show the same number.

An odd team out gets a bye worth 20 VP (D-TR-10). In a forfeit (弃权, D-TR-11) the team that stays gets the
larger of 20 VP and its average VP per earlier round; the forfeiting team gets 0.

Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

VP_BASE = Decimal(15)
"""VP of each team at difference 0: 15 : 15 (第四章 二)."""
MAX_DIFFERENCE = 12
"""The scale stops at a difference of 12: 27 : 3 (第四章 二)."""
BYE_VP = Decimal(20)
"""D-TR-10: the odd team out of a round gets a bye worth 20 VP."""
FORFEIT_MINIMUM_VP = Decimal(20)
"""D-TR-11: the team that stays after a forfeit gets at least 20 VP (第二章: 1. 20胜利分)."""
FORFEIT_LOSER_VP = Decimal(0)
"""D-TR-11: the forfeiting team gets no VP."""
VP_PLACES = Decimal("0.1")
"""S-2: an average VP is shown and kept to one decimal place."""


def victory_points(difference: int) -> tuple[Decimal, Decimal]:
    """(first team's VP, second team's VP) for a match's difference ``d`` (§10, 第四章 二; S-1 for 砸六家).

    ``d`` is the first team's level index minus the second's (may be negative); any ``d`` is accepted and its
    size capped at `MAX_DIFFERENCE`: ``victory_points(3) == (18, 12)``, ``victory_points(-20) == (3, 27)``.
    """
    d = max(-MAX_DIFFERENCE, min(MAX_DIFFERENCE, difference))
    return VP_BASE + d, VP_BASE - d


def round_vp(value: Fraction) -> Decimal:
    """``value`` rounded to one decimal place, half up (S-2): 45/2 → 22.5, 169/8 → 21.1, 89/4 → 22.3."""
    tenths = value * 10
    whole, rest = divmod(abs(tenths.numerator), tenths.denominator)
    if 2 * rest >= tenths.denominator:
        whole += 1
    sign = -1 if tenths < 0 else 1
    return Decimal(sign * whole).scaleb(-1)


def average_vp(vps: Sequence[Decimal]) -> Decimal:
    """The average of ``vps`` (at least one), rounded to one decimal place half up (S-2)."""
    if not vps:
        raise ValueError("the average VP of no rounds is undefined")
    for vp in vps:
        if not vp.is_finite():
            raise ValueError(f"a VP must be a finite number, not {vp}")
    return round_vp(sum((Fraction(vp) for vp in vps), Fraction(0)) / len(vps))


def forfeit_vp(earlier: Sequence[Decimal]) -> Decimal:
    """VP of the team that stays when its opponent forfeits (弃权, D-TR-11).

    ``earlier`` are the staying team's VP in each round before this one (byes and forfeits included). It gets the
    larger of 20 and their average (rounded to one decimal half up, S-2); 20 when it has no earlier round. The
    forfeiting team gets `FORFEIT_LOSER_VP`.
    """
    if not earlier:
        return FORFEIT_MINIMUM_VP
    return max(FORFEIT_MINIMUM_VP, average_vp(earlier))
