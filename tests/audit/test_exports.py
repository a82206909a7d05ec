"""The three writers of end-of-day reports, on documents built from generated rows (no
database): valid files that read back to the rows, streaming (each section's rows called
once, bounded memory), money exact to the cent, and the same bytes for the same document."""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
import shutil
import subprocess
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from decimal import Decimal
from zoneinfo import ZoneInfo

import openpyxl
import pytest

from audit.exports import WRITERS, pdf, write_csv, write_pdf, write_xlsx, xlsx
from audit.exports.document import Chart, Column, Money, ReportDocument, Section
from audit.exports.formatting import money_decimal, money_display, money_plain

ROME = ZoneInfo("Europe/Rome")
T0 = dt.datetime(2026, 11, 29, 19, 0, 5, 123456, tzinfo=dt.UTC)  # 20:00:05 in Rome (CET)
SEAL = "3f" * 32

COLUMNS = [
    Column("coup", "Coup", "int"),
    Column("table", "Table"),
    Column("at", "Time", "datetime"),
    Column("cagnotte_cents", "Cagnotte", "money"),
    Column("regola", "Regola", "bool"),
    Column("note", "Note"),
]
NOTES = ["Più città — perché €", '=HYPERLINK("http://x")', "", 'a, "quoted"\nsecond line']
AMOUNTS = [0, -1, -5, -100, -123456, 99, 100, 12_345_678_901, -12_345_678_901]


def coup_row(i: int) -> tuple:
    return (
        i + 1,
        f"Tavolo {i % 7 + 1}",
        T0 + dt.timedelta(seconds=61 * i),
        AMOUNTS[i % len(AMOUNTS)],
        i % 3 == 0,
        NOTES[i % len(NOTES)] if i % 5 else None,
    )


class Rows:
    """A rows callable that counts its calls and whose iterator refuses a second pass."""

    def __init__(self, n: int, make: Callable[[int], tuple] = coup_row) -> None:
        self.n, self.make, self.calls = n, make, 0

    def __call__(self) -> Iterator[tuple]:
        self.calls += 1
        assert self.calls == 1, "rows() called twice"
        return (self.make(i) for i in range(self.n))


def make_doc(n: int = 40, *, empty: bool = True, charts: bool = True, created: dt.datetime | None = None):
    sections = [Section("coups", "Coups", COLUMNS, Rows(n), note="Every coup of the day, in order.")]
    if empty:
        sections.append(Section("corrections", "Corrections", COLUMNS[:3], Rows(0)))
    chart_list = (
        [
            Chart(
                "cagnotte",
                "Cagnotte per table",
                [f"Tavolo {i}" for i in range(1, 8)],
                [12340, 50000, 0, 7710, 123450, 9990, 4005],
                "cents",
            ),
            Chart(
                "coups",
                "Coups per hour",
                [f"{h % 24:02d}:00" for h in range(15, 27)],
                [3, 10, 22, 40, 55, 61, 70, 66, 50, 31, 12, 4],
            ),
        ]
        if charts
        else []
    )
    return ReportDocument(
        title="Giornata di gioco 2026-11-29",
        subtitle="Casinò di Venezia — Ca' Vendramin Calergi",
        facts=[("Gaming day", "2026-11-29"), ("Cagnotte", "€ 2,074.95"), ("Audit seal", SEAL)],
        sections=sections,
        charts=chart_list,
        created=created,
    )


def written(writer, doc, **options) -> bytes:
    fp = io.BytesIO()
    writer(doc, fp, **options)
    assert not fp.closed  # the caller's file stays open
    return fp.getvalue()


# -- money ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cents", "plain", "display", "decimal"),
    [
        (0, "0.00", "0.00", "0.00"),
        (-1, "-0.01", "-0.01", "-0.01"),
        (-5, "-0.05", "-0.05", "-0.05"),
        (-100, "-1.00", "-1.00", "-1.00"),
        (-123456, "-1234.56", "-1,234.56", "-1234.56"),
        (99, "0.99", "0.99", "0.99"),
        (12_345_678_901, "123456789.01", "123,456,789.01", "123456789.01"),
        (10**20 + 7, "1000000000000000000.07", "1,000,000,000,000,000,000.07", "1000000000000000000.07"),
    ],
)
def test_money_is_exact_to_the_cent(cents, plain, display, decimal):
    assert money_plain(cents) == plain
    assert money_display(cents) == display
    assert money_decimal(cents) == Decimal(decimal)
    assert str(money_decimal(cents)) == decimal


@pytest.mark.parametrize("bad", [1.5, Decimal("1.50"), "150", True])
def test_money_refuses_anything_but_integer_cents(bad):
    with pytest.raises(TypeError):
        money_plain(bad)
    doc = ReportDocument("t", "", [], [Section("s", "S", [Column("m", "M", "money")], lambda: [(bad,)])])
    for spec in WRITERS.values():
        with pytest.raises(TypeError):
            written(spec, doc)


# -- CSV -----------------------------------------------------------------------------------


