"""Whose suspension each interruption was (RULES.md §6: one the Direzione Giochi ordered is
lifted by the Direzione alone) is in the end-of-day report's interruptions section and in
the cagnotte register's API, as the floor and the events say it: the CSV keeps the code,
an Italian report writes the role in words."""

from __future__ import annotations

import io

import openpyxl
import pytest

from audit.models import DayReport
from floor import services as floor_services
from tests.audit.test_exports import csv_blocks
from tests.audit.test_reports import _file, close
from tests.audit.test_reports import media as media  # the fixtures of the day the reports test
from tests.audit.test_reports import world as world

pytestmark = pytest.mark.django_db


def _suspend_and_resume(world) -> None:
    session = world.sessions[1]  # table 2's, left open (table 1's has the Commissario's "dispute")
    floor_services.table_session_interrupt(session=session, by=world.direzione, reason="a dispute at the table")
    floor_services.table_session_resume(session=session, by=world.direzione, reason="decided")
    floor_services.table_session_interrupt(session=session, by=world.commissario, reason="the shoe is changed")
    floor_services.table_session_resume(session=session, by=world.commissario, reason="new shoe")


def test_the_report_says_whose_suspension_each_interruption_was(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    _suspend_and_resume(world)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == DayReport.Status.DONE, report.error
    _preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    header, *rows = blocks["Interruptions and resumptions"]
    assert header.index("interrupted_as") == header.index("interrupted_by") + 1
    assert [(r[header.index("reason")], r[header.index("interrupted_as")]) for r in rows] == [
        ("dispute", "commissario"), ("a dispute at the table", "direzione"), ("the shoe is changed", "commissario"),
    ]  # fmt: skip
    register = api(auditor).get(f"/api/gaming-days/{world.day.pk}/cagnotte-register/").json()
    said = [(i["reason"], i["interrupted_as"]) for t in register["tables"] for s in t["sessions"]
            for i in s["interruptions"]]  # fmt: skip
    assert sorted(said) == [
        ("a dispute at the table", "direzione"), ("dispute", "commissario"), ("the shoe is changed", "commissario"),
    ]


def test_an_italian_report_names_the_role_in_words(world, media, settings, django_capture_on_commit_callbacks):
    settings.REPORT_LANGUAGE = "it"
    _suspend_and_resume(world)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    _preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    header, *rows = blocks["Interruzioni e riprese"]
    assert {r[header.index("interrupted_as")] for r in rows} == {"direzione", "commissario"}  # the CSV's codes
    book = openpyxl.load_workbook(io.BytesIO(_file(report, "xlsx").read_bytes()))
    cells = {c.value for ws in book.worksheets for row in ws.iter_rows() for c in row}
    assert {"Direzione Giochi", "Commissario di Gioco", "Come (di chi la sospensione)"} <= cells
