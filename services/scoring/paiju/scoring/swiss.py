"""Swiss pairing (积分编排) of a tournament's rounds (`tractor.md` §10, source 第四章 一).

- Draw (抽签): every team gets a draw number 1..n from a seeded shuffle of the sorted team ids.
- Round 1 pairs by the draw: 1 v 2, 3 v 4, ...; with an odd number of teams the highest draw number gets the bye
  (轮空, 20 VP, D-TR-10).
- Later rounds pair in standing order (`paiju.scoring.standings`, whose last tie-break is the draw, so ties inside
  a score group fall back to the seeded draw, D-TR-10), high with high, and never two teams that have met
  (相遇过的队不再相遇; a forfeit counts as met, a bye meets nobody):

  - with an odd number of teams the bye goes to the lowest-ranked team that has had no bye; if every team has had
    one, to the lowest-ranked of those with the fewest byes (byes rotate). If that team's bye leaves the others
    with no pairing free of rematches, the next team in that order takes the bye;
  - the top unpaired team meets the best-ranked team it has not met, provided the teams left can still all be
    paired without a rematch; otherwise its next-best, and so on down the list. This is the pairing a depth-first
    search with backtracking finds first. Whether the teams left can be paired is decided by a maximum matching
    (Edmonds' blossom algorithm), kept up to date one augmenting path at a time, so a round of 64 teams pairs in
    milliseconds and a round that cannot be paired is known at once;
  - when no pairing free of rematches exists at all (more rounds than the field allows), `NoPairing`.

Tables are numbered from 1 in pairing order (table 1 is the top pairing); ``high`` is the better-ranked team.
Everything here is pure; the only randomness is the draw's explicit seed.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from paiju.scoring.standings import ResultKind, RoundResult, Team, check_teams, standings

MIN_TEAMS = 2


class NoPairing(ValueError):
    """No pairing of the round's teams avoids two teams meeting again."""


@dataclass(frozen=True)
class Pairing:
    """One table of a round: the better-ranked team ``high`` against ``low``."""

    table: int
    high: str
    low: str


@dataclass(frozen=True)
class RoundPairing:
    """A round's tables in order, and the team on the bye (None with an even number of teams)."""

    round: int
    tables: tuple[Pairing, ...]
    bye: str | None


def _check_count(count: int) -> None:
    if count < MIN_TEAMS:
        raise ValueError(f"a tournament needs at least {MIN_TEAMS} teams, got {count}")


def seeded_draw(team_ids: Sequence[str], seed: int) -> dict[str, int]:
    """Draw numbers (签号) 1..n for ``team_ids``: a shuffle by ``random.Random(seed)`` of the sorted ids.

    The same ids and seed give the same draw whatever order the ids come in.
    """
    _check_count(len(team_ids))
    repeated = sorted(team_id for team_id, n in Counter(team_ids).items() if n > 1)
    if repeated:
        raise ValueError(f"team ids entered more than once: {', '.join(repeated)}")
    order = sorted(team_ids)
    random.Random(seed).shuffle(order)
    return {team_id: number for number, team_id in enumerate(order, start=1)}