def csv_blocks(data: bytes) -> tuple[list[list[str]], dict[str, list[list[str]]]]:
    """The preamble records and, per section marker, the records after it."""
    assert not data.startswith(b"\xef\xbb\xbf")  # plain UTF-8, no BOM
    records = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    preamble: list[list[str]] = []
    blocks: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    after_blank = False
    for record in records:
        if not record:
            after_blank = True
            continue
        if after_blank and len(record) == 1 and record[0].startswith("# "):
            current = blocks.setdefault(record[0][2:], [])
        elif current is None:
            preamble.append(record)
        else:
            current.append(record)
        after_blank = False
    return preamble, blocks


def test_csv_reads_back_to_the_rows():
    n = 40
    data = written(write_csv, make_doc(n))
    assert b"\r\n" in data and b"\n\n" not in data.replace(b"\r\n", b"")  # RFC 4180 line ends
    preamble, blocks = csv_blocks(data)
    assert preamble == [
        ["# Giornata di gioco 2026-11-29"],
        ["# Casinò di Venezia — Ca' Vendramin Calergi"],
        ["# Gaming day", "2026-11-29"],
        ["# Cagnotte", "€ 2,074.95"],
        ["# Audit seal", SEAL],
    ]
    coups = blocks["Coups"]
    assert coups[0] == ["# Every coup of the day, in order."]
    assert coups[1] == ["coup", "table", "at", "cagnotte_eur", "regola", "note"]
    body = coups[2:]
    assert len(body) == n
    for i, record in enumerate(body):
        coup, table, at, cents, regola, note = coup_row(i)
        assert record == [
            str(coup),
            table,
            (at.astimezone(ROME).replace(microsecond=0)).isoformat(),
            money_plain(cents),
            "true" if regola else "false",
            ("'" + note) if note and note[0] in "=+-@" else (note or ""),  # a formula is defused
        ]
        # the money column reads back to the exact cents
        assert int(Decimal(record[3]) * 100) == cents
    assert body[0][2] == "2026-11-29T20:00:05+01:00"
    assert blocks["Corrections"] == [["coup", "table", "at"]]
    assert blocks["Chart: Cagnotte per table"][0] == ["label", "value_eur"]
    assert blocks["Chart: Cagnotte per table"][7] == ["Tavolo 7", "40.05"]
    assert blocks["Chart: Coups per hour"][1:3] == [["15:00", "3"], ["16:00", "10"]]


def test_a_csv_text_cell_never_starts_a_formula():
    """A reason typed at a table must not run when the CSV is opened in a spreadsheet: text
    cells that start like a formula get a "'" before them; numbers and money never do."""
    cols = [Column("reason", "Reason"), Column("amount", "Amount", "money"), Column("n", "N", "int")]
    texts = ['=HYPERLINK("http://evil.example","x")', "+1+cmd", "-2+3", "@SUM(1)", "\tx", "a=b", "plain"]
    doc = ReportDocument("t", "", [], [Section("s", "S", cols, Rows(len(texts), lambda i: (texts[i], -150, -3)))])
    _, blocks = csv_blocks(written(write_csv, doc))
    body = blocks["S"][1:]
    assert [r[0] for r in body] == [
        '\'=HYPERLINK("http://evil.example","x")', "'+1+cmd", "'-2+3", "'@SUM(1)", "'\tx", "a=b", "plain"]
    assert {(r[1], r[2]) for r in body} == {("-1.50", "-3")}


def test_a_row_of_the_wrong_width_is_refused():
    doc = ReportDocument("t", "", [], [Section("s", "S", COLUMNS, lambda: [(1, "x")])])
    for spec in WRITERS.values():
        with pytest.raises(ValueError, match="2 cells for 6 columns"):
            written(spec, doc)


# -- XLSX ----------------------------------------------------------------------------------


def test_xlsx_reopens_with_sheets_headers_values_formats_and_charts():
    n = 40
    data = written(write_xlsx, make_doc(n))
    wb = openpyxl.load_workbook(io.BytesIO(data))
    assert wb.sheetnames == ["Summary", "Coups", "Corrections", "Charts"]

    summary = wb["Summary"]
    cells = [[c for c in row if c is not None] for row in summary.iter_rows(values_only=True)]
    assert ["Giornata di gioco 2026-11-29"] in cells
    assert ["Audit seal", SEAL] in cells
    assert ["Coups", "Coups", n] in cells
    assert ["Corrections", "Corrections", 0] in cells
    assert len(summary._charts) == 2

    ws = wb["Coups"]
    rows = list(ws.iter_rows(values_only=True))
    assert rows[0] == ("Coup", "Table", "Time", "Cagnotte", "Regola", "Note")
    assert len(rows) == n + 1
    for i, row in enumerate(rows[1:]):
        coup, table, at, cents, regola, note = coup_row(i)
        assert row[0] == coup and isinstance(row[0], int)
        assert row[1] == table
        assert row[2] == at.astimezone(ROME).replace(tzinfo=None, microsecond=0)
        assert Decimal(str(row[3])) == Decimal(cents) / 100
        assert row[4] is regola
        assert row[5] == (note or None)  # an empty text is an empty cell
    money = ws["D2"]
    assert "€" in money.number_format and "0.00" in money.number_format
    assert ws["C2"].is_date and ws["C2"].number_format == "yyyy-mm-dd hh:mm:ss"
    formula_like = next(c for c in ws["F"] if c.value and c.value.startswith("="))
    assert formula_like.data_type == "s"  # text, never a formula
    assert ws.freeze_panes == "A2"

    assert list(wb["Corrections"].iter_rows(values_only=True))[:1] == [("Coup", "Table", "Time")]
    charts = list(wb["Charts"].iter_rows(values_only=True))
    assert charts[0][0] == "Cagnotte per table"
    assert charts[1] == ("Label", "Value (€)")
    assert Decimal(str(charts[2][1])) == Decimal("123.40")

    with zipfile.ZipFile(io.BytesIO(data)) as z:
        chart_xml = [z.read(name).decode() for name in z.namelist() if name.startswith("xl/charts/chart")]
        sheet = z.read("xl/worksheets/sheet2.xml").decode()
    assert len(chart_xml) == 2
    assert all(re.search(r"<(c:)?barChart>", x) and "'Charts'!$B$" in x for x in chart_xml)
    # The stored numbers are the exact decimals, large sums and negative cents included.
    assert "<v>123456789.01</v>" in sheet and "<v>-123456789.01</v>" in sheet
    assert "<v>-0.05</v>" in sheet and "<v>-1234.56</v>" in sheet


