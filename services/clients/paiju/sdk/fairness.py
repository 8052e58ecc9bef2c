"""A seat's own part in fair dealing by protocol version 2 (docs/fairness.md, "Version 2: commit, then reveal"), and
the check that the engine recorded it unchanged.

When a seat's turn says COMMIT (`engine_pb2.FairDealingStep`), the client draws a fresh 32-byte salt and 16 bytes of
contribution on its own machine (the `secrets` module; the cutter also a cut, 1 to ``max_cut``), keeps them, and
sends only their commitment (`paiju.rules.fairness.contribution_commitment`); when it says REVEAL, it sends what it
kept. `Pledges` does both, and `Pledges.check` reads each event of the game's log: the seat's commitment and reveal
must appear exactly as sent, a reveal recorded as matching, and its contribution counted when the reveals close.
Anything else raises `ContributionAltered`, naming the game, the shuffle and the deal: the engine (or whoever
stored the log) changed or dropped the seat's part.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from paiju.rules import fair
from paiju.rules.fairness import SALT_BYTES, contribution_commitment
from paiju.v1 import engine_pb2

CONTRIBUTION_BYTES = 16
"""The random bytes a client adds to a fair game's shuffle."""


class ContributionAltered(Exception):
    """The game's log does not show this seat's commitment or reveal as the seat sent it."""

    def __init__(self, game_id: str, number: int, deal: int, what: str) -> None:
        self.game_id = game_id
        self.number = number
        self.deal = deal
        self.what = what
        super().__init__(f"game {game_id}, deal {deal} (shuffle {number}): {what}")


@dataclass(slots=True)
class Pledge:
    """What a seat committed to for one shuffle, kept until it is revealed."""

    number: int
    deal: int
    seat: int
    salt: bytes
    contribution: bytes
    cut: int
    commitment: bytes
    sent: bool = False
    """The engine took the commitment (the seat's `CommitContribution` was acted)."""
    revealed: bool = False
    """The engine took the reveal."""


class Pledges:
    """One client's commitments and reveals in the games it plays, by (game, shuffle)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, int], Pledge] = {}
        self._deals: dict[tuple[str, int], int] = {}
        """The deal each shuffle seen committed deals (from the log's `SeedCommitted`)."""

    def commit(self, game_id: str, seat: int, number: int, deal: int = 0, max_cut: int = 0) -> fair.CommitContribution:
        """The seat's commitment to shuffle ``number`` (of deal ``deal``): a fresh salt and contribution, and a cut
        of 1 to ``max_cut`` cards when the seat cuts (``max_cut`` > 0), drawn here and kept for the reveal. Asked
        again for the same shuffle, the same commitment."""
        kept = self._kept.get((game_id, number))
        if kept is None:
            salt = secrets.token_bytes(SALT_BYTES)
            contribution = secrets.token_bytes(CONTRIBUTION_BYTES)
            cut = 1 + secrets.randbelow(max_cut) if max_cut > 0 else 0
            digest = contribution_commitment(number, seat, salt, cut, contribution)
            deal = deal or self._deals.get((game_id, number), 0)
            kept = self._kept[(game_id, number)] = Pledge(number, deal, seat, salt, contribution, cut, digest)
        return fair.CommitContribution(seat, kept.commitment)

    def committed(self, game_id: str, number: int) -> None:
        """The engine took the commitment to shuffle ``number``: it must appear in the log."""
        kept = self._kept.get((game_id, number))
        if kept is not None:
            kept.sent = True

    def reveal(self, game_id: str, number: int) -> fair.RevealContribution | None:
        """What the seat committed to for shuffle ``number`` (``None``: it committed to nothing here)."""
        kept = self._kept.get((game_id, number))
        if kept is None:
            return None
        return fair.RevealContribution(kept.seat, kept.salt, kept.contribution, kept.cut)

    def revealed(self, game_id: str, number: int) -> None:
        """The engine took the reveal of shuffle ``number``: it must count."""
        kept = self._kept.get((game_id, number))
        if kept is not None:
            kept.revealed = True

    def step(
        self, game_id: str, seat: int, step: engine_pb2.FairDealingStep
    ) -> fair.CommitContribution | fair.RevealContribution | None:
        """The command a turn's COMMIT or REVEAL step asks of ``seat`` (`commit`, `reveal`); ``None`` for another
        kind of step, or a reveal of nothing this seat committed to."""
        if step.kind == engine_pb2.FAIR_DEALING_STEP_KIND_COMMIT:
            return self.commit(game_id, seat, step.shuffle, max_cut=step.max_cut)
        if step.kind == engine_pb2.FAIR_DEALING_STEP_KIND_REVEAL:
            return self.reveal(game_id, step.shuffle)
        return None

    def taken(self, game_id: str, step: engine_pb2.FairDealingStep) -> None:
        """The engine took the command of ``step`` (`committed`, `revealed`; nothing for another kind)."""
        if step.kind == engine_pb2.FAIR_DEALING_STEP_KIND_COMMIT:
            self.committed(game_id, step.shuffle)
        elif step.kind == engine_pb2.FAIR_DEALING_STEP_KIND_REVEAL:
            self.revealed(game_id, step.shuffle)

    def check(self, game_id: str, event: Any) -> None:
        """Check one event of the game's log against what this client sent (`ContributionAltered` on a change);
        a shuffle's pledge is forgotten once its reveals close."""
        number = getattr(event, "number", None)
        if isinstance(event, fair.SeedCommitted):
            self._deals[(game_id, event.number)] = event.deal
        kept = self._kept.get((game_id, number)) if isinstance(number, int) else None
        if kept is None:
            return

        def altered(what: str) -> ContributionAltered:
            return ContributionAltered(game_id, kept.number, kept.deal, what)

        if isinstance(event, fair.SeedCommitted):
            kept.deal = event.deal
        elif isinstance(event, fair.ContributionCommitted) and event.seat == kept.seat:
            if event.commitment != kept.commitment:
                raise altered(f"seat {kept.seat}'s commitment is recorded as {event.commitment.hex()}, not as sent")
        elif isinstance(event, fair.CommitsClosed):
            if kept.sent and kept.seat not in event.committed:
                raise altered(f"seat {kept.seat}'s commitment, which the engine took, is missing")
        elif isinstance(event, fair.ContributionRevealed) and event.seat == kept.seat:
            cut = kept.cut if event.cut is not None else 0
            same = (event.salt, event.contribution, cut) == (kept.salt, kept.contribution, kept.cut)
            if not same or not event.matches:
                raise altered(f"seat {kept.seat}'s reveal is recorded changed or as not matching its commitment")
        elif isinstance(event, fair.RevealsClosed):
            del self._kept[(game_id, kept.number)]
            self._deals.pop((game_id, kept.number), None)
            if kept.revealed and kept.seat not in event.contributors:
                raise altered(f"seat {kept.seat}'s contribution, revealed and taken, is not counted")

    def forget(self, game_id: str) -> None:
        """Drop what is kept for a game (it ended, or the seat left it)."""
        for key in [k for k in self._kept if k[0] == game_id]:
            del self._kept[key]
        for key in [k for k in self._deals if k[0] == game_id]:
            del self._deals[key]


__all__ = ["CONTRIBUTION_BYTES", "ContributionAltered", "Pledge", "Pledges"]
