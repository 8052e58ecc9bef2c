"""Deals and plays of game logs as flat rows, and their files (JSON Lines, CSV or Parquet).

Row building is pure (`game_rows`, `export_rows`): logs in, rows out, the same for a game read from NATS
or from anywhere else. Every row has every column of its file (`DEAL_COLUMNS`, `PLAY_COLUMNS`) and only
scalar values, so the JSON Lines, CSV and Parquet files of one export hold the same rows (`read_rows` reads each
back). Columns that do not apply to a row's game are ``null`` (numbers) or empty (text). Players are in two
columns each: their id (``player``) and the name they were shown by (``name``, from the lobby; empty when
unknown).

Hidden information (hands as dealt, concealed 拖拉机 bids, 砸六家 tribute cards) is exported only for games
that have ended. Live games are left out unless asked for; then their rows hold only what a spectator may
see (`GameLog.shown`), hidden cards as ``hidden`` rows without cards, and their deal rows say ``public``; and only
as far as the table's spectator policy lets a spectator see (`paiju.tools.analyst.log.spectated`,
docs/rules/spectators.md): a delayed table's game up to its spectators' version, a closed table's game not at all.

A deal belongs to a time range by its first event (its dealing); ``since`` is inclusive, ``until`` not.
Order: games by id, deals by number, plays by version.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from paiju.rules import fair
from paiju.rules.cards import Card, format_cards
from paiju.tools.analyst.games import GAMES, MAX_SEATS
from paiju.tools.analyst.log import GameLog, recorded_at, spectated
from paiju.tools.analyst.people import Names, name_of
from paiju.tools.analyst.timeline import Moment, timeline

Row = dict[str, Any]
FORMATS = ("jsonl", "csv", "parquet")


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: type
    """``int`` (``None`` where it does not apply), ``bool`` or ``str`` (``""`` where it does not apply)."""


def _columns(*specs: tuple[str, type]) -> tuple[Column, ...]:
    return tuple(Column(name, kind) for name, kind in specs)


def _per_seat(prefix: str, kind: type) -> tuple[tuple[str, type], ...]:
    return tuple((f"{prefix}_{s}", kind) for s in range(MAX_SEATS))


DEAL_COLUMNS = _columns(
    ("game_id", str),
    ("game", str),
    ("deal", int),
    ("started", str),
    ("ended", str),
    ("complete", bool),
    ("public", bool),
    *_per_seat("player", str),
    *_per_seat("name", str),
    *_per_seat("hand", str),
    ("leader", int),
    # 砸六家 (§7-§8)
    ("order", str),
    ("caught", str),
    ("outcome", str),
    ("head_team", str),
    ("winners", str),
    ("team_points_a", int),
    ("team_points_b", int),
    *_per_seat("individual", int),
    # 拖拉机 (§8-§9)
    ("redeals", int),
    ("dealer", int),
    ("trump", str),
    ("level", str),
    ("attackers_points", int),
    ("winner", str),
    ("levels_up", int),
    ("level_a", str),
    ("level_b", str),
    # fair dealing (docs/fairness.md)
    ("fair_protocol", int),
    ("shuffle", int),
    ("commitment", str),
    ("server_seed", str),
    ("contributors", str),
    ("withheld", str),
)
"""A deal: when, who sat where, the hands as dealt (ended games only; the last dealing of a redealt 拖拉机
deal), and its result: 砸六家 finishing order, caught seats, outcome, team and individual points; 拖拉机
dealer, trump, level rank, attackers' points, winning side, levels up and the levels after. A fairly dealt deal:
the protocol version, the shuffle's number, its commitment and revealed server seed (hex, whole; empty until
revealed), the seats whose contribution counted and those that withheld theirs or revealed a mismatch (seat numbers
separated by spaces)."""

PLAY_COLUMNS = _columns(
    ("game_id", str),
    ("game", str),
    ("deal", int),
    ("stage", int),
    ("order", int),
    ("seat", int),
    ("player", str),
    ("name", str),
    ("action", str),
    ("cards", str),
    ("count", int),
    ("hidden", bool),
    ("detail", str),
    ("version", int),
    ("time", str),
)
"""A seat's action in a deal: ``stage`` is the round (砸六家) or trick (拖拉机), 0 before play; ``order`` the
action's place in the deal from 1. Actions: 砸六家 ``cut``, ``resist``, ``tribute``, ``pick``, ``return``,
``take_back``, ``play``, ``four_take``, ``pass``; 拖拉机 ``flip``, ``cut``, ``bid``, ``counter``, ``pass``,
``bid_or_pass`` / ``counter_or_pass`` (concealed in a live game), ``play``; both ``timeout`` (the engine's
default action follows), and the referee's ``penalty``, ``labour_reform``, then ``reform_choice``."""


