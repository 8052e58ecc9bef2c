"""The rating model: how one rated match moves its players' ratings (docs/rules/ratings.md, D-RATE-1..D-RATE-8).

Pure: no I/O, no clock, no randomness. A match's teams, its result and its players' ratings before it go in; their
ratings after it come out, computed by `openskill`'s Weng–Lin Plackett–Luce model with this module's parameters.
The same inputs give the same IEEE 754 doubles on every run of one build, which is what lets a rebuild from the
streams reproduce every stored rating bit for bit (`paiju.scoring.rater` stores and checks them).

Changing anything here that changes a number — a parameter, a weight, the margin, the bots' ratings — is a new
model version (`MODEL_VERSION`, D-RATE-10): its ledgers are new, re-rated from the LOBBY stream, and the old
version's stay for comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from openskill.models import PlackettLuce, PlackettLuceRating

MODEL_VERSION = 2
"""The version of the model below (D-RATE-10): part of every ledger's name and of every `RatingUpdated`. Version 2
rates each bot at its strength's fixed rating (D-RATE-8); version 1 rated every bot as the heuristic one."""

MU = 25.0
SIGMA = 25.0 / 3.0
BETA = 25.0 / 6.0
TAU = 25.0 / 300.0
"""D-RATE-1: openskill's defaults for Plackett–Luce (μ 25, σ 25/3, β 25/6, τ 25/300)."""


Z = 3.0
"""D-RATE-5: the conservative estimate shown and ranked by is μ − Z·σ."""

PROVISIONAL_MATCHES = 20
"""D-RATE-6: a player's rating is provisional until this many rated matches in the game and mode."""

BOT_PREFIX = "bot-"
"""The lobby's bots' player ids (`bot-<table>-<n>`): a seat whose player id starts so is a bot's."""


class Mode(Enum):
    """How a match is rated (D-RATE-9); the values are the contract's `MatchMode`."""

    RANKED = 1
    CASUAL = 2


@dataclass(frozen=True, slots=True)
class Belief:
    """One rating: the mean and standard deviation of the belief about a player's skill (exact doubles)."""

    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """D-RATE-5: μ − 3σ."""
        return self.mu - Z * self.sigma


DEFAULT = Belief(MU, SIGMA)
"""D-RATE-1: every player's rating before their first rated match in a game and mode."""

BOT_RATINGS = {"heuristic": Belief(MU, SIGMA / 2), "basic": Belief(MU - 2 * SIGMA, SIGMA / 2)}
"""D-RATE-8: the fixed ratings of the bots in casual matches, by the strength the table seated them at
(`LobbyBotSeated.strength`, the rules cores' `STRENGTHS`); never moved."""
DEFAULT_STRENGTH = "heuristic"
"""D-RATE-8: the strength a bot is rated at when its table did not say one — seated before strengths were chosen
(an empty `LobbyBotSeated.strength`), never seen seated by the rater, or of a strength this model does not know —:
the lobby's default, the heuristic bot (so a stored match of such bots rates as model version 1 rated it)."""


def bot_strength(strength: str) -> str:
    """D-RATE-8: the strength a bot seated at ``strength`` is rated at."""
    return strength if strength in BOT_RATINGS else DEFAULT_STRENGTH


def bot_rating(strength: str) -> Belief:
    """D-RATE-8: the fixed rating of a bot seated at ``strength``."""
    return BOT_RATINGS[bot_strength(strength)]


def is_bot(player_id: str) -> bool:
    return player_id.startswith(BOT_PREFIX)


def provisional(matches: int) -> bool:
    """D-RATE-6."""
    return matches < PROVISIONAL_MATCHES


