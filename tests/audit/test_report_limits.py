"""The report's session lines give every minimum (and maximum) the session had, from the
opening, with the time of each change (RULES.md §6: the Commissario may change the minimum
at any time, even during play), in every format: the document's rows, CSV, XLSX, PDF, the
cagnotte register's API and the desk's day page; in a constant number of queries."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from dataclasses import dataclass
from pathlib import Path

import openpyxl
import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import DayReport
from audit.reports.builder import build_document
from floor import selectors as floor_selectors
from floor import services as floor_services
from floor.models import GamingDay, MinimumChange, TableSession
from tests.audit.test_exports import pdf_text
from tests.factories import CasinoFactory, SiteFactory

pytestmark = pytest.mark.django_db

# The first table's minimums, in order, as the session line says them; the second table none.
CHANGED = "100.00 EUR from 20:00; 200.00 EUR from 22:15; 300.00 EUR from 23:40"
CHANGED_MAX = "none from 20:00; 5,000.00 EUR from 23:40"
UNCHANGED = "250.00 EUR from 20:30"


@dataclass
class Evening:
    day: GamingDay
    changed: TableSession
    unchanged: TableSession


def at(hour: int, minute: int) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(timezone.localdate(), dt.time(hour, minute)))


def evening(*, commissario, capo, changeur, direzione, tables: int = 2, extra_changes: int = 0) -> Evening:
    casino = CasinoFactory()
    site = SiteFactory(casino=casino)
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    sessions = []
    for number in range(1, tables + 1):
        table = floor_services.table_create(casino=casino, site=site, number=number, by=direzione)
        sessions.append(floor_services.table_session_open(
            table=table, by=commissario, capo_partita=capo, changeur=changeur, shoe_number=f"S-{number}",
            minimum=100_00 if number == 1 else 250_00))  # fmt: skip
        if number == 1:
            s = sessions[0]
            floor_services.table_minimum_change(session=s, by=commissario, minimum=200_00, reason="busy")
            floor_services.table_minimum_change(session=s, by=commissario, minimum=200_00, maximum=5000_00,
                                                reason="high rollers: a maximum")  # fmt: skip
            floor_services.table_minimum_change(session=s, by=commissario, minimum=300_00, reason="busier")
            for i in range(extra_changes):
                floor_services.table_minimum_change(session=s, by=commissario, minimum=300_00 + (i + 1) * 100,
                                                    reason="more")  # fmt: skip
        floor_services.table_session_close(session=sessions[-1], by=commissario)
    # The moments of a real evening (the services stamp "now", a few milliseconds apart): the
    # first table opens at 20:00, the minimum goes to 200 at 22:15, the maximum comes at 23:40
    # with the minimum's rise to 300 (two changes in the same minute); the second opens at 20:30.
    TableSession.objects.filter(pk=sessions[0].pk).update(opened_at=at(20, 0))
    changes = list(MinimumChange.objects.filter(session=sessions[0]).order_by("at", "pk"))
    for change, moment in zip(changes, [at(22, 15), at(23, 40), at(23, 40)], strict=False):
        MinimumChange.objects.filter(pk=change.pk).update(at=moment)
    for i, change in enumerate(changes[3:]):
        MinimumChange.objects.filter(pk=change.pk).update(at=at(23, 41 + i % 18))
    for s in sessions[1:]:
        TableSession.objects.filter(pk=s.pk).update(opened_at=at(20, 30))
    return Evening(day, *(TableSession.objects.get(pk=s.pk) for s in sessions[:2]))


@pytest.fixture
def media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def night(db, commissario, capo_partita, changeur, direzione, media, django_capture_on_commit_callbacks) -> Evening:
    """The evening closed and its version-1 report built."""
    e = evening(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)
    with django_capture_on_commit_callbacks(execute=True):
        floor_services.gaming_day_close(gaming_day=e.day, by=commissario, open_sessions="refuse")
    report = DayReport.objects.get(gaming_day=e.day)
    assert report.status == "done", report.error
    e.day.refresh_from_db()
    return e


def test_limits_in_force_from_the_opening_through_each_change(night):
    limits = floor_selectors.day_session_limits(gaming_day_id=night.day.pk,
                                                sessions=[night.changed, night.unchanged])  # fmt: skip
    changed = limits[night.changed.pk]
    assert [(m.amount, m.since) for m in changed.minimums] == [
        (100_00, at(20, 0)), (200_00, at(22, 15)), (300_00, at(23, 40))]  # fmt: skip
    # A change of the maximum alone adds no minimum; the maximum's own history is kept.
    assert [(m.amount, m.since) for m in changed.maximums] == [(None, at(20, 0)), (5000_00, at(23, 40))]
    assert changed.minimums[-1].amount == night.changed.minimum  # the row: the minimum at the close
    unchanged = limits[night.unchanged.pk]
    assert [(m.amount, m.since) for m in unchanged.minimums] == [(250_00, at(20, 30))]
    assert [m.amount for m in unchanged.maximums] == [None] and not unchanged.had_maximum


def _session_rows(day) -> list[dict]:
    built = build_document(day=day, version=1, seal="s", streams=[], counts=[], count_history=[])
    section = next(s for s in built.document.sections if s.key == "sessions")
    keys = [c.key for c in section.columns]
    return [dict(zip(keys, row, strict=True)) for row in section.rows()]


def test_the_document_s_session_lines(night):
    rows = _session_rows(night.day)
    assert [(r["table"], r["minimums"], r["maximums"]) for r in rows] == [(1, CHANGED, CHANGED_MAX), (2, UNCHANGED, "")]


def _file(day, fmt: str) -> Path:
    return Path(settings.MEDIA_ROOT) / DayReport.objects.get(gaming_day=day).files.get(format=fmt).path


def test_the_csv_session_lines(night):
    text = _file(night.day, "csv").read_text("utf-8-sig")
    lines = list(csv.reader(io.StringIO(text)))
    header = next(line for line in lines if "minimums" in line)
    at_minimums, at_maximums = header.index("minimums"), header.index("maximums")
    start = lines.index(header) + 1
    rows = lines[start:start + 2]
    assert [(r[0], r[at_minimums], r[at_maximums]) for r in rows] == [("1", CHANGED, CHANGED_MAX), ("2", UNCHANGED, "")]


def test_the_xlsx_session_lines(night):
    book = openpyxl.load_workbook(_file(night.day, "xlsx"), read_only=True)
    found = None
    for sheet in book.worksheets:
        rows = [list(r) for r in sheet.iter_rows(values_only=True)]
        for i, row in enumerate(rows):
            if "Minimum (each in force from)" in row:
                found = (row.index("Minimum (each in force from)"), row.index("Maximum (each in force from)"),
                         rows[i + 1:i + 3])  # fmt: skip
                break
        if found:
            break
    assert found, "no sessions sheet"
    minimums, maximums, rows = found
    assert [(r[0], r[minimums], r[maximums]) for r in rows] == [(1, CHANGED, CHANGED_MAX), (2, UNCHANGED, None)]


def test_the_pdf_session_lines(night, tmp_path):
    text = pdf_text(_file(night.day, "pdf").read_bytes(), tmp_path, drawn_order=True)
    if text is None:
        pytest.skip("pypdf is not installed")
    flat = " ".join(text.split())
    # A cell wraps over lines; read as text, each limit with its time is whole and in order.
    items = [*CHANGED.split("; "), *CHANGED_MAX.split("; "), UNCHANGED]
    positions = [flat.find(item) for item in items]
    assert -1 not in positions, (items, flat[:3000])
    assert positions[:3] == sorted(positions[:3]) and positions[3] < positions[4]


def test_the_cagnotte_register_api(night, api, auditor):
    tables = api(auditor).get(f"/api/gaming-days/{night.day.pk}/cagnotte-register/").json()["tables"]
    first, second = (t["sessions"][0] for t in tables)

    def moments(items):
        return [(i["amount"], dt.datetime.fromisoformat(i["from"])) for i in items]

    assert moments(first["minimums"]) == [(100_00, at(20, 0)), (200_00, at(22, 15)), (300_00, at(23, 40))]
    assert moments(first["maximums"]) == [(None, at(20, 0)), (5000_00, at(23, 40))]
    assert moments(second["minimums"]) == [(250_00, at(20, 30))]


def _limits_cells(html: str, session: TableSession) -> tuple[str, str]:
    row = re.search(rf'<tr data-session="{session.pk}">(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r'<td class="limits (?:minimums|maximums)">(.*?)</td>', row, re.S)
    return tuple(re.sub(r"<[^>]+>", "", c).replace("\u202f", ",") for c in cells)


def test_the_desk_s_day_page(night, client, auditor):
    client.force_login(auditor)
    html = client.get(f"/desk/days/{night.day.pk}/").content.decode()
    assert _limits_cells(html, night.changed) == (
        "€\xa0100.00 from 20:00; €\xa0200.00 from 22:15; €\xa0300.00 from 23:40", "none from 20:00; €\xa05,000.00 from 23:40")
    assert _limits_cells(html, night.unchanged) == ("€\xa0250.00 from 20:30", "—")
    html = client.get(f"/desk/days/{night.day.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert _limits_cells(html, night.unchanged)[0] == "€\xa0250,00 dalle 20:30"  # the Italian decimal comma


def test_the_queries_do_not_grow_with_the_changes(commissario, capo_partita, changeur, direzione, client, auditor,
                                                  api):  # fmt: skip
    client.force_login(auditor)
    client.get("/desk/")  # warm: the session and the user's roles
    reader = api(auditor)
    reader.get("/api/me/")

    def queries(tables: int, extra: int) -> tuple[int, int, int]:
        e = evening(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione,
                    tables=tables, extra_changes=extra)  # fmt: skip
        with CaptureQueriesContext(connection) as page:
            assert client.get(f"/desk/days/{e.day.pk}/").status_code == 200
        with CaptureQueriesContext(connection) as register:
            assert reader.get(f"/api/gaming-days/{e.day.pk}/cagnotte-register/").status_code == 200
        with CaptureQueriesContext(connection) as document:
            rows = _session_rows(e.day)
        assert len(rows) == tables
        return len(page), len(register), len(document)

    assert queries(2, 0) == queries(4, 5)


def test_a_limit_changed_in_the_repeated_hour_says_its_offset(commissario, capo_partita, changeur, direzione,
                                                              client, auditor):  # fmt: skip
    """QA: on the October night the clock reads 02:00-02:59 twice. A minimum raised at 02:15
    CEST and again at 02:10 CET read "from 02:15; from 02:10", in force order but seemingly
    backwards; in that hour the time carries its UTC offset, in the report's session line and
    on the desk's day page. The session's opening and close on the desk, likewise."""
    e = evening(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)
    cest, cet = dt.datetime(2026, 10, 25, 0, 15, tzinfo=dt.UTC), dt.datetime(2026, 10, 25, 1, 10, tzinfo=dt.UTC)
    TableSession.objects.filter(pk=e.changed.pk).update(
        opened_at=dt.datetime(2026, 10, 24, 18, 0, tzinfo=dt.UTC), closed_at=cet + dt.timedelta(minutes=5))
    changes = list(MinimumChange.objects.filter(session=e.changed).order_by("at", "pk"))
    for change, moment in zip(changes, [dt.datetime(2026, 10, 24, 22, 30, tzinfo=dt.UTC), cest, cet], strict=True):
        MinimumChange.objects.filter(pk=change.pk).update(at=moment)
    row = _session_rows(e.day)[0]
    assert row["minimums"] == "100.00 EUR from 20:00; 200.00 EUR from 00:30; 300.00 EUR from 02:10+01:00"
    assert row["maximums"] == "none from 20:00; 5,000.00 EUR from 02:15+02:00"
    client.force_login(auditor)
    html = client.get(f"/desk/days/{e.day.pk}/").content.decode()
    assert _limits_cells(html, e.changed) == (
        "€\xa0100.00 from 20:00; €\xa0200.00 from 00:30; €\xa0300.00 from 02:10+01:00",
        "none from 20:00; €\xa05,000.00 from 02:15+02:00")
    session_row = re.search(rf'<tr data-session="{e.changed.pk}">(.*?)</tr>', html, re.S).group(1)
    assert re.findall(r"<td>([^<]*)</td>", session_row)[1:3] == ["20:00", "02:15+01:00"]
