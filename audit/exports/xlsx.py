"""The XLSX export: openpyxl in write-only mode, so rows go to disk as they come.

Sheets, in order: "Summary" (title, facts, the list of sections with their row counts, and
the charts), one sheet per section (named by the section's short title, Section.sheet, else
by the gist of its title; header row frozen, with an autofilter, and the section's
total row, if it has one, in bold under the rows and outside the filter; a section with no
rows says so under its header, with its note, as the PDF does), and "Charts"
(the data the native bar charts on the Summary read). A section longer than an Excel sheet
(1,048,576 rows) continues on "<name> (2)", header repeated. A section's note, which the CSV
and the PDF print above its table, is its first header cell's comment on each of its sheets.

Cells: money is the exact Decimal of euros (cents / 100) with a euro number format, on the
Summary too (a fact that is an amount; a count is an int there, as on the sheets);
datetimes are Excel datetimes in the casino's local wall time (Excel has no zones; see
formatting.py); ints are ints; booleans are booleans; text is always a text cell (a value
like "=HYPERLINK(...)" is written as text, never as a formula), with the characters XML
cannot hold replaced by U+FFFD and cut at Excel's 32,767 characters.

Determinism: the metadata carries `created` (the document's, or a fixed epoch), never
"now", and every zip entry gets that timestamp, so the same document gives the same bytes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shutil
import zipfile
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, BinaryIO

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.chart import BarChart, Reference
from openpyxl.comments import Comment
from openpyxl.styles import Alignment, Border, Font, PatternFill, Side
from openpyxl.utils import get_column_letter, quote_sheetname
from openpyxl.writer.excel import ExcelWriter

from audit.exports.document import Chart, Column, FactValue, Money, ReportDocument, Section
from audit.exports.formatting import created_of, in_language, local_naive, money_decimal, pgettext
from audit.exports.formatting import gettext as _  # Django's, when it is configured

CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
EXTENSION = "xlsx"

EURO_FORMAT = "#,##0.00 [$€-410];-#,##0.00 [$€-410]"
DATETIME_FORMAT = "yyyy-mm-dd hh:mm:ss"
DATE_FORMAT = "yyyy-mm-dd"
INT_FORMAT = "#,##0"
RATE_FORMAT = "0.000000"
MAX_SHEET_ROWS = 1_048_576  # Excel's limit, header included (a module constant so tests can lower it)
MAX_CELL_CHARS = 32_767

_HEADER_FONT = Font(bold=True, color="FFFFFF")
_HEADER_FILL = PatternFill("solid", fgColor="1F3A5F")
_HEADER_BORDER = Border(bottom=Side(style="thin", color="1F3A5F"))
_TOTAL_FONT = Font(bold=True)
_TOTAL_BORDER = Border(top=Side(style="thin", color="1F3A5F"))
_NOTE_FONT = Font(italic=True, color="5A6270")
_WIDTHS = {"int": 12, "money": 16, "datetime": 20, "bool": 9, "rate": 12}
_SHEET_BAD = re.compile(r"[\[\]:*?/\\]")
_RATE = re.compile(r"\d{1,3}\.\d{1,12}")


def _is_rate(value: object) -> bool:
    return isinstance(value, str) and _RATE.fullmatch(value) is not None


def _text(value: object) -> str:
    text = ILLEGAL_CHARACTERS_RE.sub("\ufffd", str(value))
    if len(text) > MAX_CELL_CHARS:
        text = text[: MAX_CELL_CHARS - 1] + "…"
    return text


# Words a cut sheet name must not end on ("Offers of the bank, in the"; in Italian "Offerte
# del banco, nell'").
_DANGLING = frozenset([
    "a", "an", "and", "at", "before", "by", "each", "for", "in", "of", "on", "or", "per", "the", "their", "to", "was",
    "what", "with",
    "ad", "al", "alla", "alle", "agli", "ai", "che", "con", "da", "dal", "dalla", "dei", "del", "della", "delle",
    "degli", "di", "e", "ed", "gli", "i", "il", "la", "le", "lo", "nel", "nella", "nelle", "o", "per", "su", "sul",
    "sulla", "tra", "un", "una", "uno", "loro", "suo", "sua", "ha",
])  # fmt: skip


class _SheetNames:
    """Excel's sheet names: at most 31 characters, none of []:*?/\\, unique ignoring case."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    @staticmethod
    def short(title: str) -> str:
        """A title Excel can take whole, or its gist: without its parentheses, the part
        before a colon, then cut at a word ("Tables: figures of the day and the banker's
        win rate" is "Tables", not "Tables_ figures of the day and ")."""
        text = " ".join(title.split())
        if len(text) > 31:
            text = re.sub(r"\s*\([^)]*\)", "", text).split(":")[0].strip() or text
        if len(text) > 31:
            words = text[:32].split(" ")[:-1]  # the words that fit whole
            while words and (words[-1].casefold() in _DANGLING or words[-1][-1] in ",;:-"):
                if words[-1][-1] in ",;:-" and words[-1].casefold() not in _DANGLING:
                    words[-1] = words[-1].rstrip(",;:-")  # "bank," ends the name as "bank"
                    break
                words.pop()
            text = " ".join(words) or text[:31]
        return text

    def take(self, wanted: str, *, whole: bool = False) -> str:
        """A unique name for `wanted`: as it is when `whole` (a section's own short title,
        Section.sheet), else its gist (short); a name taken already gets " (2)", " (3)"..."""
        text = " ".join(wanted.split()) if whole else self.short(wanted)
        base = _SHEET_BAD.sub("_", text).strip("'") or "Sheet"
        name, n = base[:31], 1
        while name.casefold() in self._taken:
            n += 1
            suffix = f" ({n})"
            name = base[: 31 - len(suffix)] + suffix
        self._taken.add(name.casefold())
        return name


