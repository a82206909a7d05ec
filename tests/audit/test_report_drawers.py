"""The drawers' counts in the end-of-day report (tables.services.cash_count): a section listing
each session's drawer (float, the register's net, expected, counted, difference, who counted,
corrections marked), the sessions closed without a count named, never read as zero; the day's
difference among the facts and in the summary; Italian words in an Italian report; and the
verification holding the listed counts to their events (`drawer_mismatch`) and the rows to the
trail (`drawer_not_as_recorded`)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from audit.models import DayReport
from floor import services as floor_services
from tables import services as table_services
from tests.audit.conftest import raw_sql
from tests.audit.test_exports import csv_blocks, pdf_text
from tests.audit.test_report_cash import _xlsx
from tests.audit.test_reports import _file, close
from tests.audit.test_reports import closed as closed  # the fixtures of the day the reports test
from tests.audit.test_reports import media as media
from tests.audit.test_reports import world as world

pytestmark = pytest.mark.django_db

SECTION = "Cash drawers counted at the end of each session"
SECTION_IT = "Cassetti del cambio contati a fine sessione"
HEADER = ["table", "session", "count", "float_issued_eur", "net_eur", "expected_eur", "counted_eur",
          "difference_eur", "counted_by", "counted_at", "state", "corrects", "corrected_by", "note"]  # fmt: skip


def _counted(world):
    """Table 2's session: buy-ins 1,000.00, a cash-out 200.00 (net 800.00), closed; its drawer
    counted by the Commissario (float 500.00, 1,290.00 found: 10.00 short), then corrected by
    the Direzione (1,305.00: 5.00 over). Table 1's session is closed and never counted."""
    s2 = world.sessions[1]
    for direction, amount in (("buy_in", 1000_00), ("cash_out", 200_00)):
        table_services.cash_exchange_record(session=s2, by=s2.changeur, direction=direction, amount=amount)
    floor_services.table_session_close(session=s2, by=world.commissario)
    first = table_services.cash_count_record(session=s2, by=world.commissario, float_issued=500_00,
                                             counted=1290_00, note="slip 4")  # fmt: skip
    second = table_services.cash_count_correct(count=first, by=world.direzione, counted=1305_00,
                                               reason="a 5 and a 10 under the tray")  # fmt: skip
    return s2, first, second


def test_the_report_lists_each_sessions_drawer_and_names_the_one_not_counted(
    world, media, tmp_path, django_capture_on_commit_callbacks
):
    _s2, first, second = _counted(world)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == "done", report.error
    held = report.summary["drawers"]
    assert {k: v for k, v in held.items() if k != "as_recorded"} == {
        "counted": 1, "difference": 5_00, "surplus": 5_00, "shortfall": 0,
        "not_counted": [{"table": 1, "session": 1}]}  # fmt: skip
    assert sorted(held["as_recorded"], key=int) == [str(first.pk), str(second.pk)]

    files = {fmt: _file(report, fmt).read_bytes() for fmt in ("csv", "xlsx", "pdf")}
    preamble, blocks = csv_blocks(files["csv"])
    block = blocks[SECTION]
    assert block[0][0].endswith("Counts in force: 1, difference 5.00 EUR. Sessions closed without a drawer count: "
                                "table 1 session 1.")  # fmt: skip
    assert block[1] == HEADER
    rows = [row[:9] + row[10:] for row in block[2:]]  # (the times apart)
    commissario = f"{world.commissario.get_full_name()} ({world.commissario.username})".lstrip()
    direzione = f"{world.direzione.get_full_name()} ({world.direzione.username})".lstrip()
    who = [commissario if world.commissario.get_full_name() else world.commissario.username,
           direzione if world.direzione.get_full_name() else world.direzione.username]  # fmt: skip
    assert rows == [
        ["1", "1", "", "", "0.00", "", "", "", "", "not_counted", "", "", ""],
        ["2", "1", str(first.pk), "500.00", "800.00", "1300.00", "1290.00", "-10.00", who[0], "corrected", "",
         str(second.pk), "slip 4"],
        ["2", "1", str(second.pk), "500.00", "800.00", "1300.00", "1305.00", "5.00", who[1], "in_force",
         str(first.pk), "", "a 5 and a 10 under the tray"],
    ]  # fmt: skip
    assert block[2][9] == "" and block[3][9] and block[4][9]
    for fact in (["# Cash drawers counted", "1"],
                 ["# Cash drawers' difference (counted less expected, counts in force)", "5.00 EUR"],
                 ["# Sessions closed without a drawer count", "table 1 session 1"]):  # fmt: skip
        assert fact in preamble, fact

    sheet, count, listing = _xlsx(files["xlsx"], SECTION)
    assert count == 3 and sheet[0][:8] == ("Table", "Session", "Count", "Float issued", "Register's net", "Expected",
                                           "Counted", "Difference (counted less expected)")  # fmt: skip
    assert [Decimal(str(v)) for v in sheet[3][3:8]] == [
        Decimal(x) for x in ("500", "800", "1300", "1305", "5")
    ]
    assert sheet[1][3] is None and sheet[1][5] is None  # not counted: blank, never 0
    assert Decimal(
        str(listing["Cash drawers' difference (counted less expected, counts in force)"][0])
    ) == Decimal("5.00")

    text = pdf_text(files["pdf"], tmp_path)
    if text is not None:
        assert SECTION in text and "table 1 session 1" in text


