"""砸六家 state, commands and events: frozen dataclasses, tuples and enums (docs/architecture.md, Principle 2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from paiju.rules.cards import Card, Cards
from paiju.rules.fair import (
    CloseCommits,
    CloseReveals,
    CommitContribution,
    CommitsClosed,
    CommitSeed,
    Contribute,
    ContributionCommitted,
    ContributionRevealed,
    DealShuffle,
    RevealContribution,
    RevealsClosed,
    RevealSeed,
    SeedCommitted,
    SeedContributed,
    SeedRevealed,
    Shuffle,
)
from paiju.rules.zlj.combos import Combo

SEATS = 6
DECKS = 2


def team_of(seat: int) -> Team:
    """Seats 0, 2, 4 are team A; 1, 3, 5 team B: adjacent seats are opponents (§1)."""
    return Team.A if seat % 2 == 0 else Team.B


def next_seat(seat: int) -> int:
    """下家, the next seat in play order (§1)."""
    return (seat + 1) % SEATS


class Team(StrEnum):
    A = "A"
    B = "B"

    @property
    def seats(self) -> tuple[int, int, int]:
        return (0, 2, 4) if self is Team.A else (1, 3, 5)

    @property
    def other(self) -> Team:
        return Team.B if self is Team.A else Team.A


class ReverseTribute(StrEnum):
    """Option `reverse_tribute` (D-ZLJ-9): after 反逮, one card from each loser, or one in all."""

    PER_PLAYER = "per_player"
    TEAM_TOTAL = "team_total"


class Resist(StrEnum):
    """Option `resist` (D-ZLJ-10): what a loser must hold to cancel the tribute (抗贡/起义)."""

    BIG_AND_SMALL = "big_and_small"
    TWO_BIG = "two_big"


@dataclass(frozen=True, slots=True)
class Options:
    """Rule options (§13) with their defaults."""

    deals: int = 6
    reverse_tribute: ReverseTribute = ReverseTribute.PER_PLAYER
    resist: Resist = Resist.BIG_AND_SMALL
    turn_seconds: int = 0


class Phase(StrEnum):
    NEW = "new"  # no match started yet
    CUT = "cut"  # between deals: the previous 大贡's next seat cuts (§9)
    PICK = "tribute"  # winners pick tribute cards (§10)
    RETURN = "return"  # winners return cards 5..Q (§11)
    TAKE_BACK = "take_back"  # losers take the returned cards back (§11)
    PLAY = "play"
    ENDED = "ended"  # the match is over
    SHUFFLE = "shuffle"  # a fair match before its first deal: the shuffle is committed, seats may contribute


class Outcome(StrEnum):
    """The result of a deal from the head team's view (§7)."""

    CATCH3 = "CATCH3"
    CATCH2 = "CATCH2"
    CATCH1 = "CATCH1"
    DRAW = "DRAW"
    REVERSE = "REVERSE"


@dataclass(frozen=True, slots=True)
class DealResult:
    """What a deal decided (§7-§8): it also drives the next deal's tribute (§10)."""

    deal: int
    order: tuple[int, ...]
    """Seats in finishing order: ``order[0]`` is the 大贡."""
    caught: tuple[int, ...]
    """被逮: seats still holding cards when the deal ended (no order among them)."""
    outcome: Outcome
    head_team: Team
    winners: Team | None
    team_points: tuple[int, int]
    """Team points of this deal for (A, B)."""
    individual: tuple[int, ...]
    """Individual points of this deal, per seat."""

    @property
    def big_tribute(self) -> int:
        """大贡: the first seat out."""
        return self.order[0]


@dataclass(frozen=True, slots=True)
class FourTakeRecord:
    by: int
    taken_from: int
    cards: Cards


@dataclass(frozen=True, slots=True)
class Transfer:
    """Cards passed from one seat to another in tribute (进贡) or return (还贡)."""

    giver: int
    receiver: int
    cards: Cards


@dataclass(frozen=True, slots=True)
class Tribute:
    """The tribute of one deal (§10-§12), from the moment the losers' cards are pooled."""

    winners: tuple[tuple[int, int], ...]
    """(winner, cards to pick) in finishing order; shortfalls already borne by the lowest places."""
    losers: tuple[tuple[int, int], ...]
    """(loser, cards given) in take-back order: largest highest tribute card first."""
    leader: int
    """Who leads the deal once tribute is over (§12)."""
    pool: tuple[tuple[Card, int], ...] = ()
    """(card, seat it came from): tribute cards not yet picked, then returned cards not yet taken back."""
    picks: tuple[Transfer, ...] = ()
    returns: tuple[Transfer, ...] = ()
    done: tuple[int, ...] = ()
    """Seats that have completed their step of the current phase."""

    def received(self, seat: int) -> int:
        return sum(len(t.cards) for t in self.picks if t.receiver == seat)

    def pool_cards(self) -> Cards:
        return tuple(sorted(c for c, _ in self.pool))