def first_round(teams: Sequence[Team]) -> RoundPairing:
    """Round 1 by the draw: draw 1 v 2, 3 v 4, ...; an odd team out (the highest draw number) gets the bye."""
    _check_count(len(teams))
    check_teams(teams)
    by_draw = [team.team_id for team in sorted(teams, key=lambda team: team.draw)]
    bye = by_draw.pop() if len(by_draw) % 2 else None
    tables = tuple(Pairing(table=i + 1, high=by_draw[2 * i], low=by_draw[2 * i + 1]) for i in range(len(by_draw) // 2))
    return RoundPairing(round=1, tables=tables, bye=bye)


def next_round(round: int, teams: Sequence[Team], results: Sequence[RoundResult]) -> RoundPairing:
    """Round ``round`` (2 or later) by Swiss pairing from the results of rounds 1..round−1 (see the module).

    `ValueError` on bad input (fewer than 2 teams, repeated ids, results of unknown teams or of this round or a
    later one, a round before it with no results); `NoPairing` when every pairing would repeat a match.
    """
    _check_count(len(teams))
    if round < 2:
        raise ValueError(f"round {round}: Swiss pairing starts at round 2; round 1 is paired by the draw")
    later = sorted({row.round for row in results if row.round >= round})
    if later:
        raise ValueError(f"round {round} cannot be paired: there are results of round {later[0]} already")
    played = {row.round for row in results}
    missing = [r for r in range(1, round) if r not in played]
    if missing:
        raise ValueError(f"round {round} cannot be paired: round {missing[0]} has no results")
    ranked = [standing.team.team_id for standing in standings(teams, results)]
    index = {team_id: i for i, team_id in enumerate(ranked)}
    met: list[set[int]] = [set() for _ in ranked]
    byes = [0] * len(ranked)
    for row in results:
        if row.kind == ResultKind.BYE:
            byes[index[row.team_id]] += 1
        elif row.opponent_id is not None:
            met[index[row.team_id]].add(index[row.opponent_id])
    allowed = [[j for j in range(len(ranked)) if j != i and j not in met[i]] for i in range(len(ranked))]
    bye_order: Sequence[int | None] = (None,) if len(ranked) % 2 == 0 else _bye_order(byes)
    for bye in bye_order:
        pairs = _pair(allowed, bye)
        if pairs is not None:
            tables = tuple(
                Pairing(table=t, high=ranked[high], low=ranked[low]) for t, (high, low) in enumerate(pairs, start=1)
            )
            return RoundPairing(round=round, tables=tables, bye=None if bye is None else ranked[bye])
    raise NoPairing(_no_pairing_reason(round, ranked, allowed))


def _bye_order(byes: list[int]) -> list[int]:
    """The teams (rank indexes) in the order they take the bye: fewest byes first, then the lowest-ranked (D-TR-10)."""
    return sorted(range(len(byes)), key=lambda i: (byes[i], -i))


def _no_pairing_reason(round: int, ranked: list[str], allowed: list[list[int]]) -> str:
    odd = len(ranked) % 2
    on_bye = " with any team on the bye" if odd else ""
    stuck = [ranked[i] for i, others in enumerate(allowed) if not others]
    why = (
        f"{', '.join(stuck)} have already met every other team"
        if len(stuck) > odd
        else "the matches not yet played cannot cover every team at once"
    )
    return (
        f"round {round} cannot be paired: no pairing of the {len(ranked)} teams{on_bye} avoids two teams meeting "
        f"again (teams that have met do not meet again, §10): {why}"
    )


def _pair(allowed: list[list[int]], bye: int | None) -> list[tuple[int, int]] | None:
    """The pairs of teams (by rank index, ``allowed[i]`` the teams ``i`` may meet, in rank order) with ``bye`` out:
    the top team with the best opponent that still leaves a full pairing, and so on; None when none exists."""
    matching = _Matching(allowed, bye)
    if not matching.perfect():
        return None
    pairs: list[tuple[int, int]] = []
    for top in range(len(allowed)):
        if not matching.alive[top]:
            continue
        for other in allowed[top]:
            if matching.alive[other] and matching.fix(top, other):
                pairs.append((top, other))
                break
        else:  # pragma: no cover - the maximum matching guarantees the partner it holds for ``top`` works
            raise AssertionError("a perfect matching lost its pair")
    return pairs


class _Matching:
    """A maximum matching of the teams still to pair (``alive``) over the pairs allowed (Edmonds' blossoms).

    ``mate[i]`` is the team ``i`` is matched with, or −1.
    """

    def __init__(self, allowed: list[list[int]], bye: int | None) -> None:
        self.allowed = allowed
        self.size = len(allowed)
        self.alive = [i != bye for i in range(self.size)]
        self.mate = [-1] * self.size
        for i in range(self.size):
            if self.alive[i] and self.mate[i] < 0:
                for j in allowed[i]:
                    if self.alive[j] and self.mate[j] < 0:
                        self.mate[i], self.mate[j] = j, i
                        break
        for i in range(self.size):
            if self.alive[i] and self.mate[i] < 0:
                self._augment(i)

    def perfect(self) -> bool:
        return all(self.mate[i] >= 0 for i in range(self.size) if self.alive[i])

    def fix(self, a: int, b: int) -> bool:
        """Pair ``a`` with ``b`` and take both out, when the teams left keep a perfect matching; else change nothing.

        The matching is perfect before; without ``a``, ``b`` and their pairs, the partners they leave are the only
        unmatched teams, so one augmenting path between them exists exactly when a perfect matching of the rest does.
        """
        mate_a, mate_b = self.mate[a], self.mate[b]
        self.alive[a] = self.alive[b] = False
        if mate_a == b:
            return True
        saved = self.mate.copy()
        self.mate[a] = self.mate[b] = self.mate[mate_a] = self.mate[mate_b] = -1
        if self._augment(mate_a):
            return True
        self.mate = saved
        self.alive[a] = self.alive[b] = True
        return False

    def _augment(self, root: int) -> bool:
        """Search an augmenting path from the unmatched ``root`` (Edmonds); flip it and say True when found."""
        mate, alive, allowed = self.mate, self.alive, self.allowed
        parent = [-1] * self.size
        base = list(range(self.size))
        even = [False] * self.size
        even[root] = True
        queue = [root]
        head = 0

        def common_base(a: int, b: int) -> int:
            seen = [False] * self.size
            while True:
                a = base[a]
                seen[a] = True
                if mate[a] < 0:
                    break
                a = parent[mate[a]]
            while True:
                b = base[b]
                if seen[b]:
                    return b
                b = parent[mate[b]]

        def mark_blossom(v: int, stem: int, child: int, blossom: list[bool]) -> None:
            while base[v] != stem:
                blossom[base[v]] = blossom[base[mate[v]]] = True
                parent[v] = child
                child = mate[v]
                v = parent[mate[v]]

        while head < len(queue):
            v = queue[head]
            head += 1
            for to in allowed[v]:
                if not alive[to] or base[v] == base[to] or mate[v] == to:
                    continue
                if to == root or (mate[to] >= 0 and parent[mate[to]] >= 0):
                    stem = common_base(v, to)
                    blossom = [False] * self.size
                    mark_blossom(v, stem, to, blossom)
                    mark_blossom(to, stem, v, blossom)
                    for i in range(self.size):
                        if blossom[base[i]]:
                            base[i] = stem
                            if not even[i]:
                                even[i] = True
                                queue.append(i)
                elif parent[to] < 0:
                    parent[to] = v
                    if mate[to] < 0:
                        end = to
                        while end >= 0:
                            previous = mate[parent[end]]
                            mate[end], mate[parent[end]] = parent[end], end
                            end = previous
                        return True
                    even[mate[to]] = True
                    queue.append(mate[to])
        return False
