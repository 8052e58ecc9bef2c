"""Result sheets (成绩单) of a tournament round, as CSV for spreadsheets and as a printable HTML page.

Rules: `docs/rules/tractor.md` §10 (a result sheet per round (成绩单): round, date, table number, draw
number, team names, level difference, VP, remarks, and both teams' confirmations) and the sheet printed at the
end of the 4人6副牌 tournament rules
(拖拉机比赛成绩单: 第 轮 年 月 日; 桌号 | 签号 | 队名 | 级差 | 胜利分 | 备注; 胜队签名 / 负队签名).
The same sheet serves both games Paiju runs Swiss tournaments for: 拖拉机 (teams of 2) and 砸六家 (teams of 3).

Paiju decisions:
- **S-1**: for 砸六家 the "级差" column holds the team-points difference (D-ZLJ-7's team ledger) from the team's side;
  the printed page heads it 团体分差.
- **S-2**: victory points are `Decimal`s with one decimal place at most (a forfeit's average can be 17.5,
  D-TR-11), written in plain notation: `20`, `17.5` or `20.0`, never `2E+1` or `17.50`; never negative.

A sheet is checked when it is made: its lines are in table order, one line (a bye, D-TR-10) or two lines (a match)
per table, the two lines of a table carry opposite differences, a table of one line has difference 0, no team
appears twice, and a team's confirmation is made for that team by a timezone-aware UTC time.

CSV format (`sheet_csv` / `read_sheet_csv`, an exact inverse pair):
- RFC 4180 (comma, double quotes doubled inside quoted fields, CRLF between records; a field may hold commas,
  quotes and line breaks). The text has no byte order mark; write it with the `utf-8-sig` codec for spreadsheet
  programs that need one to read CJK text as UTF-8 (`read_sheet_csv` accepts a leading mark).
- One header row, each column named in Chinese and English (`桌号 table`), then one row per sheet line, in the
  sheet's order. The sheet's metadata (tournament id and name, game, round, date) is repeated on every row in the
  leading columns, so any row can be sorted, filtered or copied on its own. Columns: 赛事编号 tournament_id,
  赛事名称 tournament_name, 项目 game (`zlj` | `tractor`), 轮次 round, 日期 date (ISO 8601), 桌号 table,
  签号 draw, 队编号 team_id, 队名 team_name, 级差 difference (an integer from the team's side, S-1), 胜利分 vp
  (the Decimal's text), 备注 remarks, 确认人 confirmed_by (the player id), 确认时间 confirmed_at (ISO 8601 with
  its UTC offset; empty when the team has not confirmed).
- Free-text fields (ids, names, remarks, the confirming player) that begin with `=`, `+`, `-`, `@`, a tab, a
  carriage return or an apostrophe are written with one extra leading apostrophe, which spreadsheets take as
  "this cell is text" and hide, so a team named `=1+1` is never run as a formula; reading drops that apostrophe.
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import io
import itertools
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from paiju.scoring import games

GAMES: Final = tuple(games.GAMES)
"""The games Paiju runs tournaments for (each one's sheet title and difference heading: `paiju.scoring.games`)."""


class SheetError(ValueError):
    """A result sheet, or the CSV text of one, breaks the sheet's rules."""


@dataclass(frozen=True)
class Confirmation:
    """A team's confirmation of its line on the sheet (the printed sheet's signature)."""

    team_id: str
    player_id: str
    """Who confirmed for the team."""
    at: dt.datetime
    """When, timezone-aware UTC."""

    def __post_init__(self) -> None:
        if self.at.tzinfo is None or self.at.utcoffset() != dt.timedelta(0):
            raise SheetError(f"confirmation time {self.at.isoformat()} is not timezone-aware UTC")


@dataclass(frozen=True)
class SheetLine:
    """One team at one table; a bye (D-TR-10) is a table with one line."""

    table: int
    """桌号."""
    draw: int
    """签号: the team's draw number."""
    team_id: str
    team_name: str
    difference: int
    """级差 from this team's side: negative for the loser; 0 for a bye or a forfeit (S-1: team points for 砸六家)."""
    vp: Decimal
    """胜利分 (S-2)."""
    remarks: str
    """备注, e.g. "bye (D-TR-10)", "forfeit (D-TR-11)", "appeal upheld: ..."."""
    confirmation: Confirmation | None

    def __post_init__(self) -> None:
        if self.table < 1:
            raise SheetError(f"table number {self.table} is not positive")
        if self.draw < 1:
            raise SheetError(f"draw number {self.draw} of team {self.team_id!r} is not positive")
        if not self.team_id:
            raise SheetError(f"a line at table {self.table} has no team id")
        check_vp(self.vp)
        if self.confirmation is not None and self.confirmation.team_id != self.team_id:
            raise SheetError(
                f"team {self.confirmation.team_id!r} confirmed the line of team {self.team_id!r} at table {self.table}"
            )


@dataclass(frozen=True, slots=True)
class SheetDeal:
    """One deal of a game played at a table of the round, as the referee verifies it (docs/fairness.md): the
    commitment recorded before the deal and the server seed revealed after it (``None``: not revealed yet)."""

    table: int
    game_id: str
    number: int
    """The shuffle's number in its game."""
    deal: int
    commitment: bytes
    server_seed: bytes | None = None


@dataclass(frozen=True)
class ResultSheet:
    """The result sheet of one tournament round (§10)."""

    tournament_id: str
    tournament_name: str
    game: str
    """The game's name (one of `GAMES`)."""
    round: int
    date: dt.date
    """The round's date."""
    lines: tuple[SheetLine, ...]
    """In table order, the better-placed team of a table first."""
    deals: tuple[SheetDeal, ...] = ()
    """Each deal of the round's games with its commitment and revealed seed (games dealt fairly only), so a referee
    or an appeal can verify a deal without database access. The printed page lists them; the CSV does not."""

    def __post_init__(self) -> None:
        if self.game not in GAMES:
            raise SheetError(f"game {self.game!r} is not one of {', '.join(GAMES)}")
        if self.round < 1:
            raise SheetError(f"round {self.round} is not positive")
        if isinstance(self.date, dt.datetime):
            raise SheetError("a sheet's date is a date, not a date and time")
        if not self.lines:
            raise SheetError("a result sheet has at least one table")
        teams = [line.team_id for line in self.lines]
        if len(set(teams)) != len(teams):
            raise SheetError("a team appears on the sheet more than once")
        numbers = [line.table for line in self.lines]
        if numbers != sorted(numbers):
            raise SheetError("the sheet's lines are not in table order")
        for _, group in tables(self):
            if len(group) > 2:
                raise SheetError(f"table {group[0].table} has {len(group)} teams")
            if len(group) == 1 and group[0].difference != 0:
                raise SheetError(f"the lone team at table {group[0].table} has difference {group[0].difference}")
            if len(group) == 2 and group[0].difference != -group[1].difference:
                raise SheetError(f"the differences at table {group[0].table} are not opposite")


def check_vp(vp: Decimal) -> None:
    """S-2: finite, not negative, plain notation with one decimal place at most."""
    if not isinstance(vp, Decimal) or not vp.is_finite() or vp.is_signed():
        raise SheetError(f"victory points {vp!r} are not a finite, non-negative Decimal")
    exponent = vp.as_tuple().exponent
    if exponent not in (0, -1):
        raise SheetError(f"victory points {vp} have more than one decimal place or an exponent (S-2)")


def tables(sheet: ResultSheet) -> list[tuple[int, tuple[SheetLine, ...]]]:
    """The sheet's tables in order: each table number with its lines."""
    return [(table, tuple(group)) for table, group in itertools.groupby(sheet.lines, key=lambda line: line.table)]


def winner(group: tuple[SheetLine, ...]) -> SheetLine | None:
    """The winning team of a table: more VP, then the larger difference; None for a draw or a bye."""
    if len(group) != 2:
        return None
    first, second = group
    if (first.vp, first.difference) == (second.vp, second.difference):
        return None
    return max(group, key=lambda line: (line.vp, line.difference))


# --- CSV -------------------------------------------------------------------------------------------------------

COLUMNS: Final = (
    ("赛事编号", "tournament_id"),
    ("赛事名称", "tournament_name"),
    ("项目", "game"),
    ("轮次", "round"),
    ("日期", "date"),
    ("桌号", "table"),
    ("签号", "draw"),
    ("队编号", "team_id"),
    ("队名", "team_name"),
    ("级差", "difference"),
    ("胜利分", "vp"),
    ("备注", "remarks"),
    ("确认人", "confirmed_by"),
    ("确认时间", "confirmed_at"),
)
"""The CSV's columns, in order: (Chinese, English)."""

HEADER: Final = tuple(f"{chinese} {english}" for chinese, english in COLUMNS)

_TEXT_COLUMNS: Final = frozenset(
    {"tournament_id", "tournament_name", "team_id", "team_name", "remarks", "confirmed_by"}
)
_FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r", "'")
_INTEGER: Final = re.compile(r"-?[0-9]+")
_VP: Final = re.compile(r"[0-9]+(\.[0-9])?")


def _guard(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _unguard(text: str) -> str:
    return text[1:] if text.startswith("'") else text


def sheet_csv(sheet: ResultSheet) -> str:
    """The sheet as CSV text: a bilingual header row, then one row per line (format in the module docstring)."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(HEADER)
    for line in sheet.lines:
        confirmation = line.confirmation
        fields = {
            "tournament_id": sheet.tournament_id,
            "tournament_name": sheet.tournament_name,
            "game": sheet.game,
            "round": str(sheet.round),
            "date": sheet.date.isoformat(),
            "table": str(line.table),
            "draw": str(line.draw),
            "team_id": line.team_id,
            "team_name": line.team_name,
            "difference": str(line.difference),
            "vp": str(line.vp),
            "remarks": line.remarks,
            "confirmed_by": confirmation.player_id if confirmation else "",
            "confirmed_at": confirmation.at.isoformat() if confirmation else "",
        }
        writer.writerow(_guard(fields[name]) if name in _TEXT_COLUMNS else fields[name] for _, name in COLUMNS)
    return out.getvalue()


def read_sheet_csv(text: str) -> ResultSheet:
    """The sheet written by `sheet_csv` (its exact inverse); raises `SheetError` on any other text."""
    rows = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True))
    if not rows or tuple(rows[0]) != HEADER:
        raise SheetError("the first row is not the result sheet's header")
    records: list[dict[str, str]] = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(COLUMNS):
            raise SheetError(f"row {number} has {len(row)} fields, not {len(COLUMNS)}")
        records.append(
            {
                name: _unguard(field) if name in _TEXT_COLUMNS else field
                for (_, name), field in zip(COLUMNS, row, strict=True)
            }
        )
    if not records:
        raise SheetError("the CSV has no lines")
    metadata = ("tournament_id", "tournament_name", "game", "round", "date")
    first = records[0]
    for number, record in enumerate(records, start=2):
        for name in metadata:
            if record[name] != first[name]:
                raise SheetError(f"row {number}: {name} differs from the first row's")
    lines = tuple(_line(record, number) for number, record in enumerate(records, start=2))
    return ResultSheet(
        tournament_id=first["tournament_id"],
        tournament_name=first["tournament_name"],
        game=first["game"],
        round=_integer(first, "round", 2),
        date=_date(first["date"], 2),
        lines=lines,
    )


def _line(record: dict[str, str], number: int) -> SheetLine:
    confirmation = None
    if record["confirmed_at"]:
        confirmation = Confirmation(
            team_id=record["team_id"], player_id=record["confirmed_by"], at=_time(record["confirmed_at"], number)
        )
    elif record["confirmed_by"]:
        raise SheetError(f"row {number}: a confirming player without a confirmation time")
    if not _VP.fullmatch(record["vp"]):
        raise SheetError(f"row {number}: victory points {record['vp']!r} are not a number with one decimal at most")
    return SheetLine(
        table=_integer(record, "table", number),
        draw=_integer(record, "draw", number),
        team_id=record["team_id"],
        team_name=record["team_name"],
        difference=_integer(record, "difference", number),
        vp=Decimal(record["vp"]),
        remarks=record["remarks"],
        confirmation=confirmation,
    )


def _integer(record: dict[str, str], name: str, number: int) -> int:
    if not _INTEGER.fullmatch(record[name]):
        raise SheetError(f"row {number}: {name} {record[name]!r} is not an integer")
    return int(record[name])


def _date(text: str, number: int) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise SheetError(f"row {number}: date {text!r} is not an ISO 8601 date") from None


def _time(text: str, number: int) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise SheetError(f"row {number}: confirmation time {text!r} is not an ISO 8601 time") from None


# --- HTML ------------------------------------------------------------------------------------------------------

_STYLE: Final = """
@page { size: A4; margin: 15mm 12mm; }
html { color: #000; background: #fff; }
body {
  margin: 2em auto; max-width: 190mm;
  font-family: "Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei", "PingFang SC", "Microsoft YaHei",
    sans-serif;
  font-size: 11pt; line-height: 1.4;
}
header { text-align: center; margin-bottom: 1em; }
header .tournament { margin: 0; font-size: 12pt; }
h1 { margin: 0.2em 0; font-size: 18pt; letter-spacing: 0.1em; }
header .when { margin: 0; }
table.sheet { width: 100%; border-collapse: collapse; }
table.sheet th, table.sheet td { border: 1px solid #000; padding: 0.3em 0.5em; vertical-align: top; }
table.sheet th { font-weight: bold; white-space: nowrap; }
td.table, td.draw, td.difference, td.vp { text-align: center; white-space: nowrap; }
td.team, td.remarks { white-space: pre-wrap; overflow-wrap: anywhere; }
tbody.table-group { border-top: 2.5px solid #000; }
section.deals { margin-top: 1.5em; page-break-before: auto; font-size: 8pt; }
section.deals h2 { font-size: 11pt; margin: 0 0 0.3em; }
table.deal-list { width: 100%; border-collapse: collapse; }
table.deal-list th, table.deal-list td { border: 1px solid #000; padding: 0.15em 0.3em; vertical-align: top; }
table.deal-list td.hex { font-family: monospace; overflow-wrap: anywhere; }
tr.signatures td { border-top-style: dashed; }
.signature { display: inline-block; margin: 0.2em 2em 0.2em 0; white-space: pre-wrap; }
.signature .blank { display: inline-block; min-width: 8em; border-bottom: 1px solid #000; margin-right: 0.3em; }
.signature .confirmed { margin-right: 0.3em; }
.signature .signer::before { content: "（"; }
.signature .signer::after { content: "）"; }
@media print {
  body { margin: 0; max-width: none; }
  thead { display: table-header-group; }
  tbody.table-group, tbody.table-group tr { break-inside: avoid; page-break-inside: avoid; }
}
"""


def _text(value: object) -> str:
    return html.escape(str(value), quote=True)


def signature_role(line: SheetLine, group: tuple[SheetLine, ...]) -> str:
    """The signature's label: 胜队签名 / 负队签名 for a table with a winner, 签名 for a draw or a bye."""
    won = winner(group)
    if won is None:
        return "签名"
    return "胜队签名" if won is line else "负队签名"


def confirmation_time(at: dt.datetime) -> str:
    """A confirmation time as printed: UTC to the second."""
    return at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _signature(line: SheetLine, group: tuple[SheetLine, ...]) -> str:
    role = f'<span class="role">{signature_role(line, group)}：</span>'
    confirmation = line.confirmation
    if confirmation is None:
        mark = '<span class="blank"></span>'
    else:
        at = confirmation.at
        mark = (
            f'<span class="confirmed">已确认 <span class="player">{_text(confirmation.player_id)}</span> '
            f'<time datetime="{_text(at.isoformat())}">{_text(confirmation_time(at))}</time></span>'
        )
    return (
        f'<div class="signature" data-team-id="{_text(line.team_id)}">{role}{mark}'
        f'<span class="signer">{_text(line.team_name)}</span></div>'
    )


def _difference(value: int) -> str:
    return f"{value:+d}" if value else "0"


def _table_group(table: int, group: tuple[SheetLine, ...]) -> str:
    rows = []
    for index, line in enumerate(group):
        table_cell = f'<td class="table" rowspan="{len(group) + 1}">{table}</td>' if index == 0 else ""
        rows.append(
            f'<tr class="line" data-team-id="{_text(line.team_id)}">{table_cell}'
            f'<td class="draw">{line.draw}</td>'
            f'<td class="team">{_text(line.team_name)}</td>'
            f'<td class="difference">{_difference(line.difference)}</td>'
            f'<td class="vp">{_text(line.vp)}</td>'
            f'<td class="remarks">{_text(line.remarks)}</td></tr>'
        )
    signatures = "".join(_signature(line, group) for line in group)
    rows.append(f'<tr class="signatures"><td colspan="5">{signatures}</td></tr>')
    return f'<tbody class="table-group" data-table="{table}">\n' + "\n".join(rows) + "\n</tbody>"


def _deals_section(deals: tuple[SheetDeal, ...]) -> str:
    """The deals' commitments and seeds (nothing for a round without fair deals)."""
    if not deals:
        return ""
    rows = "\n".join(
        f'<tr class="deal" data-game-id="{_text(d.game_id)}"><td>{d.table}</td><td>{_text(d.game_id)}</td>'
        f'<td>{d.deal}</td><td class="hex">{d.commitment.hex()}</td>'
        f'<td class="hex">{d.server_seed.hex() if d.server_seed is not None else "未公开 not revealed"}</td></tr>'
        for d in deals
    )
    return f"""<section class="deals">
<h2>发牌验证 Deal verification</h2>
<p>Each deal's commitment was recorded before the players contributed; its seed was revealed after the deal.
SHA-256("paiju-seed-commitment-v1" || seed) must equal the commitment, and the game's replay must deal the seed and
the recorded contributions into the recorded hands (paiju verify; docs/fairness.md).</p>
<table class="deal-list">
<thead><tr><th>桌号</th><th>牌局 game</th><th>盘 deal</th><th>承诺 commitment</th><th>种子 seed</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>
</section>
"""


def sheet_html(sheet: ResultSheet) -> str:
    """The sheet as one self-contained printable page (inline CSS, no scripts, no external resources, A4)."""
    game = games.GAMES[sheet.game]
    title = game.sheet_title
    day = sheet.date
    headings = ("桌号", "签号", "队名", game.difference_heading, "胜利分", "备注")
    head = "".join(f"<th>{heading}</th>" for heading in headings)
    body = "\n".join(_table_group(table, group) for table, group in tables(sheet))
    deals = _deals_section(sheet.deals)
    return f"""<!DOCTYPE html>
<html lang="zh">
<head>
<meta charset="utf-8">
<title>{title} 第{sheet.round}轮 · {_text(sheet.tournament_name)}</title>
<style>{_STYLE}</style>
</head>
<body>
<header>
<p class="tournament">{_text(sheet.tournament_name)}</p>
<h1>{title}</h1>
<p class="when">第 <span class="round">{sheet.round}</span> 轮　<time class="date" datetime="{day.isoformat()}">\
{day.year}年{day.month}月{day.day}日</time></p>
</header>
<table class="sheet">
<thead><tr>{head}</tr></thead>
{body}
</table>
{deals}</body>
</html>
"""