@dataclass(frozen=True)
class State:
    """The state of one match at one 砸六家 table.

    Frozen, without slots: `evolved` copies it through its ``__dict__``, five times faster than
    `dataclasses.replace` on the hot path of play.
    """

    options: Options = Options()
    phase: Phase = Phase.NEW
    deal: int = 0
    hands: tuple[Cards, ...] = ((),) * SEATS
    turn: int | None = None
    """The seat that must act now; ``None`` when no seat can."""
    current: Combo | None = None
    """The current play of the round (the last non-pass play)."""
    current_cards: Cards = ()
    current_by: int | None = None
    passed: frozenset[int] = frozenset()
    """Seats that passed since the current play was made (D-ZLJ-4)."""
    table: Cards = ()
    """Cards played in the current round."""
    played: Cards = ()
    """Cards of finished rounds."""
    out: tuple[int, ...] = ()
    """Seats out, in finishing order."""
    taken: tuple[FourTakeRecord, ...] = ()
    tribute: Tribute | None = None
    leader: int | None = None
    """Who led the first round of the deal."""
    previous: DealResult | None = None
    results: tuple[DealResult, ...] = ()
    dealt: Cards = ()
    """All cards in play in this deal: hands + table + played + tribute pool always equal them."""
    shown_jokers: tuple[int, Cards] | None = None
    fair: bool = False
    """Every deal comes from a committed shuffle (`paiju.rules.fair`)."""
    shuffle: Shuffle | None = None
    """The committed shuffle of the coming deal, or the dealt one until its seed is revealed."""
    commitments: int = 0
    """The commitments recorded so far (the next one is number ``commitments + 1``)."""
    commit_reveal: bool = False
    """Fair dealing by protocol version 2: every contribution committed before any is revealed (`paiju.rules.fair`)."""


_new = object.__new__


def evolved(state: State, **changes: object) -> State:
    """A copy of ``state`` with ``changes`` (field names of `State`), without running ``__init__``."""
    new = _new(State)
    fields = new.__dict__
    fields.update(state.__dict__)
    fields.update(changes)
    return new


# --- commands ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartMatch:
    """Start the match and deal the first hand (system command; ``seed`` from the engine). A ``fair`` match deals
    every hand from a committed shuffle instead (`paiju.rules.fair`): its first deal waits for that."""

    seed: int
    options: Options = Options()
    fair: bool = False
    commit_reveal: bool = False
    """Fair dealing by protocol version 2 (commit, then reveal; `paiju.rules.fair`)."""


@dataclass(frozen=True, slots=True)
class Cut:
    """搬牌: the cutter moves ``count`` cards (1..107) from top to bottom (§9); ``seed`` shuffles the deck. In a fair
    match the cut is the cutter's contribution to the committed shuffle (``contribution``, or the count)."""

    seat: int
    count: int
    seed: int
    contribution: bytes = b""


@dataclass(frozen=True, slots=True)
class PickTribute:
    seat: int
    cards: Cards


@dataclass(frozen=True, slots=True)
class ReturnTribute:
    seat: int
    cards: Cards


@dataclass(frozen=True, slots=True)
class TakeBack:
    seat: int
    cards: Cards


@dataclass(frozen=True, slots=True)
class Play:
    seat: int
    cards: Cards


@dataclass(frozen=True, slots=True)
class Pass:
    seat: int


@dataclass(frozen=True, slots=True)
class Timeout:
    """The turn timer of ``seat`` ran out: the engine plays the default action (§13)."""

    seat: int
    seed: int = 0


@dataclass(frozen=True, slots=True)
class EndMatch:
    """Close the match between deals: the only end of an open-ended match (``deals=0``); a table may also
    close a fixed-length match early this way (the totals so far stand)."""


Command = (
    StartMatch
    | Cut
    | PickTribute
    | ReturnTribute
    | TakeBack
    | Play
    | Pass
    | Timeout
    | EndMatch
    | CommitSeed
    | Contribute
    | DealShuffle
    | RevealSeed
    | CommitContribution
    | RevealContribution
    | CloseCommits
    | CloseReveals
)
SeatAction = Cut | PickTribute | ReturnTribute | TakeBack | Play | Pass


