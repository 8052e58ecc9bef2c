"""Result sheets (成绩单, docs/rules/tractor.md §10; decisions S-1 and S-2 in `paiju.scoring.sheets`).

The CSV must read back to the very sheet it was written from; the HTML page is rendered by Debian's headless
Chromium and the rendered DOM is read back with the standard library's html.parser, and printed to an A4 PDF.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paiju.scoring.sheets import (
    GAMES,
    Confirmation,
    ResultSheet,
    SheetError,
    SheetLine,
    read_sheet_csv,
    sheet_csv,
    sheet_html,
)

from ..support.chromium import chromium_binary
from ..support.profiles import examples

UTC = dt.UTC
SCRIPT_NAME = "<script>alert(1)</script>"
NEWLINE_NAME = "西城, 队\n第二行"
QUOTED_NAME = "A&B \"双引号\" '单引号' </td>"


def confirmed(team_id: str, player_id: str, minute: int, microsecond: int = 0, day: int = 1) -> Confirmation:
    """A confirmation on the evening of the round, May `day` 2024."""
    return Confirmation(team_id, player_id, dt.datetime(2024, 5, day, 21, minute, 7, microsecond, tzinfo=UTC))


TRACTOR = ResultSheet(
    tournament_id="t-2024-spring",
    tournament_name='2024 春季拖拉机积分赛, "公开组"',
    game="tractor",
    round=3,
    date=dt.date(2024, 5, 1),
    lines=(
        # table 1: won by 3 levels (15+3 : 15-3), the winner confirmed, the loser not yet
        SheetLine(1, 4, "east", SCRIPT_NAME, 3, Decimal(18), "", confirmed("east", "p-1", 3, 123456)),
        SheetLine(1, 9, "west", NEWLINE_NAME, -3, Decimal(12), "", None),
        # table 2: a forfeit (D-TR-11): the team that stays gets the larger of 20 and its average per earlier round
        SheetLine(2, 2, "south", "南方队", 0, Decimal("22.5"), "forfeit (D-TR-11)", confirmed("south", "p-9", 5)),
        SheetLine(2, 7, "north", QUOTED_NAME, 0, Decimal(0), "forfeit (D-TR-11)", None),
        # table 3: a drawn match (15:15), both confirmed
        SheetLine(3, 1, "jia", "甲队", 0, Decimal(15), "", confirmed("jia", "p-3", 9)),
        SheetLine(3, 3, "yi", "=1+1", 0, Decimal(15), "appeal upheld: 第2盘重打", confirmed("yi", "'p-4", 10)),
        # table 4: the odd team out (D-TR-10)
        SheetLine(4, 5, "bye", "轮空队", 0, Decimal(20), "bye (D-TR-10)", None),
    ),
)

ZLJ = ResultSheet(
    tournament_id="z-7",
    tournament_name="砸六家 联赛",
    game="zlj",
    round=1,
    date=dt.date(2024, 5, 2),
    lines=(
        # S-1: the difference is the team-points difference
        SheetLine(1, 6, "red", "红队", 12, Decimal("17.5"), "", confirmed("red", "r-1", 1, day=2)),
        SheetLine(1, 2, "blue", "蓝队", -12, Decimal("12.5"), "", confirmed("blue", "b-2", 2, day=2)),
    ),
)


# --- the sheet's own rules --------------------------------------------------------------------------------------


def test_vp_keep_one_decimal_place_at_most() -> None:
    line = TRACTOR.lines[6]
    for vp in (Decimal(20), Decimal("17.5"), Decimal("20.0"), Decimal(0)):
        assert replace(line, vp=vp).vp == vp
    for vp in (Decimal("17.55"), Decimal("2E+1"), Decimal("-1"), Decimal("-0"), Decimal("NaN"), Decimal("Infinity")):
        with pytest.raises(SheetError):
            replace(line, vp=vp)


def test_a_sheet_is_checked_when_it_is_made() -> None:
    first, second = ZLJ.lines
    bad_lines = [
        (),  # no table
        (first, replace(second, difference=-11)),  # differences not opposite
        (replace(first, table=2), second),  # not in table order
        (first, replace(second, team_id="red", confirmation=None)),  # a team twice
        (first, second, replace(second, team_id="green", confirmation=None)),  # three teams at one table
        (replace(first, table=2, difference=5, confirmation=None),),  # a lone team with a difference
    ]
    for lines in bad_lines:
        with pytest.raises(SheetError):
            replace(ZLJ, lines=lines)
    for changes in ({"game": "bridge"}, {"round": 0}, {"date": dt.datetime(2024, 5, 2, tzinfo=UTC)}):
        with pytest.raises(SheetError):
            replace(ZLJ, **changes)


def test_a_confirmation_is_utc_and_made_for_its_own_team() -> None:
    with pytest.raises(SheetError):
        Confirmation("red", "r-1", dt.datetime(2025, 1, 9, 20, 0))
    with pytest.raises(SheetError):
        Confirmation("red", "r-1", dt.datetime(2025, 1, 9, 20, 0, tzinfo=dt.timezone(dt.timedelta(hours=8))))
    with pytest.raises(SheetError):
        replace(ZLJ.lines[0], confirmation=confirmed("blue", "b-2", 1))


# --- CSV --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sheet", [TRACTOR, ZLJ], ids=["tractor", "zlj"])
def test_csv_reads_back_to_the_same_sheet(sheet: ResultSheet) -> None:
    assert read_sheet_csv(sheet_csv(sheet)) == sheet


def test_csv_is_one_row_per_line_with_the_metadata_on_every_row() -> None:
    text = sheet_csv(TRACTOR)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, body = rows[0], rows[1:]
    assert [cell.split(" ")[0] for cell in header][5:12] == ["桌号", "签号", "队编号", "队名", "级差", "胜利分", "备注"]
    assert "table" in header[5] and "vp" in header[10]
    assert len(body) == len(TRACTOR.lines)
    for row, line in zip(body, TRACTOR.lines, strict=True):
        assert row[:5] == ["t-2024-spring", '2024 春季拖拉机积分赛, "公开组"', "tractor", "3", "2024-05-01"]
        assert row[5:8] == [str(line.table), str(line.draw), line.team_id]
    assert body[1][8] == NEWLINE_NAME
    assert body[0][9:] == ["3", "18", "", "p-1", "2024-05-01T21:03:07.123456+00:00"]
    assert body[1][9:] == ["-3", "12", "", "", ""]
    assert body[2][10:12] == ["22.5", "forfeit (D-TR-11)"]
    # a name a spreadsheet would run as a formula is kept as text; an apostrophe of the name itself survives
    assert body[5][8] == "'=1+1"
    assert body[5][12] == "''p-4"


def test_csv_is_accepted_with_a_byte_order_mark() -> None:
    assert read_sheet_csv("\ufeff" + sheet_csv(ZLJ)) == ZLJ


def test_csv_that_is_not_a_sheet_is_rejected() -> None:
    text = sheet_csv(ZLJ)
    header, first, second = text.split("\r\n")[:3]
    broken = [
        "",
        header + "\r\n",  # no lines
        "桌号,签号\r\n" + first + "\r\n",  # another header
        "\r\n".join([header, first, second.replace("z-7", "z-8", 1)]),  # the metadata differs between rows
        "\r\n".join([header, first.replace("17.5", "17.55"), second]),  # S-2
        "\r\n".join([header, first.replace(",12,", ",twelve,"), second]),
        "\r\n".join([header, first + ",extra", second]),
        "\r\n".join([header, first.replace("2024-05-02T", "yesterday "), second]),
    ]
    for text in broken:
        with pytest.raises(SheetError):
            read_sheet_csv(text)


# text with what CSV, spreadsheets and HTML treat specially: separators, quotes, line breaks, formula starts, markup
TRICKY = [*",\"'\n\r\t=+-@<>&;", "\r\n", "<b>", "</td>", "<script>", "&amp;", "&lt;", "桌号", "队"]
names = st.lists(st.one_of(st.characters(exclude_categories=["Cs"]), st.sampled_from(TRICKY)), max_size=8).map("".join)
vps = st.one_of(
    st.integers(min_value=0, max_value=40).map(Decimal),
    st.decimals(min_value=0, max_value=40, places=1, allow_nan=False, allow_infinity=False).filter(
        lambda vp: not vp.is_signed()
    ),
)
times = st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1), timezones=st.just(UTC)).map(
    lambda at: at.astimezone(UTC)
)


@st.composite
def sheets(draw: st.DrawFn) -> ResultSheet:
    numbers = sorted(draw(st.lists(st.integers(min_value=1, max_value=99), min_size=1, max_size=5, unique=True)))
    sizes = [draw(st.integers(min_value=1, max_value=2)) for _ in numbers]
    teams = draw(st.lists(names.filter(bool), min_size=sum(sizes), max_size=sum(sizes), unique=True))
    lines: list[SheetLine] = []
    for number, size in zip(numbers, sizes, strict=True):
        difference = draw(st.integers(min_value=-30, max_value=30)) if size == 2 else 0
        for side in range(size):
            team = teams[len(lines)]
            confirmation = draw(st.none() | st.builds(Confirmation, st.just(team), names, times))
            lines.append(
                SheetLine(
                    table=number,
                    draw=draw(st.integers(min_value=1, max_value=200)),
                    team_id=team,
                    team_name=draw(names),
                    difference=difference if side == 0 else -difference,
                    vp=draw(vps),
                    remarks=draw(names),
                    confirmation=confirmation,
                )
            )
    return ResultSheet(
        tournament_id=draw(names),
        tournament_name=draw(names),
        game=draw(st.sampled_from(GAMES)),
        round=draw(st.integers(min_value=1, max_value=30)),
        date=draw(st.dates()),
        lines=tuple(lines),
    )


@settings(derandomize=True, max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sheets())
def test_any_sheet_reads_back_from_its_csv_and_its_page_shows_every_name_as_text(sheet: ResultSheet) -> None:
    assert read_sheet_csv(sheet_csv(sheet)) == sheet
    page = parse(sheet_html(sheet))
    assert [cell.text() for cell in page.find_all("td", "team")] == [line.team_name for line in sheet.lines]
    assert [cell.text() for cell in page.find_all("td", "remarks")] == [line.remarks for line in sheet.lines]
    assert not list(page.find_all("script"))


# --- the page, without a browser --------------------------------------------------------------------------------


def test_the_page_is_self_contained() -> None:
    page = sheet_html(TRACTOR)
    assert page.startswith("<!DOCTYPE html>")
    for reference in ("<script", "src=", "href=", "url(", "@import", "<link", "http:", "https:"):
        assert reference not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "@media print" in page and "size: A4" in page


# --- the page in headless Chromium ------------------------------------------------------------------------------


def run_chromium(page: Path, *flags: str) -> str:
    """Headless Chromium on a page file; its standard output."""
    with tempfile.TemporaryDirectory(prefix="paiju-chromium-") as profile:
        result = subprocess.run(
            [
                chromium_binary(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                f"--user-data-dir={profile}",
                *flags,
                page.as_uri(),
            ],
            capture_output=True,
            timeout=30,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode()


def rendered(sheet: ResultSheet, folder: Path) -> Element:
    page = folder / "sheet.html"
    page.write_text(sheet_html(sheet), encoding="utf-8")
    return parse(run_chromium(page, "--dump-dom"))


@dataclass
class Element:
    """An element of a parsed page: enough of a DOM to read a rendered sheet back."""

    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)

    def iter(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, tag: str, cls: str | None = None) -> Iterator[Element]:
        for element in self.iter():
            if element.tag == tag and (cls is None or cls in element.attrs.get("class", "").split()):
                yield element

    def find(self, tag: str, cls: str | None = None) -> Element:
        found = list(self.find_all(tag, cls))
        assert len(found) == 1, f"{len(found)} <{tag} class={cls}> elements"
        return found[0]


VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.open = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.open[-1].children.append(element)
        if tag not in VOID:
            self.open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.open[-1].children.append(Element(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.open) - 1, 0, -1):
            if self.open[depth].tag == tag:
                del self.open[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.open[-1].children.append(data)


def parse(page: str) -> Element:
    builder = _TreeBuilder()
    builder.feed(page)
    builder.close()
    return builder.root


def signed(difference: int) -> str:
    return f"+{difference}" if difference > 0 else str(difference)


def check_page(dom: Element, sheet: ResultSheet, title: str, difference_heading: str) -> None:
    html_element = dom.find("html")
    assert html_element.attrs["lang"] == "zh"
    assert dom.find("meta").attrs["charset"].lower() == "utf-8"
    assert dom.find("title").text() == f"{title} 第{sheet.round}轮 · {sheet.tournament_name}"
    assert dom.find("h1").text() == title
    assert dom.find("p", "tournament").text() == sheet.tournament_name
    assert dom.find("span", "round").text() == str(sheet.round)
    day = dom.find("time", "date")
    assert day.attrs["datetime"] == sheet.date.isoformat()
    assert day.text() == f"{sheet.date.year}年{sheet.date.month}月{sheet.date.day}日"
    headings = [cell.text() for cell in dom.find("thead").find_all("th")]
    assert headings == ["桌号", "签号", "队名", difference_heading, "胜利分", "备注"]
    for tag in ("script", "img", "link", "iframe", "object", "embed"):
        assert not list(dom.find_all(tag)), tag


def read_groups(dom: Element) -> list[tuple[str, list[list[str]], list[tuple[str, str, str, str, str]]]]:
    """Each table group: its table number, its rows' cells, and its signatures (team id, role, player, time, team)."""
    groups = []
    for group in dom.find_all("tbody", "table-group"):
        rows = [[cell.text() for cell in row.find_all("td")] for row in group.find_all("tr", "line")]
        signatures = []
        for signature in group.find_all("div", "signature"):
            confirmations = list(signature.find_all("span", "confirmed"))
            blanks = list(signature.find_all("span", "blank"))
            assert len(confirmations) + len(blanks) == 1
            player, at = "", ""
            if confirmations:
                player = confirmations[0].find("span", "player").text()
                at = confirmations[0].find("time").attrs["datetime"]
            role = signature.find("span", "role").text()
            signatures.append(
                (signature.attrs["data-team-id"], role, player, at, signature.find("span", "signer").text())
            )
        groups.append((group.attrs["data-table"], rows, signatures))
    return groups


