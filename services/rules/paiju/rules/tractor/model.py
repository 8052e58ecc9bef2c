"""拖拉机 state, commands and events: frozen dataclasses, tuples and enums (docs/architecture.md, Principle 2)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from paiju.rules.cards import Card, Cards, Suit
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
from paiju.rules.tractor.combos import Combo
from paiju.rules.tractor.settlement import LabourReform, RoundClock

SEATS = 4
DECKS = 6
HAND_SIZE = 81


def team_of(seat: int) -> int:
    """Partners sit opposite: seats 0, 2 are team 0 (A), seats 1, 3 team 1 (B) (§1)."""
    return seat % 2


def next_seat(seat: int) -> int:
    return (seat + 1) % SEATS


class Phase(StrEnum):
    NEW = "new"
    FLIP = "flip"  # a void first deal waits for a new deal (D-TR-6.6)
    CUT = "cut"  # later deals: the dealer cuts, then draws first (§8)
    BID = "bid"  # concealed bids 暗叫 (D-TR-6)
    COUNTER = "counter"  # concealed counters 反 by the other team
    PLAY = "play"
    REFORM = "reform"  # 劳改 declared: the non-offending team chooses its remedy (§11)
    ENDED = "ended"  # the game is over


@dataclass(frozen=True, slots=True)
class Options:
    """Rule options: `round_minutes` (D-TR-9, 0 = untimed) and the turn timer (§11, 0 = off)."""

    round_minutes: int = 0
    turn_seconds: int = 0


@dataclass(frozen=True, slots=True)
class Bid:
    """A concealed bid or counter: suit ``suit``, the cards shown, ``count`` level cards of that suit (D-TR-6.1)."""

    seat: int
    suit: Suit
    cards: Cards
    count: int


@dataclass(frozen=True, slots=True)
class Trick:
    leader: int
    plays: tuple[Cards, ...]
    """Plays in order from the leader."""
    lead: Combo
    winner: int | None = None
    points: int = 0


@dataclass(frozen=True, slots=True)
class State:
    options: Options = Options()
    phase: Phase = Phase.NEW
    deal: int = 0
    levels: tuple[int, int] = (0, 0)
    """Level index of teams A and B (0 = 3 .. 11 = A, 12 = past A)."""
    dealer: int | None = None
    first_deal: bool = True
    first_drawer: int | None = None
    flipped: Card | None = None
    hands: tuple[Cards, ...] = ((),) * SEATS
    turn: int | None = None
    trump: Suit | None = None
    bids: tuple[tuple[int, Bid | None], ...] = ()
    """Concealed entries of the current bidding stage: (seat, bid or None for a pass)."""
    bid: Bid | None = None
    """The winning bid after the reveal."""
    counter: Bid | None = None
    trick: Trick | None = None
    tricks: tuple[Trick, ...] = ()
    attackers_points: int = 0
    penalty_points: int = 0
    dealt: Cards = ()
    leader: int | None = None
    settlement: DealSettled | None = None
    """The settlement of the last deal played."""
    started_at: int = 0
    """Engine-recorded start of the game, in seconds (D-TR-9)."""
    clock: RoundClock = RoundClock()
    reform_by: int | None = None
    """The offending team after 劳改 is declared."""
    fair: bool = False
    """Every deal comes from a committed shuffle (`paiju.rules.fair`)."""
    shuffle: Shuffle | None = None
    """The committed shuffle of the coming deal, or the dealt one until its seed is revealed."""
    commitments: int = 0
    """The commitments recorded so far (the next one is number ``commitments + 1``)."""
    commit_reveal: bool = False
    """Fair dealing by protocol version 2: every contribution committed before any is revealed (`paiju.rules.fair`)."""


# --- commands ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartGame:
    """Start a game (system command): ``seed`` shuffles, ``at`` is the engine-recorded time in seconds. A ``fair``
    game deals every hand from a committed shuffle instead (`paiju.rules.fair`): its first deal waits for that."""

    seed: int
    options: Options = Options()
    at: int = 0
    fair: bool = False
    commit_reveal: bool = False
    """Fair dealing by protocol version 2 (commit, then reveal; `paiju.rules.fair`)."""


@dataclass(frozen=True, slots=True)
class ClockTick:
    """The engine's recorded time ``at`` (seconds), for the timed-round rule D-TR-9 (system command)."""

    at: int


@dataclass(frozen=True, slots=True)
class Penalize:
    """出错牌: a referee penalises ``offender`` for a wrong play of ``cards`` cards: ±10 a card (§11)."""

    referee: str
    offender: int
    cards: int


@dataclass(frozen=True, slots=True)
class DeclareLabourReform:
    """劳改: a referee ends the deal at once for ``offender``'s team (§11)."""

    referee: str
    offender: int


@dataclass(frozen=True, slots=True)
class ChooseLabourReform:
    """A seat of the non-offending team chooses +2 levels or ±80 points (§11)."""

    seat: int
    choice: LabourReform


@dataclass(frozen=True, slots=True)
class Redeal:
    """A void first deal is dealt again with a new seed and a new flip (D-TR-6.6); system command."""

    seed: int


