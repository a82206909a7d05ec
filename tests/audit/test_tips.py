"""The tips (mance) box of each table, counted with its cagnotte box (RULES.md §6: the tips
have their own slots, the cagnotte a fourth): recorded with the count and its corrections,
carried in the count's event so the books' check names tips edited in SQL, on the control
register's lines and as its own day's figure, never in expected, counted, carried or the
register's total and its words; a register written before tips were recorded still reads,
agrees and verifies; the end-of-day report lists them (CSV, XLSX)."""

from __future__ import annotations

import io
import json
from decimal import Decimal

import openpyxl
import pytest
from django.db import IntegrityError, transaction

from audit.models import AuditEvent, CagnotteCount, ControlRegister, DayReport
from audit.reports import registers
from config.errors import ApplicationError, Conflict
from tests.audit.conftest import trigger_disabled
from tests.audit.test_exports import csv_blocks
from tests.audit.test_reports import _file, house
from tests.audit.test_reports import closed as closed  # the fixtures of the day the reports test
from tests.audit.test_reports import direzione2 as direzione2
from tests.audit.test_reports import media as media
from tests.audit.test_reports import world as world

pytestmark = pytest.mark.django_db

COUNTS = "Cagnotte counts (art. 70; a corrected count stays, with its correction)"
TIPS_FACT = "Tips (mance) counted, the staff's: not in the cagnotte"


def _post_count(api, user, day, table, **body):
    return api(user).post(f"/api/gaming-days/{day.pk}/cagnotte-counts/", {"table": table.pk, **body}, format="json")


def _written() -> tuple[int, int]:
    return CagnotteCount.objects.count(), AuditEvent.objects.count()


def _last_event(action: str) -> dict:
    return AuditEvent.objects.filter(action=action).order_by("-pk").first().payload


def test_a_count_records_its_tips_apart_from_the_house_figures(closed, api, direzione, direzione2):
    t1, t2 = closed.tables
    e1 = house(session__table=t1)
    r = _post_count(api, direzione, closed.day, t1, counted=e1 + 1_00, tips=12_50, witness=direzione2.pk)
    assert r.status_code == 201, r.json()
    body = r.json()
    # The tips are the staff's: the cagnotte's figures are what they are without them.
    assert (body["tips"], body["expected"], body["counted"], body["surplus"], body["carried"]) == (
        12_50, e1, e1 + 1_00, 1_00, e1 + 1_00)
    assert _last_event("cagnotte.counted")["new"]["tips"] == 12_50
    # Omitted: not counted, said as null (never a 0), in the row, the answer and the event.
    r = _post_count(api, direzione, closed.day, t2, counted=10_00, witness=direzione2.pk)
    assert r.status_code == 201 and r.json()["tips"] is None
    assert CagnotteCount.objects.get(pk=r.json()["id"]).tips is None
    assert _last_event("cagnotte.counted")["new"]["tips"] is None
    # The cagnotte register (art. 70) gives each count with its tips.
    tables = api(direzione).get(f"/api/gaming-days/{closed.day.pk}/cagnotte-register/").json()["tables"]
    assert {t["table"]["number"]: t["count"]["tips"] for t in tables} == {1: 12_50, 2: None}


