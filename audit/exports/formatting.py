"""How a cell value becomes text or a spreadsheet value, the same way in the three formats.

The decisions, once for CSV, XLSX and PDF:

- **Money** arrives as integer cents and is always shown in **euros with two decimals**,
  computed with integer/Decimal arithmetic only (never a float): CSV writes a plain
  decimal string ("1234.50", "-0.05") in a column whose header is the key with the suffix
  "_eur"; XLSX writes the exact Decimal (cents / 100) with a euro number format; the PDF
  writes "1,234.50" with "(€)" in the column title. A money cell that is not an int (a
  float, a Decimal, a string) is refused: it would mean someone did arithmetic on money
  outside the books.
- **Datetimes** are shown in the casino's local time (settings.TIME_ZONE, Europe/Rome),
  to the second. CSV writes ISO 8601 with the UTC offset ("2026-11-29T21:16:29+01:00"),
  so it is unambiguous across the DST change; XLSX writes a native Excel datetime, which
  cannot carry a zone, as the naive local wall time; the PDF writes "2026-11-29 21:16:29",
  and a time of the hour the October change repeats with its offset ("2026-10-25 02:30:00
  +02:00", then "... +01:00"), the date, the time and the offset each on a line if need be.
  A naive datetime in the rows is taken as already local. A date stays a date.
- **Booleans**: "true"/"false" in CSV, native booleans in XLSX, "yes"/"no" in the PDF.
- **None** is an empty cell everywhere.
- **Facts** (the document's key figures): a count is an int and an amount a Money; the XLSX
  writes them as numbers (formatted as the sheets' ints and euros), the CSV and the PDF as
  text: the count as it is ("1234"), the amount as "1,234.50 EUR".
- **Language** (the document's, active while a writer writes: ReportDocument.language): the
  text for people follows it, its machine-readable form does not. In Italian the PDF's
  figures and the facts' amounts group thousands with "." and take "," before the decimals
  ("1.234,50 EUR", a rate "0,508538", a count "1.234"), and booleans read "sì"/"no"; the
  CSV's cells stay plain ("1234.50", "true"), the XLSX's cells are numbers whatever the
  language (Excel shows them in its reader's own locale). Datetimes are ISO in every
  language ("2026-11-29 21:16:29"): unambiguous, sortable, and the same in both.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from functools import cache
from zoneinfo import ZoneInfo

from audit.exports.document import Column, FactValue, Money

EPOCH_CREATED = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
"""The creation time written into XLSX/PDF metadata when the document gives none: fixed, so
that the same document always gives the same bytes."""


@cache
def local_zone() -> dt.tzinfo:
    """The casino's zone: settings.TIME_ZONE when Django is configured, else UTC."""
    try:
        from django.conf import settings

        name = settings.TIME_ZONE if settings.configured else "UTC"
    except ImportError:  # pragma: no cover - Django is always installed in this project
        name = "UTC"
    return ZoneInfo(name or "UTC")


def _check_cents(value: object) -> int:
    # bool is an int subclass, but True is not an amount.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"money must be integer cents, got {type(value).__name__}: {value!r}")
    return value


def money_decimal(cents: int) -> Decimal:
    """Cents as an exact Decimal of euros: -5 -> Decimal('-0.05'), 123450 -> Decimal('1234.50')."""
    return Decimal(_check_cents(cents)).scaleb(-2)


def money_plain(cents: int) -> str:
    """Cents as a plain decimal string of euros: "1234.50", "-0.05", "0.00"."""
    cents = _check_cents(cents)
    euros, rest = divmod(abs(cents), 100)
    return f"{'-' if cents < 0 else ''}{euros}.{rest:02d}"


# Thousands and decimal separators by language, for the text people read (PDF, facts, notes).
_SEPARATORS = {"it": (".", ",")}


def _separators() -> tuple[str, str]:
    """(thousands, decimal) of the active language: "," and "." unless it says otherwise."""
    if not _django_ready():
        return ",", "."
    from django.utils.translation import get_language

    return _SEPARATORS.get((get_language() or "en").split("-")[0], (",", "."))


def number_display(value: int) -> str:
    """An integer with its thousands grouped, for reading: "1,234" ("1.234" in Italian)."""
    thousands, _decimal = _separators()
    return f"{value:,}".replace(",", thousands)


def money_display(cents: int) -> str:
    """Cents as euros with thousands separators, for reading: "1,234.50", "-0.05" (in Italian
    "1.234,50", "-0,05")."""
    cents = _check_cents(cents)
    euros, rest = divmod(abs(cents), 100)
    thousands, decimal = _separators()
    return f"{'-' if cents < 0 else ''}{euros:,}".replace(",", thousands) + f"{decimal}{rest:02d}"


