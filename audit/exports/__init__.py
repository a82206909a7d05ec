"""Exports of end-of-day reports: CSV, XLSX and PDF, streamed from a ReportDocument.

    from audit.exports import WRITERS
    spec = WRITERS["pdf"]
    with open(f"day.{spec.extension}", "wb") as fp:
        spec.write(doc, fp)          # or write_pdf(doc, fp, created=..., tz=...)
    # HTTP: Content-Type spec.content_type

Every writer takes the document and a binary file object (left open), calls each
section's `rows` once and streams them; the same document gives the same bytes (the
XLSX/PDF metadata carry `doc.created`, never the clock). The formatting decisions shared by
the three formats are in formatting.py: money in euros (exact), local time, etc."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from audit.exports import csv as _csv
from audit.exports import pdf as _pdf
from audit.exports import xlsx as _xlsx
from audit.exports.csv import write_csv
from audit.exports.document import ReportDocument
from audit.exports.pdf import write_pdf
from audit.exports.xlsx import write_xlsx


@dataclass(frozen=True)
class Writer:
    write: Callable[..., Any]  # (doc: ReportDocument, fp: BinaryIO, **options) -> None
    content_type: str
    extension: str  # without the dot

    def __call__(self, doc: ReportDocument, fp: BinaryIO, **options: Any) -> None:
        self.write(doc, fp, **options)


WRITERS: dict[str, Writer] = {
    "csv": Writer(write_csv, _csv.CONTENT_TYPE, _csv.EXTENSION),
    "xlsx": Writer(write_xlsx, _xlsx.CONTENT_TYPE, _xlsx.EXTENSION),
    "pdf": Writer(write_pdf, _pdf.CONTENT_TYPE, _pdf.EXTENSION),
}

__all__ = ["WRITERS", "Writer", "write_csv", "write_pdf", "write_xlsx"]
