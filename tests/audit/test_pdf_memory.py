"""The PDF export streams: its peak memory does not grow with the rows, pages reach the file
while rows are still coming, and the file it writes page by page is a well-formed PDF (every
xref entry points at its object, the page tree holds every page)."""

from __future__ import annotations

import io
import itertools
import math
import re
import tempfile
import tracemalloc

import pytest

from audit.exports import pdf, write_pdf
from audit.exports.document import Column, ReportDocument, Section
from audit.exports.formatting import money_display

from .test_exports import SEAL, Rows, make_doc, written

# Two narrow columns: a page holds many rows, and tracemalloc's cost stays in seconds.
COLUMNS = [Column("coup", "Coup", "int"), Column("levy", "Levy", "money")]


def levy_row(i: int) -> tuple[int, int]:
    return (i + 1, i * 5 - 7)


def one_section(n: int) -> ReportDocument:
    return ReportDocument("t", "", [("Audit seal", SEAL)], [Section("s", "S", COLUMNS, Rows(n, levy_row))])


def expected_pages(n: int) -> int:
    """The cover, then the rows at a full page each (one section with no note, no charts)."""
    sample = [[f"{a:,}", money_display(b)] for a, b in map(levy_row, range(pdf.LAYOUT_SAMPLE))]
    return 1 + math.ceil(n / pdf.single_line_rows_per_page(COLUMNS, sample))


def pdf_structure(data: bytes) -> dict[str, int]:
    """Check the file as a reader finds its way in, from the end: startxref -> the xref table
    -> every object where its entry says -> the trailer's root -> the page tree -> each page.
    Returns the page count and the number of objects."""
    assert data.startswith(b"%PDF-1.4\n")
    tail = re.search(rb"startxref\n(\d+)\n%%EOF\n\Z", data)
    assert tail, data[-200:]
    xref_at = int(tail.group(1))
    head = re.match(rb"xref\n0 (\d+)\n", data[xref_at:])
    assert head, data[xref_at : xref_at + 40]
    size = int(head.group(1))
    entries_at = xref_at + head.end()
    entries = [data[entries_at + 20 * i : entries_at + 20 * (i + 1)] for i in range(size)]
    assert entries[0] == b"0000000000 65535 f \n"
    offsets = {}
    for number, entry in enumerate(entries[1:], start=1):
        m = re.fullmatch(rb"(\d{10}) 00000 n \n", entry)
        assert m, (number, entry)
        offsets[number] = int(m.group(1))
        assert data.startswith(b"%d 0 obj\n" % number, offsets[number]), number
    assert len(set(offsets.values())) == size - 1  # no two objects at one place
    trailer = data[entries_at + 20 * size :]
    assert trailer.startswith(b"trailer\n")
    assert re.search(rb"/Size %d\b" % size, trailer)

    def obj(number: int) -> bytes:
        start = offsets[number]
        return data[start : data.index(b"endobj", start)]

    def ref(body: bytes, key: bytes) -> int:
        m = re.search(rb"/" + key + rb" (\d+) 0 R", body)
        assert m, (key, body[:200])
        return int(m.group(1))

    root = ref(obj(ref(trailer, b"Root")), b"Pages")
    tree = obj(root)
    assert b"/Type /Pages" in tree
    count = int(re.search(rb"/Count (\d+)", tree).group(1))
    kids = [int(k) for k in re.findall(rb"(\d+) 0 R", tree[tree.index(b"/Kids [") :])]
    assert len(kids) == count == len(set(kids))
    for kid in kids:
        page = obj(kid)
        assert re.search(rb"/Type /Page\b(?!s)", page), kid
        assert ref(page, b"Parent") == root
        assert data.startswith(b"%d 0 obj\n" % ref(page, b"Contents"), offsets[ref(page, b"Contents")])
    # every page object of the file is in the tree
    assert len(re.findall(rb"/Type /Page\b(?!s)", data)) == count
    return {"pages": count, "objects": size - 1}


def peak_and_file(n: int) -> tuple[int, bytes]:
    """The writer's peak traced memory for n rows written to a real file, and the file."""
    doc = one_section(n)
    with tempfile.TemporaryFile() as fp:
        tracemalloc.start()
        try:
            write_pdf(doc, fp)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        fp.seek(0)
        return peak, fp.read()


@pytest.mark.slow
def test_pdf_peak_memory_does_not_grow_with_the_rows():
    written(write_pdf, one_section(10))  # fonts registered, modules imported
    small_peak, small = peak_and_file(2_000)
    big_peak, big = peak_and_file(20_000)
    # ten times the rows, ten times the pages ...
    small_pages, big_pages = pdf_structure(small)["pages"], pdf_structure(big)["pages"]
    assert (small_pages, big_pages) == (expected_pages(2_000), expected_pages(20_000))
    assert big_pages > 9 * small_pages and big_pages > 500
    # ... and the same peak. The writer that kept every page until save() grew by about
    # 230 bytes per row here (4 MB for the 18,000 more rows); 64 KiB is 3.6 bytes per row,
    # room for allocator noise, not for anything kept per row or per page.
    assert abs(big_peak - small_peak) < 64 * 1024, (small_peak, big_peak)
    assert big_peak < 2_000_000, big_peak


def test_pages_reach_the_file_while_rows_are_still_coming():
    n = 10_000
    out = io.BytesIO()
    seen: list[int] = []

    def rows():
        for i in range(n):
            if i % 1_000 == 0 or i == n - 1:
                seen.append(out.tell())  # what the file held when row i was asked for
            yield levy_row(i)

    doc = ReportDocument("t", "", [], [Section("s", "S", COLUMNS, rows)])
    write_pdf(doc, out)
    final = len(out.getvalue())
    # The file grows as the rows come, about as much for every thousand rows ...
    steps = [b - a for a, b in itertools.pairwise(seen[:-1])]
    assert min(steps) > 0.8 * max(steps) > 0, steps
    # ... and when the last row is asked for, all but the end is written (the end: the
    # last page, the fonts' subsets, the forms, the page tree, the xref table).
    assert seen[-1] > 0.8 * final, (seen, final)
    assert pdf_structure(out.getvalue())["pages"] == expected_pages(n)


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(lambda: make_doc(120), id="sections-notes-charts"),
        pytest.param(lambda: ReportDocument("Empty day", "", [], [], []), id="empty"),
    ],
)
def test_the_streamed_file_is_well_formed(doc):
    data = written(write_pdf, doc())
    structure = pdf_structure(data)
    assert structure["pages"] >= 1
    pypdf = pytest.importorskip("pypdf")
    reader = pypdf.PdfReader(io.BytesIO(data), strict=True)
    assert len(reader.pages) == structure["pages"]
    last = " ".join(reader.pages[-1].extract_text().split())
    total = structure["pages"]
    assert f"Page {total} of {total}" in last  # the page total, a form written at the very end


def test_the_last_rows_are_on_the_last_page_read_back_by_pypdf():
    pypdf = pytest.importorskip("pypdf")
    n = 1_000
    data = written(write_pdf, one_section(n))
    reader = pypdf.PdfReader(io.BytesIO(data), strict=True)
    assert len(reader.pages) == expected_pages(n) == pdf_structure(data)["pages"]
    last = " ".join(reader.pages[-1].extract_text().split())
    coup, levy = levy_row(n - 1)
    assert f"{coup:,} {money_display(levy)}" in last
    cover = " ".join(reader.pages[0].extract_text().split())
    assert re.search(rf"\bS {n:,} 2\b", cover), cover  # contents: the section, its rows, its page
