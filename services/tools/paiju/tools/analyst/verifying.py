"""``paiju verify``: check that the deals of stored games are the shuffles the engine committed to
(`paiju.rules.verify`), one line per game, for a person or a referee."""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from paiju.rules.verify import Verdict, verify
from paiju.tools.analyst.log import GameLog, decode
from paiju.tools.analyst.streams import AnalystError, check_id
from paiju.v1 import engine_pb2, engine_pb2_grpc


def verdict_of(log: GameLog) -> Verdict:
    """The verdict on one game's log as stored."""
    return verify(log.rules.game, [(e.version, event) for e, event in zip(log.envelopes, log.events, strict=True)])


async def replayed_logs(address: str, game_ids: Sequence[str], token: str) -> list[GameLog]:
    """The logs of ``game_ids`` as the engine's public `Replay` gives them to ``token``'s holder: whole once a game
    has ended, for anyone (a live game's hands stay hidden, and its deals are "hands hidden")."""
    logs = []
    async with grpc.aio.insecure_channel(address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        for game_id in dict.fromkeys(game_ids):
            check_id("game", game_id)
            request = engine_pb2.ReplayRequest(game_id=game_id)
            try:
                envelopes = [
                    r.envelope
                    async for r in stub.Replay(request, metadata=(("authorization", f"Bearer {token}"),), timeout=60)
                ]
            except grpc.aio.AioRpcError as e:
                raise AnalystError(f"the engine at {address} refused the replay of {game_id}: {e.details()}") from None
            if not envelopes:
                raise AnalystError(f"there is no game {game_id!r}")
            logs.append(decode(envelopes))
    return logs


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
        waiting = [s for s in verdict.shuffles if s.status not in ("verified", "hands hidden")]
        rest = "".join(f"; shuffle {s.number} (deal {s.deal}) {s.status}" for s in waiting)
        if verdict.hidden:
            rest += (
                f"; {verdict.hidden} deal(s) whose hands this log hides (a live game): their seeds match their "
                "commitments, the hands are checked once the game has ended"
            )
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