def test_a_correction_may_correct_the_tips_alone(closed, api, direzione, direzione2):
    t1 = closed.tables[0]
    count = registers.cagnotte_count_record(gaming_day=closed.day, table=t1, by=direzione, witness=direzione2,
                                            counted=41_20, tips=5_00)  # fmt: skip
    r = api(direzione).post(f"/api/cagnotte-counts/{count.pk}/correct/",
                            {"tips": 7_50, "witness": direzione2.pk, "note": "tips box recounted"}, format="json")  # fmt: skip
    assert r.status_code == 201, r.json()
    new = CagnotteCount.objects.get(pk=r.json()["id"])
    assert (new.corrects_id, new.counted, new.tips) == (count.pk, 41_20, 7_50)  # the cagnotte restated
    event = _last_event("cagnotte.count_corrected")
    assert (event["old"]["tips"], event["new"]["tips"], event["new"]["counted"]) == (5_00, 7_50, 41_20)
    # The cagnotte alone: the tips stand.
    r = api(direzione).post(f"/api/cagnotte-counts/{new.pk}/correct/",
                            {"counted": 40_00, "witness": direzione2.pk, "note": "box recounted"}, format="json")  # fmt: skip
    assert r.status_code == 201 and (r.json()["counted"], r.json()["tips"]) == (40_00, 7_50)
    # Neither: nothing to correct, nothing written.
    latest = CagnotteCount.objects.get(pk=r.json()["id"])
    before = _written()
    r = api(direzione).post(f"/api/cagnotte-counts/{latest.pk}/correct/",
                            {"witness": direzione2.pk, "note": "again"}, format="json")  # fmt: skip
    assert r.status_code == 400 and r.json()["error"]["code"] == "nothing_to_correct", r.json()
    assert _written() == before
    # Tips added by a correction to a count that had none.
    bare = registers.cagnotte_count_record(gaming_day=closed.day, table=closed.tables[1], by=direzione,
                                           witness=direzione2, counted=10_00)  # fmt: skip
    added = registers.cagnotte_count_correct(count=bare, by=direzione, witness=direzione2, tips=0, note="tips box")
    assert (added.counted, added.tips) == (10_00, 0)


BAD_TIPS = [-1, 12.5, "12.5", "abc", True, 10**12 + 1, 10**19, [], {}]


def test_bad_tips_are_refused_and_write_nothing(closed, api, direzione, direzione2):
    t1 = closed.tables[0]
    before = _written()
    for tips in BAD_TIPS:
        r = _post_count(api, direzione, closed.day, t1, counted=41_20, tips=tips, witness=direzione2.pk)
        assert r.status_code == 400, (tips, r.json())
        assert r.json()["error"]["code"] == "invalid_input" and r.json()["error"]["details"].keys() == {"tips"}, tips
    assert _written() == before
    count = registers.cagnotte_count_record(gaming_day=closed.day, table=t1, by=direzione, witness=direzione2,
                                            counted=41_20, tips=1_00)  # fmt: skip
    before = _written()
    for tips in BAD_TIPS:
        r = api(direzione).post(f"/api/cagnotte-counts/{count.pk}/correct/",
                                {"tips": tips, "witness": direzione2.pk, "note": "recount"}, format="json")  # fmt: skip
        assert r.status_code == 400 and r.json()["error"]["details"].keys() == {"tips"}, (tips, r.json())
    # The service refuses them from any caller (the desk): invalid_tips, nothing written.
    for tips in (-1, True, 12.5, "5", 10**12 + 1):
        with pytest.raises(ApplicationError) as refused:
            registers.cagnotte_count_correct(count=count, by=direzione, witness=direzione2, tips=tips, note="x")
        assert refused.value.code == "invalid_tips" and refused.value.status_code == 400
        with pytest.raises(ApplicationError) as refused:
            registers.cagnotte_count_record(gaming_day=closed.day, table=closed.tables[1], by=direzione,
                                            witness=direzione2, counted=0, tips=tips)  # fmt: skip
        assert refused.value.code == "invalid_tips"
    assert _written() == before
    # And the database holds the rule for anyone else.
    with pytest.raises(IntegrityError), transaction.atomic():
        CagnotteCount.objects.filter(pk=count.pk).update(tips=-1)