# --- events -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MatchStarted:
    options: Options
    fair: bool = False
    """Every deal comes from a committed shuffle (`paiju.rules.fair`)."""
    commit_reveal: bool = False
    """Protocol version 2: every contribution committed before any is revealed (`paiju.rules.fair`)."""


@dataclass(frozen=True, slots=True)
class HandsDealt:
    """A deal's shuffle, cut and hands. ``seed`` and other seats' hands are redacted for players."""

    deal: int
    first_drawer: int
    hands: tuple[Cards, ...]
    seed: int | None
    cut: int | None = None
    cutter: int | None = None
    sizes: tuple[int, ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class RockPaperScissors:
    """石头剪刀布 played by the engine from a seed (D-ZLJ-8). Throws: 0 rock, 1 paper, 2 scissors."""

    purpose: str
    rounds: tuple[tuple[tuple[int, int], ...], ...]
    """Each round: (seat, throw) for the seats still playing."""
    order: tuple[int, ...]
    """The seats from winner to last."""


@dataclass(frozen=True, slots=True)
class TributeResisted:
    """抗贡/起义 (D-ZLJ-10): a loser shows two jokers; no tribute, no return."""

    seat: int
    cards: Cards


@dataclass(frozen=True, slots=True)
class TributeGiven:
    """A loser's forced tribute (§10): their highest cards, K or higher; cards hidden from other losers."""

    seat: int
    cards: Cards | None
    count: int
    seen_by: Team
    """The team that may see the cards (besides the seat itself, §14)."""


@dataclass(frozen=True, slots=True)
class TributeOrdered:
    """Who picks how many, who takes back in which order, and who leads (§10-§12)."""

    winners: tuple[tuple[int, int], ...]
    losers: tuple[tuple[int, int], ...]
    leader: int


@dataclass(frozen=True, slots=True)
class TributePicked:
    seat: int
    cards: Cards | None
    count: int
    seen_by: Team
    """The team that may see the cards (besides the seat itself, §14)."""


@dataclass(frozen=True, slots=True)
class TributeReturned:
    seat: int
    cards: Cards | None
    count: int
    seen_by: Team
    """The team that may see the cards (besides the seat itself, §14)."""


@dataclass(frozen=True, slots=True)
class ReturnTakenBack:
    seat: int
    cards: Cards | None
    count: int
    seen_by: Team
    """The team that may see the cards (besides the seat itself, §14)."""


@dataclass(frozen=True, slots=True)
class PlayStarted:
    """The first round of the deal begins; ``reason`` says why this seat leads (§9, §12)."""

    leader: int
    reason: str


@dataclass(frozen=True, slots=True)
class CardsPlayed:
    seat: int
    cards: Cards
    combo: Combo


@dataclass(frozen=True, slots=True)
class FourTake:
    """4取炸弹 (§5): ``seat`` plays ``fours`` and takes the bomb ``taken`` of ``taken_from`` into its hand."""

    seat: int
    fours: Cards
    combo: Combo
    taken: Cards
    taken_from: int


@dataclass(frozen=True, slots=True)
class Passed:
    seat: int


@dataclass(frozen=True, slots=True)
class WentOut:
    seat: int
    place: int


@dataclass(frozen=True, slots=True)
class RoundWon:
    """Everyone else passed: ``winner`` made the last play, ``leader`` leads the next round (接风 when different)."""

    winner: int
    leader: int


@dataclass(frozen=True, slots=True)
class DealEnded:
    result: DealResult


@dataclass(frozen=True, slots=True)
class MatchEnded:
    team_points: tuple[int, int]
    individual: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TurnTimedOut:
    """The seat's turn timer ran out; the events after it are the engine's default action (§13)."""

    seat: int


Event = (
    MatchStarted
    | HandsDealt
    | RockPaperScissors
    | TributeResisted
    | TributeGiven
    | TributeOrdered
    | TributePicked
    | TributeReturned
    | ReturnTakenBack
    | PlayStarted
    | CardsPlayed
    | FourTake
    | Passed
    | WentOut
    | RoundWon
    | DealEnded
    | MatchEnded
    | TurnTimedOut
    | SeedCommitted
    | SeedContributed
    | SeedRevealed
    | ContributionCommitted
    | CommitsClosed
    | ContributionRevealed
    | RevealsClosed
)