def test_xlsx_continues_a_section_longer_than_a_sheet(monkeypatch):
    monkeypatch.setattr(xlsx, "MAX_SHEET_ROWS", 11)  # header + 10 rows
    data = written(write_xlsx, make_doc(25, empty=False, charts=False))
    wb = openpyxl.load_workbook(io.BytesIO(data))
    assert wb.sheetnames == ["Summary", "Coups", "Coups (2)", "Coups (3)"]
    counts = [wb[name].max_row - 1 for name in ("Coups", "Coups (2)", "Coups (3)")]
    assert counts == [10, 10, 5]
    assert next(wb["Coups (3)"].iter_rows(values_only=True))[0] == "Coup"
    assert [c.value for c in wb["Coups (3)"]["A"]][1:] == list(range(21, 26))


def test_xlsx_sheet_names_are_legal_and_unique():
    cols = [Column("x", "X", "int")]
    sections = [
        Section(f"s{i}", title, cols, Rows(1, lambda i: (i,)))
        for i, title in enumerate(
            ["Summary", "a/b: [c]?", "A very long section title that Excel would refuse", "a_b_ _c__",
             "Tables: figures of the day and the banker's win rate", "Successions of the bank (RULES.md §5)",
             "Offers of the bank, in the order of the right to it", "Bets and what each paid or was paid",
             "Coups annulled before their cards"]
        )
    ]
    wb = openpyxl.load_workbook(io.BytesIO(written(write_xlsx, ReportDocument("t", "", [], sections))))
    assert wb.sheetnames == [
        "Summary",
        "Summary (2)",
        "a_b_ _c__",
        "A very long section title that",  # cut at a word
        "a_b_ _c__ (2)",
        "Tables",  # the gist: before the colon
        "Successions of the bank",  # without its parentheses
        "Offers of the bank",  # not ending on a dangling word
        "Bets and what each paid",
        "Coups annulled",
    ]


def test_xlsx_names_a_section_by_its_own_short_title_whole(monkeypatch):
    """A section with a short title of its own (Section.sheet) gets it as its sheet's name, whole,
    whatever its title's length; its continuations are numbered after it; the characters Excel
    forbids still become "_"."""
    monkeypatch.setattr(xlsx, "MAX_SHEET_ROWS", 11)  # header + 10 rows
    cols = [Column("x", "X", "int")]
    long_title = "Offerte del banco, nell'ordine del diritto a esso"
    sections = [
        Section("offers", long_title, cols, Rows(1, lambda i: (i,)), sheet="Offerte del banco"),
        Section("coups", "Colpi: il prelievo di ogni colpo", cols, Rows(25, lambda i: (i,)), sheet="Colpi"),
        Section("odd", "Odd", cols, Rows(1, lambda i: (i,)), sheet="a/b: [c]?"),
        Section("plain", long_title, cols, Rows(1, lambda i: (i,))),  # none: the gist of its title, as before
    ]
    wb = openpyxl.load_workbook(io.BytesIO(written(write_xlsx, ReportDocument("t", "", [], sections))))
    assert wb.sheetnames == ["Summary", "Offerte del banco", "Colpi", "Colpi (2)", "Colpi (3)", "a_b_ _c__",
                             "Offerte del banco, nell'ordine"]  # fmt: skip
    listing = {row[0]: row[1] for row in wb["Summary"].iter_rows(values_only=True) if row and row[0]}
    assert listing["Colpi: il prelievo di ogni colpo"] == "Colpi, Colpi (2), Colpi (3)"


# -- PDF -----------------------------------------------------------------------------------


def page_count(data: bytes) -> int:
    return len(re.findall(rb"/Type /Page\b(?!s)", data))