def test_the_register_carries_the_tips_apart_from_its_total(closed, api, direzione, direzione2):
    t1, t2 = closed.tables
    e1, e2 = house(session__table=t1), house(session__table=t2)
    c1 = registers.cagnotte_count_record(gaming_day=closed.day, table=t1, by=direzione, witness=direzione2,
                                         counted=e1 + 1_00, tips=12_00)  # fmt: skip
    registers.cagnotte_count_record(gaming_day=closed.day, table=t2, by=direzione, witness=direzione2,
                                    counted=e2 - 5_00, tips=3_50)  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    # As test_surplus_and_shortfall_never_offset_and_the_higher_is_carried has it without tips.
    assert reg.total == e1 + 1_00 + e2
    assert reg.total_words_it == "cinquantadue euro e venti centesimi"
    assert reg.total_words_en == "fifty-two euros and twenty cents"
    assert [(line["number"], line["tips"], line["carried"]) for line in reg.lines] == [
        (1, 12_00, e1 + 1_00), (2, 3_50, e2)]
    assert reg.tips_total == 15_50
    assert _last_event("control_register.prepared")["new"]["tips_total"] == 15_50
    body = api(direzione).get(f"/api/gaming-days/{closed.day.pk}/control-register/").json()
    assert (body["total"], body["tips_total"], [line["tips"] for line in body["lines"]]) == (reg.total, 15_50,
                                                                                            [12_00, 3_50])
    registers.control_register_sign(register=reg, by=direzione)
    # The tips alone corrected after the first signature: the register is behind, as for a
    # cagnotte corrected; it is not signed over them, and prepared again withdraws the signature.
    registers.cagnotte_count_correct(count=c1, by=direzione, witness=direzione2, tips=11_00, note="tips recounted")
    reg.refresh_from_db()
    assert not registers.register_agrees(reg)
    with pytest.raises(Conflict) as stale:
        registers.control_register_sign(register=reg, by=direzione2)
    assert stale.value.code == "register_stale"
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    assert (reg.total, reg.tips_total, reg.first_signer_id) == (e1 + 1_00 + e2, 14_50, None)
    assert registers.books_verify(gaming_day_id=closed.day.pk) == []


def _as_written_before_tips(stream: str) -> None:
    """The day's books events as they were written before tips were recorded: the counts'
    payloads without `tips`, the registers' without `tips_total` (the chain is not what is
    held here: books_verify replays the payloads)."""
    with trigger_disabled():
        for event in AuditEvent.objects.filter(stream__name=stream):
            doc = event.payload
            for side in ("old", "new"):
                if isinstance(doc.get(side), dict):
                    doc[side] = {k: v for k, v in doc[side].items() if k not in ("tips", "tips_total")}
            AuditEvent.objects.filter(pk=event.pk).update(payload_json=json.dumps(doc))


def test_a_register_written_before_tips_reads_agrees_and_verifies(closed, api, direzione, direzione2):
    """Counts entered before the tips were recorded (NULL) and a register written and signed
    over them, their events without a word of tips: the register still agrees with the counts
    in force (the next day may open), reads through the API and the desk, and the books
    check passes; tips or a tips total put into those rows in SQL since are named."""
    t1, t2 = closed.tables
    c1 = registers.cagnotte_count_record(gaming_day=closed.day, table=t1, by=direzione, witness=direzione2,
                                         counted=41_20)  # fmt: skip
    registers.cagnotte_count_record(gaming_day=closed.day, table=t2, by=direzione, witness=direzione2, counted=10_00)
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    registers.control_register_sign(register=reg, by=direzione2)
    _as_written_before_tips(registers.books_stream(closed.day.pk))
    reg.refresh_from_db()
    assert reg.tips_total is None and all("tips" not in line for line in reg.lines)
    assert registers.books_verify(gaming_day_id=closed.day.pk) == []
    assert registers.register_agrees(reg)
    assert registers.before_gaming_day_open(casino=closed.day.casino, date=None, by=direzione) is None
    body = api(direzione).get(f"/api/gaming-days/{closed.day.pk}/control-register/").json()
    assert body["tips_total"] is None and body["agrees_with_counts"] is True
    assert api(direzione).get(f"/api/gaming-days/{closed.day.pk}/cagnotte-counts/").json()[0]["tips"] is None

    CagnotteCount.objects.filter(pk=c1.pk).update(tips=5_00)
    assert [(p["code"], p["count"]) for p in registers.books_verify(gaming_day_id=closed.day.pk)] == [
        ("count_not_as_recorded", c1.pk)]
    CagnotteCount.objects.filter(pk=c1.pk).update(tips=None)
    ControlRegister.objects.filter(pk=reg.pk).update(tips_total=5_00)
    assert [(p["code"], p["register"]) for p in registers.books_verify(gaming_day_id=closed.day.pk)] == [
        ("register_not_as_recorded", reg.pk)]


