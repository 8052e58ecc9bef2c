"""Deals and plays of game logs as flat rows, and their files (JSON Lines or CSV).

Row building is pure (`game_rows`, `export_rows`): logs in, rows out, the same for a game read from NATS
or from anywhere else. Every row has every column of its file (`DEAL_COLUMNS`, `PLAY_COLUMNS`) and only
scalar values, so the JSON Lines and CSV files of one export hold the same rows (`read_rows` reads either
back). Columns that do not apply to a row's game are ``null`` (numbers) or empty (text).

Hidden information (hands as dealt, concealed 拖拉机 bids, 砸六家 tribute cards) is exported only for games
that have ended. Live games are left out unless asked for; then their rows hold only what a spectator may
see (`GameLog.shown`), hidden cards as ``hidden`` rows without cards, and their deal rows say ``public``.

A deal belongs to a time range by its first event (its dealing); ``since`` is inclusive, ``until`` not.
Order: games by id, deals by number, plays by version.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from paiju.rules.cards import Card, format_cards
from paiju.rules.tractor import model as tm
from paiju.rules.tractor.settlement import level_name
from paiju.rules.tractor.view import view as tractor_view
from paiju.rules.zlj import model as zm
from paiju.rules.zlj.combos import order as zlj_order
from paiju.terminal.client.render import SUIT_WORDS, tractor_order
from paiju.tools.analyst.log import GameLog, recorded_at
from paiju.tools.analyst.timeline import Moment, timeline

Row = dict[str, Any]
MAX_SEATS = 6
FORMATS = ("jsonl", "csv")


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
)
"""A deal: when, who sat where, the hands as dealt (ended games only; the last dealing of a redealt 拖拉机
deal), and its result: 砸六家 finishing order, caught seats, outcome, team and individual points; 拖拉机
dealer, trump, level rank, attackers' points, winning side, levels up and the levels after."""

