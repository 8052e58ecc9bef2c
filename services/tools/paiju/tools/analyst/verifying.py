"""``paiju verify``: check that the deals of stored games are the shuffles the engine committed to
(`paiju.rules.verify`), one line per game, for a person or a referee."""

from __future__ import annotations

from paiju.rules.verify import Verdict, verify
from paiju.tools.analyst.log import GameLog


def verdict_of(log: GameLog) -> Verdict:
    """The verdict on one game's log as stored."""
    return verify(log.rules.game, [(e.version, event) for e, event in zip(log.envelopes, log.events, strict=True)])


def verdict_lines(log: GameLog, verdict: Verdict, *, details: bool = False) -> list[str]:
    """What ``paiju verify`` prints of one game: its verdict, and with ``details`` each shuffle (its commitment, the
    contributions and the revealed seed, so that anyone can check it again by the document alone)."""
    head = f"{log.game_id} ({log.title})"
    if verdict.failure is not None:
        f = verdict.failure
        lines = [f"{head}: FAILED at version {f.version} ({type(f.event).__name__}): {f.reason}"]
    elif not verdict.committed:
        lines = [f"{head}: not committed (dealt from seeds before fair dealing): nothing to verify"]
    else:
        waiting = [s for s in verdict.shuffles if s.status != "verified"]
        rest = "".join(f"; shuffle {s.number} (deal {s.deal}) {s.status}" for s in waiting)
        lines = [f"{head}: {verdict.verified} deal(s) verified{rest}"]
    if details:
        for s in verdict.shuffles:
            lines.append(f"  shuffle {s.number}, deal {s.deal}: {s.status}")
            lines.append(f"    commitment   {s.commitment.hex()}")
            for c in s.contributions:
                cut = f", cut {c.cut}" if c.cut is not None else ""
                lines.append(f"    contribution seat {c.seat}{cut}: {c.contribution.hex()}")
            if s.server_seed is not None:
                lines.append(f"    server seed  {s.server_seed.hex()}")
    return lines