@dataclass(frozen=True, slots=True)
class Cut:
    """The dealer cuts (§8). In a fair game the cut is the dealer's contribution to the committed shuffle
    (``contribution``, or the count)."""

    seat: int
    count: int
    seed: int
    contribution: bytes = b""


@dataclass(frozen=True, slots=True)
class MakeBid:
    seat: int
    suit: Suit
    cards: Cards


@dataclass(frozen=True, slots=True)
class Counter:
    seat: int
    suit: Suit
    cards: Cards


@dataclass(frozen=True, slots=True)
class Pass:
    """Pass in bidding or countering."""

    seat: int


@dataclass(frozen=True, slots=True)
class Play:
    seat: int
    cards: Cards


@dataclass(frozen=True, slots=True)
class Timeout:
    seat: int
    seed: int = 0


Command = (
    StartGame
    | Redeal
    | Cut
    | MakeBid
    | Counter
    | Pass
    | Play
    | Timeout
    | ClockTick
    | Penalize
    | DeclareLabourReform
    | ChooseLabourReform
    | CommitSeed
    | Contribute
    | DealShuffle
    | RevealSeed
    | CommitContribution
    | RevealContribution
    | CloseCommits
    | CloseReveals
)
SeatAction = Cut | MakeBid | Counter | Pass | Play | ChooseLabourReform


# --- events -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GameStarted:
    options: Options
    at: int = 0
    fair: bool = False
    """Every deal comes from a committed shuffle (`paiju.rules.fair`)."""
    commit_reveal: bool = False
    """Protocol version 2: every contribution committed before any is revealed (`paiju.rules.fair`)."""


@dataclass(frozen=True, slots=True)
class TwoMoreDeals:
    """宣布打2盘牌: 25 minutes before the end of a timed round the table plays two more deals (D-TR-9)."""

    at: int


@dataclass(frozen=True, slots=True)
class PenaltyRecorded:
    referee: str
    offender: int
    points: int
    """Added to the attackers' score (negative when the attackers erred)."""


@dataclass(frozen=True, slots=True)
class LabourReformDeclared:
    referee: str
    offender: int
    offending_team: int


@dataclass(frozen=True, slots=True)
class LabourReformChosen:
    seat: int
    choice: LabourReform


@dataclass(frozen=True, slots=True)
class CardFlipped:
    """First deal: ``flipper`` flips ``card`` (public); counting from the flipper gives the first drawer (§8)."""

    flipper: int
    card: Card
    first_drawer: int


@dataclass(frozen=True, slots=True)
class HandsDealt:
    deal: int
    first_drawer: int
    hands: tuple[Cards, ...]
    seed: int | None
    cut: int | None = None


@dataclass(frozen=True, slots=True)
class BidEntered:
    """A concealed bid, counter or pass. Players learn only that ``seat`` has acted (D-TR-6.2)."""

    seat: int
    bid: Bid | None
    concealed: bool = False
    timed_out: bool = False
    """The seat's turn timer ran out and the engine passed for it (hidden like the pass itself)."""


@dataclass(frozen=True, slots=True)
class BidsRevealed:
    """All four bid or passed: the winning bid (if any) is shown (D-TR-6.3)."""

    winner: Bid | None
    bids: tuple[Bid, ...]


@dataclass(frozen=True, slots=True)
class CountersRevealed:
    winner: Bid | None
    bids: tuple[Bid, ...]


@dataclass(frozen=True, slots=True)
class DealVoided:
    """Nobody bid: the deal is void and dealt again (D-TR-6.6)."""

    deal: int


@dataclass(frozen=True, slots=True)
class TrumpDeclared:
    """The trump suit and the dealer of the deal; the dealer leads (§8)."""

    trump: Suit
    dealer: int
    level: int


@dataclass(frozen=True, slots=True)
class CardsPlayed:
    seat: int
    cards: Cards


@dataclass(frozen=True, slots=True)
class TrickWon:
    winner: int
    points: int
    """Points of the trick's cards (5 = 5, 10 = 10, K = 10)."""
    credited: int
    """What the attackers score from it: the points when they win it, ×n for the last trick (D-TR-7)."""


@dataclass(frozen=True, slots=True)
class DealSettled:
    attackers_points: int
    winner: str
    levels_up: int
    next_dealer: int
    levels: tuple[int, int]


@dataclass(frozen=True, slots=True)
class GameEnded:
    """The game is over: a team went past A, or a timed round ended (``winner`` ``None``: levels equal)."""

    winner: int | None
    levels: tuple[int, int]


@dataclass(frozen=True, slots=True)
class TurnTimedOut:
    seat: int


Event = (
    GameStarted
    | CardFlipped
    | HandsDealt
    | BidEntered
    | BidsRevealed
    | CountersRevealed
    | DealVoided
    | TrumpDeclared
    | CardsPlayed
    | TrickWon
    | DealSettled
    | GameEnded
    | TurnTimedOut
    | TwoMoreDeals
    | PenaltyRecorded
    | LabourReformDeclared
    | LabourReformChosen
    | SeedCommitted
    | SeedContributed
    | SeedRevealed
    | ContributionCommitted
    | CommitsClosed
    | ContributionRevealed
    | RevealsClosed
)
