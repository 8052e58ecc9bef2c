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
from paiju.rules.fairness import MAX_CONTRIBUTION_BYTES, SEED_BYTES, commitment, fairly_shuffled, shuffle_key

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


# --- state --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shuffle:
    """The game's current shuffle: committed, contributed to, then dealt, until its seed is revealed."""

    number: int
    deal: int
    commitment: bytes
    contributions: tuple[SeedContributed, ...] = ()
    dealt: bool = False

    @property
    def cut(self) -> SeedContributed | None:
        """The cutter's cut, once made."""
        return next((c for c in self.contributions if c.cut is not None), None)

    def contributed(self, seat: int) -> bool:
        return any(c.seat == seat for c in self.contributions)


@dataclass(frozen=True, slots=True)
class Step:
    """What the engine must do next for a fair game: ``kind`` is ``commit``, ``deal`` or ``reveal``, for the game's
    ``number``-th server seed; ``waits``: a deal some seats may still contribute to (the engine deals when its
    contribution window has passed, or at once when it has none)."""

    kind: str
    number: int
    waits: bool = False


def step(state: Any, *, awaiting: bool, over: bool, cut_deal: bool, seats: int) -> Step | None:
    """The engine's next step in ``state`` (``None``: none now). ``awaiting``: the game waits for its next deal;
    ``over``: the last deal is over; ``cut_deal``: the next deal is dealt after a cut."""
    if not state.fair:
        return None
    shuffle: Shuffle | None = state.shuffle
    if shuffle is not None and shuffle.dealt:
        return Step("reveal", shuffle.number) if over else None
    if not awaiting:
        return None
    if shuffle is None:
        return Step("commit", state.commitments + 1)
    if cut_deal:
        return Step("deal", shuffle.number) if shuffle.cut is not None else None
    return Step("deal", shuffle.number, waits=len({c.seat for c in shuffle.contributions}) < seats)


def command(next_step: Step, server_seed: bytes) -> CommitSeed | DealShuffle | RevealSeed:
    """The engine's command for ``next_step``, given that shuffle's server seed."""
    if next_step.kind == "commit":
        return CommitSeed(next_step.number, commitment(server_seed))
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
    window_over: bool,
) -> list[Any]:
    """The events of every step due in ``state`` now, taken one after another (a deal that may still wait for
    contributions only when ``window_over``). ``server_seed(number, commitment)`` gives the seed of shuffle
    ``number``; ``commitment`` is the one recorded for it when there is one (a deal or a reveal: an engine that
    changed its secret since it committed finds the seed that matches), ``None`` for a new commitment.

    A step the rules refuse (a seed that does not match its commitment: the engine lost the secret it committed
    with) ends the steps there: the command that made it due is still recorded, and the step stays due."""
    events: list[Any] = []
    for _ in range(8):  # at most reveal, commit, deal, reveal, commit: a bound against a rules bug looping
        due = next_step(state)
        if due is None or (due.waits and not window_over):
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
    return tuple(seat for seat in range(seats) if seat != cutter and not shuffle.contributed(seat))


def cut_contribution(state: Any, seat: int, count: int, contribution: bytes, rule: str) -> SeedContributed:
    """The cutter's cut as its contribution (the count in decimal when it chose no bytes)."""
    shuffle: Shuffle | None = state.shuffle
    if shuffle is None or shuffle.dealt:
        raise NotYourTurn("the deal's seed is not committed yet", rule=rule)
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
    contributions = [c.contribution for c in shuffle.contributions]
    return fairly_shuffled(decks, cmd.server_seed, contributions), draws_seed(cmd.server_seed, contributions)


def draws_seed(server_seed: bytes, contributions: Sequence[bytes]) -> int:
    """The seed of a fair deal's other draws (first drawer, flip, rock–paper–scissors): the first 8 bytes of
    HMAC-SHA256(shuffle key, "paiju-deal-draws-v1"), as an integer, shifted right by one bit (63 bits)."""
    key = shuffle_key(server_seed, contributions)
    return int.from_bytes(hmac.new(key, DRAWS_DOMAIN, hashlib.sha256).digest()[:8], "big") >> 1


def decide_reveal(state: Any, cmd: RevealSeed, *, over: bool, rule: str) -> list[Any]:
    """`SeedRevealed` of the dealt shuffle, once its deal is over and the seed matches the commitment."""
    _require_fair(state, "reveal", rule)
    shuffle: Shuffle | None = state.shuffle
    if shuffle is None or not shuffle.dealt or not over:
        raise IllegalAction("no dealt shuffle's deal is over", rule=rule)
    if commitment(cmd.server_seed) != shuffle.commitment:
        raise RuleError("the server seed does not match the commitment", rule=rule)
    return [SeedRevealed(shuffle.number, shuffle.deal, cmd.server_seed)]


def evolve_shuffle(state: Any, event: Any) -> dict[str, Any] | None:
    """The changes a protocol event makes to the state (``None``: not a protocol event)."""
    if isinstance(event, SeedCommitted):
        return {"shuffle": Shuffle(event.number, event.deal, event.commitment), "commitments": event.number}
    if isinstance(event, SeedContributed):
        shuffle: Shuffle = state.shuffle
        return {"shuffle": replace(shuffle, contributions=(*shuffle.contributions, event))}
    if isinstance(event, SeedRevealed):
        return {"shuffle": None}
    return None


def on_deal(state: Any) -> Shuffle | None:
    """The shuffle once its hands are dealt (a deal's `HandsDealt`)."""
    shuffle: Shuffle | None = state.shuffle
    return replace(shuffle, dealt=True) if state.fair and shuffle is not None else shuffle


PROTOCOL_COMMANDS = (CommitSeed, Contribute, DealShuffle, RevealSeed)
ENGINE_COMMANDS = (CommitSeed, DealShuffle, RevealSeed)
PROTOCOL_EVENTS = (SeedCommitted, SeedContributed, SeedRevealed)