def pdf_text(data: bytes, tmp_path, *, drawn_order: bool = False) -> str | None:
    """The PDF's text: pdftotext's when installed, else pypdf's with runs of whitespace made one
    space (pypdf puts a form's text, e.g. the page total, on a line of its own). `drawn_order`:
    pypdf's always, which reads a cell's wrapped lines one after the other (pdftotext's layout
    puts the other columns' text between them)."""
    if not drawn_order and shutil.which("pdftotext") is not None:
        path = tmp_path / "r.pdf"
        path.write_bytes(data)
        return subprocess.run(
            ["pdftotext", "-layout", str(path), "-"], capture_output=True, check=True, text=True
        ).stdout
    try:
        import pypdf
    except ImportError:
        return None
    reader = pypdf.PdfReader(io.BytesIO(data), strict=True)
    return "\n".join(" ".join(page.extract_text().split()) for page in reader.pages)


def test_pdf_is_a_pdf_with_the_facts_rows_and_charts(tmp_path):
    data = written(write_pdf, make_doc(40))
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    text = pdf_text(data, tmp_path)
    if text is None:
        pytest.skip("pdftotext is not installed")
    for expected in (
        "Giornata di gioco 2026-11-29",
        "Casinò di Venezia",
        "Più città — perché €",
        "Cagnotte (€)",
        f"Audit seal {SEAL}",
        "-1,234.56",
        "123,456,789.01",
        "2026-11-29 20:00:05",
        "Coups (continued)",
        "No rows.",
        "Cagnotte per table (€)",
        "Coups per hour",
        "1,234.50",
    ):
        assert expected in text, expected
    total = page_count(data)
    assert f"Page 1 of {total}" in text and f"Page {total} of {total}" in text


@pytest.mark.parametrize("extra", [0, 1])
def test_pdf_page_count_follows_the_rows(extra):
    """A cover page, then ceil(N / rows per page) pages for one section, one page for two charts."""
    columns = [Column("n", "N", "int"), Column("t", "Text")]
    per_page = pdf.single_line_rows_per_page(columns, [["1,000", "row"]])
    for pages_of_rows in (1, 3):
        n = per_page * pages_of_rows + extra
        doc = ReportDocument(
            "t", "", [("Audit seal", SEAL)], [Section("s", "S", columns, Rows(n, lambda i: (i, "row")))]
        )
        assert page_count(written(write_pdf, doc)) == 1 + math.ceil(n / per_page)
    doc = make_doc(0, empty=False, charts=True)
    assert page_count(written(write_pdf, doc)) == 1 + 1 + 1


def test_pdf_wraps_long_text_and_cuts_the_rest(tmp_path):
    long = "parola " * 2000 + "fine"
    word = "x" * 400
    cols = [Column("a", "A"), Column("b", "B")]
    doc = ReportDocument("t", "", [], [Section("s", "S", cols, Rows(2, lambda i: (long, word)))])
    font = pdf.fonts().cond
    lines = pdf.wrap(long, font, pdf.BODY_SIZE, 200, 3)
    assert len(lines) == 3 and lines[-1].endswith("…")
    assert all(pdf._width(line, font, pdf.BODY_SIZE) <= 200 for line in lines)
    broken = pdf.wrap(word, font, pdf.BODY_SIZE, 100, 3)
    assert len(broken) == 3 and broken[0].startswith("xxx") and broken[-1].endswith("…")
    assert pdf.wrap("short", font, pdf.BODY_SIZE, 100, 3) == ["short"]
    text = pdf_text(written(write_pdf, doc), tmp_path)
    if text is not None:
        assert "fine" not in text and "…" in text


def test_pdf_sets_a_wide_table_smaller_rather_than_cut_a_figure(tmp_path):
    """Twenty-two money columns of six-figure amounts do not fit the page at the standard
    size: the table is set smaller and every amount is printed whole."""
    cols = [Column("t", "Table", "int")] + [Column(f"m{i}", f"Amount {i}", "money") for i in range(21)]
    row = (7, *[123_456_78 + i for i in range(21)])
    table = pdf._layout(cols, pdf.fonts(), [[str(v) for v in row[:1]] + ["123,456.78"] * 21])
    assert pdf.MIN_BODY_SIZE <= table.size < pdf.BODY_SIZE
    doc = ReportDocument("t", "", [], [Section("s", "S", cols, Rows(3, lambda i: row))])
    text = pdf_text(written(write_pdf, doc), tmp_path)
    if text is None:
        pytest.skip("no PDF text extractor")
    for i in range(21):
        assert f"123,456.{78 + i}" in text, i
    assert "…" not in text


# -- all three -----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "pdf"])
def test_every_section_rows_is_called_exactly_once(fmt):
    doc = make_doc(30)
    written(WRITERS[fmt], doc)
    assert [s.rows.calls for s in doc.sections] == [1, 1]


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "pdf"])
def test_an_empty_document_is_still_a_valid_file(fmt):
    data = written(WRITERS[fmt], ReportDocument("Empty day", "", [], [], []))
    assert data
    if fmt == "xlsx":
        assert openpyxl.load_workbook(io.BytesIO(data)).sheetnames == ["Summary"]
    if fmt == "pdf":
        assert data.startswith(b"%PDF-") and page_count(data) == 1


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "pdf"])
def test_the_same_document_gives_the_same_bytes(fmt):
    created = dt.datetime(2026, 11, 30, 6, 0, tzinfo=ROME)
    first = written(WRITERS[fmt], make_doc(120, created=created))
    second = written(WRITERS[fmt], make_doc(120, created=created))
    assert first == second
    unstamped = written(WRITERS[fmt], make_doc(120))
    assert unstamped == written(WRITERS[fmt], make_doc(120))
    if fmt == "pdf":
        assert b"D:20261130060000+01'00'" in first
    if fmt == "xlsx":
        with zipfile.ZipFile(io.BytesIO(first)) as z:
            assert "2026-11-30T05:00:00Z" in z.read("docProps/core.xml").decode()
            assert {i.date_time for i in z.infolist()} == {(2026, 11, 30, 5, 0, 0)}
    if fmt != "csv":
        assert first != unstamped  # the stamp is the document's, not the clock's