EVENT_COLUMNS = _columns(
    ("game_id", str),
    ("game", str),
    ("version", int),
    ("time", str),
    ("kind", str),
    ("envelope", str),
)
"""Every stored event of an exported game, in version order, as `paiju verify FILE` and any verifier written from
docs/fairness.md read it: ``kind`` is the event's name in the contract (``seed_committed``, ``hands_dealt``,
``seats_assigned``, …), ``envelope`` the whole `Envelope` in the contract's JSON form (field names as in the
.proto files, bytes in base64), as a spectator sees it while the game is live (no hand, no deal seed), whole once
it has ended."""


@dataclass
class Rows:
    """The rows of an export."""

    deals: list[Row] = field(default_factory=list)
    plays: list[Row] = field(default_factory=list)
    live_left_out: int = 0
    """Games still being played that were left out (no ``include_live``)."""
    events: list[Row] = field(default_factory=list)
    """Every event of the games exported (those with a deal in the range)."""


# --- building rows (pure) -----------------------------------------------------------------------------------


def export_rows(
    logs: Iterable[GameLog],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    include_live: bool = False,
    names: Names | None = None,
    progress: Callable[[Iterable[GameLog]], Iterable[GameLog]] = lambda logs: logs,
) -> Rows:
    """The rows of the deals of ``logs`` that began in ``[since, until)``, games in id order; live games only
    with ``include_live`` (public rows); players named by ``names``. ``progress`` wraps the games as they are
    folded (a progress bar)."""
    since, until = _utc(since), _utc(until)
    rows = Rows()
    for log in progress(sorted(logs, key=lambda g: g.game_id)):
        if not log.ended and not include_live:
            rows.live_left_out += 1
            continue
        public = spectated(log)  # a live game: what its table lets a spectator see
        if public is None:
            rows.live_left_out += 1
            continue
        game = game_rows(public, names)
        kept = {d["deal"] for d in game.deals if _within(d["started"], since, until)}
        rows.deals += [d for d in game.deals if d["deal"] in kept]
        rows.plays += [p for p in game.plays if p["deal"] in kept]
        if kept:
            rows.events += game.events
    return rows


def _utc(when: datetime | None) -> datetime | None:
    """A time without a zone is taken as UTC (the engine records times in UTC)."""
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def _within(started: str, since: datetime | None, until: datetime | None) -> bool:
    when = datetime.fromisoformat(started)
    return (since is None or when >= since) and (until is None or when < until)


def game_rows(log: GameLog, names: Names | None = None) -> Rows:
    """Every deal and play of one game, shown as `GameLog.shown` allows, its players named by ``names``."""
    names = names or {}
    rows = Rows(events=event_rows(log))
    shuffles = _shuffles(log)
    deal: _Deal | None = None
    for moment in timeline(log):
        if moment.opens_deal:
            deal = _Deal(log, moment, names)
            deal.row.update(shuffles.get(moment.deal, {}))
            rows.deals.append(deal.row)
        if deal is None or moment.deal != deal.number:
            continue
        deal.see(moment)
        play = _play(log, moment, names)
        if play is not None:
            deal.actions += 1
            rows.plays.append({**play, "order": deal.actions})
    return rows


