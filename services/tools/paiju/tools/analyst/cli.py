"""``paiju replay``, ``paiju verify`` and ``paiju export``: the analysts' commands over the event streams, and
`export_games`, the export of an explicit list of games (for a tournament's games). Wire them into a command line
with `add_parsers`."""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from paiju.tools.analyst.export import FORMATS, Rows, export_rows, write_rows
from paiju.tools.analyst.replay import replay_lines
from paiju.tools.analyst.streams import (
    AnalystError,
    Source,
    game_store,
    load_log,
    load_logs,
    player_names,
    stored_logs,
    table_games,
    tournament_games,
)
from paiju.tools.analyst.verifying import export_file, export_logs, replayed_logs, verdict_lines, verdict_of

LIVE_HELP = (
    "Games still being played are left out unless --include-live is given; then only their public rows are "
    "written (what a spectator may see: no hand as dealt, concealed bid or hidden tribute card; such plays are "
    "rows with hidden=true and no cards), and their deal rows say public=true. Hidden information is exported "
    "for games that have ended only."
)


@dataclass(frozen=True, slots=True)
class Exported:
    """What an export wrote: the files, and how many games, deals and plays."""

    files: tuple[Path, ...]
    games: int
    deals: int
    plays: int
    live_left_out: int = 0
    """Games still being played that were left out (``include_live`` adds their public rows)."""


def progress_bar(what: str, unit: str) -> Callable[[Iterable[Any]], Iterable[Any]]:
    """A progress bar on stderr around an iterable, when stderr is a terminal (quiet otherwise: pipes, CI, logs)."""
    return lambda items: tqdm(items, desc=what, unit=unit, disable=None, file=sys.stderr, leave=False)


async def export_games(
    game_ids: Sequence[str] | None,
    out: Path,
    fmt: str = "jsonl",
    *,
    source: Source | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    include_live: bool = False,
    processes: int = 1,
) -> Exported:
    """Export the deals and plays of ``game_ids`` (every game of the stream when ``None``) into ``out`` as
    ``deals.<fmt>`` and ``plays.<fmt>``. Raises `AnalystError` for an unknown game or an unreachable stream.
    ``processes``: for every game of a partitioned stream, how many processes read and fold its partitions at
    once (the files are the same)."""
    source = source or Source.from_env()
    names = await player_names(source)
    async with game_store(source) as store:
        partitions = store.partitions
        parallel = game_ids is None and processes > 1 and partitions > 0
        logs = [] if parallel else await load_logs(store, game_ids)
    if not parallel:
        rows = export_rows(
            logs,
            since=since,
            until=until,
            include_live=include_live,
            names=names,
            progress=progress_bar("folding games", "game"),
        )
    else:
        count = min(processes, partitions)
        loop = asyncio.get_running_loop()
        with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn")) as pool:
            parts = await asyncio.gather(
                *(
                    loop.run_in_executor(
                        pool,
                        _export_part,
                        _Part(source, frozenset(range(k, partitions, count)), since, until, include_live, names),
                    )
                    for k in range(count)
                )
            )
        rows = Rows(  # each part in game id order: merged so, as one process would have written them
            sorted((d for part in parts for d in part.deals), key=lambda row: str(row["game_id"])),
            sorted((p for part in parts for p in part.plays), key=lambda row: str(row["game_id"])),
            sum(part.live_left_out for part in parts),
            sorted((e for part in parts for e in part.events), key=lambda row: str(row["game_id"])),
        )
    files = write_rows(rows, out, fmt)
    games = len({row["game_id"] for row in rows.deals})
    return Exported(tuple(files), games, len(rows.deals), len(rows.plays), rows.live_left_out)


@dataclass(frozen=True, slots=True)
class _Part:
    """What one worker process of an export reads and folds."""

    source: Source
    partitions: frozenset[int]
    since: datetime | None
    until: datetime | None
    include_live: bool
    names: dict[str, str]


def _export_part(part: _Part) -> Rows:
    """An export's worker process: the rows of the games in its partitions."""

    async def rows() -> Rows:
        async with game_store(part.source) as store:
            logs = await load_logs(store, partitions=part.partitions)
        return export_rows(logs, since=part.since, until=part.until, include_live=part.include_live, names=part.names)

    return asyncio.run(rows())


def _source(args: argparse.Namespace) -> Source:
    credentials = Source.from_env()  # the analyst's NATS credentials (read-only) and TLS CA, from the environment
    return Source(
        args.nats,
        args.stream,
        args.prefix,
        args.lobby_stream,
        args.lobby_prefix,
        args.tournaments_stream,
        args.tournaments_prefix,
        nats_seed=credentials.nats_seed,
        nats_ca=credentials.nats_ca,
    )