def test_tips_edited_in_sql_are_caught(closed, api, auditor, direzione, direzione2):
    """The count's event carries its tips: a tips figure edited in SQL (or wiped to NULL) is a
    count not as recorded; the books' check, the report's verification and the register's
    preparation say so."""
    t1, t2 = closed.tables
    count = registers.cagnotte_count_record(gaming_day=closed.day, table=t1, by=direzione, witness=direzione2,
                                            counted=41_20, tips=12_00)  # fmt: skip
    registers.cagnotte_count_record(gaming_day=closed.day, table=t2, by=direzione, witness=direzione2,
                                    counted=10_00, tips=0)  # fmt: skip
    report = DayReport.objects.get(gaming_day=closed.day, version=1)

    def reasons() -> list:
        body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
        return [(r["code"], r.get("problem"), r.get("count")) for r in body["reasons"]]

    assert registers.books_verify(gaming_day_id=closed.day.pk) == [] and reasons() == []
    for edited in (2_00, None):
        CagnotteCount.objects.filter(pk=count.pk).update(tips=edited)
        assert [(p["code"], p["count"]) for p in registers.books_verify(gaming_day_id=closed.day.pk)] == [
            ("count_not_as_recorded", count.pk)]
        assert reasons() == [("books_mismatch", "count_not_as_recorded", count.pk)]
        with pytest.raises(Conflict) as refused:
            registers.control_register_prepare(gaming_day=closed.day, by=direzione)
        assert refused.value.code == "count_not_as_recorded"
    CagnotteCount.objects.filter(pk=count.pk).update(tips=12_00)
    assert registers.books_verify(gaming_day_id=closed.day.pk) == [] and reasons() == []


def test_the_report_lists_the_tips_in_csv_and_xlsx(closed, direzione, direzione2, django_capture_on_commit_callbacks):
    t1, t2 = closed.tables
    e1, e2 = house(session__table=t1), house(session__table=t2)
    c1 = registers.cagnotte_count_record(gaming_day=closed.day, table=t1, by=direzione, witness=direzione2,
                                         counted=e1, tips=12_00)  # fmt: skip
    registers.cagnotte_count_correct(count=c1, by=direzione, witness=direzione2, tips=12_50, note="tips recounted")
    registers.cagnotte_count_record(gaming_day=closed.day, table=t2, by=direzione, witness=direzione2, counted=e2)
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    with django_capture_on_commit_callbacks(execute=True):
        registers.control_register_sign(register=reg, by=direzione2)
    report = DayReport.objects.get(gaming_day=closed.day, version=2)
    assert report.status == "done", report.error
    # The tips in force (table 1's correction; table 2's not counted), in no cagnotte figure.
    assert report.summary["tips"] == 12_50
    assert report.summary["counted"] == e1 + e2 and report.summary["carried"] == e1 + e2
    assert report.summary["register_total"] == e1 + e2

    preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    header, *rows = blocks[COUNTS]
    assert "tips_eur" in header
    said = [(row[header.index("table")], row[header.index("counted_eur")], row[header.index("tips_eur")])
            for row in rows]  # fmt: skip
    assert said == [("1", f"{Decimal(e1) / 100:.2f}", "12.00"), ("1", f"{Decimal(e1) / 100:.2f}", "12.50"),
                    ("2", f"{Decimal(e2) / 100:.2f}", "")]  # fmt: skip
    assert [f"# {TIPS_FACT}", "12.50 EUR"] in preamble
    assert ["# Control register tips (mance), apart from its total", "12.50 EUR"] in preamble

    wb = openpyxl.load_workbook(io.BytesIO(_file(report, "xlsx").read_bytes()))
    listing = {row[0]: row[1:] for row in wb["Summary"].iter_rows(values_only=True) if row and row[0]}
    assert Decimal(str(listing[TIPS_FACT][0])) == Decimal("12.50")
    sheet = list(wb[listing[COUNTS][0]].iter_rows(values_only=True))
    column = sheet[0].index("Tips (staff's)")
    assert [row[column] if row[column] is None else Decimal(str(row[column])) for row in sheet[1:]] == [
        Decimal("12.00"), Decimal("12.50"), None]


