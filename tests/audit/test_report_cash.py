"""The changeur's register in the end-of-day report (tables.services.cash): every line of the
day, voided ones included, the day's totals, the patrons whose exchanges of the whole gaming
day (every table and session, voids left out) reached AML_IDENTIFY_CENTS, alike in the
summary, the CSV, the XLSX and the PDF; and the report's verification holding its lines to
the session streams' events as of the build (`cash_mismatch`)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from audit.models import DayReport
from floor import services as floor_services
from floor.models import Seat
from floor.roles import Role
from tables import services as table_services
from tests.audit.conftest import raw_sql, staff_said
from tests.audit.test_exports import csv_blocks, pdf_text
from tests.audit.test_reports import _file, close
from tests.audit.test_reports import closed as closed  # the fixtures of the day the reports test
from tests.audit.test_reports import media as media
from tests.audit.test_reports import world as world

pytestmark = pytest.mark.django_db

SECTION = "Cash exchanged at the tables (changeur)"
AML = "Patrons at or above the identification threshold (AML)"
HEADER = ["table", "session", "line", "at", "direction", "amount_eur", "patron", "identification_required", "by",
          "voided_at", "voided_by", "void_reason"]  # fmt: skip
AML_HEADER = ["patron_id", "patron", "total_eur", "exchanges"]
NONE_NOTE = "No cash was exchanged at the tables on this day."


def _exchange(session, by, direction, amount, patron=None):
    return table_services.cash_exchange_record(session=session, by=by, direction=direction, amount=amount,
                                               patron=patron)  # fmt: skip


def _two_tables(world, make_user, settings):
    """Table 2 (session 1): X buys in 1,500.00; an unnamed cash-out of 300.00; Y's 2,500.00
    (identification required) voided by the Commissario, then Y's cash-out of 100.00. X then
    leaves table 2 for a new session at table 1, where he cashes out 600.00: 2,100.00 in the
    day, at or above the threshold only summed across the tables (neither session reached it
    for him); Y stays below it, his voided line left out."""
    settings.AML_IDENTIFY_CENTS = 2_000_00
    s2 = world.sessions[1]
    seat_x = Seat.objects.get(session=s2, seat_number=6)
    x, y = seat_x.patron, Seat.objects.get(session=s2, seat_number=7).patron
    first = _exchange(s2, s2.changeur, "buy_in", 1500_00, x)
    unnamed = _exchange(s2, s2.changeur, "cash_out", 300_00)
    wrong = _exchange(s2, s2.changeur, "buy_in", 2500_00, y)
    wrong = table_services.cash_exchange_void(exchange=wrong, by=world.commissario, reason="wrong patron")
    last = _exchange(s2, s2.changeur, "cash_out", 100_00, y)
    floor_services.seat_release(seat=seat_x, by=world.commissario)
    s3 = floor_services.table_session_open(
        table=world.tables[0], by=world.commissario, capo_partita=make_user("capo_b", Role.CAPO_PARTITA),
        changeur=make_user("changeur_b", Role.CHANGEUR), shoe_number="S-3", minimum=100_00,
    )  # fmt: skip
    floor_services.seat_assign(session=s3, patron=x, standing=True, by=world.commissario)
    other = _exchange(s3, s3.changeur, "cash_out", 600_00, x)
    assert not first.identification_required and not other.identification_required
    assert wrong.identification_required
    return s2, s3, x, y, [other, first, unnamed, wrong, last]


def _xlsx(data: bytes, title: str):
    import io

    import openpyxl

    wb = openpyxl.load_workbook(io.BytesIO(data))
    listing = {row[0]: row[1:] for row in wb["Summary"].iter_rows(values_only=True) if row and row[0]}
    sheet, count = listing[title][:2]
    return list(wb[sheet].iter_rows(values_only=True)), count, listing


def test_the_report_lists_the_days_exchanges_and_the_patrons_at_the_threshold_alike_everywhere(
    world, media, make_user, settings, tmp_path, django_capture_on_commit_callbacks
):
    s2, s3, x, y, lines = _two_tables(world, make_user, settings)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == "done", report.error
    held = report.summary["cash"]
    assert {k: v for k, v in held.items() if k != "as_recorded"} == {
        "count": 4, "buy_ins": 1500_00, "cash_outs": 1000_00, "net": 500_00, "voided": 1, "threshold": 2_000_00,
        "aml": [{"patron": x.pk, "total": 2100_00, "count": 2}]}  # fmt: skip
    assert sorted(held["as_recorded"], key=int) == sorted((str(line.pk) for line in lines), key=int)

    # Who recorded and voided each line, as the report names every member of staff.
    boss, c2, c3 = staff_said(world.commissario), staff_said(s2.changeur), staff_said(s3.changeur)
    # By table, session and line: table 1's new session first, then table 2's four lines.
    expected = [
        ["1", str(s3.number), "1", "cash_out", "600.00", x.full_name, "false", c3, "", ""],
        ["2", "1", "1", "buy_in", "1500.00", x.full_name, "false", c2, "", ""],
        ["2", "1", "2", "cash_out", "300.00", "", "false", c2, "", ""],
        ["2", "1", "3", "buy_in", "2500.00", y.full_name, "true", c2, boss, "wrong patron"],
        ["2", "1", "4", "cash_out", "100.00", y.full_name, "false", c2, "", ""],
    ]

    def without_times(row):
        return row[:3] + row[4:9] + row[10:]

    files = {fmt: _file(report, fmt).read_bytes() for fmt in ("csv", "xlsx", "pdf")}
    preamble, blocks = csv_blocks(files["csv"])
    block = blocks[SECTION]
    assert block[0] == ["# Exchanges standing: 4; buy-ins (cash for chips) 1,500.00 EUR, cash-outs (chips for cash) "
                        "1,000.00 EUR, net 500.00 EUR; voided: 1 (listed, not in the totals)."]  # fmt: skip
    assert block[1] == HEADER
    assert [without_times(row) for row in block[2:]] == expected
    assert all(row[3] for row in block[2:]) and [bool(row[9]) for row in block[2:]] == [False] * 3 + [True, False]
    assert blocks[AML][1:] == [AML_HEADER, [str(x.pk), x.full_name, "2100.00", "2"]]
    assert "Patrons at or above it: 1." in blocks[AML][0][0]
    for fact in (["# Cash exchanges (changeur), standing", "4"], ["# Cash buy-ins (cash for chips)", "1,500.00 EUR"],
                 ["# Cash cash-outs (chips for cash)", "1,000.00 EUR"],
                 ["# Cash exchanged, net (buy-ins less cash-outs)", "500.00 EUR"], ["# Cash exchanges voided", "1"],
                 ["# Patrons at or above the AML threshold", "1"]):  # fmt: skip
        assert fact in preamble, fact

    rows, count, listing = _xlsx(files["xlsx"], SECTION)
    assert count == 5 and rows[0] == ("Table", "Session", "Line", "At", "Direction", "Amount", "Patron",
                                      "Identification required", "Recorded by", "Voided at", "Voided by",
                                      "Void reason")  # fmt: skip

    def xlsx_text(row):
        cells = ["" if v is None else f"{Decimal(str(v)):.2f}" if i == 5 else str(v).lower() if i == 7 else str(v)
                 for i, v in enumerate(row)]  # fmt: skip
        return without_times(cells)

    assert [xlsx_text(row) for row in rows[1:]] == expected
    assert [type(row[3]).__name__ for row in rows[1:]] == ["datetime"] * 5
    assert [row[9] is not None for row in rows[1:]] == [False] * 3 + [True, False]
    aml_rows, aml_count, _ = _xlsx(files["xlsx"], AML)
    assert aml_count == 1 and aml_rows[1][:2] == (x.pk, x.full_name) and aml_rows[1][3] == 2
    assert Decimal(str(aml_rows[1][2])) == Decimal("2100.00")
    assert listing["Cash exchanges voided"][0] == 1
    assert Decimal(str(listing["Cash exchanged, net (buy-ins less cash-outs)"][0])) == Decimal("500.00")

    text = pdf_text(files["pdf"], tmp_path, drawn_order=True)
    if text is None:
        pytest.skip("pypdf is not installed")
    for said in (SECTION, AML, "Identification required", "wrong patron", "2,500.00", "2,100.00", x.full_name,
                 y.full_name, "Cash exchanges voided 1", "Cash exchanged, net (buy-ins less cash-outs) 500.00 EUR",
                 "Patrons at or above the AML threshold 1", "net 500.00 EUR"):  # fmt: skip
        assert said in text, said


def test_a_day_without_exchanges_says_there_are_none(closed, tmp_path):
    report = DayReport.objects.get(gaming_day=closed.day, version=1)
    assert report.summary["cash"] == {"count": 0, "buy_ins": 0, "cash_outs": 0, "net": 0, "voided": 0,
                                      "threshold": 2_000_00, "aml": [], "as_recorded": {}}  # fmt: skip
    files = {fmt: _file(report, fmt).read_bytes() for fmt in ("csv", "xlsx", "pdf")}
    preamble, blocks = csv_blocks(files["csv"])
    assert blocks[SECTION] == [[f"# {NONE_NOTE}"], HEADER]
    assert blocks[AML][1:] == [AML_HEADER] and blocks[AML][0][0].endswith("No patron reached it.")
    assert ["# Cash exchanges (changeur), standing", "0"] in preamble
    assert ["# Patrons at or above the AML threshold", "0"] in preamble
    rows, count, listing = _xlsx(files["xlsx"], SECTION)
    # No rows: under the header, what the PDF says (its "No rows.", after the note the CSV has too).
    assert count == 0 and len(rows) == 2 and rows[0][0] == "Table"
    assert rows[1] == (f"No rows. {NONE_NOTE}",) + (None,) * (len(HEADER) - 1)
    assert listing["Cash exchanges (changeur), standing"][0] == 0
    text = pdf_text(files["pdf"], tmp_path, drawn_order=True)
    if text is not None:
        assert f"{SECTION} {NONE_NOTE}" in text and "No patron reached it." in text


def test_a_line_edited_in_sql_before_the_build_is_named_by_the_reports_verification(
    world, media, api, auditor, make_user, settings, django_capture_on_commit_callbacks
):
    """The report printed the edited amount; the line put back since, nothing but the
    report's rows held to the session's events as of its build says so."""
    from audit.reports.services import _cash_as_built
    from audit.views import _explain

    *_, lines = _two_tables(world, make_user, settings)
    first = lines[1]
    raw_sql("UPDATE tables_cashexchange SET amount = 1 WHERE id = %s", (first.pk,))
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == "done", report.error
    assert report.summary["cash"]["buy_ins"] == 1  # as the row said at the build
    assert report.summary["cash"]["aml"] == []  # and X fell below the threshold with it
    raw_sql("UPDATE tables_cashexchange SET amount = 150000 WHERE id = %s", (first.pk,))

    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    mismatch = {"code": "cash_mismatch", "exchange": first.pk, "table": 2, "session": 1, "line": 1,
                "listed_in_report": True, "recorded_in_trail": True}  # fmt: skip
    assert body["ok"] is False and body["reasons"] == [mismatch]
    assert _explain(body)["lines"] == [
        "Table 2, session 1, cash exchange line 1: the report lists it otherwise than the audit trail recorded it "
        "when the report was built."]  # fmt: skip
    # A line the trail recorded and the report does not list (its row deleted before the build).
    report.summary["cash"]["as_recorded"] = {str(first.pk): report.summary["cash"]["as_recorded"][str(first.pk)]}
    gone = {line.pk for line in lines} - {first.pk}
    assert {r["exchange"] for r in _cash_as_built(report)} == {first.pk, *gone}
    assert all(not r["listed_in_report"] and r["recorded_in_trail"]
               for r in _cash_as_built(report) if r["exchange"] != first.pk)  # fmt: skip


def test_a_void_rewritten_in_sql_before_the_build_is_named_too(
    world, media, api, auditor, make_user, settings, django_capture_on_commit_callbacks
):
    *_, lines = _two_tables(world, make_user, settings)
    wrong = lines[3]
    raw_sql("UPDATE tables_cashexchange SET void_reason = 'typo' WHERE id = %s", (wrong.pk,))
    close(world, django_capture_on_commit_callbacks)
    raw_sql("UPDATE tables_cashexchange SET void_reason = 'wrong patron' WHERE id = %s", (wrong.pk,))
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["reasons"] == [{"code": "cash_mismatch", "exchange": wrong.pk, "table": 2, "session": 1, "line": 3,
                                "listed_in_report": True, "recorded_in_trail": True}]  # fmt: skip


def test_an_honest_day_with_exchanges_verifies(
    world, media, api, auditor, make_user, settings, django_capture_on_commit_callbacks
):
    _two_tables(world, make_user, settings)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [], body["reasons"]
    assert len(report.summary["cash"]["as_recorded"]) == 5