def event_rows(log: GameLog) -> list[Row]:
    """One row per stored event of ``log`` (`EVENT_COLUMNS`), each shown as `GameLog.shown` allows."""
    rows = []
    for envelope, event in zip(log.envelopes, log.events, strict=True):
        shown = log.shown(event)
        out = type(envelope)()
        out.CopyFrom(envelope)
        out.ClearField("command_digest")
        if shown is not event:
            getattr(out, log.rules.name).CopyFrom(log.rules.events.encode(shown))
        payload = out.WhichOneof("payload") or ""
        kind = getattr(out, payload).WhichOneof("event") if payload == log.rules.name else payload
        rows.append(
            {
                "game_id": log.game_id,
                "game": log.game,
                "version": envelope.version,
                "time": recorded_at(envelope).isoformat(),
                "kind": kind or "",
                "envelope": json_format.MessageToJson(out, preserving_proto_field_name=True, indent=None),
            }
        )
    return rows


def _seat_list(seats: Iterable[int]) -> str:
    return " ".join(str(s) for s in sorted(seats))


def _shuffles(log: GameLog) -> dict[int, Row]:
    """The fair-dealing columns of each deal of ``log`` (the last shuffle of a deal dealt again)."""
    found: dict[int, Row] = {}
    by_number: dict[int, Row] = {}
    for event in log.events:
        if isinstance(event, fair.SeedCommitted):
            row: Row = {"fair_protocol": 1, "shuffle": event.number, "commitment": event.commitment.hex()}
            by_number[event.number] = found[event.deal] = row
            row.update(server_seed="", contributors="", withheld="")
        elif isinstance(event, fair.SeedContributed) and event.number in by_number:
            row = by_number[event.number]
            row["contributors"] = _seat_list({*map(int, row["contributors"].split()), event.seat})
        elif isinstance(event, fair.RevealsClosed) and event.number in by_number:
            row = by_number[event.number]
            row.update(
                fair_protocol=2,
                contributors=_seat_list(event.contributors),
                withheld=_seat_list({*event.withheld, *event.mismatched}),
            )
        elif isinstance(event, fair.CommitsClosed) and event.number in by_number:
            by_number[event.number]["fair_protocol"] = 2
        elif isinstance(event, fair.SeedRevealed) and event.number in by_number:
            by_number[event.number]["server_seed"] = event.server_seed.hex()
    return found


def _times(moment: Moment) -> str:
    return recorded_at(moment.envelope).isoformat()


def _cards(log: GameLog, moment: Moment, cards: Iterable[Card] | None) -> str:
    """Cards in the card notation (docs/rules/README.md), sorted by the game's order: 砸六家 §2; 拖拉机 the deal's order
    once its trump is declared, before that plain suits then the cards trump in every deal."""
    if cards is None:
        return ""
    return format_cards(cards, GAMES[log.game].card_order(moment.state))


def _seats(values: Sequence[Any], empty: Any) -> list[Any]:
    return [*values, *([empty] * (MAX_SEATS - len(values)))]


class _Deal:
    """The row of one deal, filled in as its moments pass."""

    def __init__(self, log: GameLog, first: Moment, names: Names) -> None:
        self.log = log
        self.game = GAMES[log.game]
        self.number = first.deal
        self.actions = 0
        self.row: Row = {c.name: ("" if c.kind is str else False if c.kind is bool else None) for c in DEAL_COLUMNS}
        self.row.update(game_id=log.game_id, game=log.game, deal=first.deal, started=_times(first))
        self.row.update(public=not log.ended)
        for seat, player in enumerate(_seats(first.players, "")):
            self.row[f"player_{seat}"] = player
            self.row[f"name_{seat}"] = name_of(names, player) if player else ""
        self.row.update(self.game.deal_columns)

    def see(self, moment: Moment) -> None:
        hands = self.game.dealt(moment.shown)
        if hands is not None:
            for seat, hand in enumerate(_seats(hands, ())):
                self.row[f"hand_{seat}"] = _cards(self.log, moment, hand)
        else:
            self.game.deal_row(self.row, moment.shown)
        if moment.closes_deal:
            self.row.update(ended=_times(moment), complete=True)