def _fail(command: str, error: Exception) -> int:
    print(f"paiju {command}: {error}", file=sys.stderr)
    return 2


def run_replay(args: argparse.Namespace) -> int:
    async def lines() -> list[str]:
        source = _source(args)
        async with game_store(source) as store:
            log = await load_log(store, args.game)
        return replay_lines(log, args.at, await player_names(source))

    try:
        told = asyncio.run(lines())
    except (AnalystError, ValueError) as e:
        return _fail("replay", e)
    sys.stdout.write("".join(line + "\n" for line in told))
    return 0


async def _chosen_games(
    source: Source, games: Sequence[str], tables: Sequence[str], tournaments: Sequence[str]
) -> list[str] | None:
    """The games named, then those of the tables' matches and of the tournaments (``None``: none named, every game
    of the stream)."""
    if not (games or tables or tournaments):
        return None
    game_ids = list(games)
    for table in tables:
        game_ids += await table_games(source, table)
    for tournament in tournaments:
        game_ids += [g for g in await tournament_games(source, tournament) if g not in game_ids]
    return game_ids


def run_verify(args: argparse.Namespace) -> int:
    async def checked() -> list[tuple[Any, Any]]:
        source = _source(args)
        if args.engine:
            token = args.token or os.environ.get("PAIJU_TOKEN", "")
            if not (args.games or args.game) or args.table or args.tournament or not token:
                raise AnalystError(
                    "--engine verifies named games (GAME or --game) with a token (--token or PAIJU_TOKEN)"
                )
            logs = await replayed_logs(args.engine, [*args.games, *args.game], token)
            return [(log, verdict_of(log)) for log in logs]
        exports = [Path(g) for g in args.games if export_file(Path(g)) is not None]
        if exports:
            if len(exports) != len(args.games) or args.game or args.table or args.tournament:
                raise AnalystError("verify either exports (FILE or folder) or games of the stream, not both")
            logs = [log for path in exports for log in export_logs(path)]
            return [(log, verdict_of(log)) for log in logs]
        game_ids = await _chosen_games(source, [*args.games, *args.game], args.table, args.tournament)
        async with game_store(source) as store:
            logs = await stored_logs(store, game_ids)
        return [(log, verdict_of(log)) for log in sorted(logs, key=lambda log: log.game_id)]

    try:
        verdicts = asyncio.run(checked())
    except AnalystError as e:
        return _fail("verify", e)
    for log, verdict in verdicts:
        sys.stdout.write("".join(line + "\n" for line in verdict_lines(log, verdict, details=args.details)))
    failed = sum(1 for _, verdict in verdicts if not verdict.ok)
    deals = sum(verdict.verified for _, verdict in verdicts)
    print(f"{deals} deal(s) of {len(verdicts)} game(s) verified, {failed} game(s) failed")
    return 1 if failed else 0


def run_export(args: argparse.Namespace) -> int:
    async def exported() -> Exported:
        source = _source(args)
        game_ids = await _chosen_games(source, args.game, args.table, args.tournament)
        return await export_games(
            game_ids,
            args.out,
            args.format,
            source=source,
            since=args.since,
            until=args.until,
            include_live=args.include_live,
            processes=args.processes,
        )

    try:
        done = asyncio.run(exported())
    except AnalystError as e:
        return _fail("export", e)
    names = ", ".join(str(f) for f in done.files)
    print(f"{done.deals} deals and {done.plays} plays of {done.games} games: {names}")
    if done.live_left_out:
        print(
            f"{done.live_left_out} game(s) still being played were left out: --include-live adds their public rows "
            "(what a spectator may see)"
        )
    return 0


def _time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time (e.g. 2026-05-01T18:00:00Z)") from None


def _streams(p: argparse.ArgumentParser, *, lobby: bool) -> None:
    d = Source.from_env()
    p.add_argument("--nats", default=d.url, metavar="URL", help=f"the NATS server (env NATS_URL; now {d.url})")
    p.add_argument("--stream", default=d.stream, help=f"the games' JetStream stream (default {d.stream})")
    p.add_argument("--prefix", default=d.prefix, help=f"the games' subject prefix (default {d.prefix})")
    if lobby:
        p.add_argument("--lobby-stream", default=d.lobby_stream, help=f"the lobby's stream (default {d.lobby_stream})")
        p.add_argument("--lobby-prefix", default=d.lobby_prefix, help=f"the lobby's prefix (default {d.lobby_prefix})")
        p.add_argument(
            "--tournaments-stream",
            default=d.tournaments_stream,
            help=f"the tournaments' stream ({d.tournaments_stream})",
        )
        p.add_argument(
            "--tournaments-prefix", default=d.tournaments_prefix, help=f"their prefix ({d.tournaments_prefix})"
        )
    else:
        p.set_defaults(
            lobby_stream=d.lobby_stream,
            lobby_prefix=d.lobby_prefix,
            tournaments_stream=d.tournaments_stream,
            tournaments_prefix=d.tournaments_prefix,
        )