class _DeterministicZip(zipfile.ZipFile):
    """A ZipFile that stamps every entry with one fixed time and fixed permissions, so the
    archive's bytes depend only on its contents (openpyxl would use the clock and the
    temporary files' mtimes)."""

    def __init__(self, fp: BinaryIO, stamp: dt.datetime) -> None:
        super().__init__(fp, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True)
        local = stamp.astimezone(dt.UTC)
        self._stamp = (max(local.year, 1980), local.month, local.day, local.hour, local.minute, local.second)

    def _info(self, arcname: str) -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(arcname, date_time=self._stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        info.create_system = 3
        return info

    def writestr(self, zinfo_or_arcname, data, compress_type=None, compresslevel=None):  # type: ignore[override]
        name = (
            zinfo_or_arcname.filename if isinstance(zinfo_or_arcname, zipfile.ZipInfo) else zinfo_or_arcname
        )
        super().writestr(self._info(name), data)

    def write(self, filename, arcname=None, compress_type=None, compresslevel=None):  # type: ignore[override]
        info = self._info(arcname or os.path.basename(filename))
        info.file_size = os.path.getsize(filename)
        # Streamed: a worksheet of a big day is a big temporary file.
        with open(filename, "rb") as src, self.open(info, "w") as dst:
            shutil.copyfileobj(src, dst, 1 << 16)


class _SectionWriter:
    """Writes one section's rows, one reusable styled cell per column."""

    def __init__(self, wb: Workbook, names: _SheetNames, section: Section, tz: dt.tzinfo | None) -> None:
        self.wb, self.names, self.section, self.tz = wb, names, section, tz
        self.columns: list[Column] = list(section.columns)
        self.sheets: list[str] = []
        self.ws: Any = None
        self.sheet_rows = 0

    def _open_sheet(self) -> None:
        self._close_sheet()
        part = len(self.sheets) + 1
        if self.section.sheet:
            # Its own short title, whole; a continuation is numbered after it, "Coups (2)" (take).
            name = self.names.take(self.section.sheet, whole=True)
        else:
            name = self.names.take(self.section.title if part == 1 else f"{self.section.title} ({part})")
        ws = self.wb.create_sheet(name)
        self.sheets.append(ws.title)
        for i, column in enumerate(self.columns, 1):
            width = column.width or _WIDTHS.get(column.kind, 28)
            ws.column_dimensions[get_column_letter(i)].width = max(width, min(len(column.title) + 4, 50))
        ws.freeze_panes = "A2"
        header = []
        for column in self.columns:
            cell = WriteOnlyCell(ws, _text(column.title))
            cell.font, cell.fill, cell.border = _HEADER_FONT, _HEADER_FILL, _HEADER_BORDER
            cell.alignment = Alignment(horizontal="left" if column.kind == "text" else "center")
            header.append(cell)
        if header and self.section.note:
            # The section's note, which the CSV and the PDF print above the table (what a cell
            # means: "A blank 'Up to': no maximum", the codes in words), as the first header
            # cell's comment: the header stays the first row, frozen and filtered, the rows
            # below it the section's alone (an empty section says it under its header too).
            header[0].comment = _note_comment(self.section.note)
        ws.append(header)
        self.ws, self.sheet_rows = ws, 1
        self.cells = [self._cell(ws, c) for c in self.columns]

    def _close_sheet(self) -> None:
        if self.ws is not None and self.columns:
            last = get_column_letter(len(self.columns))
            self.ws.auto_filter.ref = f"A1:{last}{self.sheet_rows}"

    @staticmethod
    def _cell(ws: Any, column: Column) -> WriteOnlyCell:
        cell = WriteOnlyCell(ws)
        if column.kind == "money":
            cell.number_format = EURO_FORMAT
        elif column.kind == "int":
            cell.number_format = INT_FORMAT
        elif column.kind == "rate":
            cell.number_format = RATE_FORMAT
        elif column.kind == "datetime":
            cell.number_format = DATETIME_FORMAT
        return cell

    def _value(self, column: Column, cell: WriteOnlyCell, value: object) -> WriteOnlyCell | None:
        if value is None:
            return None
        kind = column.kind
        if kind == "money":
            cell.value = money_decimal(value)  # type: ignore[arg-type]
        elif kind == "datetime" and isinstance(value, dt.date):
            value = local_naive(value, self.tz)
            cell.value = value
            cell.number_format = DATETIME_FORMAT if isinstance(value, dt.datetime) else DATE_FORMAT
        elif kind == "bool":
            cell.value = bool(value)
        elif kind == "int" and isinstance(value, int):
            cell.value = value
        elif kind == "rate" and _is_rate(value):
            cell.value = Decimal(str(value))  # a number to sort and compare, not text
        else:
            cell.value = _text(value)
            cell.data_type = "s"  # never a formula, whatever the text starts with
        return cell

    def write(self) -> int:
        self._open_sheet()
        count, width = 0, len(self.columns)
        for row in self.section.rows():
            if len(row) != width:
                raise ValueError(
                    f"section {self.section.key!r}: a row has {len(row)} cells for {width} columns"
                )
            if self.sheet_rows >= MAX_SHEET_ROWS:
                self._open_sheet()
            self.ws.append(
                [self._value(c, cell, c.shown(v)) for c, cell, v in zip(self.columns, self.cells, row, strict=True)]
            )
            self.sheet_rows += 1
            count += 1
        if count == 0:
            self._empty_note()
        if self.section.total is not None:
            self._total(self.section.total)
        self._close_sheet()
        return count

    def _empty_note(self) -> None:
        """A section with no rows says so under its header, as the PDF does ("No rows.", after
        the section's note, which the CSV and the PDF print above the table and which tells
        why, "No cash was exchanged at the tables on this day."): one text cell, outside the
        autofilter's range (the filter holds the header alone)."""
        text = _("No rows.")
        if self.section.note:
            text = f"{text} {' '.join(self.section.note.split())}"
        cell = WriteOnlyCell(self.ws, _text(text))
        cell.data_type = "s"
        cell.font = _NOTE_FONT
        self.ws.append([cell])

    def _total(self, total: Sequence[Any]) -> None:
        """The section's total row, under the last row; left out of the autofilter's range, so
        that sorting or filtering the rows never moves or hides it."""
        if len(total) != len(self.columns):
            raise ValueError(
                f"section {self.section.key!r}: the total has {len(total)} cells for {len(self.columns)} columns"
            )
        if self.sheet_rows >= MAX_SHEET_ROWS:
            self._open_sheet()
        self._close_sheet()  # the filter ends at the last row
        cells = []
        for column, value in zip(self.columns, total, strict=True):
            cell = self._value(column, self._cell(self.ws, column), value) or WriteOnlyCell(self.ws)
            cell.font, cell.border = _TOTAL_FONT, _TOTAL_BORDER
            cells.append(cell)
        self.ws.append(cells)
        self.ws = None  # closed: write() does not set the filter again


def _note_comment(note: str) -> Comment:
    text = _text(" ".join(note.split()))
    # sized to be read without resizing: about 48 characters a line at the default font
    lines = max(2, min(30, len(text) // 48 + 2))
    return Comment(text, "Chemin", height=lines * 16, width=320)


def _write_chart_data(ws: Any, charts: Sequence[Chart]) -> list[tuple[Chart, int, int]]:
    """Writes each chart's labels and values into the Charts sheet; returns (chart, header
    row, last row) for the charts that have data."""
    placed: list[tuple[Chart, int, int]] = []
    ws.column_dimensions["A"].width = 28
    ws.column_dimensions["B"].width = 16
    row = 1
    bold = Font(bold=True)
    for chart in charts:
        title = WriteOnlyCell(ws, _text(chart.title))
        title.font = Font(bold=True, size=12)
        ws.append([title])
        money = chart.unit == "cents"
        heads = []
        for text in (_("Label"), _("Value (€)") if money else _("Value")):
            cell = WriteOnlyCell(ws, text)
            cell.font = bold
            heads.append(cell)
        ws.append(heads)
        header_row = row + 1
        for label, value in zip(chart.labels, chart.values, strict=True):
            cell = WriteOnlyCell(ws, money_decimal(value) if money else value)
            cell.number_format = EURO_FORMAT if money else INT_FORMAT
            name = WriteOnlyCell(ws, _text(label))
            name.data_type = "s"
            ws.append([name, cell])
        last = header_row + len(chart.labels)
        if chart.labels:
            placed.append((chart, header_row, last))
        ws.append([])
        row = last + 2
    return placed


def _bar_chart(sheet: str, chart: Chart, header_row: int, last_row: int) -> BarChart:
    bar = BarChart()
    bar.type = "col"
    bar.style = 10
    bar.title = chart.title
    bar.legend = None
    bar.width, bar.height = 24, 9
    quoted = quote_sheetname(sheet)
    data = Reference(range_string=f"{quoted}!$B${header_row}:$B${last_row}")
    cats = Reference(range_string=f"{quoted}!$A${header_row + 1}:$A${last_row}")
    bar.add_data(data, titles_from_data=True)
    bar.set_categories(cats)
    money = chart.unit == "cents"
    bar.y_axis.title = "€" if money else pgettext("chart unit", "count")
    bar.y_axis.numFmt = '#,##0 "€"' if money else "#,##0"
    # openpyxl >= 3.1 marks axes deleted unless told otherwise: Excel would draw no axes.
    bar.x_axis.delete = False
    bar.y_axis.delete = False
    return bar


def write_xlsx(
    doc: ReportDocument, fp: BinaryIO, *, created: dt.datetime | None = None, tz: dt.tzinfo | None = None
) -> None:
    """Write `doc` to the binary file `fp` (left open). Each section's rows are consumed once."""
    stamp = created_of(created or doc.created)
    wb = Workbook(write_only=True)
    props = wb.properties
    utc = stamp.astimezone(dt.UTC).replace(tzinfo=None)
    props.created = props.modified = utc
    props.creator = "Chemin"
    props.lastModifiedBy = None
    props.title = doc.title
    props.subject = doc.subtitle or None

    try:
        with in_language(doc.language):  # the words the writer adds, and the rows' (made as they are read)
            _fill(wb, doc, tz)
        archive = _DeterministicZip(fp, stamp)
        ExcelWriter(wb, archive).save()  # writes every part, then closes the archive (not fp)
    except BaseException:
        _discard(wb)
        raise


def _discard(wb: Workbook) -> None:
    """After a failure (a bad row, a full disk): end the sheets' writers and delete their
    temporary files now, rather than leaving them to the garbage collector and atexit."""
    for ws in wb.worksheets:
        writer = ws._writer
        for gen in (ws._rows, writer.xf if writer is not None else None):
            if gen is not None:
                with contextlib.suppress(Exception):
                    gen.close()
        if writer is not None:
            with contextlib.suppress(OSError):
                os.remove(writer.out)


def _fact_cell(ws: Any, value: FactValue) -> WriteOnlyCell:
    """A fact as the sheets write such a value: an amount in euros with the euro format, a
    count as an int, any other text as text (never a formula)."""
    cell = WriteOnlyCell(ws)
    if isinstance(value, Money):
        cell.value = money_decimal(value.cents)
        cell.number_format = EURO_FORMAT
    elif isinstance(value, int) and not isinstance(value, bool):
        cell.value = value
        cell.number_format = INT_FORMAT
    else:
        cell.value = _text(value)
        cell.data_type = "s"
    return cell


def _fill(wb: Workbook, doc: ReportDocument, tz: dt.tzinfo | None) -> None:
    names = _SheetNames()
    summary = wb.create_sheet(names.take(_("Summary")))
    summary.column_dimensions["A"].width = 32
    summary.column_dimensions["B"].width = 72
    summary.column_dimensions["C"].width = 12
    big = WriteOnlyCell(summary, _text(doc.title))
    big.font = Font(bold=True, size=16)
    summary.append([big])
    srow = 1
    if doc.subtitle:
        summary.append([_text(doc.subtitle)])
        srow += 1
    summary.append([])
    srow += 1
    bold = Font(bold=True)
    for key, value in doc.facts:
        k = WriteOnlyCell(summary, _text(key))
        k.font = bold
        v = _fact_cell(summary, value)
        v.alignment = Alignment(horizontal="left")  # beside its label, in the wide column
        summary.append([k, v])
        srow += 1

    listing: list[tuple[str, str, int]] = []
    for section in doc.sections:
        writer = _SectionWriter(wb, names, section, tz)
        count = writer.write()
        listing.append((section.title, ", ".join(writer.sheets), count))

    summary.append([])
    heads = []
    for text in (_("Section"), _("Sheet"), _("Rows")):
        cell = WriteOnlyCell(summary, text)
        cell.font, cell.fill = _HEADER_FONT, _HEADER_FILL
        heads.append(cell)
    summary.append(heads)
    srow += 2
    for title, sheets, count in listing:
        n = WriteOnlyCell(summary, count)
        n.number_format = INT_FORMAT
        summary.append([_text(title), sheets, n])
        srow += 1

    if doc.charts:
        charts_ws = wb.create_sheet(names.take(_("Charts")))
        anchor = srow + 3
        for chart, header_row, last_row in _write_chart_data(charts_ws, doc.charts):
            summary.add_chart(_bar_chart(charts_ws.title, chart, header_row, last_row), f"A{anchor}")
            anchor += 20
