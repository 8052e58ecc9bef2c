"""Verifying a game's deals from its log (`paiju verify`; docs/fairness.md, "Verifying a deal").

`verify` replays a game's events with its rules core and checks each deal of a game dealt from committed shuffles
(`paiju.rules.fair`):

- every contribution names the shuffle committed before it, and no seat contributes twice;
- every revealed server seed hashes to the commitment recorded for its shuffle;
- every deal whose seed is revealed is exactly what dealing that shuffle gives: the deck shuffled from the seed and
  the contributions in the order recorded, cut as the cutter cut, dealt from the recorded first drawer; and the
  deal's other draws (the first drawer, the flipped card, rock–paper–scissors) from the same seed — the rules core
  deals it again and every event it gives must equal the one in the log.

It names the first event that fails. A game not dealt from committed shuffles (started before fair dealing, or by
a tool that deals from a seed) is "not committed": there is nothing to check. A deal dealt but not revealed yet (a
game still playing it) is "not revealed yet". A live game's log as a seat or a spectator receives it hides the
hands: its revealed seeds are checked against their commitments, its deals are "hands hidden" until the game ends
(an ended game's `Replay` is whole for everyone). Pure: the log in, a verdict out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from paiju.rules.errors import RuleError
from paiju.rules.fair import (
    CommitsClosed,
    ContributionCommitted,
    ContributionRevealed,
    DealShuffle,
    RevealsClosed,
    SeedCommitted,
    SeedContributed,
    SeedRevealed,
    Shuffle,
    closed_reveals,
)
from paiju.rules.fairness import commitment, contribution_commitment
from paiju.rules.registry import GameRules

DEAL_EVENTS = frozenset({"HandsDealt", "CardFlipped"})
"""The events that begin a deal (the first event a dealt shuffle gives)."""
VERIFIED = "verified"
ALONE = "verified, server seed alone"


@dataclass(frozen=True, slots=True)
class DealCheck:
    """One committed shuffle of the game, as checked."""

    number: int
    deal: int
    commitment: bytes
    contributions: tuple[SeedContributed, ...] = ()
    server_seed: bytes | None = None
    """The revealed seed (``None``: not revealed yet)."""
    status: str = "committed"
    """``verified``; ``verified, server seed alone`` (verified, but no seat's contribution counted: the deal rests
    on the server seed alone); ``not revealed yet`` (dealt, its seed still secret); ``hands hidden`` (a log as a
    seat or a spectator of a live game receives it: the hands cannot be compared until the game ends, the seed is
    checked); ``committed`` (not dealt yet); ``failed``."""
    version: int = 1
    """The protocol version the shuffle was dealt by (1: contributions as they came; 2: commit, then reveal)."""
    pledges: tuple[ContributionCommitted, ...] = ()
    """Protocol version 2: the seats' commitments."""
    reveals: tuple[ContributionRevealed, ...] = ()
    """Protocol version 2: the seats' reveals (matching or not)."""

    @property
    def contributors(self) -> tuple[int, ...]:
        """The seats whose contribution the deal counts, ascending (empty: the server seed alone)."""
        if self.version == 2:
            return tuple(sorted(r.seat for r in self.reveals if r.matches))
        return tuple(sorted({c.seat for c in self.contributions}))

    @property
    def withheld(self) -> tuple[int, ...]:
        """Protocol version 2: the seats that committed and did not reveal, or whose reveal did not match."""
        counted = set(self.contributors)
        return tuple(sorted(p.seat for p in self.pledges if p.seat not in counted))


@dataclass(frozen=True, slots=True)
class Failure:
    index: int
    """The failing event's position in the log (0-based)."""
    version: int
    """Its version in the game's stream."""
    event: Any
    reason: str


@dataclass(frozen=True, slots=True)
class Verdict:
    committed: bool
    """Whether the game deals from committed shuffles at all (``False``: "not committed")."""
    shuffles: tuple[DealCheck, ...]
    failure: Failure | None

    @property
    def ok(self) -> bool:
        """No event failed (a game not committed is not a failure: it has nothing to check)."""
        return self.failure is None

    @property
    def verified(self) -> int:
        """Deals verified (with contributions or on the server seed alone)."""
        return sum(1 for s in self.shuffles if s.status in (VERIFIED, ALONE))

    @property
    def alone(self) -> int:
        """Deals verified that rest on the server seed alone: no seat's contribution counted."""
        return sum(1 for s in self.shuffles if s.status == ALONE)

    @property
    def hidden(self) -> int:
        """Deals whose hands this log does not show (a live game's log as a client receives it)."""
        return sum(1 for s in self.shuffles if s.status == "hands hidden")


def _name(event: Any) -> str:
    return type(event).__name__