def _play(log: GameLog, moment: Moment, names: Names) -> Row | None:
    """The play row of one moment (``None`` when it is no seat's action)."""
    found = GAMES[log.game].action(moment)
    if found is None:
        return None
    seat, action, cards, count, hidden, detail = found
    return {
        "game_id": log.game_id,
        "game": log.game,
        "deal": moment.deal,
        "stage": moment.stage,
        "order": 0,
        "seat": seat,
        "player": moment.players[seat],
        "name": name_of(names, moment.players[seat]) if moment.players[seat] else "",
        "action": action,
        "cards": _cards(log, moment, cards),
        "count": count,
        "hidden": hidden,
        "detail": detail,
        "version": moment.version,
        "time": _times(moment),
    }


# --- files ------------------------------------------------------------------------------------------------


FILES = {"deals": DEAL_COLUMNS, "plays": PLAY_COLUMNS, "events": EVENT_COLUMNS}


def write_rows(rows: Rows, out: Path, fmt: str) -> list[Path]:
    """Write ``deals.<fmt>``, ``plays.<fmt>`` and ``events.<fmt>`` into ``out`` (made when missing); the paths
    written."""
    if fmt not in FORMATS:
        raise ValueError(f"the format is one of {', '.join(FORMATS)}, not {fmt!r}")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in (("deals", rows.deals), ("plays", rows.plays), ("events", rows.events)):
        path = out / f"{name}.{fmt}"
        columns = [c.name for c in FILES[name]]
        if fmt == "parquet":
            _write_parquet(path, FILES[name], table)
            written.append(path)
            continue
        with path.open("w", encoding="utf-8", newline="") as f:
            if fmt == "jsonl":
                for row in table:
                    f.write(json.dumps({c: row[c] for c in columns}, ensure_ascii=False) + "\n")
            else:
                writer = csv.DictWriter(f, fieldnames=columns)
                writer.writeheader()
                writer.writerows({c: "" if row[c] is None else row[c] for c in columns} for row in table)
        written.append(path)
    return written


ARROW_TYPES = {int: "int64", bool: "bool_", str: "string"}
"""Each column kind as a Parquet (Arrow) type: integers nullable, text never null (empty where it does not apply)."""


def parquet_schema(columns: Sequence[Column]) -> Any:
    """The Arrow schema of a file's columns (docs/analysts.md, "The files", lists it)."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, getattr(pa, ARROW_TYPES[c.kind])(), nullable=c.kind is int) for c in columns])


def _write_parquet(path: Path, columns: Sequence[Column], table: list[Row]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = parquet_schema(columns)
    data = {c.name: [row[c.name] for row in table] for c in columns}
    pq.write_table(pa.table(data, schema=schema), path, compression="zstd")


def read_rows(path: Path) -> list[Row]:
    """The rows of an exported file (``deals`` or ``plays``: JSON Lines, CSV or Parquet), typed as the export made
    them."""
    name, fmt = path.stem, path.suffix.removeprefix(".")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        rows: list[Row] = pq.read_table(path).to_pylist()
        return rows
    with path.open(encoding="utf-8", newline="") as f:
        if fmt == "jsonl":
            return [json.loads(line) for line in f if line.strip()]
        kinds = {c.name: c.kind for c in FILES[name]}
        return [{k: _typed(v, kinds[k]) for k, v in row.items()} for row in csv.DictReader(f)]


def _typed(text: str, kind: type) -> Any:
    if kind is int:
        return int(text) if text else None
    if kind is bool:
        return text == "True"
    return text