def add_parsers(subparsers: Any) -> None:
    """Add the ``replay``, ``verify`` and ``export`` commands to an argparse sub-parser collection."""
    p = subparsers.add_parser(
        "replay",
        help="tell a game from its event stream, deal by deal, for a person",
        description=(
            "Print a game from the GAMES stream: every deal, round by round (砸六家) or trick by trick (拖拉机), "
            "each event after its version. An ended game is shown with every hand as dealt; a live game only "
            "as a spectator sees it. Exit 2 for an unknown game."
        ),
    )
    p.add_argument("game", help="the game id")
    p.add_argument("--at", type=int, metavar="VERSION", help="stop after this version and show the table there")
    _streams(p, lobby=True)  # the lobby stream names the players
    p.set_defaults(func=run_replay)

    p = subparsers.add_parser(
        "verify",
        help="check that every deal of games is the shuffle the engine committed to (docs/fairness.md)",
        description=(
            "Check the deals of the chosen games (--game, --table, --tournament, all repeatable; else every game of "
            "the stream): each revealed server seed matches the commitment recorded before the players "
            "contributed, and each deal's hands, first drawer, flipped card and rock-paper-scissors are exactly "
            "what the seed and the contributions give (protocol 2: every commitment before any reveal, each reveal "
            "checked against its commitment). Games dealt before fair dealing are 'not committed'; a deal not "
            "revealed yet (still being played) is listed as such, and so is a deal on the server seed alone (no "
            "contribution counted). Names the first event that fails. Verifies an export too (paiju verify FILE). "
            "Exit 0 when nothing failed, 1 when a game failed, 2 for an unknown game."
        ),
    )
    p.add_argument(
        "games",
        nargs="*",
        metavar="GAME",
        help="games to verify, or the files of a `paiju export` (its events file, another of its files, or its folder)",
    )
    p.add_argument("--game", action="append", default=[], metavar="ID", help="a game to verify (repeatable)")
    p.add_argument("--table", action="append", default=[], help="the games of this lobby table's matches (repeatable)")
    p.add_argument(
        "--tournament", action="append", default=[], metavar="ID", help="the games of this tournament (repeatable)"
    )
    p.add_argument(
        "--details", action="store_true", help="print each shuffle's commitment, contributions and revealed seed"
    )
    p.add_argument(
        "--engine",
        metavar="ADDRESS",
        help="read the named games' public Replay from this engine instead of the stream (what any player or "
        "spectator can read: whole once a game has ended), with --token",
    )
    p.add_argument("--token", help="the token for --engine: a player's or spectator's game token (or PAIJU_TOKEN)")
    _streams(p, lobby=True)
    p.set_defaults(func=run_verify)

    p = subparsers.add_parser(
        "export",
        help="write the deals, plays and events of games as JSON Lines, CSV or Parquet (deals.*, plays.*, events.*)",
        description=(
            "Write one row per deal (deals.jsonl|csv|parquet) and one per seat action (plays.*) of the chosen "
            "games, and every event of them (events.*: what `paiju verify FILE` checks): --game, --table and "
            "--tournament (all repeatable), else every game of the stream; "
            "--since/--until keep the deals that began in that range. " + LIVE_HELP
        ),
    )
    p.add_argument("--game", action="append", default=[], metavar="ID", help="a game to export (repeatable)")
    p.add_argument("--table", action="append", default=[], help="the games of this lobby table's matches (repeatable)")
    p.add_argument(
        "--tournament", action="append", default=[], metavar="ID", help="the games of this tournament (repeatable)"
    )
    p.add_argument("--since", type=_time, help="deals that began at or after this ISO 8601 time (UTC if no zone)")
    p.add_argument("--until", type=_time, help="deals that began before this ISO 8601 time (UTC if no zone)")
    p.add_argument("--format", choices=FORMATS, default="jsonl", help="the files' format (default jsonl)")
    p.add_argument("--out", type=Path, default=Path("."), metavar="DIR", help="the folder to write (default .)")
    p.add_argument("--include-live", action="store_true", help="also games not ended yet, their public rows only")
    p.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="every game: read and fold the stream's partitions in N processes at once (default 1)",
    )
    _streams(p, lobby=True)
    p.set_defaults(func=run_export)