def verify(rules: GameRules, log: Sequence[tuple[int, Any]]) -> Verdict:
    """Check the deals of a game's log: ``log`` is each stored event as (version, the rules core's event), ``None``
    for the engine's own events (seat assignments), in order."""
    committed: dict[int, SeedCommitted] = {}
    revealed: dict[int, SeedRevealed] = {}
    for _, event in log:
        if isinstance(event, SeedCommitted):
            committed.setdefault(event.number, event)
        elif isinstance(event, SeedRevealed):
            revealed.setdefault(event.number, event)
    if committed and _redacted(log):
        return _seeds_only(log, committed)
    checks: dict[int, DealCheck] = {}
    failure: Failure | None = None

    def fail(index: int, reason: str) -> None:
        nonlocal failure
        if failure is None:
            version, event = log[index]
            failure = Failure(index, version, event, reason)

    state = rules.new_state()
    index = 0
    while index < len(log) and failure is None:
        _, event = log[index]
        if event is None:
            index += 1
            continue
        shuffle = getattr(state, "shuffle", None)
        if isinstance(event, SeedCommitted):
            if not state.fair:
                fail(index, "a commitment in a game not dealt from committed shuffles")
            elif shuffle is not None or event.number != state.commitments + 1:
                fail(index, f"commitment number {event.number} out of order (the next is {state.commitments + 1})")
            else:  # a shuffle committed and not dealt yet is named by its game's protocol version too
                version = 2 if getattr(state, "commit_reveal", False) else 1
                checks[event.number] = DealCheck(event.number, event.deal, event.commitment, version=version)
        elif isinstance(event, SeedContributed):
            if shuffle is None or shuffle.dealt or event.number != shuffle.number:
                fail(index, f"a contribution to shuffle {event.number}, which is not committed and waiting for one")
            elif shuffle.contributed(event.seat):
                fail(index, f"seat {event.seat} contributes to shuffle {event.number} a second time")
        elif isinstance(event, ContributionCommitted | CommitsClosed | ContributionRevealed | RevealsClosed):
            reason = _check_v2(shuffle, event, rules.seats)
            if reason:
                fail(index, reason)
        elif isinstance(event, SeedRevealed):
            shuffle_commit = committed.get(event.number)
            if shuffle is None or not shuffle.dealt or shuffle.number != event.number:
                fail(index, f"a revealed seed for shuffle {event.number}, which was not the one dealt")
            elif shuffle_commit is None or commitment(event.server_seed) != shuffle_commit.commitment:
                fail(index, f"the revealed seed of shuffle {event.number} does not match its commitment")
        elif state.fair and shuffle is not None and not shuffle.dealt and _name(event) in DEAL_EVENTS:
            seed = revealed.get(shuffle.number)
            check = DealCheck(
                shuffle.number,
                shuffle.deal,
                shuffle.commitment,
                shuffle.contributions,
                version=shuffle.version,
                pledges=shuffle.pledges,
                reveals=shuffle.reveals,
            )
            if seed is None:
                checks[shuffle.number] = _with(check, "not revealed yet", None)
            elif commitment(seed.server_seed) != shuffle.commitment:  # the reveal is what fails, later in the log
                checks[shuffle.number] = _with(check, "failed", seed.server_seed)
                at = next(i for i, (_, e) in enumerate(log) if e is seed)
                fail(at, f"the revealed seed of shuffle {shuffle.number} does not match its commitment")
            else:
                reason, bad = _redeal(rules, state, seed.server_seed, log, index)
                if reason:
                    checks[shuffle.number] = _with(check, "failed", seed.server_seed)
                    fail(bad, reason)
                else:  # the deal's events are the ones dealing gives: apply them all
                    checks[shuffle.number] = _with(
                        check, ALONE if not check.contributors else VERIFIED, seed.server_seed
                    )
                    for _, dealt in log[index:bad]:
                        if dealt is not None:
                            state = rules.evolve(state, dealt)
                    index = bad
                    continue
        if failure is None:
            try:
                state = rules.evolve(state, event)
            except Exception as e:  # a tampered event the rules cannot even apply
                fail(index, f"the event cannot be applied to the game as it stood ({e})")
        index += 1
    fair = bool(committed) or getattr(state, "fair", False)
    return Verdict(fair, tuple(checks[n] for n in sorted(checks)), failure)


def _redacted(log: Sequence[tuple[int, Any]]) -> bool:
    """Whether the log reached its reader redacted (a live game's, as a seat or a spectator receives it): a deal's
    `HandsDealt` without its seed. Its hands cannot be compared, nor the game replayed."""
    return any(_name(e) == "HandsDealt" and e.seed is None for _, e in log)


