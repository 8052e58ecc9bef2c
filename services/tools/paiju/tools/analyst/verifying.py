"""``paiju verify``: check that the deals of stored games are the shuffles the engine committed to
(`paiju.rules.verify`), one line per game, for a person or a referee."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import grpc
from google.protobuf import json_format

from paiju.rules.verify import ALONE, VERIFIED, Verdict, verify
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


EXPORT_FORMATS = ("jsonl", "csv", "parquet")


def export_file(path: Path) -> Path | None:
    """The events file of an export that ``path`` names — the file itself, another file of the same export
    (``deals.csv`` names ``events.csv``) or the export's folder — or ``None`` when ``path`` is no export."""
    if path.is_dir():
        found = [path / f"events.{fmt}" for fmt in EXPORT_FORMATS if (path / f"events.{fmt}").is_file()]
        return found[0] if found else None
    fmt = path.suffix.removeprefix(".")
    if fmt not in EXPORT_FORMATS or not path.is_file():
        return None
    events = path.with_name(f"events.{fmt}")
    return events if events.is_file() else None


def export_logs(path: Path) -> list[GameLog]:
    """The game logs an export holds (`paiju export`'s ``events`` file, any format), games in id order: each event
    as the export wrote it, so a game exported while live is checked as a client's log is (its hands hidden)."""
    from paiju.tools.analyst.export import read_rows  # the export reads pyarrow for Parquet only when asked

    events = export_file(path)
    if events is None:
        raise AnalystError(f"{path} is not a paiju export with an events file (events.jsonl, .csv or .parquet)")
    games: dict[str, list[engine_pb2.Envelope]] = {}
    for row in read_rows(events):
        try:
            envelope = json_format.Parse(str(row["envelope"]), engine_pb2.Envelope())
        except json_format.ParseError as e:
            where = f"{row.get('game_id')} v{row.get('version')}"
            raise AnalystError(f"{events}: the event {where} is unreadable: {e}") from None
        games.setdefault(envelope.game_id, []).append(envelope)
    logs = []
    for game_id in sorted(games):
        envelopes = sorted(games[game_id], key=lambda e: e.version)
        if [e.version for e in envelopes] != list(range(1, len(envelopes) + 1)):
            raise AnalystError(f"{events}: the events of {game_id} are not versions 1 to {len(envelopes)}, each once")
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
        waiting = [s for s in verdict.shuffles if s.status not in (VERIFIED, ALONE, "hands hidden")]
        rest = "".join(f"; shuffle {s.number} (deal {s.deal}) {s.status}" for s in waiting)
        if verdict.hidden:
            rest += (
                f"; {verdict.hidden} deal(s) whose hands this log hides (a live game): their seeds match their "
                "commitments, the hands are checked once the game has ended"
            )
        if verdict.alone:
            alone = ", ".join(str(s.deal) for s in verdict.shuffles if s.status == ALONE)
            rest += f"; {verdict.alone} of them on the server seed alone, no contribution counted (deal {alone})"
        versions = sorted({s.version for s in verdict.shuffles})
        protocol = f" (protocol {' and '.join(map(str, versions))})" if versions else ""
        lines = [f"{head}: {verdict.verified} deal(s) verified{protocol}{rest}"]
    if details:
        for s in verdict.shuffles:
            contributors = " ".join(map(str, s.contributors)) or "none: the server seed alone"
            lines.append(f"  shuffle {s.number}, deal {s.deal} (protocol {s.version}): {s.status}")
            lines.append(f"    commitment   {s.commitment.hex()}")
            lines.append(f"    contributors {contributors}")
            for c in s.contributions:
                cut = f", cut {c.cut}" if c.cut is not None else ""
                lines.append(f"    contribution seat {c.seat}{cut}: {c.contribution.hex()}")
            for p in s.pledges:
                lines.append(f"    commitment of seat {p.seat}: {p.commitment.hex()}")
            for r in s.reveals:
                cut = f", cut {r.cut}" if r.cut is not None else ""
                match = "" if r.matches else " (does not match: not counted)"
                lines.append(f"    reveal of seat {r.seat}{cut}: salt {r.salt.hex()}, {r.contribution.hex()}{match}")
            if s.withheld:
                lines.append(f"    withheld or mismatched: {' '.join(map(str, s.withheld))}")
            if s.server_seed is not None:
                lines.append(f"    server seed  {s.server_seed.hex()}")
    return lines