def test_writers_registry():
    assert set(WRITERS) == {"csv", "xlsx", "pdf"}
    assert WRITERS["csv"].content_type.startswith("text/csv") and WRITERS["csv"].extension == "csv"
    assert WRITERS["xlsx"].content_type == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert WRITERS["xlsx"].extension == "xlsx"
    assert WRITERS["pdf"].content_type == "application/pdf" and WRITERS["pdf"].extension == "pdf"
    assert WRITERS["pdf"].write is write_pdf


# -- streaming -----------------------------------------------------------------------------


class Sink(io.RawIOBase):
    """A binary file that keeps nothing, so only the writer's own memory is measured."""

    def __init__(self) -> None:
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.size += len(b)
        return len(b)


def peak_bytes(writer, n: int, columns=COLUMNS, make=coup_row) -> int:
    doc = ReportDocument("t", "", [("Audit seal", SEAL)], [Section("s", "S", columns, Rows(n, make))])
    tracemalloc.start()
    try:
        writer(doc, Sink())
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_csv_memory_does_not_grow_with_the_rows():
    # Three columns (int, datetime, money) keep tracemalloc's overhead to seconds.
    columns = COLUMNS[:1] + COLUMNS[2:4]

    def make(i: int) -> tuple:
        return (i, T0 + dt.timedelta(seconds=i), -i * 37)

    small, big = peak_bytes(write_csv, 20_000, columns, make), peak_bytes(write_csv, 200_000, columns, make)
    assert big < 2_000_000
    assert big / small < 1.5, (small, big)


@pytest.mark.slow
def test_xlsx_memory_does_not_grow_with_the_rows():
    # One column keeps the run near a minute (openpyxl's pure-Python XML writer, under
    # tracemalloc, is the slow part); a unique text per row proves no shared-string table
    # grows in memory.
    columns = [Column("t", "Text")]

    def make(i: int) -> tuple:
        return (f"unique text {i}",)

    written(write_xlsx, make_doc(5))  # imports and styles warmed up
    small, big = peak_bytes(write_xlsx, 20_000, columns, make), peak_bytes(write_xlsx, 200_000, columns, make)
    assert big < 3_000_000
    assert big / small < 1.5, (small, big)


# The PDF writer's memory: tests/audit/test_pdf_memory.py.


def test_pdf_without_dejavu_writes_eur_in_helvetica(monkeypatch, tmp_path):
    fallback = pdf._Fonts("Helvetica", "Helvetica-Bold", "Helvetica", "Helvetica-Bold", "Courier", euro=False)
    monkeypatch.setattr(pdf, "fonts", lambda: fallback)
    data = written(write_pdf, make_doc(10))
    assert b"/Helvetica" in data and b"DejaVu" not in data
    text = pdf_text(data, tmp_path)
    if text is not None:
        assert "Cagnotte (EUR)" in text and "Più città" in text and "€" not in text


# -- PDF: Chinese, Japanese, Korean --------------------------------------------------------
# DejaVu has none of their glyphs: the runs of such characters are drawn in ReportLab's Adobe
# CID fonts, chosen by script. (Escapes, not the characters, keep the source ASCII.)

WANG = "\u738b\u5c0f\u660e"  # a Chinese name
YAMADA = "\u5c71\u7530\u592a\u90ce"  # a Japanese name in kanji only
HANAKO = "\u306f\u306a\u3053"  # hiragana
KIM = "\uae40\ubbfc\uc218"  # Hangul
CJK_FONTS = set(pdf.CJK_FONTS.values())
TABLE_FONT = "DejaVuSansCondensed" if pdf.fonts().euro else "Helvetica"  # the tables' base font


def drawn_runs(data: bytes) -> list[tuple[str, str]]:
    """Every string the PDF draws, with the base font it is drawn in (a subset's tag
    dropped), read back from the content streams with pypdf."""
    import pypdf

    runs: list[tuple[str, str]] = []

    def visit(text, cm, tm, font, size):
        if text.strip() and font is not None:
            runs.append((text.strip(), str(font["/BaseFont"]).lstrip("/").split("+")[-1]))

    for page in pypdf.PdfReader(io.BytesIO(data)).pages:
        page.extract_text(visitor_text=visit)
    return runs