PLAY_COLUMNS = _columns(
    ("game_id", str),
    ("game", str),
    ("deal", int),
    ("stage", int),
    ("order", int),
    ("seat", int),
    ("player", str),
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


@dataclass
class Rows:
    """The rows of an export."""

    deals: list[Row] = field(default_factory=list)
    plays: list[Row] = field(default_factory=list)


# --- building rows (pure) -----------------------------------------------------------------------------------


def export_rows(
    logs: Iterable[GameLog],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    include_live: bool = False,
) -> Rows:
    """The rows of the deals of ``logs`` that began in ``[since, until)``, games in id order; live games only
    with ``include_live`` (public rows)."""
    since, until = _utc(since), _utc(until)
    rows = Rows()
    for log in sorted(logs, key=lambda g: g.game_id):
        if not log.ended and not include_live:
            continue
        game = game_rows(log)
        kept = {d["deal"] for d in game.deals if _within(d["started"], since, until)}
        rows.deals += [d for d in game.deals if d["deal"] in kept]
        rows.plays += [p for p in game.plays if p["deal"] in kept]
    return rows


def _utc(when: datetime | None) -> datetime | None:
    """A time without a zone is taken as UTC (the engine records times in UTC)."""
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def _within(started: str, since: datetime | None, until: datetime | None) -> bool:
    when = datetime.fromisoformat(started)
    return (since is None or when >= since) and (until is None or when < until)


def game_rows(log: GameLog) -> Rows:
    """Every deal and play of one game, shown as `GameLog.shown` allows."""
    rows = Rows()
    deal: _Deal | None = None
    for moment in timeline(log):
        if moment.opens_deal:
            deal = _Deal(log, moment)
            rows.deals.append(deal.row)
        if deal is None or moment.deal != deal.number:
            continue
        deal.see(moment)
        play = _play(log, moment)
        if play is not None:
            deal.actions += 1
            rows.plays.append({**play, "order": deal.actions})
    return rows


def _times(moment: Moment) -> str:
    return recorded_at(moment.envelope).isoformat()


def _cards(log: GameLog, moment: Moment, cards: Iterable[Card] | None) -> str:
    """Cards in the card notation (docs/rules/README.md), sorted by the game's order: 砸六家 §2; 拖拉机 the deal's order
    once its trump is declared, before that plain suits then the cards trump in every deal."""
    if cards is None:
        return ""
    if log.game == "zlj":
        return format_cards(cards, zlj_order)
    return format_cards(cards, tractor_order(tractor_view(moment.state, None)))


def _seats(values: Sequence[Any], empty: Any) -> list[Any]:
    return [*values, *([empty] * (MAX_SEATS - len(values)))]


class _Deal:
    """The row of one deal, filled in as its moments pass."""

    def __init__(self, log: GameLog, first: Moment) -> None:
        self.log = log
        self.number = first.deal
        self.actions = 0
        self.row: Row = {c.name: ("" if c.kind is str else False if c.kind is bool else None) for c in DEAL_COLUMNS}
        self.row.update(game_id=log.game_id, game=log.game, deal=first.deal, started=_times(first))
        self.row.update(public=not log.ended)
        for seat, player in enumerate(_seats(first.players, "")):
            self.row[f"player_{seat}"] = player
        if log.game == "tractor":
            self.row["redeals"] = 0

    def see(self, moment: Moment) -> None:
        event, row = moment.shown, self.row
        if isinstance(event, zm.HandsDealt | tm.HandsDealt):
            for seat, hand in enumerate(_seats(event.hands, ())):
                row[f"hand_{seat}"] = _cards(self.log, moment, hand)
        elif isinstance(event, zm.PlayStarted):
            row["leader"] = event.leader
        elif isinstance(event, tm.DealVoided):
            row["redeals"] += 1
        elif isinstance(event, tm.TrumpDeclared):
            row.update(
                dealer=event.dealer, leader=event.dealer, trump=event.trump.letter, level=level_name(event.level)
            )
        elif isinstance(event, zm.DealEnded):
            self._zlj_result(event.result)
        elif isinstance(event, tm.DealSettled):
            row.update(
                attackers_points=event.attackers_points,
                winner=event.winner,
                levels_up=event.levels_up,
                level_a=level_name(event.levels[0]),
                level_b=level_name(event.levels[1]),
            )
        if moment.closes_deal:
            row.update(ended=_times(moment), complete=True)

    def _zlj_result(self, result: zm.DealResult) -> None:
        self.row.update(
            order=" ".join(str(s) for s in result.order),
            caught=" ".join(str(s) for s in result.caught),
            outcome=result.outcome.value,
            head_team=result.head_team.value,
            winners=result.winners.value if result.winners is not None else "",
            team_points_a=result.team_points[0],
            team_points_b=result.team_points[1],
        )
        for seat, points in enumerate(result.individual):
            self.row[f"individual_{seat}"] = points


def _play(log: GameLog, moment: Moment) -> Row | None:
    """The play row of one moment (``None`` when it is no seat's action)."""
    found = _action(log.game, moment)
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
        "action": action,
        "cards": _cards(log, moment, cards),
        "count": count,
        "hidden": hidden,
        "detail": detail,
        "version": moment.version,
        "time": _times(moment),
    }


Action = tuple[int, str, Sequence[Card] | None, int, bool, str]
"""(seat, action, cards or ``None`` when hidden, number of cards, hidden, detail)."""


def _shown(seat: int, action: str, cards: Sequence[Card], detail: str = "") -> Action:
    return (seat, action, cards, len(cards), False, detail)


def _action(game: str, moment: Moment) -> Action | None:
    return _zlj_action(moment) if game == "zlj" else _tractor_action(moment)


