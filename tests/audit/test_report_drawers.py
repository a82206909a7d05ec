"""The drawers' counts in the end-of-day report (tables.services.cash_count): a section listing
each session's drawer (float, the register's net, expected, counted, difference, who counted,
corrections marked), the sessions closed without a count named, never read as zero; the day's
difference among the facts and in the summary; Italian words in an Italian report; and the
verification holding the listed counts to their events (`drawer_mismatch`) and the rows to the
trail (`drawer_not_as_recorded`)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from audit.exports.formatting import datetime_display
from audit.models import DayReport
from floor import services as floor_services
from floor.roles import Role
from tables import services as table_services
from tests.audit.conftest import raw_sql
from tests.audit.test_exports import csv_blocks, pdf_text
from tests.audit.test_report_cash import _xlsx
from tests.audit.test_reports import _file, close
from tests.audit.test_reports import closed as closed  # the fixtures of the day the reports test
from tests.audit.test_reports import direzione2 as direzione2
from tests.audit.test_reports import media as media
from tests.audit.test_reports import world as world

pytestmark = pytest.mark.django_db

SECTION = "Cash drawers counted at the end of each session"
SECTION_IT = "Cassetti del cambio contati a fine sessione"
HEADER = ["table", "session", "count", "handover", "float_issued_eur", "net_eur", "expected_eur", "counted_eur",
          "difference_eur", "chips_float_eur", "chips_expected_eur", "chips_counted_eur", "chips_difference_eur",
          "counted_by", "counted_at", "state", "corrects", "corrected_by", "note"]  # fmt: skip
STATE, AT, NOTE, HANDOVER = 15, 14, 18, 3  # the columns' places in a row


def _counted(world):
    """Table 2's session: buy-ins 1,000.00, a cash-out 200.00 (net 800.00), closed; its drawer
    counted by the Commissario (float 500.00, 1,290.00 found: 10.00 short; the chips not counted),
    then corrected by the Direzione (1,305.00: 5.00 over), who counts the chips too: a tray of
    3,000.00 less the 800.00 handed out, 2,190.00 found (10.00 short). Table 1's session is
    closed and never counted."""
    s2 = world.sessions[1]
    for direction, amount in (("buy_in", 1000_00), ("cash_out", 200_00)):
        table_services.cash_exchange_record(session=s2, by=s2.changeur, direction=direction, amount=amount)
    floor_services.table_session_close(session=s2, by=world.commissario)
    first = table_services.cash_count_record(session=s2, by=world.commissario, float_issued=500_00,
                                             counted=1290_00, note="slip 4")  # fmt: skip
    second = table_services.cash_count_correct(count=first, by=world.direzione, counted=1305_00,
                                               chips_float=3000_00, chips_counted=2190_00,
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
        "counted": 1, "difference": 5_00, "surplus": 5_00, "shortfall": 0, "chips_counted": 1,
        "chips_difference": -10_00, "not_counted": [{"table": 1, "session": 1}], "handovers_counted": 0,
        "handover_difference": None, "handovers_not_counted": []}  # fmt: skip
    assert sorted(held["as_recorded"], key=int) == [str(first.pk), str(second.pk)]

    files = {fmt: _file(report, fmt).read_bytes() for fmt in ("csv", "xlsx", "pdf")}
    preamble, blocks = csv_blocks(files["csv"])
    block = blocks[SECTION]
    assert block[0][0].endswith("Counts in force: 1, difference 5.00 EUR. Chips counted in 1 of them, difference "
                                "-10.00 EUR. Sessions closed without a drawer count: table 1 session 1.")  # fmt: skip
    assert block[1] == HEADER
    rows = [row[:AT] + row[AT + 1:] for row in block[2:]]  # (the times apart)
    commissario = f"{world.commissario.get_full_name()} ({world.commissario.username})".lstrip()
    direzione = f"{world.direzione.get_full_name()} ({world.direzione.username})".lstrip()
    who = [commissario if world.commissario.get_full_name() else world.commissario.username,
           direzione if world.direzione.get_full_name() else world.direzione.username]  # fmt: skip
    assert rows == [
        ["1", "1", "", "", "", "0.00", "", "", "", "", "", "", "", "", "not_counted", "", "", ""],
        ["2", "1", str(first.pk), "", "500.00", "800.00", "1300.00", "1290.00", "-10.00", "", "", "", "", who[0],
         "corrected", "", str(second.pk), "slip 4"],
        ["2", "1", str(second.pk), "", "500.00", "800.00", "1300.00", "1305.00", "5.00", "3000.00", "2200.00",
         "2190.00", "-10.00", who[1], "in_force", str(first.pk), "", "a 5 and a 10 under the tray"],
    ]  # fmt: skip
    assert block[2][AT] == "" and block[3][AT] and block[4][AT]
    for fact in (["# Cash drawers counted", "1"],
                 ["# Cash drawers' difference (counted less expected, counts in force)", "5.00 EUR"],
                 ["# Chips' difference in the drawers (counted less expected, counts in force that counted chips)",
                  "-10.00 EUR"],
                 ["# Sessions closed without a drawer count", "table 1 session 1"]):  # fmt: skip
        assert fact in preamble, fact

    sheet, count, listing = _xlsx(files["xlsx"], SECTION)
    assert count == 3 and sheet[0][:9] == ("Table", "Session", "Count",
                                           "Changeur relieved at the handover", "Float issued",
                                           "Register's net", "Expected", "Counted",
                                           "Difference (counted less expected)")  # fmt: skip
    assert [Decimal(str(v)) for v in sheet[3][4:9]] == [
        Decimal(x) for x in ("500", "800", "1300", "1305", "5")
    ]
    assert sheet[0][9:13] == ("Chips float", "Chips expected", "Chips counted",
                              "Chips difference")  # fmt: skip
    assert [Decimal(str(v)) for v in sheet[3][9:13]] == [Decimal(x) for x in ("3000", "2200", "2190", "-10")]
    assert sheet[1][4] is None and sheet[1][6] is None  # not counted: blank, never 0
    assert sheet[1][9:13] == sheet[2][9:13] == (None,) * 4  # the chips not counted: blank, never 0
    assert sheet[2][3] in ("", None) and sheet[3][3] in ("", None)  # final counts: no handover
    assert Decimal(
        str(listing["Cash drawers' difference (counted less expected, counts in force)"][0])
    ) == Decimal("5.00")

    text = pdf_text(files["pdf"], tmp_path)
    if text is not None:
        assert SECTION in text and "table 1 session 1" in text


def test_a_day_without_a_drawer_count_says_not_counted(closed, tmp_path):
    report = DayReport.objects.get(gaming_day=closed.day, version=1)
    assert report.summary["drawers"] == {"counted": 0, "difference": None, "surplus": 0, "shortfall": 0,
                                         "chips_counted": 0, "chips_difference": None,
                                         "not_counted": [{"table": 1, "session": 1}, {"table": 2, "session": 1}],
                                         "handovers_counted": 0, "handover_difference": None,
                                         "handovers_not_counted": [], "as_recorded": {}}  # fmt: skip
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
    assert block[1] == HEADER and [row[STATE] for row in block[2:]] == ["not_counted", "corrected", "in_force"]
    assert "Sessioni chiuse senza conteggio del cassetto: tavolo 1 sessione 1." in block[0][0]
    assert ["# Differenza dei cassetti (contato meno atteso, conteggi in vigore)", "5,00 EUR"] in preamble
    assert ["# Sessioni chiuse senza conteggio del cassetto", "tavolo 1 sessione 1"] in preamble
    assert ["# Differenza delle fiches nei cassetti (contate meno attese, conteggi in vigore con le fiches)",
            "-10,00 EUR"] in preamble  # fmt: skip
    assert "Fiches contate in 1 di essi, differenza -10,00 EUR." in block[0][0]
    import io

    import openpyxl

    wb = openpyxl.load_workbook(io.BytesIO(_file(report, "xlsx").read_bytes()))
    summary = {row[0]: row[1:] for row in wb.worksheets[0].iter_rows(values_only=True) if row and row[0]}
    sheet = list(wb[summary[SECTION_IT][0]].iter_rows(values_only=True))
    assert [row[STATE] for row in sheet[1:]] == ["non contato", "corretto", "in vigore"]
    assert sheet[0][3:8] == ("Changeur sostituito al cambio turno", "Fondo cassa consegnato",
                             "Netto del registro", "Atteso", "Contato")  # fmt: skip
    assert sheet[0][9:13] == ("Fondo fiches", "Fiches attese", "Fiches contate", "Differenza fiches")


def test_an_honest_day_with_drawer_counts_verifies(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    _counted(world)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [], body["reasons"]


def test_the_chips_edited_in_sql_are_named_by_the_verification(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    """After the build, the chips counted of the count in force edited (a stack made to appear),
    and chips written into the count that had none: neither row is what its event recorded."""
    _s2, first, second = _counted(world)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    client = api(auditor)
    assert client.post(f"/api/reports/{report.pk}/verify/").json()["ok"] is True
    raw_sql("UPDATE tables_cashcount SET chips_counted = 220000 WHERE id = %s", (second.pk,))
    body = client.post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False and body["reasons"] == [
        {"code": "drawer_not_as_recorded", "count": second.pk, "table": 2, "session": 1, "in_books": True,
         "recorded_in_trail": True}]  # fmt: skip
    raw_sql("UPDATE tables_cashcount SET chips_counted = 219000 WHERE id = %s", (second.pk,))
    assert client.post(f"/api/reports/{report.pk}/verify/").json()["reasons"] == []
    raw_sql("UPDATE tables_cashcount SET chips_float = 80000, chips_counted = 0, chips_expected = 80000 - net "
            "WHERE id = %s", (first.pk,))  # fmt: skip
    assert client.post(f"/api/reports/{report.pk}/verify/").json()["reasons"] == [
        {"code": "drawer_not_as_recorded", "count": first.pk, "table": 2, "session": 1, "in_books": True,
         "recorded_in_trail": True}]  # fmt: skip


# The payload a drawer count's event carried before the chips were counted: these keys, no other.
OLD_SHAPE = ("count", "session", "float_issued", "net", "expected", "counted", "difference", "counted_by",
             "counted_at", "note", "corrects")  # fmt: skip


def test_a_count_recorded_before_the_chips_verifies_as_recorded(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    """A count and its event written as the code before the chips wrote them (the row with no
    chips, the event's payload with the old keys only, built here by hand): the report lists it,
    and the verification finds it as recorded, in the report and as the row stands."""
    from django.db import transaction
    from django.utils import timezone

    from audit.services import record
    from tables.models import CashCount

    s2 = world.sessions[1]
    table_services.cash_exchange_record(session=s2, by=s2.changeur, direction="buy_in", amount=400_00)
    floor_services.table_session_close(session=s2, by=world.commissario)
    row = CashCount.objects.create(
        session=s2, float_issued=100_00, net=400_00, expected=500_00, counted=490_00, counted_by=world.commissario,
        counted_at=timezone.now(), note="before chips",
    )  # fmt: skip
    old = {"count": row.pk, "session": s2.pk, "float_issued": 100_00, "net": 400_00, "expected": 500_00,
           "counted": 490_00, "difference": -10_00, "counted_by": world.commissario.pk,
           "counted_at": row.counted_at.isoformat(), "note": "before chips", "corrects": None}  # fmt: skip
    assert tuple(old) == OLD_SHAPE
    with transaction.atomic():
        record(stream=s2.audit_stream, actor=world.commissario, action="cash.drawer_counted", subject=row,
               data={"old": None, "new": old})  # fmt: skip
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == "done", report.error
    assert list(report.summary["drawers"]["as_recorded"]) == [str(row.pk)]
    assert (report.summary["drawers"]["chips_counted"], report.summary["drawers"]["chips_difference"]) == (0, None)
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


# --------------------------------------------------------------------------- a drawer counted late


def _late(world, who):
    """Table 2's session, left open at the close (which closed it) and not counted by then: its
    drawer counted after the close (net 0: no exchange; float 200.00, 195.00 found)."""
    s2 = world.sessions[1]
    return table_services.cash_count_record(session=s2, by=who, float_issued=200_00, counted=195_00, note="late")


def _sign(world, direzione, direzione2, django_capture_on_commit_callbacks) -> DayReport:
    from audit.reports import registers
    from tests.audit.test_reports import _count_all

    _count_all(world, direzione, direzione2)
    reg = registers.control_register_prepare(gaming_day=world.day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    with django_capture_on_commit_callbacks(execute=True):
        registers.control_register_sign(register=reg, by=direzione2)
    report = DayReport.objects.get(gaming_day=world.day, version=2)
    assert report.status == "done", report.error
    return report


def test_a_drawer_counted_after_the_close_is_listed_by_the_signed_version_and_verifies(
    closed, api, auditor, direzione, direzione2, django_capture_on_commit_callbacks, django_assert_num_queries
):
    from audit.reports import cash
    from audit.services import books_stream

    first = DayReport.objects.get(gaming_day=closed.day, version=1)
    assert len(first.summary["drawers"]["not_counted"]) == 2
    count = _late(closed, closed.commissario)
    report = _sign(closed, direzione, direzione2, django_capture_on_commit_callbacks)
    held = report.summary["drawers"]
    assert {k: v for k, v in held.items() if k != "as_recorded"} == {
        "counted": 1, "difference": -5_00, "surplus": 0, "shortfall": 5_00, "chips_counted": 0,
        "chips_difference": None, "not_counted": [{"table": 1, "session": 1}], "handovers_counted": 0,
        "handover_difference": None, "handovers_not_counted": []}  # fmt: skip
    assert list(held["as_recorded"]) == [str(count.pk)]
    rows = csv_blocks(_file(report, "csv").read_bytes())[1][SECTION][2:]
    assert [(row[0], row[2], row[STATE], row[NOTE]) for row in rows] == [("1", "", "not_counted", ""),
                                                                    ("2", str(count.pk), "in_force", "late")]  # fmt: skip
    books = books_stream(closed.day.pk)
    assert books in report.sealed_streams
    client = api(auditor)
    for built in (first, report):  # the first version, built before it, lists it not: a later record
        body = client.post(f"/api/reports/{built.pk}/verify/").json()
        assert body["ok"] is True and body["reasons"] == [], (built.version, body["reasons"])
    # The books stream's drawer events are read with the session streams', in one query.
    sessions = {s.audit_stream: None for s in closed.sessions}
    with django_assert_num_queries(1):
        trail = cash.drawer_trail({**sessions, books: None})
    assert list(trail) == [str(count.pk)]


def test_a_drawer_counted_between_the_close_and_the_first_build_is_sealed_with_it(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    """The first version is built by Celery after the close: a count made in between is listed
    by it, and its event, in the books stream, is sealed with it (held to it, not to nothing)."""
    from audit.reports.services import report_build
    from audit.services import books_stream

    with django_capture_on_commit_callbacks(execute=False):
        floor_services.gaming_day_close(gaming_day=world.day, by=world.commissario, open_sessions="close")
    count = _late(world, world.direzione)
    report = report_build(gaming_day_id=world.day.pk)
    assert report.status == "done", report.error
    assert list(report.summary["drawers"]["as_recorded"]) == [str(count.pk)]
    assert books_stream(world.day.pk) in report.sealed_streams
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [], body["reasons"]


def test_a_late_count_edited_in_sql_is_named_by_the_verification(
    closed, api, auditor, direzione, direzione2, django_capture_on_commit_callbacks
):
    """As a count of the open day: edited before the build and put back since, the version lists
    the edit (`drawer_mismatch`, held to the books stream's event); edited after the build, the
    row is not what its event recorded (`drawer_not_as_recorded`), for every version."""
    count = _late(closed, closed.commissario)
    raw_sql("UPDATE tables_cashcount SET counted = 20000 WHERE id = %s", (count.pk,))
    report = _sign(closed, direzione, direzione2, django_capture_on_commit_callbacks)
    assert report.summary["drawers"]["difference"] == 0  # as the row said at the build
    raw_sql("UPDATE tables_cashcount SET counted = 19500 WHERE id = %s", (count.pk,))
    client = api(auditor)
    body = client.post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False and body["reasons"] == [
        {"code": "drawer_mismatch", "count": count.pk, "table": 2, "session": 1, "listed_in_report": True,
         "recorded_in_trail": True}]  # fmt: skip
    raw_sql("UPDATE tables_cashcount SET float_issued = 0, expected = net WHERE id = %s", (count.pk,))
    wrong = {"code": "drawer_not_as_recorded", "count": count.pk, "table": 2, "session": 1, "in_books": True,
             "recorded_in_trail": True}  # fmt: skip
    assert wrong in client.post(f"/api/reports/{report.pk}/verify/").json()["reasons"]
    first = DayReport.objects.get(gaming_day=closed.day, version=1)
    assert client.post(f"/api/reports/{first.pk}/verify/").json()["reasons"] == [wrong]


# --------------------------------------------------------------------------- the changeur's handover


# A count moved to another staff change in SQL, with the net of the register up to it (a move
# that keeps the net is refused by the database on PostgreSQL, tables migration 0018).
MOVE = "UPDATE tables_cashcount SET staff_change_id = %s, net = %s, expected = float_issued + %s WHERE id = %s"


def _handed_over(world, make_user):
    """Table 2's session: its first changeur takes a buy-in of 1,000.00 and is relieved; his
    successor pays a cash-out of 200.00 and is relieved in turn (his drawer not counted); the
    session closes. The first changeur's drawer, counted at his handover: float 500.00, net
    1,000.00, 1,495.00 found (5.00 short); the final count: net 800.00, 1,290.00 found (10.00
    short, of which 5.00 since the handover). Returns the two staff changes and both counts."""
    from django.db.models import F

    from floor.models import StaffChange

    s2 = world.sessions[1]
    outgoing = s2.changeur
    table_services.cash_exchange_record(session=s2, by=outgoing, direction="buy_in", amount=1000_00)
    second, third = make_user("changeur_relief", Role.CHANGEUR), make_user("changeur_three", Role.CHANGEUR)
    floor_services.table_session_staff_change(session=s2, by=world.commissario, changeur=second, reason="break")
    table_services.cash_exchange_record(session=s2, by=second, direction="cash_out", amount=200_00)
    floor_services.table_session_staff_change(session=s2, by=world.commissario, changeur=third, reason="end of shift")
    floor_services.table_session_close(session=s2, by=world.commissario)
    # (the fixture's day relieved the session's Capo Partita already: that change hands no drawer over)
    changes = list(StaffChange.objects.filter(session=s2).exclude(old_changeur=F("new_changeur")).order_by("at", "pk"))
    assert len(changes) == 2
    handover = table_services.cash_count_record(session=s2, by=world.commissario, float_issued=500_00,
                                                counted=1495_00, staff_change=changes[0], note="handover")  # fmt: skip
    final = table_services.cash_count_record(session=s2, by=world.direzione, float_issued=500_00, counted=1290_00)
    return outgoing, changes, handover, final


def test_the_report_lists_a_handover_count_as_its_own_row_and_counts_the_final_ones_apart(
    world, media, make_user, tmp_path, django_capture_on_commit_callbacks
):
    from floor.models import StaffChange

    outgoing, changes, handover, final = _handed_over(world, make_user)
    assert (handover.net, handover.difference, final.net, final.difference) == (1000_00, -5_00, 800_00, -10_00)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == "done", report.error
    held = report.summary["drawers"]
    assert {k: v for k, v in held.items() if k != "as_recorded"} == {
        "counted": 1, "difference": -10_00, "surplus": 0, "shortfall": 10_00, "chips_counted": 0,
        "chips_difference": None, "not_counted": [{"table": 1, "session": 1}], "handovers_counted": 1,
        "handover_difference": -5_00,
        "handovers_not_counted": [{"table": 2, "session": 1, "staff_change": changes[1].pk}]}  # fmt: skip
    assert sorted(held["as_recorded"], key=int) == [str(handover.pk), str(final.pk)]

    files = {fmt: _file(report, fmt).read_bytes() for fmt in ("csv", "xlsx", "pdf")}
    preamble, blocks = csv_blocks(files["csv"])
    block = blocks[SECTION]
    assert block[1] == HEADER
    who = f"{outgoing.get_full_name()} ({outgoing.username})" if outgoing.get_full_name() else outgoing.username
    at = StaffChange.objects.get(pk=changes[0].pk).at
    rows = {row[2]: row for row in block[2:]}
    assert [(row[0], row[2], row[STATE]) for row in block[2:]] == [
        ("1", "", "not_counted"), ("2", str(handover.pk), "in_force"), ("2", str(final.pk), "in_force"),
        ("2", "", "not_counted")]  # fmt: skip
    # The second changeur's handover, never counted: its own row, the register's net up to it
    # (1,000.00 less the 200.00 he paid out), every other figure blank; named in the note.
    second = StaffChange.objects.select_related("old_changeur").get(pk=changes[1].pk)
    who2 = f"{second.old_changeur.get_full_name()} ({second.old_changeur.username})" if (
        second.old_changeur.get_full_name()) else second.old_changeur.username
    assert block[-1][HANDOVER] == f"{who2}, relieved at {datetime_display(second.at)}"
    assert block[-1][4:9] == ["", "800.00", "", "", ""]
    assert (f"Changeurs' handovers not counted: table 2 session 1, {who2} at {datetime_display(second.at)}."
            in block[0][0])  # fmt: skip
    # The changeur relieved and the handover's time (the staff change's, not the count's).
    assert rows[str(handover.pk)][HANDOVER] == f"{who}, relieved at {datetime_display(at)}"
    assert rows[str(handover.pk)][4:9] == ["500.00", "1000.00", "1500.00", "1495.00", "-5.00"]
    assert rows[str(final.pk)][HANDOVER] == ""  # a final count: blank
    assert rows[str(final.pk)][4:9] == ["500.00", "800.00", "1300.00", "1290.00", "-10.00"]
    assert "Handovers counted: 1, difference -5.00 EUR (part of the final counts', not added to them)." in block[0][0]
    assert "Counts in force: 1, difference -10.00 EUR." in block[0][0]
    for fact in (["# Cash drawers counted", "1"], ["# Changeurs' handovers counted", "1"],
                 ["# Changeurs' handovers' difference (counted less expected, counts in force)", "-5.00 EUR"],
                 ["# Cash drawers' difference (counted less expected, counts in force)", "-10.00 EUR"]):  # fmt: skip
        assert fact in preamble, fact
    sheet, count, _listing = _xlsx(files["xlsx"], SECTION)
    assert count == 4 and sheet[2][3] == f"{who}, relieved at {datetime_display(at)}" and sheet[3][3] in ("", None)
    assert sheet[4][3] == f"{who2}, relieved at {datetime_display(second.at)}"
    text = pdf_text(files["pdf"], tmp_path)
    if text is not None:
        assert SECTION in text and "relieved at" in text


def test_a_session_with_only_a_handover_counted_is_still_not_counted(
    world, media, make_user, django_capture_on_commit_callbacks
):
    _outgoing, _changes, handover, final = _handed_over(world, make_user)
    raw_sql("DELETE FROM tables_cashcount WHERE id = %s", (final.pk,))  # (as if the final count never was)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    held = report.summary["drawers"]
    assert (held["counted"], held["difference"], held["handovers_counted"], held["handover_difference"]) == (
        0, None, 1, -5_00)
    assert held["not_counted"] == [{"table": 1, "session": 1}, {"table": 2, "session": 1}]
    block = csv_blocks(_file(report, "csv").read_bytes())[1][SECTION]
    assert [(row[0], row[2], row[STATE]) for row in block[2:]] == [
        ("1", "", "not_counted"), ("2", str(handover.pk), "in_force"), ("2", "", "not_counted"),
        ("2", "", "not_counted")]  # fmt: skip
    assert held["handovers_not_counted"] == [{"table": 2, "session": 1, "staff_change": _changes[1].pk}]


def test_an_honest_day_with_a_handover_verifies_and_a_staff_change_edited_in_sql_is_named(
    world, media, api, auditor, make_user, django_capture_on_commit_callbacks
):
    _outgoing, changes, handover, final = _handed_over(world, make_user)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    client = api(auditor)
    body = client.post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [], body["reasons"]
    wrong = {"code": "drawer_not_as_recorded", "table": 2, "session": 1, "in_books": True, "recorded_in_trail": True}
    # The handover count moved to the other relief (the second changeur's drawer made the first's),
    # with that relief's net (tables migration 0018 refuses a net that is not the register's):
    raw_sql(MOVE, (changes[1].pk, 800_00, 800_00, handover.pk))
    body = client.post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False and body["reasons"] == [{**wrong, "count": handover.pk}]
    raw_sql(MOVE, (changes[0].pk, 1000_00, 1000_00, handover.pk))
    assert client.post(f"/api/reports/{report.pk}/verify/").json()["reasons"] == []
    # The final count made a handover's (its row then holds a key its event has not):
    raw_sql("UPDATE tables_cashcount SET staff_change_id = %s WHERE id = %s", (changes[1].pk, final.pk))
    assert client.post(f"/api/reports/{report.pk}/verify/").json()["reasons"] == [{**wrong, "count": final.pk}]


def test_a_staff_change_edited_before_the_build_is_a_drawer_mismatch(
    world, media, api, auditor, make_user, django_capture_on_commit_callbacks
):
    _outgoing, changes, handover, _final = _handed_over(world, make_user)
    raw_sql(MOVE, (changes[1].pk, 800_00, 800_00, handover.pk))
    close(world, django_capture_on_commit_callbacks)
    raw_sql(MOVE, (changes[0].pk, 1000_00, 1000_00, handover.pk))
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False and body["reasons"] == [
        {"code": "drawer_mismatch", "count": handover.pk, "table": 2, "session": 1, "listed_in_report": True,
         "recorded_in_trail": True}]  # fmt: skip