def test_pdf_runs_send_what_the_font_lacks_to_a_cjk_font_by_script():
    font = pdf.fonts().cond
    assert pdf._runs("Zoë Più €", font) == [("Zoë Più €", font)]
    assert pdf._runs(f"Mr {WANG} (wang)", font) == [("Mr ", font), (WANG, "STSong-Light"), (" (wang)", font)]
    assert pdf._runs(YAMADA, font) == [(YAMADA, "STSong-Light")]  # kanji alone: the Chinese font draws them
    # With kana in the text, its kanji are Japanese too.
    assert pdf._runs(f"{YAMADA[:2]} {HANAKO}", font) == [
        (YAMADA[:2], "HeiseiKakuGo-W5"), (" ", font), (HANAKO, "HeiseiKakuGo-W5")]  # fmt: skip
    assert pdf._runs(KIM, font) == [(KIM, "HYGothic-Medium")]
    # CJK punctuation and fullwidth forms follow the text's script.
    assert pdf._runs(f"{KIM}\u3001\uff21", font) == [(f"{KIM}\u3001\uff21", "HYGothic-Medium")]
    assert pdf._runs(f"{WANG}\u3002", font) == [(f"{WANG}\u3002", "STSong-Light")]
    # The decision is the font's own cmap: a character goes to a CJK font only if the font
    # has no glyph for it, and every character the font has stays in it.
    have = pdf._coverage(font)
    for text in (f"Mr {WANG} (wang)", f"{YAMADA[:2]} {HANAKO}", f"{KIM}\u3001\uff21", "Zoë €"):
        for run, name in pdf._runs(text, font):
            assert all((ord(ch) in have) == (name == font) for ch in run if ch != " "), (run, name)


def test_pdf_helvetica_fallback_draws_cjk_in_cid_fonts_too():
    assert pdf._runs(f"Zoë {KIM}", "Helvetica") == [("Zoë ", "Helvetica"), (KIM, "HYGothic-Medium")]


def test_pdf_measures_cjk_runs_in_their_own_font():
    font = pdf.fonts().cond
    # An ideograph or a Hangul syllable is one em wide in the CID fonts.
    assert pdf._width(WANG, font, 10) == pytest.approx(30.0)
    assert pdf._width(f"Mr {KIM}", font, 10) == pytest.approx(pdf._width("Mr ", font, 10) + 30.0)
    # A column of long CJK names is sized for them, and a long CJK text wraps within its width
    # with nothing lost.
    name = WANG * 8
    table = pdf._layout([Column("p", "Patron"), Column("m", "Bet", "money")], pdf.fonts(), [[name, "1.00"]])
    assert table.widths[0] - 2 * pdf.CELL_PAD >= 24 * pdf.BODY_SIZE
    lines = pdf.wrap(WANG * 40, font, pdf.BODY_SIZE, 100, pdf.MAX_TEXT_LINES)
    assert len(lines) > 1 and "".join(lines) == WANG * 40
    assert all(pdf._width(line, font, pdf.BODY_SIZE) <= 100 for line in lines)


def test_pdf_draws_cjk_names_in_cid_fonts_and_they_extract(tmp_path):
    mixed = f"Mr {WANG} (wang)"
    names = [WANG, YAMADA, f"{YAMADA[:2]} {HANAKO}", KIM, mixed]
    cols = [Column("patron", "Patron"), Column("bet", "Bet", "money")]
    doc = ReportDocument(
        f"Report {WANG}",
        "",
        [("Banker", KIM)],
        [Section("bets", "Bets", cols, Rows(len(names), lambda i: (names[i], 100 * i)))],
        [Chart("c", "Per patron", [WANG, KIM], [1, 2])],
    )
    data = written(write_pdf, doc)
    runs = drawn_runs(data)
    for expected in [(WANG, "STSong-Light"), (YAMADA, "STSong-Light"), (HANAKO, "HeiseiKakuGo-W5"),
                     (YAMADA[:2], "HeiseiKakuGo-W5"), (KIM, "HYGothic-Medium")]:  # fmt: skip
        assert expected in runs, expected
    assert [font for text, font in runs if text in ("Mr", "(wang)")] == [TABLE_FONT] * 2
    # No CJK character is drawn in a font without its glyphs (a box), on the page or the chart.
    cjk = [(text, font) for text, font in runs if pdf._CJK.search(text)]
    assert len(cjk) >= 10 and {font for _, font in cjk} <= CJK_FONTS
    for name in CJK_FONTS:
        assert b"/BaseFont /" + name.encode() in data
    text = pdf_text(data, tmp_path)
    if text is not None:
        for name in (WANG, YAMADA, KIM, mixed, f"Report {WANG}"):
            assert name in text, name


# -- XLSX: the Summary's figures, a section's total row -----------------------------------