@pytest.mark.e2e
def test_the_tractor_sheet_renders_in_chromium(tmp_path: Path) -> None:
    dom = rendered(TRACTOR, tmp_path)
    check_page(dom, TRACTOR, "拖拉机比赛成绩单", "级差")
    assert read_groups(dom) == [
        (
            "1",
            [["1", "4", SCRIPT_NAME, "+3", "18", ""], ["9", NEWLINE_NAME, "-3", "12", ""]],
            [
                ("east", "胜队签名：", "p-1", "2024-05-01T21:03:07.123456+00:00", SCRIPT_NAME),
                ("west", "负队签名：", "", "", NEWLINE_NAME),
            ],
        ),
        (
            "2",
            [["2", "2", "南方队", "0", "22.5", "forfeit (D-TR-11)"], ["7", QUOTED_NAME, "0", "0", "forfeit (D-TR-11)"]],
            [
                ("south", "胜队签名：", "p-9", "2024-05-01T21:05:07+00:00", "南方队"),
                ("north", "负队签名：", "", "", QUOTED_NAME),
            ],
        ),
        (
            "3",
            [["3", "1", "甲队", "0", "15", ""], ["3", "=1+1", "0", "15", "appeal upheld: 第2盘重打"]],
            [
                ("jia", "签名：", "p-3", "2024-05-01T21:09:07+00:00", "甲队"),
                ("yi", "签名：", "'p-4", "2024-05-01T21:10:07+00:00", "=1+1"),
            ],
        ),
        ("4", [["4", "5", "轮空队", "0", "20", "bye (D-TR-10)"]], [("bye", "签名：", "", "", "轮空队")]),
    ]
    # the table number spans both teams and their signatures: the two teams of a table stay together
    assert [cell.attrs["rowspan"] for cell in dom.find_all("td", "table")] == ["3", "3", "3", "2"]
    # the confirmation's time as printed, to the second in UTC
    assert "2024-05-01 21:03:07 UTC" in next(dom.find_all("tbody", "table-group")).text()