@dataclass(frozen=True, slots=True)
class Result:
    """A match's result as rated: team A's (seats 0, 2, 4) and team B's (1, 3, 5) scores — 砸六家 team points,
    拖拉机 final levels — and, for 砸六家, each seat's individual points (the finishing places of its deals)."""

    team_scores: tuple[int, int]
    individual_points: tuple[int, ...] = ()

    @property
    def winner(self) -> int | None:
        """The winning team (0: A, 1: B); ``None``: a draw."""
        a, b = self.team_scores
        return None if a == b else (0 if a > b else 1)


def team_of(seat: int) -> int:
    return seat % 2


@dataclass(frozen=True, slots=True)
class Style:
    """How a game's results are rated: each game's (`paiju.scoring.games`, ``rating``)."""

    levels: bool = False
    """D-RATE-2: the team result is the final levels (拖拉机), not the team points (砸六家)."""
    individual_weights: bool = False
    """D-RATE-3: each player's share is weighed by their individual points (砸六家)."""
    margin: float = 0.0
    """D-RATE-4: openskill's margin, in the result's units (拖拉机: 4 levels); 0: none."""


def _model(style: Style) -> PlackettLuce:
    """D-RATE-1, D-RATE-4: the model (a new one per match: openskill's `rate` may set its attributes)."""
    return PlackettLuce(mu=MU, sigma=SIGMA, beta=BETA, tau=TAU, margin=style.margin)


def weights(style: Style, result: Result, seats: int) -> list[float]:
    """D-RATE-3: each seat's share of its team's result, as given to the model — 砸六家: the seat's individual
    points over the match (openskill scales them to 1..2 within the team: the player who finished first most gains
    most from a win and loses least from a loss); 拖拉机: 1 for everyone."""
    if style.individual_weights and len(result.individual_points) == seats:
        return [float(p) for p in result.individual_points]
    return [1.0] * seats


def margin_levels(levels: int, margin: float) -> float:
    """D-RATE-4: the level difference given to openskill. Its margin factor log(1 + d / margin) is below 1 for
    margin < d < (e − 1)·margin — a win by 5 or 6 levels would count for less than a win by one —, so a difference
    up to (e − 1)·margin (6.87 levels) is given as at most the margin (factor 1: the win counts as a win), and a
    larger one as it is (factor 1.03 at 7 levels to 1.39 at 12)."""
    if levels > margin * (math.e - 1):
        return float(levels)
    return float(min(levels, margin))


def rate(style: Style, before: Sequence[Belief], result: Result, fixed: Sequence[bool]) -> list[Belief]:
    """The ratings after a match of a game rated in ``style``, with seats rated ``before`` (seat order) and
    ``result``; a seat
    ``fixed`` (a bot, D-RATE-7) keeps its rating. D-RATE-2: the two teams are ranked by their scores (equal: a
    draw); D-RATE-3: 砸六家 weights by individual points; D-RATE-4: 拖拉机 passes the levels as scores with the
    level margin."""
    seats = len(before)
    if seats < 2 or seats % 2 or len(fixed) != seats:
        raise ValueError(f"a rated match has two teams of equal size, not {seats} seats")
    model = _model(style)
    ratings = [PlackettLuceRating(b.mu, b.sigma) for b in before]
    teams = [[ratings[s] for s in range(seats) if team_of(s) == t] for t in (0, 1)]
    shares = weights(style, result, seats)
    team_weights = [[shares[s] for s in range(seats) if team_of(s) == t] for t in (0, 1)]
    a, b = result.team_scores
    if style.margin:
        gap = margin_levels(abs(a - b), style.margin)
        rated = model.rate(teams, scores=[gap, 0.0] if a > b else [0.0, gap])
    else:
        ranks = [0.0, 0.0] if a == b else ([0.0, 1.0] if a > b else [1.0, 0.0])
        rated = model.rate(teams, ranks=ranks, weights=team_weights)
    after: list[Belief] = []
    index = [0, 0]
    for s in range(seats):
        t = team_of(s)
        player = rated[t][index[t]]
        index[t] += 1
        after.append(before[s] if fixed[s] else Belief(float(player.mu), float(player.sigma)))
    return after