def test_xlsx_summary_figures_are_numbers_and_the_csv_and_pdf_text_is_as_before(tmp_path):
    facts = [("Gaming day", "2026-11-29"), ("Coups", 1234), ("Levies recorded", Money(12_345_678_901)),
             ("Shortfall", Money(-5)), ("Counted cagnotte", "not counted yet"), ("Audit seal", SEAL)]  # fmt: skip
    doc = lambda: ReportDocument("t", "", facts, [])  # noqa: E731
    data = written(write_xlsx, doc())
    summary = openpyxl.load_workbook(io.BytesIO(data))["Summary"]
    cells = {row[0].value: row[1] for row in summary.iter_rows(max_col=2) if row[0].value in dict(facts)}
    assert set(cells) == set(dict(facts))
    coups = cells["Coups"]
    assert coups.value == 1234 and coups.data_type == "n" and coups.number_format == xlsx.INT_FORMAT
    for key, amount in (("Levies recorded", "123456789.01"), ("Shortfall", "-0.05")):
        cell = cells[key]
        assert cell.data_type == "n" and cell.number_format == xlsx.EURO_FORMAT, key
        assert Decimal(str(cell.value)) == Decimal(amount)
    for key in ("Gaming day", "Counted cagnotte", "Audit seal"):
        assert cells[key].data_type == "s" and cells[key].value == dict(facts)[key]
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        sheet = z.read("xl/worksheets/sheet1.xml").decode()
    assert "<v>123456789.01</v>" in sheet and "<v>-0.05</v>" in sheet  # the exact decimals, no float
    # The CSV and the PDF write the facts as they always did.
    preamble, _ = csv_blocks(written(write_csv, doc()))
    assert preamble[1:] == [["# Gaming day", "2026-11-29"], ["# Coups", "1234"],
                            ["# Levies recorded", "123,456,789.01 EUR"], ["# Shortfall", "-0.05 EUR"],
                            ["# Counted cagnotte", "not counted yet"], ["# Audit seal", SEAL]]  # fmt: skip
    text = pdf_text(written(write_pdf, doc()), tmp_path)
    if text is not None:
        assert "123,456,789.01 EUR" in text and "-0.05 EUR" in text and f"Audit seal {SEAL}" in text


def test_a_money_fact_must_be_integer_cents():
    doc = ReportDocument("t", "", [("Levies", Money(1.5))], [])  # type: ignore[arg-type]
    for spec in WRITERS.values():
        with pytest.raises(TypeError):
            written(spec, doc)


REGISTER = [Column("table", "Table", "int"), Column("session", "Session", "int"), Column("coups", "Coups", "int"),
            Column("carried", "Carried", "money")]  # fmt: skip
REGISTER_ROWS = [(1, 1, 3, 41_20), (1, None, 3, 41_20), (2, 1, 1, 10_00), (2, None, 1, 10_00)]


def register_doc(total=("Total", None, 4, 51_20)) -> ReportDocument:
    rows = Rows(len(REGISTER_ROWS), lambda i: REGISTER_ROWS[i])
    return ReportDocument("t", "", [], [Section("reg", "Register", REGISTER, rows, note="Total: 51.20 EUR", total=total)])


def test_xlsx_writes_a_section_total_row_under_the_rows_outside_the_filter():
    wb = openpyxl.load_workbook(io.BytesIO(written(write_xlsx, register_doc())))
    ws = wb["Register"]
    rows = list(ws.iter_rows(values_only=True))
    assert len(rows) == 1 + len(REGISTER_ROWS) + 1
    label, session, coups, carried = rows[-1]
    assert (label, session, coups) == ("Total", None, 4) and Decimal(str(carried)) == Decimal("51.20")
    last = ws[len(rows)]
    assert last[2].data_type == "n" and last[2].number_format == xlsx.INT_FORMAT
    assert last[3].data_type == "n" and last[3].number_format == xlsx.EURO_FORMAT
    assert all(cell.font.b for cell in last) and all(cell.border.top.style == "thin" for cell in last)
    assert not ws[len(rows) - 1][0].font.b  # the rows above are not bold
    assert ws.auto_filter.ref == f"A1:D{len(rows) - 1}"  # sorting the rows leaves the total in place
    summary = [[c for c in row if c is not None] for row in wb["Summary"].iter_rows(values_only=True)]
    assert ["Register", "Register", len(REGISTER_ROWS)] in summary  # the total is not a row of the section


def test_the_csv_and_pdf_leave_the_total_row_to_the_note(tmp_path):
    _, blocks = csv_blocks(written(write_csv, register_doc()))
    assert blocks["Register"] == [["# Total: 51.20 EUR"], ["table", "session", "coups", "carried_eur"],
                                  ["1", "1", "3", "41.20"], ["1", "", "3", "41.20"], ["2", "1", "1", "10.00"],
                                  ["2", "", "1", "10.00"]]  # fmt: skip
    assert written(write_pdf, register_doc()) == written(write_pdf, register_doc(total=None))


def test_a_total_of_the_wrong_width_is_refused():
    with pytest.raises(ValueError, match="the total has 2 cells for 4 columns"):
        written(write_xlsx, register_doc(total=("Total", 51_20)))


