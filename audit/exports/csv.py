"""The CSV export: one file, plain UTF-8 (no BOM), RFC 4180 (comma, CRLF, fields quoted only
when needed), written row by row.

Layout (every line is a valid CSV record):

    # <title>
    # <subtitle>                      (when there is one)
    # <fact key>,<fact value>         (one record per fact)
                                      (empty line)
    # <section title>                 (a one-field record opening each section)
    # <section note>                  (when there is one)
    <column keys>                     (money columns: key + "_eur")
    <rows>
                                      (empty line)
    # Chart: <chart title>            (each chart, as a two-column section)
    label,value                       (value_eur for a money chart)

A reader takes a one-field record starting with "# " after an empty line as the start of a
section, skips the following "# " records, and reads the header. Money is euros as a plain
decimal string ("-1234.50"): see formatting.py for the shared decisions. No BOM because the
CSV is for machines (a BOM breaks many parsers); people get the XLSX. Yet a CSV is also
opened in a spreadsheet, which runs a cell that starts with "=", "+", "-", "@", a tab or a
carriage return as a formula (a reason typed at a table could be one): such a text cell is
written with a "'" before it (OWASP's advice), and only text cells (money and numbers are
never prefixed). A reader strips one leading "'" from a text cell to get the books' text;
the XLSX writes text cells as text, the PDF draws them."""

from __future__ import annotations

import csv
import datetime as dt
import io
from typing import BinaryIO

from audit.exports.document import Column, ReportDocument
from audit.exports.formatting import csv_cell, csv_header, fact_text, in_language, money_plain

CONTENT_TYPE = "text/csv; charset=utf-8"
EXTENSION = "csv"


def _one_line(text: str) -> str:
    return " ".join(text.split())


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _defused(column: Column, cell: str) -> str:
    if column.kind == "text" and cell.startswith(_FORMULA_START):
        return "'" + cell
    return cell


def write_csv(
    doc: ReportDocument, fp: BinaryIO, *, created: dt.datetime | None = None, tz: dt.tzinfo | None = None
) -> None:
    """Write `doc` to the binary file `fp` (left open). Each section's rows are consumed once.
    `created` is accepted for a uniform signature: a CSV has no metadata to stamp. Written in
    the document's language (its rows' words are made as they are read); the header lines
    (the columns' keys), "# Chart: " and "label,value" are the same in every language: a
    reader finds its way by them."""
    text = io.TextIOWrapper(fp, encoding="utf-8", newline="", write_through=True)
    try:
        with in_language(doc.language):
            _write(doc, text, tz)
        text.flush()
    finally:
        # Hand the caller's file back open: closing the wrapper would close it.
        text.detach()


def _write(doc: ReportDocument, text: io.TextIOWrapper, tz: dt.tzinfo | None) -> None:
    out = csv.writer(text, lineterminator="\r\n")
    out.writerow([f"# {_one_line(doc.title)}"])
    if doc.subtitle:
        out.writerow([f"# {_one_line(doc.subtitle)}"])
    for key, value in doc.facts:
        out.writerow([f"# {key}", fact_text(value)])

    for section in doc.sections:
        columns: list[Column] = list(section.columns)
        out.writerow([])
        out.writerow([f"# {_one_line(section.title)}"])
        if section.note:
            out.writerow([f"# {_one_line(section.note)}"])
        out.writerow([csv_header(c) for c in columns])
        width = len(columns)
        for row in section.rows():
            if len(row) != width:
                raise ValueError(
                    f"section {section.key!r}: a row has {len(row)} cells for {width} columns"
                )
            out.writerow([_defused(c, csv_cell(c, v, tz)) for c, v in zip(columns, row, strict=True)])

    for chart in doc.charts:
        out.writerow([])
        out.writerow([f"# Chart: {_one_line(chart.title)}"])
        money = chart.unit == "cents"
        out.writerow(["label", "value_eur" if money else "value"])
        for label, value in zip(chart.labels, chart.values, strict=True):
            out.writerow([label, money_plain(value) if money else str(value)])