def test_a_day_without_a_drawer_count_says_not_counted(closed, tmp_path):
    report = DayReport.objects.get(gaming_day=closed.day, version=1)
    assert report.summary["drawers"] == {"counted": 0, "difference": None, "surplus": 0, "shortfall": 0,
                                         "not_counted": [{"table": 1, "session": 1}, {"table": 2, "session": 1}],
                                         "as_recorded": {}}  # fmt: skip
    preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    assert ["# Cash drawers' difference (counted less expected, counts in force)", "not counted"] in preamble
    assert ["# Sessions closed without a drawer count", "table 1 session 1, table 2 session 1"] in preamble
    assert blocks[SECTION][0][0].endswith("No drawer was counted. Sessions closed without a drawer count: table 1 "
                                          "session 1, table 2 session 1.")  # fmt: skip


def test_an_italian_report_says_the_drawers_in_italian_with_the_same_keys(
    world, media, settings, django_capture_on_commit_callbacks
):
    settings.REPORT_LANGUAGE = "it"
    _counted(world)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == "done" and report.language == "it"
    preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    block = blocks[SECTION_IT]
    assert block[1] == HEADER and [row[10] for row in block[2:]] == ["not_counted", "corrected", "in_force"]
    assert "Sessioni chiuse senza conteggio del cassetto: tavolo 1 sessione 1." in block[0][0]
    assert ["# Differenza dei cassetti (contato meno atteso, conteggi in vigore)", "5,00 EUR"] in preamble
    assert ["# Sessioni chiuse senza conteggio del cassetto", "tavolo 1 sessione 1"] in preamble
    import io

    import openpyxl

    wb = openpyxl.load_workbook(io.BytesIO(_file(report, "xlsx").read_bytes()))
    summary = {row[0]: row[1:] for row in wb.worksheets[0].iter_rows(values_only=True) if row and row[0]}
    sheet = list(wb[summary[SECTION_IT][0]].iter_rows(values_only=True))
    assert [row[10] for row in sheet[1:]] == ["non contato", "corretto", "in vigore"]
    assert sheet[0][3:7] == ("Fondo cassa consegnato", "Netto del registro", "Atteso", "Contato")


def test_an_honest_day_with_drawer_counts_verifies(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    _counted(world)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [], body["reasons"]


def test_a_count_edited_in_sql_is_named_by_the_verification(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    """Edited before the build and put back since: the report printed the edit (`drawer_mismatch`).
    Edited after the build: the row no longer holds what its event recorded (`drawer_not_as_recorded`)."""
    from audit.views import _explain

    _s2, first, second = _counted(world)
    raw_sql(
        "UPDATE tables_cashcount SET counted = 1400000, expected = 50000 + net WHERE id = %s", (second.pk,)
    )
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.summary["drawers"]["difference"] == 1400000 - 1300_00  # as the row said at the build
    raw_sql("UPDATE tables_cashcount SET counted = 130500 WHERE id = %s", (second.pk,))
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False and body["reasons"] == [
        {"code": "drawer_mismatch", "count": second.pk, "table": 2, "session": 1, "listed_in_report": True,
         "recorded_in_trail": True}]  # fmt: skip
    assert _explain(body)["lines"] == [
        f"Table 2, session 1, cash drawer count {second.pk}: the report lists it otherwise than the audit trail "
        "recorded it when the report was built."]  # fmt: skip
    raw_sql("UPDATE tables_cashcount SET float_issued = 0, expected = net WHERE id = %s", (first.pk,))
    reasons = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()["reasons"]
    assert {"code": "drawer_not_as_recorded", "count": first.pk, "table": 2, "session": 1, "in_books": True,
            "recorded_in_trail": True} in reasons  # fmt: skip