def test_a_report_with_no_tips_counted_says_so(closed):
    """The version-1 report, built at the close before any count: no tips, said as such."""
    report = DayReport.objects.get(gaming_day=closed.day, version=1)
    assert report.summary["tips"] is None
    preamble, _blocks = csv_blocks(_file(report, "csv").read_bytes())
    assert [f"# {TIPS_FACT}", "not counted"] in preamble


def test_a_count_edited_before_the_build_and_put_back_is_named_by_the_reports_verification(
    closed, api, auditor, direzione, direzione2, django_capture_on_commit_callbacks
):
    """The report keeps each count it lists as its event records it: tips edited in SQL after
    the register's signatures and before the build went into the report; put back since, the
    books' own check passes, and the report's verification still names the count (and an
    honest build verifies)."""
    t1, t2 = closed.tables
    count = registers.cagnotte_count_record(gaming_day=closed.day, table=t1, by=direzione, witness=direzione2,
                                            counted=41_20, tips=12_00)  # fmt: skip
    registers.cagnotte_count_record(gaming_day=closed.day, table=t2, by=direzione, witness=direzione2, counted=10_00)
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        registers.control_register_sign(register=reg, by=direzione2)
    CagnotteCount.objects.filter(pk=count.pk).update(tips=2_00)
    for callback in callbacks:  # the build of version 2, over the edited row
        callback()
    report = DayReport.objects.get(gaming_day=closed.day, version=2)
    assert report.status == "done", report.error
    assert report.summary["counts_as_listed"][str(count.pk)]["tips"] == 2_00
    CagnotteCount.objects.filter(pk=count.pk).update(tips=12_00)
    assert registers.books_verify(gaming_day_id=closed.day.pk) == []
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False and body["reasons"] == [
        {"code": "count_mismatch", "count": count.pk, "table": t1.number, "recorded_in_trail": True}]
    # An honest build of the same day verifies.
    with django_capture_on_commit_callbacks(execute=True):
        registers.cagnotte_count_correct(count=count, by=direzione, witness=direzione2, tips=12_10, note="recount")
        reg = registers.control_register_correct(register=reg, by=direzione, reason="tips recounted")
        registers.control_register_sign(register=reg, by=direzione)
        registers.control_register_sign(register=reg, by=direzione2)
    report = DayReport.objects.get(gaming_day=closed.day, version=3)
    assert report.status == "done", report.error
    assert api(auditor).post(f"/api/reports/{report.pk}/verify/").json()["reasons"] == []


REGISTER = "Control register (art. 72)"
REGISTER_TIPS = "Tips (mance), the staff's, apart from the total: "


def _signed_version_2(closed, direzione, direzione2, capture) -> DayReport:
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    with capture(execute=True):
        registers.control_register_sign(register=reg, by=direzione2)
    report = DayReport.objects.get(gaming_day=closed.day, version=2)
    assert report.status == "done", report.error
    return report


def _register_sheet(report: DayReport) -> list[tuple]:
    wb = openpyxl.load_workbook(io.BytesIO(_file(report, "xlsx").read_bytes()))
    listing = {row[0]: row[1:] for row in wb["Summary"].iter_rows(values_only=True) if row and row[0]}
    return list(wb[listing[REGISTER][0]].iter_rows(values_only=True))