def test_the_pdf_gives_a_time_of_the_repeated_hour_its_offset(tmp_path):
    """QA: on the October night the clock reads 02:00-02:59 twice (CEST, then CET). The PDF
    prints local wall times: two coups an hour apart both read "2026-10-25 02:30:00", and a
    session opened at 02:45 CEST and closed at 02:15 CET seemed to close before it opened.
    A time of that hour carries its UTC offset, as the CSV's do; every other time is as before."""
    from audit.exports.formatting import datetime_display

    first, second = dt.datetime(2026, 10, 25, 0, 30, tzinfo=dt.UTC), dt.datetime(2026, 10, 25, 1, 30, tzinfo=dt.UTC)
    assert datetime_display(first) == "2026-10-25 02:30:00 +02:00"
    assert datetime_display(second) == "2026-10-25 02:30:00 +01:00"
    assert datetime_display(dt.datetime(2026, 10, 24, 23, 59, 59, tzinfo=dt.UTC)) == "2026-10-25 01:59:59"
    assert datetime_display(dt.datetime(2026, 10, 25, 2, 0, tzinfo=dt.UTC)) == "2026-10-25 03:00:00"
    # March's change skips an hour: nothing there reads twice.
    assert datetime_display(dt.datetime(2026, 3, 29, 0, 59, tzinfo=dt.UTC)) == "2026-03-29 01:59:00"
    assert datetime_display(dt.datetime(2026, 3, 29, 1, 0, tzinfo=dt.UTC)) == "2026-03-29 03:00:00"

    moments = [first - dt.timedelta(hours=1), first, second, second + dt.timedelta(hours=1)]
    narrow = [*COLUMNS, *(Column(f"x{i}", f"Extra {i}", "money") for i in range(12))]
    for columns, extra in ((COLUMNS, ()), (narrow, (123_456_78,) * 12)):
        rows = Rows(4, lambda i, extra=extra: (i + 1, "Tavolo 1", moments[i], 500, False, None, *extra))
        doc = ReportDocument("t", "", [], [Section("coups", "Coups", columns, rows)])
        text = pdf_text(written(write_pdf, doc), tmp_path, drawn_order=True)
        assert "2026-10-25 02:30:00 +02:00" in text and "2026-10-25 02:30:00 +01:00" in text, text
        assert text.index("02:30:00 +02:00") < text.index("02:30:00 +01:00")
        assert "2026-10-25 01:30:00 " in text and "2026-10-25 03:30:00" in text
        assert "…" not in text


@pytest.mark.parametrize(("note", "said"), [("", "No rows."), ("Nothing was\n deposited.", "No rows. Nothing was deposited.")])
def test_an_empty_section_says_so_in_the_xlsx_as_the_pdf_does(note, said, tmp_path):
    """The PDF draws "No rows." in an empty section's table, under its note (the CSV has the
    note too); the XLSX showed a header over nothing. It says the same now, under the header,
    outside the autofilter (not a row to sort or filter)."""
    columns = [Column("table", "Table", "int"), Column("amount", "Amount", "money")]
    doc = ReportDocument("T", "", [], [Section("empty", "Empty", columns, lambda: iter(()), note=note)])
    ws = openpyxl.load_workbook(io.BytesIO(written(write_xlsx, doc)))["Empty"]
    assert list(ws.iter_rows(values_only=True)) == [("Table", "Amount"), (said, None)]
    assert ws.auto_filter.ref == "A1:B1"
    text = pdf_text(written(write_pdf, doc), tmp_path, drawn_order=True)
    if text is not None:
        assert "No rows." in text and (not note or "Nothing was deposited." in text)


def test_pdf_prints_a_section_note_of_several_lines_whole(tmp_path):
    """The drawers' note (what the figures mean, the counts in force, the handovers counted and the
    sessions or handovers not counted, by name) takes six lines across the page in Italian: the
    PDF cut every note at three, ending in "…" before the totals and the names."""
    note = " ".join(f"Frase {i} della nota, che spiega le cifre della sezione al revisore." for i in range(16))
    note += " Non contati: tavolo 7 sessione 3, Zanzibar."
    font = pdf.fonts().regular
    assert len(pdf.wrap(note, font, 8, pdf.CONTENT_W, 100)) > 3
    cols = [Column("a", "A"), Column("b", "B", "int")]
    doc = ReportDocument("t", "", [], [Section("s", "S", cols, Rows(2, lambda i: ("x", i)), note=note)])
    text = pdf_text(written(write_pdf, doc), tmp_path, drawn_order=True)
    if text is None:
        pytest.skip("pypdf is not installed")
    assert "tavolo 7 sessione 3, Zanzibar." in text and "…" not in text


def test_xlsx_gives_a_section_s_note_as_its_header_s_comment_on_every_sheet(monkeypatch):
    """The CSV and the PDF print a section's note above its table (what a blank or a code
    means); the XLSX said it only under an empty section's header, so the sheet of a section
    with rows ("A blank 'Up to': no maximum") never said it. It is the first header cell's
    comment on each of the section's sheets; the rows stay the section's alone."""
    monkeypatch.setattr(xlsx, "MAX_SHEET_ROWS", 11)  # header + 10 rows: three sheets
    data = written(write_xlsx, make_doc(25, empty=True, charts=False))
    wb = openpyxl.load_workbook(io.BytesIO(data))
    for name in ("Coups", "Coups (2)", "Coups (3)"):
        assert wb[name]["A1"].comment is not None and wb[name]["A1"].comment.text == "Every coup of the day, in order."
        assert wb[name]["A1"].value == "Coup"  # the header as before
        assert all(cell.comment is None for row in wb[name].iter_rows(min_row=2) for cell in row)
    assert wb["Corrections"]["A1"].comment is None  # no note, no comment
    assert written(write_xlsx, make_doc(25, empty=True, charts=False)) == data  # still the same bytes