@pytest.mark.e2e
def test_the_zlj_sheet_renders_in_chromium_with_team_points(tmp_path: Path) -> None:
    dom = rendered(ZLJ, tmp_path)
    check_page(dom, ZLJ, "砸六家比赛成绩单", "团体分差")
    assert read_groups(dom) == [
        (
            "1",
            [["1", "6", "红队", "+12", "17.5", ""], ["2", "蓝队", "-12", "12.5", ""]],
            [
                ("red", "胜队签名：", "r-1", "2024-05-02T21:01:07+00:00", "红队"),
                ("blue", "负队签名：", "b-2", "2024-05-02T21:02:07+00:00", "蓝队"),
            ],
        )
    ]


@pytest.mark.e2e
def test_the_sheet_prints_to_an_a4_pdf(tmp_path: Path) -> None:
    page = tmp_path / "sheet.html"
    page.write_text(sheet_html(TRACTOR), encoding="utf-8")
    pdf = tmp_path / "sheet.pdf"
    run_chromium(page, f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    assert len(re.findall(rb"/Type\s*/Page\b", data)) >= 1
    boxes = re.findall(rb"/MediaBox\s*\[\s*0 0 ([0-9.]+) ([0-9.]+)\s*\]", data)
    assert boxes, "no page size in the PDF"
    for width, height in boxes:  # A4 is 595.28 x 841.89 points
        assert abs(float(width) - 595.28) < 2 and abs(float(height) - 841.89) < 2