def _euros(value) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def test_the_reports_control_register_gives_each_tables_tips_and_their_total_in_every_format(
    closed, api, auditor, direzione, direzione2, tmp_path, django_capture_on_commit_callbacks
):
    """The register's section, as the counts' section: a tips column (CSV `tips_eur`, blank where
    none were counted), the table's line with its tips, the sessions' lines none; the register's
    tips total in its note and on the XLSX's total line, apart from the cagnotte total. The
    report so built verifies."""
    from tests.audit.test_exports import pdf_text

    t1, t2 = closed.tables
    e1, e2 = house(session__table=t1), house(session__table=t2)
    c1 = registers.cagnotte_count_record(gaming_day=closed.day, table=t1, by=direzione, witness=direzione2,
                                         counted=e1, tips=12_00)  # fmt: skip
    registers.cagnotte_count_correct(count=c1, by=direzione, witness=direzione2, tips=12_50, note="recount")
    registers.cagnotte_count_record(gaming_day=closed.day, table=t2, by=direzione, witness=direzione2,
                                    counted=e2)  # fmt: skip
    report = _signed_version_2(closed, direzione, direzione2, django_capture_on_commit_callbacks)

    _preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    note, header, *rows = blocks[REGISTER]
    assert header == ["table", "session", "coups", "expected_eur", "counted_eur", "carried_eur", "tips_eur"]
    tips = {(row[0], row[1]): row[header.index("tips_eur")] for row in rows}
    assert {key: said for key, said in tips.items() if key[1] == ""} == {("1", ""): "12.50", ("2", ""): ""}
    # The sessions' lines: none (one box per table).
    assert {said for key, said in tips.items() if key[1] != ""} == {""}
    assert note[0].startswith(f"# Total: {Decimal(e1 + e2) / 100:.2f} EUR: ")
    assert f"{REGISTER_TIPS}12.50 EUR (a blank tips cell: not counted)." in note[0]

    sheet = _register_sheet(report)
    assert sheet[0][-1] == "Tips (staff's)"
    assert [_euros(row[-1]) for row in sheet[1:-1] if row[1] is None] == [Decimal("12.50"), None]
    assert sheet[-1][0] == "Total" and _euros(sheet[-1][-1]) == Decimal("12.50")
    assert _euros(sheet[-1][5]) == Decimal(e1 + e2) / 100  # the cagnotte's total, without the tips

    text = pdf_text(_file(report, "pdf").read_bytes(), tmp_path, drawn_order=True)
    if text is not None:
        section = text[text.index(REGISTER_TIPS) :]
        assert section.startswith(f"{REGISTER_TIPS}12.50 EUR (a blank tips cell: not counted).")
        assert "Tips (staff's)" in section and "12.50" in section.split("Tips (staff's)", 1)[1]

    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [], body["reasons"]


def test_a_register_without_tips_gives_blank_cells_and_verifies(
    closed, api, auditor, direzione, direzione2, tmp_path, django_capture_on_commit_callbacks
):
    """Counts without tips: the register's lines have no `tips` key and it has no tips total, as
    one written before tips were recorded: the section says "not counted" in its note and leaves
    the cells blank (no crash on the missing key); the report verifies."""
    from tests.audit.test_exports import pdf_text

    t1, t2 = closed.tables
    for table in (t1, t2):
        registers.cagnotte_count_record(gaming_day=closed.day, table=table, by=direzione, witness=direzione2,
                                        counted=house(session__table=table))  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    reg.refresh_from_db()
    assert reg.tips_total is None and all("tips" not in line for line in reg.lines)
    with django_capture_on_commit_callbacks(execute=True):
        registers.control_register_sign(register=reg, by=direzione2)
    report = DayReport.objects.get(gaming_day=closed.day, version=2)
    assert report.status == "done", report.error

    _preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    note, header, *rows = blocks[REGISTER]
    assert header[-1] == "tips_eur" and {row[-1] for row in rows} == {""}
    assert f"{REGISTER_TIPS}not counted (a blank tips cell: not counted)." in note[0]
    sheet = _register_sheet(report)
    assert sheet[0][-1] == "Tips (staff's)" and {row[-1] for row in sheet[1:]} == {None}
    text = pdf_text(_file(report, "pdf").read_bytes(), tmp_path, drawn_order=True)
    if text is not None:
        assert f"{REGISTER_TIPS}not counted" in text

    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [], body["reasons"]