def local_naive(value: dt.datetime | dt.date, tz: dt.tzinfo | None = None) -> dt.datetime | dt.date:
    """The local wall time, naive, to the second (a date is returned as it is)."""
    if not isinstance(value, dt.datetime):
        return value
    if value.tzinfo is not None:
        value = value.astimezone(tz or local_zone()).replace(tzinfo=None)
    return value.replace(microsecond=0)


def datetime_iso(value: dt.datetime | dt.date, tz: dt.tzinfo | None = None) -> str:
    """ISO 8601 in local time with the offset, to the second; a date as YYYY-MM-DD."""
    if not isinstance(value, dt.datetime):
        return value.isoformat()
    zone = tz or local_zone()
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone)
    return value.astimezone(zone).isoformat(timespec="seconds")


def repeated_offset(value: dt.datetime, tz: dt.tzinfo | None = None) -> str:
    """The UTC offset ("+02:00") of a time in the hour the local clock reads twice (the October
    change: 02:00-02:59 CEST, then CET), where the clock alone does not say which; else ""."""
    if value.tzinfo is None:
        return ""
    local = value.astimezone(tz or local_zone())
    if local.replace(fold=1 - local.fold).utcoffset() == local.utcoffset():
        return ""
    return local.isoformat(timespec="seconds")[19:]


def datetime_display(value: dt.datetime | dt.date, tz: dt.tzinfo | None = None) -> str:
    """The local wall time, "2026-11-29 21:16:29"; in the hour the clock reads twice with its
    UTC offset, "2026-10-25 02:30:00 +02:00" (repeated_offset)."""
    if not isinstance(value, dt.datetime):
        return value.isoformat()
    text = local_naive(value, tz).isoformat(sep=" ", timespec="seconds")
    offset = repeated_offset(value, tz)
    return f"{text} {offset}" if offset else text


def csv_header(column: Column) -> str:
    """The CSV header of a column: its key, and for money the key ending in "_eur" (a key
    that says "_cents" has that replaced, so a header never claims the wrong unit)."""
    if column.kind != "money":
        return column.key
    key = column.key.removesuffix("_cents")
    return key if key.endswith("_eur") else f"{key}_eur"


def csv_cell(column: Column, value: object, tz: dt.tzinfo | None = None) -> str:
    if value is None:
        return ""
    kind = column.kind
    if kind == "money":
        return money_plain(value)  # type: ignore[arg-type]
    if kind == "datetime" and isinstance(value, dt.date):
        return datetime_iso(value, tz)
    if kind == "bool":
        return "true" if value else "false"
    return str(value)


def display_cell(column: Column, value: object, tz: dt.tzinfo | None = None) -> str:
    """The text of a cell in the PDF."""
    if value is None:
        return ""
    kind = column.kind
    if kind == "money":
        return money_display(value)  # type: ignore[arg-type]
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return number_display(value)
    if kind == "datetime" and isinstance(value, dt.date):
        return datetime_display(value, tz)
    if kind == "bool":
        return pgettext("report cell", "yes") if value else pgettext("report cell", "no")
    if kind == "rate" and isinstance(value, str):
        return value.replace(".", _separators()[1])  # exact decimal text: "0.508538", "0,508538"
    return str(value)


def _django_ready() -> bool:
    try:
        from django.conf import settings
    except ImportError:  # pragma: no cover - Django is always installed in this project
        return False
    return settings.configured


def gettext(message: str) -> str:
    """Django's gettext when Django is configured, else the message as it is (English): the
    writers also run outside Django (a script, a fresh process)."""
    if not _django_ready():
        return message
    from django.utils.translation import gettext as django_gettext

    return django_gettext(message)


def pgettext(context: str, message: str) -> str:
    """Django's pgettext when Django is configured, else the message as it is (gettext)."""
    if not _django_ready():
        return message
    from django.utils.translation import pgettext as django_pgettext

    return django_pgettext(context, message)


def in_language(language: str):
    """A context that makes `language` the active one while a writer writes (the document's:
    ReportDocument.language); nothing to do when Django is not configured."""
    import contextlib

    if not _django_ready():
        return contextlib.nullcontext()
    from django.utils import translation

    return translation.override(language)


def fact_text(value: FactValue) -> str:
    """A fact as the CSV and the PDF write it."""
    if isinstance(value, Money):
        return f"{money_display(value.cents)} EUR"
    return str(value)


def chart_value_display(value: int, unit: str) -> str:
    return money_display(value) if unit == "cents" else number_display(value)


def created_of(created: dt.datetime | None) -> dt.datetime:
    """The creation time to stamp into metadata, aware and to the second."""
    if created is None:
        return EPOCH_CREATED
    if created.tzinfo is None:
        created = created.replace(tzinfo=local_zone())
    return created.replace(microsecond=0)
