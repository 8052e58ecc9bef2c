"""Dealing fairly: the commit–reveal protocol around the verifiable shuffle (`paiju.rules.fairness`), shared by both
games (docs/fairness.md states it for players and verifiers).

A game started fair (``fair`` in its start command) deals every hand from a committed shuffle:

1. **Commit.** Before a deal can be shuffled the engine records `SeedCommitted`: the commitment to a fresh 32-byte
   server seed, numbered (the game's n-th commitment). Every seat sees it. The seed itself stays with the engine.
2. **Contribute.** Then the players add entropy the engine could not know when it committed: any seat may record one
   `SeedContributed` per shuffle (`Contribute`). The seat that cuts (砸六家's cutter, §9; 拖拉机's dealer, §9)
   contributes with its cut: its `Cut` is recorded as its contribution with the count, and a cut without chosen
   bytes contributes the count written in decimal. A cutter whose turn timer runs out contributes the bytes
   ``timed out`` and cuts the number of cards the commitment names (`default_cut`): nothing the engine chooses
   after committing.
3. **Deal.** The engine deals (`DealShuffle`, with the seed): at once after a cut; for a deal without a cut (the first
   one, a void 拖拉机 deal dealt again) when every seat has contributed or the engine's contribution window has
   passed. The deck is `fairly_shuffled(seed, contributions in the order recorded)`; the deal's other draws (the
   first drawer, the flipped card, rock–paper–scissors) come from `draws_seed` of the same seed and contributions.
   The rules check the seed against the commitment before dealing.
4. **Reveal.** When the deal is over (settled, void, or the match closed after it) the engine records
   `SeedRevealed`, checked against the commitment; anyone can then recompute the deal (`paiju.rules.verify`).

The engine takes these steps itself, in the same append as the event that makes them due (`settle`), so a seat never
sees a deal waiting for a commitment: `step` says which one is due. Pure: no clock, no I/O.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from paiju.rules.cards import Card
from paiju.rules.errors import IllegalAction, NotYourTurn, RuleError
from paiju.rules.fairness import (
    MAX_CONTRIBUTION_BYTES,
    SALT_BYTES,
    SEED_BYTES,
    commitment,
    contribution_commitment,
    fairly_shuffled,
    shuffle_key,
    shuffle_key_v2,
    shuffled_by_key,
)

DRAWS_DOMAIN = b"paiju-deal-draws-v1"
TIMED_OUT = b"timed out"
"""The contribution of a cutter whose turn timer ran out."""


# --- events -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SeedCommitted:
    """The engine committed to the server seed of the game's ``number``-th shuffle, which deals deal ``deal``:
    ``commitment`` is SHA-256 of a domain and the seed (`paiju.rules.fairness.commitment`)."""

    number: int
    deal: int
    commitment: bytes


@dataclass(frozen=True, slots=True)
class SeedContributed:
    """``seat`` added ``contribution`` (1..64 bytes) to shuffle ``number``; ``cut`` is set when it was the cutter's
    cut (the cards it moved)."""

    number: int
    seat: int
    contribution: bytes
    cut: int | None = None


@dataclass(frozen=True, slots=True)
class SeedRevealed:
    """The server seed of shuffle ``number`` (deal ``deal``), revealed once the deal is over."""

    number: int
    deal: int
    server_seed: bytes


@dataclass(frozen=True, slots=True)
class ContributionCommitted:
    """Protocol version 2: ``seat`` committed to its contribution to shuffle ``number`` (``commitment``:
    `paiju.rules.fairness.contribution_commitment`), before any contribution is revealed."""

    number: int
    seat: int
    commitment: bytes


@dataclass(frozen=True, slots=True)
class CommitsClosed:
    """Protocol version 2: shuffle ``number`` takes no more commitments (every seat committed, or the window's time
    ran out); ``committed``: the seats that did, ascending. Reveals are taken from now on."""

    number: int
    committed: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ContributionRevealed:
    """Protocol version 2: ``seat`` revealed its salt, contribution and (the cutter) cut for shuffle ``number``;
    ``matches``: they hash to its commitment. A reveal that does not match counts as no contribution (and the
    cutter's cut as none: the commitment's default cut)."""

    number: int
    seat: int
    salt: bytes
    contribution: bytes
    cut: int | None
    matches: bool


@dataclass(frozen=True, slots=True)
class RevealsClosed:
    """Protocol version 2: shuffle ``number`` takes no more reveals; ``contributors``: the seats whose reveal matched
    (the contributions the deal is shuffled with, in seat order; empty: the deal rests on the server seed alone),
    ``withheld``: the seats that committed and did not reveal, ``mismatched``: those whose reveal did not match."""

    number: int
    contributors: tuple[int, ...]
    withheld: tuple[int, ...]
    mismatched: tuple[int, ...]


# --- commands -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommitSeed:
    """Record the commitment of shuffle ``number`` (engine)."""

    number: int
    commitment: bytes


@dataclass(frozen=True, slots=True)
class Contribute:
    """``seat`` adds entropy to the committed shuffle (any seat, once a shuffle, before it is dealt)."""

    seat: int
    contribution: bytes


@dataclass(frozen=True, slots=True)
class DealShuffle:
    """Deal the committed shuffle with its server seed (engine)."""

    server_seed: bytes


@dataclass(frozen=True, slots=True)
class RevealSeed:
    """Reveal the server seed of the dealt shuffle whose deal is over (engine)."""

    server_seed: bytes


@dataclass(frozen=True, slots=True)
class CommitContribution:
    """Protocol version 2: ``seat`` commits to its contribution (and, the cutter, its cut) to the committed shuffle
    (any seat, once a shuffle, while commitments are taken)."""

    seat: int
    commitment: bytes


@dataclass(frozen=True, slots=True)
class RevealContribution:
    """Protocol version 2: ``seat`` reveals what it committed to: the salt, the contribution and the cut (the
    cutter's count; 0 for every other seat)."""

    seat: int
    salt: bytes
    contribution: bytes
    cut: int = 0


@dataclass(frozen=True, slots=True)
class CloseCommits:
    """Protocol version 2: end the commitments of shuffle ``number`` (engine)."""

    number: int


@dataclass(frozen=True, slots=True)
class CloseReveals:
    """Protocol version 2: end the reveals of shuffle ``number`` (engine)."""

    number: int


# --- state --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shuffle:
    """The game's current shuffle: committed, contributed to, then dealt, until its seed is revealed."""

    number: int
    deal: int
    commitment: bytes
    contributions: tuple[SeedContributed, ...] = ()
    dealt: bool = False
    commit_reveal: bool = False
    """Protocol version 2: every contribution is committed (`pledges`) before any is revealed (`reveals`)."""
    cutter: int | None = None
    """Protocol version 2: the seat that cuts this shuffle's deal (``None``: a deal without a cut)."""
    pledges: tuple[ContributionCommitted, ...] = ()
    """Protocol version 2: the seats' commitments, in the order recorded."""
    commits_closed: bool = False
    reveals: tuple[ContributionRevealed, ...] = ()
    """Protocol version 2: the seats' reveals, in the order recorded."""
    reveals_closed: bool = False

    @property
    def version(self) -> int:
        """The protocol version the shuffle is dealt by."""
        return 2 if self.commit_reveal else 1

    @property
    def cut(self) -> SeedContributed | None:
        """The cutter's cut, once made (protocol version 1)."""
        return next((c for c in self.contributions if c.cut is not None), None)

    def contributed(self, seat: int) -> bool:
        return any(c.seat == seat for c in self.contributions)

    def pledged(self, seat: int) -> ContributionCommitted | None:
        """``seat``'s commitment (protocol version 2)."""
        return next((p for p in self.pledges if p.seat == seat), None)

    def revealed(self, seat: int) -> ContributionRevealed | None:
        """``seat``'s reveal (protocol version 2)."""
        return next((r for r in self.reveals if r.seat == seat), None)

    @property
    def counted(self) -> tuple[ContributionRevealed, ...]:
        """The reveals that match their commitments, in seat order: the contributions a version-2 deal counts."""
        return tuple(sorted((r for r in self.reveals if r.matches), key=lambda r: r.seat))


@dataclass(frozen=True, slots=True)
class Step:
    """What the engine must do next for a fair game: ``kind`` is ``commit``, ``deal`` or ``reveal``, for the game's
    ``number``-th server seed; ``waits``: a deal some seats may still contribute to (the engine deals when its
    contribution window has passed, or at once when it has none)."""

    kind: str
    number: int
    waits: bool = False
    window: str = "contribution"
    """Which time a waiting step waits for: ``contribution`` (the engine's contribution window since the last
    event), ``cut`` (the cutter has not committed yet: its turn timer since the last event, none on a table without
    one), ``first`` (a version-2 game's first commitment: a seat's client watching the game, or the engine's
    first-deal time since the game's start)."""


def step(state: Any, *, awaiting: bool, over: bool, cut_deal: bool, seats: int) -> Step | None:
    """The engine's next step in ``state`` (``None``: none now). ``awaiting``: the game waits for its next deal;
    ``over``: the last deal is over; ``cut_deal``: the next deal is dealt after a cut.

    Protocol version 2 adds two steps: ``close_commits`` (when every seat has committed, else when the window's time
    runs out) and ``close_reveals`` (when every seat that committed has revealed, else when the contribution window
    runs out); the deal follows at once."""
    if not state.fair:
        return None
    shuffle: Shuffle | None = state.shuffle
    if shuffle is not None and shuffle.dealt:
        return Step("reveal", shuffle.number) if over else None
    if not awaiting:
        return None
    if shuffle is None:
        if getattr(state, "commit_reveal", False) and state.commitments == 0:
            return Step("commit", 1, waits=True, window="first")
        return Step("commit", state.commitments + 1)
    if shuffle.commit_reveal:
        return _step_v2(shuffle, seats)
    if cut_deal:
        return Step("deal", shuffle.number) if shuffle.cut is not None else None
    return Step("deal", shuffle.number, waits=len({c.seat for c in shuffle.contributions}) < seats)


def _step_v2(shuffle: Shuffle, seats: int) -> Step:
    if not shuffle.commits_closed:
        everyone = len(shuffle.pledges) >= seats
        cutter_owes = shuffle.cutter is not None and shuffle.pledged(shuffle.cutter) is None
        return Step(
            "close_commits", shuffle.number, waits=not everyone, window="cut" if cutter_owes else "contribution"
        )
    if not shuffle.reveals_closed:
        owed = any(shuffle.revealed(p.seat) is None for p in shuffle.pledges)
        return Step("close_reveals", shuffle.number, waits=owed)
    return Step("deal", shuffle.number)


def command(next_step: Step, server_seed: bytes) -> CommitSeed | DealShuffle | RevealSeed | CloseCommits | CloseReveals:
    """The engine's command for ``next_step``, given that shuffle's server seed."""
    if next_step.kind == "commit":
        return CommitSeed(next_step.number, commitment(server_seed))
    if next_step.kind == "close_commits":
        return CloseCommits(next_step.number)
    if next_step.kind == "close_reveals":
        return CloseReveals(next_step.number)
    if next_step.kind == "deal":
        return DealShuffle(server_seed)
    return RevealSeed(server_seed)


def settle(
    decide: Callable[[Any, Any], Sequence[Any]],
    evolve: Callable[[Any, Any], Any],
    next_step: Callable[[Any], Step | None],
    state: Any,
    server_seed: Callable[[int, bytes | None], bytes],
    *,
    window_over: bool | Callable[[Any, Step], bool],
) -> list[Any]:
    """The events of every step due in ``state`` now, taken one after another (a step that may still wait — for
    contributions, commitments, reveals or a watcher — only when ``window_over``, or ``window_over(state, step)``
    says its window has no time to wait). ``server_seed(number, commitment)`` gives the seed of shuffle
    ``number``; ``commitment`` is the one recorded for it when there is one (a deal or a reveal: an engine that
    changed its secret since it committed finds the seed that matches), ``None`` for a new commitment.

    A step the rules refuse (a seed that does not match its commitment: the engine lost the secret it committed
    with) ends the steps there: the command that made it due is still recorded, and the step stays due."""
    events: list[Any] = []
    for _ in range(10):  # at most reveal, commit, close, close, deal, reveal, commit: a bound against a rules bug
        due = next_step(state)
        if due is None or (due.waits and not (window_over(state, due) if callable(window_over) else window_over)):
            break
        shuffle: Shuffle | None = state.shuffle
        committed = shuffle.commitment if shuffle is not None and due.kind != "commit" else None
        try:
            taken = decide(state, command(due, server_seed(due.number, committed)))
        except RuleError:
            break
        for event in taken:
            state = evolve(state, event)
            events.append(event)
    return events


# --- the rules of each step ---------------------------------------------------------------------------------------
# Each refusal cites ``rule``: the game's rule of the deal (砸六家 §9, 拖拉机 §8), which the protocol serves.


def _require_fair(state: Any, what: str, rule: str) -> None:
    if not state.fair:
        raise IllegalAction(f"this game does not deal from committed seeds, so it takes no {what}", rule=rule)


def decide_commit(state: Any, cmd: CommitSeed, *, awaiting: bool, deal: int, rule: str) -> list[Any]:
    """`SeedCommitted` for the deal the game waits for (``deal``)."""
    _require_fair(state, "commitment", rule)
    if not awaiting or state.shuffle is not None:
        raise IllegalAction("the game is not waiting for a new shuffle", rule=rule)
    if cmd.number != state.commitments + 1:
        raise RuleError(f"the next commitment is number {state.commitments + 1}, not {cmd.number}", rule=rule)
    if len(cmd.commitment) != 32:
        raise RuleError("a commitment is a SHA-256 digest of 32 bytes", rule=rule)
    return [SeedCommitted(cmd.number, deal, cmd.commitment)]


def check_contribution(contribution: bytes, rule: str) -> None:
    if not 0 < len(contribution) <= MAX_CONTRIBUTION_BYTES:
        raise IllegalAction(
            f"a contribution has 1 to {MAX_CONTRIBUTION_BYTES} bytes, not {len(contribution)}", rule=rule
        )


def decide_contribute(state: Any, cmd: Contribute, *, seats: int, cutter: int | None, rule: str) -> list[Any]:
    """`SeedContributed` of a seat that has not contributed to the committed shuffle yet (the cutter contributes
    with its cut)."""
    _require_fair(state, "contribution", rule)
    if not 0 <= cmd.seat < seats:
        raise IllegalAction(f"seat must be 0..{seats - 1}, not {cmd.seat}", rule=rule)
    shuffle: Shuffle | None = state.shuffle
    if shuffle is None or shuffle.dealt:
        raise NotYourTurn("no shuffle waits for contributions now", rule=rule)
    if shuffle.commit_reveal:
        raise IllegalAction(
            "this shuffle takes commitments, then reveals (CommitContribution, RevealContribution), not a contribution",
            rule=rule,
        )
    if cmd.seat == cutter:
        raise IllegalAction("the cutter contributes with the cut", rule=rule)
    if shuffle.contributed(cmd.seat):
        raise IllegalAction(f"seat {cmd.seat} has contributed to this shuffle already", rule=rule)
    check_contribution(cmd.contribution, rule)
    return [SeedContributed(shuffle.number, cmd.seat, cmd.contribution)]


def contributors(state: Any, *, seats: int, cutter: int | None) -> tuple[int, ...]:
    """The seats that may add a contribution to the committed shuffle now (`decide_contribute` accepts theirs): while a
    shuffle of a fair game waits to be dealt, every seat that has not contributed yet but the cutter, who contributes
    with its cut."""
    shuffle: Shuffle | None = getattr(state, "shuffle", None)
    if not getattr(state, "fair", False) or shuffle is None or shuffle.dealt:
        return ()
    if shuffle.commit_reveal:
        return tuple(seat for seat in range(seats) if owed(state, seat) is not None)
    return tuple(seat for seat in range(seats) if seat != cutter and not shuffle.contributed(seat))


def owed(state: Any, seat: int) -> str | None:
    """The fair-dealing step ``seat`` may take now: ``contribute`` (protocol version 1), ``commit`` or ``reveal``
    (version 2); ``None``: none. A version-1 cutter contributes with its cut and owes no separate step."""
    shuffle: Shuffle | None = getattr(state, "shuffle", None)
    if not getattr(state, "fair", False) or shuffle is None or shuffle.dealt:
        return None
    if not shuffle.commit_reveal:
        return "contribute" if not shuffle.contributed(seat) else None
    if not shuffle.commits_closed:
        return "commit" if shuffle.pledged(seat) is None else None
    if not shuffle.reveals_closed and shuffle.pledged(seat) is not None and shuffle.revealed(seat) is None:
        return "reveal"
    return None


def cut_contribution(state: Any, seat: int, count: int, contribution: bytes, rule: str) -> SeedContributed:
    """The cutter's cut as its contribution (the count in decimal when it chose no bytes)."""
    shuffle: Shuffle | None = state.shuffle
    if shuffle is None or shuffle.dealt:
        raise NotYourTurn("the deal's seed is not committed yet", rule=rule)
    if shuffle.commit_reveal:
        raise IllegalAction(
            "the cutter commits to its cut with its contribution (CommitContribution), then reveals it", rule=rule
        )
    if shuffle.contributed(seat):
        raise IllegalAction(f"seat {seat} has cut already", rule=rule)
    chosen = contribution or str(count).encode()
    check_contribution(chosen, rule)
    return SeedContributed(shuffle.number, seat, chosen, count)


def default_cut(state: Any, deck_size: int) -> int:
    """The cut of a cutter whose timer ran out: named by the commitment, which the engine recorded before the turn."""
    shuffle: Shuffle = state.shuffle
    return 1 + int.from_bytes(shuffle.commitment[:4], "big") % (deck_size - 1)


def dealt(state: Any, cmd: DealShuffle, decks: int, rule: str) -> tuple[list[Card], int]:
    """The committed shuffle's deck (top first) and the seed of the deal's other draws, once ``cmd``'s seed is
    checked against the commitment."""
    _require_fair(state, "deal", rule)
    shuffle: Shuffle | None = state.shuffle
    if shuffle is None or shuffle.dealt:
        raise IllegalAction("no committed shuffle waits to be dealt", rule=rule)
    if len(cmd.server_seed) != SEED_BYTES or commitment(cmd.server_seed) != shuffle.commitment:
        raise RuleError("the server seed does not match the commitment", rule=rule)
    if shuffle.commit_reveal:
        if not shuffle.reveals_closed:
            raise IllegalAction("the shuffle still takes commitments or reveals", rule=rule)
        key = shuffle_key_v2(cmd.server_seed, [(r.seat, r.contribution) for r in shuffle.counted])
        return shuffled_by_key(decks, key), draws_seed_of_key(key)
    contributions = [c.contribution for c in shuffle.contributions]
    return fairly_shuffled(decks, cmd.server_seed, contributions), draws_seed(cmd.server_seed, contributions)


def deal_cut(state: Any, deck_size: int) -> tuple[int, int] | None:
    """The cut a dealt shuffle's deal takes and its cutter: protocol version 1, the recorded cut; version 2, the
    cutter's revealed cut when its reveal matched, else the cut its commitment names (`default_cut`). ``None``: no
    cut (a deal without a cutter, or a version-1 cutter that has not cut)."""
    shuffle: Shuffle = state.shuffle
    if not shuffle.commit_reveal:
        made = shuffle.cut
        return (made.cut, made.seat) if made is not None and made.cut is not None else None
    if shuffle.cutter is None:
        return None
    reveal = shuffle.revealed(shuffle.cutter)
    if reveal is not None and reveal.matches and reveal.cut is not None:
        return reveal.cut, shuffle.cutter
    return default_cut(state, deck_size), shuffle.cutter


def draws_seed(server_seed: bytes, contributions: Sequence[bytes]) -> int:
    """The seed of a fair deal's other draws (first drawer, flip, rock–paper–scissors): the first 8 bytes of
    HMAC-SHA256(shuffle key, "paiju-deal-draws-v1"), as an integer, shifted right by one bit (63 bits)."""
    return draws_seed_of_key(shuffle_key(server_seed, contributions))


def draws_seed_of_key(key: bytes) -> int:
    """The draws seed of a shuffle key (either protocol version)."""
    return int.from_bytes(hmac.new(key, DRAWS_DOMAIN, hashlib.sha256).digest()[:8], "big") >> 1


# --- protocol version 2: commit, then reveal ----------------------------------------------------------------------


def _open_v2(state: Any, rule: str) -> Shuffle:
    shuffle: Shuffle | None = state.shuffle
    if shuffle is None or shuffle.dealt:
        raise NotYourTurn("no shuffle waits for contributions now", rule=rule)
    if not shuffle.commit_reveal:
        raise IllegalAction("this shuffle takes contributions (Contribute), not commitments and reveals", rule=rule)
    return shuffle


def decide_commit_contribution(state: Any, cmd: CommitContribution, *, seats: int, rule: str) -> list[Any]:
    """`ContributionCommitted` of a seat that has not committed to the shuffle yet, while commitments are taken."""
    _require_fair(state, "commitment of a contribution", rule)
    if not 0 <= cmd.seat < seats:
        raise IllegalAction(f"seat must be 0..{seats - 1}, not {cmd.seat}", rule=rule)
    shuffle = _open_v2(state, rule)
    if shuffle.commits_closed:
        raise NotYourTurn(f"shuffle {shuffle.number} takes no more commitments: reveals are taken now", rule=rule)
    if shuffle.pledged(cmd.seat) is not None:
        raise IllegalAction(f"seat {cmd.seat} has committed to shuffle {shuffle.number} already", rule=rule)
    if len(cmd.commitment) != 32:
        raise IllegalAction(f"a commitment is a SHA-256 digest of 32 bytes, not {len(cmd.commitment)}", rule=rule)
    return [ContributionCommitted(shuffle.number, cmd.seat, cmd.commitment)]


def decide_close_commits(state: Any, cmd: CloseCommits, *, rule: str) -> list[Any]:
    """`CommitsClosed` of the shuffle that takes commitments (engine)."""
    _require_fair(state, "end of commitments", rule)
    shuffle = _open_v2(state, rule)
    if shuffle.commits_closed or cmd.number != shuffle.number:
        raise IllegalAction(f"shuffle {cmd.number} takes no commitments now", rule=rule)
    return [CommitsClosed(shuffle.number, tuple(sorted(p.seat for p in shuffle.pledges)))]


def decide_reveal_contribution(
    state: Any, cmd: RevealContribution, *, seats: int, deck_size: int, rule: str
) -> list[Any]:
    """`ContributionRevealed` of a seat that committed and has not revealed, while reveals are taken: recorded
    whether or not it matches the commitment (a mismatch counts as no contribution). A reveal that cannot be one
    (a salt of the wrong length, a contribution of 0 or more than 64 bytes, a cut out of range or from a seat that
    does not cut) is refused and changes nothing."""
    _require_fair(state, "reveal of a contribution", rule)
    if not 0 <= cmd.seat < seats:
        raise IllegalAction(f"seat must be 0..{seats - 1}, not {cmd.seat}", rule=rule)
    shuffle = _open_v2(state, rule)
    if not shuffle.commits_closed or shuffle.reveals_closed:
        raise NotYourTurn(f"shuffle {shuffle.number} takes no reveals now", rule=rule)
    pledge = shuffle.pledged(cmd.seat)
    if pledge is None:
        raise IllegalAction(f"seat {cmd.seat} did not commit to shuffle {shuffle.number}", rule=rule)
    if shuffle.revealed(cmd.seat) is not None:
        raise IllegalAction(f"seat {cmd.seat} has revealed its contribution already", rule=rule)
    if len(cmd.salt) != SALT_BYTES:
        raise IllegalAction(f"a salt has {SALT_BYTES} bytes, not {len(cmd.salt)}", rule=rule)
    check_contribution(cmd.contribution, rule)
    cutting = cmd.seat == shuffle.cutter
    if cutting and not 1 <= cmd.cut <= deck_size - 1:
        raise IllegalAction(f"a cut moves 1..{deck_size - 1} cards, not {cmd.cut}", rule=rule)
    if not cutting and cmd.cut != 0:
        raise IllegalAction(f"seat {cmd.seat} does not cut this deal: its cut is 0, not {cmd.cut}", rule=rule)
    matches = (
        contribution_commitment(shuffle.number, cmd.seat, cmd.salt, cmd.cut, cmd.contribution) == pledge.commitment
    )
    return [
        ContributionRevealed(
            shuffle.number, cmd.seat, cmd.salt, cmd.contribution, cmd.cut if cutting else None, matches
        )
    ]


def decide_close_reveals(state: Any, cmd: CloseReveals, *, rule: str) -> list[Any]:
    """`RevealsClosed` of the shuffle that takes reveals (engine): who counts, who withheld, whose reveal did not
    match."""
    _require_fair(state, "end of reveals", rule)
    shuffle = _open_v2(state, rule)
    if not shuffle.commits_closed or shuffle.reveals_closed or cmd.number != shuffle.number:
        raise IllegalAction(f"shuffle {cmd.number} takes no reveals now", rule=rule)
    return [closed_reveals(shuffle)]


def closed_reveals(shuffle: Shuffle) -> RevealsClosed:
    """The `RevealsClosed` that ends ``shuffle``'s reveals as they stand."""
    revealed = {r.seat: r for r in shuffle.reveals}
    pledged = sorted(p.seat for p in shuffle.pledges)
    return RevealsClosed(
        shuffle.number,
        tuple(s for s in pledged if s in revealed and revealed[s].matches),
        tuple(s for s in pledged if s not in revealed),
        tuple(s for s in pledged if s in revealed and not revealed[s].matches),
    )


def decide_v2(state: Any, command: Any, *, seats: int, deck_size: int, rule: str) -> list[Any] | None:
    """The events of a protocol-version-2 command (``None``: not one)."""
    if isinstance(command, CommitContribution):
        return decide_commit_contribution(state, command, seats=seats, rule=rule)
    if isinstance(command, RevealContribution):
        return decide_reveal_contribution(state, command, seats=seats, deck_size=deck_size, rule=rule)
    if isinstance(command, CloseCommits):
        return decide_close_commits(state, command, rule=rule)
    if isinstance(command, CloseReveals):
        return decide_close_reveals(state, command, rule=rule)
    return None


def decide_reveal(state: Any, cmd: RevealSeed, *, over: bool, rule: str) -> list[Any]:
    """`SeedRevealed` of the dealt shuffle, once its deal is over and the seed matches the commitment."""
    _require_fair(state, "reveal", rule)
    shuffle: Shuffle | None = state.shuffle
    if shuffle is None or not shuffle.dealt or not over:
        raise IllegalAction("no dealt shuffle's deal is over", rule=rule)
    if commitment(cmd.server_seed) != shuffle.commitment:
        raise RuleError("the server seed does not match the commitment", rule=rule)
    return [SeedRevealed(shuffle.number, shuffle.deal, cmd.server_seed)]


def evolve_shuffle(state: Any, event: Any, *, cutter: int | None = None) -> dict[str, Any] | None:
    """The changes a protocol event makes to the state (``None``: not a protocol event). ``cutter``: the seat that
    cuts the coming deal (protocol version 2 records it with the shuffle committed for it)."""
    if isinstance(event, SeedCommitted):
        if getattr(state, "commit_reveal", False):
            shuffle = Shuffle(event.number, event.deal, event.commitment, commit_reveal=True, cutter=cutter)
        else:
            shuffle = Shuffle(event.number, event.deal, event.commitment)
        return {"shuffle": shuffle, "commitments": event.number}
    current: Shuffle = state.shuffle
    if isinstance(event, SeedContributed):
        return {"shuffle": replace(current, contributions=(*current.contributions, event))}
    if isinstance(event, ContributionCommitted):
        return {"shuffle": replace(current, pledges=(*current.pledges, event))}
    if isinstance(event, CommitsClosed):
        return {"shuffle": replace(current, commits_closed=True)}
    if isinstance(event, ContributionRevealed):
        return {"shuffle": replace(current, reveals=(*current.reveals, event))}
    if isinstance(event, RevealsClosed):
        return {"shuffle": replace(current, reveals_closed=True)}
    if isinstance(event, SeedRevealed):
        return {"shuffle": None}
    return None


def on_deal(state: Any) -> Shuffle | None:
    """The shuffle once its hands are dealt (a deal's `HandsDealt`)."""
    shuffle: Shuffle | None = state.shuffle
    return replace(shuffle, dealt=True) if state.fair and shuffle is not None else shuffle


PROTOCOL_COMMANDS = (
    CommitSeed,
    Contribute,
    DealShuffle,
    RevealSeed,
    CommitContribution,
    RevealContribution,
    CloseCommits,
    CloseReveals,
)
ENGINE_COMMANDS = (CommitSeed, DealShuffle, RevealSeed, CloseCommits, CloseReveals)
PROTOCOL_EVENTS = (
    SeedCommitted,
    SeedContributed,
    SeedRevealed,
    ContributionCommitted,
    CommitsClosed,
    ContributionRevealed,
    RevealsClosed,
)
