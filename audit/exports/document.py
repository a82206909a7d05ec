"""What an export writes: a report as plain data, with its rows streamed.

The report service builds a ReportDocument whose sections yield their rows lazily (from
database iterators), so a writer never holds a whole day in memory. Writers take the
document and a binary file object, and must consume each section's rows exactly once, in
order. Money is integer cents in the rows; writers format it (a "money" column says so, and
among the facts a Money value)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# "rate": a proportion given as exact decimal text ("0.508538"), written as that text in the
# CSV and the PDF and as a number in the XLSX.
ColumnKind = Literal["text", "int", "money", "datetime", "bool", "rate"]


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    kind: ColumnKind = "text"
    width: int | None = None  # the XLSX column's width, for sentences (else by kind)
    # A text column of codes ("banker", "buy_in"): the words people read for each, in the
    # document's language. The PDF and the XLSX show the words, the CSV the codes (machines
    # read them; they are the same in every language). A code without words shows as itself.
    labels: Mapping[str, str] | None = field(default=None, compare=False, hash=False)

    def shown(self, value: object) -> object:
        """A cell as people read it: a code's words, any other value as it is."""
        if self.labels and isinstance(value, str):
            return self.labels.get(value, value)
        return value


@dataclass(frozen=True)
class Money:
    """An amount among the facts: integer cents, which each writer shows its way (the XLSX
    as a number in euros, the CSV and the PDF as "1,234.50 EUR")."""

    cents: int


FactValue = str | int | Money  # an int is a count


@dataclass
class Section:
    """One table of the report. `rows` is called once by the writer and yields sequences in
    column order; it is a callable so that building the document runs no query."""

    key: str
    title: str
    columns: Sequence[Column]
    rows: Callable[[], Iterable[Sequence[Any]]]
    note: str = ""
    # A closing total row, in the columns' kinds (a label may stand in the first column). The
    # XLSX writes it under the rows, bold and outside the autofilter; the CSV, a data export,
    # leaves it out (a reader summing a column would count it twice), and the PDF as well:
    # there the note carries the total, as in the CSV.
    total: Sequence[Any] | None = None
    # The XLSX's sheet name: a short title of its own, in the document's language, whole within
    # Excel's 31 characters and none of []:*?/\ (a title cut there read "Offerte del banco,
    # nell'" or "Patrons at or above"). Empty: the writer makes one from the title.
    sheet: str = ""


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    labels: Sequence[str]
    values: Sequence[int]
    unit: Literal["cents", "count"] = "count"


@dataclass
class ReportDocument:
    title: str
    subtitle: str
    facts: Sequence[tuple[str, FactValue]]  # key facts shown first: the day, totals, the audit seal
    sections: Sequence[Section]
    charts: Sequence[Chart] = field(default_factory=list)
    # Added for the writers: the time stamped into the XLSX/PDF metadata (e.g. the day's
    # close). Fixed by the document, never "now", so rebuilding a day gives the same bytes
    # (and checksum); None stamps a fixed epoch (2000-01-01T00:00Z).
    created: dt.datetime | None = None
    # The language of the document's words (a code of settings.LANGUAGES): the writers write
    # under it (translation.override), so the words they add ("Page 1 of 3", the sheet
    # "Summary", "yes"/"no") and the rows' words, made as they are read, are in the same
    # language as the titles, whatever language the process is in.
    language: str = "en"
