"""An auditor downloads a report (issue 7): a small closed day with its report built (eager
Celery), the auditor opens the desk, sees the report, downloads the PDF, checks that the
file's SHA-256 is the one shown, and verifies the report."""

from __future__ import annotations

import hashlib

import pytest
from playwright.sync_api import expect

from audit.models import AuditEvent, DayReport
from audit.tasks import report_build
from floor import services as floor_services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_auditor_downloads_a_report(make_game, page_for, shoot, auditor, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    game = make_game("venezia")
    day = game.session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=game.commissario, open_sessions="close")
    report_build.delay(day.pk)  # eager here; the close sends it by name to the real worker
    report = DayReport.objects.get(gaming_day=day)
    assert report.status == "done", report.error
    pdf = report.files.get(format="pdf")

    page = page_for(auditor)
    page.goto(page.base + "/")
    page.get_by_role("link", name="Auditor's desk").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Auditor's desk")
    shoot(page, "desk-list")

    page.get_by_role("link", name=day.date.isoformat()).click()
    card = page.locator(f"#report-{report.pk}")
    expect(card).to_contain_text("Report version 1")
    shown = card.locator('code.sha[data-format="pdf"]').inner_text().strip()
    assert shown == pdf.sha256

    with page.expect_download() as info:
        card.get_by_role("link", name="Download PDF").click()
    download = info.value
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    assert saved.suffix == ".pdf"
    assert hashlib.sha256(saved.read_bytes()).hexdigest() == shown

    events = AuditEvent.objects.count()
    card.get_by_role("button", name="Verify").click()
    expect(card.locator(".verify-result.ok")).to_contain_text("Verified")
    assert AuditEvent.objects.count() == events  # verifying wrote nothing
    shoot(page, "desk-day-verified")

    page.goto(page.base + "/desk/verify/")
    page.get_by_role("button", name="Verify the whole audit trail").click()
    expect(page.locator("#trail-result .verify-result.ok")).to_contain_text("intact")
    shoot(page, "desk-trail-verified")
    assert page.problems == [], "\n".join(page.problems)