def _seeds_only(log: Sequence[tuple[int, Any]], committed: dict[int, SeedCommitted]) -> Verdict:
    """A redacted log: each revealed seed checked against its commitment; the hands wait for the game's end."""
    checks: dict[int, DealCheck] = {}
    contributions: dict[int, list[SeedContributed]] = {}
    pledges: dict[int, list[ContributionCommitted]] = {}
    reveals: dict[int, list[ContributionRevealed]] = {}
    versions: dict[int, int] = {}
    protocol = 1
    """The game's protocol version, from its start event: a shuffle with no commitment yet is named by it."""
    for index, (version, event) in enumerate(log):
        if getattr(event, "commit_reveal", False) is True:
            protocol = 2
        if isinstance(event, ContributionCommitted | CommitsClosed | ContributionRevealed | RevealsClosed):
            versions[event.number] = 2
            if isinstance(event, ContributionCommitted):
                pledges.setdefault(event.number, []).append(event)
            elif isinstance(event, ContributionRevealed):
                reveals.setdefault(event.number, []).append(event)
            continue
        if isinstance(event, SeedCommitted):
            checks[event.number] = DealCheck(event.number, event.deal, event.commitment, status="not revealed yet")
        elif isinstance(event, SeedContributed):
            if event.number not in checks:
                return Verdict(
                    True, tuple(checks.values()), Failure(index, version, event, "a contribution before its commitment")
                )
            contributions.setdefault(event.number, []).append(event)
        elif isinstance(event, SeedRevealed):
            shuffle = committed.get(event.number)
            if shuffle is None or commitment(event.server_seed) != shuffle.commitment:
                reason = f"the revealed seed of shuffle {event.number} does not match its commitment"
                return Verdict(True, tuple(checks.values()), Failure(index, version, event, reason))
            checks[event.number] = DealCheck(
                shuffle.number, shuffle.deal, shuffle.commitment, (), event.server_seed, "hands hidden"
            )
    shuffles = tuple(
        DealCheck(
            c.number,
            c.deal,
            c.commitment,
            tuple(contributions.get(n, ())),
            c.server_seed,
            c.status,
            versions.get(n, protocol),
            tuple(pledges.get(n, ())),
            tuple(reveals.get(n, ())),
        )
        for n, c in sorted(checks.items())
    )
    return Verdict(True, shuffles, None)


def _with(check: DealCheck, status: str, seed: bytes | None) -> DealCheck:
    return replace(check, server_seed=seed, status=status)


def _check_v2(shuffle: Shuffle | None, event: Any, seats: int) -> str:
    """Why a protocol-version-2 event cannot stand where the log has it ("" when it can): every commitment before
    the commitments close, every reveal after and matching as recorded, the closes saying what happened."""
    number = event.number
    if shuffle is None or shuffle.dealt or not shuffle.commit_reveal or shuffle.number != number:
        return f"a {_name(event)} for shuffle {number}, which does not take commitments and reveals now"
    if isinstance(event, ContributionCommitted):
        if shuffle.commits_closed:
            return f"seat {event.seat} commits to shuffle {number} after its commitments closed"
        if not 0 <= event.seat < seats or shuffle.pledged(event.seat) is not None or len(event.commitment) != 32:
            return f"seat {event.seat}'s commitment to shuffle {number} is not a first 32-byte commitment of a seat"
        return ""
    if isinstance(event, CommitsClosed):
        pledged = tuple(sorted(p.seat for p in shuffle.pledges))
        if shuffle.commits_closed or event.committed != pledged:
            return f"the commitments of shuffle {number} close as {event.committed}, not as recorded ({pledged})"
        return ""
    if isinstance(event, ContributionRevealed):
        pledge = shuffle.pledged(event.seat)
        if not shuffle.commits_closed or shuffle.reveals_closed:
            return f"seat {event.seat} reveals for shuffle {number} while its commitments are still taken"
        if pledge is None or shuffle.revealed(event.seat) is not None:
            return f"seat {event.seat} reveals for shuffle {number} without a commitment, or a second time"
        cutting = event.seat == shuffle.cutter
        if cutting != (event.cut is not None):
            return f"seat {event.seat}'s reveal for shuffle {number} records a cut only if it cuts"
        try:
            digest = contribution_commitment(number, event.seat, event.salt, event.cut or 0, event.contribution)
        except ValueError as e:
            return f"seat {event.seat}'s reveal for shuffle {number} cannot be hashed ({e})"
        if (digest == pledge.commitment) != event.matches:
            said = "matching" if event.matches else "not matching"
            return f"seat {event.seat}'s reveal for shuffle {number} is recorded as {said} its commitment, wrongly"
        return ""
    if not shuffle.commits_closed or shuffle.reveals_closed or event != closed_reveals(shuffle):
        return f"the reveals of shuffle {number} close as {event}, not as recorded ({closed_reveals(shuffle)})"
    return ""


def _redeal(
    rules: GameRules, state: Any, server_seed: bytes, log: Sequence[tuple[int, Any]], index: int
) -> tuple[str, int]:
    """Deal the committed shuffle again and compare with the log from ``index``: ("", the position after the deal's
    events) when every event is equal, else the reason and the position of the first that is not."""
    try:
        expected = list(rules.decide(state, DealShuffle(server_seed)))
    except RuleError as e:
        return f"the shuffle cannot be dealt again: {e.reason}", index
    recorded = [event for _, event in log[index:] if event is not None][: len(expected)]
    positions = [i for i in range(index, len(log)) if log[i][1] is not None][: len(expected)]
    for k, want in enumerate(expected):
        if k >= len(recorded):
            return f"the log ends before the deal's {_name(want)}", len(log) - 1
        if recorded[k] != want:
            got = recorded[k]
            what = _name(want) if _name(got) == _name(want) else f"{_name(got)} where the deal gives {_name(want)}"
            return f"{what} differs from dealing shuffle {state.shuffle.number} with its revealed seed", positions[k]
    return "", positions[-1] + 1
