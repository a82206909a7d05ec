"""The end-of-day report through a REAL Celery worker on Redis (RULES.md §8).

A transactional test (the data is committed, so the worker's own connection sees it)
starts `celery -A config worker --pool=solo` as a subprocess on the pytest test database,
closes the day (the close enqueues the report on commit, not eagerly), waits for the
report, checks its files and figures, sends the task a second time (one report still),
and stops the worker."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from celery.result import AsyncResult
from django.conf import settings
from django.db import connection
from django.db.models import Sum

from audit.models import AuditEvent, DayReport, ReportFile
from audit.selectors import day_seal
from audit.tasks import report_build
from config.celery import app as celery_app
from floor import services as floor_services
from tables.models import Posting
from tests.audit.test_reports import build_day

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture
def worker(tmp_path, settings):
    """A solo-pool worker on the test database and the suite's Redis; tasks sent for real."""
    if not os.environ.get("REDIS_URL"):
        pytest.skip("a real worker needs REDIS_URL")
    media = tmp_path / "media"
    settings.MEDIA_ROOT = media
    name = f"reports-test-{uuid.uuid4().hex[:8]}@%h"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": _database_url(),
        "REDIS_URL": os.environ["REDIS_URL"],
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CHEMIN_MEDIA_ROOT": str(media),
    }
    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-n", name,
         "--loglevel=INFO", "--without-gossip", "--without-mingle"],
        cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    try:
        hostname = name.replace("%h", os.uname().nodename)
        deadline = time.monotonic() + 60
        while not celery_app.control.ping(destination=[hostname], timeout=1.0):
            assert proc.poll() is None, (tmp_path / "worker.log").read_text()
            assert time.monotonic() < deadline, "the worker did not answer ping in 60 s"
        yield proc
    finally:
        celery_app.conf.task_always_eager = eager
        proc.send_signal(signal.SIGTERM)  # warm shutdown: the current task finishes
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_done(day_id: int, version: int = 1, timeout: float = 120) -> DayReport:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        report = DayReport.objects.filter(gaming_day_id=day_id, version=version).first()
        if report is not None and report.status != DayReport.Status.PENDING:
            return report
        time.sleep(0.2)
    raise AssertionError("the report was not built in time")


def test_a_real_worker_builds_the_report_once(worker, commissario, capo_partita, changeur, direzione):
    world = build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)
    floor_services.gaming_day_close(gaming_day=world.day, by=commissario, open_sessions="close")
    report = _wait_done(world.day.pk)
    assert report.status == "done", report.error
    # Stored by the worker in the Redis result backend (an eager run stores nothing there).
    assert AsyncResult(report.task_id).get(timeout=10)["report"] == report.pk

    house = Posting.objects.filter(session__gaming_day=world.day, role=Posting.Role.HOUSE)
    assert report.summary["expected_cagnotte"] == house.aggregate(s=Sum("amount"))["s"] == 51_20
    for table in world.tables:
        assert report.summary["tables"][str(table.number)]["expected_cagnotte"] == (
            house.filter(session__table=table).aggregate(s=Sum("amount"))["s"]
        )
    assert report.seal == day_seal(streams=report.sealed_streams)
    files = {f.format: f for f in report.files.all()}
    assert set(files) == {"csv", "xlsx", "pdf"}
    for f in files.values():
        data = (Path(settings.MEDIA_ROOT) / f.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f.sha256 and len(data) == f.size

    # The same task sent again through the broker: the worker finds the report built.
    result = report_build.delay(world.day.pk).get(timeout=60)
    assert result == {"gaming_day": world.day.pk, "version": 1, "report": report.pk, "status": "done"}
    assert DayReport.objects.filter(gaming_day=world.day).count() == 1
    assert ReportFile.objects.filter(report=report).count() == 3
    assert AuditEvent.objects.filter(action="report.built").count() == 1
    assert {f.format: f.sha256 for f in ReportFile.objects.filter(report=report)} == {
        k: f.sha256 for k, f in files.items()}  # fmt: skip


def test_a_build_that_fails_in_the_worker_says_so_and_the_sweep_builds_it_again(
    worker, api, auditor, commissario, capo_partita, changeur, direzione
):
    world = build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)
    # The report's directory cannot be made: a file is in its place (a full or broken volume).
    directory = Path(settings.MEDIA_ROOT) / settings.REPORTS_DIR / f"{world.day.date.isoformat()}-day{world.day.pk}"
    directory.mkdir(parents=True)
    (directory / "v1").write_bytes(b"in the way")
    floor_services.gaming_day_close(gaming_day=world.day, by=commissario, open_sessions="close")
    report = _wait_done(world.day.pk)
    assert report.status == DayReport.Status.FAILED and report.error.startswith("FileExistsError"), report.error
    assert not report.files.exists()
    failed = AuditEvent.objects.get(stream__name=f"reports:{world.day.pk}")
    assert (failed.action, failed.subject_id) == ("report.failed", str(report.pk))
    assert failed.payload["new"] == {"status": "failed", "error": report.error}
    client = api(auditor)
    r = client.get(f"/api/reports/{report.pk}/")
    assert (r.json()["status"], r.json()["error"], r.json()["progress"]["state"]) == ("failed", report.error, "FAILURE")
    r = client.get(f"/api/reports/{report.pk}/files/pdf/")
    assert r.status_code == 409 and r.json()["error"]["code"] == "report_not_built"

    (directory / "v1").unlink()  # the volume is repaired; beat's sweep, through the broker
    assert celery_app.send_task("audit.tasks.reports_sweep").get(timeout=60) == [[world.day.pk, 1]]
    deadline = time.monotonic() + 120
    while DayReport.objects.get(pk=report.pk).status != DayReport.Status.DONE:
        assert time.monotonic() < deadline, "the sweep's build did not finish in time"
        time.sleep(0.2)
    assert client.get(f"/api/reports/{report.pk}/files/pdf/").status_code == 200
    assert list(AuditEvent.objects.filter(stream__name=f"reports:{world.day.pk}").order_by("seq").values_list(
        "action", flat=True)) == ["report.failed", "report.built"]  # fmt: skip
    verdict = client.post(f"/api/reports/{report.pk}/verify/").json()
    assert verdict["ok"], verdict["reasons"]