def _zlj_action(moment: Moment) -> Action | None:
    e = moment.shown
    if isinstance(e, zm.HandsDealt):
        return None if e.cutter is None else _shown(e.cutter, "cut", (), f"cut {e.cut}")
    if isinstance(e, zm.TributeResisted):
        return _shown(e.seat, "resist", e.cards)
    if isinstance(e, zm.TributeGiven | zm.TributePicked | zm.TributeReturned | zm.ReturnTakenBack):
        action = ZLJ_TRIBUTE[type(e)]
        return (e.seat, action, e.cards, e.count, e.cards is None, "")
    if isinstance(e, zm.CardsPlayed):
        return _shown(e.seat, "play", e.cards, e.combo.describe())
    if isinstance(e, zm.FourTake):
        taken = format_cards(e.taken, zlj_order)
        return _shown(e.seat, "four_take", e.fours, f"takes {taken} from seat {e.taken_from}")
    if isinstance(e, zm.Passed):
        return _shown(e.seat, "pass", ())
    if isinstance(e, zm.TurnTimedOut):
        return _shown(e.seat, "timeout", ())
    return None


ZLJ_TRIBUTE = {
    zm.TributeGiven: "tribute",
    zm.TributePicked: "pick",
    zm.TributeReturned: "return",
    zm.ReturnTakenBack: "take_back",
}


def _tractor_action(moment: Moment) -> Action | None:
    e = moment.shown
    if isinstance(e, tm.CardFlipped):
        return _shown(e.flipper, "flip", (e.card,), f"seat {e.first_drawer} draws first")
    if isinstance(e, tm.HandsDealt):
        return None if e.cut is None else _shown(e.first_drawer, "cut", (), f"cut {e.cut}")
    if isinstance(e, tm.BidEntered):
        return _bid(e, "counter" if moment.state.phase is tm.Phase.COUNTER else "bid")
    if isinstance(e, tm.CardsPlayed):
        trick = moment.state.trick
        lead = f"leads {trick.lead.describe()}" if trick is not None and len(trick.plays) == 1 else ""
        return _shown(e.seat, "play", e.cards, lead)
    if isinstance(e, tm.TurnTimedOut):
        return _shown(e.seat, "timeout", ())
    if isinstance(e, tm.PenaltyRecorded):
        return _shown(e.offender, "penalty", (), f"referee {e.referee}: {e.points:+d} to the attackers")
    if isinstance(e, tm.LabourReformDeclared):
        return _shown(e.offender, "labour_reform", (), f"referee {e.referee}")
    if isinstance(e, tm.LabourReformChosen):
        return _shown(e.seat, "reform_choice", (), e.choice.value)
    return None


def _bid(e: tm.BidEntered, stage: str) -> Action:
    timer = "turn timer" if e.timed_out else ""
    if e.concealed:
        return (e.seat, f"{stage}_or_pass", None, 0, True, timer)
    if e.bid is None:
        return _shown(e.seat, "pass", (), ", ".join(w for w in (stage, timer) if w))
    detail = f"{SUIT_WORDS[e.bid.suit]}, {e.bid.count} level card(s)"
    return _shown(e.seat, stage, e.bid.cards, detail)


# --- files ------------------------------------------------------------------------------------------------


FILES = {"deals": DEAL_COLUMNS, "plays": PLAY_COLUMNS}


def write_rows(rows: Rows, out: Path, fmt: str) -> list[Path]:
    """Write ``deals.<fmt>`` and ``plays.<fmt>`` into ``out`` (made when missing); the paths written."""
    if fmt not in FORMATS:
        raise ValueError(f"the format is one of {', '.join(FORMATS)}, not {fmt!r}")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in (("deals", rows.deals), ("plays", rows.plays)):
        path = out / f"{name}.{fmt}"
        columns = [c.name for c in FILES[name]]
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


def read_rows(path: Path) -> list[Row]:
    """The rows of an exported file (``deals`` or ``plays``, JSON Lines or CSV), typed as the export made them."""
    name, fmt = path.stem, path.suffix.removeprefix(".")
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
